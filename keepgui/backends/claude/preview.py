"""What the next Claude Code session in a project is given at its start, laid out for the window.

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
from typing import TYPE_CHECKING

from keepgui.backends.claude import CHECKED_VERSION
from keepgui.backends.claude.context import TAKES_EFFECT, render_reminder, session_context
from keepgui.backends.claude.instructions import AUTO_MEMORY, LABELS
from keepgui.backends.claude.jstext import utf16_len
from keepgui.backends.claude.memory import INDEX_NAME, IndexEntry, MemoryFolder, read_folder

if TYPE_CHECKING:
    from keepgui.backends.claude.project import ClaudeProject

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
    cut_warning: str = ""
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
        warning,
        cut_line,
        lines,
    )
