"""``keepgui compact`` and ``keepgui review`` for every backend, and how every plan is printed.

``keepgui compact (--agent KIND | --source PATH) [--bank NAME] [--select safe|all|none|LIST]
[--apply] [--undo] [--json]`` plans a compaction of a bank (``Bank.plan("compact")``) and prints it:
every operation (selected ones marked ``[x]``), the counts, and the whole diff of the selection.
Only ``--apply`` writes, and only the selected operations; ``--undo`` takes back the last
compaction applied from the command line. A backend's own options of the plan (``--fuzzy``,
``--target``, ``--via``...) are named in its registry entry.

``keepgui review (--agent KIND | --source PATH) [--file NAME] [--restore ID|N|all] [--accept]
[--undo] [--json]`` shows what changed on disk since the version keepgui last saw (a rewrite by
the agent), change by change, with the command that restores each; seeing a rewrite does not
accept it: it is shown again until ``--restore`` or ``--accept``. ``--file`` names one of the
files the bank reviews (its Capabilities' ``reviews``; the first by default).

``--json``: ``compact`` prints the plan (``Plan.to_obj``: ``kind``, ``subject``, ``operations``,
``selection``, ``counts``, ``notices``, ``diff``); with ``--apply`` ``{plan, applied, journal}``,
with ``--undo`` ``{undone, journal}``. ``review`` prints ``{summary, ...the plan}``; with
``--restore`` ``{review, applied, journal}``; with ``--accept`` ``{accepted, message}``.

Exit status: 0 when done (also when there is nothing to do); 1 on an error, including a plan that
went stale before it could be applied (nothing written).
"""

from __future__ import annotations

import argparse
import shlex
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keepgui.commands.sources import (
    add_backend_options,
    add_source_options,
    backend_options,
    given_options,
    open_bank,
    open_chosen,
)
from keepgui.core.compaction import UNREVIEWED_REWRITE, Applied, Plan, StalePlan, UndoJournal
from keepgui.core.errors import InvalidInput, NotFound

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.source import Bank, Change

_KIND_MARK = {True: "[x]", False: "[ ]"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``compact`` and ``review``."""
    p = sub.add_parser(
        "compact", parents=[common], help="plan a compaction of a bank as a diff; --apply writes the selection"
    )
    add_source_options(p)
    p.add_argument(
        "--select",
        default="safe",
        metavar="SPEC",
        help="which operations: safe (default), all, none, numbers or ids (3,7,a1b2c3d4), "
        "or changes to a named set (safe,+7,-3)",
    )
    p.add_argument("--apply", action="store_true", help="write the selected operations")
    p.add_argument("--undo", action="store_true", help="take back the last compaction applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_backend_options(p, "compact")
    p.set_defaults(func=cmd_compact)

    p = sub.add_parser(
        "review", parents=[common], help="what the agent changed in its memory outside keepgui, with restore commands"
    )
    add_source_options(p)
    p.add_argument("--file", metavar="NAME", help="the file to review (default: the bank's first)")
    p.add_argument(
        "--restore",
        action="append",
        metavar="ID|N|all",
        help="restore these changes (ids or numbers, comma-separated or repeated; all; safe)",
    )
    p.add_argument("--accept", action="store_true", help="accept the memory as it is now: stop showing this rewrite")
    p.add_argument("--undo", action="store_true", help="take back the last restore applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_backend_options(p, "review")
    p.set_defaults(func=cmd_review)


# ---------------------------------------------------------------------- printing plans (every command's)


def print_operations(ctx: Context, plan: Plan, selection: frozenset[str]) -> None:
    """Every operation, grouped by kind: ``[x] 3 (a1b2c3d4) reason`` and its texts."""
    for group in plan.groups():
        ctx.out(f"{group.label}:")
        for op in group.operations:
            mark = _KIND_MARK[op.id in selection] if op.applicable else "[-]"
            ctx.out(f"  {mark} {op.number:>3} ({op.id}) {op.reason}")
            before, after = Counter(t for t in op.before if t), Counter(t for t in op.after if t)
            for text in (before - after).elements():
                ctx.out(f"          - {text}")
            for text in (after - before).elements():
                ctx.out(f"          + {text}")
            for evidence in op.evidence:
                ctx.out(f"          = {evidence}")


def print_notices(ctx: Context, plan: Plan) -> None:
    """The plan's notices, one per line."""
    for notice in plan.notices:
        how = ": `keepgui review` shows it" if notice.code == UNREVIEWED_REWRITE else ""
        ctx.out(f"{notice.level}: {notice.message}{how}")


def apply_and_report(
    ctx: Context,
    apply: Callable[[], Applied],
    kind: str,
    plan_obj: dict[str, Any],
    done: str,
    undo_command: str,
    scope: str = "",
) -> int:
    """Apply a plan, journal it for ``--undo`` and say what was written (``done`` takes the description)."""
    try:
        applied = apply()
    except StalePlan as exc:
        return stale(ctx, exc)
    entry = UndoJournal().record(applied, scope) if applied.changed else None
    if ctx.json_mode:
        ctx.emit_json({kind: plan_obj, "applied": applied.to_obj(), "journal": entry})
        return 0
    if not applied.changed:
        ctx.out("nothing written: the selection changes nothing")
        return 0
    ctx.out(done.format(applied.description))
    for line in applied.lines:
        ctx.out(f"  {line}")
    ctx.out(f"undo: {undo_command}")
    return 0


def stale(ctx: Context, exc: StalePlan) -> int:
    """Say that the plan went stale (nothing was written), with the new plan when there is one."""
    ctx.note(str(exc))
    if exc.replanned is not None:
        if ctx.json_mode:
            ctx.emit_json({"stale": str(exc), "plan": exc.replanned.to_obj()})
        else:
            ctx.out(f"new plan: {exc.replanned.summary()}")
    return 1


def finish(
    args: argparse.Namespace,
    ctx: Context,
    plan: Plan,
    selection: frozenset[str],
    command: str,
    apply: Callable[[], Applied],
    scope: str = "",
) -> int:
    """Print the plan, or (``--apply``) apply it and print what changed, with the undo command."""
    if not args.apply:
        if ctx.json_mode:
            ctx.emit_json(plan.to_obj(selection))
            return 0
        ctx.out(plan.summary(selection))
        print_notices(ctx, plan)
        if plan.operations:
            print_operations(ctx, plan, selection)
            ctx.out("")
            ctx.out(plan.render(selection).rstrip("\n") or "(the selection changes nothing)")
            ctx.out("")
            select = "" if args.select == "safe" else f" --select {shlex.quote(args.select)}"
            ctx.out(f"apply it: {command}{select} --apply")
            ctx.out("choose other operations with --select (all, none, 3,7 or safe,+7,-3)")
        else:
            ctx.out("nothing to compact")
        return 0
    return apply_and_report(
        ctx, apply, "plan", plan.to_obj(selection), "applied: {}", f"{command.replace(' --fuzzy', '')} --undo", scope
    )


# ---------------------------------------------------------------------- the common commands


def _scope(bank: Bank, what: str) -> str:
    """What the journal files an apply under: the source, the bank and the kind of plan."""
    return f"{bank.key.source}::{bank.key.bank}::{what}"


def _applied_by(ctx: Context, change: Change) -> Applied:
    """The Applied a bank's apply returned (its Change's ``result``), after saying its notes."""
    for note in change.notes:
        ctx.note(note)
    applied = change.result
    if not isinstance(applied, Applied):
        raise InvalidInput(f"{change.text}: the backend did not say what it applied")
    return applied


def undo_last(ctx: Context, bank: Bank, what: str, label: str) -> int:
    """Take back the last plan of ``what`` applied to ``bank`` from the command line."""
    journal = UndoJournal()
    entry = journal.last(scope=_scope(bank, what))
    if entry is None:
        raise NotFound(f"no {label} of bank `{bank.key}` applied from the command line is left to undo")
    change = bank.undo_applied(entry["applied"])
    journal.mark_undone(entry["id"])
    for note in change.notes:
        ctx.note(note)
    applied = change.result
    obj = applied.to_obj() if isinstance(applied, Applied) else entry["applied"]
    if ctx.json_mode:
        ctx.emit_json({"undone": obj, "journal": entry["id"]})
        return 0
    ctx.out(f"undone: {obj.get('description', label)}" + ("" if change.written else " (nothing was left to change)"))
    return 0


def _refuse_unless(bank: Bank, what: str) -> None:
    if not bank.capabilities.can(what):
        from keepgui.core.source import refuse

        refuse(bank.capabilities, what)


def cmd_compact(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui compact``: plan (and with ``--apply``, write) a compaction of a bank."""
    from keepgui.core.source import COMPACT

    if args.apply and args.undo:
        raise InvalidInput("--apply and --undo cannot go together")
    chosen = open_chosen(args, ctx)
    bank, how = open_bank(args, chosen)
    _refuse_unless(bank, COMPACT)
    options = backend_options(args, chosen, "compact")
    if args.undo:
        return undo_last(ctx, bank, COMPACT, "compaction")
    bank.load(full=True)
    plan = bank.plan(COMPACT, **options)
    selection = plan.select(args.select)
    text = f"Compact {bank.key}"
    return finish(
        args,
        ctx,
        plan,
        selection,
        f"keepgui compact {how}{given_options(options)}",
        lambda: _applied_by(ctx, bank.apply_plan(plan, selection, text)),
        _scope(bank, COMPACT),
    )


def cmd_review(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui review``: the rewrite keepgui did not make, with restore commands; --restore/--accept act."""
    from keepgui.core.source import REVIEW

    if sum(bool(x) for x in (args.restore, args.accept, args.undo)) > 1:
        raise InvalidInput("use one of --restore, --accept and --undo at a time")
    chosen = open_chosen(args, ctx)
    bank, how = open_bank(args, chosen)
    _refuse_unless(bank, REVIEW)
    reviews = bank.capabilities.reviews or (REVIEW,)
    what = args.file or reviews[0]
    if what not in reviews:
        raise InvalidInput(f"bank `{bank.key}` reviews {', '.join(reviews)}, not {what}")
    options = backend_options(args, chosen, "review")
    command = f"keepgui review {how}" + (f" --file {shlex.quote(what)}" if what != reviews[0] else "")
    if args.undo:
        return undo_last(ctx, bank, what, "restore")
    bank.load(full=True)
    plan = bank.plan(what, **options)
    if args.accept:
        change = bank.accept_review(plan)
        if ctx.json_mode:
            ctx.emit_json({"accepted": True, "message": change.message})
        else:
            ctx.out(change.message or f"accepted {what} as it is now")
        return 0
    if args.restore:
        selection = plan.select(",".join(args.restore))
        text = f"Restore {len(selection)} change(s) of {bank.key}"
        return apply_and_report(
            ctx,
            lambda: _applied_by(ctx, bank.apply_plan(plan, selection, text)),
            "review",
            plan.to_obj(selection),
            "restored: {}",
            f"{command} --undo",
            _scope(bank, what),
        )
    summary = plan.describe() or plan.summary()
    if ctx.json_mode:
        ctx.emit_json({"summary": summary, **plan.to_obj(plan.default_selection())})
        return 0
    ctx.out(f"{bank.summary().title or bank.key}: {summary}")
    print_notices(ctx, plan)
    if plan.operations:
        print_operations(ctx, plan, plan.default_selection())
        ctx.out("")
        ctx.out(f"restore some: {command} --restore 1,2 (or all, or safe: the ones marked [x]); or --accept")
    return 0
