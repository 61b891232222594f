"""nanobot's verbs from before the common commands: keep a fact, list, forget and unforget entries,
preview the prompt, compact and review keep.md.

Each takes its own ``--workspace DIR`` (the main parser's repeatable
``--workspace`` is for the window; given there it is accepted too, the last one
wins), else ``--demo``, else nanobot's own discovery (config.json, then
``~/.nanobot/workspace``). They still work as they did, output included, and say
on stderr which common command replaces them (``keep --agent nanobot``...).

Exit status: 0 when done; 1 when nothing was written (``keep`` found a
duplicate, offered a replacement or suggested another place) or on an error.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, SOFT_CAP, KeepDoc, normalise
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.backends.nanobot.writes import ALREADY_KEPT, KEEP_CAPABILITIES, REDIRECTED, REPLACE_OFFERED, KeepStore
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the nanobot commands."""

    def workspace_option(p: argparse.ArgumentParser) -> None:
        """Give a subcommand its own ``--workspace``."""
        # SUPPRESS: when not given here, a --workspace given before the command name still counts
        p.add_argument(
            "--workspace",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help="the nanobot workspace (default: --demo, else nanobot's config.json, else ~/.nanobot/workspace)",
        )

    p = sub.add_parser("keep", parents=[common], help="keep a fact in keep.md, as the keep skill would")
    p.add_argument("text", nargs="+", help="the fact (several words are joined with spaces)")
    workspace_option(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="keep it even if triage suggests another place or an entry already contains it",
    )
    p.add_argument("--replace", action="store_true", help="replace the entries the new fact contains")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--stand-alone",
        action="store_true",
        default=argparse.SUPPRESS,
        help="write keep.md directly even when a keepgui window is running",
    )
    p.set_defaults(func=cmd_keep)

    p = sub.add_parser("entries", parents=[common], help="nanobot: old form of `memories --agent nanobot`")
    workspace_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_entries)

    p = sub.add_parser("forget", parents=[common], help="remove a keep.md entry (undo with unforget)")
    p.add_argument("target", nargs="+", metavar="INDEX_OR_TEXT", help="the entry's number, id or text")
    workspace_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("unforget", parents=[common], help="nanobot: old form of `restore --agent nanobot`")
    workspace_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_unforget)

    p = sub.add_parser(
        "nanobot-preview",
        parents=[common],
        help="nanobot: old form of `context --agent nanobot` (with --summary and --full)",
    )
    workspace_option(p)
    p.add_argument(
        "--exact", action="store_true", help="use nanobot's own ContextBuilder (needs the nanobot-ai package installed)"
    )
    p.add_argument("--summary", action="store_true", help="sizes only, without the texts")
    p.add_argument("--full", action="store_true", help="with --exact: print nanobot's whole system prompt")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_preview)

    p = sub.add_parser("compact", parents=[common], help="plan a compaction of keep.md as a diff; --apply writes it")
    workspace_option(p)
    p.add_argument("--target", type=int, default=None, metavar="LINES", help="the line count to reach (default 120)")
    p.add_argument("--threshold", type=float, default=None, metavar="N", help="near-duplicate cut-off (default 85)")
    p.add_argument("--select", default="safe", metavar="SPEC", help="which operations (safe, all, none, 3,7...)")
    p.add_argument(
        "--via", metavar="COMMAND", help="have COMMAND rewrite keep.md (stdin to stdout); its rewrite is the plan"
    )
    p.add_argument("--via-timeout", type=float, default=None, metavar="SECONDS", help="stop --via after this long")
    p.add_argument("--apply", action="store_true", help="write the selected operations")
    p.add_argument("--undo", action="store_true", help="take back the last compaction applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_compact)

    p = sub.add_parser("review", parents=[common], help="what changed in keep.md (or MEMORY.md) outside keepgui")
    workspace_option(p)
    p.add_argument("--file", default="keep.md", choices=("keep.md", "MEMORY.md"), help="the file to review")
    p.add_argument("--threshold", type=float, default=None, metavar="N", help="rewording similarity (default 75)")
    p.add_argument("--restore", action="append", metavar="ID|N|all", help="restore these changes (ids, numbers, all)")
    p.add_argument("--accept", action="store_true", help="accept the file as it is now: stop showing this rewrite")
    p.add_argument("--confirm-dream", action="store_true", help="allow writing MEMORY.md, which Dream manages")
    p.add_argument("--undo", action="store_true", help="take back the last restore applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_review)


# ---------------------------------------------------------------------- helpers


def workspace_path(ctx: Context) -> str:
    """``--workspace``, else the demo's workspace (with ``--demo``), else nanobot's discovery."""
    given = getattr(ctx.args, "workspace", None)
    if isinstance(given, list):  # the window's repeatable --workspace given before the command
        given = given[-1] if given else None
    if given:
        return os.path.abspath(os.path.expanduser(str(given)))
    if getattr(ctx.args, "demo", False):
        return ctx.demo().path("nanobot")
    from keepgui.backends.nanobot.workspace import discover_workspace

    return discover_workspace()


def _now(ctx: Context, old: str, new: str) -> None:
    """Say which common command replaces an old one (``--source W`` for a ``--workspace W``)."""
    given = getattr(ctx.args, "workspace", None)
    source = (
        f" --source {shlex.quote(workspace_path(ctx))}"
        if given
        else " --demo"
        if getattr(ctx.args, "demo", False)
        else ""
    )
    verb, _, rest = new.partition(" ")
    ctx.replaced(old, f"{verb} --agent nanobot{source}" + (f" {rest}" if rest else ""))


def open_workspace(args: argparse.Namespace, ctx: Context, *, writing: bool) -> Workspace:
    """The workspace the command works on; refuses a folder that is not a nanobot workspace for writes."""
    workspace = Workspace(workspace_path(ctx))
    if not workspace.exists():
        raise NotFound(f"{workspace.root}: no such folder; give the nanobot workspace with --workspace DIR")
    if not workspace.is_workspace():
        message = (
            f"{workspace.root} does not look like a nanobot workspace (no memory/MEMORY.md or memory/history.jsonl)"
        )
        if writing:
            raise InvalidInput(message + "; give the right one with --workspace DIR")
        ctx.note(message)
    return workspace


def counts_line(counts: dict[str, Any]) -> str:
    """``keep.md: 160 entries, 172 lines (cap 150, target ~120) · compaction due``."""
    text = (
        f"keep.md: {counts['entries']} entries, {counts['lines']} lines (cap {SOFT_CAP}, target ~{COMPACTION_TARGET})"
    )
    return text + (" · compaction due" if counts["compaction_due"] else "")


# ---------------------------------------------------------------------- commands


def cmd_keep(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui keep TEXT``: exit 1 when nothing was written.

    With a keepgui window running (and no ``--stand-alone``/``--demo``), the fact
    is handed to it when it shows that workspace: the window keeps it through its
    undo stack (Edit → Undo takes it back) and answers with the same result.
    Human output is then identical, plus a note on stderr; ``--json`` prints the
    same object with two more keys, ``handled_by: "window"`` and ``undoable``.
    A workspace the window does not show is kept directly, as with no window.
    """
    _now(ctx, "keep TEXT", "keep TEXT")
    workspace = open_workspace(args, ctx, writing=True)
    text = " ".join(args.text)
    handed = hand_over_keep(args, ctx, workspace, text)
    if handed is not None:
        return handed
    result = KeepStore(workspace).add(text, force=args.force, replace=args.replace)
    if ctx.json_mode:
        ctx.emit_json(result.to_obj())
        return 0 if result.written else 1
    return print_keep(ctx, result.to_obj())


def hand_over_keep(args: argparse.Namespace, ctx: Context, workspace: Workspace, text: str) -> int | None:
    """Keep through the running keepgui window; None when there is none (or it does not show the workspace)."""
    if getattr(args, "stand_alone", False) or getattr(args, "demo", False):
        return None
    from keepgui import app

    if not app.window_may_be_running():
        return None  # the common case costs one stat(), no Qt event machinery
    reply = app.ask_window(
        "keep", {"text": text, "source": workspace.root, "force": bool(args.force), "replace": bool(args.replace)}
    )
    if reply is None:
        return None
    if not reply.get("ok"):
        raise KeepguiError(reply.get("error") or "the running keepgui refused the keep")
    if not reply.get("handled"):
        ctx.note(
            f"{reply.get('reason', 'the running keepgui did not take it')}; keeping directly (undo: keepgui forget)"
        )
        return None
    obj = reply["result"]
    if ctx.json_mode:
        ctx.emit_json({**obj, "handled_by": "window", "undoable": bool(reply.get("undoable"))})
        return 0 if obj["written"] else 1
    code = print_keep(ctx, obj)
    if obj["written"]:
        ctx.note("kept through the running keepgui window: Edit → Undo there takes it back")
    return code


def print_keep(ctx: Context, obj: dict[str, Any]) -> int:
    """The human report of a keep (``KeepResult.to_obj()``, made here or by the window); the exit status."""
    entry = obj.get("entry") or {}
    if obj["outcome"] == ALREADY_KEPT:
        ctx.out(
            f"already kept: entry {entry['number']} `{entry['text']}` (line {entry['line']} of {obj['path']}); "
            "nothing written"
        )
        if normalise(entry["text"]) != normalise(obj["fact"]):
            ctx.out("  to keep it as a separate variant anyway: add --force")
    elif obj["outcome"] == REPLACE_OFFERED:
        names = "; ".join(f"entry {e['number']} `{e['text']}`" for e in obj["replace_candidates"])
        ctx.out(f"not written: `{obj['fact']}` contains {names}")
        ctx.out("  to replace it: add --replace; to keep both: add --force")
    elif obj["outcome"] == REDIRECTED:
        ctx.out(f"not written: suggested place is {obj['triage']['destination']} — {obj['triage']['reason']}")
        ctx.out("  to keep it in keep.md anyway: add --force")
    else:
        ctx.out(obj["message"])
    for notice in obj["warnings"]:
        ctx.out(f"{notice['level']}: {notice['message']}")
    ctx.out(counts_line(obj["counts"]))
    return 0 if obj["written"] else 1


def cmd_entries(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui entries``."""
    _now(ctx, "entries", "memories")
    store = KeepStore(open_workspace(args, ctx, writing=False))
    doc = store.load()
    if ctx.json_mode:
        obj = doc.to_obj()
        obj["duplicates"] = [[e.number for e in group] for group in doc.duplicates()]
        obj["capabilities"] = KEEP_CAPABILITIES.to_obj()
        ctx.emit_json(obj)
        return 0
    print_entries(ctx, doc)
    return 0


def print_entries(ctx: Context, doc: KeepDoc) -> None:
    """Numbered entries (``~`` marks a non-canonical one), flagged lines, duplicates and counts."""
    if not doc.stamp.exists:
        ctx.out(f"{doc.path} does not exist yet; `keepgui keep TEXT` creates it")
    entries = doc.entries
    width = len(str(len(entries))) if entries else 1
    for entry in entries:
        mark = " " if entry.canonical else "~"
        ctx.out(f"{entry.number:>{width}}{mark} {entry.text}")
    for line in doc.other_lines:
        ctx.out(f"line {line.number}: {line.text}  ({line.issue})")
    for group in doc.duplicates():
        ctx.out("duplicate: entries " + ", ".join(str(e.number) for e in group) + f" say `{group[0].text}`")
    ctx.out(counts_line(doc.counts()))


def cmd_forget(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui forget INDEX_OR_TEXT``."""
    _now(ctx, "forget INDEX_OR_TEXT", "forget ID")
    store = KeepStore(open_workspace(args, ctx, writing=True))
    result = store.remove(" ".join(args.target))
    if ctx.json_mode:
        ctx.emit_json(result.to_obj())
        return 0
    ctx.out(f"{result.message}  (undo: keepgui unforget)")
    ctx.out(counts_line(result.counts))
    return 0


def cmd_unforget(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui unforget``."""
    _now(ctx, "unforget", "restore ID")
    store = KeepStore(open_workspace(args, ctx, writing=True))
    result = store.unforget()
    if ctx.json_mode:
        ctx.emit_json(result.to_obj())
        return 0
    ctx.out(result.message)
    ctx.out(counts_line(result.counts))
    return 0


def cmd_preview(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui nanobot-preview``."""
    from keepgui.backends.nanobot.context import build_preview

    _now(ctx, "nanobot-preview", "context" + (" --exact" if args.exact else ""))
    workspace = open_workspace(args, ctx, writing=False)
    preview = build_preview(workspace, exact=bool(args.exact))
    if ctx.json_mode:
        ctx.emit_json(preview.to_obj())
        return 0
    ctx.stdout.write(preview.describe(summary=args.summary, full=args.full))
    for note in preview.notes:
        ctx.note(note)
    return 0


# ---------------------------------------------------------------------- compact and review


def _writing(args: argparse.Namespace) -> bool:
    return bool(
        getattr(args, "apply", False)
        or getattr(args, "restore", None)
        or getattr(args, "accept", False)
        or getattr(args, "undo", False)
    )


def _undo(ctx: Context, target: str, what: str) -> int:
    """Take back the last compaction (or restore) of ``target`` applied from the command line."""
    from keepgui.backends.nanobot import compact  # noqa: F401 - registers the kinds of applied plans it journals
    from keepgui.core.compaction import UndoJournal, load_applied

    journal = UndoJournal()
    entry = journal.last(target)
    if entry is None:
        raise NotFound(f"no compaction of {what} applied from the command line is left to undo")
    applied = load_applied(entry["applied"], journal.history)
    applied.undo()
    journal.mark_undone(entry["id"])
    if ctx.json_mode:
        ctx.emit_json({"undone": applied.to_obj(), "journal": entry["id"]})
        return 0
    ctx.out(f"undone: {applied.description}")
    return 0


def cmd_compact(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui compact [--workspace W]``: plan (and with --apply, write) a compaction of keep.md."""
    from keepgui.backends.nanobot import compact as nano
    from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET
    from keepgui.backends.nanobot.writes import FUZZY_THRESHOLD
    from keepgui.commands.plans import finish
    from keepgui.core.history import file_key

    _now(ctx, "compact", "compact")
    if args.apply and args.undo:
        raise InvalidInput("--apply and --undo cannot go together")
    workspace = open_workspace(args, ctx, writing=_writing(args))
    command = f"keepgui compact --workspace {shlex.quote(workspace.root)}"
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
    return finish(args, ctx, plan, selection, command, lambda: plan.apply(selection))


def cmd_review(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui review [--workspace W]``: the rewrite keepgui did not make, with restore commands."""
    from keepgui.backends.nanobot import compact as nano
    from keepgui.backends.nanobot.workspace import MEMORY_MD
    from keepgui.commands.plans import apply_and_report, print_notices
    from keepgui.core.history import file_key

    _now(ctx, "review", "review" + (" --file MEMORY.md" if args.file == "MEMORY.md" else ""))
    if sum(bool(x) for x in (args.restore, args.accept, args.undo)) > 1:
        raise InvalidInput("use one of --restore, --accept and --undo at a time")
    workspace = open_workspace(args, ctx, writing=_writing(args))
    rel = MEMORY_MD if args.file == "MEMORY.md" else "keep.md"
    extra = f" --file {args.file}" if rel != "keep.md" else ""
    dream = " --confirm-dream" if rel == MEMORY_MD else ""
    command = f"keepgui review --workspace {shlex.quote(workspace.root)}{extra}"
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
        apply: Callable[[], Any] = lambda: plan.apply(selection, confirm_dream=args.confirm_dream)  # noqa: E731
        return apply_and_report(
            ctx,
            apply,
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
            mark = "[x]" if op.selected else "[ ]"
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
