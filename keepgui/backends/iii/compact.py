"""Consolidating an iii bank as a plan a person reviews, with memory-consolidate's rules exactly.

The ``memory-consolidate`` worker (spec §8) merges a bank's duplicates on its
own schedule. keepgui computes the very same plan, shows it, and writes only
the groups a person selects:

* :func:`normalize` — lowercase, every non-alphanumeric character (Rust's
  ``char::is_alphanumeric``: Unicode Alphabetic or Numeric) becomes a space,
  whitespace collapsed and trimmed; :func:`token_key` — its sorted unique words.
* :func:`plan_groups` — pass 1 groups live memories by ``normalize(text)``
  (writable); pass 2 groups the memories left alone by pass 1 by ``token_key``
  (word-order twins such as "Alice manages Bob" / "Bob manages Alice": report
  only, never written). Groups come in sorted key order (pass 1, then pass 2).
  In each group the winner is the pinned one, then the most corroborated, then
  the oldest ``created_at``, then the smallest id; pinned losers go to
  ``skipped_pinned`` and are never touched. Texts that normalise to "" group
  together, as upstream acknowledges.
* Beyond upstream, ``fuzzy=True`` adds near-duplicate groups found with
  rapidfuzz (:func:`keepgui.core.compaction.near_duplicates`) among the
  memories in no exact group: judgement calls, never selected by default.

Applying a group does what memory-consolidate does (spec §1.6a, §8) — for each
loser ``memory::supersede`` then ``memory::save`` of the winner's *text*, which
reinforces the winner (corroboration + 1) — all in one :class:`Batch` (one
locked append). Exactly as upstream, when the winner's text was edited (its id
is no longer the fingerprint of its text) that save creates a *new* record with
corroboration 0 and the winner is not reinforced, and when the text is outside
3..2000 bytes the save fails: the error is reported (``errors``) and nothing is
reinforced. ``reinforce_by_id=True`` is keepgui's labelled alternative: it
reinforces the winner by id in both cases (:meth:`Batch.reinforce`), which is
what the consolidation means, but not what the worker leaves on disk.

**Staleness.** A plan remembers the log bytes it was computed from (their
length and SHA-256). Applying checks, under the log's lock, that those bytes
are still the start of the log, then reads the lines appended since: the plan
is stale when one of them changes a memory any operation of the plan involves
(winner, loser, pinned or report-only member), or gives a memory the key of a
planned group (it would join it and could change the winner). Appends that
touch nothing in the plan (an agent saving an unrelated memory) do not make it
stale; a rewritten log always does.

**Undo** appends records, never removes a line: each loser is restored
(:meth:`Batch.restore`) and each reinforced winner reverted to its record from
before (:meth:`Batch.revert`), after checking that none of them changed since.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from keepgui.backends.iii import writes as mut
from keepgui.backends.iii.record import Memory, RecordError, fingerprint, memory_from_obj, read_record
from keepgui.backends.iii.store import Bank, Batch, DataDir
from keepgui.backends.iii.textrules import rust_lower
from keepgui.backends.iii.worker import ReloadOutcome
from keepgui.core import fsio
from keepgui.core.compaction import (
    Applied,
    ChangedSince,
    Counts,
    Operation,
    Plan,
    Selection,
    excerpt,
    make_operation,
    near_duplicates,
    register_applied_kind,
    register_kinds,
    table,
    words_only_in,
)
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound
from keepgui.core.history import History

BANK_KINDS = register_kinds(
    {
        "supersede": "Duplicates to supersede",
        "fuzzy": "Fuzzy near-duplicates (judgement call)",
        "report-only": "Same words, different order (report only)",
        "pinned-only": "Pinned duplicates (never touched)",
    }
)
"""The kinds of a bank's consolidation plan, in the order it lists them."""

FUZZY_THRESHOLD = 85.0
"""Default cut-off of the fuzzy groups (rapidfuzz ``token_set_ratio``), as for keep.md."""

# Rust's char::is_alphanumeric is Unicode Alphabetic || Numeric (Nd, Nl, No); Python's
# str.isalnum leaves out the combining marks that are Alphabetic (Devanagari vowel signs...).
_NOT_ALNUM = regex.compile(r"[^\p{Alphabetic}\p{N}]+")


def normalize(text: str) -> str:
    """memory-consolidate's ``normalize``: lowercase, non-alphanumerics → space, collapsed, trimmed."""
    # after the substitution every whitespace character is already a space, so split() is exact here
    return " ".join(_NOT_ALNUM.sub(" ", rust_lower(text)).split())


def token_key(text: str) -> str:
    """memory-consolidate's ``token_key``: the sorted, de-duplicated words of ``normalize(text)``."""
    return " ".join(sorted(set(normalize(text).split())))


def _winner_order(m: Memory) -> tuple[bool, int, int, str]:
    # pinned first, then highest corroboration, then OLDEST, then smallest id (byte order = code point order)
    return (not m.pinned, -m.corroboration, m.created_at, m.id)


@dataclass(frozen=True)
class Group:
    """One planned group, in memory-consolidate's report shape plus keepgui's extras.

    ``key`` is the grouping key (normalised text, token key, or the winner's
    normalised text for a fuzzy group); ``fuzzy`` marks keepgui's rapidfuzz
    groups, with the lowest ``score`` of a loser against the winner.
    """

    winner_id: str
    winner_text: str
    loser_ids: tuple[str, ...]
    loser_texts: tuple[str, ...]
    skipped_pinned: tuple[str, ...] = ()
    report_only: bool = False
    key: str = ""
    fuzzy: bool = False
    score: float | None = None

    @property
    def members(self) -> tuple[str, ...]:
        """Every id in the group: winner, losers, pinned losers."""
        return (self.winner_id, *self.loser_ids, *self.skipped_pinned)

    def to_obj(self) -> dict[str, Any]:
        """``{winner_id, winner_text, loser_ids, loser_texts, skipped_pinned?, report_only?}`` as
        upstream serialises it (empty/false fields omitted), plus ``fuzzy``/``score`` for keepgui's groups."""
        obj: dict[str, Any] = {
            "winner_id": self.winner_id,
            "winner_text": self.winner_text,
            "loser_ids": list(self.loser_ids),
            "loser_texts": list(self.loser_texts),
        }
        if self.skipped_pinned:
            obj["skipped_pinned"] = list(self.skipped_pinned)
        if self.report_only:
            obj["report_only"] = True
        if self.fuzzy:
            obj["fuzzy"] = True
            obj["score"] = round(self.score or 0.0, 1)
        return obj


def _group(
    members: list[Memory], key: str, report_only: bool, fuzzy: bool = False, score: float | None = None
) -> Group:
    members = sorted(members, key=_winner_order)
    winner = members[0]
    losers = [m for m in members[1:] if not m.pinned]
    pinned = [m.id for m in members[1:] if m.pinned]
    return Group(
        winner.id,
        winner.text,
        tuple(m.id for m in losers),
        tuple(m.text for m in losers),
        tuple(pinned),
        report_only,
        key,
        fuzzy,
        score,
    )


def plan_groups(rows: Iterable[Memory]) -> list[Group]:
    """memory-consolidate's ``plan``: writable normalised-text groups, then report-only word-order
    groups, each in sorted key order. ``rows`` are the live memories (order does not matter)."""
    rows = list(rows)
    by_norm: dict[str, list[Memory]] = {}
    norms = []
    for row in rows:
        key = normalize(row.text)
        norms.append(key)
        by_norm.setdefault(key, []).append(row)
    planned = [_group(by_norm[key], key, False) for key in sorted(k for k, m in by_norm.items() if len(m) >= 2)]
    by_tokens: dict[str, list[Memory]] = {}
    for row, key in zip(rows, norms, strict=True):
        if len(by_norm[key]) < 2:  # only memories the normalised pass left alone
            by_tokens.setdefault(" ".join(sorted(set(key.split()))), []).append(row)
    planned += [_group(by_tokens[key], key, True) for key in sorted(k for k, m in by_tokens.items() if len(m) >= 2)]
    return planned


def fuzzy_groups(
    rows: Sequence[Memory], threshold: float = FUZZY_THRESHOLD, *, progress: Callable[[int, int], None] | None = None
) -> list[Group]:
    """Near-duplicate groups among ``rows`` (rapidfuzz ``token_set_ratio`` ≥ ``threshold``).

    Memories are taken in winner order; each one not yet grouped becomes the
    winner of those of its direct near-duplicates not yet grouped (no chains:
    every loser is similar to its own winner).
    """
    pairs = near_duplicates([m.text for m in rows], threshold, progress=progress)
    near: dict[int, dict[int, float]] = {}
    for i, j, score in pairs:
        near.setdefault(i, {})[j] = score
        near.setdefault(j, {})[i] = score
    taken: set[int] = set()
    out = []
    for i in sorted(near, key=lambda k: _winner_order(rows[k])):
        if i in taken:
            continue
        members = [j for j in near[i] if j not in taken]
        if not members:
            continue
        taken.add(i)
        taken.update(members)
        score = min(near[i][j] for j in members)
        out.append(_group([rows[i], *(rows[j] for j in members)], normalize(rows[i].text), False, True, score))
    out.sort(key=lambda g: (g.key, g.winner_id))
    return out


# ---------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class LogMark:
    """The log bytes a plan was computed from: their length and SHA-256."""

    path: str
    offset: int
    sha256: str


def _read_log(bank: Bank, offset: int) -> tuple[bytes, int, str]:
    """The log's bytes, ``offset`` cut to their length, and the SHA-256 of the bytes before it."""
    data, _stamp = fsio.read_stamped(bank.log_path)
    data = data or b""
    offset = min(offset, len(data))
    return data, offset, hashlib.sha256(data[:offset]).hexdigest()


def _mark(bank: Bank) -> LogMark:
    _data, offset, sha256 = _read_log(bank, bank.log.offset)
    return LogMark(bank.log_path, offset, sha256)


def _lines_after(data: bytes, offset: int, end: int) -> list[Memory]:
    """The valid records of the complete lines in ``data[offset:end]``."""
    records = map(read_record, data[offset:end].split(b"\n"))
    return [memory for memory in records if memory is not None]  # the worker skips the others too


class BankPlan(Plan):
    """The consolidation plan of one bank: one operation per group.

    Kinds: ``supersede`` (a normalised-text group, selected), ``fuzzy`` (a
    rapidfuzz group, not selected), ``report-only`` (word-order twins) and
    ``pinned-only`` (duplicates that are all pinned) — the last two cannot be
    applied. ``groups_planned`` are the :class:`Group` objects in upstream
    order; :meth:`report` gives upstream's ``BankReport`` shape.
    """

    kind = "bank"
    KINDS = BANK_KINDS

    def __init__(
        self, bank: Bank, groups: list[Group], mark: LogMark, scanned: int, *, fuzzy: bool, threshold: float
    ) -> None:
        self.bank = bank
        self.groups_planned = tuple(groups)
        self.mark = mark
        self.scanned = scanned
        self.fuzzy = fuzzy
        self.threshold = threshold
        ops = [self._operation(group) for group in groups]
        # groups are disjoint, so no two operations are identical and the ids stay as made here
        self._group_of: dict[str, Group] = {op.id: group for op, group in zip(ops, groups, strict=True)}
        super().__init__(ops, (), f"bank `{bank.name}`")
        self.touched = frozenset(mid for g in groups for mid in g.members)
        self.keys = frozenset(g.key for g in groups if not g.report_only and not g.fuzzy)
        self.token_keys = frozenset(g.key for g in groups if g.report_only)

    @staticmethod
    def _operation(group: Group) -> Operation:
        targets = (group.winner_id, *group.loser_ids, *group.skipped_pinned)
        before = (group.winner_text, *group.loser_texts)
        after = (group.winner_text,)
        pinned = f"; pinned {', '.join(group.skipped_pinned)} left alone" if group.skipped_pinned else ""
        if group.report_only:
            return make_operation(
                "report-only",
                targets,
                before,
                after,
                f"the same words in another order: `{excerpt(group.winner_text, 50)}` — order can change the "
                'meaning ("Alice manages Bob"), so this is never written automatically' + pinned,
                applicable=False,
            )
        if not group.loser_ids:
            return make_operation(
                "pinned-only",
                targets,
                before,
                after,
                f"duplicates of `{excerpt(group.winner_text, 50)}` that are all pinned; "
                "pinned memories are never touched",
                applicable=False,
            )
        n = len(group.loser_ids)
        if group.fuzzy:
            lost = sorted({w for t in group.loser_texts for w in words_only_in(t, group.winner_text)})
            tail = f"; words only in the losers: {', '.join(lost)}" if lost else ""
            return make_operation(
                "fuzzy",
                targets,
                before,
                after,
                f"near-duplicates (similarity ≥ {group.score:.0f}): supersede {n} by `{excerpt(group.winner_text, 50)}`"
                f" — a judgement call, similar texts can be different facts{tail}{pinned}",
                selected=False,
                score=group.score,
            )
        return make_operation(
            "supersede",
            targets,
            before,
            after,
            f"the same text once case, punctuation and spacing are ignored: supersede {n} by "
            f"`{excerpt(group.winner_text, 50)}` (pinned, then most corroborated, then oldest wins){pinned}",
            selected=True,
        )

    def group(self, key: str | int) -> Group:
        """The :class:`Group` behind an operation."""
        return self._group_of[self.op(key).id]

    # ---------------------------------------------------------------- reviewing

    def counts(self, selection: Selection = None) -> Counts:
        """Live memories before and after the selected supersedes (no target for a bank)."""
        ops = self.selected(selection)
        gone = sum(len(self._group_of[op.id].loser_ids) for op in ops)
        reinforced = sum(
            len(self._group_of[op.id].loser_ids)
            for op in ops
            if winner_save_effect(self._group_of[op.id])[0] == "reinforce"
        )
        return Counts(
            "memories", self.scanned, self.scanned - gone, None, {"superseded": gone, "reinforced": reinforced}
        )

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """A table of the supersedes of a selection, then each winner's reinforcement."""
        rows, winners = [], []
        for op in self.selected(selection):
            group = self._group_of[op.id]
            for loser_id, loser_text in zip(group.loser_ids, group.loser_texts, strict=True):
                rows.append(
                    (
                        str(op.number),
                        loser_id,
                        excerpt(loser_text, 48),
                        "→ " + group.winner_id,
                        excerpt(group.winner_text, 48),
                    )
                )
            winner = self.bank.get(group.winner_id)
            if winner is not None and group.loser_ids:
                k = len(group.loser_ids)
                effect, why = winner_save_effect(group)
                if effect == "reinforce":
                    winners.append(
                        f"reinforce {group.winner_id}: corroboration {winner.corroboration} → "
                        f"{winner.corroboration + k}"
                    )
                else:
                    winners.append(f"winner {group.winner_id}: {why}")
        if not rows:
            return "nothing selected: no memory would be superseded\n"
        out = table(("op", "supersede", "text", "by", "winner text"), rows)
        return out + "".join(line + "\n" for line in winners)

    def report(self, selection: Selection = None, applied: BankApplied | None = None) -> dict[str, Any]:
        """upstream's ``BankReport``: ``{bank, scanned, groups, superseded, reinforced, errors?}``
        (``capped`` never: keepgui applies no per-run budget); the counts are those of ``applied``."""
        obj: dict[str, Any] = {
            "bank": self.bank.name,
            "scanned": self.scanned,
            "groups": [g.to_obj() for g in self.groups_planned],
            "superseded": applied.superseded if applied else 0,
            "reinforced": applied.reinforced if applied else 0,
        }
        if applied and applied.errors:
            obj["errors"] = list(applied.errors)
        return obj

    def to_obj(self, selection: Selection = None, *, diff: bool = True) -> dict[str, Any]:
        """The plan for ``--json``, with upstream's report under ``report``."""
        obj = super().to_obj(selection, diff=diff)
        obj["report"] = self.report(selection)
        obj["bank"] = self.bank.name
        obj["fuzzy"] = self.fuzzy
        return obj

    # ---------------------------------------------------------------- freshness

    def replan(self) -> BankPlan:
        """The plan again, from the log as it is now (plan_bank refreshes the bank)."""
        return plan_bank(self.bank, fuzzy=self.fuzzy, threshold=self.threshold)

    def _staleness(self) -> str | None:
        """Why the plan is stale ("" never), or None; the log must have been refreshed just before."""
        data, start, sha256 = _read_log(self.bank, self.mark.offset)
        if start < self.mark.offset or sha256 != self.mark.sha256:  # shorter than the plan's bytes, or other bytes
            return f"{self.bank.log_path} was rewritten"
        end = min(self.bank.log.offset, len(data))
        if end <= self.mark.offset:
            return None
        for memory in _lines_after(data, self.mark.offset, end):
            if memory.id in self.touched:
                return f"memory {memory.id} of the plan was changed"
            if self.keys and normalize(memory.text) in self.keys:
                return f"memory {memory.id} now has the same text as a planned group"
            if self.token_keys and token_key(memory.text) in self.token_keys:
                return f"memory {memory.id} now has the same words as a reported group"
        return None

    def check_fresh(self) -> None:
        """Raise StalePlan when the log changed in a way that could change an operation of this plan."""
        self.bank.refresh()
        why = self._staleness()
        if why:
            raise self.stale(why)

    # ---------------------------------------------------------------- applying

    def apply(self, selection: Selection = None, now: int | None = None, reinforce_by_id: bool = False) -> BankApplied:
        """Supersede the selected groups' losers and save each winner's text after each, in one Batch.

        That save is memory-consolidate's (see the module docstring);
        ``reinforce_by_id`` reinforces the winner by id instead. The freshness
        check runs under the log's lock, so nothing can slip in between it and
        the append; on a stale plan nothing is written and :class:`StalePlan`
        carries the re-plan.
        """
        ops = self.selected(selection)
        groups = [self._group_of[op.id] for op in ops]
        groups.sort(key=lambda g: (g.report_only, g.fuzzy, g.key, g.winner_id))  # upstream's processing order
        if not groups:
            return BankApplied(self.bank.datadir.path, self.bank.name, [], [], [], "nothing selected")
        touched: dict[str, Memory] = {}
        created: dict[str, Memory] = {}
        merges: list[tuple[str, str, str]] = []
        outcomes: list[_SaveOutcome] = []
        try:
            with self.bank.batch(now) as batch:
                why = self._staleness()
                if why:
                    raise _Stale(why)
                for group in groups:
                    for loser in group.loser_ids:
                        for mid in (loser, group.winner_id):
                            if mid not in touched:
                                touched[mid] = _record(batch, mid)
                        batch.supersede(loser, group.winner_id)
                        outcome = _reinforce(batch, group.winner_id, group.winner_text, reinforce_by_id)
                        outcomes.append(outcome)
                        if outcome.saved is not None and outcome.saved not in touched and outcome.saved not in created:
                            if outcome.created_new:
                                created.setdefault(outcome.saved, _record(batch, outcome.saved))
                            elif outcome.previous is not None:
                                touched[outcome.saved] = outcome.previous
                        merges.append((loser, group.winner_id, group.winner_text))
                after = {mid: _record(batch, mid) for mid in touched}
                created = {mid: _record(batch, mid) for mid in created}
        except _Stale as stale:
            raise self.stale(str(stale)) from None
        pairs = [(touched[mid], after[mid]) for mid in touched]
        lines = [f"superseded {loser} by {winner}" for loser, winner, _text in merges]
        lines += [o.line for o in outcomes if o.line]
        applied = BankApplied(
            self.bank.datadir.path,
            self.bank.name,
            pairs,
            merges,
            lines,
            f"consolidate bank `{self.bank.name}`: {len(merges)} superseded",
            created=list(created.values()),
            reinforce_by_id=reinforce_by_id,
        )
        applied.reinforced = sum(o.reinforced for o in outcomes)
        applied.errors = [o.error for o in outcomes if o.error]
        applied.reload = batch.report.reload
        applied.bank = self.bank
        applied.report = self.report([op.id for op in ops], applied=applied)
        return applied


class _Stale(Exception):
    """Raised inside the batch so it writes nothing; its message says why the plan is stale."""


def _record(batch: Batch, memory_id: str) -> Memory:
    """The record of an id the plan names, as the batch has it (the plan was found fresh, so it exists)."""
    record = batch.current(memory_id)
    if record is None:
        raise NotFound(f"memory `{memory_id}` not found")
    return record


def winner_save_effect(group: Group) -> tuple[str, str]:
    """What memory-consolidate's ``memory::save`` of the winner's text will do: ``("reinforce", "")``,
    ``("other", why)`` (an edited winner: another id is saved) or ``("fail", why)``."""
    try:
        mid = fingerprint(mut.clean_text(group.winner_text))
    except InvalidInput as exc:
        return "fail", f"memory::save of its text fails ({exc}), so it is not reinforced (as memory-consolidate)"
    if mid != group.winner_id:
        return "other", (
            f"its text was edited, so memory::save of it writes {mid}, not the winner, which is "
            "not reinforced (as memory-consolidate; --reinforce-by-id reinforces it)"
        )
    return "reinforce", ""


@dataclass(frozen=True)
class _SaveOutcome:
    """What the save after one supersede did: the id it wrote (or None), and what to report."""

    saved: str | None
    record: Memory | None
    previous: Memory | None
    created_new: bool
    reinforced: bool
    line: str
    error: str = ""


def _reinforce(batch: Batch, winner_id: str, winner_text: str, by_id: bool) -> _SaveOutcome:
    """After a supersede: ``memory::save {text: winner_text}`` as memory-consolidate calls it, or
    (``by_id``) a reinforcement of the winner by id."""
    winner = _record(batch, winner_id)
    if by_id:
        step = batch.reinforce(winner_id)
        return _SaveOutcome(
            winner_id,
            step.record,
            winner,
            False,
            True,
            f"reinforced {winner_id} by id (corroboration {winner.corroboration} → "
            f"{step.written.corroboration}; keepgui's option, not memory-consolidate's save)",
        )
    try:
        mid = fingerprint(mut.clean_text(winner_text))
    except InvalidInput as exc:
        error = f"memory::save of the text of winner {winner_id} failed: {exc}; it was not reinforced"
        return _SaveOutcome(None, None, None, False, False, error, error)
    previous = batch.current(mid)
    step = batch.save(winner_text)
    if mid == winner_id:
        return _SaveOutcome(
            mid,
            step.record,
            previous,
            False,
            True,
            f"reinforced {mid} (corroboration {winner.corroboration} → {step.written.corroboration})",
        )
    what = "created" if previous is None else ("resurrected" if previous.invalid_at is not None else "reinforced")
    return _SaveOutcome(
        mid,
        step.record,
        previous,
        previous is None,
        False,
        f"the text of winner {winner_id} was edited, so memory::save {what} {mid} instead "
        "(as memory-consolidate does; the winner was not reinforced)",
    )


def plan_bank(
    bank: Bank,
    *,
    fuzzy: bool = False,
    threshold: float = FUZZY_THRESHOLD,
    progress: Callable[[int, int], None] | None = None,
) -> BankPlan:
    """Plan the consolidation of ``bank`` (its live memories, as ``memory::list`` pages them).

    ``fuzzy`` adds rapidfuzz near-duplicate groups (``threshold`` on
    ``token_set_ratio``) among the memories in no exact group; that search
    compares every pair, so it takes seconds for thousands of memories and
    minutes for a hundred thousand. ``progress(done, total)`` follows it.
    """
    if not 0 <= threshold <= 100:
        raise InvalidInput(f"the near-duplicate threshold must be between 0 and 100, not {threshold}")
    bank.refresh()
    if bank.log.unreadable:
        raise KeepguiError(f"bank `{bank.name}` cannot be read: {bank.log.unreadable}")
    mark = _mark(bank)
    rows = bank.log.live()
    groups = plan_groups(rows)
    if fuzzy:
        grouped = {mid for g in groups for mid in g.members}
        rest = sorted((m for m in rows if m.id not in grouped), key=lambda m: m.id)
        groups += fuzzy_groups(rest, threshold, progress=progress)
    return BankPlan(bank, groups, mark, len(rows), fuzzy=fuzzy, threshold=threshold)


# ---------------------------------------------------------------------- undo


class BankApplied(Applied):
    """A consolidation written to a bank, and how to take it back by appending records.

    ``pairs`` hold, per memory touched, its record before the batch and the one
    the batch left; ``created`` the records the winners' saves created (an
    edited winner's text); ``merges`` the ``(loser, winner, winner text)``
    supersedes in the order they were written. Undo restores each superseded
    loser, reverts each reinforced memory to its earlier record and deletes
    each created one; redo supersedes and saves again (the same way:
    ``reinforce_by_id``). Both refuse (:class:`ChangedSince`) when one of those
    memories changed in between, and write nothing then.
    """

    kind = "bank"

    def __init__(
        self,
        datadir: str,
        bank: str,
        pairs: list[tuple[Memory, Memory]],
        merges: list[tuple[str, str, str]],
        lines: Iterable[str],
        description: str,
        created: list[Memory] | None = None,
        reinforce_by_id: bool = False,
    ) -> None:
        super().__init__(description, lines, bool(pairs), f"{os.path.abspath(datadir)}::{bank}")
        self.datadir = datadir
        self.bank_name = bank
        self.pairs = list(pairs)
        self.merges = list(merges)
        self.created = list(created or [])
        self.reinforce_by_id = reinforce_by_id
        self.reinforced = 0
        self.errors: list[str] = []
        self.reload: ReloadOutcome | None = None
        self.report: dict[str, Any] = {}
        self.bank: Bank | None = None  # the Bank applied to, when in this process (its view stays current)
        self._where: tuple[DataDir | None, int | None] = (None, None)  # for the next undo/redo

    @property
    def superseded(self) -> int:
        """How many memories were superseded (each followed by one save of its winner's text)."""
        return len(self.merges)

    def _bank(self, datadir: DataDir | None) -> Bank:
        if datadir is not None:
            return datadir.bank(self.bank_name)
        if self.bank is not None and self.bank.exists():
            return self.bank
        return DataDir(self.datadir).bank(self.bank_name)

    def _check(self, batch: Batch, expected: Iterable[Memory], doing: str) -> None:
        for record in expected:
            if batch.current(record.id) != record:
                raise ChangedSince(
                    batch.bank.log_path,
                    f"memory {record.id} of bank `{batch.bank.name}` changed after the "
                    f"consolidation, so it was not {doing}; nothing was written. Restore single "
                    f"memories with `keepgui restore {batch.bank.name} ID`.",
                )

    def undo(self, datadir: DataDir | None = None, now: int | None = None) -> None:
        """Append the records that bring every loser back live and each winner back to before.

        ``datadir``: the caller's own DataDir (the window's), so its view follows the write.
        """
        self._where = (datadir, now)
        super().undo()

    def redo(self, datadir: DataDir | None = None, now: int | None = None) -> None:
        """Supersede and reinforce again, after checking nothing changed since the undo."""
        self._where = (datadir, now)
        super().redo()

    def _undo(self) -> None:
        datadir, now = self._where
        with self._bank(datadir).batch(now) as batch:
            self._check(batch, [after for _before, after in self.pairs] + self.created, "undone")
            for record in self.created:
                batch.delete(record.id)
            for before, _after in self.pairs:
                batch.revert(before)  # exactly as it was, its updated_at too: the worker's ranking is as before
            undone = [_record(batch, before.id) for before, _after in self.pairs]
        self.pairs = [(u, after) for u, (_before, after) in zip(undone, self.pairs, strict=True)]
        self.reload = batch.report.reload

    def _redo(self) -> None:
        datadir, now = self._where
        with self._bank(datadir).batch(now) as batch:
            self._check(batch, (before for before, _after in self.pairs), "redone")
            for loser, winner, text in self.merges:
                batch.supersede(loser, winner)
                _reinforce(batch, winner, text, self.reinforce_by_id)
            self.pairs = [(before, _record(batch, before.id)) for before, _after in self.pairs]
            self.created = [_record(batch, record.id) for record in self.created]
        self.reload = batch.report.reload

    def to_obj(self) -> dict[str, Any]:
        """Everything undo needs: the data dir, the bank, the merges and the records before/after."""
        obj = super().to_obj()
        obj.update(
            {
                "datadir": self.datadir,
                "bank": self.bank_name,
                "merges": [list(m) for m in self.merges],
                "pairs": [[b.to_obj(), a.to_obj()] for b, a in self.pairs],
                "created": [m.to_obj() for m in self.created],
                "reinforce_by_id": self.reinforce_by_id,
            }
        )
        return obj

    @classmethod
    def from_obj(cls, obj: dict[str, Any], history: History | None = None) -> BankApplied:
        """Rebuild from :meth:`to_obj` (another process's ``--undo``)."""
        try:
            pairs = [(memory_from_obj(b), memory_from_obj(a)) for b, a in obj["pairs"]]
            by_text = {a.id: a.text for _b, a in pairs}
            # Journals written before the winner's text was kept hold (loser, winner) pairs.
            merges = [
                (str(m[0]), str(m[1]), str(m[2]) if len(m) > 2 else by_text.get(str(m[1]), "")) for m in obj["merges"]
            ]
            created = [memory_from_obj(m) for m in obj.get("created", [])]
            applied = cls(
                obj["datadir"],
                obj["bank"],
                pairs,
                merges,
                obj.get("lines", ()),
                obj["description"],
                created=created,
                reinforce_by_id=bool(obj.get("reinforce_by_id", False)),
            )
        except (KeyError, TypeError, ValueError, RecordError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable bank entry ({exc})") from None
        applied.state = obj.get("state", "applied")
        applied.at = obj.get("at", applied.at)
        return applied


register_applied_kind("bank", BankApplied.from_obj)


def find_bank(datadir: DataDir, name: str) -> Bank:
    """The bank to consolidate, with a clear error when it does not exist."""
    if not datadir.has_bank(name):
        raise NotFound(f"bank `{name}` not found in {datadir.path}; list them with `keepgui banks`")
    return datadir.bank(name)
