"""``keepgui pending``: writes an agent staged for a person's approval, listed, approved or rejected.

Some agents stage their memory writes instead of making them (:mod:`keepgui.core.approvals`):

* ``keepgui pending [--agent KIND | --source PATH] [--bank NAME] [--json]`` lists each staged write
  with the change it would make to its file, as a unified diff; ``--agent KIND`` alone is the agent's
  own place (its home, where every project's queue is; ``--project DIR`` narrows it to a project where
  the agent has projects); with neither ``--agent`` nor ``--source``, the queues of every agent's own
  place on this machine (the demo's with ``--demo``);
* ``keepgui pending approve ID…|all`` applies them by the agent's own rules, as one change per bank
  (refused, with nothing written, when one of them cannot be applied now);
* ``keepgui pending reject ID…|all`` takes them out of the queue without applying them.

``--json`` lists one object a write: ``id``, ``agent``, ``source`` (the source's folder), ``bank``,
``path`` (the file it would change), ``target`` (that file relative to ``source``), ``summary``,
``created_ms``, ``applicable``, ``problem`` and ``diff``; approving or rejecting prints one object a
change: ``text``, ``message``, ``files``. Written once against
:func:`keepgui.core.approvals.approvals_of`: it names no agent.

Exit status: 0; 1 when a write cannot be approved (nothing is written then), an id is not waiting,
or the source stages no writes.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keepgui.commands.sources import add_source_options, open_chosen
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.textdiff import unified

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.approvals import Approvals, PendingWrite
    from keepgui.core.source import Change, Source


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``pending``."""
    p = sub.add_parser(
        "pending",
        parents=[common],
        help="writes an agent staged for your approval: list them, approve or reject them",
        description="With no action, list the staged writes, each with the change it would make. "
        "`approve ID…|all` applies them as the agent would; `reject ID…|all` drops them (both undoable "
        "in the window).",
    )
    add_source_options(p, banks="only the writes of this bank")
    p.add_argument("action", nargs="?", choices=("approve", "reject"), help="approve or reject the writes named")
    p.add_argument("ids", nargs="*", metavar="ID", help="ids as listed, or `all`")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_pending)


@dataclass(frozen=True)
class Queue:
    """One source's queue: the agent's kind, the source, how a command line names it again, its writes."""

    kind: str
    source: Source
    how: str
    approvals: Approvals
    writes: tuple[PendingWrite, ...]


def cmd_pending(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui pending [approve|reject ID…|all]`` (see the module docstring)."""
    if args.action is not None and not args.ids:
        raise InvalidInput(f"say which writes to {args.action}: their ids as listed, or `all`")
    queues = _queues(args, ctx)
    if args.action is None:
        _list(queues, ctx)
        return 0
    changes = [
        q.approvals.approve(ids) if args.action == "approve" else q.approvals.reject(ids)
        for q, ids in _chosen_ids(queues, args.ids)
    ]
    if ctx.json_mode:
        ctx.emit_json([_change_obj(c) for c in changes])
    else:
        for change in changes:
            ctx.out(f"{change.text}: {change.message or 'done'}")
    return 0


def _queues(args: argparse.Namespace, ctx: Context) -> list[Queue]:
    """The queues the options name: one source, or every agent's own place."""
    from keepgui.core.approvals import approvals_of

    agent, source, project = (getattr(args, name, None) for name in ("agent", "source", "project"))
    if agent and not source and not project:  # the agent's own queue: its home's, every project's
        found = [q for q in _every_place(args, ctx, agent) if q[0] == agent]
        if found:
            kind, opened, how = found[0]
            approvals = approvals_of(opened)
            if approvals is not None:
                return [_queue(kind, opened, how, approvals, args)]
    if agent or source or project:
        chosen = open_chosen(args, ctx)
        approvals = approvals_of(chosen.source)
        if approvals is None:
            raise InvalidInput(
                f"{_named(chosen.source)} stages no writes for approval: what its agent writes is written at once"
            )
        return [_queue(chosen.backend.kind, chosen.source, chosen.how, approvals, args)]
    out = []
    for kind, source, how in _every_place(args, ctx):
        approvals = approvals_of(source)
        if approvals is not None:
            out.append(_queue(kind, source, how, approvals, args))
    return out


def _queue(kind: str, source: Source, how: str, approvals: Approvals, args: argparse.Namespace) -> Queue:
    bank = getattr(args, "bank", None)
    writes = [w for w in approvals.pending() if bank is None or w.bank == bank]
    return Queue(kind, source, how, approvals, tuple(writes))


def _every_place(args: argparse.Namespace, ctx: Context, kind: str | None = None) -> Iterable[tuple[str, Source, str]]:
    """Each agent's own place (its home, or its folder in the demo) that exists, opened (only ``kind``'s when
    given)."""
    import shlex

    from keepgui.commands.sources import _reload_command
    from keepgui.core import registry

    options = registry.OpenOptions(reload_command=_reload_command(args))
    for backend in registry.declared():
        if kind is not None and backend.kind != kind:
            continue
        if getattr(args, "demo", False):
            try:
                path = ctx.demo().path(backend.kind)
            except AttributeError:
                continue
            how = f"--agent {backend.kind} --source {shlex.quote(path)}"
        else:
            home = backend.home(os.environ) if backend.home is not None else None
            if not home or not os.path.isdir(home):
                continue
            path, how = home, f"--agent {backend.kind}"
        yield backend.kind, registry.open_source(backend.kind, path, options), how


def _chosen_ids(queues: list[Queue], ids: list[str]) -> list[tuple[Queue, list[str]]]:
    """The ids to decide, queue by queue and bank by bank (``all``: every write listed)."""
    everything = list(ids) == ["all"]
    wanted = set(ids)
    out: list[tuple[Queue, list[str]]] = []
    found: set[str] = set()
    for queue in queues:
        by_bank: dict[str | None, list[str]] = {}
        for write in queue.writes:
            if everything or write.id in wanted:
                if write.id in found:
                    raise InvalidInput(f"more than one agent has a staged write `{write.id}`: say whose with --agent")
                found.add(write.id)
                by_bank.setdefault(write.bank, []).append(write.id)
        out.extend((queue, chosen) for chosen in by_bank.values())
    missing = [i for i in ids if i not in found and not everything]
    if missing:
        raise NotFound(f"no staged write {', '.join(missing)} is waiting (`keepgui pending` lists them)")
    if not out:
        raise NotFound("no staged writes are waiting")
    return out


def diff_of(write: PendingWrite) -> str:
    """The change a staged write would make to its file, as a unified diff."""
    return unified(write.before, write.after, f"a/{write.target}", f"b/{write.target}")


def _write_obj(queue: Queue, write: PendingWrite) -> dict[str, Any]:
    return {
        "id": write.id,
        "agent": queue.kind,
        "source": queue.source.path,
        "bank": write.bank,
        "path": os.path.normpath(os.path.join(queue.source.path, write.target)),
        "target": write.target,
        "summary": write.summary,
        "created_ms": write.created_ms,
        "applicable": write.applicable,
        "problem": write.problem or None,
        "diff": diff_of(write),
    }


def _change_obj(change: Change) -> dict[str, Any]:
    return {"text": change.text, "message": change.message, "files": [w.path for w in change.files]}


def _named(source: Source) -> str:
    """The source for people: its label, and its folder when the label does not give it whole."""
    return source.label if source.path in source.label else f"{source.label} ({source.path})"


def _list(queues: list[Queue], ctx: Context) -> None:
    if ctx.json_mode:
        ctx.emit_json([_write_obj(q, w) for q in queues for w in q.writes])
        return
    if not any(q.writes for q in queues):
        where = ", ".join(_named(q.source) for q in queues) or "no agent that stages writes"
        ctx.out(f"No writes await approval (looked at {where}).")
        return
    for queue in queues:
        if not queue.writes:
            continue
        ctx.out(f"{_named(queue.source)}: {len(queue.writes)} awaiting approval")
        for write in queue.writes:
            ctx.out(f"  {write.id}  {write.summary}")
            ctx.out(f"      {write.target}" + (f" — cannot be approved now: {write.problem}" if write.problem else ""))
            for line in diff_of(write).splitlines():
                ctx.out("      " + line)
        ctx.out(f"  approve: keepgui pending {queue.how} approve ID…|all · reject: … reject ID…|all")
