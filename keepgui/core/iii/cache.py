"""A verified cache of replayed logs and their indexes, so the CLI answers at once.

Replaying a ``memories.jsonl`` and indexing it for recall costs seconds at a
hundred thousand memories; a command run on an unchanged bank should not pay
that every time. :class:`LogCache` keeps, in keepgui's own cache folder
(:func:`keepgui.core.paths.app_cache_dir`, never beside the agent's files), the
state of a :class:`~keepgui.core.iii.log.MemoryLog` and, in a second file, of its
:class:`~keepgui.core.iii.index.BankIndex`, encoded with msgspec.

A cache is never the source of truth. A cached state is used only when the log
is the same file (device and inode), at least as long as the replayed prefix,
and that prefix still hashes (SHA-1 over every byte, read back from the file)
to what was replayed; then the log's ``refresh`` replays only what was appended.
Anything else — a rewritten, truncated or replaced log, a cache file that is
corrupt, truncated, of another keepgui or format version, or unreadable — means
a full replay, never a traceback or a different answer. Writing the cache is
atomic (:mod:`keepgui.core.fsio`) and its failure (a read-only home, a full
disk) is ignored: the command has already answered.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

import msgspec

from keepgui import __version__
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.iii.index import BankIndex, IndexState
from keepgui.core.iii.log import LogState, MemoryLog, gc_paused, prefix_hasher
from keepgui.core.paths import app_cache_dir

FORMAT = 1
"""Bumped whenever what a cache file holds changes meaning; a file of another format is ignored."""

_READ = 1 << 20  # the prefix is hashed in reads of this size
_MAGIC = (
    f"keepgui-log-cache {FORMAT} {__version__} {sys.implementation.cache_tag} {sys.byteorder}\n".encode()
)  # arrays are cached as native machine words: another interpreter or byte order starts afresh

_LOG_DECODER = msgspec.msgpack.Decoder(LogState)
_INDEX_DECODER = msgspec.msgpack.Decoder(IndexState)
_ENCODER = msgspec.msgpack.Encoder()


class _IndexFile(msgspec.Struct, array_like=True, gc=False):
    """The index cache: which log state it belongs to (the log cache's offset and digest) and the index."""

    offset: int
    digest: bytes
    index: IndexState


_INDEX_FILE_DECODER = msgspec.msgpack.Decoder(_IndexFile)


def cache_folder() -> str:
    """Where the log caches live."""
    return os.path.join(app_cache_dir(), "iii-logs")


def _key(log_path: str) -> str:
    """The cache file name for a log: a hash of its absolute, resolved path."""
    real = os.path.realpath(os.path.abspath(log_path))
    return hashlib.sha1(real.encode("utf-8", "surrogateescape"), usedforsecurity=False).hexdigest()


def _read(path: str) -> bytes | None:
    """The body of a cache file after its magic line, or None (missing, unreadable, foreign)."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return None
            return fh.read()
    except OSError:
        return None


def _hash_prefix(path: str, dev: int, ino: int, length: int) -> Any | None:
    """A hasher fed the first ``length`` bytes of ``path`` when it is still that file (dev, ino) and
    at least that long; None otherwise."""
    hasher = prefix_hasher()
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if (st.st_dev, st.st_ino) != (dev, ino) or st.st_size < length:
                return None
            left = length
            while left:
                chunk = fh.read(min(_READ, left))
                if not chunk:
                    return None
                hasher.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    return hasher


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
        self.log_file = os.path.join(self.folder, key + ".log")
        self.index_file = os.path.join(self.folder, key + ".index")
        self._loaded: tuple[int, bytes] | None = None  # (offset, digest) of the log state restored
        self._index_loaded = False

    def load(self) -> bool:
        """Restore the log (and index) from the cache when it is verified against the file.

        Only a log not yet read is restored. Returns True when the log state came from the cache.
        """
        if self.log.loaded:
            return False
        with gc_paused():  # decoding allocates millions of objects and no cycles: the collector only costs
            return self._load()

    def _load(self) -> bool:
        body = _read(self.log_file)
        if body is None:
            return False
        try:
            state = _LOG_DECODER.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        if state.path != os.fsencode(self.log.path):
            return False
        hasher = _hash_prefix(self.log.path, state.dev, state.ino, state.offset)
        if hasher is None or hasher.digest() != state.digest:
            return False
        if not self.log.restore(state, hasher):
            return False
        self._loaded = (state.offset, state.digest)
        if self.index is not None:
            self._index_loaded = self._load_index(state)
        return True

    def _load_index(self, state: LogState) -> bool:
        body = _read(self.index_file)
        if body is None or self.index is None:
            return False
        try:
            cached = _INDEX_FILE_DECODER.decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        if (cached.offset, cached.digest) != (state.offset, state.digest):
            return False
        return self.index.restore(cached.index)

    def save(self) -> bool:
        """Write what changed since :meth:`load` (atomically); False when nothing was written.

        Never raises for a cache that cannot be written: the answer does not depend on it.
        """
        fresh = self.log.resume_point()
        if fresh is None:
            return False
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
            log_bytes = _MAGIC + _ENCODER.encode(state) if write_log else b""
            index_bytes = b""
            if index_state is not None and write_index:
                index_file = _IndexFile(offset=state.offset, digest=state.digest, index=index_state)
                index_bytes = _MAGIC + _ENCODER.encode(index_file)
            fsio.make_dirs(self.folder)
            if write_log:
                fsio.atomic_write(self.log_file, log_bytes, mode=0o600)
                self._loaded = fresh
            if index_bytes:
                fsio.atomic_write(self.index_file, index_bytes, mode=0o600)
                self._index_loaded = True
        except (OSError, KeepguiError, msgspec.EncodeError, UnicodeError):
            return False  # a path or text msgspec cannot encode: no cache this time, the answer stands
        return True
