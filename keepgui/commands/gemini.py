"""``keepgui gemini-inbox``: the old form of ``keepgui pending --agent gemini``, kept working.

Gemini CLI's Auto Memory inbox was first listed, approved and rejected by its own command (then named
``inbox``, a name the generic inbox of every source's changes now has). The generic ``keepgui pending``
(:mod:`keepgui.commands.pending`) does it for every agent that stages writes; this old form takes the
old options (``--approve ID…``, ``--reject ID…``, ``--diff``, ``--json``), says on stderr what
replaces it, and runs it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from keepgui.commands.pending import cmd_pending
from keepgui.commands.sources import add_source_options
from keepgui.core.errors import InvalidInput

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``gemini-inbox``."""
    p = sub.add_parser(
        "gemini-inbox", parents=[common], help="old form of `keepgui pending --agent gemini` (Auto Memory proposals)"
    )
    add_source_options(p, banks="only the proposals of this launch folder")
    p.add_argument("--approve", nargs="+", metavar="ID", help="apply these proposals as Gemini applies them")
    p.add_argument("--reject", nargs="+", metavar="ID", help="dismiss these proposals (keepgui keeps them)")
    p.add_argument("--diff", action="store_true", help="(the diffs are always shown now)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_gemini_inbox)


def cmd_gemini_inbox(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui gemini-inbox [--approve ID… | --reject ID…]``: ``keepgui pending --agent gemini …``."""
    if args.approve and args.reject:
        raise InvalidInput("give --approve or --reject, not both")
    action = "approve" if args.approve else "reject" if args.reject else None
    ids = list(args.approve or args.reject or ())
    new = "pending --agent gemini" + (f" {action} {' '.join(ids)}" if action else "")
    ctx.replaced("gemini-inbox" + (f" --{action} …" if action else ""), new)
    if not getattr(args, "agent", None) and not getattr(args, "source", None):
        args.agent = "gemini"
    args.action, args.ids = action, ids
    return cmd_pending(args, ctx)
