"""``keepgui inbox`` and ``keepgui watch``: what anything other than keepgui changed, for every source.

``keepgui inbox [--agent KIND | --source PATH] [--json] [--reviewed]`` lists, newest first, every
change someone else made to a memory file and every write an agent staged for approval: its id,
agent, file and time, and entry by entry what was added, removed, edited or merged (in the
backend's own notion of an entry). Without ``--agent``/``--source`` it covers every source keepgui
has recorded (and, the first time, the agents found on this machine). Before listing, each source is
compared with its last recorded version, so changes made while keepgui was not running arrive too.

* ``keepgui inbox accept ID|all``: mark changes reviewed;
* ``keepgui inbox revert ID [--entry N]``: take the change (or its N-th entry change) back, merged
  with what was written after it, or refused with the reason;
* ``keepgui inbox approve ID`` / ``reject ID``: a staged write.

``--json`` prints ``{items: [{id, kind, agent, source, bank, path, at, reviewed, entries: [{n, kind,
before, after}]}], journal: {bytes, cap}}`` (for an action: ``{done, message}``).

``keepgui watch [--once] [--interval SECONDS]`` records every version of every known source's memory
files, with no window (a server, a session without a tray), until interrupted.

Exit status: 0; 1 when an item is not found or an action is refused.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any

from keepgui.commands.sources import add_source_options, open_chosen
from keepgui.core.errors import InvalidInput, KeepguiError

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.inbox import Item
    from keepgui.core.journal import Journal
    from keepgui.core.source import Bank, Source

ACTIONS = ("accept", "revert", "approve", "reject")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``inbox`` and ``watch``."""
    p = sub.add_parser(
        "inbox", parents=[common], help="every change made outside keepgui, across sources: list, accept, revert"
    )
    add_source_options(p)
    p.add_argument("action", nargs="?", choices=ACTIONS, help="what to do with an item (default: list them)")
    p.add_argument("id", nargs="?", help="the item's id as listed (a unique prefix will do; `all` for accept)")
    p.add_argument("--entry", type=int, metavar="N", help="revert only the N-th entry change of the item")
    p.add_argument("--reviewed", action="store_true", help="list reviewed changes too")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inbox)
    w = sub.add_parser("watch", parents=[common], help="record every version of every memory file, without a window")
    add_source_options(w)
    w.add_argument("--once", action="store_true", help="compare every source once and exit")
    w.add_argument("--interval", type=float, default=2.0, metavar="SECONDS", help="how often to look (default 2)")
    w.set_defaults(func=cmd_watch)


def _sources(args: argparse.Namespace, ctx: Context, journal: Journal) -> list[Source]:
    """The chosen source, or every source the journal knows (the agents found here, the first time),
    each compared with its last recorded version."""
    from keepgui.core import registry
    from keepgui.core.journal import sync_source

    if any(getattr(args, name, None) for name in ("agent", "source")):
        return [open_chosen(args, ctx).source]
    known = journal.sources() or [(f.kind, f.path) for f in registry.discover()]
    opened = []
    for kind, path in known:
        if not os.path.isdir(path):
            continue  # a folder since removed (a demo copy, a project deleted): nothing to compare
        try:
            source = registry.open_source(kind, path)
            sync_source(journal, source)
        except (KeepguiError, OSError) as exc:
            ctx.note(f"{path}: {exc}")
            continue
        opened.append(source)
    return opened


def cmd_inbox(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui inbox``: list, or act on one item."""
    from keepgui.core import inbox
    from keepgui.core.journal import install

    journal = install()
    opened = _sources(args, ctx, journal)
    journal.thin()
    found = inbox.items(journal, opened, reviewed=args.reviewed)
    banks = _Banks(opened)
    if args.action is None:
        return _list(ctx, journal, found, banks)
    if not args.id:
        raise InvalidInput(f"say which item: keepgui inbox {args.action} ID")
    if args.action == "accept":
        chosen = [i for i in found if i.version is not None] if args.id == "all" else [inbox.find(found, args.id)]
        change = inbox.accept(journal, chosen)
    else:
        item = inbox.find(found, args.id)
        if args.action == "revert":
            change = inbox.revert(journal, item, banks.bank(item), args.entry)
        else:
            change = inbox.approve(banks.source(item), [item], args.action == "approve")
    if ctx.json_mode:
        ctx.emit_json({"done": args.action, "message": change.message})
    else:
        ctx.out(change.message or f"{args.action}: done")
    return 0


def _list(ctx: Context, journal: Journal, found: list[Item], banks: _Banks) -> int:
    from keepgui.core import inbox
    from keepgui.core.journal import default_cap
    from keepgui.core.timefmt import relative_time

    rows: list[dict[str, Any]] = []
    for item in found:
        obj = item.to_obj()
        try:
            bank = banks.bank(item)
            changes = inbox.entry_changes(journal, item, bank)
            undone = inbox.undone_now(item, bank, changes)
        except (KeepguiError, OSError) as exc:
            changes, undone = [], []
            obj["problem"] = str(exc)
        obj["entries"] = [
            {**c.to_obj(n), "reverted": u} for n, (c, u) in enumerate(zip(changes, undone, strict=True), 1)
        ]
        rows.append(obj)
        if not ctx.json_mode:
            ctx.out(f"{item.id}  {relative_time(item.at)}  {item.agent}  {item.what}  {item.path}")
            if item.pending is not None:
                ctx.out(f"    {item.pending.summary}" + (f" ({item.pending.problem})" if item.pending.problem else ""))
            for n, (change, gone) in enumerate(zip(changes, undone, strict=True), 1):
                ctx.out(f"    {n}. {change.describe()}" + ("  (reverted since)" if gone else ""))
    if ctx.json_mode:
        ctx.emit_json({"items": rows, "journal": {"bytes": journal.size(), "cap": default_cap()}})
        return 0
    ctx.out(f"{len(found)} item{'s' if len(found) != 1 else ''} · journal {inbox.size_text(journal)}")
    if found:
        ctx.out("accept: keepgui inbox accept ID|all · revert: keepgui inbox revert ID [--entry N]")
    return 0


class _Banks:
    """The opened sources' banks, by the item that needs one."""

    def __init__(self, opened: list[Source]) -> None:
        self.by_path = {s.path: s for s in opened}

    def source(self, item: Item) -> Source:
        return self.by_path[item.source]

    def bank(self, item: Item) -> Bank:
        from keepgui.core.inbox import bank_of

        return bank_of(self.source(item), item)


def cmd_watch(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui watch``: compare every source, record what changed, again every ``--interval`` seconds."""
    from keepgui.core.journal import install, sync_source

    journal = install()
    opened = _sources(args, ctx, journal)
    if not opened:
        raise InvalidInput("no source to watch: name one with --agent KIND or --source PATH")
    ctx.note(f"watching {len(opened)} source{'s' if len(opened) != 1 else ''} (Ctrl+C stops)")
    try:
        while not args.once:
            time.sleep(max(0.1, args.interval))
            for source in opened:
                for entry in sync_source(journal, source):
                    ctx.out(f"changed: {entry.path}")
            journal.thin()
    except KeyboardInterrupt:
        return 0
    return 0
