"""The word index's numpy answer (TextSearch.find over a frozen layout) is exactly its dict answer
(TextSearch.search, the plain rule) at every keystroke, after changes made since the freeze, and
costs no Python step per key found."""

from __future__ import annotations

import numpy as np
import pytest

from keepgui.core.search import Found, TextSearch, word_score, words_of
from tests.bench.synth import make_records
from tests.calls import counting_calls

QUERIES = [
    "grafana dashboards",
    "mike prefers po",
    "postgres 16",
    "the lisbon office ",
    "kubernetes",
    "grafna dashbord",  # typos
    "mike mike",  # a term twice
    "1",  # a digit prefix: many number words
    "zzzz nothing",
    "Lisbon OFFICE",  # case-folded
]


def texts(row) -> tuple[str, ...]:
    return (row.text, *row.tags, *row.entities)


@pytest.fixture(scope="module")
def bank():
    rows = list({m.id: m for m in make_records(4000, 6000, seed=5)}.values())
    index: TextSearch[str] = TextSearch()
    index.set_many((r.id, texts(r)) for r in rows)
    index.freeze()
    return rows, index


def assert_same(index: TextSearch[str], query: str) -> None:
    want = index.search(query)
    got = index.find(query)
    assert dict(got) == want, query  # the same keys with the same float scores, to the last bit
    assert len(got) == len(want)
    assert list(got.scores) == [want[k] for k in got], query
    assert np.all(np.diff(got.slots) > 0)


def test_find_gives_exactly_the_keys_and_scores_of_search_at_every_keystroke(bank):
    _rows, index = bank
    for query in QUERIES:
        for n in range(len(query) + 1):
            assert_same(index, query[:n])
    assert len(index.find("kubernetes")) > 0 and len(index.find("grafna dashbord")) > 0


def test_changes_since_the_freeze_are_answered_exactly_and_a_freeze_takes_them_in():
    rows = list({m.id: m for m in make_records(1500, 2000, seed=9)}.values())
    index: TextSearch[str] = TextSearch()
    index.set_many((r.id, texts(r)) for r in rows)
    index.freeze()
    assert index.changed_since_freeze == 0
    index.set("new-1", "grafanology of the lisbonian kubernetes")  # new words, a new key
    index.set(rows[0].id, "mike now prefers zebras")  # a key's words changed
    index.remove(rows[1].id)
    index.remove("never-there")
    index.set(rows[2].id, *texts(rows[2]))  # the same words: no change
    assert index.changed_since_freeze == 3
    for query in ["grafan", "lisbon", "zebra", "mike pref", "kubernetes", "zebras ", "grafanology"]:
        for n in range(len(query) + 1):
            assert_same(index, query[:n])
    assert "new-1" in index.find("grafanolo") and rows[0].id in index.find("zebr")
    assert rows[1].id not in index.find(rows[1].text.split()[0])
    index.freeze()
    assert index.changed_since_freeze == 0
    for query in ["grafan", "zebra", "mike pref"]:
        assert_same(index, query)


def test_a_never_frozen_index_freezes_itself_and_an_empty_one_finds_nothing():
    index: TextSearch[int] = TextSearch()
    assert len(index.find("anything")) == 0
    index.set(7, "Postgres 16 on port 5432")
    index.set(8, "postgresql tuning")
    assert dict(index.find("postg")) == index.search("postg") == {7: 95.0, 8: 95.0}
    assert dict(index.find("postgres")) == {7: 100.0, 8: 95.0}
    assert len(index.find("   ")) == 0


def test_found_reads_as_the_mapping_search_returns(bank):
    _rows, index = bank
    found = index.find("lisbon")
    want = index.search("lisbon")
    key = next(iter(want))
    assert isinstance(found, Found)
    assert found.get(key) == want[key] and key in found and found == want
    assert found.get("not a key") is None and "not a key" not in found
    assert set(found.keys()) == set(want)


def test_word_score_is_the_rule_term_matches_applies_to_the_vocabulary(bank):
    _rows, index = bank
    for term, typing in [("graf", True), ("grafana", False), ("grafna", False), ("lisb", True), ("16", True)]:
        matches = index.term_matches(term, typing)
        for word in index._vocabulary():
            assert word_score(term, typing, word) == matches.get(word, 0.0), (term, word)


def test_find_makes_no_python_call_per_key_found(bank):
    _rows, index = bank

    def calls(query: str) -> tuple[int, int]:
        found, count = counting_calls(lambda: index.find(query))
        return count, len(found)

    many_calls, many = calls("t")
    few_calls, few = calls("lisbon office")
    assert many > 1000 and few < many / 4, (many, few)
    assert abs(many_calls - few_calls) < 200, (many_calls, few_calls)


def test_words_of_folds_case_and_splits_on_anything_but_letters_and_digits():
    assert words_of("Grafana-Dashboards, port 3000!") == ["grafana", "dashboards", "port", "3000"]
