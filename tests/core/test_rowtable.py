"""The table built off the GUI thread: the same order and counts as building it directly."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from keepgui.core.rowtable import build_table, sort_key, sort_order
from keepgui.core.source import FileRow


@pytest.mark.parametrize("n, step", [(0, 4), (1, 4), (7, 2), (1000, 16), (5000, 4096), (9001, 64)])
def test_sort_order_in_bounded_steps_equals_one_sort(n, step):
    rng = random.Random(n)
    keys = [(rng.randrange(50), f"k{i}") for i in range(n)]  # many equal first parts: the id decides
    assert sort_order(keys, step) == sorted(range(n), key=keys.__getitem__)


def _rows(n, seed=3):
    rng = random.Random(seed)
    return [
        FileRow(
            id=f"r{i:05d}",
            text=f"Text {rng.randrange(100)}",
            tags=tuple(rng.sample(["a", "b", "c", "d"], rng.randrange(3))),
            invalid_at=None if rng.random() < 0.8 else 5,
            updated_at=rng.choice([None, rng.randrange(1000)]),
            created_at=rng.randrange(1000),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("field", ["updated", "created", "text", "live", "tags"])
def test_build_table_matches_what_the_model_and_proxy_computed_row_by_row(field):
    rows = _rows(3000)
    table = build_table(rows, field, step=128)
    key = sort_key(field)
    assert table.rows == rows and table.row_of == {r.id: i for i, r in enumerate(rows)}
    assert list(table.live) == [r.invalid_at is None for r in rows]
    assert table.live_count == sum(r.invalid_at is None for r in rows)
    counts = Counter(t for r in rows if r.invalid_at is None for t in r.tags)
    assert table.tag_counts == sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert table.keys == [key(r) for r in rows]
    assert table.order == sorted(range(len(rows)), key=lambda i: key(rows[i]))
    assert table.live_order == [i for i in table.order if rows[i].invalid_at is None]
    assert table.live_keys == [key(rows[i]) for i in table.live_order]
