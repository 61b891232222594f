"""The face of the Claude Code backend: a source (one config folder) whose banks are its projects.

Shaped like the seam's protocol (``keepgui.core.source``): a :class:`ClaudeSource`
lists :class:`ClaudeProject` banks (``scan``, ``bank``, ``open_project``); a
bank has rows (topic files, and index lines whose file is missing), documents
(the instruction files and ``MEMORY.md``), a preview (the exact reminder of
:mod:`.context`), :data:`CAPABILITIES` with the reason for each thing it
cannot do, and operations that return a :class:`~.writes.MemoryChange` that
can take itself back.

Which project a ``projects/<folder>`` belongs to is read from the ``cwd`` its
session transcripts record (read only, the first lines of the newest few
files), checked by sanitizing it again; a folder whose project cannot be
found still shows its memory, and its preview then says the instruction files
are unknown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from keepgui.core import fsio
from keepgui.core.claude import writes
from keepgui.core.claude.compact import FolderApplied, IndexPlan
from keepgui.core.claude.context import SessionContext, render_reminder, session_context
from keepgui.core.claude.instructions import AUTO_MEMORY, LABELS, MANAGED
from keepgui.core.claude.layout import ClaudeEnv, git_roots, memory_location, project_folder_name
from keepgui.core.claude.memory import (
    INDEX_NAME,
    MEMORY_TYPES,
    IndexEntry,
    MemoryFolder,
    Prepared,
    cut_index,
    read_folder,
)
from keepgui.core.claude.review import FolderReview, accept_current, remember, review
from keepgui.core.compaction import Selection
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.history import History

_Written = TypeVar("_Written")

TRANSCRIPT_READ = 256 * 1024
"""At most this much of a session transcript is read to find its ``cwd``."""

TRANSCRIPTS_TRIED = 5
"""At most this many transcripts (the newest) are read per project folder."""

CAPABILITIES = {
    "pin": "Claude Code memories have no pin: the first 200 lines of MEMORY.md load at the start of a "
    "session, the topic files when Claude reads them",
    "ranked": "Claude Code has no recall ranking keepgui can reproduce: Claude opens topic files itself",
    "query": "what a Claude Code session is given at its start does not depend on a question",
    "what-if": "the preview shows the files as they are saved",
    "create-bank": "a project's memory folder is made by Claude Code when a session starts there",
    "trash-bank": "keepgui does not delete Claude Code's project folders",
}
"""What a Claude Code project cannot do, with the reason a greyed control shows."""


def discover_homes(environ: Mapping[str, str] | None = None) -> list[ClaudeEnv]:
    """The Claude Code config folders of this environment that exist: ``$CLAUDE_CONFIG_DIR`` and ``~/.claude``."""
    environ = dict(os.environ if environ is None else environ)
    envs = [ClaudeEnv.from_environ(environ)]
    if environ.get("CLAUDE_CONFIG_DIR"):
        plain = dict(environ)
        plain.pop("CLAUDE_CONFIG_DIR")
        envs.append(ClaudeEnv.from_environ(plain))
    seen, out = set(), []
    for env in envs:
        if env.config_dir not in seen and os.path.isdir(env.config_dir):
            seen.add(env.config_dir)
            out.append(env)
    return out


def _transcript_cwds(folder: str) -> list[str]:
    """The ``cwd`` values recorded in a project folder's newest transcripts (bounded reads)."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".jsonl")]
    except OSError:
        return []
    names.sort(key=lambda n: _mtime(os.path.join(folder, n)), reverse=True)
    found: list[str] = []
    for name in names[:TRANSCRIPTS_TRIED]:
        chunk = _head(os.path.join(folder, name))
        for line in chunk.split(b"\n"):
            if b'"cwd"' not in line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            cwd = obj.get("cwd") if isinstance(obj, dict) else None
            if isinstance(cwd, str) and cwd not in found:
                found.append(cwd)
                break
    return found


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _head(path: str, limit: int = TRANSCRIPT_READ) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        if not os.path.isfile(path):
            return b""
        return os.read(fd, limit)
    finally:
        os.close(fd)


def project_path_for(env: ClaudeEnv, name: str) -> str | None:
    """The project a ``projects/<name>`` folder holds memory for, from session transcripts, or None.

    A recorded ``cwd`` counts when its canonical git root (or itself, outside
    git) sanitizes to ``name``; transcripts are filed by the launch folder, so
    the other folders' newest transcripts are tried too (a session started in
    ``repo/sub`` files its transcript under ``-…-repo-sub`` and its memory
    under ``-…-repo``).
    """
    own = _transcript_cwds(os.path.join(env.projects_dir, name))
    try:
        others = [n for n in os.listdir(env.projects_dir) if n != name]
    except OSError:
        others = []
    for cwd in own + [c for other in others for c in _transcript_cwds(os.path.join(env.projects_dir, other))[:1]]:
        if not os.path.isdir(cwd):
            continue
        roots = git_roots(cwd)
        for candidate in (roots.canonical, cwd):
            if candidate and project_folder_name(candidate) == name:
                return candidate
    return None


# ---------------------------------------------------------------------- rows


@dataclass(frozen=True)
class MemoryRow:
    """One row of the memory table: a topic file, or an index line whose file is missing (``dangling``).

    The fields follow the seam's ``Row``: ``id`` (the file's path in the
    folder, or ``index:<line>``), ``text`` (the description, else the body's
    first line), ``tags`` (the type), ``entities`` (``[[name]]`` links),
    ``position`` (the index line), ``updated_at`` (the file's time, ms),
    ``fields`` for the detail pane; ``loaded`` says whether its index line is
    in what the next session loads, ``orphan`` why it lines up with nothing.
    """

    id: str
    text: str
    name: str = ""
    kind: str = "memory"
    position: int | None = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    updated_at: int | None = None
    loaded: bool | None = None
    orphan: str = ""
    index_line: str = ""
    stamp: fsio.Stamp | None = None
    fields: tuple[tuple[str, str], ...] = ()
    pinned: bool = False
    invalid_at: int | None = None
    superseded_by: str | None = None
    corroboration: int | None = None
    confidence: str | None = None
    created_at: int | None = None
    revision: int | None = None
    source: str | None = None


def rows_of(folder: MemoryFolder) -> list[MemoryRow]:
    """The rows of a memory folder: every topic file, then every dangling index line."""
    by_target: dict[str, IndexEntry] = {}
    for indexed in folder.index.entries:
        by_target.setdefault(indexed.target, indexed)
    rows = []
    for topic in folder.topics:
        entry = by_target.get(topic.rel)
        first = next((line.strip() for line in topic.body.splitlines() if line.strip()), "")
        if entry is None:
            state, orphan = "not in the index: not visible at session start", "no index line points at this file"
        elif entry.partial:
            state, orphan = "only the start of its index line loads (cut)", ""
        elif entry.loaded:
            state, orphan = "its index line loads", ""
        else:
            state, orphan = "past the cut: Claude does not see its index line", ""
        fields: tuple[tuple[str, str], ...] = (
            ("file", topic.rel),
            ("name", topic.name),
            ("type", topic.type or "—"),
            ("index line", entry.text if entry is not None else "—"),
            ("at session start", state),
        )
        if topic.problem:
            fields += (("problem", topic.problem),)
        rows.append(
            MemoryRow(
                topic.rel,
                topic.description or first,
                topic.title,
                "memory",
                entry.line if entry is not None else None,
                (topic.type,) if topic.type else (),
                topic.links,
                topic.mtime_ms,
                entry is not None and entry.loaded,
                orphan,
                entry.text if entry is not None else "",
                topic.stamp,
                fields,
            )
        )
    for entry in folder.orphans.dangling:
        rows.append(
            MemoryRow(
                f"index:{entry.line}",
                f"{entry.title} — {entry.hook}".strip(" —"),
                entry.title,
                "dangling",
                entry.line,
                loaded=entry.loaded,
                orphan=f"{entry.target} does not exist",
                index_line=entry.text,
                fields=(("index line", entry.text), ("file", f"{entry.target} (missing)")),
            )
        )
    return rows


# ---------------------------------------------------------------------- documents


@dataclass(frozen=True)
class InstructionDocument:
    """A file of the documents editor: an instruction file or ``MEMORY.md``.

    ``read_only`` says why it cannot be saved ("" when it can); ``warning``
    what to know before saving (shared with the team, imported elsewhere...).
    """

    name: str
    title: str
    path: str
    text: str
    stamp: fsio.Stamp
    kind: str
    role: str
    loaded: bool
    read_only: str = ""
    warning: str = ""
    limit: str = ""


@dataclass(frozen=True)
class IndexBudget:
    """Where an edited ``MEMORY.md`` is cut: ``cut_char`` (offset in the edited text, None when all of
    it loads), the counts, and the sentence for the meter."""

    cut_char: int | None
    lines: int
    units: int
    sentence: str


def index_budget(text: str) -> IndexBudget:
    """The budget meter of ``MEMORY.md`` for an edited text (200 lines / 25,000 UTF-16 units)."""
    prepared = Prepared(text)
    if not prepared.text:
        return IndexBudget(None, 0, 0, "empty: nothing loads")
    cut = cut_index(prepared.text)
    if not cut.cut:
        return IndexBudget(
            None, cut.lines, cut.units, f"{cut.lines} / 200 lines · {cut.units:,} / 25,000 characters: all of it loads"
        )
    offset = len("\n".join(prepared.text.split("\n")[: cut.kept_lines]))
    if cut.partial:
        offset = len(prepared.text.split("\n")[0][: cut.kept_units])
    return IndexBudget(prepared.raw_offset(offset), cut.lines, cut.units, cut.warning[2:])


# ---------------------------------------------------------------------- the bank


@dataclass
class ClaudeProject:
    """One project's memory: the folder, and the project folder when known (for the exact preview)."""

    env: ClaudeEnv
    name: str
    memory_dir: str
    project: str | None = None
    history: History = field(default_factory=History)
    folder: MemoryFolder | None = None

    capabilities = CAPABILITIES

    # ------------------------------------------------------------ reading

    def load(self) -> list[MemoryRow]:
        """Read the folder (and keep its version in keepgui's history, for the review); the rows."""
        self.folder = read_folder(self.memory_dir)
        if self.folder.index.exists or self.folder.topics:
            remember(self.folder, self.history)
        return rows_of(self.folder)

    def rows(self) -> list[MemoryRow]:
        """The rows as last loaded (loads first when needed)."""
        return rows_of(self.folder) if self.folder is not None else self.load()

    def summary(self) -> str:
        """The sidebar's line: ``41 memories · index 230 lines · 30 not loaded``."""
        if self.folder is None:
            self.load()
        return self.folder.counts() if self.folder is not None else ""

    def preview(self) -> SessionContext | str:
        """What the next session is given (exact when the project folder is known; else the index alone)."""
        if self.project and os.path.isdir(self.project):
            return session_context(self.project, self.env)
        folder = self.folder or read_folder(self.memory_dir)
        text = folder.index.injected
        blocks = [] if text is None else [(os.path.join(self.memory_dir, INDEX_NAME), LABELS[AUTO_MEMORY], text)]
        reminder = render_reminder(blocks) or ""
        return (
            "(the project folder of this memory is not known, so its CLAUDE.md files are not shown: open "
            "the project folder for the exact reminder)\n\n" + reminder
        )

    def documents(self) -> list[InstructionDocument]:
        """The instruction files of the project's sessions, in load order, then ``MEMORY.md``."""
        out: list[InstructionDocument] = []
        if self.project and os.path.isdir(self.project):
            context = session_context(self.project, self.env)
            for item in list(context.files) + list(context.later):
                if item.role == "memory-index" or item.path.startswith("<") or not os.path.isfile(item.path):
                    continue
                out.append(self._document(item.path, item.kind, item.role, item.loaded, item.parent))
        index = os.path.join(self.memory_dir, INDEX_NAME)
        out.append(self._document(index, AUTO_MEMORY, "memory-index", True, None))
        return out

    def _document(self, path: str, kind: str, role: str, loaded: bool, parent: str | None) -> InstructionDocument:
        data, stamp = fsio.read_stamped(path, limit=16 * 1024 * 1024)
        text = (data or b"").decode("utf-8", errors="replace")
        read_only = warning = limit = ""
        if kind == MANAGED:
            read_only = "managed by your organisation's policy; keepgui does not change it"
        elif role == "memory-index":
            limit = "the first 200 lines or 25,000 characters load at the start of a session"
            reason = writes.lock_holder(self.memory_dir)
            read_only = reason or ""
        elif kind == "Project":
            warning = "checked into the repository: your edit is shared with everyone who works on it"
        if parent:
            warning = f"imported by {parent}: an edit changes every file that imports it"
        if os.path.islink(path):
            warning = (warning + "; " if warning else "") + f"a link to {os.path.realpath(path)}: the target is saved"
        title = f"{_short(path, self.env.home)} · {LABELS[kind].split(',')[0]}"
        return InstructionDocument(path, title, path, text, stamp, kind, role, loaded, read_only, warning, limit)

    def save_document(self, doc: InstructionDocument, text: str) -> writes.MemoryChange:
        """Save an edited document over exactly the version that was loaded (refused when it changed)."""
        if doc.read_only:
            raise ReadOnly(f"{doc.path}: {doc.read_only}")
        data = text.encode("utf-8")
        if doc.role == "memory-index":
            return self._ours(
                lambda: writes.save_file(
                    self.memory_dir, doc.path, data, doc.stamp, history=self.history, text="Edit MEMORY.md"
                )
            )
        return writes.save_instruction(
            doc.path, data, doc.stamp, managed_dir=self.env.managed_dir, history=self.history
        )

    # ------------------------------------------------------------ writing memories

    def _ours(self, write: Callable[[], _Written]) -> _Written:
        """Run a keepgui write; when nobody else's change was waiting for review, what it leaves becomes
        the baseline (our own changes are not something to review)."""
        before = review(self.memory_dir, self.history)
        change = write()
        folder = read_folder(self.memory_dir)
        if before.pending:
            remember(folder, self.history, source="keepgui")
        else:
            accept_current(folder, self.history, source="keepgui")
        self.folder = folder
        if isinstance(change, writes.MemoryChange) and change.reverse is not None:
            reverse = change.reverse  # its undo (and that undo's redo) is keepgui's own write too
            change.reverse = lambda: self._ours(reverse)
        return change

    def keep(
        self,
        text: str,
        *,
        title: str | None = None,
        kind: str = "project",
        description: str | None = None,
        hook: str | None = None,
    ) -> writes.MemoryChange:
        """Quick keep: a new topic file and its index line (one undoable change)."""
        words = " ".join(text.split())
        if not words:
            raise InvalidInput("there is nothing to keep: the text is empty")
        title = title or _title_of(words)
        return self._ours(
            lambda: writes.keep(
                self.memory_dir,
                title=title,
                description=description or words,
                body=text,
                kind=kind,
                hook=hook,
                history=self.history,
            )
        )

    def edit(self, key: str, field_name: str, value: str) -> writes.MemoryChange:
        """Edit a memory's ``text`` (its body), ``name``, ``description`` or ``type``."""
        row = self._row(key)
        if field_name == "text":
            return self._ours(
                lambda: writes.edit_memory(self.memory_dir, key, row.stamp, body=value, history=self.history)
            )
        if field_name not in ("name", "description", "type"):
            raise InvalidInput(f"a Claude Code memory has no field {field_name!r}")
        if field_name == "type" and value not in MEMORY_TYPES:
            raise InvalidInput(f"the type must be one of {', '.join(MEMORY_TYPES)}")
        return self._ours(
            lambda: writes.edit_memory(self.memory_dir, key, row.stamp, history=self.history, **{field_name: value})
        )

    def forget(self, key: str) -> writes.MemoryChange:
        """Remove a memory's file and its index lines together; keepgui keeps both (restore takes them back)."""
        self._row(key)
        return self._ours(lambda: writes.forget(self.memory_dir, key, history=self.history))

    def restore(self, entry_id: str) -> writes.MemoryChange:
        """Put a forgotten memory back (its file and index lines)."""
        return self._ours(lambda: writes.restore(self.memory_dir, entry_id, history=self.history))

    def forgotten(self) -> list[dict[str, Any]]:
        """The forgotten memories keepgui can restore, oldest first."""
        return writes.pending_forgets(self.memory_dir, self.history)

    def _row(self, key: str) -> MemoryRow:
        for row in self.rows():
            if row.id == key:
                if row.kind != "memory":
                    raise InvalidInput(f"{row.orphan}: edit MEMORY.md to change this line")
                return row
        raise NotFound(f"{self.memory_dir} has no memory {key}")

    # ------------------------------------------------------------ plans

    def plan(self, what: str = "compact") -> IndexPlan | FolderReview:
        """``compact``: the index compaction plan; ``review``: what changed since the last review."""
        if what == "compact":
            return IndexPlan(read_folder(self.memory_dir), self.history)
        if what == "review":
            return review(self.memory_dir, self.history)
        raise InvalidInput(f"no plan {what!r} for a Claude Code project (compact or review)")

    def apply_plan(self, plan: IndexPlan | FolderReview, selection: Selection = None) -> FolderApplied:
        """Apply a plan's selection as one undoable change (a compaction becomes the new baseline)."""
        if isinstance(plan, FolderReview):
            return plan.apply(selection)
        return self._ours(lambda: plan.apply(selection))


def _title_of(words: str) -> str:
    title = " ".join(words.split()[:8])
    return title if len(title) <= 60 else title[:59].rstrip() + "…"


def _short(path: str, home: str) -> str:
    return "~" + path[len(home) :] if path.startswith(home.rstrip(os.sep) + os.sep) else path


class ClaudeSource:
    """One Claude Code config folder (``~/.claude`` or ``$CLAUDE_CONFIG_DIR``); its banks are the projects
    with a memory folder under ``projects/``."""

    kind = "claude"

    def __init__(self, env: ClaudeEnv | None = None, history: History | None = None) -> None:
        self.env = env or ClaudeEnv.from_environ()
        self.history = history or History()
        self.path = self.env.config_dir
        self.label = f"Claude Code · {_short(self.path, self.env.home)}"
        self._banks: dict[str, ClaudeProject] = {}

    def scan(self) -> list[str]:
        """The project folders that have a memory folder, sorted."""
        try:
            names = os.listdir(self.env.projects_dir)
        except OSError:
            return []
        return sorted(n for n in names if os.path.isdir(os.path.join(self.env.projects_dir, n, "memory")))

    def bank(self, name: str) -> ClaudeProject:
        """The project bank of a ``projects/<name>`` folder (the same object while it exists)."""
        if name not in self._banks:
            folder = os.path.join(self.env.projects_dir, name, "memory")
            if not os.path.isdir(folder):
                raise NotFound(f"{folder}: no such memory folder")
            self._banks[name] = ClaudeProject(self.env, name, folder, project_path_for(self.env, name), self.history)
        return self._banks[name]

    def open_project(self, project: str) -> ClaudeProject:
        """The bank of a project folder (its memory folder as a session there would use it)."""
        if not os.path.isdir(project):
            raise NotFound(f"{project}: no such folder")
        cwd = os.path.realpath(project)
        location = memory_location(self.env, cwd)
        if location.candidates and not os.path.isdir(location.path):
            raise InvalidInput(
                f"{cwd}: its memory folder name is long and hashed, and {location.path} does not "
                f"exist; these folders share its prefix: {', '.join(location.candidates)}"
            )
        name = os.path.basename(os.path.dirname(location.path)) if location.how == "default" else location.path
        bank = ClaudeProject(self.env, name, location.path, cwd, self.history)
        self._banks[name] = bank
        return bank

    def counts(self) -> dict[str, str]:
        """``bank -> sidebar line`` for every project (reads every folder)."""
        out = {}
        for name in self.scan():
            try:
                out[name] = self.bank(name).summary()
            except KeepguiError as exc:
                out[name] = f"unreadable: {exc}"
        return out
