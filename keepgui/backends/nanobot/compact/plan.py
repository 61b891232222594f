"""The plan of a document: operations as line edits of the file as it is now, rendered, applied, undone.

:class:`DocPlan` is shared by the three kinds of plan (keepgui's own compaction
of keep.md, a ``--via`` rewrite, a review): a selection is rendered as the diff
of exactly what applying it writes; applying checks that no file the plan relied
on changed, writes in one atomic replace, and records what undoes it.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterable, Sequence

from keepgui.backends.nanobot.compact.edits import Edit, compose, decode, items_of
from keepgui.backends.nanobot.compact.operations import PLANNER_KINDS
from keepgui.backends.nanobot.compact.undo import FileApplied, FileChange
from keepgui.backends.nanobot.dream import DOCUMENTS, append_lines
from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, KeepDoc
from keepgui.backends.nanobot.workspace import AGENTS_MD, Notice, Workspace
from keepgui.core import fsio, textdiff
from keepgui.core.compaction import REVIEW_KINDS, ChangedSince, Counts, Operation, Plan, Selection
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError
from keepgui.core.history import History, RemovedEntry


class DocPlan(Plan):
    """A plan of line edits to one workspace document (keep.md, or MEMORY.md for a review).

    ``data``/``stamp``/``doc``: the file as planned from (``doc`` is parsed from
    ``data`` unless the caller passes it already parsed); ``evidence``: the
    other files the plan relied on, with the stamps they had. Use
    :meth:`after_bytes`/:meth:`after_text` for the result of a selection,
    :meth:`render` for its diff, :meth:`apply` to write it.
    """

    kind = "keep.md"
    KINDS = PLANNER_KINDS + REVIEW_KINDS
    written_source = "compacted"
    removal_reason = "compaction"

    def __init__(
        self,
        workspace: Workspace,
        rel: str,
        data: bytes | None,
        stamp: fsio.Stamp,
        planned: Sequence[tuple[Operation, Edit]],
        *,
        evidence: dict[str, tuple[bytes | None, fsio.Stamp]] | None = None,
        notices: Iterable[Notice] = (),
        history: History | None = None,
        target: int | None = COMPACTION_TARGET,
        doc: KeepDoc | None = None,
    ) -> None:
        self.workspace = workspace
        self.rel = rel
        self.path = workspace.path(rel)
        self.data = data
        self.stamp = stamp
        self.doc = doc if doc is not None else KeepDoc.parse(data, self.path, stamp)
        self.evidence = dict(evidence or {})
        self.history = history if history is not None else History()
        self.target = target
        super().__init__([op for op, _edit in planned], notices, self.path)
        self._edits = {op.id: planned[self.origin[op.id]][1] for op in self.operations}

    # ---------------------------------------------------------------- results of a selection

    def edits(self, selection: Selection = None) -> list[Edit]:
        """The edits of a selection, in plan order."""
        return [self._edits[op.id] for op in self.selected(selection)]

    def after_bytes(self, selection: Selection = None) -> bytes:
        """The file's bytes once the selection is applied."""
        return compose(self.doc, self.edits(selection))

    def after_text(self, selection: Selection = None) -> str:
        """The file's text once the selection is applied (BOM left out)."""
        return decode(self.after_bytes(selection))

    @property
    def before_text(self) -> str:
        """The file's text as planned from."""
        return decode(self.data)

    def agents_after(self, selection: Selection = None) -> bytes | None:
        """AGENTS.md's bytes once the selection is applied, or None when it moves nothing there."""
        lines = [text for edit in self.edits(selection) for text in edit.agents]
        if not lines:
            return None
        # Only a keep.md plan moves rules, and it always reads AGENTS.md as evidence.
        return append_lines(self.evidence[AGENTS_MD][0], self.workspace.path(AGENTS_MD), lines)

    def counts(self, selection: Selection = None) -> Counts:
        """Physical lines before → after → target (entries as detail), as ``compaction_due`` counts."""
        after = KeepDoc.parse(self.after_bytes(selection))
        return Counts(
            "lines",
            self.doc.line_count,
            after.line_count,
            self.target,
            {"entries_before": self.doc.entry_count, "entries_after": after.entry_count},
        )

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """The unified diff of the whole file for a selection (and of AGENTS.md when rules move)."""
        name = self.rel
        out = textdiff.unified(self.before_text, self.after_text(selection), f"a/{name}", f"b/{name}", context)
        agents = self.agents_after(selection)
        if agents is not None:
            before = decode(self.evidence[AGENTS_MD][0])
            out += textdiff.unified(before, decode(agents), f"a/{AGENTS_MD}", f"b/{AGENTS_MD}", context)
        return out

    # ---------------------------------------------------------------- freshness

    def _changed_file(self) -> str | None:
        """The workspace-relative name of a file that changed since the plan was made, or None."""
        _data, stamp = self.workspace.read(self.rel)
        if not stamp.same_content(self.stamp):
            return self.rel
        for rel, (_data, planned) in self.evidence.items():
            _now, current = self.workspace.read(rel)
            if not current.same_content(planned):
                return rel
        return None

    def check_fresh(self) -> None:
        """Raise StalePlan when the file, or one the plan relied on, changed since it was planned."""
        changed = self._changed_file()
        if changed:
            raise self.stale(f"{changed} changed")

    # ---------------------------------------------------------------- applying

    @property
    def dream_managed(self) -> bool:
        """True when the file is one of Dream's (writing it needs the person's confirmation)."""
        return any(kind.rel == self.rel and kind.managed_by_dream for kind in DOCUMENTS.values())

    @property
    def confirmation(self) -> str:
        """Writing a Dream-managed file is the person's choice: the window asks this first."""
        if not self.dream_managed:
            return ""
        return (
            f"{self.rel} is managed by Dream, which rewrites it on its own; nanobot tells the agent not to "
            "edit it. Write it anyway?"
        )

    def apply(self, selection: Selection = None, *, confirm_dream: bool = False) -> FileApplied:
        """Write the selection: freshness check, AGENTS.md first when rules move, then one atomic
        replace of the file with the stamp it was planned from; history and removed-entry log kept.
        A Dream-managed file needs ``confirm_dream`` (or the plan :attr:`confirmed`)."""
        ids = self.normalise_selection(selection)
        if self.dream_managed and not (confirm_dream or self.confirmed):
            raise InvalidInput(
                f"{self.path} is managed by Dream; confirm that you want to edit it "
                "(the window asks; the command line takes --confirm-dream)"
            )
        self.check_fresh()
        new = self.after_bytes(ids)
        agents_new = self.agents_after(ids)
        ops = self.selected(ids)
        if new == (self.data or b"") and agents_new is None:
            return FileApplied(self.workspace.root, [], [], ["nothing to change"], "nothing selected", self.history)
        logged = self._log_removals(ops)
        changes: list[FileChange] = []
        try:
            if agents_new is not None:
                agents_old, agents_stamp = self.evidence[AGENTS_MD]
                changes.append(self._write(AGENTS_MD, agents_old, agents_stamp, agents_new))
            changes.append(self._write(self.rel, self.data, self.stamp, new))
        except BaseException as exc:
            for record in logged:  # the removal did not happen: "unforget" must not offer it
                self.history.cancel_removed(record)
            for change in reversed(changes):  # AGENTS.md was written but keep.md was not: take it back
                # if someone changed it in between, the rule stays in both files: never in neither
                with contextlib.suppress(KeepguiError):
                    change.revert(self.workspace, self.history)
            if isinstance(exc, Conflict) and not isinstance(exc, ChangedSince):
                raise self.stale(f"{os.path.relpath(exc.path, self.workspace.root)} changed while applying") from None
            raise
        lines = self._describe(ops, new)
        applied = FileApplied(self.workspace.root, changes, logged, lines, self._description(ops), self.history)
        self._after_apply(applied)
        return applied

    def _write(self, rel: str, old: bytes | None, stamp: fsio.Stamp, new: bytes) -> FileChange:
        path = self.workspace.path(rel)
        if old is not None:
            self.history.record(path, old, source="seen")
        new_stamp = self.workspace.write(rel, new, expect=stamp)
        self.history.record(path, new, source=self.written_source)
        return FileChange(rel, old, new, new_stamp)

    def _log_removals(self, ops: Sequence[Operation]) -> list[RemovedEntry]:
        items = items_of(self.doc)
        by_index = {item.index: item for item in items}
        logged = []
        for op in ops:
            for item in self._edits[op.id].removes:
                current = by_index.get(item.index)
                neighbours = [i for i in items if i.index != item.index]
                before = next((i for i in reversed(neighbours) if i.index < item.index), None)
                after = next((i for i in neighbours if i.index > item.index), None)
                logged.append(
                    self.history.log_removed(
                        path=self.path,
                        workspace=self.workspace.root,
                        text=item.text,
                        raw=item.raw,
                        line=item.index,
                        number=(current.position + 1) if current else 0,
                        before=before.text if before else None,
                        after=after.text if after else None,
                        reason=f"{self.removal_reason}: {op.label.lower()}",
                    )
                )
        return logged

    def _describe(self, ops: Sequence[Operation], new: bytes) -> list[str]:
        counts = Counts("lines", self.doc.line_count, KeepDoc.parse(new).line_count, self.target)
        lines = [f"{self.rel}: {counts.describe()}"]
        by_kind = Counter(op.label for op in ops)
        lines += [f"{label}: {n}" for label, n in by_kind.items()]
        return lines

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"compact {self.rel} ({len(ops)} operations)"

    def _after_apply(self, applied: FileApplied) -> None:
        """Hook for subclasses (a review records the acceptance)."""
