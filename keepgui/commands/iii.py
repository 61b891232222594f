"""Commands for an iii memory data dir: banks, memories, rules, trash, doctor."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from keepgui.backends.iii.record import Memory
from keepgui.backends.iii.textrules import byte_len
from keepgui.backends.iii.writes import Transition
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.timefmt import relative_time

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.backends.iii.store import Bank, Batch
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the iii commands."""
    p = sub.add_parser("banks", parents=[common], help="list the banks of the data dir")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_banks)

    p = sub.add_parser("memories", parents=[common], help="list a bank's memories, newest first")
    p.add_argument("bank")
    p.add_argument("--history", action="store_true", help="include deleted and superseded memories")
    p.add_argument("--tag", help="only memories with this exact tag")
    p.add_argument("--json", action="store_true", help="print the records exactly as stored, one per line")
    p.set_defaults(func=cmd_memories)

    p = sub.add_parser("save", parents=[common], help="save a memory (creates, reinforces or resurrects)")
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
        ("delete", cmd_delete, "tombstone a memory (reversible with restore)"),
        ("restore", cmd_restore, "bring a deleted or superseded memory back"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("bank")
        p.add_argument("id")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("supersede", parents=[common], help="retire a memory in favour of another")
    p.add_argument("bank")
    p.add_argument("id")
    p.add_argument("--by", required=True, metavar="WINNER_ID")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_supersede)

    p = sub.add_parser("rules", parents=[common], help="list a bank's rules in injection order")
    p.add_argument("bank")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("rule-set", parents=[common], help="write a rule (empty content deletes it)")
    p.add_argument("bank")
    p.add_argument("name")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", metavar="F")
    src.add_argument("--stdin", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rule_set)

    p = sub.add_parser("bank", parents=[common], help="create, trash or restore banks")
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

    p = sub.add_parser("doctor", parents=[common], help="report every problem in the data dir")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)


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


def _open_bank(ctx: Context, name: str) -> Bank:
    return ctx.datadir().bank(name)


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
    ctx.report_reload(batch.report.reload)
    return transition


# ---------------------------------------------------------------------- commands


def cmd_banks(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui banks``."""
    datadir = ctx.datadir()
    if not os.path.isdir(datadir.path):
        # as `doctor` says: "no banks" and exit 0 hid a mistyped --data-dir
        what = "does not exist" if not os.path.exists(datadir.path) else "is not a folder"
        raise NotFound(f"{datadir.path}: the data dir {what} (give --data-dir or set $KEEPGUI_DATA_DIR)")
    infos = [bank.info() for bank in datadir.banks()]
    if ctx.json_mode:
        ctx.emit_json({"data_dir": datadir.path, "banks": [i.to_obj() for i in infos]})
        return 0
    if not infos:
        ctx.out(f"no banks in {datadir.path}")
        return 0
    width = max(len(i.name) for i in infos)
    for i in infos:
        if not i.readable:
            ctx.out(f"{i.name:<{width}}  UNREADABLE: {i.reason}")
            continue
        desc = f"  — {i.description}" if i.description else ""
        ctx.out(f"{i.name:<{width}}  {i.memories} memories · {i.pinned} pinned · {i.rules} rules{desc}")
    return 0


def cmd_memories(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui memories BANK``."""
    from keepgui.backends.iii.cache import LogCache

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
    bank, _ = ctx.datadir().ensure_bank(args.bank)
    transition = _finish(ctx, bank, lambda b: b.save(args.text, args.entity, args.tag, args.pin, args.session))
    return _emit_transition(ctx, transition, created_key=True)


def cmd_edit(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui edit BANK ID``."""
    entities = [] if args.clear_entities else args.entity
    tags = [] if args.clear_tags else args.tag
    if args.text is None and entities is None and tags is None:
        raise InvalidInput("nothing to change: give --text, --entity, --tag, --clear-entities or --clear-tags")
    bank = _open_bank(ctx, args.bank)
    transition = _finish(ctx, bank, lambda b: b.update(args.id, args.text, entities, tags))
    return _emit_transition(ctx, transition)


def cmd_pin(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui pin BANK ID [--off]``."""
    bank = _open_bank(ctx, args.bank)
    return _emit_transition(ctx, _finish(ctx, bank, lambda b: b.pin(args.id, not args.off)))


def cmd_delete(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui delete BANK ID``."""
    bank = _open_bank(ctx, args.bank)
    return _emit_transition(ctx, _finish(ctx, bank, lambda b: b.delete(args.id)))


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui restore BANK ID``."""
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
        size = byte_len(rule.content)
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
    datadir = ctx.datadir()
    if datadir.has_bank(args.bank):
        bank = datadir.bank(args.bank)
    else:
        from keepgui.backends.iii.store import Bank, validate_name

        validate_name(args.bank)
        bank = Bank(datadir, args.bank)
    rule = bank.write_rule(args.name, content)
    ctx.report_reload(datadir.last_reload)
    if ctx.json_mode:
        ctx.emit_json({"ok": True, "exists": rule is not None})
    else:
        ctx.out(
            f"wrote rule `{args.name}` in bank `{args.bank}`" if rule else f"rule `{args.name}` removed (empty content)"
        )
    return 0


def cmd_bank_create(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank create NAME``."""
    bank, created = ctx.datadir().create_bank(args.name, args.description)
    ctx.report_reload(ctx.datadir().last_reload if created else None)
    if ctx.json_mode:
        ctx.emit_json({"bank": bank.info().to_obj(), "created": created})
    else:
        ctx.out(f"created bank `{bank.name}`" if created else f"bank `{bank.name}` already exists (unchanged)")
    return 0


def cmd_bank_trash(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank trash NAME``."""
    dest = ctx.datadir().trash_bank(args.name)
    ctx.report_reload(ctx.datadir().last_reload)
    if ctx.json_mode:
        ctx.emit_json({"ok": True, "trashed_to": dest})
    else:
        ctx.out(f"moved bank `{args.name}` to {dest}")
    return 0


def cmd_bank_restore(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank restore TRASHED_FOLDER_NAME``."""
    bank = ctx.datadir().restore_bank(args.folder)
    ctx.report_reload(ctx.datadir().last_reload)
    if ctx.json_mode:
        ctx.emit_json({"ok": True, "bank": bank.info().to_obj()})
    else:
        ctx.out(f"restored bank `{bank.name}`")
    return 0


def cmd_bank_trashed(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui bank trashed``."""
    items = ctx.datadir().trashed()
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

    datadir = ctx.datadir()
    findings = diagnose(datadir)
    problems = [f for f in findings if not f.note]
    entries, size = cache_size()
    if ctx.json_mode:
        ctx.emit_json(
            {
                "data_dir": datadir.path,
                "ok": not problems,
                "problems": [f.to_obj() for f in findings],
                "cache": {"folder": cache_folder(), "entries": entries, "bytes": size},
            }
        )
    else:
        for finding in findings:
            ctx.out(str(finding))
        notes = len(findings) - len(problems)
        tail = f" ({notes} note{'s' if notes != 1 else ''})" if notes else ""
        ctx.out(
            (f"{len(problems)} problem(s) in {datadir.path}" if problems else f"no problems in {datadir.path}") + tail
        )
        plural = "" if entries == 1 else "s"
        ctx.out(f"log cache: {entries} bank{plural}, {size / 2**20:.1f} MiB in {cache_folder()}")
    return 1 if problems else 0
