"""Issue 6's benchmark: start-up to the first painted window, and filtering as you type.

* Start-up: a fresh process opens keepgui's window on a 100,000-memory bank and
  reports when the window first paints, when the first rows are in the table
  (the load goes on in the background), and when the load is complete; the
  baseline is a fresh process painting a bare QMainWindow with one empty
  QTableView. Runs alternate between the two; medians are reported.
* Filter latency: a MemoryPanel holding 100,000 rows; each keystroke of
  realistic queries sets the search text and runs the filter to the updated
  proxy (target: median under 50 ms).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from tests.bench.common import Result, bank_in_data_dir, bench_size, cached_bank

_CHILD_BARE = r"""
import sys, time, json
t0 = float(sys.argv[1])
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow, QTableView
app = QApplication([])
window = QMainWindow(); window.setCentralWidget(QTableView()); window.resize(1200, 800)
class Painted(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint:
            print(json.dumps({"painted": time.time() - t0}), flush=True)
            app.quit()
        return False
f = Painted(); window.installEventFilter(f)
window.show()
QTimer.singleShot(20000, app.quit)
app.exec()
"""

_CHILD_KEEPGUI = r"""
import sys, time, json
t0 = float(sys.argv[1])
from PySide6.QtCore import QEvent, QObject, QTimer
from keepgui.cli import build_parser
from keepgui.ui.application import make_app, build_window
from keepgui.ui.settings import Settings
app = make_app()
args = build_parser().parse_args(["--data-dir", sys.argv[2], "--bank", "bank", "--reload-command", ""])
window = build_window(args, Settings(sys.argv[3]), watch=False)
window.resize(1200, 800)
marks = {}
class Painted(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and "painted" not in marks:
            marks["painted"] = time.time() - t0
        return False
def on_rows(parent, first, last):
    if "first_rows" not in marks:
        marks["first_rows"] = time.time() - t0
        marks["first_rows_count"] = last + 1
window.memories.model.rowsInserted.connect(on_rows)
def on_loaded(key):
    marks["loaded"] = time.time() - t0
    marks["rows"] = window.memories.proxy.rowCount()
    print(json.dumps(marks), flush=True)
    app.quit()
window.loaded.connect(on_loaded)
f = Painted(); window.installEventFilter(f)
window.show()
QTimer.singleShot(60000, app.quit)
app.exec()
"""


def _run_child(code: str, *args: str) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", code, repr(start), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"child failed: {done.stderr[-500:]}")
    return json.loads(lines[-1])


def startup(memories: int, lines: int, repeat: int) -> list[Result]:
    import tempfile

    folder = cached_bank(memories, lines)
    data_dir = os.path.dirname(folder)
    link_dir = tempfile.mkdtemp(prefix="keepgui-bench-dd-")
    bank_in_data_dir(folder, link_dir)
    settings = os.path.join(link_dir, "settings.json")
    bare, ours = [], []
    for _ in range(repeat):
        bare.append(_run_child(_CHILD_BARE)["painted"])
        ours.append(_run_child(_CHILD_KEEPGUI, link_dir, settings))
    painted = statistics.median(m["painted"] for m in ours)
    first_rows = statistics.median(m["first_rows"] for m in ours)
    loaded = statistics.median(m["loaded"] for m in ours)
    bare_s = statistics.median(bare)
    assert all(m["rows"] > 0 for m in ours), data_dir
    return [
        Result(
            f"process start → first painted window, {memories:,} memories",
            painted,
            "s",
            bare_s,
            "bare PySide6 window + empty table",
            painted / bare_s,
            "×",
            "report the ratio",
            None,
        ),
        Result(
            "process start → first rows in the table (load continues)",
            first_rows,
            "s",
            loaded,
            "full load",
            100 * first_rows / loaded,
            "%",
            "usable before the load ends",
            first_rows < loaded,
        ),
        Result("process start → bank fully loaded", loaded, "s", note="rows stream in while the load runs"),
    ]


def filter_latency(memories: int) -> Result:
    from PySide6.QtWidgets import QApplication

    from keepgui.core.search import TextSearch
    from keepgui.core.source import Capabilities
    from keepgui.ui.memorypanel import MemoryPanel
    from keepgui.ui.memorypanel.search import search_texts
    from tests.bench.synth import make_records

    app = QApplication.instance() or QApplication([])
    records = {}
    for memory in make_records(memories, memories, seed=5):
        records[memory.id] = memory
    rows = list(records.values())
    panel = MemoryPanel()
    panel.reset_rows(rows, Capabilities())
    index = TextSearch()
    index.set_many((r.id, search_texts(r)) for r in rows)
    panel.index._index = index  # the background build, done here synchronously for the measurement
    queries = [
        "grafana dashboards",
        "formal writing",
        "postgres 16",
        "green tea",
        "deploy pipeline",
        "mike prefers",
        "kubernetes",
        "the lisbon office",
        "weekly releases",
        "squash merges",
    ]
    latencies = []
    for query in queries:
        panel.search.blockSignals(True)
        for n in range(1, len(query) + 1):
            panel.search.setText(query[:n])
            start = time.perf_counter()
            panel._apply_query()
            latencies.append(time.perf_counter() - start)
        panel.search.setText("")
        panel._apply_query()
        panel.search.blockSignals(False)
    app.processEvents()
    median = statistics.median(latencies)
    worst = max(latencies)
    return Result(
        f"filter latency per keystroke, {memories:,} rows",
        median * 1000,
        "ms",
        target="< 50 ms median",
        met=median < 0.050,
        note=f"{len(latencies)} keystrokes, slowest {worst * 1000:.0f} ms, "
        f"p90 {statistics.quantiles(latencies, n=10)[-1] * 1000:.0f} ms",
    )


def run(quick: bool = False) -> list[Result]:
    memories = bench_size(quick)
    lines = memories * 5 // 2
    return startup(memories, lines, 3 if quick else 5) + [filter_latency(memories)]


if __name__ == "__main__":
    from tests.bench.common import print_table

    print_table(run("--quick" in sys.argv))
