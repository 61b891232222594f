"""Every byte keepgui writes goes through this module.

Three primitives, each chosen so that a crash, a power cut or a second writer
can never leave a memory file torn or silently overwritten:

* :func:`atomic_write` replaces a whole file: a temporary file in the same
  folder, ``fsync``, ``os.replace``, then ``fsync`` of the folder so the rename
  itself is durable. The file's mode bits are kept. Temporary names end in
  ``.tmp`` so the iii worker, which lists ``rules/*.md``, never sees one.
* :func:`append_lines` (and :class:`LockedLog`) add complete lines to an
  append-only log in **one** ``write()`` under an exclusive lock, then
  ``fsync``. The iii worker appends without any lock and in two writes (the
  JSON, then ``\\n``), so a shared log's append always *begins* with its own
  ``\\n``: landing between the worker's two writes it ends the worker's line
  instead of being glued onto it, and since the append also ends in ``\\n``
  the worker's next line starts a line of its own. Readers skip the blank
  lines this leaves. The space is reserved first (``fallocate`` with
  ``FALLOC_FL_KEEP_SIZE`` where the filesystem has it), so a full disk refuses
  the append before any byte is written; a write cut short anyway is taken
  back (or its partial line ended with ``\\n``), so the log ends as it was or
  in ``\\n``, never in half a record onto which the worker's next one is glued.
* :func:`create_folder` makes a folder with its first files in a hidden
  temporary folder and renames it into place: it appears whole or not at all.
* :class:`Stamp` identifies what was read (size, mtime, SHA-256). A save given
  the stamp it loaded refuses with :class:`Conflict` when the content on disk
  differs: nothing anyone else wrote is ever overwritten unseen. Content, not
  the mtime alone, decides, so a touch without a change is not a conflict.

Only this module opens files for writing (a test enforces it).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import mmap
import os
import random
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from keepgui.core.errors import Conflict, KeepguiError, ReadOnly, WriteFailed

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    def _try_lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # raises PermissionError while another holds it

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _try_lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError while another holds it


_T = TypeVar("_T")

TAIL_SETTLE_SECONDS = 0.05
"""How long an append waits for a last line without its newline to be completed (see LockedLog.settle)."""

TEMP_MARKER = ".keepgui-"
"""Every temporary file keepgui creates has this in its name and ends in ``.tmp``."""

# ---------------------------------------------------------------------- folders mirrored from other machines

_mounts: dict[str, Any] = {}
"""Mirrored folders (keepgui.core.remote): a write below one is made on its machine by its handler."""


def mount(root: str, handler: Any) -> None:
    """Hand every write below ``root`` (a mirror of a remote folder) to ``handler``
    (a :class:`keepgui.core.remote.push.Pusher`), which makes it on the remote machine first."""
    _mounts[os.path.abspath(root)] = handler


def unmount(root: str) -> None:
    """Stop handing writes below ``root`` over (the mirror was closed)."""
    _mounts.pop(os.path.abspath(root), None)


def _remote(path: str | os.PathLike[str]) -> Any:
    """The handler of the mirror ``path`` is in, or None for a local file. A path in keepgui's mirror
    cache that no open mirror holds is looked up there (ReadOnly when none claims it): a mirror is
    never written alone."""
    path = os.path.abspath(os.fspath(path))
    for root, handler in _mounts.items():
        if path == root or path.startswith(root + os.sep):
            return handler
    from keepgui.core.paths import remote_cache_dir

    cache = remote_cache_dir() + os.sep
    if not path.startswith(cache):
        return None
    from keepgui.core import remote

    return remote.pusher_for(path)


_BINARY = getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# Opening a FIFO for reading blocks until a writer appears; O_NONBLOCK makes the
# open return at once (it changes nothing for regular files), so the type check
# below can refuse it instead of hanging.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class Stamp:
    """What a file was when it was read: enough to notice any later change.

    ``exists`` is False for a file that was missing; its other fields are then
    zero/empty. Two stamps describe the same content when their SHA-256 match.
    """

    exists: bool
    size: int = 0
    mtime_ns: int = 0
    sha256: str = ""

    @classmethod
    def missing(cls) -> Stamp:
        """The stamp of a file that does not exist."""
        return cls(False)

    @classmethod
    def of(cls, data: bytes, st: os.stat_result) -> Stamp:
        """The stamp of ``data`` read from a file whose ``fstat`` is ``st``."""
        return cls(True, len(data), st.st_mtime_ns, hashlib.sha256(data).hexdigest())

    def same_content(self, other: Stamp) -> bool:
        """True when both describe the same bytes (or both a missing file)."""
        if self.exists != other.exists:
            return False
        return not self.exists or (self.size == other.size and self.sha256 == other.sha256)


WriteHook = Callable[[str, str, "bytes | None"], None]
_WRITE_HOOKS: list[WriteHook] = []


def on_write(hook: WriteHook) -> None:
    """Call ``hook(stage, path, data)`` around every write this module makes to a file: ``stage`` is
    ``"before"`` (nothing written yet) or ``"after"`` (``data`` the file's whole new bytes, or None
    when only an append or a removal was made). keepgui's journal is the one listener; a hook that
    fails never fails the write."""
    _WRITE_HOOKS.append(hook)


_UNTOLD = threading.local()


@contextlib.contextmanager
def untold() -> Iterator[None]:
    """The writes of this block, on this thread, are not told to the hooks (:func:`on_write`): for
    keepgui's own stores that no journal follows (its history: 20,000 calls at a first sight)."""
    depth = getattr(_UNTOLD, "depth", 0)
    _UNTOLD.depth = depth + 1
    try:
        yield
    finally:
        _UNTOLD.depth = depth


def _tell(stage: str, path: str | os.PathLike[str], data: bytes | None = None) -> None:
    if getattr(_UNTOLD, "depth", 0):
        return
    for hook in _WRITE_HOOKS:
        try:
            hook(stage, os.fspath(path), data)
        except Exception:  # noqa: BLE001 - a listener never fails a write
            continue


def read_stamped(path: str | os.PathLike[str], limit: int | None = None) -> tuple[bytes | None, Stamp]:
    """Read a whole file and return ``(bytes, stamp)``; ``(None, missing)`` when absent.

    The stamp is computed from the very bytes returned, so it can be handed to
    :func:`atomic_write` as ``expect`` without a window in between. ``limit``
    refuses (``KeepguiError``) files larger than that many bytes. A read that a
    whole-file write is based on uses :func:`read_settled`.
    """
    data, stamp, _after = _read_fd(path, limit)
    return data, stamp


def _read_fd(path: str | os.PathLike[str], limit: int | None) -> tuple[bytes | None, Stamp, os.stat_result | None]:
    """``(bytes, stamp, fstat after the read)``; ``(None, missing, None)`` when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | _BINARY | _NONBLOCK)
    except FileNotFoundError:
        return None, Stamp.missing(), None
    try:
        st = os.fstat(fd)
        # A FIFO would block the reader forever and a device such as /dev/zero
        # never ends (its size is 0, so the limit below would not stop it).
        _refuse_non_file(path, st)
        if limit is not None and st.st_size > limit:
            raise KeepguiError(f"{os.fspath(path)} is {st.st_size:,} bytes, more than the {limit:,} keepgui reads")
        # One read of the whole file (and a byte more, to see its end): a file of megabytes is not
        # joined from chunks in one call that holds the interpreter lock for milliseconds.
        chunks = [os.read(fd, st.st_size + 1)] if st.st_size else []
        while not chunks or chunks[-1]:
            chunks.append(os.read(fd, 1 << 20))
        data = chunks[0] if len(chunks) == 2 else b"".join(chunks)
        return data, Stamp.of(data, st), os.fstat(fd)
    finally:
        os.close(fd)


SETTLE_PAUSES = (0.01, 0.02, 0.04, 0.08, 0.16, 0.25)
"""The pauses of :func:`read_settled` between looks at a file caught mid-write (about 0.56 s in all)."""


class Unsettled(Conflict):
    """A file was being written while keepgui read it, and did not hold still (nothing was written)."""

    def __init__(self, path: str | os.PathLike[str], seen: str, still: bool = False) -> None:
        KeepguiError.__init__(
            self,
            f"{os.fspath(path)} was being written by another program while keepgui read it ({seen}, for "
            f"{sum(SETTLE_PAUSES):.1f} s); nothing was written — try again in a moment",
        )
        self.still = still
        """True for an empty file that held still: the next command may take it as it is (the caller
        records it as seen), this one does not."""
        self.path = os.fspath(path)
        self.expected = None
        self.actual = None


def read_settled(
    path: str | os.PathLike[str], limit: int | None = None, *, before: int | None = None
) -> tuple[bytes | None, Stamp]:
    """:func:`read_stamped`, for a read that a whole-file write may be based on: a read caught in the
    middle of another program's write is looked at again, never taken as the file.

    A read is suspect when the file's size or time changed while it was read (a write in place), when
    it came back empty (nanobot writes keep.md with a truncating open and then a write: for a moment
    the file is empty) or shorter than ``before`` (its size when keepgui last saw it, if known). A
    file written while it was read is taken at the first look that finds it still; a shrunken one
    only when it held still through every pause of :data:`SETTLE_PAUSES` (about half a second: a
    writer that truncated writes long before); an empty one that held something before never (its
    :class:`Unsettled` says it held still: the caller records it as seen, and the next command may
    take it). Otherwise :class:`Unsettled` is raised, which every write path treats as a conflict —
    look again, or refuse; never a base for a write.
    """
    data, stamp, moved = _read_once(path, limit)
    held = 0.0
    for pause in SETTLE_PAUSES:
        if not stamp.exists or (not moved and not _suspect(stamp, before)):
            return data, stamp
        time.sleep(pause)  # nothing signals the end of another program's write: look again shortly
        again, again_stamp, again_moved = _read_once(path, limit)
        held = held + pause if not (moved or again_moved) and again_stamp == stamp else 0.0
        data, stamp, moved = again, again_stamp, again_moved
    still = not moved and held >= sum(SETTLE_PAUSES)
    if not stamp.exists or (not moved and not _suspect(stamp, before)) or (still and (stamp.size or not before)):
        return data, stamp
    raise Unsettled(path, "it kept changing" if not still else "it was empty; it held something before", still)


def _suspect(stamp: Stamp, before: int | None) -> bool:
    """Empty (unless it was empty when last seen), or shorter than it was."""
    return (stamp.size == 0 and before != 0) or (before is not None and stamp.size < before)


def _read_once(path: str | os.PathLike[str], limit: int | None) -> tuple[bytes | None, Stamp, bool]:
    """:func:`read_stamped`, and whether the file was written in place while it was read (its size
    or time after the read differ from before it, or from the bytes read). A file replaced by a
    rename meanwhile is no such case: the bytes read are the old file, whole."""
    data, stamp, st = _read_fd(path, limit)
    if data is None or st is None:
        return data, stamp, False
    return data, stamp, (st.st_size, st.st_mtime_ns) != (stamp.size, stamp.mtime_ns)


RETRY_TRIES = 5
RETRY_SECONDS = 2.0
"""A change keepgui decides on what it read is tried at most :data:`RETRY_TRIES` times within
:data:`RETRY_SECONDS` when another program's write keeps getting in between (see :func:`retrying`)."""


def retrying(attempt: Callable[[], _T], *, tries: int = RETRY_TRIES, within: float = RETRY_SECONDS) -> _T:
    """Run ``attempt`` (which reads, decides and writes with the stamp it read) again when it is refused
    with :class:`Conflict` (or :class:`Unsettled`): an agent writing every few milliseconds makes most
    first tries conflict. At most ``tries`` times and ``within`` seconds, with short growing pauses;
    a conflict that stands is raised as it is — never forced."""
    deadline = time.monotonic() + within
    for n in range(tries):
        try:
            return attempt()
        except Unsettled as exc:
            if exc.still or n == tries - 1:
                raise
        except Conflict:
            pause = 0.02 * (n + 1) * (0.5 + random.random())  # nosec - jitter, not a secret
            if n == tries - 1 or time.monotonic() + pause >= deadline:
                raise
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


def release_pages(view: memoryview) -> bool:
    """Give back to the kernel the pages of a read-only file mapping that ``view`` looks into (its whole
    map): they stop counting in the process's resident memory and are read again, from the page cache or
    the file, when next touched. Only for a file that is replaced by a rename, never changed in place.
    False when ``view`` is not of a mapping or the system cannot say so."""
    mapped = view.obj
    if not isinstance(mapped, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED") or mapped.closed:
        return False
    try:
        mapped.madvise(mmap.MADV_DONTNEED)
    except (OSError, ValueError):
        return False
    return True


def lines_around(path: str | os.PathLike[str], line: int, context: int = 6, width: int = 400) -> list[tuple[int, str]]:
    """Lines ``line - context`` to ``line + context`` of a text file, as ``(number, text)`` (1-based),
    each cut to ``width`` characters; read in blocks, so a log of millions of lines or one line of
    50 MB costs no more memory than a block. Invalid UTF-8 is shown replaced."""
    first, last = max(1, line - context), line + context
    out: list[tuple[int, str]] = []
    fd = os.open(path, os.O_RDONLY | _BINARY | _NONBLOCK)
    try:
        _refuse_non_file(path, os.fstat(fd))
        number, current, pending = 1, bytearray(), b""
        while number <= last:
            block = os.read(fd, 1 << 16)
            if not block:
                break
            pending = block
            while pending and number <= last:
                end = pending.find(b"\n")
                piece, pending = (pending, b"") if end < 0 else (pending[:end], pending[end + 1 :])
                if first <= number and len(current) < width * 4:
                    current += piece[: width * 4 - len(current)]
                if end < 0:
                    break
                if first <= number:
                    out.append((number, current.decode("utf-8", "replace")[:width]))
                number, current = number + 1, bytearray()
        if current and first <= number <= last:
            out.append((number, current.decode("utf-8", "replace")[:width]))  # a last line without its newline
    finally:
        os.close(fd)
    return out


def _refuse_non_file(path: str | os.PathLike[str], st: os.stat_result) -> None:
    """Raise KeepguiError unless ``st`` is the stat of a regular file."""
    if stat.S_ISDIR(st.st_mode):
        raise KeepguiError(f"{os.fspath(path)} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise KeepguiError(f"{os.fspath(path)} is not a regular file")


def current_stamp(path: str | os.PathLike[str]) -> Stamp:
    """The stamp of the file as it is on disk now."""
    return read_stamped(path)[1]


def check_unchanged(path: str | os.PathLike[str], expect: Stamp | None) -> os.stat_result | None:
    """Raise :class:`Conflict` unless the file still has the content ``expect`` describes.

    ``expect=None`` means the caller read nothing and accepts whatever is there:
    the file is then only stat'ed, not read. Either way a folder or a file that
    is not regular is refused (KeepguiError, as :func:`read_stamped` refuses it).
    Returns the file's ``os.stat``, or None when it does not exist.
    """
    # The stat is taken before the content is read and hashed: a file replaced in between then fails
    # the hash, and the stat returned always describes a file whose content was checked (a replace
    # after the check is then seen by the inode, as atomic_write's exchange looks for it).
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    if expect is not None:
        now = current_stamp(path)
        if not expect.same_content(now):
            raise Conflict(path, expect, now)
    if st is None:
        return None
    _refuse_non_file(path, st)
    return st


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename or unlink inside folder ``path`` durable (no-op where unsupported)."""
    if sys.platform == "win32":  # pragma: no cover
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on folders
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def sync_files(paths: Iterable[str]) -> None:
    """Make writes made with ``durable=False`` durable: an fsync of each file, then of each of their
    folders once (after writing them all: the first commits the filesystem's journal for all)."""
    folders: dict[str, None] = {}
    for path in paths:
        folders[os.path.dirname(path) or "."] = None
        fd = os.open(path, os.O_RDONLY | _BINARY | _NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for folder in folders:
        fsync_dir(folder)


def temp_name_for(path: str | os.PathLike[str]) -> str:
    """A fresh temporary path beside ``path``, hidden, never ending in ``.md``."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(folder, f".{name}{TEMP_MARKER}{os.getpid()}-{os.urandom(4).hex()}.tmp")


def is_temp_name(name: str) -> bool:
    """True for a leftover temporary file of keepgui (or of the worker's rule writes)."""
    return name.endswith(".tmp") and (TEMP_MARKER in name or (name.startswith(".") and name.endswith(".md.tmp")))


LEFTOVER_AGE_SECONDS = 600
"""A temporary file of keepgui's older than this is a leftover of a killed write (a live write lasts
milliseconds); younger ones are never touched."""


def leftover_temps(folder: str | os.PathLike[str], *, now: float | None = None, deep: bool = True) -> list[str]:
    """keepgui's temporary files (``.…keepgui-….tmp``) directly in ``folder`` and its subfolders that
    a killed write left behind (older than :data:`LEFTOVER_AGE_SECONDS`), sorted (``deep=False``:
    ``folder`` itself only). A killed forget
    can leave the forgotten line in one: they are reported, and removed only by :func:`remove_leftover`."""
    now = time.time() if now is None else now
    found = []
    for parent, dirs, names in os.walk(os.fspath(folder)):
        dirs[:] = [d for d in dirs if deep and not os.path.islink(os.path.join(parent, d))]
        for name in names:
            if TEMP_MARKER in name and name.endswith(".tmp"):
                path = os.path.join(parent, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > LEFTOVER_AGE_SECONDS:
                    found.append(path)
    return sorted(found)


def remove_leftover(path: str | os.PathLike[str], *, now: float | None = None) -> bool:
    """Remove one leftover temporary file of keepgui's (see :func:`leftover_temps`); False (and
    nothing removed) when ``path`` is not one, or is young enough to belong to a write under way."""
    path = os.fspath(path)
    name = os.path.basename(path)
    try:
        st = os.lstat(path)
    except OSError:
        return False
    now = time.time() if now is None else now
    if not (TEMP_MARKER in name and name.endswith(".tmp") and stat.S_ISREG(st.st_mode)):
        return False
    if now - st.st_mtime <= LEFTOVER_AGE_SECONDS:
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    fsync_dir(os.path.dirname(path) or ".")
    return True


_os_write = os.write
"""Every ``write()`` of this module goes through this name, so a test can inject a
fault (``ENOSPC``, a short write) at any one call."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _os_write(fd, view)
        view = view[written:]


_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _failure(path: str | os.PathLike[str], exc: OSError, what: str = "nothing was saved") -> WriteFailed:
    """The one-line error for a write that failed: the file, the reason, what was left."""
    return WriteFailed(f"{os.fspath(path)}: {exc.strerror or exc}; {what}")


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    expect: Stamp | None = None,
    mode: int = 0o644,
    durable: bool = True,
) -> Stamp:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a mix.

    ``expect``: the stamp the caller loaded; the write is refused with
    :class:`Conflict` when the file on disk no longer has that content (use
    ``Stamp.missing()`` to insist the file does not exist yet). ``mode`` is used
    only for a new file; an existing file keeps its mode bits. A symlink is
    never replaced (that would silently cut a link someone made). ``durable=False`` skips the
    syncs (keepgui's own records that a power cut may lose but never tear: the journal).
    Returns the stamp of the new content.
    """
    path = os.fspath(path)
    remote = _remote(path)
    if remote is not None:
        _tell("before", path)
        stamp: Stamp = remote.atomic_write(path, data, expect, mode)
        _tell("after", path, data)
        return stamp
    folder = os.path.dirname(path) or "."
    if os.path.islink(path):
        raise ReadOnly(f"{path} is a symbolic link; keepgui does not replace links")
    _tell("before", path)
    old = check_unchanged(path, expect)
    keep_mode = None if old is None else stat.S_IMODE(old.st_mode)
    tmp = temp_name_for(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY | _NOFOLLOW, 0o600)
    except OSError as exc:
        raise _failure(path, exc, "nothing was saved (the file is unchanged)") from None
    try:
        try:
            _write_all(fd, data)
            if keep_mode is not None:
                os.chmod(tmp, keep_mode)
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, mode & ~umask)
            if durable:
                os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        checked = None
        if expect is not None:
            # Narrow the window between the check and the replace as far as we can.
            checked = check_unchanged(path, expect)
        if expect is None or not expect.exists or not _exchange(tmp, path):
            _replace(tmp, path)
        else:
            _settle_exchange(tmp, path, expect, checked, st)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _failure(path, exc, "nothing was saved (the file is unchanged)") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(folder)
    _tell("after", path, data)
    return Stamp.of(data, st)


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


@functools.cache
def _renameat2() -> Callable[..., int] | None:
    """libc's ``renameat2``, or None where there is none (not Linux, glibc < 2.28, some musl)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    func.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    func.restype = ctypes.c_int
    return func


def _exchange(a: str, b: str) -> bool:
    """Swap the files at ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False
    where the system or the filesystem cannot, so the caller replaces instead."""
    func = _renameat2()
    if func is None:
        return False
    if func(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False  # this filesystem cannot exchange (e.g. some FUSE and network filesystems)
    raise OSError(err, os.strerror(err), b)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_dev, b.st_ino, b.st_size, b.st_mtime_ns)


def _settle_exchange(tmp: str, path: str, expect: Stamp, checked: os.stat_result | None, ours: os.stat_result) -> None:
    """After ``tmp`` and ``path`` were swapped: ``tmp`` names what ``path`` held at that instant.

    When that is the very file the last check read (same inode, size and mtime: no hashing, so the
    moment stays short), it is removed and the write stands. When it is not, a writer that takes no
    lock (an agent) replaced or wrote the file between the last check and the swap: its file is put
    back at once (swapped again) and the write refused as any other conflict. A plain replace would
    have dropped it.
    """
    try:
        displaced = os.stat(tmp)
        if checked is not None and _same_file(displaced, checked) and not _written_late(tmp, displaced):
            os.unlink(tmp)
            return
        if not _exchange(tmp, path):  # cannot happen on the filesystem that just exchanged; be safe
            _replace(tmp, path)
        elif os.path.samestat(os.stat(tmp), ours):
            os.unlink(tmp)
        else:  # the writer wrote yet again in between: its newest file is in tmp
            _replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):  # never let the caller's clean-up remove what may be someone's file
            os.rename(tmp, tmp + ".displaced")
        raise
    raise Conflict(path, expect, current_stamp(path))


EMPTY_WATCH_SECONDS = 0.05
"""How long an empty file keepgui just replaced is watched for a late write (see :func:`_written_late`)."""


def _written_late(tmp: str, displaced: os.stat_result) -> bool:
    """True when the empty file just swapped out to ``tmp`` is written after all.

    A writer that truncates and then writes (nanobot's ``open(path, "w")``) holds the file open
    between the two: an empty file may be one whose content is on its way. It is watched for
    :data:`EMPTY_WATCH_SECONDS`; content arriving in it means the write must be undone (the caller
    swaps it back and refuses)."""
    if displaced.st_size:
        return False
    time.sleep(EMPTY_WATCH_SECONDS)  # no signal tells when another program's write lands: look again
    try:
        return not _same_file(os.stat(tmp), displaced)
    except FileNotFoundError:
        return True


def _replace(tmp: str, path: str) -> None:
    """``os.replace``, retried briefly on Windows where a reader holding the file open
    makes the rename fail with a sharing violation (elsewhere a single call)."""
    attempts = 10 if sys.platform == "win32" else 1
    for attempt in range(attempts):
        try:
            os.replace(tmp, path)
            return
        except PermissionError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def create_new(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644) -> Stamp:
    """Create ``path`` holding ``data``, whole, and only if nothing has that name: never a replace.

    The bytes go to a temporary file in the same folder (synced), which is then
    hard-linked to ``path``: ``link()`` fails when the name exists, whoever made
    it and however late, so another writer's file is never replaced (a check
    followed by a rename could). The temporary name is removed and the folder
    synced. ``FileExistsError`` when the name is taken (nothing written);
    :class:`WriteFailed` on any other failure. Where the filesystem has no hard
    links, an ``O_EXCL`` create written in place is used instead (still never
    a replace; a crash then can leave a short file, which the caller's reader
    must tolerate). Returns the stamp of the new file.
    """
    path = os.fspath(path)
    remote = _remote(path)
    if remote is not None:
        _tell("before", path)
        made: Stamp = remote.atomic_write(path, data, None, mode, create=True)
        _tell("after", path, data)
        return made
    folder = os.path.dirname(path) or "."
    _tell("before", path)
    tmp = temp_name_for(path)
    umask = os.umask(0)
    os.umask(umask)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY | _NOFOLLOW, 0o600)
    except OSError as exc:
        raise _failure(path, exc, "nothing was created") from None
    try:
        try:
            _write_all(fd, data)
            os.chmod(tmp, mode & ~umask)
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            _create_in_place(path, data, mode & ~umask)  # a filesystem without hard links (some FUSE, FAT)
            st = os.stat(path)
    except FileExistsError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise FileExistsError(errno.EEXIST, "already exists; nothing was created", path) from None
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _failure(path, exc, "nothing was created") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    fsync_dir(folder)
    _tell("after", path, data)
    return Stamp.of(data, st)


def _create_in_place(path: str, data: bytes, mode: int) -> None:
    """``O_CREAT | O_EXCL``, written and synced (the fallback of :func:`create_new`)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY | _NOFOLLOW, mode)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_file(path: str | os.PathLike[str], *, expect: Stamp | None = None) -> None:
    """Delete ``path`` (durably), refusing with :class:`Conflict` if it changed since ``expect``."""
    _tell("before", path)
    remote = _remote(path)
    if remote is not None:
        remote.remove_file(os.fspath(path), expect)
        _tell("after", path)
        return
    check_unchanged(path, expect)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(os.path.dirname(os.fspath(path)) or ".")
    _tell("after", path)


def mark_used(path: str | os.PathLike[str]) -> None:
    """Set ``path``'s modification time to now: when a cache entry was last used (a missing file stays missing)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return


def make_dirs(path: str | os.PathLike[str]) -> None:
    """``mkdir -p`` that makes each new folder's entry durable."""
    path = os.path.abspath(os.fspath(path))
    remote = _remote(path)
    if remote is not None:
        remote.make_dirs(path)
        return
    missing = []
    probe = path
    while not os.path.isdir(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
        fsync_dir(os.path.dirname(folder))


def rename_durably(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename a file or folder, refusing to replace anything at ``dst``; both parents are synced."""
    src, dst = os.fspath(src), os.fspath(dst)
    remote = _remote(src) or _remote(dst)
    if remote is not None:
        remote.rename(src, dst)
        return
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "already exists", dst)
    os.rename(src, dst)
    fsync_dir(os.path.dirname(dst) or ".")
    if os.path.dirname(src) != os.path.dirname(dst):
        fsync_dir(os.path.dirname(src) or ".")


# ---------------------------------------------------------------------- reserving space

FALLOC_FL_KEEP_SIZE = 0x01


Fallocate = Callable[[int, int, int, int], None]
"""``fallocate(fd, mode, offset, length)``, raising OSError."""


def _load_fallocate() -> Fallocate | None:
    """libc's ``fallocate`` (Linux), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        func = getattr(libc, "fallocate64", None) or libc.fallocate
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    func.restype = ctypes.c_int

    def fallocate(fd: int, mode: int, offset: int, length: int) -> None:
        if func(fd, mode, offset, length) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return fallocate


_fallocate: Fallocate | None = _load_fallocate()
"""``fallocate(fd, mode, offset, length)`` raising OSError, or None (a test may replace it)."""


def _reserve(fd: int, path: str, offset: int, length: int) -> None:
    """Make sure ``length`` bytes can be written at ``offset`` without the disk filling up.

    ``FALLOC_FL_KEEP_SIZE`` allocates the blocks without changing the file's
    size, so readers see nothing. A filesystem without the call is written to
    unreserved (a short write is then undone, see :func:`_append_whole`).
    Raises WriteFailed, with nothing written, when the space is not there.
    Exactly ``length`` is reserved, so no allocated space is left beyond the
    end of the file; should a lock-free writer append in between and use it,
    the write may still come up short, and is then taken back.
    """
    if _fallocate is None:
        return
    try:
        _fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL, errno.ENODEV, errno.EPERM, errno.EBADF):
            return  # not supported here: write without a reservation
        raise _failure(path, exc) from None


def _append_whole(fd: int, path: str, data: bytes, durable: bool = True) -> int:
    """Append ``data`` to the ``O_APPEND`` file ``fd`` in one write, or leave the file as it was.

    Returns the size the file had just before (where ``data`` starts unless
    a writer that takes no lock appended in between). Raises WriteFailed,
    naming the file, when the write failed; the message says what was left.
    """
    size = os.fstat(fd).st_size
    _reserve(fd, path, size, len(data))
    try:
        written = _os_write(fd, data)
    except OSError as exc:
        raise _failure(path, exc) from None  # write() wrote nothing when it raised
    if written < len(data):
        raise _short_write(fd, path, data, written)
    try:
        if durable:
            os.fsync(fd)
    except OSError as exc:
        raise _failure(path, exc, "the lines were written but may not survive a power cut") from None
    return size


def _short_write(fd: int, path: str, data: bytes, written: int) -> WriteFailed:
    """Take back the ``written`` bytes of ``data`` that a short write left at the end of the file.

    They are removed only while they are still the last bytes of the file.
    If another writer appended after them, removing them would cut that
    writer's line, so they stay (the file is then ended with ``\\n`` if it
    does not end so). Returns the error to raise.
    """
    try:
        free = os.fstatvfs(fd)
        full = free.f_bavail * free.f_frsize < len(data) - written
    except OSError:
        full = False
    reason = "No space left on device" if full else f"the write was cut short ({written} of {len(data)} bytes)"
    partial = data[:written]
    try:
        end = os.fstat(fd).st_size
        if end >= written and os.pread(fd, written, end - written) == partial:
            os.ftruncate(fd, end - written)
            os.fsync(fd)
            return WriteFailed(f"{path}: {reason}; nothing was saved (the file is as it was)")
        if not partial.endswith(b"\n"):
            _os_write(fd, b"\n")
            os.fsync(fd)
    except OSError as exc:
        return WriteFailed(
            f"{path}: {reason}; {written} bytes of a partial line are left at its end and "
            f"could not be removed ({exc.strerror or exc}); keepgui doctor shows them"
        )
    return WriteFailed(
        f"{path}: {reason}; another program appended after the {written} bytes written, so "
        "they could not be taken back: none of the new records was saved, and the line they "
        "start is one the worker skips (keepgui doctor shows it)"
    )


def create_folder(path: str | os.PathLike[str], files: dict[str, bytes], folders: Iterable[str] = ()) -> None:
    """Create folder ``path`` holding ``folders`` and ``files`` (relative names), whole or not at all.

    Everything is made in a hidden temporary folder beside it (the worker
    ignores names starting with ``.``), synced, then renamed into place; on
    any error the temporary folder is removed and WriteFailed names ``path``.
    FileExistsError when ``path`` already exists (nothing is replaced).
    """
    import shutil

    path = os.path.abspath(os.fspath(path))
    remote = _remote(path)
    if remote is not None:
        remote.create_folder(path, files, folders)
        return
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "already exists", path)
    tmp = temp_name_for(path)
    try:
        os.mkdir(tmp, 0o755)
    except OSError as exc:
        raise _failure(path, exc, "nothing was created") from None
    try:
        for name in folders:
            os.makedirs(os.path.join(tmp, name), exist_ok=True)
        for name, data in files.items():
            fd = os.open(os.path.join(tmp, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY | _NOFOLLOW, 0o644)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        for name in folders:
            fsync_dir(os.path.join(tmp, name))
        fsync_dir(tmp)
        rename_durably(tmp, path)
    except FileExistsError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _failure(path, exc, "nothing was created") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# The append half lives in fslog (split by size); every name stays reachable as fsio.<name>.
from keepgui.core.fslog import (  # noqa: E402 - after every name fslog uses
    Busy as Busy,
    LockedLog as LockedLog,
    append_lines as append_lines,
    locked_log as locked_log,
    sidecar_lock as sidecar_lock,
)
