"""Compaction of a Hermes memory file over its limit, and the review of rewrites made outside keepgui (no Qt).

**Compaction.** Over its limit, a file makes Hermes refuse its own ``add`` until it is consolidated.
:func:`plan_compaction` proposes, as a :class:`keepgui.core.compaction.Plan` a person reviews as a
diff: *merge* near-duplicate entries into the one that holds the other's words (safe when one
entry contains the other), *shorten* entries by collapsing repeated spaces and blank lines (safe:
no word changes), and *drop* the oldest entries (the top of the file, which Hermes appends to) until
the file fits — a judgement call, never selected by default. Its counts say how far the selection
gets under the limit.

**Review.** Hermes's background review rewrites memory every few turns on its own. keepgui keeps
every version of MEMORY.md and USER.md it has seen (:mod:`keepgui.core.history`); :func:`review`
compares the version a person last accepted (or the one seen before the latest) with the file now,
entry by entry: entries *removed* and entries *reworded* can each be restored, entries *new* are
reported. Accepting takes the file as it is as the new baseline.

Either plan is applied under Hermes's lock, refused when the file changed since the plan was
made, as one change that undoes itself.
"""

from __future__ import annotations

import base64
import difflib
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz

from keepgui.backends.hermes.entries import FILE_NAMES, MEMORY, USER, decode, parse, serialize, size
from keepgui.core import fsio
from keepgui.core.compaction import (
    REVIEW_KINDS,
    Applied,
    ChangedSince,
    Counts,
    Operation,
    Plan,
    Selection,
    make_operation,
    register_kinds,
)
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.history import Journal
from keepgui.core.source import Change, Notice

if TYPE_CHECKING:
    from keepgui.backends.hermes.bank import HermesHome
from dataclasses import replace

COMPACT_KINDS = register_kinds(
    {
        "merge": "Merge near-duplicate entries",
        "shorten": "Shorten entries (whitespace only)",
        "drop": "Drop the oldest entries",
    }
)


class EntriesApplied(Applied):
    """A plan written to one memory file: undo and redo swap its bytes, only over exactly what was there."""

    kind = "hermes-entries"

    def __init__(self, bank: HermesHome, target: str, before: bytes | None, after: bytes, lines: Sequence[str]) -> None:
        super().__init__(f"{FILE_NAMES[target]}: {len(lines)} changes", lines, before != after, bank.files.path(target))
        self.bank, self.target_name, self.before, self.after = bank, target, before, after

    def _undo(self) -> None:
        try:
            self.bank.files.swap(self.target_name, self.before, self.after)
        except KeepguiError as exc:
            raise ChangedSince(self.target, f"{self.target} changed since the plan was applied: {exc}") from None

    def _redo(self) -> None:
        try:
            self.bank.files.swap(self.target_name, self.after, self.before)
        except KeepguiError as exc:
            raise ChangedSince(self.target, f"{self.target} changed since the undo: {exc}") from None

    def to_obj(self) -> dict[str, Any]:
        """For the command line's ``--undo``: the home, the file, and its bytes before and after."""
        return {
            **super().to_obj(),
            "home": self.bank.home,
            "file": self.target_name,
            "before": None if self.before is None else base64.b64encode(self.before).decode("ascii"),
            "after": base64.b64encode(self.after).decode("ascii"),
        }

    @classmethod
    def from_obj(cls, obj: dict[str, Any], bank: HermesHome) -> EntriesApplied:
        """A plan applied from the command line, back from :meth:`to_obj`, for ``bank`` (refused when it was
        applied to another home)."""
        try:
            home, target, before, after = obj["home"], obj["file"], obj["before"], obj["after"]
            if obj.get("kind") != cls.kind or target not in FILE_NAMES:
                raise ValueError(f"kind {obj.get('kind')!r}")
            old = None if before is None else base64.b64decode(before)
            new = base64.b64decode(after)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable entry ({exc})") from None
        if os.path.realpath(home) != os.path.realpath(bank.home):
            raise InvalidInput(f"not a plan applied to {bank.home}: nothing was undone")
        applied = cls(bank, target, old, new, obj.get("lines", ()))
        applied.description = obj.get("description", applied.description)
        applied.state = obj.get("state", "applied")
        applied.at = obj.get("at", applied.at)
        return applied


class EntriesPlan(Plan):
    """Operations on the entries of one memory file; each operation maps old entries to new ones."""

    kind = "hermes"
    KINDS = COMPACT_KINDS

    def __init__(
        self,
        bank: HermesHome,
        target: str,
        edits: list[tuple[Operation, dict[str, str | None]]],
        notices: Sequence[Notice] = (),
    ) -> None:
        super().__init__([op for op, _ in edits], notices, FILE_NAMES[target])
        self.bank, self.target = bank, target
        snap = bank.files.read(target)
        self.stamp, self.data, self.entries = snap.stamp, snap.data, snap.entries
        self.limit = bank.settings().int_limit(target)
        self._edits = {op.id: edits[self.origin[op.id]][1] for op in self.operations}

    def after(self, selection: Selection = None) -> list[str]:
        """The entries once the selection is applied."""
        ids = self.normalise_selection(selection)
        out: list[str | None] = list(self.entries)
        appended: list[str] = []
        for op in self.operations:
            if op.id not in ids:
                continue
            for old, new in self._edits[op.id].items():
                if old.startswith("\0add:"):
                    appended.append(old[len("\0add:") :])
                    continue
                out = [new if e == old else e for e in out]
        return list(dict.fromkeys([e for e in out if e] + appended))

    def counts(self, selection: Selection = None) -> Counts:
        """Characters before → after → the limit."""
        return Counts("chars", size(self.entries), size(self.after(selection)), self.limit)

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """The file's diff for a selection."""
        before = (self.data or b"").decode("utf-8", "replace").replace("\r\n", "\n").splitlines(keepends=True)
        after = serialize(self.after(selection)).decode("utf-8").splitlines(keepends=True)
        name = FILE_NAMES[self.target]
        lines = difflib.unified_diff(before, after, f"a/{name}", f"b/{name}", n=context)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def check_fresh(self) -> None:
        """Stale when the file changed since the plan was made."""
        if not fsio.current_stamp(self.bank.files.path(self.target)).same_content(self.stamp):
            raise self.stale("the file changed")

    def replan(self) -> Plan:
        """The same kind of plan from the file now."""
        return plan_compaction(self.bank, self.target)

    def apply(self, selection: Selection = None) -> EntriesApplied:
        """Write the selection under Hermes's lock (stale: nothing written)."""
        self.check_fresh()
        new = self.after(selection)
        ops = self.selected(selection)
        result = self.bank.files.rewrite(self.target, lambda _e: (new, []), expect=self.stamp, force=True)
        return EntriesApplied(self.bank, self.target, result.before, result.after or b"", [op.reason for op in ops])

    def apply_to(self, bank: HermesHome, selection: frozenset[str], text: str) -> Change:
        """Apply and return the Change (undo swaps the bytes back)."""
        applied = self.apply(selection)
        change = bank._finish(text, self.target, _result(applied))

        def back() -> Change:
            applied.undo()
            return replace(bank._finish(text, self.target, _result(applied, undo=True)), result=applied, reverse=forth)

        def forth() -> Change:
            applied.redo()
            return replace(bank._finish(text, self.target, _result(applied)), result=applied, reverse=back)

        return replace(change, result=applied, reverse=back if applied.changed else None)

    def accept(self) -> None:
        """Take the file as it is now as the baseline of later reviews."""
        Baselines(self.bank.source.history).accept(self.bank.files.path(self.target), self.data or b"")


def _result(applied: EntriesApplied, *, undo: bool = False) -> Any:
    from keepgui.backends.hermes.writes import ToolResult

    before, after = (applied.after, applied.before) if undo else (applied.before, applied.after)
    return ToolResult(True, applied.description, before, after)


_SPACES = re.compile(r"[ \t]{2,}")
_BLANKS = re.compile(r"\n{3,}")


def _compact_operations(entries: list[str], limit: int) -> list[tuple[Operation, dict[str, str | None]]]:
    out: list[tuple[Operation, dict[str, str | None]]] = []
    gone: set[str] = set()
    safe_gone: set[str] = set()  # what the default selection drops: the drops below are counted after it
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            if a in gone or b in gone:
                continue
            score = fuzz.token_set_ratio(a, b)
            if score < 85:
                continue
            keep, drop = (a, b) if len(a) >= len(b) else (b, a)
            safe = drop.lower() in keep.lower()
            reason = f"“{drop[:60]}” is {'contained in' if safe else f'{score:.0f}% like'} “{keep[:60]}”"
            op = make_operation("merge", [drop], [drop, keep], [keep], reason, selected=safe, score=score)
            out.append((op, {drop: None}))
            gone.add(drop)
            if safe:
                safe_gone.add(drop)
    for e in entries:
        if e in gone:
            continue
        tidy = _BLANKS.sub("\n\n", _SPACES.sub(" ", e))
        if tidy != e:
            out.append(
                (
                    make_operation("shorten", [e], [e], [tidy], "repeated spaces or blank lines", selected=True),
                    {e: tidy},
                )
            )
    total = size([e for e in entries if e not in safe_gone])
    for e in entries:
        if total <= limit:
            break
        if e in safe_gone:
            continue
        op = make_operation("drop", [e], [e], [], f"oldest entry ({len(e):,} chars): frees room under the limit")
        out.append((op, {e: None}))
        total -= len(e) + 3
    return out


def plan_compaction(bank: HermesHome, target: str | None = None) -> EntriesPlan:
    """A compaction plan of the file over its limit (MEMORY.md first; MEMORY.md when none is over)."""
    if target is None:
        over = [t for t in (MEMORY, USER) if bank.files.read(t).state.over]
        target = over[0] if over else MEMORY
    snap = bank.files.read(target)
    limit = bank.settings().int_limit(target)
    notices = []
    if snap.state.over:
        notices.append(
            Notice("over-limit", "warning", f"{snap.state.name} is {snap.state.meter()}: Hermes refuses its own adds")
        )
    return EntriesPlan(bank, target, _compact_operations(snap.entries, limit), notices)


# ---------------------------------------------------------------------- review


class Baselines(Journal):
    """The versions of memory files a person accepted (later reviews compare with them)."""

    def __init__(self, history: Any) -> None:
        super().__init__(history, "hermes-baselines.jsonl")

    def accept(self, path: str, data: bytes) -> None:
        """Remember ``data`` as the accepted version of ``path``."""
        version = self.history.record(path, data, source="accepted")
        self._append({"event": "accepted", "path": version.path, "sha256": version.sha256})

    def latest(self, path: str) -> str | None:
        """The sha256 of the last accepted version of ``path`` (None: none)."""
        from keepgui.core.history import file_key

        found = [e for e in self.standing("accepted", "withdrawn", lambda o: o) if e.get("path") == file_key(path)]
        return str(found[-1]["sha256"]) if found else None


def _baseline(bank: HermesHome, target: str) -> list[str]:
    history = bank.source.history
    path = bank.files.path(target)
    current = bank.files.read(target).data or b""
    accepted = Baselines(history).latest(path)
    versions = history.versions(path)
    if accepted is not None:
        chosen = next((v for v in reversed(versions) if v.sha256 == accepted), None)
    else:
        older = [v for v in versions if v.source != "before-save"]
        chosen = next((v for v in reversed(older) if history.read(v) != current), None)
    if chosen is None:
        return parse(decode(current)) if current else []
    try:
        return parse(decode(history.read(chosen)))
    except (KeepguiError, ValueError):
        return []


def review(bank: HermesHome, target: str) -> EntriesPlan:
    """What changed in ``target`` since the accepted (or previous) version, entry by entry (see the module docstring)."""
    old = _baseline(bank, target)
    now = bank.files.read(target).entries
    gone = [e for e in old if e not in now]
    new = [e for e in now if e not in old]
    edits: list[tuple[Operation, dict[str, str | None]]] = []
    matched: set[str] = set()
    for e in gone:
        best = max(new, key=lambda n: fuzz.ratio(e, n), default=None) if new else None
        if best is not None and best not in matched and fuzz.ratio(e, best) >= 60:
            matched.add(best)
            op = make_operation("reworded", [e], [e], [best], f"reworded: restore “{e[:60]}”")
            edits.append((op, {best: e}))
        else:
            op = make_operation("removed", [e], [e], [], f"removed: restore “{e[:60]}”")
            edits.append((op, {"\0add:" + e: e}))
    for n in new:
        if n not in matched:
            edits.append((make_operation("new", [n], [], [n], f"new entry “{n[:60]}”", applicable=False), {}))
    notices = [] if edits else [Notice("no-changes", "info", f"{FILE_NAMES[target]} has no changes to review")]
    return ReviewPlan(bank, target, edits, notices)


class ReviewPlan(EntriesPlan):
    """The review of an outside rewrite of one memory file: restores, and new entries reported."""

    kind = "hermes-review"
    KINDS = REVIEW_KINDS

    def replan(self) -> Plan:
        """The review computed again from the file now."""
        return review(self.bank, self.target)
