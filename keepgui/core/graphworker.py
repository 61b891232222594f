"""The graph's layout process: :func:`~keepgui.core.graphlayout.lay_out` in a child process of its own.

:class:`LayoutWorker` is a :class:`~keepgui.core.childwork.ChildWorker` that runs :func:`layout_columns`
(the layout) in a fresh interpreter, sharing nothing with a Qt program: the columns go to it in pieces
of :data:`~keepgui.core.graphlayout.CHUNK` rows (its arrays in blocks of bytes), each a few
milliseconds, so the GUI thread of the parent never waits long for the interpreter lock, and its
garbage collector never sees the layout's objects; the :class:`~keepgui.core.graphlayout.Layout` of
arrays comes back whole. The child says it is alive every
:data:`~keepgui.core.childwork.BEAT` seconds; one that dies is started again once, one silent for
:data:`HANG_TIMEOUT` seconds is killed, and the caller lays the graph out in its own process instead
(:class:`LayoutFailed`). A layout no longer wanted (:meth:`~keepgui.core.childwork.ChildWorker.cancel`,
or its ``stop_when()`` come true) kills the child at once (:class:`LayoutCancelled`).
"""

from __future__ import annotations

import atexit
import threading
from array import array
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from keepgui.core.childwork import ChildCancelled, ChildError, ChildFailed, ChildWorker, unavailable
from keepgui.core.graphlayout import CHUNK, Columns, GraphOptions, Layout, breathe, lay_out

IDLE_EXIT = 120.0
"""Seconds the layout process waits for work before it exits (its memory goes back to the system)."""
HANG_TIMEOUT = 20.0
"""Seconds without a sign of life (a piece taken, a beat) after which the layout process is taken
for hung: it is killed and the graph laid out in the GUI's process instead."""

_COLUMN_LISTS = ("ids", "entity_sets", "tag_sets")
_COLUMN_ARRAYS = ("entity_code", "tag_code", "pinned", "retired", "updated")

LayoutFailed = ChildFailed
"""The layout process stopped (killed, or out of memory) twice in a row, or stopped answering: the
caller lays the graph out in its own process."""
LayoutCancelled = ChildCancelled
"""The layout was stopped (another bank shown, a newer layout asked, the program quits)."""
child_layout_unavailable = unavailable
"""Why a layout process cannot be started here (None when it can): it is a fresh Python interpreter
started as ``sys.executable -c``, which a frozen program (PyInstaller's one-folder app) does not run."""


def layout_columns(row_names: Mapping[str, str], options: GraphOptions, **columns: Any) -> dict[str, Any]:
    """What the layout process runs: the :class:`Columns` sent to it, laid out."""
    return {"layout": lay_out(Columns(**columns), row_names, options)}


class LayoutWorker(ChildWorker):
    """Lays graphs out in a child process of its own (see the module), started on first use and again
    when it has exited. One layout at a time; call :meth:`lay_out` from a background thread (it
    waits), :meth:`~keepgui.core.childwork.ChildWorker.cancel` from any."""

    def __init__(self, hang_timeout: float = HANG_TIMEOUT) -> None:
        super().__init__("graph's layout", hang_timeout, (__name__,), idle_exit=IDLE_EXIT, slice_items=CHUNK)

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
        arrays: dict[str, array[Any] | bytearray] = {name: getattr(columns, name) for name in _COLUMN_ARRAYS}
        try:
            answer = self.call(
                __name__,
                layout_columns.__name__,
                dict(row_names),
                options,
                lists={name: getattr(columns, name) for name in _COLUMN_LISTS},
                arrays=arrays,
                between=partial(breathe, pause),
                stop_when=stop_when,
            )
        except ChildError as bug:
            raise RuntimeError(f"laying out the graph failed in its process:\n{bug.traceback}") from None
        layout = answer.get("layout")
        if not isinstance(layout, Layout):
            raise LayoutFailed(f"the graph's layout process answered {type(layout).__name__}, not a layout")
        return layout


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
