"""What Codex's consolidation changed in its memory, entry by entry, and "restore" as a note (no Qt).

Codex consolidates on its own: a sub-agent rewrites ``memory_summary.md`` (and,
in a V1 root, ``MEMORY.md``). On success Codex replaces its git baseline of the
root with one commit of the folder *as the consolidation left it* (observed on
0.169.0; the folder before the run is not kept anywhere by Codex). So the only
record of what a run took away is the version keepgui saw before it:

* keepgui keeps every version of the summary (and handbook) it reads in its
  history (:func:`remember`), and which version a person last accepted
  (:class:`Accepted`; keepgui's own edits accept what they leave);
* :func:`review` compares the accepted version with the file now, entry by entry
  (:mod:`.entries`; the handbook by ``# Task Group`` block): an entry gone is
  **removed**, one still there in other words (rapidfuzz, 70 or more) is
  **reworded**, one that was not there is **new**. The plan's notices say
  whether the file now is what Codex's last consolidation left (its baseline
  commit, with the time) or was changed since;
* "restore" never rewrites a file Codex owns: applying a selection keeps **one
  new ad-hoc note** (:func:`keepgui.backends.codex.writes.keep_note`) that asks
  the next consolidation to bring the removed facts back, put the earlier wording
  back, or forget what was added — Codex treats every note as authoritative.
  Its undo removes that note while no consolidation has read it.

The review is a :class:`keepgui.core.compaction.Plan`, so the window's review
dialog shows it (the diff is the note that would be kept) and the command line
journals its apply for ``--undo``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from keepgui.backends.codex import writes
from keepgui.backends.codex.entries import summary_entries
from keepgui.backends.codex.layout import MemoryRoot
from keepgui.backends.codex.memory import HANDBOOK_NAME, NOTES_DIR, SUMMARY_NAME, handbook_entries
from keepgui.backends.codex.rows import HomeState
from keepgui.core import fsio
from keepgui.core.compaction import (
    REVIEW_KINDS,
    Applied,
    Counts,
    Operation,
    Plan,
    Selection,
    make_operation,
    register_applied_kind,
)
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.history import History, Journal
from keepgui.core.source import Notice
from keepgui.core.textdiff import unified

REVIEW_NAME = SUMMARY_NAME
"""The name under which the review is planned (the window's banner: "memory_summary.md was rewritten…")."""

REWORDED_AT = 70.0
"""An entry gone whose text stands this closely (rapidfuzz ``ratio``) in a new one was reworded."""

NOTE_HEAD = (
    "The user reviewed what the last memory consolidation changed and asks to restore the following; "
    "treat each line as a correction of the memory:"
)


@dataclass(frozen=True)
class Item:
    """One entry of a reviewed file: the file, its section (or handbook title) and its text."""

    file: str
    section: str
    text: str


def _items(name: str, text: str) -> list[Item]:
    if name == HANDBOOK_NAME:
        return [Item(name, e.title, e.text) for e in handbook_entries(text)]
    return [Item(name, e.section, e.text) for e in summary_entries(text)]


def _where(item: Item) -> str:
    return f"{item.file}, {item.section}" if item.section else item.file


def _one_line(text: str) -> str:
    return " ".join(text.split())


def compare(name: str, before: str, after: str) -> list[tuple[str, Item | None, Item | None]]:
    """``(kind, old, new)`` for every entry of ``name`` that differs between two texts: ``removed``
    (old only), ``reworded`` (both), ``new`` (new only)."""
    old, new = _items(name, before), _items(name, after)
    unmatched_new = list(new)
    for item in old:  # the same text, anywhere: unchanged (a section moved is not a change of fact)
        same = next((n for n in unmatched_new if n.text == item.text), None)
        if same is not None:
            unmatched_new.remove(same)
    remaining_old = [o for o in old if not any(n.text == o.text for n in new)]
    out: list[tuple[str, Item | None, Item | None]] = []
    for item in remaining_old:
        best, score = None, 0.0
        for candidate in unmatched_new:
            value = fuzz.ratio(_one_line(item.text), _one_line(candidate.text))
            if value > score:
                best, score = candidate, value
        if best is not None and score >= REWORDED_AT:
            unmatched_new.remove(best)
            out.append(("reworded", item, best))
        else:
            out.append(("removed", item, None))
    out.extend(("new", None, item) for item in unmatched_new)
    return out


def restore_line(kind: str, old: Item | None, new: Item | None) -> str:
    """The note's line that undoes one change."""
    if kind == "removed" and old is not None:
        return f"- Bring back (removed from {_where(old)}): {_one_line(old.text)}"
    if kind == "reworded" and old is not None and new is not None:
        return (
            f"- Restore the earlier wording ({_where(old)}): {_one_line(old.text)} "
            f"(it now reads: {_one_line(new.text)})"
        )
    if new is not None:
        return f"- Forget (added to {_where(new)}): {_one_line(new.text)}"
    raise InvalidInput(f"nothing to restore for a {kind} entry")


# ---------------------------------------------------------------------- what keepgui saw


class Accepted(Journal):
    """Which version of each reviewed file a person last accepted (keepgui's own writes accept too)."""

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "codex-reviewed.jsonl")

    def accept(self, path: str, sha256: str) -> None:
        """Take the version ``sha256`` of ``path`` as the one later changes are compared with."""
        self._append({"event": "accepted", "id": secrets.token_hex(8), "path": os.path.abspath(path), "sha256": sha256})

    def latest(self, path: str) -> str | None:
        """The sha256 of the accepted version of ``path`` (None when none was)."""
        key = os.path.abspath(path)
        found = [e for e in self.standing("accepted", "withdrawn") if e.get("path") == key]
        return found[-1].get("sha256") if found else None


def reviewed_files(state: HomeState) -> list[tuple[str, str, bytes | None]]:
    """``(name, path, bytes now)`` of the files a review compares (the handbook only in a V1 root)."""
    out = [(SUMMARY_NAME, state.summary.path, state.summary.raw if state.summary.exists else None)]
    handbook = os.path.join(state.root.path, HANDBOOK_NAME)
    if state.contents.handbook is not None:
        data, _stamp = fsio.read_stamped(handbook)
        out.append((HANDBOOK_NAME, handbook, data))
    return out


def remember(state: HomeState, history: History, *, accept: bool = False, source: str = "seen") -> bool:
    """Record the reviewed files in keepgui's history; accept them as they are when ``accept`` or when
    none was accepted yet. Returns True when one differs from its accepted version."""
    accepted = Accepted(history)
    pending = False
    for _name, path, data in reviewed_files(state):
        if data is None:
            continue
        sha = history.record(path, data, source=source).sha256
        base = accepted.latest(path)
        if accept or base is None:
            if base != sha:
                accepted.accept(path, sha)
        elif base != sha:
            pending = True
    return pending


# ---------------------------------------------------------------------- the plan


class NoteApplied(Applied):
    """A restore applied: the note it kept, and how to take it back (removed while unread by Codex)."""

    kind = "codex-note"

    def __init__(self, home: str, root: MemoryRoot, done: writes.Done | None, lines: Iterable[str]) -> None:
        target = root.path
        super().__init__(done.text if done else "Restore nothing", lines, done is not None, target)
        self.home = home
        self.root = root
        self.done = done

    def _undo(self) -> None:
        if self.done is None or self.done.reverse is None:
            raise InvalidInput("nothing to undo")
        self.done = self.done.reverse()

    def _redo(self) -> None:
        if self.done is None or self.done.reverse is None:
            raise InvalidInput("nothing to redo")
        self.done = self.done.reverse()

    def to_obj(self) -> dict[str, Any]:
        """For the command line's ``--undo``: the note's path and bytes."""
        path = str(self.done.result) if self.done is not None else ""
        data, _stamp = fsio.read_stamped(path) if path else (None, None)
        return {
            **super().to_obj(),
            "home": self.home,
            "root": [self.root.version, self.root.path, self.root.exists, self.root.why],
            "note": path,
            "data": None if data is None else data.decode("utf-8", "surrogateescape"),
        }

    @classmethod
    def from_obj(cls, obj: dict[str, Any], history: History) -> NoteApplied:
        """A restore back from :meth:`to_obj` (its undo removes the note while its bytes are the same)."""
        try:
            version, path, exists, why = obj["root"]
            root = MemoryRoot(version, path, bool(exists), why)
            note = obj["note"]
            data = str(obj["data"]).encode("utf-8", "surrogateescape")
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable entry ({exc})") from None
        done = writes.Done(obj.get("description", ""), [], note)
        stamp = fsio.Stamp.of(data, os.stat(note)) if os.path.exists(note) else fsio.Stamp.missing()
        done.reverse = lambda: writes.remove_own_note(obj["home"], root, note, stamp, data)
        applied = cls(obj["home"], root, done, obj.get("lines", ()))
        applied.state = obj.get("state", "applied")
        applied.at = obj.get("at", applied.at)
        return applied


register_applied_kind(NoteApplied.kind, NoteApplied.from_obj)


class ConsolidationReview(Plan):
    """The changes to the summary (and handbook) since the accepted version, each restorable by a note."""

    kind = "codex-review"
    KINDS = REVIEW_KINDS

    def __init__(self, state: HomeState, history: History, cwd: str | None = None) -> None:
        self.state = state
        self.history = history
        self.cwd = cwd
        self.changes: list[tuple[str, Item | None, Item | None]] = []
        self.stamps: dict[str, fsio.Stamp] = {}
        self.parts: list[str] = []
        notices: list[Notice] = []
        operations: list[Operation] = []
        accepted = Accepted(history)
        for name, path, data in reviewed_files(state):
            self.stamps[path] = fsio.current_stamp(path)
            base = accepted.latest(path)
            if data is None or base is None or base == hashlib.sha256(data).hexdigest():
                continue
            try:
                before = history.read(history.find(path, base)).decode("utf-8", "replace")
            except KeepguiError:
                continue
            found = compare(name, before, data.decode("utf-8", "replace"))
            for kind, old, new in found:
                operations.append(self._operation(kind, old, new))
                self.changes.append((kind, old, new))
            notices.append(self._origin(name, path, data))
            counted = {k: sum(1 for c in found if c[0] == k) for k in ("removed", "reworded", "new")}
            words = ", ".join(f"{n} {k}" for k, n in counted.items() if n)
            if words:
                self.parts.append(f"{name}: {words}")
        super().__init__(operations, notices, state.summary.path)

    def _operation(self, kind: str, old: Item | None, new: Item | None) -> Operation:
        before = (old.text,) if old else ()
        after = (new.text,) if new else ()
        either = old if old is not None else new
        target = either.section if either is not None else ""
        reason = {
            "removed": "no longer in the file: restoring keeps a note asking the next consolidation to bring it back",
            "reworded": "says it in other words now: restoring keeps a note asking for the earlier wording",
            "new": "was not there before: restoring keeps a note asking the next consolidation to forget it",
        }[kind]
        return make_operation(kind, (target or "(top)",), before, after, reason)

    def _origin(self, name: str, path: str, data: bytes) -> Notice:
        baseline = self.state.baseline
        if baseline is not None and not baseline.initial and baseline.same(name, data):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(baseline.time))
            return Notice(
                "consolidated",
                "info",
                f"{name} is as Codex's consolidation of {when} left it (baseline {baseline.commit[:8]})",
            )
        return Notice(
            "changed-since",
            "info",
            f"{name} differs from what Codex's last consolidation left: it was changed since (or no "
            "consolidation has succeeded yet)",
        )

    def describe(self) -> str:
        """``memory_summary.md: 2 removed, 1 reworded`` (or that nothing changed)."""
        return "; ".join(self.parts) or "no changes since the last review"

    def note_text(self, selection: Selection = None) -> str:
        """The note a selection keeps ("" when it selects nothing)."""
        lines = [restore_line(*self.changes[self.origin[op.id]]) for op in self.selected(selection)]
        return f"{NOTE_HEAD}\n\n" + "\n".join(lines) if lines else ""

    def counts(self, selection: Selection = None) -> Counts:
        """Changes found → changes left as they are (the others asked back by the note)."""
        chosen = len(self.normalise_selection(selection))
        return Counts(
            "changes left as the consolidation made them", len(self.operations), len(self.operations) - chosen
        )

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """The note the selection keeps, as a diff of a new file."""
        text = self.note_text(selection)
        if not text:
            return ""
        name = f"{NOTES_DIR}/<time>-restore-after-consolidation.md".replace(os.sep, "/")
        return unified("", text + "\n", "/dev/null", f"b/{name}", context)

    def check_fresh(self) -> None:
        """The reviewed files still hold what the review read."""
        for path, stamp in self.stamps.items():
            if not fsio.current_stamp(path).same_content(stamp):
                raise self.stale(f"{os.path.basename(path)} changed")

    def replan(self) -> ConsolidationReview:
        """The review again (the caller reads the home again first)."""
        from keepgui.backends.codex.rows import read_state

        return ConsolidationReview(read_state(self.state.env, self.cwd), self.history)

    def apply(self, selection: Selection = None) -> NoteApplied:
        """Keep the note of the selection (nothing written when it selects nothing)."""
        self.check_fresh()
        ops = self.selected(selection)
        text = self.note_text([op.id for op in ops])
        lines = [f"{op.label}: {' '.join((op.before or op.after or ('',))[0].split())[:80]}" for op in ops]
        if not text:
            return NoteApplied(self.state.env.home, self.state.root, None, lines)
        done = writes.keep_note(self.state.env.home, self.state.root, text, slug="restore-after-consolidation")
        return NoteApplied(self.state.env.home, self.state.root, done, lines)

    def accept(self) -> None:
        """Take the files as this review read them as the accepted versions."""
        accepted = Accepted(self.history)
        for _name, path, data in reviewed_files(self.state):
            if data is not None:
                accepted.accept(path, self.history.record(path, data, source="accepted").sha256)


def review(state: HomeState, history: History, cwd: str | None = None) -> ConsolidationReview:
    """What changed in the summary (and handbook) since the accepted version."""
    return ConsolidationReview(state, history, cwd)
