"""Commands for a nanobot workspace: keep a fact, list, forget and unforget entries, preview the prompt.

Each command takes its own ``--workspace DIR`` (the main parser's repeatable
``--workspace`` is for the window; given there it is accepted too, the last one
wins), else ``--demo``, else nanobot's own discovery (config.json, then
``~/.nanobot/workspace``).

Exit status: 0 when done; 1 when nothing was written (``keep`` found a
duplicate, offered a replacement or suggested another place) or on an error.
"""

from __future__ import annotations

import argparse
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

    p = sub.add_parser("entries", parents=[common], help="list keep.md's entries and flagged lines")
    workspace_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_entries)

    p = sub.add_parser("forget", parents=[common], help="remove a keep.md entry (undo with unforget)")
    p.add_argument("target", nargs="+", metavar="INDEX_OR_TEXT", help="the entry's number, id or text")
    workspace_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("unforget", parents=[common], help="put back the entry removed last")
    workspace_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_unforget)

    p = sub.add_parser(
        "nanobot-preview",
        parents=[common],
        help="what nanobot puts in its system prompt from the memory files, plus keep.md",
    )
    workspace_option(p)
    p.add_argument(
        "--exact", action="store_true", help="use nanobot's own ContextBuilder (needs the nanobot-ai package installed)"
    )
    p.add_argument("--summary", action="store_true", help="sizes only, without the texts")
    p.add_argument("--full", action="store_true", help="with --exact: print nanobot's whole system prompt")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_preview)


# ---------------------------------------------------------------------- helpers


def open_workspace(args: argparse.Namespace, ctx: Context, *, writing: bool) -> Workspace:
    """The workspace the command works on; refuses a folder that is not a nanobot workspace for writes."""
    given = getattr(args, "workspace", None)
    if isinstance(given, list):  # the window's repeatable option on the main parser
        args.workspace = given[-1] if given else None
    workspace = Workspace(ctx.workspace_path())
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

    workspace = open_workspace(args, ctx, writing=False)
    preview = build_preview(workspace, exact=bool(args.exact))
    if ctx.json_mode:
        ctx.emit_json(preview.to_obj())
        return 0
    mode = f"exact, nanobot {preview.nanobot_version}" if preview.mode == "exact" else "built-in rendering"
    ctx.out(f"nanobot prompt preview of {preview.workspace} ({mode})")
    if args.full and preview.system_prompt is not None:
        ctx.out(preview.system_prompt)
        ctx.out("")
    for part in preview.parts:
        size = f" · {part.size_bytes:,} bytes · ~{part.tokens:,} tokens" if part.text else ""
        ctx.out(f"── {part.label} · {part.status}{size}")
        if part.text and not args.summary:
            ctx.out(part.text.rstrip("\n"))
    ctx.out(
        f"memory-bearing prompt: {preview.injected_bytes:,} bytes, ~{preview.injected_tokens:,} tokens "
        "(parts joined with `---` as nanobot joins them)"
    )
    for item in preview.not_reproduced:
        ctx.out(f"not reproduced: {item}")
    for note in preview.notes:
        ctx.note(note)
    return 0
