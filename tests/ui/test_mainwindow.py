"""The main window: models, toggles that write records, undo/redo, bulk actions, live reload."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt

from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.record import fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.core.source import Capabilities
from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, MemoryProxyModel, MemoryTableModel, RecordRole
from tests.memories import memory


def log_lines(path) -> int:
    """Record lines in a log (keepgui's appends each begin with a newline, a blank line)."""
    with open(path, "rb") as fh:
        return sum(1 for line in fh.read().split(b"\n")[:-1] if line.strip())


def fresh(data_dir, bank, memory_id):
    log = MemoryLog(os.path.join(str(data_dir), bank, "memories.jsonl"))
    log.refresh()
    return log.get(memory_id)


def proxy_row_of(window, memory_id):
    proxy = window.memories.proxy
    for row in range(proxy.rowCount()):
        if proxy.index(row, 0).data(KeyRole) == memory_id:
            return row
    return None


def select_ids(window, ids):
    table = window.memories.table
    selection = table.selectionModel()
    selection.clearSelection()
    for mid in ids:
        row = proxy_row_of(window, mid)
        index = window.memories.proxy.index(row, COLUMN_INDEX["text"])
        selection.select(index, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)


def test_models_pass_the_model_tester(qtmodeltester, make_window, demo_copy):
    window = make_window(demo_copy.iii)
    assert window.memories.model.rowCount() > 20
    qtmodeltester.check(window.memories.model)
    qtmodeltester.check(window.memories.proxy)
    qtmodeltester.check(window.tree_model)


def test_sidebar_shows_banks_with_counts(make_window, demo_copy, qtbot):
    from keepgui.ui.sidebar import DetailRole

    window = make_window(demo_copy.iii)
    qtbot.waitUntil(
        lambda: all(
            window.hub.summary(type(window.current)(demo_copy.iii, n)) is not None for n in ("main", "blog", "coding")
        )
    )
    index = window.tree_model.index_of_bank(window.current)
    info = DataDir(demo_copy.iii).bank("main").info()
    assert index.data(DetailRole) == info.counts()  # "1 rule", never "1 rules" (#23.12)


def test_pin_toggle_writes_a_record_and_undo_redo(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    proxy = window.memories.proxy
    row = next(r for r in range(proxy.rowCount()) if not proxy.index(r, 0).data(RecordRole).pinned)
    record = proxy.index(row, 0).data(RecordRole)
    before = log_lines(window.hub.source(demo_copy.iii).core_bank("main").log_path)
    assert proxy.setData(
        proxy.index(row, COLUMN_INDEX["pinned"]), Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole
    )
    on_disk = fresh(demo_copy.iii, "main", record.id)
    assert on_disk.pinned and on_disk.revision == record.revision + 1
    qtbot.waitUntil(lambda: window.memories.model.row_object(window.memories.model.row_of(record.id)).pinned)
    assert window.undo_stack.undoText() == "Pin memory"
    window.undo_stack.undo()
    on_disk = fresh(demo_copy.iii, "main", record.id)
    assert not on_disk.pinned and on_disk.revision == record.revision + 2
    window.undo_stack.redo()
    assert fresh(demo_copy.iii, "main", record.id).pinned
    assert log_lines(window.hub.source(demo_copy.iii).core_bank("main").log_path) == before + 3


def test_tombstone_toggle_hides_and_restore_brings_back(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    proxy = window.memories.proxy
    record = proxy.index(0, 0).data(RecordRole)
    proxy.setData(proxy.index(0, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    assert fresh(demo_copy.iii, "main", record.id).invalid_at is not None
    assert proxy_row_of(window, record.id) is None  # hidden unless history is shown
    window.memories.act_history.setChecked(True)
    row = proxy_row_of(window, record.id)
    assert row is not None
    text_index = proxy.index(row, COLUMN_INDEX["text"])
    assert text_index.data(Qt.ItemDataRole.FontRole).strikeOut()
    proxy.setData(proxy.index(row, COLUMN_INDEX["live"]), Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
    restored = fresh(demo_copy.iii, "main", record.id)
    assert restored.invalid_at is None and restored.superseded_by is None
    assert restored.text == record.text and restored.revision == record.revision + 2


def test_bulk_delete_is_one_write_and_one_undo_step(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    proxy = window.memories.proxy
    ids = [proxy.index(r, 0).data(KeyRole) for r in range(3)]
    select_ids(window, ids)
    path = window.hub.source(demo_copy.iii).core_bank("main").log_path
    before = log_lines(path)
    window.memories.act_delete.trigger()
    assert log_lines(path) == before + 3
    assert all(fresh(demo_copy.iii, "main", i).invalid_at is not None for i in ids)
    assert window.undo_stack.count() == 1 and window.undo_stack.undoText() == "Delete 3 memories"
    window.undo_stack.undo()
    assert log_lines(path) == before + 6
    assert all(fresh(demo_copy.iii, "main", i).invalid_at is None for i in ids)


def test_new_memory_and_in_place_edit(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.perform(window.current, lambda bank: bank.create("Mike learns the cello on Mondays", ["habits"], ["mike"]))
    mid = fingerprint("Mike learns the cello on Mondays")
    assert fresh(demo_copy.iii, "main", mid).text == "Mike learns the cello on Mondays"
    qtbot.waitUntil(lambda: proxy_row_of(window, mid) is not None)
    proxy = window.memories.proxy
    row = proxy_row_of(window, mid)
    assert proxy.setData(proxy.index(row, COLUMN_INDEX["text"]), "Mike learns the cello on Tuesdays")
    edited = fresh(demo_copy.iii, "main", mid)
    assert edited.text == "Mike learns the cello on Tuesdays" and edited.id == mid and edited.revision == 1
    assert proxy.setData(proxy.index(proxy_row_of(window, mid), COLUMN_INDEX["tags"]), "music, habits")
    assert fresh(demo_copy.iii, "main", mid).tags == ("music", "habits")
    window.undo_stack.undo()
    window.undo_stack.undo()
    assert fresh(demo_copy.iii, "main", mid).text == "Mike learns the cello on Mondays"
    window.undo_stack.undo()  # undoing the creation retires it
    assert fresh(demo_copy.iii, "main", mid).invalid_at is not None


def test_external_append_shows_up_and_keeps_the_selection(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    proxy = window.memories.proxy
    selected = proxy.index(5, 0).data(KeyRole)
    select_ids(window, [selected])
    text = "Appended by the agent while keepgui was open"
    record = memory(text, entities=["user"], confidence="extracted", updated_at=2_000_000_000_000)
    with (
        qtbot.waitSignal(window.hub.changed, timeout=10_000, check_params_cb=lambda change: bool(change.rows)),
        open(os.path.join(str(demo_copy.iii), "main", "memories.jsonl"), "ab") as fh,
    ):
        fh.write(record.to_line())
    qtbot.waitUntil(lambda: proxy_row_of(window, record.id) is not None, timeout=10_000)
    assert window.memories.selected_records()[0].id == selected
    qtbot.waitUntil(lambda: "1 memory added" in window.statusBar().currentMessage(), timeout=5_000)


def test_external_rule_change_and_new_bank_show_up(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    key = window.current
    with (
        qtbot.waitSignal(
            window.hub.changed, timeout=10_000, check_params_cb=lambda change: bool(change.documents)
        ) as blocker,
        open(os.path.join(str(demo_copy.iii), "main", "rules", "added.md"), "w") as fh,
    ):
        fh.write("# Added by hand\n")
    assert blocker.args[0].key == key and blocker.args[0].documents == {"added"}
    os.makedirs(os.path.join(str(demo_copy.iii), "research", "rules"))
    qtbot.waitUntil(
        lambda: window.tree_model.index_of_bank(type(key)(key.source, "research")).isValid(), timeout=10_000
    )


def test_trash_and_restore_bank(make_window, demo_copy, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window = make_window(demo_copy.iii, bank="blog")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    window.trash_bank()
    assert not os.path.exists(os.path.join(str(demo_copy.iii), "blog"))
    trashed = DataDir(demo_copy.iii).trashed()
    assert trashed and trashed[0].bank == "blog"
    window.restore_bank(trashed[0].folder, demo_copy.iii)
    assert os.path.isdir(os.path.join(str(demo_copy.iii), "blog"))
    qtbot.waitUntil(lambda: window.current is not None and window.current.bank == "blog", timeout=10_000)


def test_search_follows_typing_and_tag_chips(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel = window.memories
    qtbot.waitUntil(lambda: panel.index.is_ready)
    qtbot.keyClicks(panel.search, "penicilin")  # a typo still finds it
    qtbot.waitUntil(lambda: panel.proxy.rowCount() == 1)
    assert "penicillin" in panel.proxy.index(0, COLUMN_INDEX["text"]).data()
    panel.search.clear()
    panel.chips.tagChosen.emit("travel")
    qtbot.waitUntil(lambda: 0 < panel.proxy.rowCount() < 5)
    assert all("travel" in panel.proxy.index(r, 0).data(RecordRole).tags for r in range(panel.proxy.rowCount()))


def test_detail_panel_shows_history_and_links(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    bank = DataDir(demo_copy.iii).bank("main")
    superseded = next(m for m in bank.memories(history=True) if m.superseded_by)
    window.memories.select_key(superseded.id)
    qtbot.waitUntil(lambda: "History" in window.memories.detail.browser.toPlainText(), timeout=10_000)
    text = window.memories.detail.browser.toPlainText()
    assert "superseded by" in text and superseded.superseded_by in text
    window.memories.detail.memoryLinkActivated.emit(superseded.superseded_by)
    assert window.memories.current_key() == superseded.superseded_by


def test_capabilities_grey_out_toggles(qapp):
    model = MemoryTableModel()
    text = "an entry of keep.md"
    row = memory(text)
    model.reset_rows([row], Capabilities({"pin": "keep.md entries have no pin: every entry is read on every turn"}))
    index = model.index(0, COLUMN_INDEX["pinned"])
    assert not (model.flags(index) & Qt.ItemFlag.ItemIsEnabled)
    assert "no pin" in index.data(Qt.ItemDataRole.ToolTipRole)
    assert not model.setData(index, Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)


@pytest.mark.parametrize("query", ["grafana", "formal writ", "postgres 16"])
def test_a_100k_row_model_filters_correctly(qapp, query):
    from keepgui.core.search import TextSearch
    from tests.bench.synth import make_records

    records = {}
    for made in make_records(100_000, 100_000, seed=3):
        records[made.id] = made
    rows = list(records.values())
    model = MemoryTableModel()
    model.reset_rows(rows, Capabilities())
    proxy = MemoryProxyModel()
    proxy.setSourceModel(model)
    index = TextSearch()
    index.set_many((r.id, (r.text, *r.tags, *r.entities)) for r in rows)
    matches = index.search(query)
    proxy.set_filters(match_keys=set(matches))
    expected = {r.id for r in rows if r.id in matches and r.invalid_at is None}
    shown = {proxy.index(i, 0).data(KeyRole) for i in range(proxy.rowCount())}
    assert shown == expected and len(shown) > 100
    for term in query.split()[:-1]:  # finished words match a word of the text, a tag or an entity
        for i in range(0, proxy.rowCount(), 97):
            record = proxy.index(i, 0).data(RecordRole)
            assert term in " ".join((record.text, *record.tags, *record.entities)).lower()
    updated = [proxy.index(i, 0).data(RecordRole).updated_at for i in range(proxy.rowCount())]
    assert updated == sorted(updated, reverse=True)


def test_sources_bank_view_options_and_geometry_are_remembered(qtbot, demo_copy, tmp_path):
    from keepgui.core.source import BankKey
    from keepgui.ui.application import build_window
    from keepgui.ui.settings import Settings
    from tests.ui.conftest import window_args

    path = str(tmp_path / "settings.json")
    first = Settings(path)
    first.set_sources([{"kind": "iii", "path": demo_copy.iii}])
    first.save()
    window = build_window(window_args(), Settings(path), watch=False)
    window.show()
    qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=15_000)
    window.select_bank(BankKey(demo_copy.iii, "blog"))
    qtbot.waitUntil(lambda: window.current.bank == "blog" and window._loading is None, timeout=15_000)
    window.memories.act_history.setChecked(True)
    window.memories.column_actions[COLUMN_INDEX["tags"]].setChecked(False)
    window.memories.column_actions[COLUMN_INDEX["created"]].setChecked(True)
    window.resize(1111, 777)
    window.close()
    window.hub.shutdown()
    saved = Settings(path)
    assert saved.last_bank() == (demo_copy.iii, "blog")
    assert saved.show_history() and saved.hidden_columns() == ["tags", "confidence", "revision"]
    assert saved.state("geometry") is not None and saved.state("memory_header") is not None
    again = build_window(window_args(), Settings(path), watch=False)
    again.show()
    qtbot.waitUntil(lambda: again.current is not None and again._loading is None, timeout=15_000)
    assert again.current.bank == "blog" and again.memories.act_history.isChecked()
    assert again.memories.table.isColumnHidden(COLUMN_INDEX["tags"])
    assert not again.memories.table.isColumnHidden(COLUMN_INDEX["created"])
    again.close()
    again.hub.shutdown()
