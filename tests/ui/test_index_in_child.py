"""The panel's search index of a big bank laid out in a child process (a window's process): every
keystroke shows exactly the rows of the plain rule, before and after rows change; a child that fails
leaves the build to this process."""

from __future__ import annotations

import msgspec
import pytest

from keepgui.core import childwork
from keepgui.core.source import Capabilities
from keepgui.ui.memorypanel import MemoryPanel, feed, search
from tests.bench.synth import make_records
from tests.calls import counting_calls
from tests.ui.test_filter_swap import expected_keys, shown_keys


@pytest.fixture
def child_index(monkeypatch):
    monkeypatch.setattr(childwork, "_enabled", True)
    monkeypatch.setattr(search, "CHILD_ROWS", 100)
    monkeypatch.setattr(feed, "CHILD_ROWS", 100)
    built: list[object] = []
    real = search.built_in_child
    monkeypatch.setattr(search, "built_in_child", lambda rows: built.append(real(rows)) or built[-1])
    return built


def panel_of(qtbot, rows) -> MemoryPanel:
    panel = MemoryPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    panel.reset_rows([], Capabilities())
    panel.build_rows(rows)
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rows) and panel.index.is_ready, timeout=30_000)
    return panel


def typed(panel, qtbot, text: str) -> None:
    panel.search.setText(text)
    qtbot.waitUntil(lambda: not panel._debounce.isActive() and panel._asking is None, timeout=10_000)


def test_an_index_built_in_a_child_filters_as_the_plain_rule(qtbot, child_index):
    rows = list({m.id: m for m in make_records(1500, 3000, seed=4)}.values())
    panel = panel_of(qtbot, rows)
    assert child_index and child_index[0] is not None  # laid out in the child, taken as arrays
    query = "mike prefers po"
    for n in range(len(query) + 1):
        typed(panel, qtbot, query[:n])
        assert shown_keys(panel) == expected_keys(rows, query[:n], False, None, None, "updated", True)
    changed = [msgspec.structs.replace(r, text=f"zanzibar {r.text}") for r in rows[:3] if r.invalid_at is None]
    panel.upsert_rows(changed)
    rows = [next((c for c in changed if c.id == r.id), r) for r in rows]
    for query in ("zanzib", "mike prefers"):
        typed(panel, qtbot, query)
        assert shown_keys(panel) == expected_keys(rows, query, False, None, None, "updated", True)


def test_a_failed_child_leaves_the_index_to_this_process(qtbot, child_index, monkeypatch):
    class Dead:
        def call(self, *_args, **_kwargs):
            raise childwork.ChildFailed("the index process stopped (exit status -9)")

    monkeypatch.setattr(childwork, "worker", lambda *_args: Dead())
    rows = list({m.id: m for m in make_records(500, 900, seed=6)}.values())
    panel = panel_of(qtbot, rows)
    assert child_index == [None]
    typed(panel, qtbot, "mike")
    assert shown_keys(panel) == expected_keys(rows, "mike", False, None, None, "updated", True)


def test_the_window_makes_no_python_call_per_row_for_an_index_built_in_a_child(monkeypatch):
    monkeypatch.setattr(childwork, "_enabled", True)
    rows = list({m.id: m for m in make_records(20_000, 24_000, seed=8)}.values())
    index, calls = counting_calls(lambda: search.built_in_child(rows))
    assert index is not None and len(index) == len(rows)
    assert calls < len(rows) / 20  # building it here makes several per row
    _, here = counting_calls(lambda: search.TextSearch().set_many((r.id, search.search_texts(r)) for r in rows[:2000]))
    assert here > 2000


def test_a_table_sorted_in_a_child_shows_the_rows_of_the_plain_rule(qtbot, child_index, monkeypatch):
    tables: list[object] = []
    real = feed.table_from_columns
    monkeypatch.setattr(feed, "table_from_columns", lambda *a, **k: tables.append(real(*a, **k)) or tables[-1])
    rows = list({m.id: m for m in make_records(1200, 2500, seed=12)}.values())
    panel = panel_of(qtbot, rows)
    assert tables  # sorted in the child
    assert shown_keys(panel) == expected_keys(rows, "", False, None, None, "updated", True)
    chosen = rows[len(rows) // 2].id
    panel.select_key(chosen)
    panel.build_rows(rows[::-1])  # the same rows again, in another order: a new table, the selection kept
    qtbot.waitUntil(lambda: len(tables) >= 2 and panel._building is None, timeout=30_000)
    assert panel.current_key() == chosen
    panel.history.setChecked(True)
    assert shown_keys(panel) == expected_keys(rows, "", True, None, None, "updated", True)


def test_the_first_screenful_is_shown_while_the_whole_table_is_built(qtbot, child_index, monkeypatch):
    import threading

    release = threading.Event()
    real = feed.table_of

    def slow_table(rows, field, after=None):
        release.wait(30)  # the whole table is not ready until the first screenful was seen
        return real(rows, field, after)

    monkeypatch.setattr(feed, "table_of", slow_table)
    rows = list({m.id: m for m in make_records(1500, 3000, seed=13)}.values())
    panel = MemoryPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    panel.reset_rows([], Capabilities())
    panel.build_rows(rows)
    try:
        qtbot.waitUntil(lambda: panel.model.rowCount() > 0, timeout=20_000)
        assert panel.model.rowCount() == feed.FIRST_SCREEN and panel._building is not None
        first = shown_keys(panel)
        assert first and first == expected_keys(rows, "", False, None, None, "updated", True)[: len(first)]
    finally:
        release.set()
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rows) and panel._building is None, timeout=30_000)
    assert shown_keys(panel) == expected_keys(rows, "", False, None, None, "updated", True)


@pytest.mark.parametrize(("field", "descending"), [("updated", True), ("text", False), ("created", True)])
def test_the_first_screenful_is_the_top_of_the_whole_order_however_it_is_stepped(field, descending, monkeypatch):
    """first_screen looks at a big bank in steps (giving way to the GUI thread between them); the rows it
    picks are exactly the first rows of the whole table, in its order."""
    from keepgui.core.rowtable import build_table

    rows = list({m.id: m for m in make_records(3000, 6000, seed=29)}.values())
    monkeypatch.setattr(feed, "_FIRST_STEP", 257)  # many steps, none a multiple of the screenful
    first = feed.first_screen(rows, field, descending)
    whole = build_table(rows, field)
    ids = [whole.rows[i].id for i in whole.order]  # the whole table in its own ascending order
    top = (ids[::-1] if descending else ids)[: feed.FIRST_SCREEN]
    assert sorted(r.id for r in first.rows) == sorted(top)


@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("field", ["updated", "created", "revision", "seen"])
def test_the_first_screenful_of_a_number_field_is_exact_among_ties_and_missing_values(field, descending, monkeypatch):
    """first_screen keeps the best of each step: with values drawn from a handful (ties across the cut and
    across steps), None among them (sorted as 0) and integers past a float's precision, it still picks
    exactly the first rows of the whole table."""
    import random

    from keepgui.core.rowtable import SORT_ATTRIBUTES, build_table

    rng = random.Random(field)
    attribute = SORT_ATTRIBUTES[field]
    big = 2**60  # 2**60 + 1 and 2**60 are the same float
    choices = [None, 0, 3, 5, 7, big, big + 1, big + 2]
    rows = list({m.id: m for m in make_records(2000, 4000, seed=31)}.values())
    rows = [msgspec.structs.replace(r, **{attribute: rng.choice(choices)}) for r in rows]
    monkeypatch.setattr(feed, "_FIRST_STEP", 700)  # steps of 700: more rows than a screenful tie at the cut
    first = feed.first_screen(rows, field, descending)
    whole = build_table(rows, field)
    ids = [whole.rows[i].id for i in whole.order]
    assert sorted(r.id for r in first.rows) == sorted((ids[::-1] if descending else ids)[: feed.FIRST_SCREEN])


def test_the_whole_table_is_begun_once_the_first_screenful_is_picked(qtbot, child_index, monkeypatch):
    """The two builds share the interpreter lock: the whole table's (its columns taken from every row)
    waits for the first screenful, which a person is waiting for."""
    import time

    events: list[str] = []
    real_first, real_lists = feed.first_screen, feed.table_lists

    def slow_first(rows, field, descending):
        time.sleep(0.3)  # long enough for the other worker of the lane to have begun, were it free to
        events.append("first screenful")
        return real_first(rows, field, descending)

    def lists(rows, field):
        events.append("whole table")
        return real_lists(rows, field)

    monkeypatch.setattr(feed, "first_screen", slow_first)
    monkeypatch.setattr(feed, "table_lists", lists)
    rows = list({m.id: m for m in make_records(1500, 3000, seed=41)}.values())
    panel = panel_of(qtbot, [])
    panel.build_rows(rows)
    qtbot.waitUntil(lambda: panel.model.rowCount() == len(rows) and panel._building is None, timeout=30_000)
    assert events == ["first screenful", "whole table"]
    assert shown_keys(panel) == expected_keys(rows, "", False, None, None, "updated", True)
