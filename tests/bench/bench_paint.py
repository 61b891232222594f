"""What one repaint of the memory table costs, beside the same cells held in C++.

A window opened on a bank (the real ``launch``, 1200×800 like :mod:`tests.bench.bench_block`) is left
to settle; then its memory table's viewport is repainted again and again, alternating with a *twin*:
a plain ``QTableView`` of the same size, font, row height and column widths over a
``QStandardItemModel`` holding the very cells the table shows (every role the table's delegates ask
for, copied once), drawn by Qt's own delegate — the same picture with no call into Python. The two
are timed alternately, each repaint in a turn of the event loop of its own (the window idles between
two, as between frames), :data:`REPEAT` times each (medians): quiet, and then beside a background
thread that runs Python in steps of :data:`STEP_S` with :func:`keepgui.core.pace.checkpoint` between
them, as keepgui's own loads do; and the Python functions one repaint calls are counted. The twin is the floor of a table whose cells
live in C++: the figure says what a table model written in Python costs the GUI thread per frame, the
reason the window's blocks stay above a frame while background work runs (issue 32).

    python -m tests.bench.bench_paint
"""

from __future__ import annotations

import tempfile

from tests.bench.common import ROOT, Result, bank_in_data_dir, bench_size, cached_bank, run_in_tree

STEP_S = 0.002
"""Python work between two checkpoints of the background thread (seconds)."""

REPEAT = 21

_SCRIPT = r"""
import json, os, statistics, sys, tempfile, threading, time
os.environ["KEEPGUI_HOME"] = tempfile.mkdtemp(prefix="keepgui-bench-home-")
from PySide6.QtCore import QTimer
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QApplication, QTableView
import keepgui
from keepgui.cli import main
from keepgui.core import pace
from keepgui.ui import mainwindow, tasks
data_dir, total, step, repeat = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
state = {"idle": None}
ROLES = (0, 1, 6, 7, 8, 9, 10)  # display, decoration, font, text alignment, background, foreground, check state

def twin_of(table):
    proxy, viewport = table.model(), table.viewport()
    top, bottom = table.rowAt(0), table.rowAt(viewport.height() - 1)
    bottom = proxy.rowCount() - 1 if bottom < 0 else bottom
    cells = QStandardItemModel(proxy.rowCount(), proxy.columnCount())
    for row in range(top, bottom + 1):
        for column in range(proxy.columnCount()):
            item, index = QStandardItem(), proxy.index(row, column)
            item.setFlags(proxy.flags(index))
            for role in ROLES:
                value = proxy.data(index, role)
                if value is not None:
                    item.setData(value, role)
            cells.setItem(row, column, item)
    twin = QTableView()
    twin.setModel(cells)
    twin.setFont(table.font())
    twin.verticalHeader().setVisible(table.verticalHeader().isVisible())
    twin.verticalHeader().setDefaultSectionSize(table.verticalHeader().defaultSectionSize())
    twin.setShowGrid(table.showGrid())
    twin.setAlternatingRowColors(table.alternatingRowColors())
    twin.setWordWrap(table.wordWrap())
    for column in range(proxy.columnCount()):
        twin.setColumnHidden(column, table.isColumnHidden(column))
        twin.setColumnWidth(column, table.columnWidth(column))
    twin.resize(table.size())
    twin.show()
    twin.verticalScrollBar().setValue(table.verticalScrollBar().value())
    return twin, (bottom - top + 1, sum(not table.isColumnHidden(c) for c in range(proxy.columnCount())))

def alternate(a, b, then):
    # a and b repainted in turn, each in a turn of the event loop of its own (the window idles between
    # two, as between frames), repeat times each; then then((median of a, median of b))
    times = ([], [])
    order = [0, 1] * repeat
    def step():
        if not order:
            then((statistics.median(times[0]), statistics.median(times[1])))
            return
        which = order.pop(0)
        t = time.perf_counter(); (a, b)[which](); times[which].append(time.perf_counter() - t)
        QTimer.singleShot(5, step)
    QTimer.singleShot(5, step)

def calls(paint):
    n = [0]
    def count(frame, event, arg):
        if event == "call":
            n[0] += 1
    sys.setprofile(count); paint(); sys.setprofile(None)
    return n[0]

def spin(stop, paced=True):
    x = 0
    while not stop.is_set():
        end = time.perf_counter() + step
        while time.perf_counter() < end:
            for i in range(200):
                x += i
        if paced:
            pace.checkpoint()

def measure(window):
    table = window.memories.table
    twin, shape = twin_of(table)
    QApplication.processEvents()
    ours, theirs = table.viewport().repaint, twin.viewport().repaint
    ours(); theirs()
    marks = {"tree": os.path.dirname(os.path.dirname(keepgui.__file__)), "shape": shape,
             "viewport": list(table.viewport().size().toTuple())}
    marks["calls"] = (calls(ours), calls(theirs))
    marks["switch_ms"] = sys.getswitchinterval() * 1000
    stops = [threading.Event(), threading.Event()]
    def quiet(found):
        marks["quiet"] = found
        threading.Thread(target=spin, args=(stops[0],), daemon=True).start()
        alternate(ours, theirs, busy)
    def busy(found):
        marks["busy"] = found
        stops[0].set()
        threading.Thread(target=spin, args=(stops[1], False), daemon=True).start()
        alternate(ours, theirs, unpaced)
    def unpaced(found):
        marks["unpaced"] = found
        stops[1].set()
        print(json.dumps(marks), flush=True)
        QApplication.instance().quit()
    state["twin"] = twin
    alternate(ours, theirs, quiet)

def poll():
    window = state["window"]
    panel = window.memories
    busy = window.hub.busy() or any(lane.pending() for lane in tasks.runner().lanes())
    if panel.model.rowCount() == total and getattr(panel, "_building", None) is None and not busy:
        state["idle"] = state["idle"] or time.perf_counter()
        if time.perf_counter() - state["idle"] >= 2.0:
            state["poller"].stop()
            measure(window)
    else:
        state["idle"] = None

shown = mainwindow.MainWindow.show
def show(window):
    shown(window)
    if "window" not in state:
        window.resize(1200, 800)
        state["window"] = window
        state["poller"] = poller = QTimer()
        poller.setInterval(20)
        poller.timeout.connect(poll)
        poller.start()
        QTimer.singleShot(900_000, QApplication.instance().quit)
mainwindow.MainWindow.show = show
main(["--data-dir", data_dir, "--bank", "bank", "--reload-command", ""])
"""


def run(quick: bool = False) -> list[Result]:
    """The table's repaint beside its twin's, quiet and beside background work; the calls into Python."""
    n = bench_size(quick)
    with tempfile.TemporaryDirectory() as data_dir:
        bank_in_data_dir(cached_bank(n, int(n * 2.5)), data_dir)
        got = run_in_tree(ROOT, _SCRIPT, [data_dir, str(n), str(STEP_S), str(REPEAT)], timeout=900)
    rows, columns = got["shape"]
    (quiet, quiet_twin), (busy, busy_twin), (unpaced, unpaced_twin) = got["quiet"], got["busy"], got["unpaced"]
    ours, theirs = got["calls"]
    shape = f"{rows} rows × {columns} columns, viewport {got['viewport'][0]}×{got['viewport'][1]}, {n:,} memories"
    twin = "the same cells held in C++ (QStandardItemModel, Qt's delegate)"
    return [
        Result(
            f"memory table repaint ({shape})",
            quiet * 1000,
            "ms",
            quiet_twin * 1000,
            twin,
            quiet / quiet_twin,
            "×",
            "≤ 16 ms (a frame)",
            quiet <= 0.016,
            f"medians of {REPEAT}, the two alternating",
        ),
        Result(
            "the same, a background thread running Python beside it (paced as keepgui's loads are)",
            busy * 1000,
            "ms",
            busy_twin * 1000,
            twin,
            busy / busy_twin,
            "×",
            "≤ 16 ms (a frame)",
            busy <= 0.016,
            f"the thread runs {STEP_S * 1000:.0f} ms of Python between two pace.checkpoint() calls",
        ),
        Result(
            "the same, a background thread running Python that never gives way (no checkpoint)",
            unpaced * 1000,
            "ms",
            unpaced_twin * 1000,
            twin,
            unpaced / unpaced_twin,
            "×",
            "≤ 16 ms (a frame)",
            unpaced <= 0.016,
            "what a third-party library's long loop, or one C call holding the interpreter lock, does to it: "
            "each call into Python waits for the lock (switch interval "
            f"{got['switch_ms']:.0f} ms)",
        ),
        Result(
            "Python functions called in one repaint of the memory table",
            float(ours),
            "calls",
            float(theirs),
            "the twin's repaint",
            None,
            "",
            "reported",
            None,
            f"{ours / (rows * columns):.0f} a cell",
        ),
    ]


if __name__ == "__main__":
    from tests.bench.common import print_table

    print_table(run())
