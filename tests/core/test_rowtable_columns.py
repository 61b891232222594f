"""A row table sorted and counted from columns (in another process, in the window) is exactly the
table built from the rows: the same order for every sort field, the same liveness and tag counts."""

from __future__ import annotations

import random

import msgspec
import numpy as np
import pytest

from keepgui.core import childwork
from keepgui.core.rowtable import SORT_FIELDS, build_table, table_columns, table_from_columns, table_lists
from tests.bench.synth import make_records
from tests.calls import counting_calls


def rows_of(seed: int, n: int) -> list:
    rng = random.Random(seed)
    rows = list({m.id: m for m in make_records(n, n + rng.randrange(0, 2 * n + 1), seed)}.values())
    out = []
    for i, row in enumerate(rows):  # ties and odd values on purpose: equal texts, no dates, no confidence
        if rng.random() < 0.1:
            row = msgspec.structs.replace(row, text=rows[0].text, updated_at=rows[0].updated_at)
        if rng.random() < 0.05:
            row = msgspec.structs.replace(row, confidence=None)
        out.append(row)
        del i
    return out


def same(a, b) -> None:
    assert a.rows is b.rows and a.row_of == b.row_of and a.sort_field == b.sort_field
    assert np.array_equal(a.live, b.live) and a.live_count == b.live_count and a.tag_counts == b.tag_counts
    assert np.array_equal(a.order, b.order) and np.array_equal(a.rank, b.rank)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("field", sorted(set(SORT_FIELDS) - {"position"}))
def test_a_table_from_columns_is_the_table_of_the_rows(seed, field):
    rows = rows_of(seed, 400)
    lists = table_lists(rows, field, step=64)
    built = table_from_columns(rows, lists["ids"], lists["live"], table_columns(field, **lists), field, step=64)
    same(built, build_table(rows, field))


def test_the_columns_are_sorted_in_a_child_with_no_python_call_per_row_here():
    rows = rows_of(3, 20_000)
    worker = childwork.ChildWorker("table-test")
    try:
        lists, calls = counting_calls(lambda: table_lists(rows, "updated"))
        columns = worker.call("keepgui.core.rowtable", "table_columns", "updated", lists=lists)
        table, more = counting_calls(lambda: table_from_columns(rows, lists["ids"], lists["live"], columns, "updated"))
    finally:
        worker.close()
    same(table, build_table(rows, "updated"))
    assert calls + more < len(rows) / 20
