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

The modules, from the bottom up:

* ``dates`` — entry stamps and dates inside a fact;
* ``edits`` — a document's items, the line edits of an operation, composing them;
* ``accepted`` — the review log: what a person accepted, where a review starts;
* ``undo`` — an apply as the bytes it replaced, undone and redone after a restart;
* ``plan`` — :class:`DocPlan`, the plan of one document: render, check, apply;
* ``operations`` — the keep.md planner, one small function per operation kind, in a table;
* ``keep`` — :func:`plan_keep` and its notices;
* ``compare`` — two versions compared item by item;
* ``rewrite`` — ``--via``: a command's proposal as a plan;
* ``review`` — a rewrite made elsewhere as restore operations.
"""

from __future__ import annotations

from keepgui.backends.nanobot.compact.accepted import (
    WRITTEN_SOURCES,
    Acceptance,
    ReviewLog,
    pending_review,
)
from keepgui.backends.nanobot.compact.compare import REVIEW_THRESHOLD, Change, Comparison, compare
from keepgui.backends.nanobot.compact.dates import has_date, strip_dates, strip_stamps
from keepgui.backends.nanobot.compact.edits import Edit, Item, compose, items_of
from keepgui.backends.nanobot.compact.keep import LETTER_SEARCH_ENTRIES, KeepPlan, plan_keep
from keepgui.backends.nanobot.compact.operations import PLANNER_KINDS, STEPS, Statement, statements
from keepgui.backends.nanobot.compact.plan import DocPlan
from keepgui.backends.nanobot.compact.review import USUAL_RANGE, ReviewPlan, review
from keepgui.backends.nanobot.compact.rewrite import VIA_TIMEOUT, RewritePlan, plan_from_text, rewrite_via, run_command
from keepgui.backends.nanobot.compact.undo import FileApplied, FileChange

# keep.md's word-boundary containment test, which the plans rely on (a test counts its calls through here)
from keepgui.backends.nanobot.keepmd import contains
from keepgui.core.compaction import StalePlan

__all__ = [
    "LETTER_SEARCH_ENTRIES",
    "PLANNER_KINDS",
    "REVIEW_THRESHOLD",
    "STEPS",
    "USUAL_RANGE",
    "VIA_TIMEOUT",
    "WRITTEN_SOURCES",
    "Acceptance",
    "Change",
    "Comparison",
    "DocPlan",
    "Edit",
    "FileApplied",
    "FileChange",
    "Item",
    "KeepPlan",
    "ReviewLog",
    "ReviewPlan",
    "RewritePlan",
    "StalePlan",
    "Statement",
    "compare",
    "compose",
    "contains",
    "has_date",
    "items_of",
    "pending_review",
    "plan_from_text",
    "plan_keep",
    "review",
    "rewrite_via",
    "run_command",
    "statements",
    "strip_dates",
    "strip_stamps",
]
