"""``keepgui preview`` and ``keepgui recall``: what a turn would be given, and why.

``preview --json`` prints exactly the object the worker's ``memory::preview``
answers; the human form prints the system-prompt section and the message
exactly as they would be injected, then each score with its parts.
``--check-worker`` also asks a running worker and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from keepgui.backends.iii.cache import LogCache
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine, Preview, check_against_worker
from keepgui.backends.iii.recall import Hit, f32, f32_text
from keepgui.backends.iii.vectors import read_vectors
from keepgui.backends.iii.worker import WorkerLink
from keepgui.commands.iii import datadir, with_data_dir
from keepgui.core.errors import InvalidInput

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``preview`` and ``recall``."""
    common = with_data_dir(common)
    p = sub.add_parser(
        "preview",
        parents=[common],
        help="iii: what a turn on QUERY would be given, with every score (memory::preview, offline)",
    )
    p.add_argument("query", metavar="QUERY")
    _add_shared(p, "print exactly the worker's response object (compact, raw UTF-8)")
    p.add_argument(
        "--check-worker",
        action="store_true",
        help="also ask the running worker (iii trigger memory::preview) and report every difference",
    )
    p.set_defaults(func=cmd_preview)

    p = sub.add_parser("recall", parents=[common], help="iii: rank a bank's memories for QUERY (memory::recall)")
    p.add_argument("query", metavar="QUERY")
    _add_shared(p, "print the worker's response object; each hit also carries keepgui's score `parts`")
    p.add_argument("--limit", type=int, metavar="N", help="at most N memories (default recall_limit; cap 100)")
    p.add_argument("--tag", metavar="T", help="keep only memories with this exact tag (applied after the limit)")
    p.add_argument("--history", action="store_true", help="include deleted and superseded memories")
    p.set_defaults(func=cmd_recall)


def _add_shared(p: argparse.ArgumentParser, json_help: str) -> None:
    p.add_argument("--bank", metavar="B", help="the bank (default: the config's default_bank, `main`)")
    p.add_argument("--now", type=int, metavar="MS", help="score as of this epoch-ms instant (default: now)")
    p.add_argument("--config", metavar="FILE", help="a worker config JSON (unknown keys are refused)")
    p.add_argument("--json", action="store_true", help=json_help)


def _engine(args: argparse.Namespace, ctx: Context) -> tuple[BankEngine, LogCache]:
    """The bank's engine, its log and index taken from the verified cache when they can be."""
    config = MemoryConfig.load(args.config) if args.config else MemoryConfig()
    if args.now is not None and args.now < 0:
        raise InvalidInput("--now must be a non-negative epoch-ms time")
    bank = datadir(ctx).bank(args.bank or config.default_bank)
    engine = BankEngine(bank, config)
    cache = LogCache(bank.log, engine.index)
    cache.load()
    engine.refresh()
    return engine, cache


def _save_cache(ctx: Context, cache: LogCache) -> None:
    """Keep the replayed state for the next command, once the answer is out."""
    ctx.stdout.flush()
    cache.save()


def _score(hit: Hit) -> str:
    return f"{f32(hit.score):.4f}"


def _explain(hit: Hit) -> str:
    if hit.parts is None:
        return "ambient: not matched by the query, added by the floor from top memories"
    return hit.parts.explain()


def cmd_preview(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui preview QUERY``."""
    engine, cache = _engine(args, ctx)
    preview = engine.preview(args.query, now_ms=args.now)
    if ctx.json_mode:
        print(preview.to_json(notice=True), file=ctx.stdout)
    else:
        _print_preview(ctx, engine, preview)
    _save_cache(ctx, cache)
    if not args.check_worker:
        return 0
    diffs = check_against_worker(preview, args.query, WorkerLink())
    say = ctx.note if ctx.json_mode else ctx.out
    if not diffs:
        say("the running worker gives the same preview")
        return 0
    say(f"the running worker differs in {len(diffs)} field{'s' if len(diffs) != 1 else ''}:")
    for diff in diffs:
        say(f"  {diff}")
    return 1


def _print_preview(ctx: Context, engine: BankEngine, preview: Preview) -> None:
    from keepgui.core.source import plural  # not at import: a preview's start-up need not pay for it

    truncated = " · over budget, truncated" if preview.rules_truncated else ""
    ctx.out(
        f"=== system prompt gets: {plural(preview.rules, 'rule', 'rules')}{truncated} "
        f"(appended to the harness's system prompt, exactly) ==="
    )
    ctx.stdout.write(preview.system_prompt_section)
    for outcome in preview.rule_outcomes:
        if outcome.status != "fit":
            ctx.note(f"rule `{outcome.name}` {outcome.status}: {outcome.injected} of {outcome.size} bytes injected")
    if not preview.config.inject_rules:
        ctx.out("(inject_rules is off: only the header is sent)")
    ctx.out(
        f"=== appended message ({plural(len(preview.memories), 'memory', 'memories')}, in order) "
        f"· retrieval: {preview.retrieval} (lexical only) ==="
    )
    if preview.notice is not None:
        ctx.out(f"lexical only: {preview.notice.why()}")
    if preview.budget_note:
        ctx.out(f"budget: {preview.budget_note}")
    if preview.message is not None:
        ctx.out(preview.message)
    elif preview.memories:
        ctx.out("(no message: inject_memories is off)")
    else:
        ctx.out("(no message: no memories would be appended)")
    ctx.out("=== scores ===")
    ctx.out(f"query tokens: {' '.join(preview.query_tokens) or '(none)'}")
    fitted = len(preview.memories)
    for rank, hit in enumerate(preview.candidates, 1):
        label = "ambient" if hit.ambient else _score(hit)
        cut = "" if rank <= fitted else "  [over the token budget: not sent]"
        ctx.out(f"{rank:>2}. {label:>8}  {hit.memory.id}  {_one_line(hit.memory.text)}{cut}")
        ctx.out(f"              {_explain(hit)}")
    if not preview.candidates:
        ctx.out("(no memories)")
    bank = engine.bank
    vectors = read_vectors(bank.path, bank.log.records)
    ctx.out(f"vectors: {vectors.summary()} · information only, keepgui ranks without embeddings")


def _one_line(text: str) -> str:
    return text.replace("\n", " ⏎ ")


def cmd_recall(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui recall QUERY``."""
    if args.limit is not None and args.limit < 0:
        raise InvalidInput("--limit must be a non-negative integer")
    engine, cache = _engine(args, ctx)
    result = engine.recall(args.query, limit=args.limit, tag=args.tag, include_superseded=args.history, now_ms=args.now)
    if ctx.json_mode:
        print(result.to_json(parts=True, notice=True), file=ctx.stdout)
        _save_cache(ctx, cache)
        return 0
    ctx.out(
        f"query tokens: {' '.join(result.query_tokens) or '(none)'} · limit {result.limit} · "
        f"retrieval: {result.retrieval} (lexical only)"
    )
    ctx.out(f"lexical only: {result.notice.why()}")
    for rank, hit in enumerate(result.hits, 1):
        flag = "x" if not hit.memory.live else ("*" if hit.memory.pinned else " ")
        ctx.out(f"{rank:>3}. {f32_text(hit.score):>10} {flag} {hit.memory.id}  {_one_line(hit.memory.text)}")
        ctx.out(f"                {_explain(hit)}")
    if not result.hits:
        ctx.out("nothing matched" + (f" with tag #{args.tag}" if args.tag else ""))
    _save_cache(ctx, cache)
    return 0
