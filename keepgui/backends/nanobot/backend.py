"""nanobot workspaces behind the source protocol (:mod:`keepgui.core.source`).

A workspace is a :class:`NanobotSource` with one bank, its keep.md
(:class:`KeepBank`): the rows are keep.md's entries, plus the entries keepgui
removed (kept in its own history) as retired rows that can be put back; the
documents are AGENTS.md and the Dream-managed USER.md, SOUL.md and MEMORY.md;
the preview is nanobot's system prompt; the plans are keep.md's compaction and
the review of a rewrite someone else made.

Undo is byte for byte: a change remembers keep.md's bytes before and after, and
taking it back writes the "before" bytes only if keep.md is still exactly what
the change left; if the agent (or anyone) changed it since, the undo is refused
and nothing is overwritten.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

from keepgui.backends.nanobot.activity import PROJECTS_DIR, ProjectMatcher, project_slugs
from keepgui.backends.nanobot.bank import KEEP_BANK, KeepBank
from keepgui.backends.nanobot.documents import DOCUMENT_FILES
from keepgui.backends.nanobot.keepmd import KeepDoc
from keepgui.backends.nanobot.workspace import KEEP_MD, Workspace, default_config_path, default_workspace_path
from keepgui.backends.nanobot.writes import (
    KeepStore,
)
from keepgui.core.errors import NotFound
from keepgui.core.history import History
from keepgui.core.paths import short_path
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import (
    CREATE_BANK,
    TRASH_BANK,
    Capabilities,
    Listing,
    SourceDefaults,
    WatchPlan,
)

KIND = "nanobot"
"""The one bank of a workspace: its keep.md."""

SOURCE_CAPABILITIES = Capabilities(
    missing={
        CREATE_BANK: "a nanobot workspace has one keep.md; it has no banks to create",
        TRASH_BANK: "a nanobot workspace's keep.md is not a bank that can be trashed",
    }
)


class NanobotSource(SourceDefaults):
    """An open nanobot workspace: keep.md as its one bank, the documents, keepgui's history
    (no banks to create or trash, no settings: SourceDefaults refuses those)."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = None

    def __init__(self, path: str, options: OpenOptions | None = None) -> None:
        self.path = os.path.abspath(path)
        environ = options.environ if options is not None else None
        # nanobot's config folder (its session files) as the given environment names it; None: looked up when read
        self.workspace = Workspace(self.path, None if environ is None else default_config_path(environ))
        self.history = History()
        self.store = KeepStore(self.workspace, self.history)
        self.lock = threading.RLock()
        self.keep = KeepBank(self)
        self._projects = ProjectMatcher()

    @property
    def label(self) -> str:
        """How the sidebar names the source."""
        return f"nanobot · {short_path(self.path)}"

    @property
    def doc(self) -> KeepDoc | None:
        """keep.md as last read."""
        return self.keep.doc

    def scan(self) -> Listing:
        """One bank, keep.md, and no trash."""
        return Listing((KEEP_BANK,), None)

    def bank(self, name: str) -> KeepBank:
        """keep.md (the only bank)."""
        if name != KEEP_BANK:
            raise NotFound(f"a nanobot workspace has no bank `{name}`; its one bank is {KEEP_BANK}")
        return self.keep

    def projects(self) -> ProjectMatcher:
        """The workspace's projects, as its ``projects/`` folder holds them now."""
        slugs = project_slugs(self.path)
        if slugs != self._projects.slugs:
            self._projects = ProjectMatcher.of(slugs)
        return self._projects

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """keep.md to re-read (also when a project folder came or went: the projects its entries
        name), documents that changed, and MEMORY.md rewrites to review."""
        touched = {"/".join(parts) for parts in changed if parts}
        if any(len(parts) <= 2 and parts[0] == PROJECTS_DIR for parts in changed if parts):
            touched.add(KEEP_MD)
        names = sorted(DOCUMENT_FILES[t] for t in touched if t in DOCUMENT_FILES)
        documents = {KEEP_BANK: frozenset(names)} if names else {}
        reviews = {KEEP_BANK: ("MEMORY.md",)} if "MEMORY.md" in names else {}
        rels = sorted(t for t in touched if t in DOCUMENT_FILES)
        notes = (f"{', '.join(rels)} changed on disk",) if rels else ()
        return WatchPlan(
            False, frozenset({KEEP_BANK}) if KEEP_MD in touched else frozenset(), documents, reviews, notes
        )


# ---------------------------------------------------------------------- the registry's entry


def identify(path: str) -> Verdict:
    """A workspace has nanobot's memory folder (``memory/MEMORY.md`` or ``memory/history.jsonl``) or a keep.md."""
    what = "a nanobot workspace"
    workspace = Workspace(path)
    if workspace.is_workspace():
        return Verdict(KIND, what, "it has nanobot's memory folder (memory/MEMORY.md or memory/history.jsonl)")
    if os.path.isfile(os.path.join(path, KEEP_MD)):
        return Verdict(KIND, what, "it has a keep.md")
    return Verdict(None, what, "no memory/MEMORY.md, memory/history.jsonl or keep.md")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """nanobot's default workspace (``~/.nanobot/workspace``), where it exists."""
    path = default_workspace_path(environ)
    return [Found(KIND, os.path.abspath(path), "nanobot's default workspace")] if os.path.isdir(path) else []


def home(environ: Mapping[str, str]) -> str:
    """The workspace ``--agent nanobot`` opens: the one nanobot would use (its config.json, else
    ``~/.nanobot/workspace``)."""
    from keepgui.backends.nanobot.workspace import discover_workspace

    return discover_workspace(environ=environ)
