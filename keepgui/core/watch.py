"""Noticing when anyone changes the memory files: watchdog, debounced and coalesced.

Editors and agents write in bursts (a temp file, a rename, a close; or an
append, an fsync, a second append). :class:`Watcher` collects the paths that
changed and hands them over once, after ``quiet_ms`` without a new event (but
never later than ``max_delay_ms`` after the first one), as a :class:`ChangeSet`; a change that
is over within ``lead_ms`` (one appended line, one file renamed into place) goes out after only
``lead_ms`` of silence, so a single write shows at once while a burst is still coalesced. It is
delivered on the watcher's own thread. The caller bridges to its GUI thread
(the window does it with a queued Qt signal) and re-reads what changed; every
re-read is incremental, so coalescing only saves work, it never loses a change.

Paths of temporary files (ours and the worker's) are ignored: only the final
rename into place matters.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from keepgui.core import remote
from keepgui.core.fsio import is_temp_name
from keepgui.core.remote import live

_IGNORED_EVENTS = {"opened", "closed_no_write"}

_INACTIVE_EMITTER = "called when the thread is inactive"


class _StoppedEmitterFilter(logging.Filter):
    """Drops the one ERROR record watchdog's inotify emitter logs when it is stopped while an
    event is arriving (watchdog 4-7: ``InotifyEmitter.queue_events() called when the thread is
    inactive``).

    Stopping an emitter unblocks its read; when that read returns an event, the emitter finds
    itself stopped, logs this and drops the event, which is what stopping asked for. Emitters
    stop only when a watch is removed or the observer stops, so the record never means a
    change was missed; every other record of watchdog is left alone.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return _INACTIVE_EMITTER not in record.getMessage()


logging.getLogger("watchdog.observers.inotify").addFilter(_StoppedEmitterFilter())


@dataclass(frozen=True)
class ChangeSet:
    """The paths that changed in one burst (absolute, normalised)."""

    paths: frozenset[str]

    def under(self, root: str) -> list[tuple[str, ...]]:
        """The changed paths below ``root``, each split into its parts relative to ``root``.

        A change of ``root`` itself (created, removed, renamed) yields ``()``.
        """
        root = os.path.normpath(os.path.abspath(root))
        prefix = root + os.sep
        out: list[tuple[str, ...]] = []
        for path in self.paths:
            if path == root:
                out.append(())
            elif path.startswith(prefix):
                out.append(tuple(path[len(prefix) :].split(os.sep)))
        return out

    def touches(self, path: str) -> bool:
        """True when ``path`` (a file) changed."""
        return os.path.normpath(os.path.abspath(path)) in self.paths


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        paths = [event.src_path]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(dest)
        self._watcher._note(p if isinstance(p, str) else os.fsdecode(p) for p in paths)


class Watcher:
    """Watches folders recursively and reports coalesced bursts of changes.

    ``on_changes(ChangeSet)`` is called on a background thread. Call
    :meth:`stop` before dropping the watcher.
    """

    def __init__(
        self,
        on_changes: Callable[[ChangeSet], None],
        quiet_ms: int = 250,
        max_delay_ms: int = 1000,
        lead_ms: int = 30,
        observer_factory: Callable[[], BaseObserver] = Observer,
    ) -> None:
        self._on_changes = on_changes
        self._quiet = quiet_ms / 1000
        self._lead = min(lead_ms, quiet_ms) / 1000
        self._max_delay = max_delay_ms / 1000
        self._observer = observer_factory()
        self._observer.daemon = True
        self._handler = _Handler(self)
        self._watches: dict[str, ObservedWatch] = {}
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._first_at = 0.0
        self._last_at = 0.0
        self._wake = threading.Event()
        self._stopped = False
        self._flusher = threading.Thread(target=self._flush_loop, name="keepgui-watch-flush", daemon=True)
        self._started = False

    def start(self) -> None:
        """Start watching (idempotent)."""
        if not self._started:
            self._started = True
            self._observer.start()
            self._flusher.start()

    def stop(self) -> None:
        """Stop watching and deliver nothing more."""
        self._stopped = True
        self._wake.set()
        for root in self._watches:
            if remote.is_mirror_path(root):
                live.unfollow(root)
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)

    def watch(self, root: str) -> bool:
        """Watch ``root`` recursively; False when it does not exist (nothing to watch yet)."""
        root = os.path.normpath(os.path.abspath(root))
        if root in self._watches:
            return True
        if not os.path.isdir(root):
            return False
        self._watches[root] = self._observer.schedule(self._handler, root, recursive=True)
        if remote.is_mirror_path(root):
            live.follow(root)  # a folder on another machine: polled, its changes land in the mirror watched here
        return True

    def unwatch(self, root: str) -> None:
        """Stop watching ``root``."""
        root = os.path.normpath(os.path.abspath(root))
        watch = self._watches.pop(root, None)
        if watch is not None and remote.is_mirror_path(root):
            live.unfollow(root)
        if watch is not None:
            with contextlib.suppress(KeyError, ValueError):  # the folder went away and its watch with it
                self._observer.unschedule(watch)

    @property
    def roots(self) -> list[str]:
        """The folders being watched."""
        return sorted(self._watches)

    def _note(self, paths: Iterable[str]) -> None:
        now = time.monotonic()
        with self._lock:
            added = False
            for path in paths:
                if is_temp_name(os.path.basename(path)):
                    continue
                self._pending.add(os.path.normpath(path))
                added = True
            if not added:
                return
            if not self._first_at:
                self._first_at = now
            self._last_at = now
        self._wake.set()

    def _flush_loop(self) -> None:
        while True:  # stop() sets the wake event, so a stop is seen here
            self._wake.wait()
            if self._stopped:
                return
            batch: frozenset[str] = frozenset()
            while True:
                with self._lock:
                    now = time.monotonic()
                    # A change that is over within the lead (one appended line, one file renamed into
                    # place) goes out after the lead's silence, at once; one that goes on longer is a
                    # burst, coalesced until the quiet period passes without a new event.
                    short = self._last_at - self._first_at < self._lead
                    due_quiet = self._last_at + (self._lead if short else self._quiet)
                    due_max = self._first_at + self._max_delay
                    due = min(due_quiet, due_max)
                    if now >= due:
                        batch = frozenset(self._pending)
                        self._pending.clear()
                        self._first_at = self._last_at = 0.0
                        self._wake.clear()
                        break
                time.sleep(max(0.005, due - now))
            if batch and not self._stopped:
                try:
                    self._on_changes(ChangeSet(batch))
                except Exception:  # a failing consumer must not kill the watcher thread
                    logging.getLogger(__name__).exception("change handler failed")
