"""The window while a bank loads, as a person opening it gets it: this tree beside a baseline tree.

Each window is a fresh ``keepgui --data-dir D --bank NAME`` process started through the command line's
own entry point (the real ``launch``: the file watcher, the desktop integration, a first start's
settings in a home of its own), watched by :mod:`tests.bench.guiwatch` from the moment the window is
shown, just before ``QApplication.exec``, until it **settles**: every row in the table and no
background work queued or running for :data:`SETTLE_S` (the search index, the activity strip, the
preview and the sidebar's counts are built after the table is full; a person's window does that
work too). Before issue 32 the watch stopped when the table was full and the window was built
without the watcher: at 100,000 memories that missed the longest blocks (the preview's first index
beside the GUI thread, the activity strip's sort) and two thirds of the peak RSS; the figures up to
the full table are kept in the notes.

For each size, the processes of this tree and of the baseline tree (``KEEPGUI_BENCH_BASELINE``: a
checkout of main, e.g. ``git archive main | tar -x -C DIR``; more trees as
``KEEPGUI_BENCH_EXTRA=name=DIR;name=DIR``) alternate with a bare PySide6 window (a tree and a table,
watched the same way), ``KEEPGUI_BENCH_REPEAT`` times (default 3), and each figure is the median:
the longest GUI-thread block (the longest gap of a 1 ms timer) with the window opened on the bank
beside the bare window's first show, and with the window opened on a bank of 100 (the window's own
first show, the floor of that figure); the longest block while the bank opens in a window already up
(a 100-memory bank shown first, the big one selected once all was idle a second) beside the bare
window idling; the first rows after that switch and the table fully loaded; the table fully loaded
beside the core load (``MemoryLog.refresh`` in a fresh process, wall time; its CPU time in the
note); the window settled beside the table full; the window's peak RSS beside the bare window's;
with ``KEEPGUI_BENCH_BASELINE``, the two blocks beside that tree's too. Beside each block, the block
less the GUI thread's wait for a CPU in it (its run-queue wait, from Linux's schedstat: what a
machine busy with other work added) and the longest blocks explained by the GUI thread's stacks.

    KEEPGUI_BENCH_BASELINE=/tmp/mainsnap KEEPGUI_BENCH_SIZES=10000,100000 python -m tests.bench.bench_block
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from dataclasses import dataclass

from tests.bench.common import ROOT, Result, bank_in_data_dir, bench_sizes, cached_bank, print_table, run_in_tree

WATCH = os.path.join(ROOT, "tests", "bench", "guiwatch.py")
SETTLE_S = 2.0
SMALL = 100
"""The memories of the small bank a window is also opened on: its blocks are the window's own first show
(its panels built, laid out and painted), beside the bare window's, apart from the big bank's load."""
"""The window has settled once every row is in and no background work was queued or running for this long."""

_WINDOW = r"""
import sys, time, json, os, resource, tempfile, importlib.util, subprocess, atexit, shutil
os.environ["KEEPGUI_HOME"] = tempfile.mkdtemp(prefix="keepgui-bench-home-")  # a person's first start: no settings
atexit.register(shutil.rmtree, os.environ["KEEPGUI_HOME"], True)  # its cache holds a copy of the bank's state
if os.environ.get("KEEPGUI_BENCH_WARM"):  # the bank read once before (by a command): its cache is there
    subprocess.run([sys.executable, "-m", "keepgui", "--data-dir", sys.argv[1], "preview", "x", "--bank", "bank"],
                   check=True, stdout=subprocess.DEVNULL)
t0 = time.perf_counter()
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
import keepgui
from keepgui.cli import main
from keepgui.ui import mainwindow, tasks
data_dir, total, watch_path, first, settle = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
spec = importlib.util.spec_from_file_location("guiwatch", watch_path)
guiwatch = sys.modules["guiwatch"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guiwatch)
marks = {"tree": os.path.dirname(os.path.dirname(keepgui.__file__))}
state = {"idle": None}
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def busy(window):
    return window.hub.busy() or any(lane.pending() for lane in tasks.runner().lanes())
def poll():
    window, watch, now = state["window"], state["watch"], time.perf_counter()
    panel = window.memories
    key = getattr(panel, "key", None)
    on_big = key is not None and key.bank == "bank"
    busy_now = busy(window)
    if first != "bank" and "switch" not in marks:  # the small bank shown: once all is idle a second, open the big one
        if key is not None and panel.model.rowCount() and not busy_now:
            state["idle"] = state["idle"] or now
            if now - state["idle"] >= 1.0:
                marks["switch"], marks["gaps_before"], state["idle"] = now - t0, len(watch.gaps), None
                window.select_bank(type(key)(key.source, "bank"))
        else:
            state["idle"] = None
        return
    if on_big and panel.model.rowCount() and "first_rows" not in marks:
        marks["first_rows"] = now - t0 - marks.get("switch", marks["shown"])
    if on_big and panel.model.rowCount() == total and getattr(panel, "_building", None) is None:
        if "table" not in marks:
            marks["table"], marks["block_to_table"], marks["rss_at_table"] = now - t0, watch.longest(), peak()
    if "table" not in marks or busy_now:
        state["idle"] = None
        return
    state["idle"] = state["idle"] or now
    if now - state["idle"] < settle:
        return
    state["poller"].stop()
    since = marks.get("gaps_before", 0)
    marks["settled"] = state["idle"] - t0
    marks["block"], marks["own_block"] = watch.longest(since), watch.longest_own(since)
    marks["over_50"] = sum(1 for g, _ in watch.gaps[since:] if g > 0.05)
    marks["rss"] = peak()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    marks["cpu"] = usage.ru_utime + usage.ru_stime  # the window's own process (its children not counted)
    marks["blocks"] = watch.report(4, marks.get("switch", 0.0))
    watch.stop()
    print(json.dumps(marks), flush=True)
    QApplication.instance().quit()
shown = mainwindow.MainWindow.show
def show(window):  # launch() shows the window, then runs app.exec(): the watch starts in between
    shown(window)
    if "window" not in state:
        state["window"], marks["shown"] = window, time.perf_counter() - t0
        state["watch"] = guiwatch.GuiWatch(t0=t0)
        state["poller"] = poller = QTimer()
        poller.setInterval(10)
        poller.timeout.connect(poll)
        poller.start()
        QTimer.singleShot(1_800_000, QApplication.instance().quit)
mainwindow.MainWindow.show = show
main(["--data-dir", data_dir, "--bank", first, "--reload-command", ""])
"""


_CORE = r"""
import sys, time, json, os
import keepgui
from keepgui.backends.iii.log import MemoryLog
cpu, wall = time.process_time(), time.perf_counter()
log = MemoryLog(sys.argv[1])
log.refresh()
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
tree = os.path.dirname(os.path.dirname(keepgui.__file__))
print(json.dumps({"tree": tree, "cpu": cpu, "wall": wall, "n": len(log.records)}))
"""


def core_load(tree: str, folder: str) -> dict:
    """The core load of the bank in ``folder`` by ``tree`` in a fresh process: ``cpu`` and ``wall`` seconds."""
    return run_in_tree(tree, _CORE, [os.path.join(folder, "memories.jsonl")], timeout=1800)


def load_window(tree: str, data_dir: str, memories: int, first: str = "bank") -> dict:
    """One window process of ``tree`` loading the bank (opened first, or after the bank ``first``
    was shown and the window idled a second): its marks (see the module)."""
    return run_in_tree(tree, _WINDOW, [data_dir, str(memories), WATCH, first, str(SETTLE_S)], timeout=1800)


_BARE = r"""
import sys, time, json, os, resource, importlib.util
t0 = time.perf_counter()
from PySide6.QtCore import QTimer
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QApplication, QMainWindow, QSplitter, QTableView, QTreeView
import keepgui
watch_path = sys.argv[1]
spec = importlib.util.spec_from_file_location("guiwatch", watch_path)
guiwatch = sys.modules["guiwatch"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guiwatch)
app = QApplication([])
window = QMainWindow()
splitter = QSplitter()
tree, table = QTreeView(), QTableView()
banks = QStandardItemModel()
for name in ("a-small", "bank"):
    banks.appendRow(QStandardItem(name))
rows = QStandardItemModel(100, 6)
for r in range(100):
    for c in range(6):
        rows.setItem(r, c, QStandardItem(f"row {r} column {c}"))
tree.setModel(banks)
table.setModel(rows)
splitter.addWidget(tree)
splitter.addWidget(table)
window.setCentralWidget(splitter)
window.resize(1200, 800)
window.show()
watch = guiwatch.GuiWatch(t0=t0)
marks = {"tree": os.path.dirname(os.path.dirname(keepgui.__file__))}
def idle():
    marks["gaps_before"] = len(watch.gaps)
def done():
    marks["block"] = watch.longest(0)
    marks["idle_block"] = watch.longest(marks["gaps_before"])
    marks["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    watch.stop()
    print(json.dumps(marks), flush=True)
    app.quit()
QTimer.singleShot(1000, idle)
QTimer.singleShot(2000, done)
app.exec()
"""


def bare_window() -> dict:
    """A bare PySide6 window (a tree and a table of 100 rows) shown and idling, watched as the window
    is: ``block`` its longest GUI block from the first show on, ``idle_block`` while it idles, ``rss``."""
    return run_in_tree(ROOT, _BARE, [WATCH], timeout=120)


def trees_to_compare() -> list[tuple[str, str]]:
    """This tree, and ``KEEPGUI_BENCH_BASELINE`` (``baseline``) and ``KEEPGUI_BENCH_EXTRA`` trees when given."""
    baseline = os.environ.get("KEEPGUI_BENCH_BASELINE")
    trees = [("lane", ROOT)] + ([("baseline", baseline)] if baseline else [])
    for extra in filter(None, os.environ.get("KEEPGUI_BENCH_EXTRA", "").split(";")):  # name=tree;...
        name, _, tree = extra.partition("=")
        trees.append((name, tree))
    return trees


@dataclass
class Measured:
    """One size's runs: per tree, the core loads, the windows opened on the bank and those switched to
    it from a small bank; and the bare windows measured alternately with them."""

    memories: int
    cores: dict[str, list[dict]]
    runs: dict[str, list[dict]]
    switched: dict[str, list[dict]]
    bare: list[dict]
    small: dict[str, list[dict]]


def measure(memories: int, repeat: int, trees: list[tuple[str, str]]) -> Measured:
    """Every process of one size, ``repeat`` times each, the trees and the bare window alternating."""
    folder = cached_bank(memories, int(memories * 2.5))
    data_dir = tempfile.mkdtemp(prefix="keepgui-bench-block-")
    bank_in_data_dir(folder, data_dir)
    bank_in_data_dir(cached_bank(100, 250), data_dir, "a-small")
    small_dir = tempfile.mkdtemp(prefix="keepgui-bench-block-small-")
    bank_in_data_dir(cached_bank(100, 250), small_dir)
    found = Measured(memories, *({n: [] for n, _ in trees} for _ in range(3)), [], {n: [] for n, _ in trees})
    for _ in range(repeat):
        found.bare.append(bare_window())
        for name, tree in trees:
            found.small[name].append(load_window(tree, small_dir, SMALL))
            found.cores[name].append(core_load(tree, folder))
            found.runs[name].append(load_window(tree, data_dir, memories))
            found.switched[name].append(load_window(tree, data_dir, memories, first="a-small"))
    return found


def _median(marks: list[dict], key: str) -> float:
    return statistics.median(m[key] for m in marks)


def results(found: Measured, name: str = "lane") -> list[Result]:
    """The figures of issue 32 for one size and tree, each beside its baseline from the same run."""
    n = f"{found.memories:,}"
    runs, switched, cores = found.runs[name], found.switched[name], found.cores[name]
    bare_block, bare_idle = _median(found.bare, "block"), _median(found.bare, "idle_block")
    block, own, to_table = _median(runs, "block"), _median(runs, "own_block"), _median(runs, "block_to_table")
    after, own_after = _median(switched, "block"), _median(switched, "own_block")
    core_wall, core_cpu = _median(cores, "wall"), _median(cores, "cpu")
    table = statistics.median(m["table"] - m["switch"] for m in switched)
    settled = statistics.median(m["settled"] - m["switch"] for m in switched)
    first = _median(switched, "first_rows")
    rss, rss_table = _median(runs, "rss"), _median(runs, "rss_at_table")
    worst = max(runs, key=lambda m: m["block"])["blocks"][:1]
    worst_after = max(switched, key=lambda m: m["block"])["blocks"][:1]
    small = _median(found.small[name], "block") if found.small.get(name) else None
    out = [
        Result(
            f"longest GUI block, window opened on the bank, from exec until it settles, {n}",
            block * 1000,
            "ms",
            bare_block * 1000,
            "bare PySide6 window's first show",
            block / bare_block if bare_block else None,
            "×",
            "≤ 16 ms beyond a bare window's first show",
            block - bare_block <= 0.016,
            f"until the table was full {to_table * 1000:.1f} ms (what this benchmark measured before issue 32); "
            f"blocks over 50 ms {_median(runs, 'over_50'):.0f}; less the GUI thread's run-queue wait "
            f"{own * 1000:.1f} ms; longest: {'; '.join(worst) or '—'}",
        ),
        Result(
            f"longest GUI block, window opened on a bank of {SMALL} (its own first show; measured with {n})",
            (small or 0) * 1000,
            "ms",
            bare_block * 1000,
            "bare PySide6 window's first show",
            small / bare_block if small and bare_block else None,
            "×",
            "reported: the floor of the figure above",
            None,
            "the window's panels built, laid out and painted with no big bank to load",
        ),
        Result(
            f"longest GUI block, the bank opened while the window is up, until it settles, {n}",
            after * 1000,
            "ms",
            bare_idle * 1000,
            "bare PySide6 window idling",
            after / bare_idle if bare_idle else None,
            "×",
            "≤ 16 ms",
            after <= 0.016,
            f"blocks over 50 ms {_median(switched, 'over_50'):.0f}; less the GUI thread's run-queue wait "
            f"{own_after * 1000:.1f} ms; longest: {'; '.join(worst_after) or '—'}",
        ),
        Result(
            f"first rows visible after opening the bank, {n}",
            first,
            "s",
            table,
            "table fully loaded",
            first / table if table else None,
            "×",
            "≤ 0.5 s",
            first <= 0.5,
        ),
        Result(
            f"table fully loaded ÷ core load, {n}",
            table,
            "s",
            core_wall,
            "core load (MemoryLog.refresh, fresh process)",
            table / core_wall if core_wall else None,
            "×",
            "≤ 1.2×",
            table <= 1.2 * core_wall,
            f"the core load's CPU time {core_cpu:.2f} s ({table / core_cpu:.2f}× it)" if core_cpu else "",
        ),
        Result(
            f"window settled (every row in, no background work for {SETTLE_S:g} s) after opening the bank, {n}",
            settled,
            "s",
            table,
            "table fully loaded",
            settled / table if table else None,
            "×",
            "reported",
            None,
            "the search index, activity, preview and the sidebar's counts are built after the table is full",
        ),
        Result(
            f"window peak RSS, opened on the bank, until it settles, {n}",
            rss,
            "MiB",
            _median(found.bare, "rss"),
            "bare PySide6 window",
            None,
            "",
            "≤ 1.5 GiB at 1M",
            rss <= 1536 if found.memories >= 1_000_000 else None,
            f"peak when the table was full {rss_table:.0f} MiB (what this benchmark measured before issue 32)",
        ),
    ]
    if "baseline" in found.runs and name == "lane":
        out += _against(found)
    return out


def _against(found: Measured) -> list[Result]:
    """The lane's two GUI blocks beside the ``KEEPGUI_BENCH_BASELINE`` tree's, measured alternately."""
    n = f"{found.memories:,}"
    out = []
    for key, what, marks in (
        ("block", "window opened on the bank", found.runs),
        ("block", "the bank opened while the window is up", found.switched),
    ):
        ours, theirs = _median(marks["lane"], key), _median(marks["baseline"], key)
        each = "; ".join(
            f"{name} {', '.join(f'{m[key] * 1000:.0f}' for m in marks[name])} ms, less run-queue wait "
            f"{_median(marks[name], 'own_block') * 1000:.1f} ms"
            for name in ("lane", "baseline")
        )
        out.append(
            Result(
                f"longest GUI block, {what}, {n}, vs the baseline tree",
                ours * 1000,
                "ms",
                theirs * 1000,
                "KEEPGUI_BENCH_BASELINE, same run",
                ours / theirs if theirs else None,
                "×",
                "no worse",
                ours <= theirs * 1.1,
                f"each run: {each}",
            )
        )
    ours, theirs = _median(found.runs["lane"], "cpu"), _median(found.runs["baseline"], "cpu")
    out.append(
        Result(
            f"window process's CPU time, opened on the bank, until it settles, {n}, vs the baseline tree",
            ours,
            "s",
            theirs,
            "KEEPGUI_BENCH_BASELINE, same run",
            ours / theirs if theirs else None,
            "×",
            "reported",
            None,
            "what the window's own process computed (the interpreter lock its GUI thread shares); child "
            "processes' work is not counted",
        )
    )
    return out


def run(quick: bool = False) -> list[Result]:
    """``make bench``: the figures of every size (``KEEPGUI_BENCH_REPEAT`` runs each, default 3; 1 for
    ``--quick``)."""
    repeat = int(os.environ.get("KEEPGUI_BENCH_REPEAT", "1" if quick else "3"))
    trees = trees_to_compare()
    out: list[Result] = []
    for memories in bench_sizes(quick):
        out += results(measure(memories, repeat, trees))
    return out


def main() -> None:
    """Print the figures of every size, per tree, with the longest blocks explained (see the module)."""
    sizes = [int(s) for s in os.environ.get("KEEPGUI_BENCH_SIZES", "10000,100000").split(",")]
    repeat = int(os.environ.get("KEEPGUI_BENCH_REPEAT", "3"))
    trees = trees_to_compare()
    for memories in sizes:
        found = measure(memories, repeat, trees)
        for name, _ in trees:
            print(f"{memories:,}, tree {name}:", flush=True)
            print_table(results(found, name))
        for what, marks in (("opened on the bank", found.runs["lane"]), ("switched to it", found.switched["lane"])):
            for line in max(marks, key=lambda m: m["block"])["blocks"]:
                print(f"          lane block ({what}): {line}", flush=True)


if __name__ == "__main__":
    if "--table" in sys.argv:
        print_table(run("--quick" in sys.argv))
    else:
        main()
