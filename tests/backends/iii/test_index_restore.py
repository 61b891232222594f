"""A restored index reads its cache file in place (issue 32): the arrays and postings are views of the
mapped file, no list of every id is made, and the checks that refuse a state whose parts disagree hold
on both paths (plain Python for a small bank, numpy for one big enough to import it anyway)."""

from __future__ import annotations

import random
from array import array

import msgspec
import pytest

from keepgui.backends.iii import index as index_module
from keepgui.backends.iii.cache import LogCache
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine
from keepgui.backends.iii.index import (
    BankIndex,
    CachedIndex,
    CachedIndexView,
    IndexState,
    IndexStateView,
    PackedTerms,
    PackedTermsView,
)
from keepgui.backends.iii.lazy import LazyRecords, PackedRuns, RecordBlock, SlotIds, encode_block
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.store import DataDir
from tests.bench.synth import make_bank, make_records

NOW = 1_767_000_000_000


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("restore")
    make_bank(str(folder / "data" / "bank"), memories=900, lines=2000, seed=11)
    return folder / "data"


def test_the_views_read_the_very_fields_that_are_written():
    for written, read in ((IndexState, IndexStateView), (PackedTerms, PackedTermsView), (CachedIndex, CachedIndexView)):
        assert read.__struct_fields__ == written.__struct_fields__


def _cached_and_restored(
    tmp_path, data_dir, questions: tuple[str, ...] = ()
) -> tuple[list[str], BankEngine, BankEngine]:
    """The bank's previews of ``questions`` from an engine that read the log, that engine, and one restored
    from the cache it saved (refreshed)."""
    bank = DataDir(str(data_dir)).bank("bank")
    engine = BankEngine(bank, MemoryConfig())
    cache = LogCache(bank.log, engine.index, folder=str(tmp_path / "cache"))
    engine.refresh()
    expected = [engine.preview(q, now_ms=NOW).to_json(notice=True) for q in questions]
    assert cache.save()
    again = DataDir(str(data_dir)).bank("bank")
    warm = BankEngine(again, MemoryConfig())
    assert LogCache(again.log, warm.index, folder=str(tmp_path / "cache")).load()
    warm.refresh()
    return expected, engine, warm


def test_a_restored_index_reads_its_arrays_in_the_mapped_file(tmp_path, data_dir):
    expected, engine, warm = _cached_and_restored(tmp_path, data_dir, ("deploy the database", "user tea"))
    bank, again, index = engine.bank, warm.bank, warm.index
    for postings in (index._ones, index._multi, index._ent, index._days):
        assert isinstance(postings._slots.obj, msgspec.Raw)  # type: ignore[attr-defined]  # of the map, no copy
    assert isinstance(index._ids, SlotIds)  # no list of every id
    assert [warm.preview(q, now_ms=NOW).to_json(notice=True) for q in ("deploy the database", "user tea")] == expected
    assert index._slot_of is None
    records = again.log.records
    assert isinstance(records, LazyRecords) and records.packed._ids is None  # no id decoded but the hits'
    assert list(records) == list(bank.log.records) and records.packed._ids is not None  # all, when asked


def _state_and_log(data_dir) -> tuple[IndexState, MemoryLog]:
    log = MemoryLog(str(data_dir / "bank" / "memories.jsonl"))
    index = BankIndex(log)
    index.ensure_current()
    state = index.snapshot()
    assert state is not None
    return state, log


def _restores(state: IndexState, log: MemoryLog) -> bool:
    records = list(log.records.values())
    block, starts = encode_block(records)
    packed = RecordBlock.of(list(log.records), block, starts)
    assert packed is not None
    log.records = LazyRecords(packed)  # as a cache restores it: the records' places are the packed order
    view = msgspec.msgpack.Decoder(IndexStateView).decode(msgspec.msgpack.encode(state))
    index = BankIndex(log)
    return index.restore(view)


@pytest.mark.parametrize("big", [False, True], ids=["plain", "numpy"])
def test_a_state_whose_record_places_disagree_is_refused(data_dir, monkeypatch, big):
    """Every slot's place must be a record's or -1, and the -1s exactly the free slots."""
    if big:
        monkeypatch.setattr(index_module, "COLD_ARRAYS_FROM", 0)
    state, log = _state_and_log(data_dir)
    assert _restores(state, log)
    places = array("i", state.slot_records)
    n = len(log.records)
    for slot, place in ((3, n), (5, -2), (7, -1)):
        bad = array("i", places)
        bad[slot] = place
        assert not _restores(msgspec.structs.replace(state, slot_records=bad.tobytes()), log), (slot, place)
    assert not _restores(msgspec.structs.replace(state, free=[4]), log)  # a free slot that holds a record
    assert not _restores(msgspec.structs.replace(state, dl=state.dl[:-8]), log)  # one slot short
    assert not _restores(msgspec.structs.replace(state, slot_records=state.slot_records[:-1]), log)


def test_a_state_whose_parts_are_not_bytes_is_refused(data_dir):
    state, log = _state_and_log(data_dir)
    assert not _restores(msgspec.structs.replace(state, ones=msgspec.structs.replace(state.ones, slots=None)), log)
    odd = msgspec.structs.replace(state.ones, counts=b"\x00\x00\x00\x00")  # counts where there are none
    assert not _restores(msgspec.structs.replace(state, ones=odd), log)


def test_slot_ids_behave_as_the_list_they_stand_for():
    rng = random.Random(5)
    records = make_records(50, 50, seed=3)
    order = [m.id for m in records]
    block, starts = encode_block(records)
    packed = RecordBlock.of(msgspec.Raw(msgspec.msgpack.encode(order)), block, starts)
    assert packed is not None
    places = array("i", rng.sample(range(50), 40) + [-1] * 5)
    rng.shuffle(places)
    ids = SlotIds(places, packed)
    assert ids[7] == order[places[7]] or places[7] == -1
    assert packed._ids is None  # a slot's id read from its record, the ids not decoded
    plain: list[str | None] = [None if p < 0 else order[p] for p in places]
    assert list(ids) == plain and len(ids) == len(plain) and ids.tolist() == plain
    for step in range(200):
        slot = rng.randrange(len(plain))
        kind = step % 4
        if kind == 0:
            ids[slot] = plain[slot] = None
        elif kind == 1:
            ids[slot] = plain[slot] = f"new{step}"
            if slot < len(places):
                places[slot] = -1  # as the index marks a reused slot's place
        elif kind == 2:
            ids.append(f"more{step}")
            plain.append(f"more{step}")
        else:
            ids[-1] = plain[-1] = f"last{step}"
        assert ids[slot] == plain[slot] and ids[-2] == plain[-2] and len(ids) == len(plain)
    assert ids.tolist() == plain and list(ids) == plain and ids[3:9] == plain[3:9]
    with pytest.raises(IndexError):
        ids[len(plain)]
    with pytest.raises(IndexError):
        ids[-len(plain) - 1]
    with pytest.raises(TypeError):
        del ids[0]
    with pytest.raises(TypeError):
        ids.insert(0, "x")


def test_an_index_file_whose_crc_fails_is_not_restored_though_its_parts_were_read(tmp_path, data_dir, monkeypatch):
    """The index's parts are read while the CRCs are computed; a byte changed in them (msgpack still reads
    it, the checks still pass) is caught by the CRC and the index is built from the log instead."""
    bank = DataDir(str(data_dir)).bank("bank")
    engine = BankEngine(bank, MemoryConfig())
    folder = str(tmp_path / "cache")
    cache = LogCache(bank.log, engine.index, folder=folder)
    engine.refresh()
    expected = engine.preview("deploy the database", now_ms=NOW).to_json(notice=True)
    assert cache.save()
    with open(cache.index_file, "rb") as fh:
        body = bytearray(fh.read())
    body[-len(body) // 3] ^= 0x01  # in the postings' slots: a slot number changed
    with open(cache.index_file, "wb") as fh:
        fh.write(body)
    read: list[object] = []
    real_of = index_module.RestoredParts.of

    def of(state, records):
        parts = real_of(state, records)
        read.append(parts)
        return parts

    monkeypatch.setattr(index_module.RestoredParts, "of", of)
    again = DataDir(str(data_dir)).bank("bank")
    warm = BankEngine(again, MemoryConfig())
    restoring = LogCache(again.log, warm.index, folder=folder)
    assert restoring.load() and not restoring._index_loaded
    assert read and read[0] is not None  # read, and fit, before the CRC said otherwise
    warm.refresh()
    assert not isinstance(warm.index._ones, PackedRuns)  # built from the log
    assert warm.preview("deploy the database", now_ms=NOW).to_json(notice=True) == expected


def test_document_frequencies_of_a_restored_index_follow_its_changes(tmp_path, data_dir):
    """A restored term's document frequency is its packed run's length until the term changes; after a
    ``set`` (kept beside the packed runs) and inside an overlay it is the changed set's: always what an
    index built from the same records says."""
    _expected, _engine, warm = _cached_and_restored(tmp_path, data_dir)
    index = warm.index
    assert isinstance(index._ones, PackedRuns)

    def built() -> BankIndex:
        other = BankIndex()
        other.rebuild(index.records.values())
        return other

    reference = built()
    terms = sorted(reference._ones, key=lambda t: -reference.df(t))[:10] + ["deploy", "tea", "zzz"]
    assert [index.df(t) for t in terms] == [reference.df(t) for t in terms]
    assert index._ones.looked_up() == 0  # counted from the runs, not made sets
    live = [m for m in index.records.values() if m.invalid_at is None]
    common = terms[0]
    index.set(live[0].id, live[0].replace(text=f"{common} {common} tea deploy"))  # once -> twice
    index.set(live[1].id, live[1].replace(text="nothing shared here"))
    index.set(live[2].id, None)
    reference = built()
    assert [index.df(t) for t in terms] == [reference.df(t) for t in terms]
    with index.overlay({"what-if": live[3].replace(id="what-if", text=f"{common} zzz"), live[4].id: None}):
        inside = built()
        assert [index.df(t) for t in terms] == [inside.df(t) for t in terms]
    assert [index.df(t) for t in terms] == [reference.df(t) for t in terms]


def test_a_restored_index_s_top_reads_records_by_their_places(tmp_path, data_dir):
    """The head of ``top_memories`` from a restored index walks the slots' places: neither the id -> slot
    table nor the records' id -> position table is made for it, and it is the head a fresh index gives,
    after an edit, a deletion and a new memory too."""
    _, _engine, warm = _cached_and_restored(tmp_path, data_dir)
    index, records = warm.index, warm.bank.log.records
    index._top, index._top_all = [], False  # as a cache saved before any question needed the head
    everything = len(records) + 10
    head = index.top(everything)
    assert index._slot_of is None and records.packed._positions is None
    fresh = BankIndex()
    fresh.rebuild(dict(records).values())
    assert [m.id for m in head] == [m.id for m in fresh.top(everything)] and index._top_all

    live = [m for m in head if not m.pinned]
    edited = msgspec.structs.replace(live[-1], corroboration=99, revision=live[-1].revision + 1)
    new = msgspec.structs.replace(live[0], id="fp-new-memory-0001", text="a memory written since", revision=0)
    for mid, memory in ((edited.id, edited), (live[1].id, None), (new.id, new)):
        index.set(mid, memory)
        fresh.set(mid, memory)
    index._top, index._top_all = [], False
    assert [m.id for m in index.top(everything)] == [m.id for m in fresh.top(everything)]
    first_unpinned = next(m for m in index.top(everything) if not m.pinned)
    assert isinstance(index._ids, SlotIds) and first_unpinned == edited  # the record as it is now
