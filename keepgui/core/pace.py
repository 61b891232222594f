"""Background work that gives way to a window's GUI thread.

Every thread of a Python process shares one interpreter lock. A window's GUI thread enters Python
hundreds of times a frame (each ``data()`` call of a table model, each slot), and lets the lock go
between them; a busy background thread takes it back at once each time and keeps it until the
interpreter makes it switch (``sys.getswitchinterval()``, 1 ms in keepgui) or until its current C
call returns. A frame of 400 entries into Python then waits 400 times: a load running beside a
table that paints makes each paint take hundreds of milliseconds, though neither does much.

So long background work calls :func:`checkpoint` between steps of bounded length (a block of a
log, a slice of rows): while the foreground is busy, the background waits there, holding nothing.
The window says when its GUI thread is busy (it woke to handle events) and when it is idle (about
to wait for events again) through :func:`set_foreground`; a process with no window (the CLI, the
tests) installs nothing and :func:`checkpoint` costs one attribute read.

The garbage collector is a long single call too: a young collection looks at every container
allocated since the last one, a list of a million rows with it, holding the lock throughout, in
whichever thread happened to allocate (often the GUI thread). Work that builds big containers makes
them old at once (:func:`made_old`, :func:`age_young_objects`), so only a full collection, rare,
looks at them.

Tried and measured out (figures in docs/bench.md): background threads taking turns between
checkpoints, so that the GUI thread competes for the lock with one thread, not five: the longest GUI
block was about the same and the table took much longer to fill, because the threads that waited
for their turn were the ones building what the table needs.

A background thread never waits more than :data:`MAX_WAIT` at one checkpoint, and once one wait
ran out, no checkpoint waits again until the foreground was idle: a foreground that is busy without
pause (a long resize, or waiting for a lock the background holds) costs background work one
:data:`MAX_WAIT` at most, never one per checkpoint.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

MAX_WAIT = 0.05
"""The longest one checkpoint waits for a busy foreground (seconds)."""


class Foreground:
    """Whether the foreground (a GUI thread) is busy now; background threads wait while it is.

    :meth:`busy` and :meth:`idle` are called by the foreground thread itself; :meth:`wait` by
    background threads. The foreground thread's own calls to :func:`checkpoint` never wait.
    """

    def __init__(self) -> None:
        self._idle = threading.Event()
        self._idle.set()
        self.thread = threading.get_ident()
        self.waits = 0  # how many times a background thread gave way (for tests and benchmarks)
        self._period = 0  # counts the foreground's busy periods
        self._given_up = -1  # the busy period a wait ran out in: no more waits in it

    def busy(self) -> None:
        """The foreground woke to handle events."""
        if self._idle.is_set():
            self._period += 1
            self._idle.clear()

    def idle(self) -> None:
        """The foreground is about to wait for events: background work may run."""
        self._idle.set()

    def wait(self, timeout: float = MAX_WAIT) -> None:
        """Wait (holding no lock) until the foreground is idle, at most ``timeout`` seconds."""
        if self._idle.is_set() or threading.get_ident() == self.thread:
            return
        period = self._period
        if period == self._given_up:
            return  # busy for long: background work goes on (see the module)
        self.waits += 1
        if not self._idle.wait(timeout):
            self._given_up = period


_foreground: Foreground | None = None

T = TypeVar("T")


def age_young_objects() -> None:
    """Make every object the garbage collector tracks old at once (``gc.freeze`` then
    ``gc.unfreeze``: two splices of its lists, whatever their length).

    A young list of a million rows is looked at whole by the next collection of the young
    generations, then by the next of the middle one: a reference visited per row, each a cache
    miss, 70 to 100 ms with the interpreter lock held, in whichever thread allocated last (often
    the GUI thread). Aged, it is looked at only by a full collection, as the bank's own rows are.
    Nothing is kept from being collected: garbage among the objects aged goes at the next full
    collection instead of a young one."""
    gc.freeze()
    gc.unfreeze()


def made_old(make: Callable[[], T]) -> T:
    """``make()`` (a big container, e.g. a bank's rows) made with the collector paused and aged at
    once (:func:`age_young_objects`), so that no collection looks at it while it is young."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return make()
    finally:
        age_young_objects()
        if enabled:
            gc.enable()


def set_foreground(foreground: Foreground | None) -> None:
    """Install the process's foreground (a window's GUI thread), or None for none."""
    global _foreground
    _foreground = foreground


def foreground() -> Foreground | None:
    """The installed foreground, if any."""
    return _foreground


class Cancelled(Exception):
    """Raised at a checkpoint of work that is no longer wanted (see :func:`unless_obsolete`)."""


_obsolete = threading.local()


def unless_obsolete(fn: Callable[[], T], obsolete: Callable[[], bool]) -> T:
    """``fn()``, stopped with :class:`Cancelled` at its next checkpoint once ``obsolete()`` is true
    (a table built for rows a newer delivery replaced: it would only take the lock from the new one)."""
    outer = getattr(_obsolete, "test", None)
    _obsolete.test = obsolete
    try:
        return fn()
    finally:
        _obsolete.test = outer


def checkpoint() -> None:
    """Between two bounded steps of background work: give way while the foreground is busy, and while
    :func:`urgent` work of another thread runs; stop work that is no longer wanted."""
    obsolete = getattr(_obsolete, "test", None)
    if obsolete is not None and obsolete():
        raise Cancelled
    fg = _foreground
    if fg is not None and threading.get_ident() != fg.thread:
        fg.wait()
        if _urgent.running and not getattr(_urgent_here, "on", False):
            _urgent.wait()


URGENT_MAX_S = 1.0
"""How long other background work gives way to :func:`urgent` work at most (seconds): past it, urgent work
that runs on (or waits for a lock that work waiting at a checkpoint holds) shares the interpreter lock
again, so that it never waits behind what it held back."""


class _Urgent:
    """How many :func:`urgent` blocks run now, since when, and the event other background work waits on."""

    def __init__(self) -> None:
        self.running = 0
        self._since = 0.0
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._done.set()

    def enter(self) -> None:
        with self._lock:
            if not self.running:
                self._since = time.monotonic()
            self.running += 1
            self._done.clear()

    def leave(self) -> None:
        with self._lock:
            self.running -= 1
            if not self.running:
                self._done.set()

    def wait(self) -> None:
        left = URGENT_MAX_S - (time.monotonic() - self._since)
        if left > 0:
            self._done.wait(min(MAX_WAIT, left))


_urgent = _Urgent()
_urgent_here = threading.local()


def urgent(work: Callable[[], T]) -> T:
    """``work()``, which a person is waiting for now (the first rows of the bank just opened): while it
    runs, other background work of a window's process waits at its checkpoints (at most
    :data:`MAX_WAIT` at each, and for :data:`URGENT_MAX_S` in all), so that it does not share the
    interpreter lock with them. Without a window (no foreground) nothing waits."""
    outer = getattr(_urgent_here, "on", False)
    _urgent.enter()
    _urgent_here.on = True
    try:
        return work()
    finally:
        _urgent_here.on = outer
        _urgent.leave()


def slices(items: Sequence[T], step: int) -> Iterator[tuple[int, Sequence[T]]]:
    """``(start, items[start:start + step])`` for each step of ``items``, a :func:`checkpoint` after
    each, while a foreground (a window) shares the process; without one, ``(0, items)`` once: a
    command's one C call over a million items costs no more than its slices, and needs no giving way."""
    if _foreground is None:
        yield 0, items
        return
    for start in range(0, len(items), step):
        yield start, items[start : start + step]
        checkpoint()


def numbered(items: Sequence[T], step: int) -> dict[T, int]:
    """Each item -> its position in ``items`` (the last, for one that repeats), made :func:`slices` at a
    time: the id -> row tables of a million memories."""
    out: dict[T, int] = {}
    for start, chunk in slices(items, step):
        out.update(zip(chunk, range(start, start + len(chunk)), strict=True))
    return out


def lines(text: str, step: int = 1 << 16) -> Iterator[str]:
    """``text.splitlines()`` a step of about ``step`` characters at a time, with a :func:`checkpoint`
    between two steps: the lines of a file of 6 MB are not split in one call holding the lock for
    tens of milliseconds. Each step ends just after a ``\\n`` (or at the end), so the lines are those of
    ``text.splitlines()``, one for one."""
    start, end = 0, len(text)
    while start < end:
        cut = text.find("\n", start + step)
        stop = end if cut < 0 else cut + 1
        yield from text[start:stop].splitlines()
        start = stop
        if start < end:
            checkpoint()


RELEASE_STEP = 4096
"""Items a big list loses at a time in :func:`release`."""


def release(items: list[object]) -> None:
    """Empty a big list a slice at a time, with a checkpoint between slices: dropped at once, a list
    of a million tuples is freed in one C call that holds the interpreter lock (and so the GUI
    thread) for a hundred milliseconds or more."""
    while items:
        del items[-RELEASE_STEP:]
        checkpoint()
