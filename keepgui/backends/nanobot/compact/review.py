"""Reviewing a rewrite made elsewhere (the agent compacting, Dream, another tool) as restore operations.

The rewrite is compared, entry by entry, with the last version keepgui saw
(:class:`~keepgui.core.history.History`; which one is :mod:`.accepted`'s
question): removed, merged, reworded, new (flagged: a compaction should add no
facts). Each operation restores: the removed entry, the original wording, the
merged originals, or takes the new line out; "restore all" selects every one.
keepgui's own later edits are labelled as made through keepgui.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from keepgui.backends.nanobot.compact.accepted import (
    WRITTEN_SOURCES,
    ReviewLog,
    review_baseline,
    review_rel,
)
from keepgui.backends.nanobot.compact.compare import REVIEW_THRESHOLD, Comparison, compare, insert_point
from keepgui.backends.nanobot.compact.dates import has_date
from keepgui.backends.nanobot.compact.edits import Edit, Item, decode, end_anchor, items_of, operation
from keepgui.backends.nanobot.compact.plan import DocPlan
from keepgui.backends.nanobot.compact.undo import FileApplied
from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, KeepDoc
from keepgui.backends.nanobot.workspace import KEEP_MD, Notice, Workspace
from keepgui.core import textdiff
from keepgui.core.compaction import Operation, excerpt, words_only_in
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History, Version

USUAL_RANGE = (100, 130)
"""A compacted keep.md should end up about here (the keep skill says "about 120")."""


class ReviewPlan(DocPlan):
    """A rewrite made outside keepgui, compared with the last version keepgui saw, as restore operations.

    ``baseline`` is that version (None when there is nothing to review);
    ``comparison`` the item-level changes. Applying restores the selection and
    accepts the result; :meth:`accept` accepts the file as it is.
    """

    kind = "review"
    written_source = "review-restored"
    removal_reason = "review"

    def __init__(
        self, *args: Any, baseline: Version | None, comparison: Comparison | None, threshold: float, **kwargs: Any
    ) -> None:
        self.baseline = baseline
        self.comparison = comparison
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def replan(self) -> ReviewPlan:
        """The review again, from the file as it is now."""
        return review(self.workspace, self.rel, threshold=self.threshold, history=self.history)

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"restore {len(ops)} changes of {self.rel}"

    def _after_apply(self, applied: FileApplied) -> None:
        version = self.history.latest(self.path)
        applied.review_marker = ReviewLog(self.history).accept(self.path, version)

    def accept(self) -> str:
        """Accept the file as it is now (the rewrite stops being shown); StalePlan if it changed since."""
        self.check_fresh()
        version = self.history.record(self.path, self.data, source="seen") if self.data is not None else None
        return ReviewLog(self.history).accept(self.path, version)

    def baseline_text(self) -> str:
        """The text of the version compared with ("" without one)."""
        return decode(self.history.read(self.baseline)) if self.baseline else ""

    def render_rewrite(self, context: int = 3) -> str:
        """The rewrite itself as a unified diff: the version keepgui saw → the file now."""
        return textdiff.unified(self.baseline_text(), self.before_text, f"seen/{self.rel}", f"now/{self.rel}", context)


def review(
    workspace: Workspace | str,
    name: str = KEEP_MD,
    *,
    threshold: float = REVIEW_THRESHOLD,
    history: History | None = None,
) -> ReviewPlan:
    """Compare keep.md (or ``MEMORY.md``) with the version keepgui saw before a rewrite it did not make.

    Every change becomes an operation that undoes it: put a removed entry back
    (selected by default when nothing in the file says it any more), put the
    original wording or the merged originals back, take a new line out. The
    plan's notices hold the checks of a compaction (about 120 lines, no
    duplicates left, no new facts, no dates added). Reading records the
    current version as seen — which does not accept it.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    history = history if history is not None else History()
    rel = review_rel(name)
    path = workspace.path(rel)
    data, stamp = workspace.read(rel)
    doc = KeepDoc.parse(data, path, stamp)
    known = bool(history.versions(path))
    if data is not None:
        history.record(path, data, source="seen")
    baseline, since = review_baseline(history, path, data)
    target = None  # a review restores what a rewrite changed; it does not aim at a line count
    name = rel.rsplit("/", 1)[-1]
    if baseline is None:
        note = (
            f"{name} has not been changed outside keepgui since it was last seen or accepted"
            if known
            else f"keepgui has no earlier version of {name}; from now on rewrites of it are shown here"
        )
        return ReviewPlan(
            workspace,
            rel,
            data,
            stamp,
            [],
            notices=[Notice("nothing-to-review", "info", note)],
            history=history,
            target=target,
            baseline=None,
            comparison=None,
            threshold=threshold,
            doc=doc,
        )
    old_doc = KeepDoc.parse(history.read(baseline), path)
    comparison = compare(old_doc, doc, threshold)
    by_keepgui = _keepgui_made(history, old_doc, since)
    planned = _restore_operations(doc, comparison, name, by_keepgui)
    notices = _review_notices(rel, name, baseline, old_doc, doc, comparison)
    return ReviewPlan(
        workspace,
        rel,
        data,
        stamp,
        planned,
        notices=notices,
        history=history,
        target=target,
        baseline=baseline,
        comparison=comparison,
        threshold=threshold,
        doc=doc,
    )


def _keepgui_made(history: History, old_doc: KeepDoc, since: list[Version]) -> dict[str, dict[str, str]]:
    """Which keys keepgui itself first removed or added after the baseline (``old_doc``):
    ``{"removed": {key: source}, "added": {...}}`` (an entry first removed by the outside rewrite is never
    labelled keepgui's)."""
    out: dict[str, dict[str, str]] = {"removed": {}, "added": {}}
    seen_removed: set[str] = set()
    seen_added: set[str] = set()
    previous = Counter(i.key for i in items_of(old_doc))
    for version in since:
        try:
            now = Counter(i.key for i in items_of(KeepDoc.parse(history.read(version))))
        except (KeepguiError, OSError):
            continue
        for key in previous - now:
            if key not in seen_removed:
                seen_removed.add(key)
                if version.source in WRITTEN_SOURCES:
                    out["removed"][key] = version.source
        for key in now - previous:
            if key not in seen_added:
                seen_added.add(key)
                if version.source in WRITTEN_SOURCES:
                    out["added"][key] = version.source
        previous = now
    return out


def _restore_operations(
    doc: KeepDoc, cmp: Comparison, name: str, by_keepgui: dict[str, dict[str, str]]
) -> list[tuple[Operation, Edit]]:
    """Operations that undo each change of a rewrite, on the file as it is now."""
    new_line = {i.position: i.index for i in cmp.new_items}
    old_to_new: dict[int, int] = dict(cmp.unchanged)
    for change in cmp.changes:
        if change.kind in ("reworded", "merged") and not change.into_existing:
            for item in change.old:
                old_to_new.setdefault(item.position, change.new[0].position)
    end = end_anchor(doc)
    total = len(cmp.old_items)
    planned = []

    def insert(item: Item) -> tuple[int, int, float, str]:
        """Where restoring ``item`` puts its line back."""
        anchor, side = insert_point(item.position, old_to_new, new_line, total, end)
        return anchor, side, item.position, item.raw

    for change in cmp.changes:
        old, new = change.old, change.new
        mine = [i for i in old if i.key in by_keepgui["removed"]]
        through = f" (removed through keepgui: {by_keepgui['removed'][mine[0].key]})" if mine else ""
        # before: what the file says now; after: what restoring makes it say
        if change.kind == "removed":
            planned.append(
                operation(
                    "removed",
                    [old[0]],
                    [old[0].text],
                    f"removed by the rewrite{through}, and nothing in {name} says it any more; "
                    "restoring puts it back where it was",
                    Edit(inserts=(insert(old[0]),)),
                    selected=not mine,
                    before=(),
                )
            )
        elif change.kind == "deduplicated" and change.cover is not None:
            planned.append(
                operation(
                    "deduplicated",
                    [old[0]],
                    [old[0].text],
                    f"removed as a duplicate{through}: {change.cover.quote()} still says it",
                    Edit(inserts=(insert(old[0]),)),
                    selected=False,
                    evidence=[change.cover.text],
                    before=(),
                )
            )
        elif change.kind == "merged" and change.into_existing:
            lost = words_only_in(old[0].text, new[0].text)
            planned.append(
                operation(
                    "merged",
                    [old[0], new[0]],
                    [old[0].text, new[0].text],
                    f"folded into the existing {new[0].quote()}{through} (similarity {change.score:.0f})"
                    + (f"; words lost: {', '.join(lost)}" if lost else ""),
                    Edit(inserts=(insert(old[0]),)),
                    selected=False,
                    score=change.score,
                    before=(new[0].text,),
                )
            )
        elif change.kind == "new":
            item = new[0]
            added = by_keepgui["added"].get(item.key)
            why = (
                f"added through keepgui ({added}) after the rewrite"
                if added
                else "new: the earlier version did not say it — a compaction should add no facts"
            )
            planned.append(
                operation(
                    "new",
                    [item],
                    [],
                    f"{why}; restoring takes the line out",
                    Edit(drops=(item.index,), removes=(item,)),
                    selected=False,
                )
            )
        else:
            target = new[0]
            first, *others = old
            lost = list(dict.fromkeys(w for o in old for w in words_only_in(o.text, target.text)))
            what = f"the {len(old)} entries merged into" if change.kind == "merged" else "the wording before"
            planned.append(
                operation(
                    change.kind,
                    [*old, target],
                    [o.text for o in old],
                    f"restore {what} {target.quote()} (similarity {change.score:.0f})"
                    + (f"; the rewrite lost: {', '.join(lost)}" if lost else ""),
                    Edit(
                        rewrites=((target.index, first.raw),),
                        inserts=tuple((target.index, 1, o.position, o.raw) for o in others),
                        removes=(target,),
                    ),
                    selected=False,
                    score=change.score,
                    before=(target.text,),
                )
            )
    return planned


def _review_notices(
    rel: str, name: str, baseline: Version, old_doc: KeepDoc, doc: KeepDoc, cmp: Comparison
) -> list[Notice]:
    notices = [
        Notice(
            "rewrite",
            "info",
            f"{name} changed outside keepgui after the version seen "
            f"{_when(baseline.at)} ({old_doc.line_count} → {doc.line_count} lines)",
        )
    ]
    counts = Counter(c.kind for c in cmp.changes)
    if counts["removed"]:
        notices.append(
            Notice(
                "facts-removed",
                "warning",
                f"{counts['removed']} entr{'ies were' if counts['removed'] > 1 else 'y was'} removed "
                f"and nothing in {name} says {'them' if counts['removed'] > 1 else 'it'} any more "
                "(restore selected)",
            )
        )
    if counts["new"] and rel == KEEP_MD:
        notices.append(
            Notice(
                "new-facts",
                "warning",
                f"{counts['new']} new entr{'ies' if counts['new'] > 1 else 'y'}: a compaction should add no facts",
            )
        )
    if rel == KEEP_MD and doc.line_count < old_doc.line_count:
        low, high = USUAL_RANGE
        if not low <= doc.line_count <= high:
            notices.append(
                Notice(
                    "count",
                    "warning",
                    f"keep.md now has {doc.line_count} lines; a compaction aims at about "
                    f"{COMPACTION_TARGET} ({low}–{high})",
                )
            )
    dups = doc.duplicates()
    if dups:
        notices.append(
            Notice(
                "duplicates-left",
                "warning",
                f"{len(dups)} duplicate group(s) remain, e.g. `{excerpt(dups[0][0].text, 50)}`",
            )
        )
    dated = [
        c.new[0]
        for c in cmp.changes
        if c.new
        and c.kind in ("new", "reworded", "merged")
        and not c.into_existing
        and has_date(c.new[0].text)
        and not any(has_date(o.text) for o in c.old)
    ]
    if dated:
        notices.append(
            Notice(
                "dates-added",
                "warning",
                f"the rewrite added dates, e.g. {dated[0].quote()}: keep.md entries carry no dates",
            )
        )
    return notices


def _when(ms: int) -> str:
    from keepgui.core.timefmt import relative_time

    return relative_time(ms)
