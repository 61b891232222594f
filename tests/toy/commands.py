"""The toy backend's own command: ``keepgui jot-count --agent jots`` (as Hermes's ``pending`` would be)."""

from __future__ import annotations

import argparse
from typing import Any

from keepgui.commands.sources import add_source_options, open_bank, open_chosen


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``jot-count``."""
    p = sub.add_parser("jot-count", parents=[common], help="how many jots are kept, pinned and forgotten")
    add_source_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_count)


def cmd_count(args: argparse.Namespace, ctx: Any) -> int:
    """``keepgui jot-count``."""
    chosen = open_chosen(args, ctx)
    bank, _how = open_bank(args, chosen)
    bank.load(full=True)
    rows = bank.rows()
    counts = {
        "kept": sum(1 for r in rows if r.invalid_at is None),
        "pinned": sum(1 for r in rows if r.pinned),
        "forgotten": sum(1 for r in rows if r.invalid_at is not None),
    }
    if ctx.json_mode:
        ctx.emit_json(counts)
    else:
        ctx.out(", ".join(f"{n} {what}" for what, n in counts.items()))
    return 0
