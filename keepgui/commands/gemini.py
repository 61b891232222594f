"""``keepgui pending --agent gemini``: Gemini CLI's Auto Memory inbox from the command line.

Lists what the extraction agent proposed (each patch with the line it adds, its target and, with
``--diff``, the change it would make), or applies and dismisses proposals exactly as Gemini's own
``/memory inbox`` does: ``--approve ID…`` / ``--reject ID…`` (ids as listed; one launch folder at a
time). The source is chosen as for every command (``--agent gemini`` is the Gemini home, ``--project
DIR`` a launch folder, ``--source PATH`` either). It is written against
:func:`keepgui.core.approvals.approvals_of` alone, so it names no backend's modules.

Exit status: 0; 1 when a proposal cannot be applied (nothing is written then).
"""

from __future__ import annotations

import argparse
import difflib
from typing import TYPE_CHECKING

from keepgui.commands.sources import add_source_options, open_chosen
from keepgui.core.approvals import approvals_of
from keepgui.core.errors import InvalidInput

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``inbox``."""
    p = sub.add_parser(
        "pending", parents=[common], help="Gemini CLI's Auto Memory proposals: list, approve or reject them"
    )
    add_source_options(p, banks="unused: every launch folder's inbox is listed")
    p.add_argument("--approve", nargs="+", metavar="ID", help="apply these proposals as Gemini applies them")
    p.add_argument("--reject", nargs="+", metavar="ID", help="dismiss these proposals (keepgui keeps them)")
    p.add_argument("--diff", action="store_true", help="show the change each proposal would make")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inbox)


def cmd_inbox(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui pending --agent gemini [--approve ID… | --reject ID…] [--diff] [--json]``."""
    chosen = open_chosen(args, ctx)
    queue = approvals_of(chosen.source)
    if queue is None:
        raise InvalidInput(f"{chosen.source.label} keeps no proposals for approval")
    if args.approve and args.reject:
        raise InvalidInput("give --approve or --reject, not both")
    decided = args.approve or args.reject
    if decided:
        change = queue.approve(decided) if args.approve else queue.reject(decided)
        if ctx.json_mode:
            ctx.emit_json({"text": change.text, "message": change.message, "files": [w.path for w in change.files]})
        else:
            ctx.out(f"{change.text}: {change.message or 'done'}")
        return 0
    pending = queue.pending()
    if ctx.json_mode:
        ctx.emit_json(
            [
                {
                    "id": p.id,
                    "bank": p.bank,
                    "target": p.target,
                    "summary": p.summary,
                    "applicable": p.applicable,
                    "problem": p.problem or None,
                    "created_ms": p.created_ms,
                    "before": p.before,
                    "after": p.after,
                }
                for p in pending
            ]
        )
        return 0
    if not pending:
        ctx.out("No proposals await approval.")
        return 0
    for p in pending:
        ctx.out(f"{p.id}  {p.summary}")
        ctx.out(f"    {p.target}" + (f" — cannot be applied now: {p.problem}" if p.problem else ""))
        if args.diff:
            for line in difflib.unified_diff(
                p.before.splitlines(keepends=True), p.after.splitlines(keepends=True), f"a/{p.target}", f"b/{p.target}"
            ):
                ctx.out("    " + line.rstrip("\n"))
    ctx.out(f"approve: keepgui pending {chosen.how} --approve ID · reject: --reject ID")
    return 0
