"""Logs appended under a lock, and the sidecar locks agents take: the append half of :mod:`keepgui.core.fsio`.

Split from fsio by size, not by rule: fsio re-exports every name here (``fsio.locked_log``,
``fsio.LockedLog``, ``fsio.sidecar_lock``, ``fsio.Busy``, ``fsio.append_lines``), and the two are the
only modules that write. The appends themselves go through fsio's ``_append_whole`` (one write that
cannot glue onto another writer's line, space reserved first, a short write undone).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from types import TracebackType

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError, ReadOnly


class LockedLog:
    """An append-only log held under an exclusive lock, for read-then-append.

    Use as a context manager. While it is held no other keepgui process can
    append, so a caller can bring its view of the log up to date, decide what to
    write, and write it, with nothing slipping in between. Writers that take
    no lock (the worker) are why every append of a shared log begins with its
    own ``\\n`` (see the module docstring). ``sole_writer=True`` is for
    keepgui's own logs, which only lock-taking writers append to: a ``\\n``
    then goes first only to end a line torn by a crash.
    """

    def __init__(self, path: str | os.PathLike[str], sole_writer: bool = False, durable: bool = True) -> None:
        self.path = os.fspath(path)
        self.sole_writer = sole_writer
        self.durable = durable
        self._fd: int | None = None
        self._remote = fsio._remote(self.path)

    def __enter__(self) -> LockedLog:
        if os.path.islink(self.path):
            raise ReadOnly(f"{self.path} is a symbolic link; keepgui does not append through links")
        if self._remote is not None:
            self._remote.refresh(self.path)  # the log as the other machine has it now, read under the lock
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | fsio._BINARY | fsio._NOFOLLOW, 0o644)
        except OSError as exc:
            raise fsio._failure(self.path, exc) from None
        try:
            fsio._lock(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fsio._unlock(fd)
            finally:
                os.close(fd)

    def settle(self, timeout: float = fsio.TAIL_SETTLE_SECONDS) -> bool:
        """Wait briefly until the log ends with ``\\n``; True when it does (or is empty).

        The worker writes a record's JSON and its ``\\n`` in two writes, and
        Linux makes even one write visible page by page, so for a moment its
        last line lacks the newline. Waiting up to ``timeout`` lets a caller
        read the state from complete lines; a line torn by a crash never ends
        and is then read as it is. (Appending needs no wait: it begins with
        its own ``\\n`` whatever the tail is.)
        """
        if self._fd is None:
            raise RuntimeError("LockedLog.settle outside its with-block")
        deadline = time.monotonic() + timeout
        delay = 0.0001
        while True:
            size = os.fstat(self._fd).st_size
            if not size or os.pread(self._fd, 1, size - 1) == b"\n":
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)  # nothing signals the end of another process's write; poll
            delay = min(delay * 2, 0.005)

    def write_lines(self, lines: Iterable[bytes]) -> int:
        """Append complete lines in one write (see the module docstring); fsync.

        Each item must be one line ending in ``\\n`` with no other newline.
        Returns the file offset at which the first of ``lines`` starts (as
        far as keepgui can know: a lock-free writer may append just before).
        Raises WriteFailed naming the file, with the log as it was, when the
        write cannot be completed.
        """
        if self._fd is None:
            raise RuntimeError("LockedLog.write_lines outside its with-block")
        lines = list(lines)
        for line in lines:
            if not line.endswith(b"\n") or b"\n" in line[:-1]:
                raise ValueError("each appended record must be exactly one \\n-terminated line")
        if not lines:
            return os.fstat(self._fd).st_size
        prefix = b"\n"
        if self.sole_writer:
            size = os.fstat(self._fd).st_size
            prefix = b"" if not size or os.pread(self._fd, 1, size - 1) == b"\n" else b"\n"
        fsio._tell("before", self.path)
        if self._remote is not None:
            offset: int = self._remote.append(self.path, prefix + b"".join(lines)) + len(prefix)
        else:
            offset = fsio._append_whole(self._fd, self.path, prefix + b"".join(lines), self.durable) + len(prefix)
        fsio._tell("after", self.path)
        return offset


class Busy(KeepguiError):
    """Another program held a lock keepgui needs for longer than keepgui waits (nothing was written)."""


@contextlib.contextmanager
def sidecar_lock(path: str | os.PathLike[str], timeout: float = 2.0, what: str = "") -> Iterator[None]:
    """Hold an exclusive lock on the lock file ``path`` as an agent takes it: ``flock(LOCK_EX)`` on the
    file opened for appending (created if missing, mode 0666 less the umask, never written), or on
    Windows ``msvcrt.locking`` of its first byte — for an agent that locks a sidecar such as
    ``MEMORY.md.lock`` around its read-modify-write. Waits at most ``timeout`` seconds (polling, so
    the caller's thread is never stuck behind a hung agent) and then raises :class:`Busy`. In a mirror
    of another machine's folder the lock is taken there (``flock``), and held until the block ends."""
    path = os.fspath(path)
    remote = fsio._remote(path)
    if remote is not None:
        with remote.sidecar_lock(path, timeout, what):
            yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | fsio._BINARY | fsio._NOFOLLOW, 0o666)
    except OSError as exc:
        raise fsio._failure(path, exc) from None
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fsio._try_lock(fd)
                break
            except (BlockingIOError, PermissionError):
                if time.monotonic() >= deadline:
                    raise Busy(
                        f"{path} is locked by {what or 'another program'} (held for more than {timeout:g} s); "
                        "nothing was written — try again in a moment"
                    ) from None
                time.sleep(delay)  # flock has no timed wait: poll with a growing pause
                delay = min(delay * 2, 0.05)
        try:
            yield
        finally:
            fsio._unlock(fd)
    finally:
        os.close(fd)


def append_lines(
    path: str | os.PathLike[str], lines: Iterable[bytes], sole_writer: bool = False, durable: bool = True
) -> int:
    """Append complete lines to a log under its lock (see :class:`LockedLog`; ``durable=False``: no sync)."""
    with LockedLog(path, sole_writer, durable) as log:
        return log.write_lines(lines)


@contextlib.contextmanager
def locked_log(path: str | os.PathLike[str], sole_writer: bool = False) -> Iterator[LockedLog]:
    """``with locked_log(p) as log: ...; log.write_lines([...])``."""
    with LockedLog(path, sole_writer) as log:
        yield log
