"""Issue 18's benchmark: the memory graph and the activity strip at 10,000 and 100,000 memories.

On generated banks (2.5 log lines per memory, :mod:`tests.bench.synth`):

* graph: building and laying out the graph off the GUI thread, against loading the bank itself
  (the replay) in the same run; a frame of the Graph view zoomed out and zoomed in, against an
  empty QGraphicsView's frame; one appended row placed live, against laying it all out again;
  the longest GUI-thread block while the Graph panel builds and shows a 100,000-memory graph
  (a 1 ms timer's longest gap), against the same loop with nothing to do;
* activity: reading every revision of the log into capture events, against the replay;
  reading one appended line, against reading it all; counting a year of days (what the strip
  does on the GUI thread at each repaint), and finding the keys of a 30-day range (off it).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time

from tests.bench.common import Result, bank_in_data_dir, cached_bank, fresh_copy, interleaved, median_time

DAY = 86_400_000


def _rows(folder: str):
    """The bank of a cached bank folder, loaded (the replay: the baseline of several figures)."""
    from keepgui.core.iii.log import MemoryLog

    log = MemoryLog(os.path.join(folder, "memories.jsonl"))
    log.refresh()
    return log


def _frame(app, view) -> float:
    """One full repaint of the view, in seconds (median of 5 after a first, cached one)."""
    view.viewport().repaint()
    app.processEvents()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        view.viewport().repaint()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _longest_block(app, work, done) -> float:
    """The longest gap between ticks of a 1 ms GUI-thread timer while ``work()`` runs until ``done()``."""
    from PySide6.QtCore import QTimer

    gaps = [0.0]
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(1)
    timer.timeout.connect(tick)
    timer.start()
    last[0] = time.perf_counter()
    work()
    deadline = time.perf_counter() + 300
    while not done() and time.perf_counter() < deadline:
        app.processEvents()
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        app.processEvents()
    timer.stop()
    return max(gaps[1:]) if len(gaps) > 1 else 0.0


def _graph_results(app, memories: int, lines: int) -> list[Result]:
    from PySide6.QtWidgets import QGraphicsView

    from keepgui.core.graph import build_graph
    from keepgui.ui.graph import GraphView

    folder = cached_bank(memories, lines)
    bank = _rows(folder)
    rows = list(bank.records.values())
    repeat = 3 if memories <= 10_000 else 2
    t_build, t_load = interleaved(lambda: build_graph(rows), lambda: _rows(folder), repeat=repeat)
    graph = build_graph(rows)
    view = GraphView()
    view.resize(1200, 800)
    view.show()
    view.set_graph(graph)
    app.processEvents()
    empty = QGraphicsView()
    empty.resize(1200, 800)
    empty.show()
    app.processEvents()
    t_empty = _frame(app, empty)
    t_fit = _frame(app, view)
    # Zoomed in on the largest group, as a person looking at rows one by one.
    big = max(range(len(graph.groups)), key=lambda g: graph.groups[g].size) if graph.groups else None
    view.scale(2 / view.zoom(), 2 / view.zoom())
    if big is not None:
        view.centerOn(graph.groups[big].x, graph.groups[big].y)
    app.processEvents()
    t_zoom = _frame(app, view)
    in_view = view.canvas.last_paint_rows
    serial = iter(range(1_000_000))

    def place_one() -> None:
        n = next(serial)
        graph.update([rows[-1].replace(id=f"fpbench{n:011d}", text=f"appended {n}", revision=0, invalid_at=None)])
        view.canvas.invalidate(graph.touched)
        graph.touched.clear()

    t_update = median_time(place_one, repeat=5)
    view.close()
    empty.close()
    n = f"{memories:,}"
    return [
        Result(
            f"graph built and laid out, {n} memories",
            t_build,
            "s",
            t_load,
            "loading the bank",
            t_build / t_load,
            "×",
            "off the GUI thread",
            None,
            f"{graph.mode} layout: {len(graph.hubs)} hubs, {len(graph.groups)} groups",
        ),
        Result(
            f"graph frame zoomed out, {n} memories",
            t_fit * 1000,
            "ms",
            t_empty * 1000,
            "empty QGraphicsView",
            t_fit / t_empty if t_empty else None,
            "×",
            "≤ 16 ms",
            t_fit <= 0.016,
        ),
        Result(
            f"graph frame zoomed in (2:1), {n} memories",
            t_zoom * 1000,
            "ms",
            t_empty * 1000,
            "empty QGraphicsView",
            t_zoom / t_empty if t_empty else None,
            "×",
            "≤ 16 ms",
            t_zoom <= 0.016,
            f"{in_view:,} rows drawn one by one",
        ),
        Result(
            f"graph: an appended row placed live, {n} memories",
            t_update * 1000,
            "ms",
            t_build * 1000,
            "laying it out again",
            t_build / t_update if t_update else None,
            "× faster",
            "≤ 16 ms",
            t_update <= 0.016,
        ),
    ]


def _panel_block(app, memories: int, lines: int) -> list[Result]:
    from keepgui.core.source import BankKey
    from keepgui.ui.graph import GraphPanel
    from keepgui.ui.hub import Hub

    folder = cached_bank(memories, lines)
    data_dir = tempfile.mkdtemp(prefix="keepgui-bench-views-")
    bank_in_data_dir(folder, data_dir)
    hub = Hub(reload_command="", watch=False)
    hub.add("iii", data_dir)
    key = BankKey(os.path.abspath(data_dir), "bank")
    hub.open_bank(key)
    deadline = time.perf_counter() + 300
    while not hub.is_loaded(key) and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.01)
    panel = GraphPanel(hub)
    panel.resize(1400, 900)
    panel.show()
    idle = _longest_block(app, lambda: None, lambda: True)
    blocked = _longest_block(
        app, lambda: panel.set_bank(key), lambda: panel.view.graph is not None and not panel.busy()
    )
    panel.close()
    hub.shutdown()
    shutil.rmtree(data_dir, ignore_errors=True)
    return [
        Result(
            f"GUI thread longest block while the graph of {memories:,} memories is built and shown",
            blocked * 1000,
            "ms",
            idle * 1000,
            "idle event loop",
            None,
            "",
            "≤ 16 ms",
            blocked <= 0.016,
            "longest gap between ticks of a 1 ms timer on the GUI thread",
        )
    ]


def _activity_results(memories: int, lines: int) -> list[Result]:
    from keepgui.core.iii.activity import ActivityIndex
    from keepgui.core.iii.record import Memory

    folder = cached_bank(memories, lines)
    log = os.path.join(folder, "memories.jsonl")
    repeat = 3 if memories <= 10_000 else 2
    t_index, t_load = interleaved(lambda: ActivityIndex(log).sync(), lambda: _rows(folder), repeat=repeat)
    copy = fresh_copy(folder)
    copied = os.path.join(copy, "memories.jsonl")
    index = ActivityIndex(copied)
    index.sync()
    events = len(index)
    appended = []

    def append_one() -> None:
        n = len(appended)
        record = Memory(
            id=f"fpbench{n:011d}",
            text=f"appended {n}",
            entities=(),
            tags=(),
            confidence="stated",
            corroboration=0,
            pinned=False,
            created_at=1_750_000_000_000 + n,
            updated_at=1_750_000_000_000 + n,
            revision=0,
        )
        with open(copied, "ab") as fh:
            fh.write(record.to_line())
        appended.append(record)

    t_tail = median_time(lambda: index.sync() and index.snapshot(), repeat=5, setup=append_one)
    activity = index.snapshot()
    now = 1_750_000_000_000
    bounds = [now - (365 - i) * DAY for i in range(366)]
    t_counts = median_time(lambda: activity.counts(bounds), repeat=7)
    t_keys = median_time(lambda: activity.keys_between(now - 30 * DAY, now), repeat=5)
    found = len(activity.keys_between(now - 30 * DAY, now))
    shutil.rmtree(copy, ignore_errors=True)
    n = f"{memories:,}"
    return [
        Result(
            f"activity: every revision read into events, {n} memories",
            t_index,
            "s",
            t_load,
            "loading the bank",
            t_index / t_load,
            "×",
            "off the GUI thread",
            None,
            f"{events:,} events from {lines:,} lines",
        ),
        Result(
            f"activity: one appended line read (and a snapshot), {n} memories",
            t_tail * 1000,
            "ms",
            t_index * 1000,
            "reading it all",
            t_index / t_tail if t_tail else None,
            "× faster",
            "off the GUI thread",
        ),
        Result(
            f"activity strip: a year of days counted, {n} memories",
            t_counts * 1000,
            "ms",
            None,
            "",
            None,
            "",
            "≤ 16 ms (GUI thread)",
            t_counts <= 0.016,
        ),
        Result(
            f"activity strip: keys of a 30-day range, {n} memories",
            t_keys * 1000,
            "ms",
            None,
            "",
            None,
            "",
            "off the GUI thread",
            None,
            f"{found:,} rows changed in those days",
        ),
    ]


def run(quick: bool = False) -> list[Result]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from keepgui.ui.application import make_app

    app = make_app()
    sizes = [(10_000, 25_000)] if quick else [(10_000, 25_000), (100_000, 250_000)]
    results: list[Result] = []
    for memories, lines in sizes:
        results += _graph_results(app, memories, lines)
        results += _activity_results(memories, lines)
    results += _panel_block(app, *sizes[-1])
    return results


if __name__ == "__main__":
    import sys

    from tests.bench.common import print_table

    print_table(run("--quick" in sys.argv))
