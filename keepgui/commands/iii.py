"""iii's own commands (banks, rules, trash, supersede, doctor), and its verbs from before the common ones.

The data dir is ``--data-dir`` (before or after the command name), else ``$KEEPGUI_DATA_DIR``,
else the demo's (``--demo``), else the worker's own default. ``memories BANK``, ``save``, ``edit``,
``pin``, ``delete``, ``restore`` and ``compact --bank`` are the old forms of the common commands
(:mod:`keepgui.commands.memories`, :mod:`keepgui.commands.plans`): they still work as they did,
output included, and say on stderr what replaces them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keepgui.core.errors import InvalidInput, KeepguiError, NotFound
from keepgui.core.timefmt import relative_time

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only; the backend's
    # modules are imported by the commands that use them (``preview`` imports this module for its data dir)
    from keepgui.backends.iii.record import Memory
    from keepgui.backends.iii.store import Bank, Batch, DataDir
    from keepgui.backends.iii.worker import ReloadOutcome
    from keepgui.backends.iii.writes import Transition
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the iii commands."""
    common = with_data_dir(common)
    p = sub.add_parser("banks", parents=[common], help="iii: list the banks of a data dir")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_banks)

    p = sub.add_parser("memories", parents=[common], help="list a bank's memories, newest first")
    p.add_argument("bank")
    p.add_argument("--history", action="store_true", help="include deleted and superseded memories")
    p.add_argument("--tag", help="only memories with this exact tag")
    p.add_argument("--json", action="store_true", help="print the records exactly as stored, one per line")
    p.set_defaults(func=cmd_memories)

    p = sub.add_parser("save", parents=[common], help="iii: old form of `keep --agent iii --bank BANK`")
    p.add_argument("bank")
    p.add_argument("text")
    p.add_argument("--entity", action="append", default=[], help="an entity handle (repeatable)")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--pin", action="store_true", help="pin it")
    p.add_argument("--session", help="source session id to record")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_save)

    p = sub.add_parser("edit", parents=[common], help="edit a memory (a new revision; the id stays)")
    p.add_argument("bank")
    p.add_argument("id")
    p.add_argument("--text")
    p.add_argument("--entity", action="append", default=None, help="replace the entities (repeatable)")
    p.add_argument("--tag", action="append", default=None, help="replace the tags (repeatable)")
    p.add_argument("--clear-entities", action="store_true")
    p.add_argument("--clear-tags", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_edit)

    p = sub.add_parser("pin", parents=[common], help="pin (or with --off unpin) a memory")
    p.add_argument("bank")
    p.add_argument("id")
    p.add_argument("--off", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_pin)

    for name, func, text in (
        ("delete", cmd_delete, "iii: old form of `forget --agent iii --bank BANK`"),
        ("restore", cmd_restore, "bring a deleted or superseded memory back"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("bank")
        p.add_argument("id")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("supersede", parents=[common], help="iii: retire a memory in favour of another")
    p.add_argument("bank")
    p.add_argument("id")
    p.add_argument("--by", required=True, metavar="WINNER_ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_supersede)

    p = sub.add_parser("rules", parents=[common], help="iii: list a bank's rules in injection order")
    p.add_argument("bank")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("rule-set", parents=[common], help="iii: write a rule (empty content deletes it)")
    p.add_argument("bank")
    p.add_argument("name")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", metavar="F")
    src.add_argument("--stdin", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rule_set)

    p = sub.add_parser("bank", parents=[common], help="iii: create, trash or restore banks")
    bank_sub = p.add_subparsers(dest="bank_command", metavar="ACTION", required=True)
    q = bank_sub.add_parser("create", parents=[common], help="create a bank")
    q.add_argument("name")
    q.add_argument("--description", default="")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_bank_create)
    q = bank_sub.add_parser("trash", parents=[common], help="move a bank to .trash")
    q.add_argument("name")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_bank_trash)
    q = bank_sub.add_parser("restore", parents=[common], help="restore a trashed bank")
    q.add_argument("folder", metavar="TRASHED_FOLDER_NAME")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_bank_restore)
    q = bank_sub.add_parser("trashed", parents=[common], help="list trashed banks")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_bank_trashed)

    p = sub.add_parser(
        "doctor", parents=[common], help="iii: report every problem in a data dir and keepgui's log cache"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("compact", parents=[common], help="consolidate an iii bank (memory-consolidate's rules)")
    p.add_argument("--bank", metavar="NAME", required=True, help="the bank to consolidate")
    p.add_argument("--threshold", type=float, default=None, metavar="N", help="near-duplicate cut-off (default 85)")
    p.add_argument("--fuzzy", action="store_true", help="also propose rapidfuzz near-duplicate groups")
    p.add_argument("--select", default="safe", metavar="SPEC", help="which operations (safe, all, none, 3,7...)")
    p.add_argument(
        "--reinforce-by-id",
        action="store_true",
        help="after each supersede reinforce the winner by id instead of saving its text again",
    )
    p.add_argument("--apply", action="store_true", help="write the selected operations")
    p.add_argument("--undo", action="store_true", help="take back the last compaction applied from the command line")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--via", default=None, help=argparse.SUPPRESS)  # keep.md's: refused with a clear error
    p.add_argument("--workspace", default=None, help=argparse.SUPPRESS)  # likewise
    p.set_defaults(func=cmd_compact)


# ---------------------------------------------------------------------- helpers

_JSON_SLICE = 512  # records encoded and written at a time by `memories --json`


def memory_line(memory: Memory) -> str:
    """One human line for a memory."""
    flags = "*" if memory.pinned else " "
    if memory.invalid_at is not None:
        flags = "x"
    extra = []
    if memory.tags:
        extra.append(" ".join("#" + t for t in memory.tags))
    if memory.entities:
        extra.append("@" + " @".join(memory.entities))
    meta = f"seen ×{memory.seen}, updated {relative_time(memory.updated_at)}"
    if memory.superseded_by:
        meta += f", superseded by {memory.superseded_by}"
    elif memory.invalid_at is not None:
        meta += ", deleted"
    text = memory.text.replace("\n", " ⏎ ")
    return f"{memory.id} {flags} {text}" + (f"  [{'; '.join(extra)}]" if extra else "") + f"  ({meta})"


def with_data_dir(common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The common options of every command, and ``--data-dir``."""
    parent = argparse.ArgumentParser(add_help=False, parents=[common])
    parent.add_argument(
        "--data-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="iii memory data dir (default: $KEEPGUI_DATA_DIR, else the worker's own default)",
    )
    return parent


def data_dir_path(ctx: Context) -> str:
    """``--data-dir``, else ``$KEEPGUI_DATA_DIR``, else the demo (with ``--demo``), else the worker's own
    default."""
    from keepgui.backends.iii.store import default_data_dir

    given = getattr(ctx.args, "data_dir", None)
    if isinstance(given, list):  # the window's repeatable option, given before the command
        given = given[-1] if given else None
    if given:
        return os.path.abspath(os.path.expanduser(str(given)))
    if getattr(ctx.args, "demo", False):
        return ctx.demo().path("iii")
    env = os.environ.get("KEEPGUI_DATA_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return default_data_dir()


def datadir(ctx: Context) -> DataDir:
    """The :class:`~keepgui.backends.iii.store.DataDir` the command works on (one per command)."""
    if "iii.datadir" not in ctx.memo:
        from keepgui.backends.iii.store import DataDir
        from keepgui.backends.iii.worker import WorkerLink

        ctx.memo["iii.datadir"] = DataDir(data_dir_path(ctx), WorkerLink(reload_command(ctx)))
    found: DataDir = ctx.memo["iii.datadir"]
    return found


def reload_command(ctx: Context) -> str | None:
    """``--reload-command``; with ``--demo`` and none given, no reload at all: no running worker reads a
    throw-away copy, so telling one to reload would only fail (or reload the wrong data)."""
    given = getattr(ctx.args, "reload_command", None)
    if given is None and getattr(ctx.args, "demo", False) and not getattr(ctx.args, "data_dir", None):
        return ""
    return given


def report_reload(ctx: Context, outcome: ReloadOutcome | None) -> None:
    """Say plainly when a running worker could not be told to reload."""
    if outcome is not None and not outcome.ok and not outcome.standing:  # a standing one: `doctor` says it
        ctx.note(outcome.message)


def _open_bank(ctx: Context, name: str) -> Bank:
    return datadir(ctx).bank(name)


def _now(ctx: Context, old: str, new: str, bank: str) -> None:
    """Say what replaces an old command line: ``keepgui save BANK TEXT`` is ``keepgui keep --agent iii --bank
    BANK TEXT`` (with ``--source DIR`` for a ``--data-dir``, ``--demo`` for the demo)."""
    given = getattr(ctx.args, "data_dir", None)
    source = (
        f" --source {shlex.quote(data_dir_path(ctx))}"
        if given
        else " --demo"
        if getattr(ctx.args, "demo", False)
        else ""
    )
    verb, _, rest = new.partition(" ")
    ctx.replaced(old, f"{verb} --agent iii{source} --bank {shlex.quote(bank)}" + (f" {rest}" if rest else ""))


def _emit_transition(ctx: Context, transition: Transition, created_key: bool = False) -> int:
    record = transition.record or transition.previous
    if record is None:
        raise NotFound("the memory is not there")
    if ctx.json_mode:
        obj: dict[str, Any] = {"memory": record.to_obj()}
        if created_key:
            obj["created"] = transition.created
        obj["written"] = transition.record is not None
        ctx.emit_json(obj)
    elif transition.record is None:
        ctx.out(f"unchanged: {memory_line(record)}")
    else:
        ctx.out(f"{transition.event}: {memory_line(record)}")
    return 0


def _finish(ctx: Context, bank: Bank, run: Callable[[Batch], Transition]) -> Transition:
    with bank.batch() as batch:
        transition = run(batch)
    report_reload(ctx, batch.report.reload)
    return transition


# ---------------------------------------------------------------------- commands


def cmd_banks(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui banks``."""
    data = datadir(ctx)
    if not os.path.isdir(data.path):
        # as `doctor` says: "no banks" and exit 0 hid a mistyped --data-dir
        what = "does not exist" if not os.path.exists(data.path) else "is not a folder"
        raise NotFound(f"{data.path}: the data dir {what} (give --data-dir or set $KEEPGUI_DATA_DIR)")
    infos = [bank.info() for bank in data.banks()]
    if ctx.json_mode:
        ctx.emit_json({"data_dir": data.path, "banks": [i.to_obj() for i in infos]})
        return 0
    if not infos:
        ctx.out(f"no banks in {data.path}")
        return 0
    width = max(len(i.name) for i in infos)
    for i in infos:
        if not i.readable:
            ctx.out(f"{i.name:<{width}}  UNREADABLE: {i.reason}")
            continue
        desc = f"  — {i.description}" if i.description else ""
        ctx.out(f"{i.name:<{width}}  {i.counts()}{desc}")
    return 0


def cmd_memories(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui memories BANK``: the records exactly as stored (one per line with ``--json``)."""
    from keepgui.backends.iii.cache import LogCache

    _now(ctx, "memories BANK", "memories", args.bank)
    bank = _open_bank(ctx, args.bank)
    cache = LogCache(bank.log)
    head = cache.verified_listing_head() if ctx.json_mode and not args.history and args.tag is None else None
    if head:
        # The log is byte for byte the cached state: the listing's first lines, kept with it, go out
        # before the state is decoded; the rest come from that same state (not refreshed since).
        ctx.stdout.write(head)
        ctx.stdout.flush()
        if not cache.load():
            bank.refresh()
    elif cache.load():
        bank.refresh()  # what was appended since the cached state (or all of it, if the file changed)
    if bank.unreadable:
        raise InvalidInput(f"bank `{bank.name}` cannot be read: {bank.unreadable}")
    if ctx.json_mode:
        # In slices, the first picked from the unsorted records and flushed at once:
        # `memories --json | head -1` gets its line before the rest are sorted and encoded.
        json_lines = bank.log.json_lines
        first = [] if head else bank.first_memories(_JSON_SLICE, history=args.history, tag=args.tag)
        if first:
            ctx.stdout.write(json_lines(first))
            ctx.stdout.flush()
        done = head.count("\n") if head else len(first)
        rows = bank.memories(history=args.history, tag=args.tag) if head or len(first) == _JSON_SLICE else first
        for start in range(done, len(rows), _JSON_SLICE):
            ctx.stdout.write(json_lines(rows[start : start + _JSON_SLICE]))
    else:
        rows = bank.memories(history=args.history, tag=args.tag)
        for memory in rows:
            ctx.out(memory_line(memory))
        if not rows:
            ctx.out("no memories" + (f" tagged #{args.tag}" if args.tag else ""))
        for problem in bank.log.problems:
            ctx.note(problem.describe(bank.log_path))
    ctx.stdout.flush()
    cache.save()
    return 0


def cmd_save(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui save BANK TEXT``."""
    _now(ctx, "save BANK TEXT", "keep TEXT", args.bank)
    bank, _ = datadir(ctx).ensure_bank(args.bank)
    transition = _finish(ctx, bank, lambda b: b.save(args.text, args.entity, args.tag, args.pin, args.session))
    return _emit_transition(ctx, transition, created_key=True)


def cmd_edit(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui edit BANK ID``."""
    _now(ctx, "edit BANK ID", "edit ID", args.bank)
    entities = [] if args.clear_entities else args.entity
    tags = [] if args.clear_tags else args.tag
    if args.text is None and entities is None and tags is None:
        raise InvalidInput("nothing to change: give --text, --entity, --tag, --clear-entities or --clear-tags")
    bank = _open_bank(ctx, args.bank)
    transition = _finish(ctx, bank, lambda b: b.update(args.id, args.text, entities, tags))
    return _emit_transition(ctx, transition)


def cmd_pin(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui pin BANK ID [--off]``."""
    _now(ctx, "pin BANK ID" + (" --off" if args.off else ""), ("unpin" if args.off else "pin") + " ID", args.bank)
    bank = _open_bank(ctx, args.bank)
    return _emit_transition(ctx, _finish(ctx, bank, lambda b: b.pin(args.id, not args.off)))


def cmd_delete(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui delete BANK ID``."""
    _now(ctx, "delete BANK ID", "forget ID", args.bank)
    bank = _open_bank(ctx, args.bank)
    return _emit_transition(ctx, _finish(ctx, bank, lambda b: b.delete(args.id)))


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui restore BANK ID``."""
    _now(ctx, "restore BANK ID", "restore ID", args.bank)
    bank = _open_bank(ctx, args.bank)
    return _emit_transition(ctx, _finish(ctx, bank, lambda b: b.restore(args.id)))


def cmd_supersede(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui supersede BANK ID --by WINNER``."""
    bank = _open_bank(ctx, args.bank)
    return _emit_transition(ctx, _finish(ctx, bank, lambda b: b.supersede(args.id, args.by)))


def cmd_rules(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui rules BANK``."""
    bank = _open_bank(ctx, args.bank)
    rules, problems = bank.rules()
    if ctx.json_mode:
        ctx.emit_json({"bank": bank.name, "rules": [r.to_obj() for r in rules], "problems": [str(p) for p in problems]})
        return 0
    for rule in rules:
        size = len(rule.content.encode("utf-8"))
        ctx.out(f"── {rule.name}.md ({size} bytes, edited {relative_time(rule.updated_at)})")
        ctx.out(rule.content.rstrip("\n"))
    if not rules:
        ctx.out("no rules")
    for problem in problems:
        ctx.note(str(problem))
    return 0


def cmd_rule_set(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui rule-set BANK NAME (--file F | --stdin)``."""
    if args.stdin:
        content = sys.stdin.read()
    else:
        try:
            with open(args.file, encoding="utf-8") as fh:
                content = fh.read()
        except UnicodeDecodeError:
            raise InvalidInput(f"{args.file} is not valid UTF-8") from None
    data = datadir(ctx)
    if data.has_bank(args.bank):
        bank = data.bank(args.bank)
    else:
        from keepgui.backends.iii.store import Bank, validate_name

        validate_name(args.bank)
        bank = Bank(data, args.bank)
    rule = bank.write_rule(args.name, content)
    report_reload(ctx, data.last_reload)
    if ctx.json_mode:
        ctx.emit_json({"ok": True, "exists": rule is not None})
    else:
        ctx.out(
            f"wrote rule `{args.name}` in bank `{args.bank}`" if rule else f"rule `{args.name}` removed (empty content)"
        )
    return 0


def cmd_bank_create(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank create NAME``."""
    bank, created = datadir(ctx).create_bank(args.name, args.description)
    report_reload(ctx, datadir(ctx).last_reload if created else None)
    if ctx.json_mode:
        ctx.emit_json({"bank": bank.info().to_obj(), "created": created})
    else:
        ctx.out(f"created bank `{bank.name}`" if created else f"bank `{bank.name}` already exists (unchanged)")
    return 0


def cmd_bank_trash(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank trash NAME``."""
    dest = datadir(ctx).trash_bank(args.name)
    report_reload(ctx, datadir(ctx).last_reload)
    if ctx.json_mode:
        ctx.emit_json({"ok": True, "trashed_to": dest})
    else:
        ctx.out(f"moved bank `{args.name}` to {dest}")
    return 0


def cmd_bank_restore(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank restore TRASHED_FOLDER_NAME``."""
    bank = datadir(ctx).restore_bank(args.folder)
    report_reload(ctx, datadir(ctx).last_reload)
    if ctx.json_mode:
        ctx.emit_json({"ok": True, "bank": bank.info().to_obj()})
    else:
        ctx.out(f"restored bank `{bank.name}`")
    return 0


def cmd_bank_trashed(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank trashed``."""
    items = datadir(ctx).trashed()
    if ctx.json_mode:
        ctx.emit_json({"trash": [{"folder": t.folder, "bank": t.bank, "trashed_at": t.trashed_at} for t in items]})
        return 0
    for t in items:
        ctx.out(f"{t.folder}  (bank `{t.bank}`, trashed {relative_time(t.trashed_at)})")
    if not items:
        ctx.out("the trash is empty")
    return 0


def cmd_doctor(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui doctor``: exit 1 when any problem is found. It also says how big keepgui's log cache is
    (never a problem: it is swept as it is written)."""
    from keepgui.backends.iii.cache import cache_folder, cache_size
    from keepgui.backends.iii.doctor import diagnose
    from keepgui.core import fsio
    from keepgui.core.history import History, default_cap as default_history_cap
    from keepgui.core.source import plural  # not at import: a preview's start-up need not pay for it

    data = datadir(ctx)
    leftovers = fsio.leftover_temps(data.path)  # killed writes' temporary files: reported, then removed
    removed = [path for path in leftovers if fsio.remove_leftover(path)]
    findings = diagnose(data)
    problems = [f for f in findings if not f.note]
    entries, size = cache_size()
    secrets = _secrets_count(data.path)
    history = History()
    kept_files, kept_bytes = history.size()
    if ctx.json_mode:
        ctx.emit_json(
            {
                "data_dir": data.path,
                "ok": not problems,
                "problems": [f.to_obj() for f in findings],
                "cache": {"folder": cache_folder(), "entries": entries, "bytes": size},
                "secrets": secrets,
                "leftover_temps": {"found": leftovers, "removed": removed},
                "history": {
                    "folder": history.root,
                    "files": kept_files,
                    "bytes": kept_bytes,
                    "cap": default_history_cap(),
                },
            }
        )
    else:
        for path in leftovers:
            done = "removed" if path in removed else "could not be removed"
            ctx.out(f"{path}: a temporary file a killed keepgui write left behind; {done}")
        for finding in findings:
            ctx.out(str(finding))
        notes = len(findings) - len(problems)
        tail = f" ({plural(notes, 'note', 'notes')})" if notes else ""
        ctx.out(
            (
                f"{plural(len(problems), 'problem', 'problems')} in {data.path}"
                if problems
                else f"no problems in {data.path}"
            )
            + tail
        )
        ctx.out(f"log cache: {plural(entries, 'bank', 'banks')}, {size / 2**20:.1f} MiB in {cache_folder()}")
        if secrets:
            ctx.out(f"secrets: {secrets} in the banks' memories and rules (see `keepgui secrets --source {data.path}`)")
        else:
            ctx.out("secrets: none found")
        ctx.out(
            f"history: {kept_files:,} files, {kept_bytes / 2**20:.1f} MiB in {history.root} "
            f"(kept under {default_history_cap() / 2**20:,.0f} MiB, oldest versions thinned first)"
        )
    return 1 if problems else 0


def _secrets_count(path: str) -> int:
    """How many secrets ``keepgui secrets`` finds in the data dir (allowed ones aside)."""
    from keepgui.core import registry
    from keepgui.core.secrets.scan import Scanner

    try:
        source = registry.open_source("iii", path, registry.OpenOptions(reload_command=""))
        return sum(1 for f in Scanner(source).scan(preview=False) if not f.allowed)
    except (KeepguiError, OSError):
        return 0


def cmd_compact(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui compact --bank NAME``: memory-consolidate's plan for an iii bank, applied with ``--apply``."""
    from keepgui.backends.iii.compact import FUZZY_THRESHOLD, BankApplied, find_bank, plan_bank
    from keepgui.commands.plans import finish
    from keepgui.core.compaction import Applied, UndoJournal, load_applied

    _now(ctx, "compact --bank BANK", "compact" + (" --fuzzy" if args.fuzzy else ""), args.bank)
    if args.workspace:
        raise InvalidInput("give either --workspace (keep.md) or --bank, not both")
    if args.apply and args.undo:
        raise InvalidInput("--apply and --undo cannot go together")
    if args.via:
        raise InvalidInput("--via rewrites keep.md; it cannot be used with --bank")
    name = args.bank
    data = datadir(ctx)
    bank = find_bank(data, name)
    command = f"keepgui compact --bank {shlex.quote(name)} --data-dir {shlex.quote(data.path)}"
    if args.undo:
        journal = UndoJournal()
        entry = journal.last(f"{data.path}::{name}")
        if entry is None:
            raise NotFound(f"no compaction of bank `{name}` applied from the command line is left to undo")
        undone = load_applied(entry["applied"], journal.history)
        if isinstance(undone, BankApplied):
            undone.undo(datadir=data)
            report_reload(ctx, undone.reload)
        else:
            undone.undo()
        journal.mark_undone(entry["id"])
        if ctx.json_mode:
            ctx.emit_json({"undone": undone.to_obj(), "journal": entry["id"]})
        else:
            ctx.out(f"undone: {undone.description}")
        return 0
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
        report_reload(ctx, applied.reload)
        for error in applied.errors:
            ctx.note(error)
        return applied

    return finish(args, ctx, plan, selection, command + (" --fuzzy" if args.fuzzy else ""), apply)
