"""Where a remote source is: ``ssh://[user@]host[:port]/path`` or ``host:path``, and the hosts of ~/.ssh/config (no Qt).

A *target* names a folder on another machine. ``host`` is what OpenSSH is given (an alias of the
user's ``~/.ssh/config`` works as it does for ``ssh``: its ``HostName``, ``User``, ``Port``,
``IdentityFile`` and ``ProxyJump`` apply). A path that does not start with ``/`` is relative to
the remote user's home (``box:.nanobot/workspace``, as ``scp`` reads it); ``~/`` means the same.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote

from keepgui.core.errors import InvalidInput

CONFIG_ENV = "KEEPGUI_SSH_CONFIG"
"""An ssh_config file used instead of ``~/.ssh/config`` (``ssh -F``); the tests point it at a throw-away one."""

_HOST = r"[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]"
_SCP = re.compile(rf"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>{_HOST}):(?P<path>.*)$")
_URL = re.compile(rf"^ssh://(?:(?P<user>[^@/:\s]+)@)?(?P<host>{_HOST})(?::(?P<port>[0-9]+))?(?P<path>/.*)?$")


@dataclass(frozen=True)
class Target:
    """A folder on another machine: the host as given (an alias or a name), user and port when given,
    and the path there (absolute, or relative to the remote home)."""

    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def machine(self) -> str:
        """The machine as a person names it (``alice@box:2222``)."""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"

    def __str__(self) -> str:
        if self.port:
            path = self.path if self.path.startswith("/") else "/~/" + self.path
            return f"ssh://{self.machine}{path}"
        return f"{self.machine}:{self.path}"

    def with_path(self, path: str) -> Target:
        """The same machine, another folder."""
        return Target(self.host, path, self.user, self.port)


def looks_remote(text: str) -> bool:
    """True when ``text`` names a remote folder rather than a local one.

    ``ssh://`` always does; ``host:path`` does when the part before the first ``:`` has no ``/``
    and is not a Windows drive letter, as ``scp`` decides (``./a:b`` is a local file).
    """
    if text.startswith("ssh://"):
        return True
    if text.startswith(("/", ".", "~")) or os.path.exists(text):
        return False
    match = _SCP.match(text)
    return match is not None and len(match.group("host")) > 1


def parse(text: str) -> Target:
    """The target ``text`` names (InvalidInput, saying what is wrong, when it names none)."""
    match = _URL.match(text) if text.startswith("ssh://") else _SCP.match(text)
    if match is None:
        raise InvalidInput(f"`{text}` is not a remote folder: write ssh://[user@]host[:port]/path or host:path")
    groups = match.groupdict()
    url = text.startswith("ssh://")
    path = unquote(groups.get("path") or "") if url else groups["path"]
    home = "/~" if url else "~"
    if path == home:
        path = ""
    elif path.startswith(home + "/"):
        path = path[len(home) + 1 :]
    port = groups.get("port")
    if port is not None and not 0 < int(port) < 65536:
        raise InvalidInput(f"`{text}`: port {port} is not a port number")
    host = groups["host"].strip("[]")
    return Target(host, os.path.normpath(path) if path else "", groups.get("user"), int(port) if port else None)


def config_file() -> str:
    """The ssh_config file keepgui reads and gives ``ssh`` (``$KEEPGUI_SSH_CONFIG``, else ``~/.ssh/config``)."""
    return os.environ.get(CONFIG_ENV) or os.path.expanduser("~/.ssh/config")


def config_hosts(path: str | None = None) -> list[str]:
    """The host aliases of an ssh_config file (and of the files it ``Include``\\ s), without patterns,
    in the order written: the machines offered to choose from."""
    out: list[str] = []
    _read_hosts(path or config_file(), out, depth=0)
    return list(dict.fromkeys(out))


def _read_hosts(path: str, out: list[str], depth: int) -> None:
    import glob

    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return
    for line in lines:
        words = line.strip().split()
        if len(words) < 2 or words[0].startswith("#"):
            continue
        key = words[0].lower()
        if key == "host":
            out.extend(w for w in words[1:] if not any(c in w for c in "*?!"))
        elif key == "include" and depth < 8:
            for pattern in words[1:]:
                pattern = os.path.expanduser(pattern)
                if not os.path.isabs(pattern):
                    pattern = os.path.join(os.path.expanduser("~/.ssh"), pattern)
                for name in sorted(glob.glob(pattern)):
                    _read_hosts(name, out, depth + 1)
