"""Gemini CLI behind the source protocol (:mod:`keepgui.core.source`), and its registry entry.

A :class:`GeminiSource` is opened on one of two kinds of folder:

* a **Gemini dir** (``~/.gemini``, or ``$GEMINI_CLI_HOME/.gemini``): its banks are the launch folders
  ``projects.json`` maps (and those a ``.project_root`` marker still names), each named by its slug;
  with none, the home folder itself (what a session started there would load);
* a **launch folder** (what "Open Gemini CLI project folder…" opens): its one bank is what a session
  started there would load, in this process's environment (``HOME``, ``GEMINI_CLI_HOME``), its private
  folder found — or, for a folder Gemini has not seen, predicted — without writing anything. Gemini's
  folder lives outside the project, so the source names it in ``also_watched``.

The banks are :class:`~keepgui.backends.gemini.bank.GeminiBank`\\ s; the registry entry is
``keepgui.backends.gemini.BACKEND``. :meth:`GeminiSource.approvals` is the
Auto Memory inbox of every bank (:mod:`keepgui.core.approvals`). :meth:`GeminiSource.classify` ignores
what Gemini writes for itself (transcripts, ``projects.json`` temp files, history) and re-reads a bank
when one of its memory files, documents, settings or inbox changed.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping, Sequence

from keepgui.backends.gemini import inbox as inbox_module
from keepgui.backends.gemini.bank import GeminiBank
from keepgui.backends.gemini.demo import place_demo
from keepgui.backends.gemini.layout import (
    DEFAULT_NAME,
    GEMINI_DIR,
    PROJECT_ROOT_FILE,
    GeminiEnv,
    load_settings,
    read_projects,
    resolve_private,
)
from keepgui.core import fsio
from keepgui.core.approvals import PendingWrite
from keepgui.core.defaults import SourceDefaults
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.history import History
from keepgui.core.pathmap import LOCAL
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import CREATE_BANK, TRASH_BANK, Capabilities, Change, Listing, WatchPlan

KIND = "gemini"

SOURCE_CAPABILITIES = Capabilities(
    missing={
        CREATE_BANK: "Gemini CLI makes a folder's private memory when a session starts there (or when you keep "
        "a fact for a folder: open it with Open Gemini CLI project folder…)",
        TRASH_BANK: "keepgui does not delete Gemini CLI's project folders",
    }
)

HOME_MARKERS = ("settings.json", "projects.json", "tmp", DEFAULT_NAME, "trustedFolders.json", "installation_id")
"""Entries of a Gemini dir (any one makes a ``.gemini`` folder a Gemini home)."""

IGNORED = ("chats", "logs", "checkpoints", "shell_history", "plans", "bin")
"""Folders and files of ``tmp/<slug>/`` that Gemini writes for itself (no memory in them)."""


def home_env(gemini_dir: str, environ: Mapping[str, str] | None = None) -> GeminiEnv:
    """The environment of sessions that use ``gemini_dir`` (a ``.gemini`` folder) as their Gemini dir."""
    values = dict(os.environ if environ is None else environ)
    values["GEMINI_CLI_HOME"] = os.path.dirname(os.path.abspath(gemini_dir))
    return GeminiEnv.from_environ(values)


def home_evidence(path: str) -> str:
    """Why ``path`` is a Gemini dir ("" when it is not one)."""
    if os.path.basename(os.path.abspath(path)) != GEMINI_DIR:
        return ""
    present = [m for m in HOME_MARKERS if os.path.exists(os.path.join(path, m))]
    return f"it is a .gemini folder with {', '.join(present)}" if present else ""


class GeminiSource(SourceDefaults):
    """A Gemini dir or a launch folder (see the module docstring); banks cannot be created or trashed."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = None

    def __init__(
        self,
        path: str,
        options: OpenOptions | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        history: History | None = None,
    ) -> None:
        """Open ``path`` in ``environ`` (this process's by default); ``history`` is keepgui's history."""
        self.path = os.path.abspath(path)
        self.history = history or History()
        self.lock = threading.RLock()
        self._banks: dict[str, GeminiBank] = {}
        self.is_home = bool(home_evidence(self.path))
        self.env = home_env(self.path, environ) if self.is_home else GeminiEnv.from_environ(environ)
        paths = (options or OpenOptions()).paths
        if self.is_home or (self.env.home and paths.shown(self.env.home) != self.env.home):
            # a Gemini dir's files name paths of its own machine (a launch folder's too when its home is
            # read through the same map: a copy of the machine's files)
            self.env = dataclasses.replace(self.env, paths=paths)
        where = self.path if not self.env.home else self.path.replace(self.env.home, "~", 1)
        self.label = f"Gemini CLI · {where}"

    @property
    def also_watched(self) -> tuple[str, ...]:
        """A launch folder's Gemini dir (global files, private memory, inbox); a home watches only itself."""
        return () if self.is_home else (self.env.gemini_dir,)

    def launch_folders(self) -> dict[str, str]:
        """``slug → launch folder`` of the banks (see the module docstring)."""
        if not self.is_home:
            return {resolve_private(self.env, self.path).slug: os.path.realpath(self.path)}
        projects = read_projects(self.env)
        out = {slug: launch for launch, slug in projects.mapping.items()}
        mapped = set(projects.mapping)
        for folder in _marked(self.env.tmp_dir):
            slug, launch = folder
            if launch not in mapped and slug not in out:
                out[slug] = launch
        if not out:
            return {resolve_private(self.env, self.env.home).slug: self.env.home}
        return {slug: self._bring(launch) for slug, launch in out.items()}

    def _bring(self, launch: str) -> str:
        """Where a launch folder ``projects.json`` or a marker names is read: on another machine, its
        project's files Gemini reads (its context files, any Markdown an import may name, workspace
        settings, ignore files) brought over first (through the source's PathMap)."""
        paths = self.env.paths
        if paths is LOCAL:
            return launch
        settings = load_settings(self.env, self.env.home, trusted=False)
        names = (*settings.names, "*.md", "settings.json", ".gitignore", ".geminiignore")
        return paths.include(launch, names, settings.boundary_markers)

    def scan(self) -> Listing:
        """The launch folders' banks (sorted by slug); no trash."""
        return Listing(tuple(sorted(self.launch_folders())))

    def bank(self, name: str) -> GeminiBank:
        """The memory of one launch folder (the same object for the same name while the source is open)."""
        made = self._banks.get(name)  # without the lock, which a load holds for seconds: the GUI thread asks
        if made is not None:
            return made
        with self.lock:
            bank = self._banks.get(name)
            if bank is not None:
                return bank
            folders = self.launch_folders()
            if name not in folders:
                raise NotFound(f"{self.path}: no Gemini CLI launch folder with the slug {name}")
            bank = self._banks[name] = GeminiBank(self, name, folders[name])
            return bank

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """Which banks to re-read and which of their documents changed (Gemini's own bookkeeping ignored)."""
        gd = self.env.gemini_dir.rstrip(os.sep) + os.sep
        rescan = False
        refresh: set[str] = set()
        documents: dict[str, set[str]] = {}
        with self.lock:
            banks = {n: b for n, b in self._banks.items() if n in listed}

        def hit(name: str, bank: GeminiBank, path: str) -> None:
            refresh.add(name)
            if path in {e.path for e in bank.documents_cache or ()}:
                documents.setdefault(name, set()).add(path)

        for parts in changed:
            path = os.path.normpath(os.path.join(self.path, *parts))
            base = os.path.basename(path)
            if fsio.is_temp_name(base) or base.endswith((".tmp", ".lock", ".patch-tmp", ".rollback")):
                continue
            if not path.startswith(gd):
                for name, bank in banks.items():
                    names = bank.discovery().settings.names if bank.found is not None else (DEFAULT_NAME,)
                    if base in names or base == "settings.json" or path in {e.path for e in bank.documents_cache or ()}:
                        hit(name, bank, path)
                continue
            inner = path[len(gd) :].split(os.sep)
            if inner[0] == "history" or (inner[0] == "tmp" and len(inner) > 2 and inner[2] in IGNORED):
                continue
            if inner[0] == "projects.json" or inner[-1] == PROJECT_ROOT_FILE:
                rescan = rescan or self.is_home
                continue
            if inner[0] == "tmp":
                folder = os.path.join(self.env.tmp_dir, inner[1]) if len(inner) > 1 else ""
                for name, bank in banks.items():
                    if bank.found is None or bank.discovery().private.folder == folder:
                        hit(name, bank, path)
                continue
            for name, bank in banks.items():  # global files, settings, extensions: every launch folder
                hit(name, bank, path)
        return WatchPlan(rescan, frozenset(refresh), {n: frozenset(d) for n, d in documents.items()})

    # ------------------------------------------------------------ the Auto Memory inbox

    def approvals(self) -> GeminiApprovals:
        """The Auto Memory inbox of every bank, as keepgui's approval queue."""
        return GeminiApprovals(self)


def _marked(tmp_dir: str) -> list[tuple[str, str]]:
    """``(slug, launch folder)`` of every ``tmp/<slug>/.project_root`` marker that can be read."""
    out: list[tuple[str, str]] = []
    try:
        names = sorted(os.listdir(tmp_dir))
    except OSError:
        return out
    for name in names:
        marker = os.path.join(tmp_dir, name, PROJECT_ROOT_FILE)
        try:
            with open(marker, "rb") as fh:
                launch = fh.read(64 * 1024).decode("utf-8", "replace").strip()
        except OSError:
            continue
        if launch:
            out.append((name, launch))
    return out


class GeminiApprovals:
    """The Auto Memory inboxes of a source's banks (:class:`keepgui.core.approvals.Approvals`); an id is
    ``<bank>:<kind>/<patch path>``."""

    def __init__(self, source: GeminiSource) -> None:
        self.source = source

    def _inbox(self, bank: GeminiBank) -> inbox_module.Inbox:
        return bank.inbox()

    def pending(self) -> list[PendingWrite]:
        """Every proposed patch of every bank, oldest first."""
        out: list[PendingWrite] = []
        for name in self.source.scan().names:
            bank = self.source.bank(name)
            inbox = self._inbox(bank)
            for proposal in inbox.proposals():
                item = inbox_module.pending_write(proposal, inbox, name)
                rel = os.path.relpath(item.target, self.source.path)
                out.append(
                    PendingWrite(
                        f"{name}:{item.id}",
                        rel,
                        item.summary,
                        item.before,
                        item.after,
                        item.created_ms,
                        name,
                        item.problem,
                    )
                )
        return sorted(out, key=lambda p: (p.created_ms or 0, p.id))

    def _split(self, ids: Sequence[str]) -> tuple[GeminiBank, list[str]]:
        banks = {i.partition(":")[0] for i in ids}
        if len(banks) != 1:
            raise InvalidInput("approve or reject the patches of one launch folder at a time")
        name = banks.pop()
        return self.source.bank(name), [i.partition(":")[2] for i in ids]

    def approve(self, ids: Sequence[str]) -> Change:
        """Apply the patches as Gemini applies them (one undoable change; refused while an extraction runs)."""
        bank, local = self._split(ids)
        inbox = self._inbox(bank)
        text = f"Approve {len(local)} Auto Memory patch{'es' if len(local) != 1 else ''}"
        return bank.write(lambda: inbox_module.guarded(inbox, lambda: inbox_module.approve(inbox, local, text)), text)

    def reject(self, ids: Sequence[str]) -> Change:
        """Dismiss the patches (undoable: the undo puts them back in the inbox)."""
        bank, local = self._split(ids)
        inbox = self._inbox(bank)
        text = f"Reject {len(local)} Auto Memory patch{'es' if len(local) != 1 else ''}"
        return bank.write(lambda: inbox_module.guarded(inbox, lambda: inbox_module.reject(inbox, local, text)), text)


# ---------------------------------------------------------------------- the registry's entry


def open_source(path: str, options: OpenOptions) -> GeminiSource:
    """Open a Gemini dir or a launch folder (in ``options.environ``, this process's by default)."""
    return GeminiSource(path, options, options.environ)


def project_evidence(path: str, environ: Mapping[str, str] | None = None) -> str:
    """Why ``path`` is a folder Gemini CLI works in ("" when nothing says so)."""
    if os.path.isfile(os.path.join(path, DEFAULT_NAME)):
        return f"it has a {DEFAULT_NAME}"
    if os.path.isfile(os.path.join(path, GEMINI_DIR, "settings.json")):
        return "it has Gemini CLI workspace settings (.gemini/settings.json)"
    env = GeminiEnv.from_environ(environ)
    private = resolve_private(env, path)
    if private.how != "new" and os.path.isdir(private.memory):
        return f"Gemini CLI keeps private memory for it ({private.slug})"
    return ""


def identify(path: str, environ: Mapping[str, str] | None = None) -> Verdict:
    """A Gemini dir (a ``.gemini`` folder with Gemini's files), or a folder Gemini CLI works in."""
    home = home_evidence(path)
    if home:
        return Verdict(KIND, "a Gemini CLI home", home)
    why = project_evidence(path, environ)
    if why:
        return Verdict(KIND, "a Gemini CLI project", why)
    return Verdict(
        None, "a Gemini CLI project or home", "no GEMINI.md, .gemini/settings.json or Gemini CLI memory for it"
    )


def discover(environ: Mapping[str, str]) -> list[Found]:
    """The Gemini dir of this environment (``$GEMINI_CLI_HOME`` or ``HOME``), when it exists."""
    env = GeminiEnv.from_environ(environ)
    if home_evidence(env.gemini_dir):
        why = "$GEMINI_CLI_HOME/.gemini" if environ.get("GEMINI_CLI_HOME") else "Gemini CLI's folder"
        return [Found(KIND, env.gemini_dir, why)]
    return []


def prepare_demo(folder: str, shift_ms: int, edited_ns: int) -> dict[str, str]:
    """Place the demo's home and project; the source to open is the home's ``.gemini`` folder."""
    home, project = place_demo(folder)
    return {"source": os.path.join(home, GEMINI_DIR), "gemini_home": home, "gemini_project": project}


def home(environ: Mapping[str, str]) -> str | None:
    """The Gemini dir ``--agent gemini`` opens: ``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``."""
    return GeminiEnv.from_environ(environ).gemini_dir
