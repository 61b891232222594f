"""The window's link to the files: open sources, background loading, live reload, writes.

:class:`Hub` opens sources through the registry (:mod:`keepgui.core.registry`)
and talks to them only through the protocol of :mod:`keepgui.core.source`: it
never knows which backend a source is. Each source has one background thread
that lists and loads its banks (a lane of :mod:`keepgui.ui.tasks`); a
:class:`~keepgui.core.watch.Watcher` on their
folders tells the source which files changed, and the source says what that
means (:meth:`~keepgui.core.source.Source.classify`). Results come back to the
GUI thread by signal; a background thread never touches a widget. The locks
belong to the backends: the hub and the window take none.

A person's write runs off the GUI thread too, on the hub's one lane of writes, in the order the
writes were asked for (:meth:`Hub.write`; the window's undo stack asks, see
:mod:`keepgui.ui.commands`); its Change comes back to the GUI thread and is delivered there.

Every change of rows, documents or banks — a person's write or one found on
disk — is one :class:`~keepgui.core.source.Change` on one signal, ``changed``;
views look at it and decide what to redraw. The watcher's echo of a write this
program made is recognised here, for every backend, from the stamps the
Change recorded (:meth:`Hub._is_echo`).

A view asks a bank a question (a plan, a check, a row's revisions, its activity, a preview, a
ranking) with :meth:`Hub.ask`: the question runs off the GUI thread, after the loads queued for
the bank's source (or, asked as the person types, on a lane of its own where the newest question
wins), and the answer — or the exception — comes back to the one who asked, on the GUI thread.

Signals:
    sourcesChanged(): a source was added or removed.
    banksChanged(str source): banks appeared, vanished or changed their summary.
    changed(object change): a Change (rows of a bank, its documents, a source's listing).
    written(object change): a Change this program made came back (every one, even one of no rows,
        documents or listing: an inbox entry accepted); its views were told first.
    bankProgress(object key, int done, int total): bytes of a long load.
    bankFailed(object key, str reason): a bank could not be read.
    note(str): a short status-bar note ("main: 3 memories added").
    error(str): something a person must see (a banner).
    attention(str): a lasting condition for a quiet indicator (a running agent could not be told to
        reload after a write: said once as a note, then only shown), or "" when it is over.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from types import EllipsisType
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Qt, Signal

from keepgui.core import pace, registry
from keepgui.core.errors import KeepguiError, NotFound
from keepgui.core.registry import Backend, OpenOptions
from keepgui.core.source import (
    DISK,
    Bank,
    BankKey,
    BankSummary,
    Capabilities,
    Change,
    Listing,
    Row,
    RowDelta,
    Source,
)
from keepgui.core.watch import ChangeSet, Watcher
from keepgui.ui import tasks
from keepgui.ui.tasks import Lane

# A long load shows its rows as they come: the first at once, then each time their number has
# at least doubled, up to this many (each delivery is every row so far, and the table sorts what it
# gets); past it, only the progress moves until the load is complete.
_PROGRESSIVE_ROWS_MAX = 100_000
# Seconds between progress reports (a load reports after every block it reads).
_PROGRESS_INTERVAL = 0.05

# Seconds the closing window waits for the writes asked for before (each one is bounded by the backend).
_WRITES_AT_EXIT = 60.0

RANKED_LIMIT = 100
"""Ranked search shows the recall API's maximum: the top 100 by fused score."""

T = TypeVar("T")


@dataclass
class _Opened:
    """What the hub keeps for an open source: the source, its lane, and what it last listed."""

    source: Source
    backend: Backend
    lane: Lane
    listing: Listing = field(default_factory=lambda: Listing(()))
    loaded: set[str] = field(default_factory=set)
    summaries: dict[str, BankSummary] = field(default_factory=dict)
    scans_requested: int = 0
    scans_done: int = 0
    own_reload: bool = False  # opened with a reload command of its own (the demo's none), not the hub's


class Hub(QObject):
    """Open sources, their background work, and the watcher (see the module docstring)."""

    sourcesChanged = Signal()
    banksChanged = Signal(str)
    changed = Signal(object)
    written = Signal(object)
    bankProgress = Signal(object, int, int)
    bankFailed = Signal(object, str)
    note = Signal(str)
    error = Signal(str)
    attention = Signal(str)
    _changes = Signal(object)
    _scanned = Signal(str)

    def __init__(
        self,
        parent: QObject | None = None,
        reload_command: str | None = None,
        watch: bool = True,
        report_follow_ups: bool = True,
    ) -> None:
        super().__init__(parent)
        # A write's follow-up (a running agent's reload) that fails: said once, then a quiet indicator;
        # never for the demo, whose copy no agent reads (report_follow_ups False).
        self._report_follow_ups = report_follow_ups
        self._follow_up_problem = ""
        self._opened: dict[str, _Opened] = {}
        self._reload_command = reload_command
        # A running agent's reload (iii trigger ...) runs on its own lane: a slow one never freezes the window.
        self._later = tasks.lane("reload")
        # Previews and rankings answer as the person types: their own lane, so a long
        # load of another bank never delays them.
        self._questions = tasks.lane("questions")
        # Every write of the window, one after another in the order they were asked for.
        self._writes = tasks.lane("writes")
        self._unsettled = 0  # writes asked for, not yet answered on the GUI thread
        self._lanes: list[Lane] = [self._questions, self._writes]  # the lanes whose work busy() counts
        self._written: dict[str, tuple[int, int] | None] = {}  # file -> (size, mtime_ns) a write of ours left;
        # None: a file or folder a write of ours took away (a bank moved to the trash)
        self._written_lock = threading.Lock()
        self._closed = False
        self._changes.connect(self._on_changes)
        self._scanned.connect(self._count_banks, Qt.ConnectionType.QueuedConnection)
        self._watcher = Watcher(self._changes.emit) if watch else None
        if self._watcher is not None:
            self._watcher.start()

    def _submit(self, lane: Lane, fn: Callable[..., Any], *args: Any) -> None:
        """Queue background work, unless the hub is shut down (late timers must not fail); work on
        the lane of a source closed meanwhile never runs."""
        if not self._closed:
            lane.run(lambda: fn(*args))

    def busy(self) -> bool:
        """True while background work (a scan, a bank load, a preview…) is queued or running."""
        self._lanes = [lane for lane in self._lanes if not (lane.closed and not lane.pending())]
        return any(lane.pending() for lane in self._lanes)

    def _run_later(self, work: Callable[[], str | None]) -> None:
        """Follow-up work of a write (a running agent's reload); a failure becomes a note."""
        if self._closed:
            raise RuntimeError("the hub is shut down")
        self._later.run(work, lambda problem: self._on_follow_up(problem or ""), owner=self)

    def _on_follow_up(self, problem: str) -> None:
        if not self._report_follow_ups or problem == self._follow_up_problem:
            return
        if problem:
            self.note.emit(problem)
        self._follow_up_problem = problem
        self.attention.emit(problem)

    def shutdown(self) -> None:
        """Stop the watcher and the background threads (the window is closing)."""
        self._writes.drain(_WRITES_AT_EXIT)  # a write asked for is made, not dropped
        self._closed = True
        self._writes.close(wait=True)
        if self._watcher is not None:
            self._watcher.stop()
        for opened in self._opened.values():
            opened.lane.close(wait=True)
        self._questions.close(wait=True)
        self._later.close(wait=False)

    # ------------------------------------------------------------------ sources

    @property
    def sources(self) -> dict[str, Source]:
        """Every open source by folder, in the order they were opened."""
        return {path: opened.source for path, opened in self._opened.items()}

    def add(self, kind: str, path: str, reload_command: str | EllipsisType | None = ...) -> Source:
        """Open the folder ``path`` as a source of ``kind`` (idempotent) and list its banks in the background.

        ``reload_command`` is the command that tells a running agent to reload after a write to this
        source; by default the hub's (which :meth:`set_reload_command` changes), "" for none (the demo).
        """
        path = os.path.abspath(path)
        opened = self._opened.get(path)
        if opened is not None:
            return opened.source
        backend = registry.backend(kind)
        own = not isinstance(reload_command, EllipsisType)
        command = reload_command if not isinstance(reload_command, EllipsisType) else self._reload_command
        source = registry.open_source(kind, path, OpenOptions(command, self._run_later))
        lane = tasks.lane(kind)
        self._lanes.append(lane)
        self._opened[path] = _Opened(source, backend, lane, own_reload=own)
        if self._watcher is not None:
            for root in _roots(source):
                self._watcher.watch(root)
        self.sourcesChanged.emit()
        self.rescan(path)
        return source

    def remove_source(self, path: str) -> None:
        """Close a source (nothing on disk changes)."""
        opened = self._opened.pop(path, None)
        if opened is None:
            return
        if self._watcher is not None:
            for root in _roots(opened.source):
                self._watcher.unwatch(root)
        opened.lane.close(wait=False)
        opened.source.close()
        self.sourcesChanged.emit()

    def set_reload_command(self, command: str | None) -> None:
        """The command that tells a running agent to reload after a write (a preference changed):
        for every source opened with the hub's, and those opened from now on."""
        self._reload_command = command
        for opened in self._opened.values():
            # A backend written before the protocol had this operation has no running agent to tell.
            setter = getattr(opened.source, "set_reload_command", None)
            if not opened.own_reload and setter is not None:
                setter(command)

    @property
    def reload_command(self) -> str | None:
        """The hub's reload command (None: each backend's default)."""
        return self._reload_command

    def source(self, path: str) -> Source:
        """An open source by folder (KeyError when it is not open)."""
        return self._opened[path].source

    def backend(self, path: str) -> Backend:
        """The registry's entry of an open source."""
        return self._opened[path].backend

    def banks(self, path: str) -> tuple[str, ...]:
        """The banks a source listed last."""
        opened = self._opened.get(path)
        return opened.listing.names if opened is not None else ()

    def trashed(self, path: str) -> tuple[Any, ...] | None:
        """The trashed banks a source listed last (None: the source has no trash)."""
        opened = self._opened.get(path)
        return opened.listing.trashed if opened is not None else None

    def bank(self, key: BankKey) -> Bank:
        """The Bank of a key (KeyError when its source is not open)."""
        return self._opened[key.source].source.bank(key.bank)

    def capabilities(self, key: BankKey) -> Capabilities:
        """What the bank can do."""
        return self.bank(key).capabilities

    def is_loaded(self, key: BankKey) -> bool:
        """True once the bank's rows were read."""
        opened = self._opened.get(key.source)
        return opened is not None and key.bank in opened.loaded

    def summary(self, key: BankKey) -> BankSummary | None:
        """The bank's summary as last loaded (None before its first load or after a failure)."""
        opened = self._opened.get(key.source)
        return opened.summaries.get(key.bank) if opened is not None else None

    def detail(self, key: BankKey) -> str:
        """The one-line summary of a bank (counts, or why it cannot be read)."""
        summary = self.summary(key)
        if summary is not None:
            return summary.detail
        return "loading…" if key.source in self._opened else ""

    def rows(self, key: BankKey) -> list[Row]:
        """The bank's rows as last loaded ([] before it is)."""
        return list(self.bank(key).rows()) if self.is_loaded(key) else []

    def is_listed(self, path: str, since: int = 1) -> bool:
        """True once a source has listed its banks (with ``since``: in a listing asked for as the
        ``since``-th or later, see :meth:`scan_count`)."""
        opened = self._opened.get(path)
        return opened is not None and opened.scans_done >= max(1, since)

    def scan_count(self, path: str) -> int:
        """How many listings of a source were asked for (a measure of wasted work)."""
        return self._opened[path].scans_requested

    def drain(self, path: str, timeout: float = 10.0) -> None:
        """Wait until the background work queued for a source so far has run."""
        opened = self._opened.get(path)
        if opened is not None:
            opened.lane.drain(timeout)

    def configure(self, path: str, values: dict[str, Any]) -> None:
        """Settings a person chose for a source (the preview's worker settings)."""
        opened = self._opened.get(path)
        if opened is not None:
            opened.source.configure(values)

    # ------------------------------------------------------------------ listing and loading

    def rescan(self, path: str) -> None:
        """Re-list the banks of a source and load every one of them (counts for the sidebar)."""
        opened = self._opened.get(path)
        if opened is None:
            return
        if self._watcher is not None:
            for root in _roots(opened.source):
                if root not in self._watcher.roots:
                    self._watcher.watch(root)  # the folder may have been created since
        opened.scans_requested += 1
        self._submit(opened.lane, self._scan_task, opened, opened.scans_requested)

    def _scan_task(self, opened: _Opened, number: int) -> None:
        if number != opened.scans_requested:
            return  # a newer scan is queued; a stale listing must not undo what the window just did
        try:
            listing = opened.source.scan()
        except (KeepguiError, OSError) as exc:
            self.error.emit(f"{opened.source.path}: {exc}")
            return
        opened.listing = listing
        opened.scans_done = number
        for gone in set(opened.summaries) - set(listing.names):
            opened.summaries.pop(gone, None)
        opened.loaded &= set(listing.names)
        self.banksChanged.emit(opened.source.path)
        self._scanned.emit(opened.source.path)

    def _count_banks(self, path: str) -> None:
        # Queued behind the banksChanged delivery, so the bank the window opens on
        # that signal is loaded first (with progress); the others are counted after.
        opened = self._opened.get(path)
        if opened is not None:
            for name in opened.listing.names:
                if name not in opened.loaded:
                    self._submit(opened.lane, self._count_task, opened, name)

    def _count_task(self, opened: _Opened, name: str) -> None:
        # The source's lane has one thread: a load queued before this task (the bank
        # the window opened) has finished by now, and need not be read a second time.
        if name not in opened.loaded:
            self._load(opened, BankKey(opened.source.path, name), False)

    def open_bank(self, key: BankKey) -> None:
        """Deliver every row of a bank (loading it in the background if needed, with progress)."""
        opened = self._opened.get(key.source)
        if opened is not None:
            self._submit(opened.lane, self._load, opened, key, True)

    def refresh_bank(self, key: BankKey) -> None:
        """Re-read a bank (incrementally where its backend can) and deliver what changed."""
        opened = self._opened.get(key.source)
        if opened is not None:
            self._submit(opened.lane, self._load, opened, key, False)

    def _load(self, opened: _Opened, key: BankKey, full: bool) -> None:
        """Bring one bank up to date on the source's thread; every change found is delivered."""
        next_report = 0.0
        shown = 0

        def progress(done: int, total: int, since: Callable[[], Any]) -> None:
            nonlocal next_report, shown
            now = time.monotonic()
            if now < next_report:
                return
            next_report = now + _PROGRESS_INTERVAL
            self.bankProgress.emit(key, done, total)
            if shown >= _PROGRESSIVE_ROWS_MAX:
                return
            rows = since()
            if len(rows) >= 2 * shown and rows:
                shown = len(rows)
                self.changed.emit(Change(key.source, key.bank, origin=DISK, rows=RowDelta(rows), partial=True))

        try:
            bank = opened.source.bank(key.bank)
            first = key.bank not in opened.loaded

            # A load allocates a bank's rows: made old at once, so no young collection walks them.
            def load() -> Change:
                return pace.made_old(lambda: bank.load(progress if full else None, full=full))

            # A bank already read, opened: the person waits for its rows, and other work waits for it.
            change = pace.urgent(load) if full and not first else load()
            summary = bank.summary()
        except (KeepguiError, OSError) as exc:
            opened.summaries.pop(key.bank, None)
            self.bankFailed.emit(key, str(exc))
            self.banksChanged.emit(key.source)
            return
        opened.loaded.add(key.bank)
        summary_changed = opened.summaries.get(key.bank) != summary
        opened.summaries[key.bank] = summary
        if summary.problem:
            self.bankFailed.emit(key, summary.problem)
        if change.rows or change.reviews or change.documents:  # a load may find the documents listed anew
            self.changed.emit(change)
        if first or change.rows.complete or change.rows or summary_changed:
            self.banksChanged.emit(key.source)
        for line in change.notes:
            self.note.emit(line)

    # ------------------------------------------------------------------ writes

    def target(self, target: BankKey | str) -> Any:
        """The Bank of a BankKey, or the Source of a source folder (NotFound when it is not open)."""
        try:
            return self.bank(target) if isinstance(target, BankKey) else self.source(target)
        except KeyError:
            where = target.source if isinstance(target, BankKey) else target
            raise NotFound(f"{where} is not open") from None

    def write(
        self,
        work: Callable[[], Change],
        done: Callable[[Change], object],
        failed: Callable[[Exception], object],
        *,
        wait: bool = False,
    ) -> None:
        """Run a write off the GUI thread, on the one lane of writes, after every write asked for
        before it: ``work()`` returns the Change a backend made; on the GUI thread that Change is
        delivered (:meth:`deliver`), then ``done(change)``; ``failed(exception)`` when it raised
        (nothing was written). ``wait``: the GUI thread waits for it (and the writes queued before
        it) and both run before this returns — only for a caller that must answer at once."""

        def written() -> Change:
            change = work()
            self._remember(change)  # before the watcher can report the files: they are ours
            return change

        def delivered(change: Change) -> None:
            self._unsettled -= 1
            self.deliver(change)
            done(change)

        def refused(exc: Exception) -> None:
            self._unsettled -= 1
            failed(exc)

        if self._closed:
            failed(KeepguiError("the window is closing: nothing was written"))
            return
        self._unsettled += 1
        if not wait:
            self._writes.run(written, delivered, refused)
            return
        task = self._writes.run(written, failed=_ignored)
        task.wait()
        if task.error is not None:
            refused(task.error)
        elif task.state == "finished" and task.result is not None:
            delivered(task.result)
        else:
            refused(KeepguiError("the window is closing: nothing was written"))

    def writing(self) -> int:
        """Writes asked for whose answer has not come back to the GUI thread yet."""
        return self._unsettled

    def perform(self, target: BankKey | str, operation: Callable[[Any], Change]) -> Change:
        """Run a write and deliver its Change, waiting for it (see :meth:`write`; the window's
        writes go through its undo stack instead, and do not wait).

        ``operation`` gets the Bank of a BankKey, or the Source of a source
        folder, and returns the Change the backend made. Raises what the backend
        raises (KeepguiError, OSError): nothing was written then.
        """
        answer: list[Change | Exception] = []
        self.write(lambda: operation(self.target(target)), answer.append, answer.append, wait=True)
        if isinstance(answer[0], Exception):
            raise answer[0]
        return answer[0]

    def deliver(self, change: Change) -> Change:
        """Tell every view about a Change this program made (an operation, its undo or redo)."""
        self._remember(change)
        opened = self._opened.get(change.source)
        if opened is None:
            return change
        summary_changed = False
        if change.bank is not None and change.bank in opened.loaded:
            with contextlib.suppress(KeepguiError, OSError):
                summary = opened.source.bank(change.bank).summary()
                summary_changed = opened.summaries.get(change.bank) != summary
                opened.summaries[change.bank] = summary
        if change.rows or change.documents or change.listing:
            self.changed.emit(change)
        if change.listing:
            self.rescan(change.source)
        elif change.documents and change.bank is not None:
            self.refresh_bank(BankKey(change.source, change.bank))  # e.g. a rule count in the summary
        if summary_changed or (change.rows and change.written):
            self.banksChanged.emit(change.source)
        for line in change.notes:
            self.note.emit(line)
        self.written.emit(change)
        return change

    # ------------------------------------------------------------------ questions answered in the background

    def ask(
        self,
        key: BankKey,
        question: Callable[[Bank], T],
        answer: Callable[[T | Exception], object],
        *,
        typing: Hashable | None = None,
        owner: QObject | None = None,
    ) -> None:
        """Ask the bank of ``key`` a question off the GUI thread: ``question(bank)`` runs there and
        ``answer`` gets what it returned, or the exception it raised, on the GUI thread.

        By default the question waits for the work queued for the bank's source (its load comes
        first: a plan, a check of its files, a row's revisions, its activity). Asked as the person
        types (``typing``: a key, the same for the same kind of question, e.g. ``"preview"``), it
        runs on the hub's lane of questions, where a long load never delays it and only the newest
        question of that key is answered; what it builds (an index of every row, the first time) is
        made old at once. ``owner``: nothing is answered once this QObject was deleted. Nothing is
        asked of a source that is not open, or once the hub is shut down."""
        opened = self._opened.get(key.source)
        if opened is None or self._closed:
            return
        source = opened.source

        def work() -> T:
            return question(source.bank(key.bank))

        if typing is None:
            opened.lane.run(work, answer, answer, owner=owner)
        else:
            self._questions.run(work, answer, answer, owner=owner, newest=typing, made_old=True)

    # ------------------------------------------------------------------ watching

    def _remember(self, change: Change) -> None:
        """Note the stamps a write of ours left, so the watcher's echo of it is known as ours (and
        the files and folders it took away: the echo of their removal too)."""
        with self._written_lock:
            for item in change.files:
                path = os.path.normpath(item.path)
                if item.stamp is None or not item.stamp.exists:
                    self._written[path] = None
                else:
                    self._written[path] = (item.stamp.size, item.stamp.mtime_ns)

    def _is_echo(self, root: str, parts: tuple[str, ...]) -> bool:
        """True when the file is still exactly as a write of this program left it (size and time),
        or is gone and a write of ours took it, or a folder above it, away."""
        path = os.path.normpath(os.path.join(root, *parts) if parts else root)
        with self._written_lock:
            mark = self._written.get(path, ())
            taken = mark is None or any(
                self._written.get(os.path.join(root, *parts[:n]), ()) is None for n in range(1, len(parts))
            )
        if not mark:  # no stamp of ours for the file itself: ours only if we took it away
            return taken and not os.path.lexists(path)
        try:
            st = os.stat(path)
        except OSError:
            return taken  # gone: ours when a write of ours took its folder away
        return (st.st_size, st.st_mtime_ns) == mark

    def _on_changes(self, changes: ChangeSet) -> None:
        for path, opened in list(self._opened.items()):
            parts = []
            for root in _roots(opened.source):
                for found in changes.under(root):
                    if self._is_echo(root, found):
                        continue
                    # a file of a folder outside the source: its parts relative to the source (``..`` first)
                    parts.append(
                        found
                        if root == path
                        else tuple(os.path.relpath(os.path.join(root, *found), path).split(os.sep))
                    )
            if not parts:
                continue
            plan = opened.source.classify(parts, opened.listing.names)
            for line in plan.notes:
                self.note.emit(line)
            for name in sorted(set(plan.documents) | set(plan.reviews)):
                self.changed.emit(
                    Change(
                        path,
                        name,
                        origin=DISK,
                        documents=plan.documents.get(name, frozenset()),
                        reviews=tuple(plan.reviews.get(name, ())),
                    )
                )
            if plan.rescan:
                self.rescan(path)
            for name in sorted(plan.refresh):
                if name in opened.loaded or name in opened.listing.names:
                    self.refresh_bank(BankKey(path, name))


def _ignored(_exc: Exception) -> None:
    """A waited-for write's failure is read off its task."""


def _roots(source: Source) -> list[str]:
    """The folders watched for a source: its own, then the ones outside it that matter to it."""
    return [source.path, *(os.path.abspath(p) for p in source.also_watched)]
