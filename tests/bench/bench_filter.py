"""Issue 15's filter figure: the GUI thread per keystroke of the search box, this tree beside a
baseline tree in the same run.

A child process per tree (``PYTHONPATH`` = the tree) loads a generated bank (the core replay), shows
a :class:`~keepgui.ui.memorypanel.MemoryPanel` of its rows (sorted, search index built), then types
realistic queries one character at a time and clears the box after each ("cleared"), with history
off and on and within a day range. For each keystroke it records the longest gap of a 1 ms timer on the GUI thread from the text set until
the table shows the query's rows (and a paint), how long that took, the time the GUI thread spent
in the panel's filter slots (``_apply_query``, and the lane's ``_on_answer``), each also less the
GUI thread's run-queue wait in it (``/proc/self/task/<tid>/schedstat``: machine contention, not our
work), the time of one repaint of the table's cells after it settled (the repaint alone), and a
digest of the rows shown, in order, which must be the same for both trees.

    KEEPGUI_BENCH_BASELINE=/tmp/mainsnap KEEPGUI_BENCH_SIZES=100000,1000000 python -m tests.bench.bench_filter

Under ``make bench`` (:func:`run`, at :func:`~tests.bench.common.bench_sizes`) the typed keystrokes
of the three modes give three figures per size, medians: the GUI thread's work in the filter slots,
the longest GUI block from the text set to the rows painted, the time until the rows are shown;
each beside the table's repaint alone in the same run (or, with ``KEEPGUI_BENCH_BASELINE``, beside
that tree's figure, the rows shown compared at every keystroke).
"""

from __future__ import annotations

import json
import os
import statistics
import sys

from tests.bench.common import ROOT, Result, bench_sizes, cached_bank, print_table, run_in_tree

QUERIES = ["grafana dashboards", "mike prefers", "postgres 16", "the lisbon office", "kubernetes"]

_CHILD = r"""
import sys, time, json, os, hashlib
import keepgui
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from keepgui.backends.iii.log import MemoryLog
from keepgui.core.source import Capabilities
from keepgui.ui.memorypanel import MemoryPanel
path, queries = sys.argv[1], json.loads(sys.argv[2])
import threading
_SCHEDSTAT = f"/proc/self/task/{threading.get_native_id()}/schedstat"
def queued():  # seconds the GUI thread has waited, ready to run, for a CPU (0 where Linux does not say)
    try:
        with open(_SCHEDSTAT, "rb", buffering=0) as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0
# seconds the GUI thread spent in the panel's filter slots (nested calls once), and that less its run-queue wait
work = [0.0, 0.0]
depth = [0]
def timed(fn):
    def wrapper(*args, **kwargs):
        depth[0] += 1
        start, waited = time.perf_counter(), queued()
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                took = time.perf_counter() - start
                work[0] += took
                work[1] += took - (queued() - waited)
    return wrapper
for name in ("_apply_query", "_on_answer"):  # before the panel connects them
    if hasattr(MemoryPanel, name):
        setattr(MemoryPanel, name, timed(getattr(MemoryPanel, name)))
log = MemoryLog(path)
log.refresh()
rows = list(log.records.values())
app = QApplication([])
panel = MemoryPanel()
panel.resize(1200, 800)
panel.show()

def spin(until, limit=600.0):
    deadline = time.perf_counter() + limit
    while not until() and time.perf_counter() < deadline:
        app.processEvents()
        time.sleep(0.0005)

panel.build_rows(rows)
spin(lambda: panel._building is None and panel.model.rowCount() == len(rows))
spin(lambda: panel.index.is_ready)
spin(lambda: False, 1.0)
gaps = []  # (gap, gap less the GUI thread's run-queue wait in it)
last = [time.perf_counter(), queued()]
def tick():
    now, waited = time.perf_counter(), queued()
    gaps.append((now - last[0], now - last[0] - (waited - last[1])))
    last[0], last[1] = now, waited
timer = QTimer(); timer.setInterval(1); timer.timeout.connect(tick); timer.start()

def settled():
    return not panel._debounce.isActive() and not getattr(panel, "_asking", None)

def digest():
    proxy = panel.proxy
    n = proxy.rowCount()
    keys = [panel.model.row_object(proxy.source_row(r)).id for r in range(n)]
    return n, hashlib.sha1("\n".join(keys).encode()).hexdigest()[:12]

def keystroke(text):
    spin(lambda: False, 0.02)
    del gaps[:]
    work[0] = work[1] = 0.0
    start = time.perf_counter()
    last[0], last[1] = start, queued()
    panel.search.setText(text)
    spin(settled)
    done = time.perf_counter() - start
    spin(lambda: False, 0.02)  # the paint that follows
    now = time.perf_counter()
    block = max(gaps + [(now - last[0], now - last[0] - (queued() - last[1]))])
    paint_start = time.perf_counter()
    panel.table.viewport().repaint()  # the repaint alone: every cell shown drawn once more, at once
    paint = time.perf_counter() - paint_start
    return block, done, tuple(work), paint

out = {"tree": os.path.dirname(os.path.dirname(keepgui.__file__)), "steps": []}
day_keys = {r.id for r in rows[::7]}  # a day range's key set, as the strip hands it over
for mode in ("live", "history", "days"):
    panel.history.setChecked(mode == "history")
    panel.set_day_filter(day_keys if mode == "days" else None, "some days")
    spin(lambda: not getattr(panel, "_asking", None))
    for query in queries:
        for n in range(1, len(query) + 1):
            block, latency, spent, paint = keystroke(query[:n])
            shown, dig = digest()
            out["steps"].append([mode, query[:n], block[0], latency, shown, dig, spent[0], block[1], spent[1], paint])
        block, latency, spent, paint = keystroke("")  # the box cleared: every row of the mode again
        shown, dig = digest()
        out["steps"].append([mode + " cleared", "", block[0], latency, shown, dig, spent[0], block[1], spent[1], paint])
print(json.dumps(out), flush=True)
"""


_FIGURES = [
    ("filter work on the GUI thread (its slots)", 6),
    ("  less the GUI thread's run-queue wait", 8),
    ("longest GUI block, text set → rows shown and painted", 2),
    ("  less the GUI thread's run-queue wait", 7),
    ("the repaint alone (viewport repaint after)", 9),
    ("text → rows shown", 3),
]
"""What is printed per tree and mode: a label and the step's field (seconds)."""


def run_tree(tree: str, log_path: str) -> dict:
    """One child process of ``tree`` typing the queries: its steps (see the module)."""
    return run_in_tree(tree, _CHILD, [log_path, json.dumps(QUERIES)], timeout=3600)


def _typed(steps: list) -> list:
    """The keystrokes of a run that type (not those that clear the box)."""
    return [step for step in steps if not step[0].endswith("cleared")]


def results(memories: int, found: dict[str, dict]) -> list[Result]:
    """The filter's figures for one size, each beside the table's own repaint of the same run (the floor
    of what a keystroke that changes the rows shown costs the GUI thread); with a baseline tree, beside
    its figures too."""
    n = f"{memories:,}"
    steps = _typed(found["lane"]["steps"])
    repaint = statistics.median(s[9] for s in steps)
    out = []
    for label, at, target, goal in (
        ("filter: GUI-thread work per keystroke", 6, "≤ 16 ms (longest)", 0.016),
        ("filter: longest GUI block per keystroke (text set → rows painted)", 2, "≤ 16 ms (median)", 0.016),
        ("filter: text → rows shown per keystroke", 3, "< 50 ms (median)", 0.050),
    ):
        values = [s[at] for s in steps]
        median, longest = statistics.median(values), max(values)
        met = longest <= goal if "longest" in target else median < goal if "<" in target else median <= goal
        base, base_name = repaint, "the table's repaint alone"
        if "baseline" in found:
            base = statistics.median(s[at] for s in _typed(found["baseline"]["steps"]))
            base_name = "KEEPGUI_BENCH_BASELINE, same run"
        out.append(
            Result(
                f"{label}, {n}",
                median * 1000,
                "ms",
                base * 1000,
                base_name,
                median / base if base else None,
                "×",
                target,
                met,
                f"median of {len(steps)} keystrokes (history off, on, a day range), longest {longest * 1000:.1f} ms",
            )
        )
    if "baseline" in found:
        lane = [(s[0], s[1], s[4], s[5]) for s in found["lane"]["steps"]]
        base_rows = [(s[0], s[1], s[4], s[5]) for s in found["baseline"]["steps"]]
        if lane != base_rows:
            raise AssertionError(f"the rows shown differ from the baseline tree's at {memories:,} memories")
        out[-1].note += "; rows shown identical to the baseline tree's at every keystroke"
    return out


def run(quick: bool = False) -> list[Result]:
    """``make bench``: the filter's figures at every size (one child per tree and size)."""
    baseline = os.environ.get("KEEPGUI_BENCH_BASELINE")
    trees = [("lane", ROOT)] + ([("baseline", baseline)] if baseline else [])
    out: list[Result] = []
    for memories in bench_sizes(quick):
        log_path = os.path.join(cached_bank(memories, int(memories * 2.5)), "memories.jsonl")
        out += results(memories, {name: run_tree(tree, log_path) for name, tree in trees})
    return out


def main() -> None:
    """Print each tree's median and longest GUI-thread block per keystroke, per size."""
    baseline = os.environ.get("KEEPGUI_BENCH_BASELINE")
    sizes = [int(s) for s in os.environ.get("KEEPGUI_BENCH_SIZES", "100000").split(",")]
    trees = [("lane", ROOT)] + ([("baseline", baseline)] if baseline else [])
    for memories in sizes:
        log_path = os.path.join(cached_bank(memories, int(memories * 2.5)), "memories.jsonl")
        results = {name: run_tree(tree, log_path) for name, tree in trees}
        for name, _ in trees:
            steps = results[name]["steps"]
            for mode in ("live", "history", "days", "live cleared", "history cleared", "days cleared"):
                mine = [s for s in steps if s[0] == mode]
                print(f"{memories:>9,} {name:8} {mode}: {len(mine)} keystrokes, median / max:", flush=True)
                for label, at in _FIGURES:
                    values = [s[at] * 1000 for s in mine]
                    print(f"{'':29}{label:58} {statistics.median(values):7.1f} / {max(values):7.1f} ms", flush=True)
                worst = sorted(mine, key=lambda s: -s[2])[:3]
                print(f"{'':29}longest blocks at: " + ", ".join(f"{s[1]!r} {s[2] * 1000:.0f} ms" for s in worst))
        if baseline:
            lane = [(s[0], s[1], s[4], s[5]) for s in results["lane"]["steps"]]
            base = [(s[0], s[1], s[4], s[5]) for s in results["baseline"]["steps"]]
            differ = [(a, b) for a, b in zip(lane, base, strict=True) if a != b]
            print(f"{memories:>9,} rows shown identical at every keystroke: {not differ} {differ[:3]}", flush=True)


if __name__ == "__main__":
    if "--table" in sys.argv:
        print_table(run("--quick" in sys.argv))
    else:
        main()
