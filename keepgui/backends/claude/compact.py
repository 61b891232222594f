"""Compaction of a Claude Code ``MEMORY.md`` that is over its limits, as a plan that keeps every fact.

When the index is over 200 lines or 25,000 UTF-16 units, the next session
silently loses its tail — the newest entries, since the agent appends. The plan
(a :class:`keepgui.core.compaction.Plan`) proposes only changes that keep every
fact where Claude can find it:

* **shorten** an index line over :data:`LONG_LINE` units: the hook is cut at a
  word boundary and its full text moves into the linked topic file (under a
  ``From the index:`` line), so nothing is lost;
* **merge duplicate entries**: several lines linking the same file become the
  first one, the others' words that the first lacks going to the topic file;
* **move detail**: prose lines of the index (not entries, headings or blank
  lines) move into a topic file ``index-notes.md`` with one index line;
* **reorder** the entries newest first (by the topic file's modification
  time), so what is still cut is the oldest, never the newest.

Each operation carries its reason and its diff; the selection is applied as one
undoable change (every file checked against what the plan read; undo refused
if anything changed since). No topic file is ever deleted.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from keepgui.core import fsio
from keepgui.backends.claude.jstext import utf16_len, utf16_slice
from keepgui.backends.claude.memory import (
    INDEX_NAME,
    LINE_LIMIT,
    SIZE_LIMIT,
    MemoryFolder,
    Prepared,
    cut_index,
    parse_link_line,
    read_folder,
)
from keepgui.backends.claude.writes import FileSwap, MemoryChange, newline_of, split_lines, writable_path
from keepgui.core.compaction import (
    REVIEW_KINDS,
    Applied,
    Counts,
    Operation,
    Plan,
    Selection,
    make_operation,
    register_applied_kind,
    register_kinds,
    words_only_in,
)
from keepgui.core.errors import InvalidInput
from keepgui.core.history import History
from keepgui.core.textdiff import unified

INDEX_KINDS = register_kinds(
    {
        "duplicate": "Exact duplicates",
        # a MEMORY.md over its limits
        "shorten": "Index lines too long (the detail moves into the topic file)",
        "move-detail": "Detail in the index (moves into a topic file)",
        "reorder": "Newest entries first (what stays cut is the oldest)",
    }
)
"""The kinds of a plan for a MEMORY.md over its limits, in the order it lists them."""

LONG_LINE = 200
"""An index line longer than this (UTF-16 units) is shortened: the CLI asks for one line under ~200 chars."""

SHORT_HOOK = 120
"""A shortened line keeps about this many units of its hook."""

NOTES_FILE = "index-notes.md"
"""The topic file prose moved out of the index goes to."""


def short_hook(hook: str, budget: int) -> str:
    """``hook`` cut at a word near ``budget`` UTF-16 units, with ``…`` (as it is when it fits)."""
    if utf16_len(hook) <= budget:
        return hook
    cut = utf16_slice(hook, budget)
    space = cut.rfind(" ")
    if space > budget // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:—-") + "…"


class FolderApplied(Applied):
    """An applied plan of a memory folder: the files it changed, and their exact undo and redo."""

    kind = "claude-memory"

    def __init__(self, swap: FileSwap, lines: Iterable[str], changed: bool) -> None:
        super().__init__(swap.text, lines, changed, swap.memory_dir)
        self.swap = swap
        self.change: MemoryChange | None = None

    def _undo(self) -> None:
        self.change = self.swap.undo()

    def _redo(self) -> None:
        self.change = self.swap.redo()

    def to_obj(self) -> dict[str, Any]:
        """For the command line's ``--undo`` in a later process: each file's bytes before and after by
        their SHA-256 (keepgui's history holds both: every write records what it replaced and wrote)."""

        def sha(data: bytes | None) -> str | None:
            return None if data is None else hashlib.sha256(data).hexdigest()

        return {
            **super().to_obj(),
            "memory_dir": self.swap.memory_dir,
            "files": [[path, sha(before), sha(after)] for path, before, after in self.swap.files],
        }

    @classmethod
    def from_obj(cls, obj: dict[str, Any], history: History) -> FolderApplied:
        """An applied plan of a folder back from :meth:`to_obj`."""

        def data(path: str, sha: str | None) -> bytes | None:
            return None if sha is None else history.read(history.find(path, sha))

        try:
            files = [(path, data(path, before), data(path, after)) for path, before, after in obj["files"]]
            swap = FileSwap(obj["memory_dir"], history, files, obj["description"])
            applied = cls(swap, obj.get("lines", ()), bool(obj.get("changed", True)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable entry ({exc})") from None
        applied.state = obj.get("state", "applied")
        applied.at = obj.get("at", applied.at)
        return applied


register_applied_kind(FolderApplied.kind, FolderApplied.from_obj)


DROP = "\x00keepgui-drop\x00"
"""An index line an edit marks for removal (line numbers stay stable until every edit ran)."""


class Texts:
    """The files' texts while a plan's edits run: what an edit set, else what the plan read."""

    def __init__(self, plan: FolderPlan) -> None:
        self.plan = plan
        self.changed: dict[str, str | None] = {}

    def __getitem__(self, rel: str) -> str | None:
        return self.changed[rel] if rel in self.changed else self.plan.original(rel)

    def __setitem__(self, rel: str, text: str | None) -> None:
        self.changed[rel] = text

    def get(self, rel: str) -> str | None:
        """The text of ``rel`` (None when the file is absent)."""
        return self[rel]


Edit = Callable[[Texts], None]
"""One operation's edit of the files' texts."""

_IndexLine = tuple[int, str, str, str, str]
"""A linking index line: (physical line number 0-based, title, target, hook, line text)."""


class FolderPlan(Plan):
    """A plan over a memory folder's files: each operation's edit is a function of the files' texts.

    Subclasses give the operations and, per operation (by its position in the
    list given), an edit ``function(texts: Texts) -> None``; this class renders
    any selection as a diff, checks freshness and applies it as one change.
    """

    KINDS = INDEX_KINDS + REVIEW_KINDS

    def __init__(
        self,
        folder: MemoryFolder,
        history: History | None,
        operations: Sequence[Operation],
        edits: Sequence[Edit],
        subject: str,
    ) -> None:
        super().__init__(operations, (), subject)
        self.folder = folder
        self.history = history or History()
        self._edits = edits
        self._originals: dict[str, tuple[bytes | None, str | None]] = {}
        self._stamps = {INDEX_NAME: folder.index.stamp, **{t.rel: t.stamp for t in folder.topics}}
        # read now every file an operation would touch, so a later change to any of them makes the plan stale
        self.texts_after([op.id for op in self.operations if op.applicable])

    def original(self, rel: str) -> str | None:
        """The text of ``rel`` as the plan read it (files are read when first needed; :meth:`check_fresh`
        refuses the apply if one changed after the folder was read)."""
        if rel not in self._originals:
            data, stamp = fsio.read_stamped(os.path.join(self.folder.path, rel))
            self._stamps.setdefault(rel, stamp)
            # surrogateescape: bytes that are not UTF-8 survive an edit of the lines around them
            self._originals[rel] = (data, None if data is None else data.decode("utf-8", errors="surrogateescape"))
        return self._originals[rel][1]

    def texts_after(self, selection: Selection = None) -> dict[str, str | None]:
        """``rel -> text`` of every file the selection changes (None: the file is absent)."""
        texts = Texts(self)
        for op in self.selected(selection):
            self._edits[self.origin[op.id]](texts)
        out: dict[str, str | None] = {}
        for rel, text in texts.changed.items():
            if rel == INDEX_NAME and text is not None:
                text = "".join(line for line in split_lines(text) if line.rstrip("\r\n") != DROP)
            if text != self.original(rel):
                out[rel] = text
        return out

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """A unified diff of every file the selection changes."""
        out = []
        for rel, text in sorted(self.texts_after(selection).items(), key=lambda kv: (kv[0] != INDEX_NAME, kv[0])):
            out.append(unified(self.original(rel) or "", text or "", f"a/{rel}", f"b/{rel}", context))
        return "".join(out)

    def check_fresh(self) -> None:
        """Every file the plan read still holds what it read (else :class:`StalePlan`)."""
        for rel, stamp in self._stamps.items():
            if not fsio.current_stamp(os.path.join(self.folder.path, rel)).same_content(stamp):
                raise self.stale(f"{rel} changed")

    def apply(self, selection: Selection = None) -> FolderApplied:
        """Write the selection as one change (after the freshness check)."""
        self.check_fresh()
        ops = self.selected(selection)
        files = []
        for rel, text in self.texts_after([op.id for op in ops]).items():
            path = os.path.join(self.folder.path, rel)
            writable_path(self.folder.path, path)
            self.original(rel)
            files.append(
                (
                    path,
                    self._originals[rel][0],
                    None if text is None else text.encode("utf-8", errors="surrogateescape"),
                )
            )
        swap = FileSwap(self.folder.path, self.history, files, self._description(ops))
        applied = FolderApplied(swap, [f"{op.label}: {op.reason}" for op in ops], bool(files))
        if files:
            applied.change = swap.apply()
        return applied

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"Compact MEMORY.md ({len(ops)} change{'s' if len(ops) != 1 else ''})"


def _topic_with(text: str | None, addition: str) -> str:
    text = text or ""
    newline = newline_of(text) if text else "\n"
    if text and not text.endswith(("\n", "\r")):
        text += newline
    return f"{text}{newline}From the index: {addition}{newline}"


def _replace_line(index: str, number: int, new: str | None) -> str:
    lines = split_lines(index)
    if new is None:
        del lines[number]
    else:
        ending = lines[number][len(lines[number].rstrip("\r\n")) :]
        lines[number] = new + ending
    return "".join(lines)


class IndexPlan(FolderPlan):
    """The compaction plan of a memory folder's index (see the module docstring)."""

    kind = "claude-index"

    def __init__(self, folder: MemoryFolder, history: History | None = None) -> None:
        operations, edits = _plan(folder)
        super().__init__(folder, history, operations, edits, folder.index.path)

    def replan(self) -> IndexPlan:
        """The plan computed again from the folder as it is now."""
        return IndexPlan(read_folder(self.folder.path), self.history)

    def counts(self, selection: Selection = None) -> Counts:
        """Index lines before → after (target 200), with the units and the entries past the cut."""
        before = self.folder.index.prepared.text if self.folder.index.prepared else ""
        after_text = self.texts_after(selection).get(INDEX_NAME, self.original(INDEX_NAME))
        after = Prepared(after_text or "").text
        cut_before, cut_after = cut_index(before), cut_index(after)
        return Counts(
            "lines",
            cut_before.lines if before else 0,
            cut_after.lines if after else 0,
            LINE_LIMIT,
            {
                "units_before": cut_before.units,
                "units_after": cut_after.units,
                "unit_limit": SIZE_LIMIT,
                "cut_lines_before": cut_before.lines - cut_before.kept_lines if cut_before.cut else 0,
                "cut_lines_after": cut_after.lines - cut_after.kept_lines if cut_after.cut else 0,
            },
        )


def _plan(folder: MemoryFolder) -> tuple[list[Operation], list[Edit]]:
    """The operations and their edits (by position) for a folder's index."""
    index = folder.index
    operations: list[Operation] = []
    edits: list[Edit] = []
    if not index.exists:
        return operations, edits
    raw_lines = split_lines(index.text)
    entries: list[_IndexLine] = []
    prose: list[tuple[int, str]] = []
    for number, line in enumerate(raw_lines):
        bare = line.rstrip("\r\n")
        parsed = parse_link_line(bare)
        if parsed is not None:
            entries.append((number, *parsed, bare))
        elif bare.strip() and not bare.lstrip().startswith(("#", "<!--", "-->", "---")):
            prose.append((number, bare))
    mtimes = {t.rel: t.mtime_ms for t in folder.topics}
    topics = {t.rel for t in folder.topics}
    # duplicates: every later line linking a file an earlier line links
    first_of: dict[str, _IndexLine] = {}
    dropped: set[int] = set()
    for entry in entries:
        number, title, target, hook, bare = entry
        if target not in first_of:
            first_of[target] = entry
            continue
        keeper = first_of[target]
        missing = words_only_in(f"{title} {hook}", f"{keeper[1]} {keeper[3]}")
        identical = bare.strip() == keeper[4].strip()
        dropped.add(number)

        def drop_line(
            texts: Texts, number: int = number, target: str = target, hook: str = hook, missing: list[str] = missing
        ) -> None:
            texts[INDEX_NAME] = _replace_line(texts[INDEX_NAME] or "", number, DROP)
            if missing and target in topics:
                texts[target] = _topic_with(texts.get(target), hook)

        reason = (
            f"line {number + 1} repeats line {keeper[0] + 1}"
            if identical
            else f"line {number + 1} links {target} like line {keeper[0] + 1}; "
            + (f"its other words ({', '.join(missing[:6])}) move into {target}" if missing else "it adds no words")
        )
        operations.append(
            make_operation(
                "duplicate",
                [target],
                [bare],
                [],
                reason,
                selected=identical or not missing or target in topics,
                evidence=[keeper[4]],
            )
        )
        edits.append(drop_line)
    # long lines: shorten the hook, its whole text goes into the topic file
    for number, title, target, hook, bare in entries:
        if number in dropped or utf16_len(bare) <= LONG_LINE or not hook:
            continue
        head = bare[: bare.find(hook)] if hook in bare else f"- [{title}]({target}) — "
        short = head + short_hook(hook, max(20, SHORT_HOOK - utf16_len(head)))

        def shorten(
            texts: Texts, number: int = number, short: str = short, target: str = target, hook: str = hook
        ) -> None:
            texts[INDEX_NAME] = _replace_line(texts[INDEX_NAME] or "", number, short)
            texts[target] = _topic_with(texts.get(target), hook)

        exists = target in topics
        operations.append(
            make_operation(
                "shorten",
                [target],
                [bare],
                [short],
                f"line {number + 1} is {utf16_len(bare)} characters; the CLI asks for one line under ~200. "
                + (
                    f"The whole hook moves into {target}."
                    if exists
                    else f"{target} is missing, so the hook would be lost — not selected."
                ),
                selected=exists,
                applicable=exists,
            )
        )
        edits.append(shorten)
    # prose: move it into a notes topic file
    if prose:
        notes = [bare for _n, bare in prose]
        numbers = [n for n, _b in prose]
        pointer = (
            f"- [Notes from the index]({NOTES_FILE}) — {len(notes)} line{'s' if len(notes) != 1 else ''} "
            "of detail moved out of MEMORY.md"
        )

        def move_detail(
            texts: Texts, numbers: list[int] = numbers, notes: list[str] = notes, pointer: str = pointer
        ) -> None:
            # the pointer takes the first prose line's place (near the top: it is loaded), the rest go
            index_text = _replace_line(texts[INDEX_NAME] or "", numbers[0], pointer)
            for n in numbers[1:]:
                index_text = _replace_line(index_text, n, DROP)
            texts[INDEX_NAME] = index_text
            texts[NOTES_FILE] = _topic_with(
                texts.get(NOTES_FILE)
                or (
                    "---\nname: index-notes\ndescription: Detail that was written into MEMORY.md itself\nmetadata:\n"
                    "  type: reference\n---\n"
                ),
                "\n".join(notes),
            )

        operations.append(
            make_operation(
                "move-detail",
                [NOTES_FILE],
                notes,
                [pointer],
                f"{len(notes)} line{'s are' if len(notes) != 1 else ' is'} detail, "
                f"not an index entry: moved into {NOTES_FILE}, which one entry points at",
                selected=index.cut is not None and index.cut.cut,
            )
        )
        edits.append(move_detail)
    # reorder newest first when entries are cut
    if index.cut is not None and index.cut.cut and len(entries) > 1:
        order = sorted(entries, key=lambda e: (-mtimes.get(e[2], 0), e[0]))
        if [e[0] for e in order] != [e[0] for e in entries]:
            slots = [e[0] for e in entries]
            hidden = {e.target for e in index.entries if not e.loaded}
            rising = [e for e in order[: len(entries) - len(hidden)] if e[2] in hidden]

            def reorder(texts: Texts, slots: list[int] = slots, order: list[_IndexLine] = order) -> None:
                lines = split_lines(texts[INDEX_NAME] or "")
                current = {slot: lines[slot].rstrip("\r\n") for slot in slots if slot < len(lines)}
                for slot, entry in zip(slots, order, strict=True):
                    if slot < len(lines) and entry[0] in current:
                        ending = lines[slot][len(lines[slot].rstrip("\r\n")) :]
                        lines[slot] = current[entry[0]] + ending
                texts[INDEX_NAME] = "".join(lines)

            operations.append(
                make_operation(
                    "reorder",
                    [e[2] for e in rising],
                    [e[4] for e in entries],
                    [e[4] for e in order],
                    f"entries newest first (by the topic file's time): {len(rising)} of the {len(hidden)} entries now "
                    "past the cut move into the part Claude loads; what stays cut is the oldest",
                    selected=True,
                )
            )
            edits.append(reorder)
    return operations, edits


def plan_index(memory_dir: str, history: History | None = None) -> IndexPlan:
    """The compaction plan of a memory folder's ``MEMORY.md``."""
    return IndexPlan(read_folder(memory_dir), history)
