"""The capture events of an iii bank, from every line of its log (the activity strip).

Every line of ``memories.jsonl`` the worker accepts is one revision of one
memory, written at its ``updated_at``. Compared with the revision of the same
id before it, a line is a *create* (the id is new), a *retirement* (a live
memory gets ``invalid_at``: a delete or a supersede), a *reinforcement* (its
corroboration went up) or an *edit* (anything else: text, entities, tags, pin,
a memory brought back). Lines the worker skips (corrupt, or a revision lower
than one already read, spec §1.6) are no events; :func:`read_record` decides
what a line holds, as it does for the replay.

:class:`ActivityIndex` reads the log once, in chunks (never the whole file at
once), and afterwards only what was appended; a log that was replaced,
truncated or rewritten in place is read again from the start. A last line
without its newline is left for the next read (a write may still be extending
it). The state per id is three compact columns; events are kept per kind in
time order (sorted once when a log was written out of order), so a day's counts are two
bisections.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

from keepgui.backends.iii.log import line_blocks
from keepgui.backends.iii.record import read_record
from keepgui.core import childwork, pace
from keepgui.core.source import CAPTURE_KINDS, CREATED, EDITED, REINFORCED, RETIRED, Activity

_CHUNK = 1 << 18  # bytes read at a time: each split of a chunk is one short C call (a window shares the GIL)
_GUARD = 256  # bytes before the read offset and at the start (below), compared on every read to
_HEAD = 4096  # notice a log rewritten in place

NOTE = "every revision in memories.jsonl, at its updated_at"

CHILD_BYTES = 4 << 20
"""A log at least this long is read the first time in a child process (:mod:`keepgui.core.childwork`)
when the process is a window's: its second pass over every line (about a second of Python at 100,000
memories) then never holds the window's interpreter lock."""


def read_columns(path: str) -> dict[str, Any]:
    """Every event of the log at ``path`` as columns (the child's side of :meth:`ActivityIndex.sync`):
    what :meth:`ActivityIndex.adopt` takes."""
    index = ActivityIndex(path)
    index.sync(in_child=False)
    index._sort()
    return index.columns()


def _share_strings(keys: list[str], known: Sequence[str]) -> None:
    """Each slice of ``keys`` equal to the same slice of ``known`` replaced by it (its strings kept, those
    of ``keys`` let go), a slice at a time."""
    for lo in range(0, len(keys), childwork.SLICE):
        hi = lo + childwork.SLICE
        same = known[lo:hi]
        if keys[lo:hi] == same:
            keys[lo:hi] = same
        pace.checkpoint()


class ActivityIndex:
    """The capture events of one log, kept current by :meth:`sync` (call with the bank's lock held)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.note = NOTE
        self._reset()

    def _reset(self) -> None:
        self.keys: list[str] = []
        self._index: dict[str, int] | None = {}  # key -> row (None: made from keys when a read needs it)
        self._revision = array("Q")
        self._corroboration = array("L")
        self._live = bytearray()
        self._times = {kind: array("q") for kind in CAPTURE_KINDS}
        self._rows = {kind: array("l") for kind in CAPTURE_KINDS}
        self._unsorted: set[str] = set()
        self._handed = False  # the event arrays are a snapshot's too: copied before they change
        self._offset = 0
        self._identity: tuple[int, int] | None = None
        self._guard = b""
        self._head = b""

    # ------------------------------------------------------------------ reading

    def sync(self, in_child: bool | None = None, known_ids: Callable[[], Sequence[str] | None] | None = None) -> int:
        """Read what the log gained since the last call (all of it the first time, or when it was
        rewritten); returns the number of new events. A first read of a long log runs in a child
        process when ``in_child`` (default: when the process uses children); should the child fail,
        here, with a note saying why. ``known_ids()``: the bank's ids in order as strings it holds
        already, or None; the child's keys equal to them are let go for them."""
        try:
            st = os.stat(self.path)
        except OSError:
            had = len(self)
            self._reset()
            return -had if had else 0
        identity = (st.st_dev, st.st_ino)
        if identity != self._identity or st.st_size < self._offset:
            self._reset()
            self._identity = identity
        before = len(self)
        if in_child is None:
            in_child = childwork.children_used()
        if in_child and not self._offset and st.st_size >= CHILD_BYTES:
            self._read_in_child(identity, known_ids)
        try:
            with open(self.path, "rb") as fh:
                if self._offset:
                    # Still the bytes read before, at the start and just before the offset? Else the
                    # log was rewritten in place (as the log's own replay checks).
                    head = fh.read(len(self._head))
                    fh.seek(self._offset - len(self._guard))
                    if head != self._head or fh.read(len(self._guard)) != self._guard:
                        self._reset()
                        self._identity = identity
                        fh.seek(0)
                self._read(fh)
        except OSError:
            return 0
        return len(self) - before

    def _read_in_child(self, identity: tuple[int, int], known_ids: Callable[[], Sequence[str] | None] | None) -> None:
        """Read the log in a child process and take its columns (the rest, appended since, is read
        here next); on failure leave the state empty, to be read here, and say why in the note."""
        try:
            columns = childwork.worker("activity", (__name__,)).call(__name__, "read_columns", self.path)
        except (childwork.ChildFailed, RuntimeError) as exc:
            self.note = f"{NOTE} (read in the window's process: {str(exc).splitlines()[0]})"
            return
        if columns.get("identity") == identity:  # else the log was replaced meanwhile: read here
            self.adopt(columns, known_ids() if known_ids is not None else None)

    def columns(self) -> dict[str, Any]:
        """The whole state as columns (lists and bytes), for :meth:`adopt` in another process."""
        return {
            "keys": self.keys,
            "revision": self._revision.tobytes(),
            "corroboration": self._corroboration.tobytes(),
            "live": bytes(self._live),
            "times": {kind: t.tobytes() for kind, t in self._times.items()},
            "rows": {kind: r.tobytes() for kind, r in self._rows.items()},
            "unsorted": sorted(self._unsorted),
            "offset": self._offset,
            "identity": self._identity,
            "guard": self._guard,
            "head": self._head,
        }

    def adopt(self, columns: dict[str, Any], known: Sequence[str] | None = None) -> None:
        """Take the state :meth:`columns` made (in a child process): one copy of each array; the keys equal
        to ``known`` (the bank's ids in order, held already) replaced by those, a slice at a time; the
        key -> row dict made only when lines appended since are read."""
        keys: list[str] = columns["keys"]
        self._reset()
        self.keys = keys
        self._index = None  # made by the first read of lines appended (a million keys: 70 MB)
        if known is not None:
            _share_strings(keys, known)
        self._revision.frombytes(columns["revision"])
        self._corroboration.frombytes(columns["corroboration"])
        self._live = bytearray(columns["live"])
        for kind, data in columns["times"].items():
            self._times[kind].frombytes(data)
        for kind, data in columns["rows"].items():
            self._rows[kind].frombytes(data)
        self._unsorted = set(columns["unsorted"])
        self._offset = columns["offset"]
        self._identity = columns["identity"]
        self._guard = columns["guard"]
        self._head = columns["head"]

    def _read(self, fh: BinaryIO) -> None:
        """Consume complete lines from the current offset to the end of ``fh``."""
        fh.seek(self._offset)
        for data, ended in line_blocks(fh, _CHUNK):
            if not ended:
                break  # an unterminated last line is read when it ends
            end = len(data)
            self._consume(data.split(b"\n")[:-1])
            self._offset += end
            self._guard = (self._guard + data[max(0, end - _GUARD) : end])[-_GUARD:]
            if len(self._head) < _HEAD:
                self._head = (self._head + data[:end])[:_HEAD]

    def _consume(self, lines: list[bytes]) -> None:
        if self._handed:  # a snapshot holds the arrays: it keeps them as they were, these grow on
            self._times = {kind: array("q", t) for kind, t in self._times.items()}
            self._rows = {kind: array("l", r) for kind, r in self._rows.items()}
            self._handed = False
        index = self._index
        if index is None:
            index = self._index = pace.numbered(self.keys, childwork.SLICE)
        revision, corroboration, live = self._revision, self._corroboration, self._live
        times, rows = self._times, self._rows
        for n, line in enumerate(lines):
            if not n & 255:
                pace.checkpoint()  # give way to a busy window between slices of lines
            memory = read_record(line)
            if memory is None:
                continue
            row = index.get(memory.id)
            now_live = memory.invalid_at is None
            if row is None:
                row = index[memory.id] = len(self.keys)
                self.keys.append(memory.id)
                revision.append(memory.revision)
                corroboration.append(memory.corroboration)
                live.append(now_live)
                kind = CREATED
            else:
                if memory.revision < revision[row]:
                    continue  # the worker keeps the higher revision it already read
                if live[row] and not now_live:
                    kind = RETIRED
                elif memory.corroboration > corroboration[row]:
                    kind = REINFORCED
                else:
                    kind = EDITED
                revision[row] = memory.revision
                corroboration[row] = memory.corroboration
                live[row] = now_live
            at = memory.updated_at
            kind_times = times[kind]
            if kind_times and kind_times[-1] > at:
                self._unsorted.add(kind)  # written out of time order (several writers' clocks)
            kind_times.append(at)
            rows[kind].append(row)

    def _sort(self) -> None:
        """Put each kind's events in time order (stable: a nearly sorted log costs one pass)."""
        import numpy as np

        for kind in self._unsorted:
            times, rows = self._times[kind], self._rows[kind]
            # numpy's sort lets the interpreter lock go (sorted() with a key held it throughout: 0.7 s
            # for 250,000 events in no order, a block of the window's GUI thread as long)
            order = np.argsort(np.frombuffer(times, dtype=np.int64), kind="stable")
            self._times[kind] = array("q", np.frombuffer(times, dtype=np.int64)[order].tobytes())
            self._rows[kind] = array("l", np.frombuffer(rows, dtype=f"i{rows.itemsize}")[order].tobytes())
        self._unsorted.clear()

    # ------------------------------------------------------------------ answers

    def __len__(self) -> int:
        return sum(len(t) for t in self._times.values())

    def snapshot(self) -> Activity:
        """The events as they are now (later reads do not change them: the arrays are copied before the
        next read appends to them, not for every snapshot: a million memories' events are 80 MB)."""
        self._sort()
        self._handed = True
        return Activity(self.keys, self._times, self._rows, note=self.note)
