"""The table built off the GUI thread: exactly the order and counts of sorting and counting row by row."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from keepgui.core.rowtable import PREFIX_BYTES, SORT_FIELDS, build_table, inverse, sort_key, sort_order
from keepgui.core.source import FileRow


def _rows(n, seed=3, long_texts=False):
    rng = random.Random(seed)
    common = "The deploy pipeline depends on a shared prefix longer than the numpy key " if long_texts else ""
    return [
        FileRow(
            id=f"r{rng.randrange(10**6):06d}-{i}",
            text=common
            + rng.choice(["Text", "text", "Ünïcode", "émoji 🙂", "ß", "", "a\x00b", "a"])
            + f" {rng.randrange(60)}",
            tags=tuple(rng.sample(["a", "b", "c", "d", "ö"], rng.randrange(3))),
            entities=tuple(rng.sample(["mike", "ana", "lisbon"], rng.randrange(2))),
            invalid_at=None if rng.random() < 0.8 else 5,
            updated_at=rng.choice([None, rng.randrange(1000)]),
            created_at=rng.randrange(30),
            pinned=rng.random() < 0.3,
            confidence=rng.choice([None, "stated", "inferred"]),
            revision=rng.choice([0, 1, 2, 2**63 + 5]) if seed == 9 else rng.randrange(4),
            corroboration=rng.randrange(3),
        )
        for i in range(n)
    ]


def _python_order(rows, field):
    key = sort_key(field)
    return sorted(range(len(rows)), key=lambda i: key(rows[i]))


@pytest.mark.parametrize("field", sorted(set(SORT_FIELDS) - {"position"}))
@pytest.mark.parametrize("n, step", [(0, 4), (1, 4), (7, 2), (3000, 128), (9001, 4096)])
def test_sort_order_is_exactly_pythons_sort_of_the_row_keys(field, n, step):
    rows = _rows(n)
    assert sort_order(rows, field, step).tolist() == _python_order(rows, field)


@pytest.mark.parametrize("field", ["text", "revision", "updated"])
def test_ties_past_the_numpy_prefix_and_past_64_bits_are_settled_exactly(field):
    rows = _rows(2000, seed=9, long_texts=True)
    assert len(rows[0].text.encode()) > PREFIX_BYTES
    assert sort_order(rows, field, 64).tolist() == _python_order(rows, field)


def test_position_sorts_by_file_order():
    rows = [FileRow(id=f"k{i}", text="x", position=(i * 37) % 101) for i in range(101)]
    assert sort_order(rows, "position").tolist() == _python_order(rows, "position")


@pytest.mark.parametrize("field", ["updated", "created", "text", "live", "tags"])
def test_build_table_matches_what_the_model_and_proxy_computed_row_by_row(field):
    rows = _rows(3000)
    table = build_table(rows, field, step=128)
    assert table.rows == rows and table.row_of == {r.id: i for i, r in enumerate(rows)}
    assert table.live.tolist() == [r.invalid_at is None for r in rows]
    assert table.live_count == sum(r.invalid_at is None for r in rows)
    counts = Counter(t for r in rows if r.invalid_at is None for t in r.tags)
    assert table.tag_counts == sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert table.order.tolist() == _python_order(rows, field)
    assert table.rank.tolist() == inverse(table.order).tolist()
    assert all(table.order[table.rank[i]] == i for i in range(len(rows)))
