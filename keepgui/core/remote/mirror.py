"""A remote folder as a local mirror in keepgui's cache, kept current in few round trips (no Qt).

The backends read a remote source exactly as they read a local one, because what they read is
a local folder: the *mirror*, ``<cache>/remote/<machine>/root/<the remote absolute path>``,
holding the remote files byte for byte with their modification times and modes (symbolic links
as links, an absolute target mapped into the mirror). It is keepgui's cache, never the truth:
the manifest records each remote file's size, time and mode as listed, and a sync

1. lists the remote folder in one round trip (one ``find -printf``: metadata only), and
2. fetches, in one more round trip, only the files whose size, time or mode changed
   (each copied aside on the remote first, so a file being written is framed exactly, and
   one that changed while it was read is fetched again at the next sync),

then replaces them in the mirror atomically (a temporary name, then a rename), so a watcher of
the mirror sees what a watcher of the remote folder would. An unchanged file is never
downloaded again (the manifest survives a restart). Writes go the other way:
:mod:`keepgui.core.remote.push`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from keepgui.core.errors import NotFound
from keepgui.core.fsio import is_temp_name
from keepgui.core.paths import remote_cache_dir
from keepgui.core.remote.ssh import Connection, RemoteError
from keepgui.core.remote.target import Target, config_file

MAX_FILE_BYTES = 256 << 20
"""A remote file larger than this is not mirrored (a transcript, a database): the mirror lacks it."""

SKIPPED_FOLDERS = ("node_modules", "__pycache__")
"""Folders never fetched: nothing keepgui reads is in them (their listing is kept)."""

_LIST = r"""
cd || exit 10
cd -- "$1" 2>/dev/null || { echo "no such folder"; exit 11; }
[ -d . ] || exit 11
pwd -P
t="${TMPDIR:-/tmp}/.keepgui-list-$$"
trap 'rm -f "$t"' EXIT HUP INT TERM
find . -mindepth 1 -printf '%y %s %T@ %m %P\0%l\0' > "$t"
c=$(cksum < "$t")
printf '%s\n' "$c"
[ "$c" = "$2" ] || cat "$t"
"""
"""The listing of a folder; only its checksum when it is the one the caller has (``$2``)."""

_FETCH = r"""
cd -- "$1" || exit 11
t="${TMPDIR:-/tmp}/.keepgui-fetch-$$"
mkdir -m 700 "$t" || exit 12
trap 'rm -rf "$t"' EXIT HUP INT TERM
cat > "$t/list"
listing() { tr '\n' '\0' < "$t/list" | xargs -0 -r sh -c 'for f; do [ -f "./$f" ] && [ ! -L "./$f" ] && printf "./%s\0" "$f"; done' keepgui |
  xargs -0 -r sh -c 'exec find "$@" -maxdepth 0 -printf "%p\0%s %T@ %m\0" 2>/dev/null' keepgui; }
listing > "$t/before"
tr '\0' '\n' < "$t/before" | awk 'NR % 2 == 1' | tr '\n' '\0' | xargs -0 -r cat -- > "$t/data" 2>/dev/null
listing > "$t/after"
if cmp -s "$t/before" "$t/after"; then
  printf 'batch\0%s\0' "$(wc -c < "$t/before" | tr -d ' ')"
  cat "$t/before" "$t/data"
  exit 0
fi
while IFS= read -r f; do
  if [ -f "./$f" ] && [ ! -L "./$f" ]; then
    a=$(find "./$f" -maxdepth 0 -printf '%s %T@ %m')
    if cat -- "./$f" > "$t/d" 2>/dev/null; then
      b=$(find "./$f" -maxdepth 0 -printf '%s %T@ %m')
      n=$(wc -c < "$t/d")
      [ "$a" = "$b" ] || a="changing"
      printf 'file\0%s\0%s\0%s\0' "$f" "$a" $n
      cat "$t/d"
      continue
    fi
  fi
  printf 'gone\0%s\0' "$f"
done < "$t/list"
"""
"""Fetch files (relative paths on stdin, one a line): when none changed while they were read, all of
them in one ``cat`` framed by one listing before and after (a handful of processes for any number of
files); else one at a time, each copied aside first, and marked ``changing`` when it changed meanwhile."""


@dataclass(frozen=True)
class Entry:
    """One remote path as listed: its type (``f``, ``d``, ``l``…), ``stat`` (``size mtime mode``), link target."""

    type: str
    stat: str
    link: str = ""

    @property
    def size(self) -> int:
        return int(self.stat.split()[0]) if self.stat and self.stat[0].isdigit() else -1

    @property
    def mtime_ns(self) -> int:
        return seconds_to_ns(self.stat.split()[1]) if self.stat.count(" ") == 2 else 0

    @property
    def mode(self) -> int:
        return int(self.stat.split()[2], 8) if self.stat.count(" ") == 2 else 0o644


def seconds_to_ns(text: str) -> int:
    """``find``'s ``%T@`` (``1733160000.1234567890``) in nanoseconds."""
    whole, _, frac = text.partition(".")
    return int(whole) * 1_000_000_000 + int((frac + "000000000")[:9])


@dataclass
class Synced:
    """What one sync changed in the mirror (local paths) and its round trips."""

    changed: set[str] = field(default_factory=set)
    round_trips: int = 0


def machine_folder(target: Target) -> str:
    """The cache folder of one machine (its name readable, with a hash of what identifies it)."""
    digest = hashlib.sha256(f"{target.machine}\0{config_file()}".encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9_.@-]", "_", target.machine.replace(":", "_"))
    return os.path.join(remote_cache_dir(), f"{name}-{digest}")


def remote_cache() -> str:
    """The folder under which every mirror lives."""
    return remote_cache_dir()


class Mirror:
    """One remote folder and its local copy (see the module docstring).

    ``local`` is the folder the backends open; ``remote`` the absolute remote path (known after
    the first listing). ``online`` is False while the machine cannot be reached (the source is
    then read-only); ``problem`` says why.
    """

    def __init__(self, target: Target, connection: Connection | None = None) -> None:
        self.target = target
        self.connection = connection or Connection(target)
        self.base = machine_folder(target)
        self.remote = target.path if target.path.startswith("/") else ""
        self.manifest: dict[str, Entry] = {}
        self.online = True
        self.problem = ""
        self.lock = threading.RLock()
        self._listed: tuple[str, dict[str, Entry]] = ("", {})  # the last listing and its checksum there
        self._load_state()

    # ------------------------------------------------------------------ where

    @property
    def local(self) -> str:
        """The mirror of the remote folder (valid once :attr:`remote` is known)."""
        return self.local_of(self.remote)

    def local_of(self, remote_path: str) -> str:
        """Where a remote absolute path is in the mirror."""
        return os.path.join(self.base, "root", remote_path.lstrip("/"))

    def relative(self, local_path: str) -> str:
        """A mirror path relative to the mirrored folder (``..`` first when outside it)."""
        return os.path.relpath(os.path.abspath(local_path), self.local)

    def _state_file(self) -> str:
        return os.path.join(self.base, "state", hashlib.sha256(self.target.path.encode()).hexdigest()[:16] + ".json")

    def _load_state(self) -> None:
        try:
            with open(self._state_file(), encoding="utf-8") as handle:
                state = json.load(handle)
        except (OSError, ValueError):
            return
        if not isinstance(state, dict) or state.get("target") != str(self.target):
            return
        self.remote = str(state.get("remote", self.remote))
        entries = state.get("manifest", {})
        self.manifest = {k: Entry(*v) for k, v in entries.items() if isinstance(v, list) and len(v) == 3}
        if not os.path.isdir(self.local):
            self.manifest = {}

    def save_state(self) -> None:
        """Keep the manifest for the next start (so nothing unchanged is fetched again)."""
        state = {
            "target": str(self.target),
            "machine": self.target.machine,
            "remote": self.remote,
            "manifest": {k: [e.type, e.stat, e.link] for k, e in self.manifest.items()},
        }
        _write_cache(self._state_file(), json.dumps(state, separators=(",", ":")).encode())
        _write_cache(
            os.path.join(self.base, "machine.json"),
            json.dumps({"target": str(self.target.with_path("")), "machine": self.target.machine}).encode(),
        )

    # ------------------------------------------------------------------ sync

    def list_remote(self) -> dict[str, Entry]:
        """The remote folder's listing (one round trip); sets :attr:`remote`."""
        result = self.connection.run(_LIST, args=(self.target.path or ".", self._listed[0]), timeout=300)
        if result.status == 11:
            raise NotFound(f"{self.target}: no such folder on {self.target.machine}")
        if result.status != 0 and "printf" in result.err:
            raise RemoteError(
                f"{self.target.machine}: its `find` has no -printf; keepgui needs GNU findutils there "
                f"(Debian and most Linux have it; `apk add findutils` on Alpine)"
            )
        if result.status != 0:
            raise RemoteError(f"{self.target}: listing failed: {result.err.strip() or result.status}")
        head, _, rest = result.out.partition(b"\n")
        checksum, _, body = rest.partition(b"\n")
        self.remote = head.decode("utf-8", "surrogateescape")
        if checksum.decode() == self._listed[0] and not body:
            return self._listed[1]  # nothing changed there: the listing is not sent again
        listing: dict[str, Entry] = {}
        parts = body.split(b"\0")
        for i in range(0, len(parts) - 1, 2):
            meta, link = parts[i].decode("utf-8", "surrogateescape"), parts[i + 1].decode("utf-8", "surrogateescape")
            kind, size, mtime, mode, rel = meta.split(" ", 4)
            listing[rel] = Entry(kind, f"{size} {mtime} {mode}" if kind == "f" else "", link)
        self._listed = (checksum.decode(), listing)
        return listing

    def wanted(self, rel: str, entry: Entry) -> bool:
        """Whether a listed file is mirrored (not a temporary file, not too big, not in a skipped folder)."""
        if "\n" in rel or is_temp_name(os.path.basename(rel)) or entry.size > MAX_FILE_BYTES:
            return False
        return not any(fnmatch.fnmatch("/" + rel, f"*/{folder}/*") for folder in SKIPPED_FOLDERS)

    def sync(self) -> Synced:
        """Bring the mirror up to the remote folder (two round trips at most; one when nothing changed)."""
        with self.lock:
            before = self.connection.round_trips
            listing = self.list_remote()
            root = self.local
            changed: set[str] = set()
            os.makedirs(root, exist_ok=True)
            for rel in sorted(r for r, e in listing.items() if e.type == "d"):
                path = os.path.join(root, rel)
                if not os.path.isdir(path) or os.path.islink(path):
                    _remove(path)
                    os.makedirs(path, exist_ok=True)
                    changed.add(path)
            for rel, entry in listing.items():
                if entry.type == "l" and self.manifest.get(rel) != entry:
                    changed.add(self._place_link(rel, entry))
            wanted = [
                r for r, e in listing.items() if e.type == "f" and self.manifest.get(r) != e and self.wanted(r, e)
            ]
            changed |= self.fetch(wanted)
            for rel in sorted(set(self.manifest) - set(listing), reverse=True):
                path = os.path.join(root, rel)
                if os.path.lexists(path):
                    _remove(path)
                    changed.add(path)
                self.manifest.pop(rel, None)
            for rel, entry in listing.items():
                if entry.type in "dl" or (entry.type == "f" and not self.wanted(rel, entry)):
                    self.manifest[rel] = entry
            self.online, self.problem = True, ""
            if changed or wanted:
                self.save_state()
            return Synced(changed, self.connection.round_trips - before)

    def fetch(self, rels: Iterable[str]) -> set[str]:
        """Fetch these files (relative paths) into the mirror in one round trip; their local paths."""
        rels = list(rels)
        if not rels:
            return set()
        stdin = "".join(r + "\n" for r in rels).encode("utf-8", "surrogateescape")
        result = self.connection.run(_FETCH, stdin, args=(self.remote,), timeout=600)
        if result.status != 0:
            raise RemoteError(f"{self.target}: fetching files failed: {result.err.strip() or result.status}")
        return self._unpack(result.out)

    def _unpack(self, out: bytes) -> set[str]:
        changed: set[str] = set()
        pos = 0

        def token() -> str:
            nonlocal pos
            end = out.index(b"\0", pos)
            text = out[pos:end].decode("utf-8", "surrogateescape")
            pos = end + 1
            return text

        if out.startswith(b"batch\0"):
            pos = len(b"batch\0")
            size = int(token())
            fields = out[pos : pos + size].split(b"\0")[:-1]
            pos += size
            for i in range(0, len(fields) - 1, 2):
                rel = fields[i].decode("utf-8", "surrogateescape").removeprefix("./")
                stat = fields[i + 1].decode()
                entry = Entry("f", stat)
                data = out[pos : pos + entry.size]
                pos += entry.size
                place_file(os.path.join(self.local, rel), data, entry.mtime_ns, entry.mode)
                self.manifest[rel] = entry
                changed.add(os.path.join(self.local, rel))
            return changed
        while pos < len(out):
            what, rel = token(), token()
            path = os.path.join(self.local, rel)
            if what == "gone":
                self.manifest.pop(rel, None)
                continue
            stat, size = token(), int(token())
            data = out[pos : pos + size]
            pos += size
            entry = Entry("f", stat)
            mode = entry.mode if stat != "changing" else None
            place_file(path, data, entry.mtime_ns if stat != "changing" else None, mode)
            self.manifest[rel] = entry
            changed.add(path)
        return changed

    def _place_link(self, rel: str, entry: Entry) -> str:
        path = os.path.join(self.local, rel)
        target = self.local_of(entry.link) if entry.link.startswith("/") else entry.link
        _remove(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)
        self.manifest[rel] = entry
        return path

    def note_written(self, rel: str, stat: str) -> None:
        """A write of keepgui left the remote file with this ``size mtime mode`` (its mirror holds the same bytes)."""
        with self.lock:
            if stat:
                self.manifest[rel] = Entry("f", stat)
            else:
                self.manifest.pop(rel, None)

    def forget(self, rel: str) -> None:
        """The remote state of a file is unknown (a write was cut off): fetch it again at the next sync."""
        with self.lock:
            self.manifest[rel] = Entry("f", "unknown")


# ---------------------------------------------------------------------- keepgui's cache: the mirror's own files


def _write_cache(path: str, data: bytes) -> None:
    """Replace a file of keepgui's cache (state), atomically."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.keepgui-{os.getpid()}-{os.urandom(4).hex()}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def place_file(path: str, data: bytes, mtime_ns: int | None, mode: int | None) -> None:
    """Put a fetched file into the mirror whole (a hidden temporary name, its time and mode, a rename)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.keepgui-{os.getpid()}-{os.urandom(4).hex()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, (mode if mode is not None else 0o644) & 0o7777 | 0o600)
    if mtime_ns is not None:
        os.utime(tmp, ns=(mtime_ns, mtime_ns))
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    os.replace(tmp, path)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def append_local(path: str, data: bytes, mtime_ns: int) -> None:
    """Give a mirrored log the bytes keepgui just appended to the remote one, and the remote log's time."""
    with open(path, "ab") as handle:
        handle.write(data)
    os.utime(path, ns=(mtime_ns, mtime_ns))


def remove_local(path: str) -> None:
    """Remove a mirrored file keepgui just removed on the remote machine."""
    _remove(path)


def local_dirs(path: str, mode: int = 0o777) -> None:
    """Make a mirrored folder keepgui just made on the remote machine (or the private folder of ssh's sockets)."""
    os.makedirs(path, mode=mode, exist_ok=True)
