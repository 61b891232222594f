"""One bank of an iii data dir behind the source protocol: its rows, preview, plans and operations."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from keepgui.backends.iii.log import LOG_NAME
from keepgui.backends.iii.record import Memory, RecordError, parse_line
from keepgui.backends.iii.store import (
    Bank as CoreBank,
    BankInfo,
)
from keepgui.backends.iii.textrules import byte_len, rust_trim
from keepgui.backends.iii.writes import Transition
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.source import (
    COMPACT,
    DISK,
    FORCE,
    REVIEW,
    Activity,
    BankDefaults,
    BankSummary,
    Capabilities,
    Change,
    Hint,
    Pending,
    Problem,
    Progress,
    Row,
    RowDelta,
    plural,
    stamps_of,
)

if TYPE_CHECKING:  # the preview and the activity index are imported when first used; their types only here
    from keepgui.backends.iii.activity import ActivityIndex
    from keepgui.backends.iii.backend import IiiSource
    from keepgui.backends.iii.context import IiiContext, Preview
    from keepgui.backends.iii.worker import ReloadOutcome
    from keepgui.core.compaction import Plan
from keepgui.backends.iii.documents import RuleDocs

LOG_NOTES = ("unterminated",)
"""Log problems that are notes, not faults (a last line whose newline has not arrived): no badge."""

CAPABILITIES = Capabilities(
    missing={
        FORCE: "an iii save always writes: it creates, reinforces or brings back the memory",
        REVIEW: "an iii log is append-only: nothing rewrites it behind keepgui's back",
    },
)
"""What an iii bank can do: everything the table offers."""


RANKED_LIMIT = 100
"""Ranked search shows the recall API's maximum: the top 100 by fused score."""

FUZZY_THRESHOLD = 85.0
"""Quick keep's near-duplicate cut-off (rapidfuzz token_set_ratio, as keep.md's)."""


def count(n: int, one: str, many: str) -> str:
    """``"1 memory"``, ``"3 memories"``."""
    return plural(n, one, many)


# ---------------------------------------------------------------------- a bank


def check_save(
    text: str, existing: Memory | None, live: list[tuple[str, str]], bank: str, threshold: float = FUZZY_THRESHOLD
) -> tuple[Hint, ...]:
    """Quick keep's feedback for saving ``text`` to an iii bank.

    ``existing`` is the bank's record with ``text``'s fingerprint (or None);
    ``live`` the ``(id, text)`` of its live memories, for near-duplicates.
    """
    from rapidfuzz import fuzz, process
    from rapidfuzz.utils import default_process

    from keepgui.backends.iii.record import fingerprint
    from keepgui.backends.iii.writes import clean_text
    from keepgui.core.compaction import likeness

    try:
        cleaned = clean_text(text)
    except KeepguiError as exc:
        return (Hint("error", f"Not saved as it is: {exc}"),)
    hints: list[Hint] = []
    mid = fingerprint(cleaned)
    if existing is None:
        hints.append(Hint("ok", f"A new memory in bank “{bank}”"))
    elif existing.invalid_at is None:
        hints.append(Hint("info", f"Already remembered in “{bank}” (seen {existing.seen}×): saving reinforces it"))
    else:
        hints.append(Hint("info", f"Matches a deleted memory of “{bank}”: saving brings it back"))
    others = [(i, t) for i, t in live if i != mid]
    if others:
        matches = process.extract(
            cleaned,
            [t for _, t in others],
            scorer=fuzz.token_set_ratio,
            processor=default_process,
            score_cutoff=threshold,
            limit=3,
        )
        for choice, _score, _index in matches:
            alike = likeness(cleaned, choice).describe(f"“{_excerpt(choice)}”")
            hints.append(Hint("warning", f"Near-duplicate: {alike}"))
    return tuple(hints)


def _excerpt(text: str, limit: int = 70) -> str:
    from keepgui.core.compaction import excerpt

    return excerpt(text, limit)


Targets = dict[str, "Memory | None"]


def _applied_notes(applied: Any) -> tuple[str, ...]:
    """What an apply (or its undo) of a consolidation could not do: saves that failed, a worker not told."""
    reload = applied.reload
    return tuple(applied.errors) + said_of(reload)


def _decoded_ids(bank: CoreBank) -> Sequence[str] | None:
    """The ids of a bank restored from its cache, in the log's order, when they are strings already
    (a window decodes every record, its ids read off them); else None (none made for the asking)."""
    from keepgui.backends.iii.lazy import LazyRecords

    records = bank.log.records
    return records.packed.decoded_ids() if isinstance(records, LazyRecords) else None


def said_of(reload: ReloadOutcome | None) -> tuple[str, ...]:
    """The note a write's reload deserves: why a running worker was not told, unless that is the
    machine's standing condition (``doctor`` says that once)."""
    return (reload.message,) if reload is not None and not reload.ok and not reload.standing else ()


def restored_recency(n: int) -> str:
    """What a restore does to the worker's ranking, said where it happens (#23.8): a restore is a new
    revision at the time it runs, as the worker's own mutations are. Undo is exact (its recency too)."""
    which = "its" if n == 1 else "their"
    return (
        f"{'restored' if n == 1 else f'{n} restored'}; {which} recency is now today (the worker ranks "
        "a memory by when it last changed, and a restore is a change; Undo puts back the old recency)"
    )


class IiiBank(BankDefaults):
    """One bank of a data dir (see the module docstring)."""

    def __init__(self, source: IiiSource, name: str) -> None:
        self.source = source
        self.name = name
        self.key = source.key(name)
        self.capabilities = CAPABILITIES
        self.lock = threading.RLock()
        self._engine: Any = None
        self._loaded = False
        self._info: BankInfo | None = None
        self._log_problems = 0  # lines of the log the worker skips, as last read (the sidebar's badge)
        self._activity: ActivityIndex | None = None  # made when the activity is first asked for
        self._index_later = False  # the log was restored without its index: a child builds it when first asked

    # ------------------------------------------------------------------ reading

    def core(self) -> CoreBank:
        """The store's Bank object (raises NotFound when the folder is gone)."""
        return self.source.core_bank(self.name)

    def engine(self, bank: CoreBank) -> Any:
        """The recall/preview engine of ``bank`` (made on first use; call with the bank's lock held,
        ``bank`` got from :meth:`core` before taking it: locks go source first)."""
        from keepgui.backends.iii.context import BankEngine

        if self._engine is None or self._engine.bank is not bank:
            self._engine = BankEngine(bank, self.source.config)
        return self._engine

    def is_loaded(self) -> bool:
        """True once the log was read."""
        return self._loaded

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Bring the bank up to date (incrementally when the log only grew); every change is returned."""
        bank = self.core()  # before the bank lock: locks are taken source first
        with self.lock:
            first = not self._loaded
            restored = False
            synced = self._engine is not None and self._engine.bank is bank  # an index to keep current
            if not bank.log.loaded and bank.link_reason() is None:
                # The state and the index from the verified cache (a child brings it up to date
                # first for a big log): no replay, no indexing in this process.
                from keepgui.backends.iii import warm

                got = warm.restore(bank, self.engine(bank).index, progress)
                restored, self._index_later = got != warm.NOTHING, got == warm.LOG
                synced = synced or got == warm.LOG_AND_INDEX  # else the index is made when first asked for

            def since() -> Sequence[Row]:
                return list(bank.log.records.values())  # every row so far

            on_progress = None if progress is None else (lambda done, total: progress(done, total, since))
            delta = bank.refresh(on_progress)
            if synced and self._engine is not None:
                self._engine.sync(delta)
            self._loaded = True
            self._log_problems = sum(1 for p in bank.log.problems if p.kind not in LOG_NOTES)
            try:
                self._info = bank.info()
            except (KeepguiError, OSError):
                self._info = None
                raise
            records = bank.log.records
            if full or delta.reset or restored:  # a restored state is a first read, as a replay is
                rows: Sequence[Row] = list(records.values())
                complete = True
            else:
                rows, complete = [records[i] for i in delta.changed], False
        notes: list[str] = []
        if not first and not delta.empty:
            if delta.reset:
                notes.append(f"{self.name}: reloaded ({LOG_NAME} was replaced or rewritten)")
            elif delta.changed:
                notes.append(
                    f"{self.name}: {count(len(delta.added), 'memory', 'memories')} added, "
                    f"{len(delta.changed) - len(delta.added)} changed"
                )
            notes += [f"{self.name}: {p.describe(LOG_NAME)}" for p in delta.new_problems]
        return Change(self.source.path, self.name, origin=DISK, rows=RowDelta(rows, (), complete), notes=tuple(notes))

    def rows(self) -> Sequence[Row]:
        """The current record of every id, in load order."""
        if not self._loaded:
            return []
        bank = self.core()
        with self.lock:
            return list(bank.log.records.values())

    def summary(self) -> BankSummary:
        """ "41 memories · 3 pinned · 2 rules", or why the bank cannot be read."""
        info = self._info
        if info is None:
            return BankSummary("loading…")
        if not info.readable:
            return BankSummary(f"unreadable: {info.reason}", problem=info.reason, description=info.description)
        return BankSummary(
            info.counts(),
            description=info.description,
            problems=self._log_problems,
        )

    def problems(self) -> list[Problem]:
        """What ``keepgui doctor`` reports for this bank, and the data dir's leftover temporary files in it."""
        from keepgui.backends.iii.doctor import diagnose_bank

        bank = self.core()  # before the bank lock: locks are taken source first
        with self.lock:
            findings = diagnose_bank(bank)
            temp = [path for path in self.source.datadir.iter_temp_files() if path.startswith(bank.path + os.sep)]
        out = [
            Problem(path, 0, "leftover temporary file of an interrupted write; safe to delete", "temp-file")
            for path in temp
        ]
        out += [Problem(f.path, f.line, f.message, f.kind, "note" if f.note else "warning") for f in findings]
        return out

    def documents(self) -> RuleDocs:
        """The bank's rules."""
        return RuleDocs(self)

    def revisions(self, key: str) -> list[Row]:
        """Every revision of one memory in the log, oldest first."""
        bank = self.core()
        with self.lock:
            return list(bank.log.history(key))

    def memory_files(self) -> list[str]:
        """The bank's log, then its rules."""
        return [self.core().log_path, *super().memory_files()]

    def entries_of(self, path: str, text: str) -> list[tuple[str, str]]:
        """A version of the log as its live memories (each by id, its latest record as the worker
        replays it; lines the worker skips are skipped); a rule's lines as lines."""
        if os.path.basename(path) != LOG_NAME:
            return super().entries_of(path, text)
        latest: dict[str, str | None] = {}
        for line in text.splitlines():
            try:
                memory = parse_line(line)
            except RecordError:
                continue
            latest[memory.id] = None if memory.invalid_at is not None else memory.text
        return [(key, value) for key, value in latest.items() if value is not None]

    def activity(self) -> Activity:
        """Every revision in the log as a capture event (read once, then only what was appended)."""
        from keepgui.backends.iii.activity import ActivityIndex

        bank = self.core()
        with self.lock:
            if bank.log.unreadable:
                return Activity([], {}, {}, note=f"{LOG_NAME} cannot be read: {bank.log.unreadable}")
            if self._activity is None or self._activity.path != bank.log_path:
                self._activity = ActivityIndex(bank.log_path)
            self._activity.sync(known_ids=lambda: _decoded_ids(bank))
            return self._activity.snapshot()

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> Preview:
        """``memory::preview`` exactly, with unsaved rules and what-if toggles when given (asked at ``now_ms``;
        by default now, or the moment the source was opened as of)."""
        from keepgui.backends.iii.context import WhatIf

        now_ms = self.source.as_of if now_ms is None else now_ms
        pending = pending or Pending()
        whatif = WhatIf(
            rules=dict(pending.drafts), pins=dict(pending.pins), live=dict(pending.live), config=self.source.config
        )
        bank = self.core()
        with self.lock:
            preview: Preview = self._indexed(bank).preview(query, now_ms=now_ms, whatif=whatif)
        return preview

    def _indexed(self, bank: CoreBank) -> Any:
        """:meth:`engine`, its index first built in a child when the log was restored without one (call
        with the bank's lock held)."""
        engine = self.engine(bank)
        if self._index_later:
            self._index_later = False
            from keepgui.backends.iii import warm

            warm.restore_index(bank, engine.index)
        return engine

    def context(self, query: str = "", **options: Any) -> IiiContext:
        """What a turn on ``query`` is given: the system-prompt section and the message, exactly."""
        from keepgui.backends.iii.context import IiiContext

        if options:
            raise InvalidInput(f"an iii bank's context takes no options: {', '.join(sorted(options))}")
        if not query.strip():
            raise InvalidInput(
                "what an iii turn is given depends on its question: give it with --query TEXT "
                "(the memories recalled for it are appended to the message)"
            )
        return IiiContext(self.preview(query))

    def rank(self, query: str, limit: int = RANKED_LIMIT) -> dict[str, float]:
        """Recall scores (id -> fused score) of the best memories for ``query``."""
        bank = self.core()
        with self.lock:
            result = self._indexed(bank).recall(query, limit=limit, now_ms=self.source.as_of)
        return {hit.memory.id: hit.score for hit in result.hits}

    # ------------------------------------------------------------------ plans

    def plan(self, what: str, **options: Any) -> Plan:
        """memory-consolidate's plan for this bank (``what`` must be ``"compact"``; ``options``:
        ``fuzzy``, ``threshold``)."""
        from keepgui.backends.iii.compact import plan_bank

        if what != COMPACT:
            raise InvalidInput(f"bank `{self.name}`: {CAPABILITIES.why_not(REVIEW)}")
        bank = self.core()
        with self.lock:
            return plan_bank(bank, **options)

    def apply_plan(self, plan: Plan, selection: frozenset[str], text: str) -> Change:
        """Apply the selected supersedes as one batch; the Change undoes it with the apply's own undo."""
        from keepgui.backends.iii.compact import BankApplied, BankPlan

        if not isinstance(plan, BankPlan):
            raise InvalidInput(f"bank `{self.name}` applies its own consolidation plans, not {type(plan).__name__}")
        change = self._locked(text, lambda: plan.apply(selection))
        applied = change.result
        if not isinstance(applied, BankApplied) or not applied.changed:
            return replace(change, written=False)
        return self._chain(replace(change, notes=change.notes + _applied_notes(applied)), applied)

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a consolidation applied from the command line (its journal form)."""
        from keepgui.backends.iii.compact import BankApplied
        from keepgui.core.compaction import load_applied

        done = load_applied(dict(applied))
        if not isinstance(done, BankApplied) or done.bank_name != self.name:
            raise InvalidInput(f"not a consolidation of bank `{self.name}`: nothing was undone")
        text = f"Undo: {done.description}"
        change = self._locked(text, lambda: done.undo(datadir=self.source.datadir))
        return replace(change, result=done, message=f"undone: {done.description}", notes=_applied_notes(done))

    def _chain(self, change: Change, applied: Any) -> Change:
        """``change`` with its undo (and that undo's redo): each refuses when a memory changed since."""
        text = change.text

        def back() -> Change:
            undone = self._locked(text, applied.undo)
            return replace(undone, result=applied, reverse=forth)

        def forth() -> Change:
            redone = self._locked(text, applied.redo)
            return replace(redone, result=applied, reverse=back)

        return replace(change, reverse=back)

    def _locked(self, text: str, action: Callable[[], object]) -> Change:
        """Run a write under the bank's lock, then find every record it (or anyone) changed."""
        bank = self.core()
        with self.lock:
            before = dict(bank.log.records)
            try:
                result = action()
            finally:
                delta = bank.refresh()
                records = bank.log.records
                if delta.reset:
                    rows: Sequence[Row] = list(records.values())
                else:
                    rows = [m for mid, m in records.items() if before.get(mid) is not m]
                self._info = bank.info()
        return Change(
            self.source.path,
            self.name,
            text,
            rows=RowDelta(rows, (), delta.reset),
            files=stamps_of(bank.log_path),
            result=result,
        )

    # ------------------------------------------------------------------ writing memories

    def _write(self, text: str, action: Callable[[Any], object]) -> Change:
        """One locked append of what ``action(batch)`` did; the Change appends the "before" records back."""
        bank = self.core()
        before: Targets = {}
        after: dict[str, Memory] = {}
        with self.lock:
            with bank.batch() as batch:
                result = action(batch)
                for record in batch.pending:
                    if record.id not in before:
                        before[record.id] = bank.log.get(record.id)
                    after[record.id] = record
            change = self._delivered(batch, text, result)
        if not after:
            return replace(change, written=False)
        undo_targets: Targets = dict(before)
        redo_targets: Targets = dict(after)
        return replace(change, reverse=lambda: self._revert(text, undo_targets, redo_targets))

    def _revert(self, text: str, targets: Targets, then: Targets) -> Change:
        """Append each target record back (a tombstone for None); the Change's undo appends ``then``."""

        def back(batch: Any) -> None:
            for mid, target in targets.items():
                if target is None:
                    batch.delete(mid)  # it did not exist: retire what the change created
                else:
                    batch.revert(target)

        bank = self.core()
        with self.lock:
            with bank.batch() as batch:
                back(batch)
            change = self._delivered(batch, text, None)
        return replace(change, reverse=lambda: self._revert(text, then, targets))

    def _delivered(self, batch: Any, text: str, result: object) -> Change:
        """The rows a batch's own refreshes consumed (others' appends included); call under the lock."""
        bank = batch.bank
        records = bank.log.records
        if any(d.reset for d in batch.deltas):
            rows: Sequence[Row] = list(records.values())
            complete = True
        else:
            ids = dict.fromkeys(i for d in batch.deltas for i in d.changed)
            rows, complete = [records[i] for i in ids], False
        self._info = bank.info()
        reload = batch.report.reload
        return Change(
            self.source.path,
            self.name,
            text,
            rows=RowDelta(rows, (), complete),
            files=stamps_of(bank.log_path),
            result=result,
            notes=said_of(reload),
        )

    def set_pinned(self, keys: Sequence[str], pinned: bool) -> Change:
        """Pin or unpin memories (one append)."""
        ids = list(keys)
        return self._write(
            CAPABILITIES.describe("Pin" if pinned else "Unpin", len(ids)), lambda b: [b.pin(i, pinned) for i in ids]
        )

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Tombstone or restore memories (one append)."""
        ids = list(keys)
        if live:
            change = self._write(CAPABILITIES.describe("Restore", len(ids)), lambda b: [b.restore(i) for i in ids])
            restored = sum(1 for t in change.result if t.record is not None) if isinstance(change.result, list) else 0
            if not change.written or not restored:
                return change
            return replace(change, notes=(*change.notes, restored_recency(restored)))
        return self._write(CAPABILITIES.describe("Delete", len(ids)), lambda b: [b.delete(i) for i in ids])

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """A new revision with the text, tags or entities changed."""
        if field == "text":
            return self._write("Edit memory", lambda b: b.update(key, text=value))
        if field in ("tags", "entities"):
            return self._write(f"Edit {field}", lambda b: b.update(key, **{field: list(value)}))
        raise InvalidInput(f"a memory has no editable field `{field}`")

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """``memory::save`` of a new memory (or a reinforcement of the same text)."""
        return self._write("New memory", lambda b: b.save(text, list(entities), list(tags), pinned))

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """Quick keep into this bank: ``memory::save`` of the text (creates, reinforces or brings back)."""
        from keepgui.core.compaction import excerpt

        change = self._write(f"Keep “{excerpt(text, 40)}”", lambda b: b.save(text))
        transition = change.result
        if not isinstance(transition, Transition):
            raise TypeError(f"a save returned {transition!r}")
        record = transition.written
        if transition.created:
            how = "a new memory"
        elif transition.previous is not None and transition.previous.invalid_at is not None:
            how = "brought back from the deleted memories"
        else:
            how = f"reinforced, seen {record.seen}×"
        return dataclasses.replace(change, message=f"Kept: {record.text} — bank “{self.name}” ({how})")

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What saving ``text`` here would do (new, reinforce, bring back) and its near-duplicates."""
        from keepgui.backends.iii.record import fingerprint
        from keepgui.backends.iii.writes import clean_text

        bank = self.core()
        with self.lock:
            bank.ensure_loaded()
            try:
                existing = bank.log.get(fingerprint(clean_text(text)))
            except KeepguiError:
                existing = None
            live = [(m.id, m.text) for m in bank.log.live()]
        return check_save(text, existing, live, self.name)

    def apply_pending(self, pending: Pending) -> Change:
        """Write a preview's what-if toggles (one append, one undo step)."""
        pins, live = dict(pending.pins), dict(pending.live)

        def action(batch: Any) -> None:
            for mid, on in live.items():
                batch.restore(mid) if on else batch.delete(mid)
            for mid, on in pins.items():
                current = batch.current(mid)
                if current is not None and current.invalid_at is None:
                    batch.pin(mid, on)

        return self._write(CAPABILITIES.describe("Apply what-if to", len(set(pins) | set(live))), action)

    def row_path(self, key: str) -> str:
        """The file that holds a memory: the bank's log (the secrets scan names it)."""
        return self.core().log_path

    def redact_row(self, key: str, text: str, pairs: Sequence[tuple[str, str]]) -> Change:
        """A secret out of a memory: the redacted revision appended (the worker's update), then every
        earlier line of the log rewritten without it (atomic, refused if anyone appended meanwhile).
        Undo puts the log's exact previous bytes back (refused if it changed since)."""
        from keepgui.backends.iii.scrub import scrub_log

        bank = self.core()
        with self.lock:
            before, _stamp = fsio.read_stamped(bank.log_path)
            edited = self.edit(key, "text", text)
            ours = next((w.stamp for w in edited.files if w.path == bank.log_path), None)
            scrub_log(bank.log_path, pairs, ours)
        if not edited.written:
            return edited
        return self._replaced("Redact secret", before)

    def _replaced(self, text: str, before: bytes | None) -> Change:
        """The Change of a rewrite of the log; its undo writes ``before`` back over what it left."""
        bank = self.core()
        with self.lock:
            bank.refresh()
            rows: Sequence[Row] = list(bank.log.records.values())
            self._info = bank.info()
            now, stamp = fsio.read_stamped(bank.log_path)
        change = Change(
            self.source.path, self.name, text, rows=RowDelta(rows, (), True), files=stamps_of(bank.log_path)
        )
        if before is None or now is None:
            return change

        def back() -> Change:
            with self.lock:
                fsio.atomic_write(bank.log_path, before, expect=stamp)
            return self._replaced(text, now)

        return replace(change, reverse=back)

    def text_problem(self, text: str) -> tuple[str, bool]:
        """``"12 / 2000 bytes"`` and whether the worker would accept the text (3 to 2000 bytes)."""
        n = byte_len(rust_trim(text))
        ok = 3 <= n <= 2000
        return f"{n} / 2000 bytes" + ("" if ok else " — the worker accepts 3 to 2000 bytes"), ok
