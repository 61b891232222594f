"""keepgui's own planner for the keep skill's compaction of keep.md (over 150 lines → about 120).

:func:`plan_keep` reads keep.md and the files it is compared with, runs the
steps of :mod:`.operations` and says, in the plan's notices, whether the safe
operations reach the target and how many entries remain to be chosen by hand.
It never guesses which facts a person can live without.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from keepgui.backends.nanobot.compact.accepted import review_baseline
from keepgui.backends.nanobot.compact.edits import compose, decode
from keepgui.backends.nanobot.compact.operations import Planned, plan_operations
from keepgui.backends.nanobot.compact.plan import DocPlan
from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, SOFT_CAP, KeepDoc, decode_text
from keepgui.backends.nanobot.workspace import AGENTS_MD, KEEP_MD, MEMORY_MD, USER_MD, Notice, Workspace
from keepgui.backends.nanobot.writes import FUZZY_THRESHOLD
from keepgui.core.compaction import UNREVIEWED_REWRITE
from keepgui.core.errors import InvalidInput, Unreadable
from keepgui.core.history import History

LETTER_SEARCH_ENTRIES = 5_000
"""Up to this many entries the near-duplicate search also compares letters across different words
(:func:`~keepgui.core.compaction.near_duplicates` with ``letters``), a search that grows with the
square of the count; above it only shared words are searched, which grows about linearly."""


class KeepPlan(DocPlan):
    """keepgui's compaction plan of keep.md (see :func:`plan_keep`)."""

    kind = "keep.md"

    def __init__(self, *args: Any, settings: dict[str, Any], **kwargs: Any) -> None:
        self.settings = dict(settings)
        super().__init__(*args, **kwargs)

    def replan(self) -> KeepPlan:
        """The plan again with the same settings, from the files as they are now."""
        return plan_keep(self.workspace, history=self.history, **self.settings)


def plan_keep(
    workspace: Workspace | str,
    *,
    target: int = COMPACTION_TARGET,
    threshold: float = FUZZY_THRESHOLD,
    history: History | None = None,
) -> KeepPlan:
    """Plan the compaction of keep.md (see the module doc for the operations and their defaults).

    ``target``: the line count to reach (the keep skill's ~120);
    ``threshold``: the near-duplicate cut-off on ``token_set_ratio`` (0–100).
    Reading records the versions seen in ``history``; nothing is written.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    history = history if history is not None else History()
    if not 0 <= threshold <= 100:
        raise InvalidInput(f"the near-duplicate threshold must be between 0 and 100, not {threshold}")
    if target < 0:
        raise InvalidInput(f"the target must be a line count of 0 or more, not {target}")
    last = history.latest(workspace.keep_md)  # a plan is the base of a whole-file write: read it settled
    data, stamp = workspace.read(KEEP_MD, settled=True, before=last.size if last else None)
    doc = KeepDoc.parse(data, workspace.keep_md, stamp)  # refuses non-UTF-8, naming the line
    if data is not None:
        history.record(workspace.keep_md, data, source="seen")
    evidence = {rel: workspace.read(rel) for rel in (MEMORY_MD, USER_MD, AGENTS_MD)}
    texts = {rel.rsplit("/", 1)[-1]: decode(evidence[rel][0]) for rel in evidence}
    try:  # rules move to AGENTS.md only when keepgui can write it back exactly
        decode_text(evidence[AGENTS_MD][0] or b"", workspace.path(AGENTS_MD))
        agents_problem = None
    except Unreadable as exc:
        agents_problem = str(exc)
    letters = doc.entry_count <= LETTER_SEARCH_ENTRIES
    planned = plan_operations(
        doc, texts, workspace.projects(), threshold, agents_writable=agents_problem is None, letters=letters
    )
    notices = _keep_notices(doc, data, planned, target, workspace, history)
    if not letters:
        notices.append(
            Notice(
                "near-duplicates-by-words",
                "info",
                f"keep.md has {doc.entry_count:,} entries: near-duplicates were searched through "
                "the words entries share; pairs alike only letter by letter in different words (a "
                f"typo in every word) are looked for up to {LETTER_SEARCH_ENTRIES:,} entries, as that "
                "search compares every pair",
            )
        )
    if agents_problem is not None:
        notices.append(
            Notice(
                "agents-unreadable",
                "warning",
                f"{agents_problem}; rules found in keep.md are not moved there until it is",
            )
        )
    settings = {"target": target, "threshold": threshold}
    return KeepPlan(
        workspace,
        KEEP_MD,
        data,
        stamp,
        planned,
        evidence=evidence,
        notices=notices,
        history=history,
        target=target,
        settings=settings,
        doc=doc,
    )


def _keep_notices(
    doc: KeepDoc,
    data: bytes | None,
    planned: Sequence[Planned],
    target: int,
    workspace: Workspace,
    history: History,
) -> list[Notice]:
    notices = []
    if not doc.stamp.exists:
        notices.append(Notice("missing", "info", f"{doc.path} does not exist: nothing to compact"))
    elif not doc.compaction_due:
        notices.append(
            Notice(
                "not-due",
                "info",
                f"keep.md has {doc.line_count} lines, not over the {SOFT_CAP}-line cap: compaction is optional",
            )
        )
    safe = [edit for op, edit in planned if op.selected]
    after = KeepDoc.parse(compose(doc, safe)).line_count
    if after > target:
        notices.append(
            Notice(
                "choose-by-hand",
                "warning",
                f"the safe operations reach {after} lines; {after - target} more entries must go to "
                f"reach {target}, and keepgui does not guess which facts you can live without: choose "
                "them (the judgement calls listed may help)",
            )
        )
    pending, _since = review_baseline(history, workspace.keep_md, data)  # pending_review without reading keep.md again
    if pending is not None:
        notices.append(
            Notice(
                UNREVIEWED_REWRITE,
                "warning",
                "keep.md was rewritten outside keepgui and that rewrite was not reviewed yet",
            )
        )
    return notices
