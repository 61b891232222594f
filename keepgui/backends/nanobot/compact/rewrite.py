"""A rewrite of keep.md from outside (``--via``): a command's proposal turned into operations to review.

A configurable command (an LLM CLI...) gets keep.md on stdin and prints a
rewritten file; its entries are compared with keep.md's and each difference
becomes an operation (removed, duplicate, merged, reworded, new). Only lossless
ones (a removed duplicate, a merge that still contains every original) are
selected. keepgui itself makes no network call.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

from keepgui.backends.nanobot.compact.compare import REVIEW_THRESHOLD, Comparison, compare, insert_point
from keepgui.backends.nanobot.compact.edits import Edit, drop, end_anchor, operation
from keepgui.backends.nanobot.compact.plan import DocPlan
from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, KeepDoc, canonical_line, contains
from keepgui.backends.nanobot.workspace import KEEP_MD, Notice, Workspace
from keepgui.core.compaction import Operation, StalePlan, excerpt, words_only_in
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, Unreadable
from keepgui.core.history import History

VIA_TIMEOUT = 300.0
"""Seconds a ``--via`` command may run (an LLM answering about a 150-line file)."""


class RewritePlan(DocPlan):
    """A rewrite of keep.md proposed by an outside command, as operations to review."""

    kind = "rewrite"

    def __init__(self, *args: Any, proposed: str, source: str, threshold: float, **kwargs: Any) -> None:
        self.proposed = proposed
        self.source = source
        self.threshold = threshold
        super().__init__(*args, **kwargs)

    def replan(self) -> RewritePlan:
        """The same proposal compared with keep.md as it is now (the command is not run again)."""
        return plan_from_text(
            self.workspace,
            self.proposed,
            source=self.source,
            threshold=self.threshold,
            history=self.history,
            target=self.target,
        )

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"apply {len(ops)} changes of {self.source} to {self.rel}"


def plan_from_text(
    workspace: Workspace | str,
    proposed: str | bytes,
    *,
    source: str = "the proposed text",
    threshold: float = REVIEW_THRESHOLD,
    history: History | None = None,
    target: int | None = COMPACTION_TARGET,
) -> RewritePlan:
    """Turn a proposed new keep.md into a plan of operations on the current one.

    Only ``- <fact>`` entries of the proposal count: prose around them (an
    LLM's "Here is the file:") and its line order are ignored; the current
    file keeps its order and every line the proposal does not change.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    history = history if history is not None else History()
    if isinstance(proposed, bytes):
        try:
            proposed = proposed.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Unreadable(source, f"byte {exc.start} is not valid UTF-8; keep.md was not changed") from None
    data, stamp = workspace.read(KEEP_MD)
    doc = KeepDoc.parse(data, workspace.keep_md, stamp)
    if data is not None:
        history.record(workspace.keep_md, data, source="seen")
    new_doc = KeepDoc.from_text(proposed)
    comparison = compare(doc, new_doc, threshold, new_prose=False)
    planned = forward_operations(doc, comparison, source)
    ignored = sum(1 for line in new_doc.lines if line.kind in ("other", "heading", "comment"))
    notices = []
    if ignored:
        notices.append(
            Notice(
                "ignored-lines", "info", f"{ignored} line(s) of {source} are not `- <fact>` entries and were ignored"
            )
        )
    if not new_doc.entries:
        notices.append(Notice("no-entries", "warning", f"{source} holds no `- <fact>` entry at all"))
    news = [c for c in comparison.changes if c.kind == "new"]
    if news:
        notices.append(
            Notice(
                "new-facts",
                "warning",
                f"{len(news)} new entr{'ies' if len(news) > 1 else 'y'} in {source}: a compaction "
                "should add no facts (not selected)",
            )
        )
    return RewritePlan(
        workspace,
        KEEP_MD,
        data,
        stamp,
        planned,
        notices=notices,
        history=history,
        target=target,
        proposed=proposed,
        source=source,
        threshold=threshold,
        doc=doc,
    )


def forward_operations(doc: KeepDoc, cmp: Comparison, source: str) -> list[tuple[Operation, Edit]]:
    """Operations that turn the current file toward the proposal, one per change."""
    old_line = {i.position: i.index for i in cmp.old_items}
    new_to_old: dict[int, int] = {new: old for old, new in cmp.unchanged.items()}
    for change in cmp.changes:
        if change.kind in ("reworded", "merged") and not change.into_existing:
            new_to_old[change.new[0].position] = change.old[0].position
    planned = []
    end = end_anchor(doc)
    for change in cmp.changes:
        old, new = change.old, change.new
        if change.kind == "new":
            item = new[0]
            anchor, side = insert_point(item.position, new_to_old, old_line, len(cmp.new_items), end)
            planned.append(
                operation(
                    "new",
                    [],
                    [item.text],
                    f"new in {source}: not in keep.md — a compaction should add no facts",
                    Edit(inserts=((anchor, side, item.position, canonical_line(item.text)),)),
                    selected=False,
                )
            )
        elif change.kind in ("removed", "deduplicated"):
            item = old[0]
            if change.kind == "removed" or change.cover is None:
                reason = f"{source} drops it and nothing in it says it any more"
                selected = False
            else:
                reason = f"a duplicate: {change.cover.quote()} of {source} still says it"
                selected = True
            planned.append(
                operation(
                    change.kind,
                    [item],
                    [],
                    reason,
                    drop(item),
                    selected=selected,
                    evidence=[change.cover.text] if change.cover else (),
                )
            )
        elif change.kind == "merged" and change.into_existing:
            item, kept = old[0], new[0]
            lost = words_only_in(item.text, kept.text)
            planned.append(
                operation(
                    "merged",
                    [item],
                    [kept.text],
                    f"{source} folds it into the existing `{excerpt(kept.text, 60)}` (similarity "
                    f"{change.score:.0f})" + (f"; lost words: {', '.join(lost)}" if lost else ""),
                    drop(item),
                    selected=False,
                    score=change.score,
                )
            )
        else:
            target = new[0]
            first, *others = sorted(old, key=lambda i: i.index)
            lossless = all(contains(target.key, o.key) for o in old)
            lost = list(dict.fromkeys(w for o in old for w in words_only_in(o.text, target.text)))
            tail = (
                "; it still says everything they said"
                if lossless
                else (f"; lost words: {', '.join(lost)}" if lost else "; reworded")
            )
            what = "merges" if change.kind == "merged" else "rewords"
            planned.append(
                operation(
                    change.kind,
                    old,
                    [target.text],
                    f"{source} {what} {'them' if len(old) > 1 else 'it'} into `{excerpt(target.text, 60)}`" + tail,
                    Edit(
                        rewrites=((first.index, canonical_line(target.text)),),
                        drops=tuple(o.index for o in others),
                        removes=tuple(old),
                    ),
                    selected=lossless and change.kind == "merged",
                    score=change.score,
                )
            )
    return planned


def run_command(
    command: str | Sequence[str], data: bytes, *, timeout: float = VIA_TIMEOUT, cwd: str | None = None
) -> bytes:
    """Run ``command`` (no shell) with ``data`` on stdin and return what it printed on stdout.

    Errors say what happened and that keep.md was not changed: the command is
    missing, ran longer than ``timeout`` seconds (it is stopped, with anything
    it started), exited non-zero (its last stderr lines are quoted), printed
    bytes that are not UTF-8, or printed nothing.
    """
    argv = shlex.split(command, posix=os.name != "nt") if isinstance(command, str) else list(command)
    if not argv:
        raise InvalidInput("give the rewrite command, for example --via 'llm -s \"compact this keep.md\"'")
    shown = command if isinstance(command, str) else shlex.join(argv)
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=os.name != "nt",
        )
    except FileNotFoundError:
        raise InvalidInput(
            f"the rewrite command `{argv[0]}` was not found (it runs without a shell: give a "
            "program, or wrap pipes in sh -c '…'); keep.md was not changed"
        ) from None
    except OSError as exc:
        raise KeepguiError(
            f"the rewrite command `{shown}` could not start ({exc.strerror or exc}); keep.md was not changed"
        ) from None
    try:
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise KeepguiError(
            f"the rewrite command `{shown}` did not finish within {timeout:g} s and was stopped; "
            "keep.md was not changed (allow more time with --via-timeout)"
        ) from None
    except BaseException:
        _stop(proc)
        raise
    if proc.returncode != 0:
        tail = " / ".join(err.decode("utf-8", "replace").strip().splitlines()[-3:]) or "no message"
        raise KeepguiError(
            f"the rewrite command `{shown}` failed with exit status {proc.returncode} ({tail}); keep.md was not changed"
        )
    try:
        text = out.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KeepguiError(
            f"the rewrite command `{shown}` printed bytes that are not UTF-8 (at byte {exc.start}); "
            "keep.md was not changed — make it print UTF-8"
        ) from None
    if not text.strip():
        raise KeepguiError(f"the rewrite command `{shown}` printed nothing; keep.md was not changed")
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and everything it started (its own process group), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # it may have exited just now
        if os.name != "nt":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover
            proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.communicate(timeout=5)


def rewrite_via(
    workspace: Workspace | str,
    command: str | Sequence[str],
    *,
    timeout: float = VIA_TIMEOUT,
    threshold: float = REVIEW_THRESHOLD,
    history: History | None = None,
    target: int | None = COMPACTION_TARGET,
) -> RewritePlan:
    """Have ``command`` rewrite keep.md (stdin → stdout) and return its rewrite as a plan to review.

    Nothing is written; the plan is applied like any other.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    data, _stamp = workspace.read(KEEP_MD)
    if data is None:
        raise NotFound(f"{workspace.keep_md} does not exist: nothing to rewrite")
    KeepDoc.parse(data, workspace.keep_md)  # a file keepgui cannot read back is not sent anywhere
    shown = command if isinstance(command, str) else shlex.join(command)
    out = run_command(command, data, timeout=timeout, cwd=workspace.root)
    plan = plan_from_text(workspace, out, source=f"`{shown}`", threshold=threshold, history=history, target=target)
    if plan.data != data:
        # the proposal was made from other content: compared with the file now, the agent's newest
        # entries would look like removals by the command
        raise StalePlan(workspace.keep_md, "keep.md changed while the rewrite command ran; run it again")
    return plan
