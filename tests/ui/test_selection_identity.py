"""Selection by identity (issue 23, items 1 and 10): after a sort, a filter, a live reload or a
table swap, the selection, the current row and the detail pane show the same memory — or nothing —
and the next action hits that memory."""

from __future__ import annotations

import os

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication

from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, RecordRole


def _first_row_selected(window, qtbot):
    panel = window.memories
    qtbot.waitUntil(lambda: panel.proxy.rowCount() > 3, timeout=10_000)
    panel.table.selectRow(0)
    key = panel.proxy.index(0, 0).data(KeyRole)
    assert panel.detail.record is not None and panel.detail.record.id == key
    return panel, key


def _same_memory_everywhere(panel, key) -> None:
    selected = [r.id for r in panel.selected_records()]
    assert selected == [key]
    assert panel.current_key() == key
    assert panel.detail.record is not None and panel.detail.record.id == key


def test_a_header_click_keeps_the_memory_selected_and_delete_hits_it(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel, key = _first_row_selected(window, qtbot)
    header = panel.table.horizontalHeader()
    assert header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder  # Updated, newest first
    x = header.sectionViewportPosition(COLUMN_INDEX["text"]) + 20
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, 5))
    assert header.sortIndicatorSection() == COLUMN_INDEX["text"]
    _same_memory_everywhere(panel, key)
    panel.copy_selected()
    record = panel.detail.record
    assert QGuiApplication.clipboard().text() == record.text
    panel.act_delete.trigger()
    qtbot.waitUntil(lambda: panel.model.row_object(panel.model.row_of(key)).invalid_at is not None, timeout=10_000)
    retired = [r.id for r in panel.model.rows() if r.invalid_at is not None]
    with open(os.path.join(str(demo_copy.iii), "main", "memories.jsonl"), encoding="utf-8") as f:
        log = f.read()
    assert key in log.splitlines()[-1]  # the line the delete appended is about the memory shown
    assert key in retired


def test_every_sort_of_every_column_keeps_the_selection_on_the_same_memory(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel, key = _first_row_selected(window, qtbot)
    for column in range(panel.proxy.columnCount()):
        if panel.table.isColumnHidden(column):
            continue
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            panel.table.sortByColumn(column, order)
            _same_memory_everywhere(panel, key)


def test_a_row_hidden_by_the_search_leaves_the_selection_and_the_detail_pane(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel, _key = _first_row_selected(window, qtbot)
    qtbot.waitUntil(lambda: panel.index.is_ready, timeout=10_000)
    panel.search.setText("zzqxnothingmatchesthis")
    qtbot.waitUntil(lambda: panel.proxy.rowCount() == 0, timeout=5_000)
    assert panel.selected_records() == []
    assert panel.detail.record is None
    assert "selected" not in window.counts_label.text()
    assert not panel.act_delete.isEnabled()


def test_a_row_hidden_by_a_tag_chip_leaves_the_selection(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel = window.memories
    qtbot.waitUntil(lambda: panel.proxy.rowCount() > 3, timeout=10_000)
    tag = next(iter(panel.chips._buttons))
    row = next(r for r in range(panel.proxy.rowCount()) if tag not in panel.proxy.index(r, 0).data(RecordRole).tags)
    panel.table.selectRow(row)
    assert panel.detail.record is not None
    panel.chips._buttons[tag].click()
    assert panel.chips.current == tag
    assert panel.selected_records() == []
    assert panel.detail.record is None
    assert "selected" not in window.counts_label.text()


def test_the_search_text_does_not_follow_to_another_bank(make_window, demo_copy, qtbot):
    from keepgui.core.source import BankKey

    window = make_window(demo_copy.iii)
    panel = window.memories
    panel.search.setText("penicillin")
    other = BankKey(str(demo_copy.iii), "coding")
    window.select_bank(other)
    qtbot.waitUntil(lambda: window.current == other and window._loading is None, timeout=10_000)
    assert panel.search.text() == ""
    assert panel.proxy.rowCount() == panel.model.live_count
