"""A bank's rows as the memory table shows them, built off the GUI thread and handed over whole.

A window's background threads share one interpreter lock with its GUI thread (see
:mod:`keepgui.core.pace`): work here runs in slices of :data:`SLICE` rows, each a C call of a
millisecond or so, with a checkpoint between them; the sorts themselves run in numpy, which lets
the lock go while it sorts. :func:`sort_order` orders row numbers exactly as
``sorted(range(n), key=lambda i: sort_key(field)(rows[i]))`` would; :func:`build_table` builds
a :class:`RowTable` (rows, key -> row, liveness, tag counts, the order of one field) that the table
model adopts in one assignment on the GUI thread.

Rows are the protocol rows of :mod:`keepgui.core.source` (``id``, ``invalid_at``, ``tags``,
the sortable fields); nothing here knows a backend or Qt.

A big table can be sorted and counted in another process (:mod:`keepgui.core.childwork`):
:func:`table_lists` takes from the rows, in C, the columns that needs (ids, liveness, tags, the
attribute the sort field reads); :func:`table_columns`, run there, gives the order and the tag
counts back; :func:`table_from_columns` makes the same :class:`RowTable` as :func:`build_table`
of them, with no Python call per row here.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from keepgui.core import pace

SLICE = 4096
"""Rows per C-level step: each step holds the interpreter lock for about a millisecond at most."""

PREFIX_BYTES = 48
"""Text keys are sorted by this many leading UTF-8 bytes in numpy; rows whose prefixes are equal are
then put in order by their whole keys."""

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

TEXT_FIELDS = frozenset({"text", "tags", "entities", "confidence"})
"""Fields whose values are strings (the others are numbers or booleans)."""


def sort_key(field: str) -> Callable[[Any], tuple[Any, ...]]:
    """The unique, total sort key of a field: ``(value, id)``."""
    primary = SORT_FIELDS[field]
    return lambda r: (primary(r), r.id)


def _sliced(rows: Sequence[Any], fn: Callable[[Sequence[Any]], list[Any]], step: int) -> list[Any]:
    """``fn`` of each slice of ``rows``, concatenated; a checkpoint between slices."""
    out: list[Any] = []
    for lo in range(0, len(rows), step):
        out += fn(rows[lo : lo + step])
        pace.checkpoint()
    return out


def field_values(rows: Sequence[Any], field: str, step: int = SLICE) -> list[Any]:
    """The value of ``field`` of every row (the first part of its sort key)."""
    primary = SORT_FIELDS[field]
    return _sliced(rows, lambda part: list(map(primary, part)), step)


def _longest(values: Sequence[str], step: int) -> int:
    """The length of the longest string (0 for none), a slice at a time (one ``max`` over a million
    strings holds the interpreter lock for ~30 ms)."""
    longest = 0
    for lo in range(0, len(values), step):
        longest = max(longest, max(map(len, values[lo : lo + step]), default=0))
        pace.checkpoint()
    return longest


def _byte_prefixes(values: Sequence[str], width: int, step: int) -> np.ndarray:
    """The first ``width`` UTF-8 bytes of each string as a numpy bytes array (bytes order is code
    point order, as Python compares strings)."""
    out = np.empty(len(values), dtype=f"S{max(width, 1)}")
    for lo in range(0, len(values), step):
        part = values[lo : lo + step]
        out[lo : lo + len(part)] = [s.encode("utf-8", "surrogatepass")[:width] for s in part]
        pace.checkpoint()
    return out


def _numbers(values: Sequence[Any], step: int) -> np.ndarray | None:
    """The values as an integer array (None when they do not fit one: then Python sorts)."""
    for dtype in (np.int64, np.uint64):
        try:
            out = np.empty(len(values), dtype=dtype)
            for lo in range(0, len(values), step):
                out[lo : lo + step] = values[lo : lo + step]
                pace.checkpoint()
            return out
        except (OverflowError, TypeError, ValueError):
            continue
    return None


def _runs_of_equal(sorted_values: np.ndarray) -> np.ndarray:
    """``(start, end)`` pairs of the runs of two or more equal neighbours in a sorted array."""
    if len(sorted_values) < 2:
        return np.empty((0, 2), dtype=np.int64)
    same = sorted_values[1:] == sorted_values[:-1]
    edges = np.diff(np.concatenate(([False], same, [False])).astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) + 1
    return np.stack((starts, ends), axis=1)


def _settle_runs(order: np.ndarray, runs: np.ndarray, key: Callable[[int], Any]) -> None:
    """Put each run of ``order`` (rows whose numpy keys tie) in the order of their exact keys."""
    for start, end in runs:
        part = order[start:end].tolist()
        part.sort(key=key)
        order[start:end] = part
        pace.checkpoint()


def _id_rank(ids: Sequence[str], step: int) -> np.ndarray:
    """Each row's place among all the rows when they are ordered by id."""
    width = min(PREFIX_BYTES, max(_longest(ids, step), 1) * 4)
    prefixes = _byte_prefixes(ids, width, step)
    order = np.argsort(prefixes, kind="stable")
    _settle_runs(order, _runs_of_equal(prefixes[order]), ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids), dtype=np.int64)
    return rank


def sort_order(rows: Sequence[Any], field: str, step: int = SLICE, values: list[Any] | None = None) -> np.ndarray:
    """Every row number ascending by ``sort_key(field)`` (the row's field value, then its id), as
    a numpy array; exactly ``sorted(range(len(rows)), key=lambda i: sort_key(field)(rows[i]))``.

    Numbers sort in numpy; strings by their leading bytes in numpy, then runs of rows whose leading
    bytes tie by their whole values. Ties of the value are broken by id: by putting runs of equal
    values in id order when the runs are few and short, else by a rank of the ids sorted first.
    """
    n = len(rows)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    values = field_values(rows, field, step) if values is None else values
    ids = _sliced(rows, lambda part: list(map(_ID, part)), step)
    exact: np.ndarray | None
    if field in TEXT_FIELDS:
        longest = _longest(values, step)
        width = min(PREFIX_BYTES, longest * 4)
        primary = _byte_prefixes(values, width, step)
        exact = None if longest * 4 > width or any("\x00" in v for v in values) else primary
    else:
        numbers = _numbers(values, step)
        if numbers is None:  # past 64 bits: Python sorts (never for the values rows hold today)
            return np.asarray(sorted(range(n), key=lambda i: (values[i], ids[i])), dtype=np.int64)
        primary = exact = numbers
    order = np.argsort(primary, kind="stable")
    runs = _runs_of_equal(primary[order])
    tied = int((runs[:, 1] - runs[:, 0]).sum()) if len(runs) else 0
    if tied and (tied > n // 20 or int((runs[:, 1] - runs[:, 0]).max()) > SLICE):
        order = np.lexsort((_id_rank(ids, step), primary))
        if exact is not None:
            return order
        runs = _runs_of_equal(primary[order])
    if len(runs):
        _settle_runs(order, runs, lambda i: (values[i], ids[i]))
    return order


def inverse(order: np.ndarray) -> np.ndarray:
    """``rank`` with ``rank[order[p]] == p``: where each row stands in ``order``."""
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank


@dataclass
class RowTable:
    """Everything the table model and its proxy need for one bank, built at once off the GUI thread.

    ``rows`` in load order; ``row_of`` key -> index; ``live`` a numpy bool per row;
    ``tag_counts`` of the live rows (count descending, then tag); ``order`` every row number
    ascending by ``sort_key(sort_field)``, and ``rank`` where each row stands in it.
    """

    rows: list[Any]
    row_of: dict[str, int]
    live: np.ndarray
    live_count: int
    tag_counts: list[tuple[str, int]]
    sort_field: str
    order: np.ndarray
    rank: np.ndarray


def live_mask(rows: Sequence[Any], step: int = SLICE) -> np.ndarray:
    """A numpy bool per row: True when the row is live (its ``invalid_at`` is None)."""
    out = np.empty(len(rows), dtype=np.bool_)
    for lo in range(0, len(rows), step):
        part = rows[lo : lo + step]
        out[lo : lo + len(part)] = list(map(operator.is_, map(_INVALID, part), itertools.repeat(None)))
        pace.checkpoint()
    return out


def build_table(rows: Sequence[Any], sort_field: str, step: int = SLICE) -> RowTable:
    """A :class:`RowTable` of ``rows``, sorted by ``sort_field`` (call it off the GUI thread)."""
    rows = rows if isinstance(rows, list) else list(rows)
    row_of: dict[str, int] = {}
    for lo in range(0, len(rows), step):
        row_of.update(
            zip(map(_ID, rows[lo : lo + step]), range(lo, lo + step), strict=False)
        )  # the last slice is short
        pace.checkpoint()
    live = live_mask(rows, step)
    counts: Counter[str] = Counter()
    for lo in range(0, len(rows), step):
        counts.update(
            itertools.chain.from_iterable(itertools.compress(map(_TAGS, rows[lo : lo + step]), live[lo : lo + step]))
        )
        pace.checkpoint()
    order = sort_order(rows, sort_field, step)
    return RowTable(
        rows,
        row_of,
        live,
        int(live.sum()),
        sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])),
        sort_field,
        order,
        inverse(order),
    )


def rows_mask(keys: Iterable[str], row_of: Mapping[str, int], n: int, within: np.ndarray | None = None) -> np.ndarray:
    """A numpy bool per row of a table of ``n`` rows: True for the rows of ``keys`` (keys not in
    ``row_of``, or at rows past ``n``, are left out), and'ed with ``within`` when it is given.

    Costs a dictionary look-up per key: call it off the GUI thread for many keys."""
    get = row_of.get
    found = np.fromiter((get(k, -1) for k in keys), dtype=np.int64)
    found = found[(found >= 0) & (found < n)]
    mask = np.zeros(n, dtype=np.bool_)
    mask[found] = True
    if within is not None:
        mask &= fit_mask(within, n)
    return mask


def fit_mask(mask: np.ndarray, n: int) -> np.ndarray:
    """``mask`` made ``n`` long: cut, or padded with False (rows added since it was made are not in it)."""
    if len(mask) == n:
        return mask
    if len(mask) > n:
        return mask[:n]
    return np.concatenate((mask, np.zeros(n - len(mask), dtype=np.bool_)))


SORT_ATTRIBUTES = {
    "pinned": "pinned",
    "live": "invalid_at",
    "text": "text",
    "tags": "tags",
    "entities": "entities",
    "seen": "corroboration",
    "confidence": "confidence",
    "created": "created_at",
    "updated": "updated_at",
    "revision": "revision",
    "position": "position",
}
"""The attribute of a row each of :data:`SORT_FIELDS` reads."""


def table_lists(rows: Sequence[Any], sort_field: str, step: int = SLICE) -> dict[str, list[Any]]:
    """What :func:`table_columns` needs of ``rows``, taken in C a slice at a time: ``ids``, ``live``
    (a bool per row), ``tags`` and ``values`` (the attribute ``sort_field`` reads)."""
    attribute = operator.attrgetter(SORT_ATTRIBUTES[sort_field])
    out: dict[str, list[Any]] = {"ids": [], "live": [], "tags": [], "values": []}
    for lo in range(0, len(rows), step):
        part = rows[lo : lo + step]
        out["ids"] += map(_ID, part)
        out["live"] += map(operator.is_, map(_INVALID, part), itertools.repeat(None))
        out["tags"] += map(_TAGS, part)
        out["values"] += map(attribute, part)
        pace.checkpoint()
    return out


class _Cells:
    """A row of :func:`table_columns`: its id, liveness, tags, and the one attribute sorted by."""

    __slots__ = ("id", "invalid_at", "tags", "value")

    def __init__(self, key: str, live: bool, tags: Sequence[str], value: Any) -> None:
        self.id, self.invalid_at, self.tags, self.value = key, None if live else 0, tags, value

    def __getattr__(self, name: str) -> Any:  # the sort field's attribute, whatever its name
        return self.value


def table_columns(
    sort_field: str, ids: list[str], live: list[bool], tags: list[Any], values: list[Any]
) -> dict[str, Any]:
    """The order of rows given as :func:`table_lists` (``sort_field``'s order, exactly as
    :func:`sort_order` of the rows) and their live tags counted (what a child process runs)."""
    cells = [_Cells(*row) for row in zip(ids, live, tags, values, strict=True)]
    table = build_table(cells, sort_field)
    return {"order": table.order.astype(np.int64).tobytes(), "tag_counts": table.tag_counts}


def table_from_columns(
    rows: list[Any], ids: list[str], live: list[bool], columns: Mapping[str, Any], sort_field: str, step: int = SLICE
) -> RowTable:
    """The :class:`RowTable` of ``rows`` from what :func:`table_columns` answered for their
    :func:`table_lists`: equal to ``build_table(rows, sort_field)``."""
    row_of: dict[str, int] = {}
    for lo in range(0, len(ids), step):
        row_of.update(zip(ids[lo : lo + step], range(lo, lo + step), strict=False))
        pace.checkpoint()
    mask = np.fromiter(live, dtype=np.bool_, count=len(live))
    order = np.frombuffer(columns["order"], dtype=np.int64).copy()
    return RowTable(
        rows, row_of, mask, int(mask.sum()), list(map(tuple, columns["tag_counts"])), sort_field, order, inverse(order)
    )
