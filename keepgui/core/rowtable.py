"""A bank's rows as the memory table shows them, built off the GUI thread and handed over whole.

A window's background threads share one interpreter lock with its GUI thread. Python code lets
the lock go every millisecond (keepgui's switch interval), but one call into C does not: a
``sorted()`` of a million rows, a dict built from a million pairs or ``list(compress(...))`` over a
million rows each hold it for tens or hundreds of milliseconds, and the window cannot paint
meanwhile, whichever thread makes the call. So everything here works in slices of
:data:`SLICE` rows, each a C call of a few milliseconds, and a loop of them in Python between:
:func:`sort_order` is a merge sort whose every step is bounded, :func:`build_table` builds a
:class:`RowTable` (rows, key -> row, liveness, tag counts, the sort order of one field) that the
table model adopts in one assignment on the GUI thread.

Rows are the protocol rows of :mod:`keepgui.core.source` (``id``, ``invalid_at``, ``tags``,
the sortable fields); nothing here knows a backend or Qt.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

SLICE = 4096
"""Rows per C-level step: each step holds the interpreter lock for a few milliseconds at most."""

_ID = operator.attrgetter("id")
_INVALID = operator.attrgetter("invalid_at")
_TAGS = operator.attrgetter("tags")

SORT_FIELDS: dict[str, Callable[[Any], Any]] = {
    "pinned": lambda r: bool(r.pinned),
    "live": lambda r: r.invalid_at is None,
    "text": lambda r: r.text.casefold(),
    "tags": lambda r: " ".join(r.tags),
    "entities": lambda r: " ".join(r.entities),
    "seen": lambda r: r.corroboration or 0,
    "confidence": lambda r: r.confidence or "",
    "created": lambda r: r.created_at or 0,
    "updated": lambda r: r.updated_at or 0,
    "revision": lambda r: r.revision or 0,
    "position": lambda r: r.position,  # keep.md: file order (not a column)
}
"""What each sortable field of a row sorts by (ties are broken by the row's key)."""


def sort_key(field: str) -> Callable[[Any], tuple]:
    """The unique, total sort key of a field: ``(value, id)``."""
    primary = SORT_FIELDS[field]
    return lambda r: (primary(r), r.id)


_NUMERIC = {
    name: operator.attrgetter(attr)
    for name, attr in (("created", "created_at"), ("updated", "updated_at"), ("revision", "revision"))
}


def sort_keys(rows: Sequence[Any], field: str) -> list[tuple]:
    """The sort key of every row: ``(value, id)`` (in C for a time or a revision that every row has)."""
    getter = _NUMERIC.get(field)
    if getter is not None:
        values = list(map(getter, rows))
        if None not in values:
            return list(zip(values, map(_ID, rows)))
    return list(map(sort_key(field), rows))


def sort_order(keys: Sequence[Any], step: int = SLICE) -> list[int]:
    """``sorted(range(len(keys)), key=keys.__getitem__)``, in bounded steps.

    Runs of ``step`` indexes are sorted, then merged pairwise; each merge takes at most ``step``
    items from each side at a time (the items of the other side up to the last one taken, found by
    bisection) and lets ``list.sort`` merge those two short runs. Keys must be unique and totally
    ordered, as the table's are.
    """
    n = len(keys)
    key = keys.__getitem__
    runs = [sorted(range(lo, min(lo + step, n)), key=key) for lo in range(0, n, step)]
    while len(runs) > 1:
        runs = [
            _merge(runs[i], runs[i + 1], key, step) if i + 1 < len(runs) else runs[i] for i in range(0, len(runs), 2)
        ]
    return runs[0] if runs else []


def _merge(a: list[int], b: list[int], key: Callable[[int], Any], step: int) -> list[int]:
    out: list[int] = []
    i = j = 0
    while i < len(a) and j < len(b):
        ia = min(i + step, len(a))
        jb = bisect.bisect_right(b, key(a[ia - 1]), j, key=key)
        if jb - j > step:  # too many of b come first: take a step of b, and what of a precedes its last
            jb = j + step
            ia = bisect.bisect_right(a, key(b[jb - 1]), i, ia, key=key)
        chunk = a[i:ia] + b[j:jb]
        chunk.sort(key=key)  # two sorted runs: one linear merge in C
        out += chunk
        i, j = ia, jb
    out += a[i:]
    out += b[j:]
    return out


def _sliced(rows: Sequence[Any], fn: Callable[[Sequence[Any]], Any], step: int = SLICE) -> list[Any]:
    """``fn`` of each slice of ``rows``, in order."""
    return [fn(rows[lo : lo + step]) for lo in range(0, len(rows), step)]


@dataclass
class RowTable:
    """Everything the table model and its proxy need for one bank, built at once off the GUI thread.

    ``rows`` in load order; ``row_of`` key -> index; ``live`` one byte per row (1: live);
    ``tag_counts`` of the live rows (count descending, then tag); ``keys`` the sort key of each row
    for ``sort_field``, ``order`` every row index ascending by it, and ``live_order``/``live_keys``
    the live rows of ``order`` and their keys (what the table shows when no filter is set).
    """

    rows: list[Any]
    row_of: dict[str, int]
    live: bytearray
    live_count: int
    tag_counts: list[tuple[str, int]]
    sort_field: str
    keys: list[tuple]
    order: list[int]
    live_order: list[int]
    live_keys: list[tuple]


def build_table(rows: Sequence[Any], sort_field: str, step: int = SLICE) -> RowTable:
    """A :class:`RowTable` of ``rows``, sorted by ``sort_field`` (call it off the GUI thread)."""
    rows = list(rows)
    row_of: dict[str, int] = {}
    for lo in range(0, len(rows), step):
        row_of.update(zip(map(_ID, rows[lo : lo + step]), range(lo, lo + step)))
    live = bytearray()
    for part in _sliced(rows, lambda part: bytes(map(operator.is_, map(_INVALID, part), itertools.repeat(None))), step):
        live += part
    counts: Counter[str] = Counter()
    for lo in range(0, len(rows), step):
        counts.update(
            itertools.chain.from_iterable(itertools.compress(map(_TAGS, rows[lo : lo + step]), live[lo : lo + step]))
        )
    keys: list[tuple] = []
    for part in _sliced(rows, lambda part: sort_keys(part, sort_field), step):
        keys += part
    order = sort_order(keys, step)
    live_order: list[int] = []
    for lo in range(0, len(order), step):
        part = order[lo : lo + step]
        live_order += itertools.compress(part, map(live.__getitem__, part))
    live_keys: list[tuple] = []
    for lo in range(0, len(live_order), step):
        live_keys += map(keys.__getitem__, live_order[lo : lo + step])
    return RowTable(
        rows,
        row_of,
        live,
        live.count(1),
        sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])),
        sort_field,
        keys,
        order,
        live_order,
        live_keys,
    )
