"""A window's first load of a big bank: replayed and indexed in a child process into the cache, the
window's log and index restored from it — the same rows and the same previews as a replay here;
appended lines replayed here after; a child that fails leaves the replay to this process."""

from __future__ import annotations

import os
import sys
import time

import pytest

from keepgui.backends.iii import cache, lazy, warm
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine
from keepgui.backends.iii.lazy import LazyRecords, SlotIds
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.store import DataDir
from keepgui.core import childwork, pace, registry
from tests.bench.synth import make_bank, make_records
from tests.core.test_fsio import mapped_resident_kb

NOW = 1_780_000_000_000


@pytest.fixture
def window_like(monkeypatch):
    """A window's process: children used, a foreground installed (records decoded a slice at a time,
    small slices here), every log big enough for the child."""
    monkeypatch.setattr(warm, "CHILD_LOG_BYTES", 0)
    monkeypatch.setattr(lazy, "STEP", 97)
    childwork.use_children(True)
    pace.set_foreground(pace.Foreground())
    yield
    pace.set_foreground(None)
    childwork.use_children(False)


def _bank(data_dir: str):
    source = registry.open_source("iii", data_dir, registry.OpenOptions(reload_command=""))
    return source.bank("bank")


def _replayed(data_dir: str) -> list:
    log = MemoryLog(os.path.join(data_dir, "bank", "memories.jsonl"))
    log.refresh()
    return list(log.records.values())


def _previews(engine: BankEngine) -> list[str]:
    return [engine.preview(q, now_ms=NOW).to_json() for q in ("deploy the service", "database", "x")]


@pytest.mark.usefixtures("window_like")
def test_a_big_bank_is_replayed_in_a_child_and_restored_here(tmp_path):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=1500, lines=4000, seed=3)
    bank = _bank(data_dir)
    change = bank.load(full=True)
    core = bank.core()
    assert isinstance(core.log.records, LazyRecords)  # the state came from the cache the child wrote
    assert core.log.records.packed.decodes == 1500  # decoded here once, in slices
    assert list(change.rows.rows) == _replayed(data_dir)
    index = bank.engine(core).index
    assert index._synced_records is None  # the rows came first: the index is built when first asked
    fresh = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    assert (
        bank.preview("deploy the service", now_ms=NOW).to_json()
        == fresh.preview("deploy the service", now_ms=NOW).to_json()
    )
    assert index._synced_records is core.log.records and index._record_at is not None  # the child's, restored
    assert _previews(bank.engine(core)) == _previews(fresh)


@pytest.mark.usefixtures("window_like")
def test_a_bank_cached_with_its_index_restores_both_with_no_child(tmp_path, monkeypatch):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=900, lines=2000, seed=11)
    warm.warm(data_dir, "bank", True)  # as a command leaves it: the log's state and its index
    monkeypatch.setattr(childwork, "worker", lambda *_args: pytest.fail("no child for a verified cache"))
    bank = _bank(data_dir)
    assert list(bank.load(full=True).rows.rows) == _replayed(data_dir)
    core = bank.core()
    assert bank.engine(core).index._synced_records is core.log.records
    fresh = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    assert bank.preview("database", now_ms=NOW).to_json() == fresh.preview("database", now_ms=NOW).to_json()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/self/smaps")
@pytest.mark.usefixtures("window_like")
def test_a_restored_window_gives_the_mapped_cache_s_pages_back(tmp_path):
    """Once every record is an object, and once the index file is checked, the pages of the two mapped
    cache files stop counting in the window's memory; a preview reads again only what it goes to."""
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=3000, lines=7000, seed=12)
    warm.warm(data_dir, "bank", True)
    bank = _bank(data_dir)
    assert list(bank.load(full=True).rows.rows) == _replayed(data_dir)
    where = cache.LogCache(bank.core().log)
    files = [where.log_file, where.index_file]  # the log's state and its index
    assert all(os.path.getsize(path) > 200_000 for path in files)
    assert [mapped_resident_kb(path) for path in files] == [0, 0]
    fresh = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    assert bank.preview("database", now_ms=NOW).to_json() == fresh.preview("database", now_ms=NOW).to_json()


@pytest.mark.usefixtures("window_like")
def test_a_cached_bank_shows_its_first_slices_while_the_rest_decode(tmp_path):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=1000, lines=2500, seed=10)
    warm.warm(data_dir, "bank")  # a cache there already: no child
    told: list[tuple[int, int, list]] = []
    rows = list(
        _bank(data_dir).load(lambda done, total, since: told.append((done, total, since())), full=True).rows.rows
    )
    assert rows == _replayed(data_dir)
    assert [(done, total) for done, total, _ in told] == [(min(hi, 1000), 1000) for hi in range(97, 1000 + 97, 97)]
    assert all(part == rows[: len(part)] and len(part) == done for done, _, part in told)


@pytest.mark.usefixtures("window_like")
def test_lines_appended_after_the_child_are_replayed_here(tmp_path):
    data_dir = str(tmp_path / "data")
    log_path = make_bank(os.path.join(data_dir, "bank"), memories=800, lines=2000, seed=4)
    warm.warm(data_dir, "bank")  # the cache as a child leaves it
    with open(log_path, "ab") as fh:
        fh.write(b"".join(m.to_line() for m in make_records(30, 70, 99)))
    bank = _bank(data_dir)
    rows = list(bank.load(full=True).rows.rows)
    assert isinstance(bank.core().log.records, LazyRecords)
    assert rows == _replayed(data_dir)
    fresh = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    assert _previews(bank.engine(bank.core())) == _previews(fresh)


@pytest.mark.usefixtures("window_like")
def test_a_failed_child_leaves_the_replay_here(tmp_path, monkeypatch, caplog):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=600, lines=1500, seed=5)

    class Dead:
        def warm(self):  # started early as the bank is made (warm.expect): it dies when called
            pass

        def call(self, *_args, **_kwargs):
            raise childwork.ChildFailed("the bank process stopped (exit status -9)")

    monkeypatch.setattr(childwork, "worker", lambda *_args: Dead())
    bank = _bank(data_dir)
    rows = list(bank.load(full=True).rows.rows)
    assert rows == _replayed(data_dir)
    assert not isinstance(bank.core().log.records, LazyRecords)
    assert "replayed in the window's process: the bank process stopped" in caplog.text


def test_a_small_log_is_replayed_here_without_a_child(tmp_path, monkeypatch):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=200, lines=400, seed=6)
    childwork.use_children(True)
    try:
        monkeypatch.setattr(childwork, "worker", lambda *_args: pytest.fail("no child for a small log"))
        rows = list(_bank(data_dir).load(full=True).rows.rows)
    finally:
        childwork.use_children(False)
    assert rows == _replayed(data_dir)


@pytest.mark.usefixtures("window_like")
def test_the_child_s_first_rows_are_shown_while_it_replays(tmp_path, monkeypatch):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=3000, lines=8000, seed=7)
    monkeypatch.setattr(warm, "FIRST_ROWS_S", 0.0)  # every report sends rows (the child inherits nothing:
    monkeypatch.setattr(warm, "PROGRESS_S", 0.0)  # so the child is told through its argument below)
    told: list[tuple[int, int, int]] = []

    def progress(done, total, since):
        rows = since()
        told.append((done, total, len(rows)))
        assert all(isinstance(m.id, str) for m in rows)

    calls = []
    real = childwork.worker

    class Spy:
        def __init__(self, *args):
            self.child = real(*args)

        def warm(self):
            self.child.warm()

        def call(self, *args, **kwargs):
            calls.append(args)
            return self.child.call("tests.backends.iii.test_warm", "_warm_every_line", *args[2:], **kwargs)

    monkeypatch.setattr(childwork, "worker", Spy)
    bank = _bank(data_dir)
    rows = list(bank.load(progress, full=True).rows.rows)
    assert calls and rows == _replayed(data_dir)
    size = os.path.getsize(os.path.join(data_dir, "bank", "memories.jsonl"))
    replaying = [n for _done, total, n in told if total == size]  # the child's reports (then the decode's)
    assert any(0 < n < 3000 for n in replaying)  # rows shown before the whole bank came


def _warm_every_line(data_dir: str, name: str) -> dict:
    """``warm.warm`` with a report (and rows) at every progress step: run in the child."""
    warm.FIRST_ROWS_S = warm.PROGRESS_S = 0.0
    return warm.warm(data_dir, name)


@pytest.mark.usefixtures("window_like")
def test_writes_on_a_restored_bank_are_what_a_replay_reads(tmp_path):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=700, lines=1800, seed=8)
    bank = _bank(data_dir)
    rows = list(bank.load(full=True).rows.rows)
    assert isinstance(bank.core().log.records, LazyRecords)
    live = [m for m in rows if m.invalid_at is None]
    first, second, third = live[0].id, live[len(live) // 2].id, live[-1].id
    bank.set_pinned([first], not live[0].pinned)
    bank.edit(second, "text", "an edit made on the restored state")
    bank.set_live([third], False)
    undo = bank.set_live([first], False)
    undo.undo()
    bank.load()  # what the writes appended, read back
    now = {m.id: m for m in bank.rows()}
    replayed = {m.id: m for m in _replayed(data_dir)}
    assert now == replayed
    assert replayed[second].text == "an edit made on the restored state" and replayed[third].invalid_at is not None
    assert replayed[first].invalid_at is None and replayed[first].pinned is not live[0].pinned
    fresh = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    assert _previews(bank.engine(bank.core())) == _previews(fresh)


@pytest.mark.usefixtures("window_like")
def test_a_restored_index_s_slots_are_listed_a_slice_at_a_time_the_same(tmp_path):
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=900, lines=2200, seed=12)
    warm.warm(data_dir, "bank", True)
    bank = _bank(data_dir)
    bank.load(full=True)
    index = bank.engine(bank.core()).index
    assert isinstance(index._ids, SlotIds)
    sliced_ids, sliced = index._ids.tolist(), dict(index._slot)  # beside a window: slices of 97
    pace.set_foreground(None)
    index._slot_of = None
    assert index._ids.tolist() == sliced_ids and dict(index._slot) == sliced
    assert len(sliced) == sum(1 for m in _replayed(data_dir) if m.invalid_at is None)


@pytest.mark.usefixtures("window_like")
def test_a_big_bank_s_child_is_started_as_the_bank_is_listed(tmp_path, monkeypatch):
    """The child that replays starts when a window's source lists the bank (on the source's thread, not
    the GUI's), before its first load asks for it (a new interpreter's start and imports are a third of a
    second); not for a bank whose cache is on file already, which a load restores with no child."""
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=300, lines=700, seed=14)
    child = childwork.worker(*warm.WARM_CHILD)
    child.stop()
    source = registry.open_source("iii", data_dir, registry.OpenOptions(reload_command=""))
    source.scan()
    deadline = time.monotonic() + 20
    while child.pid is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.pid is not None  # started, no load asked for
    assert list(source.bank("bank").load(full=True).rows.rows) == _replayed(data_dir)
    started: list[dict] = []
    monkeypatch.setattr(childwork, "warm_up", started.append)
    registry.open_source("iii", data_dir, registry.OpenOptions(reload_command="")).scan()
    assert started == []  # its cache on file now (the child wrote it)
    make_bank(os.path.join(data_dir, "other"), memories=50, lines=100, seed=15)
    source.scan()
    assert started == [dict((warm.WARM_CHILD,))]  # the new bank only
