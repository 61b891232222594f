"""Where Hermes Agent keeps its memory, and the settings that decide what a session loads (no Qt).

**Homes.** Hermes works on one folder, its *home*. With ``HERMES_HOME`` unset it is ``~/.hermes``
(``%LOCALAPPDATA%\\hermes`` on Windows) — unless that folder's ``active_profile`` names a profile
other than ``default`` (``hermes profile use NAME``), in which case a new session uses
``~/.hermes/profiles/NAME``. ``HERMES_HOME`` replaces the default; when its parent folder is
named ``profiles`` it is used as it is. The *root* (where ``active_profile`` and ``profiles/``
live) is the default folder when ``HERMES_HOME`` is unset or inside it, the grandparent of a
``…/profiles/NAME`` home, and ``HERMES_HOME`` itself otherwise (a Docker layout). Every profile is
a complete home of its own (its ``config.yaml``, ``memories/``, ``state.db``, ``pending/``).

**Settings.** ``<home>/config.yaml`` is read with YAML 1.1's safe loader, deep-merged over
Hermes's defaults (a ``memory:`` section with one key keeps the other defaults; an empty section
keeps them all), ``${VAR}`` references expanded from the environment, then overlaid by a managed
config (``$HERMES_MANAGED_DIR/config.yaml``, else ``/etc/hermes/config.yaml``) whose values win.
A config Hermes cannot parse means its defaults for a new session.

Facts from hermes-agent 0.19.0 (``hermes_constants.py``, ``hermes_cli/main.py``,
``hermes_cli/config.py``, ``agent/agent_init.py``); the environment and profile cases were
checked by running it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from keepgui.backends.hermes.entries import DEFAULT_LIMITS, MEMORY, USER
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

DEFAULT_PROFILE = "default"
"""The name of the root's own home among its profiles."""

CONFIG_LIMIT = 4 * 1024 * 1024
"""keepgui reads no config.yaml larger than this."""


def default_root(environ: Mapping[str, str]) -> str:
    """Hermes's platform default folder: ``~/.hermes`` (from ``HOME``), ``%LOCALAPPDATA%\\hermes`` on Windows."""
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        local = environ.get("LOCALAPPDATA", "").strip()
        base = local or os.path.join(environ.get("USERPROFILE", os.path.expanduser("~")), "AppData", "Local")
        return os.path.join(base, "hermes")
    return os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".hermes")


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def root_of(environ: Mapping[str, str]) -> str:
    """The root whose ``active_profile`` and ``profiles/`` a session started in ``environ`` consults."""
    native = default_root(environ)
    env_home = environ.get("HERMES_HOME", "").strip()
    if not env_home:
        return native
    if _inside(env_home, native):
        return native
    if os.path.basename(os.path.dirname(os.path.abspath(env_home))) == "profiles":
        return os.path.dirname(os.path.dirname(os.path.abspath(env_home)))
    return os.path.abspath(env_home)


def active_profile(root: str) -> str:
    """The sticky profile named in ``<root>/active_profile`` (``default`` when none)."""
    data, _stamp = _read(os.path.join(root, "active_profile"))
    if data is None:
        return DEFAULT_PROFILE
    try:
        name = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return DEFAULT_PROFILE
    return name or DEFAULT_PROFILE


@dataclass(frozen=True)
class Resolution:
    """The home a new session started in some environment uses, and why."""

    home: str
    root: str
    profile: str
    why: str
    problem: str = ""


def resolve_home(environ: Mapping[str, str]) -> Resolution:
    """The home of a new ``hermes`` session started in ``environ`` (without ``--profile``)."""
    env_home = environ.get("HERMES_HOME", "").strip()
    root = root_of(environ)
    if env_home and os.path.basename(os.path.dirname(os.path.abspath(env_home))) == "profiles":
        home = os.path.abspath(env_home)
        return Resolution(home, root, os.path.basename(home), "$HERMES_HOME names a profile")
    if not environ.get("HERMES_S6_SUPERVISED_CHILD"):
        name = active_profile(root)
        if name != DEFAULT_PROFILE:
            home = os.path.join(root, "profiles", name)
            problem = "" if os.path.isdir(home) else f"Profile '{name}' does not exist: Hermes refuses to start"
            return Resolution(home, root, name, f"{root}/active_profile names the profile {name}", problem)
    if env_home:
        return Resolution(os.path.abspath(env_home), root, DEFAULT_PROFILE, "$HERMES_HOME")
    return Resolution(default_root(environ), root, DEFAULT_PROFILE, "Hermes's default home")


def profiles(root: str) -> list[str]:
    """The profiles under ``<root>/profiles/``, sorted (folders only)."""
    folder = os.path.join(root, "profiles")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(folder, n)))


def looks_like_home(path: str) -> str:
    """Why ``path`` is a Hermes home ("" when nothing says so)."""
    if os.path.isdir(os.path.join(path, "memories")):
        return "it has Hermes's memories/ folder"
    for name in ("state.db", "SOUL.md", "config.yaml"):
        if os.path.isfile(os.path.join(path, name)) and os.path.isdir(os.path.join(path, "skills")):
            return f"it has Hermes's {name} and skills/"
    if os.path.isdir(os.path.join(path, "profiles")) and any(
        os.path.isdir(os.path.join(path, "profiles", p, "memories")) for p in profiles(path)
    ):
        return "its profiles/ hold Hermes homes"
    return ""


def _read(path: str) -> tuple[bytes | None, fsio.Stamp]:
    try:
        return fsio.read_stamped(path, limit=CONFIG_LIMIT)
    except (OSError, KeepguiError):  # a folder, a FIFO, too large: nothing Hermes could use
        return None, fsio.Stamp.missing()


# ---------------------------------------------------------------------- config.yaml

MEMORY_DEFAULTS: dict[str, Any] = {
    "memory_enabled": True,
    "user_profile_enabled": True,
    "write_approval": False,
    "memory_char_limit": DEFAULT_LIMITS[MEMORY],
    "user_char_limit": DEFAULT_LIMITS[USER],
    "nudge_interval": 10,
    "provider": "",
}
"""Hermes's defaults of the ``memory:`` settings."""

APPROVAL_WORDS = frozenset({"on", "true", "yes", "1", "approve", "enabled"})
"""Strings Hermes reads as "approval on" (stripped, lower-cased)."""

_VAR = re.compile(r"\${([^}]+)}")


def _expand(value: Any, environ: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _VAR.sub(lambda m: environ.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: _expand(v, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, environ) for v in value]
    return value


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(out.get(key), dict) and isinstance(value, dict):
            out[key] = _merge(out[key], value)
        elif isinstance(out.get(key), dict) and value is None:
            continue  # an empty section keeps the defaults
        else:
            out[key] = value
    return out


def approval_on(value: Any) -> bool:
    """Hermes's reading of ``write_approval``: YAML true, or one of :data:`APPROVAL_WORDS`."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str) and value.strip().lower() in APPROVAL_WORDS


def managed_dir(environ: Mapping[str, str]) -> str | None:
    """The managed config's folder: ``$HERMES_MANAGED_DIR`` when set (and a folder), else ``/etc/hermes``."""
    override = environ.get("HERMES_MANAGED_DIR", "").strip()
    if override:
        return override if os.path.isdir(override) else None
    if sys.platform == "win32":  # pragma: no cover
        return None
    return "/etc/hermes" if os.path.isdir("/etc/hermes") else None


@dataclass(frozen=True)
class Settings:
    """The settings of one home that decide what its sessions load and how its memory is written.

    ``memory`` and ``skills`` are the merged sections as Hermes sees them; ``problems`` say what
    keepgui could not use (an unparsable file: Hermes's defaults apply); ``managed`` names the
    managed config that overrode any value.
    """

    memory: Mapping[str, Any]
    skills: Mapping[str, Any]
    path: str
    exists: bool
    problems: tuple[str, ...] = ()
    managed: str = ""

    @property
    def memory_enabled(self) -> bool:
        """The MEMORY block is in the prompt (Python truthiness: a quoted "false" is true)."""
        return bool(self.memory.get("memory_enabled"))

    @property
    def user_profile_enabled(self) -> bool:
        """The USER PROFILE block is in the prompt."""
        return bool(self.memory.get("user_profile_enabled"))

    @property
    def store_loaded(self) -> bool:
        """Hermes builds its memory store (and reads both files) when either switch is on."""
        return self.memory_enabled or self.user_profile_enabled

    def limit(self, target: str) -> Any:
        """The limit of ``target`` as the config gives it (normally an int)."""
        return self.memory.get("user_char_limit" if target == USER else "memory_char_limit")

    def limit_problem(self) -> str:
        """Why the limits break Hermes's prompt (a non-number: no memory block at all), or ""."""
        for key in ("memory_char_limit", "user_char_limit"):
            value = self.memory.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return (
                    f"memory.{key} is {value!r}, not a number: Hermes fails to render its memory and a new "
                    "session has no memory block at all"
                )
        return ""

    def int_limit(self, target: str) -> int:
        """The limit as a whole number (what approvals and keepgui's checks use; the default when unusable)."""
        value = self.limit(target)
        try:
            return int(value)
        except (TypeError, ValueError):
            return DEFAULT_LIMITS[target]

    @property
    def write_approval(self) -> bool:
        """Memory writes are staged under ``pending/memory/`` for approval."""
        return approval_on(self.memory.get("write_approval"))

    @property
    def provider(self) -> str:
        """The external memory provider ("" when none)."""
        value = self.memory.get("provider")
        return value if isinstance(value, str) else ""

    def effects(self) -> list[str]:
        """What the settings mean for a session, in words ("user profile off: USER.md is not loaded")."""
        out = []
        if not self.store_loaded:
            out.append("memory off: neither MEMORY.md nor USER.md is loaded, and the memory tool is unavailable")
        else:
            if not self.memory_enabled:
                out.append("memory notes off: MEMORY.md is not loaded (it is still read)")
            if not self.user_profile_enabled:
                out.append("user profile off: USER.md is not loaded (it is still read)")
        for key, value in (("memory_enabled", "memory"), ("user_profile_enabled", "user profile")):
            raw = self.memory.get(key)
            if isinstance(raw, str):
                out.append(f"memory.{key} is the string {raw!r}: Hermes reads any non-empty string as on ({value})")
        problem = self.limit_problem()
        if problem:
            out.append(problem)
        else:
            out.append(
                f"limits: MEMORY.md {self.limit(MEMORY):,} chars, USER.md {self.limit(USER):,} chars "
                "(Hermes's own writes stop there; loading never cuts)"
            )
        out.append(
            "write approval on: Hermes stages memory writes under pending/memory/ for approval"
            if self.write_approval
            else "write approval off: Hermes writes memory at once"
        )
        if self.provider:
            out.append(f"external memory provider {self.provider}: its block follows USER PROFILE (not shown)")
        if self.managed:
            out.append(f"managed settings in {self.managed} override config.yaml")
        return out


def _load_yaml(data: bytes, path: str) -> tuple[dict[str, Any], str]:
    try:
        loaded = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f", line {where.line + 1}" if where is not None else ""
        return {}, f"{path}{line}: Hermes cannot parse it ({exc.__class__.__name__}); a new session uses its defaults"
    if loaded is None:
        return {}, ""
    if not isinstance(loaded, dict):
        return {}, f"{path}: not a mapping; a new session uses Hermes's defaults"
    return loaded, ""


def load_settings(home: str, environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of ``home`` as a new session there reads them."""
    env = os.environ if environ is None else environ
    path = os.path.join(home, "config.yaml")
    data, stamp = _read(path)
    problems: list[str] = []
    user: dict[str, Any] = {}
    if data is not None:
        user, problem = _load_yaml(data, path)
        if problem:
            problems.append(problem)
    merged = _merge({"memory": dict(MEMORY_DEFAULTS), "skills": {"write_approval": False}}, user)
    merged = _expand(merged, env)
    managed = ""
    folder = managed_dir(env)
    if folder is not None:
        mdata, _ = _read(os.path.join(folder, "config.yaml"))
        if mdata is not None:
            over, problem = _load_yaml(mdata, os.path.join(folder, "config.yaml"))
            if over:
                merged = _merge(merged, _expand(over, env))
                managed = os.path.join(folder, "config.yaml")
    memory = merged.get("memory")
    skills = merged.get("skills")
    if not isinstance(memory, dict):
        problems.append(f"{path}: memory is not a section of settings; Hermes then loads no memory at all")
        memory = {}
    return Settings(
        memory,
        skills if isinstance(skills, dict) else {},
        path,
        stamp.exists,
        tuple(problems),
        managed,
    )
