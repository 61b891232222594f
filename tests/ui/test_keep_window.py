"""keep.md of a nanobot workspace in the window: rows, greyed pin, forget/restore, undo, live reload."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt

from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, RecordRole
from tests.ui.conftest import open_keep as open_shown_keep


def keep_bytes(copy) -> bytes:
    with open(os.path.join(copy.nanobot, "keep.md"), "rb") as fh:
        return fh.read()


def open_keep(make_window, demo_copy, qtbot):
    return open_shown_keep(make_window, demo_copy, qtbot)[0]


def test_keep_rows_follow_the_file_and_pin_is_greyed(make_window, demo_copy, qtbot, qtmodeltester):
    window = open_keep(make_window, demo_copy, qtbot)
    doc = window.hub.sources[demo_copy.nanobot].doc
    proxy = window.memories.proxy
    assert proxy.rowCount() == doc.entry_count
    assert [proxy.index(r, 0).data(RecordRole).text for r in range(3)] == [e.text for e in doc.entries[:3]]
    pin = proxy.index(0, COLUMN_INDEX["pinned"])
    assert not (pin.flags() & Qt.ItemFlag.ItemIsEnabled)
    assert "no pin" in pin.data(Qt.ItemDataRole.ToolTipRole)
    assert window.memories.table.isColumnHidden(COLUMN_INDEX["tags"])
    assert "compaction due" in window.counts_label.text()
    qtmodeltester.check(window.memories.model)


def test_forget_restore_and_undo_are_exact(make_window, demo_copy, qtbot):
    window = open_keep(make_window, demo_copy, qtbot)
    original = keep_bytes(demo_copy)
    proxy = window.memories.proxy
    entry = proxy.index(3, 0).data(RecordRole)
    proxy.setData(proxy.index(3, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    after = keep_bytes(demo_copy)
    assert entry.text.encode() not in after and len(after) < len(original)
    window.memories.act_history.setChecked(True)
    qtbot.waitUntil(
        lambda: any(proxy.index(r, 0).data(RecordRole).invalid_at is not None for r in range(proxy.rowCount()))
    )
    window.undo_stack.undo()
    assert keep_bytes(demo_copy) == original
    window.undo_stack.redo()
    assert keep_bytes(demo_copy) == after
    removed_row = next(r for r in range(proxy.rowCount()) if proxy.index(r, 0).data(RecordRole).invalid_at is not None)
    proxy.setData(
        proxy.index(removed_row, COLUMN_INDEX["live"]), Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole
    )
    assert keep_bytes(demo_copy) == original  # put back on its own line, exactly


def test_undo_refuses_when_the_agent_rewrote_keep_md(make_window, demo_copy, qtbot):
    window = open_keep(make_window, demo_copy, qtbot)
    proxy = window.memories.proxy
    proxy.setData(proxy.index(0, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    with open(os.path.join(demo_copy.nanobot, "keep.md"), "ab") as fh:
        fh.write(b"- Added by the agent meanwhile\n")
    agent_version = keep_bytes(demo_copy)
    window.undo_stack.undo()
    assert keep_bytes(demo_copy) == agent_version  # nothing overwritten
    assert window.banner.isVisible() and "changed" in window.banner.label.text()


def test_external_rewrite_shows_up(make_window, demo_copy, qtbot):
    window = open_keep(make_window, demo_copy, qtbot)
    with (
        qtbot.waitSignal(window.hub.changed, timeout=10_000, check_params_cb=lambda change: bool(change.reviews)),
        open(os.path.join(demo_copy.nanobot, "keep.md"), "wb") as fh,
    ):
        fh.write(b"# Kept facts\n- Only this fact survived the rewrite\n")
    qtbot.waitUntil(lambda: window.memories.proxy.rowCount() == 1, timeout=10_000)
    assert window.memories.proxy.index(0, COLUMN_INDEX["text"]).data() == "Only this fact survived the rewrite"


def test_edit_entry_in_place(make_window, demo_copy, qtbot):
    window = open_keep(make_window, demo_copy, qtbot)
    proxy = window.memories.proxy
    old = proxy.index(0, 0).data(RecordRole).text
    assert proxy.setData(proxy.index(0, COLUMN_INDEX["text"]), "Name is Mike; never Michael")
    data = keep_bytes(demo_copy).decode()
    assert "- Name is Mike; never Michael\n" in data and old not in data
    qtbot.waitUntil(
        lambda: (
            proxy.index(0, 0).data(KeyRole) is not None
            and proxy.index(0, COLUMN_INDEX["text"]).data() == "Name is Mike; never Michael"
        )
    )


def test_keeping_a_fact_from_the_memories_panel_says_what_the_keep_did(make_window, demo_copy, qtbot, monkeypatch):
    """Edit → New memory on keep.md asks for a fact, keeps it as one undo step of the window, and
    reports the keep's own message (the window's perform hands back an Outcome, not the Change)."""
    window = open_keep(make_window, demo_copy, qtbot)
    original = keep_bytes(demo_copy)
    fact = "The car is due for its inspection every March"
    notes: list[str] = []
    window.memories.note.connect(notes.append)
    window.memories.warning.connect(notes.append)
    monkeypatch.setattr("keepgui.ui.memorypanel.panel.QInputDialog.getText", lambda *_args, **_kw: (fact, True))
    window.memories.keep_fact_dialog()
    assert fact.encode() in keep_bytes(demo_copy)
    assert len(notes) == 1 and fact in notes[0]
    window.undo_stack.undo()
    assert keep_bytes(demo_copy) == original
