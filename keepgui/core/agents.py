"""Which version of each agent is installed here, beside the one keepgui's exact views were checked
with (no Qt, no backend).

keepgui's exact views (the reminder a Claude Code session starts with, Codex's memory block...) are
checked byte for byte against one version of each agent, its backend's ``CHECKED_VERSION``. Another
version may render differently, so the command line and the window say when the installed one
differs. A backend's registry entry names its agent (:class:`Agent`): the command, the version
checked, and how the installed version is read — the command's ``--version`` output, or a Python
distribution's metadata found beside the command (no process at all). Reading runs the command
with a short timeout, so it never runs on the GUI thread; the answer is cached per binary path and
modification time, so a second question costs a ``stat`` and an upgrade is noticed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

_T = TypeVar("_T")

VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+\.\d+(?:[-+.][0-9A-Za-z.-]+)?)")
"""The first version-looking word of a ``--version`` answer ("codex-cli 0.169.0", "v0.19.0")."""

TIMEOUT = 5.0
"""How long a ``--version`` may take before keepgui stops waiting (node programs start slowly)."""


@dataclass(frozen=True)
class Agent:
    """An agent's program as its backend's registry entry names it.

    ``name``: what people call it ("Claude Code"); ``command``: the name on ``PATH`` (``None``: the agent is no command keepgui can ask, e.g. a
    worker an engine runs); ``checked``: the version keepgui was checked against; ``args``: what
    prints the version; ``distribution``: a Python distribution whose metadata, in the environment
    the command belongs to, holds the version; ``npm_package``: the npm package whose
    ``package.json``, above the command's real file, does (both read before running anything, and
    instead of it when found); ``why_unread``: why a version cannot be read at all.
    """

    name: str
    checked: str
    command: str | None = None
    args: tuple[str, ...] = ("--version",)
    distribution: str | None = None
    npm_package: str | None = None
    why_unread: str = ""


@dataclass(frozen=True)
class AgentVersion:
    """The agent, the version checked, the one installed here (None: none found, ``why`` says why) and where."""

    name: str
    checked: str
    installed: str | None
    where: str | None = None
    why: str = ""

    @property
    def differs(self) -> bool:
        """True when an installed version is known and is not the one checked."""
        return self.installed is not None and self.installed != self.checked

    def to_obj(self) -> dict[str, Any]:
        """``{checked, installed, differs}`` for ``--json``."""
        return {"checked": self.checked, "installed": self.installed, "differs": self.differs}

    def sentence(self) -> str:
        """What to tell a person ("" when there is nothing to say: the same version, or none found)."""
        if not self.differs:
            return ""
        return (
            f"{self.name} {self.installed} is installed here ({self.where}); keepgui's exact view was checked "
            f"against {self.checked}, and this version may give its agent something else"
        )


_CACHE: dict[tuple[str, int, int, str], str | None] = {}
_LOCK = threading.Lock()


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _from_metadata(binary: str, distribution: str) -> str | None:
    """The version in the metadata of ``distribution`` in the environment ``binary`` lives in (a venv's
    ``bin/``), or None."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
    name = re.sub(r"[-_.]+", "_", distribution).lower()
    for meta in sorted(glob.glob(os.path.join(root, "lib", "python*", "site-packages", "*.dist-info", "METADATA"))):
        folder = os.path.basename(os.path.dirname(meta))
        if not re.sub(r"[-_.]+", "_", folder).lower().startswith(name + "_"):
            continue
        try:
            with open(meta, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():
                        break
        except OSError:
            return None
    return None


def _from_package_json(binary: str, package: str) -> str | None:
    """The version in the ``package.json`` of ``package`` found above the real file of ``binary``."""
    folder = os.path.dirname(os.path.realpath(binary))
    while True:
        candidate = os.path.join(folder, "package.json")
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8") as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict) and data.get("name") == package and isinstance(data.get("version"), str):
                return str(data["version"])
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _from_command(binary: str, args: tuple[str, ...], environ: Mapping[str, str]) -> str | None:
    try:
        done = subprocess.run(
            [binary, *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = VERSION.search(done.stdout) or VERSION.search(done.stderr)
    return match.group(1) if match else None


def installed(agent: Agent, environ: Mapping[str, str] | None = None, *, run: bool = True) -> AgentVersion:
    """The version of ``agent`` installed here (``run=False``: only what is cached, never a process)."""
    env = os.environ if environ is None else environ
    if agent.command is None:
        return AgentVersion(agent.name, agent.checked, None, None, agent.why_unread or "keepgui cannot ask it")
    binary = shutil.which(agent.command, path=env.get("PATH"))
    stamp = _stamp(binary) if binary else None
    if binary is None or stamp is None:
        return AgentVersion(agent.name, agent.checked, None, None, f"`{agent.command}` is not on PATH")
    key = (binary, *stamp, f"{agent.distribution} {agent.npm_package} {' '.join(agent.args)}")
    with _LOCK:
        known = key in _CACHE
        version = _CACHE.get(key)
    if not known:
        if not run:
            return AgentVersion(agent.name, agent.checked, None, binary, "not read yet")
        version = _from_metadata(binary, agent.distribution) if agent.distribution else None
        if version is None and agent.npm_package:
            version = _from_package_json(binary, agent.npm_package)
        if version is None and agent.args:
            version = _from_command(binary, agent.args, env)
        with _LOCK:
            _CACHE[key] = version
    return AgentVersion(
        agent.name, agent.checked, version, binary, "" if version else f"`{binary}` did not say its version"
    )


def version_of(kind: str, environ: Mapping[str, str] | None = None, *, run: bool = True) -> AgentVersion | None:
    """The installed version of the agent of backend ``kind`` (None: its entry names no agent)."""
    from keepgui.core import registry

    agent = registry.backend(kind).agent
    return None if agent is None else installed(agent, environ, run=run)


def beside(kind: str, value: _T) -> _T:
    """``value``, once ``kind``'s installed version is read into the cache (a background task's last step,
    so that :func:`said` with ``run=False`` answers on the GUI thread from the cache)."""
    version_of(kind)
    return value


def said(kind: str, environ: Mapping[str, str] | None = None, *, run: bool = True) -> str:
    """The sentence about ``kind``'s installed version, or "" (see :meth:`AgentVersion.sentence`)."""
    found = version_of(kind, environ, run=run)
    return "" if found is None else found.sentence()
