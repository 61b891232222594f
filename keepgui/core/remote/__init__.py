"""Sources on other machines, over SSH: the transport below the backends (no Qt, no backend).

A remote folder (``ssh://[user@]host[:port]/path`` or ``host:path``) is opened as a local
*mirror* in keepgui's cache (:mod:`.mirror`) on which the backends run unchanged, so every view
is computed by the same code from the remote bytes; writes below a mirror are made on the
remote machine first (:mod:`.push`, through :func:`keepgui.core.fsio.mount`); a followed
mirror is polled (:mod:`.live`) so its watcher sees remote changes as local ones. The
connection is the system's OpenSSH client (:mod:`.ssh`), the user's ssh_config honoured.

* :func:`open_mirror` — connect, mirror a remote folder, and return it (its ``local`` folder
  is what a backend opens);
* :func:`mirror_for` — the mirror a local path is in (after a restart too), or None;
* :func:`display` — a mirror path as a person names it (``box:/home/me/.hermes``);
* :func:`discover` — the agents' homes on a machine, in one round trip.
"""

from __future__ import annotations

import glob
import json
import os
import threading
from typing import TYPE_CHECKING

from keepgui.core.errors import KeepguiError, ReadOnly
from keepgui.core.remote.target import Target, looks_remote, parse

if TYPE_CHECKING:
    from keepgui.core.registry import Found
    from keepgui.core.remote.mirror import Mirror
    from keepgui.core.remote.push import Pusher

__all__ = ["Target", "display", "looks_remote", "mirror_for", "open_mirror", "parse", "status"]

_open: dict[str, Mirror] = {}
"""Open mirrors by their local folder."""
_pushers: dict[str, Pusher] = {}
_lock = threading.RLock()


def open_mirror(spec: str | Target, *, sync: bool = True) -> Mirror:
    """The mirror of a remote folder, brought up to date (``sync``), its writes mounted.

    Raises what reaching the machine raises (:class:`~keepgui.core.remote.ssh.UnknownHost`,
    :class:`~keepgui.core.remote.ssh.HostKeyChanged`, :class:`~keepgui.core.remote.ssh.Offline`)
    and NotFound when the folder is not there.
    """
    from keepgui.core.remote.mirror import Mirror

    target = parse(spec) if isinstance(spec, str) else spec
    with _lock:
        mirror = next((m for m in _open.values() if m.target == target), None)
        if mirror is None:
            mirror = Mirror(target)
    if sync:
        mirror.sync()
    with _lock:
        held = _open.get(mirror.local) if mirror.remote else None
    if held is not None and held is not mirror:  # the same folder named another way (relative, by alias...)
        if sync:
            held.sync()
        return held
    _register(mirror)
    return mirror


def _register(mirror: Mirror) -> None:
    from keepgui.core import fsio
    from keepgui.core.remote.push import Pusher

    with _lock:
        if mirror.remote and mirror.local not in _open:
            _open[mirror.local] = mirror
            _pushers[mirror.local] = Pusher(mirror)
            fsio.mount(mirror.local, _pushers[mirror.local])


def close(mirror: Mirror) -> None:
    """Forget an open mirror (its files stay in the cache; writes below it are refused until it is opened again)."""
    from keepgui.core import fsio

    with _lock:
        _open.pop(mirror.local, None)
        _pushers.pop(mirror.local, None)
        fsio.unmount(mirror.local)


def _cache() -> str:
    from keepgui.core.remote.mirror import remote_cache

    return remote_cache()


def is_mirror_path(path: str) -> bool:
    """True for a path inside keepgui's cache of remote folders."""
    return os.path.abspath(path).startswith(_cache() + os.sep)


def mirror_for(path: str) -> Mirror | None:
    """The mirror holding ``path``: an open one, else one kept in the cache (opened without connecting)."""
    path = os.path.abspath(path)
    with _lock:
        for root, mirror in _open.items():
            if path == root or path.startswith(root + os.sep):
                return mirror
    if not is_mirror_path(path):
        return None
    from keepgui.core.remote.mirror import Mirror

    best: Mirror | None = None
    for state_file in glob.glob(os.path.join(_cache(), "*", "state", "*.json")):
        try:
            with open(state_file, encoding="utf-8") as handle:
                state = json.load(handle)
            candidate = Mirror(parse(str(state["target"])))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        root = candidate.local
        inside = candidate.remote and (path == root or path.startswith(root + os.sep))
        if inside and (best is None or len(root) > len(best.local)):
            best = candidate
    if best is not None:
        _register(best)
    return best


def pusher_for(path: str) -> Pusher:
    """Whoever makes writes below ``path`` on its machine (ReadOnly when no mirror holds it)."""
    mirror = mirror_for(path)
    if mirror is None:
        raise ReadOnly(
            f"{path} is in keepgui's cache of remote folders but in no mirror keepgui knows; nothing was written"
        )
    return _pushers[mirror.local]


def display(path: str) -> str | None:
    """A path inside a mirror as a person names it (``alice@box:/home/alice/.hermes``), or None."""
    if not is_mirror_path(path):
        return None
    mirror = mirror_for(path)
    if mirror is None:
        return None
    rel = os.path.relpath(os.path.abspath(path), os.path.join(mirror.base, "root"))
    return f"{mirror.target.machine}:/{rel}" if rel != "." else f"{mirror.target.machine}:/"


def machine_of(path: str) -> str | None:
    """The machine a mirrored path is on (``alice@box``), or None for a path of this machine."""
    if not is_mirror_path(path):
        return None
    mirror = mirror_for(path)
    return mirror.target.machine if mirror is not None else None


def status(path: str) -> str:
    """ "" while the machine of a mirrored path answers, else "offline — read-only" and why."""
    mirror = mirror_for(path) if is_mirror_path(path) else None
    if mirror is None or mirror.online:
        return ""
    return f"offline — read-only ({mirror.problem})" if mirror.problem else "offline — read-only"


def discover(machine: str | Target) -> list[Found]:
    """The agents' memory in the remote user's home, in one round trip: each backend's ``home`` for that
    home, looked for there, and each backend's ``discover`` run on a skeleton of the home's hidden
    folders (three levels of empty folders, made in keepgui's cache) — what it finds there is there."""
    from keepgui.core import registry
    from keepgui.core.remote.mirror import local_dirs, machine_folder, remove_local
    from keepgui.core.remote.ssh import Connection

    target = parse(machine if ":" in machine else machine + ":") if isinstance(machine, str) else machine
    sentinel = "/keepgui-remote-home"
    candidates: list[tuple[str, str]] = []
    for backend in registry.backends():
        if backend.home is None:
            continue
        try:
            found = backend.home({"HOME": sentinel})
        except (KeepguiError, OSError, KeyError, ValueError):  # a home that needs more than HOME is not looked for
            continue
        if found and found.startswith(sentinel + "/"):
            candidates.append((backend.kind, found[len(sentinel) + 1 :]))
    script = (
        'cd || exit 10; pwd -P; for p in "$@"; do [ -d "$p" ] && printf "%s\\n" "$p"; done; echo /; '
        "find . -mindepth 1 -maxdepth 3 -path './.*' -type d -printf '%P\\n' 2>/dev/null | head -n 5000; exit 0"
    )
    result = Connection(target).run(script, args=tuple(p for _k, p in candidates))
    lines = result.out.decode("utf-8", "surrogateescape").splitlines()
    home = lines[0] if lines else ""
    cut = lines.index("/") if "/" in lines else len(lines)
    present, folders = set(lines[1:cut]), lines[cut + 1 :]
    out: dict[tuple[str, str], Found] = {}
    for kind, rel in candidates:
        if rel in present:
            out[(kind, rel)] = registry.Found(kind, str(target.with_path(f"{home}/{rel}")), f"on {target.machine}")
    skeleton = os.path.join(machine_folder(target), "home-skeleton")
    remove_local(skeleton)
    for folder in folders:
        local_dirs(os.path.join(skeleton, folder))
    try:
        for backend in registry.backends():
            for there in backend.discover({"HOME": skeleton}):
                rel = os.path.relpath(there.path, skeleton)
                if not rel.startswith("..") and (there.kind, rel) not in out:
                    path = str(target.with_path(f"{home}/{rel}"))
                    out[(there.kind, rel)] = registry.Found(there.kind, path, f"on {target.machine}: {there.why}")
    finally:
        remove_local(skeleton)
    return list(out.values())
