"""BM25 over a bank's live memories, kept current one record at a time (spec §2.3).

A document is the memory's text followed by each entity; because a space
separates them, its tokens are the text's tokens plus each entity's tokens.
``N`` counts live documents, ``avgdl = max(total_tokens / N, 1.0)``, and a
query token contributes ``idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))``
with ``idf = ln((N − df + 0.5)/(df + 0.5) + 1)``.

:class:`BankIndex` follows a :class:`~keepgui.backends.iii.log.MemoryLog`: a log
that replayed from scratch rebuilds it; otherwise only the ids of the lines
the log consumed since the index last looked are updated. Adding, editing,
tombstoning or restoring a record touches only that record's postings; N, df
and the token total are plain counters, so an index updated step by step holds
exactly the numbers a rebuild would, and scores computed from it are
bit-identical.

Ranking needs only a handful of exact scores, so the index also offers cheap
*upper bounds*: per term (the most a term can add to any fused score) and per
candidate document. Documents live in small-integer slots, so per-document
data are plain lists and the bounds are computed with C-level ``map``, set and
dict operations rather than Python loops: the BM25 sum plus the entity bonus,
the query-independent bonus (corroboration, pin) and a recency bound taken at
an earlier instant (recency only falls as time passes). The exact fused score
(:mod:`keepgui.backends.iii.recall`) is computed only for documents whose bound
can still reach the top. The index also keeps the head of the
``top_memories`` order up to date, which the ambient floor needs.
"""

from __future__ import annotations

import bisect
import builtins
import heapq
import itertools
import math
import operator
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, MutableMapping, MutableSequence, Sequence
from contextlib import contextmanager
from operator import add, mul
from typing import TYPE_CHECKING, Any, cast

import msgspec

import keepgui.backends.iii.lazy as lazy_module
from keepgui.backends.iii.lazy import LazyRecords, PackedRuns, SlotIds, TermBlock, bin_view
from keepgui.backends.iii.log import LogDelta, MemoryLog
from keepgui.backends.iii.recall import COLD_ARRAYS_FROM, DAY_MS, ENTITY_WEIGHT, recency, static_bonus
from keepgui.backends.iii.record import Memory, read_record
from keepgui.backends.iii.tokenize import entity_tokens, tokenize
from keepgui.core import pace

if TYPE_CHECKING:
    from keepgui.backends.iii.rankarrays import RankArrays

K1 = 1.2
B = 0.75
_REBASE_MS = 3_600_000  # per-slot recency bounds are taken again when older than this (they loosen with time)
_TOP_CACHE = 256  # head of the top_memories order kept ready; the floor asks for recall_limit of it

Bounds = dict[int, float]
"""Candidate slot -> BM25 + entity bonus (float rounding aside); never reported, only used to prune."""


_TERM = operator.itemgetter(0)


def top_key(memory: Memory) -> tuple[bool, int, int, str]:
    """Sort key of ``top_memories``: pinned first, corroboration, newest, then id."""
    return (not memory.pinned, -memory.corroboration, -memory.updated_at, memory.id)


def _merge(acc: Bounds, keys: Iterable[int], values: Iterable[float]) -> Bounds:
    """``acc += {keys: values}`` with C-level dict and set operations only."""
    part = dict(zip(keys, values, strict=True))
    if not acc:
        return part
    if len(part) > len(acc):
        acc, part = part, acc
    common = part.keys() & acc.keys()
    summed = dict(zip(common, map(add, map(acc.__getitem__, common), map(part.__getitem__, common)), strict=True))
    acc.update(part)
    acc.update(summed)
    return acc


def _size(postings: Mapping[str, Any] | PackedRuns[str], term: str) -> int:
    """How many slots a posting holds (a restored one's run is not made a set for it)."""
    return postings.size(term) if isinstance(postings, PackedRuns) else len(postings.get(term, ()))


def _runs(postings: Mapping[str, Any] | PackedRuns[str], term: str) -> tuple[Collection[int], Collection[int]]:
    """A term's ``(slots, counts)`` in one of the index's postings (counts empty for a set of slots)."""
    if isinstance(postings, PackedRuns):
        packed = postings.run(term)
        if packed is not None:
            return packed[0], () if packed[1] is None else packed[1]
    held = postings.get(term)
    if held is None:
        return (), ()
    if isinstance(held, dict):
        return held.keys(), held.values()
    return cast(Collection[int], held), ()


def pack_postings(
    postings: Mapping[str, Iterable[int]] | PackedRuns[str],
) -> tuple[list[str], bytes, bytes]:
    """``(terms, ends, slots)``, the terms sorted: each term's slots as one run of a native int32 array
    (``slots``'s raw bytes), the runs' ends as native int64 (see :class:`~keepgui.backends.iii.lazy.PackedRuns`)."""
    terms: list[str] = []
    ends = array("q")
    slots = array("i")
    for term, held in sorted(postings.items(), key=_TERM):
        terms.append(term)
        slots.extend(held)
        ends.append(len(slots))
    return terms, ends.tobytes(), slots.tobytes()


def unpack_postings(terms: Sequence[str], ends: bytes, slots: bytes) -> dict[str, set[int]] | None:
    """The postings :func:`pack_postings` packed (looked up lazily), or None when the parts disagree."""
    return cast(dict[str, set[int]] | None, PackedRuns.of(terms, ends, slots))


class PackedTerms(msgspec.Struct, array_like=True, gc=False):
    """A term -> slots (or slot -> count) mapping as the cache keeps it: the sorted terms in one UTF-8
    block (``terms``, ending at ``term_ends``), each term's run of native int32 ``slots`` (and
    ``counts``) ending at ``ends`` (int64). Read back by :meth:`unpack` without a string per term."""

    terms: bytes
    term_ends: bytes
    ends: bytes
    slots: bytes
    counts: bytes | None

    @classmethod
    def pack(cls, mapping: Mapping[str, Any] | PackedRuns[str], counted: bool) -> PackedTerms:
        """Pack ``term -> set of slots`` (``counted``: ``term -> {slot: count}``)."""
        terms: list[str] = []
        ends, slots, counts = array("q"), array("i"), array("i")
        for term, held in sorted(mapping.items(), key=_TERM):
            terms.append(term)
            slots.extend(held)
            if counted:
                counts.extend(held.values())
            ends.append(len(slots))
        block, term_ends = TermBlock.pack(terms)
        return cls(block, term_ends, ends.tobytes(), slots.tobytes(), counts.tobytes() if counted else None)

    def unpack(self) -> PackedRuns[str] | None:
        """The lazy mapping, or None when the parts disagree."""
        terms = TermBlock.of(self.terms, self.term_ends)
        return None if terms is None else PackedRuns.of(terms, self.ends, self.slots, self.counts)


class PackedTermsView(msgspec.Struct, array_like=True, gc=False):
    """:class:`PackedTerms` as it is read: each part left where it lies in the cache file's bytes (a view
    of the mapped file, not a copy of the tens of megabytes a million memories' postings are)."""

    terms: msgspec.Raw
    term_ends: msgspec.Raw
    ends: msgspec.Raw
    slots: msgspec.Raw
    counts: msgspec.Raw

    def unpack(self) -> PackedRuns[str] | None:
        """The lazy mapping, or None when the parts disagree (or are not what they claim)."""
        terms, term_ends, ends, slots = map(bin_view, (self.terms, self.term_ends, self.ends, self.slots))
        counts = bin_view(self.counts)
        if terms is None or term_ends is None or ends is None or slots is None:
            return None
        if counts is None and bytes(self.counts) != _NIL:
            return None
        block = TermBlock.of(terms, term_ends)
        return None if block is None else PackedRuns.of(block, ends, slots, counts)


class IndexState(msgspec.Struct, array_like=True, gc=False):
    """What :meth:`BankIndex.snapshot` keeps: the index of a log at ``offset`` (its postings by slot,
    the per-slot signals, the head of the top order), packed so that a restore reads none of it whole:
    per-slot numbers as native arrays, the postings as :class:`PackedTerms`, the days as runs. A slot's
    memory is named by its record's place in the log's records (their order in the same cache), so no
    id is decoded twice."""

    offset: int
    retired: list[str]
    slot_records: bytes  # int32 per slot: its record's place in the log's records, -1 for a free slot
    free: list[int]
    dl: bytes  # int64 per slot
    upd: bytes  # int64 per slot
    day_of: bytes  # int64 per slot: updated_at // 86_400_000
    static: bytes  # float64 per slot
    static_max: float | None
    dl_counts: dict[int, int]
    total: int
    ones: PackedTerms
    multi: PackedTerms
    ent: PackedTerms
    day_keys: list[int]
    day_ends: bytes
    day_slots: bytes
    top: list[tuple[bool, int, int, str]]
    top_all: bool


class CachedIndex(msgspec.Struct, array_like=True, gc=False):
    """The index cache file (:mod:`keepgui.backends.iii.cache`): which log state it belongs to (the log
    cache's offset and digest) and the index."""

    offset: int
    digest: bytes
    index: IndexState


class IndexStateView(msgspec.Struct, array_like=True, gc=False):
    """:class:`IndexState` as it is read: the per-slot arrays and the postings left where they lie in
    the mapped cache file (views, no copies). The same fields in the same order (a test holds it)."""

    offset: int
    retired: list[str]
    slot_records: msgspec.Raw
    free: list[int]
    dl: msgspec.Raw
    upd: msgspec.Raw
    day_of: msgspec.Raw
    static: msgspec.Raw
    static_max: float | None
    dl_counts: dict[int, int]
    total: int
    ones: PackedTermsView
    multi: PackedTermsView
    ent: PackedTermsView
    day_keys: list[int]
    day_ends: msgspec.Raw
    day_slots: msgspec.Raw
    top: list[tuple[bool, int, int, str]]
    top_all: bool


class CachedIndexView(msgspec.Struct, array_like=True, gc=False):
    """:class:`CachedIndex` as it is read (:class:`IndexStateView`)."""

    offset: int
    digest: bytes
    index: IndexStateView


CACHED_INDEX_DECODER = msgspec.msgpack.Decoder(CachedIndexView)
_NIL = b"\xc0"  # msgpack nil (a PackedTerms without counts)


def _listed(ids: MutableSequence[str | None]) -> Sequence[str | None]:
    """Every slot's id (a restore's :class:`~keepgui.backends.iii.lazy.SlotIds` made a list at once)."""
    return ids.tolist() if isinstance(ids, SlotIds) else ids


class _DayRecency(dict[int, float]):
    """day -> the recency at ``now_ms`` of that day's last millisecond, computed when first asked for:
    no document of the day is newer, so none has more recency (it only falls with age)."""

    def __init__(self, now_ms: int, half_life_days: int) -> None:
        super().__init__()
        self.now_ms = now_ms
        self.half_life_days = half_life_days

    def __missing__(self, day: int) -> float:
        bound = self[day] = recency((day + 1) * DAY_MS - 1, self.now_ms, self.half_life_days)
        return bound


class RestoredParts:
    """An :class:`IndexStateView`'s packed parts read back and checked against the log's records (``records``:
    a restore takes them only for the log that holds these very records)."""

    def __init__(self, records: Mapping[str, Memory]) -> None:
        self.records = records
        self.record_at = array("i")
        self.dl, self.upd, self.day_of, self.static = array("q"), array("q"), array("q"), array("d")
        self.ids: MutableSequence[str | None] = []
        self.ones: PackedRuns[str] | None = None
        self.multi: PackedRuns[str] | None = None
        self.ent: PackedRuns[str] | None = None
        self.days: PackedRuns[int] | None = None

    @classmethod
    def of(cls, state: IndexStateView, records: Mapping[str, Memory]) -> RestoredParts | None:
        """The parts, or None when they disagree with each other or with ``records`` (the log's, in the
        order the same cache gave them)."""
        out = cls(records)
        views = [bin_view(raw) for raw in (state.slot_records, state.dl, state.upd, state.day_of, state.static)]
        arrays: tuple[array[Any], ...] = (out.record_at, out.dl, out.upd, out.day_of, out.static)
        try:
            for into, view in zip(arrays, views, strict=True):
                if view is None:
                    return None
                into.frombytes(view)
        except ValueError:
            return None
        if isinstance(records, LazyRecords) and not records.unchanged():
            return None  # the log's records changed since they were restored with this index
        order: Sequence[str] = () if isinstance(records, LazyRecords) else list(records)
        slots = len(out.record_at)
        if (
            {len(out.dl), len(out.upd), len(out.day_of), len(out.static)} != {slots}
            or not _places_fit(out.record_at, len(records), len(state.free))
            or (state.free and (min(state.free) < 0 or max(state.free) >= slots))
            or any(out.record_at[slot] != -1 for slot in state.free)
        ):
            return None
        if isinstance(records, LazyRecords):  # a slot's id is read by its place when asked for: no list
            out.ids = SlotIds(out.record_at, records.packed)
        elif not order:
            out.ids = [None] * slots
        else:  # place -1 (a free slot) picks the last id for a moment
            out.ids = list(map(order.__getitem__, out.record_at))
            for slot in state.free:
                out.ids[slot] = None
        out.ones, out.multi, out.ent = state.ones.unpack(), state.multi.unpack(), state.ent.unpack()
        day_ends, day_slots = bin_view(state.day_ends), bin_view(state.day_slots)
        if day_ends is None or day_slots is None:
            return None
        out.days = PackedRuns.of(state.day_keys, day_ends, day_slots)
        if None in (out.ones, out.multi, out.ent, out.days):
            return None
        return out


def _places_fit(places: array[int], records: int, free: int) -> bool:
    """Whether every slot's record place is one of ``records`` or -1, with ``free`` slots at -1. A bank
    big enough to import numpy for its first question (:data:`~keepgui.backends.iii.recall.COLD_ARRAYS_FROM`)
    is checked with it (a few ms where the three passes over a million Python ints take 80)."""
    if not places:
        return free == 0
    if len(places) < COLD_ARRAYS_FROM:
        return min(places) >= -1 and max(places) < records and places.count(-1) == free
    import numpy as np  # a bank this big imports it for its first question anyway

    at = np.frombuffer(places, np.int32)
    return bool(at.min() >= -1 and at.max() < records and np.count_nonzero(at == -1) == free)


class BankIndex:
    """The BM25 index, entity postings and ranking bounds of one bank.

    ``records`` holds every record it was given, live or retired (retired ones
    are reachable by history recall but are not indexed). Give it the
    :class:`~keepgui.backends.iii.log.LogDelta` of each refresh of the followed log
    (:meth:`sync`), or let :meth:`ensure_current` catch up before a query; use
    :meth:`set` for single records without a log, and :meth:`overlay` for
    hypothetical records during a ``with`` block. Not thread-safe: one caller
    at a time (:class:`~keepgui.backends.iii.context.BankEngine` holds a lock).
    """

    def __init__(self, log: MemoryLog | None = None) -> None:
        self.log = log
        self._reset()
        self._synced_records: MutableMapping[str, Memory] | None = (
            None  # the log's records dict when the index last caught up
        )
        self._synced_offset = 0
        self._synced_tail: Memory | None = None  # the log's provisional last-line record then

    def _reset(self) -> None:
        self.records: MutableMapping[str, Memory] = {}
        self._retired: set[str] = set()
        self._slot_of: dict[str, int] | None = {}  # live id -> slot (None: made from _ids on first use)
        self._ids: MutableSequence[str | None] = []  # slot -> id (None when free; a restore's SlotIds)
        self._record_at: array[int] | None = None  # slot -> its record's place in a restored LazyRecords
        self._free: list[int] = []
        self._top_at: dict[str, int] = {}  # id -> place in a restored block, of the head as last computed
        self._dl: MutableSequence[int] = []  # per slot, 0 when free
        self._upd: MutableSequence[int] = []  # updated_at per slot
        self._day_of: MutableSequence[int] = []  # updated_at // day per slot (what its recency bound is of)
        self._static: MutableSequence[float] = []  # corroboration + pin bonus per slot
        self._static_max: float | None = 0.0  # None: recompute on demand
        self._dl_counts: dict[int, int] = {}
        self._total = 0
        self._ones: dict[str, set[int]] = {}  # term -> slots holding it once (the common case)
        self._multi: dict[str, dict[int, int]] = {}  # term -> slot -> tf, for tf >= 2
        self._ent: dict[str, dict[int, int]] = {}  # term -> slot -> how many entity tokens equal it
        self._days: dict[int, set[int]] = {}  # updated_at // day -> live slots (newest are ranked first)
        self._day_order: list[int] = []  # the keys of _days, ascending
        self._day_rb = _DayRecency(-1, 0)  # the recency bounds of the last query's instant, by day
        self._rb: MutableSequence[float] = []  # per slot, once enough candidates were bounded by day
        self._rb_at: tuple[int, int] | None = None  # (now_ms, half_life) the per-slot bounds were taken at
        self._day_bounded = 0  # candidates bounded by day since the per-slot bounds were last taken
        self._w1: list[float] = []
        self._w1_version = -1
        self._docs_version = 0  # bumped whenever a document's length can have changed
        self._top: list[tuple[bool, int, int, str]] = []  # the exact head of the top_memories order (keys)
        self._top_all = True  # the head holds every live doc
        self._arrays: RankArrays | None = None  # numpy copies for big banks' ranking, told of every change
        self.questions = 0  # recall questions asked of this index (see recall._by_arrays)

    # ------------------------------------------------------------------ following a log

    def sync(self, delta: LogDelta) -> None:
        """Apply a refresh of the followed log: a reset rebuilds, anything else moves only what changed.

        The changed ids are read from the log lines consumed since the index
        last looked, not taken from ``delta.changed`` alone: a write batch
        refreshes the log itself, so some deltas never reach the index, and
        their lines must not be missed. Nor is ``delta.reset`` needed: every
        reset gives the log a new ``records`` dict, which :meth:`ensure_current`
        notices and rebuilds from.
        """
        self.ensure_current()

    def ensure_current(self) -> bool:
        """Catch up with the followed log; True when that needed a rebuild.

        A log that was never read is read first. When the log replayed from
        scratch (its ``records`` is a new dict) the index is rebuilt;
        otherwise only the ids of the lines appended since the last look are
        updated.
        """
        log = self._require_log()
        if not log.loaded:
            log.refresh()
        if self._synced_records is not log.records:
            self._rebuild_from_log()
            return True
        tail = log.tail_record
        if self._synced_offset != log.offset or tail is not self._synced_tail:
            ids = self._ids_between(self._synced_offset, log.offset)
            if ids is None:
                self._rebuild_from_log()
                return True
            # The unterminated last line's record is provisional: the ids it touched then and
            # now are the only others that can have moved.
            ids += [t.id for t in (self._synced_tail, tail) if t is not None]
            for mid in ids:
                self.set(mid, log.records.get(mid))
            self._synced_offset = log.offset
            self._synced_tail = tail
        return False

    def snapshot(self) -> IndexState | None:
        """The state to cache, or None unless the index is exactly current with its log's complete lines."""
        log = self.log
        if log is None or self._synced_records is not log.records or self._synced_offset != log.offset:
            return None
        if self._synced_tail is not None or log.tail_record is not None:
            return None
        place: dict[str | None, int] = dict(zip(log.records, range(len(log.records)), strict=True))
        place[None] = -1
        days = sorted(self._days.items(), key=_TERM)
        day_ends = array("q", itertools.accumulate(len(slots) for _day, slots in days))
        return IndexState(
            offset=self._synced_offset,
            retired=list(self._retired),
            slot_records=array("i", map(place.__getitem__, _listed(self._ids))).tobytes(),
            free=self._free,
            dl=array("q", self._dl).tobytes(),
            upd=array("q", self._upd).tobytes(),
            day_of=array("q", self._day_of).tobytes(),
            static=array("d", self._static).tobytes(),
            static_max=self._static_max,
            dl_counts=self._dl_counts,
            total=self._total,
            ones=PackedTerms.pack(self._ones, counted=False),
            multi=PackedTerms.pack(self._multi, counted=True),
            ent=PackedTerms.pack(self._ent, counted=True),
            day_keys=[day for day, _slots in days],
            day_ends=day_ends.tobytes(),
            day_slots=array("i", itertools.chain.from_iterable(slots for _day, slots in days)).tobytes(),
            top=self._top,
            top_all=self._top_all,
        )

    def restore(self, state: IndexStateView, parts: RestoredParts | None = None) -> bool:
        """Take ``state`` as the index of the followed log as it was at ``state.offset`` (the log must
        hold that state now, restored from the same cache); lines appended since are caught up by
        :meth:`ensure_current`. False, leaving the index to rebuild, when it does not fit the log.
        Nothing is unpacked whole: a posting, a day, a record is read when a query first needs it.
        ``parts``: the state's parts already read (:meth:`RestoredParts.of`), for the log's records."""
        log = self._require_log()
        self._reset()
        restored = parts if parts is not None and parts.records is log.records else RestoredParts.of(state, log.records)
        if restored is None or state.offset != log.offset:
            self._synced_records = None
            return False
        records = log.records
        self.records = records.copy() if isinstance(records, LazyRecords) else dict(records)
        self._record_at = restored.record_at if isinstance(records, LazyRecords) else None
        self._retired = set(state.retired)
        self._slot_of = None
        self._ids = restored.ids
        self._free = state.free
        self._dl, self._upd, self._day_of, self._static = restored.dl, restored.upd, restored.day_of, restored.static
        self._static_max = state.static_max
        self._dl_counts = state.dl_counts
        self._total = state.total
        self._ones = cast(dict[str, set[int]], restored.ones)
        self._multi = cast(dict[str, dict[int, int]], restored.multi)
        self._ent = cast(dict[str, dict[int, int]], restored.ent)
        self._days = cast(dict[int, set[int]], restored.days)
        self._day_order = list(state.day_keys)
        self._top = state.top
        self._top_all = state.top_all
        self._synced_records = log.records
        self._synced_offset = log.offset
        self._synced_tail = None
        return True

    @property
    def _slot(self) -> dict[str, int]:
        """Live id -> slot (a restored index makes it on first use: a query goes by slot)."""
        slot_of = self._slot_of
        if slot_of is None:
            # beside a window a slice at a time (a million ids: 0.1 s in one call)
            made = pace.numbered(_listed(self._ids), lazy_module.STEP)
            made.pop(None, None)  # free slots
            slot_of = self._slot_of = cast(dict[str, int], made)
        return slot_of

    def _require_log(self) -> MemoryLog:
        if self.log is None:
            raise ValueError("this index follows no log")
        return self.log

    def _rebuild_from_log(self) -> None:
        log = self._require_log()
        self.rebuild(log.records.values())
        self._synced_records = log.records
        self._synced_offset = log.offset
        self._synced_tail = log.tail_record

    def _ids_between(self, start: int, end: int) -> list[str] | None:
        """The ids of the valid lines in ``[start, end)`` of the log file (None if it cannot be read)."""
        if start > end:
            return None
        try:
            with open(self._require_log().path, "rb") as fh:
                fh.seek(start)
                data = fh.read(end - start)
        except OSError:
            return None
        if len(data) != end - start:
            return None
        ids: dict[str, None] = {}
        for line in data.split(b"\n"):
            memory = read_record(line)
            if memory is not None:  # blank or corrupt: the log skipped it too
                ids[memory.id] = None
        return list(ids)

    def rebuild(self, records: Iterable[Memory]) -> None:
        """Index these records from scratch (the current revision of each id)."""
        self._reset()
        self._top_all = False  # the head is computed on first use, not kept sorted while filling
        for n, memory in enumerate(records):
            if not n & 255:
                pace.checkpoint()  # a rebuild runs in the background beside a window: give way between slices
            self.set(memory.id, memory)
        self._top_all = not self._slot

    # ------------------------------------------------------------------ one record

    def set(self, memory_id: str, memory: Memory | None) -> None:
        """Make ``memory`` the current record of ``memory_id`` (None forgets the id)."""
        old = self.records.get(memory_id)
        if old is memory:
            return
        old_live = old if old is not None and old.invalid_at is None else None
        new_live = memory if memory is not None and memory.invalid_at is None else None
        same_doc = (
            old_live is not None
            and new_live is not None
            and old_live.text == new_live.text
            and old_live.entities == new_live.entities
        )
        if old_live is not None:
            self._top_discard(old_live)
            if same_doc:
                self._day_discard(self._slot[memory_id], old_live.updated_at)
            else:
                self._remove_doc(memory_id, old_live)
        if new_live is not None:
            slot = self._slot[memory_id] if same_doc else self._add_doc(memory_id, new_live)
            self._set_signals(slot, new_live)
            self._top_insert(new_live)
        if memory is None:
            self.records.pop(memory_id, None)
            self._retired.discard(memory_id)
            return
        self.records[memory_id] = memory
        if new_live:
            self._retired.discard(memory_id)
        else:
            self._retired.add(memory_id)

    def _set_signals(self, slot: int, memory: Memory) -> None:
        """The per-slot data the bounds use: updated_at, static bonus, recency bound."""
        self._upd[slot] = memory.updated_at
        day = self._day_of[slot] = memory.updated_at // DAY_MS
        if self._rb_at is not None:
            self._rb[slot] = recency(memory.updated_at, *self._rb_at)
        if self._arrays is not None:
            self._arrays.moved(slot)
        docs = self._days.get(day)
        if docs is None:
            self._days[day] = {slot}
            bisect.insort(self._day_order, day)
        else:
            docs.add(slot)
        old_static, new_static = self._static[slot], static_bonus(memory)
        self._static[slot] = new_static
        if self._static_max is not None:
            if new_static >= self._static_max:
                self._static_max = new_static
            elif old_static >= self._static_max:
                self._static_max = None

    def _day_discard(self, slot: int, updated_at: int) -> None:
        day = updated_at // DAY_MS
        docs = self._days[day]
        docs.discard(slot)
        if not docs:
            del self._days[day]
            del self._day_order[bisect.bisect_left(self._day_order, day)]

    def _add_doc(self, mid: str, memory: Memory) -> int:
        if self._free:
            slot = self._free.pop()
            self._ids[slot] = mid
            if self._record_at is not None and slot < len(self._record_at):
                self._record_at[slot] = -1  # a new document, not the restored record of that place
        else:
            slot = len(self._ids)
            self._ids.append(mid)
            self._dl.append(0)
            self._upd.append(0)
            self._day_of.append(0)
            if self._rb_at is not None:
                self._rb.append(0.0)
            self._static.append(0.0)
        if self._slot_of is not None:
            self._slot_of[mid] = slot
        self._docs_version += 1
        text_tokens = tokenize(memory.text)
        ents = entity_tokens(memory.entities)
        counts = Counter(text_tokens)
        counts.update(ents)
        if self._arrays is not None:
            self._arrays.touched(slot, counts)
        ones, multi = self._ones, self._multi
        for term, tf in counts.items():
            if tf == 1:
                docs = ones.get(term)
                if docs is None:
                    ones[term] = {slot}
                else:
                    docs.add(slot)
            else:
                tfs = multi.get(term)
                if tfs is None:
                    multi[term] = {slot: tf}
                else:
                    tfs[slot] = tf
        for term, count in Counter(ents).items():
            holders = self._ent.get(term)
            if holders is None:
                self._ent[term] = {slot: count}
            else:
                holders[slot] = count
        dl = len(text_tokens) + len(ents)
        self._dl[slot] = dl
        self._dl_counts[dl] = self._dl_counts.get(dl, 0) + 1
        self._total += dl
        return slot

    def _remove_doc(self, mid: str, memory: Memory) -> None:
        slot = self._slot.pop(mid)  # made first when it is not yet
        self._docs_version += 1
        ents = entity_tokens(memory.entities)
        counts = Counter(tokenize(memory.text))
        counts.update(ents)
        if self._arrays is not None:
            self._arrays.touched(slot, counts)
        for term, tf in counts.items():
            if tf == 1:
                once = self._ones[term]
                once.discard(slot)
                if not once:
                    del self._ones[term]
            else:
                tfs = self._multi[term]
                del tfs[slot]
                if not tfs:
                    del self._multi[term]
        for term in builtins.set(ents):
            holders = self._ent[term]
            del holders[slot]
            if not holders:
                del self._ent[term]
        dl = self._dl[slot]
        left = self._dl_counts[dl] - 1
        if left:
            self._dl_counts[dl] = left
        else:
            del self._dl_counts[dl]
        self._total -= dl
        self._day_discard(slot, self._upd[slot])
        if self._static_max is not None and self._static[slot] >= self._static_max:
            self._static_max = None
        self._ids[slot] = None
        self._dl[slot] = 0
        self._static[slot] = 0.0
        self._free.append(slot)

    @contextmanager
    def overlay(self, changes: Mapping[str, Memory | None]) -> Iterator[BankIndex]:
        """Apply hypothetical records inside the block, then put the real ones back."""
        previous = {mid: self.records.get(mid) for mid in changes}
        try:
            for mid, memory in changes.items():
                self.set(mid, memory)
            yield self
        finally:
            for mid, memory in previous.items():
                self.set(mid, memory)

    # ------------------------------------------------------------------ statistics

    @property
    def n(self) -> int:
        """Number of indexed (live) documents."""
        return len(self._ids) - len(self._free)

    @property
    def total_tokens(self) -> int:
        """Sum of the document lengths."""
        return self._total

    @property
    def avgdl(self) -> float:
        """``max(total_tokens / N, 1.0)`` (1.0 for an empty index)."""
        n = len(self._ids) - len(self._free)
        return max(self._total / n, 1.0) if n else 1.0

    def df(self, term: str) -> int:
        """Number of live documents containing ``term``."""
        return _size(self._ones, term) + _size(self._multi, term)

    def idf(self, term: str) -> float:
        """``ln((N − df + 0.5)/(df + 0.5) + 1)``."""
        df = self.df(term)
        return math.log((len(self._ids) - len(self._free) - df + 0.5) / (df + 0.5) + 1)

    def tf(self, term: str, memory_id: str) -> int:
        """How often ``term`` occurs in the document of ``memory_id`` (0 if not indexed)."""
        slot = self._slot.get(memory_id)
        if slot is None:
            return 0
        return self._tf(term, slot)

    def _tf(self, term: str, slot: int) -> int:
        docs = self._ones.get(term)
        if docs is not None and slot in docs:
            return 1
        return self._multi.get(term, {}).get(slot, 0)

    def doc_length(self, memory_id: str) -> int:
        """Token count of an indexed document."""
        return self._dl[self._slot[memory_id]]

    def retired(self) -> list[Memory]:
        """Every record that is not live (the history candidates)."""
        return [self.records[mid] for mid in self._retired]

    def memory_at(self, slot: int) -> Memory:
        """The live record in a slot."""
        mid = self._ids[slot]
        if mid is None:
            raise KeyError(f"slot {slot} holds no memory")
        record_at, records = self._record_at, self.records
        if record_at is not None and slot < len(record_at) and isinstance(records, LazyRecords):
            place = record_at[slot]
            if place >= 0:
                return records.at(place, mid)  # by its place: no id -> place table is made for a query
        return records[mid]

    # ------------------------------------------------------------------ scoring

    def bm25(self, tokens: list[str], memory_id: str) -> float:
        """The exact BM25 of one document: each query token in order, duplicates included."""
        slot = self._slot.get(memory_id)
        return 0.0 if slot is None else self.bm25_at(tokens, slot)

    def bm25_at(self, tokens: list[str], slot: int, tfs: Mapping[str, int] | None = None) -> float:
        """:meth:`bm25` of the live document in ``slot``; ``tfs``: its term frequencies when known."""
        dl = self._dl[slot]
        avgdl = self.avgdl
        score = 0.0
        for term in tokens:
            tf = self._tf(term, slot) if tfs is None else tfs.get(term, 0)
            if tf:
                score += self.idf(term) * (tf * (K1 + 1)) / (tf + K1 * (1 - B + B * dl / avgdl))
        return score

    def query_terms(self, tokens: list[str]) -> list[tuple[str, int]]:
        """The distinct query terms present in the index with their multiplicity, rarest first."""
        present = [
            (term, times) for term, times in Counter(tokens).items() if term in self._ones or term in self._multi
        ]
        present.sort(key=lambda item: self.df(item[0]))
        return present

    def term_bound(self, term: str, times: int) -> float:
        """The most this term (asked ``times`` times) can add to any document's base score."""
        ents = self._ent.get(term)
        return times * self.idf(term) * (K1 + 1) + (ENTITY_WEIGHT * max(ents.values()) if ents else 0.0)

    def static_max(self) -> float:
        """The largest corroboration + pin bonus of any live document."""
        if self._static_max is None:
            self._static_max = max(self._static, default=0.0)
        return self._static_max

    def _weights(self) -> list[float]:
        """Per slot, ``(k1+1)/(1 + k1·(1−b+b·dl/avgdl))``: the tf=1 factor of BM25."""
        if self._w1_version != self._docs_version:
            avgdl = self.avgdl
            # one weight per length that occurs (a 50 MB memory's length is one entry, not a list that long)
            by_length = {d: (K1 + 1) / (1 + K1 * (1 - B + B * d / avgdl)) for d in (0, *self._dl_counts)}
            self._w1 = list(map(by_length.__getitem__, self._dl))
            self._w1_version = self._docs_version
        return self._w1

    def postings(self, terms: Iterable[tuple[str, int]]) -> builtins.set[int]:
        """Every live slot holding at least one of these terms."""
        groups: list[Iterable[int]] = []
        for term, _times in terms:
            groups.append(self._ones.get(term, ()))
            groups.append(self._multi.get(term, {}).keys())
        return builtins.set[int]().union(*groups)

    def holders_in(self, group: builtins.set[int], term: str) -> builtins.set[int]:
        """The slots of ``group`` holding ``term`` (each side intersected iterates the smaller one)."""
        ones, multi = self._ones.get(term), self._multi.get(term)
        held = group & ones if ones else builtins.set[int]()
        if multi:
            held |= multi.keys() & group
        return held

    def add_docs(self, group: builtins.set[int], terms: list[tuple[str, int]]) -> Bounds:
        """The bounds of the documents of ``group`` that hold a query term: BM25 + entity bonus.

        Only ``group`` is touched (each posting is intersected with it, iterating
        the smaller side), so a small group costs little however common the terms.
        """
        acc: Bounds = {}
        weights = self._weights()
        avgdl, dls = self.avgdl, self._dl
        for term, times in terms:
            factor = times * self.idf(term)
            ones, multi, ents = self._ones.get(term), self._multi.get(term), self._ent.get(term)
            if ones:
                keys = group & ones
                acc = _merge(acc, keys, map(factor.__mul__, map(weights.__getitem__, keys)))
            if multi:
                slots = list(multi.keys() & group)
                acc = _merge(
                    acc,
                    slots,
                    [
                        factor * (multi[slot] * (K1 + 1)) / (multi[slot] + K1 * (1 - B + B * dls[slot] / avgdl))
                        for slot in slots
                    ],
                )
            if ents:
                keys = ents.keys() & group
                acc = _merge(acc, keys, map(ENTITY_WEIGHT.__mul__, map(ents.__getitem__, keys)))
        return acc

    def rank_arrays(self) -> RankArrays:
        """The numpy form of the index that big banks are ranked over, made on first use and kept in step."""
        if self._arrays is None:
            from keepgui.backends.iii.rankarrays import RankArrays  # numpy: only once a big bank is ranked

            self._arrays = RankArrays(self)
        return self._arrays

    def slot_columns(self) -> tuple[Sequence[int], Sequence[int], Sequence[int], Sequence[float]]:
        """The per-slot numbers: document length, ``updated_at``, its day, static bonus (do not modify)."""
        return self._dl, self._upd, self._day_of, self._static

    def term_columns(self, term: str) -> tuple[Collection[int], ...]:
        """``(once, multi, tfs, entity slots, entity counts)`` of ``term``: the live slots holding it once,
        those holding it more often with their term frequencies, and those holding it as entity tokens
        with how many. A restored posting not yet looked up is given as its packed array, never a set."""
        once, _ = _runs(self._ones, term)
        multi, tfs = _runs(self._multi, term)
        ent, counts = _runs(self._ent, term)
        return once, multi, tfs, ent, counts

    def days(self) -> list[int]:
        """The days (``updated_at // 86_400_000``) that hold live documents, ascending."""
        return self._day_order

    def day_size(self, day: int) -> int:
        """How many live documents were last updated on that day."""
        return len(self._days[day])

    def day_docs(self, days: Iterable[int]) -> builtins.set[int]:
        """The live slots last updated on any of these days."""
        return builtins.set[int]().union(*(self._days[day] for day in days))

    def recency_bounds(self, now_ms: int, half_life_days: int) -> dict[int, float]:
        """Per day (``updated_at // 86_400_000``), a recency factor no smaller than the true one at
        ``now_ms`` of any document last updated that day: the recency of the day's last millisecond.
        Computed for the days a query's candidates fall on, not per document (nor kept between instants)."""
        day_rb = self._day_rb
        if (day_rb.now_ms, day_rb.half_life_days) != (now_ms, half_life_days):
            day_rb = self._day_rb = _DayRecency(now_ms, half_life_days)
        return day_rb

    def upper_bounds(self, acc: Bounds, now_ms: int, half_life_days: int) -> tuple[list[int], list[float]]:
        """``(slots, bounds of their fused scores)``: ``(acc + static bonus) · recency bound``.

        The recency bound of a slot is its day's (:meth:`recency_bounds`), looked up per candidate; once
        as many candidates were bounded that way as there are slots (a window asking again and again),
        every slot's bound is taken at once and kept while it stays valid (an hour, the same half life).
        A command's single query never pays for every slot."""
        slots = list(acc)
        static = map(self._static.__getitem__, slots)
        at = self._rb_at
        if not (at is not None and at[1] == half_life_days and at[0] <= now_ms <= at[0] + _REBASE_MS):
            self._day_bounded += len(slots)
            day_rb = self.recency_bounds(now_ms, half_life_days)
            if self._day_bounded <= len(self._ids):
                rb_of = map(day_rb.__getitem__, map(self._day_of.__getitem__, slots))
                return slots, list(map(mul, map(add, acc.values(), static), rb_of))
            self._rb = list(map(day_rb.__getitem__, self._day_of))
            self._rb_at = (now_ms, half_life_days)
            self._day_bounded = 0
        return slots, list(map(mul, map(add, acc.values(), static), map(self._rb.__getitem__, slots)))

    # ------------------------------------------------------------------ top_memories

    def top(self, limit: int) -> list[Memory]:
        """``top_memories(limit)``: live records, pinned first, corroboration, newest, id."""
        if limit <= 0:
            return []
        if not self._top_all and len(self._top) < limit:
            size = max(limit, _TOP_CACHE)
            live = [0]
            head = heapq.nsmallest(size, self._live_keys(live))
            self._top = [key for key, _place in head]
            self._top_at = {key[-1]: place for key, place in head if place >= 0}
            self._top_all = len(self._top) == live[0]
        records, top_at = self.records, self._top_at
        if not top_at or not isinstance(records, LazyRecords):
            return [records[key[-1]] for key in self._top[:limit]]
        return [
            records.at(top_at[key[-1]], key[-1]) if key[-1] in top_at else records[key[-1]] for key in self._top[:limit]
        ]

    def _live_keys(self, counted: list[int]) -> Iterator[tuple[tuple[bool, int, int, str], int]]:
        """Every live slot's ``top_key`` and its record's place in a restored block (-1 when not known),
        ``counted[0]`` how many so far: a restored index's records are read by their places, with no
        id -> slot or id -> position table of a million ids made for them."""
        ids, records = self._ids, self.records
        if isinstance(ids, SlotIds) and isinstance(records, LazyRecords) and ids.reads(records):
            found: Iterable[tuple[Memory, int]] = ids.placed(records)
        else:
            found = ((records[mid], -1) for mid in self._slot)
        for counted[0], (memory, place) in enumerate(found, 1):
            yield top_key(memory), place

    def _top_insert(self, memory: Memory) -> None:
        key = top_key(memory)
        if self._top_all or (self._top and key < self._top[-1]):
            bisect.insort(self._top, key)

    def _top_discard(self, memory: Memory) -> None:
        key = top_key(memory)
        i = bisect.bisect_left(self._top, key)
        if i < len(self._top) and self._top[i] == key:
            del self._top[i]
