"""A big delivery is built off the GUI thread and swapped into the table whole."""

from __future__ import annotations

from keepgui.core.source import Capabilities, FileRow
from keepgui.ui.memorypanel import MemoryPanel
from keepgui.ui.memorypanel.feed import BUILD_OFF_THREAD
from keepgui.ui.memorypanel.model import KeyRole


def _rows(n):
    return [
        FileRow(id=f"r{i:06d}", text=f"memory {i}", updated_at=(i * 7919) % n, invalid_at=None if i % 5 else 1)
        for i in range(n)
    ]


def test_a_delivery_over_the_threshold_is_built_in_the_background_and_shown_sorted(qtbot):
    panel = MemoryPanel()
    qtbot.addWidget(panel)
    panel.reset_rows([], Capabilities())
    rows = _rows(BUILD_OFF_THREAD + 1000)
    panel.build_rows(rows)
    assert panel.status.text() == "loading…"
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rows), timeout=10_000)
    live = [r for r in rows if r.invalid_at is None]
    assert panel.proxy.rowCount() == len(live)
    shown = [panel.proxy.index(i, 0).data(KeyRole) for i in range(panel.proxy.rowCount())]
    assert shown == [r.id for r in sorted(live, key=lambda r: (r.updated_at, r.id), reverse=True)]
    # a later small change goes through the model's own upsert, on the adopted table
    changed = live[0].__class__(id=live[0].id, text="edited", updated_at=10**9)
    panel.upsert_rows([changed])
    assert panel.proxy.index(0, 0).data(KeyRole) == changed.id
    panel.set_show_history(True)
    assert panel.proxy.rowCount() == len(rows)


def _parts_panel(qtbot):
    from keepgui.core.source import BankKey

    panel = MemoryPanel()
    qtbot.addWidget(panel)
    panel.key = BankKey("/nowhere", "bank")
    panel.reset_rows([], Capabilities())
    return panel


def _delivery(rows, *, partial=False, complete=False):
    from keepgui.core.source import DISK, Change, RowDelta

    return Change("/nowhere", "bank", origin=DISK, rows=RowDelta(rows, complete=complete), partial=partial)


def test_a_long_load_s_parts_are_built_off_the_gui_thread_not_inserted_row_by_row(qtbot, monkeypatch):
    """A part of a few thousand rows inserted into the table cost the proxy a Python call per row (its
    place in the sort order) on the GUI thread; it is built into a RowTable in the background instead."""
    from keepgui.ui.memorypanel import model as memorymodel

    panel = _parts_panel(qtbot)
    rows = _rows(3000)
    placed = []
    place = memorymodel.MemoryProxyModel._place

    def counted(self, source_rows, appended):
        placed.append(len(source_rows))
        return place(self, source_rows, appended)

    monkeypatch.setattr(memorymodel.MemoryProxyModel, "_place", counted)
    panel._on_change(_delivery(rows[:1000], partial=True))  # under BUILD_OFF_THREAD, over a few hundred
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1000, timeout=10_000)
    assert placed == []  # adopted whole, no row placed one by one (was a place per row inserted)
    panel._on_change(_delivery(rows, complete=True))  # the whole bank after its parts: built too
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rows) and panel._building is None, timeout=10_000)
    assert placed == []
    live = [r for r in rows if r.invalid_at is None]
    shown = [panel.proxy.index(i, 0).data(KeyRole) for i in range(panel.proxy.rowCount())]
    assert shown == [r.id for r in sorted(live, key=lambda r: (r.updated_at, r.id), reverse=True)]
    # a later small change is an upsert again
    panel._on_change(_delivery([rows[1].__class__(id="new", text="appended", updated_at=10**9)]))
    assert panel._building is None and panel.model.rowCount() == 3001 and placed == [1]


def test_the_search_index_is_built_once_when_every_part_is_in(qtbot, monkeypatch):
    panel = _parts_panel(qtbot)
    builds = []
    rebuild = panel.index.rebuild
    monkeypatch.setattr(
        panel.index, "rebuild", lambda rows, *args, **kwargs: builds.append(len(rows)) or rebuild(rows, *args, **kwargs)
    )
    rows = _rows(2000)
    for n in (100, 200, 400, 800):  # a long load's parts, every row so far each time
        panel._on_change(_delivery(rows[:n], partial=True))
        qtbot.waitUntil(lambda: panel._building is None, timeout=10_000)
    qtbot.wait(100)
    assert builds == [] and not panel.index.is_ready  # no index of a part (was one rebuild per part)
    panel._on_change(_delivery(rows, complete=True))
    qtbot.waitUntil(lambda: panel.index.is_ready, timeout=10_000)
    assert builds == [len(rows)]


def test_a_table_build_replaced_by_a_newer_delivery_stops_and_the_newer_is_shown(qtbot):
    panel = _parts_panel(qtbot)
    old, new = _rows(60_000), _rows(BUILD_OFF_THREAD + 10)
    panel.build_rows(old, final=False)
    first = panel._build
    panel.build_rows(new)
    assert first.obsolete() and not panel._build.obsolete()  # the first build stops at its next checkpoint
    qtbot.waitUntil(lambda: panel._building is None, timeout=10_000)
    assert panel.model.rowCount() == len(new)
    assert first.wait(10) and first.state == "cancelled"  # it stopped (or was skipped), never delivered


def test_cell_flags_follow_the_capabilities_and_the_row(qtbot):
    """A cell's flags are worked out once per capabilities (a paint asks for every cell): a retired row's
    pin box is not checkable, and other capabilities given with the rows change every cell's flags."""
    from PySide6.QtCore import Qt

    from keepgui.core.source import PIN
    from keepgui.ui.memorypanel.model import COLUMN_INDEX, MemoryTableModel

    model = MemoryTableModel()
    rows = _rows(10)  # every fifth row retired
    model.reset_rows(rows, Capabilities())
    pin, text = COLUMN_INDEX["pinned"], COLUMN_INDEX["text"]
    flags = Qt.ItemFlag
    assert model.flags(model.index(1, pin)) & flags.ItemIsUserCheckable
    assert model.flags(model.index(0, pin)) == flags.ItemIsSelectable  # retired: cannot be pinned
    assert model.flags(model.index(1, text)) & flags.ItemIsEditable
    model.reset_rows(rows, Capabilities(missing={PIN: "this agent has no pins", "edit": "read-only"}))
    assert model.flags(model.index(1, pin)) == flags.ItemIsSelectable
    assert not model.flags(model.index(1, text)) & flags.ItemIsEditable
    assert model.flags(model.index(1, text)) & flags.ItemIsSelectable


def test_the_whole_bank_after_a_part_that_showed_every_row_is_not_built_again(qtbot, monkeypatch):
    """A Claude Code project shows its rows before storing their versions (seconds at 1,000 topic files),
    then delivers the same rows as the load's end: the table keeps them (no reset, no build, no column
    fit: that repaint was the open's longest block), and the search index held back is built."""
    panel = _parts_panel(qtbot)
    rows = _rows(1200)
    panel._on_change(_delivery(rows, partial=True))
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rows) and panel._building is None, timeout=10_000)
    resets, fits = [], []
    panel.model.modelReset.connect(lambda: resets.append(1))
    monkeypatch.setattr(panel.columns, "fit", lambda *a, **k: fits.append(1))
    panel._on_change(_delivery(rows, complete=True))
    assert panel._building is None and resets == [] and fits == []
    qtbot.waitUntil(lambda: panel.index.is_ready, timeout=10_000)
    panel.search.setText("memory 1199")
    qtbot.waitUntil(lambda: panel.proxy.rowCount() >= 1, timeout=10_000)
    # the same keys as other objects (a file read again) are delivered as a change, built as before
    again = [r.__class__(id=r.id, text=r.text + " again", updated_at=r.updated_at) for r in rows]
    panel._on_change(_delivery(again, partial=True))
    panel._on_change(_delivery(again, complete=True))
    qtbot.waitUntil(
        lambda: panel._building is None and panel.model.row_object(0).text.endswith("again"), timeout=10_000
    )
