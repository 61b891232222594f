"""A bank's first load in a window: replayed and indexed in a child process, restored here from the cache.

Replaying a big ``memories.jsonl`` and indexing it for the preview are seconds of Python at 100,000
memories, and in a window's process every one of those seconds is a thread competing with the GUI
thread for the interpreter lock (:mod:`keepgui.core.pace`). The command line already keeps what a
replay and an index come to in a verified cache (:mod:`keepgui.backends.iii.cache`): packed columns
and arrays, checked against the log byte for byte (or by its stat), restored in a few C calls.

So a window's first load of a bank does what a ``keepgui memories`` would: a child process
(:mod:`keepgui.core.childwork`) brings the log's cache up to date — restores it, replays what was
appended or the whole log, writes it — telling the window its progress and, now and then, the rows
replayed so far, which the window shows meanwhile. The window then restores the log's state from that
cache, decodes its records a slice at a time (the first slices shown while the rest decode), and
replays only what was appended in between. The preview's index is built after the rows are shown, when
it is first asked for: by the child again (:func:`restore_index`), restored here the same way. A
verified cache is used as it is, with no child, its index too when it holds one. Nothing differs in
what the window shows: the cache holds the very state a replay gives (its tests hold that), and a
cache that does not verify is never used.

A small log (under :data:`CHILD_LOG_BYTES`) is replayed in the window's process as before: starting a
child costs more than it saves. When no child can run or it fails, the window replays the log itself
and says why in its log; the cache is then left as it was.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from keepgui.backends.iii.cache import LogCache, cached_state_file
from keepgui.backends.iii.lazy import LazyRecords, RecordBlock, encode_block
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.record import Memory
from keepgui.core import childwork
from keepgui.core.source import Progress

if TYPE_CHECKING:
    from keepgui.backends.iii.index import BankIndex
    from keepgui.backends.iii.store import Bank

CHILD_LOG_BYTES = 8 << 20
"""A log at least this big (about 12,000 memories) is replayed and indexed in a child on a window's first
load, unless a verified cache already holds it."""

WARM_CHILD = ("bank", ("keepgui.backends.iii.warm", "keepgui.backends.iii.index"))
"""The child that replays banks, and what it imports as it starts."""

log = logging.getLogger(__name__)


PROGRESS_S = 0.05
"""Seconds between two progress reports of the child's replay."""
FIRST_ROWS_S = 0.1
"""The child sends the rows replayed so far once its replay has run this long (a few thousand rows: the
first screenfuls), then each time they doubled (at most every :data:`FIRST_ROWS_S`), up to
:data:`FIRST_ROWS_MAX`: the window shows them meanwhile."""
FIRST_ROWS_MAX = 20_000
"""Rows the child sends at most in one part: a part is one message, copied whole while the interpreter
lock is held (20,000 records are about 14 MB: a few milliseconds), and the window has its first
screenfuls long before."""


class _Reporter:
    """The child's replay progress, told to the window (:func:`keepgui.core.childwork.tell`): ``("progress",
    done, total)`` and now and then ``("rows", done, total, ids, block, starts)`` (:func:`encode_block`)."""

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        self.started = time.monotonic()
        self.next_report = 0.0
        self.next_rows = self.started + FIRST_ROWS_S
        self.sent = 0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now < self.next_report:
            return
        self.next_report = now + PROGRESS_S
        n = len(self.log.records)
        if now >= self.next_rows and self.sent < FIRST_ROWS_MAX and n >= 2 * max(self.sent, 1):
            records = list(itertools.islice(self.log.records.values(), FIRST_ROWS_MAX))
            self.next_rows, self.sent = now + FIRST_ROWS_S, len(records)
            childwork.tell(("rows", done, total, [m.id for m in records], *encode_block(records)))
        else:
            childwork.tell(("progress", done, total))


def warm(data_dir: str, name: str, with_index: bool = False) -> dict[str, Any]:
    """Run in the child: the cache of bank ``name`` of ``data_dir`` brought up to date — the log's state,
    its replay's progress told as it goes; ``with_index``: the index too (the log's state restored from
    the cache the first call wrote). Returns ``{"memories": n, "saved": bool}``."""
    from keepgui.backends.iii.index import BankIndex
    from keepgui.backends.iii.store import DataDir

    bank = DataDir(data_dir).bank(name)
    index = BankIndex(bank.log) if with_index else None
    cache = LogCache(bank.log, index)
    cache.load()
    delta = bank.refresh(None if with_index else _Reporter(bank.log))
    if index is not None:
        index.sync(delta)
        index.ensure_current()
    saved = cache.save()
    return {"memories": len(bank.log.records), "saved": saved}


NOTHING, LOG, LOG_AND_INDEX = 0, 1, 2
"""What :func:`restore` restored."""


def restore(bank: Bank, index: BankIndex | None, progress: Progress | None = None) -> int:
    """Restore ``bank``'s log (and ``index``, when given and cached for that state) from the verified
    cache, first having a child bring the log's cache up to date when the log is big and a child can run
    (its progress, and the rows it replayed so far, given to ``progress`` meanwhile; the index is left to
    :func:`restore_index`, so the rows come first). Returns :data:`NOTHING` (the log left unread: the caller
    replays it), :data:`LOG` or :data:`LOG_AND_INDEX`. Call before the log is first read, with the bank's
    lock held."""
    if bank.log.loaded:
        return NOTHING
    cache = LogCache(bank.log, index)
    if not cache.load(freeze=False):
        if not _worth_a_child(bank.log.path) or not _in_child(bank, False, _News(progress)):
            return NOTHING
        cache = LogCache(bank.log, index)
        if not cache.load(freeze=False):
            return NOTHING
    records = bank.log.records
    if progress is not None and isinstance(records, LazyRecords):
        # decoded here, a slice at a time, the first slices shown while the rest decode
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):  # read again when asked
            records.packed.all(progress)
    return LOG_AND_INDEX if cache.index_restored else LOG


def restore_index(bank: Bank, index: BankIndex) -> bool:
    """Have a child build ``index`` for the state :func:`restore` restored and restore it from the cache
    (True), when the log is big and a child can run; False leaves the index to be built here. Call with
    the bank's lock held, before the index is first used."""
    if not bank.log.loaded or not _worth_a_child(bank.log.path) or not _in_child(bank, True, None):
        return False
    return LogCache(bank.log, index).load_index()


def _in_child(bank: Bank, with_index: bool, on_news: _News | None) -> bool:
    try:
        childwork.worker(*WARM_CHILD).call(
            "keepgui.backends.iii.warm", "warm", bank.datadir.path, bank.name, with_index, on_news=on_news
        )
    except (childwork.ChildFailed, RuntimeError) as exc:
        what = "indexed" if with_index else "replayed"
        log.warning("bank %s is %s in the window's process: %s", bank.name, what, str(exc).splitlines()[0])
        return False
    return True


class _News:
    """What the child told, given to the load's ``progress``: the rows of a part decoded only when
    ``progress`` asks for them (``since()``), a slice at a time."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.rows: Sequence[Memory] = ()
        self.block: RecordBlock | None = None

    def __call__(self, news: tuple[Any, ...]) -> None:
        if self.progress is None:
            return
        if news[0] == "rows":
            _rows, done, total, ids, block, starts = news
            self.block = RecordBlock.of(ids, block, starts)
        else:
            _progress, done, total = news
        self.progress(done, total, self.since)

    def since(self) -> Sequence[Memory]:
        block, self.block = self.block, None
        if block is not None:
            # a part that does not decode is not shown: the whole state comes from the cache
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                self.rows = block.all()
        return self.rows


def expect(log_path: str) -> None:
    """A bank of a window's source was listed (on the source's thread): when its log is big enough for the
    child and no cache of it is on file, start the child now, on a thread, so its first load does not wait
    the third of a second a new interpreter takes to start and import."""
    if _worth_a_child(log_path) and not os.path.exists(cached_state_file(log_path)):
        childwork.warm_up(dict((WARM_CHILD,)))


def _worth_a_child(path: str) -> bool:
    if not childwork.children_used():
        return False
    try:
        return os.stat(path).st_size >= CHILD_LOG_BYTES
    except OSError:
        return False
