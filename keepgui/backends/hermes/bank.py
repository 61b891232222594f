"""One Hermes home as a bank of the seam: the entries of MEMORY.md and USER.md as rows, their counts and
meters, keep / add / edit / forget / restore / reorder, the exact preview, compaction and review (no Qt).

Row keys are ``m:<hash>`` / ``u:<hash>`` of the entry's text (entries are unique in a file, so a key
names one entry for as long as its text is unchanged); a forgotten entry is kept in keepgui's
history and shown as a retired row ``removed:<id>`` that Restore puts back between the neighbours it
had. Every write goes through :class:`~keepgui.backends.hermes.writes.MemoryFiles` (Hermes's lock,
Hermes's format, refused when the file changed since the rows were read) and returns a Change whose
undo puts the file's bytes back exactly, only over exactly what the change left.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from keepgui.backends.hermes.entries import FILE_NAMES, MEMORY, SHORT, TARGETS, USER, Entry, FileState, parse
from keepgui.backends.hermes.home import Settings, load_settings
from keepgui.backends.hermes.threats import explain
from keepgui.backends.hermes.writes import MemoryFiles, Refused, Snapshot, ToolResult
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.source import (
    ACTIVITY,
    COMPACT,
    DISK,
    ENTITIES,
    HISTORY,
    PIN,
    QUERY,
    RANKED,
    TAGS,
    WHAT_IF,
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
    Row,
    RowDelta,
    nothing_written,
    stamps_of,
)

if TYPE_CHECKING:
    from keepgui.backends.hermes.backend import HermesSource
    from keepgui.backends.hermes.context import SessionContext
    from keepgui.backends.hermes.documents import HomeDocs
    from keepgui.core.compaction import Plan
import dataclasses

CAPABILITIES = Capabilities(
    missing={
        PIN: "Hermes loads every entry of MEMORY.md and USER.md whole: there is nothing to pin",
        TAGS: "an entry's tag is its file (MEMORY.md or USER.md): forget it and add it to the other file to move it",
        ENTITIES: "Hermes's entries are plain text: no entities",
        RANKED: "Hermes puts every entry in the prompt; there is no recall ranking",
        HISTORY: "entries have no revisions; keepgui keeps every version of the files (Review)",
        QUERY: "Hermes's memory blocks are the same whatever the question",
        WHAT_IF: "Hermes's entries have no pin or tombstone to try out: forget one (Undo brings it back)",
        ACTIVITY: "Hermes does not record when an entry was written",
    },
    fields=frozenset({"live", "text", "tags"}),
    ordered=True,
    noun="entry",
    nouns="entries",
    retire="Forget",
    reviews=(FILE_NAMES[MEMORY], FILE_NAMES[USER]),
)
"""What a Hermes home can do in the window, and why not."""

REMOVED = "removed:"
PREFIX = {MEMORY: "m:", USER: "u:"}


def row_key(target: str, text: str) -> str:
    """The key of an entry: its file and a hash of its text."""
    return PREFIX[target] + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def target_of(key: str) -> str:
    """Which file a row key belongs to."""
    for target, prefix in PREFIX.items():
        if key.startswith(prefix):
            return target
    raise NotFound(f"no Hermes entry {key}")


def entry_row(entry: Entry, offset: int) -> FileRow:
    """The row of one entry."""
    fields = [("File", FILE_NAMES[entry.target]), ("Characters", f"{entry.chars:,}")]
    if entry.blocked:
        fields.append(("Blocked", explain(entry.findings)))
        if entry.unstable:
            fields.append(("Placeholder", "its wording varies between Hermes runs (two invisible characters)"))
    return FileRow(
        id=row_key(entry.target, entry.text),
        text=entry.text,
        position=offset + entry.index,
        tags=(FILE_NAMES[entry.target],) + (("blocked",) if entry.blocked else ()),
        fields=tuple(fields),
    )


class HermesHome(BankDefaults):
    """One Hermes home (the default one or a profile) as a bank (see the module docstring)."""

    def __init__(self, source: HermesSource, name: str, home: str) -> None:
        self.source = source
        self.name = name
        self.home = home
        self.key = BankKey(source.path, name)
        self.capabilities = CAPABILITIES
        self.lock = threading.RLock()
        self.files = MemoryFiles(home, self._limit, source.history)
        self._settings: Settings | None = None
        self._snaps: dict[str, Snapshot] = {}
        self._rows: list[Row] = []

    # ------------------------------------------------------------------ reading

    def settings(self) -> Settings:
        """The home's settings (read again on every load)."""
        if self._settings is None:
            self._settings = load_settings(self.home, self.source.environ)
        return self._settings

    def _limit(self, target: str) -> int:
        return self.settings().int_limit(target)

    def state(self, target: str) -> FileState:
        """One store as last loaded (read now when not loaded yet)."""
        snap = self._snaps.get(target)
        return snap.state if snap is not None else self.files.read(target).state

    def project_folder(self) -> str:
        """The folder whose project context file the documents show (the source's, else the home's)."""
        return self.source.project or os.getcwd()

    def is_loaded(self) -> bool:
        """True once the files were read."""
        return bool(self._snaps)

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Read both files; every row when anything changed (outside changes are offered for review)."""
        with self.lock:
            before = dict(self._snaps)
            self._settings = load_settings(self.home, self.source.environ)
            snaps = {t: self.files.read(t) for t in TARGETS}
            reviews = []
            for target, snap in snaps.items():
                if snap.data is not None:
                    self.source.history.record(snap.path, snap.data, source="seen")
                old = before.get(target)
                if old is not None and not old.stamp.same_content(snap.stamp):
                    reviews.append(FILE_NAMES[target])
            self._snaps = snaps
            rows = self._build_rows()
            changed = full or not before or rows != self._rows
            self._rows = rows
        told = bool(reviews) and not full
        return Change(
            self.source.path,
            self.name,
            origin=DISK,
            rows=RowDelta(rows, (), True) if changed else RowDelta(),
            reviews=tuple(reviews) if told else (),
            notes=(f"{', '.join(reviews)} changed on disk",) if told else (),
        )

    def _build_rows(self) -> list[Row]:
        rows: list[Row] = []
        present = set()
        for n, target in enumerate(TARGETS):
            for entry in self._snaps[target].state.entries:
                rows.append(entry_row(entry, n * 1_000_000))
                present.add((target, entry.text))
        for record in self.source.history.removed():
            if os.path.dirname(os.path.dirname(record.path)) != os.path.realpath(self.home):
                continue
            target = USER if record.path.endswith(FILE_NAMES[USER]) else MEMORY
            if (target, record.text) in present:
                continue
            rows.append(
                FileRow(
                    id=REMOVED + record.id,
                    text=record.text,
                    position=2_000_000 + record.number,
                    tags=(FILE_NAMES[target],),
                    invalid_at=record.removed_at,
                    updated_at=record.removed_at,
                )
            )
        return rows

    def rows(self) -> Sequence[Row]:
        """The rows as last loaded."""
        return list(self._rows)

    def summary(self) -> BankSummary:
        """``MEMORY 1,964 / 2,200 chars · USER 410 / 1,375 · 2 pending`` and what is wrong."""
        if not self._snaps:
            return BankSummary("loading…")
        parts, problems, over = [], [], []
        for target in TARGETS:
            state = self._snaps[target].state
            if target == MEMORY:
                parts.append(f"{SHORT[target]} {state.tool_count:,} / {state.limit:,} chars")
            else:
                parts.append(f"{SHORT[target]} {state.tool_count:,} / {state.limit:,}")
            if state.problem:
                problems.append(state.problem)
            if state.over:
                over.append(state.name)
        staged = self.source.pending_count(self.name)
        if staged:
            parts.append(f"{staged} pending")
        blocked = sum(len(self._snaps[t].state.blocked) for t in TARGETS)
        if blocked:
            parts.append(f"{blocked} blocked")
        due = ""
        if over:
            due = (
                f"{' and '.join(over)} {'is' if len(over) == 1 else 'are'} over Hermes's limit: Hermes refuses its own "
                "memory writes until consolidated. Review a plan that brings it under the limit."
            )
        settings = self.settings()
        description = "; ".join(settings.effects())
        return BankSummary(
            " · ".join(parts),
            problem="; ".join(problems),
            description=f"{self.home} — {description}",
            compaction_due=due,
            size=", ".join(self._snaps[t].state.meter() for t in TARGETS if self._snaps[t].state.over),
            problems=len(problems) + blocked,
            title=self.name if self.name != "default" else "default profile",
        )

    def problems(self) -> list[Problem]:
        """Undecodable files, files Hermes's replace/remove would refuse (drift), blocked entries, over limits."""
        out = []
        for target in TARGETS:
            snap = self.files.read(target)
            state = snap.state
            if state.problem:
                out.append(Problem(snap.path, 0, state.problem, "undecodable"))
            if state.drift:
                out.append(
                    Problem(snap.path, 0, f"Hermes's replace and remove refuse this file: {state.drift}", "drift")
                )
            if state.over:
                out.append(
                    Problem(snap.path, 0, f"{state.meter()}: over the limit, Hermes refuses its own adds", "over-limit")
                )
            for entry in state.blocked:
                out.append(Problem(snap.path, 0, f"entry {entry.index + 1}: {explain(entry.findings)}", "blocked"))
        return out

    def documents(self) -> HomeDocs:
        """MEMORY.md, USER.md, SOUL.md, the project context file and the memory settings."""
        from keepgui.backends.hermes.documents import HomeDocs

        return HomeDocs(self)

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> SessionContext:
        """The memory part of the next new session's prompt, exactly, and the resumed sessions."""
        from keepgui.backends.hermes.context import session_context

        context = session_context(self.project_folder(), self.source.environ, home=self.home)
        return replace(context, profile=self.name, why=f"the {self.name} home of {self.source.path}")

    def context(self, query: str = "", **options: Any) -> SessionContext:
        """``keepgui context --agent hermes``: the part ``memory_prompt``, exactly, and the report."""
        if options:
            raise InvalidInput(f"no options of its own for Hermes's context: {', '.join(sorted(options))}")
        return self.preview(query)

    # ------------------------------------------------------------------ writing

    def _expect(self, target: str) -> fsio.Stamp | None:
        snap = self._snaps.get(target)
        return snap.stamp if snap is not None else None

    def rewrite(
        self,
        target: str,
        change: Callable[[list[str]], tuple[list[str], list[str]]],
        text: str,
        *,
        expect: fsio.Stamp | None = None,
        force: bool = False,
    ) -> Change:
        """Rewrite one file under Hermes's lock (refused when it changed since the rows were read);
        the Change's undo puts its bytes back."""
        with self.lock:
            result = self.files.rewrite(target, change, expect=expect or self._expect(target), force=force)
        return self._finish(text, target, result)

    def _finish(self, text: str, target: str, result: ToolResult) -> Change:
        reread = self.load()
        return Change(
            self.source.path,
            self.name,
            text,
            rows=reread.rows or RowDelta(self._rows, (), True),
            documents=frozenset({FILE_NAMES[target]}),
            files=stamps_of(self.files.path(target)),
            written=result.written,
            result=result,
            message=f"{text}: {FILE_NAMES[target]} written" if result.message == "written" else result.message,
            reverse=(lambda: self._swap(text, target, result.before, result.after)) if result.written else None,
        )

    def _swap(self, text: str, target: str, data: bytes | None, expect: bytes | None) -> Change:
        with self.lock:
            self.files.swap(target, data, expect)
        result = ToolResult(True, text, expect, data)
        return dataclasses.replace(
            self._finish(text, target, result), reverse=lambda: self._swap(text, target, expect, data)
        )

    def _entry_text(self, key: str) -> tuple[str, str]:
        target = target_of(key)
        for entry in self.state(target).entries:
            if row_key(target, entry.text) == key:
                return target, entry.text
        raise Conflict(self.files.path(target), None, fsio.current_stamp(self.files.path(target)))

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """Hermes's own ``add`` to MEMORY.md: strip, refuse empty, scan, no-op on an exact duplicate, limit
        (a forced keep writes past the scan and the limit, saying so)."""
        fact = text.strip()
        if not fact:
            raise InvalidInput("nothing to keep: the text is empty")
        if fact in self.state(MEMORY).texts:
            return nothing_written(
                self.source.path,
                self.name,
                "Keep",
                "Entry already exists (no duplicate added).",
                (Hint("warning", "Already in MEMORY.md — nothing to add"),),
            )
        try:
            change = self.rewrite(
                MEMORY, lambda e: ([*e, fact], [fact]), f"Keep “{fact[:40]}”", expect=None, force=force
            )
        except Refused as exc:
            return nothing_written(
                self.source.path,
                self.name,
                "Keep",
                str(exc),
                (Hint("warning", str(exc)), Hint("info", "Ctrl+Enter keeps it anyway")),
            )
        return dataclasses.replace(change, message=f"Kept in MEMORY.md of {self.home}: {fact}")

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What keeping ``text`` in MEMORY.md would meet (duplicate, scan, limit), writing nothing."""
        fact = text.strip()
        if not fact:
            return ()
        state = self.state(MEMORY)
        if fact in state.texts:
            return (Hint("warning", "Already in MEMORY.md — nothing to add"),)
        problems = self.files.check(MEMORY, [*state.texts, fact], [fact])
        if problems:
            return tuple(Hint("warning", p) for p in problems)
        after = len("\n§\n".join([*state.texts, fact]))
        return (Hint("ok", f"MEMORY.md would be {after:,} / {state.limit:,} chars"),)

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """A new entry at the end of MEMORY.md, or of USER.md when a tag names it."""
        target = USER if any(t.strip().lower() in ("user", "user.md") for t in tags) else MEMORY
        fact = text.strip()
        if not fact:
            raise InvalidInput("an entry needs text")
        return self.rewrite(target, lambda e: ([*e, fact], [fact]), f"Add entry to {FILE_NAMES[target]}")

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """Rewrite one entry in place (refused past the limit or the scan unless forced by saving twice)."""
        if field != "text" or not isinstance(value, str):
            raise InvalidInput(CAPABILITIES.why_not(TAGS if field == "tags" else ENTITIES))
        target, old = self._entry_text(key)
        new = value.strip()
        if not new:
            raise InvalidInput("an entry cannot be empty: forget it instead")

        def swap(entries: list[str]) -> tuple[list[str], list[str]]:
            return [new if e == old else e for e in entries], [new]

        return self.rewrite(target, swap, "Edit entry")

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Forget entries (kept in keepgui's history with their neighbours) or put forgotten ones back."""
        if live:
            return self._restore([k for k in keys if k.startswith(REMOVED)])
        chosen: dict[str, list[str]] = {}
        for key in keys:
            if not key.startswith(REMOVED):
                target, text = self._entry_text(key)
                chosen.setdefault(target, []).append(text)
        if not chosen:
            return nothing_written(self.source.path, self.name, "Forget", "nothing to forget")
        if len(chosen) > 1:
            raise InvalidInput("forget the entries of MEMORY.md and of USER.md separately (one file per change)")
        target, texts = next(iter(chosen.items()))
        path = self.files.path(target)

        def drop(entries: list[str]) -> tuple[list[str], list[str]]:
            for text in texts:
                if text not in entries:
                    raise Conflict(path, None, fsio.current_stamp(path))
                i = entries.index(text)
                self.source.history.log_removed(
                    path=path,
                    workspace=self.home,
                    text=text,
                    raw=text,
                    line=i,
                    number=i + 1,
                    before=entries[i - 1] if i else None,
                    after=entries[i + 1] if i + 1 < len(entries) else None,
                )
            return [e for e in entries if e not in texts], []

        return self.rewrite(target, drop, CAPABILITIES.describe("Forget", len(texts)))

    def _restore(self, keys: Sequence[str]) -> Change:
        records = [self.source.history.get_removed(k[len(REMOVED) :]) for k in keys]
        if not records:
            return nothing_written(self.source.path, self.name, "Restore", "nothing to restore")
        target = USER if records[0].path.endswith(FILE_NAMES[USER]) else MEMORY

        def put(entries: list[str]) -> tuple[list[str], list[str]]:
            for record in records:
                if record.text in entries:
                    continue
                at = entries.index(record.before) + 1 if record.before in entries else len(entries)
                if record.before is None and record.after in entries:
                    at = entries.index(record.after)
                entries.insert(at, record.text)
            return entries, []

        change = self.rewrite(target, put, CAPABILITIES.describe("Restore", len(records)), force=True)
        for record in records:
            self.source.history.mark_restored(record)
        return replace_rows(change, self)

    def move(self, keys: Sequence[str], offset: int) -> Change:
        """Move one entry ``offset`` places up (negative) or down in its file (nothing written when it is
        already first or last there: an entry moves to the other file by forget and add)."""
        if len(keys) != 1 or keys[0].startswith(REMOVED):
            raise InvalidInput("move one entry at a time")
        target, text = self._entry_text(keys[0])
        texts = [e.text for e in self.state(target).entries]
        at = texts.index(text) + offset
        if offset == 0 or not 0 <= at < len(texts):
            edge = "first" if offset < 0 else "last"
            return nothing_written(
                self.source.path, self.name, "Move entry", f"already the {edge} entry of {FILE_NAMES[target]}"
            )

        def shift(entries: list[str]) -> tuple[list[str], list[str]]:
            i = entries.index(text)
            j = max(0, min(len(entries) - 1, i + offset))
            entries.insert(j, entries.pop(i))
            return entries, []

        return self.rewrite(target, shift, "Move entry " + ("up" if offset < 0 else "down"), force=True)

    def entries_of(self, path: str, text: str) -> list[tuple[str, str]]:
        """The entries of a version of MEMORY.md or USER.md as Hermes parses them (§-separated)."""
        return [("", entry) for entry in parse(text)]

    def text_problem(self, text: str) -> tuple[str, bool]:
        """Characters of a new entry as Hermes counts them."""
        return f"{len(text.strip()):,} characters", bool(text.strip())

    # ------------------------------------------------------------------ plans

    def plan(self, what: str, **options: Any) -> Plan:
        """A compaction plan of the files over their limit (``"compact"``), or the review of a rewrite of
        MEMORY.md or USER.md by someone else (its name)."""
        from keepgui.backends.hermes.compact import plan_compaction, review

        if what == COMPACT:
            return plan_compaction(self)
        if what in CAPABILITIES.reviews:
            return review(self, USER if what == FILE_NAMES[USER] else MEMORY)
        raise InvalidInput(f"nothing to plan named `{what}` for a Hermes home")

    def apply_plan(self, plan: Any, selection: frozenset[str], text: str) -> Change:
        """Apply a plan's selection as one undoable change."""
        return plan.apply_to(self, selection, text)  # type: ignore[no-any-return]

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a compaction or a review's restore applied from the command line (``--undo``): the file's
        bytes before it go back, only over exactly what it left."""
        from keepgui.backends.hermes.compact import EntriesApplied, _result

        done = EntriesApplied.from_obj(dict(applied), self)
        text = f"Undo: {done.description}"
        with self.lock:
            done.undo()
        change = self._finish(text, done.target_name, _result(done, undo=True))
        return dataclasses.replace(change, result=done, message=f"undone: {done.description}")

    def accept_review(self, plan: Any) -> Change:
        """Accept an outside rewrite as it is."""
        plan.accept()
        return nothing_written(self.source.path, self.name, "Accept rewrite", "rewrite accepted")


def replace_rows(change: Change, bank: HermesHome) -> Change:
    """``change`` with the bank's rows as they are now (after history marks)."""
    rows = bank._build_rows()
    bank._rows = rows
    return replace(change, rows=RowDelta(rows, (), True))
