"""keepgui's own writes are not reported as changes from outside (issue 23, item 7): after applying
a compaction, after trashing a bank, after undoing a rule save — no "changed on disk" note or
banner."""

from __future__ import annotations

import os

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from keepgui.core.source import BankKey
from keepgui.ui.compaction import CompactionDialog
from tests.ui.conftest import open_keep


def _notes(window) -> list[str]:
    said: list[str] = []
    window.hub.note.connect(said.append)
    window.statusBar().messageChanged.connect(lambda text: said.append(text) if text else None)
    return said


def _yes_when_asked() -> None:
    def press() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            box.button(QMessageBox.StandardButton.Yes).click()
        else:
            QTimer.singleShot(20, press)

    QTimer.singleShot(20, press)


def _outside(said: list[str]) -> list[str]:
    return [s for s in said if "changed on disk" in s or "rewritten by another program" in s]


def test_trashing_a_bank_is_not_reported_as_its_rules_changing_on_disk(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = str(demo_copy.iii)
    window.select_bank(BankKey(path, "coding"))
    qtbot.waitUntil(lambda: window.current == BankKey(path, "coding") and window._loading is None, timeout=10_000)
    said = _notes(window)
    _yes_when_asked()
    window.act_trash_bank.trigger()
    qtbot.waitUntil(lambda: "coding" not in window.hub.banks(path), timeout=10_000)
    qtbot.wait(1500)  # the watcher's events of the move arrive (debounced)
    assert _outside(said) == []


def test_applying_a_compaction_is_not_reported_as_agents_md_changing_on_disk(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    window.show_panel("rules")
    rules = window.panel("rules")
    qtbot.waitUntil(lambda: rules.docs is not None and rules.doc is not None, timeout=10_000)
    said = _notes(window)
    window.review_compaction(key)
    qtbot.waitUntil(
        lambda: isinstance(window.compaction.dialog, CompactionDialog) and window.compaction.dialog.isVisible(),
        timeout=15_000,
    )
    dialog = window.compaction.dialog
    dialog._set_selection(dialog.plan.select("all"))
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5_000)
    qtbot.wait(1500)
    assert _outside(said) == []
    assert not rules.banner.isVisible() or "changed on disk" not in rules.banner.label.text()


def test_undoing_a_rule_save_shows_no_changed_on_disk_banner(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.show_panel("rules")
    rules = window.panel("rules")
    qtbot.waitUntil(lambda: rules.docs is not None and rules.doc is not None, timeout=10_000)
    said = _notes(window)
    path = rules.doc.path
    rules.editor.setPlainText(rules.doc.text + "- one more line\n")
    assert rules.save() is True
    qtbot.wait(600)
    rules.editor.setPlainText(rules.editor.toPlainText() + "- typed after the save\n")
    window.undo_stack.undo()
    qtbot.wait(1500)
    with open(path, encoding="utf-8") as fh:
        assert "one more line" not in fh.read()
    assert "typed after the save" in rules.editor.toPlainText()  # the unsaved edits stay
    assert not rules.banner.isVisible() or "changed on disk" not in rules.banner.label.text()
    assert _outside(said) == []
    assert os.path.exists(path)


def test_undoing_a_trash_is_not_reported_as_rules_changing_on_disk(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = str(demo_copy.iii)
    window.select_bank(BankKey(path, "coding"))
    qtbot.waitUntil(lambda: window.current == BankKey(path, "coding") and window._loading is None, timeout=10_000)
    _yes_when_asked()
    window.act_trash_bank.trigger()
    qtbot.waitUntil(lambda: "coding" not in window.hub.banks(path), timeout=10_000)
    qtbot.wait(1500)
    said = _notes(window)
    window.undo_stack.undo()  # the bank comes back from the trash
    qtbot.waitUntil(lambda: "coding" in window.hub.banks(path), timeout=10_000)
    qtbot.wait(1500)
    assert _outside(said) == []
