"""The common commands on a bank's rows, for every backend alike: ``memories``, ``keep``, ``edit``,
``forget``, ``restore``, ``pin``, ``unpin`` and ``problems``.

Each works through the source protocol (:mod:`keepgui.core.source`) on the bank that
:mod:`keepgui.commands.sources` chooses, with the same options and ``--json`` shapes for every
backend; what a bank cannot do is refused with the reason its Capabilities give.

``--json`` shapes:

* ``memories``: one row per line (JSON Lines, so ``| head`` answers at once): ``id``, ``text``,
  ``tags``, ``entities``, ``pinned``, ``live``, ``invalid_at``, ``superseded_by``,
  ``corroboration``, ``confidence``, ``created_at``, ``updated_at``, ``revision``, ``position``
  and ``fields`` (the backend's labelled values, an object);
* ``keep``, ``edit``, ``forget``, ``restore``, ``pin``, ``unpin``: one object, ``written``,
  ``message``, ``feedback`` (``{level, text}``), ``notes``, ``source``, ``bank`` and ``rows`` (the
  rows the write added or changed, as ``memories`` prints them); ``keep`` adds ``handled_by``
  (``"window"`` when a running keepgui window kept it, so its Edit → Undo takes it back, else
  ``"cli"``);
* ``problems``: ``{source, ok, problems: [{bank, path, line, message, code, level}]}``.

Exit status: 0 when done; 1 when nothing was written (``keep`` found it kept already, or the
backend's checks suggest another place) or problems were found, or on an error.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from keepgui.cli import one_line
from keepgui.commands.sources import (
    Chosen,
    add_at_option,
    add_source_options,
    bank_names,
    open_bank,
    open_chosen,
    past_of,
)
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.source import Bank, Change, Row


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the common commands on rows."""
    p = sub.add_parser("memories", parents=[common], help="list a bank's memories (every agent's)")
    add_source_options(p)
    p.add_argument("--history", action="store_true", help="include forgotten, deleted and superseded ones")
    p.add_argument("--tag", help="only those with this exact tag")
    p.add_argument("--json", action="store_true", help="one JSON object per row and line")
    add_at_option(p, "the memories")
    p.set_defaults(func=cmd_memories)

    p = sub.add_parser("keep", parents=[common], help="keep a fact, as the agent's own keep would")
    add_source_options(p)
    p.add_argument("text", nargs="+", help="the fact (several words are joined with spaces)")
    p.add_argument("--force", action="store_true", help="keep it even when the backend's checks say not to")
    p.add_argument("--replace", action="store_true", help="replace the entries the new fact contains, where it can")
    p.add_argument(
        "--stand-alone",
        action="store_true",
        default=argparse.SUPPRESS,
        help="write directly even when a keepgui window that shows the source is running",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_keep)

    p = sub.add_parser("edit", parents=[common], help="edit a memory's text, tags or entities")
    add_source_options(p)
    p.add_argument("id", metavar="ID", help="the memory (its id as `memories` prints it, or its start)")
    p.add_argument("--text", help="the new text")
    p.add_argument("--tag", action="append", default=None, help="replace the tags (repeatable)")
    p.add_argument("--entity", action="append", default=None, help="replace the entities (repeatable)")
    p.add_argument("--clear-tags", action="store_true", help="remove every tag")
    p.add_argument("--clear-entities", action="store_true", help="remove every entity")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_edit)

    p = sub.add_parser("restore", parents=[common], help="bring forgotten memories back, or memories as they were")
    add_source_options(p)
    p.add_argument("ids", nargs="*", metavar="ID", help="memories, by their ids as `memories` (--at) prints them")
    add_at_option(p, "the memories (or --file)")
    p.add_argument("--file", metavar="PATH", help="with --at: this memory file, whole, as it was then")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_restore)

    for name, func, text in (
        ("forget", cmd_forget, "forget memories (restore brings them back)"),
        ("pin", cmd_pin, "pin memories"),
        ("unpin", cmd_unpin, "unpin memories"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        add_source_options(p)
        p.add_argument("ids", nargs="+", metavar="ID", help="memories, by their ids as `memories` prints them")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=func)

    register_bundles(sub, common)

    p = sub.add_parser("problems", parents=[common], help="everything wrong with a source's files, bank by bank")
    add_source_options(p, banks="only this bank (default: every bank of the source)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_problems)


# ---------------------------------------------------------------------- rows


def row_obj(row: Row) -> dict[str, Any]:
    """A row as ``--json`` prints it (the same keys for every backend)."""
    return {
        "id": row.id,
        "text": row.text,
        "tags": list(row.tags),
        "entities": list(row.entities),
        "pinned": row.pinned,
        "live": row.invalid_at is None,
        "invalid_at": row.invalid_at,
        "superseded_by": row.superseded_by,
        "corroboration": row.corroboration,
        "confidence": row.confidence,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "revision": row.revision,
        "position": row.position,
        "fields": dict(row.fields),
    }


def row_line(row: Row) -> str:
    """One human line: ``ID * text  [#tag; @entity]  (seen ×2, updated 2d ago)`` (``*`` pinned, ``x`` retired)."""
    from keepgui.core.timefmt import relative_time

    flag = "x" if row.invalid_at is not None else "*" if row.pinned else " "
    labels = []
    if row.tags:
        labels.append(" ".join("#" + t for t in row.tags))
    if row.entities:
        labels.append("@" + " @".join(row.entities))
    meta = []
    if row.corroboration:
        meta.append(f"seen ×{row.corroboration + 1}")
    if row.updated_at:
        meta.append(f"updated {relative_time(row.updated_at)}")
    if row.superseded_by:
        meta.append(f"superseded by {row.superseded_by}")
    elif row.invalid_at is not None:
        meta.append("forgotten")
    text = one_line(" ⏎ ".join(row.text.splitlines()) or row.text)
    return (
        f"{one_line(row.id)} {flag} {text}"
        + (f"  [{'; '.join(labels)}]" if labels else "")
        + (f"  ({', '.join(meta)})" if meta else "")
    )


def ordered(bank: Bank, rows: Iterable[Row]) -> list[Row]:
    """Rows as the table shows them: in file order where the bank keeps one, else newest first."""
    if bank.capabilities.ordered:
        return sorted(rows, key=lambda r: (r.invalid_at is not None, r.position is None, r.position or 0, r.id))
    return sorted(rows, key=lambda r: (r.invalid_at is not None, -(r.updated_at or 0), r.id))


def _loaded(args: argparse.Namespace, ctx: Context) -> tuple[Chosen, Bank, str]:
    chosen = open_chosen(args, ctx)
    bank, how = open_bank(args, chosen)
    bank.load(full=True)
    return chosen, bank, how


def cmd_memories(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui memories``: the bank's rows, live ones (with ``--history`` every one); ``--at``: as they were."""
    if args.at is not None:
        from keepgui.core.timetravel import parse_when

        at = parse_when(args.at)
        chosen = open_chosen(args, ctx)
        now, how = open_bank(args, chosen)
        with past_of(args, ctx, chosen, at) as past:
            bank = past.bank(now.key.bank)
            bank.load(full=True)
            return _listed(args, ctx, bank, how, past.shown)
    _chosen, bank, how = _loaded(args, ctx)
    return _listed(args, ctx, bank, how, str)


def _listed(args: argparse.Namespace, ctx: Context, bank: Bank, how: str, shown: Callable[[str], str]) -> int:
    rows = [
        r for r in bank.rows() if (args.history or r.invalid_at is None) and (args.tag is None or args.tag in r.tags)
    ]
    rows = ordered(bank, rows)
    if ctx.json_mode:
        ctx.stdout.write(
            shown("".join(json.dumps(row_obj(r), ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))
        )
        return 0
    for row in rows:
        ctx.out(shown(row_line(row)))
    if not rows:
        ctx.out(f"no {bank.capabilities.nouns}" + (f" tagged #{args.tag}" if args.tag else ""))
    summary = bank.summary()
    if summary.problems:
        ctx.note(f"{summary.problems} problem(s) reading this bank: keepgui problems {how}")
    if summary.compaction_due:
        ctx.note(summary.compaction_due)
    return 0


# ---------------------------------------------------------------------- writes


def change_obj(chosen: Chosen, bank: Bank, change: Change, rows: Sequence[Row]) -> dict[str, Any]:
    """A write as ``--json`` prints it (the same keys for every backend and command)."""
    return {
        "written": change.written,
        "message": change.message or (change.text if change.written else ""),
        "feedback": [{"level": h.level, "text": h.text} for h in change.feedback],
        "notes": list(change.notes),
        "source": chosen.source.path,
        "bank": str(bank.key),
        "rows": [row_obj(r) for r in rows],
    }


def changed_rows(before: dict[str, Row], bank: Bank) -> list[Row]:
    """The rows a write added or changed (compared with the rows before it)."""
    return [r for r in bank.rows() if before.get(r.id) != r]


def report(
    ctx: Context, chosen: Chosen, bank: Bank, change: Change, before: dict[str, Row], keys: Sequence[str] = ()
) -> int:
    """Say what a write did (``--json``: :func:`change_obj`); exit 1 when nothing was written."""
    if ctx.json_mode:
        ctx.emit_json(change_obj(chosen, bank, change, changed_rows(before, bank) if change.written else []))
    elif change.written:
        ctx.out(change.message or (f"{change.text}: {' '.join(keys)}" if keys else change.text))
    elif change.message and not change.feedback:
        ctx.note(change.message)
    if not ctx.json_mode:
        for hint in change.feedback:
            ctx.note(hint.text)
        for note in change.notes:
            ctx.note(note)
    return 0 if change.written else 1


def _refuse_unless(bank: Bank, what: str) -> None:
    if not bank.capabilities.can(what):
        from keepgui.core.source import refuse

        refuse(bank.capabilities, what)


def cmd_keep(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui keep TEXT``: the agent's own keep (through a running keepgui window that shows the source,
    so it lands on the window's undo stack)."""
    from keepgui.core.source import FORCE, KEEP

    chosen = open_chosen(args, ctx)
    bank, _how = open_bank(args, chosen)
    _refuse_unless(bank, KEEP)
    if args.force:
        _refuse_unless(bank, FORCE)
    text = " ".join(args.text)
    handed = _hand_over(args, ctx, chosen, bank, text)
    if handed is not None:
        return handed
    bank.load(full=True)
    before = {r.id: r for r in bank.rows()}
    change = bank.keep(text, force=args.force, replace=args.replace)
    if ctx.json_mode:
        ctx.emit_json({**change_obj(chosen, bank, change, changed_rows(before, bank)), "handled_by": "cli"})
        return 0 if change.written else 1
    return report(ctx, chosen, bank, change, before)


def _hand_over(args: argparse.Namespace, ctx: Context, chosen: Chosen, bank: Bank, text: str) -> int | None:
    """Keep through the running keepgui window; None when there is none (or it does not show the source)."""
    if getattr(args, "stand_alone", False) or getattr(args, "demo", False):
        return None
    from keepgui import app

    if not app.window_may_be_running():
        return None  # the common case costs one stat(), no Qt event machinery
    request = {
        "text": text,
        "source": chosen.source.path,
        "bank": str(bank.key),
        "force": bool(args.force),
        "replace": bool(args.replace),
    }
    reply = app.ask_window("keep", request)
    if reply is None:
        return None
    if not reply.get("ok"):
        raise KeepguiError(reply.get("error") or "the running keepgui refused the keep")
    if not reply.get("handled"):
        ctx.note(f"{reply.get('reason', 'the running keepgui did not take it')}; keeping directly")
        return None
    done = reply.get("change") or {"written": bool(reply.get("undoable")), "message": "", "feedback": [], "notes": []}
    if ctx.json_mode:
        obj = {
            "written": bool(done.get("written")),
            "message": str(done.get("message", "")),
            "feedback": list(done.get("feedback", [])),
            "notes": list(done.get("notes", [])),
            "source": chosen.source.path,
            "bank": str(bank.key),
            "rows": [],
            "handled_by": "window",
        }
        ctx.emit_json(obj)
        return 0 if obj["written"] else 1
    if done.get("written"):
        ctx.out(str(done.get("message", "")))
        ctx.note("kept through the running keepgui window: Edit → Undo there takes it back")
    for hint in done.get("feedback", []):
        ctx.note(str(hint.get("text", "")))
    return 0 if done.get("written") else 1


def resolve(bank: Bank, given: Sequence[str], *, live: bool) -> list[str]:
    """The keys of the rows ``given`` names: a key, or the start of one (or of what follows its first
    ``:``, as in ``forgotten:3f2a``), among the live rows (``live``) or the retired ones."""
    rows = [r for r in bank.rows() if (r.invalid_at is None) == live]
    keys = [r.id for r in rows]
    known = set(keys)
    out = []
    for item in given:
        if item in known:
            out.append(item)
            continue
        matches = [k for k in keys if k.startswith(item) or k.partition(":")[2].startswith(item)] if item else []
        if len(matches) == 1:
            out.append(matches[0])
            continue
        what = bank.capabilities.noun if live else f"forgotten {bank.capabilities.noun}"
        if len(matches) > 1:
            raise InvalidInput(f"`{item}` names {len(matches)} {bank.capabilities.nouns}: give more of its id")
        raise NotFound(f"bank `{bank.key}` has no {what} `{item}` (see `keepgui memories --history`)")
    return out


def _write(
    args: argparse.Namespace, ctx: Context, capability: str, live: bool, act: Callable[[Bank, list[str]], Change]
) -> int:
    chosen, bank, how = _loaded(args, ctx)
    if not (capability == _tombstone() and live and _forgets_its_own_way(bank)):
        _refuse_unless(bank, capability)
    keys = resolve(bank, args.ids, live=live)
    before = {r.id: r for r in bank.rows()}
    code = report(ctx, chosen, bank, act(bank, keys), before, keys)
    if capability == _tombstone() and live and not ctx.json_mode:
        retired = [
            r.id
            for r in bank.rows()
            if r.invalid_at is not None and getattr(before.get(r.id), "invalid_at", None) is None
        ]
        if retired:
            ctx.out(f"to put {'it' if len(retired) == 1 else 'them'} back: keepgui restore {how} {' '.join(retired)}")
    return code


def _tombstone() -> str:
    from keepgui.core.source import TOMBSTONE

    return TOMBSTONE


def _forgets_its_own_way(bank: Bank) -> bool:
    """The bank forgets otherwise than by retiring rows (a note its agent applies): its own ``forget``."""
    from keepgui.core.defaults import BankDefaults

    return getattr(type(bank), "forget", BankDefaults.forget) is not BankDefaults.forget


def cmd_forget(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui forget ID…``: retire rows (reversibly: ``restore`` with the ids it prints), or forget
    them the agent's own way where it has one (a note that asks its consolidation to drop them)."""
    return _write(args, ctx, _tombstone(), True, lambda bank, keys: bank.forget(keys))


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui restore ID…``: bring retired rows back; with ``--at TIME``, memories (or ``--file``) as they were."""
    if args.at is not None:
        return _restore_at(args, ctx)
    if args.file is not None:
        raise InvalidInput("--file restores a file as it was: give the time with --at TIME")
    if not args.ids:
        raise InvalidInput("say which: keepgui restore ID… (or --at TIME with IDs or --file PATH)")
    return _write(args, ctx, _tombstone(), False, lambda bank, keys: bank.set_live(keys, True))


def _restore_at(args: argparse.Namespace, ctx: Context) -> int:
    """``restore --at TIME ID…`` (each memory as it was then: brought back, its text put back, or kept
    again) or ``restore --at TIME --file PATH`` (the file whole), each a conflict-checked write of the bank."""
    from keepgui.core.timetravel import describe_when, parse_when

    at = parse_when(args.at)
    if (args.file is None) == (not args.ids):
        raise InvalidInput("with --at, give the memories' IDs (as `memories --at` prints them) or --file PATH")
    chosen, bank, _how = _loaded(args, ctx)
    if args.file is not None:
        return _restore_file(ctx, chosen, bank, args.file, at)
    from keepgui.core import restore

    with past_of(args, ctx, chosen, at) as past:
        then_bank = past.bank(bank.key.bank)
        then_bank.load(full=True)
        keys = resolve(then_bank, args.ids, live=True)
        then = {r.id: r for r in then_bank.rows()}
        texts = {k: past.shown(then[k].text) for k in keys}
    before = {r.id: r for r in bank.rows()}
    code = 0
    for item in restore.planned(list(before.values()), texts):
        changes = restore.run(bank, item.writes(bank))
        if not changes:
            ctx.note(f"{item.key} is as it was at {describe_when(at)}: nothing to restore")
            continue
        last = ([c for c in changes if c.written] or changes)[-1]
        code = max(code, report(ctx, chosen, bank, last, before, [item.key]))
    return code


def _restore_file(ctx: Context, chosen: Chosen, bank: Bank, given: str, at: int) -> int:
    """One memory file of the bank, whole, as it was at ``at`` (through the bank's ``write_file``)."""
    from keepgui.core import journal, restore
    from keepgui.core.timetravel import describe_when

    path, text = restore.file_then(journal.install(), bank, given, at)
    write = restore.file_write(path, text)
    if write is None:
        ctx.note(f"{path} is as it was at {describe_when(at)}: nothing to restore")
        return 0
    before = {r.id: r for r in bank.rows()}
    return report(ctx, chosen, bank, write(bank), before)


def cmd_pin(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui pin ID…``."""
    from keepgui.core.source import PIN

    return _write(args, ctx, PIN, True, lambda bank, keys: bank.set_pinned(keys, True))


def cmd_unpin(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui unpin ID…``."""
    from keepgui.core.source import PIN

    return _write(args, ctx, PIN, True, lambda bank, keys: bank.set_pinned(keys, False))


def cmd_edit(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui edit ID --text T | --tag T… | --entity E…``: each field given, in that order."""
    from keepgui.core.source import EDIT, ENTITIES, TAGS

    tags = [] if args.clear_tags else args.tag
    entities = [] if args.clear_entities else args.entity
    edits: list[tuple[str, str, str | list[str]]] = []
    if args.text is not None:
        edits.append((EDIT, "text", args.text))
    if tags is not None:
        edits.append((TAGS, "tags", tags))
    if entities is not None:
        edits.append((ENTITIES, "entities", entities))
    if not edits:
        raise InvalidInput("nothing to change: give --text, --tag, --entity, --clear-tags or --clear-entities")
    chosen, bank, _how = _loaded(args, ctx)
    for capability, _field, _value in edits:
        _refuse_unless(bank, capability)
    (key,) = resolve(bank, [args.id], live=True)
    before = {r.id: r for r in bank.rows()}
    changes = [bank.edit(key, name, value) for _capability, name, value in edits]
    if len(changes) == 1:
        return report(ctx, chosen, bank, changes[0], before)
    from dataclasses import replace

    last = changes[-1]
    merged = replace(
        last,
        written=any(c.written for c in changes),
        message="; ".join(c.message or c.text for c in changes if c.written),
        feedback=tuple(h for c in changes for h in c.feedback),
        notes=tuple(n for c in changes for n in c.notes),
    )
    return report(ctx, chosen, bank, merged, before)


# ---------------------------------------------------------------------- problems


def cmd_problems(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui problems``: every problem of every bank of the source (or of ``--bank``); exit 1 when a
    problem (not a note) is found."""
    chosen = open_chosen(args, ctx)
    if getattr(args, "bank", None):
        banks = [open_bank(args, chosen)[0]]
    else:
        banks = [chosen.source.bank(name) for name in bank_names(chosen)]
    found: list[dict[str, Any]] = []
    for bank in banks:
        try:
            bank.load(full=True)
        except (KeepguiError, OSError) as exc:
            found.append(
                {
                    "bank": str(bank.key),
                    "path": chosen.source.path,
                    "line": 0,
                    "message": str(exc),
                    "code": "unreadable",
                    "level": "warning",
                }
            )
            continue
        found += [
            {
                "bank": str(bank.key),
                "path": p.path,
                "line": p.line,
                "message": p.message,
                "code": p.code,
                "level": p.level,
            }
            for p in bank.problems()
        ]
    ok = not any(item["level"] != "note" for item in found)
    if ctx.json_mode:
        ctx.emit_json({"source": chosen.source.path, "ok": ok, "problems": found})
        return 0 if ok else 1
    for item in found:
        where = f"{item['path']}:{item['line']}" if item["line"] else item["path"]
        ctx.out(f"{item['bank']}: {where}: {item['message']}" + (" (note)" if item["level"] == "note" else ""))
    problems = sum(1 for item in found if item["level"] != "note")
    ctx.out(f"{problems} problem(s) in {chosen.source.path}" if problems else f"no problems in {chosen.source.path}")
    return 0 if ok else 1


# ---------------------------------------------------------------------- across agents: export, import, copy


def register_bundles(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``export``, ``import`` and ``copy``."""
    p = sub.add_parser("export", parents=[common], help="a bank's memories as a portable bundle (Markdown or JSON)")
    add_source_options(p)
    p.add_argument("--format", choices=("md", "json"), default="md", help="md for people (default), json for programs")
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (a new file) instead of stdout")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser(
        "import", parents=[common], help="a bundle's memories as a plan for any agent (--apply keeps them)"
    )
    add_source_options(p)
    p.add_argument("bundle", metavar="BUNDLE", help="a JSON bundle made by `keepgui export --format json`")
    p.add_argument("--apply", action="store_true", help="keep them, through the agent's own keep")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_import)
    p = sub.add_parser("copy", parents=[common], help="copy (or --move) one memory to another agent, in its format")
    add_source_options(p)
    p.add_argument("id", metavar="ID", help="the memory, by its id as `memories` prints it")
    p.add_argument("--to-agent", metavar="KIND", required=True, help="the agent that gets it (its own memory)")
    p.add_argument("--to-source", metavar="PATH", help="that agent's folder, when not its own place")
    p.add_argument("--move", action="store_true", help="forget it at the source once the target kept it")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_copy)


def cmd_export(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui export``: the bank's live memories, Markdown or JSON, to stdout or a new file."""
    from keepgui.core import bundles

    chosen, bank, _how = _loaded(args, ctx)
    live = ordered(bank, [r for r in bank.rows() if r.invalid_at is None])
    obj = bundles.bundle_of(chosen.backend.kind, chosen.source.path, bank, live)
    text = bundles.bundle_json(obj) if args.format == "json" else bundles.bundle_markdown(obj)
    if args.output is None:
        ctx.stdout.write(text)
        return 0
    path = bundles.write_new(args.output, text)
    ctx.note(f"{len(obj['memories'])} memories of {obj['agent']} written to {path}")
    return 0


def cmd_import(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui import BUNDLE``: each memory not in the bank yet, as a plan; ``--apply`` keeps each through
    the bank's own keep (in its format, within its limits); those it refuses are listed with why."""
    from keepgui.core import bundles
    from keepgui.core.source import KEEP

    obj = bundles.read_bundle(args.bundle)
    chosen, bank, how = _loaded(args, ctx)
    _refuse_unless(bank, KEEP)
    items = bundles.plan(bank, bundles.texts_of(obj))
    results = [i.to_obj() for i in (bundles.apply(bank, items) if args.apply else items)]
    if ctx.json_mode:
        ctx.emit_json(
            {
                "bundle": {"agent": obj.get("agent"), "bank": obj.get("bank")},
                "target": chosen.source.path,
                "items": results,
            }
        )
    else:
        marks = {"planned": "+", "kept": "+", "present": "=", "refused": "!"}
        for item in results:
            line = f"{marks[item['state']]} {one_line(item['text'].splitlines()[0] if item['text'] else '')}"
            ctx.out(line + (f"  ({item['why']})" if item["why"] else ""))
        counts = {s: sum(1 for i in results if i["state"] == s) for s in marks}
        done = f"{counts['kept']} kept" if args.apply else f"{counts['planned']} to keep"
        ctx.out(
            f"{done}, {counts['present']} already there, {counts['refused']} refused"
            + ("" if args.apply else f"; to apply: keepgui import {args.bundle} {how} --apply")
        )
    return 1 if any(i["state"] == "refused" for i in results) else 0


def cmd_copy(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui copy ID --to-agent K``: the memory kept by the other agent's own keep; ``--move`` forgets it at
    the source after the target's write succeeded."""
    from keepgui.commands.sources import open_bank as bank_of
    from keepgui.core import bundles
    from keepgui.core.source import KEEP

    chosen, bank, _how = _loaded(args, ctx)
    (key,) = resolve(bank, [args.id], live=True)
    row = next(r for r in bank.rows() if r.id == key)
    if args.move:
        _refuse_unless(bank, _tombstone())
    target_args = argparse.Namespace(agent=args.to_agent)
    if args.to_source:
        target_args.source = args.to_source
    target = open_chosen(target_args, ctx)
    into, _into_how = bank_of(target_args, target)
    into.load(full=True)
    _refuse_unless(into, KEEP)
    before = {r.id: r for r in into.rows()}
    change = bundles.keep(into, bundles.Item(row.text, bundles.PLANNED, key=key))
    code = report(ctx, target, into, change, before)
    if change.written and args.move:
        bundles.forget_moved(bank, key)
        if not ctx.json_mode:
            ctx.out(f"forgotten at {chosen.source.path}: {key}")
    return code
