"""OpenAI Codex behind the source protocol (:mod:`keepgui.core.source`), and its registry entry.

A :class:`CodexSource` is opened on one of two kinds of folder:

* a **Codex home** (``~/.codex``, or the folder ``$CODEX_HOME`` names): its banks
  are ``memory`` (the memory with the global ``AGENTS.md`` alone) and one bank
  per folder Codex sessions recently started in (read from the first line of its
  session logs, ``sessions/YYYY/MM/DD/rollout-*.jsonl``, the newest first), each
  with that folder's ``AGENTS.md`` chain and exact context;
* a **project folder** (one with an ``AGENTS.md``): one bank, the memory of the
  home this process's environment names (``CODEX_HOME`` or ``~/.codex``) seen
  from that folder; the home lies outside the folder, so the source names it in
  ``also_watched``.

:meth:`CodexSource.classify` says what changed files mean: a file of the memory
roots or ``config.toml`` re-reads every bank (they share the memory), an
``AGENTS.md`` reloads the documents that are it, a new session log re-lists the
projects. Codex's busy files (databases, logs, locks, shell snapshots) mean
nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence

from keepgui.backends.codex.bank import HOME_BANK, CodexBank
from keepgui.backends.codex.demo import place_demo
from keepgui.backends.codex.instructions import GLOBAL_NAMES
from keepgui.backends.codex.layout import CONFIG_NAME, PROJECT_CONFIG, ROOT_NAMES, CodexEnv, read_config
from keepgui.core import fsio
from keepgui.core.errors import NotFound
from keepgui.core.history import History
from keepgui.core.pathmap import LOCAL, PathMap
from keepgui.core.paths import short_path
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import CREATE_BANK, TRASH_BANK, Capabilities, Listing, SourceDefaults, WatchPlan

KIND = "codex"

SOURCE_CAPABILITIES = Capabilities(
    missing={
        CREATE_BANK: "a project appears here once a Codex session has started in it (or open its folder)",
        TRASH_BANK: "keepgui does not delete Codex's memory or its projects",
    }
)

SESSIONS_DIR = "sessions"
PROJECTS_SHOWN = 8
"""A home lists at most this many recent project folders as banks."""
SESSIONS_READ = 200
"""At most this many of the newest session logs are read for their folder."""
HEAD_READ = 256 * 1024
"""At most this much of a session log's first line is read."""

HOME_MARKERS = ("installation_id", "memories_v2", "memories", "sessions", "memories_1.sqlite")
"""Entries only a Codex home has (a project has AGENTS.md and perhaps a .codex/ of its own, not these)."""


def home_evidence(path: str, environ: Mapping[str, str] | None = None) -> str:
    """Why ``path`` is a Codex home ("" when it is not one)."""
    path = os.path.abspath(path)
    if path in {f.path for f in discover(os.environ if environ is None else environ)}:
        return "it is this account's Codex home"
    for marker in HOME_MARKERS:
        if os.path.lexists(os.path.join(path, marker)):
            return f"it has Codex's {marker}"
    config = os.path.join(path, CONFIG_NAME)
    if os.path.basename(path) == ".codex" and os.path.isfile(config):
        return "it is a .codex folder with a config.toml"
    return ""


def _cwd_of(log: str) -> str | None:
    """The ``cwd`` a session log's first line (its ``session_meta``) records."""
    try:
        fd = os.open(log, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        head = os.read(fd, HEAD_READ)
    except OSError:
        return None
    finally:
        os.close(fd)
    line = head.split(b"\n", 1)[0]
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    payload = obj.get("payload") if isinstance(obj, dict) else None
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None


def session_logs(home: str) -> list[str]:
    """The session logs of a home, newest first (their names begin with the time)."""
    out: list[str] = []
    top = os.path.join(home, SESSIONS_DIR)
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d.isdigit()]
        out.extend(os.path.join(folder, f) for f in files if f.startswith("rollout-") and f.endswith(".jsonl"))
    out.sort(key=os.path.basename, reverse=True)
    return out


def bring(home: str, paths: PathMap) -> Callable[[str], str]:
    """Where a session folder (as Codex names it) is read, its project's files brought here (through
    ``paths``: on another machine, those Codex reads — the AGENTS.md chain, the fallback names, a
    trusted folder's ``.codex/config.toml`` — and the root markers)."""
    if paths is LOCAL:
        return paths.local
    config = read_config(home, paths=paths)
    names = (*GLOBAL_NAMES, *config.fallback_names, os.path.basename(PROJECT_CONFIG))
    return lambda cwd: paths.include(cwd, names, config.root_markers)


def recent_projects(home: str, limit: int = PROJECTS_SHOWN, paths: PathMap = LOCAL) -> list[str]:
    """The folders sessions of ``home`` started in, newest first: existing ones, outside the home. They are
    named as the machine Codex runs on names them; ``paths`` brings each here (with its project's files
    Codex reads: the AGENTS.md chain and a trusted folder's ``.codex/config.toml``)."""
    found: list[str] = []
    home_prefix = paths.shown(os.path.realpath(home)) + os.sep
    brought = bring(home, paths)
    for log in session_logs(home)[:SESSIONS_READ]:
        cwd = _cwd_of(log)
        if cwd is None or cwd in found or (cwd + os.sep).startswith(home_prefix):
            continue  # Codex's own consolidation runs in its memory root
        here = brought(cwd)
        if not os.path.isdir(here):
            continue
        if (paths.shown(os.path.realpath(here)) + os.sep).startswith(home_prefix):
            continue
        found.append(cwd)
        if len(found) >= limit:
            break
    return found


class CodexSource(SourceDefaults):
    """A Codex home or project folder (see the module docstring); banks cannot be created or trashed."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = None

    def __init__(
        self,
        path: str,
        options: OpenOptions | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        env: CodexEnv | None = None,
        history: History | None = None,
    ) -> None:
        """Open ``path`` in ``environ`` (this process's by default); ``env`` gives the sessions' environment
        outright, ``history`` keepgui's history."""
        self.path = os.path.abspath(path)
        self.history = history or History()
        self.paths = (options or OpenOptions()).paths
        self.lock = threading.RLock()
        self._banks: dict[str, CodexBank] = {}
        self._logs: set[str] = set()
        self.is_home = bool(home_evidence(self.path, environ)) or (env is not None and env.home == self.path)
        if self.is_home:
            self.env = env or CodexEnv.for_home(self.path, environ)
            self.project: str | None = None
            self.review_bank = HOME_BANK
            self.env = dataclasses.replace(self.env, paths=self.paths)
        else:
            self.env = env or CodexEnv.from_environ(environ)
            if self.paths.shown(self.env.home) != self.env.home:  # the home is read through the map too (a copy)
                self.env = dataclasses.replace(self.env, paths=self.paths)
            self.project = os.path.realpath(self.path)
            self.review_bank = os.path.basename(self.project) or self.project
        self.label = f"Codex · {short_path(self.path)}"

    @property
    def also_watched(self) -> tuple[str, ...]:
        """A project folder's Codex home (its memory); a home watches only itself."""
        return () if self.is_home else (self.env.home,)

    def scan(self) -> Listing:
        """``memory`` and the recent project folders (a home), or the one project (a project folder); of a
        home, ``memory`` is the bank a command that names none means (``own``)."""
        if not self.is_home:
            return Listing((self.review_bank,), None)
        with self.lock:
            self._logs = set(session_logs(self.env.home)[:SESSIONS_READ])
        projects = recent_projects(self.env.home, paths=self.paths)
        return Listing((HOME_BANK, *projects), own=HOME_BANK)

    def bank(self, name: str) -> CodexBank:
        """One bank (the same object for the same name while the source is open)."""
        made = self._banks.get(name)  # without the lock, which a load holds for seconds: the GUI thread asks
        if made is not None:
            return made
        with self.lock:
            bank = self._banks.get(name)
            if bank is not None:
                return bank
            if not self.is_home:
                if name != self.review_bank:
                    raise NotFound(f"{self.path} has one bank, {self.review_bank}, not `{name}`")
                bank = CodexBank(self, name, self.project)
            elif name == HOME_BANK:
                bank = CodexBank(self, name, None)
            else:
                here = bring(self.env.home, self.paths)(name) if os.path.isabs(name) else name
                if not os.path.isabs(name) or not os.path.isdir(here):
                    raise NotFound(f"{name}: no such project folder")
                bank = CodexBank(self, name, here)
            self._banks[name] = bank
            return bank

    def _home_path(self, parts: tuple[str, ...]) -> tuple[str, ...] | None:
        """The parts of a changed path relative to the home (None when it is not in it)."""
        path = os.path.normpath(os.path.join(self.path, *parts))
        home = os.path.normpath(self.env.home)
        if path == home:
            return ()
        if path.startswith(home + os.sep):
            return tuple(path[len(home) + 1 :].split(os.sep))
        return None

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """What changed files mean (see the module docstring)."""
        refresh = False
        rescan = False
        documents: set[str] = set()
        with self.lock:
            banks = dict(self._banks)
            logs = set(self._logs)
        for parts in changed:
            name = parts[-1] if parts else ""
            if fsio.is_temp_name(name):
                continue
            path = os.path.normpath(os.path.join(self.path, *parts))
            rel = self._home_path(parts)
            if rel is not None and rel:
                top = rel[0]
                if top in ROOT_NAMES.values() or top == CONFIG_NAME:
                    refresh = True
                    documents.add(path)
                elif top in GLOBAL_NAMES:
                    documents.add(path)
                elif top == SESSIONS_DIR and self.is_home and name.endswith(".jsonl") and path not in logs:
                    rescan = True
                continue
            if name in GLOBAL_NAMES or name.endswith(".md"):
                documents.add(path)
        docs = {n: frozenset(documents) for n in listed if n in banks and documents}
        if refresh:
            for bank in banks.values():
                bank.forget_state()
        return WatchPlan(rescan, frozenset(n for n in listed if n in banks) if refresh else frozenset(), docs)


# ---------------------------------------------------------------------- the registry's entry


def open_source(path: str, options: OpenOptions) -> CodexSource:
    """Open a Codex home or project folder (in ``options.environ``, this process's by default)."""
    return CodexSource(path, options, options.environ)


def identify(path: str, environ: Mapping[str, str] | None = None) -> Verdict:
    """A Codex home (Codex's own files in it, or this account's home), or a folder with an AGENTS.md."""
    home = home_evidence(path, environ)
    if home:
        return Verdict(KIND, "a Codex home", home)
    for name in GLOBAL_NAMES:
        if os.path.isfile(os.path.join(path, name)):
            return Verdict(KIND, "a Codex project", f"it has an {name}")
    return Verdict(None, "a Codex home or project", "no Codex memory files and no AGENTS.md")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """Codex's homes on this machine: ``$CODEX_HOME`` and ``~/.codex``, where they exist."""
    out: list[Found] = []
    env = CodexEnv.from_environ(environ)
    if env.custom and not env.problem:
        out.append(Found(KIND, env.home, "$CODEX_HOME"))
    plain = CodexEnv.from_environ({k: v for k, v in environ.items() if k != "CODEX_HOME"})
    if os.path.isdir(plain.home) and all(f.path != plain.home for f in out):
        out.append(Found(KIND, plain.home, "Codex's home"))
    return out


def prepare_demo(folder: str, shift_ms: int, edited_ns: int) -> dict[str, str]:
    """Place the demo's home and project (see :mod:`.demo`); the source to open is the home."""
    home, project = place_demo(folder, shift_ms)
    if not home:
        return {}
    return {"source": home, "codex_home": home, "codex_project": project}


def home(environ: Mapping[str, str]) -> str:
    """The home ``--agent codex`` opens: ``$CODEX_HOME`` (as Codex resolves it), else ``~/.codex``."""
    return CodexEnv.from_environ(environ).home
