"""Quick keep: feedback while typing, Enter keeps through the window's undo stack, Escape closes."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt

from keepgui.backends.iii.bank import check_save as check_bank
from keepgui.backends.iii.record import fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.backends.nanobot.bank import KEEP_BANK
from keepgui.core.paths import short_path
from keepgui.core.source import BankKey
from keepgui.ui.hub import Hub
from keepgui.ui.quickkeep import QuickKeepPopup, StandaloneHost, open_quick_keep, popup_for
from keepgui.ui.settings import Settings


def keep_bytes(workspace: str) -> bytes:
    with open(os.path.join(workspace, "keep.md"), "rb") as fh:
        return fh.read()


@pytest.fixture
def window(make_window, demo_copy, qtbot):
    """The window on the demo iii data dir (showing `main`) and the demo workspace."""
    win = make_window(demo_copy.iii, workspace=demo_copy.nanobot)
    qtbot.waitUntil(
        lambda: win.hub.sources[demo_copy.nanobot].doc is not None and "coding" in win.hub.banks(demo_copy.iii),
        timeout=10_000,
    )
    return win


@pytest.fixture
def popup(window, qtbot):
    pop = open_quick_keep(window)
    qtbot.addWidget(pop)
    return pop


def type_and_wait(popup, qtbot, text: str, contains: str) -> list[tuple[str, str]]:
    """Type ``text`` and wait until a feedback line contains ``contains``."""
    popup.edit.setText(text)
    qtbot.waitUntil(lambda: any(contains in line for _level, line in popup.hints()), timeout=10_000)
    return popup.hints()


def test_keep_md_feedback_names_duplicates_and_triage(popup, demo_copy, qtbot):
    assert popup.set_target(BankKey(demo_copy.nanobot, KEEP_BANK))
    hints = type_and_wait(popup, qtbot, "Prefers metric units, including in recipes", "Already kept")
    assert any(level == "warning" and "entry 16" in line for level, line in hints)
    hints = type_and_wait(popup, qtbot, "Ana, my sister, lives in Berlin", "Near-duplicate")
    assert any("“Sister Ana lives in Berlin”" in line for _level, line in hints)
    hints = type_and_wait(popup, qtbot, "Always reply in Portuguese", "AGENTS.md")
    assert hints[0][0] == "warning" and hints[0][1].startswith("Belongs in AGENTS.md")
    hints = type_and_wait(popup, qtbot, "Has a cat called Miso", "durable fact")
    assert hints == [("ok", "A durable fact about the user: it belongs in keep.md")]


def test_enter_keeps_the_canonical_line_and_the_window_can_undo_it(window, popup, demo_copy, qtbot):
    original = keep_bytes(demo_copy.nanobot)
    popup.set_target(BankKey(demo_copy.nanobot, KEEP_BANK))
    popup.edit.setText("remember that  Has a cat called   Miso")
    qtbot.keyClick(popup.edit, Qt.Key.Key_Return)
    assert keep_bytes(demo_copy.nanobot) == original + b"- Has a cat called Miso\n"
    assert not popup.isVisible() and popup.edit.text() == ""
    assert window.statusBar().currentMessage().startswith("Kept: Has a cat called Miso")
    assert window.undo_stack.count() == 1
    window.undo_stack.undo()
    assert keep_bytes(demo_copy.nanobot) == original  # byte for byte
    window.undo_stack.redo()
    assert keep_bytes(demo_copy.nanobot) == original + b"- Has a cat called Miso\n"


def test_enter_refuses_a_rule_and_ctrl_enter_keeps_it_anyway(window, popup, demo_copy, qtbot):
    original = keep_bytes(demo_copy.nanobot)
    popup.set_target(BankKey(demo_copy.nanobot, KEEP_BANK))
    popup.edit.setText("Always reply in Portuguese")
    qtbot.keyClick(popup.edit, Qt.Key.Key_Return)
    assert keep_bytes(demo_copy.nanobot) == original and popup.isVisible()
    assert popup.hints()[-1] == ("info", "Ctrl+Enter keeps it in keep.md anyway.")
    assert window.undo_stack.count() == 0  # nothing written, nothing to undo
    qtbot.keyClick(popup.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert keep_bytes(demo_copy.nanobot) == original + b"- Always reply in Portuguese\n"
    assert window.undo_stack.count() == 1


def test_keeping_into_a_bank_that_is_not_shown_is_undoable(window, popup, demo_copy, qtbot):
    assert window.current == BankKey(demo_copy.iii, "main")
    coding = BankKey(demo_copy.iii, "coding")
    assert popup.set_target(coding)
    hints = type_and_wait(popup, qtbot, "Main stack is Go and Postgres", "Already remembered")
    assert hints[0] == ("info", "Already remembered in “coding” (seen 1×): saving reinforces it")
    text = "Deploys go out on Tuesdays after the standup"
    type_and_wait(popup, qtbot, text, "new memory")
    qtbot.keyClick(popup.edit, Qt.Key.Key_Return)
    bank = DataDir(demo_copy.iii).bank("coding")
    bank.refresh()
    record = bank.get(fingerprint(text))
    assert record is not None and record.invalid_at is None and record.text == text
    assert window.current == BankKey(demo_copy.iii, "main")  # the window stayed where it was
    assert "bank “coding” (a new memory)" in window.statusBar().currentMessage()
    window.undo_stack.undo()
    bank.refresh()
    assert bank.get(fingerprint(text)).invalid_at is not None  # retired by a compensating record
    window.undo_stack.redo()
    bank.refresh()
    assert bank.get(fingerprint(text)).invalid_at is None


def test_escape_closes_and_the_menu_action_reopens(window, popup, qtbot):
    assert popup.isVisible()
    qtbot.keyClick(popup.edit, Qt.Key.Key_Escape)
    assert not popup.isVisible()
    assert window.act_quick_keep.shortcut().toString() == "Ctrl+Shift+K"
    edit_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Edit")
    assert window.act_quick_keep in edit_menu.actions()
    window.act_quick_keep.trigger()
    assert popup_for(window) is popup and popup.isVisible()


def test_targets_list_every_keep_md_and_bank(popup, demo_copy):
    labels = [popup.target.itemText(i) for i in range(popup.target.count())]
    assert labels[0] == f"keep.md — {short_path(demo_copy.nanobot, 34)}"
    assert {label.split(" — ")[0] for label in labels[1:]} == {"main", "blog", "coding"}
    assert popup.target.accessibleName() == "Keep into"
    assert popup.close_button.accessibleName() == "Close Quick keep"


def test_the_popup_renders(popup, demo_copy, qtbot, tmp_path):
    popup.set_target(BankKey(demo_copy.nanobot, KEEP_BANK))
    type_and_wait(popup, qtbot, "Always answer in English, never Portuguese", "Near-duplicate")
    image = popup.grab()
    path = os.environ.get("KEEPGUI_QUICKKEEP_PNG") or str(tmp_path / "quick-keep.png")
    assert image.save(path, "PNG")
    assert image.width() >= 600 and 120 <= image.height() <= 400


def test_bank_feedback_without_qt():
    live = [("fp1", "Prefers tea over coffee"), ("fp2", "The API port is 3111")]
    hints = check_bank("Prefers green tea over coffee", None, live, "main")
    assert hints[0].level == "ok"
    assert "Near-duplicate: it has every word of “Prefers tea over coffee”" in [h.text for h in hints]
    assert check_bank("x", None, live, "main")[0].level == "error"


def test_standalone_popup_keeps_without_a_window(demo_copy, qtbot, tmp_path):
    hub = Hub(watch=False)
    host = StandaloneHost(hub, Settings(str(tmp_path / "settings.json")))
    hub.add("nanobot", demo_copy.nanobot)
    said = []
    popup = QuickKeepPopup(host, notify=said.append)
    qtbot.addWidget(popup)
    try:
        popup.open("Has a cat called Miso")
        # the targets are the banks the hub has opened: loaded off the GUI thread, so waited for
        qtbot.waitUntil(lambda: popup.target_key() == BankKey(demo_copy.nanobot, KEEP_BANK), timeout=30_000)
        assert popup.keep()
        assert keep_bytes(demo_copy.nanobot).endswith(b"- Has a cat called Miso\n")
        assert said and said[0].startswith("Kept: Has a cat called Miso")
        assert host.undo_stack.count() == 1
        assert host.settings.get("quick_keep/target") == [demo_copy.nanobot, KEEP_BANK]
    finally:
        hub.shutdown()


def test_quick_keep_on_its_own_keeps_prints_and_closes(demo_copy, qtbot, monkeypatch, tmp_path):
    import argparse

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from keepgui.ui.quickkeep import run_standalone

    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "home"))
    args = argparse.Namespace(
        demo=False,
        data_dir=None,
        workspace=[demo_copy.nanobot],
        reload_command="",
        text=["Has", "a", "cat", "called", "Miso"],
    )
    seen = {}

    def press_enter() -> None:
        popup = next(
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, QuickKeepPopup) and w.isVisible() and isinstance(w.host, StandaloneHost)
        )
        seen["text"] = popup.edit.text()
        seen["target"] = popup.target_key()
        qtbot.keyClick(popup.edit, Qt.Key.Key_Return)

    QTimer.singleShot(300, press_enter)
    QTimer.singleShot(20_000, QApplication.instance().quit)  # never hang the suite
    assert run_standalone(args) == 0
    assert seen == {"text": "Has a cat called Miso", "target": BankKey(demo_copy.nanobot, KEEP_BANK)}
    assert keep_bytes(demo_copy.nanobot).endswith(b"- Has a cat called Miso\n")


def test_colours_follow_a_dark_palette(popup, demo_copy, qtbot):
    from PySide6.QtGui import QPalette

    from tests.ui.test_highlighting import dark_palette

    popup.set_target(BankKey(demo_copy.nanobot, KEEP_BANK))
    type_and_wait(popup, qtbot, "Always reply in Portuguese", "AGENTS.md")
    row = popup.rows[0]
    before = row.mark.palette().color(QPalette.ColorRole.WindowText)
    with dark_palette():
        qtbot.waitUntil(lambda: row.label.palette().color(QPalette.ColorRole.WindowText).name() == "#e6e6e6")
        assert row.mark.palette().color(QPalette.ColorRole.WindowText) != before  # re-derived for dark
        assert popup.target_key() == BankKey(demo_copy.nanobot, KEEP_BANK)  # kept across the redraw
