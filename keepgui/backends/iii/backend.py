"""iii memory data dirs behind the source protocol (:mod:`keepgui.core.source`).

A data dir is a :class:`IiiSource`; each bank folder an :class:`IiiBank`
whose rows are the log's current records (the :class:`~keepgui.backends.iii.record.Memory`
structs themselves, never wrapped), whose documents are its ``rules/*.md``,
whose preview is ``memory::preview`` and whose plans are memory-consolidate's.

Locks: the source's lock guards the data dir's bank cache and the bank
listing; each bank's lock is held while its log is read or written, so a load
on a background thread and a write on the GUI thread never interleave. They are
always taken in that order (source, then bank).

Undo: a log is append-only, so taking a change back appends a compensating
revision: each memory's record from before the change (or a tombstone for a
memory the change created); redo appends the records the change wrote. Rule
saves are taken back by writing the previous text over exactly what the save
left (refused when the rule changed since); bank create, trash and restore by
the opposite move.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.log import LOG_NAME
from keepgui.backends.iii.mutations import Transition
from keepgui.backends.iii.record import Memory
from keepgui.backends.iii.store import (
    BANK_YAML,
    NAME_PATTERN,
    RULES_DIR,
    TRASH_DIR,
    Bank as CoreBank,
    BankInfo,
    DataDir,
    is_valid_name,
    rust_stem_extension,
    suggest_slug,
)
from keepgui.backends.iii.textrules import byte_len, cut_at_char_boundary, rust_trim
from keepgui.backends.iii.worker import NOT_SEEN, ReloadOutcome, WorkerLink
from keepgui.core.registry import Backend, Found, OpenOptions, Verdict
from keepgui.core.source import (
    COMPACT,
    DISK,
    FORCE,
    REVIEW,
    Activity,
    BankDefaults,
    BankKey,
    BankSummary,
    Budget,
    BudgetSegment,
    Capabilities,
    Change,
    Document,
    Hint,
    Listing,
    Pending,
    Problem,
    Progress,
    Row,
    RowDelta,
    Trashed,
    WatchPlan,
    stamps_of,
)

if TYPE_CHECKING:  # the preview and the activity index are imported when first used; their types only here
    from keepgui.backends.iii.activity import ActivityIndex
    from keepgui.backends.iii.preview import RuleOutcome

KIND = "iii"

LOG_NOTES = ("unterminated",)
"""Log problems that are notes, not faults (a last line whose newline has not arrived): no badge."""

CAPABILITIES = Capabilities(
    missing={
        FORCE: "an iii save always writes: it creates, reinforces or brings back the memory",
        REVIEW: "an iii log is append-only: nothing rewrites it behind keepgui's back",
    },
)
"""What an iii bank can do: everything the table offers."""

SOURCE_CAPABILITIES = Capabilities(missing={}, noun="bank", nouns="banks", retire="Trash")
"""An iii data dir creates, trashes and restores banks."""

RANKED_LIMIT = 100
"""Ranked search shows the recall API's maximum: the top 100 by fused score."""

FUZZY_THRESHOLD = 85.0
"""Quick keep's near-duplicate cut-off (rapidfuzz token_set_ratio, as keep.md's)."""


def count(n: int, one: str, many: str) -> str:
    """``"1 memory"``, ``"3 memories"``."""
    return f"{n} {one if n == 1 else many}"


# ---------------------------------------------------------------------- the worker, off the caller's thread


class DeferredWorker:
    """A WorkerLink whose reload runs where ``run_later`` runs it (a helper thread in the window).

    A failure is reported by the sentence ``run_later``'s work returns; the write
    itself is told at once that the worker was asked.
    """

    def __init__(self, link: WorkerLink, run_later: Callable[[Callable[[], str | None]], None] | None) -> None:
        self.link = link
        self.run_later = run_later

    def reload(self) -> ReloadOutcome:
        """Ask a running worker to reload (now, or later off this thread)."""
        if self.run_later is None:
            return self.link.reload()

        def work() -> str | None:
            if self.link.reload_command is not None and not self.link.reload_command.strip():
                return None  # turned off on purpose: nothing went wrong, nothing to say
            outcome = self.link.reload()
            return None if outcome.ok else outcome.message

        try:
            self.run_later(work)
        except RuntimeError:  # the window is closing
            return ReloadOutcome(False, NOT_SEEN)
        return ReloadOutcome(True, "asked a running worker to reload")


# ---------------------------------------------------------------------- names


class BankNameRule:
    """The worker's name rule for banks and rules: ``[a-z0-9][a-z0-9_-]{0,63}``."""

    def describe(self) -> str:
        """The rule in words."""
        return f"Lowercase letters, digits, - and _ ({NAME_PATTERN})."

    def problem(self, name: str) -> str:
        """Why ``name`` is not a valid name ("" when it is)."""
        return "" if is_valid_name(name) else f"`{name}` must match {NAME_PATTERN}."

    def suggest(self, name: str) -> str:
        """A valid slug close to ``name``."""
        return suggest_slug(name)


NAMES = BankNameRule()


# ---------------------------------------------------------------------- the rule budget


@dataclass(frozen=True)
class RulePlace:
    """Where one rule lands in the shared ``max_rule_chars`` budget: its outcome, first byte, and
    the character offset in the editor text where cutting or omission begins."""

    outcome: RuleOutcome
    start: int
    budget: int
    cut_char: int | None

    @property
    def end(self) -> int:
        """One past the rule's last injected byte in the shared budget."""
        return self.start + self.outcome.injected

    def describe(self) -> str:
        """The meter's sentence."""
        o = self.outcome
        where = f"bytes {self.start:,}–{self.start + o.size:,} of the {self.budget:,}-byte budget"
        if o.status == "fit":
            left = self.budget - self.end
            return f"{o.name}.md: {o.size:,} bytes, {where}; fits ({left:,} bytes left after it)"
        if o.status == "truncated":
            return (
                f"{o.name}.md: {o.size:,} bytes, {where}; TRUNCATED after byte {o.injected:,} — the last "
                f"{o.size - o.injected:,} bytes (highlighted) are not sent, and every later rule is omitted"
            )
        return (
            f"{o.name}.md: {o.size:,} bytes; OMITTED — earlier rules leave "
            f"{max(0, self.budget - self.start):,} bytes, too few to send any of it (a cut needs more than 200)"
        )


def place_rules(rules: list[tuple[str, str]], max_rule_chars: int) -> dict[str, RulePlace]:
    """Where every rule lands, by name (``rules`` in injection order, unsaved texts included).

    The numbers come from :func:`keepgui.backends.iii.preview.render_rules`, the code the preview uses.
    """
    from keepgui.backends.iii.preview import render_rules

    _, _, outcomes = render_rules(rules, max_rule_chars)
    texts = dict(rules)
    places: dict[str, RulePlace] = {}
    used = 0
    for outcome in outcomes:
        cut = None
        if outcome.status != "fit":
            text = texts[outcome.name]
            sent = rust_trim(text)  # what is sent starts after the leading white space
            lead = text.find(sent) if sent else len(text)
            cut = lead + len(cut_at_char_boundary(sent, outcome.injected))
        places[outcome.name] = RulePlace(outcome, used, max_rule_chars, cut)
        used += outcome.injected
    return places


def rule_budget(rules: list[tuple[str, str]], current: str | None, max_rule_chars: int) -> Budget:
    """The budget meter's view of ``rules`` with ``current`` being edited."""
    places = place_rules(rules, max_rule_chars)
    place = places.get(current) if current else None
    used = sum(p.outcome.injected for p in places.values())
    segments = tuple(
        BudgetSegment(p.outcome.name, p.start, p.outcome.injected, p.outcome.size, p.outcome.status)
        for p in places.values()
    )
    return Budget(
        max_rule_chars,
        segments,
        current,
        place.describe() if place else "",
        f"{len(places)} rules use {used:,} of {max_rule_chars:,} bytes",
        cut_char=place.cut_char if place is not None else None,
        warn=place is not None and place.outcome.status != "fit",
    )


# ---------------------------------------------------------------------- rules as documents


class RuleDocs:
    """The rules of one bank, as the document editor sees them (injection order).

    Every write presents the stamp the text was loaded with; the Change it
    returns undoes it by writing back exactly what was there.
    """

    creatable = True
    why_not_create = ""
    empty_deletes = True
    previews_drafts = True
    names = NAMES

    def __init__(self, bank: IiiBank) -> None:
        self.bank = bank

    @property
    def _source(self) -> IiiSource:
        return self.bank.source

    def _core(self) -> CoreBank:
        return self.bank.core()

    def list(self) -> list[tuple[str, str]]:
        """``(name, title)`` in injection order."""
        return [(name, f"{name}.md") for name in self._core().rule_names()]

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, content)`` of every readable rule, in injection order."""
        rules, _ = self._core().rules()
        return [(r.name, r.content) for r in rules]

    def read(self, name: str) -> Document:
        """Load one rule with its stamp."""
        rule = self._core().read_rule(name)
        return Document(
            name,
            f"{name}.md",
            rule.path,
            rule.content,
            rule.stamp,
            status="rule: sent word for word on every turn, within the shared budget",
        )

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc``."""
        data, stamp = fsio.read_stamped(doc.path)
        return (None if data is None else data.decode("utf-8", errors="replace")), stamp

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """Rules are nobody else's: nothing to warn about."""
        return []

    def _change(
        self,
        name: str,
        text: str,
        result: object,
        reverse: Callable[[], Change] | None,
        message: str = "",
        paths: Sequence[str] = (),
    ) -> Change:
        return Change(
            self._source.path,
            self.bank.name,
            text,
            documents=frozenset({name}),
            files=stamps_of(*paths),
            result=result,
            message=message,
            reverse=reverse,
        )

    def _put(self, name: str, content: str, expect: fsio.Stamp, text: str) -> Change:
        """Write ``content`` (empty deletes) over exactly ``expect``; the Change undoes it."""
        before = self._read_or_none(name)
        if before is not None and not before.stamp.same_content(expect):
            raise Conflict(before.path, expect, before.stamp)
        with self._source.lock:
            rule = self._core().write_rule(name, content, expect=expect)
        doc = self.read(name) if rule is not None else None
        path = self._core().rule_file(name)
        old_text = before.text if before is not None else ""
        left = doc.stamp if doc is not None else fsio.Stamp.missing()
        message = "" if doc is not None else f"{name}.md deleted (empty content)"
        return self._change(name, text, doc, lambda: self._put(name, old_text, left, text), message, [path])

    def _read_or_none(self, name: str) -> Document | None:
        try:
            return self.read(name)
        except NotFound:
            return None

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` (empty text deletes the rule); ``result`` is the reloaded Document (None if deleted)."""
        return self._put(doc.name, text, doc.stamp, f"Save {doc.title}")

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document:
        """``doc`` as the version on disk the person was shown (``stamp``), to save over exactly that."""
        return doc.with_disk(on_disk or "", stamp)

    def create(self, name: str) -> Change:
        """A new rule with the console's starting content ``# <name>``."""
        return self._put(name, f"# {name}\n", fsio.Stamp.missing(), f"New rule {name}.md")

    def rename_document(self, doc: Document, new: str) -> Change:
        """Rename the rule file (refused if it changed since it was loaded)."""
        return self._rename(doc.name, new, doc.stamp, f"Rename {doc.title}")

    def _rename(self, old: str, new: str, expect: fsio.Stamp, text: str) -> Change:
        with self._source.lock:
            self._core().rename_rule(old, new, expect=expect)
        renamed = self.read(new)
        change = self._change(
            new,
            text,
            renamed,
            lambda: self._rename(new, old, renamed.stamp, text),
            paths=[self._core().rule_file(old), renamed.path],
        )
        change.documents = frozenset({old, new})
        return change

    def delete(self, doc: Document) -> Change:
        """Delete the rule file (refused if it changed since it was loaded)."""
        with self._source.lock:
            self._core().delete_rule(doc.name, expect=doc.stamp)
        text = f"Delete {doc.title}"
        return self._change(
            doc.name,
            text,
            None,
            lambda: self._put(doc.name, doc.text, fsio.Stamp.missing(), text),
            f"deleted {doc.title}",
            [doc.path],
        )

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget:
        """Where ``text`` (rule ``name`` being edited) sits in the shared ``max_rule_chars`` budget."""
        rules = dict(texts if texts is not None else self.texts())
        rules[name] = text
        return rule_budget(sorted(rules.items()), name, self._source.config.max_rule_chars)

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Rule names of the changed paths inside this bank's ``rules`` folder."""
        folder = self._core().rules_path
        out = set()
        for path in paths:
            if os.path.dirname(path) == folder:
                stem, ext = rust_stem_extension(os.path.basename(path))
                if ext == "md":
                    out.add(stem)
        return out


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

    from keepgui.core.compaction import likeness
    from keepgui.backends.iii.mutations import clean_text
    from keepgui.backends.iii.record import fingerprint

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

    # ------------------------------------------------------------------ reading

    def core(self) -> CoreBank:
        """The store's Bank object (raises NotFound when the folder is gone)."""
        return self.source.core_bank(self.name)

    def engine(self, bank: CoreBank) -> Any:
        """The recall/preview engine of ``bank`` (made on first use; call with the bank's lock held,
        ``bank`` got from :meth:`core` before taking it: locks go source first)."""
        from keepgui.backends.iii.preview import BankEngine

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

            def since() -> Sequence[Row]:
                return list(bank.log.records.values())  # every row so far

            on_progress = None if progress is None else (lambda done, total: progress(done, total, since))
            delta = bank.refresh(on_progress)
            if self._engine is not None and self._engine.bank is bank:
                self._engine.sync(delta)
            self._loaded = True
            self._log_problems = sum(1 for p in bank.log.problems if p.kind not in LOG_NOTES)
            try:
                self._info = bank.info()
            except (KeepguiError, OSError):
                self._info = None
                raise
            records = bank.log.records
            if full or delta.reset:
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
            f"{info.memories} memories · {info.pinned} pinned · {info.rules} rules",
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

    def activity(self) -> Activity:
        """Every revision in the log as a capture event (read once, then only what was appended)."""
        from keepgui.backends.iii.activity import ActivityIndex

        bank = self.core()
        with self.lock:
            if bank.log.unreadable:
                return Activity([], {}, {}, note=f"{LOG_NAME} cannot be read: {bank.log.unreadable}")
            if self._activity is None or self._activity.path != bank.log_path:
                self._activity = ActivityIndex(bank.log_path)
            self._activity.sync()
            return self._activity.snapshot()

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> object:
        """``memory::preview`` exactly, with unsaved rules and what-if toggles when given."""
        from keepgui.backends.iii.preview import WhatIf

        pending = pending or Pending()
        whatif = WhatIf(
            rules=dict(pending.drafts), pins=dict(pending.pins), live=dict(pending.live), config=self.source.config
        )
        bank = self.core()
        with self.lock:
            return self.engine(bank).preview(query, now_ms=now_ms, whatif=whatif)

    def rank(self, query: str, limit: int = RANKED_LIMIT) -> dict[str, float]:
        """Recall scores (id -> fused score) of the best memories for ``query``."""
        bank = self.core()
        with self.lock:
            result = self.engine(bank).recall(query, limit=limit)
        return {hit.memory.id: hit.score for hit in result.hits}

    # ------------------------------------------------------------------ plans

    def plan(self, what: str, **options: Any) -> object:
        """memory-consolidate's plan for this bank (``what`` must be ``"compact"``)."""
        from keepgui.backends.iii.consolidate import plan_bank

        if what != COMPACT:
            raise InvalidInput(f"bank `{self.name}`: {CAPABILITIES.why_not(REVIEW)}")
        bank = self.core()
        with self.lock:
            return plan_bank(bank, **options)

    def apply_plan(self, plan: Any, selection: frozenset[str], text: str) -> Change:
        """Apply the selected supersedes as one batch; the Change undoes it with the apply's own undo."""
        from keepgui.backends.iii.consolidate import BankApplied

        change = self._locked(text, lambda: plan.apply(selection))
        applied = change.result
        if not isinstance(applied, BankApplied) or not applied.changed:
            change.written = False
            return change
        self._chain(change, applied)
        return change

    def _chain(self, change: Change, applied: Any) -> None:
        """Undo/redo a plan's apply (each refuses when a memory changed since)."""
        text = change.text

        def back() -> Change:
            undone = self._locked(text, applied.undo)
            undone.result = applied
            undone.reverse = forth
            return undone

        def forth() -> Change:
            redone = self._locked(text, applied.redo)
            redone.result = applied
            redone.reverse = back
            return redone

        change.reverse = back

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
            change.written = False
            return change
        undo_targets: Targets = dict(before)
        redo_targets: Targets = dict(after)
        change.reverse = lambda: self._revert(text, undo_targets, redo_targets)
        return change

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
        change.reverse = lambda: self._revert(text, then, targets)
        return change

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
        return Change(
            self.source.path,
            self.name,
            text,
            rows=RowDelta(rows, (), complete),
            files=stamps_of(bank.log_path),
            result=result,
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
            return self._write(CAPABILITIES.describe("Restore", len(ids)), lambda b: [b.restore(i) for i in ids])
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
        change.message = f"Kept: {record.text} — bank “{self.name}” ({how})"
        return change

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What saving ``text`` here would do (new, reinforce, bring back) and its near-duplicates."""
        from keepgui.backends.iii.mutations import clean_text
        from keepgui.backends.iii.record import fingerprint

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

    def text_problem(self, text: str) -> tuple[str, bool]:
        """``"12 / 2000 bytes"`` and whether the worker would accept the text (3 to 2000 bytes)."""
        n = byte_len(rust_trim(text))
        ok = 3 <= n <= 2000
        return f"{n} / 2000 bytes" + ("" if ok else " — the worker accepts 3 to 2000 bytes"), ok


# ---------------------------------------------------------------------- a data dir


class IiiSource:
    """An open iii data dir (see the module docstring)."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = NAMES

    def __init__(self, path: str, options: OpenOptions) -> None:
        self.path = os.path.abspath(path)
        self._link = WorkerLink(options.reload_command)
        self.datadir = DataDir(self.path, DeferredWorker(self._link, options.run_later))
        self.lock = threading.RLock()
        self.config = MemoryConfig()
        self._banks: dict[str, IiiBank] = {}

    @property
    def label(self) -> str:
        """How the sidebar names the source."""
        from keepgui.core.paths import short_path

        return f"iii · {short_path(self.path)}"

    @property
    def also_watched(self) -> tuple[str, ...]:
        """None: a data dir's banks, settings and worker state are all inside it."""
        return ()

    def key(self, name: str) -> BankKey:
        """The BankKey of one of its banks."""
        return BankKey(self.path, name)

    def core_bank(self, name: str) -> CoreBank:
        """The store's Bank of that name (raises NotFound)."""
        with self.lock:
            return self.datadir.bank(name)

    def scan(self) -> Listing:
        """Bank folders and the trash, as they are on disk now."""
        with self.lock:
            names = [b.name for b in self.datadir.banks()]
            trashed = self.datadir.trashed()
            for gone in set(self._banks) - set(names):
                del self._banks[gone]
        return Listing(tuple(names), tuple(Trashed(t.folder, t.bank, t.trashed_at, t.path) for t in trashed))

    def bank(self, name: str) -> IiiBank:
        """The bank of that folder name."""
        with self.lock:
            bank = self._banks.get(name)
            if bank is None:
                bank = self._banks[name] = IiiBank(self, name)
            return bank

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """Logs to re-read, rules that changed, banks that appeared or vanished."""
        rescan = False
        logs: set[str] = set()
        rules: dict[str, set[str]] = defaultdict(set)
        shown = set(listed)
        for parts in changed:
            if not parts or parts[0] == TRASH_DIR:
                rescan = True
                continue
            if parts[0].startswith("."):
                continue
            if len(parts) == 1:
                # Usually a file in the bank changed (its folder's own event): rescan only
                # when a bank folder appeared or vanished.
                rescan = rescan or (parts[0] in shown) != os.path.isdir(os.path.join(self.path, parts[0]))
            elif parts[1] == BANK_YAML:
                rescan = True  # a bank was described
            elif parts[1] == LOG_NAME:
                logs.add(parts[0])
            elif parts[1] == RULES_DIR:
                if len(parts) > 2:
                    rules[parts[0]].add(rust_stem_extension(parts[2])[0])
                elif not os.path.isdir(os.path.join(self.path, *parts)):
                    rules[parts[0]].add("")  # the folder itself went away
                # else: the folder's own event when a file in it changed; that file is reported itself
        notes = []
        for name in sorted(rules):
            notes.append(f"{name}: rules changed on disk")
            if name in shown:
                logs.add(name)  # its refresh recounts the rules
            else:
                rescan = True  # a new bank with only rules so far
        return WatchPlan(rescan, frozenset(logs), {n: frozenset(v) for n, v in rules.items()}, notes=tuple(notes))

    def set_reload_command(self, command: str | None) -> None:
        """The command run after every write to make a running worker reload (None: the default)."""
        self._link.reload_command = WorkerLink(command).reload_command

    def configure(self, values: Mapping[str, Any]) -> None:
        """The worker settings previews, rankings and budgets of this data dir use."""
        try:
            config = MemoryConfig.from_mapping(dict(values))
        except KeepguiError:
            config = MemoryConfig()
        self.config = config
        with self.lock:
            banks = list(self._banks.values())
        for bank in banks:
            if bank._engine is not None:
                bank._engine.config = config

    def _listing_change(self, text: str, result: object, reverse: Callable[[], Change] | None, message: str) -> Change:
        return Change(self.path, None, text, listing=True, result=result, message=message, reverse=reverse)

    def create_bank(self, name: str, description: str = "") -> Change:
        """A new bank folder with ``rules/`` and ``bank.yaml``; undo moves it to the trash."""
        with self.lock:
            _bank, created = self.datadir.create_bank(name, description)
        if not created:
            raise InvalidInput(f"a bank named `{name}` already exists")
        return self._listing_change(
            f"New bank {name}", name, lambda: self.trash_bank(name, f"New bank {name}"), f"created bank `{name}`"
        )

    def trash_bank(self, name: str, text: str | None = None) -> Change:
        """Move the bank to ``.trash/<bank>-<ms>``; undo brings it back."""
        text = text or f"Trash bank {name}"
        bank = self.bank(name)
        with self.lock, bank.lock:
            dest = self.datadir.trash_bank(name)
            self._banks.pop(name, None)
        folder = os.path.basename(dest)
        return self._listing_change(text, dest, lambda: self.restore_bank(folder, text), f"moved `{name}` to {dest}")

    def restore_bank(self, folder: str, text: str | None = None) -> Change:
        """Move a trashed bank back under its name; undo trashes it again."""
        with self.lock:
            bank = self.datadir.restore_bank(folder)
        name = bank.name
        text = text or f"Restore bank {name}"
        return self._listing_change(text, name, lambda: self.trash_bank(name, text), f"restored bank `{name}`")

    def close(self) -> None:
        """Nothing to release: files are opened per read."""


# ---------------------------------------------------------------------- the registry's entry


def identify(path: str) -> Verdict:
    """An iii data dir holds bank folders (a ``memories.jsonl``, ``rules/`` or ``bank.yaml`` each)."""
    what = "an iii data dir"
    if os.path.isfile(os.path.join(path, LOG_NAME)):
        return Verdict(
            None,
            what,
            f"{path} is a bank folder itself (it has {LOG_NAME}); open its parent "
            f"{os.path.dirname(path)} as the data dir",
        )
    try:
        names = DataDir(path).bank_names()
    except KeepguiError as exc:
        return Verdict(None, what, str(exc))
    banks = [
        n for n in names if any(os.path.exists(os.path.join(path, n, f)) for f in (LOG_NAME, RULES_DIR, BANK_YAML))
    ]
    if not banks:
        return Verdict(None, what, f"no bank folder (one with {LOG_NAME}, {RULES_DIR}/ or {BANK_YAML}) in {path}")
    shown = ", ".join(banks[:5]) + ("…" if len(banks) > 5 else "")
    return Verdict(KIND, what, f"{count(len(banks), 'bank', 'banks')}: {shown}")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """``$KEEPGUI_DATA_DIR``, the worker's own default data dir, and ``~/.iii/data/memory``, where they exist."""
    from keepgui.backends.iii.store import default_data_dir

    found = []
    env = environ.get("KEEPGUI_DATA_DIR")
    home = environ.get("HOME") or os.path.expanduser("~")
    for path, why in ([(env, "$KEEPGUI_DATA_DIR")] if env else []) + [
        (default_data_dir(dict(environ)), "the memory worker's default data dir"),
        (os.path.join(home, ".iii", "data", "memory"), "~/.iii/data/memory"),
    ]:
        if path and os.path.isdir(path):
            found.append(Found(KIND, os.path.abspath(path), why))
    return found


def prepare_demo(folder: str, shift_ms: int, edited_ns: int) -> dict[str, str]:
    """Move every time in the demo banks' logs forward by ``shift_ms`` (the packaged copy is untouched);
    the logs keep looking edited at ``edited_ns``, as every file of the demo."""
    from keepgui.backends.iii.record import read_record

    for bank in sorted(os.listdir(folder)):
        path = os.path.join(folder, bank, LOG_NAME)
        if not os.path.isfile(path):
            continue
        data, _stamp = fsio.read_stamped(path)
        lines = (data or b"").split(b"\n")
        out = []
        for line in lines[:-1]:
            memory = read_record(line)
            if memory is None:
                out.append(line + b"\n")  # keep anything odd exactly as it is
                continue
            memory = memory.replace(
                created_at=memory.created_at + shift_ms,
                updated_at=memory.updated_at + shift_ms,
                invalid_at=None if memory.invalid_at is None else memory.invalid_at + shift_ms,
            )
            out.append(memory.to_line())
        fsio.atomic_write(path, b"".join(out) + lines[-1])
        os.utime(path, ns=(edited_ns, edited_ns))
    return {}


BACKEND = Backend(
    kind=KIND,
    label="iii data dir",
    icon="bank",
    open=IiiSource,
    identify=identify,
    discover=discover,
    window_arg="data_dir",
    demo_folder="iii",
    prepare_demo=prepare_demo,
    start_rank=0,
    keep_rank=10,
)
"""iii, as the registry knows it."""
