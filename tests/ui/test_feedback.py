"""A person's writes are not reported back as outside changes; a delete says so and offers Undo, and
the selection survives delete and undo; a failing worker reload is said once, quietly (#16.9)."""

from __future__ import annotations

from keepgui.backends.nanobot.bank import KEEP_BANK
from keepgui.core.source import BankKey
from keepgui.ui.memorypanel.model import RecordRole
from tests.ui.conftest import open_keep


def _row(panel, i: int):
    return panel.proxy.index(i, 0).data(RecordRole)


def _selected(panel) -> list[str]:
    return [r.id for r in panel.selected_records()]


def test_delete_offers_undo_and_the_selection_follows(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, watch=False)
    panel = window.memories
    first, second = _row(panel, 3), _row(panel, 4)
    assert panel.select_key(first.id) and _selected(panel) == [first.id]
    panel.act_delete.trigger()
    assert window.toast.isVisible() and window.toast.label.text() == "1 memory deleted —"
    # the deleted row left the view (history hidden): its place goes to the row after it
    assert _selected(panel) == [second.id]
    window.toast.button.click()  # Undo
    assert not window.toast.isVisible()
    assert _selected(panel) == [first.id]  # the restored row is selected again
    assert panel.model.row_object(panel.model.row_of(first.id)).invalid_at is None
    place = panel.table.selectionModel().selectedRows()[0].row()  # the restored row moved (newer now)
    window.undo_stack.redo()  # deleted again with Edit → Redo: no toast, the selection takes its place
    assert not window.toast.isVisible() and _selected(panel) == [_row(panel, place).id] != [first.id]
    # the toast never undoes a later change
    panel.select_key(second.id)
    panel.act_delete.trigger()
    assert window.toast.isVisible()
    panel.set_pinned(True, [next(r for r in panel.model.rows() if not r.pinned and r.invalid_at is None)])
    assert not window.toast.isVisible()


def test_forgetting_a_keep_md_entry_offers_undo(make_window, demo_copy, qtbot):
    window, _key = open_keep(make_window, demo_copy, qtbot)
    panel = window.memories
    first, second = _row(panel, 5), _row(panel, 6)
    panel.select_key(first.id)
    panel.act_delete.trigger()
    assert window.toast.label.text() == "1 entry forgotten —"
    assert _selected(panel) == [second.id]
    window.toast.undo()
    assert first.text in [r.text for r in panel.selected_records()]


def test_own_writes_are_not_reported_as_changes_on_disk(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, workspace=demo_copy.nanobot)  # watching
    said: list[str] = []
    window.hub.note.connect(said.append)
    window.rules.note.connect(said.append)
    panel = window.memories
    record = _row(panel, 0)
    panel.set_pinned(not record.pinned, [record])
    panel.set_live(False, [_row(panel, 1)])
    window.undo_stack.undo()
    window.show_panel("rules")
    qtbot.waitUntil(lambda: window.rules.doc is not None)
    window.rules.editor.setPlainText(window.rules.editor.toPlainText() + "\nOne more line.\n")
    assert window.rules.save()
    key = BankKey(demo_copy.nanobot, KEEP_BANK)
    window.select_bank(key)
    qtbot.waitUntil(lambda: window.current == key and window.rules.doc is not None, timeout=10_000)
    window.rules.editor.setPlainText(window.rules.editor.toPlainText() + "\n- one more rule\n")
    assert window.rules.save()
    window.undo_stack.undo()
    qtbot.wait(1800)  # longer than the watcher's longest delay
    assert not [s for s in said if "changed on disk" in s], said
    assert not window.banner.isVisible() or "compaction" in window.banner.label.text(), window.banner.label.text()
    assert not window.rules.banner.isVisible()


def test_a_failing_reload_is_said_once_then_shown_quietly(make_window, demo_copy, qtbot, monkeypatch):
    from keepgui.ui.application import build_window
    from keepgui.ui.settings import Settings
    from tests.ui.conftest import window_args

    monkeypatch.setenv("PATH", "/nonexistent")  # no `iii`: the default reload command cannot run
    window = build_window(
        window_args(data_dir=demo_copy.iii, bank="main", reload_command=None), Settings(), watch=False
    )
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=15_000)
    notes: list[str] = []
    window.hub.note.connect(notes.append)
    panel = window.memories
    for _ in range(3):
        panel.set_pinned(True, [r for r in panel.model.rows() if not r.pinned and r.invalid_at is None][:1])
    qtbot.waitUntil(lambda: window.attention_label.isVisible(), timeout=10_000)
    qtbot.wait(300)
    assert [n for n in notes if "not on PATH" in n] == [
        "`iii` is not on PATH; a running worker will not see this change until memory::reload"
    ]
    assert (
        window.attention_label.text() == "⚠ `iii` is not on PATH"
        and "memory::reload" in window.attention_label.toolTip()
    )
    window.hub.shutdown()


def test_the_demo_window_says_nothing_about_a_worker(qtbot):
    from keepgui.ui.application import build_window
    from tests.ui.conftest import window_args

    window = build_window(window_args(demo=True, reload_command=None), watch=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=15_000)
    notes: list[str] = []
    window.hub.note.connect(notes.append)
    window.memories.set_pinned(True, [r for r in window.memories.model.rows() if not r.pinned][:1])
    qtbot.wait(500)
    assert not [n for n in notes if "worker" in n] and not window.attention_label.isVisible()
    assert window.settings.read_only
    window.hub.shutdown()
