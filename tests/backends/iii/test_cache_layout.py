"""What makes a cached command quick (issue 15), held to the slow way's answers: the once-held postings
restored packed and unpacked only for the terms a query looks up, and ``memories --json`` writing its
first slice before it sorts every record."""

from __future__ import annotations

import argparse
import io
import os

import pytest

from keepgui.backends.iii.cache import LogCache
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine
from keepgui.backends.iii.index import BankIndex, pack_postings, unpack_postings
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.record import Memory
from keepgui.backends.iii.store import Bank, DataDir
from keepgui.commands import iii as iii_commands
from tests.bench.synth import make_bank

NOW = 1_767_000_000_000


@pytest.fixture
def data_dir(tmp_path):
    make_bank(str(tmp_path / "data" / "bank"), memories=1200, lines=3000, seed=5)
    return tmp_path / "data"


def test_packed_postings_round_trip_and_refuse_parts_that_disagree():
    postings = {"alpha": {3, 1, 2}, "beta": {7}, "gamma": set(range(40, 90))}
    packed = pack_postings(postings)
    restored = unpack_postings(*packed)
    assert restored is not None and {term: restored[term] for term in postings} == postings
    assert "delta" not in restored and restored.get("delta", ()) == () and packed[0] == ["alpha", "beta", "gamma"]
    with pytest.raises(KeyError):
        restored["delta"]
    again = unpack_postings(*pack_postings(restored))  # packed again, some terms unpacked and some not
    assert again is not None and {term: again[term] for term in postings} == postings
    # what the index does to postings as records change: delete a packed term, add a new one
    lazy = unpack_postings(*packed)
    assert lazy is not None
    del lazy["beta"]
    lazy["delta"] = {5}
    lazy["gamma"].add(91)
    assert "beta" not in lazy and lazy.get("beta") is None and lazy["delta"] == {5}
    assert dict(lazy.items()).keys() == {"alpha", "gamma", "delta"}
    with pytest.raises(KeyError):
        del lazy["beta"]
    terms, ends, slots = packed
    assert unpack_postings(terms[:-1], ends, slots) is None  # a term missing
    assert unpack_postings(terms, ends, slots[:-4]) is None  # slots cut short
    assert unpack_postings(terms, ends[:-1], slots) is None  # not whole int64s
    assert unpack_postings(["alpha", "alpha", "gamma"], ends, slots) is None  # a term twice
    assert unpack_postings(["gamma", "beta", "alpha"], ends, slots) is None  # not sorted


def test_a_restored_index_unpacks_only_the_terms_a_query_touches(tmp_path, data_dir):
    bank = DataDir(str(data_dir)).bank("bank")
    engine = BankEngine(bank, MemoryConfig())
    cache = LogCache(bank.log, engine.index, folder=str(tmp_path / "cache"))
    engine.refresh()
    expected = engine.preview("deploy the staging database", now_ms=NOW).to_json(notice=True)
    assert cache.save()

    again = DataDir(str(data_dir)).bank("bank")
    warm = BankEngine(again, MemoryConfig())
    assert LogCache(again.log, warm.index, folder=str(tmp_path / "cache")).load()
    warm.refresh()
    ones = warm.index._ones
    assert ones.looked_up() == 0  # nothing unpacked yet
    assert warm.preview("deploy the staging database", now_ms=NOW).to_json(notice=True) == expected
    assert 0 < ones.looked_up() <= 4 < len(list(ones.items()))
    # A restored index written out again (after an append) keeps every posting, unpacked or not.
    state = warm.index.snapshot()
    assert state is not None
    rebuilt = BankIndex(MemoryLog(again.log.path))
    rebuilt.log.refresh()  # type: ignore[union-attr]
    rebuilt.ensure_current()
    packed = state.ones.unpack()
    assert packed is not None
    terms = sorted(packed.keys())
    assert terms == sorted(rebuilt._ones) and len(terms) > 100
    assert {term: sorted(rebuilt._ones[term]) for term in terms} == {term: sorted(packed[term]) for term in terms}


@pytest.mark.parametrize(("history", "tagged"), [(False, False), (True, False), (False, True), (True, True)])
def test_the_first_slice_is_the_sorted_listing_s_head(data_dir, history, tagged):
    bank = DataDir(str(data_dir)).bank("bank")
    tag = bank.tags()[1][0] if tagged else None
    rows = bank.memories(history=history, tag=tag)
    assert rows, "the fixture bank must list something"
    for limit in (1, 7, len(rows) - 1, len(rows), len(rows) + 5):
        assert bank.first_memories(limit, history=history, tag=tag) == rows[:limit]


def test_ties_on_updated_at_are_broken_by_id_in_the_first_slice(tmp_path):
    from keepgui.core import fsio

    folder = tmp_path / "bank"
    folder.mkdir()
    same = [
        Memory(
            id=f"m{n:03d}",
            text=f"memory {n}",
            entities=(),
            tags=(),
            confidence="stated",
            corroboration=0,
            pinned=False,
            created_at=5,
            updated_at=10 if n % 2 else 20,
            revision=1,
        )
        for n in (9, 3, 7, 1, 4, 8)
    ]
    fsio.append_lines(str(folder / "memories.jsonl"), [m.to_line() for m in same])
    bank = DataDir(str(tmp_path)).bank("bank")
    assert (
        [m.id for m in bank.first_memories(4)]
        == ["m004", "m008", "m001", "m003"]
        == [m.id for m in bank.memories()[:4]]
    )


def test_memories_json_writes_its_first_slice_before_sorting_everything(tmp_path, data_dir, monkeypatch):
    written: list[str] = []

    class Out(io.StringIO):
        def flush(self) -> None:
            written.append(self.getvalue())

    sorted_after: list[int] = []
    real = Bank.memories

    def memories(self, history=False, tag=None):
        sorted_after.append(len(written))
        return real(self, history, tag)

    monkeypatch.setattr(Bank, "memories", memories)
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "home"))
    out = Out()
    from keepgui.cli import Context

    args = argparse.Namespace(data_dir=str(data_dir), bank="bank", history=True, tag=None, json=True)
    ctx = Context(args, stdout=out, stderr=io.StringIO())
    assert iii_commands.cmd_memories(args, ctx) == 0
    assert sorted_after == [1] and written[0].count("\n") == iii_commands._JSON_SLICE
    lines = out.getvalue().splitlines()
    bank = DataDir(str(data_dir)).bank("bank")
    assert lines == [bank.log.raw_line(m.id) or m.to_json() for m in real(bank, True)]


def test_a_verified_cache_writes_the_listing_head_before_decoding_the_state(tmp_path, data_dir, monkeypatch):
    from keepgui.backends.iii import cache as cache_module
    from keepgui.cli import Context

    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "home"))
    args = argparse.Namespace(data_dir=str(data_dir), bank="bank", history=False, tag=None, json=True)
    cold = io.StringIO()
    assert iii_commands.cmd_memories(args, Context(args, stdout=cold, stderr=io.StringIO())) == 0  # writes it

    written: list[str] = []

    class Out(io.StringIO):
        def flush(self) -> None:
            written.append(self.getvalue())

    decoded_after: list[int] = []
    real = cache_module._decode_state

    def decode_state(body):
        decoded_after.append(len(written))
        return real(body)

    monkeypatch.setattr(cache_module, "_decode_state", decode_state)
    warm = Out()
    assert iii_commands.cmd_memories(args, Context(args, stdout=warm, stderr=io.StringIO())) == 0
    assert decoded_after == [1] and written[0].count("\n") == cache_module.LISTING_HEAD
    assert warm.getvalue() == cold.getvalue()


def test_the_listing_head_is_not_used_once_anything_was_appended(tmp_path, data_dir, monkeypatch):
    from keepgui.cli import Context

    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "home"))
    args = argparse.Namespace(data_dir=str(data_dir), bank="bank", history=False, tag=None, json=True)
    assert iii_commands.cmd_memories(args, Context(args, stdout=io.StringIO(), stderr=io.StringIO())) == 0
    bank = DataDir(str(data_dir)).bank("bank")
    newest = bank.memories()[0]
    newer = Memory(**{**newest.to_obj(), "id": "fpnewest", "updated_at": newest.updated_at + 1, "revision": 1})
    log = os.path.join(str(data_dir), "bank", "memories.jsonl")
    with open(log, "ab") as fh:
        fh.write(newer.to_line().rstrip(b"\n"))  # a last line without its newline: the worker reads it
    assert LogCache(MemoryLog(log)).verified_listing_head() is None
    out = io.StringIO()
    assert iii_commands.cmd_memories(args, Context(args, stdout=out, stderr=io.StringIO())) == 0
    fresh = DataDir(str(data_dir)).bank("bank")
    assert out.getvalue().split("\n", 1)[0] == newer.to_json()
    assert out.getvalue() == fresh.log.json_lines(fresh.memories())
