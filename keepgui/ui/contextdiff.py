"""View → Compare context…: what the agent was given, between two moments.

The person picks two moments — one of the moments keepgui's journal recorded a version of the
source's files (newest first), ``now``, or a time typed as ``keepgui context --at`` reads it (ISO 8601,
``2h``, ``3d``) — and, for the backends whose context depends on the question of the turn, that
question. The comparison runs on a lane of the runner (:mod:`keepgui.ui.tasks`): each moment is the
source's own backend opened on the journal's files of then
(:func:`keepgui.core.contextdiff.moment`), compared by :func:`keepgui.core.contextdiff.compare` —
the same code as ``keepgui context --at T1 --diff T2``, so the summary and each part's diff are the
command's. The dialog shows the summary, the memories behind it (new ones given, new ones kept but not
given, ones still kept but no longer given — a limit or a cut —, removed ones), the memory files that
changed, and a unified diff per part of the context.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import contextdiff, registry
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import short_path
from keepgui.core.timetravel import parse_when
from keepgui.ui.diffview import DiffView
from keepgui.ui.tasks import lane

if TYPE_CHECKING:
    from keepgui.core.contextdiff import ContextDiff
    from keepgui.core.journal import Journal
    from keepgui.ui.mainwindow import MainWindow

NOW = "now"
SHOWN_TEXT = 160
"""A memory's text in the list is cut to this many characters (the whole of it in the tooltip)."""


def moment_text(ms: int) -> str:
    """A recorded moment as the list shows it and ``--at`` reads it: local time, to the millisecond."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms // 1000)) + f".{ms % 1000:03d}"


def _compare(
    journal: Journal, kind: str, path: str, bank: str | None, moments: tuple[tuple[int | None, str], ...], query: str
) -> ContextDiff:
    """Off the GUI thread: the source opened afresh (this lane's own), each moment read, the two compared."""
    source = registry.open_source(kind, path)
    if bank is None:
        listing = source.scan()
        bank = listing.own or (listing.names[0] if listing.names else None)
        if bank is None:
            raise KeepguiError(f"{path} has no bank to compare")
    (at1, label1), (at2, label2) = moments
    one = contextdiff.moment(journal, source, bank, at1, query)
    two = contextdiff.moment(journal, source, bank, at2, query)
    return contextdiff.compare(one, two, label1, label2)


class CompareContextDialog(QDialog):
    """Two moments of one source's bank and what its agent was given at each (see the module docstring)."""

    def __init__(
        self, journal: Journal, kind: str, path: str, bank: str | None, title: str, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.journal, self.kind, self.path, self.bank = journal, kind, path, bank
        self.compared: ContextDiff | None = None
        """The comparison shown last."""
        self._lane = lane("contextdiff")
        self.setWindowTitle("Compare context")
        self.setAccessibleName("Compare what the agent was given at two moments")
        self.resize(980, 680)
        heading = QLabel(f"What the agent was given from its memory at two moments — {title}", self)
        heading.setWordWrap(True)
        self.first, self.second = self._moment_box("From"), self._moment_box("To")
        self.query = QLineEdit(self)
        self.query.setAccessibleName("Question of the turn")
        self.query.setPlaceholderText("the question of the turn, for agents whose context depends on one")
        self.compare_button = QPushButton("Co&mpare", self)
        self.compare_button.setDefault(True)
        self.compare_button.setToolTip("Compute the context at both moments and show what changed")
        self.compare_button.clicked.connect(self.compare)
        form = QFormLayout()
        form.addRow("&From:", self.first)
        form.addRow("&To:", self.second)
        form.addRow("&Question:", self.query)
        top = QHBoxLayout()
        top.addLayout(form, 1)
        top.addWidget(self.compare_button, 0, Qt.AlignmentFlag.AlignBottom)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)
        self.progress.setAccessibleName("Comparing")
        self.progress.setMaximumHeight(8)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.status = QLabel("Reading the moments keepgui recorded…", self)
        self.status.setAccessibleName("Status")
        self.status.setWordWrap(True)
        self.summary = QLabel(self)
        self.summary.setAccessibleName("Summary")
        bold = self.summary.font()
        bold.setBold(True)
        self.summary.setFont(bold)
        self.summary.hide()
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.changes = QTreeWidget(self)
        self.changes.setHeaderHidden(True)
        self.changes.setAccessibleName("Memories and files that changed")
        self.parts = QListWidget(self)
        self.parts.setAccessibleName("Parts of the context")
        self.parts.currentItemChanged.connect(lambda *_: self._show_part())
        self.diff = DiffView(self)
        self.diff.setAccessibleName("Unified diff of the selected part")
        below = QSplitter(Qt.Orientation.Horizontal, self)
        below.addWidget(self.parts)
        below.addWidget(self.diff)
        below.setStretchFactor(1, 3)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.changes)
        split.addWidget(below)
        split.setStretchFactor(1, 2)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addLayout(top)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addWidget(buttons)
        self.setTabOrder(self.first, self.second)
        self.setTabOrder(self.second, self.query)
        self.setTabOrder(self.query, self.compare_button)
        self.setTabOrder(self.compare_button, self.changes)
        self.setTabOrder(self.changes, self.parts)
        self.setTabOrder(self.parts, self.diff)
        self._list_moments()

    def _moment_box(self, name: str) -> QComboBox:
        box = QComboBox(self)
        box.setEditable(True)
        box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        box.setAccessibleName(f"{name} moment")
        box.setToolTip(
            "A moment keepgui recorded, `now`, or a time: ISO 8601 (2026-03-01T14:30) or a time ago (2h, 3d)"
        )
        box.addItem(NOW, None)
        box.setMinimumContentsLength(24)
        return box

    # ------------------------------------------------------------------ the moments

    def _list_moments(self) -> None:
        journal, kind, path = self.journal, self.kind, self.path

        def work() -> list[int]:
            return contextdiff.recorded_moments(journal, registry.open_source(kind, path))

        self._lane.run(work, self._moments_listed, self._failed, owner=self)

    def _moments_listed(self, moments: list[int]) -> None:
        for box in (self.first, self.second):
            for ms in moments:
                box.addItem(moment_text(ms), ms)
        if len(moments) >= 2:  # from the moment before the last change, to now
            self.first.setCurrentIndex(2)
        self._say(
            f"keepgui recorded {len(moments)} moment{'s' if len(moments) != 1 else ''} of this source"
            if moments
            else "keepgui has recorded nothing of this source yet: only `now` can be shown"
        )

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def chosen(self, box: QComboBox) -> tuple[int | None, str]:
        """The moment a box names (epoch ms, None for now) and its text; InvalidInput for a text that is no time."""
        text = box.currentText().strip()
        if text.lower() == NOW:
            return None, NOW
        index = box.findText(text)
        if index > 0 and isinstance(box.itemData(index), int):
            return box.itemData(index), text
        return parse_when(text), text

    # ------------------------------------------------------------------ comparing

    def compare(self) -> None:
        """Compare the two moments chosen (off the GUI thread; the newest request wins)."""
        try:
            moments = (self.chosen(self.first), self.chosen(self.second))
        except KeepguiError as exc:
            self._say(str(exc))
            return
        journal, kind, path, bank, query = self.journal, self.kind, self.path, self.bank, self.query.text()
        self.progress.show()
        self.compare_button.setEnabled(False)
        self._say(f"Computing the context at {moments[0][1]} and at {moments[1][1]}…")
        self._lane.run(
            lambda: _compare(journal, kind, path, bank, moments, query),
            self.show_result,
            self._failed,
            owner=self,
            newest="compare",
        )

    def _failed(self, error: Exception) -> None:
        self.progress.hide()
        self.compare_button.setEnabled(True)
        why = str(error) if isinstance(error, (KeepguiError, OSError)) else f"{type(error).__name__}: {error}"
        self._say(f"Could not compare: {why}")

    def show_result(self, diff: ContextDiff) -> None:
        """Show a comparison: the summary, the memories and files behind it, each part's diff."""
        self.compared = diff
        self.progress.hide()
        self.compare_button.setEnabled(True)
        self._say("")
        self.summary.setText(diff.summary)
        self.summary.show()
        self.changes.clear()
        new_kept = {k: t for k, t in diff.new.items() if k not in diff.new_seen}
        for title, memories in (
            ("New memories the agent is given", diff.new_seen),
            ("New memories kept but not given", new_kept),
            ("Kept but no longer given (a limit or a cut)", diff.cut),
            ("Memories removed", diff.removed),
        ):
            self._group(title, [(t.strip().splitlines()[0] if t.strip() else k, t) for k, t in memories.items()])
        self._group("Memory files changed", [(short_path(p), p) for p in diff.files_changed])
        self.parts.clear()
        first_changed = None
        for name, part in diff.parts.items():
            label = f"{name} · +{part.added} −{part.removed}" if part.diff else f"{name} · unchanged"
            item = QListWidgetItem(label, self.parts)
            item.setData(Qt.ItemDataRole.UserRole, name)
            if part.diff and first_changed is None:
                first_changed = item
        self.parts.setCurrentItem(first_changed or self.parts.item(0))
        self._show_part()

    def _group(self, title: str, lines: list[tuple[str, str]]) -> None:
        group = QTreeWidgetItem(self.changes, [f"{title} ({len(lines)})"])
        font = group.font(0)
        font.setBold(True)
        group.setFont(0, font)
        for shown, whole in lines:
            child = QTreeWidgetItem(group, [shown if len(shown) <= SHOWN_TEXT else shown[: SHOWN_TEXT - 1] + "…"])
            child.setToolTip(0, whole)
        group.setExpanded(bool(lines))

    def _show_part(self) -> None:
        row = self.parts.currentRow()
        if row < 0 or self.compared is None:
            self.diff.setPlainText("")
            return
        part = self.compared.parts[self.parts.item(row).data(Qt.ItemDataRole.UserRole)]
        self.diff.setPlainText(part.diff or "This part is the same at both moments.")

    def done(self, result: int) -> None:
        """Closed: the comparison asked last is not wanted any more."""
        task = self._lane.latest("compare")
        if task is not None:
            task.cancel()
        super().done(result)


def add_action(window: MainWindow) -> QAction:
    """View → Compare context… on ``window`` (of its current bank's source)."""
    action = QAction("C&ompare context…", window)
    action.setStatusTip("What the agent was given at two moments: new memories, ones lost to a cut, each part's diff")
    action.setToolTip(action.statusTip())
    action.triggered.connect(lambda: show(window))
    window.view_menu.addSeparator()
    window.view_menu.addAction(action)
    return action


def show(window: MainWindow) -> CompareContextDialog | None:
    """Open the dialog on the window's current source and bank (a note when none is chosen)."""
    path = window._current_source()
    source = window.hub.sources.get(path) if path else None
    if path is None or source is None:
        window.show_error("Select a source first (File → Open…).")
        return None
    key = window.current
    bank = key.bank if key is not None and key.source == path else None
    dialog = CompareContextDialog(window.inbox.journal, source.kind, path, bank, source.label, window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog
