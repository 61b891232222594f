"""One way to work off the GUI thread: lanes of background threads, answers on the GUI thread.

Every piece of background work of the window goes through here. A :class:`Lane` is a queue with
its own thread (or a few): the loads of one source, the questions asked while the person types,
the table and index builds, the graph. Work put on a lane runs in the order it was put there, on
that lane's threads only, so a long load of one source never delays a question about another bank.
:meth:`Lane.run` takes the work (a callable, run off the GUI thread) and what to do with its
answer: ``done(result)`` or ``failed(exception)``, both called **on the GUI thread** (the
:class:`TaskRunner` is a QObject of the GUI thread; a worker hands the finished task to it through
a queued signal). The work itself never touches a widget.

Built in, so no caller writes it again:

- **Newest request wins.** Work run with a ``newest`` key (the same key for the same question:
  the widget asking, say) supersedes the work of that key asked before it: queued, it is skipped;
  running, it is told so (:meth:`Task.obsolete`), and with ``abandon`` it stops at its next pacing
  checkpoint (:class:`keepgui.core.pace.Cancelled`); finished, its answer is not delivered.
- **Pacing.** The work's own :func:`keepgui.core.pace.checkpoint` calls between its bounded steps
  give way to a busy GUI thread (it runs on a lane's thread, never the GUI thread's), and with
  ``abandon`` each of them also stops the work once it is obsolete
  (:func:`keepgui.core.pace.unless_obsolete`).
- **Garbage-collector ageing.** With ``made_old`` the work runs with the collector paused and what
  it allocated is made old at once (:func:`keepgui.core.pace.made_old`): a bank's rows, an index of
  every row, are never walked by a young collection, which would hold the interpreter lock (and the
  GUI thread) for tens of milliseconds.
- **Answers only to the living.** With an ``owner`` (the widget that asked), nothing is delivered
  once it was deleted; nothing is delivered from a lane that was closed.
- **Exceptions are answers too.** An exception the work raised goes to ``failed`` on the GUI
  thread; with no ``failed`` it is logged with its traceback, never lost in a thread.
- **Shutdown joins.** :meth:`Lane.close` drops the queued work, tells the running work it is
  obsolete and (with ``wait``) joins the lane's threads; :meth:`TaskRunner.shutdown` does it for
  every lane, and runs at exit.

The shape follows the task runners of other Qt desktop programs (Picard's ``run_task``, Anki's
``TaskManager``, git-cola's ``RunTask``): work and its callback handed over together, the
callback run on the main thread.
"""

from __future__ import annotations

import atexit
import collections
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal

from keepgui.core import pace

T = TypeVar("T")

log = logging.getLogger(__name__)

_QUEUED, _RUNNING, _FINISHED, _CANCELLED = "queued", "running", "finished", "cancelled"


class Task(Generic[T]):
    """One piece of work put on a lane, and what becomes of it (see :meth:`Lane.run`)."""

    def __init__(
        self,
        lane: Lane,
        work: Callable[[], T],
        done: Callable[[T], object] | None,
        failed: Callable[[Exception], object] | None,
        owner: QObject | None,
        newest: Hashable | None,
        abandon: bool,
        made_old: bool,
    ) -> None:
        self.lane = lane
        self.work = work
        self.done = done
        self.failed = failed
        self.owner = owner
        self.newest = newest
        self.abandon = abandon
        self.made_old = made_old
        self.state = _QUEUED
        self.result: T | None = None
        self.error: Exception | None = None
        self._cancelled = False
        self._ended = threading.Event()

    def cancel(self) -> None:
        """Not wanted any more: skipped if queued, told so if running (see :meth:`obsolete`), and its
        answer is not delivered."""
        self._cancelled = True

    def superseded(self) -> bool:
        """A newer task of the same ``newest`` key was put on the lane since."""
        return self.newest is not None and self.lane.latest(self.newest) is not self

    def obsolete(self) -> bool:
        """Nobody wants the answer any more: cancelled, superseded, or its lane closed."""
        return self._cancelled or self.lane.closed or self.superseded()

    @property
    def ended(self) -> bool:
        """The work ran (or was skipped): nothing of it runs any more."""
        return self._ended.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the work ran or was skipped (not for its delivery); False on timeout."""
        return self._ended.wait(timeout)

    def _end(self, state: str) -> None:
        self.state = state
        self._ended.set()


class Lane:
    """A queue of work with its own threads (see the module docstring); made by :meth:`TaskRunner.lane`."""

    def __init__(self, runner: TaskRunner, name: str, workers: int = 1) -> None:
        self.runner = runner
        self.name = name
        self.workers = workers
        self._queue: collections.deque[Task[Any]] = collections.deque()
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._latest: dict[Hashable, Task[Any]] = {}
        self._pending = 0  # queued or running
        self._closed = False

    # ------------------------------------------------------------------ putting work on it

    def run(
        self,
        work: Callable[[], T],
        done: Callable[[T], object] | None = None,
        failed: Callable[[Exception], object] | None = None,
        *,
        owner: QObject | None = None,
        newest: Hashable | None = None,
        abandon: bool = False,
        made_old: bool = False,
    ) -> Task[T]:
        """Run ``work()`` on this lane's thread after the work queued before it; then ``done(result)``
        or ``failed(exception)`` on the GUI thread.

        ``owner``: nothing is delivered once this QObject was deleted. ``newest``: a key; work put
        on the lane later with the same key supersedes this one (skipped if queued, its answer never
        delivered). ``abandon``: the work may be stopped at any pacing checkpoint once it is obsolete
        (only for work that leaves nothing half done: it builds something new and returns it).
        ``made_old``: what the work allocates is made old at once. On a closed lane the work never
        runs (the task is returned cancelled)."""
        task: Task[T] = Task(self, work, done, failed, owner, newest, abandon, made_old)
        with self._cond:
            if self._closed:
                task.cancel()
                task._end(_CANCELLED)
                return task
            self._queue.append(task)
            self._pending += 1
            if newest is not None:
                self._latest[newest] = task
            if len(self._threads) < self.workers:
                self._start_thread()
            self._cond.notify()
        return task

    def _start_thread(self) -> None:
        number = len(self._threads) + 1
        thread = threading.Thread(
            target=self._serve,
            name=f"keepgui-{self.name}" + (f"-{number}" if self.workers > 1 else ""),
            # Daemon: an idle lane never keeps the process from exiting; the runner's exit hook
            # joins the lanes (running work finishes, queued work is dropped) before the
            # interpreter goes.
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def latest(self, key: Hashable) -> Task[Any] | None:
        """The newest task put on the lane with ``newest`` key ``key``."""
        return self._latest.get(key)

    # ------------------------------------------------------------------ the lane's threads

    def _serve(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return  # closed, and its queue was dropped
                task = self._queue.popleft()
            handed_over = False
            try:
                handed_over = self._execute(task)
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()
                if not handed_over:
                    self.forget(task)
                task._end(_CANCELLED if task.state == _CANCELLED else _FINISHED)

    def forget(self, task: Task[Any]) -> None:
        """The task's answer was delivered (or never will be): if nothing newer was asked with its
        ``newest`` key, the lane lets go of the key (a widget, say)."""
        if task.newest is not None:
            with self._cond:
                if self._latest.get(task.newest) is task:
                    del self._latest[task.newest]

    def _execute(self, task: Task[Any]) -> bool:
        """Run a task; True when its answer was handed to the GUI thread."""
        if task.obsolete():
            task.state = _CANCELLED
            return False
        task.state = _RUNNING

        # No checkpoint of its own before the work: the work's first one comes soon enough, and one
        # at every start delayed the first show of a 100,000-row bank by 1.7 s (bench_block: each of
        # the load's many small tasks waited out a busy GUI thread before doing anything).
        def guarded() -> Any:
            return pace.unless_obsolete(task.work, task.obsolete) if task.abandon else task.work()

        try:
            task.result = pace.made_old(guarded) if task.made_old else guarded()
        except pace.Cancelled:
            task.state = _CANCELLED
            return False
        except Exception as exc:  # noqa: BLE001 - delivered to `failed` on the GUI thread (or logged)
            task.error = exc
        if (task.done is None and task.failed is None and task.error is None) or self._closed:
            return False  # nobody waits for this answer
        try:
            self.runner.finished.emit(task)
        except RuntimeError:  # the runner went with the application
            return False
        return True

    # ------------------------------------------------------------------ state

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called: no more work runs here."""
        return self._closed

    def pending(self) -> int:
        """Tasks queued or running."""
        with self._cond:
            return self._pending

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until the work put on the lane so far has run (False on timeout, or a closed lane)."""
        return self.run(lambda: None).wait(timeout) and not self._closed

    def close(self, wait: bool = True) -> None:
        """No more work: the queued work is dropped, the running work is told it is obsolete, and
        (``wait``) the lane's threads are joined (not from one of them)."""
        with self._cond:
            self._closed = True
            dropped = list(self._queue)
            self._queue.clear()
            self._pending -= len(dropped)
            self._cond.notify_all()
            threads = list(self._threads)
        for task in dropped:
            task.cancel()
            task._end(_CANCELLED)
        if wait:
            me = threading.current_thread()
            for thread in threads:
                if thread is not me:
                    thread.join()


class TaskRunner(QObject):
    """The window's lanes, and the delivery of their answers on the GUI thread.

    Signals:
        finished(object task): internal; a worker hands a finished task to the GUI thread.
    """

    finished = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._lanes: list[Lane] = []
        self._lock = threading.Lock()
        self.finished.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def lane(self, name: str, workers: int = 1) -> Lane:
        """A new lane (its threads start with its first work); ``name`` names its threads."""
        lane = Lane(self, name, workers)
        with self._lock:
            self._lanes = [other for other in self._lanes if not (other.closed and not other.pending())]
            self._lanes.append(lane)
        return lane

    def lanes(self) -> list[Lane]:
        """Every lane not yet closed."""
        with self._lock:
            return [lane for lane in self._lanes if not lane.closed]

    def _deliver(self, task: Task[Any]) -> None:
        try:
            self._answer(task)
        finally:
            task.lane.forget(task)

    def _answer(self, task: Task[Any]) -> None:
        if task.obsolete():
            return  # a newer request won, or nobody is left to tell
        owner = task.owner
        if owner is not None and not shiboken6.isValid(owner):
            return
        error = task.error
        if error is None:
            if task.done is not None:
                task.done(task.result)
        elif task.failed is not None:
            task.failed(error)
        else:
            log.error("background work on lane %s failed", task.lane.name, exc_info=error)

    def shutdown(self, wait: bool = True) -> None:
        """Close every lane (see :meth:`Lane.close`)."""
        with self._lock:
            lanes = list(self._lanes)
        for lane in lanes:
            lane.close(wait=False)
        if wait:
            for lane in lanes:
                lane.close(wait=True)


_runner: TaskRunner | None = None
_runner_lock = threading.Lock()


def runner() -> TaskRunner:
    """The process's runner (made on first use, in the thread that will be the GUI thread)."""
    global _runner
    with _runner_lock:
        if _runner is None:
            _runner = TaskRunner()
            app = QCoreApplication.instance()
            if app is not None and _runner.thread() is not app.thread():
                _runner.moveToThread(app.thread())
            atexit.register(_runner.shutdown)
        return _runner


def lane(name: str, workers: int = 1) -> Lane:
    """A new lane of the process's runner (see :meth:`TaskRunner.lane`)."""
    return runner().lane(name, workers)
