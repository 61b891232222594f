"""Reviewing a compaction before it lands, and a rewrite someone else already made.

:class:`CompactionDialog` shows a plan (keep.md, a bank, or a review of an
outside rewrite) as its operations, checkable and grouped by kind with their
reasons; the selected operation's own diff; the whole-file diff of the current
selection (or, for a bank, the table of supersedes); and before → after →
target counts. "Apply selected" hands the selection back to :class:`CompactionFlow`, which
applies it as one undo step of the window; "Discard" writes nothing. All plan
logic lives in :mod:`keepgui.core.compaction` and the backends.

Signals:
    CompactionDialog.applyRequested(object plan, frozenset selection)
    CompactionDialog.acceptRequested(object plan): review mode, "accept the rewrite as it is".
    CompactionDialog.reviewFirstRequested(): the file was rewritten outside keepgui and not reviewed:
        review that rewrite before compacting.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.compaction import UNREVIEWED_REWRITE, Plan, excerpt
from keepgui.core.errors import KeepguiError
from keepgui.core.source import COMPACT, DISK, REVIEW, BankKey, Change
from keepgui.ui import theme
from keepgui.ui.commands import Outcome
from keepgui.ui.diffview import DiffView
from keepgui.ui.geometry import resize_to_fit

OpRole = Qt.ItemDataRole.UserRole + 80
SWITCHES_UP_TO = 5000
"""A bank of more rows is planned without its backend's compact switches (``--fuzzy`` compares every
pair of rows: the command line has it for those)."""


def rewrite_summary(plan: Plan) -> str:
    """ "31 entries removed, 4 merged" for a review plan (what an outside rewrite did), or the
    plan's own words for it (its :meth:`~keepgui.core.compaction.Plan.describe`)."""
    own = plan.describe()
    if own:
        return own
    counts: dict[str, int] = {}
    for op in plan.operations:
        counts[op.kind] = counts.get(op.kind, 0) + max(1, len(op.before))
    parts = []
    removed = counts.get("removed", 0) + counts.get("deduplicated", 0)
    if removed:
        parts.append(f"{removed} {'entry' if removed == 1 else 'entries'} removed")
    for kind, word in (("merged", "merged"), ("reworded", "reworded"), ("new", "new")):
        if counts.get(kind):
            parts.append(f"{counts[kind]} {word}")
    return ", ".join(parts)


class CompactionDialog(QDialog):
    """A plan to review: operations, their diffs, the counts; apply the checked ones or discard."""

    applyRequested = Signal(object, frozenset)
    acceptRequested = Signal(object)
    reviewFirstRequested = Signal()

    def __init__(self, plan: Plan, title: str, parent: QWidget | None = None, review: bool = False) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.review = review
        self.plan: Plan | None = None  # set once the tree shows its operations
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["Operation", "Reason"])
        self.tree.setAccessibleName("Operations of the plan")
        self.tree.setColumnWidth(0, 380)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.tree.currentItemChanged.connect(self._on_current)
        self.op_diff = DiffView(self)
        self.op_diff.setAccessibleName("Diff of the selected operation")
        self.file_diff = DiffView(self)
        self.file_diff.setAccessibleName("Diff of the whole file for the checked operations")
        self.counts = QLabel(self)
        self.counts.setAccessibleName("Counts before, after and target")
        self.notices = QLabel(self)
        self.notices.setWordWrap(True)
        self.error = QLabel(self)  # what went wrong with this dialog's last apply: said here, not behind it
        self.error.setWordWrap(True)
        self.error.setAccessibleName("Error")
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setVisible(False)
        self.review_first = QPushButton("Review the outside rewrite first…", self)
        self.review_first.setToolTip("Compare the file with the last version keepgui saw, and restore what was lost")
        self.review_first.clicked.connect(self.reviewFirstRequested)
        self.select_safe = QPushButton("Select safe", self)
        self.select_all = QPushButton("Select all", self)
        self.select_none = QPushButton("Select none", self)
        self.apply_button = QPushButton("Restore selected" if review else "Apply selected", self)
        self.apply_button.setDefault(True)
        self.accept_button = QPushButton("Accept the rewrite as it is", self)
        self.accept_button.setVisible(review)
        self.accept_button.setToolTip("Stop showing this rewrite; nothing is written")
        self.discard_button = QPushButton("Discard" if not review else "Close", self)
        self.select_safe.clicked.connect(lambda: self._set_selection(plan.select("safe")))
        self.select_all.clicked.connect(lambda: self._set_selection(plan.select("all")))
        self.select_none.clicked.connect(lambda: self._set_selection(plan.select("none")))
        self.apply_button.clicked.connect(self._apply)
        self.accept_button.clicked.connect(lambda: self.acceptRequested.emit(self.plan))
        self.discard_button.clicked.connect(self.reject)

        right = QSplitter(Qt.Orientation.Vertical, self)
        op_box = QWidget(right)
        op_layout = QVBoxLayout(op_box)
        op_layout.setContentsMargins(0, 0, 0, 0)
        op_layout.addWidget(QLabel("<b>This operation</b>", op_box))
        op_layout.addWidget(self.op_diff)
        file_box = QWidget(right)
        file_layout = QVBoxLayout(file_box)
        file_layout.setContentsMargins(0, 0, 0, 0)
        file_layout.addWidget(QLabel("<b>The whole file with the checked operations</b>", file_box))
        file_layout.addWidget(self.file_diff)
        right.addWidget(op_box)
        right.addWidget(file_box)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.tree)
        split.addWidget(right)
        split.setSizes([560, 640])
        buttons = QHBoxLayout()
        for button in (self.select_safe, self.select_all, self.select_none):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.accept_button)
        buttons.addWidget(self.discard_button)
        buttons.addWidget(self.apply_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.counts)
        notices = QHBoxLayout()
        notices.addWidget(self.notices, 1)
        notices.addWidget(self.review_first, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(notices)
        layout.addWidget(split, 1)
        layout.addWidget(self.error)
        layout.addLayout(buttons)
        self._refresh = QTimer(self)
        self._refresh.setSingleShot(True)
        self._refresh.setInterval(60)
        self._refresh.timeout.connect(self._update_totals)
        resize_to_fit(self, QSize(1280, 820))
        self.set_plan(plan)

    # ------------------------------------------------------------------ plan

    def set_plan(self, plan: Plan) -> None:
        """Show a (new) plan with its default selection."""
        self.plan = plan
        self.tree.blockSignals(True)
        self.tree.clear()
        default = plan.default_selection()
        for group in plan.groups():
            top = QTreeWidgetItem([f"{group.label} ({len(group.operations)})", ""])
            top.setFlags(top.flags() | Qt.ItemFlag.ItemIsAutoTristate | Qt.ItemFlag.ItemIsUserCheckable)
            top.setFirstColumnSpanned(False)
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            self.tree.addTopLevelItem(top)
            for op in group.operations:
                text = excerpt(" + ".join(op.before) or " / ".join(op.after), 90)
                item = QTreeWidgetItem([f"{op.number}. {text}", op.reason])
                item.setData(0, OpRole, op.id)
                tip = op.reason + ("\n\n" + "\n".join(op.evidence) if op.evidence else "")
                item.setToolTip(0, tip)
                item.setToolTip(1, tip)
                if op.applicable:
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    item.setCheckState(0, Qt.CheckState.Checked if op.id in default else Qt.CheckState.Unchecked)
                else:
                    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsUserCheckable)
                    item.setToolTip(0, tip + "\n\nReported only: keepgui never applies this.")
                    item.setForeground(0, theme.muted_text())
                top.addChild(item)
            top.setExpanded(True)
        self.tree.blockSignals(False)
        notices = [getattr(n, "message", str(n)) for n in plan.notices]
        self.notices.setText("\n".join(notices))
        self.notices.setVisible(bool(notices))
        unreviewed = any(getattr(n, "code", "") == UNREVIEWED_REWRITE for n in plan.notices)
        self.review_first.setVisible(unreviewed and not self.review)
        has_ops = any(op.applicable for op in plan.operations)
        for button in (self.select_safe, self.select_all, self.select_none, self.apply_button):
            button.setEnabled(has_ops)
        self._update_totals()
        first = self.tree.topLevelItem(0)
        child = first.child(0) if first is not None and first.childCount() else None
        if child is not None:
            self.tree.setCurrentItem(child)
        else:
            self.op_diff.setPlainText("")

    def selection(self) -> frozenset[str]:
        """The ids of the checked operations."""
        chosen = []
        for item in self._operation_items():
            if item.checkState(0) == Qt.CheckState.Checked and item.data(0, OpRole):
                chosen.append(item.data(0, OpRole))
        return frozenset(chosen)

    def _operation_items(self) -> list[QTreeWidgetItem]:
        """The operations' rows (the children of the kind rows)."""
        items = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for j in range(top.childCount() if top is not None else 0):
                item = top.child(j) if top is not None else None
                if item is not None:
                    items.append(item)
        return items

    def _set_selection(self, selection: Iterable[str]) -> None:
        selection = set(selection)
        self.tree.blockSignals(True)
        for item in self._operation_items():
            if item.flags() & Qt.ItemFlag.ItemIsUserCheckable:
                item.setCheckState(
                    0, Qt.CheckState.Checked if item.data(0, OpRole) in selection else Qt.CheckState.Unchecked
                )
        self.tree.blockSignals(False)
        self._update_totals()

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column == 0:
            self._refresh.start()

    def _on_current(self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None) -> None:
        op_id = current.data(0, OpRole) if current is not None else None
        if op_id is None or self.plan is None:
            return
        try:
            self.op_diff.setPlainText(self.plan.render_operation(op_id) or "(no change to the file)")
        except KeepguiError as exc:
            self.op_diff.setPlainText(str(exc))

    def _update_totals(self) -> None:
        if self.plan is None:
            return
        selection = self.selection()
        counts = self.plan.counts(selection)
        text = f"<b>{counts.describe()}</b> · {len(selection)} of {len(self.plan.operations)} operations checked"
        self.counts.setText(text)
        self.file_diff.setPlainText(self.plan.render(selection) or "(the checked operations change nothing)")
        self.apply_button.setEnabled(bool(selection))

    def _apply(self) -> None:
        self.show_error("")
        self.applyRequested.emit(self.plan, self.selection())

    def show_error(self, text: str) -> None:
        """Say in the dialog why its last action failed ("" hides it)."""
        self.error.setText(text)
        self.error.setStyleSheet(f"color: {theme.strong('removed').name()}")
        self.error.setVisible(bool(text))

    def confirmed(self, plan: Plan) -> bool:
        """Ask the plan's own question (a file another program manages) before it is applied."""
        if not plan.confirmation or plan.confirmed:
            return True
        answer = QMessageBox.question(
            self,
            self.windowTitle(),
            plan.confirmation,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        plan.confirmed = answer == QMessageBox.StandardButton.Yes
        return plan.confirmed


class CompactionFlow(QObject):
    """From "compaction is due" or "someone rewrote this file" to a reviewed, undoable apply.

    It plans in the background (the hub), shows the plan in a
    :class:`CompactionDialog`, applies the checked operations as one undo step of
    the window (the bank's :meth:`~keepgui.core.source.Bank.apply_plan`), and
    puts the re-plan in the dialog when the plan went stale. Rewrites found on
    disk (a Change with ``reviews``) become a banner offering the review.
    """

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self.hub = window.hub
        self.dialog: CompactionDialog | None = None
        self._explicit_review = False
        self.hub.changed.connect(self._on_change)

    def _plan(self, key: BankKey, what: str, options: dict[str, Any] | None = None) -> None:
        """Plan a compaction (``compact``) or the review of an outside rewrite of a file (its name)
        in the background, after the loads queued for the bank's source; :meth:`_on_plan` follows."""
        given = options or {}
        self.hub.ask(
            key, lambda bank: bank.plan(what, **given), lambda plan: self._on_plan(key, what, plan), owner=self
        )

    def compact_options(self, key: BankKey) -> dict[str, Any]:
        """The switches the bank's backend gives ``keepgui compact`` (iii's ``--fuzzy``), all on: the
        window offers what the command line finds with them. What they add is never checked by
        default (a judgement call); a bank of more than :data:`SWITCHES_UP_TO` rows is planned
        without them (they compare every pair of rows)."""
        try:
            options = self.hub.backend(key.source).options
        except KeyError:
            return {}
        if len(self.hub.rows(key)) > SWITCHES_UP_TO:
            return {}
        return {o.dest: True for o in options if o.command == COMPACT and not o.metavar and not o.means}

    def _on_change(self, change: Change) -> None:
        if change.origin == DISK and change.reviews and change.bank is not None:
            for name in change.reviews:
                self._plan(BankKey(change.source, change.bank), name)

    def offer(self, key: BankKey) -> None:
        """The "compaction due" banner, when the bank's summary says one is due."""
        summary = self.hub.summary(key)
        banner = self.window.banner
        if summary is not None and summary.compaction_due:
            banner.show_message(
                summary.compaction_due, "info", [("Review compaction", lambda: self.review(key))], owner=key
            )
        else:
            banner.forget(key)

    def review(self, key: BankKey | None) -> None:
        """Bank → Review compaction: plan it in the background, then show the plan as a diff."""
        if key is None:
            return
        caps = self.hub.capabilities(key)
        if not caps.can(COMPACT):
            self.window.note(caps.why_not(COMPACT))
            return
        self.window.note(f"planning a compaction of {key.bank}…")
        self._plan(key, COMPACT, self.compact_options(key))

    def review_rewrite(self, key: BankKey | None, name: str | None = None) -> None:
        """Bank → Review outside rewrite: compare a file with the last version keepgui saw."""
        caps = self.hub.capabilities(key) if key is not None else None
        if key is None or caps is None or not caps.reviews:
            why = caps.why_not(REVIEW) if caps is not None else ""
            self.window.note(why or "select a bank whose files others rewrite to review what they changed")
            return
        self._plan(key, name or caps.reviews[0])
        self._explicit_review = True

    def _on_plan(self, key: BankKey, what: str, plan: Any) -> None:
        if isinstance(plan, Exception):
            self.window.show_error(f"No plan for {key.bank}: {plan}")
            return
        if what == COMPACT:
            if not plan.operations and not plan.notices:  # not an empty dialog: "0 of 0 operations"
                self.window.note(f"{key.bank}: nothing to compact — {plan.counts(frozenset()).describe()}")
                return
            self.open(key, plan, f"Compaction of {key.bank}", review=False)
            return
        explicit, self._explicit_review = self._explicit_review, False
        if explicit:  # asked for (Bank → Review outside rewrite): the review itself, not a banner offering it
            self.open(key, plan, f"Outside rewrites of {what}", review=True)
            return
        if not plan.operations:
            return
        summary = rewrite_summary(plan)
        self.window.banner.show_message(
            f"{what} was rewritten by another program: {summary or 'its entries changed'}.",
            "warning",
            [("Review", lambda: self.open(key, plan, f"Rewrite of {what}", review=True))],
            owner=key,
        )

    def open(self, key: BankKey, plan: Any, title: str, review: bool) -> None:
        """Show a plan for review."""
        dialog = CompactionDialog(plan, title, self.window, review=review)
        dialog.applyRequested.connect(lambda p, sel: self._apply(key, dialog, p, sel, review))
        dialog.acceptRequested.connect(lambda p: self._accept(key, dialog, p))

        def review_first() -> None:
            dialog.reject()
            self.review_rewrite(key)

        dialog.reviewFirstRequested.connect(review_first)
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.show()

    def _apply(
        self, key: BankKey, dialog: CompactionDialog, plan: Any, selection: frozenset[str], review: bool
    ) -> None:
        text = (
            f"Restore {len(selection)} change(s) of {key.bank}"
            if review
            else f"Compact {key.bank} ({len(selection)} operations)"
        )
        if not dialog.confirmed(plan):
            return
        dialog.setEnabled(False)  # until the write, off the GUI thread, has run
        self.window.perform(key, lambda bank: bank.apply_plan(plan, selection, text), text, False).then(
            lambda outcome: self._applied(key, dialog, text, outcome)
        )

    def _applied(self, key: BankKey, dialog: CompactionDialog, text: str, outcome: Outcome) -> None:
        if outcome.change is None:
            if not shiboken6.isValid(dialog):
                self.window.show_error(f"{text} failed: {outcome.error}")
                return
            dialog.setEnabled(True)
            error = outcome.exception
            replanned = getattr(error, "replanned", None)
            if replanned is not None:
                dialog.set_plan(replanned)
                dialog.notices.setText(f"{error}\n" + dialog.notices.text())
                dialog.notices.setVisible(True)
            else:
                dialog.show_error(f"{text} failed: {error}")
            return
        self.window.banner.forget(key)
        lines = getattr(outcome.change.result, "lines", ())
        self.window.note("; ".join(lines[:3]) if lines else text)
        if shiboken6.isValid(dialog):
            dialog.accept()

    def _accept(self, key: BankKey, dialog: CompactionDialog, plan: Any) -> None:
        dialog.setEnabled(False)  # until the write, off the GUI thread, has run

        def failed(exc: Exception) -> None:
            if shiboken6.isValid(dialog):
                dialog.setEnabled(True)
                dialog.show_error(f"Not accepted: {exc}")
            else:
                self.window.show_error(f"Not accepted: {exc}")

        def accepted(change: Change) -> None:
            self.window.banner.forget(key)
            self.window.note(change.message or "rewrite accepted")
            if shiboken6.isValid(dialog):
                dialog.accept()

        self.hub.write(lambda: self.hub.target(key).accept_review(plan), accepted, failed)
