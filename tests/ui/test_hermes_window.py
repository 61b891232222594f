"""Hermes Agent in the window, through the seam (issue #26): the demo home in the sidebar with its counts,
its entries as rows, a forget undone, and the pending approvals window — the diff of a staged write,
Approve as one undoable change, and the attention raised when the agent stages a new write.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from PySide6.QtCore import Qt

from keepgui.core.source import BankKey
from keepgui.ui.settings import Settings
from tests.ui.conftest import window_args


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def hermes_window(qtbot, tmp_path, demo_copy):
    """A window on the demo's Hermes home, its default profile shown; returns ``(window, key)``."""
    from keepgui.ui.application import build_window

    windows = []

    def build():
        args = window_args(hermes=[demo_copy.hermes], bank="default")
        window = build_window(args, Settings(str(tmp_path / f"settings-{len(windows)}.json")), watch=True)
        windows.append(window)
        window.resize(1200, 800)
        window.show()
        key = BankKey(demo_copy.hermes, "default")
        qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=15_000)
        return window, key

    yield build
    for window in windows:
        if window.rules.dirty:
            window.rules.discard()
        window.close()
        window.hub.shutdown()
        window.deleteLater()


def test_the_home_shows_its_counts_rows_and_a_forget_is_undone(hermes_window, demo_copy, qtbot):
    from keepgui.ui.sidebar import DetailRole

    window, key = hermes_window()
    index = window.tree_model.index_of_bank(key)
    qtbot.waitUntil(
        lambda: (
            window.tree_model.index_of_bank(key).data(DetailRole)
            == "MEMORY 2,132 / 2,200 chars · USER 335 / 1,375 · 1 pending · 1 blocked"
        ),
        timeout=10_000,
    )
    assert index.isValid()
    rows = window.hub.rows(key)
    assert len(rows) == 25 + 5 - (25 - len([r for r in rows if "MEMORY.md" in r.tags]))
    blocked = [r for r in rows if "blocked" in r.tags]
    assert len(blocked) == 1 and "c2_heartbeat" in dict(blocked[0].fields)["Blocked"]
    memory = os.path.join(demo_copy.hermes, "memories", "MEMORY.md")
    before = read(memory)
    victim = next(r for r in rows if r.text.startswith("Travel:"))
    window.perform(key, lambda bank: bank.set_live([victim.id], False))
    assert b"Travel:" not in read(memory)
    assert window.undo_stack.undoText().startswith("Forget")
    window.undo_stack.undo()
    assert read(memory) == before


def test_pending_approval_window_approves_undoes_and_raises_attention(hermes_window, demo_copy, qtbot):
    window, _key = hermes_window()
    arrived: list[str] = []
    window.approvals.arrived.connect(lambda _n, sentence: arrived.append(sentence))
    dialog = window.show_approvals()
    panel = dialog.panel
    qtbot.waitUntil(lambda: len(panel.items) == 1, timeout=10_000)
    assert "Nightjar training data" in panel.diff.toPlainText()
    assert panel.diff.toPlainText().splitlines()[0] == "--- a/memories/MEMORY.md"
    assert "\\ No newline at end of file" in panel.diff.toPlainText()  # the last entry is not rewritten
    assert panel.list.item(0).text().splitlines()[1].strip().startswith("Hermes · ")  # whose write it is
    assert panel.approve_button.isEnabled()
    memory = os.path.join(demo_copy.hermes, "memories", "MEMORY.md")
    before = read(memory)
    panel.list.setCurrentRow(0)
    qtbot.mouseClick(panel.approve_button, Qt.MouseButton.LeftButton)
    assert read(memory).endswith("\n§\nNightjar training data now lives on the NAS: /volume1/nightjar.".encode())
    assert not os.listdir(os.path.join(demo_copy.hermes, "pending", "memory"))
    qtbot.waitUntil(lambda: not panel.items, timeout=10_000)
    window.undo_stack.undo()
    assert read(memory) == before
    assert os.listdir(os.path.join(demo_copy.hermes, "pending", "memory")) == ["5f0c2a91.json"]
    qtbot.waitUntil(lambda: len(panel.items) == 1, timeout=10_000)
    # the agent stages another write: the watcher re-reads the home and the window is told once
    record = {
        "id": "0badcafe",
        "subsystem": "memory",
        "action": "remove",
        "summary": "remove from memory: Travel",
        "origin": "background_review",
        "created_at": time.time(),
        "payload": {"action": "remove", "target": "memory", "content": None, "old_text": "Travel:"},
    }
    with open(os.path.join(demo_copy.hermes, "pending", "memory", "0badcafe.json"), "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=2)
    qtbot.waitUntil(lambda: len(panel.items) == 2, timeout=15_000)
    assert arrived == ["New write awaiting approval: remove from memory: Travel — staged by background review"]
    dialog.close()


def test_move_up_and_down_reorder_an_entry_in_its_file_and_undo(hermes_window, demo_copy, qtbot):
    from keepgui.backends.hermes.entries import parse

    window, key = hermes_window()
    panel = window.memories
    memory = os.path.join(demo_copy.hermes, "memories", "MEMORY.md")
    before = read(memory)
    texts = parse(before.decode())
    second = texts[1]
    row = next(r for r in window.hub.rows(key) if r.text == second)
    assert panel.select_key(row.id)
    qtbot.waitUntil(lambda: panel.act_move_up.isEnabled(), timeout=5_000)
    assert panel.act_move_down.isEnabled() and panel.act_move_up.shortcut().toString() == "Alt+Up"
    assert panel.act_move_up in window.menuBar().actions()[2].menu().actions()  # Memory → Move up
    panel.act_move_up.trigger()
    assert parse(read(memory).decode())[:2] == [second, texts[0]]
    assert window.undo_stack.undoText() == "Move entry up"
    qtbot.waitUntil(lambda: min(window.hub.rows(key), key=lambda r: r.position).text == second)
    assert panel.select_key(row.id)
    qtbot.waitUntil(lambda: not panel.act_move_up.isEnabled(), timeout=5_000)  # first: nowhere to go
    window.undo_stack.undo()
    assert read(memory) == before
    window.undo_stack.redo()
    assert parse(read(memory).decode())[:2] == [second, texts[0]]
    # the first entry of USER.md has MEMORY.md's last above it in the table: Hermes moves nothing, and says so
    notes: list[str] = []
    panel.note.connect(notes.append)
    first_user = min((r for r in window.hub.rows(key) if "USER.md" in r.tags), key=lambda r: r.position)
    assert panel.select_key(first_user.id)
    qtbot.waitUntil(lambda: panel.act_move_up.isEnabled(), timeout=5_000)
    steps = window.undo_stack.count()
    panel.act_move_up.trigger()
    assert notes == ["already the first entry of USER.md"] and window.undo_stack.index() == steps


def test_move_is_offered_by_capability_and_greyed_with_the_reason_elsewhere(qtbot, tmp_path, demo_copy):
    from keepgui.core.source import MOVE
    from keepgui.ui.application import build_window

    window = build_window(window_args(workspace=[demo_copy.nanobot]), Settings(str(tmp_path / "s.json")), watch=False)
    try:
        window.show()
        qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=15_000)
        panel = window.memories
        rows = window.hub.rows(window.current)
        assert panel.select_key(rows[1].id)
        caps = window.hub.capabilities(window.current)
        assert not caps.can(MOVE) and not panel.act_move_up.isEnabled()
        assert panel.act_move_up.toolTip() == caps.why_not(MOVE)
    finally:
        window.close()
        window.hub.shutdown()
        window.deleteLater()


@pytest.mark.qt_log_ignore("No such signal QPlatformNativeInterface::systemTrayWindowChanged")  # offscreen: no tray
def test_the_tray_shows_the_demo_homes_staged_write(hermes_window, qtbot):
    from PySide6.QtWidgets import QApplication

    from keepgui.ui import theme
    from keepgui.ui.desktop import Desktop

    window, _key = hermes_window()
    desktop = Desktop(window, QApplication.instance(), use_tray=True)
    tray = desktop.tray
    assert tray is not None
    window.approvals.refresh()
    qtbot.waitUntil(lambda: tray.pending == 1, timeout=10_000)
    assert tray.icon().pixmap(32, 32).toImage().pixelColor(28, 3) == theme.ATTENTION
    assert tray.act_approvals.text() == "Pending approvals (1)…"
    tray.hide()


def test_the_preview_shows_what_the_demos_stored_session_would_not_see(hermes_window, qtbot):
    window, _key = hermes_window()
    window.show_panel("preview")
    preview = window.preview
    qtbot.waitUntil(lambda: preview.last_result is not None, timeout=10_000)
    assert preview.summary.text().endswith("1 stored session (1 resumed would not see memory changes: below)")
    text = preview.view.section.toPlainText()
    assert "): memory changes this session will not see" in text
    assert "-The NAS is a Synology DS920+ at 192.168.1.10; backups run nightly at 02:00 via Hyper Backup." in text
    assert "+The user's Git identity for work repos is ada@work.example; personal repos use ada@home.example." in text


def test_the_activity_strip_says_whole_why_it_has_no_bars(hermes_window, qtbot):
    window, _key = hermes_window()
    window.resize(1024, 700)
    strip = window.memories.strip
    qtbot.waitUntil(lambda: strip.problem == "Hermes does not record when an entry was written", timeout=5_000)
    assert strip.shown_problem() == strip.problem  # not its first 40 characters, clipped at the left
