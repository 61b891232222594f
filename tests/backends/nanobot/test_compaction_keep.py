"""keep.md compaction plans: the operations, the demo, 170 entries to ~120, selections that apply
exactly what they render, staleness, and undo to the exact previous bytes."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from keepgui.backends.nanobot.compact import (
    Edit,
    FileApplied,
    compose,
    plan_keep,
    strip_dates,
    strip_stamps,
)
from keepgui.backends.nanobot.keepmd import KeepDoc, contains, normalise
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.backends.nanobot.writes import KeepStore
from keepgui.core.compaction import ChangedSince, StalePlan, UndoJournal, load_applied
from keepgui.core.history import History
from keepgui.core.paths import resources_dir
from tests.backends.nanobot.nanobot_helpers import make_workspace, read, write


@pytest.fixture
def history(tmp_path):
    return History(tmp_path / "history")


def demo_workspace(root) -> Workspace:
    """A fresh copy of the bundled demo workspace (159 entries, 161 lines: compaction due)."""
    target = os.path.join(root, "demo-ws")
    shutil.copytree(os.path.join(resources_dir(), "demo", "nanobot"), target)
    return Workspace(target)


def ops_by_kind(plan, kind):
    return [op for op in plan.operations if op.kind == kind]


def dropped_texts(plan, selection=None):
    """Texts of the entries a selection takes out of keep.md (a duplicate counts once per copy)."""
    after = KeepDoc.parse(plan.after_bytes(selection))
    remaining = [e.key for e in after.entries]
    gone = []
    for entry in plan.doc.entries:
        if entry.key in remaining:
            remaining.remove(entry.key)
        else:
            gone.append(entry)
    return gone, after


def assert_nothing_lost(plan, workspace, selection=None):
    """Every entry a selection drops is still said: by a remaining entry, MEMORY.md, USER.md or AGENTS.md."""
    gone, after = dropped_texts(plan, selection)
    elsewhere = [
        normalise(line.lstrip("-* "))
        for rel in ("memory/MEMORY.md", "USER.md", "AGENTS.md")
        for line in (read(workspace.path(rel)).decode() if os.path.exists(workspace.path(rel)) else "").splitlines()
    ]
    agents_after = plan.agents_after(selection)
    if agents_after:
        elsewhere += [normalise(line.lstrip("-* ")) for line in agents_after.decode().splitlines()]
    for entry in gone:
        covered = any(contains(e.key, entry.key) for e in after.entries) or any(
            contains(line, entry.key) for line in elsewhere
        )
        assert covered, f"`{entry.text}` was dropped although nothing else says it"


# ---------------------------------------------------------------------- operations


SMALL = """- Prefers metric units, including in recipes
- Allergic to penicillin
* allergic to penicillin.

- Vegetarian
- Vegetarian, eats fish occasionally
- Eats meat
- Never eats meat on Fridays
- Prefers tea
- Prefers green tea
- Always answer in English
- Lives in Lisbon (added 2025-03-01)
- [2025-03-01 14:22] Has a cat called Miso
- Moved to Lisbon in March 2019
- Birthday is 1988-03-14
## Pets
- Sister Ana lives in Berlin
"""

MEMORY = """# Long-term Memory
- Mike drinks green tea, never coffee after 14:00
- Sister Ana lives in Berlin with her husband
"""


@pytest.fixture
def small(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=SMALL, memory=MEMORY))
    return ws, plan_keep(ws, history=history)


def test_safe_operations_are_selected(small):
    _ws, plan = small
    selected = {op.kind: op for op in plan.operations if op.selected}
    assert set(selected) == {"blank", "duplicate", "contained", "stated-elsewhere", "move-to-agents", "undate"}
    assert selected["duplicate"].before == ("Allergic to penicillin", "allergic to penicillin.")
    assert selected["contained"].before == ("Vegetarian", "Vegetarian, eats fish occasionally")
    assert selected["stated-elsewhere"].evidence == ("MEMORY.md line 3: - Sister Ana lives in Berlin with her husband",)
    assert selected["move-to-agents"].before == ("Always answer in English",)
    stamps = [op.after for op in ops_by_kind(plan, "undate") if op.selected]
    assert stamps == [("Lives in Lisbon",), ("Has a cat called Miso",)]
    after = plan.after_text()
    assert "* allergic" not in after and "- Vegetarian\n" not in after and "Always answer" not in after
    assert plan.agents_after().decode().endswith("- Always answer in English\n")


def test_rules_stay_put_when_agents_md_is_not_utf8(tmp_path, history):
    """AGENTS.md that keepgui cannot read back exactly is never rewritten: the rule is only offered."""
    agents = b"Caf\xe9 rules\n"
    ws = Workspace(make_workspace(tmp_path / "ws", keep=SMALL, memory=MEMORY, agents=agents))
    plan = plan_keep(ws, history=history)
    assert not ops_by_kind(plan, "move-to-agents")
    offered = [op for op in ops_by_kind(plan, "misplaced") if op.before == ("Always answer in English",)]
    assert offered and not offered[0].selected
    assert any(n.code == "agents-unreadable" and "line 1" in n.message for n in plan.notices)
    plan.apply()
    assert read(ws.agents_md) == agents


def test_appending_to_agents_md_keeps_its_style(tmp_path, history):
    ws = Workspace(
        make_workspace(tmp_path / "ws", keep=SMALL, memory=MEMORY, agents="\ufeff# Agents\r\n\r\n- Be brief".encode())
    )
    after = plan_keep(ws, history=history).agents_after()
    assert after == "\ufeff# Agents\r\n\r\n- Be brief\r\n- Always answer in English\r\n".encode()


def test_judgement_calls_are_not_selected(small):
    _ws, plan = small
    judgement = {(op.kind, op.before) for op in plan.operations if not op.selected}
    assert ("contained", ("Eats meat", "Never eats meat on Fridays")) in judgement  # a negation: may contradict
    assert ("near-duplicate", ("Prefers green tea", "Prefers tea")) in judgement
    assert ("undate", ("Moved to Lisbon in March 2019",)) in judgement
    assert ("heading", ("## Pets",)) in judgement
    near = ops_by_kind(plan, "near-duplicate")[0]
    assert near.after == ("Prefers green tea",) and "two facts" in near.reason
    # #16.13: token_set_ratio's 100 is not shown as "similarity 100"; the relation is said in words
    assert "every word of line 9 `Prefers tea` is in line 10 `Prefers green tea`" in near.reason
    assert "similarity" not in near.reason
    assert not any("Birthday" in " ".join(op.before) for op in plan.operations)  # the date is the fact


def test_dates_and_stamps():
    assert strip_stamps("Lives in Lisbon (added 2025-03-01)") == "Lives in Lisbon"
    assert strip_stamps("Lives in Lisbon — noted: 2025-03-01 14:22") == "Lives in Lisbon"
    assert strip_stamps("2025-03-01T10:00:00Z Prefers tea") == "Prefers tea"
    assert strip_stamps("Prefers tea [2025-03-01 09:30]") == "Prefers tea"
    assert strip_stamps("Birthday is 1988-03-14") is None
    assert strip_stamps("Flight to Tokyo on 2025-10-12 at 08:40") is None
    assert strip_dates("Moved to Lisbon from Porto in March 2019") == "Moved to Lisbon from Porto"
    assert strip_dates("Dead end: tried GORM in 2022, dropped it — too much magic") == (
        "Dead end: tried GORM, dropped it — too much magic"
    )
    assert strip_dates("Had a knee injury in 2023 — no running downhill") == "Had a knee injury — no running downhill"
    assert strip_dates("Prefers tea (2024-05-01)") == "Prefers tea"
    assert strip_dates("2024-05-01: started learning Japanese") == "started learning Japanese"
    assert strip_dates("Birthday is 1988-03-14") is None
    assert strip_dates("Likes the Lisbon light in October") is None
    assert strip_dates("Uses Postgres 16 at work; migrating from 13") is None
    assert strip_dates("Moved in 2019") is None  # nothing left worth keeping


def test_counts_and_what_remains_to_choose(small):
    _ws, plan = small
    counts = plan.counts()
    assert (counts.before, counts.unit, counts.target) == (17, "lines", 120)
    assert counts.after == 17 - 5 and counts.remaining == 0  # a blank, a copy, a contained, a stated, a rule
    assert counts.detail == {"entries_before": 15, "entries_after": 11}
    tight = plan_keep(small[0], target=5, history=History(os.path.join(small[0].root, "..", "h2")))
    assert tight.counts().remaining == 7
    assert any(n.code == "choose-by-hand" and "7 more" in n.message for n in tight.notices)


def test_compose_keeps_endings_bom_and_missing_final_newline():
    doc = KeepDoc.parse(b"\xef\xbb\xbf- a\r\n- b\r\n- c")
    assert compose(doc, [Edit(drops=(2,))]) == b"\xef\xbb\xbf- a\r\n- b"
    assert compose(doc, [Edit(inserts=((-1, 1, 0, "- d"),))]) == b"\xef\xbb\xbf- a\r\n- b\r\n- c\r\n- d"
    assert compose(doc, [Edit(drops=(0,)), Edit(rewrites=((0, "- x"),))]) == b"\xef\xbb\xbf- b\r\n- c"
    with pytest.raises(ValueError, match="two operations rewrite line 2 differently"):
        compose(doc, [Edit(rewrites=((1, "- x"),)), Edit(rewrites=((1, "- y"),))])
    assert compose(KeepDoc.parse(None), [Edit(inserts=((-1, 1, 0, "- a"),))]) == b"- a\n"


# ---------------------------------------------------------------------- 170 entries to the target


def word(n: int) -> str:
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    out = ""
    n += 1
    while n:
        n, r = divmod(n, len(consonants) * len(vowels))
        out += consonants[r % len(consonants)] + vowels[r // len(consonants)]
    return out + "x"


RULES = [
    "Always reply in Portuguese",
    "Never use emoji in replies",
    "Do not summarise unless asked",
    "Use metric units in every answer",
    "When you write code, add type hints",
]


def build_170(root):
    """keep.md of 170 entries: 120 unique facts, 22 duplicates, 13 contained, 10 in MEMORY.md, 5 rules."""
    unique = [f"Knows {word(3 * i)} {word(3 * i + 1)} {word(3 * i + 2)}" for i in range(120)]
    dups = []
    for i in range(22):
        fact = unique[i]
        dups.append(("* {}", "- {}.", "-   {}", "- {}")[i % 4].format(fact if i % 3 else fact.upper()))
    contained = [" ".join(unique[40 + i].split()[:3]) for i in range(13)]
    memory_facts = [f"Has a pet named {word(1000 + i)}" for i in range(10)]
    memory_md = "# Long-term Memory\n\n" + "".join(f"- {f}, adopted early\n" for f in memory_facts)
    lines = [f"- {t}" for t in unique + contained + memory_facts + RULES] + dups
    random.Random(7).shuffle(lines)
    ws = make_workspace(root, keep="\n".join(lines) + "\n", memory=memory_md, agents="# Agent Instructions\n")
    return Workspace(ws), unique


def test_170_entries_reach_the_target_without_dropping_a_fact_that_has_no_duplicate(tmp_path, history):
    ws, unique = build_170(tmp_path / "ws")
    plan = plan_keep(ws, history=history)
    counts = plan.counts()
    assert plan.doc.entry_count == 170 and counts.before == 170
    assert counts.after == 120 and counts.remaining == 0
    after = KeepDoc.parse(plan.after_bytes())
    keys = {e.key for e in after.entries}
    for fact in unique:
        assert normalise(fact) in keys
    assert_nothing_lost(plan, ws)
    plan.apply()
    assert read(ws.keep_md) == plan.after_bytes()
    assert all(f"- {rule}" in read(ws.agents_md).decode() for rule in RULES)


def test_demo_plan_is_sensible(tmp_path, history):
    ws = demo_workspace(tmp_path)
    plan = plan_keep(ws, history=history)
    counts = plan.counts()
    assert (counts.before, counts.target) == (161, 120) and counts.after < 161 and counts.remaining > 0
    selected = [op for op in plan.operations if op.selected]
    assert {op.kind for op in selected} <= {
        "blank",
        "duplicate",
        "contained",
        "stated-elsewhere",
        "move-to-agents",
        "undate",
    }
    dup_texts = {op.before[0] for op in ops_by_kind(plan, "duplicate")}
    assert dup_texts == {"Allergic to penicillin", "Has a beagle named Biscuit"}
    moved = {op.before[0] for op in ops_by_kind(plan, "move-to-agents")}
    assert moved == {"Always answer in English, even when asked in Portuguese", "Never use em-dashes in replies"}
    near = {op.before for op in ops_by_kind(plan, "near-duplicate")}
    assert ("Prefers green tea", "Prefers tea") in near and all(
        not op.selected for op in ops_by_kind(plan, "near-duplicate")
    )
    assert "- Prefers tea\n" in plan.after_text() and "- Birthday is 1988-03-14\n" in plan.after_text()
    assert_nothing_lost(plan, ws)
    assert any(n.code == "choose-by-hand" for n in plan.notices)


# ---------------------------------------------------------------------- selections apply what they render


def after_from_diff(diff: str, name: str = "keep.md") -> str:
    """The new text of ``name`` rebuilt from a full-context unified diff of it."""
    out, inside = [], False
    for line in diff.splitlines(keepends=True):
        if line.startswith("--- "):
            inside = line.strip() == f"--- a/{name}"
            continue
        if not inside or line.startswith(("+++ ", "@@")):
            continue
        if line.startswith("\\"):
            out[-1] = out[-1].rstrip("\n")
        elif line[0] in " +":
            out.append(line[1:])
    return "".join(out)


def test_every_selection_applies_exactly_what_its_diff_renders(tmp_path):
    source = demo_workspace(tmp_path / "source")
    plan = plan_keep(source, history=History(tmp_path / "h0"))
    applicable = [op.id for op in plan.operations if op.applicable]
    rng = random.Random(11)
    selections = [frozenset(), plan.default_selection(), frozenset(applicable)]
    selections += [frozenset([op]) for op in applicable[:6]]
    selections += [frozenset(rng.sample(applicable, rng.randint(1, len(applicable)))) for _ in range(8)]
    for n, selection in enumerate(selections):
        ws = Workspace(shutil.copytree(source.root, tmp_path / f"copy{n}"))
        copy_plan = plan_keep(ws, history=History(tmp_path / f"h{n}"))
        assert [op.id for op in copy_plan.operations] == [op.id for op in plan.operations]
        diff = copy_plan.render(selection, context=10_000)
        expected = copy_plan.after_text(selection)
        if diff:
            assert after_from_diff(diff) == expected
        else:
            assert expected == copy_plan.before_text
        agents_before = read(ws.agents_md)
        copy_plan.apply(selection)
        assert read(ws.keep_md) == copy_plan.after_bytes(selection)
        assert read(ws.agents_md) == (copy_plan.agents_after(selection) or agents_before)
        if "AGENTS.md" in diff:
            assert after_from_diff(diff, "AGENTS.md") == read(ws.agents_md).decode()


# ---------------------------------------------------------------------- staleness


def test_a_stale_plan_is_refused_after_an_external_edit(small, history):
    ws, plan = small
    edited = read(ws.keep_md) + b"- Plays chess on Sundays\n"
    write(ws.keep_md, edited)  # the agent appends while the person reviews
    with pytest.raises(StalePlan) as caught:
        plan.apply()
    assert read(ws.keep_md) == edited
    assert not os.path.exists(ws.agents_md) or b"Always answer" not in read(ws.agents_md)
    fresh = caught.value.replanned
    assert fresh is not None and "- Plays chess on Sundays" in fresh.after_text()
    fresh.apply()


def test_a_plan_is_stale_when_memory_md_changed(small):
    ws, plan = small
    write(ws.memory_md, MEMORY + "- Prefers tea\n")
    assert plan.is_stale()
    with pytest.raises(StalePlan, match=r"memory/MEMORY\.md changed"):
        plan.apply()


def test_a_keep_through_keepgui_also_makes_the_plan_stale(small, history):
    ws, plan = small
    KeepStore(ws, history).add("Has a dog called Rex")
    with pytest.raises(StalePlan):
        plan.apply()


# ---------------------------------------------------------------------- undo


def test_undo_restores_the_exact_previous_bytes(tmp_path, history):
    original = (
        "\ufeff- Prefers tea\r\n- prefers tea.\r\n\r\n- Always answer in English\r\n"
        "- Vegetarian\r\n- Vegetarian, eats fish\r\n- Lives in Lisbon (added 2025-03-01)"
    ).encode()
    ws = Workspace(make_workspace(tmp_path / "ws", keep=original))
    assert not os.path.exists(ws.agents_md)
    plan = plan_keep(ws, history=history)
    applied = plan.apply("all")
    written = read(ws.keep_md)
    assert written == plan.after_bytes("all") and not written.endswith(b"\n") and written.startswith(b"\xef\xbb\xbf")
    assert os.path.exists(ws.agents_md)
    applied.undo()
    assert read(ws.keep_md) == original
    assert not os.path.exists(ws.agents_md)  # it did not exist before
    applied.redo()
    assert read(ws.keep_md) == written
    applied.undo()
    assert read(ws.keep_md) == original


def test_undo_is_refused_when_the_file_changed_since(small, history):
    ws, plan = small
    applied = plan.apply()
    changed = read(ws.keep_md) + b"- Plays chess\n"
    write(ws.keep_md, changed)
    with pytest.raises(ChangedSince):
        applied.undo()
    assert read(ws.keep_md) == changed and applied.state == "applied"


def test_apply_keeps_history_and_logs_removed_entries(small, history):
    ws, plan = small
    before = read(ws.keep_md)
    applied = plan.apply()
    versions = history.versions(ws.keep_md)
    assert history.read(versions[-2]) == before and versions[-1].source == "compacted"
    store = KeepStore(ws, history)
    removed = {r.text for r in store.removed()}
    assert {"allergic to penicillin.", "Vegetarian", "Sister Ana lives in Berlin"} <= removed
    assert all(r.reason.startswith("compaction: ") for r in store.removed())
    result = store.restore(next(r for r in store.removed() if r.text == "Vegetarian"))
    assert result.written and "- Vegetarian\n" in read(ws.keep_md).decode()
    assert isinstance(applied, FileApplied)


def test_undo_from_another_process_through_the_journal(small, history):
    ws, plan = small
    before = read(ws.keep_md)
    applied = plan.apply()
    journal = UndoJournal(history)
    journal.record(applied)
    entry = journal.last(applied.target)
    again = load_applied(entry["applied"], history)
    again.undo()
    assert read(ws.keep_md) == before


def test_nothing_selected_writes_nothing(small):
    ws, plan = small
    before = read(ws.keep_md)
    applied = plan.apply("none")
    assert not applied.changed and read(ws.keep_md) == before


def test_a_large_keep_md_is_planned_without_comparing_every_pair(tmp_path, monkeypatch):
    """#13.5: 100,000 entries were still being planned after 290 s (containment compared every pair).

    Counted, not timed: the word-boundary containment test runs a few times per entry, not n² times.
    """
    from keepgui.backends.nanobot import compact, keepmd
    from keepgui.core.history import History
    from tests.bench.synth import make_keep_md

    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "MEMORY.md").write_text(
        "# Memory\n" + "".join(f"- fact {i} about dashboards\n" for i in range(50))
    )
    (root / "keep.md").write_text(make_keep_md(6_000))
    calls = {"n": 0}
    real = keepmd.contains

    def counting(haystack, needle):
        calls["n"] += 1
        return real(haystack, needle)

    monkeypatch.setattr(keepmd, "contains", counting)
    monkeypatch.setattr(compact, "contains", counting)
    plan = compact.plan_keep(str(root), history=History(str(tmp_path / "history")))
    assert calls["n"] < 20 * 6_000, calls["n"]  # every pair would be 18,000,000
    kinds = {op.kind for op in plan.operations}
    assert {"duplicate", "contained", "near-duplicate"} <= kinds
    assert any(n.code == "near-duplicates-by-words" for n in plan.notices)  # over 5,000 entries
