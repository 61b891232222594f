"""Compacting keep.md as a plan a person reviews — and reviewing rewrites someone else made.

Three kinds of plan, all edits of the file as it is now, so they share one way
of rendering a selection, applying it and undoing it (:class:`DocPlan`):

* :func:`plan_keep` — keepgui's own planner for the keep skill's compaction
  (over 150 lines → about 120). Safe operations, selected by default: exact
  duplicates after normalising (the first canonical copy stays); an entry
  contained, at word boundaries, in a more specific one; an entry of at least
  three words already stated in MEMORY.md, USER.md or AGENTS.md (the matching
  line is shown); rules about how the agent works (``triage``) moved to
  AGENTS.md; blank lines; entry stamps (``added 2025-03-01``, ``[2025-03-01
  14:22]``) reworded away. Judgement calls, never selected by default:
  near-duplicates (rapidfuzz ``token_set_ratio`` ≥ the threshold) proposed as
  a merge into the longer entry — "prefers tea" and "prefers green tea" are two
  facts — with the words the merge would lose; containment or a MEMORY.md
  match where the longer text adds a negation ("eats meat" / "never eats
  meat"); fuzzy matches in MEMORY.md/USER.md; dates inside the fact ("moved to
  Lisbon in 2019"); headings; entries triage sends to /note, /remind or a
  project. The plan reports before → after → target and, when the safe
  operations cannot reach the target, how many entries remain to be chosen by
  hand. It never guesses which facts a person can live without.
* :func:`rewrite_via` — a configurable command (an LLM CLI...) gets keep.md on
  stdin and prints a rewritten file; its entries are compared with keep.md's
  and each difference becomes an operation (removed, duplicate, merged,
  reworded, new). Only lossless ones (a removed duplicate, a merge that still
  contains every original) are selected. keepgui itself makes no network call.
* :func:`review` — a rewrite someone else already wrote (the agent compacting,
  Dream, another tool) is compared, entry by entry, with the last version
  keepgui saw (:class:`~keepgui.core.history.History`): removed, merged,
  reworded, new (flagged: a compaction should add no facts). Each operation
  restores: the removed entry, the original wording, the merged originals, or
  takes the new line out; "restore all" selects every one.

**Composition.** Every operation is a set of line edits of the current file
(drop a line, rewrite a line, insert a line next to another, append a rule to
AGENTS.md), and any selection is those edits together: a dropped line stays
dropped, no two operations rewrite the same line, inserted lines keep the
order they had. The diff rendered for a selection is therefore exactly what
applying it writes.

**Applying** re-reads keep.md (and the files the plan relied on: MEMORY.md,
USER.md, AGENTS.md) and refuses with :class:`StalePlan`, carrying a re-plan,
when any of them changed. keep.md is then replaced in one atomic write with the
stamp it was planned from; the version replaced is recorded in keepgui's
history and every removed entry is logged (so ``unforget`` can bring one back).
:class:`FileApplied` undoes it all: the exact previous bytes go back, after its
own stamp check.

**What keepgui has seen vs what a person accepted.** keepgui records every
version of keep.md it reads ("seen"). Seeing a rewrite does not accept it: the
review compares against the version just before the first change keepgui did
not make itself since the last *acceptance*, and only an explicit accept or
applying restores from a review records one (in ``reviewed.jsonl`` beside the
history). keepgui's own later edits (a keep, a compaction) do not accept an
earlier outside rewrite either; their removals and additions are labelled as
made through keepgui in the review. So a rewrite is never silently accepted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import signal
import subprocess
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from keepgui.backends.nanobot.dream import DOCUMENTS, append_lines
from keepgui.backends.nanobot.keepmd import (
    BOM,
    COMPACTION_TARGET,
    SOFT_CAP,
    ContainmentIndex,
    KeepDoc,
    canonical_line,
    contains,
    decode_text,
    entry_id,
    normalise,
)
from keepgui.backends.nanobot.workspace import AGENTS_MD, KEEP_MD, MEMORY_MD, USER_MD, Notice, Workspace
from keepgui.backends.nanobot.writes import AGENTS, FUZZY_THRESHOLD, NOTE, PROJECT, REMIND, line_key, triage
from keepgui.core import fsio, textdiff
from keepgui.core.compaction import (
    REVIEW_KINDS,
    UNREVIEWED_REWRITE,
    Applied,
    ChangedSince,
    Counts,
    Operation,
    Plan,
    Selection,
    StalePlan,
    excerpt,
    likeness,
    make_operation,
    near_duplicates,
    register_applied_kind,
    register_kinds,
    words_only_in,
)
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound, Unreadable
from keepgui.core.history import History, Journal, RemovedEntry, Version, file_key
from keepgui.core.timefmt import now_ms

PLANNER_KINDS = register_kinds(
    {
        "duplicate": "Exact duplicates",
        "contained": "Contained in a more specific entry",
        "stated-elsewhere": "Already stated in MEMORY.md, USER.md or AGENTS.md",
        "move-to-agents": "Rules for the agent: move to AGENTS.md",
        "blank": "Blank lines",
        "undate": "Dates and timestamps inside entries",
        "near-duplicate": "Near-duplicates (judgement call)",
        "misplaced": "Not a durable fact (note, reminder, project)",
        "heading": "Headings (keep.md is a flat list)",
    }
)
"""The kinds of a keep.md compaction plan, in the order it lists them."""

REVIEW_THRESHOLD = 75.0
"""``token_set_ratio`` from which a changed line counts as a rewording (or a merge) of a removed one.

Lower than the near-duplicate threshold: a compaction rewords freely
("Drinks green tea, never coffee after 14:00" → "Green tea; no coffee after
14:00" scores about 80), and pairing a rewording with its original is what
lets the review offer "restore the original wording" instead of showing a
removal plus a new fact.
"""

VIA_TIMEOUT = 300.0
"""Seconds a ``--via`` command may run (an LLM answering about a 150-line file)."""

USUAL_RANGE = (100, 130)
"""A compacted keep.md should end up about here (the keep skill says "about 120")."""

WRITTEN_SOURCES = frozenset({"saved", "compacted", "compaction-undone", "review-restored"})
"""History sources of versions keepgui wrote itself; every other version was found on disk."""

_MIN_STATED_WORDS = 3

# ---------------------------------------------------------------------- dates

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"(?:19|20)\d{2}"
_ISO_DATE = r"\d{4}-\d{2}-\d{2}|\d{4}/\d{2}/\d{2}"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?"
_DATE_TIME = rf"(?:{_ISO_DATE})(?:[T ]{_CLOCK})"
_ANY_DATE = (
    rf"(?:{_ISO_DATE}|{_MONTHS}\.? \d{{1,2}}(?:st|nd|rd|th)?,? {_YEAR}|\d{{1,2}}(?:st|nd|rd|th)? {_MONTHS}\.?,? "
    rf"{_YEAR}|{_MONTHS}\.?,? {_YEAR}|(?:early |mid-?|late )?{_YEAR})"
)
_STAMP_WORDS = r"(?:added|noted|saved|kept|updated|learned|learnt|recorded|captured|remembered|stored|logged)"
_SEP = r"[-–—|:;,]"

# Entry stamps: when a fact was noted, never the fact itself. Safe to drop.
_STAMPS = [
    # a stamp word with a date: "(added 2025-03-01)", "— noted: 2025-03-01 14:22", "saved on 2025-03-01"
    re.compile(
        rf"\s*{_SEP}?\s*[\[(]\s*{_STAMP_WORDS}\s*(?:on|at|:)?\s*(?:{_ISO_DATE})(?:[T ]{_CLOCK})?\s*[\])]", re.IGNORECASE
    ),
    re.compile(
        rf"\s*{_SEP}?\s*\b{_STAMP_WORDS}\s*(?:on|at|:)?\s*(?:{_ISO_DATE})(?:[T ]{_CLOCK})?(?=\s*$|\s*[\])])",
        re.IGNORECASE,
    ),
    # a date with a clock time at either end of the entry: how logs stamp lines
    re.compile(rf"^\s*[\[(]?\s*{_DATE_TIME}\s*[\])]?\s*{_SEP}?\s*"),
    re.compile(rf"\s*{_SEP}?\s*[\[(]?\s*{_DATE_TIME}\s*[\])]?\s*$"),
]

# Dates that may be the fact itself ("moved to Lisbon in 2019"): offered, never selected.
_CONTENT_DATES = [
    re.compile(
        rf"\s*,?\s*\b(?:in|on|since|from|during|until|till|by|as of|around|circa)\s+(?:the\s+)?{_ANY_DATE}\b",
        re.IGNORECASE,
    ),
    re.compile(rf"^\s*[\[(]\s*(?:{_ISO_DATE})\s*[\])]\s*{_SEP}?\s*|^\s*(?:{_ISO_DATE})\s*[:|–—]\s*"),
    re.compile(rf"\s*(?:{_SEP}\s*)?[\[(]\s*{_ANY_DATE}\s*[\])]\s*$|\s+[–—-]\s+(?:{_ISO_DATE})\s*$", re.IGNORECASE),
]
_HAS_DATE = re.compile(
    rf"\b(?:{_ISO_DATE}|{_MONTHS}\.? \d{{1,2}},? {_YEAR}|\d{{1,2}} {_MONTHS},? {_YEAR}|{_MONTHS} {_YEAR})\b"
    rf"|\b(?:in|on|since|from|during|until|by) {_YEAR}\b",
    re.IGNORECASE,
)
_DANGLING = re.compile(r"\b(?:is|was|are|on|in|at|the|a|an|of|to|from|by|since|until)\s*$", re.IGNORECASE)


def _tidy(text: str) -> str:
    """Clean up what is left around a removed date: spaces, separators at either end, ``( )``."""
    text = re.sub(r"\(\s*\)|\[\s*\]", " ", text)
    text = re.sub(r"\s+([,;:.!?)])", r"\1", text)
    text = re.sub(r"([,;:])(?=[,;:])", "", text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    text = re.sub(r"^[\s,;:|–—-]+", "", text)
    return re.sub(r"[\s,;:|–—-]+$", "", text)


def _usable(before: str, after: str) -> str | None:
    if not after or len(after.split()) < 2 or _DANGLING.search(after) or normalise(after) == normalise(before):
        return None
    return after


def strip_stamps(text: str) -> str | None:
    """The fact without its entry stamps (when it was added or noted), or None when it has none.

    Only dates marked as stamps are taken (a stamp word, or a date with a clock
    time at either end of the entry), never the date a fact is about.
    """
    out = text
    for pattern in _STAMPS:
        out = pattern.sub(" ", out)
    return _usable(text, _tidy(out)) if out != text else None


def strip_dates(text: str) -> str | None:
    """The fact reworded without the dates inside it ("… in March 2019", "(2024-05-01)"), or None.

    Only dates that can go without breaking the sentence: after a preposition,
    in brackets at either end, or a ``DATE:`` prefix. "Birthday is 1988-03-14"
    has no such date: there the date is the fact.
    """
    out = text
    for pattern in _CONTENT_DATES:
        out = pattern.sub(" ", out)
    return _usable(text, _tidy(out)) if out != text else None


def has_date(text: str) -> bool:
    """True when ``text`` holds a calendar date or a year after a preposition."""
    return bool(_HAS_DATE.search(text))


# ---------------------------------------------------------------------- items and edits


@dataclass(frozen=True)
class Item:
    """A fact-bearing line of a document: a bullet entry, or a prose line (not a heading or blank).

    ``index``: its 0-based physical line; ``text``: the fact; ``raw``: the line as
    written; ``key``: :func:`normalise` d text; ``id``: stable as keep.md entry ids
    are; ``position``: its 0-based rank among the items.
    """

    id: str
    position: int
    index: int
    text: str
    raw: str
    key: str
    bullet: bool

    def quote(self) -> str:
        """``line 12 `text```, for reasons and evidence."""
        return f"line {self.index + 1} `{excerpt(self.text, 60)}`"


def items_of(doc: KeepDoc, *, prose: bool = True) -> list[Item]:
    """The fact-bearing lines of ``doc``; ``prose=False`` keeps bullet entries only."""
    seen: Counter[str] = Counter()
    out: list[Item] = []
    for line in doc.lines:
        if line.kind == "entry":
            text = line.entry_text or ""
        elif line.kind == "other" and prose:
            text = line.text.strip()
        else:
            continue
        key = normalise(text)
        if not key:
            continue
        seen[key] += 1
        out.append(Item(entry_id(key, seen[key]), len(out), line.index, text, line.text, key, line.kind == "entry"))
    return out


@dataclass(frozen=True)
class Edit:
    """The line edits of one operation on the current file.

    ``drops``: physical lines removed; ``rewrites``: ``(line, new text)``;
    ``inserts``: ``(anchor line, side, order, text)`` — ``side`` -1 puts the
    text before the anchor, +1 after it; anchor -1 means the end of the file;
    ``order`` keeps several inserts at one place in their original order;
    ``agents``: lines appended to AGENTS.md; ``removes``: the items taken out
    of the file (logged as removed entries so each can be restored alone).
    """

    drops: tuple[int, ...] = ()
    rewrites: tuple[tuple[int, str], ...] = ()
    inserts: tuple[tuple[int, int, float, str], ...] = ()
    agents: tuple[str, ...] = ()
    removes: tuple[Item, ...] = ()


def compose(doc: KeepDoc, edits: Iterable[Edit]) -> bytes:
    """The bytes of ``doc`` with ``edits`` applied together (see the module doc).

    A dropped line stays dropped even if another edit rewrites it; two
    different rewrites of one line are a planner bug (ValueError). Lines
    keep their own endings; new lines take the file's usual one; a file that
    had no final newline still has none, one that had one keeps it.
    """
    drops: set[int] = set()
    rewrites: dict[int, str] = {}
    before: dict[int, list[tuple[float, str]]] = defaultdict(list)
    after: dict[int, list[tuple[float, str]]] = defaultdict(list)
    end: list[tuple[float, str]] = []
    for edit in edits:
        drops.update(edit.drops)
        for index, text in edit.rewrites:
            if rewrites.get(index, text) != text:
                raise ValueError(f"two operations rewrite line {index + 1} differently")
            rewrites[index] = text
        for anchor, side, order, text in edit.inserts:
            (end if anchor < 0 else (before if side < 0 else after)[anchor]).append((order, text))
    newline = doc.newline
    out: list[list[str]] = []
    for line in doc.lines:
        out.extend([text, newline] for _order, text in sorted(before.get(line.index, ())))
        if line.index not in drops:
            out.append([rewrites.get(line.index, line.text), line.ending])
        out.extend([text, newline] for _order, text in sorted(after.get(line.index, ())))
    out.extend([text, newline] for _order, text in sorted(end))
    for item in out[:-1]:
        if not item[1]:
            item[1] = newline
    if out:
        out[-1][1] = (out[-1][1] or newline) if doc.has_final_newline else ""
    body = "".join(text + ending for text, ending in out).encode("utf-8")
    return BOM + body if doc.bom else body


def _decode(data: bytes | None) -> str:
    if not data:
        return ""
    return data.decode("utf-8-sig", errors="replace")


def _end_anchor(doc: KeepDoc) -> int:
    """Where an entry added "at the end" goes: after the last non-blank line (-1: the very end)."""
    for line in reversed(doc.lines):
        if line.kind != "blank":
            return line.index
    return -1


# ---------------------------------------------------------------------- the plan of a document


class DocPlan(Plan):
    """A plan of line edits to one workspace document (keep.md, or MEMORY.md for a review).

    ``data``/``stamp``/``doc``: the file as planned from (``doc`` is parsed from
    ``data`` unless the caller passes it already parsed); ``evidence``: the
    other files the plan relied on, with the stamps they had. Use
    :meth:`after_bytes`/:meth:`after_text` for the result of a selection,
    :meth:`render` for its diff, :meth:`apply` to write it.
    """

    kind = "keep.md"
    KINDS = PLANNER_KINDS + REVIEW_KINDS
    written_source = "compacted"
    removal_reason = "compaction"

    def __init__(
        self,
        workspace: Workspace,
        rel: str,
        data: bytes | None,
        stamp: fsio.Stamp,
        planned: Sequence[tuple[Operation, Edit]],
        *,
        evidence: dict[str, tuple[bytes | None, fsio.Stamp]] | None = None,
        notices: Iterable[Notice] = (),
        history: History | None = None,
        target: int | None = COMPACTION_TARGET,
        doc: KeepDoc | None = None,
    ) -> None:
        self.workspace = workspace
        self.rel = rel
        self.path = workspace.path(rel)
        self.data = data
        self.stamp = stamp
        self.doc = doc if doc is not None else KeepDoc.parse(data, self.path, stamp)
        self.evidence = dict(evidence or {})
        self.history = history if history is not None else History()
        self.target = target
        super().__init__([op for op, _edit in planned], notices, self.path)
        self._edits = {op.id: planned[self.origin[op.id]][1] for op in self.operations}

    # ---------------------------------------------------------------- results of a selection

    def edits(self, selection: Selection = None) -> list[Edit]:
        """The edits of a selection, in plan order."""
        return [self._edits[op.id] for op in self.selected(selection)]

    def after_bytes(self, selection: Selection = None) -> bytes:
        """The file's bytes once the selection is applied."""
        return compose(self.doc, self.edits(selection))

    def after_text(self, selection: Selection = None) -> str:
        """The file's text once the selection is applied (BOM left out)."""
        return _decode(self.after_bytes(selection))

    @property
    def before_text(self) -> str:
        """The file's text as planned from."""
        return _decode(self.data)

    def agents_after(self, selection: Selection = None) -> bytes | None:
        """AGENTS.md's bytes once the selection is applied, or None when it moves nothing there."""
        lines = [text for edit in self.edits(selection) for text in edit.agents]
        if not lines:
            return None
        # Only a keep.md plan moves rules, and it always reads AGENTS.md as evidence.
        return append_lines(self.evidence[AGENTS_MD][0], self.workspace.path(AGENTS_MD), lines)

    def counts(self, selection: Selection = None) -> Counts:
        """Physical lines before → after → target (entries as detail), as ``compaction_due`` counts."""
        after = KeepDoc.parse(self.after_bytes(selection))
        return Counts(
            "lines",
            self.doc.line_count,
            after.line_count,
            self.target,
            {"entries_before": self.doc.entry_count, "entries_after": after.entry_count},
        )

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """The unified diff of the whole file for a selection (and of AGENTS.md when rules move)."""
        name = self.rel
        out = textdiff.unified(self.before_text, self.after_text(selection), f"a/{name}", f"b/{name}", context)
        agents = self.agents_after(selection)
        if agents is not None:
            before = _decode(self.evidence[AGENTS_MD][0])
            out += textdiff.unified(before, _decode(agents), f"a/{AGENTS_MD}", f"b/{AGENTS_MD}", context)
        return out

    # ---------------------------------------------------------------- freshness

    def _changed_file(self) -> str | None:
        """The workspace-relative name of a file that changed since the plan was made, or None."""
        _data, stamp = self.workspace.read(self.rel)
        if not stamp.same_content(self.stamp):
            return self.rel
        for rel, (_data, planned) in self.evidence.items():
            _now, current = self.workspace.read(rel)
            if not current.same_content(planned):
                return rel
        return None

    def check_fresh(self) -> None:
        """Raise StalePlan when the file, or one the plan relied on, changed since it was planned."""
        changed = self._changed_file()
        if changed:
            raise self.stale(f"{changed} changed")

    # ---------------------------------------------------------------- applying

    @property
    def dream_managed(self) -> bool:
        """True when the file is one of Dream's (writing it needs the person's confirmation)."""
        return any(kind.rel == self.rel and kind.managed_by_dream for kind in DOCUMENTS.values())

    def apply(self, selection: Selection = None, *, confirm_dream: bool = False) -> FileApplied:
        """Write the selection: freshness check, AGENTS.md first when rules move, then one atomic
        replace of the file with the stamp it was planned from; history and removed-entry log kept."""
        ids = self.normalise_selection(selection)
        if self.dream_managed and not confirm_dream:
            raise InvalidInput(
                f"{self.path} is managed by Dream; confirm that you want to edit it "
                "(the window asks; the command line takes --confirm-dream)"
            )
        self.check_fresh()
        new = self.after_bytes(ids)
        agents_new = self.agents_after(ids)
        ops = self.selected(ids)
        if new == (self.data or b"") and agents_new is None:
            return FileApplied(self.workspace.root, [], [], ["nothing to change"], "nothing selected", self.history)
        logged = self._log_removals(ops)
        changes: list[FileChange] = []
        try:
            if agents_new is not None:
                agents_old, agents_stamp = self.evidence[AGENTS_MD]
                changes.append(self._write(AGENTS_MD, agents_old, agents_stamp, agents_new))
            changes.append(self._write(self.rel, self.data, self.stamp, new))
        except BaseException as exc:
            for record in logged:  # the removal did not happen: "unforget" must not offer it
                self.history.cancel_removed(record)
            for change in reversed(changes):  # AGENTS.md was written but keep.md was not: take it back
                # if someone changed it in between, the rule stays in both files: never in neither
                with contextlib.suppress(KeepguiError):
                    change.revert(self.workspace, self.history)
            if isinstance(exc, Conflict) and not isinstance(exc, ChangedSince):
                raise self.stale(f"{os.path.relpath(exc.path, self.workspace.root)} changed while applying") from None
            raise
        lines = self._describe(ops, new)
        applied = FileApplied(self.workspace.root, changes, logged, lines, self._description(ops), self.history)
        self._after_apply(applied)
        return applied

    def _write(self, rel: str, old: bytes | None, stamp: fsio.Stamp, new: bytes) -> FileChange:
        path = self.workspace.path(rel)
        if old is not None:
            self.history.record(path, old, source="seen")
        new_stamp = self.workspace.write(rel, new, expect=stamp)
        self.history.record(path, new, source=self.written_source)
        return FileChange(rel, old, new, new_stamp)

    def _log_removals(self, ops: Sequence[Operation]) -> list[RemovedEntry]:
        items = items_of(self.doc)
        by_index = {item.index: item for item in items}
        logged = []
        for op in ops:
            for item in self._edits[op.id].removes:
                current = by_index.get(item.index)
                neighbours = [i for i in items if i.index != item.index]
                before = next((i for i in reversed(neighbours) if i.index < item.index), None)
                after = next((i for i in neighbours if i.index > item.index), None)
                logged.append(
                    self.history.log_removed(
                        path=self.path,
                        workspace=self.workspace.root,
                        text=item.text,
                        raw=item.raw,
                        line=item.index,
                        number=(current.position + 1) if current else 0,
                        before=before.text if before else None,
                        after=after.text if after else None,
                        reason=f"{self.removal_reason}: {op.label.lower()}",
                    )
                )
        return logged

    def _describe(self, ops: Sequence[Operation], new: bytes) -> list[str]:
        counts = Counts("lines", self.doc.line_count, KeepDoc.parse(new).line_count, self.target)
        lines = [f"{self.rel}: {counts.describe()}"]
        by_kind = Counter(op.label for op in ops)
        lines += [f"{label}: {n}" for label, n in by_kind.items()]
        return lines

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"compact {self.rel} ({len(ops)} operations)"

    def _after_apply(self, applied: FileApplied) -> None:
        """Hook for subclasses (a review records the acceptance)."""


# ---------------------------------------------------------------------- undo of a file plan


@dataclass
class FileChange:
    """One file an apply replaced: its workspace path, the bytes before (None: it did not exist),
    the bytes written, and the stamp they were written with."""

    rel: str
    before: bytes | None
    after: bytes
    stamp: fsio.Stamp | None = None

    def revert(self, workspace: Workspace, history: History) -> None:
        """Put ``before`` back if the file still holds ``after`` (ChangedSince otherwise)."""
        stamp = _expect(workspace, self.rel, self.after, "undone")
        _swap(workspace, history, self.rel, stamp, self.before, "undone")

    def to_obj(self) -> dict[str, Any]:
        """The hashes that find the bytes again in keepgui's history."""
        return {
            "rel": self.rel,
            "before": _sha(self.before) if self.before is not None else None,
            "after": _sha(self.after),
        }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _expect(workspace: Workspace, rel: str, expected: bytes | None, doing: str) -> fsio.Stamp:
    """The stamp of ``rel`` if it holds ``expected`` (None: it does not exist); ChangedSince otherwise."""
    current, stamp = workspace.read(rel)
    if current != expected:
        path = workspace.path(rel)
        raise ChangedSince(
            path,
            f"{path} changed after the compaction, so it was not {doing}; nothing was "
            "written. Its earlier versions are in keepgui's history.",
        )
    return stamp


def _swap(workspace: Workspace, history: History, rel: str, stamp: fsio.Stamp, new: bytes | None, doing: str) -> None:
    """Replace ``rel``, checked by :func:`_expect` as ``stamp``, with ``new`` (None: delete it)."""
    path = workspace.path(rel)
    if new is None:
        workspace.check_writable(path)
        fsio.remove_file(path, expect=stamp)
        return
    workspace.write(rel, new, expect=stamp)
    history.record(path, new, source="compaction-undone" if doing == "undone" else "compacted")


class FileApplied(Applied):
    """A compaction of workspace files, and how to take it back.

    ``files``: the :class:`FileChange` s in the order written; ``removed``: the
    removed-entry records logged. Undo checks that every file still holds what
    was written, then puts the exact previous bytes back (newest write first)
    and marks the removed entries restored; redo writes the result again.
    """

    kind = "workspace-files"

    def __init__(
        self,
        workspace: str,
        files: list[FileChange],
        removed: list[RemovedEntry],
        lines: Iterable[str],
        description: str,
        history: History,
        review_marker: str | None = None,
    ) -> None:
        target = file_key(Workspace(workspace).path(files[-1].rel)) if files else os.path.abspath(workspace)
        super().__init__(description, lines, bool(files), target)
        self.workspace = workspace
        self.files = list(files)
        self.removed = list(removed)
        self.history = history
        self.review_marker = review_marker

    def _check_all(self, ws: Workspace, want_after: bool, doing: str) -> list[fsio.Stamp]:
        """The stamp of every file, once each holds what it should (before anything is written)."""
        return [_expect(ws, change.rel, change.after if want_after else change.before, doing) for change in self.files]

    def _undo(self) -> None:
        ws = Workspace(self.workspace)
        stamps = self._check_all(ws, True, "undone")
        for change, stamp in reversed(list(zip(self.files, stamps, strict=True))):
            _swap(ws, self.history, change.rel, stamp, change.before, "undone")
        for record in self.removed:
            self.history.mark_restored(record)
        if self.review_marker:
            ReviewLog(self.history).withdraw(self.review_marker)

    def _redo(self) -> None:
        ws = Workspace(self.workspace)
        stamps = self._check_all(ws, False, "redone")
        for change, stamp in zip(self.files, stamps, strict=True):
            _swap(ws, self.history, change.rel, stamp, change.after, "redone")
        self.removed = [
            self.history.log_removed(
                path=r.path,
                workspace=r.workspace,
                text=r.text,
                raw=r.raw,
                line=r.line,
                number=r.number,
                before=r.before,
                after=r.after,
                reason=r.reason,
            )
            for r in self.removed
        ]
        if self.review_marker:
            path = ws.path(self.files[-1].rel)
            version = self.history.latest(path)
            if version is not None:
                self.review_marker = ReviewLog(self.history).accept(path, version)

    def to_obj(self) -> dict[str, Any]:
        """The workspace, the files (by hash) and the removed-entry ids."""
        obj = super().to_obj()
        obj.update(
            {
                "workspace": self.workspace,
                "files": [f.to_obj() for f in self.files],
                "removed": [r.id for r in self.removed],
                "review_marker": self.review_marker,
            }
        )
        return obj

    @classmethod
    def from_obj(cls, obj: dict[str, Any], history: History) -> FileApplied:
        """Rebuild from :meth:`to_obj`, reading the bytes back from keepgui's history."""
        try:
            ws = Workspace(obj["workspace"])
            files = []
            for f in obj["files"]:
                path = ws.path(f["rel"])
                before = history.read(history.find(path, f["before"])) if f.get("before") else None
                files.append(FileChange(f["rel"], before, history.read(history.find(path, f["after"]))))
            removed = []
            for rid in obj.get("removed", ()):
                try:
                    removed.append(history.get_removed(rid))
                except NotFound:
                    continue
            applied = cls(
                obj["workspace"],
                files,
                removed,
                obj.get("lines", ()),
                obj["description"],
                history,
                obj.get("review_marker"),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable entry ({exc})") from None
        applied.state = obj.get("state", "applied")
        applied.at = obj.get("at", applied.at)
        return applied


register_applied_kind("workspace-files", FileApplied.from_obj)


# ---------------------------------------------------------------------- the keep.md planner


_NEGATIONS = frozenset(
    {
        "not",
        "never",
        "no",
        "don't",
        "dont",
        "doesn't",
        "doesnt",
        "didn't",
        "didnt",
        "isn't",
        "isnt",
        "won't",
        "wont",
        "without",
        "stopped",
        "quit",
        "formerly",
        "former",
        "ex",
        "anymore",
        "longer",
        "nor",
        "neither",
        "avoid",
        "avoids",
        "dislike",
        "dislikes",
        "hates",
        "hate",
        "except",
        "but",
        "instead",
        "used",
    }
)


def _adds_negation(container: str, needle: str) -> bool:
    """True when ``container`` says ``needle`` with a negating word around it ("never eats meat")."""
    extra = container.replace(needle, " ", 1).split()
    return any(word.strip(",.;:!?()") in _NEGATIONS for word in extra)


@dataclass(frozen=True)
class Statement:
    """A line of MEMORY.md, USER.md or AGENTS.md that a keep.md entry may repeat."""

    file: str
    line: int
    text: str
    key: str


def statements(name: str, text: str) -> list[Statement]:
    """The comparable lines of a Markdown document (headings and empty lines left out)."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "<!--")):
            continue
        key = line_key(stripped)
        if key:
            out.append(Statement(name, number, stripped, key))
    return out


class KeepPlan(DocPlan):
    """keepgui's compaction plan of keep.md (see :func:`plan_keep`)."""

    kind = "keep.md"

    def __init__(self, *args: Any, settings: dict[str, Any], **kwargs: Any) -> None:
        self.settings = dict(settings)
        super().__init__(*args, **kwargs)

    def replan(self) -> KeepPlan:
        """The plan again with the same settings, from the files as they are now."""
        return plan_keep(self.workspace, history=self.history, **self.settings)


def _op(
    kind: str,
    items: Sequence[Item],
    after: Sequence[str],
    reason: str,
    edit: Edit,
    *,
    selected: bool,
    evidence: Iterable[str] = (),
    score: float | None = None,
    before: Sequence[str] | None = None,
) -> tuple[Operation, Edit]:
    """An operation on ``items`` (``before`` defaults to their texts) with its line edit."""
    before = [i.text for i in items] if before is None else before
    return (
        make_operation(
            kind, [i.id for i in items], before, after, reason, selected=selected, evidence=evidence, score=score
        ),
        edit,
    )


def _drop(item: Item) -> Edit:
    return Edit(drops=(item.index,), removes=(item,))


def plan_keep(
    workspace: Workspace | str,
    *,
    target: int = COMPACTION_TARGET,
    threshold: float = FUZZY_THRESHOLD,
    history: History | None = None,
) -> KeepPlan:
    """Plan the compaction of keep.md (see the module doc for the operations and their defaults).

    ``target``: the line count to reach (the keep skill's ~120);
    ``threshold``: the near-duplicate cut-off on ``token_set_ratio`` (0–100).
    Reading records the versions seen in ``history``; nothing is written.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    history = history if history is not None else History()
    if not 0 <= threshold <= 100:
        raise InvalidInput(f"the near-duplicate threshold must be between 0 and 100, not {threshold}")
    if target < 0:
        raise InvalidInput(f"the target must be a line count of 0 or more, not {target}")
    data, stamp = workspace.read(KEEP_MD)
    doc = KeepDoc.parse(data, workspace.keep_md, stamp)  # refuses non-UTF-8, naming the line
    if data is not None:
        history.record(workspace.keep_md, data, source="seen")
    evidence = {rel: workspace.read(rel) for rel in (MEMORY_MD, USER_MD, AGENTS_MD)}
    texts = {rel.rsplit("/", 1)[-1]: _decode(evidence[rel][0]) for rel in evidence}
    try:  # rules move to AGENTS.md only when keepgui can write it back exactly
        decode_text(evidence[AGENTS_MD][0] or b"", workspace.path(AGENTS_MD))
        agents_problem = None
    except Unreadable as exc:
        agents_problem = str(exc)
    letters = doc.entry_count <= LETTER_SEARCH_ENTRIES
    planned = _plan_operations(
        doc, texts, workspace.projects(), threshold, agents_writable=agents_problem is None, letters=letters
    )
    notices = _keep_notices(doc, data, planned, target, workspace, history)
    if not letters:
        notices.append(
            Notice(
                "near-duplicates-by-words",
                "info",
                f"keep.md has {doc.entry_count:,} entries: near-duplicates were searched through "
                "the words entries share; pairs alike only letter by letter in different words (a "
                f"typo in every word) are looked for up to {LETTER_SEARCH_ENTRIES:,} entries, as that "
                "search compares every pair",
            )
        )
    if agents_problem is not None:
        notices.append(
            Notice(
                "agents-unreadable",
                "warning",
                f"{agents_problem}; rules found in keep.md are not moved there until it is",
            )
        )
    settings = {"target": target, "threshold": threshold}
    return KeepPlan(
        workspace,
        KEEP_MD,
        data,
        stamp,
        planned,
        evidence=evidence,
        notices=notices,
        history=history,
        target=target,
        settings=settings,
        doc=doc,
    )


LETTER_SEARCH_ENTRIES = 5_000
"""Up to this many entries the near-duplicate search also compares letters across different words
(:func:`~keepgui.core.compaction.near_duplicates` with ``letters``), a search that grows with the
square of the count; above it only shared words are searched, which grows about linearly."""


def _plan_operations(
    doc: KeepDoc,
    texts: dict[str, str],
    projects: list[str],
    threshold: float,
    *,
    agents_writable: bool = True,
    letters: bool = True,
) -> list[tuple[Operation, Edit]]:
    """Every operation of a keep.md plan (pure: the documents' texts are given).

    Every step looks entries up in an index (containment, statements elsewhere, near-duplicates),
    so a plan costs about linear time in the number of entries.
    """
    items = items_of(doc, prose=False)
    planned: list[tuple[Operation, Edit]] = []
    dropped: set[int] = set()  # items (by position) some operation already takes out
    safely: set[int] = set()  # ... and those a safe operation takes out

    def claim(item: Item, safe: bool = True) -> bool:
        """Mark ``item`` as taken out by an operation; False when another one already takes it."""
        if item.position in dropped:
            return False
        dropped.add(item.position)
        if safe:
            safely.add(item.position)
        return True

    # blank lines: no fact, only height
    blanks = [line for line in doc.lines if line.kind == "blank"]
    if blanks:
        planned.append(
            (
                make_operation(
                    "blank",
                    [f"line {b.number}" for b in blanks],
                    ["" for _ in blanks],
                    [],
                    f"{len(blanks)} blank line{'s' if len(blanks) > 1 else ''}: keep.md is a flat "
                    "list, a blank line holds no fact",
                    selected=True,
                ),
                Edit(drops=tuple(b.index for b in blanks)),
            )
        )

    # exact duplicates: the first canonical copy stays
    groups: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        groups[item.key].append(item)
    representative: dict[str, Item] = {}
    for key, group in groups.items():
        keep = next((i for i in group if doc.lines[i.index].issue is None), group[0])
        representative[key] = keep
        if len(group) < 2:
            continue
        others = [i for i in group if i is not keep]
        for other in others:
            claim(other)
        lines = ", ".join(str(i.index + 1) for i in group)
        planned.append(
            _op(
                "duplicate",
                [keep, *others],
                [keep.text],
                f"the same fact {len(group)} times (lines {lines}) once case, spacing, bullets and a "
                f"final period are ignored; line {keep.index + 1} stays",
                Edit(drops=tuple(o.index for o in others), removes=tuple(others)),
                selected=True,
            )
        )

    reps = sorted(representative.values(), key=lambda i: i.position)
    # judgement calls are added after every safe operation, so none takes out an entry a safe one handles:
    # first those about a specific contradiction, then near-duplicates, then looser matches
    judgement: list[tuple[Operation, Edit, Item]] = []
    looser: list[tuple[Operation, Edit, Item]] = []

    # containment: keep the more specific entry (the index finds the containers without trying every pair)
    by_key = ContainmentIndex([r.key for r in reps])
    for small in reps:
        containers = [
            big
            for big in (reps[k] for k in by_key.containing(small.key))
            if big is not small and len(big.key) > len(small.key)
        ]
        if not containers:
            continue
        big = max(containers, key=lambda i: (len(i.key), -i.position))
        if _adds_negation(big.key, small.key):
            judgement.append(
                (
                    *_op(
                        "contained",
                        [small, big],
                        [big.text],
                        f"{big.quote()} contains it but adds a negation: they may contradict each other, "
                        "so this is for you to decide",
                        _drop(small),
                        selected=False,
                    ),
                    small,
                )
            )
            continue
        if claim(small):
            planned.append(
                _op(
                    "contained",
                    [small, big],
                    [big.text],
                    f"{big.quote()} says the same and more; the more specific entry stays",
                    _drop(small),
                    selected=True,
                )
            )

    # already stated in MEMORY.md, USER.md or AGENTS.md
    stated = {name: statements(name, text) for name, text in texts.items()}
    stated_lines = [s for name in ("MEMORY.md", "USER.md", "AGENTS.md") for s in stated.get(name, ())]
    stated_index = ContainmentIndex([s.key for s in stated_lines])
    fuzzy_lines = [
        s for name in ("MEMORY.md", "USER.md") for s in stated.get(name, ()) if len(s.key.split()) >= _MIN_STATED_WORDS
    ]
    fuzzy_keys = [s.key for s in fuzzy_lines]
    for item in reps:
        if item.position in dropped or len(item.key.split()) < _MIN_STATED_WORDS:
            continue
        found = next((stated_lines[k] for k in stated_index.containing(item.key)), None)
        if found is not None:
            evidence = f"{found.file} line {found.line}: {found.text}"
            if _adds_negation(found.key, item.key):
                judgement.append(
                    (
                        *_op(
                            "stated-elsewhere",
                            [item],
                            [],
                            f"{found.file} line {found.line} holds it with a negation around it: check before dropping",
                            _drop(item),
                            selected=False,
                            evidence=[evidence],
                        ),
                        item,
                    )
                )
            elif claim(item):
                planned.append(
                    _op(
                        "stated-elsewhere",
                        [item],
                        [],
                        f"already stated in {found.file} (line {found.line}); the agent reads that file too",
                        _drop(item),
                        selected=True,
                        evidence=[evidence],
                    )
                )
            continue
        if fuzzy_keys:
            best = process.extractOne(
                item.key, fuzzy_keys, scorer=fuzz.token_set_ratio, processor=default_process, score_cutoff=threshold
            )
            if best is not None:
                line = fuzzy_lines[best[2]]
                looser.append(
                    (
                        *_op(
                            "stated-elsewhere",
                            [item],
                            [],
                            f"{line.file} line {line.line} says something very similar (similarity "
                            f"{best[1]:.0f}); a judgement call: compare the two",
                            _drop(item),
                            selected=False,
                            score=best[1],
                            evidence=[f"{line.file} line {line.line}: {line.text}"],
                        ),
                        item,
                    )
                )

    # rules about how the agent works go to AGENTS.md; other misplaced entries are only offered
    for item in reps:
        if item.position in dropped:
            continue
        verdict = triage(item.text, projects)
        if verdict.verdict == AGENTS and agents_writable:
            if claim(item):
                planned.append(
                    _op(
                        "move-to-agents",
                        [item],
                        [],
                        f"{verdict.reason}; it moves there word for word",
                        Edit(drops=(item.index,), agents=(f"- {item.text}",), removes=(item,)),
                        selected=True,
                        evidence=[f"AGENTS.md gets: - {item.text}"],
                    )
                )
        elif verdict.verdict in (AGENTS, NOTE, REMIND, PROJECT):
            looser.append(
                (
                    *_op(
                        "misplaced",
                        [item],
                        [],
                        f"{verdict.reason}; keepgui does not file it there: copy it first if you still need it",
                        _drop(item),
                        selected=False,
                    ),
                    item,
                )
            )

    # judgement calls, each entry in at most one of them, none where a safe operation drops it
    for op, edit, item in judgement:
        if claim(item, safe=False):
            planned.append((op, edit))

    # near-duplicates among the entries nothing else takes out: merge into the longer one
    rest = [i for i in items if i.position not in dropped]
    near: dict[int, dict[int, float]] = defaultdict(dict)
    for a, b, score in near_duplicates([i.key for i in rest], threshold, letters=letters):
        near[a][b] = near[b][a] = score
    taken: set[int] = set()
    for hub in sorted(near, key=lambda k: (-len(rest[k].key), rest[k].position)):
        if hub in taken:
            continue
        members = [k for k in sorted(near[hub], key=lambda k: rest[k].position) if k not in taken]
        if not members:
            continue
        taken.add(hub)
        taken.update(members)
        keep, gone = rest[hub], [rest[k] for k in members]
        for item in gone:
            claim(item, safe=False)
        lost = [w for item in gone for w in words_only_in(item.text, keep.text)]
        lost = list(dict.fromkeys(lost))
        score = min(near[hub][k] for k in members)
        tail = f"; the merge would lose: {', '.join(lost)}" if lost else "; it holds every word of the others"
        # token_set_ratio's 100 for "Prefers tea" / "Prefers green tea" reads "identical": say how they relate
        relations = "; ".join(likeness(item.text, keep.text).describe_pair(item.quote(), keep.quote()) for item in gone)
        planned.append(
            _op(
                "near-duplicate",
                [keep, *gone],
                [keep.text],
                f"near-duplicates ({relations}): merge into the longer {keep.quote()} — a "
                f'judgement call ("prefers tea" and "prefers green tea" are two facts){tail}',
                Edit(drops=tuple(i.index for i in gone), removes=tuple(gone)),
                selected=False,
                score=score,
            )
        )

    for op, edit, item in looser:
        if claim(item, safe=False):
            planned.append((op, edit))

    # headings: keep.md is a flat list
    for heading in doc.lines:
        if heading.kind == "heading":
            planned.append(
                (
                    make_operation(
                        "heading",
                        [f"line {heading.number}"],
                        [heading.text],
                        [],
                        "a heading: keep.md is a flat list without headings (the entries under it stay)",
                        selected=False,
                    ),
                    Edit(drops=(heading.index,)),
                )
            )

    # dates: stamps go (safe); dates inside a fact are offered (a dropped line stays dropped)
    for item in items:
        if item.position in safely:
            continue
        clean = strip_stamps(item.text)
        if clean is not None:
            planned.append(
                _op(
                    "undate",
                    [item],
                    [clean],
                    "an entry stamp (when it was noted): keep.md entries carry no dates, a date adds "
                    "noise and no value (keep skill)",
                    Edit(rewrites=((item.index, canonical_line(clean)),)),
                    selected=True,
                )
            )
            continue
        clean = strip_dates(item.text)
        if clean is not None:
            planned.append(
                _op(
                    "undate",
                    [item],
                    [clean],
                    "a date inside the fact: keep.md entries carry no dates, but this one may be the "
                    "fact itself, so it is for you to decide",
                    Edit(rewrites=((item.index, canonical_line(clean)),)),
                    selected=False,
                )
            )
    return planned


def _keep_notices(
    doc: KeepDoc,
    data: bytes | None,
    planned: Sequence[tuple[Operation, Edit]],
    target: int,
    workspace: Workspace,
    history: History,
) -> list[Notice]:
    notices = []
    if not doc.stamp.exists:
        notices.append(Notice("missing", "info", f"{doc.path} does not exist: nothing to compact"))
    elif not doc.compaction_due:
        notices.append(
            Notice(
                "not-due",
                "info",
                f"keep.md has {doc.line_count} lines, not over the {SOFT_CAP}-line cap: compaction is optional",
            )
        )
    safe = [edit for op, edit in planned if op.selected]
    after = KeepDoc.parse(compose(doc, safe)).line_count
    if after > target:
        notices.append(
            Notice(
                "choose-by-hand",
                "warning",
                f"the safe operations reach {after} lines; {after - target} more entries must go to "
                f"reach {target}, and keepgui does not guess which facts you can live without: choose "
                "them (the judgement calls listed may help)",
            )
        )
    pending, _since = _baseline(history, workspace.keep_md, data)  # pending_review without reading keep.md again
    if pending is not None:
        notices.append(
            Notice(
                UNREVIEWED_REWRITE,
                "warning",
                "keep.md was rewritten outside keepgui and that rewrite was not reviewed yet",
            )
        )
    return notices


# ---------------------------------------------------------------------- comparing two versions


@dataclass(frozen=True)
class Change:
    """One difference between an earlier and a later version of a document.

    ``kind``: ``removed`` (nothing later says it), ``deduplicated`` (an equal
    or containing line still says it: ``cover``), ``merged`` (several earlier
    items became one later item, or one was folded into a line that was already
    there: ``into_existing``), ``reworded`` (one became one), ``new``.
    """

    kind: str
    old: tuple[Item, ...] = ()
    new: tuple[Item, ...] = ()
    cover: Item | None = None
    score: float | None = None
    into_existing: bool = False


@dataclass
class Comparison:
    """The changes between two versions, and which later item stands where an earlier one stood."""

    changes: list[Change]
    old_items: list[Item]
    new_items: list[Item]
    unchanged: dict[int, int] = field(default_factory=dict)  # old position -> new position


def compare(
    old_doc: KeepDoc, new_doc: KeepDoc, threshold: float = REVIEW_THRESHOLD, *, new_prose: bool = True
) -> Comparison:
    """Describe the change from ``old_doc`` to ``new_doc`` item by item.

    Equal items (after normalising) pair up first, in order; then each
    remaining earlier item goes to the remaining later item it resembles most
    (``token_set_ratio`` ≥ ``threshold``): two or more earlier items on one
    later item are a merge, one is a rewording, none makes the later item new.
    An earlier item left over is a duplicate when a later line contains it, a
    merge into an unchanged line it resembles, else removed.
    """
    old_items = items_of(old_doc)
    new_items = items_of(new_doc, prose=new_prose)
    by_key: dict[str, list[Item]] = defaultdict(list)
    for item in new_items:
        by_key[item.key].append(item)
    unchanged: dict[int, int] = {}
    used_new: set[int] = set()
    rest_old: list[Item] = []
    for item in old_items:
        pool = by_key.get(item.key)
        if pool:
            match = pool.pop(0)
            unchanged[item.position] = match.position
            used_new.add(match.position)
        else:
            rest_old.append(item)
    rest_new = [i for i in new_items if i.position not in used_new]
    assigned: dict[int, list[tuple[Item, float]]] = defaultdict(list)
    leftover: list[Item] = []
    new_keys = [i.key for i in rest_new]
    for item in rest_old:
        best = (
            process.extractOne(
                item.key, new_keys, scorer=fuzz.token_set_ratio, processor=default_process, score_cutoff=threshold
            )
            if new_keys
            else None
        )
        if best is None:
            leftover.append(item)
        else:
            assigned[best[2]].append((item, best[1]))
    changes: list[Change] = []
    for k, item in enumerate(rest_new):
        olds = assigned.get(k, [])
        if not olds:
            changes.append(Change("new", (), (item,)))
        elif len(olds) == 1:
            changes.append(Change("reworded", (olds[0][0],), (item,), score=olds[0][1]))
        else:
            olds.sort(key=lambda p: p[0].position)
            changes.append(Change("merged", tuple(o for o, _s in olds), (item,), score=min(s for _o, s in olds)))
    kept = [new_items[p] for p in unchanged.values()]
    kept_keys = [i.key for i in kept]
    for item in leftover:
        cover = next((i for i in new_items if contains(i.key, item.key)), None)  # an equal copy counts
        if cover is not None:
            changes.append(Change("deduplicated", (item,), (), cover))
            continue
        best = (
            process.extractOne(
                item.key, kept_keys, scorer=fuzz.token_set_ratio, processor=default_process, score_cutoff=threshold
            )
            if kept_keys
            else None
        )
        if best is not None:
            changes.append(Change("merged", (item,), (kept[best[2]],), score=best[1], into_existing=True))
        else:
            changes.append(Change("removed", (item,)))
    changes.sort(key=lambda c: c.old[0].position if c.old else len(old_items) + c.new[0].position)
    return Comparison(changes, old_items, new_items, unchanged)


def _anchor(order: int, mapped: dict[int, int], lines_of: dict[int, int], total: int, end: int) -> tuple[int, int]:
    """Where an item at ``order`` in its version goes in the other file: after the line of the nearest
    earlier item that is there, else before the line of the nearest later one, else at the end."""
    for k in range(order - 1, -1, -1):
        if k in mapped:
            return lines_of[mapped[k]], 1
    for k in range(order + 1, total):
        if k in mapped:
            return lines_of[mapped[k]], -1
    return end, 1


# ---------------------------------------------------------------------- a rewrite from outside (--via)


class RewritePlan(DocPlan):
    """A rewrite of keep.md proposed by an outside command, as operations to review."""

    kind = "rewrite"

    def __init__(self, *args: Any, proposed: str, source: str, threshold: float, **kwargs: Any) -> None:
        self.proposed = proposed
        self.source = source
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def replan(self) -> RewritePlan:
        """The same proposal compared with keep.md as it is now (the command is not run again)."""
        return plan_from_text(
            self.workspace,
            self.proposed,
            source=self.source,
            threshold=self.threshold,
            history=self.history,
            target=self.target,
        )

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"apply {len(ops)} changes of {self.source} to {self.rel}"


def plan_from_text(
    workspace: Workspace | str,
    proposed: str | bytes,
    *,
    source: str = "the proposed text",
    threshold: float = REVIEW_THRESHOLD,
    history: History | None = None,
    target: int | None = COMPACTION_TARGET,
) -> RewritePlan:
    """Turn a proposed new keep.md into a plan of operations on the current one.

    Only ``- <fact>`` entries of the proposal count: prose around them (an
    LLM's "Here is the file:") and its line order are ignored; the current
    file keeps its order and every line the proposal does not change.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    history = history if history is not None else History()
    if isinstance(proposed, bytes):
        try:
            proposed = proposed.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Unreadable(source, f"byte {exc.start} is not valid UTF-8; keep.md was not changed") from None
    data, stamp = workspace.read(KEEP_MD)
    doc = KeepDoc.parse(data, workspace.keep_md, stamp)
    if data is not None:
        history.record(workspace.keep_md, data, source="seen")
    new_doc = KeepDoc.from_text(proposed)
    comparison = compare(doc, new_doc, threshold, new_prose=False)
    planned = _forward_operations(doc, comparison, source)
    ignored = sum(1 for line in new_doc.lines if line.kind in ("other", "heading", "comment"))
    notices = []
    if ignored:
        notices.append(
            Notice(
                "ignored-lines", "info", f"{ignored} line(s) of {source} are not `- <fact>` entries and were ignored"
            )
        )
    if not new_doc.entries:
        notices.append(Notice("no-entries", "warning", f"{source} holds no `- <fact>` entry at all"))
    news = [c for c in comparison.changes if c.kind == "new"]
    if news:
        notices.append(
            Notice(
                "new-facts",
                "warning",
                f"{len(news)} new entr{'ies' if len(news) > 1 else 'y'} in {source}: a compaction "
                "should add no facts (not selected)",
            )
        )
    return RewritePlan(
        workspace,
        KEEP_MD,
        data,
        stamp,
        planned,
        notices=notices,
        history=history,
        target=target,
        proposed=proposed,
        source=source,
        threshold=threshold,
        doc=doc,
    )


def _forward_operations(doc: KeepDoc, cmp: Comparison, source: str) -> list[tuple[Operation, Edit]]:
    """Operations that turn the current file toward the proposal, one per change."""
    old_line = {i.position: i.index for i in cmp.old_items}
    new_to_old: dict[int, int] = {new: old for old, new in cmp.unchanged.items()}
    for change in cmp.changes:
        if change.kind in ("reworded", "merged") and not change.into_existing:
            new_to_old[change.new[0].position] = change.old[0].position
    planned = []
    end = _end_anchor(doc)
    for change in cmp.changes:
        old, new = change.old, change.new
        if change.kind == "new":
            item = new[0]
            anchor, side = _anchor(item.position, new_to_old, old_line, len(cmp.new_items), end)
            planned.append(
                _op(
                    "new",
                    [],
                    [item.text],
                    f"new in {source}: not in keep.md — a compaction should add no facts",
                    Edit(inserts=((anchor, side, item.position, canonical_line(item.text)),)),
                    selected=False,
                )
            )
        elif change.kind in ("removed", "deduplicated"):
            item = old[0]
            if change.kind == "removed" or change.cover is None:
                reason = f"{source} drops it and nothing in it says it any more"
                selected = False
            else:
                reason = f"a duplicate: {change.cover.quote()} of {source} still says it"
                selected = True
            planned.append(
                _op(
                    change.kind,
                    [item],
                    [],
                    reason,
                    _drop(item),
                    selected=selected,
                    evidence=[change.cover.text] if change.cover else (),
                )
            )
        elif change.kind == "merged" and change.into_existing:
            item, kept = old[0], new[0]
            lost = words_only_in(item.text, kept.text)
            planned.append(
                _op(
                    "merged",
                    [item],
                    [kept.text],
                    f"{source} folds it into the existing `{excerpt(kept.text, 60)}` (similarity "
                    f"{change.score:.0f})" + (f"; lost words: {', '.join(lost)}" if lost else ""),
                    _drop(item),
                    selected=False,
                    score=change.score,
                )
            )
        else:
            target = new[0]
            first, *others = sorted(old, key=lambda i: i.index)
            lossless = all(contains(target.key, o.key) for o in old)
            lost = list(dict.fromkeys(w for o in old for w in words_only_in(o.text, target.text)))
            tail = (
                "; it still says everything they said"
                if lossless
                else (f"; lost words: {', '.join(lost)}" if lost else "; reworded")
            )
            what = "merges" if change.kind == "merged" else "rewords"
            planned.append(
                _op(
                    change.kind,
                    old,
                    [target.text],
                    f"{source} {what} {'them' if len(old) > 1 else 'it'} into `{excerpt(target.text, 60)}`" + tail,
                    Edit(
                        rewrites=((first.index, canonical_line(target.text)),),
                        drops=tuple(o.index for o in others),
                        removes=tuple(old),
                    ),
                    selected=lossless and change.kind == "merged",
                    score=change.score,
                )
            )
    return planned


def run_command(
    command: str | Sequence[str], data: bytes, *, timeout: float = VIA_TIMEOUT, cwd: str | None = None
) -> bytes:
    """Run ``command`` (no shell) with ``data`` on stdin and return what it printed on stdout.

    Errors say what happened and that keep.md was not changed: the command is
    missing, ran longer than ``timeout`` seconds (it is stopped, with anything
    it started), exited non-zero (its last stderr lines are quoted), printed
    bytes that are not UTF-8, or printed nothing.
    """
    argv = shlex.split(command, posix=os.name != "nt") if isinstance(command, str) else list(command)
    if not argv:
        raise InvalidInput("give the rewrite command, for example --via 'llm -s \"compact this keep.md\"'")
    shown = command if isinstance(command, str) else shlex.join(argv)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=os.name != "nt",
        )
    except FileNotFoundError:
        raise InvalidInput(
            f"the rewrite command `{argv[0]}` was not found (it runs without a shell: give a "
            "program, or wrap pipes in sh -c '…'); keep.md was not changed"
        ) from None
    except OSError as exc:
        raise KeepguiError(
            f"the rewrite command `{shown}` could not start ({exc.strerror or exc}); keep.md was not changed"
        ) from None
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise KeepguiError(
            f"the rewrite command `{shown}` did not finish within {timeout:g} s and was stopped; "
            "keep.md was not changed (allow more time with --via-timeout)"
        ) from None
    except BaseException:
        _stop(proc)
        raise
    if proc.returncode != 0:
        tail = " / ".join(err.decode("utf-8", "replace").strip().splitlines()[-3:]) or "no message"
        raise KeepguiError(
            f"the rewrite command `{shown}` failed with exit status {proc.returncode} ({tail}); keep.md was not changed"
        )
    try:
        text = out.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KeepguiError(
            f"the rewrite command `{shown}` printed bytes that are not UTF-8 (at byte {exc.start}); "
            "keep.md was not changed — make it print UTF-8"
        ) from None
    if not text.strip():
        raise KeepguiError(f"the rewrite command `{shown}` printed nothing; keep.md was not changed")
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started (its own process group), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # it may have exited just now
        if os.name != "nt":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.communicate(timeout=5)


def rewrite_via(
    workspace: Workspace | str,
    command: str | Sequence[str],
    *,
    timeout: float = VIA_TIMEOUT,
    threshold: float = REVIEW_THRESHOLD,
    history: History | None = None,
    target: int | None = COMPACTION_TARGET,
) -> RewritePlan:
    """Have ``command`` rewrite keep.md (stdin → stdout) and return its rewrite as a plan to review.

    Nothing is written; the plan is applied like any other.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    data, _stamp = workspace.read(KEEP_MD)
    if data is None:
        raise NotFound(f"{workspace.keep_md} does not exist: nothing to rewrite")
    KeepDoc.parse(data, workspace.keep_md)  # a file keepgui cannot read back is not sent anywhere
    shown = command if isinstance(command, str) else shlex.join(command)
    out = run_command(command, data, timeout=timeout, cwd=workspace.root)
    plan = plan_from_text(workspace, out, source=f"`{shown}`", threshold=threshold, history=history, target=target)
    if plan.data != data:
        # the proposal was made from other content: compared with the file now, the agent's newest
        # entries would look like removals by the command
        raise StalePlan(workspace.keep_md, "keep.md changed while the rewrite command ran; run it again")
    return plan


# ---------------------------------------------------------------------- reviewing a rewrite made elsewhere


_EMPTY_SHA = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Acceptance:
    """A person's "this version is fine": the file, the version's hash and sequence number."""

    id: str
    path: str
    sha256: str
    seq: int
    at: int


class ReviewLog(Journal):
    """Which version of each file a person accepted, in ``<history root>/reviewed.jsonl``.

    Events: ``accepted`` ``{id, path, sha256, seq, at}`` and ``withdrawn``
    ``{id}`` (the undo of the apply that accepted). Separate from the version
    index on purpose: keepgui records every version it *sees*, and seeing is not
    accepting.
    """

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "reviewed.jsonl")

    def accept(self, path: str, version: Version | None) -> str:
        """Record that ``version`` of ``path`` (None: the file is gone) was accepted; returns the marker id."""
        marker = hashlib.sha256(f"{path}{now_ms()}{os.getpid()}{id(self)}".encode()).hexdigest()[:12]
        self._append(
            {
                "event": "accepted",
                "id": marker,
                "path": file_key(path),
                "sha256": version.sha256 if version else _EMPTY_SHA,
                "seq": version.seq if version else -1,
                "at": now_ms(),
            }
        )
        return marker

    def withdraw(self, marker: str) -> None:
        """Forget an acceptance (its apply was undone)."""
        self._append({"event": "withdrawn", "id": marker, "at": now_ms()})

    def latest(self, path: str) -> Acceptance | None:
        """The most recent acceptance of ``path`` still standing, or None."""
        key = file_key(path)

        def acceptance(obj: dict[str, Any]) -> Acceptance | None:
            if obj.get("path") != key:
                return None
            try:
                return Acceptance(obj["id"], key, str(obj["sha256"]), int(obj["seq"]), int(obj.get("at", 0)))
            except (KeyError, TypeError, ValueError):
                return None

        found = self.standing("accepted", "withdrawn", acceptance)
        return found[-1] if found else None


def _review_rel(name: str) -> str:
    if name in (KEEP_MD, "keep"):
        return KEEP_MD
    if name in (MEMORY_MD, "MEMORY.md", "memory"):
        return MEMORY_MD
    raise InvalidInput(f"keepgui reviews keep.md and MEMORY.md, not `{name}`")


def _baseline(history: History, path: str, current: bytes | None) -> tuple[Version | None, list[Version]]:
    """The version a review compares with, and the versions recorded since it (see the module doc)."""
    versions = history.versions(path)
    marker = ReviewLog(history).latest(path)
    start = -1
    if marker is not None:
        if 0 <= marker.seq < len(versions) and versions[marker.seq].sha256 == marker.sha256:
            start = marker.seq
        else:
            start = next((v.seq for v in reversed(versions) if v.sha256 == marker.sha256), -1)
    for v in versions[start + 1 :]:
        if v.seq > 0 and v.source not in WRITTEN_SOURCES and v.sha256 != versions[v.seq - 1].sha256:
            return versions[v.seq - 1], versions[v.seq :]
    if (
        current is None
        and versions
        and (marker is None or marker.sha256 != _EMPTY_SHA)
        and versions[-1].sha256 != _EMPTY_SHA
    ):
        return versions[-1], []  # the file was deleted outside keepgui
    return None, []


def pending_review(workspace: Workspace, name: str = KEEP_MD, history: History | None = None) -> Version | None:
    """The version a review would compare with when an outside rewrite awaits review, else None."""
    history = history if history is not None else History()
    rel = _review_rel(name)
    data, _stamp = workspace.read(rel)
    baseline, _since = _baseline(history, workspace.path(rel), data)
    return baseline


class ReviewPlan(DocPlan):
    """A rewrite made outside keepgui, compared with the last version keepgui saw, as restore operations.

    ``baseline`` is that version (None when there is nothing to review);
    ``comparison`` the item-level changes. Applying restores the selection and
    accepts the result; :meth:`accept` accepts the file as it is.
    """

    kind = "review"
    written_source = "review-restored"
    removal_reason = "review"

    def __init__(
        self, *args: Any, baseline: Version | None, comparison: Comparison | None, threshold: float, **kwargs: Any
    ) -> None:
        self.baseline = baseline
        self.comparison = comparison
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def replan(self) -> ReviewPlan:
        """The review again, from the file as it is now."""
        return review(self.workspace, self.rel, threshold=self.threshold, history=self.history)

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"restore {len(ops)} changes of {self.rel}"

    def _after_apply(self, applied: FileApplied) -> None:
        version = self.history.latest(self.path)
        applied.review_marker = ReviewLog(self.history).accept(self.path, version)

    def accept(self) -> str:
        """Accept the file as it is now (the rewrite stops being shown); StalePlan if it changed since."""
        self.check_fresh()
        version = self.history.record(self.path, self.data, source="seen") if self.data is not None else None
        return ReviewLog(self.history).accept(self.path, version)

    def baseline_text(self) -> str:
        """The text of the version compared with ("" without one)."""
        return _decode(self.history.read(self.baseline)) if self.baseline else ""

    def render_rewrite(self, context: int = 3) -> str:
        """The rewrite itself as a unified diff: the version keepgui saw → the file now."""
        return textdiff.unified(self.baseline_text(), self.before_text, f"seen/{self.rel}", f"now/{self.rel}", context)


def review(
    workspace: Workspace | str,
    name: str = KEEP_MD,
    *,
    threshold: float = REVIEW_THRESHOLD,
    history: History | None = None,
) -> ReviewPlan:
    """Compare keep.md (or ``MEMORY.md``) with the version keepgui saw before a rewrite it did not make.

    Every change becomes an operation that undoes it: put a removed entry back
    (selected by default when nothing in the file says it any more), put the
    original wording or the merged originals back, take a new line out. The
    plan's notices hold the checks of a compaction (about 120 lines, no
    duplicates left, no new facts, no dates added). Reading records the
    current version as seen — which does not accept it.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    history = history if history is not None else History()
    rel = _review_rel(name)
    path = workspace.path(rel)
    data, stamp = workspace.read(rel)
    doc = KeepDoc.parse(data, path, stamp)
    known = bool(history.versions(path))
    if data is not None:
        history.record(path, data, source="seen")
    baseline, since = _baseline(history, path, data)
    target = None  # a review restores what a rewrite changed; it does not aim at a line count
    name = rel.rsplit("/", 1)[-1]
    if baseline is None:
        note = (
            f"{name} has not been changed outside keepgui since it was last seen or accepted"
            if known
            else f"keepgui has no earlier version of {name}; from now on rewrites of it are shown here"
        )
        return ReviewPlan(
            workspace,
            rel,
            data,
            stamp,
            [],
            notices=[Notice("nothing-to-review", "info", note)],
            history=history,
            target=target,
            baseline=None,
            comparison=None,
            threshold=threshold,
            doc=doc,
        )
    old_doc = KeepDoc.parse(history.read(baseline), path)
    comparison = compare(old_doc, doc, threshold)
    by_keepgui = _keepgui_made(history, old_doc, since)
    planned = _restore_operations(doc, comparison, name, by_keepgui)
    notices = _review_notices(rel, name, baseline, old_doc, doc, comparison)
    return ReviewPlan(
        workspace,
        rel,
        data,
        stamp,
        planned,
        notices=notices,
        history=history,
        target=target,
        baseline=baseline,
        comparison=comparison,
        threshold=threshold,
        doc=doc,
    )


def _keepgui_made(history: History, old_doc: KeepDoc, since: list[Version]) -> dict[str, dict[str, str]]:
    """Which keys keepgui itself first removed or added after the baseline (``old_doc``):
    ``{"removed": {key: source}, "added": {...}}`` (an entry first removed by the outside rewrite is never
    labelled keepgui's)."""
    out: dict[str, dict[str, str]] = {"removed": {}, "added": {}}
    seen_removed: set[str] = set()
    seen_added: set[str] = set()
    previous = Counter(i.key for i in items_of(old_doc))
    for version in since:
        try:
            now = Counter(i.key for i in items_of(KeepDoc.parse(history.read(version))))
        except (KeepguiError, OSError):
            continue
        for key in previous - now:
            if key not in seen_removed:
                seen_removed.add(key)
                if version.source in WRITTEN_SOURCES:
                    out["removed"][key] = version.source
        for key in now - previous:
            if key not in seen_added:
                seen_added.add(key)
                if version.source in WRITTEN_SOURCES:
                    out["added"][key] = version.source
        previous = now
    return out


def _restore_operations(
    doc: KeepDoc, cmp: Comparison, name: str, by_keepgui: dict[str, dict[str, str]]
) -> list[tuple[Operation, Edit]]:
    """Operations that undo each change of a rewrite, on the file as it is now."""
    new_line = {i.position: i.index for i in cmp.new_items}
    old_to_new: dict[int, int] = dict(cmp.unchanged)
    for change in cmp.changes:
        if change.kind in ("reworded", "merged") and not change.into_existing:
            for item in change.old:
                old_to_new.setdefault(item.position, change.new[0].position)
    end = _end_anchor(doc)
    total = len(cmp.old_items)
    planned = []

    def insert(item: Item) -> tuple[int, int, float, str]:
        """Where restoring ``item`` puts its line back."""
        anchor, side = _anchor(item.position, old_to_new, new_line, total, end)
        return anchor, side, item.position, item.raw

    for change in cmp.changes:
        old, new = change.old, change.new
        mine = [i for i in old if i.key in by_keepgui["removed"]]
        through = f" (removed through keepgui: {by_keepgui['removed'][mine[0].key]})" if mine else ""
        # before: what the file says now; after: what restoring makes it say
        if change.kind == "removed":
            planned.append(
                _op(
                    "removed",
                    [old[0]],
                    [old[0].text],
                    f"removed by the rewrite{through}, and nothing in {name} says it any more; "
                    "restoring puts it back where it was",
                    Edit(inserts=(insert(old[0]),)),
                    selected=not mine,
                    before=(),
                )
            )
        elif change.kind == "deduplicated" and change.cover is not None:
            planned.append(
                _op(
                    "deduplicated",
                    [old[0]],
                    [old[0].text],
                    f"removed as a duplicate{through}: {change.cover.quote()} still says it",
                    Edit(inserts=(insert(old[0]),)),
                    selected=False,
                    evidence=[change.cover.text],
                    before=(),
                )
            )
        elif change.kind == "merged" and change.into_existing:
            lost = words_only_in(old[0].text, new[0].text)
            planned.append(
                _op(
                    "merged",
                    [old[0], new[0]],
                    [old[0].text, new[0].text],
                    f"folded into the existing {new[0].quote()}{through} (similarity {change.score:.0f})"
                    + (f"; words lost: {', '.join(lost)}" if lost else ""),
                    Edit(inserts=(insert(old[0]),)),
                    selected=False,
                    score=change.score,
                    before=(new[0].text,),
                )
            )
        elif change.kind == "new":
            item = new[0]
            added = by_keepgui["added"].get(item.key)
            why = (
                f"added through keepgui ({added}) after the rewrite"
                if added
                else "new: the earlier version did not say it — a compaction should add no facts"
            )
            planned.append(
                _op(
                    "new",
                    [item],
                    [],
                    f"{why}; restoring takes the line out",
                    Edit(drops=(item.index,), removes=(item,)),
                    selected=False,
                )
            )
        else:
            target = new[0]
            first, *others = old
            lost = list(dict.fromkeys(w for o in old for w in words_only_in(o.text, target.text)))
            what = f"the {len(old)} entries merged into" if change.kind == "merged" else "the wording before"
            planned.append(
                _op(
                    change.kind,
                    [*old, target],
                    [o.text for o in old],
                    f"restore {what} {target.quote()} (similarity {change.score:.0f})"
                    + (f"; the rewrite lost: {', '.join(lost)}" if lost else ""),
                    Edit(
                        rewrites=((target.index, first.raw),),
                        inserts=tuple((target.index, 1, o.position, o.raw) for o in others),
                        removes=(target,),
                    ),
                    selected=False,
                    score=change.score,
                    before=(target.text,),
                )
            )
    return planned


def _review_notices(
    rel: str, name: str, baseline: Version, old_doc: KeepDoc, doc: KeepDoc, cmp: Comparison
) -> list[Notice]:
    notices = [
        Notice(
            "rewrite",
            "info",
            f"{name} changed outside keepgui after the version seen "
            f"{_when(baseline.at)} ({old_doc.line_count} → {doc.line_count} lines)",
        )
    ]
    counts = Counter(c.kind for c in cmp.changes)
    if counts["removed"]:
        notices.append(
            Notice(
                "facts-removed",
                "warning",
                f"{counts['removed']} entr{'ies were' if counts['removed'] > 1 else 'y was'} removed "
                f"and nothing in {name} says {'them' if counts['removed'] > 1 else 'it'} any more "
                "(restore selected)",
            )
        )
    if counts["new"] and rel == KEEP_MD:
        notices.append(
            Notice(
                "new-facts",
                "warning",
                f"{counts['new']} new entr{'ies' if counts['new'] > 1 else 'y'}: a compaction should add no facts",
            )
        )
    if rel == KEEP_MD and doc.line_count < old_doc.line_count:
        low, high = USUAL_RANGE
        if not low <= doc.line_count <= high:
            notices.append(
                Notice(
                    "count",
                    "warning",
                    f"keep.md now has {doc.line_count} lines; a compaction aims at about "
                    f"{COMPACTION_TARGET} ({low}–{high})",
                )
            )
    dups = doc.duplicates()
    if dups:
        notices.append(
            Notice(
                "duplicates-left",
                "warning",
                f"{len(dups)} duplicate group(s) remain, e.g. `{excerpt(dups[0][0].text, 50)}`",
            )
        )
    dated = [
        c.new[0]
        for c in cmp.changes
        if c.new
        and c.kind in ("new", "reworded", "merged")
        and not c.into_existing
        and has_date(c.new[0].text)
        and not any(has_date(o.text) for o in c.old)
    ]
    if dated:
        notices.append(
            Notice(
                "dates-added",
                "warning",
                f"the rewrite added dates, e.g. {dated[0].quote()}: keep.md entries carry no dates",
            )
        )
    return notices


def _when(ms: int) -> str:
    from keepgui.core.timefmt import relative_time

    return relative_time(ms)
