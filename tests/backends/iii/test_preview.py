"""``memory::preview`` byte for byte, what-if previews, the engine, and the live-worker check (spec §3)."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import (
    BankEngine,
    WhatIf,
    ambient_header,
    apply_floor,
    check_against_worker,
    compare_previews,
    memories_message,
    preview_bank,
    render_rules,
)
from keepgui.backends.iii.recall import Hit
from keepgui.backends.iii.record import fingerprint, new_memory
from keepgui.backends.iii.store import DataDir
from keepgui.backends.iii.worker import WorkerLink
from keepgui.core.errors import KeepguiError, NotFound
from tests.conftest import tree_digest

NOW = 1_750_000_000_000
DAY = 86_400_000
LEARNED = (
    "# Learned\nStanding instructions captured automatically from conversations. Edit or delete lines "
    "freely \u2014 extraction only ever appends new ones.\n"
)
HEADER_MAIN = (
    "\n\n# Memory \u2014 bank: main\nMemory is automatic here: durable memories and preferences from this "
    "conversation are extracted and saved after each turn, and relevant memories are provided to you when they "
    "exist. When the user asks you to remember something, acknowledge it \u2014 no save call is needed.\n"
)
MESSAGE_PUBLISH = (
    '<memory bank="main">\nRelevant remembered memories (auto-recalled; verify anything '
    "surprising):\n- User publishes blog posts on Tuesday mornings\n- User prefers formal writing\n"
    "- The API port is 3111\n</memory>"
)


def mem(text, entities=(), *, pinned=False, corr=0, updated=NOW, mid=None, tags=(), invalid=None):
    return new_memory(
        id=mid or fingerprint(text),
        text=text,
        entities=list(entities),
        tags=list(tags),
        confidence="stated",
        corroboration=corr,
        pinned=pinned,
        created_at=updated,
        updated_at=updated,
        invalid_at=invalid,
        revision=0,
    )


def make_bank(data_dir, name="main", records=(), rules=None):
    dd = DataDir(data_dir)
    bank, _ = dd.ensure_bank(name)
    with open(bank.log_path, "ab") as fh:
        fh.write(b"".join(m.to_line() for m in records))
    for rule, content in (rules or {}).items():
        with open(os.path.join(bank.rules_path, rule + ".md"), "w", encoding="utf-8") as fh:
            fh.write(content)
    return dd, bank


M1 = mem("User publishes blog posts on Tuesday mornings", ["user", "blog"], pinned=True)
M2 = mem("The API port is 3111", ["api"], corr=2)
M3 = mem("User prefers formal writing", ["user"], updated=NOW - 30 * DAY)
M4 = mem("Deploys run on Fridays")
SCENARIO = (M1, M2, M3, M4)


@pytest.fixture
def scenario(data_dir):
    _dd, bank = make_bank(data_dir, records=SCENARIO)
    return BankEngine(bank)


def hit(memory, score=1.0):
    return Hit(memory, score)


# ---------------------------------------------------------------------- the section


def test_ambient_header_is_exact():
    assert ambient_header("main") == HEADER_MAIN
    assert ambient_header('x y"z').startswith('\n\n# Memory \u2014 bank: x y"z\n')


def test_upstream_section_example():
    part, truncated, outcomes = render_rules([("style", "No em-dashes."), ("tone", "Formal.")], 6000)
    assert part == "\n## style\nNo em-dashes.\n\n## tone\nFormal.\n"
    assert not truncated and "truncated" not in part and [o.status for o in outcomes] == ["fit", "fit"]


def test_derived_full_section(data_dir):
    _, bank = make_bank(
        data_dir, rules={"learned": LEARNED + "- Never use em-dashes.\n", "style": "# Style\nFormal register.\n"}
    )
    preview = BankEngine(bank).preview("anything", now_ms=NOW)
    expected = (
        "\n\n# Memory \u2014 bank: main\nMemory is automatic here: durable memories and preferences from "
        "this conversation are extracted and saved after each turn, and relevant memories are provided to you "
        "when they exist. When the user asks you to remember something, acknowledge it \u2014 no save call is "
        "needed.\n\n## learned\n# Learned\nStanding instructions captured automatically from conversations. "
        "Edit or delete lines freely \u2014 extraction only ever appends new ones.\n- Never use em-dashes.\n\n"
        "## style\n# Style\nFormal register.\n"
    )
    assert preview.system_prompt_section == expected
    assert preview.rules == 2 and not preview.rules_truncated


def test_truncation_is_by_bytes_with_the_configured_budget_in_the_marker():
    part, truncated, outcomes = render_rules([("big", "x" * 1000)], 300)
    marker = "[rule truncated: over the 300 char injection budget \u2014 trim it in the memory page]"
    assert truncated and marker in part
    assert "x" * 300 in part and "x" * 301 not in part
    assert outcomes[0].status == "truncated" and outcomes[0].injected == 300 and outcomes[0].size == 1000
    part, truncated, _ = render_rules([("uni", "é" * 400)], 301)
    assert truncated and "é" * 150 in part and "é" * 151 not in part
    assert part == "\n## uni\n" + "é" * 150 + (
        "\n[rule truncated: over the 301 char injection budget \u2014 trim it in the memory page]\n"
    )


def test_omitted_when_too_little_budget_is_left():
    part, truncated, outcomes = render_rules([("first", "a" * 900), ("second", "b" * 500)], 1000)
    assert "## second [omitted: over the injection budget]" in part and "bbbb" not in part and truncated
    assert [o.status for o in outcomes] == ["fit", "omitted"]


def test_after_a_truncation_every_later_rule_is_omitted_but_an_empty_one_still_fits():
    rules = [("a", "x" * 700), ("b", "tiny"), ("c", "  \n\t"), ("d", "more")]
    part, _truncated, outcomes = render_rules(rules, 500)
    assert [o.status for o in outcomes] == ["truncated", "omitted", "fit", "omitted"]
    assert part.endswith(
        "\n## b [omitted: over the injection budget]\n\n## c\n\n\n## d [omitted: over the injection budget]\n"
    )


def test_exact_fit_and_trimmed_content():
    part, truncated, _ = render_rules([("a", "\n  12345  \n"), ("b", "678")], 8)
    assert part == "\n## a\n12345\n\n## b\n678\n" and not truncated
    _, truncated, outcomes = render_rules([("a", "12345"), ("b", "6789")], 8)
    assert truncated and outcomes[1].status == "omitted"  # 3 bytes left: not more than 200


# ---------------------------------------------------------------------- floor and budget


def test_ambient_floor_vectors():
    fp = {i: mem(f"memory {i}", mid=f"fp{i}") for i in range(10)}
    got = apply_floor([hit(fp[1])], [fp[1], fp[2], fp[3], fp[4]], min(3, 6))
    assert [h.memory.id for h in got] == ["fp1", "fp2", "fp3"] and got[1].score == 0.0 and got[1].ambient
    assert len(apply_floor([], [fp[1], fp[2]], min(3, 1))) == 1
    three = [hit(fp[1]), hit(fp[2]), hit(fp[3])]
    assert apply_floor(three, [fp[9]], 3) == three


def test_memories_message_vectors():
    first, second = mem("first", mid="fp1"), mem("second", mid="fp2")
    message, fitted = memories_message("blog", [hit(first), hit(second)], 1200)
    assert message.startswith('<memory bank="blog">') and "- first\n- second" in message
    assert message.endswith("</memory>") and [h.memory.id for h in fitted] == ["fp1", "fp2"]
    assert memories_message("b", [hit(mem("12345")), hit(mem("abc"))], 1) == (None, [])
    message, fitted = memories_message("b", [hit(mem("1234", mid="fp1"))], 1)
    assert [h.memory.id for h in fitted] == ["fp1"] and message.endswith("- 1234\n</memory>")


def test_budget_stops_at_the_first_memory_that_does_not_fit():
    items = [hit(mem("aaaa")), hit(mem("b" * 10)), hit(mem("cc"))]
    message, fitted = memories_message("b", items, 2)
    assert [h.memory.text for h in fitted] == ["aaaa"] and "cc" not in message
    message, fitted = memories_message("b", [hit(mem("日本語!"))], 2)  # 10 bytes, 4 chars: bytes count
    assert message is None and fitted == []


# ---------------------------------------------------------------------- end to end


def test_end_to_end_publish(scenario):
    preview = scenario.preview("when do I publish articles", now_ms=NOW)
    assert [h.memory.id for h in preview.memories] == [M1.id, M3.id, M2.id]
    assert [round(h.score, 4) for h in preview.memories] == [2.1856, 0.8000, 0.0]
    assert preview.message == MESSAGE_PUBLISH
    assert preview.system_prompt_section == HEADER_MAIN and preview.rules == 0 and not preview.rules_truncated
    obj = json.loads(preview.to_json())
    assert list(obj) == [
        "bank",
        "system_prompt_section",
        "rules",
        "rules_truncated",
        "memories",
        "message",
        "retrieval",
    ]
    assert obj == preview.to_obj() and obj["retrieval"] == "bm25-entity"
    assert [m["score"] for m in obj["memories"]] == [2.1855748, 0.79997504, 0.0]
    assert obj["memories"][0]["memory"] == M1.to_obj()
    assert '"score":0.0}' in preview.to_json() and '"score":2.1855748}' in preview.to_json()


def test_end_to_end_port(scenario):
    preview = scenario.preview("what port does the api use", now_ms=NOW)
    assert [h.memory.id for h in preview.memories] == [M2.id, M1.id, M4.id]
    assert [round(h.score, 4) for h in preview.memories] == [4.9930, 0.0, 0.0]
    assert preview.message == (
        '<memory bank="main">\nRelevant remembered memories (auto-recalled; verify anything '
        "surprising):\n- The API port is 3111\n- User publishes blog posts on Tuesday mornings\n"
        "- Deploys run on Fridays\n</memory>"
    )


def test_empty_query_is_padded_by_the_floor(scenario):
    preview = scenario.preview("", now_ms=NOW)
    assert [h.memory.id for h in preview.memories] == [M1.id, M2.id, M4.id]
    assert all(h.score == 0.0 and h.ambient for h in preview.memories)


def test_inject_switches(data_dir):
    _, bank = make_bank(data_dir, records=SCENARIO, rules={"style": "Formal."})
    engine = BankEngine(bank, MemoryConfig(inject_memories=False, inject_rules=False))
    preview = engine.preview("when do I publish articles", now_ms=NOW)
    assert preview.message is None and "message" not in preview.to_obj() and '"message"' not in preview.to_json()
    assert len(preview.memories) == 3  # still filled
    assert preview.system_prompt_section == HEADER_MAIN and preview.rules == 1


def test_small_limits_and_tiny_budgets(data_dir):
    _, bank = make_bank(data_dir, records=SCENARIO)
    preview = BankEngine(bank, MemoryConfig(recall_limit=1)).preview("deploys", now_ms=NOW)
    assert [h.memory.id for h in preview.memories] == [M4.id]
    preview = BankEngine(bank, MemoryConfig(recall_limit=1)).preview("nothing matches", now_ms=NOW)
    assert [h.memory.id for h in preview.memories] == [M1.id]  # floor min(3, 1) = 1
    preview = BankEngine(bank, MemoryConfig(recall_limit=0)).preview("deploys", now_ms=NOW)
    assert preview.memories == [] and preview.message is None
    preview = BankEngine(bank, MemoryConfig(recall_budget_tokens=5)).preview("when do I publish articles", now_ms=NOW)
    assert preview.memories == [] and preview.message is None  # 45 bytes > 20: the walk stops at once
    assert len(preview.candidates) == 3
    preview = BankEngine(bank, MemoryConfig(recall_budget_tokens=0)).preview("", now_ms=NOW)
    assert preview.message is None


def test_rule_budget_from_config(data_dir):
    _, bank = make_bank(data_dir, rules={"a": "x" * 400, "b": "y" * 10})
    preview = BankEngine(bank, MemoryConfig(max_rule_chars=250)).preview("q", now_ms=NOW)
    assert preview.rules_truncated and "over the 250 char injection budget" in preview.system_prompt_section
    assert "## b [omitted: over the injection budget]" in preview.system_prompt_section


def test_missing_and_unreadable_banks_are_not_found(data_dir):
    dd, _ = make_bank(data_dir)
    with pytest.raises(NotFound):
        preview_bank(dd, "nope", "q")
    (data_dir / "broken").mkdir()
    (data_dir / "broken" / "memories.jsonl").write_bytes(b'{"id":"\xff"}\n')
    with pytest.raises(NotFound, match="BankNotFound"):
        preview_bank(dd, "broken", "q")
    assert preview_bank(dd, None, "q", now_ms=NOW).bank == "main"  # default_bank


def test_unicode_and_pronoun_queries(data_dir):
    records = [mem("周二发布博客", ["博客"]), mem("Café rápido à Lisboa", ["café"]), mem("I drink my tea", ["user"])]
    _, bank = make_bank(data_dir, records=records)
    engine = BankEngine(bank)
    assert engine.preview("发布", now_ms=NOW).memories[0].memory.text == "周二发布博客"
    assert engine.preview("CAFÉ", now_ms=NOW).memories[0].memory.text == "Café rápido à Lisboa"
    preview = engine.preview("what do I like", now_ms=NOW)
    assert preview.query_tokens[-1] == "user" and preview.memories[0].memory.text == "I drink my tea"


# ---------------------------------------------------------------------- following the log


def test_engine_follows_log_deltas_and_notices_missed_ones(data_dir):
    _dd, bank = make_bank(data_dir, records=SCENARIO)
    engine = BankEngine(bank)
    engine.refresh()
    bank.save("User publishes podcasts on Fridays", entities=["user"], now=NOW)
    bank.pin(M4.id, True, now=NOW)
    bank.delete(M1.id, now=NOW)
    engine.refresh()
    fresh = BankEngine(DataDir(data_dir).bank("main"))
    for query in ("when do I publish", "deploys", "what port does the api use"):
        assert engine.preview(query, now_ms=NOW).to_json() == fresh.preview(query, now_ms=NOW).to_json()
    bank.restore(M1.id, now=NOW)
    bank.refresh()  # the delta never reaches the engine: the next query rebuilds
    assert (
        engine.preview("when do I publish", now_ms=NOW).to_json()
        == BankEngine(DataDir(data_dir).bank("main")).preview("when do I publish", now_ms=NOW).to_json()
    )
    assert M1.id in [h.memory.id for h in engine.preview("when do I publish", now_ms=NOW).memories]


def test_revision_heavy_log_with_torn_and_corrupt_lines(data_dir):
    base = mem("the staging server runs postgres", ["postgres"])
    lines = [base.to_line()]
    for rev in range(1, 60):
        lines.append(base.replace(revision=rev, corroboration=rev, updated_at=NOW - (60 - rev) * DAY).to_line())
    lines.append(b'{"id":"fpbroken","text":\n')
    lines.append(base.replace(revision=30, text="stale lower revision").to_line())
    lines.append(b"not json at all\n")
    _, bank = make_bank(data_dir)
    with open(bank.log_path, "wb") as fh:
        fh.write(b"".join(lines) + b'{"id":"fp-torn')
    preview = BankEngine(bank).preview("postgres", now_ms=NOW)
    assert [h.memory.revision for h in preview.memories] == [59]
    assert preview.memories[0].memory.text == "the staging server runs postgres"


# ---------------------------------------------------------------------- what-if


def test_what_if_changes_nothing_on_disk_and_reverts(data_dir):
    _, bank = make_bank(data_dir, records=SCENARIO, rules={"style": "Formal.", "tone": "Warm."})
    engine = BankEngine(bank)
    before_files = tree_digest(str(data_dir))
    before = engine.preview("when do I publish articles", now_ms=NOW).to_json()
    whatif = WhatIf(
        rules={"style": "Casual now.", "tone": None, "zeta": "New rule.", "blank": "   "},
        pins={M3.id: True, M1.id: False},
        live={M2.id: False, M4.id: False},
        config=MemoryConfig(recall_budget_tokens=100),
    )
    preview = engine.preview("when do I publish articles", now_ms=NOW, whatif=whatif)
    assert preview.system_prompt_section == HEADER_MAIN + "\n## style\nCasual now.\n\n## zeta\nNew rule.\n"
    assert preview.rules == 2
    ids = [h.memory.id for h in preview.memories]
    assert ids == [M3.id, M1.id] and M2.id not in ids and M4.id not in ids
    assert preview.memories[0].memory.pinned and preview.memories[0].memory.updated_at == NOW
    assert preview.memories[0].parts.pinned == 0.75 and preview.memories[0].parts.recency == 1.0
    assert not preview.memories[1].memory.pinned
    assert tree_digest(str(data_dir)) == before_files
    assert engine.preview("when do I publish articles", now_ms=NOW).to_json() == before


def test_what_if_restore_and_unknown_ids(data_dir):
    retired = mem("Friday deploys are frozen", ["deploy"], invalid=NOW - DAY, updated=NOW - DAY)
    _, bank = make_bank(data_dir, records=SCENARIO + (retired,))
    engine = BankEngine(bank)
    assert retired.id not in [h.memory.id for h in engine.preview("deploy fridays", now_ms=NOW).memories]
    preview = engine.preview("deploy fridays", now_ms=NOW, whatif=WhatIf(live={retired.id: True}))
    assert preview.memories[0].memory.id == retired.id and preview.memories[0].memory.invalid_at is None
    top = engine.top_memories(2, whatif=WhatIf(pins={M2.id: True}), now_ms=NOW)
    assert [m.id for m in top] == [M2.id, M1.id]  # both pinned: corroboration decides
    assert [m.id for m in engine.top_memories(2)] == [M1.id, M2.id]
    with pytest.raises(NotFound):
        engine.preview("x", now_ms=NOW, whatif=WhatIf(pins={"fpnope": True}))
    assert engine.recall("deploy", now_ms=NOW, whatif=WhatIf(live={retired.id: True})).hits[0].memory.id == retired.id


def test_recall_through_the_engine(scenario):
    result = scenario.recall("user", limit=1, now_ms=NOW)
    assert [h.memory.id for h in result.hits] == [M1.id] and result.limit == 1
    assert scenario.recall("user", tag="nope", now_ms=NOW).hits == []
    obj = json.loads(result.to_json(parts=True))
    assert obj["memories"][0]["parts"]["entity_hits"] == 1 and list(obj["memories"][0]) == ["memory", "score", "parts"]


# ---------------------------------------------------------------------- the live worker


def test_compare_previews_field_by_field(scenario):
    ours = scenario.preview("when do I publish articles", now_ms=NOW).to_obj()
    theirs = json.loads(json.dumps(ours))
    assert compare_previews(ours, theirs) == []
    theirs["memories"][0]["score"] *= 1 + 5e-6  # within the f32 tolerance
    assert compare_previews(ours, theirs) == []
    theirs["memories"][1]["score"] = 0.7
    theirs["memories"][2]["memory"]["text"] = "changed"
    theirs["rules"] = 3
    del theirs["message"]
    theirs["extra"] = 1
    paths = [d.path for d in compare_previews(ours, theirs)]
    assert paths == ["rules", "memories[1].score", "memories[2].memory.text", "message", "extra"]
    assert compare_previews(ours, ["not", "an", "object"])[0].path == "(response)"
    short = dict(ours, memories=ours["memories"][:1])
    assert "memories.length" in [d.path for d in compare_previews(ours, short)]


def test_check_against_a_fake_worker(scenario, fake_iii, tmp_path, monkeypatch):
    preview = scenario.preview("when do I publish articles", now_ms=NOW)
    answer = tmp_path / "answer.json"
    answer.write_text(preview.to_json(), encoding="utf-8")
    monkeypatch.setenv("FAKE_III_OUTPUT", str(answer))
    assert check_against_worker(preview, "when do I publish articles", WorkerLink()) == []
    argv = json.loads(fake_iii.read_text().splitlines()[-1])
    assert argv == ["trigger", "memory::preview", "bank=main", "query=when do I publish articles"]
    worker = json.loads(preview.to_json())
    worker["memories"][0]["score"] = 2.5
    worker["retrieval"] = "bm25-entity-semantic"
    answer.write_text(json.dumps(worker), encoding="utf-8")
    diffs = check_against_worker(preview, "when do I publish articles", WorkerLink())
    assert [d.path for d in diffs] == ["memories[0].score", "retrieval"]
    assert "keepgui 2.1855748 ≠ worker 2.5" in str(diffs[0])
    monkeypatch.setenv("FAKE_III_FAIL", "1")
    with pytest.raises(KeepguiError, match="engine not running"):
        check_against_worker(preview, "q", WorkerLink())
