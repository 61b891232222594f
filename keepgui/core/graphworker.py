"""The graph's layout process: :func:`~keepgui.core.graphlayout.lay_out` in a child process of its own.

:class:`LayoutWorker` runs the layout in a fresh interpreter (sharing nothing
with a Qt program): the columns go to it and the arrays come back in pieces of
:data:`~keepgui.core.graphlayout.CHUNK` rows, each a few milliseconds, so the
GUI thread of the parent never waits long for the interpreter lock, and its
garbage collector never sees the layout's objects. The child says it is alive
every :data:`BEAT` seconds; one that dies is started again once, one silent for
:data:`HANG_TIMEOUT` seconds is killed, and the caller lays the graph out in its
own process instead (:class:`LayoutFailed`).
"""

from __future__ import annotations

import atexit
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

from keepgui.core.errors import KeepguiError
from keepgui.core.graphlayout import CHUNK, Columns, GraphOptions, Layout, breathe, lay_out

IDLE_EXIT = 120.0
"""Seconds the layout process waits for work before it exits (its memory goes back to the system)."""
BEAT = 1.0
"""Seconds between the layout process's signs of life while it lays out."""
HANG_TIMEOUT = 20.0
"""Seconds without a sign of life (a piece taken, a beat) after which the layout process is taken
for hung: it is killed and the graph laid out in the GUI's process instead."""


_COLUMN_LISTS = ("ids", "entity_sets", "tag_sets")
_COLUMN_ARRAYS = ("entity_code", "tag_code", "pinned", "retired", "updated")


def serve(fd: int) -> None:
    """The layout process's body (``python -c`` runs it with its end of the socket pair): receive
    columns in pieces, lay them out (saying it is alive every :data:`BEAT` seconds meanwhile), send
    the Layout back; exit after :data:`IDLE_EXIT` seconds without work, or when the parent goes away."""
    from multiprocessing.connection import Connection

    conn = Connection(fd)
    sending = threading.Lock()
    while True:
        try:
            if not conn.poll(IDLE_EXIT):
                return
            parts: dict[str, list[Any]] = {}
            message = conn.recv()
            while message[0] == "part":
                parts.setdefault(message[1], []).append(message[2])
                message = conn.recv()
        except (EOFError, OSError):
            return
        _run, row_names, options = message
        working = threading.Event()
        beats = threading.Thread(target=_beat, args=(conn, sending, working), name="beat", daemon=True)
        beats.start()
        reply: tuple[str, Any]
        try:
            reply = ("ok", lay_out(_columns_from(parts), row_names, options))
        except Exception:  # noqa: BLE001 - a bug: its traceback goes to the parent, which raises it
            reply = ("error", traceback.format_exc())
        finally:
            working.set()
            del parts
        beats.join()
        try:
            with sending:
                conn.send(reply)
        except (EOFError, OSError):
            return
        del reply  # nothing of this layout is kept while the process waits for the next one


def _beat(conn: Any, sending: threading.Lock, done: threading.Event) -> None:
    """Tell the parent the layout process is alive, every :data:`BEAT` seconds until ``done``."""
    while not done.wait(BEAT):
        try:
            with sending:
                conn.send(("beat",))
        except (EOFError, OSError):
            return


def _columns_from(parts: Mapping[str, list[Any]]) -> Columns:
    """The columns sent in pieces, joined."""

    def joined_list(name: str) -> list[Any]:
        return [x for part in parts.get(name, ()) for x in part]

    def joined_array(name: str) -> array[int]:
        out = array("q")
        out.frombytes(b"".join(parts.get(name, ())))
        return out

    return Columns(
        ids=joined_list("ids"),
        entity_sets=joined_list("entity_sets"),
        entity_code=joined_array("entity_code"),
        tag_sets=joined_list("tag_sets"),
        tag_code=joined_array("tag_code"),
        pinned=bytearray(b"".join(parts.get("pinned", ()))),
        retired=bytearray(b"".join(parts.get("retired", ()))),
        updated=joined_array("updated"),
    )


class LayoutFailed(KeepguiError):
    """The layout process stopped (killed, or out of memory) twice in a row, or stopped answering."""


class LayoutCancelled(KeepguiError):
    """The layout was stopped by :meth:`LayoutWorker.cancel` (another bank shown, the program quits)."""


def child_layout_unavailable() -> str | None:
    """Why a layout process cannot be started here (None when it can): it is a fresh Python
    interpreter started as ``sys.executable -c``, and a frozen program's ``sys.executable`` is the
    program itself (PyInstaller's one-folder app), which runs no ``-c``."""
    if getattr(sys, "frozen", False):
        return "a frozen program has no Python interpreter to start"
    if not sys.executable or not os.path.exists(sys.executable):
        return "no Python interpreter to start (sys.executable is not set)"
    return None


class _Watchdog:
    """Kills a process when no sign of life (:meth:`alive`) came for ``timeout`` seconds (``fired``),
    or once ``stop_when()`` is true (``stopped``)."""

    def __init__(self, process: subprocess.Popen[bytes], timeout: float, stop_when: Callable[[], bool] | None) -> None:
        self.fired = self.stopped = False
        self._process, self._timeout, self._stop_when = process, timeout, stop_when
        self._last = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="keepgui-layout-watchdog", daemon=True)
        self._thread.start()

    def alive(self) -> None:
        """A sign of life."""
        self._last = time.monotonic()

    def stop(self) -> None:
        """Stop watching."""
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


class LayoutWorker:
    """Lays graphs out in a child process of its own, started on first use and again when it has
    exited. The child is a fresh interpreter started with ``python -c`` (nothing of the parent's
    threads, Qt or main script runs in it; multiprocessing's spawn would import the parent's
    main script there) that imports this module from the same folder; the two talk over a socket
    pair through multiprocessing's Connection. One layout at a time; call :meth:`lay_out` from a
    background thread (it waits), :meth:`cancel` from any.

    A child that dies is started again once; one that gives no sign of life for ``hang_timeout``
    seconds is killed; either way :meth:`lay_out` then raises :class:`LayoutFailed`, never waiting
    longer than that for a child that does nothing."""

    def __init__(self, hang_timeout: float = HANG_TIMEOUT) -> None:
        self.hang_timeout = hang_timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Any = None
        self._cancelled = False

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def child_code(self) -> str:
        """The Python the child runs (``{fd}`` stands for its end of the socket pair)."""
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return f"import sys; sys.path.insert(0, {root!r}); from keepgui.core.graphworker import serve; serve({{fd}})"

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", self.child_code().format(fd=theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())

    def stop(self) -> None:
        """End the child process (it is started again when needed)."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            conn.close()  # the child sees the end of its input and exits
        if process is not None:
            try:
                process.wait(2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(2)

    def cancel(self) -> None:
        """Kill the child now without waiting for it (safe on the GUI thread): a layout under way
        raises :class:`LayoutCancelled`, and the child's memory goes back to the system."""
        self._cancelled = True
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            threading.Thread(target=process.wait, name="keepgui-layout-reaper", daemon=True).start()

    def lay_out(
        self,
        columns: Columns,
        row_names: Mapping[str, str],
        options: GraphOptions,
        pause: float = 0.0,
        stop_when: Callable[[], bool] | None = None,
    ) -> Layout:
        """:func:`lay_out` in the child process (a bug there is raised here with its traceback);
        ``pause`` seconds of sleep between the pieces sent; stopped, the child killed, once
        ``stop_when()`` is true (looked at every quarter of a second)."""
        with self._lock:
            self._cancelled = False
            failure = ""
            for _attempt in range(2):
                if stop_when is not None and stop_when():
                    raise LayoutCancelled("the graph's layout was stopped")
                if self._process is None or self._process.poll() is not None:
                    self.stop()
                    self._start()
                process = self._process
                if process is None:
                    raise LayoutFailed("the graph's layout process could not be started")
                watchdog = _Watchdog(process, self.hang_timeout, stop_when)
                try:
                    self._send(columns, row_names, options, pause, watchdog.alive)
                    status, value = self._receive(watchdog.alive)
                except (EOFError, OSError):
                    self.stop()  # waits for the child: its exit status is known after
                    code = process.returncode
                    if self._cancelled or watchdog.stopped:
                        raise LayoutCancelled("the graph's layout was stopped") from None
                    if watchdog.fired:
                        raise LayoutFailed(
                            f"the graph's layout process stopped answering ({self.hang_timeout:g} s without a sign "
                            "of life)"
                        ) from None
                    failure = f"the graph's layout process stopped (exit status {code})"
                    continue
                finally:
                    watchdog.stop()
                if status == "error":
                    raise RuntimeError(f"laying out the graph failed in its process:\n{value}")
                if not isinstance(value, Layout):
                    raise LayoutFailed(f"the graph's layout process answered {type(value).__name__}, not a layout")
                return value
            raise LayoutFailed(failure)

    def _receive(self, alive: Callable[[], None]) -> tuple[str, Any]:
        """The child's answer (its beats taken as signs of life)."""
        while True:
            message = self._conn.recv()
            alive()
            if message[0] != "beat":
                return message[0], message[1]

    def _send(
        self,
        columns: Columns,
        row_names: Mapping[str, str],
        options: GraphOptions,
        pause: float,
        alive: Callable[[], None],
    ) -> None:
        conn = self._conn
        for name in _COLUMN_LISTS:
            values = getattr(columns, name)
            for a in range(0, len(values), CHUNK):
                conn.send(("part", name, values[a : a + CHUNK]))
                alive()
                breathe(pause)
        for name in _COLUMN_ARRAYS:
            data = memoryview(getattr(columns, name)).cast("B")
            step = CHUNK * 200  # bytes: copying them takes far less than a frame
            for a in range(0, len(data), step):
                conn.send(("part", name, bytes(data[a : a + step])))
                alive()
            data.release()
        conn.send(("run", dict(row_names), options))
        alive()


_WORKER: LayoutWorker | None = None
_WORKER_LOCK = threading.Lock()


def layout_worker() -> LayoutWorker:
    """The process's one :class:`LayoutWorker` (stopped when the program exits)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = LayoutWorker()
            atexit.register(_WORKER.stop)
        return _WORKER
