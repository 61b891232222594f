"""Recall's ranking over numpy arrays, for big banks (issue 32): the same hits as the scalar walk.

A big bank's common terms are held by hundreds of thousands of documents, and the scalar walk
(:func:`keepgui.backends.iii.recall._best_live`) pays for its pruning in set and dict operations over
them. Here the index's numbers are numpy arrays (per slot: length, ``updated_at``, day, static bonus;
per query term: its postings sorted by slot, made on first use) and a query is:

1. a threshold: the ``limit``-th best score among the newest documents holding a query term;
2. MaxScore and recency pruning, as the walk does: a document holding only the terms with the
   smallest bounds, or last updated on a day whose recency bound leaves even a perfect match below
   the threshold, cannot rank; the other holders of the essential terms are bounded (their exact
   share of those terms, the other terms' bounds, the static bonus, their recency) and those whose
   bound reaches the threshold are the candidates;
3. every candidate's fused score computed vectorised, the ``limit``-th best picked (``np.partition``);
4. the exact score (:func:`~keepgui.backends.iii.recall._exact`, Python floats as always) of every
   candidate whose vectorised score reaches that one, less a relative slack, and the usual order.

The vectorised scores differ from the exact ones by float rounding only (a few ulps, far below the
slack), so every document that can rank, ties included, is scored exactly: the hits, their order and
their scores are the scalar walk's to the bit. Both are checked against each other in the tests.

The arrays follow the index through its hooks: a slot whose numbers change is patched before the next
query (:meth:`RankArrays.moved`), a term whose postings change is made again when next asked for
(:meth:`RankArrays.touched`).
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from keepgui.backends.iii.index import K1, B
from keepgui.backends.iii.recall import (
    _SLACK,
    DAY_MS,
    ENTITY_WEIGHT,
    RECENCY_FLOOR,
    Hit,
    _exact,
    order_key,
    recency,
)

if TYPE_CHECKING:
    from keepgui.backends.iii.index import BankIndex

Ints = npt.NDArray[np.int32]  # slots, term frequencies, entity counts
Floats = npt.NDArray[np.float64]

_SEED = 4096  # the newest documents scored first, for a threshold
_KEPT = 4  # postings kept for the terms asked for, in entries per slot (8 bytes each)
_PATCH_MAX = 4096  # slots changed since the last query beyond which the columns are taken again whole


class _Derived:
    """What a term's postings give at one version of the columns: its tf and entity counts in the seed,
    and (once the term is essential) its postings' positions newest day first, so that the postings
    of the days from one on are a slice."""

    def __init__(self, version: int, postings: _Postings, day: npt.NDArray[np.int64], seed: Ints) -> None:
        self.version = version
        self.postings = postings
        self.seed_tf = _lookup(postings.slots, postings.tf, seed)
        self.seed_ent = _lookup(postings.ent_slots, postings.ent_counts, seed)
        self._day = day
        self._by_day: tuple[Ints, npt.NDArray[np.int64], Ints, npt.NDArray[np.int64]] | None = None

    def since(self, oldest: int | None) -> _Postings:
        """The postings of the documents last updated on day ``oldest`` or later (None: all), by slot."""
        postings = self.postings
        if oldest is None:
            return postings
        if self._by_day is None:
            self._by_day = (*_newest_first(self._day[postings.slots]), *_newest_first(self._day[postings.ent_slots]))
        order, later, ent_order, ent_later = self._by_day
        held = np.sort(order[: np.searchsorted(later, -oldest, side="right")])
        ent = np.sort(ent_order[: np.searchsorted(ent_later, -oldest, side="right")])
        return _Postings(postings.slots[held], postings.tf[held], postings.ent_slots[ent], postings.ent_counts[ent])


def _newest_first(days: npt.NDArray[np.int64]) -> tuple[Ints, npt.NDArray[np.int64]]:
    """The positions of ``days`` newest first, and the days negated in that order (ascending). Sorted
    by their distance from the newest as 16-bit keys when they span fewer than 65,536 days (numpy sorts
    those by radix, stably: the very order, 8x sooner than comparing int64s at 500,000 postings)."""
    newest = int(days.max()) if len(days) else 0
    ago = newest - days
    if len(days) and int(ago.max()) < 1 << 16:
        order = np.argsort(ago.astype(np.uint16), kind="stable").astype(np.int32)
    else:
        order = np.argsort(-days, kind="stable").astype(np.int32)
    return order, -days[order]


class _Postings(NamedTuple):
    """One term's postings: the slots holding it (ascending) with their tf, and its entity holders."""

    slots: Ints
    tf: Ints
    ent_slots: Ints
    ent_counts: Ints


def _ints(values: Collection[int]) -> Ints:
    """``values`` as int32s: a restored run read where it lies (never written: a term's postings are
    only read), anything else copied."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=np.dtype(values.typecode)).astype(np.int32)
    if isinstance(values, memoryview):  # a restored run: a view cast over the cache's packed bytes
        return np.frombuffer(values, dtype=np.dtype(values.format)).astype(np.int32, copy=False)
    return np.fromiter(values, dtype=np.int32, count=len(values))


def _int64s(values: Sequence[int]) -> npt.NDArray[np.int64]:
    """``values`` copied as int64s (an array's bytes at once: ``np.array`` reads one item at a time)."""
    if isinstance(values, array) and values.typecode == "q":
        return np.frombuffer(values, dtype=np.int64).copy()
    return np.array(values, dtype=np.int64)


def _floats(values: Sequence[int] | Sequence[float]) -> Floats:
    if isinstance(values, array):
        return np.frombuffer(values, dtype=np.dtype(values.typecode)).astype(np.float64)
    if isinstance(values, memoryview):
        return np.frombuffer(values, dtype=np.dtype(values.format)).astype(np.float64)
    return np.array(values, dtype=np.float64)


def _sorted(slots: Ints, values: Ints, size: int) -> tuple[Ints, Ints]:
    """``slots`` (distinct, each below ``size``) ascending, with their ``values``. A term held by many
    of the slots is placed by a mask over every slot (two passes of ``size``), not sorted: a set's
    order is its hash table's, and sorting half a million of them by comparison takes 20-45 ms."""
    if not len(slots) or bool(np.all(slots[1:] > slots[:-1])):  # a run packed from a set often is
        return slots, values
    if len(slots) * 16 >= size:
        held = np.zeros(size, dtype=np.bool_)
        held[slots] = True
        at = np.empty(size, dtype=np.int32)
        at[slots] = values
        ordered = np.flatnonzero(held).astype(np.int32)
        return ordered, at[ordered]
    order = np.argsort(slots, kind="stable")
    return slots[order], values[order]


def _lookup(keys: Ints, values: Ints, slots: Ints) -> Ints:
    """``values`` of ``slots`` in the sorted ``keys`` (0 where a slot is not one of them)."""
    if not len(keys):
        return np.zeros(len(slots), dtype=np.int32)
    at = np.minimum(np.searchsorted(keys, slots), len(keys) - 1)
    return np.where(keys[at] == slots, values[at], 0)


class RankArrays:
    """A :class:`~keepgui.backends.iii.index.BankIndex`'s numbers as numpy arrays, kept in step with it."""

    def __init__(self, index: BankIndex) -> None:
        self._index = index
        self._size = 0  # slots the columns hold
        self._dl: Floats = np.zeros(0)
        self._upd: Floats = np.zeros(0)
        self._day: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._static: Floats = np.zeros(0)
        self._moved: set[int] = set()
        self._whole = True  # take the columns again whole at the next query
        self._terms: dict[str, _Postings] = {}
        self._kept = 0  # entries of the kept postings
        self._seed: Ints | None = None  # the slots of the newest days
        self._version = 0  # bumped whenever the columns change
        self._derived: dict[str, _Derived] = {}  # per term, what its postings give at one version

    def moved(self, slot: int) -> None:
        """The slot's numbers changed (length, ``updated_at``, static bonus)."""
        self._seed = None
        if not self._whole:
            self._moved.add(slot)
            if len(self._moved) > _PATCH_MAX:
                self._whole = True
                self._moved.clear()

    def touched(self, slot: int, terms: Iterable[str]) -> None:
        """The slot's document was added or removed: its terms' postings changed."""
        self.moved(slot)
        for term in terms:
            self._forget(term)

    def _columns(self) -> None:
        """Bring the per-slot columns up to date with the index."""
        dl, upd, day, static = self._index.slot_columns()
        if self._whole:
            self._dl, self._upd, self._static = _floats(dl), _floats(upd), _floats(static)
            self._day = _int64s(day)
            self._size, self._whole = len(dl), False
            self._new_version()
            return
        if len(dl) > self._size or self._moved:
            self._new_version()
        if len(dl) > self._size:
            start = self._size
            self._dl = np.concatenate((self._dl, _floats(dl[start:])))
            self._upd = np.concatenate((self._upd, _floats(upd[start:])))
            self._static = np.concatenate((self._static, _floats(static[start:])))
            self._day = np.concatenate((self._day, _int64s(day[start:])))
            self._size = len(dl)
        if self._moved:
            slots = sorted(self._moved)
            self._moved.clear()
            at = np.array(slots, dtype=np.intp)
            self._dl[at] = [dl[slot] for slot in slots]
            self._upd[at] = [float(upd[slot]) for slot in slots]
            self._static[at] = [static[slot] for slot in slots]
            self._day[at] = [day[slot] for slot in slots]

    def _new_version(self) -> None:
        """The columns changed: what was derived from them is let go (it holds the old day column)."""
        self._version += 1
        self._derived.clear()

    def _postings(self, term: str) -> _Postings:
        """The term's postings, made when not kept; the terms asked for least recently are let go while
        the kept ones hold more than :data:`_KEPT` entries per slot."""
        found = self._terms.pop(term, None)
        if found is None:
            once, multi, tfs, ent, counts = self._index.term_columns(term)
            size = max(self._size, len(self._index.slot_columns()[0]))  # every slot a posting can name
            slots, tf = _sorted(
                np.concatenate((_ints(once), _ints(multi))),
                np.concatenate((np.ones(len(once), dtype=np.int32), _ints(tfs))),
                size,
            )
            ent_slots, ent_counts = _sorted(_ints(ent), _ints(counts), size)
            found = _Postings(slots, tf, ent_slots, ent_counts)
            self._kept += len(slots) + len(ent_slots)
            while self._terms and self._kept > _KEPT * max(self._size, 1 << 18):
                self._forget(next(iter(self._terms)))
        self._terms[term] = found  # the most recently asked for last
        return found

    def derived(self, term: str, postings: _Postings) -> _Derived:
        """What the term's postings give at the columns' version: their days, and their tf and entity
        counts in the seed (both ask for every posting or seed slot, so they are kept, not asked again)."""
        found = self._derived.get(term)
        if found is None or found.version != self._version or found.postings is not postings:
            seed = self._seed if self._seed is not None else np.zeros(0, dtype=np.int32)
            found = self._derived[term] = _Derived(self._version, postings, self._day, seed)
        return found

    def _forget(self, term: str) -> None:
        self._derived.pop(term, None)
        gone = self._terms.pop(term, None)
        if gone is not None:
            self._kept -= len(gone.slots) + len(gone.ent_slots)

    def best_live(
        self, tokens: list[str], query_set: set[str], limit: int, now_ms: int, half_life_days: int
    ) -> list[Hit]:
        """The ``limit`` best lexical candidates: :func:`~keepgui.backends.iii.recall._best_live`'s."""
        index = self._index
        terms = index.query_terms(tokens)
        if not terms or limit <= 0:
            return []
        self._columns()
        query = _Query(self, [(self._postings(term), index.idf(term), times) for term, times in terms])
        query.now_ms, query.half_life, query.avgdl = now_ms, half_life_days, index.avgdl
        days = index.days()
        seed = self._newest(days)
        query.derived = [
            self.derived(term, postings) for (term, _), (postings, *_) in zip(terms, query.terms, strict=True)
        ]
        scores, held = query.scores(seed, seeded=True)
        cut = _kth(scores[held], limit) * (1 - _SLACK)  # a valid threshold: real documents' scores
        bounds = [_bound(*term) for term in query.terms]
        static_max = index.static_max()
        newest = recency((days[-1] + 1) * DAY_MS - 1, now_ms, half_life_days) if days else 1.0
        essential = _essential(bounds, static_max, newest, cut)
        ceiling = sum(bounds) + static_max
        first = bisect.bisect_left(
            days, True, key=lambda day: ceiling * recency((day + 1) * DAY_MS - 1, now_ms, half_life_days) >= cut
        )
        oldest = days[first] if first < len(days) else (days[-1] + 1 if days else 0)
        rest = sum(bound for i, bound in enumerate(bounds) if i not in essential)
        candidates = query.bounded(essential, oldest if first else None, rest, cut)
        scores, _held = query.scores(candidates)
        if len(candidates) > limit:
            floor = np.partition(scores, len(scores) - limit)[len(scores) - limit] * (1 - _SLACK)
            candidates = candidates[scores >= floor]
        return heapq.nsmallest(limit, query.exact(candidates, tokens, query_set, terms), key=order_key)

    def _newest(self, days: list[int]) -> Ints:
        """The :data:`_SEED` most recently updated live slots (all when fewer), kept until a slot changes."""
        if self._seed is None:
            index = self._index
            start, count = len(days), 0
            while start and count < _SEED:
                start -= 1
                count += index.day_size(days[start])
            seed = _ints(index.day_docs(days[start:]))
            if len(seed) > _SEED:
                seed = seed[np.argpartition(self._upd[seed], len(seed) - _SEED)[len(seed) - _SEED :]]
            self._seed = np.sort(seed)
        return self._seed


class _Query:
    """One query's terms, as :meth:`RankArrays.best_live` scores candidates with them."""

    def __init__(self, arrays: RankArrays, terms: list[tuple[_Postings, float, int]]) -> None:
        self.arrays = arrays
        self.terms = terms
        self.now_ms = 0
        self.half_life = 1
        self.avgdl = 1.0
        self.derived: list[_Derived] = []

    def bounded(self, essential: list[int], oldest: int | None, rest: float, cut: float) -> Ints:
        """The holders of the ``essential`` terms last updated on day ``oldest`` or later (None: any day)
        whose score can reach ``cut``: the essential terms' BM25 and entity bonus, plus ``rest`` (the
        other terms' bounds) and the static bonus, times the recency. Ascending."""
        arrays = self.arrays
        slots: list[Ints] = []
        values: list[npt.NDArray[np.floating[Any]]] = []
        for i in essential:
            _postings, idf, times = self.terms[i]
            held, tf, ent, counts = self.derived[i].since(oldest)
            norm = K1 * (1 - B + B * arrays._dl[held] / self.avgdl)
            slots += (held, ent)
            values += (times * idf * (tf * (K1 + 1)) / (tf + norm), ENTITY_WEIGHT * counts)
        if not slots:
            return np.zeros(0, dtype=np.int32)
        partial: npt.NDArray[np.floating[Any]]
        if len(slots) == 2:  # one term: its holders are the candidates, its entity holders among them
            candidates, partial = slots[0], values[0].copy()
            partial[np.searchsorted(candidates, slots[1])] += values[1]
        else:
            united, where = np.unique(np.concatenate(slots), return_inverse=True)
            candidates = united.astype(np.int32, copy=False)
            partial = np.bincount(where, np.concatenate(values), len(candidates)).astype(np.float64, copy=False)
        if not cut:
            return candidates
        bound = (partial + rest + arrays._static[candidates]) * self.decay(candidates)
        return candidates[bound >= cut]

    def exact(self, slots: Ints, tokens: list[str], query_set: set[str], terms: list[tuple[str, int]]) -> list[Hit]:
        """The exact hits of these slots (Python floats, as the walk scores them), the term frequencies
        taken from the arrays: a restored index's postings are not made sets for them."""
        tfs = [_lookup(postings.slots, postings.tf, slots).tolist() for postings, *_ in self.terms]
        index = self.arrays._index
        return [
            _exact(
                index,
                tokens,
                query_set,
                slot,
                self.now_ms,
                self.half_life,
                {term: held[i] for (term, _times), held in zip(terms, tfs, strict=True) if held[i]},
            )
            for i, slot in enumerate(slots.tolist())
        ]

    def decay(self, slots: Ints) -> Floats:
        """The recency factor of these slots at the query's instant (up to float rounding)."""
        age = np.maximum(self.now_ms - self.arrays._upd[slots], 0.0) / DAY_MS
        return np.maximum(np.power(0.5, age / max(self.half_life, 1)), RECENCY_FLOOR)

    def scores(self, slots: Ints, seeded: bool = False) -> tuple[Floats, npt.NDArray[np.bool_]]:
        """The fused scores of these slots (up to float rounding), and which of them hold a query term;
        ``seeded``: the slots are the seed (whose term frequencies are kept)."""
        arrays = self.arrays
        norm = K1 * (1 - B + B * arrays._dl[slots] / self.avgdl)
        bm25 = np.zeros(len(slots))
        hits = np.zeros(len(slots))
        for (postings, idf, times), derived in zip(self.terms, self.derived, strict=True):
            tf = derived.seed_tf if seeded else _lookup(postings.slots, postings.tf, slots)
            bm25 += times * idf * (tf * (K1 + 1)) / (tf + norm)
            hits += derived.seed_ent if seeded else _lookup(postings.ent_slots, postings.ent_counts, slots)
        base = bm25 + ENTITY_WEIGHT * hits + arrays._static[slots]
        return base * self.decay(slots), bm25 > 0


def _bound(postings: _Postings, idf: float, times: int) -> float:
    """:meth:`~keepgui.backends.iii.index.BankIndex.term_bound`, its largest entity count kept."""
    counts = postings.ent_counts
    return times * idf * (K1 + 1) + (ENTITY_WEIGHT * float(counts.max()) if len(counts) else 0.0)


def _kth(scores: Floats, limit: int) -> float:
    """The ``limit``-th largest of ``scores`` (0 when there are fewer)."""
    if len(scores) < limit:
        return 0.0
    return float(np.partition(scores, len(scores) - limit)[len(scores) - limit])


def _essential(bounds: list[float], static_max: float, newest: float, cut: float) -> list[int]:
    """The terms (by position) a document must hold one of to reach ``cut`` (MaxScore): the terms with
    the smallest bounds are left out while their sum with the largest static bonus, at the newest
    document's recency, stays below it. Every term while there is no threshold."""
    by_bound = sorted(range(len(bounds)), key=bounds.__getitem__)
    if not cut:
        return by_bound
    total = static_max
    for dropped, i in enumerate(by_bound):
        if (total + bounds[i]) * newest >= cut:
            return by_bound[dropped:]
        total += bounds[i]
    return []
