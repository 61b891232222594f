"""A big delivery is built off the GUI thread and swapped into the table whole."""

from __future__ import annotations

from keepgui.core.source import Capabilities, FileRow
from keepgui.ui.memorymodel import KeyRole
from keepgui.ui.memorypanel import BUILD_OFF_THREAD, MemoryPanel


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
