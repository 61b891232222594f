"""The worker's mutation semantics (spec §5.2–§5.7, §6.1 "Save transition") and keepgui's restore."""

from __future__ import annotations

import pytest

from keepgui.backends.iii import writes as mut
from keepgui.backends.iii.record import Memory, fingerprint, normalize_labels
from keepgui.core.errors import InvalidInput, NotFound
from tests.memories import memory


def record(text="the api port is 3000", **kw) -> Memory:
    return memory(text, **{"created_at": 10, "updated_at": 10, **kw})


def test_fresh_save_vector():
    t = mut.save_transition(
        None, "  Mike writes a blog  ", [" Mike ", "", "BLOG"], [" Intro "], pinned=True, session_id="s_1", now=5
    )
    m = t.record
    assert (t.created, t.event) == (True, "created")
    assert m.revision == 0 and m.entities == ("mike", "blog") and m.tags == ("intro",)
    assert m.pinned and m.source.session_id == "s_1" and m.confidence == "stated"
    assert m.text == "Mike writes a blog" and m.id == fingerprint("Mike writes a blog")
    assert m.created_at == m.updated_at == 5 and m.corroboration == 0


def test_entities_capped_at_eight():
    t = mut.save_transition(None, "many entities", [f"e{i}" for i in range(12)], now=1)
    assert t.record.entities == tuple(f"e{i}" for i in range(8))
    assert normalize_labels(["A", " ", "b "]) == ["a", "b"]


def test_live_resave_vector():
    old = record(revision=4, corroboration=2, pinned=True, tags=[])
    t = mut.save_transition(old, old.text, tags=["fresh-tag"], pinned=False, now=99)
    m = t.record
    assert (m.revision, m.corroboration, m.pinned, m.tags, m.updated_at) == (5, 3, True, ("fresh-tag",), 99)
    assert (t.created, t.event) == (False, "updated")
    assert m.text == old.text and m.created_at == old.created_at


def test_resave_keeps_original_text_and_caps_tags():
    old = record("User Prefers   Tea", tags=[f"t{i}" for i in range(7)])
    t = mut.save_transition(old, "user prefers tea", tags=["t0", "new1", "new2"], now=20)
    assert t.record.text == "User Prefers   Tea"
    assert t.record.tags == tuple([f"t{i}" for i in range(7)] + ["new1"])


def test_retired_resave_resurrects():
    old = record(revision=7, invalid_at=50, superseded_by="fpother", updated_at=50)
    t = mut.save_transition(old, old.text, now=60)
    assert t.record.revision == 8 and t.record.invalid_at is None and t.record.superseded_by is None
    assert (t.created, t.event) == (True, "created")


@pytest.mark.parametrize("text", ["ab", "  ab  ", "x" * 2001, "é" * 1001])
def test_text_limits_are_bytes(text):
    with pytest.raises(InvalidInput, match=r"3\.\.2000"):
        mut.save_transition(None, text)


def test_text_limit_boundaries():
    assert mut.save_transition(None, "abc", now=1).record.text == "abc"
    assert mut.save_transition(None, "é" * 1000, now=1).record.text == "é" * 1000  # 2000 bytes


def test_update_replaces_fields_and_always_bumps():
    old = record(entities=["a"], tags=["b"])
    t = mut.update_transition(old, old.id, now=30)
    assert t.record.revision == 1 and t.record.updated_at == 30 and t.record.text == old.text
    t = mut.update_transition(old, old.id, text="  the api port is 4000 ", entities=[], tags=["X"], now=31)
    assert t.record.text == "the api port is 4000" and t.record.id == old.id
    assert t.record.entities == () and t.record.tags == ("x",)
    with pytest.raises(NotFound):
        mut.update_transition(None, "fpmissing")
    retired = record(invalid_at=5)
    assert mut.update_transition(retired, retired.id, pinned=True, now=9).record.invalid_at == 5


def test_delete_and_its_noop():
    old = record(revision=3)
    t = mut.delete_transition(old, old.id, now=40)
    assert t.record.invalid_at == 40 and t.record.updated_at == 40 and t.record.revision == 4
    assert t.record.superseded_by is None and t.event == "deleted"
    assert mut.delete_transition(t.record, old.id, now=41).record is None


def test_supersede_errors_in_the_workers_order():
    winner = record("winner text")
    loser = record("loser text")
    with pytest.raises(InvalidInput, match="cannot supersede itself"):
        mut.supersede_transition(loser, loser.id, loser, loser.id)
    with pytest.raises(NotFound):
        mut.supersede_transition(None, "fpnope", None, "fpalsono")  # winner checked first
    with pytest.raises(InvalidInput, match="is not a live memory"):
        mut.supersede_transition(None, "fpnope", winner.replace(invalid_at=1), winner.id)
    with pytest.raises(NotFound):
        mut.supersede_transition(None, "fpnope", winner, winner.id)
    with pytest.raises(InvalidInput, match="pinned"):
        mut.supersede_transition(loser.replace(pinned=True, invalid_at=3), loser.id, winner, winner.id)
    with pytest.raises(InvalidInput, match="already retired"):
        mut.supersede_transition(loser.replace(invalid_at=3), loser.id, winner, winner.id)
    t = mut.supersede_transition(loser, loser.id, winner, winner.id, now=70)
    assert (t.record.invalid_at, t.record.superseded_by, t.record.revision, t.event) == (70, winner.id, 1, "superseded")


def test_restore_clears_retirement_only():
    old = record(revision=2, invalid_at=5, superseded_by="fpw", corroboration=3, pinned=True, tags=["k"])
    t = mut.restore_transition(old, old.id, now=80)
    assert t.record == old.replace(invalid_at=None, superseded_by=None, updated_at=80, revision=3)
    assert mut.restore_transition(t.record, old.id).record is None


def test_revert_writes_earlier_content_on_top():
    v0 = record()
    v1 = mut.update_transition(v0, v0.id, text="the api port is 4000", now=20).record
    back = mut.revert_transition(v1, v0).record
    assert back == v0.replace(revision=2)  # its updated_at too: the worker's recency is as it was (#23.8)
