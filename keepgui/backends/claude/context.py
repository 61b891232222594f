"""What the next Claude Code session launched in a folder will see: the exact reminder, and its preview.

The CLI's first request carries, as the first text block of the first user
message, one ``<system-reminder>`` with every instruction file loaded at start
and the auto-memory index last::

    <system-reminder>
    Codebase and user instructions are shown below. Be sure to adhere to these instructions. IMPORTANT: …

    Contents of <path> (<label>):

    <text>

    Contents of <memory>/MEMORY.md (user's auto-memory, persists across conversations):

    <index as cut, with its warning>
    </system-reminder>

When nothing loads the block is absent (the first text block is then another
reminder: git status, the date...), so :attr:`SessionContext.reminder` is None.
A running session keeps what it loaded until ``/compact``, ``/clear`` or a
restart: an edit shows in the *next* session.

What the next Claude Code session in a project is given at its start, laid out for the window.

:func:`build_preview` takes the exact reminder of :mod:`.context` (the first
text block of the session's first message) and says, beside it, what a person
needs to read it: the files in it in order with their labels, where the index
is cut (:attr:`ClaudePreview.cut_at`, the place to draw the cut line) and the
entries past the cut by name, the files that load later (rules with
``paths:``, ``CLAUDE.md`` files below the launch folder) and the ones that
never load (and why), and when an edit takes effect. When the project folder
of a memory folder is unknown, only the index can be shown: the preview says
it is not the whole reminder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keepgui.backends.claude import CHECKED_VERSION
from keepgui.backends.claude.instructions import AUTO_MEMORY, LABELS, InstructionFile, collect, nested_files
from keepgui.backends.claude.jstext import utf16_len
from keepgui.backends.claude.layout import (
    ClaudeEnv,
    GitRoots,
    MemoryLocation,
    Settings,
    approved_external,
    git_roots,
    load_settings,
    memory_location,
)
from keepgui.backends.claude.memory import INDEX_NAME, IndexEntry, MemoryFolder, read_folder
from keepgui.core.errors import NotFound

if TYPE_CHECKING:
    from keepgui.backends.claude.bank import ClaudeProject

PREAMBLE = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written."
)
"""The sentence that opens the reminder (verbatim from the CLI)."""

KILL_SWITCHES = ("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE")
"""Environment switches with which a session loads no instruction file and no memory (each seen on the CLI)."""

TAKES_EFFECT = (
    "A running Claude Code session keeps what it loaded at its start until /compact, /clear "
    "or a restart; changes show in the next session."
)


def render_reminder(blocks: list[tuple[str, str, str]]) -> str | None:
    """The reminder for ``(path, label, text)`` blocks in order (None when there are none)."""
    if not blocks:
        return None
    body = "\n\n".join(f"Contents of {path} ({label}):\n\n{text}" for path, label, text in blocks)
    return f"<system-reminder>\n{PREAMBLE}\n\n{body}\n</system-reminder>"


@dataclass(frozen=True)
class SessionContext:
    """Everything about what a session launched in ``project`` would be given at start.

    ``files``: the instruction files in load order (the index last), loaded or
    not and why; ``later``: files that load later (nested ``CLAUDE.md``,
    rules with ``paths:``); ``memory``: where the memory folder is and whether
    auto memory is on; ``folder``: the memory folder read (None when auto memory
    is off); ``reminder``: the exact text (None when nothing loads);
    ``hidden``: index entries past the cut; ``notes``: what a person should know.
    """

    project: str
    env: ClaudeEnv
    roots: GitRoots
    settings: Settings
    memory: MemoryLocation
    files: tuple[InstructionFile, ...]
    later: tuple[InstructionFile, ...]
    folder: MemoryFolder | None
    reminder: str | None
    notes: tuple[str, ...] = ()
    approved: bool = False
    claude_version: str = CHECKED_VERSION

    @property
    def hidden(self) -> tuple[IndexEntry, ...]:
        """The index entries the next session will not see (cut off)."""
        if self.folder is None:
            return ()
        return tuple(e for e in self.folder.index.entries if not e.loaded or e.partial)

    def _file_obj(self, item: InstructionFile) -> dict[str, Any]:
        obj = item.to_obj()
        if item.role == "memory-index" and self.folder is not None and self.folder.index.cut is not None:
            cut = self.folder.index.cut
            obj["cut"] = {**cut.to_obj(), "file_line": self.folder.index.cut_file_line} if cut.cut else None
        return obj

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a person should know (when an edit takes effect, where the index is cut), then every
        problem found reading the settings and the memory folder."""
        return self.notes + tuple(self.to_obj()["problems"])

    def named_parts(self) -> dict[str, str | None]:
        """``reminder``: the first text block of the session's first user message, exactly (None when
        nothing loads)."""
        return {"reminder": self.reminder}

    def describe(self) -> str:
        """The report of ``keepgui context --agent claude``: the files loaded at start in order with their
        labels, where MEMORY.md is cut and the entries past it, what does not load and what loads later,
        then the reminder itself."""
        out = [f"Claude Code (checked against {self.claude_version}) · session started in {self.project}"]
        if self.roots.canonical and self.roots.canonical != self.project:
            out.append(f"  git root {self.roots.canonical}")
        state = "on" if self.memory.enabled else f"off: {self.memory.why_off}"
        out.append(f"  auto memory {state} · {self.memory.path}")
        loaded = [f for f in self.files if f.loaded]
        out.append("")
        out.append(
            f"Loaded at session start, in this order ({len(loaded)}):" if loaded else "Nothing loads at session start."
        )
        for number, item in enumerate(loaded, start=1):
            indent = "   " * item.depth
            via = f" (@import, line {item.line})" if item.parent else ""
            out.append(f"  {number:>2}. {indent}{item.path}{via}")
            out.append(f"      {indent}{item.label} · {_size(item.size)}")
        out += self._cut_lines()
        skipped = [f for f in self.files if f.status == "skipped" and f.reason != "missing"]
        if skipped:
            out += ["", "Not loaded:"] + [f"  {item.path}: {item.reason}" for item in skipped]
        if self.later:
            out += ["", "Loads later, when Claude reads a matching file:"]
            for item in self.later:
                globs = f" (paths: {', '.join(item.globs)})" if item.globs else ""
                out.append(f"  {item.path}{globs}")
        out.append("")
        out.append("--- the reminder, exactly ---" if self.reminder is not None else "--- no reminder ---")
        if self.reminder is not None:
            out.append(self.reminder)
        return "".join(line + "\n" for line in out)

    def _cut_lines(self) -> list[str]:
        """Where MEMORY.md is cut and the entries past the cut ([] when it loads whole)."""
        index = self.folder.index if self.folder is not None else None
        if index is None or index.cut is None or not index.cut.cut:
            return []
        cut = index.cut
        out = [
            "",
            f"MEMORY.md is cut: {cut.kept_lines} of {cut.lines} lines load ({cut.reason} limit).",
            f"  {cut.warning}",
        ]
        hidden = self.hidden
        if hidden:
            out.append(
                f"  {len(hidden)} {'entry is' if len(hidden) == 1 else 'entries are'} invisible to Claude "
                "at the start of a session:"
            )
            for entry in hidden:
                mark = " (start only)" if entry.partial else ""
                out.append(f"    line {entry.line}: {entry.title} → {entry.target}{mark}")
        return out

    def to_obj(self) -> dict[str, Any]:
        """For ``keepgui context --json``."""
        index = self.folder.index if self.folder is not None else None
        return {
            "agent": "claude",
            "claude_version": self.claude_version,
            "project": self.project,
            "config_dir": self.env.config_dir,
            "git_root": self.roots.root,
            "canonical_root": self.roots.canonical,
            "memory_dir": self.memory.path,
            "auto_memory": self.memory.enabled,
            "auto_memory_off_reason": self.memory.why_off,
            "memory_dir_candidates": list(self.memory.candidates),
            "external_imports_approved": self.approved,
            "reminder": self.reminder,
            "files": [self._file_obj(f) for f in self.files],
            "later": [f.to_obj() for f in self.later],
            "index": None
            if index is None or not index.exists
            else {
                "path": index.path,
                "lines": index.lines,
                "bytes": index.size,
                "cut": index.cut.to_obj() if index.cut else None,
                "entries": [e.to_obj() for e in index.entries],
            },
            "hidden": [e.to_obj() for e in self.hidden],
            "notes": list(self.notes),
            "problems": list(self.settings.problems) + ([str(p) for p in self.folder.problems] if self.folder else []),
        }


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.1f} KiB"


def session_context(project: str, env: ClaudeEnv | None = None, *, with_later: bool = True) -> SessionContext:
    """What a session launched in ``project`` will see (``env``: this process's environment).

    ``project`` is taken as the CLI takes its working folder: the physical path
    (symbolic links resolved).
    """
    env = ClaudeEnv.from_environ() if env is None else env
    if not os.path.isdir(project):
        raise NotFound(f"{project}: no such folder; give the project folder Claude Code runs in with --project DIR")
    cwd = os.path.realpath(project)
    roots = git_roots(cwd)
    settings = load_settings(env, cwd)
    location = memory_location(env, cwd, settings, roots)
    notes: list[str] = [TAKES_EFFECT]
    switch = next((name for name in KILL_SWITCHES if env.flag(name)), None)
    if switch is not None:
        notes.insert(0, f"{switch} is set: no CLAUDE.md and no auto memory load")
        return SessionContext(cwd, env, roots, settings, location, (), (), None, None, tuple(notes))
    approved = approved_external(env, roots.root or cwd)
    files = collect(env, cwd, settings, roots, approved=approved)
    later = [f for f in files if f.status == "later"]
    if with_later:
        later.extend(nested_files(cwd))
    folder = read_folder(location.path) if location.enabled else None
    blocks = [(f.path, f.label, f.text) for f in files if f.loaded]
    index_path = os.path.join(location.path, INDEX_NAME)
    if folder is not None:
        injected = folder.index.injected
        cut = folder.index.cut
        status, reason = (
            ("loaded", "") if injected is not None else ("skipped", "missing" if not folder.index.exists else "empty")
        )
        files.append(
            InstructionFile(
                index_path,
                AUTO_MEMORY,
                "memory-index",
                status,
                reason,
                text=injected or "",
                size=folder.index.size,
                units=cut.kept_units if cut else 0,
            )
        )
        if injected is not None:
            blocks.append((index_path, LABELS[AUTO_MEMORY], injected))
        if cut is not None and cut.cut:
            n = len([e for e in folder.index.entries if not e.loaded or e.partial])
            notes.append(
                f"MEMORY.md is cut at line {cut.first_cut_line}: {n} "
                f"{'entry is' if n == 1 else 'entries are'} invisible to Claude at the start of a session"
            )
        if location.candidates:
            notes.append(
                "other memory folders share this project's long-path prefix: " + ", ".join(location.candidates)
            )
    else:
        notes.append(f"auto memory is off ({location.why_off})")
    return SessionContext(
        cwd,
        env,
        roots,
        settings,
        location,
        tuple(files),
        tuple(later),
        folder,
        render_reminder(blocks),
        tuple(notes),
        approved,
    )


UNKNOWN_PROJECT = (
    "The project folder of this memory is not known (no session transcript names it), so only MEMORY.md is "
    "shown, not the CLAUDE.md files: open the project folder (File → Open Claude Code project folder…) for "
    "the exact reminder."
)


@dataclass(frozen=True)
class Listed:
    """A file in one of the preview's lists: its path, what it is or why it is there, and a detail."""

    path: str
    what: str
    detail: str = ""


@dataclass(frozen=True)
class ClaudePreview:
    """The preview of one project (see the module docstring).

    ``text`` is exactly what is injected ("" when nothing loads: the session's
    first text block is then another reminder); ``exact`` is False when the
    project folder is unknown; ``cut_at`` is the offset in ``text`` after the
    last index line loaded (None when the index is not cut); ``hidden`` the
    index entries past the cut; ``loaded``, ``later`` and ``never`` the lists.
    """

    text: str
    exact: bool
    claude_version: str
    project: str | None
    memory_dir: str
    loaded: tuple[Listed, ...]
    hidden: tuple[IndexEntry, ...]
    later: tuple[Listed, ...]
    never: tuple[Listed, ...]
    notes: tuple[str, ...]
    cut_at: int | None = None
    cut_line: int | None = None
    index_lines: int = 0

    @property
    def units(self) -> int:
        """UTF-16 units of the reminder (what the CLI counts)."""
        return utf16_len(self.text)

    @property
    def tokens(self) -> int:
        """A rough token estimate (four characters a token)."""
        return (self.units + 3) // 4


def _memory_lists(folder: MemoryFolder) -> tuple[list[Listed], tuple[IndexEntry, ...]]:
    never: list[Listed] = []
    index = folder.index
    cut = index.cut
    hidden = tuple(e for e in index.entries if not e.loaded or e.partial)
    if cut is not None and cut.cut:
        never.append(
            Listed(
                index.path,
                f"MEMORY.md from line {index.cut_file_line} on: past the cut "
                f"({cut.lines - cut.kept_lines} of {cut.lines} lines)",
                cut.warning,
            )
        )
    linked = {e.target for e in index.entries}
    unindexed = [t for t in folder.topics if t.rel not in linked]
    for topic in unindexed:
        never.append(
            Listed(topic.path, "no index line points at it: Claude finds it only by searching the memory folder")
        )
    for entry in folder.orphans.dangling:
        never.append(
            Listed(os.path.join(folder.path, entry.target), f"MEMORY.md line {entry.line} points at a missing file")
        )
    if folder.topics:
        never.append(
            Listed(
                folder.path,
                f"{len(folder.topics)} topic files: none is in the reminder; Claude reads one when it decides to",
            )
        )
    return never, hidden


def build_preview(bank: ClaudeProject) -> ClaudePreview:
    """The preview of a project's next session (exact when its project folder is known)."""
    index_path = os.path.join(bank.memory_dir, INDEX_NAME)
    if bank.project and os.path.isdir(bank.project):
        context = session_context(bank.project, bank.env)
        text = context.reminder or ""
        loaded = [
            Listed(f.path, f.label, f"{f.units:,} characters" + (f" · @import, line {f.line}" if f.parent else ""))
            for f in context.files
            if f.loaded
        ]
        later = [Listed(f.path, f.reason, "paths: " + ", ".join(f.globs) if f.globs else "") for f in context.later]
        never = [
            Listed(f.path, f.reason)
            for f in context.files
            if f.status == "skipped" and f.reason not in ("missing", "already loaded earlier")
        ]
        folder, notes, exact, version = context.folder, list(context.notes), True, context.claude_version
    else:
        folder = read_folder(bank.memory_dir)
        injected = folder.index.injected
        text = render_reminder([(index_path, LABELS[AUTO_MEMORY], injected)] if injected else []) or ""
        loaded = [Listed(index_path, LABELS[AUTO_MEMORY])] if injected else []
        later, never, notes, exact, version = [], [], [UNKNOWN_PROJECT, TAKES_EFFECT], False, CHECKED_VERSION
    hidden: tuple[IndexEntry, ...] = ()
    cut_at = cut_line = None
    warning = ""
    lines = 0
    if folder is not None:
        more, hidden = _memory_lists(folder)
        never.extend(more)
        cut = folder.index.cut
        lines = cut.lines if cut is not None else 0
        if cut is not None and cut.cut and text:
            warning = cut.warning
            found = text.rfind("\n\n" + warning)
            cut_at = found if found >= 0 else None
            cut_line = folder.index.cut_file_line
    return ClaudePreview(
        text,
        exact,
        version,
        bank.project,
        bank.memory_dir,
        tuple(loaded),
        hidden,
        tuple(later),
        tuple(never),
        tuple(notes),
        cut_at,
        cut_line,
        lines,
    )
