"""Every version of every memory file of every source keepgui knows, in keepgui's own data folder (no Qt).

The journal is :mod:`keepgui.core.history` grown to whole sources: where history keeps what keepgui
has *seen* of a few files, the journal records every version of every file a bank names as its
memory (:meth:`~keepgui.core.source.Bank.memory_files`), each marked as keepgui's own write or
someone else's, so that the inbox can list what anything other than keepgui changed. It is fed from
three places: a one-shot command syncs the source it opens (:func:`sync_source`), the window and
``keepgui watch`` sync a source whenever its files change, and :mod:`keepgui.core.fsio` tells it
about every write keepgui itself makes (:func:`install`: the file is synced just before the write,
so an agent's version in between is never taken for keepgui's, and the bytes written are recorded
as keepgui's own just after).

Layout under ``<app data dir>/journal/``::

    sources.jsonl                   one line per (source, bank, file): which files belong to which bank
    blobs/<sha256>                  stored bytes: a whole version, or the middle of a delta
    index/<sha256(path)[:24]>.jsonl one line per version of one file, and "accepted" lines
    index/<...>.lock                the sidecar lock every writer of that index holds

Nothing here is synced to disk as the agents' files are: a power cut may lose the last versions
recorded, never tear one (every stored part is checked against its hash when read, and a torn
index line is skipped). A version is stored whole or as a delta against the version before it (the bytes both share at the
start and at the end are not stored again), so a large file that grows by one entry costs one
entry. A chain of deltas ends in a whole version at most :data:`CHAIN` versions back, and sooner when
the deltas together outgrow half the file (so reading any version costs at most about two files' worth
of bytes and a bounded number of small reads). A file that is
missing is a version too (``gone``): a deletion is a change like any other.

The journal is bounded (:meth:`Journal.thin`): above its size cap the oldest versions of each file
go first, never the version an unreviewed change starts from nor anything after it. Its size is
:meth:`Journal.size` (the inbox and ``keepgui inbox`` say it).

Reading a file's versions for a time ("all versions of a source's files up to time T") is
:meth:`Journal.versions` with ``until``, and :meth:`Journal.read` of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from keepgui.core import fsio, pace
from keepgui.core.errors import KeepguiError, Unreadable
from keepgui.core.history import file_key
from keepgui.core.jsonl import dump_line, json_objects
from keepgui.core.paths import app_data_dir
from keepgui.core.timefmt import now_ms

if TYPE_CHECKING:
    from keepgui.core.source import Source

CHAIN = 1024
"""At most this many deltas in a row before a version is stored whole again."""
DEFAULT_CAP = 512 * 1024 * 1024
"""The journal's size cap in bytes unless ``$KEEPGUI_JOURNAL_CAP`` (bytes) says otherwise."""
_READ_LIMIT = 256 * 1024 * 1024
RACY = 2000
"""A file's time is trusted to say it is unchanged only when it was over this many ms older than the reading."""
_CACHED = 64 * 1024 * 1024
"""Files up to this size keep their last recorded bytes in memory (the next delta is made against them)."""


@dataclass(frozen=True)
class Entry:
    """One version of one file: ``seq`` counts the file's versions from 0 and never repeats;
    ``own`` marks keepgui's own writes; ``gone`` a missing file; ``at`` is epoch ms."""

    path: str
    seq: int
    sha256: str
    size: int
    at: int
    own: bool
    gone: bool
    blob: str
    base: int | None = None
    pre: int = 0
    suf: int = 0
    mtime: int = 0
    """The file's modification time (ns) when this version was read from it (0: not read from a file)."""

    def line(self) -> bytes:
        """The index line of this version."""
        obj: dict[str, Any] = {"seq": self.seq, "sha256": self.sha256, "size": self.size, "at": self.at}
        obj.update(own=self.own, gone=self.gone, blob=self.blob)
        if self.base is not None:
            obj.update(base=self.base, pre=self.pre, suf=self.suf)
        if self.mtime:
            obj.update(mtime=self.mtime)
        return dump_line(obj)


@dataclass(frozen=True)
class Tracked:
    """A file the journal follows: the source (its kind and folder) and bank it belongs to."""

    kind: str
    source: str
    bank: str
    path: str


@dataclass
class FileLog:
    """What an index holds: the versions (oldest first) and the seqs of accepted changes."""

    versions: list[Entry]
    accepted: set[int]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def default_cap() -> int:
    """The size cap in bytes (``$KEEPGUI_JOURNAL_CAP`` or :data:`DEFAULT_CAP`)."""
    text = os.environ.get("KEEPGUI_JOURNAL_CAP", "")
    return int(text) if text.isdigit() else DEFAULT_CAP


class Journal:
    """The journal under ``root`` (default ``<app data dir>/journal``); processes may share one."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = os.fspath(root) if root is not None else os.path.join(app_data_dir(), "journal")
        self._tracked: dict[str, Tracked] | None = None
        self._seen: dict[str, tuple[int, int]] = {}
        self._last: dict[str, tuple[str, bytes]] = {}
        self._size: int | None = None
        self._logs: dict[str, tuple[tuple[int, int], FileLog]] = {}

    # ------------------------------------------------------------------ layout

    def _blob_path(self, sha: str) -> str:
        return os.path.join(self.root, "blobs", sha)

    def index_path(self, path: str) -> str:
        """The index file of ``path`` (a :func:`~keepgui.core.history.file_key`)."""
        return os.path.join(
            self.root, "index", hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".jsonl"
        )

    @contextlib.contextmanager
    def _locked(self, path: str) -> Iterator[str]:
        index = self.index_path(path)
        fsio.make_dirs(os.path.dirname(index))
        with _THREAD_LOCK, fsio.sidecar_lock(index[: -len(".jsonl")] + ".lock", timeout=10.0, what="another keepgui"):
            yield index

    # ------------------------------------------------------------------ which files

    def tracked(self) -> dict[str, Tracked]:
        """Every file followed, by path (the last line naming a path wins)."""
        data, _stamp = fsio.read_stamped(os.path.join(self.root, "sources.jsonl"), limit=_READ_LIMIT)
        found: dict[str, Tracked] = {}
        for _number, obj, _why in json_objects(data or b""):
            if obj is not None and all(isinstance(obj.get(k), str) for k in ("kind", "source", "bank", "path")):
                found[obj["path"]] = Tracked(obj["kind"], obj["source"], obj["bank"], obj["path"])
        self._tracked = found
        return found

    def is_tracked(self, path: str) -> bool:
        """True when ``path`` is followed (read from disk once per journal object, then kept current)."""
        tracked = self._tracked if self._tracked is not None else self.tracked()
        return path in tracked

    def is_near(self, path: str) -> bool:
        """True when ``path`` lies in a followed source's folder or beside a followed file."""
        tracked = self._tracked if self._tracked is not None else self.tracked()
        folder = os.path.dirname(path)
        return any(folder == os.path.dirname(t.path) or path.startswith(t.source + os.sep) for t in tracked.values())

    def track(self, files: Iterable[Tracked]) -> None:
        """Follow ``files`` (those not yet followed, or now of another bank, are added)."""
        known = self.tracked()
        new = [t for t in files if known.get(t.path) != t]
        if new:
            fsio.make_dirs(self.root)
            lines = [dump_line({"kind": t.kind, "source": t.source, "bank": t.bank, "path": t.path}) for t in new]
            fsio.append_lines(os.path.join(self.root, "sources.jsonl"), lines, sole_writer=True, durable=False)
            for t in new:
                known[t.path] = t

    def sources(self) -> list[tuple[str, str]]:
        """``(kind, folder)`` of every source with a followed file."""
        return sorted({(t.kind, t.source) for t in self.tracked().values()})

    # ------------------------------------------------------------------ versions

    def log(self, path: str) -> FileLog:
        """The versions of ``path`` and its accepted changes (read again only when the index changed)."""
        index = self.index_path(path)
        try:
            st = os.stat(index)
            mark: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            mark = None
        cached = self._logs.get(path)
        if cached is not None and mark is not None and cached[0] == mark:
            return cached[1]
        data, _stamp = fsio.read_stamped(index, limit=_READ_LIMIT)
        versions: list[Entry] = []
        accepted: set[int] = set()
        for number, obj, _why in json_objects(data or b""):
            if number % 512 == 0:
                pace.checkpoint()
            if obj is None:
                continue  # a torn line from a crash: skipped, never fatal
            if isinstance(obj.get("accepted"), int):
                accepted.add(obj["accepted"])
                continue
            try:
                base = obj.get("base")
                versions.append(
                    Entry(
                        path, int(obj["seq"]), str(obj["sha256"]), int(obj["size"]), int(obj["at"]),
                        bool(obj.get("own")), bool(obj.get("gone")), str(obj["blob"]),
                        int(base) if base is not None else None, int(obj.get("pre", 0)), int(obj.get("suf", 0)),
                        int(obj.get("mtime", 0)),
                    )
                )  # fmt: skip
            except (KeyError, TypeError, ValueError):
                continue
        found = FileLog(versions, accepted)
        if mark is not None and data is not None and len(data) == mark[0]:
            self._logs[path] = (mark, found)
        return found

    def versions(self, path: str, until: int | None = None) -> list[Entry]:
        """The versions of ``path`` oldest first (those recorded at or before ``until`` ms, when given)."""
        found = self.log(path).versions
        return found if until is None else [v for v in found if v.at <= until]

    def read(
        self, entry: Entry, versions: list[Entry] | None = None, known: tuple[Entry, bytes] | None = None
    ) -> bytes:
        """The bytes of ``entry`` (b"" for a missing file); :class:`Unreadable` when a stored part is lost.

        ``known`` is a version of the same file read before, with its bytes: a chain of deltas that
        passes through it starts from them (the version after a change is read from the one before
        it and one delta, not from the last whole version again)."""
        if entry.gone:
            return b""
        if entry.base is None:
            return self._blob(entry.blob, entry.path)
        versions = versions if versions is not None else self.log(entry.path).versions
        by_seq = {v.seq: v for v in versions}
        chain = [entry]
        start: bytes | None = None
        while chain[-1].base is not None:
            if known is not None and chain[-1].base == known[0].seq:
                start = known[1]
                break
            base = by_seq.get(chain[-1].base)
            if base is None:
                raise Unreadable(self.index_path(entry.path), f"version {chain[-1].base} of {entry.path} is missing")
            chain.append(base)
        if start is None:
            last = chain.pop()
            start = self._blob(last.blob, entry.path) if not last.gone else b""
        data = bytearray(start)
        for n, step in enumerate(reversed(chain)):
            if n % 16 == 15:
                pace.checkpoint()
            middle = self._blob(step.blob, entry.path)
            data[step.pre : len(data) - step.suf] = middle
        return bytes(data)

    def _blob(self, sha: str, path: str) -> bytes:
        data, stamp = fsio.read_stamped(self._blob_path(sha), limit=None)
        if data is None or stamp.sha256 != sha:
            raise Unreadable(self._blob_path(sha), f"a stored part of a version of {path} is missing or damaged")
        return data

    def _store(self, data: bytes) -> str:
        sha = _sha(data)
        blob = self._blob_path(sha)
        if not os.path.exists(blob):
            fsio.make_dirs(os.path.dirname(blob))
            fsio.atomic_write(blob, data, mode=0o600, durable=False)
            self._grew(len(data))
        return sha

    def record(
        self, path: str, data: bytes | None, *, own: bool = False, at: int | None = None, mtime: int = 0
    ) -> Entry | None:
        """Record ``data`` (None: the file is missing) as the current version of ``path``.

        Returns the new version, or None when the last one already holds these bytes (nothing
        recorded). ``own`` marks a write of keepgui's; ``mtime`` is the file's time (ns) with these bytes.
        """
        with self._locked(path) as index:
            return self._record(index, path, data, own=own, at=at, mtime=mtime)

    def _record(
        self, index: str, path: str, data: bytes | None, *, own: bool, at: int | None, mtime: int = 0
    ) -> Entry | None:
        log = self.log(path)
        last = log.versions[-1] if log.versions else None
        sha = _sha(data or b"")
        gone = data is None
        if last is not None and last.sha256 == sha and last.gone == gone:
            return None
        seq = last.seq + 1 if last is not None else 0
        when = now_ms() if at is None else at
        entry = replace(self._make(path, seq, data, last, log.versions, own=own, at=when), mtime=mtime)
        line = entry.line()
        cached = self._logs.get(path)
        fsio.append_lines(index, [line], sole_writer=True, durable=False)
        self._grew(len(line))
        with contextlib.suppress(OSError):
            st = os.stat(index)
            if cached is not None and cached[1] is log and st.st_size == cached[0][0] + len(line):
                # the index is what was read plus this line: no need to read it all again
                self._logs[path] = ((st.st_size, st.st_mtime_ns), FileLog([*log.versions, entry], set(log.accepted)))
        if data is not None and len(data) <= _CACHED:
            self._last[path] = (entry.sha256, data)
        return entry

    def _make(
        self, path: str, seq: int, data: bytes | None, last: Entry | None, versions: list[Entry], *, own: bool, at: int
    ) -> Entry:
        body = data or b""
        sha = _sha(body)
        if data is None:
            return Entry(path, seq, sha, 0, at, own, True, self._store(b""))
        whole = Entry(path, seq, sha, len(body), at, own, False, "")
        depth, carried = 0, 0
        by_seq = {v.seq: v for v in versions}
        step = last
        while step is not None and step.base is not None:
            depth += 1
            carried += step.size - step.pre - step.suf
            step = by_seq.get(step.base)
        if last is None or last.gone or depth >= CHAIN or last.size < 4096 or carried * 2 > len(body):
            return replace(whole, blob=self._store(body))
        try:
            before = self._cached(last, versions)
        except Unreadable:
            return replace(whole, blob=self._store(body))
        pre = _common_prefix(before, body)
        suf = _common_suffix(before[pre:], body[pre:])
        middle = body[pre : len(body) - suf]
        if len(middle) * 2 > len(body):
            return replace(whole, blob=self._store(body))
        return replace(whole, blob=self._store(middle), base=last.seq, pre=pre, suf=suf)

    def _cached(self, entry: Entry, versions: list[Entry]) -> bytes:
        """The bytes of ``entry``, from the last version this process recorded of its file when it is that one."""
        hit = self._last.get(entry.path)
        if hit is not None and hit[0] == entry.sha256:
            return hit[1]
        return self.read(entry, versions)

    def accept(self, path: str, seqs: Iterable[int]) -> None:
        """Mark the changes ``seqs`` of ``path`` reviewed."""
        lines = [dump_line({"accepted": s, "at": now_ms()}) for s in seqs]
        if lines:
            with self._locked(path) as index:
                fsio.append_lines(index, lines, sole_writer=True)

    def unaccept(self, path: str, seqs: Iterable[int]) -> None:
        """Take back :meth:`accept` (its undo): the changes are unreviewed again."""
        gone = set(seqs)
        with self._locked(path) as index:
            data, stamp = fsio.read_stamped(index, limit=_READ_LIMIT)
            kept = []
            for line in (data or b"").splitlines(keepends=True):
                obj = next(iter(json_objects(line)), (0, None, ""))[1]
                if obj is not None and obj.get("accepted") in gone:
                    continue
                kept.append(line if line.endswith(b"\n") else line + b"\n")
            fsio.atomic_write(index, b"".join(kept), expect=stamp, mode=0o600)

    # ------------------------------------------------------------------ syncing

    def sync_file(self, path: str, *, baseline: bool = False) -> Entry | None:
        """Record what ``path`` holds now, as someone else's version (a baseline when the file is new
        to the journal and ``baseline`` is set: it starts history and is no change)."""
        try:
            st = os.stat(path)
            seen: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            seen = None
        if seen is not None and self._seen.get(path) == seen:
            return None  # as this process last recorded it
        if seen is not None and self._unchanged(path, seen):
            return None  # as the last version was read from it, long enough ago to trust the time
        versions = self.log(path).versions
        before = versions[-1].size if versions and not versions[-1].gone else None
        try:
            data, _stamp = fsio.read_settled(path, limit=_READ_LIMIT, before=before)
        except fsio.Unsettled:
            return None  # caught mid-write (empty or shrunken): a transient is never a version
        except (OSError, ValueError, KeepguiError):
            data = None
        with self._locked(path) as index:
            first = baseline and not os.path.exists(index)
            mtime = seen[1] if seen is not None and data is not None and len(data) == seen[0] else 0
            entry = self._record(index, path, data, own=first, at=None, mtime=mtime)
        if seen is not None and data is not None and len(data) == seen[0]:
            self._seen[path] = seen
        return entry

    def _unchanged(self, path: str, seen: tuple[int, int]) -> bool:
        """True when the file's size and time are those its last version was read with, and that time
        was over :data:`RACY` ms before the reading (a write within the clock's resolution of a
        read could otherwise keep both)."""
        versions = self.log(path).versions
        last = versions[-1] if versions else None
        return (
            last is not None
            and not last.gone
            and last.mtime == seen[1]
            and last.size == seen[0]
            and last.at - last.mtime // 1_000_000 > RACY
        )

    # ------------------------------------------------------------------ size and thinning

    def size(self, *, fresh: bool = False) -> int:
        """The bytes the journal takes on disk (blobs and indexes): counted once (or when ``fresh``),
        then kept current by what this object writes (others' writes are counted at the next count)."""
        if self._size is None or fresh:
            total = 0
            for folder, _dirs, files in os.walk(self.root):
                pace.checkpoint()
                for name in files:
                    with contextlib.suppress(OSError):
                        total += os.lstat(os.path.join(folder, name)).st_size
            self._size = total
        return self._size

    def _grew(self, n: int) -> None:
        if self._size is not None:
            self._size += n

    def thin(self, cap: int | None = None) -> int:
        """Keep the journal under ``cap`` bytes: drop the oldest versions of each file first, never the
        version an unreviewed change starts from nor anything after it. Returns the bytes freed."""
        cap = default_cap() if cap is None else cap
        if self.size() <= cap:
            return 0
        before = self.size(fresh=True)
        if before <= cap:
            return 0
        logs = {path: self.log(path) for path in self.tracked()}
        order = sorted(
            ((v.at, path, v.seq) for path, log in logs.items() for v in log.versions[: _keep_from(log)]),
        )
        excess = before - cap
        drop: dict[str, int] = {}
        for _at, path, seq in order:
            if excess <= 0:
                break
            drop[path] = seq
            excess -= next(v.size for v in logs[path].versions if v.seq == seq) // 2 + 200
        for path, upto in drop.items():
            self._drop_through(path, upto)
        self._collect()
        return max(0, before - self.size(fresh=True))

    def _drop_through(self, path: str, upto: int) -> None:
        """Forget the versions of ``path`` up to ``upto``; the new oldest is stored whole."""
        with self._locked(path) as index:
            log = self.log(path)
            kept = [v for v in log.versions if v.seq > upto]
            if not kept:
                return
            first = kept[0]
            if first.base is not None:
                data = self.read(first, log.versions)
                kept[0] = Entry(
                    path, first.seq, first.sha256, first.size, first.at, first.own, first.gone, self._store(data)
                )
            lines = [v.line() for v in kept] + [dump_line({"accepted": s}) for s in sorted(log.accepted) if s > upto]
            fsio.atomic_write(index, b"".join(lines), mode=0o600)

    def _collect(self) -> None:
        """Remove blobs no index names."""
        named: set[str] = set()
        for path in self.tracked():
            named.update(v.blob for v in self.log(path).versions)
        blobs = os.path.join(self.root, "blobs")
        for folder, _dirs, files in os.walk(blobs):
            for name in files:
                if name not in named and not fsio.is_temp_name(name):
                    with contextlib.suppress(OSError, KeepguiError):
                        fsio.remove_file(os.path.join(folder, name))


def _keep_from(log: FileLog) -> int:
    """How many of the oldest versions may go: everything before the base of the first unreviewed change
    (and never the last version)."""
    versions = log.versions
    for i, v in enumerate(versions):
        if i > 0 and not v.own and v.seq not in log.accepted:
            return i - 1
    return max(0, len(versions) - 1)


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many bytes ``a`` and ``b`` share at their start (compared 64 KiB at a time, then halved)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i : i + _STEP] == b[i : i + _STEP]:
        i += _STEP
    if i >= n:
        return n
    lo, hi = i, min(i + _STEP, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i:mid] == b[i:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes) -> int:
    """How many bytes ``a`` and ``b`` share at their end."""
    n = min(len(a), len(b))
    la, lb = len(a), len(b)
    i = 0
    while i < n and a[la - min(i + _STEP, n) : la - i] == b[lb - min(i + _STEP, n) : lb - i]:
        i = min(i + _STEP, n)
    if i >= n:
        return n
    lo, hi = i, min(i + _STEP, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - i] == b[lb - mid : lb - i]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _mtime_of(path: str, data: bytes | None) -> int:
    """The time (ns) of the file keepgui just wrote with ``data`` (0 when it is not those bytes' size)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    return st.st_mtime_ns if data is None or st.st_size == len(data) else 0


_STEP = 65536


def _read(path: str) -> tuple[bytes | None, fsio.Stamp]:
    try:
        return fsio.read_stamped(path, limit=_READ_LIMIT)
    except (OSError, ValueError):
        return None, fsio.Stamp.missing()


_THREAD_LOCK = threading.RLock()
"""Threads of one process take turns on the journal (the sidecar lock orders processes)."""


# ---------------------------------------------------------------------- a source's files


def files_of(source: Source) -> list[Tracked]:
    """Every memory file of every bank of ``source`` (each bank's :meth:`memory_files`)."""
    found: list[Tracked] = []
    for name in source.scan().names:
        try:
            bank = source.bank(name)
            paths = bank.memory_files()
        except (OSError, ValueError, LookupError):
            continue
        found.extend(Tracked(source.kind, source.path, name, file_key(p)) for p in paths)
    return found


def sync_source(journal: Journal, source: Source) -> list[Entry]:
    """Compare every memory file of ``source`` with its last recorded version and record what differs.

    A source seen for the first time starts from a baseline (nothing for the inbox); a file new to a
    known source arrives as a change from nothing; a followed file now missing as a deletion.
    Returns the versions recorded that are changes.
    """
    known = journal.tracked()
    first = not any(t.source == source.path for t in known.values())
    files = files_of(source)
    journal.track(files)
    now = {t.path for t in files}
    paths = sorted(now | {t.path for t in known.values() if t.source == source.path})
    changes: list[Entry] = []
    for path in paths:
        pace.checkpoint()
        if not first and not os.path.exists(journal.index_path(path)):
            journal.record(path, None, own=True)  # the file did not exist before: a change from nothing
        entry = journal.sync_file(path, baseline=first)
        if entry is not None and not entry.own:
            changes.append(entry)
    return changes


# ---------------------------------------------------------------------- keepgui's own writes


_installed: list[Journal] = []


def install(journal: Journal | None = None) -> Journal:
    """Have every write keepgui makes through :mod:`keepgui.core.fsio` recorded as its own (idempotent)."""
    if _installed:
        return _installed[0]
    chosen = journal or Journal()
    _installed.append(chosen)
    fsio.on_write(_hook(chosen))
    return chosen


def _hook(journal: Journal) -> Callable[[str, str, bytes | None], None]:
    root = os.path.abspath(journal.root) + os.sep

    def hook(stage: str, path: str, data: bytes | None) -> None:
        if path.startswith(root) or os.path.abspath(path).startswith(root):
            return
        key = file_key(path)
        if not journal.is_tracked(key):
            if stage == "after" and journal.is_near(key):  # a file keepgui creates beside followed ones
                journal.record(key, data if data is not None else _read(key)[0], own=True, mtime=_mtime_of(key, data))
            return
        if stage == "before":
            journal.sync_file(key)
        else:
            journal.record(key, data if data is not None else _read(key)[0], own=True, mtime=_mtime_of(key, data))

    return hook
