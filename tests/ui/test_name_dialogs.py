"""New bank / New rule dialogs (issue 23, item 5): the hint is read whole (not clipped), in words
(no regex), and after "Use suggestion" Enter creates what was suggested."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from keepgui.ui.dialogs import NameDialog


def _in_the_dialog(act, qtbot) -> dict:
    """When the NameDialog opens: type a bad name, read its hint, use the suggestion, press Enter."""
    seen: dict = {}

    def drive() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, NameDialog):
            QTimer.singleShot(20, drive)
            return
        qtbot.keyClicks(dialog.name, "My Notes!")
        QApplication.processEvents()
        hint = dialog.hint
        seen["hint"] = hint.text()
        seen["shown"] = hint.isVisible() and hint.height() >= hint.heightForWidth(hint.width())
        qtbot.mouseClick(dialog.use_slug, Qt.MouseButton.LeftButton)
        QApplication.processEvents()
        seen["name"] = dialog.name.text()
        seen["focus"] = QApplication.focusWidget()
        seen["ok_enabled"] = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
        focused = QApplication.focusWidget() or dialog
        qtbot.keyClick(focused, Qt.Key.Key_Return)
        if dialog.isVisible():  # Enter did not close it: close it so the test goes on
            seen["still_open"] = True
            dialog.reject()

    QTimer.singleShot(20, drive)
    act.trigger()
    return seen


def _check_hint(seen) -> None:
    assert "my-notes" in seen["hint"]  # the suggestion, readable
    assert "[a-z" not in seen["hint"] and "{0," not in seen["hint"]  # no regex for a person to decode
    assert seen["shown"], f"the hint is clipped: {seen['hint']!r}"
    assert seen["name"] == "my-notes" and seen["ok_enabled"]
    assert not seen.get("still_open"), f"Enter after Use suggestion left the dialog open (focus on {seen['focus']})"


def test_new_bank_reads_its_hint_and_enter_after_the_suggestion_creates_it(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = str(demo_copy.iii)
    seen = _in_the_dialog(window.act_new_bank, qtbot)
    _check_hint(seen)
    qtbot.waitUntil(lambda: "my-notes" in window.hub.banks(path), timeout=10_000)


@pytest.mark.qt_log_ignore("This plugin does not support")
def test_new_rule_reads_its_hint_and_enter_after_the_suggestion_creates_it(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    rules = window.panel("rules")
    window.show_panel("rules")
    qtbot.waitUntil(lambda: rules.docs is not None, timeout=10_000)
    seen = _in_the_dialog(rules.act_new, qtbot)
    _check_hint(seen)
    qtbot.waitUntil(lambda: any(n == "my-notes" for n, _ in rules.docs.list()), timeout=10_000)
