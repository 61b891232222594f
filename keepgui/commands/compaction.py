"""Compaction from the command line: ``keepgui compact`` and ``keepgui review``.

``keepgui compact (--workspace W | --bank B [--data-dir D]) [--target 120]
[--threshold N] [--fuzzy] [--select safe|all|none|LIST] [--via COMMAND] [--apply]
[--undo] [--json]`` plans a compaction of keep.md or a bank and prints it:
every operation (selected ones marked ``[x]``), the counts, and the whole diff
of the selection. Only ``--apply`` writes, and only the selected operations;
``--undo`` takes back the last compaction applied from the command line.

``keepgui review --workspace W [--file keep.md|MEMORY.md] [--restore ID|N|all]
[--accept] [--undo] [--json]`` shows what changed on disk since the last version
keepgui saw (a rewrite by the agent or Dream), entry by entry, with the command
that restores each change. Seeing a rewrite does not accept it: it is shown
again until ``--restore`` or ``--accept``.

Exit status: 0 when done (also when there is nothing to do); 1 on an error,
including a plan that went stale before it could be applied (nothing written).
"""

from __future__ import annotations

import argparse
import shlex
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keepgui.core.compaction import UNREVIEWED_REWRITE, Applied, Plan, StalePlan, UndoJournal, load_applied
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.history import file_key

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.backends.iii.store import DataDir
    from keepgui.backends.nanobot.workspace import Workspace
    from keepgui.cli import Context

_KIND_MARK = {True: "[x]", False: "[ ]"}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``compact`` and ``review``."""
    p = sub.add_parser(
        "compact",
        parents=[common],
        help="plan a compaction of keep.md or of a bank as a diff; --apply writes the selection",
    )
    p.add_argument(
        "--workspace",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the nanobot workspace whose keep.md to compact (default: --demo, else nanobot's config)",
    )
    p.add_argument(
        "--bank",
        metavar="NAME",
        default=argparse.SUPPRESS,
        help="consolidate this iii bank instead (memory-consolidate's rules)",
    )
    p.add_argument(
        "--target",
        type=int,
        default=None,
        metavar="LINES",
        help="keep.md: the line count to reach (default 120, the keep skill's)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="N",
        help="near-duplicate cut-off, 0–100 on rapidfuzz token_set_ratio (default 85)",
    )
    p.add_argument(
        "--fuzzy",
        action="store_true",
        help="bank: also propose rapidfuzz near-duplicate groups (never selected by default; compares "
        "every pair). keep.md plans always list near-duplicates",
    )
    p.add_argument(
        "--select",
        default="safe",
        metavar="SPEC",
        help="which operations: safe (default), all, none, numbers or ids (3,7,a1b2c3d4), "
        "or changes to a named set (safe,+7,-3)",
    )
    p.add_argument(
        "--via",
        metavar="COMMAND",
        help="keep.md: have COMMAND (an LLM CLI...) rewrite it: keep.md on stdin, the new file on "
        "stdout; its rewrite becomes the plan (run without a shell)",
    )
    p.add_argument(
        "--via-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop the --via command after this long (default 300)",
    )
    p.add_argument(
        "--reinforce-by-id",
        action="store_true",
        help="bank: after each supersede reinforce the winner by id (keepgui's option) instead of "
        "memory-consolidate's save of the winner's text, which creates a new record when the "
        "winner was edited and fails for a text outside 3..2000 bytes",
    )
    p.add_argument("--apply", action="store_true", help="write the selected operations")
    p.add_argument("--undo", action="store_true", help="take back the last compaction applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compact)

    p = sub.add_parser(
        "review", parents=[common], help="what changed in keep.md (or MEMORY.md) outside keepgui, with restore commands"
    )
    p.add_argument(
        "--workspace",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the nanobot workspace (default: --demo, else nanobot's config)",
    )
    p.add_argument("--file", default="keep.md", choices=("keep.md", "MEMORY.md"), help="the file to review")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="N",
        help="similarity (0–100) from which a changed line counts as a rewording (default 75)",
    )
    p.add_argument(
        "--restore",
        action="append",
        metavar="ID|N|all",
        help="restore these changes (ids or numbers, comma-separated or repeated; all; safe); "
        "the rest of the rewrite is then accepted",
    )
    p.add_argument("--accept", action="store_true", help="accept the file as it is now: stop showing this rewrite")
    p.add_argument(
        "--confirm-dream",
        action="store_true",
        help="allow writing MEMORY.md, which Dream manages (its next commit will include the edit)",
    )
    p.add_argument("--undo", action="store_true", help="take back the last restore applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_review)


# ---------------------------------------------------------------------- helpers


def _workspace(args: argparse.Namespace, ctx: Context) -> Workspace:
    from keepgui.commands.nanobot import open_workspace

    return open_workspace(
        args,
        ctx,
        writing=bool(
            getattr(args, "apply", False)
            or getattr(args, "restore", None)
            or getattr(args, "accept", False)
            or getattr(args, "undo", False)
        ),
    )


def _q(text: str) -> str:
    return shlex.quote(text)


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


def _applied_lines(ctx: Context, applied: Applied) -> None:
    for line in applied.lines:
        ctx.out(f"  {line}")


def _apply_and_report(
    ctx: Context, apply: Callable[[], Applied], kind: str, plan_obj: dict[str, Any], done: str, undo_command: str
) -> int:
    """Apply a plan, journal it for ``--undo`` and say what was written (``done`` takes the description)."""
    try:
        applied = apply()
    except StalePlan as exc:
        return _stale(ctx, exc)
    entry = UndoJournal().record(applied) if applied.changed else None
    if ctx.json_mode:
        ctx.emit_json({kind: plan_obj, "applied": applied.to_obj(), "journal": entry})
        return 0
    if not applied.changed:
        ctx.out("nothing written: the selection changes nothing")
        return 0
    ctx.out(done.format(applied.description))
    _applied_lines(ctx, applied)
    ctx.out(f"undo: {undo_command}")
    return 0


def _stale(ctx: Context, exc: StalePlan) -> int:
    ctx.note(str(exc))
    if exc.replanned is not None:
        if ctx.json_mode:
            ctx.emit_json({"stale": str(exc), "plan": exc.replanned.to_obj()})
        else:
            ctx.out(f"new plan: {exc.replanned.summary()}")
    return 1


# ---------------------------------------------------------------------- compact


def cmd_compact(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui compact``: plan (and with --apply, write) a compaction of keep.md or a bank."""
    bank = getattr(args, "bank", None)
    given_ws = getattr(args, "workspace", None)
    if bank and given_ws:
        raise InvalidInput("give either --workspace (keep.md) or --bank, not both")
    if args.apply and args.undo:
        raise InvalidInput("--apply and --undo cannot go together")
    if bank:
        if args.via:
            raise InvalidInput("--via rewrites keep.md; it cannot be used with --bank")
        return _compact_bank(args, ctx, bank)
    return _compact_keep(args, ctx)


def _compact_keep(args: argparse.Namespace, ctx: Context) -> int:
    from keepgui.backends.nanobot import compact as nano
    from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET
    from keepgui.backends.nanobot.writes import FUZZY_THRESHOLD

    workspace = _workspace(args, ctx)
    command = f"keepgui compact --workspace {_q(workspace.root)}"
    if args.undo:
        return _undo(ctx, file_key(workspace.keep_md), "keep.md")
    target = COMPACTION_TARGET if args.target is None else args.target
    plan: nano.RewritePlan | nano.KeepPlan
    if args.via:
        threshold = nano.REVIEW_THRESHOLD if args.threshold is None else args.threshold
        timeout = nano.VIA_TIMEOUT if args.via_timeout is None else args.via_timeout
        if timeout <= 0:
            raise InvalidInput("--via-timeout must be a number of seconds above 0")
        plan = nano.rewrite_via(workspace, args.via, timeout=timeout, threshold=threshold, target=target)
    else:
        threshold = FUZZY_THRESHOLD if args.threshold is None else args.threshold
        plan = nano.plan_keep(workspace, target=target, threshold=threshold)
    selection = plan.select(args.select)
    return _finish(args, ctx, plan, selection, command, lambda: plan.apply(selection))


def _compact_bank(args: argparse.Namespace, ctx: Context, name: str) -> int:
    from keepgui.backends.iii.compact import FUZZY_THRESHOLD, find_bank, plan_bank

    datadir = ctx.datadir()
    bank = find_bank(datadir, name)
    command = f"keepgui compact --bank {_q(name)} --data-dir {_q(datadir.path)}"
    if args.undo:
        return _undo(ctx, f"{datadir.path}::{name}", f"bank `{name}`", datadir=datadir)
    threshold = FUZZY_THRESHOLD if args.threshold is None else args.threshold
    if args.fuzzy and not ctx.json_mode:
        bank.ensure_loaded()
        live = len(bank.log.live())
        if live > 20_000:
            ctx.note(f"--fuzzy compares every pair of {live:,} memories; this can take minutes")
    plan = plan_bank(bank, fuzzy=args.fuzzy, threshold=threshold)
    selection = plan.select(args.select)

    def apply() -> Applied:
        """Apply the selection and say when a running worker could not be told."""
        applied = plan.apply(selection, reinforce_by_id=args.reinforce_by_id)
        ctx.report_reload(applied.reload)
        for error in applied.errors:
            ctx.note(error)
        return applied

    return _finish(args, ctx, plan, selection, command + (" --fuzzy" if args.fuzzy else ""), apply)


def _finish(
    args: argparse.Namespace,
    ctx: Context,
    plan: Plan,
    selection: frozenset[str],
    command: str,
    apply: Callable[[], Applied],
) -> int:
    """Print the plan, or apply it and print what changed (with the undo command)."""
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
            select = "" if args.select == "safe" else f" --select {_q(args.select)}"
            ctx.out(f"apply it: {command}{select} --apply")
            ctx.out("choose other operations with --select (all, none, 3,7 or safe,+7,-3)")
        else:
            ctx.out("nothing to compact")
        return 0
    return _apply_and_report(
        ctx, apply, "plan", plan.to_obj(selection), "applied: {}", f"{command.replace(' --fuzzy', '')} --undo"
    )


def _undo(ctx: Context, target: str, what: str, datadir: DataDir | None = None) -> int:
    journal = UndoJournal()
    entry = journal.last(target)
    if entry is None:
        raise NotFound(f"no compaction of {what} applied from the command line is left to undo")
    applied = load_applied(entry["applied"], journal.history)
    from keepgui.backends.iii.compact import BankApplied

    if datadir is not None and isinstance(applied, BankApplied):
        applied.undo(datadir=datadir)
        ctx.report_reload(applied.reload)
    else:
        applied.undo()
    journal.mark_undone(entry["id"])
    if ctx.json_mode:
        ctx.emit_json({"undone": applied.to_obj(), "journal": entry["id"]})
        return 0
    ctx.out(f"undone: {applied.description}")
    return 0


# ---------------------------------------------------------------------- review


def cmd_review(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui review``: the rewrite keepgui did not make, with restore commands; --restore/--accept act."""
    from keepgui.backends.nanobot import compact as nano
    from keepgui.backends.nanobot.workspace import MEMORY_MD

    if sum(bool(x) for x in (args.restore, args.accept, args.undo)) > 1:
        raise InvalidInput("use one of --restore, --accept and --undo at a time")
    workspace = _workspace(args, ctx)
    rel = MEMORY_MD if args.file == "MEMORY.md" else "keep.md"
    extra = f" --file {args.file}" if rel != "keep.md" else ""
    dream = " --confirm-dream" if rel == MEMORY_MD else ""
    command = f"keepgui review --workspace {_q(workspace.root)}{extra}"
    if args.undo:
        return _undo(ctx, file_key(workspace.path(rel)), args.file)
    threshold = nano.REVIEW_THRESHOLD if args.threshold is None else args.threshold
    plan = nano.review(workspace, rel, threshold=threshold)
    if args.accept:
        if plan.baseline is None:
            ctx.out(f"nothing to accept: {args.file} has no unreviewed change")
            return 0
        marker = plan.accept()
        if ctx.json_mode:
            ctx.emit_json({"accepted": marker, "path": plan.path})
        else:
            ctx.out(f"accepted {args.file} as it is now; this rewrite will not be shown again")
        return 0
    if args.restore:
        selection = plan.select(",".join(args.restore))
        return _apply_and_report(
            ctx,
            lambda: plan.apply(selection, confirm_dream=args.confirm_dream),
            "review",
            plan.to_obj(selection),
            "restored: {}; the rest of the rewrite is accepted",
            f"{command} --undo",
        )
    if ctx.json_mode:
        obj = plan.to_obj()
        obj["baseline"] = plan.baseline.to_obj() if plan.baseline else None
        obj["rewrite"] = plan.render_rewrite() if plan.baseline else ""
        obj["commands"] = {op.id: f"{command} --restore {op.id}{dream}" for op in plan.operations}
        ctx.emit_json(obj)
        return 0
    print_notices(ctx, plan)
    if plan.baseline is None:
        return 0
    ctx.out("")
    ctx.out(plan.render_rewrite().rstrip("\n"))
    ctx.out("")
    for group in plan.groups():
        ctx.out(f"{group.label}:")
        for op in group.operations:
            mark = _KIND_MARK[op.selected]
            ctx.out(f"  {mark} {op.number:>3} ({op.id}) {op.reason}")
            for text in op.before:
                ctx.out(f"          now:     {text}")
            for text in op.after:
                ctx.out(f"          restore: {text}")
            ctx.out(f"          restore it: {command} --restore {op.id}{dream}")
    if plan.operations:
        ctx.out("")
        ctx.out(f"restore every change: {command} --restore all{dream}")
        ctx.out(f"restore the selected ([x]): {command} --restore safe{dream}")
    ctx.out(f"accept the file as it is: {command} --accept")
    return 0
