"""The window's link to the files: open sources, background loading, live reload, writes.

:class:`Hub` owns every open source (an iii data dir, later also nanobot
workspaces), one background thread per source that loads and refreshes its
banks, and a :class:`~keepgui.core.watch.Watcher` on their folders. Results
come back to the GUI thread by signal; a background thread never touches a
widget.

Locking: each bank has a lock held while its log is read or written, so a
refresh on the background thread and a mutation on the GUI thread never
interleave; a short source lock guards the data dir's bank cache. Mutations
run on the GUI thread (an append and an fsync take milliseconds), and the
request that a running worker reload runs on a helper thread so a slow
``iii`` never freezes the window.

Signals:
    sourcesChanged(): a source was added or removed.
    banksChanged(str source): banks appeared, vanished or changed counts.
    bankRows(object key, list rows, bool final): rows of a bank, as they load or change.
    bankProgress(object key, int done, int total): bytes of a long load.
    bankFailed(object key, str reason): a bank could not be read.
    rulesChanged(object key): rule files of a bank changed on disk.
    documentsChanged(str source, list names): documents of a nanobot workspace changed on disk.
    keepChanged(str source, object before, object after): keep.md was rewritten by someone else
        (the KeepDoc before and after).
    previewReady(object key, int token, object result): a preview asked for with ``token``
        (a Preview, a nanobot PromptPreview, or an Exception to show).
    rankingReady(object key, int token, object scores): recall scores (id -> score) for the
        ranked search, or an Exception.
    planReady(object key, str kind, object plan): a compaction plan (``compact``) or a review
        of an outside rewrite (``review:keep.md`` / ``review:MEMORY.md``), or an Exception.
    historyReady(object key, str id, list revisions): the revisions of one memory.
    note(str): a short status-bar note ("main: 3 memories added").
    error(str): something a person must see (a banner).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal

from keepgui.core.errors import KeepguiError
from keepgui.core.history import History
from keepgui.core.nanobot.documents import DOCUMENTS
from keepgui.core.nanobot.keep import KeepStore
from keepgui.core.nanobot.workspace import Workspace
from keepgui.core.iii.config import MemoryConfig
from keepgui.core.iii.log import LOG_NAME
from keepgui.core.iii.preview import BankEngine, WhatIf
from keepgui.core.iii.store import BANK_YAML, RULES_DIR, TRASH_DIR, BankInfo, DataDir, TrashedBank
from keepgui.core.iii.worker import NOT_SEEN, ReloadOutcome, WorkerLink
from keepgui.core.watch import ChangeSet, Watcher
from keepgui.ui.keeprows import KeepRow, keep_rows

# Seconds between progressive row deliveries while a bank loads.
_PROGRESSIVE_ROWS_INTERVAL = 0.5


@dataclass(frozen=True)
class BankKey:
    """Which bank: the source folder and the bank name."""

    source: str
    bank: str

    def __str__(self) -> str:
        return self.bank


class _AsyncWorkerLink:
    """A WorkerLink whose reload runs on a helper thread and reports failures by callback."""

    def __init__(self, link: WorkerLink, on_result: Callable[[ReloadOutcome], None]) -> None:
        self._link = link
        self._on_result = on_result
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-reload")

    def reload(self) -> ReloadOutcome:
        try:
            future = self._pool.submit(self._link.reload)
        except RuntimeError:  # the window is closing
            return ReloadOutcome(False, NOT_SEEN)
        future.add_done_callback(lambda f: self._on_result(f.result()))
        return ReloadOutcome(True, "asked a running worker to reload")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class IiiSource:
    """An open iii data dir: its DataDir, its background thread, and its locks."""

    kind = "iii"

    def __init__(self, path: str, link: _AsyncWorkerLink) -> None:
        self.path = os.path.abspath(path)
        self.datadir = DataDir(self.path, link)
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-load")
        self.lock = threading.RLock()
        self._bank_locks: dict[str, threading.RLock] = {}
        self.infos: dict[str, BankInfo] = {}
        self.names: list[str] = []
        self.loaded: set[str] = set()
        self.trashed: list[TrashedBank] = []  # listed by each scan, off the GUI thread
        self.scans_requested = 0
        self.engines: dict[str, BankEngine] = {}
        self.config = MemoryConfig()

    @property
    def label(self) -> str:
        """How the sidebar names the source."""
        return f"iii · {short_path(self.path)}"

    def engine(self, name: str) -> BankEngine:
        """The recall/preview engine of a bank (made on first use; call with the bank's lock held)."""
        engine = self.engines.get(name)
        if engine is None or engine.bank is not self.bank(name):
            engine = self.engines[name] = BankEngine(self.bank(name), self.config)
        return engine

    def detail(self, name: str) -> str:
        """The sidebar's second line for a bank: counts, or why it cannot be read."""
        info = self.infos.get(name)
        if info is None:
            return "loading…"
        if not info.readable:
            return f"unreadable: {info.reason}"
        return f"{info.memories} memories · {info.pinned} pinned · {info.rules} rules"

    def bank_lock(self, name: str) -> threading.RLock:
        """The lock of one bank's log."""
        with self.lock:
            return self._bank_locks.setdefault(name, threading.RLock())

    def bank(self, name: str):
        """The core Bank object (raises NotFound)."""
        with self.lock:
            return self.datadir.bank(name)


RANKED_LIMIT = 100
"""Ranked search shows the recall API's maximum: the top 100 by fused score."""

KEEP_BANK = "keep.md"
"""The one "bank" of a nanobot workspace: its keep.md."""
DOCUMENT_FILES = frozenset(kind.rel for kind in DOCUMENTS.values())
"""The documents of a nanobot workspace that the window shows."""


class NanobotSource:
    """An open nanobot workspace: keep.md as rows, the Dream-managed documents, keepgui's history."""

    kind = "nanobot"

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.workspace = Workspace(self.path)
        self.history = History()
        self.store = KeepStore(self.workspace, self.history)
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-keep")
        self.lock = threading.RLock()
        self.names = [KEEP_BANK]
        self.loaded: set[str] = set()
        self.doc = None
        self.delivered: list[KeepRow] = []  # the rows last delivered
        self.problem = ""
        self.scans_requested = 0

    @property
    def label(self) -> str:
        """How the sidebar names the source."""
        return f"nanobot · {short_path(self.path)}"

    @property
    def infos(self) -> dict:
        """Loaded summaries by bank (keep.md only)."""
        return {KEEP_BANK: self.doc} if self.doc is not None else {}

    def detail(self, name: str) -> str:
        """The sidebar's second line for keep.md."""
        if self.problem:
            return f"unreadable: {self.problem}"
        if self.doc is None:
            return "loading…"
        due = " · compaction due" if self.doc.compaction_due else ""
        return f"{self.doc.entry_count} entries · {self.doc.line_count} lines{due}"

    def bank_lock(self, name: str) -> threading.RLock:
        """keep.md has one lock: the source's."""
        return self.lock


def short_path(path: str, limit: int = 0) -> str:
    """``path`` with the home folder written as ``~``, and elided in the middle beyond ``limit`` characters."""
    home = os.path.expanduser("~")
    path = "~" + path[len(home):] if path.startswith(home + os.sep) else path
    if limit and len(path) > limit:
        keep = limit - 1
        path = path[: keep // 3] + "…" + path[len(path) - (keep - keep // 3):]
    return path


class Hub(QObject):
    """Open sources, their background work, and the watcher (see the module docstring)."""

    sourcesChanged = Signal()
    banksChanged = Signal(str)
    bankRows = Signal(object, list, bool)
    bankProgress = Signal(object, int, int)
    bankFailed = Signal(object, str)
    rulesChanged = Signal(object)
    documentsChanged = Signal(str, list)
    keepChanged = Signal(str, object, object)
    previewReady = Signal(object, int, object)
    planReady = Signal(object, str, object)
    rankingReady = Signal(object, int, object)
    historyReady = Signal(object, str, list)
    note = Signal(str)
    error = Signal(str)
    _changes = Signal(object)
    _scanned = Signal(str)

    def __init__(self, parent=None, reload_command: str | None = None, watch: bool = True) -> None:
        super().__init__(parent)
        self.sources: dict[str, IiiSource | NanobotSource] = {}
        self._link = _AsyncWorkerLink(WorkerLink(reload_command), self._on_reload_result)
        # Previews and rankings answer as the person types: their own thread, so a long
        # load of another bank never delays them.
        self._query_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-preview")
        self._pending = 0  # background tasks queued or running (see busy())
        self._pending_lock = threading.Lock()
        self._query_latest: dict[str, int] = {}
        self._closed = False
        self._changes.connect(self._on_changes)
        self._scanned.connect(self._count_banks, Qt.ConnectionType.QueuedConnection)
        self._watcher = Watcher(self._changes.emit) if watch else None
        if self._watcher is not None:
            self._watcher.start()

    def _submit(self, executor, fn, *args) -> None:
        """Queue background work, unless the hub is shut down (late timers must not fail)."""
        if self._closed:
            return
        with contextlib.suppress(RuntimeError):  # that source was closed meanwhile: its work no longer matters
            future = executor.submit(fn, *args)
            with self._pending_lock:
                self._pending += 1
            future.add_done_callback(self._task_done)

    def _task_done(self, _future) -> None:
        with self._pending_lock:
            self._pending -= 1

    def busy(self) -> bool:
        """True while background work (a scan, a bank load, a preview…) is queued or running."""
        with self._pending_lock:
            return self._pending > 0

    def shutdown(self) -> None:
        """Stop the watcher and the background threads (the window is closing)."""
        self._closed = True
        if self._watcher is not None:
            self._watcher.stop()
        for source in self.sources.values():
            source.executor.shutdown(wait=True, cancel_futures=True)
        self._query_pool.shutdown(wait=True, cancel_futures=True)
        self._link.shutdown()

    # ------------------------------------------------------------------ sources

    def add(self, kind: str, path: str) -> IiiSource | NanobotSource:
        """Open a source of ``kind``: ``nanobot`` (a workspace) or else ``iii`` (a data dir)."""
        return self.add_nanobot(path) if kind == "nanobot" else self.add_iii(path)

    def add_iii(self, path: str) -> IiiSource:
        """Open an iii data dir (idempotent) and start loading its banks in the background."""
        return self._add(path, lambda p: IiiSource(p, self._link))

    def add_nanobot(self, path: str) -> NanobotSource:
        """Open a nanobot workspace (idempotent) and read its keep.md in the background."""
        return self._add(path, NanobotSource)

    def _add(self, path: str, make):
        path = os.path.abspath(path)
        if path in self.sources:
            return self.sources[path]
        source = self.sources[path] = make(path)
        if self._watcher is not None:
            self._watcher.watch(path)
        self.sourcesChanged.emit()
        self.rescan(path)
        return source

    def remove_source(self, path: str) -> None:
        """Close a source (nothing on disk changes)."""
        source = self.sources.pop(path, None)
        if source is None:
            return
        if self._watcher is not None:
            self._watcher.unwatch(path)
        source.executor.shutdown(wait=False, cancel_futures=True)
        self.sourcesChanged.emit()

    def source(self, path: str) -> IiiSource:
        """An open source by folder."""
        return self.sources[path]

    def rescan(self, path: str) -> None:
        """Re-list the banks of a source and load every one of them (counts for the sidebar)."""
        source = self.sources.get(path)
        if source is None:
            return
        if self._watcher is not None and path not in self._watcher.roots:
            self._watcher.watch(path)  # the folder may have been created since
        source.scans_requested += 1
        if source.kind == "nanobot":
            self._submit(source.executor, self._keep_sync, source, BankKey(path, KEEP_BANK), False)
            return
        self._submit(source.executor, self._scan_task, source, source.scans_requested)

    def _scan_task(self, source: IiiSource, number: int) -> None:
        if number != source.scans_requested:
            return  # a newer scan is queued; a stale listing must not undo what the window just did
        try:
            with source.lock:
                banks = source.datadir.banks()
                trashed = source.datadir.trashed()
            source.names = [b.name for b in banks]
            source.trashed = trashed
            for gone in set(source.infos) - set(source.names):
                source.infos.pop(gone, None)
                source.loaded.discard(gone)
            self.banksChanged.emit(source.path)
            self._scanned.emit(source.path)
        except (KeepguiError, OSError) as exc:
            self.error.emit(f"{source.path}: {exc}")

    def _count_banks(self, path: str) -> None:
        # Queued behind the banksChanged delivery, so the bank the window opens on
        # that signal is loaded first (with progress); the others are counted after.
        source = self.sources.get(path)
        if source is not None:
            for name in source.names:
                if name not in source.loaded:
                    self._submit(source.executor, self._count_task, source, name)

    def _count_task(self, source: IiiSource, name: str) -> None:
        # The source's executor has one thread: a load queued before this task (the bank
        # the window opened) has finished by now, and need not be read a second time.
        if name not in source.loaded:
            self._sync(source, BankKey(source.path, name))

    def open_bank(self, key: BankKey) -> None:
        """Deliver every row of a bank (loading it in the background if needed, with progress)."""
        source = self.sources.get(key.source)
        if source is not None:
            task = self._keep_sync if source.kind == "nanobot" else self._sync
            self._submit(source.executor, task, source, key, True)

    def refresh_bank(self, key: BankKey) -> None:
        """Re-read a bank's log (incrementally) and deliver what changed."""
        source = self.sources.get(key.source)
        if source is not None:
            task = self._keep_sync if source.kind == "nanobot" else self._sync
            self._submit(source.executor, task, source, key)

    def _keep_sync(self, source: NanobotSource, key: BankKey, deliver_all: bool = False) -> None:
        """Read keep.md (and the entries keepgui removed); deliver the rows if anything changed."""
        try:
            before, doc, _ = self._deliver_keep(source, key, always=deliver_all)
        except (KeepguiError, OSError) as exc:
            source.problem = str(exc)
            self.bankFailed.emit(key, str(exc))
            self.banksChanged.emit(source.path)
            return
        if before is not None and before.stamp.sha256 != doc.stamp.sha256 and not deliver_all:
            self.note.emit(f"keep.md changed on disk: {doc.entry_count} entries (was {before.entry_count})")
            self.keepChanged.emit(source.path, before, doc)

    def keep_change(self, key: BankKey, change: Callable[[Any], Any]) -> Any:
        """Run ``change(store)`` on a workspace's KeepStore on the GUI thread and deliver the rows."""
        return self._deliver_keep(self.sources[key.source], key, change)[2]

    def _deliver_keep(self, source: NanobotSource, key: BankKey, change: Callable[[Any], Any] | None = None,
                      always: bool = True) -> tuple[Any, Any, Any]:
        """Run ``change(store)`` if given, then read keep.md and the removed entries, all under the
        source's lock, and deliver every row (unless ``always`` is False and neither keep.md's hash
        nor the rows changed: the watcher's echo of our own write). Returns ``(doc before, doc, result)``."""
        with source.lock:
            before = source.doc
            result = change(source.store) if change is not None else None
            doc = source.store.load()
            rows = keep_rows(doc, source.store.removed())
            changed = before is None or before.stamp.sha256 != doc.stamp.sha256 or rows != source.delivered
            source.doc, source.delivered, source.problem = doc, rows, ""
            source.loaded.add(KEEP_BANK)
        if always or changed:
            self.bankRows.emit(key, rows, True)
            self.banksChanged.emit(source.path)
        return before, doc, result

    def _sync(self, source: IiiSource, key: BankKey, deliver_all: bool = False) -> None:
        """Bring one bank up to date; every change found is delivered (never swallowed)."""
        try:
            bank = source.bank(key.bank)
            with source.bank_lock(key.bank):
                first = key.bank not in source.loaded
                shown = 0
                next_rows = 0.0

                def progress(done: int, total: int) -> None:
                    nonlocal shown, next_rows
                    if not deliver_all:
                        return
                    self.bankProgress.emit(key, done, total)
                    now = time.monotonic()
                    if now < next_rows:
                        return
                    # The first chunk at once, then at most a few times a second:
                    # every delivery costs the table a layout pass on the GUI thread.
                    next_rows = now + _PROGRESSIVE_ROWS_INTERVAL
                    records = bank.log.records
                    # New ids are appended to the dict: show them while the rest loads.
                    rows = list(itertools.islice(records.values(), shown, None))
                    shown = len(records)
                    self.bankRows.emit(key, rows, False)

                delta = bank.refresh(progress)
                engine = source.engines.get(key.bank)
                if engine is not None:
                    engine.sync(delta)
                source.loaded.add(key.bank)
                info = bank.info()
                info_changed = source.infos.get(key.bank) != info
                source.infos[key.bank] = info
                records = bank.log.records
                if deliver_all or delta.reset:
                    rows, final = list(records.values()), True
                else:
                    rows, final = [records[i] for i in delta.changed], False
                reason = bank.log.unreadable
        except (KeepguiError, OSError) as exc:
            source.infos.pop(key.bank, None)
            self.bankFailed.emit(key, str(exc))
            self.banksChanged.emit(key.source)
            return
        if reason:
            self.bankFailed.emit(key, reason)
        if final or rows:
            self.bankRows.emit(key, rows, final)
        if first or final or rows or info_changed:
            self.banksChanged.emit(key.source)
        if first or delta.empty:
            return
        if delta.reset:
            self.note.emit(f"{key.bank}: reloaded ({LOG_NAME} was replaced or rewritten)")
        elif delta.changed:
            self.note.emit(f"{key.bank}: {_count(len(delta.added), 'memory', 'memories')} added, "
                           f"{len(delta.changed) - len(delta.added)} changed")
        for problem in delta.new_problems:
            self.note.emit(f"{key.bank}: {problem.describe(LOG_NAME)}")

    def set_config(self, source_path: str, config: MemoryConfig) -> None:
        """The worker settings previews and rankings of a data dir use."""
        source = self.sources.get(source_path)
        if source is not None and source.kind == "iii":
            source.config = config
            for engine in source.engines.values():
                engine.config = config

    def _submit_query(self, kind: str, key: BankKey, token: int, work: Callable[[], Any], done: Signal) -> None:
        self._query_latest[kind] = token

        def run() -> None:
            if self._query_latest.get(kind) != token:
                return  # the person typed on: only the newest question is worth answering
            try:
                result = work()
            except Exception as exc:  # shown in the pane, never raised into Qt
                result = exc
            done.emit(key, token, result)

        self._submit(self._query_pool, run)

    def request_preview(self, key: BankKey, query: str, token: int, whatif: WhatIf | None = None,
                        now_ms: int | None = None) -> None:
        """Compute what a turn with ``query`` would be given, off the GUI thread (previewReady)."""
        source = self.sources.get(key.source)
        if source is None:
            return
        if source.kind == "nanobot":
            from keepgui.core.nanobot.prompt import build_preview

            self._submit_query("preview", key, token, lambda: build_preview(source.workspace), self.previewReady)
            return

        if key.bank not in source.loaded:
            return  # the bank's own load (with progress) comes first; its rows trigger a new request

        def work():
            with source.bank_lock(key.bank):
                return source.engine(key.bank).preview(query, now_ms=now_ms, whatif=whatif)

        self._submit_query("preview", key, token, work, self.previewReady)

    def request_ranking(self, key: BankKey, query: str, token: int) -> None:
        """Recall scores of every memory matching ``query`` (rankingReady), for the ranked search."""
        source = self.sources.get(key.source)
        if source is None or source.kind != "iii" or key.bank not in source.loaded:
            return

        def work():
            with source.bank_lock(key.bank):
                result = source.engine(key.bank).recall(query, limit=RANKED_LIMIT)
            return {hit.memory.id: hit.score for hit in result.hits}

        self._submit_query("ranking", key, token, work, self.rankingReady)

    def request_plan(self, key: BankKey, kind: str = "compact", **options) -> None:
        """Compute a compaction plan or a review in the background (planReady)."""
        source = self.sources.get(key.source)
        if source is not None:
            self._submit(source.executor, self._plan_task, source, key, kind, options)

    def _plan_task(self, source, key: BankKey, kind: str, options: dict) -> None:
        try:
            if source.kind == "nanobot":
                from keepgui.core.nanobot.compact import plan_keep, review

                with source.lock:
                    if kind.startswith("review:"):
                        plan = review(source.workspace, kind.split(":", 1)[1], history=source.history)
                    else:
                        plan = plan_keep(source.workspace, history=source.history, **options)
            else:
                from keepgui.core.iii.consolidate import plan_bank

                with source.bank_lock(key.bank):
                    bank = source.bank(key.bank)
                    plan = plan_bank(bank, **options)
        except (KeepguiError, OSError) as exc:
            plan = exc
        self.planReady.emit(key, kind, plan)

    def run_locked(self, key: BankKey, action: Callable[[], Any]) -> Any:
        """Run a write (a compaction apply, undo or redo) under the bank's lock, then deliver what changed."""
        source = self.sources[key.source]
        if source.kind == "nanobot":
            return self.keep_change(key, lambda store: action())
        with source.bank_lock(key.bank):
            bank = source.bank(key.bank)
            before = dict(bank.log.records)
            try:
                result = action()
            finally:
                # The apply's own batch refreshed the log; compare records to find every change.
                delta = bank.refresh()
                records = bank.log.records
                reset = delta.reset
                rows = list(records.values()) if reset else \
                    [m for mid, m in records.items() if before.get(mid) is not m]
                source.infos[key.bank] = bank.info()
        if rows or reset:
            self.bankRows.emit(key, rows, reset)
        self.banksChanged.emit(key.source)
        return result

    def request_history(self, key: BankKey, memory_id: str) -> None:
        """Read every revision of one memory in the background (delivered by historyReady)."""
        source = self.sources.get(key.source)
        if source is not None:
            self._submit(source.executor, self._history_task, source, key, memory_id)

    def _history_task(self, source: IiiSource, key: BankKey, memory_id: str) -> None:
        try:
            with source.bank_lock(key.bank):
                revisions = source.bank(key.bank).log.history(memory_id)
        except (KeepguiError, OSError):
            revisions = []
        self.historyReady.emit(key, memory_id, revisions)

    def mutate(self, key: BankKey, change: Callable[[Any], Any]) -> Any:
        """Run ``change(batch)`` as one locked append on the GUI thread; deliver the new rows.

        Returns what ``change`` returned; raises KeepguiError (nothing written) on refusal.
        """
        source = self.sources[key.source]
        bank = source.bank(key.bank)
        with source.bank_lock(key.bank):
            with bank.batch() as batch:
                result = change(batch)
            # Deliver everything the batch's refreshes consumed, others' appends included.
            records = bank.log.records
            if any(d.reset for d in batch.deltas):
                rows, final = list(records.values()), True
            else:
                ids = dict.fromkeys(i for d in batch.deltas for i in d.changed)
                rows, final = [records[i] for i in ids], False
            source.infos[key.bank] = bank.info()
        if rows or final:
            self.bankRows.emit(key, rows, final)
            self.banksChanged.emit(key.source)
        return result

    def detail(self, key: BankKey) -> str:
        """The one-line summary of a bank (counts, or why it cannot be read)."""
        source = self.sources.get(key.source)
        return "" if source is None else source.detail(key.bank)

    # ------------------------------------------------------------------ watching

    def _on_changes(self, changes: ChangeSet) -> None:
        for source in list(self.sources.values()):
            if source.kind == "nanobot":
                self._on_workspace_changes(source, changes)
                continue
            rescan = False
            touched_logs: set[str] = set()
            touched_rules: set[str] = set()
            for parts in changes.under(source.path):
                if not parts or parts[0] == TRASH_DIR:
                    rescan = True
                    continue
                if parts[0].startswith("."):
                    continue
                if len(parts) == 1:
                    # Usually a file in the bank changed (its folder's own event): rescan only
                    # when a bank folder appeared or vanished.
                    listed = parts[0] in source.names
                    rescan = rescan or listed != os.path.isdir(os.path.join(source.path, parts[0]))
                elif parts[1] == BANK_YAML:
                    rescan = True  # a bank was described
                elif parts[1] == LOG_NAME:
                    touched_logs.add(parts[0])
                elif parts[1] == RULES_DIR:
                    touched_rules.add(parts[0])
            for name in sorted(touched_rules):
                self.rulesChanged.emit(BankKey(source.path, name))
                self.note.emit(f"{name}: rules changed on disk")
                if name in source.names:
                    touched_logs.add(name)  # its refresh recounts the rules
                else:
                    rescan = True  # a new bank with only rules so far
            if rescan:
                self.rescan(source.path)
            for name in sorted(touched_logs):
                if name in source.loaded or name in source.names:
                    self.refresh_bank(BankKey(source.path, name))

    def _on_workspace_changes(self, source: NanobotSource, changes: ChangeSet) -> None:
        touched = {"/".join(parts) for parts in changes.under(source.path) if parts}
        if KEEP_BANK in touched:
            self.refresh_bank(BankKey(source.path, KEEP_BANK))
        documents = sorted(t for t in touched if t in DOCUMENT_FILES)
        if documents:
            self.documentsChanged.emit(source.path, documents)
            self.note.emit(f"{', '.join(documents)} changed on disk")

    def _on_reload_result(self, outcome: ReloadOutcome) -> None:
        if not outcome.ok:
            self.note.emit(outcome.message)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
