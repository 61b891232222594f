"""Keeping a fact: cleaning, triage, every dedup path, writing safely, and reversible removal."""

from __future__ import annotations

import os

import pytest

from keepgui.backends.nanobot import writes as keep_module
from keepgui.backends.nanobot.keepmd import KeepDoc
from keepgui.backends.nanobot.triage import AGENTS, KEEP, NOTE, PROJECT, REMIND, slugify, triage
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.backends.nanobot.writes import (
    ALREADY_KEPT,
    KEEP_CAPABILITIES,
    KEPT,
    REDIRECTED,
    REPLACE_OFFERED,
    REPLACED,
    KeepStore,
    clean_fact,
    memory_matches,
)
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.history import History
from tests.backends.nanobot.nanobot_helpers import SPEC_FACTS, SPEC_FIXTURE, make_workspace, read, write
from tests.conftest import tree_digest


@pytest.fixture
def ws(tmp_path):
    return Workspace(make_workspace(tmp_path / "ws"))


@pytest.fixture
def store(ws, tmp_path):
    return KeepStore(ws, History(tmp_path / "history"))


# ---------------------------------------------------------------------- cleaning


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("keep Vegetarian", "Vegetarian"),
        ("/keep: Vegetarian", "Vegetarian"),
        ("KEEP:Vegetarian", "Vegetarian"),
        ("Remember that Sam likes figs", "Sam likes figs"),
        ("remember: Sam likes figs", "Sam likes figs"),
        ("REMEMBER   that\nSam\n\nlikes   figs ", "Sam likes figs"),
        ("/keep remember that Sam likes figs", "Sam likes figs"),
        ("- Has a beagle", "Has a beagle"),
        ("* Has a beagle", "Has a beagle"),
        ("Keeps bees on the balcony", "Keeps bees on the balcony"),
        ("Remembers every birthday", "Remembers every birthday"),
        ("keep-fit classes on Mondays", "keep-fit classes on Mondays"),
    ],
)
def test_clean_fact(raw, clean):
    assert clean_fact(raw) == clean


def test_cleaning_never_adds_a_date(store, ws):
    result = store.add("remember that Sam likes figs")
    assert read(ws.keep_md).endswith(b"- Sam likes figs\n")
    assert result.entry.text == "Sam likes figs"


@pytest.mark.parametrize("text", ["", "   ", "keep", "/keep:", "remember that", "remember this", "keep that"])
def test_empty_or_vague_input_is_refused(store, ws, text):
    before = read(ws.keep_md)
    with pytest.raises(InvalidInput):
        store.add(text)
    assert read(ws.keep_md) == before


# ---------------------------------------------------------------------- triage


@pytest.mark.parametrize(
    "fact",
    SPEC_FACTS
    + [
        "Never eats meat on Fridays",
        "Always has coffee at 10:00",
        "Birthday is 1988-03-14",
        "Email address is mike@example.com",
        "Reads science fiction; favourite author is Ursula K. Le Guin",
        "Writes a blog called Slow Bytes",
        "Runs on Saturday mornings along the Tagus",
        "Prefers tea",
        "Email inbox zero every Friday",
        "Works on a side project at weekends",
        "Favourite restaurant is Ao 26 Vegan Food Project in Chiado",
    ],
)
def test_durable_user_facts_are_kept(fact):
    assert triage(fact).verdict == KEEP


@pytest.mark.parametrize(
    "fact",
    [
        "Always run the tests before committing",
        "Never use em-dashes in replies",
        "Don't add emoji",
        "Use British spelling in code comments",
        "When you write SQL, use explicit column lists",
        "Reply in English even when asked in Portuguese",
        "Commit messages in imperative mood",
        "The assistant should ask before deleting files",
        "Prefer table-driven tests",
    ],
)
def test_agent_rules_go_to_agents_md(fact):
    verdict = triage(fact)
    assert verdict.verdict == AGENTS and verdict.destination == "AGENTS.md" and verdict.reason


@pytest.mark.parametrize(
    "fact",
    [
        "https://use-the-index-luke.com is worth reading",
        "Read www.postgresql.org/docs later",
        "Article at lwn.net/Articles/123 on io_uring",
        "Try the new Zed editor later",
        "Check out Helix editor",
        "Wants to read The Left Hand of Darkness",
        "To read: Designing Data-Intensive Applications",
        "Water the plants",
    ],
)
def test_links_and_later_items_go_to_note(fact):
    verdict = triage(fact)
    assert verdict.verdict == NOTE and verdict.destination == "/note"


@pytest.mark.parametrize(
    "fact",
    [
        "Remind me to call mum on Sunday",
        "Don't forget to renew the passport",
        "Dentist tomorrow at 10:00",
        "Call the dentist on 2025-07-03",
        "Pay rent by 1 July",
        "Tax return deadline is the end of June",
        "Standup moves to 9:30 next week",
        "Pick up Biscuit from the vet at 17:00",
    ],
)
def test_reminders_go_to_remind(fact):
    verdict = triage(fact)
    assert verdict.verdict == REMIND and verdict.destination == "/remind"


@pytest.mark.parametrize(
    "fact, slug",
    [
        ("In the keepgui project tests run with pytest", "keepgui"),
        ("Project Atlas uses Postgres 16", "atlas"),
        ("The slow-bytes repo deploys to Hetzner", "slow-bytes"),
    ],
)
def test_project_facts_go_to_projects(fact, slug):
    verdict = triage(fact)
    assert verdict.verdict == PROJECT and verdict.project == slug and verdict.destination == f"projects/{slug}/"


def test_known_project_folders_are_recognised(ws, store):
    os.makedirs(os.path.join(ws.root, "projects", "slow-bytes"))
    assert triage("Slow Bytes deploys on Tuesdays", ws.projects()).project == "slow-bytes"
    assert store.check("Slow Bytes deploys on Tuesdays").triage.verdict == PROJECT
    assert slugify("Slow Bytes!") == "slow-bytes"


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("Always run the tests before committing", AGENTS),
        ("Read https://example.com later", NOTE),
        ("Remind me to call mum tomorrow", REMIND),
        ("In the atlas project use sqlc", PROJECT),
    ],
)
def test_a_non_keep_verdict_is_a_suggestion_force_keeps_anyway(store, ws, text, verdict):
    before = read(ws.keep_md)
    result = store.add(text)
    assert result.outcome == REDIRECTED and not result.written and result.triage.verdict == verdict
    assert result.triage.destination in result.message
    assert read(ws.keep_md) == before
    forced = store.add(text, force=True)
    assert forced.outcome == KEPT and forced.written
    assert any(n.code == "triage-overridden" for n in forced.notices)
    assert read(ws.keep_md) == before + f"- {clean_fact(text)}\n".encode()


# ---------------------------------------------------------------------- dedup (spec §6 edge cases)


def test_contained_in_an_entry_is_a_no_op(store, ws):
    result = store.add("- prefers metric units")
    assert result.outcome == ALREADY_KEPT and not result.written
    assert result.entry.number == 1 and "entry 1" in result.message
    assert read(ws.keep_md) == SPEC_FIXTURE.encode()


def test_containing_an_entry_offers_to_replace_it(store, ws):
    result = store.add("- Allergic to penicillin and amoxicillin")
    assert result.outcome == REPLACE_OFFERED and not result.written
    assert [e.number for e in result.replace_candidates] == [4]
    assert read(ws.keep_md) == SPEC_FIXTURE.encode()
    replaced = store.add("Allergic to penicillin and amoxicillin", replace=True)
    assert replaced.outcome == REPLACED and replaced.written
    assert replaced.entry.number == 4 and replaced.entry.text == "Allergic to penicillin and amoxicillin"
    assert (
        read(ws.keep_md)
        == SPEC_FIXTURE.replace("- Allergic to penicillin\n", "- Allergic to penicillin and amoxicillin\n").encode()
    )
    [logged] = replaced.replaced
    assert logged.text == "Allergic to penicillin" and logged.reason == "replaced"


def test_replace_merges_every_contained_entry(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep="- Tea\n- Likes figs\n- tea.\n- Sam\n"))
    store = KeepStore(ws, History(tmp_path / "h"))
    result = store.add("Tea and figs with Sam", replace=True)
    assert result.outcome == REPLACED
    assert read(ws.keep_md) == b"- Tea and figs with Sam\n- Likes figs\n"
    assert sorted(r.text for r in result.replaced) == ["Sam", "Tea", "tea."]


def test_star_bullet_with_same_text_is_a_duplicate(store, ws):
    result = store.add("* Has a beagle named Biscuit")
    assert result.outcome == ALREADY_KEPT and result.entry.number == 7 and not result.written
    forced = store.add("* Has a beagle named Biscuit", force=True)
    assert forced.outcome == ALREADY_KEPT and not forced.written  # never an identical line twice
    assert read(ws.keep_md) == SPEC_FIXTURE.encode()


def test_force_keeps_a_contained_fact_as_a_variant(store, ws):
    result = store.add("prefers metric units", force=True)
    assert result.outcome == KEPT and any(n.code == "variant" for n in result.notices)
    assert read(ws.keep_md).endswith(b"- prefers metric units\n")


def test_force_keeps_both_instead_of_replacing(store, ws):
    result = store.add("Allergic to penicillin and amoxicillin", force=True)
    assert result.outcome == KEPT
    doc = KeepDoc.parse(read(ws.keep_md))
    assert doc.entries[3].text == "Allergic to penicillin" and doc.entries[-1].text.endswith("amoxicillin")


def test_near_duplicate_warns_and_names_it(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep="- Prefers tea\n- Lives in Lisbon\n"))
    store = KeepStore(ws, History(tmp_path / "h"))
    result = store.add("Prefers green tea")
    assert result.outcome == KEPT and result.written
    [near] = result.near_duplicates
    assert near.entry.text == "Prefers tea" and near.score >= 85
    assert any(n.code == "near-duplicate" and "`Prefers tea`" in n.message for n in result.notices)


def test_a_near_duplicate_is_described_as_a_person_reads_it(tmp_path):
    """#16.13: "Prefers tea" and "Prefers green tea" were "100% similar" (token_set_ratio of a word
    subset); the relation is said in words, and a percentage only for two that merely read alike."""
    from keepgui.core.compaction import ALIKE, AROUND, WITHIN

    ws = Workspace(make_workspace(tmp_path / "ws", keep="- Prefers green tea\n- Lives in Lisbon since 2019\n"))
    store = KeepStore(ws, History(tmp_path / "h"))
    [near] = store.check("Prefers tea").near
    assert near.score == 100 and near.likeness.relation == WITHIN
    assert near.describe("entry 1") == "every word of it is in entry 1"
    [near] = store.check("Since 2019 lives in Lisbon, near Alfama").near
    assert near.likeness.relation == AROUND and near.describe("entry 2") == "it has every word of entry 2"
    [near] = store.check("Lives in Lisbon since 2018").near
    assert near.likeness.relation == ALIKE and 85 <= near.likeness.percent < 100
    assert near.describe("entry 2") == f"entry 2 reads {near.likeness.percent:.0f}% alike"
    assert near.to_obj()["relation"] == ALIKE and near.to_obj()["likeness"] == round(near.likeness.percent, 1)


def test_fuzzy_threshold_is_configurable(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep="- Prefers tea\n"))
    assert KeepStore(ws, History(tmp_path / "h")).check("Prefers teas").near  # 96 by default
    assert not KeepStore(ws, History(tmp_path / "h"), fuzzy_threshold=100).check("Prefers teas").near
    assert not KeepStore(ws, History(tmp_path / "h")).check("Prefers coffee").near  # 78
    assert KeepStore(ws, History(tmp_path / "h"), fuzzy_threshold=70).check("Prefers coffee").near
    with pytest.raises(InvalidInput):
        KeepStore(ws, History(tmp_path / "h"), fuzzy_threshold=101)


def test_unrelated_facts_are_not_near_duplicates(store):
    found = store.check("Prefers dark roast coffee")
    assert found.triage.verdict == KEEP and not found.near and found.already_kept is None and not found.contains


def test_word_boundaries_in_containment(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep="- Likes steak\n"))
    store = KeepStore(ws, History(tmp_path / "h"))
    assert store.check("tea").already_kept is None


def test_memory_md_match_is_a_warning_naming_the_line(store, ws):
    result = store.add("Drinks green tea, never coffee after 14:00")
    assert result.outcome == KEPT and result.written
    [match] = result.memory_matches
    assert match.line == 4 and "green tea" in match.text
    assert any(n.code == "in-memory-md" and "line 4" in n.message for n in result.notices)


def test_memory_matches_directions():
    memory = "# Prefs\n\n- Sister Ana lives in Berlin\n- Tea\n- **Mike** drinks green tea daily\n"
    assert [m.kind for m in memory_matches("Ana lives in Berlin", memory)] == ["contains"]
    assert [m.kind for m in memory_matches("Sister Ana lives in Berlin with her cat", memory)] == ["contained"]
    assert [m.kind for m in memory_matches("Mike drinks green tea every day", memory)] == ["similar"]
    assert memory_matches("Prefs", memory) == []  # headings are not compared
    assert memory_matches("Tea with lemon", memory) == []  # a one-word line is too short to be "contained"


def test_long_input_is_warned(store):
    result = store.add(
        "Keeps a list of every restaurant in Lisbon that serves a good vegetarian feijoada on Sundays for friends"
    )
    assert result.written and any(n.code == "long" and "18 words" in n.message for n in result.notices)


def test_compaction_due_after_add(tmp_path):
    keep = "".join(f"- Fact number {i}\n" for i in range(150))
    ws = Workspace(make_workspace(tmp_path / "ws", keep=keep))
    store = KeepStore(ws, History(tmp_path / "h"))
    result = store.add("Has a cat called Miso")
    assert result.counts["lines"] == 151 and result.counts["compaction_due"]
    assert any(n.code == "compaction-due" and "151 lines" in n.message for n in result.notices)


def test_keep_md_is_created_when_missing(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=None))
    result = KeepStore(ws, History(tmp_path / "h")).add("Has a cat")
    assert result.written and read(ws.keep_md) == b"- Has a cat\n"
    assert result.counts == {"entries": 1, "lines": 1, "soft_cap": 150, "target": 120, "compaction_due": False}


def test_add_keeps_crlf_bom_and_missing_final_newline(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=b"\xef\xbb\xbf- Tea\r\n## H\r\n- Figs"))
    KeepStore(ws, History(tmp_path / "h")).add("Has a cat")
    assert read(ws.keep_md) == b"\xef\xbb\xbf- Tea\r\n## H\r\n- Figs\r\n- Has a cat"


def test_result_to_obj(store):
    obj = store.add("Has a cat").to_obj()
    assert obj["outcome"] == "kept" and obj["written"] and obj["entry"]["text"] == "Has a cat"
    assert obj["counts"]["entries"] == 11 and obj["triage"]["verdict"] == "keep"


def test_keep_writes_only_keep_md(store, ws):
    before = tree_digest(ws.root)
    store.add("Has a cat")
    after = tree_digest(ws.root)
    assert {k for k in after if after[k] != before.get(k)} == {"keep.md"}


# ---------------------------------------------------------------------- concurrency


def test_a_change_since_the_caller_loaded_is_refused(store, ws):
    doc = store.load()
    write(ws.keep_md, "- rewritten by the agent\n")
    with pytest.raises(Conflict, match="changed by someone else"):
        store.add("Has a cat", expect=doc.stamp)
    with pytest.raises(Conflict):
        store.remove(doc.entries[0].id, expect=doc.stamp)
    assert read(ws.keep_md) == b"- rewritten by the agent\n"
    assert store.history.last_removed(ws.keep_md) is None


def test_a_rewrite_between_read_and_write_is_refused_and_nothing_is_lost(store, ws, monkeypatch):
    real_check = keep_module.check_fact
    rewrites = []

    def agent_compacts_meanwhile(*args, **kwargs):
        found = real_check(*args, **kwargs)
        rewrites.append(1)
        write(ws.keep_md, f"- compacted by the agent, pass {len(rewrites)}\n")
        return found

    monkeypatch.setattr(keep_module, "check_fact", agent_compacts_meanwhile)
    with pytest.raises(Conflict):
        store.add("Has a cat")
    # tried again a few times (each read anew), then refused: the conflict stands, never forced
    assert 1 < len(rewrites) <= fsio.RETRY_TRIES
    assert read(ws.keep_md) == f"- compacted by the agent, pass {len(rewrites)}\n".encode()
    assert not [n for n in os.listdir(ws.root) if n.endswith(".tmp")]
    # the version keepgui saw before the rewrite is in its history
    versions = store.history.versions(ws.keep_md)
    assert SPEC_FIXTURE.encode() in [store.history.read(v) for v in versions]


def test_a_conflict_that_passes_is_tried_again_and_the_fact_kept(store, ws, monkeypatch):
    real_check = keep_module.check_fact
    rewrites = []

    def agent_compacts_once(*args, **kwargs):
        found = real_check(*args, **kwargs)
        if not rewrites:
            rewrites.append(1)
            write(ws.keep_md, "- compacted by the agent\n")
        return found

    monkeypatch.setattr(keep_module, "check_fact", agent_compacts_once)
    assert store.add("Has a cat").written
    assert read(ws.keep_md) == b"- compacted by the agent\n- Has a cat\n"


def test_a_refused_removal_is_not_offered_for_unforget(store, ws, monkeypatch):
    real_write = ws.write

    def agent_rewrites_first(path, data, *, expect):
        write(ws.keep_md, "- rewritten\n")
        return real_write(path, data, expect=expect)

    monkeypatch.setattr(ws, "write", agent_rewrites_first)
    with pytest.raises(Conflict):
        store.remove(4)
    assert read(ws.keep_md) == b"- rewritten\n"
    assert store.history.last_removed(ws.keep_md) is None
    with pytest.raises(NotFound):
        store.unforget()


# ---------------------------------------------------------------------- forget / unforget


def test_forget_then_unforget_restores_the_file_exactly(store, ws):
    result = store.remove(4)
    assert result.entry.text == "Allergic to penicillin" and result.counts["entries"] == 9
    assert b"penicillin" not in read(ws.keep_md)
    record = result.removed
    assert record.workspace == ws.root and record.line == 3 and record.number == 4
    assert record.before == "Vegetarian, but eats fish occasionally" and record.after.startswith("Works as")
    assert record.removed_at > 0
    assert os.path.commonpath([store.history.root, ws.root]) != ws.root  # stored outside the workspace
    restored = store.unforget()
    assert restored.written and restored.entry.number == 4
    assert read(ws.keep_md) == SPEC_FIXTURE.encode()
    with pytest.raises(NotFound, match="nothing to unforget"):
        store.unforget()


def test_unforget_restores_the_raw_line_next_to_its_old_neighbour(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=b"- a\r\n*  b\r\n- c\r\n"))
    store = KeepStore(ws, History(tmp_path / "h"))
    store.remove("b")
    write(ws.keep_md, b"- new first\r\n- a\r\n- c\r\n")  # the agent added a line meanwhile
    store.unforget()
    assert read(ws.keep_md) == b"- new first\r\n- a\r\n*  b\r\n- c\r\n"


def test_restore_any_removed_entry_and_fall_back_to_the_old_line(store, ws):
    first = store.remove("Allergic to penicillin").removed
    store.remove("Partner's name is Sam")
    write(ws.keep_md, "- only\n- lines\n- left\n- here\n- now\n")
    result = store.restore(first.id)
    assert result.written and read(ws.keep_md) == b"- only\n- lines\n- left\n- Allergic to penicillin\n- here\n- now\n"
    assert [r.text for r in store.removed()] == ["Partner's name is Sam"]
    assert len(store.removed(include_restored=True)) == 2


def test_restoring_an_entry_that_is_back_already_writes_nothing(store, ws):
    removed = store.remove(4).removed
    store.add("Allergic to penicillin")
    before = read(ws.keep_md)
    result = store.restore(removed)
    assert not result.written and "already" in result.message and read(ws.keep_md) == before
    assert store.removed() == []


def test_restore_refuses_an_entry_of_another_file(store, tmp_path):
    other = KeepStore(Workspace(make_workspace(tmp_path / "other")), store.history)
    removed = other.remove(1).removed
    with pytest.raises(InvalidInput):
        store.restore(removed)


def test_edit_rewrites_in_place_and_keeps_the_old_wording(store, ws):
    result = store.edit(4, "Allergic to penicillin (anaphylaxis)")
    assert result.entry.number == 4 and result.written
    assert b"- Allergic to penicillin (anaphylaxis)\n" in read(ws.keep_md)
    [old] = result.replaced
    assert old.text == "Allergic to penicillin" and old.reason == "edited"


def test_forget_by_id_and_unknown_targets(store):
    doc = store.load()
    assert store.remove(doc.entries[1].id).entry.text == "Lives in Lisbon; timezone Europe/Lisbon"
    with pytest.raises(NotFound):
        store.remove(doc.entries[1].id)  # gone now
    with pytest.raises(NotFound):
        store.remove(99)


# ---------------------------------------------------------------------- capabilities and history


def test_capabilities_say_there_is_no_pin():
    assert KEEP_CAPABILITIES.can_pin is False
    assert KEEP_CAPABILITIES.pin_reason == "keep.md entries have no pin: every entry is read on every turn"
    assert KEEP_CAPABILITIES.to_obj()["soft_cap"] == 150
    with pytest.raises(AttributeError):
        KEEP_CAPABILITIES.can_pin = True  # frozen


def test_every_version_seen_or_written_is_recorded(store, ws):
    store.load()
    store.load()  # same bytes: no new version
    store.add("Has a cat")
    write(ws.keep_md, "- compacted\n")
    store.load()
    history = store.history
    contents = [history.read(v) for v in history.versions(ws.keep_md)]
    assert contents == [SPEC_FIXTURE.encode(), SPEC_FIXTURE.encode() + b"- Has a cat\n", b"- compacted\n"]


def test_default_history_lives_in_keepguis_data_dir(ws):
    from keepgui.core.paths import app_data_dir

    store = KeepStore(ws.root)
    assert store.history.root.startswith(app_data_dir())
    assert fsio.current_stamp(ws.keep_md).exists
