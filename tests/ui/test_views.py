"""The Graph panel and the activity strip in the window: selection synced both ways, filters by tag,
history and day range, live updates without a rebuild, dark mode, and the screenshot panels."""

from __future__ import annotations

import os

from PySide6.QtCore import QDate, QDateTime, QPoint, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

from keepgui.backends.iii.record import fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.core.graph import GraphOptions, build_graph
from keepgui.core.source import CAPTURE_KINDS, CREATED, BankKey
from keepgui.ui.activity import kind_colours, local_midnight
from keepgui.ui.graph import ROW_LOD
from tests.calls import counting_calls
from tests.ui.test_screenshot import _screenshot


def graph_window(make_window, demo_copy, qtbot, bank="main"):
    window = make_window(demo_copy.iii, bank=bank)
    window.show_panel("graph")
    qtbot.waitUntil(lambda: window.graph.view.graph is not None and not window.graph.busy(), timeout=15_000)
    return window


def click_scene(qtbot, view, x: float, y: float, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    point = view.mapFromScene(x, y)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, point)


def live_keys(window) -> set[str]:
    return {r.id for r in window.hub.rows(window.current) if r.invalid_at is None}


def test_the_graph_draws_every_live_memory_of_the_bank_with_its_entities(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    graph = window.graph.view.graph
    assert set(graph.keys) == live_keys(window)
    rows = {r.id: r for r in window.hub.rows(window.current)}
    for i, key in enumerate(graph.keys):
        names = {graph.hubs[h].name for h in graph.links[i]}
        assert names == (set(rows[key].entities) or {"(no entities)"})
    assert "29 memories" in window.graph.status.text()


def test_a_click_on_a_node_selects_its_row_in_the_table_and_shows_it(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    view, graph = window.graph.view, window.graph.view.graph
    view.center_on_row(0)
    key = graph.keys[0]
    click_scene(qtbot, view, graph.xs[0], graph.ys[0])
    assert [r.id for r in window.memories.selected_records()] == [key]
    assert window.memories.detail.record.id == key
    assert window.graph.detail.record.id == key
    assert view.canvas.selected == {0}
    # Ctrl+click adds to the selection.
    other = next(i for i in range(len(graph.keys)) if i != 0)
    view.center_on_row(other)
    click_scene(qtbot, view, graph.xs[other], graph.ys[other], Qt.KeyboardModifier.ControlModifier)
    assert {r.id for r in window.memories.selected_records()} == {key, graph.keys[other]}


def test_rows_selected_in_the_table_are_ringed_in_the_graph(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    graph = window.graph.view.graph
    key = graph.keys[3]
    assert window.memories.select_key(key)
    assert window.graph.view.canvas.selected == {3}
    assert window.graph.detail.record.id == key
    window.memories.table.clearSelection()
    assert window.graph.view.canvas.selected == set()


def test_a_click_on_a_hub_selects_every_row_that_names_it(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    view, graph = window.graph.view, window.graph.view.graph
    hub = graph.hub_of("mike")
    view.fit()
    click_scene(qtbot, view, hub.x, hub.y)
    rows = {r.id for r in window.hub.rows(window.current) if r.invalid_at is None and "mike" in r.entities}
    assert {r.id for r in window.memories.selected_records()} == rows and len(rows) == hub.count > 1


def test_the_graph_filters_by_tag_and_shows_retired_memories_faded_under_history(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    panel = window.graph
    all_rows = window.hub.rows(window.current)
    panel.tag.setCurrentIndex(panel.tag.findData("people"))
    qtbot.waitUntil(lambda: panel.view.graph.options.tag == "people" and not panel.busy(), timeout=10_000)
    expected = {r.id for r in all_rows if r.invalid_at is None and "people" in r.tags}
    assert set(panel.view.graph.keys) == expected and expected
    panel.tag.setCurrentIndex(0)
    window.memories.act_history.setChecked(True)  # View → Show history
    qtbot.waitUntil(lambda: panel.view.graph.options.show_retired and not panel.busy(), timeout=10_000)
    graph = panel.view.graph
    retired = {r.id for r in all_rows if r.invalid_at is not None}
    assert retired and retired <= set(graph.keys)
    assert all(graph.retired[graph.index_of(k)] for k in retired)


def test_the_neighbourhood_of_the_selection_is_drawn_alone(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    rows = {r.id: r for r in window.hub.rows(window.current) if r.invalid_at is None}
    key = next(k for k, r in rows.items() if r.entities == ("sam", "mike") or set(r.entities) == {"sam", "mike"})
    window.memories.select_key(key)
    window.graph.toggle_around()
    qtbot.waitUntil(lambda: window.graph.view.graph.options.around is not None and not window.graph.busy())
    near = {k for k, r in rows.items() if {"sam", "mike"} & set(r.entities)}
    assert set(window.graph.view.graph.keys) == near


def test_an_appended_line_updates_the_graph_and_the_strip_without_a_rebuild(make_window, demo_copy, qtbot):
    window = graph_window(make_window, demo_copy, qtbot)
    panel, strip = window.graph, window.memories.strip
    qtbot.waitUntil(lambda: strip.activity is not None, timeout=10_000)
    graph = panel.view.graph
    before = {k: (graph.xs[i], graph.ys[i]) for i, k in enumerate(graph.keys)}
    events = len(strip.activity)
    today = strip.counts_on(QDate.currentDate())[CREATED]
    # Another process (the worker) appends one memory naming a known and a new entity.
    DataDir(demo_copy.iii).ensure_bank("main")[0].save("Mike learns the cello", entities=["mike", "cello"])
    key = fingerprint("Mike learns the cello")
    qtbot.waitUntil(lambda: graph.index_of(key) is not None, timeout=15_000)
    assert panel.view.graph is graph  # placed, not laid out again
    assert {k: (graph.xs[i], graph.ys[i]) for i, k in enumerate(graph.keys) if k in before} == before
    i = graph.index_of(key)
    assert {graph.hubs[h].name for h in graph.links[i]} == {"mike", "cello"}
    assert graph.hub_of("cello").count == 1
    qtbot.waitUntil(lambda: len(strip.activity) == events + 1, timeout=10_000)
    assert strip.counts_on(QDate.currentDate())[CREATED] == today + 1


def test_a_day_range_on_the_strip_filters_the_table_to_what_changed_then(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, bank="main")
    memories, strip = window.memories, window.memories.strip
    qtbot.waitUntil(lambda: strip.activity is not None, timeout=10_000)
    today = QDate.currentDate()
    first = today.addDays(-6)
    start, end = local_midnight(first), local_midnight(today.addDays(1))
    revisions = DataDir(demo_copy.iii).ensure_bank("main")[0].log
    changed = {m.id for _n, m in revisions.scan() if start <= m.updated_at < end}
    live = {r.id for r in window.hub.rows(window.current) if r.invalid_at is None}
    assert changed & live and live - changed  # the week holds some rows, not all
    # Drag across the week with the mouse.
    y = strip.height() // 2
    qtbot.mousePress(strip, Qt.MouseButton.LeftButton, pos=QPoint(int(strip.x_of(first)), y))
    qtbot.mouseMove(strip, QPoint(int(strip.x_of(today)), y))
    with qtbot.waitSignal(strip.rangeChosen, timeout=5_000):
        qtbot.mouseRelease(strip, Qt.MouseButton.LeftButton, pos=QPoint(int(strip.x_of(today)), y))
    assert strip.selection == (first, today)
    shown = {memories.proxy.index(r, 0).data(Qt.ItemDataRole.UserRole + 2) for r in range(memories.proxy.rowCount())}
    assert shown == changed & live
    assert memories.status.text().startswith(f"{len(shown)} changed")
    # The search box narrows within the range; clearing the range shows every day again.
    memories.search.setText("mike")
    qtbot.waitUntil(lambda: memories.proxy.rowCount() <= len(shown), timeout=5_000)
    memories.search.clear()
    strip.clear_range()
    assert memories.proxy.rowCount() == len(live)


def test_hovering_a_day_tells_its_counts_by_kind(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, bank="main")
    strip = window.memories.strip
    qtbot.waitUntil(lambda: strip.activity is not None, timeout=10_000)
    busy = max(strip._days, key=lambda d: sum(strip.counts_on(d).values()))
    counts = strip.counts_on(busy)
    text = strip.describe_day(busy)
    assert busy.toString("d MMM yyyy") in text and f": {sum(counts.values())} —" in text
    for kind in CAPTURE_KINDS:
        if counts[kind]:
            assert f"{counts[kind]} {kind}" in text
    assert strip.day_at(strip.x_of(busy)) == busy


def test_the_strip_of_keep_md_counts_versions_keepgui_saw(make_window, demo_copy, qtbot):
    from tests.ui.conftest import open_keep

    window, _key = open_keep(make_window, demo_copy, qtbot)
    strip = window.memories.strip
    qtbot.waitUntil(lambda: strip.activity is not None, timeout=10_000)
    assert len(strip.activity) == 0 and "recorded since" in strip.summary()
    with open(os.path.join(demo_copy.nanobot, "keep.md"), "a", encoding="utf-8") as fh:
        fh.write("- Learns the cello on Thursdays\n")
    qtbot.waitUntil(lambda: len(strip.activity) == 1, timeout=15_000)
    assert strip.counts_on(QDate.currentDate())[CREATED] == 1
    # The workspace's project shows in the graph as the hub of the entries that name it.
    window.show_panel("graph")
    qtbot.waitUntil(lambda: window.graph.view.graph is not None and not window.graph.busy(), timeout=15_000)
    hub = window.graph.view.graph.hub_of("slow-bytes")
    assert hub is not None and hub.count == 7


def test_at_ten_thousand_rows_the_zoomed_out_graph_draws_groups_not_rows(qtbot):
    from keepgui.ui.graph import GraphView
    from tests.bench.synth import make_records

    current = {}
    for record in make_records(10_000, 25_000):
        current[record.id] = record
    graph = build_graph(list(current.values()), {}, GraphOptions())
    assert graph.mode == "grouped" and len(graph) == sum(1 for r in current.values() if r.invalid_at is None)
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    view.set_graph(graph)
    qtbot.wait(50)
    view.viewport().repaint()
    assert view.zoom() < ROW_LOD and view.canvas.last_paint_rows == 0
    view.center_on_row(0)
    view.scale(2, 2)
    view.centerOn(graph.xs[0], graph.ys[0])  # offscreen, scale() anchors at a stale mouse point
    qtbot.wait(50)
    view.viewport().repaint()
    assert 0 < view.canvas.last_paint_rows < len(graph) / 4  # only the rows in view


def test_both_views_take_their_colours_from_the_palette(make_window, demo_copy, qtbot):
    app = QGuiApplication.instance()
    old = app.palette()
    dark = QPalette(old)
    for role, colour in (
        (QPalette.ColorRole.Window, QColor(30, 30, 30)),
        (QPalette.ColorRole.Base, QColor(20, 20, 20)),
        (QPalette.ColorRole.Text, QColor(230, 230, 230)),
        (QPalette.ColorRole.WindowText, QColor(230, 230, 230)),
        (QPalette.ColorRole.Highlight, QColor(200, 120, 20)),
    ):
        dark.setColor(role, colour)
    app.setPalette(dark)
    try:
        assert kind_colours()[CREATED] == QColor(200, 120, 20)
        window = graph_window(make_window, demo_copy, qtbot)
        image = window.graph.view.grab().toImage()
        corner = QColor(image.pixel(5, 5))
        assert corner.lightness() < 60  # the view's background follows the dark palette
    finally:
        app.setPalette(old)


def test_screenshots_of_the_graph_and_the_activity_strip(tmp_path):
    for panel in ("graph", "activity"):
        _seconds, png = _screenshot(tmp_path, "--demo", "--panel", panel)
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_a_day_shown_on_the_strip_starts_at_local_midnight():
    day = QDate(2025, 3, 30)  # a daylight-saving change in much of Europe
    assert QDateTime.fromMSecsSinceEpoch(local_midnight(day)).time().hour() == 0
    assert BankKey("s", "b").bank == "b"


def _ended(pid: int) -> bool:
    """The process is gone, or a zombie its parent has yet to reap (it holds nothing any more)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def test_the_panel_lays_out_in_a_child_process_ended_when_the_bank_changes(make_window, demo_copy, qtbot, monkeypatch):
    import keepgui.ui.graph as graph_ui
    from keepgui.core.graph import layout_worker

    monkeypatch.setattr(graph_ui, "PROCESS_FROM", 0)  # the demo's banks are small: every one goes there
    window = graph_window(make_window, demo_copy, qtbot)
    graph = window.graph.view.graph
    child = layout_worker().pid
    assert child is not None and graph.laid_out_by == child != os.getpid()
    assert set(graph.keys) == live_keys(window) and not graph.note
    window.graph.set_bank(None)  # another bank: the process and what it holds are let go at once
    qtbot.waitUntil(lambda: _ended(child) and layout_worker().pid is None, timeout=10_000)


def test_a_layout_stopped_under_way_is_dropped_without_an_error(make_window, demo_copy, qtbot, monkeypatch):
    import signal

    import keepgui.ui.graph as graph_ui
    from keepgui.core.graph import layout_worker

    monkeypatch.setattr(graph_ui, "PROCESS_FROM", 0)
    window = graph_window(make_window, demo_copy, qtbot)
    panel = window.graph
    child = layout_worker().pid
    os.kill(child, signal.SIGSTOP)  # the next layout waits for it
    panel.rebuild()
    qtbot.wait(200)
    assert panel.busy()
    panel.stop_layout()  # what quitting does (aboutToQuit)
    assert not panel.busy() and panel.view.graph is not None  # the graph drawn stays
    qtbot.waitUntil(lambda: _ended(child), timeout=10_000)
    qtbot.wait(200)  # the cancelled build's delivery arrives and is dropped
    assert "could not" not in panel.status.text() and not panel.busy()
    panel.rebuild()  # and the next build starts a new process
    qtbot.waitUntil(lambda: not panel.busy(), timeout=15_000)
    assert panel.view.graph.laid_out_by not in (child, os.getpid())


def test_a_frozen_app_and_a_small_graph_lay_out_in_this_process(monkeypatch):
    import sys

    from keepgui.core.graph import layout_worker
    from keepgui.ui.graph import PROCESS_FROM, worker_for

    assert worker_for(PROCESS_FROM - 1) is None
    assert worker_for(PROCESS_FROM) is layout_worker()
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # PyInstaller's one-folder app
    assert worker_for(1_000_000) is None


def test_a_frame_draws_its_dots_with_no_python_call_per_dot(qtbot):

    from keepgui.ui.graph import EDGE_BUDGET, GraphView
    from tests.bench.synth import make_records

    current = {r.id: r for r in make_records(10_000, 25_000)}
    graph = build_graph(list(current.values()), {}, GraphOptions())
    view = GraphView()
    qtbot.addWidget(view)
    view.show()
    view.set_graph(graph)
    big = max(graph.groups, key=lambda g: g.size)

    def calls_in_a_frame(side: int) -> tuple[int, int]:
        view.resize(side, side)
        view.resetTransform()
        view.scale(1.5, 1.5)
        view.centerOn(big.x, big.y)
        qtbot.wait(20)
        _, calls = counting_calls(view.viewport().repaint)
        return view.canvas.last_paint_rows, calls

    few, few_calls = calls_in_a_frame(150)
    many, many_calls = calls_in_a_frame(330)
    assert 0 < few < many / 3 and many <= EDGE_BUDGET  # both frames draw rows and their edges
    # Drawing four times the dots costs a few calls more (a hub or two come into view), not one per dot.
    assert many_calls - few_calls < (many - few) / 4, (few, few_calls, many, many_calls)


def test_local_midnight_is_qts_local_midnight_for_every_day_of_two_years():
    from PySide6.QtCore import QTime

    first = QDate(2025, 1, 1)
    for offset in range(731):
        day = first.addDays(offset)
        assert local_midnight(day) == QDateTime(day, QTime(0, 0)).toMSecsSinceEpoch(), day.toString()
