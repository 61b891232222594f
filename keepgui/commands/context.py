"""``keepgui context``: what an agent's next session will be given from its memory, exactly.

``keepgui context --agent KIND [--project DIR | --source PATH] [--bank NAME] [--query TEXT]``
asks the bank for its :class:`~keepgui.core.source.AgentContext` (``Bank.context``): named exact
parts (each backend names its own), a report for a person and what
to tell them beside it. It prints the report (the remarks on stderr); ``--json`` prints the
backend's object, which holds every part under its own name; ``--part NAME`` prints one part
exactly and nothing else (nothing when the part is absent this time). ``--json`` also holds
``agent_version``: the version keepgui was checked against, the one installed here, and whether
they differ (:mod:`keepgui.core.agents`); the report says so when they do. ``--query`` is the question
of the turn, for the backends whose context depends on one. A backend's own options of this
command (``--exact``...) are named in its registry entry.

Exit status: 0; 1 when the folder is not there or the part is not one of the backend's.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from keepgui.commands.sources import (
    add_at_option,
    add_backend_options,
    add_source_options,
    backend_options,
    open_bank,
    open_chosen,
)
from keepgui.core.agents import installed
from keepgui.core.errors import InvalidInput

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.contextdiff import Moment
    from keepgui.core.registry import Backend
    from keepgui.core.source import AgentContext


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``context`` command (the backend is imported only when it runs)."""
    p = sub.add_parser(
        "context", parents=[common], help="what an agent's next session is given from its memory, exactly"
    )
    add_source_options(p)
    p.add_argument(
        "--query", metavar="TEXT", default="", help="the question of the turn, where the context depends on one"
    )
    p.add_argument("--part", metavar="NAME", help="print only this part, exactly")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_backend_options(p, "context")
    add_at_option(p, "the context")
    p.add_argument(
        "--diff",
        metavar="TIME",
        default=None,
        help="with --at T1: what changed in the context from T1 to this time (`now`, ISO 8601, or a time ago)",
    )
    p.set_defaults(func=cmd_context)


def cmd_context(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui context``: the bank's exact parts, the report, ``--json`` or one ``--part``."""
    if args.diff is not None:
        return _diff(args, ctx)
    chosen = open_chosen(args, ctx)
    bank, _how = open_bank(args, chosen)
    if args.at is not None:
        from keepgui.commands.sources import past_of
        from keepgui.core.timetravel import parse_when

        at = parse_when(args.at)
        with past_of(args, ctx, chosen, at) as past:
            then = past.bank(bank.key.bank)
            return _shown(
                args,
                ctx,
                chosen.backend,
                then.context(args.query, **backend_options(args, chosen, "context")),
                past.shown,
            )
    return _shown(args, ctx, chosen.backend, bank.context(args.query, **backend_options(args, chosen, "context")), str)


def _shown(
    args: argparse.Namespace, ctx: Context, backend: Backend, context: AgentContext, shown: Callable[[str], str]
) -> int:
    if args.part is not None:
        parts = context.named_parts()
        if args.part not in parts:
            raise InvalidInput(f"{backend.kind}'s context has no part `{args.part}` (its parts: {', '.join(parts)})")
        text = parts[args.part]
        if text is not None:
            ctx.stdout.write(shown(text))
        return 0
    agent = backend.agent
    version = installed(agent) if agent is not None else None
    if ctx.json_mode:
        obj = json.loads(shown(json.dumps(context.to_obj(), ensure_ascii=False)))
        if version is not None:
            obj["agent_version"] = version.to_obj()
        ctx.emit_json(obj)
        return 0
    ctx.stdout.write(shown(context.describe()))
    for warning in context.warnings:
        ctx.note(shown(warning))
    if version is not None and version.differs:
        ctx.note(version.sentence())
    return 0


def _moment(args: argparse.Namespace, ctx: Context, when: str) -> Moment:
    """The context at ``when`` (``now`` the source as it is): its parts, the rows' texts, the files' hashes."""
    from keepgui.commands.sources import past_of
    from keepgui.core.contextdiff import read_moment
    from keepgui.core.timetravel import parse_when

    chosen = open_chosen(args, ctx)
    bank, _how = open_bank(args, chosen)
    options = backend_options(args, chosen, "context")
    if when.strip().lower() == "now":
        return read_moment(bank, args.query, options)
    with past_of(args, ctx, chosen, parse_when(when)) as past:
        return read_moment(past.bank(bank.key.bank), args.query, options, past.shown)


def _diff(args: argparse.Namespace, ctx: Context) -> int:
    """``context --at T1 --diff T2``: each part's unified diff and what it means in memories and files
    (:func:`keepgui.core.contextdiff.compare`)."""
    from keepgui.core.contextdiff import compare

    if args.at is None:
        raise InvalidInput("--diff T2 compares with --at T1: give both")
    diff = compare(_moment(args, ctx, args.at), _moment(args, ctx, args.diff), args.at, args.diff)
    if ctx.json_mode:
        ctx.emit_json(diff.to_obj())
        return 0
    ctx.out(diff.summary)
    for name, part in diff.parts.items():
        ctx.out(f"part {name}: +{part.added} −{part.removed} lines" if part.diff else f"part {name}: unchanged")
        if part.diff:
            ctx.stdout.write(part.diff if part.diff.endswith("\n") else part.diff + "\n")
    return 0
