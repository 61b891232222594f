"""One Claude Code project's memory as a bank of the seam (:mod:`keepgui.core.source`).

A :class:`ClaudeProject` is the memory folder of one project
(``<config>/projects/<folder>/memory/``) and, when it is known, the project
folder its sessions start in:

* its **rows** are :class:`~keepgui.core.source.FileRow`\\ s: one per topic file
  (its body as the text, its type as a tag, its ``[[name]]`` links as
  entities, its index line as the position), one per index line whose file is
  missing, and one, retired, per memory keepgui forgot (restorable). Tags also
  say where a memory stands for the next session: ``not-loaded`` (its index
  line is past the cut), ``unindexed`` (no index line points at it),
  ``missing-file`` (an index line whose file is gone) — so the type chips
  filter by them too;
* its **documents** are the instruction files a session there loads and
  ``MEMORY.md`` (:mod:`.documents`);
* its **preview** is the exact reminder of :mod:`.context`, with what loads
  later and what never loads (:mod:`.preview`);
* its **plans** are the index compaction (:mod:`.compact`) and the review of
  what the agent changed in the folder (:mod:`.review`);
* every write goes through :mod:`.writes` (the stamp read presented, refused
  while a consolidation holds the folder) and returns a
  :class:`~keepgui.core.source.Change` that undoes itself. keepgui's own
  writes become the review's baseline, so they are never offered for review.

Which project a ``projects/<folder>`` belongs to is read from the ``cwd`` its
session transcripts record (read only, the first lines of the newest few
files), checked by sanitizing it again; a folder whose project cannot be
found still shows its memory, and its preview then says the instruction files
are unknown.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from keepgui.backends.claude import writes
from keepgui.backends.claude.activity import FolderActivity, row_names
from keepgui.backends.claude.compact import (
    Baselines,
    FolderApplied,
    FolderPlan,
    FolderReview,
    IndexPlan,
    accept_current,
    remember,
    review,
    short_hook,
)
from keepgui.backends.claude.context import ClaudePreview, SessionContext, build_preview, session_context
from keepgui.backends.claude.documents import ClaudeDocuments, Entry, refresh_listing
from keepgui.backends.claude.intents import recover
from keepgui.backends.claude.jstext import utf16_len
from keepgui.backends.claude.layout import ClaudeEnv, git_roots, project_folder_name
from keepgui.backends.claude.memory import (
    INDEX_LINK_OUT,
    INDEX_NAME,
    LINE_LIMIT,
    LINK_OUT,
    MEMORY_TYPES,
    NOT_A_FILE,
    SIZE_LIMIT,
    TOO_BIG,
    UNREADABLE,
    IndexEntry,
    MemoryFolder,
    Prepared,
    TopicFile,
    cut_index,
    parse_topic,
    read_folder,
)
from keepgui.core import fsio
from keepgui.core.defaults import create_whole, replace_whole
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.paths import short_path
from keepgui.core.source import (
    COMPACT,
    DISK,
    ENTITIES,
    HISTORY,
    PIN,
    QUERY,
    RANKED,
    WHAT_IF,
    Activity,
    BankDefaults,
    BankKey,
    BankSummary,
    Capabilities,
    Change,
    FileRow,
    Hint,
    Pending,
    Problem,
    Progress,
    RowDelta,
    Written,
    nothing_written,
)

if TYPE_CHECKING:
    from keepgui.backends.claude.backend import ClaudeSource
    from keepgui.core.compaction import Plan

TRANSCRIPT_READ = 256 * 1024
"""At most this much of a session transcript is read to find its ``cwd``."""

TRANSCRIPTS_TRIED = 5
"""At most this many transcripts (the newest) are read per project folder."""

REVIEW = "memory folder"
"""The name under which the review of what the agent changed in the folder is planned."""

FORGOTTEN = "forgotten:"
"""The key prefix of a retired row: a memory keepgui forgot (its file and index lines kept in its history)."""

DANGLING = "index:"
"""The key prefix of an index line whose topic file is missing (then its target)."""

NOT_LOADED, UNINDEXED, MISSING_FILE = "not-loaded", "unindexed", "missing-file"
NOT_A_MEMORY, READ_ONLY = "not-a-memory", "read-only"
STATUS_TAGS = (NOT_LOADED, UNINDEXED, MISSING_FILE, NOT_A_MEMORY, READ_ONLY)
REFUSED_CODES = (NOT_A_FILE, LINK_OUT, TOO_BIG, UNREADABLE)
"""The problems that keep a file from being a memory at all (it is not read, not shown, not written)."""
"""Tags that say where a memory stands for the next session (not written anywhere)."""

FILE_SHOWN = 20_000
"""The detail pane shows at most this much of a topic file (the table row keeps no more)."""

TITLE_CHARS = 32
"""A project's folder longer than this is named by its last part in the sidebar (the tooltip has it whole)."""

HOOK_UNITS = 150
"""A kept fact's description and index hook are cut at a word near this many UTF-16 units."""

CAPABILITIES = Capabilities(
    missing={
        PIN: "Claude Code memories have no pin: the first 200 lines of MEMORY.md load at the start of a "
        "session, a topic file when Claude reads it",
        RANKED: "Claude Code has no recall ranking keepgui can reproduce: Claude opens topic files itself",
        QUERY: "what a Claude Code session is given at its start does not depend on a question",
        WHAT_IF: "the preview shows the files as they are saved",
        HISTORY: "keepgui keeps every version of the memory folder instead: the review shows what changed",
        ENTITIES: "a memory's links are the [[name]] links in its text: edit the text",
    },
    fields=frozenset({"pinned", "live", "text", "tags", "entities", "updated"}),
    noun="memory",
    nouns="memories",
    retire="Forget",
    reviews=(REVIEW,),
)
"""What a Claude Code project's memory can do in the window, and why not."""


# ---------------------------------------------------------------------- which project a folder is


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


def transcript_cwds(folder: str) -> list[str]:
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


def project_path_for(env: ClaudeEnv, name: str, cwds_of: Callable[[str], list[str]] = transcript_cwds) -> str | None:
    """The project a ``projects/<name>`` folder holds memory for, from session transcripts, or None.

    A recorded ``cwd`` counts when its canonical git root (or itself, outside
    git) sanitizes to ``name``; transcripts are filed by the launch folder, so
    the other folders' newest transcripts are tried too (a session started in
    ``repo/sub`` files its transcript under ``-…-repo-sub`` and its memory
    under ``-…-repo``). ``cwds_of(folder)`` reads a folder's recorded ``cwd``
    values (a source passes one that reads each folder once).
    """
    own = cwds_of(os.path.join(env.projects_dir, name))
    try:
        others = [n for n in os.listdir(env.projects_dir) if n != name]
    except OSError:
        others = []
    for cwd in own + [c for other in others for c in cwds_of(os.path.join(env.projects_dir, other))[:1]]:
        if not os.path.isdir(cwd):
            continue
        roots = git_roots(cwd)
        for candidate in (roots.canonical, cwd):
            if candidate and project_folder_name(candidate) == name:
                return candidate
    return None


def short(path: str, home: str) -> str:
    """``path`` with ``home`` written as ``~``."""
    return "~" + path[len(home) :] if path.startswith(home.rstrip(os.sep) + os.sep) else path


# ---------------------------------------------------------------------- rows


def _file_text(topic: TopicFile) -> str:
    text = topic.text
    return text if len(text) <= FILE_SHOWN else text[:FILE_SHOWN] + "\n…"


def rows_of(folder: MemoryFolder, forgotten: Sequence[tuple[dict[str, Any], TopicFile | None]] = ()) -> list[FileRow]:
    """The rows of a memory folder: every topic file, every index line whose file is missing, and the
    memories keepgui forgot (``forgotten``: each pending forget with its topic file as it was)."""
    by_target: dict[str, IndexEntry] = {}
    refused = {p.path: p for p in folder.problems if p.code in REFUSED_CODES}
    for indexed in folder.index.entries:
        by_target.setdefault(indexed.target, indexed)
    rows = []
    for topic in folder.topics:
        entry = by_target.get(topic.rel)
        status: tuple[str, ...] = ()
        if entry is None:
            state, status = (
                "not in MEMORY.md: not visible at session start (Claude finds it only by searching)",
                (UNINDEXED,),
            )
        elif entry.partial:
            state, status = "only the start of its index line loads (cut mid-line)", (NOT_LOADED,)
        elif entry.loaded:
            state = "its index line loads at the start of every session"
        else:
            state, status = "past the cut: Claude does not see its index line", (NOT_LOADED,)
        fields = [
            ("description", topic.description or "—"),
            ("name", topic.name or "—"),
            ("type", topic.type or "—"),
            ("at session start", state),
            (f"MEMORY.md, line {entry.line}", entry.text)
            if entry is not None
            else ("MEMORY.md", "no line points at this file (an orphan)"),
            (topic.rel, _file_text(topic)),
        ]
        fields.extend(("problem", f"{p.where}: {p.message}") for p in topic.issues)
        if topic.read_only:
            status += (READ_ONLY,)
        kind = (topic.type,) if topic.type else ()
        rows.append(
            FileRow(
                id=topic.rel,
                text=topic.body.strip() or topic.description or topic.title,
                position=entry.line if entry is not None else None,
                tags=kind + status,
                entities=topic.links,
                updated_at=topic.mtime_ms,
                fields=tuple(fields),
            )
        )
    seen: set[str] = set()
    for entry in folder.orphans.dangling:
        if entry.target in seen:
            continue
        seen.add(entry.target)
        why = refused.get(os.path.join(folder.path, entry.target))
        rows.append(
            FileRow(
                id=DANGLING + entry.target,
                text=f"{entry.title} — {entry.hook}".strip(" —"),
                position=entry.line,
                tags=(NOT_A_MEMORY if why is not None else MISSING_FILE,) + (() if entry.loaded else (NOT_LOADED,)),
                fields=(
                    (f"MEMORY.md, line {entry.line}", entry.text),
                    (entry.target, why.message)
                    if why is not None
                    else (entry.target, "missing: this index line points at a file that does not exist"),
                    (
                        "at session start",
                        "loads, but Claude finds no file behind it" if entry.loaded else "past the cut",
                    ),
                ),
            )
        )
    shown = {row.position for row in rows if row.id.startswith(DANGLING)}
    index_lines = folder.index.text.split("\n") if folder.index.text else []
    for problem in folder.problems:
        # an index line that links out of the folder at no .md file: flagged as a row too, never dropped
        if problem.code != INDEX_LINK_OUT or problem.line in shown or not 0 < problem.line <= len(index_lines):
            continue
        shown.add(problem.line)
        text = index_lines[problem.line - 1].rstrip("\r")
        rows.append(
            FileRow(
                id=f"{DANGLING}line-{problem.line}",
                text=text.strip(),
                position=problem.line,
                tags=(NOT_A_MEMORY,),
                fields=((f"MEMORY.md, line {problem.line}", text), ("problem", problem.message)),
            )
        )
    present = {t.rel for t in folder.topics}
    for record, was in forgotten:
        rel = str(record.get("rel", ""))
        if rel in present:
            continue
        at = int(record.get("at") or 0) or None
        lines = [str(line).rstrip("\r\n") for _n, line in record.get("lines", [])]
        rows.append(
            FileRow(
                id=FORGOTTEN + str(record.get("id")),
                text=(was.body.strip() or was.description) if was is not None else rel,
                tags=((was.type,) if was is not None and was.type else ()),
                invalid_at=at,
                updated_at=at,
                fields=(
                    ("file", f"{rel} (forgotten by keepgui; restore puts it and its index line back)"),
                    ("index lines removed", "\n".join(lines) or "—"),
                ),
            )
        )
    return rows


LEFTOVER = (
    "a temporary file a killed keepgui write left behind (it may hold a line being forgotten); "
    "look at it, then remove it"
)


def leftover_problems(folder: str) -> list[Problem]:
    """keepgui's temporary files a killed write left in ``folder`` (one may hold a forgotten line)."""
    return [Problem(path, 0, LEFTOVER, "leftover-temp") for path in fsio.leftover_temps(folder)]


def one_line(text: str, limit: int = HOOK_UNITS) -> str:
    """``text`` on one line, cut at a word near ``limit`` UTF-16 units (with ``…``) when longer."""
    return short_hook(" ".join(text.split()), limit)


def title_of(words: str) -> str:
    """A memory's title from its first words (at most eight, 60 characters)."""
    title = " ".join(words.split()[:8])
    return title if len(title) <= 60 else title[:59].rstrip() + "…"


_TYPE_PREFIX = re.compile(r"^#(user|feedback|project|reference)\b[\s:]*", re.IGNORECASE)


def split_type(text: str, default: str = "project") -> tuple[str, str]:
    """``(type, fact)`` of a fact to keep: a leading ``#user``, ``#feedback``, ``#project`` or
    ``#reference`` names its type (else ``default``)."""
    match = _TYPE_PREFIX.match(text.strip())
    if match is None:
        return default, text.strip()
    return match.group(1).lower(), text.strip()[match.end() :].strip()


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def index_budget_lines(text: str) -> tuple[int, int]:
    """``(lines, units)`` of an index text as the CLI measures it (front matter and comments removed)."""
    prepared = Prepared(text).text
    if not prepared:
        return 0, 0
    cut = cut_index(prepared)
    return cut.lines, cut.units


# ---------------------------------------------------------------------- the bank


def _with_rows(progress: Progress, rows: Sequence[FileRow]) -> Callable[[int, int], None]:
    """``progress`` as a step that shows ``rows`` (all read) while the load goes on."""

    def step(done: int, total: int) -> None:
        progress(done, total, lambda: rows)

    return step


class ClaudeProject(BankDefaults):
    """One project's memory as a bank (see the module docstring); what it lacks, BankDefaults refuses."""

    def __init__(self, source: ClaudeSource, name: str, memory_dir: str, project: str | None) -> None:
        self.source = source
        self.env: ClaudeEnv = source.env
        self.history = source.history
        self.name = name
        self.key = BankKey(source.path, name)
        self.memory_dir = memory_dir
        self.project = project
        self.capabilities = CAPABILITIES
        self.folder: MemoryFolder | None = None
        self.delivered: list[FileRow] = []
        self.problem = ""
        self._manifest: str | None = None  # the folder's manifest as last seen (sha256)
        self.resolve_project: Callable[[], str | None] | None = None  # finds ``project`` on the first load
        self._activity: FolderActivity | None = None
        self.documents_cache: list[Entry] | None = None  # the documents listing, refreshed by each load (documents.py)
        self._said: list[str] = []  # changes cut short that a load finished or undid, for the next write to say

    @property
    def lock(self) -> threading.RLock:
        """One lock per source: the bank's reads and writes never interleave."""
        return self.source.lock

    @property
    def index_path(self) -> str:
        """``MEMORY.md`` of the folder."""
        return os.path.join(self.memory_dir, INDEX_NAME)

    @property
    def title(self) -> str:
        """How the sidebar names the project: its folder (``~/work/app``; its name alone when that is
        long), else the memory folder's name."""
        if not self.project:
            return self.name
        shown = short_path(self.project)
        return shown if len(shown) <= TITLE_CHARS else os.path.basename(self.project)

    # ------------------------------------------------------------ reading

    def is_loaded(self) -> bool:
        """True once the folder was read."""
        return self.folder is not None

    def _forgotten(self) -> list[tuple[dict[str, Any], TopicFile | None]]:
        out: list[tuple[dict[str, Any], TopicFile | None]] = []
        for record in writes.pending_forgets(self.memory_dir, self.history):
            topic: TopicFile | None = None
            try:
                path = os.path.join(self.memory_dir, str(record["rel"]))
                data = self.history.read(self.history.find(path, str(record["topic_sha256"])))
                topic = parse_topic(str(record["rel"]), path, data, fsio.Stamp.missing())
            except (KeyError, KeepguiError, OSError):
                # the removed file's copy is not in keepgui's history (or unreadable): the row still
                # shows what the forget record says, and restore reports what it cannot put back
                topic = None
            out.append((record, topic))
        return out

    def _read(self, previous: MemoryFolder | None = None) -> tuple[MemoryFolder, list[FileRow]]:
        folder = read_folder(self.memory_dir, previous)
        return folder, rows_of(folder, self._forgotten())

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Read the folder and keep its version in keepgui's history; every row when anything changed.

        The Change asks for a review (``reviews``) when the folder differs from
        the version a person last accepted, on the first load and whenever it
        changed since the last one. ``full`` reads every file again; otherwise
        a topic file whose size and time did not change is not read again.
        """
        with self.lock:
            if self.resolve_project is not None:
                resolve, self.resolve_project = self.resolve_project, None
                self.project = resolve()
            before, before_manifest = self.folder, self._manifest
            fresh = recover(self.memory_dir, self.history)  # a keep or forget cut short, finished or undone
            self._said += fresh  # said again by the next write (a command's load is not printed)
            try:
                folder, rows = self._read(None if full else before)
                # the rows as read are shown while their versions are stored (a first sight: seconds)
                sha = remember(folder, self.history, progress=None if progress is None else _with_rows(progress, rows))
                baseline = Baselines(self.history).latest(self.memory_dir)
                if baseline is None:
                    baseline = accept_current(folder, self.history)
            except (KeepguiError, OSError) as exc:
                self.problem = str(exc)
                raise
            changed = before is None or rows != self.delivered
            self.folder, self.delivered, self.problem, self._manifest = folder, rows, "", sha
            documents = refresh_listing(self)
        notes: list[str] = [f"{self.title}: keepgui found {said}" for said in fresh]
        if before is not None and before_manifest != sha and not full:
            notes.append(f"{self.title}: the memory folder changed on disk ({folder.counts()})")
        known = set(before.problems) if before is not None else set()
        notes += [f"{self.title}: {p}" for p in folder.problems if p not in known]
        return Change(
            self.source.path,
            self.name,
            origin=DISK,
            rows=RowDelta(rows, (), True) if changed or full else RowDelta(),
            documents=documents,
            reviews=(REVIEW,) if baseline != sha and (before is None or before_manifest != sha) else (),
            notes=tuple(notes),
        )

    def rows(self) -> Sequence[FileRow]:
        """The rows as last read."""
        return list(self.delivered)

    def problems(self) -> list[Problem]:
        """Everything wrong with the memory folder's files as last read, as the seam's doctor-like
        problems (the window's problems badge and view), in the order they were found."""
        folder = self.folder
        if folder is None:
            return []
        found = [Problem(p.path, p.line, p.message, p.code, p.level) for p in folder.problems]
        return found + leftover_problems(self.memory_dir)

    def activity(self) -> Activity:
        """When the memories were written: their files' times and the folder's versions keepgui saw."""
        with self.lock:
            folder = self.folder or read_folder(self.memory_dir)
            if self._activity is None:
                self._activity = FolderActivity(self.memory_dir, self.history)
            forgotten = {
                str(r.get("rel")): FORGOTTEN + str(r.get("id"))
                for r in writes.pending_forgets(self.memory_dir, self.history)
            }
            return self._activity.update(folder, forgotten)

    def memory_files(self) -> list[str]:
        """The instruction files and MEMORY.md (its documents), then every topic file of the memory folder."""
        found = super().memory_files()
        try:
            names = sorted(n for n in os.listdir(self.memory_dir) if n.endswith(".md"))
        except OSError:
            names = []
        found.extend(p for p in (os.path.join(self.memory_dir, n) for n in names) if p not in found)
        return found

    def write_file(self, path: str, text: str, expect: fsio.Stamp) -> Change:
        """A topic file put back whole (created again when it was deleted, never over a file someone
        made meanwhile; conflict-checked otherwise); MEMORY.md and the instruction files as the editor
        saves them."""
        if not self._is_topic(path):
            return super().write_file(path, text, expect)
        if not expect.exists:
            return create_whole((self.key.source, self.key.bank), path, text)
        return replace_whole((self.key.source, self.key.bank), path, text, expect)

    def _is_topic(self, path: str) -> bool:
        return os.path.dirname(path) == os.path.realpath(self.memory_dir) and os.path.basename(path) != INDEX_NAME

    def entries_of(self, path: str, text: str) -> list[tuple[str, str]]:
        """A topic file is one entry (its whole text, named by the file); other files a line each."""
        if self._is_topic(path):
            return [(os.path.basename(path), text.strip())] if text.strip() else []
        return super().entries_of(path, text)

    def row_names(self) -> Mapping[str, str]:
        """``[[name]]`` -> topic file (a memory links to another by its front-matter name or file name)."""
        folder = self.folder
        return row_names(folder) if folder is not None else {}

    def summary(self) -> BankSummary:
        """``41 memories · index 230 lines · 30 not loaded``, and the compaction the cut calls for."""
        description = (
            f"project {self.project}" if self.project else "project folder unknown (no session transcript names it)"
        ) + f"\nmemory {self.memory_dir}"
        if self.problem:
            return BankSummary(f"unreadable: {self.problem}", problem=self.problem, title=self.title)
        folder = self.folder
        if folder is None:
            return BankSummary("loading…", description=description, title=self.title)
        due = ""
        cut = folder.index.cut
        if cut is not None and cut.cut:
            hidden = sum(1 for e in folder.index.entries if not e.loaded or e.partial)
            due = (
                f"{self.title}: MEMORY.md is {cut.warning.split(' is ', 1)[1].split('. ')[0]}: "
                f"{hidden} {'memory is' if hidden == 1 else 'memories are'} invisible to Claude at the start of "
                "a session. Review a plan that keeps every fact loaded; nothing is written before you apply it."
            )
        return BankSummary(
            folder.counts(sum(1 for row in self.delivered if row.invalid_at is None)),  # as the table counts
            description=description,
            compaction_due=due,
            size=f"{folder.index.lines} lines",
            title=self.title,
            problems=sum(1 for p in folder.problems if p.level != "note"),  # the sidebar's badge
        )

    def documents(self) -> ClaudeDocuments:
        """The instruction files of the project's sessions, in load order, then ``MEMORY.md``."""
        return ClaudeDocuments(self)

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> ClaudePreview:
        """What the next session there is given at its start, exactly (see :mod:`.preview`)."""
        return build_preview(self)

    def context(self, query: str = "", **options: Any) -> SessionContext:
        """What a session launched in the project is given at its start: the ``reminder``, exactly, and the
        files it is made of (the project opened, or the one a session transcript names for a home's project)."""
        if options:
            raise InvalidInput(f"Claude Code's context takes no options: {', '.join(sorted(options))}")
        project = self.project if self.source.is_home else self.source.path
        if project is None:
            raise NotFound(
                f"{self.title}: no session transcript names this memory folder's project, so keepgui cannot say "
                "what a session there loads; give the project folder with --project DIR"
            )
        return session_context(project, self.source.env)

    # ------------------------------------------------------------ writes

    def write(self, action: Callable[[], writes.MemoryChange], text: str | None = None) -> Change:
        """Run one of :mod:`.writes`'s operations under the lock and turn it into the seam's Change.

        keepgui's own write becomes the review's baseline, unless the agent's
        changes were waiting for review (they stay waiting). Its undo (and that
        undo's redo) goes through here too.
        """
        with self.lock:
            said, self._said = [*self._said, *recover(self.memory_dir, self.history)], []
            before = read_folder(self.memory_dir, self.folder)
            sha = remember(before, self.history)
            waiting = Baselines(self.history).latest(self.memory_dir) not in (None, sha)
            done = action()
            folder, rows = self._read(before)
            if waiting:
                self._manifest = remember(folder, self.history, source="keepgui")
            else:
                self._manifest = accept_current(folder, self.history, source="keepgui")
            self.folder, self.delivered = folder, rows
        if said:
            done = dataclasses.replace(done, notes=(*(f"keepgui found {s}" for s in said), *done.notes))
        return self._change_of(done, rows, text)

    def _change_of(self, done: writes.MemoryChange, rows: list[FileRow], text: str | None) -> Change:
        index = os.path.normpath(self.index_path)
        touched = {os.path.normpath(path) for path, _stamp in done.files}
        return Change(
            self.source.path,
            self.name,
            text or done.text,
            rows=RowDelta(rows, (), True),
            documents=frozenset({self.index_path}) if index in touched else frozenset(),
            files=tuple(Written(path, stamp) for path, stamp in done.files),
            written=done.written,
            result=done.result,
            message=done.message,
            notes=done.notes,
            reverse=(lambda: self.write(done.undo, text)) if done.reverse is not None else None,
        )

    def _topic(self, key: str) -> TopicFile:
        if key.startswith(FORGOTTEN):
            raise InvalidInput("this memory was forgotten: restore it first")
        if key.startswith(DANGLING):
            raise InvalidInput(
                f"{key[len(DANGLING) :]} does not exist: this row is only an index line; edit MEMORY.md to change it"
            )
        topic = self.folder.topic(key) if self.folder is not None else None
        if topic is None:
            raise NotFound(f"{self.memory_dir} has no memory {key}")
        return topic

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Forget memories (file and index lines together, kept in keepgui's history; an index line whose
        file is missing is removed from the index) or put forgotten ones back where they were."""
        keys = list(keys)
        history = self.history
        steps: list[Callable[[], writes.MemoryChange]] = []
        if live:
            ids = [k[len(FORGOTTEN) :] for k in keys if k.startswith(FORGOTTEN)]
            steps = [partial(fsio.retrying, partial(writes.restore, self.memory_dir, i, history=history)) for i in ids]
            text = CAPABILITIES.describe("Restore", len(steps))
        else:
            for key in keys:
                if key.startswith(FORGOTTEN):
                    continue
                if key.startswith(DANGLING):
                    row = next((r for r in self.delivered if r.id == key), None)
                    if row is not None and NOT_A_MEMORY in row.tags:
                        why = dict(row.fields).get("problem") or next(
                            (value for _label, value in row.fields[1:2]), "not a memory"
                        )
                        raise ReadOnly(
                            f"{os.path.join(self.memory_dir, INDEX_NAME)}, line {row.position}: {why}; keepgui does "
                            "not forget it, edit MEMORY.md to remove the line; nothing was written"
                        )
                    steps.append(partial(self._drop_index_lines, key[len(DANGLING) :]))
                else:
                    self._topic(key)
                    # tried again when the agent's own rewrite of the index gets in between (a bound)
                    steps.append(partial(fsio.retrying, partial(writes.forget, self.memory_dir, key, history=history)))
            text = f"Forget {CAPABILITIES.count(len(steps))}"
        if not steps:
            return nothing_written(self.source.path, self.name, text)
        return self.write(lambda: writes.chain(self.memory_dir, text, steps), text)

    def _drop_index_lines(self, target: str) -> writes.MemoryChange:
        data, stamp = fsio.read_stamped(writes.writable_path(self.memory_dir, self.index_path))
        if data is None:
            raise NotFound(f"{self.index_path}: no such file")
        kept, removed = writes.without_links(data, target, self.index_path)
        if not removed:
            raise NotFound(f"{self.index_path} has no line linking {target} any more")
        return writes.save_file(
            self.memory_dir,
            self.index_path,
            kept,
            stamp,
            history=self.history,
            text=f"Remove the index line of {target}",
        )

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """Edit a memory's ``text`` (its body) or its ``tags`` (its type: one of user, feedback, project,
        reference; the tags that say where it stands are not written); ``name`` and ``description``
        set those front-matter values."""
        topic = self._topic(key)
        if field in ("name", "description"):
            if not isinstance(value, str):
                raise InvalidInput(f"a memory's {field} is one line of text")
            values = {field: value}
            return self.write(
                lambda: writes.edit_memory(self.memory_dir, key, topic.stamp, history=self.history, **values)
            )
        if field == "text":
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput("a memory's text cannot be empty: forget it instead")
            body = value
            return self.write(
                lambda: writes.edit_memory(self.memory_dir, key, topic.stamp, body=body, history=self.history)
            )
        if field == "tags":
            given = [value] if isinstance(value, str) else list(value)
            types = [t for t in given if t in MEMORY_TYPES]
            unknown = [t for t in given if t not in MEMORY_TYPES and t not in STATUS_TAGS]
            if unknown or len(types) != 1:
                raise InvalidInput(
                    f"a Claude Code memory has one type, one of {', '.join(MEMORY_TYPES)}"
                    + (f"; `{unknown[0]}` is none of them" if unknown else "")
                    + f" (the tags {', '.join(STATUS_TAGS)} say where it stands and are not written)"
                )
            if types[0] == topic.type:
                return nothing_written(self.source.path, self.name, f"Set type of {key}")
            kind = types[0]
            return self.write(
                lambda: writes.edit_memory(self.memory_dir, key, topic.stamp, history=self.history, type=kind),
                f"Set type of {key} to {kind}",
            )
        raise InvalidInput(CAPABILITIES.why_not(ENTITIES) if field == "entities" else f"no field {field!r}")

    def redact_row(self, key: str, text: str, pairs: Sequence[tuple[str, str]]) -> Change:
        """A secret out of a topic file: its body, and its front matter's name and description too
        (Keep fact made them of the same words), in one undoable write."""
        topic = self._topic(key)

        def clean(value: str) -> str:
            for secret, replacement in pairs:
                value = value.replace(secret, replacement).replace(secret.lower(), replacement.lower())
            return value

        values = {k: clean(v) for k, v in (("name", topic.name), ("description", topic.description)) if v}
        values = {k: v for k, v in values.items() if v != getattr(topic, k)}
        return self.write(
            lambda: writes.edit_memory(
                self.memory_dir, key, topic.stamp, body=clean(topic.body) or text, history=self.history, **values
            ),
            "Redact secret",
        )

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """A new memory (New memory): a topic file of the type given as a tag, and its index line."""
        types = [t for t in tags if t in MEMORY_TYPES]
        others = [t for t in tags if t not in MEMORY_TYPES]
        if others or len(types) > 1:
            raise InvalidInput(f"give the memory one type as its tag: one of {', '.join(MEMORY_TYPES)}")
        return self.keep(f"#{types[0]} {text}" if types else text, force=True)

    def _same_as(self, fact: str) -> list[TopicFile]:
        wanted = _normal(fact)
        if not wanted or self.folder is None:
            return []
        return [
            t
            for t in self.folder.topics
            if wanted in (_normal(t.body), _normal(t.description)) or (len(wanted) > 24 and wanted in _normal(t.body))
        ]

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """Quick keep: a new topic file in the format the CLI instructs and its index line, one undoable
        change (a leading ``#feedback``... names the type; a fact already kept is not kept twice unless
        ``force``)."""
        kind, fact = split_type(text)
        words = " ".join(fact.split())
        if not words:
            raise InvalidInput("there is nothing to keep: the text is empty")
        same = self._same_as(fact)
        if same and not force:
            return nothing_written(
                self.source.path,
                self.name,
                f"Keep {title_of(words)}",
                f"already kept in {same[0].rel}",
                (
                    Hint("warning", f"Already kept: {same[0].rel} says “{one_line(same[0].body, 70)}”"),
                    Hint("info", "Ctrl+Enter keeps it as a separate memory anyway."),
                ),
            )
        title = title_of(words)
        summary = one_line(words)
        change = self.write(
            lambda: fsio.retrying(  # tried again when the agent's rewrite of the index gets in between
                lambda: writes.keep(
                    self.memory_dir, title=title, description=summary, body=fact, kind=kind, history=self.history
                )
            ),
            f"Keep memory {title}",
        )
        entry = next((e for e in (self.folder.index.entries if self.folder else ()) if e.target == change.result), None)
        message = f"Kept: {change.result} and its index line — {self.title}"
        if entry is not None and not entry.loaded:
            message += f" (its index line is line {entry.line}, past the cut: review a compaction)"
        return dataclasses.replace(change, message=message)

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What keeping ``text`` would do: the file and index line it writes, whether that line would be
        past the cut, a memory that already says it, a consolidation in progress."""
        locked = writes.lock_holder(self.memory_dir)
        if locked:
            return (Hint("error", locked),)
        kind, fact = split_type(text)
        if not fact.strip():
            return ()
        hints: list[Hint] = []
        folder = self.folder or read_folder(self.memory_dir)
        name = writes.free_file_name(self.memory_dir, writes.slug(title_of(fact)))
        lines, units = index_budget_lines(folder.index.text)
        line = f"- [{title_of(fact)}]({name}) — {one_line(fact)}"
        after_lines, after_units = lines + 1, units + utf16_len(line) + (1 if lines else 0)
        if after_lines > LINE_LIMIT or after_units > SIZE_LIMIT:
            hints.append(
                Hint(
                    "warning",
                    f"MEMORY.md has {lines} lines ({units:,} characters): the new index line would be past the "
                    f"{LINE_LIMIT} lines / {SIZE_LIMIT:,} characters a session loads, so Claude would not see it "
                    "at the start of a session. Review a compaction first (Bank → Review compaction)",
                )
            )
        else:
            hints.append(
                Hint(
                    "ok",
                    f"A new {kind} memory, {name}, and its index line (line {after_lines} of MEMORY.md): "
                    "loaded at the start of the next session",
                )
            )
        for topic in self._same_as(fact)[:2]:
            hints.append(Hint("warning", f"Already kept: {topic.rel} says “{one_line(topic.body, 70)}”"))
        if not text.strip().startswith("#"):
            hints.append(Hint("info", "Start with #user, #feedback or #reference for another type than project"))
        return tuple(hints)

    def text_problem(self, text: str) -> tuple[str, bool]:
        """The length of a memory's text as typed (UTF-16 units, as the CLI counts) and its type."""
        kind, fact = split_type(text)
        return f"{utf16_len(fact):,} characters · type {kind}", bool(fact.strip())

    # ------------------------------------------------------------ plans

    def plan(self, what: str, **options: Any) -> FolderPlan:
        """``compact``: the index compaction plan; ``review``: what changed since the last review (no options)."""
        if options:
            raise InvalidInput(f"a Claude Code memory folder's plans take no options: {', '.join(sorted(options))}")
        if what == COMPACT:
            return self.compaction_plan()
        if what == REVIEW:
            return self.folder_review()
        raise InvalidInput(f"no plan {what!r} for a Claude Code project ({COMPACT} or {REVIEW})")

    def compaction_plan(self) -> IndexPlan:
        """The plan for an index over its limits, from the folder as it is now."""
        with self.lock:
            return IndexPlan(read_folder(self.memory_dir), self.history)

    def folder_review(self) -> FolderReview:
        """What changed in the folder since the version a person last accepted."""
        with self.lock:
            return review(self.memory_dir, self.history)

    def apply_plan(self, plan: Plan, selection: frozenset[str], text: str) -> Change:
        """Apply a compaction's (or a review's) selection as one undoable change; its ``result`` is the
        :class:`~keepgui.backends.claude.compact.FolderApplied` (the command line journals it for ``--undo``)."""
        if not isinstance(plan, FolderPlan):
            raise InvalidInput(f"{self.title}: not a plan of a Claude Code memory folder")

        def run() -> writes.MemoryChange:
            result = plan.apply(selection)
            if result.change is None:
                return writes.MemoryChange(self.memory_dir, text, written=False, result=result)
            result.change.result = result
            return result.change

        change = self.write(run, text)
        if isinstance(plan, FolderReview) and change.written:
            plural = "s" if len(selection) != 1 else ""
            return dataclasses.replace(change, message=f"restored {len(selection)} change{plural} of {self.title}")
        return change

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a compaction (or a review's restore) applied from the command line, through :meth:`write`,
        so the folder as the undo leaves it is keepgui's own write, not something to review."""
        from keepgui.backends.claude import compact  # noqa: F401 - registers the kind of applied plan it journals
        from keepgui.core.compaction import load_applied

        done = load_applied(dict(applied), self.history)
        if not isinstance(done, FolderApplied) or os.path.realpath(done.target) != os.path.realpath(self.memory_dir):
            raise InvalidInput(f"not a compaction of {self.memory_dir}: nothing was undone")

        def undo() -> writes.MemoryChange:
            done.undo()  # it keeps the change it wrote
            return done.change or writes.MemoryChange(self.memory_dir, f"Undo: {done.description}", written=False)

        change = self.write(undo, f"Undo: {done.description}")
        return dataclasses.replace(change, result=done, message=f"undone: {done.description}")

    def accept_review(self, plan: Plan) -> Change:
        """Take the folder as the review saw it as the new baseline (nothing written in the folder)."""
        if not isinstance(plan, FolderReview):
            raise InvalidInput(f"{self.title}: not a review of a Claude Code memory folder")
        with self.lock:
            plan.accept()
        return Change(
            self.source.path,
            self.name,
            "Accept the memory folder as it is",
            written=False,
            message="accepted: keepgui compares later changes with the folder as it is now",
        )
