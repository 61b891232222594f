"""The generic compaction model: near-duplicate search exactness, operations, selections, counts, journal."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from keepgui.core.compaction import (
    Counts,
    Plan,
    UndoJournal,
    make_operation,
    near_duplicates,
    near_duplicates_pairwise,
    operation_id,
    register_kinds,
    words_only_in,
)
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.history import History

WORDS = (
    "tea green prefers coffee likes like cat cats runs ran the a of in on lisbon porto go postgres teas "
    "prefer x y z ab abc abd café 日本語 14:00 never always"
).split()


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 7))]
    text = rng.choice((" ", ", ", "  ", "-")).join(words)
    if text and rng.random() < 0.4:  # a typo, so the sorted-characters branch is needed
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice("abcdefgh -.,") + text[i + 1 :]
    return text


@pytest.mark.parametrize("seed", range(40))
def test_near_duplicates_equal_the_pairwise_loop(seed):
    rng = random.Random(seed)
    texts = [sentence(rng) for _ in range(rng.randint(0, 60))]
    for threshold in (0, 40, 60, 75, 85, 90, 100):
        assert near_duplicates(texts, threshold) == near_duplicates_pairwise(texts, threshold)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="abcde fgh.,-ÉéИи1", max_size=30), max_size=25), st.sampled_from([50.0, 70.0, 85.0, 95.0])
)
def test_near_duplicates_equal_the_pairwise_loop_on_any_text(texts, threshold):
    assert near_duplicates(texts, threshold) == near_duplicates_pairwise(texts, threshold)


def test_near_duplicates_examples():
    pairs = near_duplicates(["Prefers tea", "prefers green tea", "Dislikes coffee", "likes cats", "like cat"], 85)
    assert [(i, j) for i, j, _s in pairs] == [(0, 1), (3, 4)]
    assert near_duplicates(["a", "a"], 101) == []
    progress = []
    near_duplicates(["one two", "two one", "three"], 85, progress=lambda d, t: progress.append((d, t)))
    assert progress[-1][0] == progress[-1][1]


def test_words_only_in():
    assert words_only_in("Vegetarian, but eats fish occasionally", "Vegetarian but eats fish now and then") == [
        "occasionally"
    ]


def test_operation_ids_follow_the_content():
    a = operation_id("duplicate", ["x"], ["t"], [])
    assert a == operation_id("duplicate", ["x"], ["t"], []) and len(a) == 8
    assert a != operation_id("duplicate", ["y"], ["t"], [])


class ToyPlan(Plan):
    """A plan whose result is the list of selected operation numbers."""

    # its own kinds and labels, as a backend registers them (the labels equal the backends', and
    # the first label registered for a kind stays, so the order tests import modules in is moot)
    KINDS = register_kinds(
        {
            "duplicate": "Exact duplicates",
            "near-duplicate": "Near-duplicates (judgement call)",
            "report-only": "Same words, different order (report only)",
        }
    )

    def counts(self, selection=None):
        return Counts("things", len(self.operations), len(self.operations) - len(self.selected(selection)), 1)

    def render(self, selection=None, context=3):
        return ",".join(str(op.number) for op in self.selected(selection))

    def check_fresh(self):
        return None  # a toy plan is computed from nothing that could change

    def replan(self):
        return self

    def apply(self, selection=None):
        raise AssertionError("the model tests never apply a toy plan")


@pytest.fixture
def toy():
    ops = [
        make_operation("near-duplicate", ["a"], ["A"], [], "judgement"),
        make_operation("duplicate", ["b"], ["B"], [], "safe", selected=True),
        make_operation("report-only", ["c"], ["C"], [], "report", applicable=False),
        make_operation("duplicate", ["d"], ["D"], [], "safe too", selected=True),
    ]
    return ToyPlan(ops, subject="toy")


def test_operations_are_ordered_by_kind_and_numbered(toy):
    assert [op.kind for op in toy.operations] == ["duplicate", "duplicate", "near-duplicate", "report-only"]
    assert [op.number for op in toy.operations] == [1, 2, 3, 4]
    assert [g.label for g in toy.groups()] == [
        "Exact duplicates",
        "Near-duplicates (judgement call)",
        "Same words, different order (report only)",
    ]


def test_selection_specs(toy):
    assert toy.render() == "1,2"
    assert toy.render("all") == "1,2,3"
    assert toy.render("none") == ""
    assert toy.render("safe,+3,-1") == "2,3"
    assert toy.render("3,1") == "1,3"
    third = toy.operations[2].id
    assert toy.render(third[:5]) == "3" and toy.render([third]) == "3"
    with pytest.raises(InvalidInput):
        toy.select("4")  # report only
    with pytest.raises(NotFound):
        toy.select("9")
    with pytest.raises(NotFound):
        toy.select("deadbeef")
    with pytest.raises(InvalidInput):
        toy.select("1,safe")


def test_counts(toy):
    counts = toy.counts()
    assert counts.describe() == "4 → 2 things (target 1; 1 more to choose by hand)"
    assert counts.remaining == 1 and not counts.reached
    assert Counts("lines", 10, 5, 8).describe() == "10 → 5 lines (target 8; reached)"
    assert toy.summary() == "toy: 2 of 4 operations selected · 4 → 2 things (target 1; 1 more to choose by hand)"
    obj = toy.to_obj()
    assert obj["selection"] == [toy.operations[0].id, toy.operations[1].id] and obj["diff"] == "1,2"


def test_journal_skips_torn_lines(tmp_path):
    history = History(tmp_path / "h")
    journal = UndoJournal(history)
    (tmp_path / "h").mkdir()
    with open(journal.path, "wb") as fh:
        fh.write(b'{"event":"applied","id":"1","target":"t","applied":{"kind":"x"}}\n{"event":"appl')
    assert [e["id"] for e in journal.entries()] == ["1"]
    journal.mark_undone("1")
    assert journal.last("t") is None
