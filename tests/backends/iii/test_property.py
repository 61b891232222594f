"""Random mutation sequences through the store agree with an independent model of the worker.

The model (``tests/reliability/model.py``) is written from the spec alone. For
every generated sequence of saves, reinforcements, resurrections, edits,
pins, deletes, supersedes (their error cases included), restores, batches,
worker-style appends and incremental refreshes, the tests check that:

* keepgui's in-memory state equals the model's after every step;
* the file is byte for byte what the worker would have written;
* a fresh replay (new DataDir, new MemoryLog) equals the incremental state;
* every line parses and re-encodes to its own bytes; revisions per id
  strictly increase in file order;
* a refused mutation writes nothing, and fails with the worker's error.
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from keepgui.backends.iii.log import MemoryLog
from tests.reliability.model import (
    BASE_TEXTS,
    EDGE_VALID_TEXTS,
    INVALID_TEXTS,
    LABELS,
    Mismatch,
    MutationHarness,
    random_mutation_run,
    replay_lines,
    worker_line,
)

# Text the model's str-based rules treat exactly as Rust does: no lone surrogates, and not
# U+001C..U+001F (whitespace to Python, not to Rust; keepgui's textrules handles those).
# Cn: unassigned in Python 3.11's Unicode 14, some are letters the worker lowercases by newer tables,
# which the model (str.lower) does not know; test_tokenize checks those letters against the regex module.
_chars = st.characters(blacklist_categories=("Cs", "Cn"), blacklist_characters="\x1c\x1d\x1e\x1f")


def _variants(text: str):
    return st.sampled_from([text, text.upper(), "  " + text.replace(" ", "   ") + "\t", text.lower() + " "])


# one_of picks its branches uniformly, so repeating a branch is how it gets weight: most
# texts come from a small pool, so that saves reinforce and resurrect existing memories.
_pool = st.sampled_from(BASE_TEXTS[:5]).flatmap(_variants)
texts = st.one_of(
    _pool, _pool, _pool, _pool, st.sampled_from(EDGE_VALID_TEXTS + INVALID_TEXTS), st.text(_chars, max_size=12)
)
labels = st.lists(st.one_of(st.sampled_from(LABELS), st.text(_chars, max_size=6)), max_size=10)
refs = st.integers(-1, 40)
saves = st.tuples(st.just("save"), texts, labels, labels, st.booleans(), st.sampled_from([None, "s_1", "séance"]))
worker_ops = st.one_of(  # what the worker itself can do
    saves,
    st.tuples(
        st.just("update"), refs, st.none() | texts, st.none() | labels, st.none() | labels, st.none() | st.booleans()
    ),
    st.tuples(st.just("pin"), refs, st.booleans()),
    st.tuples(st.just("delete"), refs),
    st.tuples(st.just("supersede"), refs, refs),
)
simple_ops = st.one_of(worker_ops, st.tuples(st.sampled_from(["restore", "reinforce"]), refs))
ops = st.one_of(
    saves,
    saves,
    saves,
    simple_ops,
    simple_ops,
    st.tuples(st.just("batch"), st.lists(simple_ops, min_size=1, max_size=5)),
    st.tuples(st.just("external"), worker_ops),
    st.just(("refresh",)),
    st.tuples(st.just("tick"), st.sampled_from([0, 1, 2, 1000])),
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(ops, min_size=1, max_size=60))
def test_random_mutations_agree_with_the_model(sequence):
    with tempfile.TemporaryDirectory() as tmp:
        harness = MutationHarness(os.path.join(tmp, "memory"))
        for op in sequence:
            harness.run(op)
            harness.check(full=False)
        harness.check(full=True)


@pytest.mark.parametrize("seed", range(6))
def test_seeded_random_walks_agree_with_the_model(seed, tmp_path):
    """The stress run's random walk, short: 400 steps per seed, full checks along the way."""
    result = random_mutation_run(seed, 400, folder=str(tmp_path), check_every=20)
    assert result["mismatches"] == 0, result["first_mismatch"]
    assert result["steps"] == 400 and result["lines"] > 50 and result["refused"] > 0


def test_the_harness_catches_a_planted_bug(tmp_path, monkeypatch):
    """The checks can fail: a delete that forgets to bump the revision is caught."""
    from keepgui.backends.iii import writes as mutations

    real = mutations.delete_transition

    def buggy(existing, memory_id, now=None):
        t = real(existing, memory_id, now)
        return (
            mutations.Transition(t.record.replace(revision=existing.revision), event=t.event, previous=t.previous)
            if t.record
            else t
        )

    monkeypatch.setattr(mutations, "delete_transition", buggy)
    harness = MutationHarness(str(tmp_path / "memory"))
    harness.run(("save", "a memory to delete", [], [], False, None))
    with pytest.raises(Mismatch, match="would append"):
        harness.run(("delete", 0))


def test_refused_mutations_match_the_worker_errors(tmp_path):
    """Each of supersede's six checks, in the worker's order, through the harness."""
    harness = MutationHarness(str(tmp_path / "memory"))
    harness.run(("save", "winner memory", [], [], False, None))
    harness.run(("save", "pinned loser", [], [], True, None))
    harness.run(("save", "plain loser", [], [], False, None))
    ids = sorted(harness.model.records)
    ref = {harness.model.records[i]["text"]: n for n, i in enumerate(ids)}
    for op in [
        ("supersede", ref["winner memory"], ref["winner memory"]),  # itself
        ("supersede", ref["plain loser"], -1),  # winner missing
        ("supersede", -1, ref["winner memory"]),  # loser missing
        ("supersede", ref["pinned loser"], ref["winner memory"]),  # pinned
        ("supersede", ref["plain loser"], ref["winner memory"]),  # ok
        ("supersede", ref["plain loser"], ref["winner memory"]),  # already retired
        ("supersede", ref["winner memory"], ref["plain loser"]),  # winner not live
        ("update", -1, "text", None, None, None),
        ("save", "ab", [], [], False, None),
        ("reinforce", ref["plain loser"]),
    ]:
        harness.run(op)
    harness.check(full=True)
    assert harness.refused == 9


# ---------------------------------------------------------------------- replay and incremental refresh

_ids = ["fp0000000000000001", "fp0000000000000002", "fp0000000000000003"]
record_lines = st.builds(
    lambda mid, rev, text, canonical, extra: (
        worker_line(
            {
                "id": mid,
                "text": text,
                "entities": [],
                "tags": [],
                "confidence": "stated",
                "corroboration": 0,
                "pinned": False,
                "created_at": 1,
                "updated_at": 1 + rev,
                "revision": rev,
            }
        )
        if canonical
        else json.dumps(
            {
                "updated_at": 1 + rev,
                "id": mid,
                "text": text,
                "confidence": "stated",
                "created_at": 1,
                "revision": rev,
                **({"unknown": [1, {"x": None}]} if extra else {}),
            },
            ensure_ascii=extra,
        ).encode()
        + b"\n"
    ),
    st.sampled_from(_ids),
    st.integers(0, 4),
    st.sampled_from(["plain text", "café 日本 🎉", "x" * 300]),
    st.booleans(),
    st.booleans(),
)
other_lines = st.sampled_from(
    [
        b"\n",
        b"   \n",
        b"not json\n",
        b'{"id":"fp1"}\n',
        b"\xe2\x80\xa8\n",
        b'{"id":"fp0000000000000001","text":"x","confidence":"nope","created_at":1,"updated_at":1}\n',
    ]
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(record_lines, record_lines, other_lines), max_size=30),
    st.lists(st.integers(1, 400), max_size=40),
    st.booleans(),
)
def test_incremental_refresh_equals_fresh_replay_for_any_chunking(lines, cuts, torn_end):
    """Appending the log in arbitrary pieces (cut mid-line, mid-character), refreshing after
    each, gives the same state as one fresh replay, and that state follows the merge rule
    with the unterminated last line read as a line (and a piece cut inside a character
    making the bank unloadable until the character is complete)."""
    data = b"".join(lines)
    if torn_end and data:
        data = data[:-1]  # the last line loses its newline: still a line to the worker
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "memories.jsonl")
        follower = MemoryLog(path)
        follower.refresh()
        pos = 0
        for cut in cuts + [len(data)]:
            piece = data[pos : pos + cut]
            pos += len(piece)
            with open(path, "ab") as fh:
                fh.write(piece)
            follower.refresh()
            fresh = MemoryLog(path)
            fresh.refresh()
            assert follower.records == fresh.records
            done = data[:pos]
            pieces = done.split(b"\n")  # the last piece is the unterminated last line (or b"")
            assert {k: v.to_obj() for k, v in fresh.records.items()} == replay_lines(pieces)
            assert (follower.unreadable is None) == (fresh.unreadable is None)
            if fresh.unreadable is None:
                assert (follower.torn_tail is not None) == bool(pieces[-1].decode("utf-8").strip())
            if pos >= len(data):
                break
        assert follower.valid_lines == fresh.valid_lines
        assert [p.line for p in follower.problems] == [p.line for p in fresh.problems]
