"""keepgui's own history of memory files, kept outside every workspace.

Nothing else versions keep.md (nanobot's git ignores it), and Dream rewrites
USER.md, SOUL.md and MEMORY.md whenever it runs. So every version of such a
file that keepgui has *seen* — loaded, or about to replace, or just written —
is stored here, and any rewrite (the agent compacting keep.md, Dream
reorganising MEMORY.md) can later be shown as a diff and undone. Entries
removed from keep.md are logged here too, so "forget" can always be undone.

Layout under ``<app data dir>/history/`` (``paths.app_data_dir()``)::

    blobs/<sha[:2]>/<sha256>        the bytes of one version (content-addressed)
    index/<sha256(path)[:24]>.jsonl one line per version of one file
    removed.jsonl                   "removed" and "restored" events

Every write goes through :mod:`keepgui.core.fsio`: blobs are written
atomically before the index line that names them, index lines are appended
under the index's lock (so two keepgui processes cannot both append the same
version), and a torn or corrupt index line is skipped and reported, never fatal.
Versions are deduplicated per file by SHA-256: recording what the latest
version already holds is a no-op.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from keepgui.core import fsio, pace
from keepgui.core.errors import KeepguiError, NotFound, Unreadable
from keepgui.core.jsonl import dump_line, json_objects
from keepgui.core.paths import app_data_dir
from keepgui.core.timefmt import now_ms

_HEX = set("0123456789abcdef")
_INDEX_LIMIT = 256 * 1024 * 1024
DEFAULT_CAP = 256 * 1024 * 1024
"""History's size cap in bytes unless ``$KEEPGUI_HISTORY_CAP`` (bytes) says otherwise (:meth:`History.thin`)."""
THIN_EVERY = 50
"""Stores between two looks at the history's size while the last look left it over its cap (every
version kept there was the latest of its file)."""
WALK_EVERY = 1000
"""Stores between two looks at the history's size while this process's count says it is under its cap
(a look sees what other processes stored since)."""


def default_cap() -> int:
    """The history's size cap: ``$KEEPGUI_HISTORY_CAP`` (bytes) when set to a number, else :data:`DEFAULT_CAP`."""
    value = os.environ.get("KEEPGUI_HISTORY_CAP", "")
    return int(value) if value.isdigit() else DEFAULT_CAP


def file_key(path: str | os.PathLike[str]) -> str:
    """The identity of a file across runs: its absolute path with links resolved."""
    return os.path.normcase(os.path.realpath(os.fspath(path)))


@dataclass(frozen=True)
class Version:
    """One recorded version of a file.

    ``path`` is the file (see :func:`file_key`), ``sha256`` and ``size``
    describe the bytes, ``at`` is when keepgui saw them (epoch ms), ``source``
    why they were recorded (``seen``, ``before-save``, ``saved``, ...), and
    ``seq`` the version's position in the file's index (0 = oldest).
    """

    path: str
    sha256: str
    size: int
    at: int
    source: str
    seq: int = 0

    def to_obj(self) -> dict[str, Any]:
        """The index line's fields plus ``seq``."""
        return {
            "path": self.path,
            "sha256": self.sha256,
            "size": self.size,
            "at": self.at,
            "source": self.source,
            "seq": self.seq,
        }


@dataclass(frozen=True)
class HistoryProblem:
    """A line of a history file that was skipped, and why (shown, never fatal)."""

    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}: {self.reason}; the line was skipped"


@dataclass(frozen=True)
class RemovedEntry:
    """An entry removed from a list file (keep.md), with what is needed to put it back.

    ``raw`` is the whole line as it was (``* x`` stays ``* x`` on restore);
    ``line`` its 0-based physical line and ``number`` its 1-based entry number;
    ``before``/``after`` the texts of its neighbouring entries then, so it can be
    put back between them even after the file changed; ``reason`` is
    ``forget``, ``replaced``, ``moved`` ...; ``restored_at`` is set once restored.
    """

    id: str
    path: str
    workspace: str
    text: str
    raw: str
    line: int
    number: int
    before: str | None
    after: str | None
    removed_at: int
    reason: str = "forget"
    restored_at: int | None = None

    def to_obj(self) -> dict[str, Any]:
        """The removed-event fields plus ``restored_at``."""
        return {
            "id": self.id,
            "path": self.path,
            "workspace": self.workspace,
            "text": self.text,
            "raw": self.raw,
            "line": self.line,
            "number": self.number,
            "before": self.before,
            "after": self.after,
            "removed_at": self.removed_at,
            "reason": self.reason,
            "restored_at": self.restored_at,
        }


def _parse_jsonl(data: bytes, name: str) -> tuple[list[tuple[int, dict[str, Any]]], list[HistoryProblem]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[HistoryProblem] = []
    for number, obj, why in json_objects(data):
        if obj is None:
            problems.append(HistoryProblem(name, number, why))
        else:
            rows.append((number, obj))
    return rows, problems


class History:
    """Versions of memory files and removed entries, stored under ``root``.

    ``root`` defaults to ``<paths.app_data_dir()>/history``. Several History
    objects (and processes) may share one root.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = os.fspath(root) if root is not None else os.path.join(app_data_dir(), "history")
        self._stored = 0
        self._looked = 0
        """``_stored`` at the last look at the history's size."""
        self._estimate: int | None = None
        """The history's size at the last look, plus what this object stored since (None: never looked)."""
        self._over = False
        """True when the last look left the history over its cap."""

    def thin(self, cap: int | None = None) -> int:
        """Keep the history under ``cap`` bytes (:func:`default_cap`): the stored bytes of the oldest
        versions go first, never the latest version of any file (what a review or an undo starts from)
        and never the removed-entries log (what restore needs). Index lines stay, so a thinned version
        is still listed and reads as :class:`Unreadable` saying it was thinned. Returns the bytes freed."""
        limit = default_cap() if cap is None else cap
        return self._thin_from(self.size()[1], limit)

    def _thin_from(self, total: int, limit: int) -> int:
        """:meth:`thin` with the history's size ``total`` known."""
        if total <= limit:
            return 0
        keep: set[str] = set()
        older: list[tuple[int, str]] = []
        folder = os.path.join(self.root, "index")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if not name.endswith(".jsonl"):
                continue
            data, _stamp = fsio.read_stamped(os.path.join(folder, name), limit=_INDEX_LIMIT)
            lines, _problems = _parse_jsonl(data or b"", name)
            shas = [(int(obj.get("at") or 0), str(obj.get("sha256", ""))) for _n, obj in lines]
            if shas:
                keep.add(shas[-1][1])
                older.extend(shas[:-1])
        freed = 0
        for _at, sha in sorted(older):
            if total - freed <= limit:
                break
            if sha in keep or len(sha) != 64 or not set(sha) <= _HEX:
                continue
            blob = self._blob_path(sha)
            try:
                size = os.lstat(blob).st_size
            except OSError:
                continue  # thinned already, or never stored
            fsio.remove_file(blob)
            freed += size
        return freed

    def _maybe_thin(self, added: int) -> None:
        """Keep the bound after storing ``added`` bytes. Looking means walking the whole history (a
        year of versions is many thousand files), so this process counts what it stores and looks at
        its first store, when its count passes the cap, and every :data:`WALK_EVERY` stores (another
        process's versions); every :data:`THIN_EVERY` while a look found nothing left to thin."""
        self._stored += 1
        since = self._stored - self._looked
        cap = default_cap()
        if self._estimate is not None:
            self._estimate += added
            over = self._estimate > cap and (since >= THIN_EVERY or not self._over)
            if not over and since < WALK_EVERY:
                return
        self._looked = self._stored
        try:
            total = self.size()[1]
            self._estimate = total - self._thin_from(total, cap)
        except (OSError, KeepguiError):
            # the bound is kept at the next look; a write of history never fails for it
            self._estimate = self._estimate or 0
            return
        self._over = self._estimate > cap

    def size(self) -> tuple[int, int]:
        """``(files, bytes)`` keepgui's history holds now (versions, indexes and journals), read from
        the folder as it is (``keepgui doctor`` shows it)."""
        files = total = 0
        for parent, _dirs, names in os.walk(self.root):
            for name in names:
                try:
                    total += os.lstat(os.path.join(parent, name)).st_size
                except OSError:
                    continue
                files += 1
        return files, total

    # ---------------------------------------------------------------- layout

    def _blob_path(self, sha: str) -> str:
        return os.path.join(self.root, "blobs", sha[:2], sha)

    def _index_path(self, key: str) -> str:
        name = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
        return os.path.join(self.root, "index", name + ".jsonl")

    @property
    def removed_log(self) -> str:
        """The removed-entries log file."""
        return os.path.join(self.root, "removed.jsonl")

    # ---------------------------------------------------------------- versions

    def scan(self, path: str | os.PathLike[str]) -> tuple[list[Version], list[HistoryProblem]]:
        """Every recorded version of ``path``, oldest first, and the index lines skipped."""
        return self._scan(file_key(path))

    def _scan(self, key: str) -> tuple[list[Version], list[HistoryProblem]]:
        """:meth:`scan` of a :func:`file_key` (resolving a path's links is most of a first sight's time)."""
        index = self._index_path(key)
        data, _stamp = fsio.read_stamped(index, limit=_INDEX_LIMIT)
        rows, problems = _parse_jsonl(data or b"", index)
        versions: list[Version] = []
        for number, obj in rows:
            sha, size, at, source = obj.get("sha256"), obj.get("size"), obj.get("at"), obj.get("source", "seen")
            if obj.get("path") != key:
                problems.append(HistoryProblem(index, number, "belongs to another file"))
                continue
            if (
                not isinstance(sha, str)
                or len(sha) != 64
                or not set(sha) <= _HEX
                or isinstance(size, bool)
                or not isinstance(size, int)
                or size < 0
                or isinstance(at, bool)
                or not isinstance(at, int)
                or not isinstance(source, str)
            ):
                problems.append(HistoryProblem(index, number, "missing or malformed sha256/size/at"))
                continue
            versions.append(Version(key, sha, size, at, source, len(versions)))
        return versions, problems

    def versions(self, path: str | os.PathLike[str]) -> list[Version]:
        """Every recorded version of ``path``, oldest first (corrupt index lines skipped)."""
        return self.scan(path)[0]

    def problems(self, path: str | os.PathLike[str]) -> list[HistoryProblem]:
        """The index lines of ``path`` that had to be skipped."""
        return self.scan(path)[1]

    def latest(self, path: str | os.PathLike[str]) -> Version | None:
        """The most recently recorded version of ``path``, or None."""
        versions = self.versions(path)
        return versions[-1] if versions else None

    def previous(self, version: Version) -> Version | None:
        """The version recorded just before ``version`` (for "what did this rewrite change?")."""
        versions = self.versions(version.path)
        return versions[version.seq - 1] if 0 < version.seq <= len(versions) else None

    def record(
        self, path: str | os.PathLike[str], data: bytes, *, source: str = "seen", at: int | None = None
    ) -> Version:
        """Remember ``data`` as the current content of ``path``; returns its Version.

        A no-op (returning the existing version) when the latest recorded
        version of ``path`` already has these bytes. The blob is written before
        the index line, under the index's lock, so the index never names a
        missing blob and two processes never append the same version twice.
        """
        key = file_key(path)
        sha = hashlib.sha256(data).hexdigest()
        index = self._index_path(key)
        with fsio.untold():  # keepgui's own store: no journal follows it
            fsio.make_dirs(os.path.dirname(index))
            return self._record(key, sha, index, data, source, at)

    def _record(self, key: str, sha: str, index: str, data: bytes, source: str, at: int | None) -> Version:
        with fsio.locked_log(index, sole_writer=True) as log:
            versions, _problems = self._scan(key)
            if versions and versions[-1].sha256 == sha:
                return versions[-1]
            stored = len(data) if self._store_blob(sha, data) else 0
            version, line = self._append(log, key, sha, len(data), now_ms() if at is None else at, source, versions)
        self._maybe_thin(stored + len(line))  # after the index line: the new version is the latest, never thinned
        return version

    @staticmethod
    def _append(
        log: fsio.LockedLog, key: str, sha: str, size: int, at: int, source: str, versions: list[Version]
    ) -> tuple[Version, bytes]:
        """Append a version's index line after ``versions`` (the index as read under its lock)."""
        line = dump_line({"path": key, "sha256": sha, "size": size, "at": at, "source": source})
        log.write_lines([line])
        return Version(key, sha, size, at, source, len(versions)), line

    def record_many(self, items: Sequence[tuple[str, bytes]], *, source: str = "seen") -> None:
        """:meth:`record` each ``(path, data)``, with the syncs batched: every blob written, then all
        synced, then every index line appended, then all synced — the order :meth:`record` keeps (an
        index line never names a blob a power cut could lose), with one sync a file instead of three
        (a first sight of a Claude Code project of 5,000 topic files made 16,000)."""
        todo = [(file_key(path), hashlib.sha256(data).hexdigest(), data) for path, data in items]
        with fsio.untold():
            blobs: dict[str, tuple[str, int]] = {}  # sha -> (blob written, its size)
            for _key, sha, data in todo:
                pace.checkpoint()  # a version a step: a window's paint does not wait behind a batch
                if sha not in blobs and (blob := self._store_blob(sha, data, durable=False)):
                    blobs[sha] = (blob, len(data))
            fsio.sync_files(blob for blob, _size in blobs.values())
            added = sum(size for _blob, size in blobs.values())
            indexes: list[str] = []
            for key, sha, data in todo:
                pace.checkpoint()
                index = self._index_path(key)
                fsio.make_dirs(os.path.dirname(index))
                with fsio.LockedLog(index, sole_writer=True, durable=False) as log:
                    versions, _problems = self._scan(key)
                    if versions and versions[-1].sha256 == sha:
                        continue
                    _version, line = self._append(log, key, sha, len(data), now_ms(), source, versions)
                    indexes.append(index)
                    added += len(line)
            fsio.sync_files(indexes)
            if indexes:
                self._maybe_thin(added)

    def _store_blob(self, sha: str, data: bytes, durable: bool = True) -> str:
        """Store ``data`` under its hash unless it is there whole; returns the blob written ("": none)."""
        blob = self._blob_path(sha)
        existing, _stamp = fsio.read_stamped(blob)
        if existing is not None and hashlib.sha256(existing).hexdigest() == sha:
            return ""
        fsio.make_dirs(os.path.dirname(blob))
        # a damaged blob is replaced by the good bytes we have in hand
        fsio.atomic_write(blob, data, mode=0o600, durable=durable)
        return blob

    def read(self, version: Version) -> bytes:
        """The bytes of ``version``; :class:`Unreadable` when its stored copy is missing or damaged."""
        blob = self._blob_path(version.sha256)
        data, _stamp = fsio.read_stamped(blob)
        if data is None:
            raise Unreadable(
                blob,
                f"the stored copy of {version.path} (version {version.seq}) is gone: keepgui's history keeps "
                f"under {default_cap() / 2**20:,.0f} MiB and thins the oldest versions first",
            )
        if hashlib.sha256(data).hexdigest() != version.sha256:
            raise Unreadable(blob, f"the stored copy of {version.path} (version {version.seq}) is damaged")
        return data

    def find(self, path: str | os.PathLike[str], sha256: str) -> Version:
        """The latest recorded version of ``path`` whose hash starts with ``sha256``."""
        for version in reversed(self.versions(path)):
            if version.sha256.startswith(sha256.lower()):
                return version
        raise NotFound(f"keepgui's history has no version {sha256} of {os.fspath(path)}")

    # ---------------------------------------------------------------- removed entries

    def log_removed(
        self,
        *,
        path: str,
        workspace: str,
        text: str,
        raw: str,
        line: int,
        number: int,
        before: str | None,
        after: str | None,
        reason: str = "forget",
        at: int | None = None,
    ) -> RemovedEntry:
        """Record an entry removed from ``path`` (call it before the removal is written,
        so the log has it even if that write is the last thing that happens)."""
        entry = RemovedEntry(
            secrets.token_hex(8),
            file_key(path),
            os.path.abspath(workspace),
            text,
            raw,
            line,
            number,
            before,
            after,
            now_ms() if at is None else at,
            reason,
        )
        fsio.make_dirs(self.root)
        obj = {"event": "removed", **entry.to_obj()}
        obj.pop("restored_at")
        fsio.append_lines(self.removed_log, [dump_line(obj)], sole_writer=True)
        return entry

    def cancel_removed(self, entry: RemovedEntry) -> None:
        """Mark a logged removal as not having happened (its write was refused)."""
        fsio.make_dirs(self.root)
        fsio.append_lines(
            self.removed_log, [dump_line({"event": "cancelled", "id": entry.id, "at": now_ms()})], sole_writer=True
        )

    def mark_restored(self, entry: RemovedEntry | str, at: int | None = None) -> None:
        """Record that a removed entry was put back (it no longer counts for "unforget")."""
        entry_id = entry if isinstance(entry, str) else entry.id
        fsio.make_dirs(self.root)
        fsio.append_lines(
            self.removed_log,
            [dump_line({"event": "restored", "id": entry_id, "at": now_ms() if at is None else at})],
            sole_writer=True,
        )

    def scan_removed(self) -> tuple[list[RemovedEntry], list[HistoryProblem]]:
        """Every removed entry (oldest first, cancelled ones left out) and the lines skipped."""
        data, _stamp = fsio.read_stamped(self.removed_log, limit=_INDEX_LIMIT)
        rows, problems = _parse_jsonl(data or b"", self.removed_log)
        entries: dict[str, RemovedEntry] = {}
        fields = RemovedEntry.__dataclass_fields__
        for number, obj in rows:
            event = obj.get("event")
            if event == "removed":
                try:
                    values = {k: obj[k] for k in fields if k in obj and k != "restored_at"}
                    if not all(isinstance(values.get(k), str) for k in ("id", "text", "raw")):
                        raise TypeError("bad field types")
                    entry = RemovedEntry(**values)
                except TypeError:
                    problems.append(HistoryProblem(self.removed_log, number, "a removed entry with missing fields"))
                    continue
                entries[entry.id] = entry
            elif event in ("restored", "cancelled") and obj.get("id") in entries:
                if event == "cancelled":
                    del entries[obj["id"]]
                else:
                    at = obj.get("at")
                    entries[obj["id"]] = replace(entries[obj["id"]], restored_at=at if isinstance(at, int) else 0)
            else:
                problems.append(HistoryProblem(self.removed_log, number, f"unknown event {event!r}"))
        return list(entries.values()), problems

    def removed(
        self, path: str | os.PathLike[str] | None = None, *, include_restored: bool = False
    ) -> list[RemovedEntry]:
        """Removed entries (of ``path`` only, when given), oldest first; restored ones only on request."""
        key = file_key(path) if path is not None else None
        return [
            e
            for e in self.scan_removed()[0]
            if (key is None or e.path == key) and (include_restored or e.restored_at is None)
        ]

    def last_removed(self, path: str | os.PathLike[str]) -> RemovedEntry | None:
        """The most recently removed entry of ``path`` not yet restored (what "unforget" brings back)."""
        pending = self.removed(path)
        return max(enumerate(pending), key=lambda p: (p[1].removed_at, p[0]))[1] if pending else None

    def get_removed(self, entry_id: str) -> RemovedEntry:
        """A removed entry by id (restored or not)."""
        for entry in self.scan_removed()[0]:
            if entry.id == entry_id:
                return entry
        raise NotFound(f"keepgui's history has no removed entry {entry_id}")


class Journal:
    """A JSON-lines log of events kept in a history root, where a later event can cancel an earlier one.

    Every line is one appended event with an ``event`` name and an ``id``;
    :meth:`standing` replays them. Torn or unreadable lines are skipped.
    """

    def __init__(self, history: History | None, name: str) -> None:
        self.history = history if history is not None else History()
        self.path = os.path.join(self.history.root, name)

    def _append(self, obj: dict[str, Any]) -> None:
        fsio.make_dirs(self.history.root)
        fsio.append_lines(self.path, [dump_line(obj)], sole_writer=True)

    def standing(
        self, added: str, cancelled: str, make: Callable[[dict[str, Any]], Any] = lambda obj: obj
    ) -> list[Any]:
        """``make(obj)`` of every ``added`` event no later ``cancelled`` event took back, oldest first
        (``make`` returning None leaves the event out)."""
        data, _stamp = fsio.read_stamped(self.path)
        found: dict[Any, Any] = {}
        for _number, obj, _why in json_objects(data or b""):
            if obj is None:
                continue  # a torn line from a crash: skipped, never fatal
            if obj.get("event") == added:
                item = make(obj)
                if item is not None:
                    found[obj.get("id")] = item
            elif obj.get("event") == cancelled:
                found.pop(obj.get("id"), None)
        return list(found.values())
