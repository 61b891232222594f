"""The memory table gives its width to the text; times never say "in the future" (#16.7, #16.8)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from keepgui.core.timefmt import now_ms, relative_time
from keepgui.ui.memorypanel.columns import CAPPED, FLOOR_CHARS, MANUAL_SETTING, TEXT_SHARE, sample_rows
from keepgui.ui.memorypanel.model import COLUMN_INDEX, COLUMNS


def _shown_widths(panel) -> dict[str, int]:
    table = panel.table
    return {c.field: table.columnWidth(i) for i, c in enumerate(COLUMNS) if not table.isColumnHidden(i)}


def test_the_text_column_takes_the_width_and_metadata_fits_its_content(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.resize(1440, 900)
    panel = window.memories
    qtbot.waitUntil(lambda: panel.table.viewport().width() > 600)
    qtbot.wait(50)
    widths = _shown_widths(panel)
    viewport = panel.table.viewport().width()
    assert widths["text"] >= 0.4 * viewport, (widths, viewport)  # was ~20 characters at 1440 px
    metrics = panel.table.fontMetrics()
    model = panel.table.model()
    for field, width in widths.items():
        if field == "text" or COLUMNS[COLUMN_INDEX[field]].toggle:
            continue
        cells = [model.index(r, COLUMN_INDEX[field]).data(Qt.ItemDataRole.DisplayRole) for r in range(model.rowCount())]
        widest = max(metrics.horizontalAdvance(str(t)) for t in cells if t)
        if field in CAPPED:
            assert width <= CAPPED[field] * metrics.averageCharWidth() + 40
            widest = min(widest, CAPPED[field] * metrics.averageCharWidth())
        assert width >= widest, f"{field}: {width} px for a cell of {widest} px"
    # A long text is whole in the tooltip (the detail pane shows it whole too)
    row = max(
        range(model.rowCount()),
        key=lambda r: len(model.index(r, COLUMN_INDEX["text"]).data(Qt.ItemDataRole.DisplayRole)),
    )
    full = model.index(row, 0).data(Qt.ItemDataRole.UserRole + 1).text
    assert model.index(row, COLUMN_INDEX["text"]).data(Qt.ItemDataRole.ToolTipRole).startswith(full)


def test_a_narrow_window_keeps_room_for_the_text(make_window, demo_copy, qtbot):
    """At 1024 px with the detail pane open, tags and entities fitted to content left the Memory
    column a few pixels; they give up width (down to a floor) so the text keeps its share."""
    window = make_window(demo_copy.iii)
    window.resize(1440, 900)
    panel = window.memories
    qtbot.waitUntil(lambda: panel.table.viewport().width() > 600)
    wide = _shown_widths(panel)
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: panel.table.viewport().width() < 600)
    qtbot.wait(50)
    narrow, viewport = _shown_widths(panel), panel.table.viewport().width()
    floor = FLOOR_CHARS * panel.table.fontMetrics().averageCharWidth()
    capped = [f for f in CAPPED if f in narrow]
    for field in capped:
        assert floor <= narrow[field] < wide[field], (field, narrow, wide)
    # the text has its share, or got all the capped columns could give
    assert narrow["text"] >= TEXT_SHARE * viewport - 2 or all(narrow[f] == floor for f in capped), (narrow, viewport)
    assert narrow["text"] >= 0.3 * viewport, (narrow, viewport)  # was 40 px of 506
    window.resize(1440, 900)  # and back: the columns have their fitted widths again
    qtbot.waitUntil(lambda: panel.table.viewport().width() > 600)
    qtbot.wait(50)
    assert {f: w for f, w in _shown_widths(panel).items() if f != "text"} == {
        f: w for f, w in wide.items() if f != "text"
    }


def test_a_column_resized_by_hand_keeps_its_width_until_fitted_again(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel = window.memories
    column = COLUMN_INDEX["entities"]
    fitted = panel.table.columnWidth(column)
    panel.columns._dragging = True  # what a press on the header's edge starts
    panel.table.horizontalHeader().resizeSection(column, fitted + 90)
    panel.columns._dragging = False
    assert window.settings.get(MANUAL_SETTING) == ["entities"]
    panel.columns.fit()  # another bank, or a reload
    assert panel.table.columnWidth(column) == fitted + 90
    panel.act_fit_columns.trigger()
    assert panel.table.columnWidth(column) == fitted and window.settings.get(MANUAL_SETTING) == []


def test_the_detail_pane_folds_away_and_comes_back(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel = window.memories
    assert panel.act_details.isChecked() and panel.details_shown()
    panel.act_details.trigger()
    assert panel.splitter.sizes()[1] == 0 and not panel.act_details.isChecked()
    assert panel.act_details in window.view_menu.actions()
    panel.act_details.trigger()
    assert panel.splitter.sizes()[1] > 100 and panel.act_details.isChecked()


def test_sample_rows_cover_a_big_bank_evenly():
    assert sample_rows(5) == [0, 1, 2, 3, 4]
    rows = sample_rows(100_000)
    assert len(rows) == 300 and rows[:150] == list(range(150)) and rows[-1] > 99_000
    assert rows == sorted(set(rows))


def test_a_row_written_just_after_the_clock_was_read_is_just_now(make_window, demo_copy, qtbot):
    now = now_ms()
    assert relative_time(now + 500, now) == "just now"
    assert relative_time(now + 59_000, now) == "just now"
    assert relative_time(now + 3_600_000, now) == "in the future"  # a clock far ahead stays visible
    window = make_window(demo_copy.iii)
    panel = window.memories
    panel.model.now = now_ms() - 40_000  # the table read the clock 40 s ago (it does once a minute)
    record = next(r for r in panel.model.rows() if r.invalid_at is None and not r.pinned)
    panel.set_pinned(True, [record])
    row = panel.model.row_of(record.id)
    assert panel.model.row_object(row).pinned
    shown = panel.model.index(row, COLUMN_INDEX["updated"]).data(Qt.ItemDataRole.DisplayRole)
    assert shown == "just now"
