"""The search box's filter worked out off the GUI thread and handed to the proxy whole: the rows
shown are exactly those of the plain rule (every keystroke, history on and off, a tag chip, a day
range, every sort), the swap makes no Python call per row, and one appended line reaches the table
at once (not after the watcher's quiet period)."""

from __future__ import annotations

import os
import time

import msgspec
import pytest
from PySide6.QtCore import Qt

from keepgui.backends.iii.record import fingerprint
from keepgui.core.rowtable import sort_key
from keepgui.core.search import TextSearch
from keepgui.core.source import Capabilities
from keepgui.ui.memorypanel import MemoryPanel, view
from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, visible_rows
from keepgui.ui.memorypanel.search import Match, SearchIndex, search_texts
from tests.bench.synth import make_records
from tests.calls import counting_calls
from tests.memories import memory


def shown_keys(panel: MemoryPanel) -> list[str]:
    proxy = panel.proxy
    return [proxy.index(r, 0).data(KeyRole) for r in range(proxy.rowCount())]


def expected_keys(rows, query, history, tag, day_keys, field, descending) -> list[str]:
    """The plain rule, row by row: what the filter showed before it moved off the GUI thread."""
    index: TextSearch[str] = TextSearch()
    index.set_many((r.id, search_texts(r)) for r in rows)
    found = set(index.search(query)) if query.strip() else None
    kept = [
        r
        for r in rows
        if (history or r.invalid_at is None)
        and (tag is None or tag in r.tags)
        and (found is None or r.id in found)
        and (day_keys is None or r.id in day_keys)
    ]
    kept.sort(key=sort_key(field), reverse=descending)
    return [r.id for r in kept]


@pytest.fixture
def bank_panel(qtbot):
    rows = list({m.id: m for m in make_records(3000, 6000, seed=11)}.values())
    panel = MemoryPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    panel.reset_rows(rows, Capabilities())
    qtbot.waitUntil(lambda: panel.index.is_ready, timeout=20_000)
    return panel, rows


@pytest.mark.parametrize("background", [False, True], ids=["on the GUI thread", "off the GUI thread"])
def test_every_keystroke_shows_exactly_the_rows_of_the_plain_rule(bank_panel, qtbot, monkeypatch, background):
    panel, rows = bank_panel
    if background:
        monkeypatch.setattr(view, "ASK_IN_BACKGROUND", 0)
    tag = next(t for r in rows for t in r.tags)
    day_keys = {r.id for r in rows[::5]}
    query = "mike prefers po"
    cases = [
        (False, None, None, "updated", True),
        (True, None, None, "text", False),
        (False, tag, None, "created", False),
        (True, None, day_keys, "seen", True),
        (False, tag, day_keys, "updated", True),
    ]
    for history, chosen, days, field, descending in cases:
        panel.history.setChecked(history)
        panel.proxy.set_filters(tag=chosen)
        panel.set_day_filter(days, "days")
        order = Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder
        panel.table.sortByColumn(COLUMN_INDEX[field], order)
        assert panel.proxy.sort_field == field
        for n in range(len(query) + 1):
            panel.search.setText(query[:n])
            qtbot.waitUntil(lambda: not panel._debounce.isActive() and panel._asking is None, timeout=10_000)
            want = expected_keys(rows, query[:n], history, chosen, days, field, descending)
            assert shown_keys(panel) == want, (history, chosen, bool(days), field, query[:n])


def test_an_answer_for_an_older_query_is_never_shown(bank_panel, qtbot, monkeypatch):
    panel, rows = bank_panel
    monkeypatch.setattr(view, "ASK_IN_BACKGROUND", 0)
    panel.search.setText("grafana")
    panel._apply_query()
    first = panel._asking
    panel.search.setText("mike")
    panel._apply_query()  # asked again before the first answer is handled
    assert panel._asking != first
    qtbot.waitUntil(lambda: panel._asking is None, timeout=10_000)
    qtbot.wait(50)
    assert shown_keys(panel) == expected_keys(rows, "mike", False, None, None, "updated", True)


def test_the_swap_makes_no_python_call_per_row(bank_panel, qtbot, monkeypatch):
    panel, rows = bank_panel
    monkeypatch.setattr(view, "ASK_IN_BACKGROUND", 0)
    proxy = panel.proxy
    panel.history.setChecked(True)
    everything = panel.index.match("", panel.model.rows_by_key(), len(rows), None)  # every row, history on
    narrow = panel.index.match("lisbon office", panel.model.rows_by_key(), len(rows), None)
    assert narrow.rows is not None and 0 < int(narrow.rows.sum()) < len(rows) / 10

    def calls_in_a_swap(match) -> int:
        return counting_calls(lambda: panel._show_match(match))[1]

    def prepared(match: Match) -> Match:  # as the search thread hands it over
        layout = proxy.layout()
        assert layout is not None
        shown = visible_rows(layout.order, layout.rank, layout.live, layout.tagged, match.rows)
        return Match(match.scores, match.rows, match.row_of, layout, shown)

    calls_in_a_swap(narrow)
    to_all_prepared = calls_in_a_swap(prepared(everything))
    assert proxy.rowCount() == len(rows)
    to_narrow_prepared = calls_in_a_swap(prepared(narrow))
    assert proxy.rowCount() == int(narrow.rows.sum())
    assert abs(to_all_prepared - to_narrow_prepared) < len(rows) / 10, (to_all_prepared, to_narrow_prepared)
    to_all = calls_in_a_swap(everything)
    assert proxy.rowCount() == len(rows)
    to_narrow = calls_in_a_swap(narrow)
    assert proxy.rowCount() == int(narrow.rows.sum())
    # A swap costs the same few calls (the view asking the row count, its current index mapped)
    # however many rows it shows: none per row.
    assert to_all < len(rows) / 4 and to_narrow < len(rows) / 4, (to_all, to_narrow, len(rows))
    assert abs(to_all - to_narrow) < len(rows) / 10, (to_all, to_narrow)


def test_a_single_appended_line_reaches_the_table_at_once(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = os.path.join(str(demo_copy.iii), "main", "memories.jsonl")
    qtbot.wait(600)  # the window's own first reads are over
    model = window.memories.model
    took = []
    for n in range(3):
        text = f"Appended by the agent, line {n}, while keepgui was open"
        record = memory(text, entities=["user"], confidence="extracted", updated_at=2_000_000_000_000)
        start = time.perf_counter()
        with open(path, "ab") as fh:  # the agent's own append, a real file write
            fh.write(record.to_line())
        qtbot.waitUntil(lambda rid=record.id: model.row_of(rid) is not None, timeout=10_000)
        took.append(time.perf_counter() - start)
        qtbot.wait(400)  # quiet again before the next one
    # The watcher's quiet period (250 ms) alone made every one of them wait longer than this.
    assert min(took) < 0.2, [f"{t * 1000:.0f} ms" for t in took]


def test_rows_worked_out_before_the_table_changed_are_not_swapped_in(bank_panel, qtbot):
    panel, rows = bank_panel
    proxy = panel.proxy
    match = panel.index.match("mike", panel.model.rows_by_key(), len(rows), None)
    layout = proxy.layout()
    assert layout is not None
    shown = visible_rows(layout.order, layout.rank, layout.live, layout.tagged, match.rows)
    text = "Mike appended this one after the question was asked"
    appended = msgspec.structs.replace(rows[0], id=fingerprint(text), text=text, updated_at=rows[0].updated_at + 1)
    panel.upsert_rows([appended])
    assert not proxy.show_prepared(match.rows, layout, shown)  # the order moved: refused, nothing done
    panel._show_match(match)  # what the panel does then: the same mask applied to the table as it is now
    found = set(match.scores)  # the question was asked before the row came: it is not among them
    want = [k for k in expected_keys(panel.model.rows(), "mike", False, None, None, "updated", True) if k in found]
    assert shown_keys(panel) == want and appended.id not in want


def test_working_out_a_querys_rows_makes_no_python_call_per_row_found(bank_panel):
    panel, rows = bank_panel
    index, row_of, n = panel.index, panel.model.rows_by_key(), len(rows)
    index.match("warm", row_of, n, None)  # the first question about these rows looks each key up once

    def calls(query: str) -> tuple[int, int]:
        match, count = counting_calls(lambda: index.match(query, row_of, n, None))
        assert match.rows is not None
        return count, int(match.rows.sum())

    many_calls, many = calls("t")
    few_calls, few = calls("lisbon office")
    assert many > 1000 and few < many / 4, (many, few)
    # The same few dozen calls for a thousand rows found as for a hundred: none per row (a dict
    # look-up per key found, as before, made one call per key).
    assert abs(many_calls - few_calls) < 200, (many_calls, few_calls, many, few)


def test_many_changes_since_the_index_was_built_build_it_again_while_it_answers(bank_panel, qtbot, monkeypatch):
    panel, rows = bank_panel
    monkeypatch.setattr(SearchIndex, "REFREEZE", 20)
    monkeypatch.setattr(view, "ASK_IN_BACKGROUND", 0)
    old = panel.index._index
    for n in range(60):  # single changes, each indexed in place on the GUI thread
        row = msgspec.structs.replace(rows[n], text=f"zebracorn number {n} lives in lisbon")
        panel.upsert_rows([row])
        rows[n] = row
    assert panel.index.is_ready  # the old index answered all along
    qtbot.waitUntil(lambda: panel.index._index is not old, timeout=20_000)
    assert panel.index._index is not None and panel.index._index.changed_since_freeze < 60
    panel.search.setText("zebracorn lisb")
    qtbot.waitUntil(lambda: not panel._debounce.isActive() and panel._asking is None, timeout=10_000)
    assert shown_keys(panel) == expected_keys(rows, "zebracorn lisb", False, None, None, "updated", True)
    assert len(shown_keys(panel)) == sum(1 for r in rows[:60] if r.invalid_at is None)
