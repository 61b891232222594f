"""Big banks are ranked over numpy arrays (issue 32): the very hits of the scalar walk, to the bit.

The scalar walk (``recall._best_live``) is the oracle: every comparison is of the memories, their
order, their scores and the parts of each score, over banks with ties, pins, retired memories and
unicode, questions empty, of one term or many, through edits, overlays and a restore from the cache.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from keepgui.backends.iii import recall as recall_module
from keepgui.backends.iii.index import BankIndex
from keepgui.backends.iii.lazy import PackedRuns
from keepgui.backends.iii.recall import query_tokens, recall
from tests.backends.iii.test_cache_lazy import _restored, cached_bank
from tests.backends.iii.test_recall import DAY, NOW, index_of, mem, reference_recall

VOCAB = [
    "user", "the", "prefers", "tea", "api", "port", "blog", "mike", "writes", "docs", "team", "café",
    "straße", "naïve", "東京", "deploy", "kubernetes", "grafana", "lisbon", "dark", "mode",
]  # fmt: skip
ENTITIES = ["user", "mike", "api", "Café Lisbon", "東京", "team"]
QUESTIONS = [
    "",
    "the",
    "what",
    "zzz unknown words",
    "tea",
    "who is the user",
    "what tea do I like",
    "the api port",
    "mike writes the docs",
    "the the the user user api",
    "Café lisbon",
    "STRASSE straße naïve",
    "東京 deploy",
    "n17 user",
    "n3 n4 n5 n6",
    "does the team use kubernetes with grafana in dark mode",
    "my blog",
]
LIMITS = (1, 3, 6, 40, 100)
INSTANTS = ((NOW, 30), (NOW, 1), (NOW, 365), (NOW + 900 * DAY, 30), (NOW - 200 * DAY, 7))


def bank(count: int, seed: int = 7) -> dict[str, object]:
    """Memories over a year: pins, corroboration, retired ones, twins that tie to the bit (same text,
    entities and instant under other ids), a few updated in the future."""
    rng = random.Random(seed)
    records = {}
    for i in range(count):
        text = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 9))) + f" n{i % 500}"
        updated = NOW - rng.choice([0, 0, rng.randint(0, 3 * DAY), rng.randint(0, 365 * DAY), -rng.randint(0, DAY)])
        entities = rng.sample(ENTITIES, rng.randint(0, 3))
        pinned, corr = rng.random() < 0.03, rng.choice([0, 0, 0, 1, 2, 5, 40])
        invalid = updated if rng.random() < 0.05 else None
        for twin in range(1 + (rng.random() < 0.1)):
            m = mem(text, entities, pinned=pinned, corr=corr, updated=updated, invalid=invalid, mid=f"m{i:05d}-{twin}")
            records[m.id] = m
    return records


def hits_of(hits):
    return [(hit.memory.id, hit.score, hit.parts) for hit in hits]


def assert_same(index: BankIndex, questions=QUESTIONS, limits=LIMITS, instants=INSTANTS) -> int:
    """The arrays' hits are the walk's for every question, limit and instant; returns how many hits."""
    seen = 0
    for question in questions:
        tokens = query_tokens(question)
        for limit in limits:
            for now, half in instants:
                arrays = index.rank_arrays().best_live(tokens, set(tokens), limit, now, half)
                walk = recall_module._best_live(index, tokens, set(tokens), limit, now, half)
                assert hits_of(arrays) == hits_of(walk), (question, limit, now, half)
                seen += len(walk)
    return seen


@pytest.fixture(scope="module")
def records():
    return bank(3000)


def test_the_arrays_rank_as_the_walk_does(records):
    index = index_of(*records.values())
    assert assert_same(index) > 1000
    ties = recall(index, "tea", 100, now_ms=NOW, half_life_days=30)
    assert len({h.score for h in ties}) < len(ties)  # twins tie: the order is updated_at, then id


def test_and_as_the_naive_spec_does(records, monkeypatch):
    monkeypatch.setattr(recall_module, "ARRAYS_FROM", 0)
    index = index_of(*records.values())
    for question in QUESTIONS:
        for limit in (1, 6, 40):
            hits = recall(index, question, limit, now_ms=NOW, half_life_days=30)
            assert [(h.memory.id, h.score) for h in hits] == reference_recall(list(records.values()), question, limit)


def test_big_banks_take_the_arrays_small_ones_the_walk(records, monkeypatch):
    index = index_of(*records.values())
    recall(index, "tea", 6, now_ms=NOW, half_life_days=30)
    assert index._arrays is None
    monkeypatch.setattr(recall_module, "ARRAYS_FROM", len(records) // 2)
    recall(index, "tea", 6, now_ms=NOW, half_life_days=30)
    assert index._arrays is not None


def test_a_first_question_without_numpy_imported_takes_the_walk(records, monkeypatch):
    """A command's single question is not worth numpy's import; the next question of the index is."""
    monkeypatch.setattr(recall_module, "ARRAYS_FROM", 0)
    monkeypatch.setattr(recall_module, "sys", SimpleNamespace(modules={}))  # numpy not imported
    index = index_of(*records.values())
    recall(index, "tea", 6, now_ms=NOW, half_life_days=30)
    assert index._arrays is None
    recall(index, "tea", 6, now_ms=NOW, half_life_days=30)
    assert index._arrays is not None


def test_a_first_question_of_a_very_big_bank_takes_the_arrays_without_numpy_imported(records, monkeypatch):
    """At a million memories the walk of a command's single question (0.1-1 s) costs more than numpy's
    import and the arrays (~0.1 s): from COLD_ARRAYS_FROM live memories the first question takes them."""
    monkeypatch.setattr(recall_module, "ARRAYS_FROM", 0)
    monkeypatch.setattr(recall_module, "sys", SimpleNamespace(modules={}))  # numpy not imported
    monkeypatch.setattr(recall_module, "COLD_ARRAYS_FROM", len(records) + 1)
    index = index_of(*records.values())
    recall(index, "tea", 6, now_ms=NOW, half_life_days=30)
    assert index._arrays is None
    monkeypatch.setattr(recall_module, "COLD_ARRAYS_FROM", index.n)
    index = index_of(*records.values())
    recall(index, "tea", 6, now_ms=NOW, half_life_days=30)
    assert index._arrays is not None


def test_the_arrays_follow_edits_and_overlays(records):
    index = index_of(*records.values())
    assert_same(index, limits=(6,), instants=INSTANTS[:2])
    rng = random.Random(3)
    ids = sorted(records)
    for step in range(60):
        mid = rng.choice(ids)
        old = index.records.get(mid)
        kind = step % 6
        if kind == 0:  # a new memory
            new = mem(f"tea user {step} café", ["user"], updated=NOW - step * 1000, mid=f"new{step}")
            index.set(new.id, new)
        elif kind == 1 and old is not None:  # the text changes
            index.set(mid, old.replace(text=old.text + " tea the api", updated_at=NOW - step))
        elif kind == 2 and old is not None:  # a pin: the same document, other signals
            index.set(mid, old.replace(pinned=not old.pinned, corroboration=old.corroboration + 3))
        elif kind == 3 and old is not None:  # retired, then back
            index.set(mid, old.replace(invalid_at=NOW))
        elif kind == 4 and old is not None:  # forgotten
            index.set(mid, None)
        elif old is not None:
            with index.overlay({mid: old.replace(text="tea tea tea user", pinned=True), "what-if": mem("the api")}):
                assert_same(index, questions=["tea user", "the api port"], limits=(3,), instants=INSTANTS[:1])
        if step % 5 == 0:
            assert_same(index, questions=QUESTIONS[4:10], limits=(1, 6), instants=INSTANTS[:2])
    assert_same(index, limits=(1, 6, 40), instants=INSTANTS[:3])


def test_many_slots_changed_take_the_columns_again_and_few_postings_are_kept(records, monkeypatch):
    from keepgui.backends.iii import rankarrays

    monkeypatch.setattr(rankarrays, "_PATCH_MAX", 10)
    monkeypatch.setattr(rankarrays, "_KEPT", 0)  # only the last term asked for is kept
    index = index_of(*records.values())
    assert_same(index, questions=["tea user"], limits=(6,), instants=INSTANTS[:1])
    for mid in sorted(records)[:100]:
        old = index.records[mid]
        index.set(mid, old.replace(pinned=True, updated_at=NOW - 5))
    assert_same(index, questions=QUESTIONS[4:10], limits=(6,), instants=INSTANTS[:2])
    assert len(index.rank_arrays()._terms) == 1


def test_a_restored_index_ranks_from_its_packed_postings(tmp_path):
    index = _restored(*cached_bank(tmp_path, 4)).index
    assert isinstance(index._ones, PackedRuns)
    now = max(m.updated_at for m in index.records.values())
    questions = ["what does the user prefer for writing", "tell me about Mike", "deploy the staging database"]
    tokens = query_tokens(questions[0])
    index.rank_arrays().best_live(tokens, set(tokens), 6, now, 30)
    assert index._ones.looked_up() == 0  # the packed runs were read as arrays, no set made
    assert assert_same(index, questions=questions, limits=(1, 6, 40), instants=((now, 30), (now, 3))) > 0


def test_postings_are_ordered_as_a_sort_would_order_them():
    """A term's postings placed by a mask over every slot (a term many slots hold), sorted (a few), or
    taken as they are (already ascending): always the slots ascending with their own values."""
    import numpy as np

    from keepgui.backends.iii.rankarrays import _sorted

    rng = np.random.default_rng(3)
    size = 5000
    for count in (0, 1, 7, 300, 312, 313, 2000, 5000):
        slots = rng.permutation(size)[:count].astype(np.int32)
        values = rng.integers(0, 9, count).astype(np.int32)  # zeros too: the mask does not read them
        order = np.argsort(slots, kind="stable")
        for given in (slots, slots[order]):
            got, got_values = _sorted(given, values if given is slots else values[order], size)
            assert got.dtype == np.int32 and got_values.dtype == np.int32
            assert np.array_equal(got, slots[order]) and np.array_equal(got_values, values[order]), count


def test_postings_by_day_newest_first_keep_their_order_within_a_day():
    import numpy as np

    from keepgui.backends.iii.rankarrays import _newest_first

    rng = np.random.default_rng(4)
    for span in (1, 366, 65_535, 65_536, 10**7):
        days = rng.integers(20_000, 20_000 + span, 3000).astype(np.int64)
        order, later = _newest_first(days)
        expected = np.argsort(-days, kind="stable")
        assert np.array_equal(order, expected) and np.array_equal(later, -days[expected]), span
    order, later = _newest_first(np.zeros(0, dtype=np.int64))
    assert len(order) == 0 and len(later) == 0


def test_columns_and_runs_are_read_at_once_as_the_numbers_they_hold():
    from array import array

    import numpy as np

    from keepgui.backends.iii.rankarrays import _int64s, _ints

    days = array("q", [20_000, -3, 2**40])
    assert _int64s(days).tolist() == list(days) and _int64s(days).dtype == np.int64
    assert _int64s(days[1:]).tolist() == list(days[1:]) and _int64s([5, 6]).tolist() == [5, 6]
    copied = _int64s(days)
    days[0] = 1  # a copy: the index's own column changes after it
    assert copied[0] == 20_000
    packed = array("i", [7, 3, 9]).tobytes()
    run = memoryview(packed).cast("i")
    assert _ints(run).tolist() == [7, 3, 9] and np.shares_memory(_ints(run), np.frombuffer(packed, np.int32))
