"""Comparing two versions of a document item by item: removed, deduplicated, merged, reworded, new.

A review (the version keepgui saw → the file now) and a ``--via`` rewrite (the
file now → the proposal) both read a :class:`Comparison`; each change then
becomes an operation, one that restores it or one that makes it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from keepgui.backends.nanobot.compact.edits import Item, items_of
from keepgui.backends.nanobot.keepmd import KeepDoc, contains

REVIEW_THRESHOLD = 75.0
"""``token_set_ratio`` from which a changed line counts as a rewording (or a merge) of a removed one.

Lower than the near-duplicate threshold: a compaction rewords freely
("Drinks green tea, never coffee after 14:00" → "Green tea; no coffee after
14:00" scores about 80), and pairing a rewording with its original is what
lets the review offer "restore the original wording" instead of showing a
removal plus a new fact.
"""


@dataclass(frozen=True)
class Change:
    """One difference between an earlier and a later version of a document.

    ``kind``: ``removed`` (nothing later says it), ``deduplicated`` (an equal
    or containing line still says it: ``cover``), ``merged`` (several earlier
    items became one later item, or one was folded into a line that was already
    there: ``into_existing``), ``reworded`` (one became one), ``new``.
    """

    kind: str
    old: tuple[Item, ...] = ()
    new: tuple[Item, ...] = ()
    cover: Item | None = None
    score: float | None = None
    into_existing: bool = False


@dataclass
class Comparison:
    """The changes between two versions, and which later item stands where an earlier one stood."""

    changes: list[Change]
    old_items: list[Item]
    new_items: list[Item]
    unchanged: dict[int, int] = field(default_factory=dict)  # old position -> new position


def compare(
    old_doc: KeepDoc, new_doc: KeepDoc, threshold: float = REVIEW_THRESHOLD, *, new_prose: bool = True
) -> Comparison:
    """Describe the change from ``old_doc`` to ``new_doc`` item by item.

    Equal items (after normalising) pair up first, in order; then each
    remaining earlier item goes to the remaining later item it resembles most
    (``token_set_ratio`` ≥ ``threshold``): two or more earlier items on one
    later item are a merge, one is a rewording, none makes the later item new.
    An earlier item left over is a duplicate when a later line contains it, a
    merge into an unchanged line it resembles, else removed.
    """
    old_items = items_of(old_doc)
    new_items = items_of(new_doc, prose=new_prose)
    by_key: dict[str, list[Item]] = defaultdict(list)
    for item in new_items:
        by_key[item.key].append(item)
    unchanged: dict[int, int] = {}
    used_new: set[int] = set()
    rest_old: list[Item] = []
    for item in old_items:
        pool = by_key.get(item.key)
        if pool:
            match = pool.pop(0)
            unchanged[item.position] = match.position
            used_new.add(match.position)
        else:
            rest_old.append(item)
    rest_new = [i for i in new_items if i.position not in used_new]
    assigned: dict[int, list[tuple[Item, float]]] = defaultdict(list)
    leftover: list[Item] = []
    new_keys = [i.key for i in rest_new]
    for item in rest_old:
        best = (
            process.extractOne(
                item.key, new_keys, scorer=fuzz.token_set_ratio, processor=default_process, score_cutoff=threshold
            )
            if new_keys
            else None
        )
        if best is None:
            leftover.append(item)
        else:
            assigned[best[2]].append((item, best[1]))
    changes: list[Change] = []
    for k, item in enumerate(rest_new):
        olds = assigned.get(k, [])
        if not olds:
            changes.append(Change("new", (), (item,)))
        elif len(olds) == 1:
            changes.append(Change("reworded", (olds[0][0],), (item,), score=olds[0][1]))
        else:
            olds.sort(key=lambda p: p[0].position)
            changes.append(Change("merged", tuple(o for o, _s in olds), (item,), score=min(s for _o, s in olds)))
    kept = [new_items[p] for p in unchanged.values()]
    kept_keys = [i.key for i in kept]
    for item in leftover:
        cover = next((i for i in new_items if contains(i.key, item.key)), None)  # an equal copy counts
        if cover is not None:
            changes.append(Change("deduplicated", (item,), (), cover))
            continue
        best = (
            process.extractOne(
                item.key, kept_keys, scorer=fuzz.token_set_ratio, processor=default_process, score_cutoff=threshold
            )
            if kept_keys
            else None
        )
        if best is not None:
            changes.append(Change("merged", (item,), (kept[best[2]],), score=best[1], into_existing=True))
        else:
            changes.append(Change("removed", (item,)))
    changes.sort(key=lambda c: c.old[0].position if c.old else len(old_items) + c.new[0].position)
    return Comparison(changes, old_items, new_items, unchanged)


def insert_point(order: int, mapped: dict[int, int], lines_of: dict[int, int], total: int, end: int) -> tuple[int, int]:
    """Where an item at ``order`` in its version goes in the other file: after the line of the nearest
    earlier item that is there, else before the line of the nearest later one, else at the end."""
    for k in range(order - 1, -1, -1):
        if k in mapped:
            return lines_of[mapped[k]], 1
    for k in range(order + 1, total):
        if k in mapped:
            return lines_of[mapped[k]], -1
    return end, 1
