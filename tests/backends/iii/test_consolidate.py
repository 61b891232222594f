"""The bank planner: memory-consolidate's upstream vectors one by one (spec §8), then applying,
staleness and undo on a real bank."""

from __future__ import annotations

import os

import pytest

from keepgui.backends.iii.compact import BankApplied, normalize, plan_bank, plan_groups, token_key
from keepgui.backends.iii.record import Memory, fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.core.compaction import ChangedSince, StalePlan, UndoJournal, load_applied
from keepgui.core.history import History


def row(mid: str, text: str, pinned: bool = False, corroboration: int = 0, created_at: int = 0) -> Memory:
    """A live memory as ``memory::list`` returns it (only the fields consolidation reads matter)."""
    return Memory(
        id=mid,
        text=text,
        entities=(),
        tags=(),
        confidence="stated",
        corroboration=corroboration,
        pinned=pinned,
        created_at=created_at,
        updated_at=created_at,
        revision=0,
    )


def shape(groups):
    return [(g.winner_id, list(g.loser_ids), list(g.skipped_pinned), g.report_only) for g in groups]


# ---------------------------------------------------------------------- upstream vectors (spec §8)


def test_normalize_folds_case_punctuation_whitespace():
    assert normalize("User  prefers TERSE, direct answers!") == "user prefers terse direct answers"
    assert token_key("b a b c") == "a b c"


def test_normalize_uses_rusts_alphanumeric():
    # U+093F (a Devanagari vowel sign) is Unicode Alphabetic, so Rust keeps it; Python's isalnum() does not
    assert not "\u093f".isalnum()
    assert normalize("कि बात!") == "कि बात"
    assert normalize("x\u00b2 ½ Ⅻ") == "x² ½ ⅻ"  # No and Nl numbers are alphanumeric too


def test_vector_normalized_duplicates_write_and_a_lone_reorder_is_not_reported():
    groups = plan_groups(
        [
            row("fp1", "User publishes on Tuesday mornings.", corroboration=2, created_at=100),
            row("fp2", "user publishes on tuesday mornings", created_at=200),
            row("fp3", "On Tuesday mornings user publishes", created_at=300),
            row("fp4", "Something entirely different", created_at=400),
        ]
    )
    assert shape(groups) == [("fp1", ["fp2"], [], False)]


def test_vector_word_order_twins_are_report_only():
    groups = plan_groups(
        [row("fpa", "Alice manages Bob", created_at=100), row("fpb", "Bob manages Alice", created_at=200)]
    )
    assert len(groups) == 1 and groups[0].report_only


def test_vector_one_differing_word_means_no_group():
    assert (
        plan_groups(
            [
                row("fp1", "User always publishes on Tuesdays", created_at=100),
                row("fp2", "User never publishes on Tuesdays", created_at=200),
            ]
        )
        == []
    )


def test_vector_pinned_always_wins_over_corroboration():
    groups = plan_groups(
        [
            row("fp1", "the api port is 3000", corroboration=9, created_at=100),
            row("fp2", "The API port is 3000!", pinned=True, created_at=200),
        ]
    )
    assert shape(groups) == [("fp2", ["fp1"], [], False)]


def test_vector_two_pinned_duplicates_give_a_group_without_losers():
    groups = plan_groups(
        [row("fp1", "keep me", pinned=True, created_at=100), row("fp2", "Keep me!", pinned=True, created_at=200)]
    )
    assert shape(groups) == [("fp1", [], ["fp2"], False)]
    assert groups[0].to_obj() == {
        "winner_id": "fp1",
        "winner_text": "keep me",
        "loser_ids": [],
        "loser_texts": [],
        "skipped_pinned": ["fp2"],
    }


def test_vector_corroboration_beats_age_and_age_beats_id():
    groups = plan_groups(
        [
            row("fpz", "same words", created_at=100),
            row("fpa", "same words!", created_at=100),
            row("fpm", "SAME words", corroboration=3, created_at=900),
        ]
    )
    assert shape(groups) == [("fpm", ["fpa", "fpz"], [], False)]


def test_vector_mixed_pinned_and_plain_losers():
    groups = plan_groups(
        [
            row("fp1", "keep this memory", corroboration=5, created_at=100),
            row("fp2", "Keep this memory!", pinned=True, created_at=200),
            row("fp3", "keep THIS memory", created_at=300),
        ]
    )
    assert shape(groups) == [("fp2", ["fp1", "fp3"], [], False)]


def test_vector_a_reordering_of_a_writable_member_stays_out():
    groups = plan_groups(
        [
            row("fp1", "alpha beta gamma", created_at=100),
            row("fp2", "Alpha beta gamma!", created_at=200),
            row("fp3", "gamma beta alpha", created_at=300),
        ]
    )
    writable = [g for g in groups if not g.report_only]
    assert shape(writable) == [("fp1", ["fp2"], [], False)]
    assert all("fp3" not in g.members for g in groups)


def test_vector_ties_on_corroboration_the_oldest_wins():
    groups = plan_groups([row("fpb", "same text here", created_at=200), row("fpa", "same text here!", created_at=100)])
    assert groups[0].winner_id == "fpa"


def test_vector_plan_is_the_same_for_reversed_input():
    rows = [
        row("fp1", "same text", created_at=100),
        row("fp2", "Same text!", created_at=200),
        row("fp3", "other words", created_at=300),
        row("fp4", "OTHER words?", created_at=400),
    ]
    assert shape(plan_groups(rows)) == shape(plan_groups(list(reversed(rows))))
    assert shape(plan_groups(rows)) == [("fp3", ["fp4"], [], False), ("fp1", ["fp2"], [], False)]


def test_vector_unicode_text_groups():
    groups = plan_groups(
        [row("fp1", "Café rules apply", created_at=100), row("fp2", "café RULES apply!!", created_at=200)]
    )
    assert shape(groups) == [("fp1", ["fp2"], [], False)]


def test_vector_texts_normalising_to_empty_group_together():
    groups = plan_groups([row("fp1", "   ", created_at=100), row("fp2", "\t\n", created_at=200)])
    assert shape(groups) == [("fp1", ["fp2"], [], False)] and groups[0].key == ""


def test_vector_singletons_give_no_groups():
    assert plan_groups([row("fp1", "one thing", created_at=100), row("fp2", "another thing", created_at=200)]) == []


def test_groups_come_in_sorted_key_order_writable_first():
    groups = plan_groups(
        [
            row("a1", "zeta one"),
            row("a2", "Zeta one!"),
            row("b1", "alpha two"),
            row("b2", "ALPHA two"),
            row("c1", "y x"),
            row("c2", "x y"),
            row("d1", "b a"),
            row("d2", "a b"),
        ]
    )
    assert [(g.key, g.report_only) for g in groups] == [
        ("alpha two", False),
        ("zeta one", False),
        ("a b", True),
        ("x y", True),
    ]


# ---------------------------------------------------------------------- a real bank


def write_log(bank_dir, memories):
    """Test set-up standing in for the worker: append records to the bank's log."""
    with open(os.path.join(bank_dir, "memories.jsonl"), "ab") as fh:
        fh.write(b"".join(m.to_line() for m in memories))


def mem(text, *, pinned=False, corroboration=0, created_at=1000, mid=None, revision=0) -> Memory:
    return Memory(
        id=mid or fingerprint(text),
        text=text,
        entities=(),
        tags=(),
        confidence="stated",
        corroboration=corroboration,
        pinned=pinned,
        created_at=created_at,
        updated_at=created_at,
        revision=revision,
    )


@pytest.fixture
def bank(data_dir):
    datadir = DataDir(data_dir)
    bank, _created = datadir.ensure_bank("main")
    write_log(
        bank.path,
        [
            mem("The API port is 3000", corroboration=2, created_at=100),
            mem("the api port is 3000!", created_at=200),
            mem("The API port is 3000.", created_at=300),
            mem("Keep me", pinned=True, created_at=150),
            mem("keep me!", pinned=True, created_at=250),
            mem("Keep me.", created_at=350),
            mem("Alice manages Bob", created_at=100),
            mem("Bob manages Alice", created_at=200),
            mem("User prefers tea", created_at=100),
            mem("User prefers green tea", created_at=200),
            mem("Something unrelated", created_at=100),
        ],
    )
    return bank


def log_bytes(bank) -> bytes:
    with open(bank.log_path, "rb") as fh:
        return fh.read()


def test_plan_operations_and_default_selection(bank):
    plan = plan_bank(bank, fuzzy=True)
    kinds = [(op.kind, op.selected, op.applicable) for op in plan.operations]
    assert kinds == [
        ("supersede", True, True),
        ("supersede", True, True),
        ("fuzzy", False, True),
        ("report-only", False, False),
    ]
    assert plan.counts().describe() == "11 → 8 memories"
    assert plan.counts("all").after == 7
    report = plan.report()
    assert set(report) == {"bank", "scanned", "groups", "superseded", "reinforced"}
    keep_me = next(g for g in report["groups"] if g["winner_text"] == "Keep me")
    assert keep_me["skipped_pinned"] == [fingerprint("keep me!")] and keep_me["loser_texts"] == ["Keep me."]
    assert "report_only" not in keep_me
    assert any(g.get("report_only") for g in report["groups"])


def test_plan_renders_a_table_of_supersedes(bank):
    plan = plan_bank(bank)
    table = plan.render()
    assert "supersede" in table and fingerprint("the api port is 3000!") in table
    assert f"reinforce {fingerprint('The API port is 3000')}: corroboration 2 → 4" in table
    assert plan.render("none").startswith("nothing selected")


def test_apply_supersedes_and_reinforces_in_one_append(bank):
    plan = plan_bank(bank)
    before = log_bytes(bank)
    applied = plan.apply(now=5000)
    after = log_bytes(bank)
    assert after.startswith(before)
    lines = after[len(before) :].splitlines()
    assert lines[0] == b"" and b"" not in lines[1:]  # one append, which begins with its own newline
    lines = lines[1:]
    assert len(lines) == 6  # per loser: one supersede and one reinforcement, as the worker does
    winner = bank.get(fingerprint("The API port is 3000"))
    assert winner.corroboration == 4 and winner.live
    for text in ("the api port is 3000!", "The API port is 3000."):
        loser = bank.get(fingerprint(text))
        assert loser.superseded_by == winner.id and loser.invalid_at == 5000
    assert bank.get(fingerprint("keep me!")).live  # the pinned loser is never touched
    assert bank.get(fingerprint("Keep me.")).superseded_by == fingerprint("Keep me")
    assert applied.superseded == 3 and len(applied.lines) == 6  # per loser: the supersede and the save


def test_edited_winner_is_saved_as_memory_consolidate_saves_it(data_dir):
    """#12.8: upstream saves the winner's *text*; an edited winner's text has another id, so that
    save creates a new record (corroboration 0) and the winner is not reinforced."""
    datadir = DataDir(data_dir)
    bank, _ = datadir.ensure_bank("main")
    edited = mem("Deploys on Fridays", corroboration=3, created_at=100).replace(text="Deploys on Tuesdays", revision=1)
    write_log(bank.path, [edited, mem("deploys on tuesdays!", created_at=200)])
    plan = plan_bank(bank)
    assert plan.groups_planned[0].winner_id == fingerprint("Deploys on Fridays")
    assert "writes " + fingerprint("Deploys on Tuesdays") in plan.render() and plan.counts().detail["reinforced"] == 0
    applied = plan.apply()
    new = bank.get(fingerprint("Deploys on Tuesdays"))
    assert new is not None and new.corroboration == 0 and new.live  # what the worker leaves on disk
    assert bank.get(fingerprint("Deploys on Fridays")).corroboration == 3
    assert applied.report["superseded"] == 1 and applied.report["reinforced"] == 0
    applied.undo()  # the created record is deleted, the loser restored
    assert not bank.get(fingerprint("Deploys on Tuesdays")).live and bank.get(fingerprint("deploys on tuesdays!")).live


def test_reinforce_by_id_is_the_labelled_alternative(data_dir):
    datadir = DataDir(data_dir)
    bank, _ = datadir.ensure_bank("main")
    edited = mem("Deploys on Fridays", corroboration=3, created_at=100).replace(text="Deploys on Tuesdays", revision=1)
    write_log(bank.path, [edited, mem("deploys on tuesdays!", created_at=200)])
    applied = plan_bank(bank).apply(reinforce_by_id=True)
    assert fingerprint("Deploys on Tuesdays") not in bank.log.records
    assert bank.get(fingerprint("Deploys on Fridays")).corroboration == 4
    assert any("by id" in line and "not memory-consolidate" in line for line in applied.lines)


def test_a_winner_text_the_save_refuses_is_reported_and_nothing_is_reinforced(data_dir):
    """Upstream's save fails for a text over 2,000 bytes: the error is reported, the supersede stays."""
    datadir = DataDir(data_dir)
    bank, _ = datadir.ensure_bank("main")
    long_text = "deploys on tuesdays " * 110  # 2,200 bytes: only a hand edit makes such a record
    winner = mem("Deploys on Fridays", corroboration=3, created_at=100).replace(text=long_text, revision=1)
    loser = mem(long_text.upper().strip() + "!", created_at=200)
    write_log(bank.path, [winner, loser])
    applied = plan_bank(bank).apply()
    assert not bank.get(loser.id).live and bank.get(winner.id).corroboration == 3
    assert applied.report["errors"] and "3..2000" in applied.report["errors"][0]
    assert applied.report["reinforced"] == 0


def test_undo_appends_restores_and_every_loser_is_live_again(bank):
    plan = plan_bank(bank, fuzzy=True)
    live_before = {m.id: m for m in bank.memories()}
    applied = plan.apply("all")
    applied_bytes = log_bytes(bank)
    applied.undo()
    assert log_bytes(bank).startswith(applied_bytes)  # never removes a line
    live_after = {m.id: m for m in bank.memories()}
    assert set(live_after) == set(live_before)
    for mid, old in live_before.items():
        new = live_after[mid]
        assert (new.text, new.corroboration, new.pinned, new.superseded_by) == (
            old.text,
            old.corroboration,
            old.pinned,
            None,
        )
        assert new.updated_at == old.updated_at  # #23.8: the worker's recency is as it was, not "just now"
    applied.redo()
    assert len(bank.memories()) == len(live_before) - 4


def test_undo_refuses_when_a_memory_changed_since(bank):
    applied = plan_bank(bank).apply()
    other = DataDir(os.path.dirname(bank.path)).bank("main")  # another writer, like the worker
    other.save("The API port is 3000")  # reinforces the winner
    size = len(log_bytes(bank))
    with pytest.raises(ChangedSince):
        applied.undo()
    assert len(log_bytes(bank)) == size and applied.state == "applied"


def test_stale_plan_refused_after_a_member_changed(bank):
    plan = plan_bank(bank)
    other = DataDir(os.path.dirname(bank.path)).bank("main")
    other.update(fingerprint("the api port is 3000!"), text="The API port is 4000")
    size = len(log_bytes(bank))
    with pytest.raises(StalePlan) as caught:
        plan.apply()
    assert len(log_bytes(bank)) == size  # nothing written
    replanned = caught.value.replanned
    assert replanned is not None and [len(g.loser_ids) for g in replanned.groups_planned if not g.report_only] == [1, 1]


def test_a_new_memory_joining_a_group_makes_the_plan_stale(bank):
    plan = plan_bank(bank)
    DataDir(os.path.dirname(bank.path)).bank("main").save("THE API PORT IS 3000 !!")
    assert plan.is_stale()


def test_unrelated_appends_do_not_make_the_plan_stale(bank):
    plan = plan_bank(bank)
    DataDir(os.path.dirname(bank.path)).bank("main").save("A completely new fact")
    assert not plan.is_stale()
    plan.apply()
    assert bank.get(fingerprint("A completely new fact")).live


def test_a_rewritten_log_makes_the_plan_stale(bank):
    plan = plan_bank(bank)
    data = log_bytes(bank)
    with open(bank.log_path, "wb") as fh:  # someone rewrote the log in place
        fh.write(data.replace(b"Something unrelated", b"Something unrelate!"))
    with pytest.raises(StalePlan):
        plan.apply()


def test_bank_undo_works_from_the_journal(bank, tmp_path):
    history = History(tmp_path / "history")
    journal = UndoJournal(history)
    applied = plan_bank(bank).apply()
    entry_id = journal.record(applied)
    entry = journal.last(applied.target)
    assert entry["id"] == entry_id
    again = load_applied(entry["applied"], history)
    assert isinstance(again, BankApplied)
    again.undo(datadir=DataDir(os.path.dirname(bank.path)))
    journal.mark_undone(entry_id)
    assert journal.last(applied.target) is None
    bank.refresh()
    assert len(bank.memories()) == 11


def test_fuzzy_groups_are_judgement_calls(bank):
    plan = plan_bank(bank, fuzzy=True)
    fuzzy = next(op for op in plan.operations if op.kind == "fuzzy")
    assert not fuzzy.selected and fuzzy.id not in plan.default_selection()
    group = plan.group(fuzzy.id)
    assert group.fuzzy and group.winner_text == "User prefers tea" and group.loser_texts == ("User prefers green tea",)
    assert "green" in fuzzy.reason  # the words the merge would lose are named
    plan.apply([fuzzy.id])
    assert bank.get(fingerprint("User prefers green tea")).superseded_by == fingerprint("User prefers tea")


def test_report_only_operations_cannot_be_selected(bank):
    plan = plan_bank(bank)
    report = next(op for op in plan.operations if op.kind == "report-only")
    assert report.id not in plan.select("all")
    with pytest.raises(Exception, match="reported only"):
        plan.select(str(report.number))
