"""Where Claude Code keeps things, resolved as the CLI resolves them.

Settled against the real CLI (black box: run it, look at what it reads and
creates) unless a line says otherwise:

* ``<config>`` is ``$CLAUDE_CONFIG_DIR`` when set, else ``$HOME/.claude``; the
  user ``CLAUDE.md``, ``rules/`` and ``projects/`` live there, and so does
  ``.claude.json`` when ``CLAUDE_CONFIG_DIR`` is set (else it is
  ``$HOME/.claude.json``).
* Settings merge local over project over user: ``<cwd>/.claude/settings.local.json``,
  ``<cwd>/.claude/settings.json`` (the launch folder, not the git root), then
  ``<config>/settings.json``; managed settings win over all of them.
* A project's memory folder is ``<config>/projects/<sanitize(key)>/memory`` where
  ``key`` is the canonical git root (every worktree of a repository shares the
  main checkout's folder), or the launch folder outside git. ``sanitize``
  replaces every UTF-16 unit outside ``[A-Za-z0-9]`` by ``-`` with no Unicode
  normalisation (a decomposed ``é`` gives ``e-``); past 200 units it keeps the
  first 200 and appends ``-`` plus ``abs(djb2)`` of the whole path in base 36
  (a 32-bit ``h = h*31 + unit`` over UTF-16 units): :func:`project_folder_name`.
* ``autoMemoryDirectory`` (any settings layer; ``~/`` expanded) replaces the
  whole memory path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

MAX_SANITIZED = 200
"""Longer sanitized names are cut to this many units and given a hash suffix."""

SETTINGS_LIMIT = 4 * 1024 * 1024
"""keepgui reads at most this much of a settings or ``.claude.json`` file."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def managed_dir_for(platform: str = sys.platform) -> str:
    """The folder of organisation-managed policy files on this operating system."""
    if platform == "darwin":
        return "/Library/Application Support/ClaudeCode"
    if platform.startswith("win"):
        return "C:\\Program Files\\ClaudeCode"
    return "/etc/claude-code"


def env_flag(environ: Mapping[str, str], name: str) -> bool | None:
    """A boolean environment switch: True, False, or None when unset or not a boolean."""
    value = environ.get(name)
    if value is None:
        return None
    value = value.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return None


@dataclass(frozen=True)
class ClaudeEnv:
    """The environment a Claude Code session would start in: HOME, the config folder, the managed folder.

    ``environ`` holds the variables that change what loads
    (``CLAUDE_CONFIG_DIR``, ``CLAUDE_CODE_DISABLE_AUTO_MEMORY`` ...).
    """

    home: str
    config_dir: str
    managed_dir: str
    environ: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, *, managed_dir: str | None = None) -> ClaudeEnv:
        """The environment of this process (or ``environ``), as the CLI would see it."""
        environ = dict(os.environ if environ is None else environ)
        home = environ.get("HOME") or environ.get("USERPROFILE") or os.path.expanduser("~")
        config = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
        config = os.path.abspath(expand_home(config, home))
        return cls(os.path.abspath(home), config, managed_dir or managed_dir_for(), environ)

    @property
    def custom_config(self) -> bool:
        """True when ``CLAUDE_CONFIG_DIR`` names the config folder."""
        return bool(self.environ.get("CLAUDE_CONFIG_DIR"))

    @property
    def claude_json(self) -> str:
        """The CLI's own state file (project approvals...); read only, never written by keepgui."""
        if self.custom_config:
            return os.path.join(self.config_dir, ".claude.json")
        return os.path.join(self.home, ".claude.json")

    @property
    def projects_dir(self) -> str:
        """``<config>/projects``: one folder per project, for transcripts and memory."""
        return os.path.join(self.config_dir, "projects")

    @property
    def user_settings(self) -> str:
        """``<config>/settings.json``."""
        return os.path.join(self.config_dir, "settings.json")

    @property
    def managed_settings(self) -> str:
        """The managed policy settings file."""
        return os.path.join(self.managed_dir, "managed-settings.json")

    def flag(self, name: str) -> bool | None:
        """An environment switch of this environment (see :func:`env_flag`)."""
        return env_flag(self.environ, name)


def expand_home(path: str, home: str) -> str:
    """``~`` and ``~/x`` against ``home``."""
    if path == "~":
        return home
    if path.startswith(("~/", "~" + os.sep)):
        return os.path.join(home, path[2:])
    return path


# ---------------------------------------------------------------------- names of project folders


def sanitize(path: str) -> str:
    """Every UTF-16 unit of ``path`` outside ``[A-Za-z0-9]`` as ``-`` (no length limit applied)."""
    out = []
    for ch in path:
        if ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.append("--" if ord(ch) > 0xFFFF else "-")
    return "".join(out)


def djb2_base36(path: str) -> str:
    """``Math.abs`` of the 32-bit djb2 hash (``h = h*31 + unit``) of the UTF-16 units, in base 36."""
    h = 0
    for unit in _utf16_units(path):
        h = (h * 31 + unit) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    n = abs(h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def _utf16_units(text: str) -> Iterator[int]:
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            yield 0xD800 + (code >> 10)
            yield 0xDC00 + (code & 0x3FF)
        else:
            yield code


def project_folder_name(key: str) -> str:
    """The folder under ``projects/`` for a project key (canonical root or launch folder)."""
    name = sanitize(key)
    if len(name) <= MAX_SANITIZED:
        return name
    return f"{name[:MAX_SANITIZED]}-{djb2_base36(key)}"


def long_name_prefix(key: str) -> str | None:
    """For a key whose folder name needs a hash, the 200-unit prefix every candidate starts with."""
    name = sanitize(key)
    return name[:MAX_SANITIZED] + "-" if len(name) > MAX_SANITIZED else None


# ---------------------------------------------------------------------- git roots


@dataclass(frozen=True)
class GitRoots:
    """The git facts of a launch folder: ``root`` (the nearest folder with a ``.git``, or None),
    ``canonical`` (the main checkout every worktree shares memory with; for a bare
    repository its folder), ``worktree`` (True when ``root`` is a linked worktree)."""

    root: str | None
    canonical: str | None
    worktree: bool = False


def _read_small(path: str, limit: int = 64 * 1024) -> str | None:
    try:
        data, _stamp = fsio.read_stamped(path, limit=limit)
    except (OSError, KeepguiError):  # a folder, a FIFO, too big: not a git pointer file
        return None
    if data is None:
        return None
    return data.decode("utf-8", errors="replace")


def git_roots(cwd: str) -> GitRoots:
    """The git root and canonical root of ``cwd``, found as the CLI finds them.

    Walk up lexically to the first folder holding a ``.git`` entry. A ``.git``
    folder makes it a plain checkout. A ``.git`` file (``gitdir: …``) points at
    a worktree's or a submodule's git folder: a worktree's has a ``commondir``,
    and only when ``<gitdir>`` sits in ``<commondir>/worktrees`` and its
    ``gitdir`` file points back at this checkout is the main checkout (or a bare
    repository's folder) the canonical root; anything else keeps its own root.
    """
    probe = os.path.abspath(cwd)
    while True:
        dot_git = os.path.join(probe, ".git")
        if os.path.lexists(dot_git):
            break
        parent = os.path.dirname(probe)
        if parent == probe:
            return GitRoots(None, None)
        probe = parent
    root = probe
    if os.path.isdir(dot_git):
        return GitRoots(root, root)
    pointer = _read_small(dot_git)
    if pointer is None or not pointer.startswith("gitdir:"):
        return GitRoots(root, root)
    gitdir = os.path.normpath(os.path.join(root, pointer[len("gitdir:") :].strip()))
    common = _read_small(os.path.join(gitdir, "commondir"))
    if common is None:
        return GitRoots(root, root)  # a submodule: its own root
    common_dir = os.path.normpath(os.path.join(gitdir, common.strip()))
    back = _read_small(os.path.join(gitdir, "gitdir"))
    if (
        os.path.dirname(gitdir) != os.path.join(common_dir, "worktrees")
        or back is None
        or os.path.realpath(back.strip()) != os.path.join(os.path.realpath(root), ".git")
    ):
        return GitRoots(root, root)
    canonical = os.path.dirname(common_dir) if os.path.basename(common_dir) == ".git" else common_dir
    return GitRoots(root, canonical, True)


# ---------------------------------------------------------------------- settings


def read_json(path: str) -> tuple[dict[str, Any], str]:
    """A JSON object file: ``(object, "")``, ``({}, "")`` when missing, ``({}, why)`` when unreadable."""
    try:
        data, _stamp = fsio.read_stamped(path, limit=SETTINGS_LIMIT)
    except OSError as exc:
        return {}, f"{path}: {exc.strerror or exc}"
    except KeepguiError as exc:  # a folder, a FIFO, too big
        return {}, str(exc)
    if data is None:
        return {}, ""
    try:
        obj = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return {}, f"{path}: not valid JSON ({exc})"
    if not isinstance(obj, dict):
        return {}, f"{path}: not a JSON object"
    return obj, ""


@dataclass(frozen=True)
class Settings:
    """The settings that change what a session loads, merged as the CLI merges them.

    ``layers`` are ``(scope, path, object)`` from the lowest priority (user) to
    the highest (managed); ``problems`` name files that could not be read.
    """

    layers: tuple[tuple[str, str, dict[str, Any]], ...]
    problems: tuple[str, ...] = ()

    def get(self, key: str) -> Any:  # a JSON value
        """The value of the highest-priority layer that sets ``key`` (None when none does)."""
        for _scope, _path, obj in reversed(self.layers):
            if key in obj:
                return obj[key]
        return None

    def where(self, key: str) -> str | None:
        """The file the value of ``key`` comes from."""
        for _scope, file, obj in self.layers[::-1]:
            if key in obj:
                return file
        return None

    def merged_list(self, key: str) -> list[str]:
        """Every layer's string list under ``key``, concatenated (``claudeMdExcludes`` arrays merge)."""
        out: list[str] = []
        for _scope, _path, obj in self.layers:
            value = obj.get(key)
            if isinstance(value, list):
                out.extend(v for v in value if isinstance(v, str))
        return out


def load_settings(env: ClaudeEnv, cwd: str) -> Settings:
    """User, project, local and managed settings for a session launched in ``cwd``."""
    files = (
        ("user", env.user_settings),
        ("project", os.path.join(cwd, ".claude", "settings.json")),
        ("local", os.path.join(cwd, ".claude", "settings.local.json")),
        ("managed", env.managed_settings),
    )
    layers, problems = [], []
    for scope, path in files:
        obj, why = read_json(path)
        if why:
            problems.append(why)
        layers.append((scope, path, obj))
    return Settings(tuple(layers), tuple(problems))


def approved_external(env: ClaudeEnv, project_root: str) -> bool:
    """Whether the person approved imports from outside the project (the CLI's one-time dialog),
    as recorded for ``project_root`` in ``.claude.json``."""
    obj, _why = read_json(env.claude_json)
    projects = obj.get("projects")
    entry = projects.get(project_root) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("hasClaudeMdExternalIncludesApproved") is True


# ---------------------------------------------------------------------- the memory folder


@dataclass(frozen=True)
class MemoryLocation:
    """Where a session launched in ``cwd`` keeps its auto memory.

    ``path`` is the memory folder; ``how`` says which rule chose it
    (``default``, ``setting``, ``env``, ``project-name``); ``key`` the project
    key that was sanitized (default rule); ``candidates`` other folders with the
    same 200-unit prefix (a long path: shown, never picked); ``enabled`` and
    ``why_off`` whether auto memory is on.
    """

    path: str
    how: str
    key: str | None
    enabled: bool
    why_off: str = ""
    candidates: tuple[str, ...] = ()


def auto_memory_enabled(env: ClaudeEnv, settings: Settings) -> tuple[bool, str]:
    """Whether auto memory is on, and why not: the environment switch (either way) wins over
    ``--bare``-style simple mode and over the ``autoMemoryEnabled`` setting; on by default."""
    forced = env.flag("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
    if forced is True:
        return False, "CLAUDE_CODE_DISABLE_AUTO_MEMORY is set"
    if forced is False:
        return True, ""
    if env.flag("CLAUDE_CODE_SIMPLE"):
        return False, "CLAUDE_CODE_SIMPLE is set"
    value = settings.get("autoMemoryEnabled")
    if value is False:
        return False, f"autoMemoryEnabled is false in {settings.where('autoMemoryEnabled')}"
    return True, ""


def _valid_memory_setting(value: object, home: str) -> str | None:
    if not isinstance(value, str) or "\x00" in value:
        return None
    value = value.strip()
    if value in ("~", "~/", "~/.", "~/.."):
        return None
    expanded = expand_home(value, home)
    if not os.path.isabs(expanded) or len(expanded) < 3 or expanded.startswith("//"):
        return None
    return os.path.normpath(expanded)


def memory_location(
    env: ClaudeEnv, cwd: str, settings: Settings | None = None, roots: GitRoots | None = None
) -> MemoryLocation:
    """The auto-memory folder of a session launched in ``cwd`` (see the module docstring)."""
    settings = load_settings(env, cwd) if settings is None else settings
    enabled, why = auto_memory_enabled(env, settings)
    override = env.environ.get("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE")
    if override:
        return MemoryLocation(override, "env", None, enabled, why)
    chosen = _valid_memory_setting(settings.get("autoMemoryDirectory"), env.home)
    if chosen:
        return MemoryLocation(chosen, "setting", None, enabled, why)
    name = env.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME")
    if name and env.custom_config and _valid_project_name(name):
        return MemoryLocation(os.path.join(env.projects_dir, name, "memory"), "project-name", None, enabled, why)
    roots = git_roots(cwd) if roots is None else roots
    key = roots.canonical or os.path.abspath(cwd)
    base = env.environ.get("CLAUDE_CODE_REMOTE_MEMORY_DIR") or env.config_dir
    projects = os.path.join(base, "projects")
    folder = project_folder_name(key)
    candidates: tuple[str, ...] = ()
    prefix = long_name_prefix(key)
    if prefix is not None:
        try:
            names = os.listdir(projects)
        except OSError:
            names = []
        candidates = tuple(sorted(n for n in names if n.startswith(prefix) and n != folder))
    return MemoryLocation(os.path.join(projects, folder, "memory"), "default", key, enabled, why, candidates)


_DEVICE_NAMES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def _valid_project_name(name: str) -> bool:
    return (
        1 <= len(name) <= 64
        and all(c.isascii() and (c.isalnum() or c in "-_") for c in name)
        and name.lower() not in _DEVICE_NAMES
    )
