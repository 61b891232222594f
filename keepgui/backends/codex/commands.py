"""Codex's command-line verbs as plain functions, until the one generic command line wires them (no Qt).

The generic command line (``keepgui context --agent KIND``, ``keepgui keep --agent KIND``…) is being
built elsewhere; until it lands, every Codex verb is here, written against the bank, and runnable as
``python -m keepgui.backends.codex.commands VERB …``:

* ``context --project DIR [--json] [--part memory|agents_md]`` — what a session started in DIR is
  given, exactly: the JSON's ``memory`` is the memory block (its content parts joined; null when none
  is injected) and ``agents_md`` the AGENTS.md block (null when none); ``--part`` prints one of them
  byte for byte. ``HOME`` and ``CODEX_HOME`` are honoured as Codex honours them;
* ``memories [--project DIR] [--json]`` — the rows (summary entries, handbook, notes, read-only files);
* ``keep TEXT`` — a new ad-hoc note; ``correct KEY TEXT`` — a correction note; ``forget KEY…`` — a
  note asking to forget them (never an edit of a file Codex owns);
* ``review [--json] [--restore SELECTION] [--accept]`` — what changed in the summary since the
  version last accepted, and a restore note for a selection (``all``, ids, numbers);
* ``problems`` — what keeps Codex from reading its memory files as a person expects.

Exit status: 0; 1 on an error (one line on stderr: the file, what is wrong, what to do).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from keepgui.backends.codex.backend import CodexSource
from keepgui.backends.codex.bank import HOME_BANK, CodexBank
from keepgui.backends.codex.compact import REVIEW_NAME, ConsolidationReview
from keepgui.backends.codex.context import SessionContext, session_context
from keepgui.backends.codex.layout import CodexEnv
from keepgui.backends.codex.text import size_words
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History

STATUS_WORD = {"loaded": "loaded", "cut": "CUT", "skipped": "SKIPPED", "blank": "blank", "hidden": "not read"}


def context_of(project: str, environ: Mapping[str, str] | None = None) -> SessionContext:
    """The exact context of a session started in ``project`` (``environ``: whose HOME / CODEX_HOME)."""
    return session_context(os.path.abspath(os.path.expanduser(project)), CodexEnv.from_environ(environ))


def context_lines(context: SessionContext) -> list[str]:
    """``keepgui context --agent codex`` for a person: the home, the root, why memory is on or off, the
    AGENTS.md chain with the budget, then both blocks exactly."""
    out = [f"Codex (checked against {context.codex_version}) · session started in {context.cwd}"]
    out.append(f"  Codex home {context.env.home}" + (f" ({context.env.problem})" if context.env.problem else ""))
    out.append(f"  memory root {context.root.path}: {context.root.why}")
    if context.block is not None:
        block = context.block
        out.append(f"  memory ON: {size_words(block.size)} injected in {len(block.parts)} part(s)")
    else:
        out.append(f"  no memory block: {context.why_no_memory}")
    chain = context.chain
    out.append("")
    out.append(f"AGENTS.md: global {chain.glob.path or '(none)'}; project root {chain.root or '(none)'}")
    for item in chain.files:
        where = f"bytes {item.start:,}–{item.start + item.read:,}" if item.read else ""
        out.append(f"  {STATUS_WORD.get(item.status, item.status):>8}  {item.path}  {where}".rstrip())
        if item.reason:
            out.append(f"            {item.reason}")
    out.append(f"  project budget {chain.spent:,} of {chain.budget:,} bytes used")
    for note in context.notes:
        out.append(f"note: {note}")
    for problem in context.to_obj()["problems"]:
        out.append(f"problem: {problem}")
    out.append("")
    out.append("--- the memory block, exactly ---" if context.memory is not None else "--- no memory block ---")
    if context.memory is not None:
        out.append(context.memory)
    out.append(
        "--- the AGENTS.md block, exactly ---" if context.agents_md is not None else "--- no AGENTS.md block ---"
    )
    if context.agents_md is not None:
        out.append(context.agents_md)
    return out


def open_bank(
    environ: Mapping[str, str] | None = None, project: str | None = None, history: History | None = None
) -> CodexBank:
    """The bank of the Codex home ``environ`` names, seen from ``project`` (None: the home's own bank)."""
    env = CodexEnv.from_environ(environ)
    if env.problem:
        raise KeepguiError(env.problem)
    if project is not None:
        source = CodexSource(os.path.abspath(os.path.expanduser(project)), env=env, history=history)
        (name,) = source.scan().names
        bank = source.bank(name)
    else:
        source = CodexSource(env.home, env=env, history=history)
        bank = source.bank(HOME_BANK)
    bank.load()
    return bank


def memories(bank: CodexBank) -> list[dict[str, Any]]:
    """The rows as JSON objects (key, tags, text, fields)."""
    return [{"key": r.id, "tags": list(r.tags), "text": r.text, "fields": dict(r.fields)} for r in bank.rows()]


def review_obj(plan: ConsolidationReview) -> dict[str, Any]:
    """A review for ``--json``: the plan, and what it found in words."""
    return {**plan.to_obj(plan.select("none"), diff=False), "found": plan.describe()}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m keepgui.backends.codex.commands", description=__doc__)
    sub = parser.add_subparsers(dest="verb", required=True)
    ctx = sub.add_parser("context", help="what a session started in DIR is given, exactly")
    ctx.add_argument("--project", metavar="DIR", default=".")
    ctx.add_argument("--json", action="store_true")
    ctx.add_argument("--part", choices=("memory", "agents_md"), help="print one block, byte for byte")
    mem = sub.add_parser("memories", help="the memory as rows")
    mem.add_argument("--project", metavar="DIR")
    mem.add_argument("--json", action="store_true")
    keep = sub.add_parser("keep", help="keep a fact as a new note")
    keep.add_argument("text")
    correct = sub.add_parser("correct", help="a note correcting a memory")
    correct.add_argument("key")
    correct.add_argument("text")
    forget = sub.add_parser("forget", help="a note asking to forget memories")
    forget.add_argument("keys", nargs="+")
    rev = sub.add_parser("review", help="what changed in the summary since it was last accepted")
    rev.add_argument("--json", action="store_true")
    rev.add_argument("--restore", metavar="SELECTION")
    rev.add_argument("--accept", action="store_true")
    sub.add_parser("problems", help="what keeps Codex from reading its memory as expected")
    return parser


def run(
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    stdout: IO[str] | None = None,
    history: History | None = None,
) -> int:
    """Run one verb (see the module docstring); returns the exit status."""
    out = stdout or sys.stdout
    args = _parser().parse_args(list(argv))

    def say(obj: object) -> None:
        out.write(obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, indent=2) + "\n")

    if args.verb == "context":
        context = context_of(args.project, environ)
        if args.part:
            text = getattr(context, args.part)
            say(text or "")
        elif args.json:
            say(context.to_obj())
        else:
            say("\n".join(context_lines(context)) + "\n")
        return 0
    bank = open_bank(environ, getattr(args, "project", None), history)
    if args.verb == "memories":
        rows = memories(bank)
        say(
            rows if args.json else "".join(f"{r['key']}  [{', '.join(r['tags'])}]  {r['text'][:100]!r}\n" for r in rows)
        )
    elif args.verb in ("keep", "correct", "forget"):
        if args.verb == "keep":
            change = bank.keep(args.text)
        elif args.verb == "correct":
            change = bank.edit(args.key, "text", args.text)
        else:
            change = bank.forget(args.keys)
        say(f"{change.message}\n{change.result}\n")
    elif args.verb == "review":
        plan = bank.plan(REVIEW_NAME)
        if args.restore:
            done = bank.apply_plan(plan, plan.select(args.restore), "Restore after consolidation")
            say(f"{done.message}\n")
        elif args.accept:
            say(f"{bank.accept_review(plan).message}\n")
        else:
            say(review_obj(plan) if args.json else f"{plan.describe()}\n{plan.render(plan.select('all'))}")
    else:
        problems = bank.problems()
        say("".join(f"{p.where}: {p.message}\n" for p in problems) or "no problems\n")
    return 0


def main() -> None:
    """``python -m keepgui.backends.codex.commands``: errors as one line, exit 1."""
    try:
        sys.exit(run(sys.argv[1:]))
    except KeepguiError as exc:
        print(f"keepgui: error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
