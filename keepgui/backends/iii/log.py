"""Replaying ``memories.jsonl`` as the worker does, and following it as it grows (spec §1.6).

:class:`MemoryLog` holds the replayed state of one log: the winning revision of
every id, where every valid line is (for the history view), and the problems
met on the way (corrupt lines with their 1-based line number, a torn tail).
:meth:`MemoryLog.refresh` reads only what was appended since the last read; a
file that was replaced, truncated or rewritten is replayed whole.

Replay rules (spec §1.6, §1.6a), as the worker's ``BufRead::lines`` + serde
read them: blank lines are skipped; a line the worker could not parse is
skipped and reported; per id, a line replaces the stored record when its
revision is ``>=`` the stored one. Invalid UTF-8 anywhere, in the last line
too, makes the bank *unreadable* (the worker skips such a bank), which keepgui
shows with the reason and never writes to. A last line without its ``\\n`` is
a line like any other (the worker reads it), and is also noted ("a write may
be in progress"); since its writer may still extend it, its record is kept
*provisionally* and re-read on every refresh until its newline arrives.
:func:`~keepgui.backends.iii.record.read_record` is the one place that decides
what one line holds.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import hashlib
import itertools
import operator
import os
import stat
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import msgspec

from keepgui.backends.iii.record import (
    Memory,
    RecordError,
    canonical_block,
    canonical_line_prefix,
    decode_canonical,
    parse_line,
    read_record,
)
from keepgui.backends.iii.textrules import rust_trim
from keepgui.core import pace

LOG_NAME = "memories.jsonl"
_GUARD = 4096  # bytes at the start and before the read offset, compared on refresh to notice a rewrite
_EXCERPT = 80
BLOCK_BYTES = 1 << 15
"""A log is read and replayed in blocks of about this many bytes (complete lines): the whole file is
never in memory at once, and each step that runs in C without releasing the GIL (decoding a block,
re-encoding it to prove it canonical) takes a few milliseconds, so a window's thread is never held
up for longer than that while a bank loads in the background. Progress is reported after each block."""

Progress = Callable[[int, int], None]
"""``progress(bytes_done, bytes_total)``; it may raise to abandon a long load."""


@dataclass(frozen=True)
class LogProblem:
    """Something wrong in a log, located for a person.

    ``kind`` is ``"corrupt"`` (a complete line the worker skips), ``"torn-tail"``
    (an unterminated last line) or ``"unreadable"`` (the bank cannot be loaded).
    """

    kind: str
    line: int
    offset: int
    reason: str
    excerpt: str = ""

    def describe(self, path: str = "") -> str:
        """One line: where, what, and the start of the offending text."""
        where = f"{path}:{self.line}" if path else f"line {self.line}"
        text = f"{where}: {self.reason}"
        if self.excerpt:
            text += f" — {self.excerpt!r}"
        return text


@dataclass
class LogDelta:
    """What one :meth:`MemoryLog.refresh` changed.

    ``reset`` means the state was rebuilt from scratch (first load, or the file
    was replaced); otherwise ``changed`` lists, in log order and without
    repeats, the ids whose current record changed, and ``added`` those among
    them that were not known before.
    """

    reset: bool = False
    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    new_problems: list[LogProblem] = field(default_factory=list)
    bytes_read: int = 0

    @property
    def empty(self) -> bool:
        """True when nothing at all changed."""
        return not (self.reset or self.changed or self.new_problems)


def _excerpt(text: str) -> str:
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def _tail_note(text: str, parsed: bool, lineno: int, offset: int) -> LogProblem:
    """What is said about an unterminated last line (``text``): a note when it holds a record."""
    size = len(text.encode("utf-8"))
    if parsed:
        return LogProblem(
            "unterminated",
            lineno,
            offset,
            f"last line has no newline ({size} bytes): a write may be in progress; the worker "
            "reads it as a record, and so does keepgui",
            _excerpt(text.strip()),
        )
    return LogProblem(
        "torn-tail",
        lineno,
        offset,
        f"unterminated last line ({size} bytes, no newline) does not parse: a write was cut "
        "short or is still in progress; the worker skips it",
        _excerpt(text.strip()),
    )


def line_blocks(fh: BinaryIO, size: int) -> Iterator[tuple[bytes, bool]]:
    """``fh`` from where it stands as blocks of whole lines, each ending in ``\\n`` (``True``), and last
    what follows the last newline (``False``; ``b""`` when nothing does). Read ``size`` bytes at a time;
    a line longer than that is gathered in pieces and joined once, never copied again per read (a
    50 MB line costs its reading)."""
    pending: list[bytes] = []
    while True:
        chunk = fh.read(size)
        if not chunk:
            break
        end = chunk.rfind(b"\n") + 1
        if not end:
            pending.append(chunk)
            continue
        if pending:
            pending.append(chunk[:end])
            yield b"".join(pending), True
            pending.clear()
        else:
            yield chunk if end == len(chunk) else chunk[:end], True
        if end < len(chunk):
            pending.append(chunk[end:])
    yield b"".join(pending), False


def _is_dev_null(st: os.stat_result) -> bool:
    """True for the stat of ``/dev/null`` (a log linked there reads as empty, as for the worker)."""
    if not stat.S_ISCHR(st.st_mode):
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(null.st_mode) and st.st_rdev == null.st_rdev


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a long replay allocates (it finds no cycles there), and make what it
    allocated old at the end (:func:`keepgui.core.pace.age_young_objects`): no young collection walks it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        pace.age_young_objects()
        if was_enabled:
            gc.enable()


_ID = operator.attrgetter("id")
_REVISION = operator.attrgetter("revision")
_SHARED_FIELDS = tuple((operator.attrgetter(name), name) for name in ("entities", "tags"))
_SHARED_MAX = 1 << 16  # distinct label tuples shared per log; past that, records keep their own
_force_setattr = msgspec.structs.force_setattr


def newest_first(memory: Memory) -> tuple[int, str]:
    """``memory::list``'s order as one key: ``updated_at`` descending, then ``id`` ascending."""
    return (-memory.updated_at, memory.id)


def prefix_hasher() -> Any:
    """A fresh hash of a log's replayed prefix: SHA-1 in C (the fastest of hashlib's here, ~1.5 GB/s),
    used to notice a changed file, not for security."""
    return hashlib.sha1(usedforsecurity=False)


class LogState(msgspec.Struct, array_like=True, gc=False):
    """What :meth:`MemoryLog.snapshot` keeps of a replayed log: enough to go on from its offset.

    ``records`` are in the log's dict order (first appearance), ``problems`` as
    ``(kind, line, offset, reason, excerpt)``; the arrays are their raw bytes.
    ``digest`` hashes the bytes ``[0, offset)`` the state was replayed from. A line's id is kept
    as its ``hash()``, which differs between processes (string hashing is salted per process):
    ``record_hashes`` holds the hash of each record's id as the snapshot's process computed it,
    so a restoring process translates the lines' hashes into its own.
    """

    path: bytes  # os.fsencode: a folder name that is not UTF-8 is kept as it is
    dev: int
    ino: int
    mtime_ns: int
    offset: int
    lines: int
    digest: bytes
    records: list[Memory]
    problems: list[tuple[str, int, int, str, str]]
    line_hashes: bytes
    record_hashes: bytes
    block_first: bytes
    block_start: bytes
    odd_lines: dict[int, str]
    odd_current: dict[str, int]
    head: bytes
    guard: bytes


class _Unreadable(Exception):
    def __init__(self, reason: str, lineno: int, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lineno = lineno
        self.offset = offset


class MemoryLog:
    """The replayed state of one ``memories.jsonl``, kept current by :meth:`refresh`.

    Attributes:
        path: the log file.
        records: id -> the winning (current) record, live or retired.
        problems: corrupt lines and a torn tail, in file order; or why it is unreadable.
        unreadable: ``None``, or why the bank cannot be loaded.
        torn_tail: the note (``unterminated``, it holds a record) or problem (``torn-tail``,
            it does not parse) about a last line without its newline, if there is one.
        lines: complete lines read so far (the next line's number is ``lines + 1``).
        offset: bytes consumed (always just after a ``\\n``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        # Whether a replay keeps the digest of what it read (a cache attached: LogCache sets it before
        # the first refresh); a window, which caches nothing, does not pay for hashing every byte.
        self.keep_digest = False
        self._clear()

    def _clear(self) -> None:
        # id -> current record; a plain dict, or a cache's records decoded on demand (LazyRecords)
        self.records: MutableMapping[str, Memory] = {}
        self.problems: list[LogProblem] = []
        self.unreadable: str | None = None
        self.torn_tail: LogProblem | None = None
        self.lines = 0
        self.offset = 0
        self.loaded = False
        # hash(id) of every valid line, in file order, and where each block of the replay begins
        # (its first entry in _line_hashes, its file offset): an id's lines are found in the blocks
        # that hold its hash, without an offset kept per line.
        self._line_hashes = array("q")
        self._block_first = array("Q")
        self._block_start = array("Q")
        # Valid lines that are not canonical (the worker writes none): offset -> id, and the ids
        # whose current record comes from one (offset). A canonical line of an id is found by
        # its prefix, and its text is its record's own encoding.
        self._odd_lines: dict[int, str] = {}
        self._odd_current: dict[str, int] = {}
        self._shared: dict[Any, Any] = {}  # equal label tuples and sources, one object each (interned)
        self._identity: tuple[int, int] | None = None
        self._guard = b""
        self._head = b""
        self._tail_len = 0
        self._tail_raw = b""
        self._mtime_ns = -1
        # The log's (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns) and the wall clock (ns) read just
        # before it, at the start of the full replay that produced this state: every byte of it was read
        # after that stat. None for a state restored or refreshed since (see replay_stat).
        self._seen: tuple[int, int, int, int, int, int] | None = None
        # The record of an unterminated last line, and the record of its id it replaced
        # (None: the id was new): taken back before each refresh, as the line may grow.
        self._tail_record: Memory | None = None
        self._tail_shadowed: Memory | None = None
        # of the bytes [0, offset): what a cached state is checked against (None: no cache wants it)
        self._prefix_hash: Any = prefix_hasher() if self.keep_digest else None
        self._foreign: tuple[int, memoryview] | None = None  # lines whose hashes came from a cache's process

    # ------------------------------------------------------------------ reading

    def refresh(self, progress: Progress | None = None) -> LogDelta:
        """Bring the state up to date with the file; costs only the appended bytes when it grew."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            unchanged = self.loaded and not (self.records or self.problems or self.offset)
            self._clear()
            self.loaded = True
            return LogDelta() if unchanged else LogDelta(reset=True)
        except OSError as exc:
            return self._fail(f"cannot read {LOG_NAME}: {exc.strerror or exc}")
        if not stat.S_ISREG(st.st_mode):
            if _is_dev_null(st):  # the worker reads nothing from it: an empty bank
                unchanged = self.loaded and not (self.records or self.problems or self.offset)
                self._clear()
                self.loaded = True
                return LogDelta() if unchanged else LogDelta(reset=True)
            return self._fail(f"{LOG_NAME} is not a regular file")
        identity = (st.st_dev, st.st_ino)
        if not self.loaded or self.unreadable or identity != self._identity or st.st_size < self.offset:
            return self._full(progress)
        if st.st_size == self.offset + self._tail_len and st.st_mtime_ns == self._mtime_ns:
            return LogDelta()  # untouched since the last read
        try:
            with open(self.path, "rb") as fh:
                mtime = os.fstat(fh.fileno()).st_mtime_ns
                if self.offset:
                    # The same file, grown or not, must still start and end (up to our
                    # offset) with the bytes we read; otherwise it was rewritten in place.
                    if fh.read(len(self._head)) != self._head:
                        return self._full(progress)
                    start = max(0, self.offset - len(self._guard))
                    fh.seek(start)
                    if fh.read(self.offset - start) != self._guard:
                        return self._full(progress)
                delta = LogDelta()
                self._mtime_ns = mtime
                self._seen = None  # the state now holds bytes read before this refresh's stat
                provisional = self._take_back_tail()
                self._stream(fh, delta, progress, st.st_size - self.offset)
        except OSError as exc:
            return self._fail(f"cannot read {LOG_NAME}: {exc.strerror or exc}")
        if provisional is not None and not delta.reset:
            now = self.records.get(provisional.id)
            if now is None:
                return self._full(progress)  # the record vanished: views must drop it; read it all again
            if now != provisional and provisional.id not in delta.changed:
                delta.changed.append(provisional.id)
            if provisional.id in delta.added:
                delta.added.remove(provisional.id)  # it was shown already, provisionally
        return delta

    def _take_back_tail(self) -> Memory | None:
        """Undo the provisional record of the last unterminated line; returns it (or None)."""
        record, self._tail_record = self._tail_record, None
        if record is None:
            return None
        if self.records.get(record.id) is record:
            if self._tail_shadowed is None:
                del self.records[record.id]
            else:
                self.records[record.id] = self._tail_shadowed
        self._tail_shadowed = None
        return record

    def refuse(self, reason: str) -> LogDelta:
        """Read as unloadable for a reason outside the file (its bank folder is a link)."""
        if self.loaded and self.unreadable == reason:
            return LogDelta()
        return self._fail(reason)

    def _fail(self, reason: str, lineno: int = 0, offset: int = 0) -> LogDelta:
        self._clear()
        self.loaded = True
        self.unreadable = reason
        problem = LogProblem("unreadable", lineno, offset, reason)
        self.problems.append(problem)
        return LogDelta(reset=True, new_problems=[problem])

    def _full(self, progress: Progress | None) -> LogDelta:
        self._clear()
        self.loaded = True
        delta = LogDelta(reset=True)
        try:
            with open(self.path, "rb") as fh:
                seen_ns = time.time_ns()  # before the stat: a change after it is stamped no earlier
                st = os.fstat(fh.fileno())
                self._identity = (st.st_dev, st.st_ino)
                self._mtime_ns = st.st_mtime_ns
                self._seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, seen_ns)
                with gc_paused():
                    self._stream(fh, delta, progress, st.st_size)
        except OSError as exc:
            return self._fail(f"cannot read {LOG_NAME}: {exc.strerror or exc}")
        return delta

    def _stream(self, fh: BinaryIO, delta: LogDelta, progress: Progress | None, total: int) -> None:
        """Replay what ``fh`` holds from :attr:`offset` on, block by block (never all of it at once)."""
        base = self.offset
        parts: list[bytes] = []  # a line longer than a block, gathered until its newline comes
        carry = b""
        while True:
            block = fh.read(BLOCK_BYTES)
            if not block:
                break
            delta.bytes_read += len(block)
            if block.rfind(b"\n") < 0:
                parts.append(block)
                continue
            data = b"".join([carry, *parts, block]) if (carry or parts) else block
            parts = []
            end = data.rfind(b"\n") + 1
            try:
                self._replay_block(data if end == len(data) else data[:end], base, delta)
            except _Unreadable as exc:
                self._fail_into(delta, exc)
                return
            self._advance(data, end)
            base += end
            carry = data[end:]
            if progress is not None:
                progress(delta.bytes_read, total)
            pace.checkpoint()
        tail = b"".join([carry, *parts]) if parts else carry
        self._tail_len = len(tail)
        self._tail_raw = tail
        old_tail = self.torn_tail
        try:
            self.torn_tail = self._read_tail(tail, delta)
        except _Unreadable as exc:
            self._fail_into(delta, exc)
            return
        if old_tail is not None and old_tail in self.problems:
            self.problems.remove(old_tail)
        if self.torn_tail is not None:
            self.problems.append(self.torn_tail)
            if old_tail is None or (old_tail.kind, old_tail.excerpt) != (self.torn_tail.kind, self.torn_tail.excerpt):
                delta.new_problems.append(self.torn_tail)

    def _advance(self, data: bytes, end: int) -> None:
        """Count the complete lines ``data[:end]`` replayed; keep the head and the guard before the offset."""
        self.lines += data.count(b"\n", 0, end)
        self.offset += end
        if self._prefix_hash is not None:
            self._prefix_hash.update(memoryview(data)[:end])
        if len(self._head) < _GUARD:
            self._head = (self._head + data[: min(end, _GUARD)])[:_GUARD]
        if end >= _GUARD:
            self._guard = data[end - _GUARD : end]
        else:
            self._guard = (self._guard + data[:end])[-_GUARD:]

    def _fail_into(self, delta: LogDelta, exc: _Unreadable) -> None:
        """Make the state unreadable and ``delta`` say so (a reset carrying the one problem)."""
        bad = self._fail(exc.reason, exc.lineno, exc.offset)
        delta.reset = True
        delta.changed.clear()
        delta.added.clear()
        delta.new_problems = bad.new_problems

    def _read_tail(self, tail: bytes, delta: LogDelta) -> LogProblem | None:
        """Read the unterminated last line as the worker does; returns the note about it (or None).

        Its record, if it holds one, takes part in the replay like any line,
        but is remembered so the next refresh can take it back first.
        Raises _Unreadable for invalid UTF-8.
        """
        lineno, offset = self.lines + 1, self.offset
        try:
            text = tail.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unreadable(
                f"invalid UTF-8 at line {lineno} (the last line, which has no newline); the "
                "worker cannot load this bank",
                lineno,
                offset + exc.start,
            ) from None
        if not rust_trim(text):
            return None
        memory = read_record(tail)
        if memory is None:
            return _tail_note(text, False, lineno, offset)
        current = self.records.get(memory.id)
        if current is None or memory.revision >= current.revision:
            self._tail_record, self._tail_shadowed = memory, current
            self.records[memory.id] = memory
            if not delta.reset and current != memory:
                if current is None:
                    delta.added.append(memory.id)
                if memory.id not in delta.changed:
                    delta.changed.append(memory.id)
        return _tail_note(text, True, lineno, offset)

    def _replay_block(self, block: bytes, base: int, delta: LogDelta) -> None:
        """Replay complete lines (``block`` ends in ``\\n``) that start at file offset ``base``."""
        memories = canonical_block(block)
        odd: dict[int, int] = {}  # index in memories -> file offset, for valid lines that are not canonical
        if memories is None:
            memories = self._replay_lines(block, base, delta, odd)
        self._block_first.append(len(self._line_hashes))
        self._block_start.append(base)
        ids = list(map(_ID, memories))
        self._line_hashes.extend(map(hash, ids))
        records = self.records
        if delta.reset and not odd and not self._odd_current and self._replay_in_c(ids, memories):
            return
        get = records.get
        odd_current = self._odd_current
        track = not delta.reset
        changed = delta.changed
        seen: set[str] = set(changed) if track else set()
        placed = []
        for i, memory in enumerate(memories):
            mid = memory.id
            current = get(mid)
            if current is not None and memory.revision < current.revision:
                continue
            records[mid] = memory
            placed.append(memory)
            if i in odd:
                odd_current[mid] = odd[i]
            elif odd_current:
                odd_current.pop(mid, None)
            if track:
                if current is None:
                    delta.added.append(mid)
                if mid not in seen:
                    seen.add(mid)
                    changed.append(mid)
        self._share(placed)

    def _replay_in_c(self, ids: list[str], memories: list[Memory]) -> bool:
        """Replay a block with C-level passes only (no Python step per line); False when it cannot be.

        Within the block the last line of an id wins when no earlier line of it has a higher
        revision (true unless revisions go backwards, when the caller replays line by line);
        it replaces the record replayed before the block when its revision is not lower.
        """
        last = dict(zip(ids, memories, strict=True))
        if len(last) != len(ids):
            revisions = dict(zip(ids, map(_REVISION, memories), strict=True))
            if not all(map(operator.le, map(_REVISION, memories), map(revisions.__getitem__, ids))):
                return False
        records = self.records
        currents = list(map(records.get, last))
        if currents.count(None) != len(currents):
            winners = last.values()
            keep = list(map(operator.ge, map(_REVISION, winners), [-1 if c is None else c.revision for c in currents]))
            last = dict(itertools.compress(last.items(), keep))
        self._share(list(last.values()))
        records.update(last)
        return True

    def _share(self, memories: list[Memory]) -> None:
        """Make equal label tuples (entities, tags) of these records one object each, in C: a million
        records hold few distinct ones, and each copy costs memory. (Sources are mostly distinct.)"""
        shared = self._shared
        if len(shared) >= _SHARED_MAX:
            return
        share = shared.setdefault
        for getter, name in _SHARED_FIELDS:
            values = list(map(getter, memories))
            list(map(_force_setattr, memories, itertools.repeat(name), map(share, values, values)))

    def _replay_lines(self, block: bytes, base: int, delta: LogDelta, odd: dict[int, int]) -> list[Memory]:
        """The valid records of ``block``, line by line (a block with a line that is not canonical).

        Problems are recorded; ``odd`` gets, for each valid line that is not canonical, its index
        in the returned list and its file offset.
        """
        memories: list[Memory] = []
        start = base
        lineno = self.lines
        for line in block.split(b"\n")[:-1]:
            lineno += 1
            memory = decode_canonical(line)
            if memory is None:
                memory = self._slow_line(line, lineno, start, delta)
                if memory is not None:
                    odd[len(memories)] = start
                    self._odd_lines[start] = memory.id
            if memory is not None:
                memories.append(memory)
            start += len(line) + 1
        return memories

    def _slow_line(self, line: bytes, lineno: int, start: int, delta: LogDelta) -> Memory | None:
        """A line the fast path refused: blank, valid but not canonical, or corrupt.

        Returns the record, or None after recording why the line is skipped.
        Raises _Unreadable for invalid UTF-8, which makes the whole bank unloadable.
        """
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unreadable(
                f"invalid UTF-8 at line {lineno}; the worker cannot load this bank", lineno, start + exc.start
            ) from None
        if not rust_trim(text):
            return None  # blank lines are skipped, as the worker does
        try:
            return parse_line(line)
        except RecordError as exc:
            problem = LogProblem("corrupt", lineno, start, str(exc), _excerpt(text.strip()))
            self.problems.append(problem)
            delta.new_problems.append(problem)
            return None

    # ------------------------------------------------------------------ a cached state

    def resume_point(self) -> tuple[int, bytes] | None:
        """``(offset, digest of the bytes before it)`` of the state a :meth:`snapshot` would hold, or None
        when it cannot be resumed from (not loaded, unreadable, or a last line without its newline,
        whose record is provisional)."""
        if not self.loaded or self.unreadable or self._identity is None or self._tail_len or self.torn_tail:
            return None
        if self._prefix_hash is None:  # read without a cache attached
            return None
        return self.offset, self._prefix_hash.digest()

    def replay_stat(self) -> tuple[int, int, int, int, int, int] | None:
        """``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns, seen_ns)`` of the log as it was just
        before the full replay that produced the current state read its first byte (``seen_ns``: the
        wall clock, in ns, read before that stat), or None when the state was restored from a cache or
        refreshed since (some of its bytes were read before any stat the log kept)."""
        return self._seen

    def snapshot(self) -> LogState | None:
        """The state to cache (see :meth:`resume_point`), or None."""
        if self.resume_point() is None or self._identity is None:
            return None
        return LogState(
            path=os.fsencode(self.path),
            dev=self._identity[0],
            ino=self._identity[1],
            mtime_ns=self._mtime_ns,
            offset=self.offset,
            lines=self.lines,
            digest=self._prefix_hash.digest(),
            records=list(self.records.values()),
            problems=[(p.kind, p.line, p.offset, p.reason, p.excerpt) for p in self.problems],
            line_hashes=self._own_line_hashes().tobytes(),
            record_hashes=array("q", map(hash, self.records)).tobytes(),
            block_first=self._block_first.tobytes(),
            block_start=self._block_start.tobytes(),
            odd_lines=self._odd_lines,
            odd_current=self._odd_current,
            head=self._head,
            guard=self._guard,
        )

    def restore(self, state: LogState, prefix_hash: Any, records: MutableMapping[str, Memory] | None = None) -> bool:
        """Take ``state`` as if it had been replayed here; ``prefix_hash`` has hashed the file's bytes
        ``[0, state.offset)`` (the caller checked them against ``state.digest``). The next
        :meth:`refresh` replays only what was appended since, or everything if the file changed.
        ``records``: the state's records when they are not in ``state.records`` (a cache's
        :class:`~keepgui.backends.iii.lazy.LazyRecords`, decoded on demand).

        Returns False, leaving the log unloaded, when the state does not hang together (its arrays
        disagree, or two ids shared a hash in the snapshot's process)."""
        self._clear()
        if records is None:
            records = dict(zip(map(_ID, state.records), state.records, strict=True))
        try:
            old_hashes = memoryview(state.record_hashes).cast("q")  # read once, if ever: not copied
            self._line_hashes.frombytes(state.line_hashes)
            self._block_first.frombytes(state.block_first)
            self._block_start.frombytes(state.block_start)
        except (ValueError, TypeError):  # a length that is not a whole number of items
            self._clear()
            return False
        if len(old_hashes) != len(records) or len(self._block_first) != len(self._block_start):
            self._clear()
            return False
        # The lines' hashes are translated into this process's on first use (a history lookup):
        # most commands never need them.
        self._foreign = (len(self._line_hashes), old_hashes)
        self.loaded = True
        self.records = records
        self.problems = [LogProblem(*p) for p in state.problems]
        self.lines = state.lines
        self.offset = state.offset
        self._odd_lines = dict(state.odd_lines)
        self._odd_current = dict(state.odd_current)
        self._identity = (state.dev, state.ino)
        self._mtime_ns = state.mtime_ns
        self._head = state.head
        self._guard = state.guard
        self._prefix_hash = prefix_hash
        return True

    # ------------------------------------------------------------------ queries

    @property
    def tail_record(self) -> Memory | None:
        """The record the unterminated last line currently contributes (provisional), or None."""
        return self._tail_record

    def get(self, memory_id: str) -> Memory | None:
        """The current record for an id, live or retired."""
        return self.records.get(memory_id)

    def live(self) -> list[Memory]:
        """Every live record (unordered)."""
        return [m for m in self.records.values() if m.invalid_at is None]

    @property
    def valid_lines(self) -> int:
        """How many lines hold a valid record (every revision of every id, the last line included)."""
        return len(self._line_hashes) + (self.torn_tail is not None and self.torn_tail.kind == "unterminated")

    def _own_line_hashes(self) -> array[int]:
        """The lines' id hashes, those restored from a cache translated into this process's first.

        Falls back to a full replay on the next refresh when they cannot be (two ids shared a hash
        in the process that cached them); until then, history lookups go without those lines.
        """
        if self._foreign is not None:
            count, old_hashes = self._foreign
            self._foreign = None
            # The cached records come first in the dict (appended ids follow), in the cache's order.
            ours = dict(zip(old_hashes, map(hash, itertools.islice(self.records, len(old_hashes))), strict=True))
            translated = None
            if len(ours) == len(old_hashes):
                with contextlib.suppress(KeyError):
                    translated = array("q", map(ours.__getitem__, self._line_hashes[:count]))
            if translated is None:
                self._identity = None  # distrust this state: the next refresh replays it all
                translated = array("q", bytes(8 * count))
            self._line_hashes[:count] = translated
        return self._line_hashes

    def _offsets_of(self, memory_id: str) -> list[int]:
        """File offsets of the valid lines that may hold ``memory_id``, in file order.

        The blocks holding a line with its id's hash are searched for the prefix of its canonical
        lines; the lines that are not canonical were noted when they were read.
        """
        target = hash(memory_id)
        hashes = self._own_line_hashes()
        blocks: set[int] = set()
        at = -1
        while True:
            try:
                at = hashes.index(target, at + 1)
            except ValueError:
                break
            blocks.add(bisect.bisect_right(self._block_first, at) - 1)
        offsets = {off for off, mid in self._odd_lines.items() if mid == memory_id}
        prefix = canonical_line_prefix(memory_id)
        if blocks:
            # the log went away or cannot be read now: the lines found so far are what can be
            # shown (a history is a view; the next refresh reports the log as unreadable)
            with contextlib.suppress(OSError), open(self.path, "rb") as fh:
                for block in sorted(blocks):
                    start = self._block_start[block]
                    end = self._block_start[block + 1] if block + 1 < len(self._block_start) else self.offset
                    fh.seek(start)
                    data = fh.read(end - start)
                    found = data.find(prefix)
                    while found >= 0:
                        if found == 0 or data[found - 1] == 10:  # at the start of a line
                            offsets.add(start + found)
                        found = data.find(prefix, found + 1)
        if self.torn_tail is not None and self.torn_tail.kind == "unterminated":
            offsets.add(self.offset)  # the unterminated last line is read back and checked like the others
        return sorted(offsets)

    def _lines_at(self, offsets: list[int]) -> list[tuple[int, bytes]]:
        """``(offset, line without its newline)`` read back from the file at each offset."""
        out: list[tuple[int, bytes]] = []
        if not offsets:
            return out
        try:
            with open(self.path, "rb") as fh:
                for off in offsets:
                    fh.seek(off)
                    out.append((off, fh.readline().rstrip(b"\n")))
        except OSError:
            return out
        return out

    def revision_lines(self, memory_id: str) -> list[tuple[int, str]]:
        """``(file offset, raw line)`` of every valid line of an id, in file order."""
        out: list[tuple[int, str]] = []
        for off, raw in self._lines_at(self._offsets_of(memory_id)):
            try:
                if parse_line(raw).id == memory_id:
                    out.append((off, raw.decode("utf-8")))
            except (RecordError, UnicodeDecodeError):
                continue  # the file changed under us; the next refresh replays it
        return out

    def scan(self) -> Iterator[tuple[int, Memory]]:
        """Every valid complete line of the file as it is now: ``(line number, record)``."""
        lineno = 0
        try:
            with open(self.path, "rb") as fh:
                for block, ended in line_blocks(fh, BLOCK_BYTES):
                    lines = block.split(b"\n")
                    if ended:
                        lines.pop()
                    for line in lines:  # the unterminated last line (or b"") too
                        lineno += 1
                        memory = read_record(line)
                        if memory is not None:
                            yield lineno, memory
        except OSError:
            return

    def history(self, memory_id: str) -> list[Memory]:
        """Every valid revision of an id in file order, read back from disk."""
        return [parse_line(raw) for _, raw in self.revision_lines(memory_id)]

    def _current_line(self, raw: bytes) -> tuple[str, str] | None:
        """``(id, text)`` when the line ``raw`` holds exactly the current record of its id, else None.

        The text is the line as stored, without a trailing ``\\r`` (what ``--json`` prints).
        """
        memory = read_record(raw)
        if memory is None or self.records.get(memory.id) != memory:
            return None
        try:
            return memory.id, raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            return None

    def raw_line(self, memory_id: str) -> str | None:
        """The stored line of the current record, exactly as it is on disk (for ``--json``).

        A canonical line is its record's own encoding; the others are read back from the file.
        """
        record = self.records.get(memory_id)
        if record is None:
            return None
        if record is self._tail_record:
            found = self._current_line(self._tail_raw)
            return found[1] if found is not None and found[0] == memory_id else None
        offset = self._odd_current.get(memory_id)
        if offset is None:
            return record.to_json()
        for _, raw in self._lines_at([offset]):
            found = self._current_line(raw)
            if found is not None and found[0] == memory_id:
                return found[1]
        return None

    def json_lines(self, rows: Iterable[Memory]) -> str:
        """``rows`` as ``memories --json`` prints them: each its stored line (:meth:`raw_line`), else its
        encoding, each followed by a newline."""
        raw_line = self.raw_line
        return "".join([(raw_line(m.id) or m.to_json()) + "\n" for m in rows])

    def raw_lines(self) -> dict[str, str]:
        """:meth:`raw_line` of every current record at once: id -> line.

        Per id, the last valid line whose record equals the current one; an id
        with no such line (the file changed since the last refresh) is absent.
        """
        out: dict[str, str] = {}
        for memory_id in self.records:
            line = self.raw_line(memory_id)
            if line is not None:
                out[memory_id] = line
        return out
