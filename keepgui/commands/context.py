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
from typing import TYPE_CHECKING

from keepgui.commands.sources import add_backend_options, add_source_options, backend_options, open_bank, open_chosen
from keepgui.core.agents import installed
from keepgui.core.errors import InvalidInput

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context


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
    p.set_defaults(func=cmd_context)


def cmd_context(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui context``: the bank's exact parts, the report, ``--json`` or one ``--part``."""
    chosen = open_chosen(args, ctx)
    bank, _how = open_bank(args, chosen)
    context = bank.context(args.query, **backend_options(args, chosen, "context"))
    if args.part is not None:
        parts = context.named_parts()
        if args.part not in parts:
            raise InvalidInput(
                f"{chosen.backend.kind}'s context has no part `{args.part}` (its parts: {', '.join(parts)})"
            )
        text = parts[args.part]
        if text is not None:
            ctx.stdout.write(text)
        return 0
    agent = chosen.backend.agent
    version = installed(agent) if agent is not None else None
    if ctx.json_mode:
        obj = context.to_obj()
        if version is not None:
            obj["agent_version"] = version.to_obj()
        ctx.emit_json(obj)
        return 0
    ctx.stdout.write(context.describe())
    for warning in context.warnings:
        ctx.note(warning)
    if version is not None and version.differs:
        ctx.note(version.sentence())
    return 0
