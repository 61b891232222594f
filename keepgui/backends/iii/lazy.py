"""A cache's records and postings read on demand: only what a query touches is decoded.

A verified cache (:mod:`keepgui.backends.iii.cache`) answers a preview from a handful of records and
the postings of a handful of terms; decoding every record and every posting costs more than the whole
answer. :class:`LazyRecords` is the log's ``id -> record`` mapping over a column block — the ids, and
every record's msgpack encoding in one buffer with its offsets — and decodes a record when it is first
asked for. :class:`PackedRuns` is a sorted key -> slots mapping packed in arrays (the index's postings
and day lists), a key's run unpacked into a set (or a ``slot -> count`` dict) on first look-up.

Both behave as the plain dict they stand for, changes included (a refresh that appends lines, an
index's ``set``): changes are kept beside the packed part, which is never modified.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import operator
from array import array
from collections.abc import Iterable, Iterator, MutableMapping, MutableSequence, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from keepgui.backends.iii.record import Memory
from keepgui.core import fsio, pace

if TYPE_CHECKING:
    from keepgui.core.source import Progress

_HEADER = b"\xdd"  # msgpack array32: the block is one array of every record, decodable at once
_DECODE_ONE = msgspec.msgpack.Decoder(Memory).decode
_DECODE_ALL = msgspec.msgpack.Decoder(list[Memory]).decode
_ENCODE = msgspec.msgpack.Encoder().encode
STEP = 4096
"""Records decoded (ids placed) in one C call when a window's GUI thread shares the process
(:func:`keepgui.core.pace.foreground`): a few milliseconds each, a checkpoint between them."""


def encode_block(records: Sequence[Memory]) -> tuple[bytes, bytes]:
    """``(block, starts)``: every record's msgpack encoding after an array header (so the block decodes
    whole in one call), and where each begins, plus the end, as native int64 (``len(records) + 1``)."""
    parts = list(map(_ENCODE, records))
    header = _HEADER + len(parts).to_bytes(4, "big")
    starts = array("q", [len(header)])
    starts.extend(itertools.accumulate(map(len, parts), initial=len(header)))
    del starts[0]
    return header + b"".join(parts), starts.tobytes()


_DECODE_IDS = msgspec.msgpack.Decoder(list[str]).decode
_RECORD_ID = operator.attrgetter("id")
_SHARED_FIELDS = tuple((name, operator.attrgetter(name)) for name in ("tags", "entities", "source"))
"""A record's fields whose values repeat across a bank (a few dozen tag sets, a few thousand sources):
a decode makes a new object for each record, :func:`share_repeats` keeps one of each."""


def share_repeats(records: list[Memory], seen: dict[Any, Any]) -> None:
    """Make the equal values of each of :data:`_SHARED_FIELDS` in ``records`` one object, the first of
    them ``seen`` (kept by the caller across slices). Equal immutable values: no record reads otherwise.
    At a million memories decoded from a cache, a quarter of a gigabyte of repeats; C calls only."""
    keep, set_field = seen.setdefault, msgspec.structs.force_setattr
    for name, get in _SHARED_FIELDS:
        values = list(map(get, records))
        collections.deque(map(set_field, records, itertools.repeat(name), map(keep, values, values)), maxlen=0)


def _array_length(encoded: msgspec.Raw) -> int | None:
    """How many items a msgpack array's header says it holds (None when it is not an array)."""
    view = memoryview(encoded)
    first = view[0] if len(view) else None
    if first is not None and 0x90 <= first <= 0x9F:
        return first & 0x0F
    size = {0xDC: 2, 0xDD: 4}.get(first) if first is not None else None
    return None if size is None or len(view) < 1 + size else int.from_bytes(view[1 : 1 + size], "big")


class RecordBlock:
    """The packed part of :class:`LazyRecords`, shared by its copies: the ids in order, the encoded
    block and its offsets, the records decoded so far (by position) and how many decodes were done.
    The ids may come packed too (a cache's msgpack array of them): a query then reads a slot's id from
    its record (:meth:`id_at`), and they are decoded whole only when :attr:`ids` is first read."""

    def __init__(self, ids: list[str] | msgspec.Raw, block: bytes | memoryview, starts: array[int]) -> None:
        self._ids: list[str] | None = ids if isinstance(ids, list) else None
        self._packed_ids: msgspec.Raw | None = None if isinstance(ids, list) else ids
        self.n = len(starts) - 1  # how many records (and ids)
        self.block = block
        self.starts = starts
        self._view = memoryview(block)
        self._positions: dict[str, int] | None = None
        self._decoded: dict[int, Memory] = {}
        self._all: list[Memory] | None = None
        self.decodes = 0  # records decoded one by one (a whole decode counts every record)
        self.mapped: memoryview | None = None  # the mapped file the block is read from, if it is

    @classmethod
    def of(cls, ids: list[str] | msgspec.Raw, block: bytes | memoryview, starts: bytes) -> RecordBlock | None:
        """The block, or None when its parts disagree (a cache file that is not what it claims; the
        cache's checksum stands for the rest: the offsets are not all read, nor packed ids decoded)."""
        offsets = array("q")
        try:
            offsets.frombytes(starts)
        except ValueError:
            return None
        n = len(ids) if isinstance(ids, list) else _array_length(ids)
        if (
            n is None
            or len(offsets) != n + 1
            or block[:1] != _HEADER
            or block[1:5] != n.to_bytes(4, "big")
            or offsets[0] != 5
            or offsets[-1] != len(block)
        ):
            return None
        return cls(ids, block, offsets)

    @property
    def ids(self) -> list[str]:
        """The ids in order (packed ones decoded whole, once; raises msgspec's errors for a corrupt block)."""
        if self._ids is None:
            assert self._packed_ids is not None  # one of the two is always held
            ids = _DECODE_IDS(self._packed_ids)
            if len(ids) != self.n:
                raise msgspec.DecodeError("a block of ids of another length than its records")
            self._ids, self._packed_ids = ids, None
        return self._ids

    def decoded_ids(self) -> list[str] | None:
        """The ids in order when they are strings already, else None (not decoded for the asking)."""
        return self._ids

    def id_at(self, position: int) -> str:
        """The id at ``position``: of the ids when decoded, else of its record (decoded once, as the query
        asking for it reads it next)."""
        return self._ids[position] if self._ids is not None else self.at(position).id

    def positions(self) -> dict[str, int]:
        """id -> position, made on first use (a slice at a time beside a window)."""
        if self._positions is None:
            self._positions = pace.numbered(self.ids, STEP)
        return self._positions

    def at(self, position: int) -> Memory:
        """The record at ``position``, decoded once (raises msgspec's errors for a corrupt block)."""
        if self._all is not None:
            return self._all[position]
        memory = self._decoded.get(position)
        if memory is None:
            starts = self.starts
            memory = self._decoded[position] = _DECODE_ONE(self._view[starts[position] : starts[position + 1]])
            self.decodes += 1
        return memory

    def all(self, progress: Progress | None = None) -> list[Memory]:
        """Every record, in order (one decode of the whole block, done once; beside a window, a slice
        of :data:`STEP` records at a time, ``progress(done, total, since)`` after each, ``since()`` the
        records decoded so far)."""
        if self._all is None:
            n = self.n
            if pace.foreground() is None or n <= STEP:
                records = _DECODE_ALL(self.block)
            else:
                records, starts, view = [], self.starts, self._view
                seen: dict[Any, Any] = {}
                for lo in range(0, n, STEP):
                    hi = min(lo + STEP, n)
                    part = _DECODE_ALL(_HEADER + (hi - lo).to_bytes(4, "big") + view[starts[lo] : starts[hi]])
                    share_repeats(part, seen)  # a window keeps every record: its repeats once
                    records += part
                    if progress is not None:
                        progress(hi, n, records.copy)
                    pace.checkpoint()
                if self._ids is None:  # the ids read off the records a slice at a time, not decoded in one call
                    ids: list[str] = []
                    for _lo, chunk in pace.slices(records, STEP):
                        ids += map(_RECORD_ID, chunk)
                    self._ids, self._packed_ids = ids, None
                if self.mapped is not None:  # every record is an object now: the mapped file's pages go back
                    fsio.release_pages(self.mapped)
            if len(records) != n:
                raise msgspec.DecodeError("a record block of another length than its ids")
            self._all = records
            self.decodes += n
        return self._all


class LazyRecords(MutableMapping[str, Memory]):
    """``id -> record`` over a :class:`RecordBlock`: a plain dict's behaviour (its order too: the block's
    ids first, then ids added since), each record decoded when first read. Changes are kept beside the
    block. A packed id deleted and set again keeps its place (a dict would move it last)."""

    def __init__(self, packed: RecordBlock) -> None:
        self.packed = packed
        self._changed: dict[str, Memory] = {}  # set since (packed ids among them keep their place)
        self._gone: set[str] = set()  # packed ids deleted since
        self._size = packed.n

    def copy(self) -> LazyRecords:
        """A copy sharing the packed part (and its decoded records)."""
        other = LazyRecords(self.packed)
        other._changed = dict(self._changed)
        other._gone = set(self._gone)
        other._size = self._size
        return other

    def unchanged(self) -> bool:
        """Whether nothing was set or deleted since the block was packed (its ids are the order)."""
        return not (self._changed or self._gone)

    def order(self) -> list[str]:
        """The ids in order (the packed list itself while nothing changed: do not modify it)."""
        return self.packed.ids if not (self._changed or self._gone) else list(self)

    def at(self, place: int, key: str) -> Memory:
        """The record of ``key``, known to be packed at ``place`` unless changed since (no id -> place
        table needed)."""
        memory = self._changed.get(key)
        if memory is not None:
            return memory
        if key in self._gone:
            raise KeyError(key)
        return self.packed.at(place)

    def _packed(self, key: str) -> int | None:
        if key in self._gone:
            return None
        return self.packed.positions().get(key)

    def __getitem__(self, key: str) -> Memory:
        memory = self._changed.get(key)
        if memory is not None:
            return memory
        position = self._packed(key)
        if position is None:
            raise KeyError(key)
        return self.packed.at(position)

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get``."""
        memory = self._changed.get(key)
        if memory is not None:
            return memory
        position = self._packed(key)
        return default if position is None else self.packed.at(position)

    def __contains__(self, key: object) -> bool:
        return key in self._changed or (isinstance(key, str) and self._packed(key) is not None)

    def __setitem__(self, key: str, memory: Memory) -> None:
        if key not in self:
            self._size += 1
        self._changed[key] = memory
        self._gone.discard(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._size -= 1
        self._changed.pop(key, None)
        if key in self.packed.positions():
            self._gone.add(key)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        gone, ids = self._gone, self.packed.ids
        yield from (ids if not gone else (mid for mid in ids if mid not in gone))
        if self._changed:
            positions = self.packed.positions()
            yield from (mid for mid in self._changed if mid not in positions)

    def values(self) -> list[Memory]:  # type: ignore[override]
        """Every record in order (the whole block decoded, once)."""
        records = self.packed.all()
        if not (self._changed or self._gone):
            return list(records)
        changed, gone, positions = self._changed, self._gone, self.packed.positions()
        out = [
            changed.get(mid, memory) for mid, memory in zip(self.packed.ids, records, strict=True) if mid not in gone
        ]
        out += [memory for mid, memory in changed.items() if mid not in positions]
        return out

    def items(self) -> list[tuple[str, Memory]]:  # type: ignore[override]
        """Every ``(id, record)`` in order."""
        return [(memory.id, memory) for memory in self.values()]


K = TypeVar("K")
_BIN_HEADER = {0xC4: 2, 0xC5: 3, 0xC6: 5}  # msgpack bin 8/16/32: how long the header before the bytes is


def bin_view(raw: msgspec.Raw) -> memoryview | None:
    """The bytes of a msgpack ``bin`` (a ``msgspec.Raw`` of one) as a view of the buffer it was decoded
    from, not a copy; None when it is not a ``bin``."""
    view = memoryview(raw)
    skip = _BIN_HEADER.get(view[0]) if len(view) else None
    return None if skip is None else view[skip:]


class PackedRuns(Generic[K]):
    """A sorted ``key -> slots`` (or ``slot -> count``) mapping packed in arrays: the keys sorted (any
    sequence, so a block of terms need not become strings), every key's slots one run of ``slots``
    ending at ``ends`` (and its counts the same run of ``counts``). A run becomes its set (its dict) on
    first look-up. Offers the dict operations the index uses on its postings and day lists."""

    def __init__(
        self, keys: Sequence[K], ends: memoryview, slots: memoryview, counts: memoryview | None = None
    ) -> None:
        # Native int64 ends and int32 slots (counts): views cast over the packed bytes, not copies of them
        # (a million memories' postings are tens of MB); a view's slice is not a copy either, and a set
        # (a dict) is made from it faster than from an array's slice.
        self._keys = keys
        self._ends = ends
        self._slots = slots
        self._counts = counts
        self._looked_up: dict[K, Any] = {}  # keys taken out of the packed runs (and new ones)
        self._gone: set[K] = set()  # packed keys deleted since

    @classmethod
    def of(
        cls,
        keys: Sequence[K],
        ends: bytes | memoryview,
        slots: bytes | memoryview,
        counts: bytes | memoryview | None = None,
    ) -> PackedRuns[K] | None:
        """The runs, or None when the parts disagree (lengths, or keys not strictly ascending)."""
        try:
            end_view, slot_view = memoryview(ends).cast("q"), memoryview(slots).cast("i")
            count_view = memoryview(counts).cast("i") if counts is not None else None
        except TypeError:  # a length that is not a whole number of items
            return None
        if len(end_view) != len(keys) or (end_view[-1] if len(keys) else 0) != len(slot_view):
            return None
        if count_view is not None and len(count_view) != len(slot_view):
            return None
        ordered: Sequence[Any] = keys
        if not isinstance(keys, TermBlock) and not all(map(operator.lt, ordered, itertools.islice(ordered, 1, None))):
            return None  # not sorted, or a key twice (a term block is not read whole: the cache's checksum holds it)
        return cls(keys, end_view, slot_view, count_view)

    def _bounds(self, run: int) -> tuple[int, int]:
        return (self._ends[run - 1] if run else 0), self._ends[run]

    def _unpack(self, run: int) -> Any:
        start, end = self._bounds(run)
        if self._counts is None:
            return set(self._slots[start:end])
        return dict(zip(self._slots[start:end].tolist(), self._counts[start:end].tolist(), strict=True))

    def _packed(self, key: K) -> int | None:
        keys = self._keys
        run: int = bisect.bisect_left(keys, key)  # type: ignore[call-overload]
        if run < len(keys) and keys[run] == key and key not in self._gone:
            return run
        return None

    def __contains__(self, key: object) -> bool:
        if key in self._looked_up:
            return True
        try:
            return self._packed(key) is not None  # type: ignore[arg-type]
        except TypeError:  # a key of another type than the packed ones
            return False

    def __getitem__(self, key: K) -> Any:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: K, default: Any = None) -> Any:
        """``dict.get``: the key's set (dict) of slots, unpacked on first use, else ``default``."""
        found = self._looked_up.get(key)
        if found is None:
            if key in self._gone:
                return default
            try:
                run = self._packed(key)
            except TypeError:
                return default
            if run is None:
                return default
            found = self._looked_up[key] = self._unpack(run)
        return found

    def __setitem__(self, key: K, value: Any) -> None:
        self._looked_up[key] = value

    def __delitem__(self, key: K) -> None:
        if self.get(key) is None:
            raise KeyError(key)
        del self._looked_up[key]
        self._gone.add(key)

    def run(self, key: K) -> tuple[memoryview, memoryview | None] | None:
        """The key's packed run as slices of its views ``(slots, counts)`` (no copies), while the key was neither looked up
        nor changed since the restore (else None: :meth:`get` has it); the run is not made a set."""
        if key in self._looked_up or key in self._gone:
            return None
        try:
            run = self._packed(key)
        except TypeError:
            return None
        if run is None:
            return None
        start, end = self._bounds(run)
        return self._slots[start:end], (None if self._counts is None else self._counts[start:end])

    def size(self, key: K) -> int:
        """``len(self.get(key, ()))``, without making the run a set."""
        packed = self.run(key)
        if packed is None:
            return len(self.get(key, ()))
        return len(packed[0])

    def looked_up(self) -> int:
        """How many keys are held unpacked (looked up, or added since the restore)."""
        return len(self._looked_up)

    def items(self) -> Iterator[tuple[K, Iterable[int]]]:
        """Every ``(key, its slots)`` (``(key, {slot: count})`` with counts), the packed runs unpacked
        only when they carry counts."""
        looked_up = self._looked_up
        yield from looked_up.items()
        for run, key in enumerate(self._keys):
            if key not in looked_up and key not in self._gone:
                if self._counts is None:
                    start, end = self._bounds(run)
                    run_slots = array("i")  # an array, which an array extends at C speed
                    run_slots.frombytes(self._slots[start:end].cast("B"))
                    yield key, run_slots
                else:
                    yield key, self._unpack(run)

    def keys(self) -> Iterator[K]:
        """Every key (unordered)."""
        return (key for key, _ in self.items())

    def values(self) -> Iterator[Any]:
        """Every key's slots (unpacked)."""
        return (self.get(key) for key in self.keys())


class TermBlock(Sequence[str]):
    """Sorted terms packed in one UTF-8 buffer with their ends: a sequence whose items are decoded when
    read, so a bisection looks at a few terms instead of making a string of every one. UTF-8 keeps the
    code point order, so terms sorted as strings are sorted as bytes."""

    def __init__(self, block: bytes | memoryview, ends: memoryview) -> None:
        self._block = block
        self._ends = ends  # native int64, a view cast over the packed bytes

    @classmethod
    def of(cls, block: bytes | memoryview, ends: bytes | memoryview) -> TermBlock | None:
        """The terms, or None when the parts disagree."""
        try:
            offsets = memoryview(ends).cast("q")
        except TypeError:  # a length that is not a whole number of items
            return None
        if (offsets[-1] if offsets else 0) != len(block):
            return None
        return cls(block, offsets)  # not decoded whole to check it: the cache's checksum holds it

    @staticmethod
    def pack(terms: Iterable[str]) -> tuple[bytes, bytes]:
        """``(block, ends)`` of these (sorted) terms."""
        encoded = [term.encode("utf-8") for term in terms]
        return b"".join(encoded), array("q", itertools.accumulate(map(len, encoded))).tobytes()

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, run: Any) -> Any:
        if isinstance(run, slice):
            return [self[i] for i in range(*run.indices(len(self)))]
        if run < 0:
            run += len(self)
        start = self._ends[run - 1] if run else 0
        return str(self._block[start : self._ends[run]], "utf-8")

    def __iter__(self) -> Iterator[str]:
        block = self._block
        start = 0
        for end in self._ends:
            yield str(block[start:end], "utf-8")
            start = end


class SlotIds(MutableSequence[str | None]):
    """slot -> memory id of a restored index, without a list of every id: a slot's id is looked up when
    asked for, by its record's place in the log's packed records (``places``, -1 for a free slot) in
    ``order``, their block. Slots set since and slots appended are kept beside; ``places`` may change
    under it (the index marks a reused slot's place -1) as a slot set since is not read from it."""

    def __init__(self, places: Sequence[int], order: RecordBlock) -> None:
        self._places = places
        self._order = order
        self._base = len(places)
        self._set: dict[int, str | None] = {}  # slots of ``places`` set since
        self._added: list[str | None] = []  # slots after them

    def __len__(self) -> int:
        return self._base + len(self._added)

    def __getitem__(self, slot: Any) -> Any:
        if isinstance(slot, slice):
            return self.tolist()[slot]
        if slot < 0:
            slot += len(self)
        if slot >= self._base:
            return self._added[slot - self._base]
        if slot < 0:
            raise IndexError("slot out of range")
        if slot in self._set:
            return self._set[slot]
        place = self._places[slot]
        return None if place < 0 else self._order.id_at(place)

    def __setitem__(self, slot: Any, mid: Any) -> None:
        if isinstance(slot, slice) or not -len(self) <= slot < len(self):
            raise IndexError("only one slot in range is set at a time")
        if slot < 0:
            slot += len(self)
        if slot >= self._base:
            self._added[slot - self._base] = mid
        else:
            self._set[slot] = mid

    def __delitem__(self, slot: Any) -> None:
        raise TypeError("a slot is freed (set to None), never deleted")

    def insert(self, index: int, mid: str | None) -> None:
        """Only an append: a slot's number never changes."""
        if index != len(self):
            raise TypeError("slots are only appended")
        self._added.append(mid)

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.tolist())

    def reads(self, records: LazyRecords) -> bool:
        """Whether ``records`` are over the block the slots' places are in."""
        return records.packed is self._order

    def placed(self, records: LazyRecords) -> Iterator[tuple[Memory, int]]:
        """The record of every slot that holds one, in slot order, with its place in the block: a slot of
        the block's read by its place (no id -> position table made), one set since or appended by its id
        (place -1)."""
        order, changed = self._order, self._set
        for lo, chunk in pace.slices(self._places, STEP):
            for slot, place in enumerate(chunk, lo):
                if slot in changed:
                    mid = changed[slot]
                    if mid is not None:
                        yield records[mid], -1
                elif place >= 0:
                    yield records.at(place, order.at(place).id), place
        yield from ((records[mid], -1) for mid in self._added if mid is not None)

    def tolist(self) -> list[str | None]:
        """Every slot's id, in one pass of C calls (beside a window, a slice of :data:`STEP` at a time)."""
        with_free: list[str | None] = [*self._order.ids, None]  # place -1, a free slot, picks the None
        ids: list[str | None] = []
        for _lo, chunk in pace.slices(self._places, STEP):
            ids += map(with_free.__getitem__, chunk)
        for slot, mid in self._set.items():
            ids[slot] = mid
        return ids + self._added
