"""Claude Code's command group from before the common commands: list, keep, forget, restore, review, compact.

``keepgui claude COMMAND`` is now the common ``keepgui COMMAND --agent claude``
(:mod:`keepgui.commands.memories`, :mod:`keepgui.commands.plans`); it still works as
it did, output included, and says so on stderr.

``keepgui claude COMMAND [--project DIR]`` works on the memory folder a Claude
Code session launched in DIR (default: the current folder) uses, found as the
CLI finds it (HOME and ``CLAUDE_CONFIG_DIR`` honoured); with ``--demo``, on the
project of the demo's Claude Code home. Every command goes through the same
backend operations as the window (:mod:`keepgui.backends.claude.backend`), so each
write is refused while Claude Code consolidates the folder, presents what it
read, and keeps what it replaces in keepgui's history:

* ``memories`` — every memory with its type, its index line and whether the
  next session sees it; the ones keepgui forgot (restorable); every file
  keepgui could not take as a memory, and why (a line each on stderr; a
  ``problems`` list in ``--json``; the exit status stays 0);
* ``keep TEXT [--type T] [--force]`` — a new topic file and its index line;
* ``forget FILE…`` / ``restore ID…`` — the file and its index lines, reversibly;
* ``review [--restore N,…|all] [--accept]`` — what the agent changed since the
  version last accepted, entry by entry;
* ``compact [--select …] [--apply] [--undo]`` — the plan for an index over its
  limits, applied only with ``--apply``.

Exit status: 0 when done; 1 when nothing was written (``keep`` found the fact
kept already) or on an error.
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import TYPE_CHECKING

from keepgui.core.errors import InvalidInput, NotFound, ReadOnly

if TYPE_CHECKING:  # the cli imports the commands, and a command line imports only its command's module
    from keepgui.backends.claude.bank import ClaudeProject
    from keepgui.backends.claude.compact import FolderApplied
    from keepgui.backends.claude.writes import MemoryChange
    from keepgui.cli import Context

COMMANDS = ("memories", "keep", "forget", "restore", "review", "compact")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``claude`` and its commands (the backend is imported only when one runs)."""
    top = sub.add_parser(
        "claude",
        parents=[common],
        help="Claude Code: the old form of COMMAND --agent claude (memories, keep, forget, review…)",
    )
    inner = top.add_subparsers(dest="claude_command", metavar="COMMAND", required=True)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        p = inner.add_parser(name, parents=[common], help=text)
        p.add_argument(
            "--project", metavar="DIR", default=".", help="the folder Claude Code sessions start in (default: .)"
        )
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=cmd_claude)
        return p

    command("memories", "every memory, its type and index line, and whether the next session sees it")
    p = command("keep", "keep a fact: a new topic file and its index line")
    p.add_argument("text", nargs="+", help="the fact (several words are joined with spaces)")
    p.add_argument("--type", choices=("user", "feedback", "project", "reference"), default=None)
    p.add_argument("--force", action="store_true", help="keep it even when a memory already says it")
    p = command("forget", "remove memories (the file and its index lines; restore puts them back)")
    p.add_argument("files", nargs="+", metavar="FILE", help="topic files, as `memories` names them")
    p = command("restore", "put forgotten memories back where they were")
    p.add_argument("ids", nargs="+", metavar="ID", help="the ids `forget` and `memories` print")
    p = command("review", "what the agent changed in the memory folder since the version last accepted")
    p.add_argument("--restore", metavar="N|ID|all", help="restore these changes (numbers or ids, comma-separated)")
    p.add_argument("--accept", action="store_true", help="accept the folder as it is now")
    p = command("compact", "a plan for an index over its limits that keeps every fact loaded")
    p.add_argument("--select", default="safe", metavar="SPEC", help="safe (default), all, none, or numbers")
    p.add_argument("--apply", action="store_true", help="write the selected operations")
    p.add_argument("--undo", action="store_true", help="take back the last compaction applied from the command line")


def open_bank(args: argparse.Namespace, ctx: Context) -> ClaudeProject:
    """The project's bank: the demo's with ``--demo``, else the memory of ``--project``."""
    from keepgui.backends.claude.backend import ClaudeSource

    if getattr(args, "demo", False):
        source = ClaudeSource(ctx.demo().path("claude"))
    else:
        project = os.path.abspath(os.path.expanduser(args.project))
        if not os.path.isdir(project):
            raise NotFound(f"{project}: no such folder; give the project folder with --project DIR")
        source = ClaudeSource(project)
    names = source.scan().names
    if not names:
        raise NotFound(f"{source.path} has no Claude Code memory folder")
    bank = source.bank(names[0])
    bank.load(full=True)
    return bank


def cmd_claude(args: argparse.Namespace, ctx: Context) -> int:
    """Dispatch ``keepgui claude COMMAND``."""
    new = {"forget": "forget ID", "restore": "restore ID", "keep": "keep TEXT"}.get(
        args.claude_command, args.claude_command
    )
    ctx.replaced(f"claude {args.claude_command}", f"{new} --agent claude{_project_flag(args)}")
    bank = open_bank(args, ctx)
    return {
        "memories": _memories,
        "keep": _keep,
        "forget": _forget,
        "restore": _restore,
        "review": _review,
        "compact": _compact,
    }[args.claude_command](args, ctx, bank)


def _one_line(text: str, limit: int = 80) -> str:
    words = " ".join(text.split())
    return words if len(words) <= limit else words[: limit - 1] + "…"


def _shown(name: str) -> str:
    """A file name on one line: control characters (a newline in a name) as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _memories(args: argparse.Namespace, ctx: Context, bank: ClaudeProject) -> int:
    from keepgui.backends.claude.bank import FORGOTTEN

    rows = sorted(bank.rows(), key=lambda r: (r.invalid_at is not None, r.position or 10**9, r.id))
    summary = bank.summary()
    problems = list(bank.folder.problems) if bank.folder is not None else []  # with their --json form
    if ctx.json_mode:
        ctx.emit_json(
            {
                "project": bank.project,
                "memory_dir": bank.memory_dir,
                "summary": summary.detail,
                "problems": [p.to_obj() for p in problems],
                "memories": [
                    {
                        "id": r.id,
                        "text": r.text,
                        "tags": list(r.tags),
                        "links": list(r.entities),
                        "index_line": r.position,
                        "forgotten": r.invalid_at is not None,
                        "updated_at": r.updated_at,
                        "fields": dict(r.fields),
                    }
                    for r in rows
                ],
            }
        )
        return 0
    ctx.out(f"{bank.title} · {summary.detail} · {bank.memory_dir}")
    for row in rows:
        line = f"line {row.position}" if row.position else "no line"
        if row.invalid_at is not None:
            ctx.out(f"  forgotten  {row.id[len(FORGOTTEN) :]}  {_one_line(row.text)}  (restore it with `restore`)")
            continue
        ctx.out(f"  {' '.join('#' + t for t in row.tags):<28} {_shown(row.id):<36} {line:<9} {_one_line(row.text)}")
    for problem in problems:  # on stderr, one line each: the table stays what it was
        ctx.note(str(problem))
    if summary.compaction_due:
        ctx.note(summary.compaction_due)
    return 0


def _keep(args: argparse.Namespace, ctx: Context, bank: ClaudeProject) -> int:
    text = " ".join(args.text)
    change = bank.keep(f"#{args.type} {text}" if args.type else text, force=args.force)
    if ctx.json_mode:
        ctx.emit_json({"written": change.written, "file": change.result, "message": change.message})
    elif change.written:
        ctx.out(change.message)
    else:
        for hint in change.feedback:
            ctx.note(hint.text)
    for note in change.notes:
        ctx.note(note)
    return 0 if change.written else 1


def _forget(args: argparse.Namespace, ctx: Context, bank: ClaudeProject) -> int:
    from keepgui.backends.claude.bank import FORGOTTEN

    known = {r.id for r in bank.rows() if r.invalid_at is None}
    refused = {p.path: p for p in bank.problems() if not p.line}
    for name in args.files:
        if name not in known:
            problem = refused.get(os.path.join(bank.memory_dir, name))
            if problem is not None:  # a FIFO, a link out, too big: named with why, nothing touched
                raise ReadOnly(
                    f"{problem.path}: {problem.message}; not a memory keepgui can forget, nothing was written"
                )
            raise NotFound(f"{bank.memory_dir} has no memory {name} (see `keepgui claude memories`)")
    before = {r.id for r in bank.rows() if r.invalid_at is not None}
    change = bank.set_live(args.files, False)
    ids = [r.id[len(FORGOTTEN) :] for r in change.rows.rows if r.invalid_at is not None and r.id not in before]
    if ctx.json_mode:
        ctx.emit_json({"forgotten": args.files, "restore_ids": ids})
        return 0
    ctx.out(f"{change.text}; keepgui keeps them: keepgui claude restore {' '.join(ids)}" + _project_flag(args))
    for note in change.notes:
        ctx.note(note)
    return 0


def _restore(args: argparse.Namespace, ctx: Context, bank: ClaudeProject) -> int:
    from keepgui.backends.claude.bank import FORGOTTEN

    forgotten = [r.id for r in bank.rows() if r.invalid_at is not None]
    keys = []
    for given in args.ids:
        wanted = given.removeprefix(FORGOTTEN)
        matches = [k for k in forgotten if k[len(FORGOTTEN) :].startswith(wanted)]
        if len(matches) != 1:
            raise NotFound(f"keepgui has no forgotten memory {given} to restore in {bank.memory_dir}")
        keys.append(matches[0])
    change = bank.set_live(keys, True)
    if ctx.json_mode:
        ctx.emit_json({"restored": change.result})
        return 0
    ctx.out(change.message or change.text)
    return 0


def _project_flag(args: argparse.Namespace) -> str:
    return " --demo" if getattr(args, "demo", False) else f" --project {shlex.quote(args.project)}"


def _review(args: argparse.Namespace, ctx: Context, bank: ClaudeProject) -> int:
    from keepgui.commands.plans import print_operations

    plan = bank.folder_review()
    if args.accept and args.restore:
        raise InvalidInput("--restore and --accept cannot go together (a restore keeps the rest for later)")
    if args.accept:
        bank.accept_review(plan)
        ctx.out("accepted: later reviews compare with the folder as it is now")
        return 0
    if args.restore:
        spec = "all" if args.restore == "all" else args.restore
        selection = plan.select(spec)
        change = bank.apply_plan(plan, selection, f"Restore {len(selection)} change(s) of {bank.title}")
        ctx.out(change.message or change.text if change.written else "nothing written: the selection changes nothing")
        return 0
    if ctx.json_mode:
        ctx.emit_json({"summary": plan.describe(), **plan.to_obj(frozenset())})
        return 0
    ctx.out(f"{bank.title}: {plan.describe()}")
    if plan.operations:
        print_operations(ctx, plan, frozenset())
        ctx.out("")
        ctx.out(f"restore some: keepgui claude review{_project_flag(args)} --restore 1,2 (or all); or --accept")
    return 0


def _compact(args: argparse.Namespace, ctx: Context, bank: ClaudeProject) -> int:
    from keepgui.commands.plans import finish

    if args.apply and args.undo:
        raise InvalidInput("--apply and --undo cannot go together")
    if args.undo:
        return _undo_compaction(ctx, bank)
    plan = bank.compaction_plan()
    selection = plan.select(args.select)

    def apply() -> FolderApplied:
        return _folder_applied(bank.apply_plan(plan, selection, f"Compact {bank.title}'s MEMORY.md").result)

    return finish(args, ctx, plan, selection, f"keepgui claude compact{_project_flag(args)}", apply)


def _undo_compaction(ctx: Context, bank: ClaudeProject) -> int:
    """Take back the last compaction applied from the command line, through the bank (so the folder as
    the undo leaves it is keepgui's own write, not something to review)."""
    from keepgui.backends.claude import compact  # noqa: F401 - registers the kind of applied plan it journals
    from keepgui.core.compaction import UndoJournal, load_applied

    journal = UndoJournal(bank.history)
    entry = journal.last(bank.memory_dir)
    if entry is None:
        raise NotFound(f"no compaction of {bank.title}'s MEMORY.md applied from the command line is left to undo")
    applied = _folder_applied(load_applied(entry["applied"], bank.history))

    def undo() -> MemoryChange:
        from keepgui.backends.claude.writes import MemoryChange

        applied.undo()  # it keeps the change it wrote
        return applied.change or MemoryChange(bank.memory_dir, f"Undo: {applied.description}", written=False)

    change = bank.write(undo, f"Undo: {applied.description}")
    journal.mark_undone(entry["id"])
    if ctx.json_mode:
        ctx.emit_json({"undone": applied.to_obj(), "journal": entry["id"]})
        return 0
    ctx.out(f"undone: {applied.description}" + ("" if change.written else " (nothing was left to change)"))
    return 0


def _folder_applied(applied: object) -> FolderApplied:
    """``applied`` as the applied plan of a memory folder it is (an apply's result, a journal entry of
    the folder); anything else is refused with a clear error, never used half-understood."""
    from keepgui.backends.claude.compact import FolderApplied

    if not isinstance(applied, FolderApplied):
        raise InvalidInput(f"not a compaction of a Claude Code memory folder: {type(applied).__name__}")
    return applied
