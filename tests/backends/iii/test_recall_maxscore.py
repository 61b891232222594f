"""MaxScore in the recall walk (issue 15): once a threshold is known, the documents holding only common
terms whose bounds cannot reach it are never bounded, and the ranking stays the naive spec's."""

from __future__ import annotations

import random

import pytest

from keepgui.backends.iii import recall as recall_module
from keepgui.backends.iii.index import BankIndex
from tests.backends.iii.test_recall import DAY, NOW, index_of, mem, ranked, reference_recall

VOCAB = ["user", "the", "prefers", "tea", "api", "port", "blog", "mike", "writes", "docs", "team"]


def bank(count: int, oldest_days: int, youngest_days: int, seed: int = 5):
    rng = random.Random(seed)
    records = {}
    for i in range(count):
        text = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(2, 7))) + f" n{i}"
        m = mem(
            text,
            rng.sample(["user", "mike", "api"], rng.randint(0, 2)),
            pinned=rng.random() < 0.02,
            corr=rng.randint(0, 6),
            updated=NOW - rng.randint(youngest_days * DAY, oldest_days * DAY),
            mid=f"fp{i:05d}",
        )
        records[m.id] = m
    return records


@pytest.mark.parametrize(("oldest", "youngest"), [(365, 0), (40, 0)])
def test_rankings_equal_the_naive_spec_with_maxscore_in_play(oldest, youngest):
    """Over a year and in a month: the walk with its windows, and MaxScore inside them."""
    records = bank(4000, oldest, youngest)
    index = index_of(*records.values())
    for query in ["who is the user", "what tea do I like", "the api port", "mike writes the docs", "n17 user"]:
        for limit in (1, 6, 40):
            assert ranked(index, query, limit) == reference_recall(list(records.values()), query, limit)


def test_on_the_recency_floor_holders_of_only_weak_terms_are_never_bounded(monkeypatch):
    """Every memory older than the floor's age: each window after the first covers every day left, so
    without MaxScore every holder of a query term would be bounded."""
    monkeypatch.setattr(recall_module, "_GATHER", 300)
    monkeypatch.setattr(recall_module, "_SEED", 200)
    records = bank(4000, 900, 400)
    index = index_of(*records.values())
    groups: list[set[int]] = []
    real = BankIndex.add_docs

    def add_docs(self, group, terms):
        groups.append(set(group))
        return real(self, group, terms)

    monkeypatch.setattr(BankIndex, "add_docs", add_docs)
    left_out = 0
    for query in ["who is the user", "the api port", "mike writes the docs", "the tea the blog"]:
        for limit in (1, 6, 40):
            groups.clear()
            assert ranked(index, query, limit) == reference_recall(list(records.values()), query, limit)
            holders = index.postings(index.query_terms(query.split()))
            left_out += len(holders - set().union(*groups))
    assert left_out, "MaxScore never left a document out: the test does not exercise it"
