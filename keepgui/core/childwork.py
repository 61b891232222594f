"""Work a window hands to a child process: a function of keepgui by name, small arguments in, columns back.

A window's background threads share one interpreter lock with its GUI thread (:mod:`keepgui.core.pace`):
a bank's second pass over its whole log (its activity, say) holds that lock for a second at 100,000
memories, in slices, and each slice is a moment the GUI thread may wait. :class:`ChildWorker` runs such
work in a fresh interpreter instead (``python -c``, sharing nothing with the window: no Qt, no threads,
no main script), on the machine's other core; the graph's layout too (:mod:`keepgui.core.graphworker`).

What goes in is small (a path, a few options), or columns sent in steps: ``lists`` (a text per row) a
slice of :data:`SLICE` items at a time, ``arrays`` (an ``array`` or a ``bytearray``) a block of
:data:`BLOCK` bytes at a time. What comes back are **columns**: a dict of names to values, where a
``list`` (a million ids) is sent in slices of :data:`SLICE` items and joined in the calling thread with
a pacing checkpoint between slices, so no single step holds the lock for long; anything else
(``bytes``, arrays, numbers, a dataclass of them) is sent as it is (a copy of a block of memory). No
Python object per row is built anywhere but in the list the caller asked for.

The child says it is alive every :data:`BEAT` seconds; one that dies is started again once, one silent
for ``hang_timeout`` seconds is killed; either way :meth:`ChildWorker.call` raises :class:`ChildFailed`
and the caller does the work in its own process instead, saying so. A call no longer wanted
(:meth:`ChildWorker.cancel`, or its ``stop_when()`` come true) kills the child at once and raises
:class:`ChildCancelled`: the next call starts another. Only a window's process uses children
(:func:`use_children`): the command line and the tests run everything in-process unless they ask.
"""

from __future__ import annotations

import atexit
import importlib
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from array import array
from collections.abc import Callable, Mapping
from typing import Any

from keepgui.core import pace
from keepgui.core.errors import KeepguiError

IDLE_EXIT = 60.0
"""Seconds a child waits for work before it exits (its memory goes back to the system), unless its
worker says otherwise (``idle_exit``)."""
BEAT = 0.5
"""Seconds between a working child's signs of life."""
HANG_TIMEOUT = 20.0
"""Seconds without a sign of life after which a child is taken for hung and killed."""
SLICE = 4096
"""Items of a list sent (and joined) at a time: each step a millisecond or less."""
BLOCK = 200_000
"""Bytes of an array sent at a time: copying them takes far less than a frame."""

_enabled = False
_telling: tuple[Any, threading.Lock] | None = None  # in a child, during a call: where tell() sends


def use_children(on: bool = True) -> None:
    """Whether work that can runs in child processes (a window's process says yes at its start)."""
    global _enabled
    _enabled = on


def children_used() -> bool:
    """True when work that can should run in a child process (:func:`use_children`) and one can be started."""
    return _enabled and unavailable() is None


def unavailable() -> str | None:
    """Why no child can be started here (None when one can): a child is ``sys.executable -c``, which a
    frozen program (PyInstaller's one-folder app) does not run."""
    if getattr(sys, "frozen", False):
        return "a frozen program has no Python interpreter to start"
    if not sys.executable or not os.path.exists(sys.executable):
        return "no Python interpreter to start (sys.executable is not set)"
    return None


class ChildFailed(KeepguiError):
    """The child process died twice in a row, stopped answering, or could not be started."""


class ChildCancelled(KeepguiError):
    """The call was stopped, its child killed, because its work is no longer wanted
    (:meth:`ChildWorker.cancel`, or its ``stop_when()`` came true); not a failure: nothing is to be
    done in the caller's process instead."""


class ChildError(RuntimeError):
    """The function raised in the child: ``traceback`` is its traceback there."""

    def __init__(self, message: str, child_traceback: str) -> None:
        super().__init__(message)
        self.traceback = child_traceback


# ---------------------------------------------------------------------- the child


def serve(fd: int, preload: tuple[str, ...] = (), idle_exit: float = IDLE_EXIT) -> None:
    """The child's body (``python -c`` runs it with its end of the socket pair): take a call, run it
    (a beat every :data:`BEAT` seconds meanwhile), send its columns back; exit after ``idle_exit``
    seconds without work, or when the parent goes away."""
    from multiprocessing.connection import Connection

    conn = Connection(fd)
    for module in preload:  # imported while the child waits for its first call, not during it
        importlib.import_module(module)
    sending = threading.Lock()
    while True:
        try:
            if not conn.poll(idle_exit):
                return
            given: dict[str, Any] = {}
            message = conn.recv()
            while message[0] != "call":
                _take(given, message)
                message = conn.recv()
            _call, module, name, args, names = message
        except (EOFError, OSError):
            return
        working = threading.Event()
        beats = threading.Thread(target=_beat, args=(conn, sending, working), name="beat", daemon=True)
        beats.start()
        global _telling
        _telling = (conn, sending)
        try:
            given = {key: given.get(key, []) for key in names}
            columns = getattr(importlib.import_module(module), name)(*args, **given)
            del given
            failure = None
        except Exception:  # noqa: BLE001 - a bug: its traceback goes to the parent, which raises it
            columns, failure = None, traceback.format_exc()
        finally:
            _telling = None
            working.set()
        beats.join()
        try:
            with sending:
                if failure is not None:
                    conn.send(("error", failure))
                else:
                    _send_columns(conn, columns)
        except (EOFError, OSError):
            return
        del columns


def tell(news: object) -> None:
    """Run in a child, by the function called: send ``news`` (anything picklable: a progress count,
    a first part of the answer in bytes) to the caller at once, whose ``on_news`` gets it while the
    call goes on. Outside a child's call it does nothing, so the function runs in-process unchanged."""
    telling = _telling
    if telling is None:
        return
    conn, sending = telling
    with sending:
        conn.send(("news", news))


def _take(given: dict[str, Any], message: tuple[Any, ...]) -> None:
    """A slice of a list (``part``) or a block of an array's bytes (``block``, with its type code, or
    None for a ``bytearray``) added to the column it belongs to."""
    if message[0] == "part":
        given.setdefault(message[1], []).extend(message[2])
        return
    _block, key, typecode, data = message
    column = given.get(key)
    if column is None:
        column = given[key] = bytearray() if typecode is None else array(typecode)
    if isinstance(column, array):
        column.frombytes(data)
    else:
        column.extend(data)


def _send_columns(conn: Any, columns: dict[str, Any]) -> None:
    rest: dict[str, Any] = {}
    for key, value in columns.items():
        if isinstance(value, list):
            for lo in range(0, len(value), SLICE):
                conn.send(("part", key, value[lo : lo + SLICE]))
            rest[key] = []
        else:
            rest[key] = value
    conn.send(("ok", rest))


def _beat(conn: Any, sending: threading.Lock, done: threading.Event) -> None:
    while not done.wait(BEAT):
        try:
            with sending:
                conn.send(("beat",))
        except (EOFError, OSError):
            return


# ---------------------------------------------------------------------- the parent


class _Watchdog:
    """Kills ``process`` when no sign of life (:meth:`alive`) came for ``timeout`` seconds (``fired``),
    or once ``stop_when()`` is true (``stopped``)."""

    def __init__(self, process: subprocess.Popen[bytes], timeout: float, stop_when: Callable[[], bool] | None) -> None:
        self.fired = self.stopped = False
        self._process, self._timeout, self._stop_when = process, timeout, stop_when
        self._last = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="keepgui-child-watchdog", daemon=True)
        self._thread.start()

    def alive(self) -> None:
        self._last = time.monotonic()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def _watch(self) -> None:
        step = min(0.25, self._timeout / 4)
        while not self._stopped.wait(step):
            if self._stop_when is not None and self._stop_when():
                self.stopped = True
            elif time.monotonic() - self._last > self._timeout:
                self.fired = True
            else:
                continue
            self._process.kill()  # a send or a receive blocked in the parent ends at once
            return


def _literal(value: object) -> str:
    """``value`` written in Python, its braces doubled for :meth:`str.format`."""
    return repr(value).replace("{", "{{").replace("}", "}}")


def _kill(process: subprocess.Popen[bytes] | None) -> None:
    """Kill a child now, reaped on a thread of its own (no wait here)."""
    if process is not None and process.poll() is None:
        process.kill()
        threading.Thread(target=process.wait, name="keepgui-child-reaper", daemon=True).start()


class ChildWorker:
    """One child process, started on first use and again when it has exited; one call at a time (call
    :meth:`call` from a background thread: it waits; :meth:`cancel` from any).

    The child is a fresh interpreter started with ``python -c`` (nothing of the parent's threads, Qt or
    main script runs in it; multiprocessing's spawn would import the parent's main script there) that
    imports this module from the same folder; the two talk over a socket pair through
    multiprocessing's Connection. ``idle_exit``: seconds it waits for work before it exits;
    ``slice_items``: items of a list sent to it at a time."""

    def __init__(
        self,
        name: str,
        hang_timeout: float = HANG_TIMEOUT,
        preload: tuple[str, ...] = (),
        *,
        idle_exit: float = IDLE_EXIT,
        slice_items: int = SLICE,
    ) -> None:
        self.name = name
        self.preload = preload
        self.hang_timeout = hang_timeout
        self.idle_exit = idle_exit
        self.slice_items = slice_items
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Any = None
        self._closed = False
        self._cancelled = False
        self._unread = False  # a call stopped after its work was sent: its answer is still to be read

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def child_code(self) -> str:
        """The Python the child runs (``{fd}`` stands for its end of the socket pair)."""
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return (
            f"import sys; sys.path.insert(0, {_literal(root)}); from keepgui.core.childwork import serve; "
            f"serve({{fd}}, {_literal(self.preload)}, {self.idle_exit!r})"
        )

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", self.child_code().format(fd=theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise ChildFailed(f"the {self.name} process could not be started: {exc}") from None
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())

    def stop(self) -> None:
        """End the child (it is started again when needed)."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        self._unread = False
        if conn is not None:
            conn.close()  # the child sees the end of its input and exits
        if process is not None:
            try:
                process.wait(2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(2)

    def _discard(self) -> None:
        """Kill the child now and forget it, without waiting (a new one serves the next call)."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        self._unread = False
        _kill(process)
        if conn is not None:
            conn.close()

    def cancel(self) -> None:
        """Kill the child now without waiting for it (safe on the GUI thread): a call under way raises
        :class:`ChildCancelled`, and the child's memory goes back to the system."""
        self._cancelled = True
        _kill(self._process)

    def warm(self) -> None:
        """Start the child now (it imports its ``preload`` modules meanwhile), so that the first call
        does not wait for a new interpreter; nothing when it runs already or a call is under way."""
        if self._closed or not self._lock.acquire(blocking=False):
            return
        try:
            if self._process is None or self._process.poll() is not None:
                self.stop()
                self._start()
        except ChildFailed:
            pass  # the first call says why
        finally:
            self._lock.release()

    def close(self) -> None:
        """End the child for good (the program quits): later calls fail at once."""
        self._closed = True
        self.stop()

    def call(
        self,
        module: str,
        name: str,
        *args: Any,
        lists: Mapping[str, list[Any]] | None = None,
        arrays: Mapping[str, array[Any] | bytearray] | None = None,
        between: Callable[[], None] | None = None,
        stop_when: Callable[[], bool] | None = None,
        on_news: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """``module.name(*args, **lists, **arrays)`` run in the child: the columns it returned (its
        lists joined here, a slice at a time); ``lists`` (a text per row, say) are sent a slice at a
        time, ``between()`` called after each (:func:`keepgui.core.pace.checkpoint` unless given),
        ``arrays`` a block of bytes at a time. Raises :class:`ChildFailed` when the child died twice or
        hung (it is killed), :class:`ChildError` (a ``RuntimeError``) with the child's traceback when
        the function raised, :class:`ChildCancelled` when the call was stopped (the child killed) by
        :meth:`cancel` or once ``stop_when()`` is true (looked at every quarter of a second). Stopped
        half way (an exception at a pacing checkpoint) while receiving, the answer under way is read
        and dropped by the next call; while sending, the child is killed and the next call starts
        another. ``on_news(news)`` is called here, in this thread, with what the function :func:`tell`
        while it runs (a call made again after a child died may tell the same news again)."""
        with self._lock:
            self._cancelled = False
            failure = ""
            for _attempt in range(2):
                if self._closed:
                    raise ChildFailed(f"the {self.name} process was ended (the program is quitting)")
                if stop_when is not None and stop_when():
                    raise self._no_longer_wanted()
                if self._process is None or self._process.poll() is not None:
                    self.stop()
                    self._start()
                process = self._process
                assert process is not None
                watchdog = _Watchdog(process, self.hang_timeout, stop_when)
                sent = False
                try:
                    if self._unread:  # the answer of a call stopped half way: read and dropped first
                        self._receive(watchdog.alive, checkpoints=False)
                        self._unread = False
                    self._send(module, name, args, lists or {}, arrays or {}, watchdog.alive, between)
                    sent = True
                    status, value = self._receive(watchdog.alive, on_news=on_news)
                except BaseException as exc:
                    if not isinstance(exc, EOFError | OSError):
                        # stopped half way (the work became obsolete at a checkpoint): a child that has
                        # all its work answers it, read before the next call's; one that was still
                        # being sent its work would wait for the rest, so it goes
                        if sent:
                            self._unread = True
                        else:
                            self._discard()
                        raise
                    self.stop()  # waits for the child: its exit status is known after
                    if self._cancelled or watchdog.stopped:
                        raise self._no_longer_wanted() from None
                    if watchdog.fired:
                        raise ChildFailed(
                            f"the {self.name} process stopped answering ({self.hang_timeout:g} s without a sign of life)"
                        ) from None
                    failure = f"the {self.name} process stopped (exit status {process.returncode})"
                else:
                    if status == "error":
                        raise ChildError(f"the {self.name} process failed:\n{value}", value)
                    return value  # type: ignore[no-any-return]
                finally:
                    watchdog.stop()
            raise ChildFailed(failure)

    def _no_longer_wanted(self) -> ChildCancelled:
        return ChildCancelled(f"the {self.name} process was stopped: its work is no longer wanted")

    def _send(
        self,
        module: str,
        name: str,
        args: tuple[Any, ...],
        lists: Mapping[str, list[Any]],
        arrays: Mapping[str, array[Any] | bytearray],
        alive: Callable[[], None],
        between: Callable[[], None] | None,
    ) -> None:
        conn, step = self._conn, self.slice_items
        for key, values in lists.items():
            for lo in range(0, len(values), step):
                conn.send(("part", key, values[lo : lo + step]))
                alive()
                (between or pace.checkpoint)()  # looked up now: a test may have replaced it
        for key, column in arrays.items():
            typecode = column.typecode if isinstance(column, array) else None
            with memoryview(column) as view, view.cast("B") as data:
                # one block at least, empty for an empty column: the child makes the column of its type
                for lo in range(0, max(len(data), 1), BLOCK):
                    conn.send(("block", key, typecode, bytes(data[lo : lo + BLOCK])))
                    alive()
        conn.send(("call", module, name, args, (*lists, *arrays)))

    def _receive(
        self, alive: Callable[[], None], checkpoints: bool = True, on_news: Callable[[Any], None] | None = None
    ) -> tuple[str, Any]:
        lists: dict[str, list[Any]] = {}
        while True:
            message = self._conn.recv()
            alive()
            kind = message[0]
            if kind == "news":
                if on_news is not None:
                    on_news(message[1])
            elif kind == "part":
                lists.setdefault(message[1], []).extend(message[2])
                if checkpoints:
                    pace.checkpoint()
            elif kind == "error":
                return "error", message[1]
            elif kind == "ok":
                columns: dict[str, Any] = message[1]
                columns.update(lists)
                return "ok", columns


_WORKERS: dict[str, ChildWorker] = {}
_WORKERS_LOCK = threading.Lock()


def worker(name: str, preload: tuple[str, ...] = ()) -> ChildWorker:
    """The process's child of that name (one per kind of work; stopped when the program exits);
    ``preload``: modules it imports as it starts, when it is made here."""
    with _WORKERS_LOCK:
        found = _WORKERS.get(name)
        if found is None:
            found = _WORKERS[name] = ChildWorker(name, preload=preload)
            atexit.register(found.close)
        return found


def warm_up(kinds: dict[str, tuple[str, ...]]) -> None:
    """Start the children of these names (each with its ``preload`` modules) on a thread of their own,
    so the first big table or index does not wait for a new interpreter (a window's start)."""

    def start() -> None:
        for name, preload in kinds.items():
            worker(name, preload).warm()

    threading.Thread(target=start, name="keepgui-child-warm-up", daemon=True).start()
