"""Wording and conventions (#16.13): both redo keys, Esc in the search box, one noun per bank,
plurals, scores in Ranked mode, `banks` on a missing data dir."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from keepgui.ui import shortcuts
from keepgui.ui.memorypanel.model import COLUMN_INDEX
from keepgui.ui.scores import ScoreDelegate, ScoreRole
from tests.conftest import run_cli
from tests.ui.conftest import open_keep, paint_cell


def test_ctrl_y_and_ctrl_shift_z_both_redo(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, watch=False)
    keys = window.act_redo.shortcuts()
    assert QKeySequence("Ctrl+Y") in keys and QKeySequence("Ctrl+Shift+Z") in keys
    assert len(keys) == len({k.toString() for k in keys})  # each once
    panel = window.memories
    record = next(r for r in panel.model.rows() if not r.pinned and r.invalid_at is None)
    for key in ("Ctrl+Y", "Ctrl+Shift+Z"):
        panel.set_pinned(True, [record])
        window.undo_stack.undo()
        qtbot.keyClick(
            panel.table,
            key[-1],
            Qt.KeyboardModifier.ControlModifier
            | (Qt.KeyboardModifier.ShiftModifier if "Shift" in key else Qt.KeyboardModifier.NoModifier),
        )
        assert panel.model.row_object(panel.model.row_of(record.id)).pinned, key
        window.undo_stack.undo()
    assert ("Redo", "Ctrl+Y, Ctrl+Shift+Z") in shortcuts.describe()


def test_esc_clears_the_search_box_then_goes_back_to_the_list(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, watch=False)
    panel = window.memories
    window.activateWindow()
    panel.focus_search()
    qtbot.keyClicks(panel.search, "tea")
    assert panel.search.text() == "tea"
    qtbot.keyClick(panel.search, Qt.Key.Key_Escape)
    assert panel.search.text() == ""
    panel.clear_search()  # empty already: the list gets the focus
    assert panel.table.hasFocus() or window.focusWidget() is panel.table


def test_the_search_box_names_rows_as_the_sidebar_does(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    search = window.memories.search
    assert "entries" in search.placeholderText() and search.accessibleName() == "Search entries"
    assert "entries" in window.hub.summary(key).detail


def test_history_counts_revisions_in_words(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, watch=False)
    detail = window.memories.detail
    record = window.memories.model.row_object(0)
    detail.show_record(record)
    detail.set_history(record.id, [record])
    assert "(1 revision)" in detail.browser.toPlainText()
    detail.set_history(record.id, [record, record])
    assert "(2 revisions)" in detail.browser.toPlainText()


def test_ranked_mode_shows_scores_and_no_sort_arrow(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, watch=False)
    panel = window.memories
    header = panel.table.horizontalHeader()
    assert header.isSortIndicatorShown()
    panel.search.setText("tea")
    panel.ranked.setChecked(True)
    qtbot.waitUntil(lambda: panel.proxy.ranked_scores is not None, timeout=10_000)
    assert not header.isSortIndicatorShown()
    top = panel.proxy.index(0, COLUMN_INDEX["text"])
    score = top.data(ScoreRole)
    assert score is not None and score == max(panel.proxy.ranked_scores.values())
    delegate = panel.table.itemDelegateForColumn(COLUMN_INDEX["text"])
    assert delegate.score_text(score) == f"{score:.2f}"

    def painted(ranking):
        return paint_cell(ScoreDelegate(lambda: ranking), top, panel.table, 400, 24)

    assert painted(panel.proxy.ranked_scores) != painted(None)  # the score and its bar are drawn
    panel.ranked.setChecked(False)
    qtbot.waitUntil(lambda: panel.proxy.ranked_scores is None)
    assert header.isSortIndicatorShown()


def test_banks_on_a_missing_data_dir_fails_as_doctor_does(tmp_path):
    missing = str(tmp_path / "nope")
    code, out, err = run_cli(["--data-dir", missing, "banks"])
    assert code == 1 and out == "" and err.startswith(f"keepgui: error: {missing}: the data dir does not exist")
    code, _out, _err = run_cli(["--data-dir", missing, "doctor"])
    assert code == 1
