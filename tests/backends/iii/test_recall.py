"""BM25, the fused score, ranking, history and top_memories (spec §2, §6.1, §6.2)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from keepgui.backends.iii import recall as recall_module
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.index import BankIndex
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.recall import (
    RECALL_LIMIT_CAP,
    f32,
    f32_text,
    f32_value,
    fused_parts,
    query_tokens,
    recall,
    recall_request,
    recency,
    top_memories,
)
from keepgui.backends.iii.record import fingerprint, new_memory
from keepgui.backends.iii.tokenize import entity_tokens, tokenize

NOW = 1_750_000_000_000
DAY = 86_400_000


def mem(
    text,
    entities=(),
    *,
    pinned=False,
    corr=0,
    updated=NOW,
    tags=(),
    invalid=None,
    mid=None,
    revision=0,
    superseded_by=None,
):
    """A record as the worker would store it."""
    return new_memory(
        id=mid or fingerprint(text),
        text=text,
        entities=list(entities),
        tags=list(tags),
        confidence="stated",
        corroboration=corr,
        pinned=pinned,
        created_at=min(updated, NOW),
        updated_at=updated,
        invalid_at=invalid,
        superseded_by=superseded_by,
        revision=revision,
    )


def index_of(*records):
    index = BankIndex()
    index.rebuild(records)
    return index


def ranked(index, query, limit=6, now=NOW, half=30, **kw):
    return [(hit.memory.id, hit.score) for hit in recall(index, query, limit, now_ms=now, half_life_days=half, **kw)]


def reference_recall(records, query, limit, now=NOW, half=30, include_superseded=False, tag=None):
    """The spec written out naively: every live record tokenized and scored for this query."""
    live = [m for m in records if m.invalid_at is None]
    docs = {m.id: tokenize(m.text) + list(entity_tokens(m.entities)) for m in live}
    n = len(live)
    avgdl = max(sum(map(len, docs.values())) / n, 1.0) if n else 1.0
    tokens = query_tokens(query)
    if not tokens:
        return []
    bm25 = {}
    for term in tokens:
        df = sum(1 for doc in docs.values() if term in doc)
        if not df:
            continue
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
        for mid, doc in docs.items():
            tf = doc.count(term)
            if tf:
                norm = tf + 1.2 * (1 - 0.75 + 0.75 * len(doc) / avgdl)
                bm25[mid] = bm25.get(mid, 0.0) + idf * (tf * (1.2 + 1)) / norm
    pool = {m.id: (m, bm25[m.id]) for m in live if m.id in bm25}
    if include_superseded:
        pool.update({m.id: (m, 0.0) for m in records if m.invalid_at is not None})
    qset = set(tokens)
    scored = []
    for m, b in pool.values():
        hits = sum(1 for t in entity_tokens(m.entities) if t in qset)
        base = b + 0.6 * hits + 0.3 * math.log(1 + m.corroboration) + (0.75 if m.pinned else 0.0)
        rec = max(0.5 ** ((max(0, now - m.updated_at) / DAY) / max(half, 1)), 0.35)
        scored.append((m, base * rec))
    scored.sort(key=lambda item: (-item[1], -item[0].updated_at, item[0].id))
    out = scored[:limit]
    if tag is not None:
        out = [item for item in out if tag in item[0].tags]
    return [(m.id, score) for m, score in out]


@pytest.fixture(params=["gather", "windows"])
def pruning(request, monkeypatch):
    """Run a test both with the default pruning and with tiny windows, so every branch is exercised."""
    if request.param == "windows":
        monkeypatch.setattr(recall_module, "_GATHER", 1)
        monkeypatch.setattr(recall_module, "_SEED", 1)
    return request.param


# ---------------------------------------------------------------------- BM25 (spec §6.1, §6.2)


def test_bm25_formal_writing_vector():
    a = mem("Mike prefers formal writing with short paragraphs")
    b = mem("The deploy pipeline uses nine cross-compile targets")
    index = index_of(a, b)
    assert index.n == 2 and index.avgdl == 7.5 and index.idf("formal") == pytest.approx(math.log(2))
    assert index.bm25(query_tokens("formal writing style"), a.id) == pytest.approx(1.425162, abs=1e-6)
    assert index.bm25(query_tokens("formal writing style"), b.id) == 0.0
    assert [mid for mid, _ in ranked(index, "formal writing style")] == [a.id]


def test_removing_the_only_match_empties_the_index():
    a = mem("Mike prefers formal writing with short paragraphs")
    index = index_of(a)
    index.set(a.id, None)
    assert index.n == 0 and ranked(index, "kubernetes") == [] and ranked(index, "formal") == []


def test_rare_term_outscores_common_ones():
    common = [mem(f"common filler text {i}") for i in range(5)]
    rare = mem("unique zanzibar reference")
    index = index_of(*common, rare)
    zanzibar = [mid for mid in index.records if index.bm25(["zanzibar"], mid) > 0]
    assert zanzibar == [rare.id]
    assert index.bm25(["zanzibar"], rare.id) == pytest.approx(1.690814, abs=1e-6)
    for m in common:
        assert index.bm25(["common"], m.id) == pytest.approx(0.236948, abs=1e-6)


def test_duplicate_query_tokens_count_twice():
    a, b = mem("alpha beta gamma"), mem("delta epsilon zeta")
    index = index_of(a, b)
    once = index.bm25(["alpha"], a.id)
    assert index.bm25(["alpha", "alpha"], a.id) == pytest.approx(2 * once)


def test_entities_are_part_of_the_document():
    a = mem("short text", ["grafana dashboards"])
    index = index_of(a, mem("other words"))
    assert index.doc_length(a.id) == 4 and index.tf("grafana", a.id) == 1


# ---------------------------------------------------------------------- fused score


def fused(memory, now, query="x", bm25=1.0, half=30):
    return fused_parts(bm25, memory, set(query_tokens(query)), now, half).final


def test_fused_vectors_at_one_billion_ms():
    now = 1_000_000_000
    assert fused(mem("plain", updated=0), now) == pytest.approx(0.765353, abs=1e-6)
    assert fused(mem("pinned", pinned=True, updated=0), now) == pytest.approx(1.339368, abs=1e-6)
    assert fused(mem("corroborated", corr=4, updated=0), now) == pytest.approx(1.134890, abs=1e-6)
    assert fused(mem("about mike", ["mike"], updated=0), now, "what does mike like") == pytest.approx(
        1.224565, abs=1e-6
    )
    assert fused(mem("about mike", updated=0), now, "what does mike like") < 1.224565


def test_recency_vectors_at_ninety_days():
    now = 90 * DAY
    assert fused(mem("fresh", updated=now), now) == 1.0
    assert fused(mem("old", updated=0), now) == 0.35
    assert fused(mem("old pinned", pinned=True, updated=0), now) == pytest.approx(0.6125)
    assert recency(now - 30 * DAY, now, 30) == pytest.approx(0.5)
    assert recency(now - 45 * DAY, now, 30) == pytest.approx(0.353553, abs=1e-6)
    assert recency(now - 60 * DAY, now, 30) == 0.35
    assert recency(now + 5 * DAY, now, 30) == 1.0  # future timestamps count as age 0
    assert recency(now - DAY, now, 0) == recency(now - DAY, now, 1) == 0.5  # half-life 0 is treated as 1


def test_fresh_beats_stale_and_pin_lifts_stale():
    now = 90 * DAY
    fresh, stale, stale_pinned = mem("a", updated=now), mem("b", updated=0), mem("c", pinned=True, updated=0)
    assert fused(fresh, now) > fused(stale, now) and fused(stale_pinned, now) > fused(stale, now)


def test_ancient_memory_sits_on_the_recency_floor():
    ancient, fresh = mem("ancient", updated=NOW - 400 * DAY), mem("fresh")
    assert 0.35 * 0.99 <= fused(ancient, NOW) < fused(fresh, NOW)


def test_entity_and_pin_lift_an_equal_bm25():
    plain = mem("team uses grafana")
    boosted = mem("observability stack is grafana", ["grafana"], pinned=True)
    query = "grafana dashboards"
    assert fused(plain, NOW, query) < fused(boosted, NOW, query)


def test_score_parts_explain_the_final_score():
    m = mem(
        "User publishes blog posts on Tuesday mornings", ["user", "blog"], pinned=True, corr=3, updated=NOW - 10 * DAY
    )
    parts = fused_parts(0.8, m, set(query_tokens("when do I blog")), NOW, 30)
    assert parts.entity_hits == 2 and parts.entity == pytest.approx(1.2) and parts.pinned == 0.75
    assert parts.corroboration == pytest.approx(0.3 * math.log(4)) and parts.age_days == 10.0
    assert parts.final == pytest.approx((0.8 + 1.2 + 0.3 * math.log(4) + 0.75) * 0.5 ** (10 / 30))
    assert "× recency" in parts.explain() and parts.to_obj()["final"] == parts.final


def test_entity_hits_count_each_entity_token_once_per_membership():
    m = mem("text", ["user", "user", "blog post"])
    assert fused_parts(0.0, m, {"user", "post"}, NOW, 30).entity_hits == 3
    assert fused_parts(0.0, m, {"user"}, NOW, 30).entity_hits == 2


# ---------------------------------------------------------------------- ranking


def test_end_to_end_recall_orders():
    m1 = mem("User publishes blog posts on Tuesday mornings", ["user", "blog"], pinned=True)
    m2 = mem("The API port is 3111", ["api"], corr=2)
    m3 = mem("User prefers formal writing", ["user"], updated=NOW - 30 * DAY)
    m4 = mem("Deploys run on Fridays")
    index = index_of(m1, m2, m3, m4)
    assert query_tokens("when do I publish articles") == ["when", "do", "i", "publish", "articles", "user"]
    assert index.bm25(query_tokens("when do I publish articles"), m1.id) == pytest.approx(0.835575, abs=1e-6)
    assert index.bm25(query_tokens("when do I publish articles"), m3.id) == pytest.approx(0.999950, abs=1e-6)
    hits = ranked(index, "when do I publish articles")
    assert [mid for mid, _ in hits] == [m1.id, m3.id]
    assert hits[0][1] == pytest.approx(2.185575, abs=1e-6) and hits[1][1] == pytest.approx(0.799975, abs=1e-6)
    hits = ranked(index, "what port does the api use")
    assert [mid for mid, _ in hits] == [m2.id]
    assert index.bm25(query_tokens("what port does the api use"), m2.id) == pytest.approx(4.063408, abs=1e-6)
    assert hits[0][1] == pytest.approx(4.992992, abs=1e-6)
    assert [m.id for m in top_memories(index, 6)] == [m1.id, m2.id, m4.id, m3.id]


def test_top_memories_upstream_order():
    a = mem("a memory", mid="a", updated=10)
    b = mem("b memory", mid="b", corr=5, updated=10)
    c = mem("c memory", mid="c", pinned=True, updated=1)
    d = mem("d memory", mid="d", updated=20)
    retired = mem("e memory", mid="e", pinned=True, invalid=5)
    index = index_of(a, b, c, d, retired)
    assert [m.id for m in top_memories(index, 10)] == ["c", "b", "d", "a"]
    assert [m.id for m in top_memories(index, 2)] == ["c", "b"]
    assert top_memories(index, 0) == []


def test_top_memories_follow_updates():
    records = [mem(f"memory number {i}", corr=i % 7, updated=NOW - i) for i in range(600)]
    index = index_of(*records)
    assert top_memories(index, 3)  # fills the cache
    changes = [
        records[5].replace(pinned=True),
        records[0].replace(invalid_at=NOW),
        records[1].replace(corroboration=99),
    ]
    for m in changes:
        index.set(m.id, m)
    current = {m.id: m for m in records}
    current.update({m.id: m for m in changes})
    live = [m for m in current.values() if m.invalid_at is None]
    expected = sorted(live, key=lambda m: (not m.pinned, -m.corroboration, -m.updated_at, m.id))
    assert [m.id for m in top_memories(index, 300)] == [m.id for m in expected[:300]]
    assert [m.id for m in top_memories(index, 600)] == [m.id for m in expected]


def test_empty_or_unmatched_query_recalls_nothing():
    index = index_of(mem("something here"))
    assert ranked(index, "") == [] and ranked(index, "?!") == [] and ranked(index, "nothing") == []
    assert ranked(index, "", include_superseded=True) == []


def test_ties_break_by_updated_at_then_id():
    # Same tokens, same signals: the same score; then newest first, then id ascending.
    x = mem("alpha beta", mid="fpb", updated=NOW - 500 * DAY)
    y = mem("beta alpha", mid="fpa", updated=NOW - 500 * DAY)
    z = mem("alpha beta", mid="fpc", updated=NOW - 400 * DAY)  # floor recency too: same score, newer
    index = index_of(x, y, z, mem("unrelated words here"))
    hits = ranked(index, "alpha")
    assert hits[0][1] == hits[1][1] == hits[2][1]
    assert [mid for mid, _ in hits] == ["fpc", "fpa", "fpb"]


def test_tag_filter_runs_after_the_limit():
    strong = [mem(f"kubernetes kubernetes note {i}", ["kubernetes"], pinned=True) for i in range(3)]
    weak = mem("kubernetes mention", tags=["infra"], updated=NOW - 200 * DAY)
    index = index_of(*strong, weak)
    assert ranked(index, "kubernetes", limit=3, tag="infra") == []
    assert [mid for mid, _ in ranked(index, "kubernetes", limit=4, tag="infra")] == [weak.id]
    assert [mid for mid, _ in ranked(index, "kubernetes", limit=4, tag="nope")] == []


def test_recall_request_default_limit_and_cap():
    records = [mem(f"shared word item {i}") for i in range(150)]
    index = index_of(*records)
    config = MemoryConfig()
    assert len(recall_request(index, "main", "shared", config, now_ms=NOW).hits) == 6
    assert len(recall_request(index, "main", "shared", config, now_ms=NOW, limit=500).hits) == RECALL_LIMIT_CAP
    assert len(recall_request(index, "main", "shared", config.replace(recall_limit=9), now_ms=NOW).hits) == 9
    assert recall_request(index, "main", "shared", config, now_ms=NOW, limit=0).hits == []
    result = recall_request(index, "main", "shared", config, now_ms=NOW, limit=2)
    assert result.to_obj()["retrieval"] == "bm25-entity" and list(result.to_obj()) == ["bank", "memories", "retrieval"]


def test_history_adds_retired_records_with_bm25_zero():
    live = mem("the retired convention is documented elsewhere", updated=NOW - 300 * DAY)
    retired = mem("the retired convention", ["convention"], pinned=True, invalid=NOW - DAY, updated=NOW - DAY)
    superseded = mem("an old rule", invalid=NOW, updated=NOW, superseded_by=live.id)
    index = index_of(live, retired, superseded)
    assert [mid for mid, _ in ranked(index, "retired convention")] == [live.id]
    hits = recall(index, "retired convention", 6, include_superseded=True, now_ms=NOW, half_life_days=30)
    assert [h.memory.id for h in hits] == [retired.id, live.id, superseded.id]
    assert hits[0].parts.bm25 == 0.0 and hits[0].parts.entity_hits == 1 and hits[2].score == 0.0
    assert ranked(index, "retired convention", include_superseded=True) == reference_recall(
        [live, retired, superseded], "retired convention", 6, include_superseded=True
    )


def test_store_replay_vectors(tmp_path):
    path = tmp_path / "memories.jsonl"
    first = mem("mike prefers formal writing")
    port = mem("the api port is 3000")
    path.write_bytes(first.to_line() + port.to_line())
    log = MemoryLog(path)
    index = BankIndex(log)
    index.sync(log.refresh())
    assert [mid for mid, _ in ranked(index, "formal writing", limit=5)] == [first.id]
    edited = port.replace(text="the api port is 4000", revision=1)
    tomb = edited.replace(invalid_at=NOW, revision=2)
    with open(path, "ab") as fh:
        fh.write(edited.to_line())
    index.sync(log.refresh())
    assert index.bm25(["4000"], port.id) > 0 and index.bm25(["3000"], port.id) == 0
    with open(path, "ab") as fh:
        fh.write(b'{"id": "fp-torn\n' + tomb.to_line())
    index.sync(log.refresh())
    assert ranked(index, "api port") == []
    assert index.records[port.id].invalid_at == NOW


def test_f32_output():
    assert f32_text(2.1855746834147287) == "2.1855748"
    assert f32_text(0.7999750154858623) == "0.79997504"
    assert f32_text(4.992991901200467) == "4.992992"
    assert f32_text(0.0) == "0.0" and f32_text(1.0) == "1.0" and f32_text(100.0) == "100.0"
    assert f32_text(1e-7) == "1e-7" and f32_text(0.000001) == "0.000001" and f32_text(1.5e20) == "1.5e20"
    assert f32_text(1e13) == "1e13" and f32_text(1e12) == "1000000000000.0" and f32_text(123456.7) == "123456.7"
    assert f32_text(1e39) == "null"
    assert f32_value(2.1855746834147287) == 2.1855748
    rng = random.Random(5)
    for _ in range(5000):
        value = f32(rng.uniform(0, 50) * 10 ** rng.randint(-8, 8))
        text = f32_text(value)
        assert f32(float(text)) == value
        assert len(text.replace(".0", "").replace("0.", "").lstrip("0")) <= len(repr(value))


# ---------------------------------------------------------------------- agreement with the spec, at any scale


WORDS = ["user", "mike", "api", "port", "blog", "the", "tea", "日本", "café", "post", "publish", "a"]
_record = st.builds(
    lambda words, ents, pinned, corr, age, tags: (" ".join(words), ents, pinned, corr, age, tags),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    st.lists(st.sampled_from(["user", "mike", "api", "blog post"]), max_size=2),
    st.booleans(),
    st.integers(0, 5),
    st.integers(-3, 120),
    st.lists(st.sampled_from(["x", "y"]), max_size=1),
)


def _build(specs):
    out = {}
    for i, (text, ents, pinned, corr, age, tags) in enumerate(specs):
        m = mem(f"{text} {i}", ents, pinned=pinned, corr=corr, updated=NOW - age * DAY, tags=tags, mid=f"fp{i:04d}")
        out[m.id] = m
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(_record, min_size=1, max_size=40),
    st.sampled_from(["user", "the api port", "I like tea", "mike blog", "日本", "a a the", "café post x"]),
    st.integers(1, 8),
    st.sampled_from([0, 1, 30, 365]),
)
def test_ranking_equals_the_naive_spec(pruning, specs, query, limit, half):
    records = _build(specs)
    index = index_of(*records.values())
    assert ranked(index, query, limit, half=half) == reference_recall(list(records.values()), query, limit, half=half)


_op = st.tuples(
    st.sampled_from(["add", "edit", "entities", "pin", "reinforce", "delete", "restore", "touch"]),
    st.integers(0, 11),
    st.sampled_from(WORDS),
    st.integers(-2, 90),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_record, min_size=1, max_size=12), st.lists(_op, max_size=30))
def test_incremental_index_equals_a_rebuilt_one(pruning, specs, ops):
    current = _build(specs)
    index = index_of(*current.values())
    serial = len(current)
    for kind, pick, word, age in ops:
        ids = sorted(current)
        mid = ids[pick % len(ids)]
        old = current[mid]
        if kind == "add":
            new = mem(f"{word} fresh {serial}", [word], updated=NOW - age * DAY, mid=f"fp{serial:04d}")
            serial += 1
        elif kind == "edit":
            new = old.replace(text=f"{old.text} {word}", revision=old.revision + 1)
        elif kind == "entities":
            new = old.replace(entities=[word], revision=old.revision + 1)
        elif kind == "pin":
            new = old.replace(pinned=not old.pinned, revision=old.revision + 1)
        elif kind == "reinforce":
            new = old.replace(corroboration=old.corroboration + 1, updated_at=NOW - age * DAY)
        elif kind == "delete":
            new = old.replace(invalid_at=NOW, updated_at=NOW - age * DAY)
        elif kind == "restore":
            new = old.replace(invalid_at=None, superseded_by=None, updated_at=NOW - age * DAY)
        else:
            new = old.replace(updated_at=NOW - age * DAY)
        current[new.id] = new
        index.set(new.id, new)
    rebuilt = index_of(*current.values())
    assert index.n == rebuilt.n and index.total_tokens == rebuilt.total_tokens
    for query in ["user", "the api port", "I like tea", "mike blog", "日本 café"]:
        for history in (False, True):
            got = ranked(index, query, 5, include_superseded=history)
            assert got == ranked(rebuilt, query, 5, include_superseded=history)
            assert got == reference_recall(list(current.values()), query, 5, include_superseded=history)
    assert [m.id for m in top_memories(index, 7)] == [m.id for m in top_memories(rebuilt, 7)]


def test_overlay_restores_the_exact_index(pruning):
    records = _build([(f"user tea {i}", ["user"], i % 3 == 0, i % 4, i * 7, ()) for i in range(30)])
    index = index_of(*records.values())
    before = ranked(index, "I like tea", 10)
    first = next(iter(records.values()))
    extra = mem("tea tea tea", ["user"], pinned=True, corr=9, mid="fp9999")
    with index.overlay({first.id: first.replace(invalid_at=NOW), extra.id: extra}):
        during = ranked(index, "I like tea", 10)
        assert "fp9999" in [mid for mid, _ in during] and first.id not in [mid for mid, _ in during]
    assert ranked(index, "I like tea", 10) == before and "fp9999" not in index.records


@pytest.mark.parametrize("gather, seed", [(300, 200), (4096, 1024), (1, 1)])
def test_windows_prune_on_a_large_bank(monkeypatch, gather, seed):
    """Thousands of memories over a year: the result equals the naive spec with pruning in play."""
    monkeypatch.setattr(recall_module, "_GATHER", gather)
    monkeypatch.setattr(recall_module, "_SEED", seed)
    rng = random.Random(11)
    vocab = ["user", "the", "prefers", "tea", "api", "port", "blog", "mike", "writes", "docs", "team"]
    records = {}
    for i in range(6000):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 7))) + f" n{i}"
        m = mem(
            text,
            rng.sample(["user", "mike", "api"], rng.randint(0, 2)),
            pinned=rng.random() < 0.02,
            corr=rng.randint(0, 6),
            updated=NOW - rng.randint(-DAY, 365 * DAY),
            mid=f"fp{i:05d}",
        )
        records[m.id] = m
    index = index_of(*records.values())
    for query in ["who is the user", "what tea do I like", "the api port", "mike writes the docs", "n17 user"]:
        for limit in (1, 6, 40):
            assert ranked(index, query, limit) == reference_recall(list(records.values()), query, limit)
