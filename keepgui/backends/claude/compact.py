"""Compaction and review of a Claude Code memory folder: plans a person reviews before anything is written.

Compaction of a Claude Code ``MEMORY.md`` that is over its limits, as a plan that keeps every fact.

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

Review what Claude (or Auto Dream) changed in a memory folder, entry by entry, and restore.

keepgui keeps every version of the memory folder it has seen: :func:`remember`
stores each ``*.md`` file's bytes in keepgui's history (content-addressed,
outside the folder) and a *manifest* of the folder (``rel -> sha256``) as a
version of a virtual file beside them, only when something changed. The
*baseline* is the manifest a person last accepted (keepgui's own writes accept
what they leave); :func:`review` compares it with the folder now:

* a topic file gone is **deleted** — or **merged** when its body now stands,
  nearly word for word, in another file that was added or rewritten;
* a topic file with other bytes is **rewritten**; a new one is **new**;
* ``MEMORY.md`` shortened or rewritten is reported with its line counts, and
  every entry line dropped for a file that still exists can be put back.

The review is a :class:`keepgui.core.compaction.Plan`, so the existing review
dialog shows it: each operation is a restore (selected: none by default), the
diff shows what applying it writes, and the apply is one undoable change.
:meth:`FolderReview.accept` takes the folder as it is as the new baseline.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from keepgui.backends.claude.jstext import utf16_len, utf16_slice
from keepgui.backends.claude.markdown import decode, split_front_matter
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
from keepgui.backends.claude.writes import FileSwap, MemoryChange, links_to, newline_of, split_lines, writable_path
from keepgui.core import fsio, pace
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
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.history import History, Journal
from keepgui.core.textdiff import unified
from keepgui.core.timefmt import now_ms

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


_Planned = tuple[Operation, Edit]
"""An operation with its edit."""


def _plan(folder: MemoryFolder) -> tuple[list[Operation], list[Edit]]:
    """The operations and their edits (by position) for a folder's index."""
    index = folder.index
    if not index.exists:
        return [], []
    entries, prose = _index_lines(index.text)
    topics = {t.rel for t in folder.topics}
    duplicates, dropped = _duplicates(entries, topics)
    planned = [
        *duplicates,
        *_long_lines([e for e in entries if e[0] not in dropped], topics),
        *_prose(prose, index.cut is not None and index.cut.cut),
        *_reorder(entries, folder),
    ]
    return [op for op, _edit in planned], [edit for _op, edit in planned]


def _index_lines(text: str) -> tuple[list[_IndexLine], list[tuple[int, str]]]:
    """The index's linking lines, and its prose lines (not a heading, comment or rule) by line number."""
    entries: list[_IndexLine] = []
    prose: list[tuple[int, str]] = []
    for number, line in enumerate(split_lines(text)):
        bare = line.rstrip("\r\n")
        parsed = parse_link_line(bare)
        if parsed is not None:
            entries.append((number, *parsed, bare))
        elif bare.strip() and not bare.lstrip().startswith(("#", "<!--", "-->", "---")):
            prose.append((number, bare))
    return entries, prose


def _duplicates(entries: list[_IndexLine], topics: set[str]) -> tuple[list[_Planned], set[int]]:
    """Every later line linking a file an earlier line links goes; its other words move into the
    topic file. Also returns the numbers of the lines dropped."""
    planned: list[_Planned] = []
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
        operation = make_operation(
            "duplicate",
            [target],
            [bare],
            [],
            reason,
            selected=identical or not missing or target in topics,
            evidence=[keeper[4]],
        )
        planned.append((operation, drop_line))
    return planned, dropped


def _long_lines(entries: list[_IndexLine], topics: set[str]) -> list[_Planned]:
    """Lines over ~200 characters: the hook is shortened, its whole text goes into the topic file."""
    planned: list[_Planned] = []
    for number, title, target, hook, bare in entries:
        if utf16_len(bare) <= LONG_LINE or not hook:
            continue
        head = bare[: bare.find(hook)] if hook in bare else f"- [{title}]({target}) — "
        short = head + short_hook(hook, max(20, SHORT_HOOK - utf16_len(head)))

        def shorten(
            texts: Texts, number: int = number, short: str = short, target: str = target, hook: str = hook
        ) -> None:
            texts[INDEX_NAME] = _replace_line(texts[INDEX_NAME] or "", number, short)
            texts[target] = _topic_with(texts.get(target), hook)

        exists = target in topics
        operation = make_operation(
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
        planned.append((operation, shorten))
    return planned


def _prose(prose: list[tuple[int, str]], cut: bool) -> list[_Planned]:
    """Prose in the index moves into a notes topic file, which one entry points at (selected when the
    index is cut)."""
    if not prose:
        return []
    notes = [bare for _n, bare in prose]
    numbers = [n for n, _b in prose]
    pointer = (
        f"- [Notes from the index]({NOTES_FILE}) — {len(notes)} line{'s' if len(notes) != 1 else ''} "
        "of detail moved out of MEMORY.md"
    )

    def move_detail(texts: Texts) -> None:
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

    operation = make_operation(
        "move-detail",
        [NOTES_FILE],
        notes,
        [pointer],
        f"{len(notes)} line{'s are' if len(notes) != 1 else ' is'} detail, "
        f"not an index entry: moved into {NOTES_FILE}, which one entry points at",
        selected=cut,
    )
    return [(operation, move_detail)]


def _reorder(entries: list[_IndexLine], folder: MemoryFolder) -> list[_Planned]:
    """When entries are cut: newest first (by the topic file's time), so what stays cut is the oldest."""
    index = folder.index
    if index.cut is None or not index.cut.cut or len(entries) < 2:
        return []
    mtimes = {t.rel: t.mtime_ms for t in folder.topics}
    order = sorted(entries, key=lambda e: (-mtimes.get(e[2], 0), e[0]))
    if [e[0] for e in order] == [e[0] for e in entries]:
        return []
    slots = [e[0] for e in entries]
    hidden = {e.target for e in index.entries if not e.loaded}
    rising = [e for e in order[: len(entries) - len(hidden)] if e[2] in hidden]

    def reorder(texts: Texts) -> None:
        lines = split_lines(texts[INDEX_NAME] or "")
        current = {slot: lines[slot].rstrip("\r\n") for slot in slots if slot < len(lines)}
        for slot, entry in zip(slots, order, strict=True):
            if slot < len(lines) and entry[0] in current:
                ending = lines[slot][len(lines[slot].rstrip("\r\n")) :]
                lines[slot] = current[entry[0]] + ending
        texts[INDEX_NAME] = "".join(lines)

    operation = make_operation(
        "reorder",
        [e[2] for e in rising],
        [e[4] for e in entries],
        [e[4] for e in order],
        f"entries newest first (by the topic file's time): {len(rising)} of the {len(hidden)} entries now "
        "past the cut move into the part Claude loads; what stays cut is the oldest",
        selected=True,
    )
    return [(operation, reorder)]


def plan_index(memory_dir: str, history: History | None = None) -> IndexPlan:
    """The compaction plan of a memory folder's ``MEMORY.md``."""
    return IndexPlan(read_folder(memory_dir), history)


MANIFEST_NAME = ".keepgui-folder-versions"
"""The virtual file (never created on disk) whose versions in keepgui's history are the folder's manifests."""

MERGE_THRESHOLD = 90.0
"""A deleted memory counts as merged into an added or rewritten file that holds its body this closely
(rapidfuzz ``partial_ratio``: the best-matching stretch of the other file)."""

MERGE_MIN_CHARS = 20
"""A body shorter than this is never called merged (too little to tell)."""


def manifest_path(memory_dir: str) -> str:
    """The history key of a folder's manifests."""
    return os.path.join(memory_dir, MANIFEST_NAME)


def _manifest_of(
    folder: MemoryFolder, compare: dict[str, str] | None = None
) -> tuple[dict[str, str], dict[str, bytes]]:
    """``(rel -> sha256, rel -> bytes)`` of the folder's files. A file whose stamp (as the folder was
    read) matches ``compare`` is taken from the stamp and not read again; the others are read, and
    their bytes returned (every file's when ``compare`` is None)."""
    files: dict[str, str] = {}
    data: dict[str, bytes] = {}
    paths = [(t.rel, t.path, t.stamp) for t in folder.topics]
    if folder.index.exists:
        paths.append((INDEX_NAME, folder.index.path, folder.index.stamp))
    for rel, path, stamp in paths:
        pace.checkpoint()  # read again a file a step, giving way to a busy window
        if compare is not None and stamp.sha256 and compare.get(rel) == stamp.sha256:
            files[rel] = stamp.sha256
            continue
        try:
            content, _stamp = fsio.read_stamped(path)
        except (OSError, KeepguiError):
            continue
        if content is not None:
            files[rel] = hashlib.sha256(content).hexdigest()
            data[rel] = content
    return files, data


def _encode(files: dict[str, str]) -> bytes:
    return json.dumps({"files": files}, sort_keys=True, separators=(",", ":")).encode("utf-8")


REMEMBER_STEP = 256
"""Versions :func:`remember` stores with one batch of syncs (:meth:`History.record_many`), between
two reports of its progress."""


def remember(
    folder: MemoryFolder,
    history: History | None = None,
    *,
    source: str = "seen",
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """Store the folder's files and its manifest in keepgui's history; returns the manifest's sha256.
    ``progress(done, total)``: the folder's files stored or found unchanged (a first sight of 1,000
    topic files is a thousand versions, seconds), first before any is read."""
    history = history or History()
    total = len(folder.topics) + int(folder.index.exists)
    if progress is not None:
        progress(0, total)  # before the files are read again for their hashes (5,000: half a second)
    previous = load_manifest(history, folder.path)
    files, data = _manifest_of(folder, previous)
    new = [rel for rel, sha in files.items() if previous.get(rel) != sha]
    for done in range(0, len(new), REMEMBER_STEP):
        if progress is not None and done:
            progress(total - len(new) + done, total)  # the files unchanged since count as done
        step = new[done : done + REMEMBER_STEP]
        history.record_many([(os.path.join(folder.path, rel), data[rel]) for rel in step], source=source)
    return history.record(manifest_path(folder.path), _encode(files), source=source).sha256


def load_manifest(history: History, memory_dir: str, sha256: str | None = None) -> dict[str, str]:
    """A manifest (``rel -> sha256``): the one with ``sha256``, else the latest ({} when none)."""
    key = manifest_path(memory_dir)
    version = history.find(key, sha256) if sha256 else history.latest(key)
    if version is None:
        return {}
    try:
        obj = json.loads(history.read(version))
    except (KeepguiError, ValueError):
        return {}
    files = obj.get("files") if isinstance(obj, dict) else None
    return (
        {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(files, dict) else {}
    )


class Baselines(Journal):
    """Which manifest of each folder a person accepted last (keepgui's own writes accept too)."""

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "claude-reviewed.jsonl")

    def accept(self, memory_dir: str, sha256: str) -> None:
        """Take the manifest ``sha256`` as the folder's baseline."""
        # a fresh id per event: accepting an earlier manifest again must make it the latest
        self._append(
            {
                "event": "accepted",
                "id": secrets.token_hex(8),
                "memory_dir": os.path.realpath(memory_dir),
                "sha256": sha256,
                "at": now_ms(),
            }
        )

    def latest(self, memory_dir: str) -> str | None:
        """The sha256 of the folder's accepted manifest, or None."""
        key = os.path.realpath(memory_dir)
        found = [e for e in self.standing("accepted", "withdrawn") if e.get("memory_dir") == key]
        return found[-1].get("sha256") if found else None


def accept_current(folder: MemoryFolder, history: History | None = None, source: str = "seen") -> str:
    """Remember the folder and take it as it is as the baseline; returns the manifest's sha256."""
    history = history or History()
    sha = remember(folder, history, source=source)
    Baselines(history).accept(folder.path, sha)
    return sha


def _label(rel: str, data: bytes) -> str:
    """How a review lists a memory: its file and the first line of its text (the diff shows it whole)."""
    body = split_front_matter(decode(data)).body
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return f"{rel}: {first}" if first else rel


def _body_words(data: bytes) -> str:
    """A topic file's body (front matter left out) as rapidfuzz compares it."""
    return default_process(split_front_matter(decode(data)).body)


class FolderReview(FolderPlan):
    """The changes since the baseline, each a restore operation (see the module docstring)."""

    kind = "claude-review"

    def __init__(
        self, folder: MemoryFolder, history: History, baseline: dict[str, str], baseline_sha: str | None
    ) -> None:
        self.baseline = baseline
        self.baseline_sha = baseline_sha
        self.current, self._data = _manifest_of(folder, baseline)
        operations, edits, self.summary_parts = _review(folder, history, baseline, self.current, self._data)
        super().__init__(folder, history, operations, edits, folder.path)

    @property
    def pending(self) -> bool:
        """True when the folder differs from its baseline."""
        return bool(self.baseline) and self.baseline != self.current

    def describe(self) -> str:
        """``3 memories deleted, 2 merged, index shortened (230 → 140 lines)`` ("no changes" when none)."""
        return ", ".join(self.summary_parts) or "no changes since the last review"

    def replan(self) -> FolderReview:
        """The review computed again from the folder as it is now."""
        return review(self.folder.path, self.history)

    def counts(self, selection: Selection = None) -> Counts:
        """Memories now → after restoring the selection."""
        after: dict[str, str | None] = dict(self.current)
        for rel, text in self.texts_after(selection).items():
            if rel != INDEX_NAME:
                after[rel] = "restored" if text is not None else None
        live = [r for r, v in after.items() if v is not None and r != INDEX_NAME]
        now = [r for r in self.current if r != INDEX_NAME]
        return Counts(
            "memories", len(now), len(live), None, {"baseline": len([r for r in self.baseline if r != INDEX_NAME])}
        )

    def accept(self) -> str:
        """Take the folder as this review saw it as the baseline (a change made after the review was
        computed still shows in the next one)."""
        sha = self.history.record(manifest_path(self.folder.path), _encode(self.current), source="accepted").sha256
        Baselines(self.history).accept(self.folder.path, sha)
        return sha

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"Restore {len(ops)} change{'s' if len(ops) != 1 else ''} to the memory folder"


def _review(
    folder: MemoryFolder, history: History, base: dict[str, str], now: dict[str, str], data: dict[str, bytes]
) -> tuple[list[Operation], list[Edit], list[str]]:
    """The restore operations, their edits (by position) and the summary's parts for a folder's changes
    from ``base`` (its baseline manifest) to ``now``."""
    if not base or base == now:
        return [], [], []
    before = _Before(folder, history, base)
    deleted = _deleted(before, now, data)
    rewritten = _rewritten(before, now, data)
    new = _new(base, now, data)
    index_lines, summary_index = _index_changes(before, now, data)
    merged = sum(1 for op, _edit in deleted if op.kind == "merged")
    summary: list[str] = []
    counts = ((len(deleted) - merged, "deleted"), (merged, "merged"), (len(rewritten), "rewritten"), (len(new), "new"))
    for count, what in counts:
        if count:
            summary.append(
                f"{count} {'memory' if count == 1 else 'memories'} {what}" if not summary else f"{count} {what}"
            )
    if summary_index:
        summary.append(summary_index)
    planned = [*deleted, *rewritten, *new, *index_lines]
    return [op for op, _edit in planned], [edit for _op, edit in planned], summary


class _Before:
    """The folder at its baseline: each file's bytes read back from keepgui's history, and the index's lines."""

    def __init__(self, folder: MemoryFolder, history: History, base: dict[str, str]) -> None:
        self.folder = folder
        self.history = history
        self.base = base
        self.index = self.bytes(INDEX_NAME) if INDEX_NAME in base else None
        self.index_lines = split_lines(self.index.decode("utf-8", errors="surrogateescape")) if self.index else []

    def bytes(self, rel: str) -> bytes | None:
        """The bytes ``rel`` had (None when the history no longer has them)."""
        try:
            return self.history.read(self.history.find(os.path.join(self.folder.path, rel), self.base[rel]))
        except KeepguiError:
            return None

    def index_lines_for(self, rel: str) -> list[tuple[int, str]]:
        """The index lines (by line number) that linked ``rel``."""
        return [(n, line) for n, line in enumerate(self.index_lines) if links_to(line, rel)]


def _restore_lines(texts: Texts, lines: list[tuple[int, str]], rel: str) -> None:
    """Put index ``lines`` linking ``rel`` back at their numbers, unless a line links it already."""
    index = texts[INDEX_NAME] or ""
    current = split_lines(index)
    if any(links_to(line, rel) for line in current):
        return
    newline = "\r\n" if index.endswith("\r\n") else "\n"
    if current and not current[-1].endswith(("\n", "\r")):
        current[-1] += newline
    for position, line in lines:
        current.insert(min(position, len(current)), line if line.endswith(("\n", "\r")) else line + newline)
    texts[INDEX_NAME] = "".join(current)


def _deleted(before: _Before, now: dict[str, str], data: dict[str, bytes]) -> list[_Planned]:
    """Memories deleted ("removed"), or deleted with their words now in a file added or changed ("merged");
    restoring writes the file back with its index lines."""
    base = before.base
    added_or_changed = {rel: data[rel] for rel in now if rel != INDEX_NAME and base.get(rel) != now[rel]}
    planned: list[_Planned] = []
    for rel in sorted(r for r in base if r != INDEX_NAME and r not in now):
        old = before.bytes(rel)
        if old is None:
            continue
        words = _body_words(old)
        into = None
        if len(words) >= MERGE_MIN_CHARS:
            for other, content in added_or_changed.items():
                if fuzz.partial_ratio(words, _body_words(content)) >= MERGE_THRESHOLD:
                    into = other
                    break
        lines = before.index_lines_for(rel)

        def restore_deleted(
            texts: Texts, rel: str = rel, old: bytes = old, lines: list[tuple[int, str]] = lines
        ) -> None:
            texts[rel] = old.decode("utf-8", errors="surrogateescape")
            if lines:
                _restore_lines(texts, lines, rel)

        if into:
            reason = (
                f"{rel} was deleted; its words now stand in {into} (merged). Restore brings the file back "
                "and leaves the merged one as it is"
            )
        else:
            reason = f"{rel} was deleted. Restore writes it back" + (" with its index line" if lines else "")
        operation = make_operation(
            "merged" if into else "removed",
            [rel],
            [_label(rel, old)],
            [],
            reason,
            evidence=[into] if into else [],
        )
        planned.append((operation, restore_deleted))
    return planned


def _rewritten(before: _Before, now: dict[str, str], data: dict[str, bytes]) -> list[_Planned]:
    """Memories rewritten: restoring puts the earlier version back."""
    base = before.base
    planned: list[_Planned] = []
    for rel in sorted(r for r in now if r != INDEX_NAME and r in base and base[r] != now[r]):
        old = before.bytes(rel)
        if old is None:
            continue

        def restore_rewritten(texts: Texts, rel: str = rel, old: bytes = old) -> None:
            texts[rel] = old.decode("utf-8", errors="surrogateescape")

        operation = make_operation(
            "reworded",
            [rel],
            [_label(rel, old)],
            [_label(rel, data[rel])],
            f"{rel} was rewritten. Restore puts the earlier version back",
        )
        planned.append((operation, restore_rewritten))
    return planned


def _new(base: dict[str, str], now: dict[str, str], data: dict[str, bytes]) -> list[_Planned]:
    """New memories: reported only (keepgui never deletes a memory unasked)."""
    return [
        (
            make_operation(
                "new",
                [rel],
                [],
                [_label(rel, data[rel])],
                f"{rel} is new (reported only: keepgui never deletes a memory unasked)",
                applicable=False,
            ),
            _reported_only,
        )
        for rel in sorted(r for r in now if r != INDEX_NAME and r not in base)
    ]


def _index_changes(before: _Before, now: dict[str, str], data: dict[str, bytes]) -> tuple[list[_Planned], str]:
    """Index lines dropped for memories that still exist (restoring puts them back), and the summary's
    part about the index ("" when it did not change)."""
    base = before.base
    if INDEX_NAME not in base or base.get(INDEX_NAME) == now.get(INDEX_NAME) or before.index is None:
        return [], ""
    old_lines = before.index_lines
    now_lines = split_lines(data[INDEX_NAME].decode("utf-8", errors="surrogateescape")) if INDEX_NAME in data else []
    dropped: list[tuple[int, str]] = []
    now_targets = {p[1] for p in (parse_link_line(line.rstrip("\r\n")) for line in now_lines) if p}
    for n, line in enumerate(old_lines):
        parsed = parse_link_line(line.rstrip("\r\n"))
        if parsed and parsed[1] not in now_targets and parsed[1] in now:
            dropped.append((n, line))
    word = "shortened" if len(now_lines) < len(old_lines) else "rewritten"
    summary = f"index {word} ({len(old_lines)} → {len(now_lines)} lines)"
    if not dropped:
        return [], summary

    def restore_index_lines(texts: Texts) -> None:
        for n, line in dropped:
            parsed = parse_link_line(line.rstrip("\r\n"))
            if parsed is not None:  # every dropped line links a memory (it was chosen for that)
                _restore_lines(texts, [(n, line)], parsed[1])

    operation = make_operation(
        "removed",
        [INDEX_NAME],
        [line.rstrip("\r\n") for _n, line in dropped],
        [],
        f"{len(dropped)} index line{'s' if len(dropped) != 1 else ''} "
        "dropped for memories that still exist (not visible at session start). Restore puts them back",
    )
    return [(operation, restore_index_lines)], summary


def _reported_only(texts: Texts) -> None:
    """The edit of an operation that is only reported: it changes nothing."""


def review(memory_dir: str, history: History | None = None) -> FolderReview:
    """What changed in a memory folder since its baseline (the first look takes it as the baseline)."""
    history = history or History()
    folder = read_folder(memory_dir)
    accepted = Baselines(history).latest(memory_dir)
    if accepted is None:
        accepted = accept_current(folder, history)
    else:
        remember(folder, history)
    baseline = load_manifest(history, memory_dir, accepted)
    return FolderReview(folder, history, baseline, accepted)
