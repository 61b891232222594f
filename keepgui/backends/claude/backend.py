"""Claude Code behind the source protocol (:mod:`keepgui.core.source`): a home or a project folder as a source.

A :class:`ClaudeSource` is opened on one of two kinds of folder:

* a **Claude Code home** — a config folder (``~/.claude``, or the one
  ``$CLAUDE_CONFIG_DIR`` names): its banks are the projects under
  ``projects/`` that have a memory folder. A folder named ``.claude`` is the
  config folder of the HOME it sits in (sessions then read that HOME's
  ``.claude.json``); any other is used as ``CLAUDE_CONFIG_DIR`` would be;
* a **project folder** (what "Open Claude Code project folder…" opens): its one
  bank is the memory folder a session launched there uses, found as the CLI
  finds it (the git root, ``autoMemoryDirectory``...) in this process's
  environment. That folder lives under the config folder, outside the project,
  so the source names it in ``also_watched``.

The banks are :class:`~keepgui.backends.claude.bank.ClaudeProject`\\ s. The
source says what changed files mean (:meth:`ClaudeSource.classify`): a file of
a memory folder re-reads that project (the load asks for a review when the
agent changed the folder), an instruction file reloads the documents that are
it, a new project folder re-lists the projects. Session transcripts are read
only for the ``cwd`` that maps a folder back to its project, at most once per
folder while the source is open.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping, Sequence

from keepgui.backends.claude.bank import ClaudeProject, discover_homes, project_path_for, short, transcript_cwds
from keepgui.backends.claude.demo import place_demo
from keepgui.backends.claude.layout import ClaudeEnv, memory_location
from keepgui.backends.claude.memory import INDEX_NAME, TEAM_DIR
from keepgui.core import fsio
from keepgui.core.errors import NotFound
from keepgui.core.history import History
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import CREATE_BANK, TRASH_BANK, Capabilities, Listing, SourceDefaults, WatchPlan

KIND = "claude"

SOURCE_CAPABILITIES = Capabilities(
    missing={
        CREATE_BANK: "a project's memory folder is made by Claude Code when a session starts there",
        TRASH_BANK: "keepgui does not delete Claude Code's project folders",
    }
)

_SANITIZED = re.compile(r"^(-|[A-Za-z]--)")
"""How a folder under ``projects/`` starts: a sanitized absolute path (``-home-…``, ``C--Users-…``)."""

HOME_MARKERS = ("history.jsonl", ".credentials.json")
"""Files only a Claude Code config folder has (a project's ``.claude/`` has settings and rules too)."""


def home_env(config_dir: str, environ: Mapping[str, str] | None = None) -> ClaudeEnv:
    """The environment of sessions that use ``config_dir`` as their config folder (see the module docstring)."""
    values = dict(os.environ if environ is None else environ)
    config = os.path.abspath(config_dir)
    if os.path.basename(config) == ".claude":
        values["HOME"] = os.path.dirname(config)
        values.pop("CLAUDE_CONFIG_DIR", None)
    else:
        values["CLAUDE_CONFIG_DIR"] = config
    return ClaudeEnv.from_environ(values)


def home_evidence(path: str, environ: Mapping[str, str] | None = None) -> str:
    """Why ``path`` is a Claude Code config folder ("" when it is not one)."""
    path = os.path.abspath(path)
    if path in {env.config_dir for env in discover_homes(environ)}:
        return "it is this account's Claude Code config folder"
    projects = os.path.join(path, "projects")
    try:
        names = [n for n in os.listdir(projects) if _SANITIZED.match(n) and os.path.isdir(os.path.join(projects, n))]
    except OSError:
        names = []
    if names:
        memories = sum(1 for n in names if os.path.isdir(os.path.join(projects, n, "memory")))
        return f"its projects/ folder holds {len(names)} Claude Code project folders ({memories} with memory)"
    marker = next((m for m in HOME_MARKERS if os.path.isfile(os.path.join(path, m))), None)
    return f"it has Claude Code's {marker}" if marker else ""


def project_evidence(path: str, env: ClaudeEnv) -> str:
    """Why ``path`` is a project Claude Code works in ("" when nothing says so)."""
    for name in ("CLAUDE.md", "CLAUDE.local.md", os.path.join(".claude", "CLAUDE.md")):
        if os.path.isfile(os.path.join(path, name)):
            return f"it has a {name}"
    if os.path.isdir(os.path.join(path, ".claude", "rules")):
        return "it has .claude/rules/"
    location = memory_location(env, os.path.realpath(path))
    if os.path.isdir(location.path):
        return f"Claude Code keeps memory for it in {short(location.path, env.home)}"
    return ""


class ClaudeSource(SourceDefaults):
    """A Claude Code home or project folder (see the module docstring); banks cannot be created or trashed."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = None

    def __init__(
        self,
        path: str,
        options: OpenOptions | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        env: ClaudeEnv | None = None,
        history: History | None = None,
    ) -> None:
        """Open ``path`` in ``environ`` (this process's by default); ``env`` gives the sessions'
        environment outright (tests: a managed folder of their own), ``history`` keepgui's history."""
        self.path = os.path.abspath(path)
        self.history = history or History()
        self.lock = threading.RLock()
        self._banks: dict[str, ClaudeProject] = {}
        self._cwds: dict[str, list[str]] = {}
        self.is_home = bool(home_evidence(self.path, environ)) or (env is not None and env.config_dir == self.path)
        if self.is_home:
            self.env = env or home_env(self.path, environ)
            self.label = f"Claude Code · {short(self.path, self.env.home)}"
            self.project: str | None = None
            self.memory_dir = ""
            self.project_bank = ""
        else:
            self.env = env or ClaudeEnv.from_environ(environ)
            self.project = os.path.realpath(self.path)
            location = memory_location(self.env, self.project)
            self.memory_dir = location.path
            in_projects = os.path.dirname(os.path.dirname(location.path)) == self.env.projects_dir
            self.project_bank = os.path.basename(os.path.dirname(location.path)) if in_projects else "memory"
            self.label = f"Claude Code · {short(self.path, self.env.home)}"

    @property
    def also_watched(self) -> tuple[str, ...]:
        """A project folder's memory folder (under the config folder); a home watches only itself."""
        return () if self.is_home else (self.memory_dir,)

    def _cwds_of(self, folder: str) -> list[str]:
        name = os.path.basename(folder)
        if name not in self._cwds:
            self._cwds[name] = transcript_cwds(folder)
        return self._cwds[name]

    def project_of(self, name: str) -> str | None:
        """The project folder of ``projects/<name>`` (read from transcripts once; None when unknown)."""
        return project_path_for(self.env, name, self._cwds_of)

    def scan(self) -> Listing:
        """The projects with a memory folder (a home), or the one project (a project folder); no trash."""
        if not self.is_home:
            return Listing((self.project_bank,), None)
        try:
            names = os.listdir(self.env.projects_dir)
        except OSError:
            names = []
        return Listing(
            tuple(sorted(n for n in names if os.path.isdir(os.path.join(self.env.projects_dir, n, "memory"))))
        )

    def bank(self, name: str) -> ClaudeProject:
        """The memory of one project (the same object for the same name while the source is open)."""
        made = self._banks.get(name)  # without the lock, which a load holds for seconds: the GUI thread asks
        if made is not None:
            return made
        with self.lock:
            bank = self._banks.get(name)
            if bank is not None:
                return bank
            if not self.is_home:
                if name != self.project_bank:
                    raise NotFound(f"{self.path} has one memory folder, {self.project_bank}, not `{name}`")
                bank = ClaudeProject(self, name, self.memory_dir, self.project)
            else:
                folder = os.path.join(self.env.projects_dir, name, "memory")
                if os.sep in name or not os.path.isdir(folder):
                    raise NotFound(f"{folder}: no such memory folder")
                # which project it is, read from transcripts on its first load (off the GUI thread)
                bank = ClaudeProject(self, name, folder, None)
                bank.resolve_project = lambda n=name: self.project_of(n)
            self._banks[name] = bank
            return bank

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """Which projects to re-read (a file of their memory folder changed), which of their documents
        changed, and whether the projects must be listed again (a memory folder appeared or went)."""
        paths = [os.path.normpath(os.path.join(self.path, *parts)) for parts in changed]
        refresh: set[str] = set()
        documents: dict[str, set[str]] = {}
        rescan = False
        projects = self.env.projects_dir.rstrip(os.sep) + os.sep
        with self.lock:
            banks = dict(self._banks)
        for path in paths:
            if fsio.is_temp_name(os.path.basename(path)):
                continue
            if self.is_home and path.startswith(projects):
                parts = path[len(projects) :].split(os.sep)
                if len(parts) < 2 or parts[1] != "memory":
                    # a project folder came or went; its transcripts and session folders are not memory
                    rescan = rescan or len(parts) == 1
                    continue
                if len(parts) == 2:
                    rescan = True  # its memory folder came or went
                    continue
                if parts[0] not in listed:
                    rescan = True
                    continue
                if parts[2] == TEAM_DIR:
                    continue  # team memory is synced by the server and not shown
                refresh.add(parts[0])
                if parts[-1] == INDEX_NAME and len(parts) == 3:
                    documents.setdefault(parts[0], set()).add(path)
                continue
            memory = self.memory_dir.rstrip(os.sep) + os.sep
            if not self.is_home and (path == self.memory_dir or path.startswith(memory)):
                rel = path[len(memory) :].split(os.sep) if path != self.memory_dir else []
                if not rel or rel[0] != TEAM_DIR:
                    refresh.add(self.project_bank)
                if rel == [INDEX_NAME]:
                    documents.setdefault(self.project_bank, set()).add(path)
                continue
            for name, bank in banks.items():
                if bank.documents_cache is not None and path in {e.path for e in bank.documents_cache}:
                    documents.setdefault(name, set()).add(path)
        return WatchPlan(
            rescan,
            frozenset(n for n in refresh if n in listed),
            {name: frozenset(docs) for name, docs in documents.items() if name in listed},
        )


# ---------------------------------------------------------------------- the registry's entry


def open_source(path: str, options: OpenOptions) -> ClaudeSource:
    """Open a Claude Code home or project folder (in ``options.environ``, this process's by default)."""
    return ClaudeSource(path, options, options.environ)


def identify(path: str, environ: Mapping[str, str] | None = None) -> Verdict:
    """A Claude Code config folder (its ``projects/`` of sanitized folders, or this account's own), or a
    project Claude Code works in (a ``CLAUDE.md``, ``.claude/rules/``, or memory kept for it)."""
    home = home_evidence(path, environ)
    if home:
        return Verdict(KIND, "a Claude Code home", home)
    if os.path.basename(os.path.abspath(path)) == ".claude":
        return Verdict(None, "a Claude Code project", f"{path} is a project's .claude folder: open the project folder")
    why = project_evidence(path, ClaudeEnv.from_environ(environ))
    if why:
        return Verdict(KIND, "a Claude Code project", why)
    return Verdict(None, "a Claude Code project or home", "no CLAUDE.md, .claude/rules/ or Claude Code memory for it")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """Claude Code's config folders on this machine: ``$CLAUDE_CONFIG_DIR`` and ``~/.claude``, where they exist."""
    out = []
    for env in discover_homes(environ):
        why = "$CLAUDE_CONFIG_DIR" if env.custom_config else "Claude Code's config folder"
        out.append(Found(KIND, env.config_dir, why))
    return out


def prepare_demo(folder: str, shift_ms: int, edited_ns: int) -> dict[str, str]:
    """Place the demo's home and project (see :mod:`.demo`); the source to open is the home's config folder."""
    home, project = place_demo(folder, edited_ns)
    if not home:
        return {}
    return {"source": os.path.join(home, ".claude"), "claude_home": home, "claude_project": project}


def home(environ: Mapping[str, str]) -> str:
    """The config folder ``--agent claude --bank NAME`` opens: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return ClaudeEnv.from_environ(environ).config_dir
