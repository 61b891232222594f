"""The window's bank actions — Bank → New bank, Trash bank, Restore from trash — split from
:mod:`keepgui.ui.mainwindow` by size. Each takes the window (``self``) and works through its hub,
its ``perform`` (one undoable change, written off the GUI thread: what follows it waits for its
``Outcome``) and its notes, exactly as a method of it would."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMessageBox

from keepgui.core.source import CREATE_BANK, TRASH_BANK, BankKey
from keepgui.ui.dialogs import NameDialog, TrashDialog

if TYPE_CHECKING:
    from keepgui.ui.commands import Outcome
    from keepgui.ui.mainwindow import MainWindow


def new_bank(self: MainWindow) -> None:
    """Bank → New bank."""
    path = self._current_source()
    source = self.hub.sources.get(path) if path else None
    if path is None or source is None or not source.capabilities.can(CREATE_BANK) or source.bank_names is None:
        self.show_error(
            source.capabilities.why_not(CREATE_BANK) if source is not None else "Select a source first (File → Open…)."
        )
        return
    dialog = NameDialog(
        "New bank", "Bank name", source.bank_names, set(self.hub.banks(path)), self, extra_label="Description"
    )
    if not dialog.exec():
        return
    name, description = dialog.value(), dialog.extra_value()
    self.perform(path, lambda s: s.create_bank(name, description), report=False).then(
        lambda outcome: (
            self.want_bank_named(name, [path])
            if outcome.change is not None
            else self.show_error(f"Could not create the bank: {outcome.error}")
        )
    )


def trash_bank(self: MainWindow, key: BankKey | None = None) -> None:
    """Bank → Trash bank (after asking)."""
    key = key or self.current
    source = self.hub.sources.get(key.source) if key else None
    if key is None or source is None:
        return
    if not source.capabilities.can(TRASH_BANK):
        self.note(source.capabilities.why_not(TRASH_BANK))
        return
    answer = QMessageBox.question(
        self,
        "Trash bank",
        f"Move bank “{key.bank}” to the trash?\n\nNothing is deleted: the folder can be restored from the "
        "Trash node (or with Undo).",
    )
    if answer != QMessageBox.StandardButton.Yes:
        return
    self.perform(key.source, lambda s: s.trash_bank(key.bank), report=False).then(
        lambda outcome: _trashed(self, key, outcome)
    )


def _trashed(self: MainWindow, key: BankKey, outcome: Outcome) -> None:
    if outcome.change is None:
        self.show_error(f"Could not trash `{key.bank}`: {outcome.error}")
        return
    if key == self.current:
        self._show_bank(None)
    self.note(outcome.change.message)


def restore_bank(self: MainWindow, folder: str | None = None, source_path: str | None = None) -> None:
    """Bank → Restore from trash."""
    path = source_path if source_path in self.hub.sources else self._current_source()
    if path is None:
        return
    if folder is None:
        trashed = self.hub.trashed(path)
        if not trashed:
            self.note("the trash is empty")
            return
        dialog = TrashDialog(trashed, set(self.hub.banks(path)), self)
        if not dialog.exec() or dialog.folder() is None:
            return
        folder = dialog.folder()
    chosen = folder
    self.perform(path, lambda s: s.restore_bank(chosen), report=False).then(
        lambda outcome: (
            self.want_bank_named(str(outcome.change.result), [path])
            if outcome.change is not None
            else self.show_error(f"Could not restore: {outcome.error}")
        )
    )
