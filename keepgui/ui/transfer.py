"""Across agents in the window: copy or move memories to another agent's bank, export a bank, import a bundle.

Memory → Copy to another agent… / Move to another agent… and File → Import… open a
:class:`TransferDialog`: the memories (the selected rows, or a bundle's) as a plan for the bank chosen
among the open sources' banks that keep facts — each line what will be written there and what that
bank's own check says of it (its file and limit, a duplicate), already there, or refused with why —
asked off the GUI thread. **Apply** keeps each through the target's own keep (in its format, within
its limits; what it refuses is listed with the reason), and a move forgets the memory at its source
once the target kept it: all of it one undo step. File → Export… writes the shown bank's live
memories as a bundle (Markdown for people, JSON for programs) to a new file, off the GUI thread.
The plan and the writes are :mod:`keepgui.core.bundles`, the command line's ``copy``, ``import`` and
``export``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from keepgui.core import bundles
from keepgui.core.errors import KeepguiError
from keepgui.core.source import KEEP, Bank, BankKey, Change
from keepgui.ui import shortcuts, theme
from keepgui.ui.tasks import lane
from keepgui.ui.timetravel import menu_titled

MainWindow = Any
"""The window (typed loosely: this module is a layer below :mod:`keepgui.ui.mainwindow`)."""

MARKS = {bundles.PLANNED: "+", bundles.KEPT: "✓", bundles.PRESENT: "=", bundles.REFUSED: "!"}
STATES = {
    bundles.PLANNED: "will be kept",
    bundles.KEPT: "kept",
    bundles.PRESENT: "already there",
    bundles.REFUSED: "refused",
}
MARKDOWN, JSON = "Markdown for people (*.md)", "JSON for programs (*.json)"


class TransferDialog(QDialog):
    """Memories as a plan for a chosen bank, then applied (see the module docstring)."""

    def __init__(
        self,
        window: MainWindow,
        texts: Sequence[str],
        keys: Sequence[str] = (),
        origin: BankKey | None = None,
        *,
        move: bool = False,
        title: str = "Copy to another agent",
    ) -> None:
        super().__init__(window)
        self.setWindowTitle(title)
        self.window_ = window
        self.texts, self.keys, self.origin, self.moving = list(texts), list(keys), origin, move
        self.items: list[bundles.Item] = []
        self.applied = False
        self.target = QComboBox(self)
        self.target.setAccessibleName("Target bank")
        hub = window.hub
        self.targets: list[BankKey] = []
        for path, source in hub.sources.items():
            for name in hub.banks(path):
                key = BankKey(path, name)
                if key == origin:
                    continue
                try:
                    if not hub.capabilities(key).can(KEEP):
                        continue
                except (KeepguiError, OSError, KeyError):
                    continue
                self.targets.append(key)
                self.target.addItem(f"{source.label} · {name}")
        self.plan = QTreeWidget(self)
        self.plan.setAccessibleName("The plan")
        self.plan.setHeaderLabels(["", "Memory", "What happens"])
        self.plan.setRootIsDecorated(False)
        self.plan.setColumnWidth(0, 28)
        self.plan.setColumnWidth(1, 420)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Plan summary")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.apply_button = QPushButton("&Apply", self)
        self.apply_button.setEnabled(False)
        self.buttons.addButton(self.apply_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.apply_button.clicked.connect(self.apply)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Into:", self.target)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.plan, 1)
        layout.addWidget(self.summary)
        layout.addWidget(self.buttons)
        self.resize(760, 420)
        self.target.currentIndexChanged.connect(lambda _i: self.ask_plan())
        if not self.targets:
            self.summary.setText("No open bank keeps facts: open another agent's memory first (File → Open…).")

    def choose(self, key: BankKey) -> None:
        """Make ``key`` the target (the plan is asked again)."""
        if key in self.targets:
            self.target.setCurrentIndex(self.targets.index(key))
            self.ask_plan()

    @property
    def chosen(self) -> BankKey | None:
        """The target bank."""
        index = self.target.currentIndex()
        return self.targets[index] if 0 <= index < len(self.targets) else None

    def ask_plan(self) -> None:
        """The plan for the chosen bank, asked off the GUI thread."""
        key = self.chosen
        if key is None:
            return
        self.applied = False
        self.apply_button.setEnabled(False)
        self.summary.setText("planning…")
        texts, keys = self.texts, self.keys

        def question(bank: Any) -> list[bundles.Item]:
            if not bank.is_loaded():
                bank.load(full=True)
            return bundles.plan(bank, texts, keys, check=True)

        self.window_.hub.ask(key, question, lambda answer: self._planned(key, answer), owner=self)

    def _planned(self, key: BankKey, answer: list[bundles.Item] | Exception) -> None:
        if key != self.chosen:
            return
        if isinstance(answer, Exception):
            self.summary.setText(f"Cannot plan: {answer}")
            return
        self.show_items(answer)
        self.apply_button.setEnabled(any(i.state == bundles.PLANNED for i in answer))

    def show_items(self, items: list[bundles.Item]) -> None:
        """The plan (or what applying it did), line by line, and the counts."""
        self.items = items
        self.plan.clear()
        for item in items:
            first = item.text.strip().splitlines()[0] if item.text.strip() else "(empty)"
            said = item.why or "; ".join(h.text for h in item.hints)
            line = QTreeWidgetItem([MARKS[item.state], first, f"{STATES[item.state]}" + (f": {said}" if said else "")])
            line.setToolTip(1, item.text[:2000])
            line.setToolTip(2, said)
            if item.state == bundles.REFUSED:
                line.setForeground(2, theme.strong("removed"))
            self.plan.addTopLevelItem(line)
        counts = {s: sum(1 for i in items if i.state == s) for s in STATES}
        verb = "to move" if self.moving else "to keep"
        done = f"{counts[bundles.KEPT]} kept" if self.applied else f"{counts[bundles.PLANNED]} {verb}"
        self.summary.setText(
            f"{done}, {counts[bundles.PRESENT]} already there, {counts[bundles.REFUSED]} refused"
            + ("" if self.applied else " — nothing is written until you apply it")
        )

    def apply(self) -> None:
        """Keep each planned memory through the target's own keep (a move forgets it at the source once
        kept): one undo step."""
        key = self.chosen
        if key is None or self.applied:
            return
        window = self.window_
        what = "Move" if self.moving else "Copy"
        planned = [i for i in self.items if i.state == bundles.PLANNED]
        results = []
        window.undo_stack.beginMacro(f"{what} {len(planned)} to {key.bank}")
        try:
            for item in self.items:
                if item.state != bundles.PLANNED:
                    results.append(item)
                    continue
                outcome = window.perform(key, _keeping(item), f"Keep in {key.bank}", False)
                if outcome.change is None:
                    done = bundles.Item(item.text, bundles.REFUSED, outcome.error or "refused", key=item.key)
                else:
                    done = bundles.outcome(item, outcome.change)
                results.append(done)
                if self.moving and done.state == bundles.KEPT and self.origin is not None and item.key:
                    window.perform(self.origin, _forgetting(item.key), "Forget moved")
        finally:
            window.undo_stack.endMacro()
        self.applied = True
        self.apply_button.setEnabled(False)
        self.show_items(results)
        window.note(self.summary.text())


def _keeping(item: bundles.Item) -> Callable[[Bank], Change]:
    return lambda bank: bundles.keep(bank, item)


def _forgetting(key: str) -> Callable[[Bank], Change]:
    return lambda bank: bundles.forget_moved(bank, key)


class Transfer:
    """The window's actions across agents (see the module docstring)."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.dialog: TransferDialog | None = None
        self._lane = lane("transfer")
        a = shortcuts.make_action
        self.act_export = a(window, "&Export…", self.export, tip="Write this bank's memories as a bundle")
        self.act_import = a(
            window, "&Import…", self.import_bundle, tip="A bundle's memories as a plan for any open bank"
        )
        self.act_copy = a(
            window,
            "Copy to another a&gent…",
            lambda: self.copy(False),
            tip="Copy the selected memories to another agent",
        )
        self.act_move = a(
            window,
            "Mo&ve to another agent…",
            lambda: self.copy(True),
            tip="Move the selected memories to another agent",
        )
        for action in (self.act_export, self.act_import, self.act_copy, self.act_move):
            window.addAction(action)

    def add_to_menus(self) -> None:
        """File → Export…, Import…; Memory → Copy/Move to another agent…."""
        window = self.window
        file_menu = menu_titled(window, "&File")
        if file_menu is not None:
            file_menu.insertAction(window.act_quit, self.act_export)
            file_menu.insertAction(window.act_quit, self.act_import)
            file_menu.insertSeparator(window.act_quit)
        memory = menu_titled(window, "&Memory")
        if memory is not None:
            memory.addSeparator()
            memory.addAction(self.act_copy)
            memory.addAction(self.act_move)

    def _open(self, dialog: TransferDialog) -> TransferDialog:
        if self.dialog is not None:
            self.dialog.close()
        self.dialog = dialog
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda _o=None: setattr(self, "dialog", None) if self.dialog is dialog else None)
        dialog.show()
        dialog.ask_plan()
        return dialog

    def copy(self, move: bool) -> TransferDialog | None:
        """Memory → Copy (or Move) to another agent…: the selected memories as a plan."""
        window = self.window
        records = [r for r in window.memories.selected_records() if r is not None and r.invalid_at is None]
        if window.current is None or not records:
            window.note("select the memories to copy")
            return None
        title = "Move to another agent" if move else "Copy to another agent"
        dialog = TransferDialog(
            window, [r.text for r in records], [r.id for r in records], window.current, move=move, title=title
        )
        return self._open(dialog)

    def export(self, path: str | None = None, fmt: str | None = None) -> None:
        """File → Export…: the shown bank's live memories to a new file (off the GUI thread)."""
        window = self.window
        key = window.current
        if key is None:
            window.note("select a bank to export")
            return
        if path is None:
            path, fmt = QFileDialog.getSaveFileName(window, "Export memories", f"{key.bank}.md", f"{MARKDOWN};;{JSON}")
            if not path:
                return
        as_json = fmt == JSON or (fmt is None and path.endswith(".json"))
        hub = window.hub
        bank = hub.bank(key)
        rows = [r for r in hub.rows(key) if r.invalid_at is None]
        if bank.capabilities.ordered:
            rows.sort(key=lambda r: (r.position is None, r.position or 0, r.id))
        else:
            rows.sort(key=lambda r: (-(r.updated_at or 0), r.id))
        kind, source = hub.source(key.source).kind, key.source

        def work() -> str:
            obj = bundles.bundle_of(kind, source, bank, rows)
            text = bundles.bundle_json(obj) if as_json else bundles.bundle_markdown(obj)
            return bundles.write_new(path, text)

        self._lane.run(
            work,
            lambda written: window.note(f"{len(rows)} memories exported to {written}"),
            lambda exc: window.show_error(f"Export failed: {exc}"),
            owner=window,
        )

    def import_bundle(self, path: str | None = None) -> None:
        """File → Import…: a JSON bundle, read off the GUI thread, as a plan for an open bank."""
        window = self.window
        if path is None:
            path, _fmt = QFileDialog.getOpenFileName(window, "Import a bundle", "", JSON)
            if not path:
                return
        self._lane.run(lambda: bundles.read_bundle(path), self._read, self._unreadable, owner=window)

    def _read(self, obj: dict[str, Any]) -> None:
        window = self.window
        title = (
            f"Import {os.path.basename(str(obj.get('source', '')))} · {obj.get('bank', '')} ({obj.get('agent', '')})"
        )
        dialog = TransferDialog(window, bundles.texts_of(obj), title=title)
        if window.current is not None:
            dialog.choose(window.current)
        self._open(dialog)

    def _unreadable(self, exc: Exception) -> None:
        self.window.show_error(f"Cannot import: {exc}")


def install(window: MainWindow) -> Transfer:
    """Give the window its actions across agents (File and Memory menus)."""
    transfer = Transfer(window)
    transfer.add_to_menus()
    return transfer
