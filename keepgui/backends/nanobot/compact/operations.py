"""keepgui's own compaction of keep.md: one small function per kind of operation, run in the order of a table.

Each step of :data:`STEPS` looks at the entries and adds the operations of its
kind to a :class:`Planning`, the state the steps share. An entry is taken out
by at most one operation: a step *claims* it. Safe operations (selected by
default) claim first, in the table's order; judgement calls wait until every
safe operation has claimed its entries — those about a specific contradiction
(a negation) claim theirs before the near-duplicates are searched among what is
left, the looser ones (fuzzy matches elsewhere, misplaced entries) after. Every
step looks entries up in an index (containment, statements elsewhere,
near-duplicates), so a plan costs about linear time in the number of entries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from keepgui.backends.nanobot.compact.dates import strip_dates, strip_stamps
from keepgui.backends.nanobot.compact.edits import Edit, Item, drop, items_of, operation
from keepgui.backends.nanobot.keepmd import ContainmentIndex, KeepDoc, canonical_line
from keepgui.backends.nanobot.triage import AGENTS, NOTE, PROJECT, REMIND, Triage, triage
from keepgui.backends.nanobot.writes import line_key
from keepgui.core.compaction import (
    Operation,
    likeness,
    make_operation,
    near_duplicates,
    register_kinds,
    words_only_in,
)

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

_MIN_STATED_WORDS = 3

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


Planned = tuple[Operation, Edit]
"""An operation with the line edit that makes it."""

Deferred = tuple[Operation, Edit, Item]
"""A judgement call waiting to claim its entry."""


@dataclass
class Planning:
    """What the steps of one plan share: the document, what else the planner knows, and what is taken.

    ``texts``: MEMORY.md, USER.md and AGENTS.md by name; ``items``: keep.md's
    entries; ``representatives``: one entry per distinct text, in file order
    (set by :func:`exact_duplicates`); ``dropped``: the entries (by position)
    some operation already takes out, ``safely``: those a safe operation takes
    out; ``judgement`` and ``looser``: the judgement calls waiting to claim
    their entries (see the module doc).
    """

    doc: KeepDoc
    texts: dict[str, str]
    projects: list[str]
    threshold: float
    agents_writable: bool = True
    letters: bool = True
    items: list[Item] = field(init=False)
    planned: list[Planned] = field(default_factory=list)
    dropped: set[int] = field(default_factory=set)
    safely: set[int] = field(default_factory=set)
    representatives: list[Item] = field(default_factory=list)
    judgement: list[Deferred] = field(default_factory=list)
    looser: list[Deferred] = field(default_factory=list)
    verdicts: dict[int, Triage] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.items = items_of(self.doc, prose=False)

    def claim(self, item: Item, safe: bool = True) -> bool:
        """Mark ``item`` as taken out by an operation; False when another one already takes it."""
        if item.position in self.dropped:
            return False
        self.dropped.add(item.position)
        if safe:
            self.safely.add(item.position)
        return True

    def settle(self, waiting: list[Deferred]) -> None:
        """Add the judgement calls ``waiting``, each entry in at most one, none where one is already taken."""
        for op, edit, item in waiting:
            if self.claim(item, safe=False):
                self.planned.append((op, edit))

    def verdict(self, item: Item) -> Triage:
        """Where the keep skill's triage files ``item`` (computed once per entry)."""
        found = self.verdicts.get(item.position)
        if found is None:
            found = self.verdicts[item.position] = triage(item.text, self.projects)
        return found


def blank_lines(p: Planning) -> None:
    """Blank lines: no fact, only height (safe, one operation for them all)."""
    blanks = [line for line in p.doc.lines if line.kind == "blank"]
    if blanks:
        p.planned.append(
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


def exact_duplicates(p: Planning) -> None:
    """Exact duplicates after normalising: the first canonical copy stays (safe).

    Sets :attr:`Planning.representatives`, the copies that stay, which the later steps look at.
    """
    groups: dict[str, list[Item]] = defaultdict(list)
    for item in p.items:
        groups[item.key].append(item)
    representative: dict[str, Item] = {}
    for key, group in groups.items():
        keep = next((i for i in group if p.doc.lines[i.index].issue is None), group[0])
        representative[key] = keep
        if len(group) < 2:
            continue
        others = [i for i in group if i is not keep]
        for other in others:
            p.claim(other)
        lines = ", ".join(str(i.index + 1) for i in group)
        p.planned.append(
            operation(
                "duplicate",
                [keep, *others],
                [keep.text],
                f"the same fact {len(group)} times (lines {lines}) once case, spacing, bullets and a "
                f"final period are ignored; line {keep.index + 1} stays",
                Edit(drops=tuple(o.index for o in others), removes=tuple(others)),
                selected=True,
            )
        )
    p.representatives = sorted(representative.values(), key=lambda i: i.position)


def contained(p: Planning) -> None:
    """An entry contained, at word boundaries, in a more specific one: the more specific entry stays
    (safe), unless the longer one adds a negation ("eats meat" / "never eats meat": a judgement call).

    The index finds the containers without trying every pair.
    """
    reps = p.representatives
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
            p.judgement.append(
                (
                    *operation(
                        "contained",
                        [small, big],
                        [big.text],
                        f"{big.quote()} contains it but adds a negation: they may contradict each other, "
                        "so this is for you to decide",
                        drop(small),
                        selected=False,
                    ),
                    small,
                )
            )
            continue
        if p.claim(small):
            p.planned.append(
                operation(
                    "contained",
                    [small, big],
                    [big.text],
                    f"{big.quote()} says the same and more; the more specific entry stays",
                    drop(small),
                    selected=True,
                )
            )


def stated_elsewhere(p: Planning) -> None:
    """An entry of at least three words already stated in MEMORY.md, USER.md or AGENTS.md (safe; the
    matching line is the evidence); with a negation around it, or only fuzzily alike in MEMORY.md or
    USER.md, a judgement call."""
    stated = {name: statements(name, text) for name, text in p.texts.items()}
    stated_lines = [s for name in ("MEMORY.md", "USER.md", "AGENTS.md") for s in stated.get(name, ())]
    stated_index = ContainmentIndex([s.key for s in stated_lines])
    fuzzy_lines = [
        s for name in ("MEMORY.md", "USER.md") for s in stated.get(name, ()) if len(s.key.split()) >= _MIN_STATED_WORDS
    ]
    fuzzy_keys = [s.key for s in fuzzy_lines]
    for item in p.representatives:
        if item.position in p.dropped or len(item.key.split()) < _MIN_STATED_WORDS:
            continue
        found = next((stated_lines[k] for k in stated_index.containing(item.key)), None)
        if found is not None:
            evidence = f"{found.file} line {found.line}: {found.text}"
            if _adds_negation(found.key, item.key):
                p.judgement.append(
                    (
                        *operation(
                            "stated-elsewhere",
                            [item],
                            [],
                            f"{found.file} line {found.line} holds it with a negation around it: check before dropping",
                            drop(item),
                            selected=False,
                            evidence=[evidence],
                        ),
                        item,
                    )
                )
            elif p.claim(item):
                p.planned.append(
                    operation(
                        "stated-elsewhere",
                        [item],
                        [],
                        f"already stated in {found.file} (line {found.line}); the agent reads that file too",
                        drop(item),
                        selected=True,
                        evidence=[evidence],
                    )
                )
            continue
        if fuzzy_keys:
            best = process.extractOne(
                item.key, fuzzy_keys, scorer=fuzz.token_set_ratio, processor=default_process, score_cutoff=p.threshold
            )
            if best is not None:
                line = fuzzy_lines[best[2]]
                p.looser.append(
                    (
                        *operation(
                            "stated-elsewhere",
                            [item],
                            [],
                            f"{line.file} line {line.line} says something very similar (similarity "
                            f"{best[1]:.0f}); a judgement call: compare the two",
                            drop(item),
                            selected=False,
                            score=best[1],
                            evidence=[f"{line.file} line {line.line}: {line.text}"],
                        ),
                        item,
                    )
                )


def move_to_agents(p: Planning) -> None:
    """Rules about how the agent works (the keep skill's triage) move to AGENTS.md word for word (safe),
    when keepgui can write AGENTS.md back exactly."""
    if not p.agents_writable:
        return
    for item in p.representatives:
        if item.position in p.dropped:
            continue
        verdict = p.verdict(item)
        if verdict.verdict == AGENTS and p.claim(item):
            p.planned.append(
                operation(
                    "move-to-agents",
                    [item],
                    [],
                    f"{verdict.reason}; it moves there word for word",
                    Edit(drops=(item.index,), agents=(f"- {item.text}",), removes=(item,)),
                    selected=True,
                    evidence=[f"AGENTS.md gets: - {item.text}"],
                )
            )


def misplaced(p: Planning) -> None:
    """Entries the triage sends to /note, /remind or a project (or to AGENTS.md when keepgui cannot
    write it): only offered, keepgui does not file them there."""
    for item in p.representatives:
        if item.position in p.dropped:
            continue
        verdict = p.verdict(item)
        if verdict.verdict in (AGENTS, NOTE, REMIND, PROJECT):
            p.looser.append(
                (
                    *operation(
                        "misplaced",
                        [item],
                        [],
                        f"{verdict.reason}; keepgui does not file it there: copy it first if you still need it",
                        drop(item),
                        selected=False,
                    ),
                    item,
                )
            )


def judgement_calls(p: Planning) -> None:
    """The judgement calls about a specific contradiction claim their entries, after every safe operation."""
    p.settle(p.judgement)


def near_duplicate_merges(p: Planning) -> None:
    """Near-duplicates (``token_set_ratio`` ≥ the threshold) among the entries nothing else takes out,
    proposed as a merge into the longer entry, with the words the merge would lose (a judgement call)."""
    rest = [i for i in p.items if i.position not in p.dropped]
    near: dict[int, dict[int, float]] = defaultdict(dict)
    for a, b, score in near_duplicates([i.key for i in rest], p.threshold, letters=p.letters):
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
            p.claim(item, safe=False)
        lost = [w for item in gone for w in words_only_in(item.text, keep.text)]
        lost = list(dict.fromkeys(lost))
        score = min(near[hub][k] for k in members)
        tail = f"; the merge would lose: {', '.join(lost)}" if lost else "; it holds every word of the others"
        # token_set_ratio's 100 for "Prefers tea" / "Prefers green tea" reads "identical": say how they relate
        relations = "; ".join(likeness(item.text, keep.text).describe_pair(item.quote(), keep.quote()) for item in gone)
        p.planned.append(
            operation(
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


def looser_matches(p: Planning) -> None:
    """The looser judgement calls (fuzzy matches elsewhere, misplaced entries) claim what is left."""
    p.settle(p.looser)


def headings(p: Planning) -> None:
    """Headings: keep.md is a flat list (the entries under one stay; a judgement call)."""
    for heading in p.doc.lines:
        if heading.kind == "heading":
            p.planned.append(
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


def undate(p: Planning) -> None:
    """Entry stamps reworded away (safe); dates inside a fact only offered. A rewrite of an entry some
    other operation drops is harmless: a dropped line stays dropped."""
    for item in p.items:
        if item.position in p.safely:
            continue
        clean = strip_stamps(item.text)
        if clean is not None:
            p.planned.append(
                operation(
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
            p.planned.append(
                operation(
                    "undate",
                    [item],
                    [clean],
                    "a date inside the fact: keep.md entries carry no dates, but this one may be the "
                    "fact itself, so it is for you to decide",
                    Edit(rewrites=((item.index, canonical_line(clean)),)),
                    selected=False,
                )
            )


STEPS: tuple[tuple[str, Callable[[Planning], None]], ...] = (
    ("blank", blank_lines),
    ("duplicate", exact_duplicates),
    ("contained", contained),
    ("stated-elsewhere", stated_elsewhere),
    ("move-to-agents", move_to_agents),
    ("misplaced", misplaced),
    ("(judgement calls claim their entries)", judgement_calls),
    ("near-duplicate", near_duplicate_merges),
    ("(looser judgement calls claim theirs)", looser_matches),
    ("heading", headings),
    ("undate", undate),
)
"""The steps of a keep.md plan, in the order they run: each names the operation kind it proposes (or,
in brackets, the point where waiting judgement calls claim their entries). The order is the planner's
policy: an earlier step's claim wins, and the plan lists operations by :data:`PLANNER_KINDS`, not by it."""


def plan_operations(
    doc: KeepDoc,
    texts: dict[str, str],
    projects: list[str],
    threshold: float,
    *,
    agents_writable: bool = True,
    letters: bool = True,
) -> list[Planned]:
    """Every operation of a keep.md plan (pure: the documents' texts are given), step by step of :data:`STEPS`."""
    planning = Planning(doc, texts, projects, threshold, agents_writable, letters)
    for _kind, step in STEPS:
        step(planning)
    return planning.planned
