"""What an agent was given, between two moments: the diff of its exact context (no Qt, no backend).

:func:`read_moment` reads a bank's context (``Bank.context``: the named parts ``keepgui context``
prints), its live memories' texts and its memory files' hashes; :func:`moment` does it for a source as
it is now or as it was at a recorded moment (:func:`keepgui.core.timetravel.opened_at`, which opens
the past as of then, so each part is byte for byte what the agent was given then). :func:`compare`
turns two moments into a :class:`ContextDiff`: each part's unified diff, and what it means in
memories — new ones the agent now sees (:func:`given`), new ones kept but not given, removed ones, and ones still kept but no longer given (a
limit or a cut, such as Claude Code's 200-line index) — and in files (the memory files whose bytes
changed). ``keepgui context --at T1 --diff T2`` prints it; the window's View → Compare context…
(:mod:`keepgui.ui.contextdiff`) shows the same object.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from keepgui.core import fsio
from keepgui.core.history import file_key

if TYPE_CHECKING:
    from keepgui.core.journal import Journal
    from keepgui.core.registry import OpenOptions
    from keepgui.core.source import Bank, Source


HELD_BACK = frozenset({"not-loaded", "unindexed", "hidden", "missing-file"})
"""The tags by which a backend says a memory is kept but not given to the next session (Claude Code's
index lines past its cut and topic files it does not name, Gemini CLI's notes and hidden files)."""


@dataclass(frozen=True)
class Moment:
    """A bank's context at one moment: its parts' texts, its live memories (id → text), its memory files
    (path → SHA-256 of their bytes, None when unreadable), what to tell a person about it, and the ids
    of the memories the agent is given (:func:`given`)."""

    parts: dict[str, str]
    rows: dict[str, str]
    files: dict[str, str | None]
    notes: tuple[str, ...] = ()
    given: frozenset[str] = frozenset()


def given(key: str, text: str, tags: tuple[str, ...], context: str) -> bool:
    """Whether a memory is given to the agent in ``context`` (every part's text): not when its backend
    tags it held back (:data:`HELD_BACK`); else when its first line is in the context, or — a memory
    that is a file, named in an index the agent is given (a Claude Code topic file) — its name is."""
    if HELD_BACK.intersection(tags):
        return False
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first and first in context:
        return True
    return "." in key and not any(c.isspace() for c in key) and f"({key})" in context


def read_moment(
    bank: Bank, query: str = "", options: Mapping[str, Any] | None = None, shown: Callable[[str], str] = str
) -> Moment:
    """``bank``'s context for ``query`` (``options``: the backend's own options of ``keepgui context``),
    every path and text passed through ``shown`` (a copy of the past names the source's paths)."""
    bank.load(full=True)
    parts = {k: shown(v or "") for k, v in bank.context(query, **dict(options or {})).named_parts().items()}
    live = [r for r in bank.rows() if r.invalid_at is None]
    rows = {r.id: shown(r.text) for r in live}
    whole = "\n".join(parts.values())
    seen = frozenset(r.id for r in live if given(r.id, rows[r.id], tuple(r.tags), whole))
    files: dict[str, str | None] = {}
    for path in bank.memory_files():
        data, _stamp = fsio.read_stamped(path)
        files[shown(path)] = hashlib.sha256(data).hexdigest() if data is not None else None
    return Moment(parts, rows, files, given=seen)


def moment(
    journal: Journal,
    source: Source,
    bank: str,
    at: int | None,
    query: str = "",
    options: OpenOptions | None = None,
) -> Moment:
    """The context of ``source``'s bank ``bank`` now (``at`` None) or at ``at`` (epoch ms, from the
    journal's record; InvalidInput before it starts). Slow: run it off the GUI thread."""
    from keepgui.core.timetravel import describe_when, opened_at

    if at is None:
        return read_moment(source.bank(bank), query)
    with opened_at(journal, source, at, options) as past:
        read = read_moment(past.bank(bank), query, shown=past.shown)
        notes = (f"as it was at {describe_when(at)} (read-only)", *past.notes)
        return Moment(read.parts, read.rows, read.files, notes, read.given)


SYNC_MS = 1000
"""Versions of different files recorded within this long of each other are one moment (one look at a
source records its files one by one)."""


def recorded_moments(journal: Journal, source: Source) -> list[int]:
    """The moments (epoch ms, newest first) the journal recorded versions of ``source``'s files: a run of
    versions each less than :data:`SYNC_MS` after the one before, no file twice, is one moment, its last."""
    mine = {source.path, file_key(source.path)}
    times = sorted(
        (v.at, tracked.path)
        for tracked in journal.tracked().values()
        if tracked.source in mine
        for v in journal.versions(tracked.path)
    )
    moments: list[int] = []
    run: set[str] = set()
    for at, path in times:
        if moments and at - moments[-1] < SYNC_MS and path not in run:
            moments[-1] = at
        else:
            moments.append(at)
            run = set()
        run.add(path)
    return moments[::-1]


@dataclass(frozen=True)
class PartDiff:
    """One part's change: the SHA-256 of its text at each moment, its lines added and removed, the diff."""

    sha256: tuple[str, str]
    added: int
    removed: int
    diff: str

    def to_obj(self) -> dict[str, Any]:
        """As ``keepgui context --diff --json`` prints it."""
        return {"sha256": list(self.sha256), "added": self.added, "removed": self.removed, "diff": self.diff}


@dataclass(frozen=True)
class ContextDiff:
    """What changed in the context from ``at`` to ``to`` (the moments as the person named them)."""

    at: str
    to: str
    sha256: tuple[str, str]
    """The whole context (every part, joined) at each moment."""
    parts: dict[str, PartDiff]
    files_changed: list[str]
    new: dict[str, str] = field(default_factory=dict)
    """New memories (id → text at ``to``)."""
    new_seen: dict[str, str] = field(default_factory=dict)
    """The new memories the agent is given."""
    removed: dict[str, str] = field(default_factory=dict)
    """Memories gone (id → text at ``at``)."""
    cut: dict[str, str] = field(default_factory=dict)
    """Memories still kept but no longer given (a limit or a cut)."""

    @property
    def summary(self) -> str:
        """One sentence for a person."""
        seen, files = len(self.new_seen), self.files_changed
        return (
            f"from {self.at} to {self.to}: the agent sees {seen} new memor{'y' if seen == 1 else 'ies'}"
            f" ({len(self.new) - seen} more kept but not given), {len(self.removed)} removed,"
            f" {len(self.cut)} no longer given though still kept (a limit or a cut)"
            + (f"; changed: {', '.join(os.path.basename(p) for p in files)}" if files else "; no memory file changed")
        )

    def counts(self) -> dict[str, int]:
        """How many memories are new, new and given, removed, and no longer given."""
        return {
            "new": len(self.new),
            "new_seen": len(self.new_seen),
            "removed": len(self.removed),
            "cut": len(self.cut),
        }

    def to_obj(self) -> dict[str, Any]:
        """As ``keepgui context --at T1 --diff T2 --json`` prints it."""
        return {
            "at": self.at,
            "to": self.to,
            "sha256": list(self.sha256),
            "summary": self.summary,
            "memories": self.counts(),
            "files_changed": self.files_changed,
            "parts": {name: part.to_obj() for name, part in self.parts.items()},
        }


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def compare(one: Moment, two: Moment, at: str, to: str) -> ContextDiff:
    """What changed from ``one`` (named ``at``) to ``two`` (named ``to``); see the module docstring."""
    seen_one, seen_two = "\n".join(one.parts.values()), "\n".join(two.parts.values())
    new = {k: t for k, t in two.rows.items() if k not in one.rows}
    removed = {k: t for k, t in one.rows.items() if k not in two.rows}
    new_seen = {k: t for k, t in new.items() if k in two.given}
    cut = {k: t for k, t in two.rows.items() if k in one.rows and k in one.given and k not in two.given}
    files = sorted(p for p in set(one.files) | set(two.files) if one.files.get(p) != two.files.get(p))
    parts: dict[str, PartDiff] = {}
    for name in dict.fromkeys([*one.parts, *two.parts]):
        a, b = one.parts.get(name, ""), two.parts.get(name, "")
        lines = difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True), f"{name} at {at}", f"{name} at {to}"
        )
        diff = "".join(lines)
        body = diff.splitlines()[2:]
        added = sum(1 for x in body if x.startswith("+"))
        parts[name] = PartDiff((_sha(a), _sha(b)), added, sum(1 for x in body if x.startswith("-")), diff)
    return ContextDiff(at, to, (_sha(seen_one), _sha(seen_two)), parts, files, new, new_seen, removed, cut)
