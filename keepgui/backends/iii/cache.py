"""A verified cache of replayed logs and their indexes, so the CLI answers at once.

Replaying a ``memories.jsonl`` and indexing it for recall costs seconds at a
hundred thousand memories; a command run on an unchanged bank should not pay
that every time. :class:`LogCache` keeps, in keepgui's own cache folder
(:func:`keepgui.core.paths.app_cache_dir`, never beside the agent's files), the
state of a :class:`~keepgui.backends.iii.log.MemoryLog` and, in a second file, of its
:class:`~keepgui.backends.iii.index.BankIndex`, encoded with msgspec.

Neither is decoded whole when a command answers from it: the log cache file is mapped, its records
are a column block (:mod:`keepgui.backends.iii.lazy`) decoded one by one as a query reads them, and
the index keeps its postings, days and per-slot numbers packed, unpacked only where a query's terms
go. Each file carries a CRC-32 of its body, checked before anything in it is used.

A cache is never the source of truth. A cached state is used only when the log
is the same file (device and inode), at least as long as the replayed prefix,
and that prefix still hashes (SHA-1 over every byte, read back from the file)
to what was replayed; then the log's ``refresh`` replays only what was appended.

Hashing a log of a million memories (700 MB) costs about half a second, so an unchanged log is
trusted by its stat instead, as git trusts its index (its "racy git" rule). A *stamp*, in a small
third file beside the cache (``<key>.stat``), records the log's ``(st_dev, st_ino, st_size,
st_mtime_ns, st_ctime_ns)`` as read just before every byte of a prefix was read (by a full replay, or
by this check hashing it), the wall clock read before that stat, and the prefix's SHA-1. When the log's
stat now equals the stamp's, the stamp vouches for the cached state's very prefix (same digest, and its
size is the prefix's length: nothing appended), and the stamp is not racy, the prefix is not hashed.
The inode's change time cannot be set by a user and moves on every write, so a rewrite in place
that restores the size and the modification time (``os.utime``) still changes the stat. A change
made in the same timestamp tick as the stat was taken could leave it equal, so a stamp is *racy*,
never written nor trusted, unless the log's mtime and ctime were older than the clock read before
the stat by :data:`RACY_NS` (3 s: FAT stamps times to 2 s, the kernel's file-time clock lags the
wall clock by a tick, and there is rounding besides); any later change is then stamped with a
later time. A racy stamp is not lost: the next command hashes the prefix, which stamps it afresh.
The one residual risk is a clock moved backwards (or a file server's clock far behind this one's)
between a stamp and a rewrite in place of the same size, whose new times repeat the stamped ones to
the nanosecond: that rewrite would go unnoticed until the log next changes. An appended log (a
bigger size) is hashed as always, then only its tail replayed; another inode means a full replay.

Anything else — a rewritten, truncated or replaced log, a cache file that is
corrupt, truncated, of another keepgui or format version, or unreadable — means
a full replay, never a traceback or a different answer. Writing the cache is
atomic (:mod:`keepgui.core.fsio`) and its failure (a read-only home, a full
disk) is ignored: the command has already answered.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import heapq
import mmap
import os
import struct
import sys
import threading
import time
import zlib
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from keepgui import __version__
from keepgui.backends.iii.lazy import LazyRecords, RecordBlock, encode_block
from keepgui.backends.iii.log import LogState, MemoryLog, gc_paused, newest_first, prefix_hasher
from keepgui.core import fsio, pace
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import app_cache_dir

if TYPE_CHECKING:  # the index (and the tokenizer it imports) only when an index is cached: not for a listing
    from keepgui.backends.iii.index import BankIndex, CachedIndexView, RestoredParts

FORMAT = 8
"""Bumped whenever what a cache file holds changes meaning; a file of another format is ignored."""

_READ = 8 << 20  # the prefix is hashed in reads of this size (each read and update lets go of the interpreter lock)
_MAGIC = (
    f"keepgui-log-cache {FORMAT} {__version__} {sys.implementation.cache_tag} {sys.byteorder}\n".encode()
)  # arrays are cached as native machine words: another interpreter or byte order starts afresh

SWEEP_UNUSED_DAYS = 30
"""A cache entry not used for this many days is removed when the next cache is written."""
SWEEP_MAX_BYTES = 2 << 30
"""The cache folder's cap: past it, the entries used longest ago are removed (never the one just written)."""
_STALE_TEMP_S = 3600  # a temporary file of a write this much older than now was left by a crashed process
_SUFFIXES = (".log", ".index", ".stat")
RACY_NS = 3_000_000_000
"""A stamp vouches for the log only when its mtime and ctime were this much older than the clock read
before its stat (see the module's docstring)."""


class _LogFile(msgspec.Struct, array_like=True, gc=False):
    """The log cache after its check: the state without its records, and the records as a column
    block (:func:`keepgui.backends.iii.lazy.encode_block`): their ids, and their encodings in one
    buffer with offsets, so a command decodes only the records it reads."""

    state: LogState
    ids: list[str]
    block: bytes
    starts: bytes


class _LogFileView(msgspec.Struct, array_like=True, gc=False):
    """:class:`_LogFile` as it is read: the record block left where it lies in the file's bytes (a view,
    not a copy of a quarter of a gigabyte at a million memories)."""

    state: LogState
    ids: msgspec.Raw  # decoded when a command reads them whole (a query reads a slot's id of its record)
    block: msgspec.Raw
    starts: bytes


_LOG_DECODER = msgspec.msgpack.Decoder(_LogFileView)
_BIN_HEADER = {0xC4: 2, 0xC5: 3, 0xC6: 5}  # msgpack bin 8/16/32: how long the header before the bytes is
_ENCODER = msgspec.msgpack.Encoder()


class _Check(msgspec.Struct, array_like=True, gc=False):
    """What a log cache file is checked against, ahead of its state: which log, which file, and the
    length and SHA-1 of the prefix replayed. Read first, so the prefix is hashed while the state decodes."""

    path: bytes
    dev: int
    ino: int
    offset: int
    digest: bytes
    listing_head: str  # the first LISTING_HEAD lines of `memories --json` of this state (live, newest first)
    body_crc: int  # CRC-32 of the encoded state after the check: a damaged cache file is not read


class _Stamp(msgspec.Struct, array_like=True, gc=False):
    """The log's stat just before every byte of its prefix ``[0, size)`` was read, the wall clock (ns)
    read before that stat, and the prefix's SHA-1: while the log's stat stays this, its bytes are those
    (unless the stamp is racy: see the module's docstring)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    seen_ns: int
    digest: bytes

    def settled(self) -> bool:
        """Whether the log had not changed for :data:`RACY_NS` when it was stat'ed (not racy)."""
        return max(self.mtime_ns, self.ctime_ns) + RACY_NS < self.seen_ns

    def holds(self, st: os.stat_result, check: _Check) -> bool:
        """Whether the log whose stat is ``st`` is, by this stamp, byte for byte the prefix ``check``
        caches, with nothing after it."""
        return (
            self.settled()
            and (self.size, self.digest) == (check.offset, check.digest)
            and (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            == (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
        )


_STAMP_DECODER = msgspec.msgpack.Decoder(_Stamp)


def _encode_stamp(stamp: _Stamp) -> bytes:
    """A stamp file's bytes: the magic line, the CRC-32 of the encoded stamp, the stamp."""
    encoded = msgspec.msgpack.encode(stamp)
    return _MAGIC + _CHECK_LENGTH.pack(zlib.crc32(encoded)) + encoded


LISTING_HEAD = 512
"""How many lines of the default ``memories --json`` listing a log cache keeps ahead of its state."""

_CHECK_DECODER = msgspec.msgpack.Decoder(_Check)
_CHECK_LENGTH = struct.Struct("<I")  # the check's encoded length, between the magic line and the check


def cache_folder() -> str:
    """Where the log caches live."""
    return os.path.join(app_cache_dir(), "iii-logs")


def _key(log_path: str) -> str:
    """The cache file name for a log: a hash of its absolute, resolved path."""
    real = os.path.realpath(os.path.abspath(log_path))
    return hashlib.sha1(real.encode("utf-8", "surrogateescape"), usedforsecurity=False).hexdigest()


def cached_state_file(log_path: str, folder: str | None = None) -> str:
    """The file a log's cached state is kept in (it may not be there)."""
    return os.path.join(folder or cache_folder(), _key(log_path) + ".log")


def _read(path: str) -> bytes | None:
    """The body of a cache file after its magic line, or None (missing, unreadable, foreign)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return None
            return fh.read()
    except OSError:
        return None


def _map_body(path: str) -> memoryview | None:
    """The body of a cache file after its magic line, mapped (see :func:`_map_rest`), or None (missing,
    unreadable, foreign)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return None
            return _map_rest(fh)
    except (OSError, ValueError):
        return None


class _Crcs(threading.Thread):
    """The CRC-32s of buffers, on a thread of its own (zlib lets go of the interpreter lock), so they are
    checked on the other core while the buffers decode."""

    def __init__(self, *buffers: memoryview) -> None:
        super().__init__(name="keepgui-cache-crc", daemon=True)
        self._buffers: tuple[memoryview, ...] | None = buffers
        self.crcs: list[int] = []
        self.start()

    def run(self) -> None:
        """Compute them (then let go of the buffers)."""
        buffers, self._buffers = self._buffers, None
        self.crcs = [zlib.crc32(buffer) for buffer in buffers or ()]

    def result(self) -> list[int]:
        """The CRC-32 of each buffer, in order."""
        self.join()
        return self.crcs


def _split_check(body: bytes) -> tuple[_Check, memoryview] | None:
    """A log cache body's check and the state after it, or None when it is not one."""
    if len(body) < _CHECK_LENGTH.size:
        return None
    (length,) = _CHECK_LENGTH.unpack_from(body)
    view = memoryview(body)
    start = _CHECK_LENGTH.size
    try:
        check = _CHECK_DECODER.decode(view[start : start + length])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return check, view[start + length :]


def _encode_state(state: LogState) -> bytes:
    records = state.records
    block, starts = encode_block(records)
    ids = [m.id for m in records]
    return _ENCODER.encode(_LogFile(msgspec.structs.replace(state, records=[]), ids, block, starts))


def _decode_state(body: memoryview) -> tuple[LogState, LazyRecords] | None:
    """The state :func:`_encode_state` encoded and its records (decoded on demand), or None when the
    parts disagree (raises msgspec's errors for anything that is not one)."""
    cached = _LOG_DECODER.decode(body)
    raw = memoryview(cached.block)
    skip = _BIN_HEADER.get(raw[0]) if len(raw) else None
    if skip is None:
        return None
    packed = RecordBlock.of(cached.ids, raw[skip:], cached.starts)
    if packed is None:
        return None
    packed.mapped = body
    return cached.state, LazyRecords(packed)


class _Hashed:
    """A prefix already hashed, or trusted by its stamp, as :class:`_PrefixHash` answers."""

    def __init__(self, hasher: Any, stamp: _Stamp | None = None) -> None:
        self.hasher = hasher
        self.stamp = stamp

    def result(self) -> Any | None:
        """The hasher fed the whole prefix (or standing for it)."""
        return self.hasher


class _PrefixHash(threading.Thread):
    """:func:`_hash_prefix` on a thread of its own: hashlib and file reads let go of the interpreter lock,
    so the prefix is hashed on the other core while the cached state decodes (both are needed)."""

    def __init__(self, path: str, check: _Check) -> None:
        super().__init__(name="keepgui-cache-check", daemon=True)
        self._args = (path, check.dev, check.ino, check.offset)
        self.hasher: Any | None = None
        self.stamp: _Stamp | None = None
        self.start()

    def run(self) -> None:
        """Hash the prefix (None when the file is not the one cached, or cannot be read)."""
        hashed = _hash_prefix(*self._args)
        if hashed is not None:
            self.hasher, self.stamp = hashed

    def result(self) -> Any | None:
        """The hasher fed the whole prefix, or None (see :func:`_hash_prefix`)."""
        self.join()
        return self.hasher


class _TrustedPrefix:
    """Stands for the hasher of a prefix its stamp vouched for, unhashed: its digest is the cached one.
    Only if the log is then read on (it grew) is the prefix hashed, from the file, so the digest goes
    on covering every byte; a prefix that no longer hashes to the cached digest then makes the digest
    one no prefix has (the state is never cached again, nor trusted)."""

    def __init__(self, path: str, check: _Check) -> None:
        self._args = (path, check.dev, check.ino, check.offset)
        self._digest = check.digest
        self._hasher: Any | None = None

    def digest(self) -> bytes:
        """The digest of the prefix, and of what was read after it."""
        return self._digest if self._hasher is None else bytes(self._hasher.digest())

    def update(self, data: bytes | memoryview) -> None:
        """Go on hashing ``data`` after the prefix (hashed first, the first time)."""
        if self._hasher is None:
            hashed = _hash_prefix(*self._args)
            self._hasher = hashed[0] if hashed is not None and hashed[0].digest() == self._digest else _Spoilt()
        self._hasher.update(data)


class _Spoilt:
    """A hasher whose prefix was not the one cached: its digest is no SHA-1's."""

    def digest(self) -> bytes:
        """Empty: never a prefix's digest."""
        return b""

    def update(self, data: bytes | memoryview) -> None:
        """Nothing to hash."""


class CacheEntry(msgspec.Struct, frozen=True):
    """One cached log in the cache folder: its files, their size, when it was last used (epoch ms)
    and the log it caches (None when the entry's log file is missing or of another format)."""

    key: str
    files: tuple[str, ...]
    size: int
    used_ms: int
    log_path: str | None


def _cached_log_path(path: str) -> str | None:
    """The log a ``.log`` cache file caches, read from its check (None: not one of this format)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_MAGIC) + _CHECK_LENGTH.size)
            if len(head) != len(_MAGIC) + _CHECK_LENGTH.size or not head.startswith(_MAGIC):
                return None
            (length,) = _CHECK_LENGTH.unpack_from(head, len(_MAGIC))
            split = _split_check(head[len(_MAGIC) :] + fh.read(length))
    except OSError:
        return None
    return None if split is None else os.fsdecode(split[0].path)


def cache_entries(folder: str | None = None) -> list[CacheEntry]:
    """Every entry of the cache folder (default :func:`cache_folder`), oldest use first."""
    folder = folder or cache_folder()
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found: dict[str, list[tuple[str, os.stat_result]]] = {}
    for name in names:
        stem, suffix = os.path.splitext(name)
        if suffix not in _SUFFIXES:
            continue
        path = os.path.join(folder, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        found.setdefault(stem, []).append((path, st))
    entries = []
    for key, files in found.items():
        log_file = os.path.join(folder, key + ".log")
        entries.append(
            CacheEntry(
                key=key,
                files=tuple(path for path, _ in files),
                size=sum(st.st_size for _, st in files),
                used_ms=max(st.st_mtime_ns for _, st in files) // 1_000_000,
                log_path=_cached_log_path(log_file) if any(path == log_file for path, _ in files) else None,
            )
        )
    entries.sort(key=lambda entry: (entry.used_ms, entry.key))
    return entries


def cache_size(folder: str | None = None) -> tuple[int, int]:
    """``(entries, bytes)`` of the cache folder (default :func:`cache_folder`)."""
    entries = cache_entries(folder)
    return len(entries), sum(entry.size for entry in entries)


def sweep(
    folder: str | None = None,
    *,
    keep: str | None = None,
    now_ms: int | None = None,
    unused_days: int = SWEEP_UNUSED_DAYS,
    max_bytes: int = SWEEP_MAX_BYTES,
) -> list[CacheEntry]:
    """Remove the entries whose log is gone, or not used for ``unused_days``, or the oldest used past
    ``max_bytes`` in all, and leftover temporary files of crashed writes; never the entry ``keep``
    (a key). Returns what was removed. Entries of another format are judged by age and size only."""
    import time

    folder = folder or cache_folder()
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    removed: list[CacheEntry] = []
    kept: list[CacheEntry] = []
    for entry in cache_entries(folder):
        if entry.key == keep:
            kept.append(entry)
            continue
        gone = entry.log_path is not None and not os.path.lexists(entry.log_path)
        if gone or now_ms - entry.used_ms > unused_days * 86_400_000:
            removed.append(entry)
        else:
            kept.append(entry)
    total = sum(entry.size for entry in kept)
    for entry in list(kept):  # oldest use first
        if total <= max_bytes:
            break
        if entry.key != keep:
            kept.remove(entry)
            removed.append(entry)
            total -= entry.size
    for entry in removed:
        for path in entry.files:
            with contextlib.suppress(OSError, KeepguiError):
                fsio.remove_file(path)
    _sweep_temps(folder, now_ms)
    return removed


def _sweep_temps(folder: str, now_ms: int) -> None:
    try:
        names = [name for name in os.listdir(folder) if fsio.is_temp_name(name)]
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        with contextlib.suppress(OSError, KeepguiError):
            if now_ms - os.stat(path).st_mtime_ns // 1_000_000 > _STALE_TEMP_S * 1000:
                fsio.remove_file(path)


_USE_GRAIN_S = 86_400  # an entry's last use is kept to the day (the sweep counts days): one touch a day at most


def _mark_used(path: str) -> None:
    """Note that the cache file was used now (its mtime, what the sweep judges by), once a day at most."""
    import time

    with contextlib.suppress(OSError, KeepguiError):
        if time.time() - os.stat(path).st_mtime > _USE_GRAIN_S:
            fsio.mark_used(path)


def _beside_a_window_release(view: memoryview) -> None:
    """In a window's process, the pages of a mapped index file read through (its CRC-32 reads it whole)
    given back: the restore and each query read again only the parts they go to. A command exits soon:
    nothing to do."""
    if pace.foreground() is not None:
        fsio.release_pages(view)


def _map_rest(fh: BinaryIO) -> memoryview:
    """The file from where ``fh`` stands to its end, mapped read-only (no copy of a cache of hundreds of
    megabytes; the map outlives ``fh`` and lives as long as what is read from it). Only keepgui's own
    cache files are mapped: they are replaced whole by a rename, never truncated in place."""
    start = fh.tell()
    size = os.fstat(fh.fileno()).st_size
    if size <= start:
        return memoryview(b"")
    mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return memoryview(mapped)[start:]


def _hash_prefix(path: str, dev: int, ino: int, length: int) -> tuple[Any, _Stamp | None] | None:
    """A hasher fed the first ``length`` bytes of ``path`` when it is still that file (dev, ino) and
    at least that long, with the stamp those bytes earn when the file is no longer than that (None
    when it is); None otherwise. Read, not mapped: the log is the agent's, and a map of a file
    truncated in place would kill the process when touched past the new end."""
    hasher = prefix_hasher()
    try:
        with open(path, "rb") as fh:
            seen_ns = time.time_ns()  # before the stat: a change after it is stamped no earlier
            st = os.fstat(fh.fileno())
            if (st.st_dev, st.st_ino) != (dev, ino) or st.st_size < length:
                return None
            buffer = memoryview(bytearray(min(_READ, length)))
            left = length
            while left:
                got = fh.readinto(buffer[: min(_READ, left)])
                if not got:
                    return None
                hasher.update(buffer[:got])
                left -= got
    except OSError:
        return None
    if st.st_size != length:
        return hasher, None
    return hasher, _Stamp(dev, ino, length, st.st_mtime_ns, st.st_ctime_ns, seen_ns, hasher.digest())


class LogCache:
    """The cache of one log (and optionally its index): :meth:`load` before the first refresh,
    :meth:`save` once the command has answered.

    ``folder`` defaults to :func:`cache_folder`.
    """

    def __init__(self, log: MemoryLog, index: BankIndex | None = None, folder: str | None = None) -> None:
        self.log = log
        log.keep_digest = True  # its replays keep the digest a saved state is checked against
        self.index = index
        self.folder = folder or cache_folder()
        key = _key(log.path)
        self.key = key
        self.log_file = cached_state_file(log.path, self.folder)
        self.index_file = os.path.join(self.folder, key + ".index")
        self.stamp_file = os.path.join(self.folder, key + ".stat")
        self._loaded: tuple[int, bytes] | None = None  # (offset, digest) of the log state restored
        self._verified: tuple[_Check, BinaryIO, _Hashed | _PrefixHash] | None = None  # see verified_listing_head
        self._index_loaded = False
        self._stamped: _Stamp | None = None  # the stamp on file (it vouched for the state restored)
        self._earned: _Stamp | None = None  # the stamp the restored state's prefix earned by being hashed

    def load(self, *, freeze: bool = True) -> bool:
        """Restore the log (and index) from the cache when it is verified against the file.

        Only a log not yet read is restored. Returns True when the log state came from the cache.
        ``freeze``: the process keeps what it holds now for good (a command's does; a window's, which
        lets banks go, does not).
        """
        if self.log.loaded:
            return False
        with gc_paused():  # decoding allocates millions of objects and no cycles: the collector only costs
            restored = self._load()
        if restored and freeze:
            # The restored state lives as long as the command: later collections need not walk it again
            # (the first full one after a 100k restore took 80 ms).
            gc.freeze()
        return restored

    @property
    def index_restored(self) -> bool:
        """True once the index came from the cache (by :meth:`load` or :meth:`load_index`)."""
        return self._index_loaded

    def load_index(self) -> bool:
        """Restore the index alone, for a log already read (restored or replayed) that is now exactly the
        state the cached index was made of (its offset and prefix digest). True when it was restored."""
        if self.index is None or not self.log.loaded:
            return False
        fresh = self.log.resume_point()
        mapped = _map_body(self.index_file)
        if fresh is None or mapped is None or len(mapped) < _CHECK_LENGTH.size:
            return False
        body = mapped[_CHECK_LENGTH.size :]
        if zlib.crc32(body) != _CHECK_LENGTH.unpack_from(mapped)[0]:
            return False
        from keepgui.backends.iii.index import CACHED_INDEX_DECODER

        try:
            cached = CACHED_INDEX_DECODER.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        if (cached.offset, cached.digest) != fresh:
            return False
        self._index_loaded = self.index.restore(cached.index)
        _beside_a_window_release(mapped)
        return self._index_loaded

    def _listing_head(self) -> str:
        live = [m for m in self.log.records.values() if m.invalid_at is None]
        return self.log.json_lines(heapq.nsmallest(LISTING_HEAD, live, key=newest_first))

    def _open(self) -> tuple[_Check, BinaryIO] | None:
        """The log cache file's check, and the file open just after it (the encoded state follows),
        when it is this log's; else None. Only the check is read: a listing head needs no more."""
        try:
            fh = open(self.log_file, "rb")  # noqa: SIM115 - handed to the caller, who closes it
        except OSError:
            return None
        with contextlib.suppress(OSError):  # an unreadable cache file is no cache
            head = fh.read(len(_MAGIC) + _CHECK_LENGTH.size)
            if len(head) == len(_MAGIC) + _CHECK_LENGTH.size and head.startswith(_MAGIC):
                (length,) = _CHECK_LENGTH.unpack_from(head, len(_MAGIC))
                split = _split_check(head[len(_MAGIC) :] + fh.read(length))
                if split is not None and split[0].path == os.fsencode(self.log.path):
                    return split[0], fh
        fh.close()
        return None

    def _read_stamp(self) -> _Stamp | None:
        """The stamp on file, or None (missing, unreadable, damaged, of another format)."""
        body = _read(self.stamp_file)
        if body is None or len(body) < _CHECK_LENGTH.size:
            return None
        view = memoryview(body)[_CHECK_LENGTH.size :]
        if zlib.crc32(view) != _CHECK_LENGTH.unpack_from(body)[0]:
            return None
        try:
            return _STAMP_DECODER.decode(view)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    def _prefix(self, check: _Check, *, wait: bool) -> _Hashed | _PrefixHash:
        """The log's prefix ``check`` caches, trusted by its stamp when the stamp holds (no hashing),
        else hashed: now when ``wait``, else on a thread (:class:`_PrefixHash`)."""
        stamp = self._read_stamp()
        if stamp is not None:
            try:
                st = os.stat(self.log.path)
            except OSError:
                st = None
            if st is not None and stamp.holds(st, check):
                self._stamped = stamp
                return _Hashed(_TrustedPrefix(self.log.path, check))
        if not wait:
            return _PrefixHash(self.log.path, check)
        hashed = _hash_prefix(self.log.path, check.dev, check.ino, check.offset)
        return _Hashed(None) if hashed is None else _Hashed(*hashed)

    def verified_listing_head(self) -> str | None:
        """The first lines of ``memories --json`` (no history, no tag) when the log is byte for byte the
        cached state — the same file, as long as the replayed prefix (nothing appended, not even part of
        a line), and that prefix hashes to the cached digest (or its stamp vouches for it) — else None.
        A :meth:`load` after it restores that state without checking the prefix again."""
        if self.log.loaded:
            return None
        opened = self._open()
        if opened is None:
            return None
        check, fh = opened
        try:
            st = os.stat(self.log.path)
        except OSError:
            st = None
        prefix = None
        if st is not None and (st.st_dev, st.st_ino, st.st_size) == (check.dev, check.ino, check.offset):
            prefix = self._prefix(check, wait=True)
        if prefix is None or prefix.hasher is None or prefix.hasher.digest() != check.digest:
            fh.close()
            return None
        self._verified = (check, fh, prefix)
        return check.listing_head

    def _load(self) -> bool:
        verified, self._verified = self._verified, None
        hashing: _Hashed | _PrefixHash
        if verified is not None:
            check, fh, hashing = verified
        else:
            opened = self._open()
            if opened is None:
                return False
            check, fh = opened
            hashing = self._prefix(check, wait=False)
        try:
            with fh:
                rest = _map_rest(fh)
        except (OSError, ValueError):
            hashing.result()
            return False
        decoded, cached_index, parts = self._decode(check, rest)
        hasher = hashing.result()
        if decoded is None or hasher is None or hasher.digest() != check.digest:
            return False
        state, records = decoded
        if (state.path, state.dev, state.ino, state.offset, state.digest) != (
            check.path,
            check.dev,
            check.ino,
            check.offset,
            check.digest,
        ):
            return False
        if not self.log.restore(state, hasher, records):
            return False
        self._loaded = (state.offset, state.digest)
        self._earned = hashing.stamp
        if self.index is not None and cached_index is not None:
            self._index_loaded = self._restore_index(cached_index, state, parts)
        _mark_used(self.log_file)
        return True

    def _decode(
        self, check: _Check, rest: memoryview
    ) -> tuple[tuple[LogState, LazyRecords] | None, CachedIndexView | None, RestoredParts | None]:
        """The log state after ``check`` (``rest``) and the index cache file, decoded, and the index's
        parts read and checked against the records, each None when it is not whole (its CRC-32) or not
        one. The two files' CRCs are computed on threads of their own while they decode and the index's
        parts are read (zlib lets go of the interpreter lock); nothing is kept unless its CRC holds."""
        index = _map_body(self.index_file) if self.index is not None else None
        if index is not None and len(index) < _CHECK_LENGTH.size:
            index = None
        index_body = index[_CHECK_LENGTH.size :] if index is not None else memoryview(b"")
        crcs = _Crcs(rest), _Crcs(index_body)
        decoded = cached_index = parts = None
        try:
            decoded = _decode_state(rest)
        except (msgspec.DecodeError, msgspec.ValidationError):
            decoded = None
        if decoded is not None and index is not None:
            from keepgui.backends.iii.index import CACHED_INDEX_DECODER, RestoredParts

            try:
                cached_index = CACHED_INDEX_DECODER.decode(index_body)  # its arrays are views of the mapped file
            except (msgspec.DecodeError, msgspec.ValidationError):
                cached_index = None
            if cached_index is not None:
                parts = RestoredParts.of(cached_index.index, decoded[1])
        (rest_crc,), (index_crc,) = crcs[0].result(), crcs[1].result()
        if rest_crc != check.body_crc:
            return None, None, None
        if index is None or index_crc != _CHECK_LENGTH.unpack_from(index)[0]:
            cached_index = parts = None
        else:
            _beside_a_window_release(index)
        return decoded, cached_index, parts

    def _restore_index(self, cached: CachedIndexView, state: LogState, parts: RestoredParts | None) -> bool:
        if self.index is None or (cached.offset, cached.digest) != (state.offset, state.digest):
            return False
        return self.index.restore(cached.index, parts)

    def save(self) -> bool:
        """Write what changed since :meth:`load` (atomically); False when nothing was written.

        Never raises for a cache that cannot be written: the answer does not depend on it.
        """
        fresh = self.log.resume_point()
        if fresh is None:
            return False
        stamped = self._save_stamp(fresh)
        return self._save_state(fresh) or stamped

    def _stamp_for(self, fresh: tuple[int, bytes]) -> _Stamp | None:
        """The stamp the state at ``fresh`` (its offset and digest) has earned and is not on file yet:
        from the full replay that produced it, or from hashing its prefix as it was restored; None
        when it earned none (it was read on since), or only a racy one."""
        offset, digest = fresh
        seen = self.log.replay_stat()
        stamp = None
        if seen is not None and seen[2] == offset:
            stamp = _Stamp(*seen, digest)
        elif self._earned is not None and (self._earned.size, self._earned.digest) == fresh:
            stamp = self._earned
        if stamp is None or not stamp.settled() or stamp == self._stamped:
            return None
        return stamp

    def _save_stamp(self, fresh: tuple[int, bytes]) -> bool:
        """Write the stamp the state earned (see :meth:`_stamp_for`), if any. A stamp is not the
        cache's state but a fact about the log: it needs no sync (one lost to a power cut costs a hash)."""
        stamp = self._stamp_for(fresh)
        if stamp is None:
            return False
        try:
            fsio.make_dirs(self.folder)
            fsio.atomic_write(self.stamp_file, _encode_stamp(stamp), mode=0o600, durable=False)
        except (OSError, KeepguiError):
            return False
        self._stamped = stamp
        return True

    def _save_state(self, fresh: tuple[int, bytes]) -> bool:
        write_log = fresh != self._loaded
        if not write_log and (self.index is None or self._index_loaded):
            return False  # the cache already holds this state: nothing to encode
        state = self.log.snapshot()
        if state is None:
            return False
        index_state = self.index.snapshot() if self.index is not None else None
        write_index = index_state is not None and (write_log or not self._index_loaded)
        if not (write_log or write_index):
            return False
        try:
            log_bytes = b""
            if write_log:
                body = _encode_state(state)
                check = _ENCODER.encode(
                    _Check(
                        state.path,
                        state.dev,
                        state.ino,
                        state.offset,
                        state.digest,
                        self._listing_head(),
                        zlib.crc32(body),
                    )
                )
                log_bytes = _MAGIC + _CHECK_LENGTH.pack(len(check)) + check + body
            index_bytes = b""
            if index_state is not None and write_index:
                from keepgui.backends.iii.index import CachedIndex

                index_file = CachedIndex(offset=state.offset, digest=state.digest, index=index_state)
                encoded = _ENCODER.encode(index_file)
                index_bytes = _MAGIC + _CHECK_LENGTH.pack(zlib.crc32(encoded)) + encoded
            fsio.make_dirs(self.folder)
            if write_log:
                fsio.atomic_write(self.log_file, log_bytes, mode=0o600)
                self._loaded = fresh
            if index_bytes:
                fsio.atomic_write(self.index_file, index_bytes, mode=0o600)
                self._index_loaded = True
            sweep(self.folder, keep=self.key)
        except (OSError, KeepguiError, msgspec.EncodeError, UnicodeError):
            return False  # a path or text msgspec cannot encode: no cache this time, the answer stands
        return True
