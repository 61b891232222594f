"""Issue 3's benchmark: preview and recall on a 100,000-memory, 250,000-line bank.

Side by side in one process, interleaved: keepgui's preview over its
incremental index vs a brute-force preview that tokenizes and scores every
live memory for each query (target ≥ 20× faster; both must give the same
bytes). Then the median preview latency over 50 realistic 3–8 word queries
(target < 30 ms), and the time to bring the index up to date after one new
memory is appended (target < 1 ms; the log refresh that reads the line is
reported beside it).
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import time
from collections import Counter

from tests.bench.common import Result, bench_size, cached_bank, fresh_copy
from tests.bench.synth import NOW

QUERIES = [
    "what does the user prefer for writing",
    "when do I publish blog posts",
    "which port does our API use",
    "tell me about Mike",
    "who is the user",
    "does the team use Kubernetes",
    "how do we deploy on Fridays",
    "what tea do I like",
    "where is the Lisbon office",
    "does Ana review unit tests first",
    "what did Priya migrate to",
    "how does the build track feature flags",
    "does Sam like dark mode",
    "what units should I use",
    "which database does the deploy pipeline use",
    "does the staging server run Postgres 16",
    "how long should my paragraphs be",
    "what keybindings do I use",
    "who schedules weekly releases",
    "is Rust used for the workers",
    "what about the mobile app",
    "does Tomás prefer squash merges",
    "where are the 日本語 docs",
    "what does Grafana track",
    "do we write release notes in English",
    "my standing desk",
    "who documents the monorepo",
    "what are the on-call rotations",
    "café meetings with the team",
    "does the user avoid Friday deploys",
    "what does Mike dislike",
    "how many cross-compile targets",
    "are type hints required",
    "what answers do I prefer",
    "tell me about the blog",
    "does our API depend on Kubernetes",
    "what does the team dislike",
    "which dashboards does Grafana have",
    "when does the blog publish",
    "what did I say about metric units",
    "what does the user use at work",
    "does Priya use vim keybindings",
    "what is confirmed twice",
    "since March what changed",
    "what does Sam deploy at home",
    "is the build faster now",
    "who runs the staging server",
    "what about formal writing in every review",
    "how does Ana track on-call rotations",
    "remind me what I avoid when on call",
]


def brute_force_preview(bank, query, config, now_ms):
    """The preview computed from scratch: every live memory tokenized and scored for this query."""
    from keepgui.backends.iii.context import (
        AMBIENT_FLOOR,
        Preview,
        ambient_header,
        apply_floor,
        memories_message,
        render_rules,
    )
    from keepgui.backends.iii.recall import RETRIEVAL_LEXICAL, Hit, fused_parts, order_key, query_tokens
    from keepgui.backends.iii.tokenize import entity_tokens, tokenize

    live = [m for m in bank.log.records.values() if m.invalid_at is None]
    docs = [Counter(tokenize(m.text) + list(entity_tokens(m.entities))) for m in live]
    lengths = [sum(doc.values()) for doc in docs]
    df = Counter(term for doc in docs for term in doc)
    n = len(live)
    avgdl = max(sum(lengths) / n, 1.0) if n else 1.0
    tokens = query_tokens(query)
    qset = set(tokens)
    hits = []
    for memory, doc, dl in zip(live, docs, lengths, strict=True):
        score = 0.0
        for term in tokens:
            tf = doc.get(term, 0)
            if tf:
                idf = math.log((n - df[term] + 0.5) / (df[term] + 0.5) + 1)
                score += idf * (tf * 2.2) / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
        if score > 0:
            parts = fused_parts(score, memory, qset, now_ms, config.decay_half_life_days)
            hits.append(Hit(memory, parts.final, parts))
    hits = sorted(hits, key=order_key)[: config.recall_limit]
    top = sorted(live, key=lambda m: (not m.pinned, -m.corroboration, -m.updated_at, m.id))[: config.recall_limit]
    floor = min(AMBIENT_FLOOR, config.recall_limit)
    candidates = apply_floor(hits, top if len(hits) < floor else [], floor)
    message, fitted = memories_message(bank.name, candidates, config.recall_budget_tokens)
    rules = [(r.name, r.content) for r in bank.rules()[0]]
    part, truncated, outcomes = render_rules(rules, config.max_rule_chars)
    return Preview(
        bank.name,
        ambient_header(bank.name) + part,
        len(rules),
        truncated,
        fitted,
        message,
        RETRIEVAL_LEXICAL,
        candidates,
        outcomes,
        tokens,
        now_ms,
        config,
    )


def run(quick: bool = False) -> list[Result]:
    """Measure preview, recall and index updates on a cached synthetic bank (``quick``: 20,000 memories)."""
    from keepgui.backends.iii.config import MemoryConfig
    from keepgui.backends.iii.context import BankEngine
    from keepgui.backends.iii.record import fingerprint, new_memory
    from keepgui.backends.iii.store import DataDir

    memories = bench_size(quick)
    lines = memories * 5 // 2
    folder = fresh_copy(cached_bank(memories, lines))
    try:
        bank = DataDir(os.path.dirname(folder)).bank(os.path.basename(folder))
        config = MemoryConfig()
        engine = BankEngine(bank, config)
        start = time.perf_counter()
        engine.refresh()
        build_s = time.perf_counter() - start
        start = time.perf_counter()
        engine.preview(QUERIES[0], now_ms=NOW)
        cold_s = time.perf_counter() - start

        fast, slow = [], []
        for query in QUERIES[: 3 if quick else 10]:
            start = time.perf_counter()
            ours = engine.preview(query, now_ms=NOW)
            fast.append(time.perf_counter() - start)
            start = time.perf_counter()
            theirs = brute_force_preview(bank, query, config, NOW)
            slow.append(time.perf_counter() - start)
            assert ours.to_json() == theirs.to_json(), f"preview differs from brute force for {query!r}"
        fast_s, slow_s = statistics.median(fast), statistics.median(slow)

        latencies = []
        for query in QUERIES:
            start = time.perf_counter()
            engine.preview(query, now_ms=NOW)
            latencies.append(time.perf_counter() - start)
        latency_s = statistics.median(latencies)
        p90 = sorted(latencies)[int(len(latencies) * 0.9)]
        searches = []
        for query in QUERIES:
            start = time.perf_counter()
            engine.recall(query, limit=50, now_ms=NOW)
            searches.append(time.perf_counter() - start)

        updates, refreshes = [], []
        for serial in range(20 if quick else 50):
            text = f"User now prefers benchmark memory number {serial} for the api"
            line = new_memory(
                id=fingerprint(text),
                text=text,
                entities=["user", "api"],
                tags=[],
                confidence="stated",
                corroboration=0,
                pinned=False,
                created_at=NOW,
                updated_at=NOW,
                revision=0,
            ).to_line()
            with open(bank.log_path, "ab") as fh:
                fh.write(line)
            start = time.perf_counter()
            delta = bank.refresh()
            refreshes.append(time.perf_counter() - start)
            start = time.perf_counter()
            engine.sync(delta)
            updates.append(time.perf_counter() - start)
            assert delta.added and not delta.reset
        update_s = statistics.median(updates)
        after = engine.preview(QUERIES[0], now_ms=NOW)
        assert after.to_json() == brute_force_preview(bank, QUERIES[0], config, NOW).to_json()
    finally:
        shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    return [
        Result(
            f"preview, {memories:,} memories (median of {len(fast)} queries)",
            fast_s,
            "s",
            slow_s,
            "brute force: tokenize + score all",
            slow_s / fast_s,
            "× faster",
            "≥ 20×",
            slow_s / fast_s >= 20,
            note="identical bytes to the brute force for every query",
        ),
        Result(
            "preview latency, 50 realistic queries (median)",
            latency_s,
            "s",
            target="< 30 ms",
            met=latency_s < 0.030,
            note=f"p90 {p90 * 1000:.1f} ms; first preview after load {cold_s * 1000:.1f} ms",
        ),
        Result("recall, limit 50 (the memories panel's search), 50 queries (median)", statistics.median(searches), "s"),
        Result(
            "index update after one new memory (median)",
            update_s * 1000,
            "ms",
            target="< 1 ms",
            met=update_s < 0.001,
            note=f"log refresh reading the line: {statistics.median(refreshes) * 1000:.2f} ms",
        ),
        Result(
            f"index build from the replayed log, {memories:,} memories", build_s, "s", note="includes the log replay"
        ),
    ]


if __name__ == "__main__":
    from tests.bench.common import print_table

    print_table(run())
