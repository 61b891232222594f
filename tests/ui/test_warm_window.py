"""A window whose bank is replayed and indexed in a child process (keepgui.backends.iii.warm): every row
shown, the log's state the cache's (no replay in the window's process), the preview answering, a pin
written and read back."""

from __future__ import annotations

import pytest

from keepgui.backends.iii import warm
from keepgui.backends.iii.lazy import LazyRecords
from keepgui.core import childwork
from tests.bench.synth import make_bank


@pytest.fixture
def children(monkeypatch):
    monkeypatch.setattr(warm, "CHILD_LOG_BYTES", 0)
    childwork.use_children(True)
    yield
    childwork.use_children(False)


@pytest.mark.usefixtures("children")
def test_a_bank_replayed_in_a_child_is_shown_and_written(make_window, tmp_path, qtbot):
    data_dir = tmp_path / "data"
    make_bank(str(data_dir / "main"), 1500, 3500, seed=9)
    window = make_window(data_dir, bank="main")
    bank = window.hub.bank(window.current)
    core = bank.core()
    assert isinstance(core.log.records, LazyRecords)  # restored from the cache the child wrote
    rows = bank.rows()
    qtbot.waitUntil(lambda: window.memories.model.rowCount() == len(rows), timeout=15_000)
    engine = bank.engine(core)
    assert engine.index._synced_records is core.log.records  # the child's index, not one built here
    assert bank.preview("deploy the service").to_json()
    target = next(m for m in rows if m.invalid_at is None and not m.pinned)
    done = []
    window.hub.write(lambda: bank.set_pinned([target.id], True), done.append, pytest.fail)
    qtbot.waitUntil(lambda: bool(done), timeout=15_000)
    qtbot.waitUntil(lambda: window.memories.model.row_object(window.memories.model.row_of(target.id)).pinned)
    assert {m.id: m for m in bank.rows()}[target.id].pinned
