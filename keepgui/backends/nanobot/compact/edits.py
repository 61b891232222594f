"""The items of a document and the line edits of an operation, composed into the file's new bytes.

Every operation of every plan here (a compaction, a ``--via`` rewrite, a review)
is an :class:`Edit` of the current file; :func:`compose` applies any set of them
together, so the diff rendered for a selection is exactly what applying it writes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from keepgui.backends.nanobot.keepmd import BOM, KeepDoc, entry_id, normalise
from keepgui.core.compaction import Operation, excerpt, make_operation


@dataclass(frozen=True)
class Item:
    """A fact-bearing line of a document: a bullet entry, or a prose line (not a heading or blank).

    ``index``: its 0-based physical line; ``text``: the fact; ``raw``: the line as
    written; ``key``: :func:`normalise` d text; ``id``: stable as keep.md entry ids
    are; ``position``: its 0-based rank among the items.
    """

    id: str
    position: int
    index: int
    text: str
    raw: str
    key: str

    def quote(self) -> str:
        """``line 12 `text```, for reasons and evidence."""
        return f"line {self.index + 1} `{excerpt(self.text, 60)}`"


def items_of(doc: KeepDoc, *, prose: bool = True) -> list[Item]:
    """The fact-bearing lines of ``doc``; ``prose=False`` keeps bullet entries only."""
    seen: Counter[str] = Counter()
    out: list[Item] = []
    for line in doc.lines:
        if line.kind == "entry":
            text = line.entry_text or ""
        elif line.kind == "other" and prose:
            text = line.text.strip()
        else:
            continue
        key = normalise(text)
        if not key:
            continue
        seen[key] += 1
        out.append(Item(entry_id(key, seen[key]), len(out), line.index, text, line.text, key))
    return out


@dataclass(frozen=True)
class Edit:
    """The line edits of one operation on the current file.

    ``drops``: physical lines removed; ``rewrites``: ``(line, new text)``;
    ``inserts``: ``(anchor line, side, order, text)`` — ``side`` -1 puts the
    text before the anchor, +1 after it; anchor -1 means the end of the file;
    ``order`` keeps several inserts at one place in their original order;
    ``agents``: lines appended to AGENTS.md; ``removes``: the items taken out
    of the file (logged as removed entries so each can be restored alone).
    """

    drops: tuple[int, ...] = ()
    rewrites: tuple[tuple[int, str], ...] = ()
    inserts: tuple[tuple[int, int, float, str], ...] = ()
    agents: tuple[str, ...] = ()
    removes: tuple[Item, ...] = ()


def compose(doc: KeepDoc, edits: Iterable[Edit]) -> bytes:
    """The bytes of ``doc`` with ``edits`` applied together (see the module doc).

    A dropped line stays dropped even if another edit rewrites it; two
    different rewrites of one line are a planner bug (ValueError). Lines
    keep their own endings; new lines take the file's usual one; a file that
    had no final newline still has none, one that had one keeps it.
    """
    drops: set[int] = set()
    rewrites: dict[int, str] = {}
    before: dict[int, list[tuple[float, str]]] = defaultdict(list)
    after: dict[int, list[tuple[float, str]]] = defaultdict(list)
    end: list[tuple[float, str]] = []
    for edit in edits:
        drops.update(edit.drops)
        for index, text in edit.rewrites:
            if rewrites.get(index, text) != text:
                raise ValueError(f"two operations rewrite line {index + 1} differently")
            rewrites[index] = text
        for anchor, side, order, text in edit.inserts:
            (end if anchor < 0 else (before if side < 0 else after)[anchor]).append((order, text))
    newline = doc.newline
    out: list[list[str]] = []
    for line in doc.lines:
        out.extend([text, newline] for _order, text in sorted(before.get(line.index, ())))
        if line.index not in drops:
            out.append([rewrites.get(line.index, line.text), line.ending])
        out.extend([text, newline] for _order, text in sorted(after.get(line.index, ())))
    out.extend([text, newline] for _order, text in sorted(end))
    for item in out[:-1]:
        if not item[1]:
            item[1] = newline
    if out:
        out[-1][1] = (out[-1][1] or newline) if doc.has_final_newline else ""
    body = "".join(text + ending for text, ending in out).encode("utf-8")
    return BOM + body if doc.bom else body


def decode(data: bytes | None) -> str:
    """A file's text for diffs and display ("" for a missing or empty file; a BOM left out)."""
    if not data:
        return ""
    return data.decode("utf-8-sig", errors="replace")


def end_anchor(doc: KeepDoc) -> int:
    """Where an entry added "at the end" goes: after the last non-blank line (-1: the very end)."""
    for line in reversed(doc.lines):
        if line.kind != "blank":
            return line.index
    return -1


def operation(
    kind: str,
    items: Sequence[Item],
    after: Sequence[str],
    reason: str,
    edit: Edit,
    *,
    selected: bool,
    evidence: Iterable[str] = (),
    score: float | None = None,
    before: Sequence[str] | None = None,
) -> tuple[Operation, Edit]:
    """An operation on ``items`` (``before`` defaults to their texts) with its line edit."""
    before = [i.text for i in items] if before is None else before
    return (
        make_operation(
            kind, [i.id for i in items], before, after, reason, selected=selected, evidence=evidence, score=score
        ),
        edit,
    )


def drop(item: Item) -> Edit:
    """The edit that takes ``item`` out of the file (logged as a removed entry)."""
    return Edit(drops=(item.index,), removes=(item,))
