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
:func:`~keepgui.core.iii.record.read_record` is the one place that decides
what one line holds.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate

from keepgui.core.iii.record import (
    MAX_LINE_BYTES,
    Memory,
    RecordError,
    decode_canonical,
    is_valid_utf8,
    parse_line,
    read_record,
)
from keepgui.core.iii.textrules import rust_trim

LOG_NAME = "memories.jsonl"
_GUARD = 4096  # bytes at the start and before the read offset, compared on refresh to notice a rewrite
_EXCERPT = 80
_CHUNK_LINES = 25_000  # progress is reported after each chunk of a long replay

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


def _oversized(line: bytes, lineno: int, offset: int) -> LogProblem:
    """The problem a line over MAX_LINE_BYTES is (raises _Unreadable when it is not UTF-8:
    that the worker notices before anything else)."""
    bad = is_valid_utf8(line)
    if bad is not None:
        raise _Unreadable(f"invalid UTF-8 at line {lineno}; the worker cannot load this bank", lineno, offset + bad)
    head = line[:_EXCERPT].decode("utf-8", errors="ignore")
    return LogProblem(
        "oversized",
        lineno,
        offset,
        f"line of {len(line):,} bytes, far over any record the worker writes (texts of at most "
        f"2,000 bytes): keepgui skips it unread; the worker would still try to parse it",
        _excerpt(head + "…"),
    )


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
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a long replay allocates (it finds no cycles there)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
        self._clear()

    def _clear(self) -> None:
        self.records: dict[str, Memory] = {}
        self.problems: list[LogProblem] = []
        self.unreadable: str | None = None
        self.torn_tail: LogProblem | None = None
        self.lines = 0
        self.offset = 0
        self.loaded = False
        # Every valid line, in file order: hash(id) and offset. Compact enough for
        # 250,000 lines, and enough to find an id's history without a full scan of the file.
        self._line_hashes = array("q")
        self._line_offsets = array("Q")
        self._identity: tuple[int, int] | None = None
        self._guard = b""
        self._head = b""
        self._tail_len = 0
        self._mtime_ns = -1
        # The record of an unterminated last line, and the record of its id it replaced
        # (None: the id was new): taken back before each refresh, as the line may grow.
        self._tail_record: Memory | None = None
        self._tail_shadowed: Memory | None = None

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
                data = fh.read()
        except OSError as exc:
            return self._fail(f"cannot read {LOG_NAME}: {exc.strerror or exc}")
        delta = LogDelta(bytes_read=len(data))
        self._mtime_ns = mtime
        provisional = self._take_back_tail()
        self._consume(data, self.offset, delta, progress)
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
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                data = fh.read()
        except OSError as exc:
            return self._fail(f"cannot read {LOG_NAME}: {exc.strerror or exc}")
        self._identity = (st.st_dev, st.st_ino)
        self._mtime_ns = st.st_mtime_ns
        delta = LogDelta(reset=True, bytes_read=len(data))
        with _gc_paused():
            self._consume(data, 0, delta, progress)
        return delta

    def _consume(self, data: bytes, base: int, delta: LogDelta, progress: Progress | None) -> None:
        """Replay ``data``, which starts at file offset ``base`` (always a line start)."""
        end = data.rfind(b"\n") + 1
        pieces = data[:end].split(b"\n")
        pieces.pop()  # the empty piece after the last "\n"
        # starts[i] is the file offset of line i; computed in C, not line by line.
        starts = list(accumulate(map((1).__add__, map(len, pieces)), initial=base))
        try:
            for first in range(0, len(pieces), _CHUNK_LINES):
                self._replay_chunk(pieces, starts, first, min(first + _CHUNK_LINES, len(pieces)), delta)
                if progress is not None:
                    progress(starts[min(first + _CHUNK_LINES, len(pieces))] - base, len(data))
        except _Unreadable as exc:
            self._fail_into(delta, exc)
            return
        self.lines += len(pieces)
        self.offset = base + end
        if len(self._head) < _GUARD:
            self._head = (self._head + data[:end])[:_GUARD]
        if end >= _GUARD:
            self._guard = data[end - _GUARD : end]
        else:
            self._guard = (self._guard + data[:end])[-_GUARD:]
        tail = data[end:]
        self._tail_len = len(tail)
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
        if len(tail) > MAX_LINE_BYTES:
            return _oversized(tail, lineno, offset)
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

    def _replay_chunk(self, pieces: list[bytes], starts: list[int], lo: int, hi: int, delta: LogDelta) -> None:
        chunk = pieces[lo:hi]
        decoded = list(map(decode_canonical, chunk))
        if None in decoded:
            for i, memory in enumerate(decoded):
                if memory is None:
                    decoded[i] = self._slow_line(chunk[i], self.lines + lo + i + 1, starts[lo + i], delta)
        memories: list[Memory]
        if None in decoded:
            kept = [(starts[i], m) for i, m in enumerate(decoded, lo) if m is not None]
            line_starts = [start for start, _ in kept]
            memories = [m for _, m in kept]
        else:
            line_starts = starts[lo:hi]
            memories = decoded  # type: ignore[assignment]  # no None in it (just checked); no copy on the fast path
        ids = [m.id for m in memories]
        self._line_hashes.extend(map(hash, ids))
        self._line_offsets.extend(line_starts)
        records = self.records
        get = records.get
        if delta.reset:
            for mid, memory in zip(ids, memories, strict=True):
                current = get(mid)
                if current is None or memory.revision >= current.revision:
                    records[mid] = memory
            return
        changed = delta.changed
        seen = set(changed)
        for mid, memory in zip(ids, memories, strict=True):
            current = get(mid)
            if current is None or memory.revision >= current.revision:
                records[mid] = memory
                if current is None:
                    delta.added.append(mid)
                if mid not in seen:
                    seen.add(mid)
                    changed.append(mid)

    def _slow_line(self, line: bytes, lineno: int, start: int, delta: LogDelta) -> Memory | None:
        """A line the fast path refused: blank, valid but not canonical, or corrupt.

        Returns the record, or None after recording why the line is skipped.
        Raises _Unreadable for invalid UTF-8, which makes the whole bank unloadable.
        """
        if len(line) > MAX_LINE_BYTES:
            problem = _oversized(line, lineno, start)
            self.problems.append(problem)
            delta.new_problems.append(problem)
            return None
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
        return len(self._line_offsets) + (self.torn_tail is not None and self.torn_tail.kind == "unterminated")

    def _offsets_of(self, memory_id: str) -> list[int]:
        """File offsets of the valid lines that may hold ``memory_id`` (equal id hashes), in file order."""
        target = hash(memory_id)
        offsets = [off for h, off in zip(self._line_hashes, self._line_offsets, strict=True) if h == target]
        if self.torn_tail is not None and self.torn_tail.kind == "unterminated":
            offsets.append(self.offset)  # the unterminated last line is read back and checked like the others
        return offsets

    def _line_starts(self) -> list[int]:
        """File offsets of every valid line, the unterminated last one included."""
        starts = list(self._line_offsets)
        if self.torn_tail is not None and self.torn_tail.kind == "unterminated":
            starts.append(self.offset)
        return starts

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
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except OSError:
            return
        for lineno, line in enumerate(data.split(b"\n"), 1):
            memory = read_record(line)  # the last piece is the unterminated last line (or b"")
            if memory is not None:
                yield lineno, memory

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
        """The stored line of the current record, exactly as it is on disk (for ``--json``)."""
        if memory_id not in self.records:
            return None
        for _, raw in reversed(self._lines_at(self._offsets_of(memory_id))):
            found = self._current_line(raw)
            if found is not None and found[0] == memory_id:
                return found[1]
        return None

    def raw_lines(self) -> dict[str, str]:
        """:meth:`raw_line` of every current record at once, in one read of the file: id -> line.

        Per id, the last valid line whose record equals the current one; an id
        with no such line (the file changed since the last refresh) is absent.
        """
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except OSError:
            return {}
        out: dict[str, str] = {}
        find = data.find
        for off in self._line_starts():
            end = find(b"\n", off)
            found = self._current_line(data[off:] if end < 0 else data[off:end])
            if found is not None:
                out[found[0]] = found[1]
        return out
