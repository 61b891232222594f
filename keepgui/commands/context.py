"""``keepgui context``: what an agent's next session will be given from its memory, exactly.

``keepgui context --agent claude --project DIR`` lists the files a Claude Code
session launched in DIR loads at start (in order, with their labels), the ones
it does not load and why, where MEMORY.md is cut and the entries past the cut,
then the reminder text itself. ``--json`` gives the same as one object whose
``reminder`` is the exact first text block of the session's first user message
(null when nothing loads), with ``files`` and ``claude_version``;
``--reminder`` prints only that text. ``HOME`` and ``CLAUDE_CONFIG_DIR`` are
honoured as the CLI honours them.

``keepgui context --agent hermes --project DIR`` shows the home a new Hermes session there uses
(``HOME``, ``HERMES_HOME`` and the sticky profile honoured as Hermes honours them), its memory files'
counts, the settings' effect, the project context file it picks, the memory part of its system
prompt exactly, and the newest stored sessions with the memory changes a resume will not see;
``--json`` gives one object whose ``memory_prompt`` is that part (null when neither block is in the
prompt).

Exit status: 0; 1 when DIR is not a folder.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context

AGENTS = ("claude", "hermes")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``context`` command (its backend is imported only when it runs)."""
    p = sub.add_parser(
        "context", parents=[common], help="what an agent's next session is given from its memory files, exactly"
    )
    p.add_argument("--agent", choices=AGENTS, default="claude", help="the agent (default: claude)")
    p.add_argument("--project", metavar="DIR", default=".", help="the folder the session starts in (default: .)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--reminder", action="store_true", help="print only the reminder text, exactly")
    p.set_defaults(func=cmd_context)


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.1f} KiB"


def _hermes(args: argparse.Namespace, ctx: Context) -> int:
    from keepgui.backends.hermes.commands import context_lines
    from keepgui.backends.hermes.context import session_context

    project = os.path.abspath(os.path.expanduser(args.project))
    if not os.path.isdir(project):
        ctx.note(f"{project} is not a folder")
        return 1
    context = session_context(project)
    if ctx.json_mode:
        ctx.emit_json(context.to_obj())
    elif args.reminder:
        if context.prompt.text is not None:
            ctx.stdout.write(context.prompt.text)
    else:
        for line in context_lines(context):
            ctx.out(line)
    return 0


def cmd_context(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui context --agent claude --project DIR [--json | --reminder]``."""
    if args.agent == "hermes":
        return _hermes(args, ctx)
    from keepgui.backends.claude.context import session_context

    context = session_context(os.path.abspath(os.path.expanduser(args.project)))
    if ctx.json_mode:
        ctx.emit_json(context.to_obj())
        return 0
    if args.reminder:
        if context.reminder is not None:
            ctx.stdout.write(context.reminder)
        return 0
    ctx.out(f"Claude Code (checked against {context.claude_version}) · session started in {context.project}")
    if context.roots.canonical and context.roots.canonical != context.project:
        ctx.out(f"  git root {context.roots.canonical}")
    state = "on" if context.memory.enabled else f"off: {context.memory.why_off}"
    ctx.out(f"  auto memory {state} · {context.memory.path}")
    loaded = [f for f in context.files if f.loaded]
    ctx.out("")
    ctx.out(f"Loaded at session start, in this order ({len(loaded)}):" if loaded else "Nothing loads at session start.")
    for number, item in enumerate(loaded, start=1):
        indent = "   " * item.depth
        via = f" (@import, line {item.line})" if item.parent else ""
        ctx.out(f"  {number:>2}. {indent}{item.path}{via}")
        ctx.out(f"      {indent}{item.label} · {_size(item.size)}")
    index = context.folder.index if context.folder is not None else None
    if index is not None and index.cut is not None and index.cut.cut:
        cut = index.cut
        ctx.out("")
        ctx.out(f"MEMORY.md is cut: {cut.kept_lines} of {cut.lines} lines load ({cut.reason} limit).")
        ctx.out(f"  {cut.warning}")
        hidden = context.hidden
        if hidden:
            ctx.out(
                f"  {len(hidden)} {'entry is' if len(hidden) == 1 else 'entries are'} invisible to Claude "
                "at the start of a session:"
            )
            for entry in hidden:
                mark = " (start only)" if entry.partial else ""
                ctx.out(f"    line {entry.line}: {entry.title} → {entry.target}{mark}")
    skipped = [f for f in context.files if f.status == "skipped" and f.reason != "missing"]
    if skipped:
        ctx.out("")
        ctx.out("Not loaded:")
        for item in skipped:
            ctx.out(f"  {item.path}: {item.reason}")
    if context.later:
        ctx.out("")
        ctx.out("Loads later, when Claude reads a matching file:")
        for item in context.later:
            globs = f" (paths: {', '.join(item.globs)})" if item.globs else ""
            ctx.out(f"  {item.path}{globs}")
    for note in context.notes:
        ctx.note(note)
    for problem in context.to_obj()["problems"]:
        ctx.note(problem)
    ctx.out("")
    ctx.out("--- the reminder, exactly ---" if context.reminder is not None else "--- no reminder ---")
    if context.reminder is not None:
        ctx.out(context.reminder)
    return 0
