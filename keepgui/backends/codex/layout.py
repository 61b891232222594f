"""Where a Codex home is, what its ``config.toml`` says, and which memory root is active (no Qt).

* **The home** (:func:`codex_home`): ``$CODEX_HOME`` when set — it must name an
  existing folder (Codex refuses to start otherwise) and is used by its
  canonical path, symbolic links and ``..`` resolved — else ``$HOME/.codex``,
  used as written (a ``~/.codex`` that is a link is *not* resolved; a trailing
  slash on ``HOME`` makes no difference). The memory root's path is printed into
  the memory block, so it must be derived exactly so.
* **The configuration** (:class:`CodexConfig`): the keys of ``config.toml`` that
  decide the two blocks — ``[features] memories`` (off by default),
  ``[memories] use_memories`` (on by default), ``project_doc_max_bytes``
  (32,768), ``project_doc_fallback_filenames`` ([]), ``project_root_markers``
  ([".git"]). Per-run ``-c`` overrides, ``--enable`` and profiles chosen on the
  command line are not visible in files: the context says so.
* **The active memory root** (:class:`MemoryRoot`): when an entry named
  ``memories`` exists in the home — a folder, a file, a link, even an empty
  folder — Codex uses the V1 root ``memories/`` and its template; otherwise the
  V2 root ``memories_v2/`` (created by Codex at its next start when memory is on).
  So one ``mkdir memories`` turns a V2 home into a V1 home and hides its memory:
  keepgui never creates that name.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.pathmap import LOCAL, PathMap

V1, V2 = "v1", "v2"
ROOT_NAMES = {V1: "memories", V2: "memories_v2"}
"""The folder of each memory root in the home."""

DEFAULT_MAX_BYTES = 32_768
"""``project_doc_max_bytes`` when the configuration does not set it."""

DEFAULT_MARKERS = (".git",)
"""``project_root_markers`` when the configuration does not set it."""

CONFIG_NAME = "config.toml"
PROJECT_CONFIG = os.path.join(".codex", "config.toml")
"""A trusted session folder's own configuration layer."""
CONFIG_LIMIT = 4 * 1024 * 1024
"""A ``config.toml`` larger than this is not read (it is no configuration a person wrote)."""


@dataclass(frozen=True)
class CodexEnv:
    """The environment a Codex session runs in: ``home`` is its Codex home (``$CODEX_HOME``'s
    canonical path, or ``$HOME/.codex`` as written); ``problem`` says why Codex would not start
    ("" when it would); ``custom`` is True when ``$CODEX_HOME`` chose the home; ``user_home`` is
    ``$HOME``."""

    home: str
    user_home: str
    custom: bool = False
    problem: str = ""
    paths: PathMap = field(default=LOCAL, compare=False)
    """Where the absolute paths Codex's files name are read (another machine's, in a mirror)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> CodexEnv:
        """The Codex home of ``environ`` (this process's environment by default), as Codex finds it."""
        env = os.environ if environ is None else environ
        user_home = env.get("HOME") or os.path.expanduser("~")
        user_home = user_home.rstrip("/") or "/"
        given = env.get("CODEX_HOME")
        if given:
            if not os.path.isdir(given):
                return cls(
                    os.path.abspath(given),
                    user_home,
                    True,
                    f'CODEX_HOME points to "{given}", but that folder does not exist: Codex refuses to start',
                )
            return cls(os.path.realpath(given), user_home, True)
        return cls(os.path.join(user_home, ".codex"), user_home)

    @classmethod
    def for_home(cls, home: str, environ: Mapping[str, str] | None = None) -> CodexEnv:
        """The environment of sessions whose Codex home is the folder ``home``: ``$HOME/.codex`` when it
        is that, else what ``CODEX_HOME=home`` gives."""
        env = dict(os.environ if environ is None else environ)
        mine = CodexEnv.from_environ(env)
        home = os.path.abspath(home)
        if home == mine.home:
            return mine
        if os.path.basename(home) == ".codex":  # the home of sessions whose HOME is its parent
            return cls(home, os.path.dirname(home))
        env["CODEX_HOME"] = home
        return cls.from_environ(env)


@dataclass(frozen=True)
class CodexConfig:
    """What ``config.toml`` sets for the memory and AGENTS.md blocks (defaults where it sets nothing).

    ``features_memories`` is ``[features] memories``; ``use_memories`` ``[memories] use_memories``;
    ``problems`` say what could not be read (an unreadable file: Codex would not start);
    ``raw`` is the whole table as parsed (layers merged); ``project_layer`` the trusted session
    folder's ``.codex/config.toml`` laid over the home's, or "".
    """

    path: str
    exists: bool = False
    features_memories: bool = False
    use_memories: bool = True
    generate_memories: bool | None = None
    dedicated_tools: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    fallback_names: tuple[str, ...] = ()
    root_markers: tuple[str, ...] = DEFAULT_MARKERS
    profile: str = ""
    problems: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)
    project_layer: str = ""

    @property
    def memory_on(self) -> bool:
        """True when a session injects the memory block (given a summary to inject)."""
        return self.features_memories and self.use_memories

    @property
    def why_off(self) -> str:
        """Why the memory block is not injected ("" when memory is on)."""
        if not self.features_memories:
            where = f"{self.path} sets [features] memories = false" if self._set_false() else "it is off by default"
            return (
                f"memory is off: [features] memories is not true ({where}); "
                f"add `[features]` `memories = true` to {self.path} to turn it on"
            )
        if not self.use_memories:
            return f"memory is off: {self.path} sets [memories] use_memories = false"
        return ""

    def _set_false(self) -> bool:
        features = self.raw.get("features")
        return isinstance(features, dict) and features.get("memories") is False


def _bool(table: Any, key: str, default: bool | None, path: str, problems: list[str]) -> bool | None:
    if not isinstance(table, dict) or key not in table:
        return default
    value = table[key]
    if isinstance(value, bool):
        return value
    problems.append(f"{path}: `{key}` is {value!r}, not true or false: Codex would refuse the file")
    return default


def _names(value: Any, key: str, default: tuple[str, ...], path: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return default
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    problems.append(f"{path}: `{key}` is not a list of names: Codex would refuse the file")
    return default


def _load_toml(path: str) -> tuple[dict[str, Any] | None, str]:
    """``(table, problem)``: the parsed file (None when missing or unusable) and why it is unusable."""
    try:
        data, _stamp = fsio.read_stamped(path, limit=CONFIG_LIMIT)
    except (OSError, KeepguiError) as exc:
        return None, f"{path}: cannot be read ({exc}): Codex would not start"
    if data is None:
        return None, ""
    try:
        return tomllib.loads(data.decode("utf-8")), ""
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return None, f"{path}: not valid TOML ({exc}): Codex would refuse to start; fix the file"


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid over ``base``, table by table (a later layer's key wins)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def trusted(raw: Mapping[str, Any], folder: str) -> bool:
    """True when the user configuration marks ``folder`` (exactly) ``trust_level = "trusted"``."""
    projects = raw.get("projects")
    entry = projects.get(folder) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def read_config(home: str, cwd: str | None = None, paths: PathMap = LOCAL) -> CodexConfig:
    """The configuration a session in ``cwd`` (resolved; None: any folder) runs with: the home's
    ``config.toml`` (the defaults when there is none), and over it ``<cwd>/.codex/config.toml`` when
    the home trusts ``cwd`` exactly (as the machine it runs on names it: ``paths``).

    Observed on 0.169.0 (not in the spec): a trusted session folder's own ``.codex/config.toml`` is a
    layer of the configuration — it can set the budget, the markers, even turn memory on — while the
    same file in an untrusted folder, in a parent of the session folder, or at a trusted project's root
    when the session starts below it, changes nothing.
    """
    path = os.path.join(home, CONFIG_NAME)
    raw, problem = _load_toml(path)
    if problem:
        return CodexConfig(path, True, problems=(problem,))
    exists = raw is not None
    raw = raw or {}
    problems: list[str] = []
    layer = ""
    if cwd is not None and trusted(raw, paths.shown(cwd)):
        local = os.path.join(cwd, PROJECT_CONFIG)
        over, problem = _load_toml(local)
        if problem:
            problems.append(problem)
        elif over is not None:
            raw, layer = _merged(raw, over), local
    if "profile" in raw:
        problems.append(
            f'{path}: a top-level `profile` is refused by Codex 0.169 ("legacy `profile` config is no longer '
            'supported"): Codex would not start; use `codex --profile NAME` with NAME.config.toml'
        )
    return _config_of(path, exists, raw, problems, layer)


def _config_of(path: str, exists: bool, raw: dict[str, Any], problems: list[str], layer: str) -> CodexConfig:
    memories = raw.get("memories")
    features_on = _bool(raw.get("features"), "memories", False, path, problems)
    use = _bool(memories, "use_memories", True, path, problems)
    generate = _bool(memories, "generate_memories", None, path, problems)
    tools = _bool(memories, "dedicated_tools", False, path, problems)
    max_bytes = raw.get("project_doc_max_bytes", DEFAULT_MAX_BYTES)
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        problems.append(f"{path}: project_doc_max_bytes is {max_bytes!r}, not a byte count: Codex would refuse it")
        max_bytes = DEFAULT_MAX_BYTES
    profile = raw.get("profile")
    return CodexConfig(
        path,
        exists,
        bool(features_on),
        bool(use),
        generate,
        bool(tools),
        max_bytes,
        _names(raw.get("project_doc_fallback_filenames"), "project_doc_fallback_filenames", (), path, problems),
        _names(raw.get("project_root_markers"), "project_root_markers", DEFAULT_MARKERS, path, problems),
        profile if isinstance(profile, str) else "",
        tuple(problems),
        raw,
        layer,
    )


@dataclass(frozen=True)
class MemoryRoot:
    """The active memory root of a home: ``version`` (``v1`` or ``v2``), its ``path`` as Codex prints
    it (the home plus ``/memories`` or ``/memories_v2``, never resolved), whether it ``exists``, and
    ``why`` it is the active one. ``other`` is the other root's path when it exists too (then unused)."""

    version: str
    path: str
    exists: bool
    why: str
    other: str | None = None

    @property
    def name(self) -> str:
        """``memories`` or ``memories_v2``."""
        return ROOT_NAMES[self.version]


def active_root(home: str) -> MemoryRoot:
    """Which memory root a session in ``home`` uses, and why (see the module docstring)."""
    v1 = os.path.join(home, ROOT_NAMES[V1])
    v2 = os.path.join(home, ROOT_NAMES[V2])
    if os.path.lexists(v1):
        if os.path.islink(v1):
            kind = "a link"
        elif os.path.isdir(v1):
            kind = "an empty folder" if not _has_entries(v1) else "a folder"
        else:
            kind = "a file, not a folder"
        why = f"the home has an entry named `memories` ({kind}): Codex uses the V1 root memories/"
        if os.path.isdir(v2):
            why += " and ignores memories_v2/"
        return MemoryRoot(V1, v1, os.path.isdir(v1), why, v2 if os.path.isdir(v2) else None)
    if os.path.isdir(v2):
        return MemoryRoot(V2, v2, True, "the home has memories_v2/ and no `memories` entry: the V2 root")
    return MemoryRoot(
        V2, v2, False, "neither root exists yet: Codex creates memories_v2/ at its next start with memory on"
    )


def _has_entries(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except OSError:
        return False
