"""The inbox: every change made by anything other than keepgui, across all sources, newest first (no Qt).

It is keepgui's review generalised across sources and written once against the protocol: the
changes come from :mod:`keepgui.core.journal` (every version of every memory file, keepgui's own
writes marked), the entries of each version from the bank that owns the file
(:meth:`~keepgui.core.source.Bank.entries_of`), the writes a revert makes from the same bank
(:meth:`~keepgui.core.source.Bank.write_file`), and the staged writes of agents that ask first from
:func:`keepgui.core.approvals.approvals_of`. A new backend feeds it with no code of its own here.

* :func:`items` lists the unreviewed changes and pending approvals, newest first;
* :func:`entry_changes` says entry by entry what a change added, removed, edited or merged;
* :func:`accept` marks changes reviewed, :func:`revert` takes a change (or one entry of it) back as
  keepgui's own write, merged with whatever the agent wrote after it, or refused with the reason;
  both return a :class:`~keepgui.core.source.Change` that undoes itself.
"""

from __future__ import annotations

import difflib
import hashlib
import operator
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from keepgui.core import fsio, pace
from keepgui.core.approvals import PendingWrite, approvals_of
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.journal import Entry, Journal, Tracked
from keepgui.core.source import Change, Written
from keepgui.core.textmerge import merge3

if TYPE_CHECKING:
    from keepgui.core.source import Bank, Source

SIMILAR = 0.6
"""How alike two entries' texts must be (difflib's ratio) for one to be the other edited."""
_PAIRING_LIMIT = 40_000
"""Above this many (removed × added) pairs, entries are not paired as edits (each is added or removed)."""


@dataclass(frozen=True)
class EntryChange:
    """What a change did to entries: ``kind`` is ``added``, ``removed``, ``edited`` or ``merged``;
    ``before`` the texts it took away, ``after`` the texts it put in their place."""

    kind: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    key: str = ""

    def to_obj(self, number: int) -> dict[str, Any]:
        """For ``--json``: ``{n, kind, before, after}``."""
        return {"n": number, "kind": self.kind, "before": list(self.before), "after": list(self.after)}

    def describe(self) -> str:
        """One line for a person (each text's first line, shortened)."""
        before, after = [_short(t) for t in self.before], [_short(t) for t in self.after]
        if self.kind == "added":
            return f"+ {after[0]}"
        if self.kind == "removed":
            return f"- {before[0]}"
        if self.kind == "edited":
            return f"~ {before[0]}  →  {after[0]}"
        return f"⇉ {' + '.join(before)}  →  {after[0]}"


def _short(text: str, width: int = 100) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "---"]
    first = (lines[0] if lines else "") + (" …" if len(lines) > 1 else "")
    return first if len(first) <= width else first[: width - 1] + "…"


@dataclass(frozen=True)
class Item:
    """One line of the inbox: a change someone else made to a file (``version`` set) or an agent's
    staged write waiting for approval (``pending`` set). ``id`` names it on the command line."""

    id: str
    agent: str
    source: str
    bank: str
    path: str
    at: int
    version: Entry | None = None
    base: Entry | None = None
    pending: PendingWrite | None = None
    reviewed: bool = False

    @property
    def what(self) -> str:
        """``created``, ``deleted``, ``changed`` or ``approval``."""
        if self.pending is not None:
            return "approval"
        if self.version is not None and self.version.gone:
            return "deleted"
        if self.base is None or self.base.gone:
            return "created"
        return "changed"

    def to_obj(self) -> dict[str, Any]:
        """For ``--json`` (without the entries: :func:`item_obj` adds them)."""
        obj: dict[str, Any] = {
            "id": self.id,
            "kind": self.what,
            "agent": self.agent,
            "source": self.source,
            "bank": self.bank,
            "path": self.path,
            "at": self.at,
            "reviewed": self.reviewed,
        }
        if self.pending is not None:
            obj.update(summary=self.pending.summary, problem=self.pending.problem)
        return obj


def change_id(path: str, seq: int) -> str:
    """The inbox id of version ``seq`` of ``path``: stable across runs."""
    return f"{hashlib.sha256(path.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}.{seq}"


# ---------------------------------------------------------------------- listing


def changes(
    journal: Journal, *, sources: Iterable[str] | None = None, reviewed: bool = False, limit: int | None = None
) -> list[Item]:
    """The changes someone other than keepgui made, newest first (only unreviewed ones unless
    ``reviewed``), of the sources whose folders are ``sources`` (all when None)."""
    wanted = None if sources is None else set(sources)
    parts: list[list[Item]] = []
    for tracked in journal.tracked().values():
        if wanted is not None and tracked.source not in wanted:
            continue
        pace.checkpoint()
        parts.append(_changes_of(journal, tracked, reviewed))
    key = (journal.root, reviewed)
    merged = _MERGED.get(key)
    if merged is not None and len(merged[0]) == len(parts) and all(map(operator.is_, merged[0], parts)):
        found = merged[1]  # every file's log as it was: the same lists, not merged and sorted again
    else:
        found = [item for part in parts for item in part]
        found.sort(key=lambda i: (i.at, i.id), reverse=True)
        _MERGED[key] = (parts, found)
    return list(found[:limit] if limit is not None else found)


_MERGED: dict[tuple[str, bool], tuple[list[list[Item]], list[Item]]] = {}
"""The changes as last merged and sorted, with the lists of each file they were made from."""


_MADE: dict[tuple[str, str, bool], tuple[object, Tracked, list[Item]]] = {}
"""The items of each file's log as last made (made again only when the journal read its index again)."""


def _changes_of(journal: Journal, tracked: Tracked, reviewed: bool) -> list[Item]:
    log = journal.log(tracked.path)
    key = (journal.root, tracked.path, reviewed)
    made = _MADE.get(key)
    if made is not None and made[0] is log and made[1] == tracked:
        return made[2]
    found = []
    for n, (before, version) in enumerate(zip(log.versions, log.versions[1:], strict=False)):
        if n % 256 == 255:
            pace.checkpoint()
        done = version.seq in log.accepted
        if version.own or (done and not reviewed):
            continue
        found.append(_item(tracked, version, before, done))
    _MADE[key] = (log, tracked, found)
    return found


def _item(tracked: Tracked, version: Entry, before: Entry | None, done: bool) -> Item:
    return Item(
        change_id(tracked.path, version.seq),
        tracked.kind,
        tracked.source,
        tracked.bank,
        tracked.path,
        version.at,
        version=version,
        base=before,
        reviewed=done,
    )


def approvals(opened: Iterable[Source]) -> list[Item]:
    """The staged writes of every source that has a queue, as items."""
    found: list[Item] = []
    for source in opened:
        queue = approvals_of(source)
        if queue is None:
            continue
        for write in queue.pending():
            path = os.path.join(source.path, write.target)
            found.append(
                Item(
                    f"{source.kind}:{write.id}",
                    source.kind,
                    source.path,
                    write.bank or "",
                    path,
                    write.created_ms or 0,
                    pending=write,
                )
            )
    return found


def items(journal: Journal, opened: Sequence[Source], *, reviewed: bool = False) -> list[Item]:
    """The whole inbox of the sources ``opened``: their changes and their pending approvals, newest first."""
    found = changes(journal, sources=[s.path for s in opened], reviewed=reviewed)
    staged = approvals(opened)
    if staged:
        found += staged
        found.sort(key=lambda i: (i.at, i.id), reverse=True)
    return found


def find(found: Sequence[Item], item_id: str) -> Item:
    """The item ``item_id`` of ``found`` (a unique prefix will do)."""
    exact = [i for i in found if i.id == item_id]
    if exact:
        return exact[0]
    near = [i for i in found if i.id.startswith(item_id)]
    if len(near) == 1:
        return near[0]
    if not near:
        raise NotFound(f"the inbox has no item {item_id} (`keepgui inbox` lists them)")
    raise InvalidInput(f"{item_id} names {len(near)} items of the inbox: give more of the id")


# ---------------------------------------------------------------------- entries


def texts(journal: Journal, item: Item) -> tuple[str, str]:
    """The file's text before and after the change."""
    if item.pending is not None:
        return item.pending.before, item.pending.after
    if item.version is None:
        return "", ""
    versions = journal.versions(item.path)
    before = journal.read(item.base, versions) if item.base is not None else b""
    after = journal.read(item.version, versions, (item.base, before) if item.base is not None else None)
    return before.decode("utf-8", "replace"), after.decode("utf-8", "replace")


def bank_of(source: Source, item: Item) -> Bank:
    """The bank of ``source`` whose file ``item`` changed (the source's first, for a file of its own)."""
    names = source.scan().names
    return source.bank(item.bank if item.bank in names else names[0])


def entry_changes(journal: Journal, item: Item, bank: Bank) -> list[EntryChange]:
    """What the change did, entry by entry, in the bank's own notion of an entry."""
    before, after = texts(journal, item)
    return diff_entries(bank.entries_of(item.path, before), bank.entries_of(item.path, after))


def undone_now(item: Item, bank: Bank, changes: Sequence[EntryChange], now: str | None = None) -> list[bool]:
    """Per entry change of ``item``, whether the file as it is now (or the text ``now``) no longer holds
    it: every text it took away is there again and none it put in is (an entry reverted since, by
    keepgui or by hand). A file gone or unreadable says no entry is undone."""
    if now is None:
        try:
            data, _stamp = fsio.read_stamped(item.path)
        except (KeepguiError, OSError):
            return [False] * len(changes)
        if data is None:
            return [False] * len(changes)
        now = data.decode("utf-8", "replace")
    present = {text for _key, text in bank.entries_of(item.path, now)}
    return [all(t in present for t in c.before) and not any(t in present for t in c.after) for c in changes]


def diff_entries(old: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]]) -> list[EntryChange]:
    """Entries added, removed, edited (the same key, or a text much alike) and merged (one new
    entry holding most of two or more removed ones), in the order of the new file."""
    out: list[EntryChange] = []
    old_keyed = _keyed(old)
    new_keyed = _keyed(new)
    for n, (key, text) in enumerate(new):
        if n % _STEP == _STEP - 1:
            pace.checkpoint()
        if key and key in old_keyed and old_keyed[key] != text:
            out.append(EntryChange("edited", (old_keyed[key],), (text,), key))
    removed = _unmatched(old, new_keyed)
    added = _unmatched(new, old_keyed)
    counts: dict[str, int] = {}
    for n, text in enumerate(removed):
        if n % _STEP == _STEP - 1:
            pace.checkpoint()
        counts[text] = counts.get(text, 0) + 1
    still_added = []
    for n, text in enumerate(added):
        if n % _STEP == _STEP - 1:
            pace.checkpoint()
        if counts.get(text, 0) > 0:
            counts[text] -= 1
        else:
            still_added.append(text)
    still_removed = []
    for n, text in enumerate(removed):
        if n % _STEP == _STEP - 1:
            pace.checkpoint()
        if counts.get(text, 0) > 0:
            counts[text] -= 1
            still_removed.append(text)
    out.extend(_paired(still_removed, still_added))
    return out


_STEP = 4096
"""Entries looked at between two :func:`~keepgui.core.pace.checkpoint` calls (100,000 of them give way 25 times)."""


def _keyed(entries: Sequence[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for n, (key, text) in enumerate(entries):
        if n % _STEP == _STEP - 1:
            pace.checkpoint()
        if key:
            found[key] = text
    return found


def _unmatched(entries: Sequence[tuple[str, str]], other: dict[str, str]) -> list[str]:
    """The texts of ``entries`` whose key is not one of ``other``'s (all those without a key)."""
    found = []
    for n, (key, text) in enumerate(entries):
        if n % _STEP == _STEP - 1:
            pace.checkpoint()
        if not (key and key in other):
            found.append(text)
    return found


def _paired(removed: list[str], added: list[str]) -> list[EntryChange]:
    out: list[EntryChange] = []
    left = list(removed)
    if len(removed) * len(added) > _PAIRING_LIMIT:
        return [EntryChange("added", (), (a,)) for a in added] + [EntryChange("removed", (r,), ()) for r in removed]
    for n, text in enumerate(added):
        if n % 64 == 63:
            pace.checkpoint()
        words = set(text.lower().split())
        parts = [r for r in left if _covered(r, words)]
        if len(parts) >= 2:
            out.append(EntryChange("merged", tuple(parts), (text,)))
            for part in parts:
                left.remove(part)
            continue
        best, score = None, SIMILAR
        for r in left:
            ratio = difflib.SequenceMatcher(None, r, text, autojunk=False).ratio()
            if ratio >= score:
                best, score = r, ratio
        if best is not None:
            out.append(EntryChange("edited", (best,), (text,)))
            left.remove(best)
        else:
            out.append(EntryChange("added", (), (text,)))
    out.extend(EntryChange("removed", (r,), ()) for r in left)
    return out


def _covered(text: str, words: set[str]) -> bool:
    mine = set(text.lower().split())
    return len(mine) >= 2 and len(mine & words) >= 0.7 * len(mine)


# ---------------------------------------------------------------------- acting


def accept(journal: Journal, chosen: Sequence[Item]) -> Change:
    """Mark the changes ``chosen`` reviewed (an approval is not a change: approve or reject it)."""
    by_path: dict[str, list[int]] = {}
    for item in chosen:
        if item.version is None:
            raise InvalidInput(f"{item.id} is a staged write: approve or reject it")
        by_path.setdefault(item.path, []).append(item.version.seq)
    for path, seqs in by_path.items():
        journal.accept(path, seqs)
    first = chosen[0] if chosen else None
    text = f"Accept {len(chosen)} change{'s' if len(chosen) != 1 else ''}"

    def back() -> Change:
        for path, seqs in by_path.items():
            journal.unaccept(path, seqs)
        return Change(source=first.source if first else "", text=text, reverse=lambda: accept(journal, chosen))

    return Change(
        source=first.source if first else "",
        bank=first.bank if first else None,
        text=text,
        message=f"{len(chosen)} change{'s' if len(chosen) != 1 else ''} marked reviewed",
        reverse=back,
    )


def revert(journal: Journal, item: Item, bank: Bank, entry: int | None = None) -> Change:
    """Take back the change ``item`` (or only its ``entry``-th entry change, from 1) as keepgui's own
    write through the bank, merged with what was written after it; refused when they cannot merge."""
    if item.version is None:
        raise InvalidInput(f"{item.id} is a staged write: reject it instead")
    before, after = texts(journal, item)
    target = before
    found: list[EntryChange] = []
    if entry is not None:
        found = entry_changes(journal, item, bank)
        if not 1 <= entry <= len(found):
            raise InvalidInput(f"change {item.id} has {len(found)} entry changes; --entry takes 1 to {len(found)}")
        target = _revert_one(before, after, found[entry - 1], found)
    data, stamp = fsio.read_stamped(item.path)
    if data is None and item.version.gone and item.base is not None and not item.base.gone and entry is None:
        change = bank.write_file(item.path, before, stamp)  # the change deleted the file: it comes back
        journal.accept(item.path, [item.version.seq])
        return _with_review(change, journal, item, entry)
    if data is None:
        raise Conflict(item.path, None, stamp)
    if item.base is None or item.base.gone:
        raise ReadOnly(f"{item.path} was created by this change: keepgui does not delete an agent's file")
    now = data.decode("utf-8", "replace")
    merged = _merged(after, now, target, item)
    if merged == now:
        raise InvalidInput(f"nothing to revert: {item.path} already holds what the change took away")
    change = bank.write_file(item.path, merged, stamp)
    # one entry reverted, the rest still waits for review; the last one reverted, the change is done with
    whole = entry is None or all(undone_now(item, bank, found, merged))
    if whole:
        journal.accept(item.path, [item.version.seq])
    return _with_review(change, journal, item, entry, whole)


def _merged(after: str, now: str, target: str, item: Item) -> str:
    if now == after:
        return target
    moved = _carried(after, target, now)
    if moved is not None:
        return moved
    merged = merge3(after, now, target)
    if merged.conflicts:
        raise InvalidInput(
            f"{item.path} changed again after {item.id} on the same lines the revert touches; "
            "nothing was written (revert the later change first, or edit the file)"
        )
    return merged.text


def _with_review(change: Change, journal: Journal, item: Item, entry: int | None, accepted: bool = True) -> Change:
    inner = change.reverse
    version = item.version
    assert version is not None

    def back() -> Change:
        if inner is None:
            raise InvalidInput(change.why_not_undo)
        undone = inner()
        if accepted:
            journal.unaccept(item.path, [version.seq])
        return undone

    what = f"entry {entry} of " if entry is not None else ""
    return replace(
        change,
        text=f"Revert {what}{os.path.basename(item.path)}",
        message=f"reverted {what}{item.id} ({item.path})",
        reverse=back,
        files=change.files or (Written(item.path, fsio.current_stamp(item.path)),),
    )


def _carried(after: str, target: str, now: str) -> str | None:
    """``after → target`` carried onto ``now``: each changed run of lines must still be in ``now``
    exactly once (a run that only inserts is placed after its line before, found once); None when
    one is not, so the merge decides."""
    a_lines = after.splitlines(keepends=True)
    t_lines = target.splitlines(keepends=True)
    n_lines = now.splitlines(keepends=True)
    edits = []
    for tag, a0, a1, t0, t1 in difflib.SequenceMatcher(None, a_lines, t_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        run = a_lines[a0:a1] if a1 > a0 else a_lines[max(0, a0 - 1) : a0]
        at = [i for i in range(len(n_lines) - len(run) + 1) if n_lines[i : i + len(run)] == run]
        if not at and a1 > a0 and _already(n_lines, t_lines[t0:t1]):
            continue  # this part is taken back already (an entry reverted before)
        if len(at) != 1 and not (not run and a0 == 0):
            return None
        start = (at[0] if at else 0) + (len(run) if a1 == a0 else 0)
        edits.append((start, start + (a1 - a0), t_lines[t0:t1]))
    for start, end, lines in sorted(edits, reverse=True):
        n_lines[start:end] = lines
    return "".join(n_lines)


def _already(lines: list[str], replacement: list[str]) -> bool:
    """True when ``replacement`` is empty or found in ``lines`` as a run."""
    n = len(replacement)
    return not n or any(lines[i : i + n] == replacement for i in range(len(lines) - n + 1))


def _revert_one(before: str, after: str, change: EntryChange, changes: Sequence[EntryChange] = ()) -> str:
    """``after`` with only the lines of one entry change taken back to ``before``.

    Each block of lines the change touches (a diff's opcode) is split between the entry changes whose
    lines are in it (``changes``, the item's all): the lines of an entry's texts are that entry's, and a
    line of none (a blank line, Hermes's ``§``) goes with the entry after it in the block, or else the
    one before. Only this change's lines go, and only its lines of ``before`` come back: two entries
    appended together are two reverts."""
    b_lines = before.splitlines(keepends=True)
    a_lines = after.splitlines(keepends=True)
    found_a = [_lines_of(after, t) for t in change.after]
    found_b = [_lines_of(before, t) for t in change.before]
    mine_a = [s for s in found_a if s is not None]
    mine_b = [s for s in found_b if s is not None]
    if len(mine_a) < len(found_a) or len(mine_b) < len(found_b) or not (mine_a or mine_b):
        raise InvalidInput("keepgui could not find the lines of that entry in the file; revert the whole change")
    others = [c for c in dict.fromkeys(changes) if c != change]
    # lines compared without their newline: a last line that lost or gained one is the same line
    matcher = difflib.SequenceMatcher(
        None, [line.rstrip("\n") for line in b_lines], [line.rstrip("\n") for line in a_lines], autojunk=False
    )
    edits = []
    for tag, b0, b1, a0, a1 in matcher.get_opcodes():
        if tag == "equal" or not (_meets(mine_a, a0, a1) or _meets(mine_b, b0, b1)):
            continue
        # the other entry changes are looked for in this block only (a change of many entries stays cheap)
        own_a = _owners(a0, a1, [mine_a, *_within(a_lines, a0, a1, [c.after for c in others])])
        own_b = _owners(b0, b1, [mine_b, *_within(b_lines, b0, b1, [c.before for c in others])])
        kept = [a_lines[i] for i in range(a0, a1) if own_a[i] != 0]
        back = [b_lines[i] for i in range(b0, b1) if own_b[i] == 0]
        first = next((i - a0 for i in range(a0, a1) if own_a[i] == 0), 0)
        at = sum(1 for i in range(a0, a0 + first) if own_a[i] != 0)
        edits.append((a0, a1, kept[:at] + back + kept[at:]))
    out = list(a_lines)
    for a0, a1, lines in reversed(edits):
        out[a0:a1] = lines
    return "".join(line if line.endswith("\n") or n == len(out) - 1 else line + "\n" for n, line in enumerate(out))


def _meets(spans: list[tuple[int, int]], lo: int, hi: int) -> bool:
    """True when one of the line ranges ``spans`` has a line in ``lo``..``hi``."""
    return any(s0 < hi and lo < s1 for s0, s1 in spans)


def _within(lines: list[str], lo: int, hi: int, texts: list[tuple[str, ...]]) -> list[list[tuple[int, int]]]:
    """The line ranges, in lines ``lo``..``hi``, of the texts of each other entry change found there
    (each range an entry of its own)."""
    block = "".join(lines[lo:hi])
    found = []
    for text in (t for group in texts for t in group if t):
        at = block.find(text)
        if at >= 0:
            start = lo + block.count("\n", 0, at)
            found.append([(start, start + text.count("\n") + 1)])
    return found


def _owners(lo: int, hi: int, spans: list[list[tuple[int, int]]]) -> dict[int, int | None]:
    """Which entry change (its number in ``spans``) each line ``lo``..``hi`` of a block goes with: the
    one whose text it is, else the one of the next such line in the block, else of the one before."""
    whose: dict[int, int] = {}
    for number, ranges in enumerate(spans):
        for s0, s1 in ranges:
            for line in range(max(s0, lo), min(s1, hi)):
                whose.setdefault(line, number)
    owner: dict[int, int | None] = {}
    following: int | None = None
    for line in range(hi - 1, lo - 1, -1):
        following = whose.get(line, following)
        owner[line] = following
    preceding: int | None = None
    for line in range(lo, hi):
        preceding = whose.get(line, preceding)
        if owner[line] is None:
            owner[line] = preceding
    return owner


def _lines_of(text: str, entry: str) -> tuple[int, int] | None:
    """The line range ``[start, end)`` of ``entry``'s text in ``text``, or None."""
    at = text.find(entry)
    if at < 0 or not entry:
        return None
    start = text.count("\n", 0, at)
    return start, start + entry.count("\n") + 1


def approve(source: Source, chosen: Sequence[Item], yes: bool) -> Change:
    """Approve (``yes``) or reject the staged writes ``chosen`` of ``source``."""
    queue = approvals_of(source)
    if queue is None:
        raise InvalidInput(f"{source.path} stages no writes for approval")
    ids = [i.pending.id for i in chosen if i.pending is not None]
    return queue.approve(ids) if yes else queue.reject(ids)


def size_text(journal: Journal) -> str:
    """The journal's size for a person ("12.4 MB of 512 MB")."""
    from keepgui.core.journal import default_cap

    return f"{_mb(journal.size())} of {_mb(default_cap())}"


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 100_000 else f"{n / 1000:.1f} kB"
