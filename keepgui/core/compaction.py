"""Compaction as a plan a person reviews as a diff, then applies or discards.

Memory compaction is where people lose data: an agent rewrites its memory on
its own and drops what the person wanted kept. In keepgui no compaction touches
a file before a person has seen it and chosen what to apply. This module holds
the parts every kind of compaction shares (keep.md plans, rewrites reviewed
after the fact, rewrites from an outside command, iii bank consolidation):

* :class:`Operation` — one proposed change: its ``kind``, the entries or
  memories it touches (``targets``), the text ``before`` and ``after``, a
  ``reason`` a person can read, the ``evidence`` behind it, and whether it is
  ``selected`` by default. Safe operations are; judgement calls are not.
* :class:`Plan` — the operations of one file or bank, plus what every front end
  needs: group them by kind, turn a selection spec (``safe``, ``all``,
  ``none``, ``safe,+3,-a1b2c3d4``) into a set of operation ids, count before →
  after → target, render the whole result for *any* selection (a unified diff
  of the file, or a table of supersedes for a bank) and each operation alone,
  check that it is still fresh, and apply a selection.
* Staleness: a plan remembers what it was computed from. :meth:`Plan.apply`
  checks that first and raises :class:`StalePlan` — carrying a fresh plan in
  ``replanned`` — when anything it depends on changed: a stale plan is never
  applied. (What "changed" means is defined by each kind of plan.)
* :class:`Applied` — what an apply wrote and how to take it back: ``undo()``
  and ``redo()`` each check that nothing changed since (their own stamp check),
  so the window can push it on its undo stack. :class:`UndoJournal` keeps the
  applied compactions of the command line, so ``keepgui compact --undo`` works
  from another process.
* :func:`near_duplicates` — every pair of texts whose rapidfuzz
  ``token_set_ratio`` reaches a threshold, exactly as a pairwise loop finds
  them, computed with batch scoring and exact filters instead of n² calls.

Nothing here imports Qt or writes a file except through :mod:`keepgui.core.fsio`.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import LCSseq
from rapidfuzz.utils import default_process

from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound
from keepgui.core.history import History, Journal
from keepgui.core.source import Notice
from keepgui.core.timefmt import now_ms

# ---------------------------------------------------------------------- kinds

KIND_LABELS: dict[str, str] = {}
"""Every operation kind known, with the label a window shows (each backend registers its own)."""

SELECT_MODES = ("safe", "all", "none")
"""The named selections: the default (safe operations), every applicable one, none."""

Selection = Iterable[str | int] | None
"""What a plan's methods take as a selection: operation ids or numbers, a spec string, or None (the default)."""


def register_kinds(labels: Mapping[str, str]) -> tuple[str, ...]:
    """Make operation kinds known with their labels (the first label given for a kind stays);
    returns the kinds in the order given, for a plan's :attr:`Plan.KINDS`."""
    for kind, label in labels.items():
        KIND_LABELS.setdefault(kind, label)
    return tuple(labels)


REVIEW_KINDS = register_kinds(
    {
        # a rewrite reviewed after the fact, or proposed by a command: any backend whose files others rewrite
        "removed": "Removed entries",
        "deduplicated": "Removed duplicates (still covered)",
        "merged": "Merged entries",
        "reworded": "Reworded entries",
        "new": "New entries (a compaction should add no facts)",
    }
)
"""The kinds of a review of an outside rewrite, in the order a review lists them."""


def kind_label(kind: str) -> str:
    """The label of an operation kind (the kind itself when unknown)."""
    return KIND_LABELS.get(kind, kind)


def operation_id(kind: str, targets: Iterable[str], before: Iterable[str], after: Iterable[str]) -> str:
    """A short id that names the same change in every plan computed from the same content.

    It is derived from the change itself, not its position, so a command printed
    for a person (``--restore 3f2a9c1d``) still means that change after a re-plan,
    and simply is not found once the change no longer exists.
    """
    blob = json.dumps([kind, list(targets), list(before), list(after)], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class Operation:
    """One proposed change of a plan.

    ``targets``: the ids of the entries or memories it touches; ``before`` and
    ``after``: their texts before, and the texts that stand for them after (empty
    when they are dropped); ``reason``: one sentence for a person; ``evidence``:
    what backs it (the matching MEMORY.md line...); ``selected``: whether it is
    part of the default selection (safe operations are, judgement calls are
    not); ``applicable``: False for what is only reported (never written);
    ``score``: a similarity, when one decided; ``number``: its 1-based position
    in the plan, for people (the ``id`` is what scripts should use).
    """

    id: str
    kind: str
    targets: tuple[str, ...]
    before: tuple[str, ...]
    after: tuple[str, ...]
    reason: str
    selected: bool = False
    applicable: bool = True
    evidence: tuple[str, ...] = ()
    score: float | None = None
    number: int = 0

    @property
    def label(self) -> str:
        """The label of its kind."""
        return kind_label(self.kind)

    def to_obj(self) -> dict[str, Any]:
        """The operation for ``--json``."""
        obj = {
            "id": self.id,
            "number": self.number,
            "kind": self.kind,
            "label": self.label,
            "targets": list(self.targets),
            "before": list(self.before),
            "after": list(self.after),
            "reason": self.reason,
            "selected": self.selected,
            "applicable": self.applicable,
            "evidence": list(self.evidence),
        }
        if self.score is not None:
            obj["score"] = round(self.score, 1)
        return obj


def make_operation(
    kind: str,
    targets: Iterable[str],
    before: Iterable[str],
    after: Iterable[str],
    reason: str,
    *,
    selected: bool = False,
    applicable: bool = True,
    evidence: Iterable[str] = (),
    score: float | None = None,
) -> Operation:
    """An :class:`Operation` with its content-derived id."""
    targets, before, after = tuple(targets), tuple(before), tuple(after)
    return Operation(
        operation_id(kind, targets, before, after),
        kind,
        targets,
        before,
        after,
        reason,
        selected and applicable,
        applicable,
        tuple(evidence),
        score,
    )


@dataclass(frozen=True)
class OperationGroup:
    """The operations of one kind, for a list grouped by kind."""

    kind: str
    label: str
    operations: tuple[Operation, ...]


@dataclass(frozen=True)
class Counts:
    """Before → after → target of a plan for one selection.

    ``unit`` is what is counted (``lines`` for keep.md, ``memories`` for a bank);
    ``target`` is None when there is none; ``remaining`` is how many more must go
    to reach it, which keepgui leaves to a person: it never guesses which facts
    someone can live without. ``detail`` holds secondary counts (entries...).
    """

    unit: str
    before: int
    after: int
    target: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def remaining(self) -> int:
        """How many more must be removed by hand to reach the target (0 when reached)."""
        return max(0, self.after - self.target) if self.target is not None else 0

    @property
    def reached(self) -> bool:
        """True when there is no target or the selection reaches it."""
        return self.remaining == 0

    def describe(self) -> str:
        """``161 → 148 lines (target 120; 28 more to choose by hand)``."""
        text = f"{self.before} → {self.after} {self.unit}"
        if self.target is not None:
            text += f" (target {self.target}"
            text += f"; {self.remaining} more to choose by hand)" if self.remaining else "; reached)"
        return text

    def to_obj(self) -> dict[str, Any]:
        """``{unit, before, after, target, remaining, ...detail}``."""
        return {
            "unit": self.unit,
            "before": self.before,
            "after": self.after,
            "target": self.target,
            "remaining": self.remaining,
            **self.detail,
        }


class StalePlan(Conflict):
    """A plan was not applied because what it was computed from changed since.

    ``replanned`` is a plan computed again from what is there now (or None when
    that failed too); nothing at all was written.
    """

    def __init__(self, path: str, what: str, replanned: Plan | None = None) -> None:
        KeepguiError.__init__(
            self, f"{path}: {what} since the plan was made; nothing was written. Review the new plan and apply again."
        )
        self.path = path
        self.expected = None
        self.actual = None
        self.what = what
        self.replanned = replanned


class ChangedSince(Conflict):
    """An undo or redo was refused because its target changed after the compaction.

    Nothing was written; ``path`` is the file (or bank log) concerned.
    """

    def __init__(self, path: str, message: str) -> None:
        KeepguiError.__init__(self, message)
        self.path = path
        self.expected = None
        self.actual = None


# ---------------------------------------------------------------------- plans

UNREVIEWED_REWRITE = "unreviewed-rewrite"
"""The code of a plan's notice that the file was rewritten outside keepgui and not reviewed yet (the
command line says which command reviews it, the window offers the review)."""


class Plan(ABC):
    """The operations proposed for one file or bank, and how to review and apply them.

    Subclasses compute the operations and implement :meth:`counts`,
    :meth:`render`, :meth:`render_operation`, :meth:`check_fresh`,
    :meth:`replan` and :meth:`apply`; this class handles operations, selections
    and the shared output. ``subject`` names what the plan is about (a path or
    ``bank `x```); ``notices`` are remarks for the person (an unreviewed
    rewrite, a count outside the usual range...).
    """

    kind = "plan"
    KINDS: tuple[str, ...] = ()
    """The operation kinds of this kind of plan, in the order it lists them (others come last)."""
    confirmed = False
    """The person answered yes to :attr:`confirmation` (the window sets it after asking)."""

    @property
    def confirmation(self) -> str:
        """The question a person answers before this plan is applied ("" when none): the file is
        one another program manages and rewrites on its own."""
        return ""

    def __init__(self, operations: Iterable[Operation], notices: Iterable[Notice] = (), subject: str = "") -> None:
        given = list(operations)
        # by kind, the safe operations of a kind before its judgement calls, otherwise as given
        rank = {kind: i for i, kind in enumerate(self.KINDS)}
        order = sorted(range(len(given)), key=lambda k: (rank.get(given[k].kind, len(rank)), not given[k].selected))
        ops = [given[k] for k in order]
        numbered, seen = [], set()
        for i, op in enumerate(ops, start=1):
            op_id = op.id
            while op_id in seen:  # two identical changes (a repeated line): keep ids unique
                op_id = hashlib.sha256(op_id.encode()).hexdigest()[:8]
            seen.add(op_id)
            numbered.append(
                Operation(
                    op_id,
                    op.kind,
                    op.targets,
                    op.before,
                    op.after,
                    op.reason,
                    op.selected,
                    op.applicable,
                    op.evidence,
                    op.score,
                    i,
                )
            )
        self.operations: tuple[Operation, ...] = tuple(numbered)
        # final id -> position in the list given (subclasses keep per-operation data by that position)
        self.origin: dict[str, int] = {op.id: k for op, k in zip(self.operations, order, strict=True)}
        self.notices: tuple[Notice, ...] = tuple(notices)
        self.subject = subject
        self.created_at = now_ms()
        self._by_id = {op.id: op for op in self.operations}

    # ---------------------------------------------------------------- operations

    def op(self, key: str | int) -> Operation:
        """The operation named by its id, a unique id prefix, or its number."""
        if isinstance(key, int) or (key.strip().isdigit() and len(key.strip()) < 6):
            number = int(key)
            if 1 <= number <= len(self.operations):
                return self.operations[number - 1]
            raise NotFound(f"the plan for {self.subject} has no operation {number} (it has {len(self.operations)})")
        key = key.strip().lower()
        if key in self._by_id:
            return self._by_id[key]
        matches = [op for op in self.operations if op.id.startswith(key)] if len(key) >= 4 else []
        if len(matches) == 1:
            return matches[0]
        raise NotFound(
            f"the plan for {self.subject} has no operation `{key}`; the content may have changed "
            "since it was listed: look at the plan again"
        )

    def default_selection(self) -> frozenset[str]:
        """The ids of the operations selected by default (the safe ones)."""
        return frozenset(op.id for op in self.operations if op.selected and op.applicable)

    def select(self, spec: str | Iterable[str | int] | None = None) -> frozenset[str]:
        """A selection from a spec.

        ``None`` or ``"safe"``: the default; ``"all"``: every applicable
        operation; ``"none"``; a comma-separated list of ids or numbers; or a
        named selection followed by ``+ID``/``-ID`` changes (``safe,+7,-a1b2``).
        An iterable gives the operations directly.
        """
        if spec is None:
            return self.default_selection()
        if not isinstance(spec, str):
            return self.normalise_selection(spec)
        chosen: set[str] = set()
        parts = [p.strip() for p in spec.split(",") if p.strip()]
        if not parts:
            raise InvalidInput("an empty selection; say safe, all, none, or operation numbers")
        for i, part in enumerate(parts):
            if part in SELECT_MODES:
                if i:
                    raise InvalidInput(f"`{part}` must come first in a selection such as `{part},+3,-4`")
                chosen = set(self._named(part))
            elif part[0] in "+-":
                op = self.op(part[1:])
                if part[0] == "+":
                    self._check_applicable(op)
                    chosen.add(op.id)
                else:
                    chosen.discard(op.id)
            else:
                op = self.op(part)
                self._check_applicable(op)
                chosen.add(op.id)
        return frozenset(chosen)

    def _named(self, mode: str) -> frozenset[str]:
        if mode == "safe":
            return self.default_selection()
        if mode == "all":
            return frozenset(op.id for op in self.operations if op.applicable)
        return frozenset()

    def _check_applicable(self, op: Operation) -> None:
        if not op.applicable:
            raise InvalidInput(f"operation {op.number} ({op.label}) is reported only and cannot be applied")

    def normalise_selection(self, selection: Iterable[str | int] | None) -> frozenset[str]:
        """Operation ids from ids, numbers or Operations; None is the default selection."""
        if selection is None:
            return self.default_selection()
        if isinstance(selection, str):
            return self.select(selection)
        out = set()
        for item in selection:
            op = item if isinstance(item, Operation) else self.op(item)
            if op.id not in self._by_id:
                raise NotFound(f"operation {op.id} is not part of the plan for {self.subject}")
            self._check_applicable(op)
            out.add(op.id)
        return frozenset(out)

    def selected(self, selection: Selection = None) -> tuple[Operation, ...]:
        """The operations of a selection, in plan order."""
        ids = self.normalise_selection(selection)
        return tuple(op for op in self.operations if op.id in ids)

    def groups(self) -> list[OperationGroup]:
        """The operations grouped by kind, in the order plans list kinds."""
        grouped: dict[str, list[Operation]] = defaultdict(list)
        for op in self.operations:
            grouped[op.kind].append(op)
        return [OperationGroup(kind, kind_label(kind), tuple(ops)) for kind, ops in grouped.items()]

    # ---------------------------------------------------------------- what subclasses provide

    @abstractmethod
    def counts(self, selection: Selection = None) -> Counts:
        """Before → after → target for a selection."""

    @abstractmethod
    def render(self, selection: Selection = None, context: int = 3) -> str:
        """The whole result of a selection: a unified diff, or a table for a bank."""

    def render_operation(self, key: str | int, context: int = 3) -> str:
        """What one operation alone changes."""
        return self.render([self.op(key).id], context)

    @abstractmethod
    def check_fresh(self) -> None:
        """Raise :class:`StalePlan` (with a re-plan) when what the plan was computed from changed."""

    def is_stale(self) -> bool:
        """True when the plan could no longer be applied as it is."""
        try:
            self.check_fresh()
        except StalePlan:
            return True
        return False

    @abstractmethod
    def replan(self) -> Plan:
        """The same kind of plan, with the same settings, computed from what is there now."""

    @abstractmethod
    def apply(self, selection: Selection = None) -> Applied:
        """Write the selected operations (after the freshness check); returns how to undo it."""

    def stale(self, what: str) -> StalePlan:
        """The StalePlan error for this plan, with a re-plan attached when one can be made."""
        try:
            replanned = self.replan()
        except KeepguiError:
            replanned = None
        return StalePlan(self.subject, what, replanned)

    # ---------------------------------------------------------------- output

    def describe(self) -> str:
        """What the plan found, in the backend's own words ("3 memories deleted, index shortened"),
        or "" to let the window count its operations by kind."""
        return ""

    def summary(self, selection: Selection = None) -> str:
        """One line: how many operations are selected and the counts."""
        ids = self.normalise_selection(selection)
        return (
            f"{self.subject}: {len(ids)} of {len(self.operations)} operations selected · {self.counts(ids).describe()}"
        )

    def to_obj(self, selection: Selection = None, *, diff: bool = True) -> dict[str, Any]:
        """The plan for ``--json``: operations, the selection, counts, notices and the rendering."""
        ids = self.normalise_selection(selection)
        obj = {
            "kind": self.kind,
            "subject": self.subject,
            "created_at": self.created_at,
            "operations": [op.to_obj() for op in self.operations],
            "selection": [op.id for op in self.operations if op.id in ids],
            "counts": self.counts(ids).to_obj(),
            "notices": [n.to_obj() for n in self.notices],
        }
        if diff:
            obj["diff"] = self.render(ids)
        return obj


# ---------------------------------------------------------------------- applying and undoing


class Applied(ABC):
    """What an apply wrote, and how to take it back (an undo command for the window).

    ``description`` is a short text for an undo menu; ``lines`` say what changed;
    ``changed`` is False when the selection changed nothing (nothing written).
    ``undo()`` puts back exactly what was there before and ``redo()`` writes the
    change again; each refuses (:class:`~keepgui.core.errors.Conflict`) when the
    target changed since, so nobody's later edit is ever overwritten.
    ``to_obj()`` is JSON that :func:`load_applied` turns back into a working
    object in another process (the command line's ``--undo``).
    """

    kind = "applied"

    def __init__(self, description: str, lines: Iterable[str], changed: bool, target: str) -> None:
        self.description = description
        self.lines = tuple(lines)
        self.changed = changed
        self.target = target
        self.state = "applied"
        self.at = now_ms()

    @property
    def can_undo(self) -> bool:
        """True while it is applied (undo may still refuse if the target changed since)."""
        return self.changed and self.state == "applied"

    @property
    def can_redo(self) -> bool:
        """True once it was undone."""
        return self.changed and self.state == "undone"

    def undo(self) -> None:
        """Put back what was there before the apply; Conflict when the target changed since."""
        if not self.can_undo:
            raise InvalidInput(f"nothing to undo: {self.description} is {self.state}")
        self._undo()
        self.state = "undone"

    def redo(self) -> None:
        """Write the change again after an undo; Conflict when the target changed since."""
        if not self.can_redo:
            raise InvalidInput(f"nothing to redo: {self.description} is {self.state}")
        self._redo()
        self.state = "applied"

    @abstractmethod
    def _undo(self) -> None:
        """Put the target back as it was before the apply (raise Conflict if it changed since)."""

    @abstractmethod
    def _redo(self) -> None:
        """Write the change again (raise Conflict if the target changed since the undo)."""

    def to_obj(self) -> dict[str, Any]:
        """The serialisable form (subclasses add what undo needs)."""
        return {
            "kind": self.kind,
            "description": self.description,
            "lines": list(self.lines),
            "changed": self.changed,
            "target": self.target,
            "state": self.state,
            "at": self.at,
        }


_LOADERS: dict[str, Callable[[dict[str, Any], History], Applied]] = {}


def register_applied_kind(kind: str, loader: Callable[[dict[str, Any], History], Applied]) -> None:
    """Make :func:`load_applied` able to rebuild applied compactions of ``kind``."""
    _LOADERS[kind] = loader


def load_applied(obj: dict[str, Any], history: History | None = None) -> Applied:
    """Rebuild an :class:`Applied` from its ``to_obj()`` (the module defining its kind must be imported)."""
    loader = _LOADERS.get(obj.get("kind", ""))
    if loader is None:
        raise InvalidInput(f"keepgui cannot undo a compaction of kind {obj.get('kind')!r}")
    return loader(obj, history if history is not None else History())


class UndoJournal(Journal):
    """The compactions applied from the command line, so a later ``--undo`` can take one back.

    One JSON line per event in ``<history root>/compactions.jsonl``: ``applied``
    (with the Applied's ``to_obj()``), ``undone``. ``last(target)`` is the most
    recent compaction of a target that was not undone yet, so repeated undos
    walk back one compaction at a time. A ``scope`` given with an entry names
    what it was applied to as the command line chose it (a source's bank and the
    plan's kind): ``last(scope=...)`` finds it by that.
    """

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "compactions.jsonl")

    def record(self, applied: Applied, scope: str = "") -> str:
        """Remember an applied compaction; returns its journal id."""
        entry_id = hashlib.sha256(f"{applied.target}{applied.at}{os.getpid()}{now_ms()}".encode()).hexdigest()[:12]
        entry = {
            "event": "applied",
            "id": entry_id,
            "target": applied.target,
            "at": now_ms(),
            "applied": applied.to_obj(),
        }
        self._append({**entry, "scope": scope} if scope else entry)
        return entry_id

    def mark_undone(self, entry_id: str) -> None:
        """Remember that a journal entry was undone."""
        self._append({"event": "undone", "id": entry_id, "at": now_ms()})

    def entries(self) -> list[dict[str, Any]]:
        """Applied entries not undone, oldest first (unreadable lines are skipped)."""
        return self.standing("applied", "undone", lambda obj: obj if isinstance(obj.get("applied"), dict) else None)

    def last(self, target: str = "", *, scope: str = "") -> dict[str, Any] | None:
        """The latest applied, not undone, compaction of ``target`` (or recorded with ``scope``), or None."""
        found = [e for e in self.entries() if (e.get("scope") == scope if scope else e.get("target") == target)]
        return found[-1] if found else None


# ---------------------------------------------------------------------- rendering helpers


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain text table with aligned columns (the last column is not padded)."""
    if not rows:
        return ""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers) - 1)]
    lines = []
    for row in [headers, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)] + [str(row[-1])]  # last: unpadded
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * max(len(str(headers[-1])), 4))
    return "\n".join(lines) + "\n"


def excerpt(text: str, limit: int = 70) -> str:
    """``text`` on one line, cut with an ellipsis past ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def words_only_in(dropped: str, kept: str) -> list[str]:
    """Words of ``dropped`` that ``kept`` lacks (what a merge would lose), in order, without repeats."""
    have = set(default_process(kept).split())
    out: list[str] = []
    for word in default_process(dropped).split():
        if word not in have and word not in out:
            out.append(word)
    return out


# ---------------------------------------------------------------------- near-duplicate search

WITHIN, AROUND, ALIKE = "within", "around", "alike"
"""How a near-duplicate relates to a text: every word of the text is in it; the text has every word
of it; neither (the two read alike)."""


@dataclass(frozen=True)
class Likeness:
    """How a near-duplicate relates to a text, in terms a person reads right.

    Near-duplicates are found with rapidfuzz's ``token_set_ratio``, which scores 100 for "Prefers
    tea" against "Prefers green tea" (one's words are a subset of the other's): shown as a
    percentage that reads "identical". So what is shown is the ``relation`` (:data:`WITHIN`,
    :data:`AROUND`, :data:`ALIKE`) and, for two that merely read alike, ``percent``: the edit
    similarity of the two with their words sorted (``token_sort_ratio``).
    """

    relation: str
    percent: float

    def describe(self, other: str) -> str:
        """The relation in words; ``other`` names the near-duplicate ("entry 12 `Prefers green tea`")."""
        if self.relation == WITHIN:
            return f"every word of it is in {other}"
        if self.relation == AROUND:
            return f"it has every word of {other}"
        return f"{other} reads {self.percent:.0f}% alike"

    def describe_pair(self, text: str, other: str) -> str:
        """The relation of the two in words, both named ("every word of `a` is in `b`")."""
        if self.relation == WITHIN:
            return f"every word of {text} is in {other}"
        if self.relation == AROUND:
            return f"{text} has every word of {other}"
        return f"{text} and {other} read {self.percent:.0f}% alike"


def likeness(text: str, other: str) -> Likeness:
    """How ``other`` (a near-duplicate) relates to ``text``."""
    words, theirs = set(default_process(text).split()), set(default_process(other).split())
    relation = WITHIN if words and words <= theirs else AROUND if theirs and theirs <= words else ALIKE
    return Likeness(relation, fuzz.token_sort_ratio(text, other, processor=default_process))


def _token_char(rank: int) -> str:
    # one character per distinct word, above ASCII and past the surrogate block
    code = 0x100 + rank
    if code >= 0xD800:
        code += 0x800
    return chr(code)


def near_duplicates(
    texts: Sequence[str],
    threshold: float = 85.0,
    *,
    progress: Callable[[int, int], None] | None = None,
    letters: bool = True,
) -> list[tuple[int, int, float]]:
    """Every pair ``(i, j, score)``, ``i < j``, with ``fuzz.token_set_ratio(texts[i], texts[j],
    processor=default_process) >= threshold`` — exactly what a pairwise loop finds, much faster.

    ``token_set_ratio`` is the best of three ratios: the shared words against
    either text (``R_ab``, ``R_ba``, 100 when one text's words are a subset of
    the other's) and the two texts' words in sorted order (``R_diff``). Each has
    an exact necessary condition that is cheap to test in batch:

    * ``R_ab >= t`` needs the shared words to weigh (characters + 1 each) at
      least ``(t·W + 2(1 − t)) / (2 − t)`` of text *a*'s weight ``W``. Prefix
      filtering over words ordered rarest first gives the candidates (a text
      that shares none of *a*'s rarest words cannot reach that overlap), and
      one rapidfuzz batch call (``process.extract`` with ``LCSseq.similarity``
      on words encoded as runs of one character) measures the overlap of all
      of them at once.
    * ``R_diff`` is at most the ratio of the two texts' *sorted characters*
      (the LCS of two sorted strings is their common multiset), so a batch
      ``fuzz.ratio`` over sorted-character strings, within the length window a
      ratio allows, finds every pair it could come from.

    Candidates from both are then scored with ``token_set_ratio`` itself, so the
    result is exact. ``progress(done, total)`` is called as texts are processed
    and may raise to abandon the search.

    The first search costs about linear time (rare words have short posting
    lists); the second compares every text with all those of a similar length,
    which grows with the square of the count. ``letters=False`` leaves it out:
    pairs whose score comes only from similar letters in *different* words
    (a typo in every word) are then not looked for, every other pair still is.
    """
    if threshold > 100:
        return []
    processed = [default_process(t) for t in texts]
    words = [sorted(set(p.split())) for p in processed]
    live = [i for i, w in enumerate(words) if w]  # token_set_ratio is 0 for a text without words
    total = 2 * len(live)
    if threshold <= 0:
        return [
            (i, j, fuzz.token_set_ratio(processed[i], processed[j])) for a, i in enumerate(live) for j in live[a + 1 :]
        ]
    tau = threshold / 100.0
    candidates: dict[int, set[int]] = defaultdict(set)
    _shared_word_candidates(words, live, tau, candidates, progress, total)
    if letters:
        _sorted_letter_candidates(words, live, threshold, candidates, progress, total)
    out = _exact_scores(processed, candidates, threshold)
    if progress is not None:
        progress(total, total)
    out.sort()
    return out


Progress = Callable[[int, int], None] | None
"""A search's ``progress(done, total)`` callback, or None."""


def _shared_word_candidates(
    words: list[list[str]],
    live: list[int],
    tau: float,
    candidates: dict[int, set[int]],
    progress: Progress,
    total: int,
) -> None:
    """Add to ``candidates`` every pair whose shared-words ratios may reach ``tau``: a prefix filter over
    words ordered rarest first, then one batch overlap measurement per text (see :func:`near_duplicates`)."""
    df = Counter(w for i in live for w in words[i])
    rank = {w: r for r, w in enumerate(sorted(df, key=lambda w: (df[w], w)))}
    postings: dict[str, list[int]] = defaultdict(list)
    encoded = [""] * len(words)
    ordered_words: dict[int, list[str]] = {}
    for i in live:
        ordered = ordered_words[i] = sorted(words[i], key=rank.__getitem__)
        for w in ordered:
            postings[w].append(i)
        encoded[i] = "".join(_token_char(rank[w]) * (len(w) + 1) for w in ordered)
    for done, i in enumerate(live):
        ordered = ordered_words[i]
        weight = sum(len(w) + 1 for w in ordered)
        need = (tau * weight + 2 * (1 - tau)) / (2 - tau)
        remaining, prefix = weight, []
        for w in ordered:
            if remaining < need - 1e-9:
                break
            prefix.append(postings[w])
            remaining -= len(w) + 1
        near = set().union(*prefix)
        near.discard(i)
        if near:
            others = list(near)
            choices = [encoded[others[0]]] if len(others) == 1 else itemgetter(*others)(encoded)
            hits = process.extract(
                encoded[i],
                choices,
                scorer=LCSseq.similarity,
                processor=None,
                score_cutoff=max(1, math.ceil(need - 1e-6)),
                limit=None,
            )
            for _choice, _overlap, k in hits:
                j = others[k]
                candidates[min(i, j)].add(max(i, j))
        if progress is not None and done % 256 == 0:
            progress(done, total)


def _sorted_letter_candidates(
    words: list[list[str]],
    live: list[int],
    threshold: float,
    candidates: dict[int, set[int]],
    progress: Progress,
    total: int,
) -> None:
    """Add to ``candidates`` every pair whose sorted-words ratio may reach ``threshold``: it is bounded by
    the ratio of the texts' sorted characters, compared within the length window a ratio allows."""
    tau = threshold / 100.0
    joined = {i: " ".join(words[i]) for i in live}
    alphabet = sorted(set().union(*(set(t) for t in joined.values()))) if live else []
    if len(alphabet) <= 256:
        # one byte per distinct character: the same LCS, and rapidfuzz compares bytes ~12% faster
        code = {ch: bytes([k]) for k, ch in enumerate(alphabet)}
        bags: dict[int, bytes | str] = {i: b"".join(sorted(code[ch] for ch in t)) for i, t in joined.items()}
    else:
        bags = {i: "".join(sorted(t)) for i, t in joined.items()}
    order = sorted(joined, key=lambda i: (len(bags[i]), i))
    lengths = [len(bags[i]) for i in order]
    sorted_bags = [bags[i] for i in order]
    low = tau / (2 - tau)  # 2·min/(x+y) >= t  <=>  min/max >= t/(2-t)
    for pos, i in enumerate(order):
        end = bisect.bisect_right(lengths, math.floor(lengths[pos] / low + 1e-9))
        if end > pos + 1:
            close = process.extract(
                sorted_bags[pos],
                sorted_bags[pos + 1 : end],
                scorer=fuzz.ratio,
                processor=None,
                score_cutoff=threshold - 1e-6,
                limit=None,
            )
            for _choice, _score, k in close:
                j = order[pos + 1 + k]
                candidates[min(i, j)].add(max(i, j))
        if progress is not None and pos % 256 == 0:
            progress(len(live) + pos, total)


def _exact_scores(
    processed: list[str], candidates: dict[int, set[int]], threshold: float
) -> list[tuple[int, int, float]]:
    """The candidates scored with ``token_set_ratio`` itself, one batch call per text; those that reach
    ``threshold``."""
    out: list[tuple[int, int, float]] = []
    for i in sorted(candidates):
        others = sorted(candidates[i])
        for _choice, score, k in process.extract(
            processed[i],
            [processed[j] for j in others],
            scorer=fuzz.token_set_ratio,
            processor=None,
            score_cutoff=threshold,
            limit=None,
        ):
            out.append((i, others[k], score))
    return out


def near_duplicates_pairwise(texts: Sequence[str], threshold: float = 85.0) -> list[tuple[int, int, float]]:
    """The plain pairwise loop :func:`near_duplicates` is equivalent to (for tests and the benchmark)."""
    processed = [default_process(t) for t in texts]
    out = []
    for i in range(len(processed)):
        a = processed[i]
        if not a.split():
            continue
        for j in range(i + 1, len(processed)):
            if not processed[j].split():
                continue
            score = fuzz.token_set_ratio(a, processed[j])
            if score >= threshold:
                out.append((i, j, score))
    return out
