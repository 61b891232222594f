"""keepgui's writes to a mirrored folder, carried out on the remote machine with the same guarantees (no Qt).

:mod:`keepgui.core.fsio` hands every write to a path in a mirror to :class:`Pusher` (see
:func:`keepgui.core.fsio.mount`). A backend's operation is computed on the mirror exactly as
on a local folder; the write it ends in is then made on the remote by one ``sh`` script
(one round trip) that

* checks the target is what was mirrored (its size, time and mode as listed): anything else
  is a :class:`~keepgui.core.errors.Conflict`, the same three-way path as locally, with the
  mirror brought up to the remote file first;
* writes whole files to a temporary name in the same remote folder, checks that every byte
  arrived (a connection cut in the middle leaves a short temporary file, which is removed,
  and the target as it was), keeps the file's mode, and renames it into place (``ln`` for a
  create that must never replace);
* appends to a log as one write of a complete temporary file, under ``flock`` where the
  machine has it;
* refuses a symbolic link, and any folder that resolves outside the mirrored one.

Only when the remote write is done is the mirror given the same bytes and the remote file's
new time, so the next listing finds nothing to fetch and the window's watcher sees its own echo.
While the machine cannot be reached every write is refused: the source is read-only.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, cast

from keepgui.core import fsio
from keepgui.core.errors import Conflict, KeepguiError, ReadOnly, WriteFailed
from keepgui.core.fsio import Stamp
from keepgui.core.remote.mirror import Entry, Mirror, append_local, local_dirs, place_file, remove_local
from keepgui.core.remote.ssh import CONNECT_TIMEOUT, Offline

_F = TypeVar("_F", bound=Callable[..., Any])

_STAT = "find \"$1\" -maxdepth 0 -printf '%s %T@ %m' 2>/dev/null || echo missing"

_CHECKS = r"""
f=$1; r=$2
d=${f%/*}; n=${f##*/}
[ -L "$f" ] && { echo "a symbolic link"; exit 20; }
cd -P -- "$r" 2>/dev/null || { echo "the source folder is gone"; exit 21; }
rr=$PWD
cd -P -- "$d" 2>/dev/null || { echo "its folder is gone"; exit 21; }
dd=$PWD
cd -- "$rr" || exit 21
case "$dd/" in "$rr"/*) ;; *) echo "its folder is outside the source folder"; exit 22;; esac
now() { if [ -e "$f" ] || [ -L "$f" ]; then find "$f" -maxdepth 0 -printf '%s %T@ %m'; else echo missing; fi; }
receive() {
  t="$d/.$n.keepgui-$$.tmp"
  trap 'rm -f "$t"' EXIT HUP INT TERM PIPE
  (umask 077; cat > "$t") || exit 24
  [ "$(wc -c < "$t")" -eq "$1" ] || { echo "the connection was cut: nothing was written"; exit 25; }
}
"""

_REPLACE = (
    _CHECKS
    + r"""
cur=$(now)
[ "$3" = any ] || [ "$cur" = "$3" ] || { echo "$cur"; exit 23; }
receive "$4"
if [ "$cur" = missing ]; then
  chmod "$(printf '%o' $(( 0$5 & ~0$(umask) )))" "$t"
else
  chmod --reference="$f" -- "$t" 2>/dev/null || chmod "$(find "$f" -maxdepth 0 -printf '%m')" "$t"
fi
[ "$3" = any ] || [ "$(now)" = "$3" ] || { echo "$(now)"; exit 23; }
if [ "$6" = create ]; then
  ln -- "$t" "$f" 2>/dev/null || { echo "exists"; exit 27; }
  rm -f "$t"
else
  mv -f -- "$t" "$f" || exit 26
fi
trap - EXIT
now
"""
)

_APPEND = (
    _CHECKS
    + r"""
receive "$3"
if command -v flock >/dev/null 2>&1; then
  flock -- "$f" sh -c 'if [ -e "$1" ]; then find "$1" -maxdepth 0 -printf "%s\n"; else echo 0; fi; cat -- "$2" >> "$1"' keepgui "$f" "$t" || exit 26
else
  if [ -e "$f" ]; then find "$f" -maxdepth 0 -printf "%s\n"; else echo 0; fi
  cat -- "$t" >> "$f" || exit 26
fi
now
"""
)

_REMOVE = (
    _CHECKS
    + r"""
cur=$(now)
[ "$3" = any ] || [ "$cur" = "$3" ] || { echo "$cur"; exit 23; }
rm -f -- "$f" || exit 26
echo missing
"""
)

_FOLDER = (
    _CHECKS
    + r"""
[ -e "$f" ] && { echo "exists"; exit 27; }
receive "$3"
shift 3
w="$d/.$n.keepgui-$$.dir.tmp"
trap 'rm -f "$t"; rm -rf "$w"' EXIT HUP INT TERM PIPE
mkdir -- "$w" || exit 26
at=1
while [ $# -gt 1 ]; do
  case "$1" in
    dir) mkdir -p -- "$w/$2" || exit 26; shift 2;;
    *) case "$2" in */*) mkdir -p -- "$w/${2%/*}";; esac
       tail -c +"$at" "$t" | head -c "$1" > "$w/$2" || exit 26
       at=$((at + $1)); shift 2;;
  esac
done
[ -e "$f" ] && { echo "exists"; exit 27; }
mv -- "$w" "$f" || exit 26
echo done
"""
)

_RENAME = (
    _CHECKS
    + r"""
g=$3
gd=$(cd -- "${g%/*}" 2>/dev/null && pwd -P) || { echo "its folder is gone"; exit 21; }
case "$gd/" in "$rr"/*) ;; *) echo "its new folder is outside the source folder"; exit 22;; esac
{ [ -e "$g" ] || [ -L "$g" ]; } && { echo "exists"; exit 27; }
mv -- "$f" "$g" || exit 26
echo done
"""
)

_MKDIRS = r"""
rr=$(cd -- "$2" 2>/dev/null && pwd -P) || { echo "the source folder is gone"; exit 21; }
mkdir -p -- "$1" || exit 26
dd=$(cd -- "$1" && pwd -P) || exit 26
case "$dd/" in "$rr"/*) ;; *) echo "outside the source folder"; exit 22;; esac
echo done
"""


def _locked(method: _F) -> _F:
    """Run a write with the mirror's lock held, so no sync runs between the remote write and the mirror's."""

    @functools.wraps(method)
    def run(self: Pusher, *args: Any, **kwargs: Any) -> Any:
        with self.mirror.lock:
            return method(self, *args, **kwargs)

    return cast(_F, run)


class Pusher:
    """The writes of one mirror, made on its machine (installed by :func:`keepgui.core.fsio.mount`)."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror

    # ------------------------------------------------------------------ helpers

    def _remote(self, path: str) -> str:
        rel = self.mirror.relative(path)
        return os.path.normpath(os.path.join(self.mirror.remote, rel))

    def _rel(self, path: str) -> str:
        return os.path.normpath(self.mirror.relative(path))

    def _expected(self, path: str) -> str:
        """What the remote file was when it was mirrored (``missing`` when the mirror has none)."""
        if not os.path.lexists(path):
            return "missing"
        entry = self.mirror.manifest.get(self._rel(path))
        return entry.stat if entry is not None and entry.type == "f" else "unknown"

    def _run(self, script: str, path: str, args: Iterable[str], data: bytes = b"", what: str = "saved") -> list[str]:
        if not self.mirror.online:
            raise ReadOnly(
                f"{self.mirror.target.machine} is offline — read-only until keepgui reconnects ({self.mirror.problem})"
            )
        remote = self._remote(path)
        try:
            result = self.mirror.connection.run(script, data, args=(remote, self.mirror.remote, *args))
        except Offline as exc:
            self.mirror.online, self.mirror.problem = False, str(exc)
            self.mirror.forget(self._rel(path))
            raise WriteFailed(
                f"{self.mirror.target.machine}:{remote}: the connection was lost during the write; the file there is "
                f"as it was or whole (never half-written); the source is read-only until keepgui reconnects"
            ) from None
        lines = result.out.decode("utf-8", "surrogateescape").splitlines()
        said = lines[-1] if lines else result.err.strip()
        if result.status in (20, 22):
            raise ReadOnly(f"{self.mirror.target.machine}:{remote} is {said}; keepgui does not write through it")
        if result.status == 27:
            raise FileExistsError(17, "already exists; nothing was written", path)
        if result.status == 23:
            raise _Stale(said)
        if result.status != 0:
            raise WriteFailed(
                f"{self.mirror.target.machine}:{remote}: {said or 'the write failed'}; nothing was {what}"
            )
        return lines

    def _conflict(self, path: str, expect: Stamp | None) -> Conflict:
        """The remote file changed since it was mirrored: bring it into the mirror, and say so as locally."""
        self.mirror.forget(self._rel(path))
        with contextlib.suppress(KeepguiError):
            self.mirror.sync()
        return Conflict(path, expect, fsio.current_stamp(path) if os.path.lexists(path) else Stamp.missing())

    def _land(self, path: str, data: bytes, stat: str) -> Stamp:
        """The remote now holds ``data`` with ``stat``: give the mirror the same."""
        entry = Entry("f", stat)
        place_file(path, data, entry.mtime_ns, entry.mode)
        self.mirror.note_written(self._rel(path), stat)
        self.mirror.save_state()
        st = os.stat(path)
        return Stamp.of(data, st)

    # ------------------------------------------------------------------ the writes fsio hands over

    @_locked
    def atomic_write(self, path: str, data: bytes, expect: Stamp | None, mode: int, create: bool = False) -> Stamp:
        """:func:`keepgui.core.fsio.atomic_write` (and ``create_new`` with ``create``) of a mirrored file."""
        if os.path.islink(path):
            raise ReadOnly(f"{path} is a symbolic link; keepgui does not replace links")
        if not create:
            fsio.check_unchanged(path, expect)
        wanted = "missing" if create else self._expected(path)
        try:
            lines = self._run(
                _REPLACE, path, (wanted, str(len(data)), f"{mode:o}", "create" if create else "replace"), data
            )
        except _Stale:
            if create:
                raise FileExistsError(17, "already exists; nothing was created", path) from None
            raise self._conflict(path, expect) from None
        return self._land(path, data, lines[-1])

    @_locked
    def remove_file(self, path: str, expect: Stamp | None) -> None:
        """:func:`keepgui.core.fsio.remove_file` of a mirrored file."""
        fsio.check_unchanged(path, expect)
        try:
            self._run(_REMOVE, path, (self._expected(path) if expect is not None else "any",), what="removed")
        except _Stale:
            raise self._conflict(path, expect) from None
        remove_local(path)
        self.mirror.note_written(self._rel(path), "")
        self.mirror.save_state()

    @_locked
    def refresh(self, path: str) -> None:
        """Before a log is read under its lock to be appended to: the remote log as it is now, in the mirror."""
        if not self.mirror.online:
            return
        rel = self._rel(path)
        entry = self.mirror.manifest.get(rel)
        result = self.mirror.connection.run(_STAT, args=(self._remote(path),))
        now = result.out.decode("utf-8", "surrogateescape").strip()
        if entry is None or entry.stat != now:
            if now == "missing":
                return
            self.mirror.fetch([rel])

    @_locked
    def append(self, path: str, data: bytes) -> int:
        """:class:`keepgui.core.fsio.LockedLog`'s one write, made on the remote log; the offset it starts at."""
        rel = self._rel(path)
        before = self.mirror.manifest.get(rel)
        lines = self._run(_APPEND, path, (str(len(data)),), data)
        offset, stat = int(lines[-2]), lines[-1]
        local_size = os.path.getsize(path) if os.path.exists(path) else 0
        if before is not None and offset == local_size:
            append_local(path, data, Entry("f", stat).mtime_ns)
            self.mirror.note_written(rel, stat)
            self.mirror.save_state()
        else:  # someone else appended in between: the mirror takes the remote log as it is
            self.mirror.forget(rel)
            self.mirror.fetch([rel])
        return offset

    @_locked
    def create_folder(self, path: str, files: dict[str, bytes], folders: Iterable[str]) -> None:
        """:func:`keepgui.core.fsio.create_folder` made on the remote (whole or not at all)."""
        args: list[str] = []
        for name in folders:
            args += ["dir", name]
        for name, data in files.items():
            args += [str(len(data)), name]
        blob = b"".join(files.values())
        self._run(_FOLDER, path, (str(len(blob)), *args), blob, what="created")
        self.mirror.sync()

    @_locked
    def rename(self, src: str, dst: str) -> None:
        """:func:`keepgui.core.fsio.rename_durably` made on the remote (never replacing)."""
        self._run(_RENAME, src, (self._remote(dst),), what="moved")
        self.mirror.sync()

    @contextlib.contextmanager
    def sidecar_lock(self, path: str, timeout: float, what: str) -> Iterator[None]:
        """:func:`keepgui.core.fsio.sidecar_lock` taken on the remote machine (``flock`` on the lock file
        there, held by a remote shell until the block ends); a machine without ``flock`` has no lock to take."""
        if not self.mirror.online:
            raise ReadOnly(f"{self.mirror.target.machine} is offline — read-only until keepgui reconnects")
        held = self.mirror.connection.start(_LOCK, args=(self._remote(path), f"{timeout:g}"))
        try:
            said = held.first_line(timeout + CONNECT_TIMEOUT)
            if said == "busy":
                raise fsio.Busy(
                    f"{self.mirror.target.machine}:{self._remote(path)} is locked by {what or 'another program'} "
                    f"(held for more than {timeout:g} s); nothing was written — try again in a moment"
                )
            if said not in ("locked", "no flock"):
                raise WriteFailed(f"{self.mirror.target.machine}: the lock {self._remote(path)} could not be taken")
            yield
        finally:
            held.release()

    @_locked
    def make_dirs(self, path: str) -> None:
        """:func:`keepgui.core.fsio.make_dirs` made on the remote."""
        self._run(_MKDIRS, path, ())
        local_dirs(path)


_LOCK = r"""
command -v flock >/dev/null 2>&1 || { echo "no flock"; exec cat >/dev/null; }
flock -w "$2" -- "$1" sh -c 'echo locked; exec cat >/dev/null' || echo busy
"""


class _Stale(Exception):
    """The remote file is not what was mirrored (its state now is the message)."""
