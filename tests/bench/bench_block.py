"""The window while a bank loads, this tree beside a baseline tree, in the same run.

For each size, a fresh window process loads the bank from this tree and from the baseline tree
(``KEEPGUI_BENCH_BASELINE``: a checkout of main, e.g. ``git archive main | tar -x -C DIR``; more
trees to compare, each in the same alternation, as ``KEEPGUI_BENCH_EXTRA=name=DIR;name=DIR``),
alternating, ``KEEPGUI_BENCH_REPEAT`` times (default 3); it prints the medians of the longest
GUI-thread block (the longest gap of a 1 ms timer), the time until the table holds every row, and
the window's peak RSS, and for this tree the longest blocks explained by the GUI thread's stacks
sampled during them (:mod:`tests.bench.guiwatch`). Beside each block it prints the block less the
GUI thread's wait for a CPU in it (its run-queue wait, from Linux's schedstat: what a machine busy
with other work added), and beside each table time the core load of the same bank in the same tree
(``MemoryLog.refresh`` in a fresh process, CPU time as bench_scale measures it, and wall time),
with the ratio table time / core load, from process start and from the switch. Each size is measured twice: the window opened
on the bank (the window's own first show is part of it: a 100-memory bank already blocks ~60 ms
then), and the window opened on a 100-memory bank that then, once it idled a second, opens the
big one (the longest block while only the load runs).

    KEEPGUI_BENCH_BASELINE=/tmp/mainsnap KEEPGUI_BENCH_SIZES=10000,100000 python -m tests.bench.bench_block

Under ``make bench`` (:func:`run`) the same runs give issue 32's figures, each beside its baseline
from the same run: the longest GUI block with the window opened on the bank beside a bare PySide6
window's first show (a tree and a table, watched the same way, alternating with the windows); the
longest block while the bank opens in a window already up beside that bare window idling; the first
rows after the switch beside the table fully loaded; the table fully loaded after the switch beside
the core load (wall time, a fresh process); the window's peak RSS beside the bare window's; with
``KEEPGUI_BENCH_BASELINE``, the two blocks beside that tree's too.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from dataclasses import dataclass

from tests.bench.common import ROOT, Result, bank_in_data_dir, bench_sizes, cached_bank, print_table, run_in_tree

WATCH = os.path.join(ROOT, "tests", "bench", "guiwatch.py")

_WINDOW = r"""
import sys, time, json, os, resource, importlib.util
t0 = time.perf_counter()
from PySide6.QtCore import QTimer
import keepgui
from keepgui.cli import build_parser
from keepgui.ui.startup import make_app
from keepgui.ui.application import build_window
from keepgui.ui.settings import Settings
data_dir, total, watch_path, first = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
spec = importlib.util.spec_from_file_location("guiwatch", watch_path)
guiwatch = sys.modules["guiwatch"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guiwatch)
app = make_app()
args = build_parser([]).parse_args(["--data-dir", data_dir, "--bank", first, "--reload-command", ""])
window = build_window(args, Settings(os.path.join(data_dir, "settings.json")), watch=False)
window.resize(1200, 800)
window.show()
watch = guiwatch.GuiWatch(t0=t0)
marks = {"tree": os.path.dirname(os.path.dirname(keepgui.__file__))}
def on_loaded(key):
    if key.bank == "bank":
        marks.setdefault("loaded", time.perf_counter() - t0)
    elif "switch" not in marks:  # the small bank is shown: once the window idles, open the big one
        def switch():
            marks["switch"] = time.perf_counter() - t0
            marks["gaps_before"] = len(watch.gaps)
            window.select_bank(type(key)(key.source, "bank"))
        QTimer.singleShot(1000, switch)
window.loaded.connect(on_loaded)
def poll():
    panel = window.memories
    key = getattr(panel, "key", None)
    if "switch" in marks and "first_rows" not in marks and key is not None and key.bank == "bank":
        if panel.model.rowCount():
            marks["first_rows"] = time.perf_counter() - t0 - marks["switch"]
    if "loaded" in marks and panel.model.rowCount() == total and getattr(panel, "_building", None) is None:
        marks["table"] = time.perf_counter() - t0
        marks["block"] = watch.longest()
        marks["own_block"] = watch.longest_own()
        since = marks.get("gaps_before", 0)
        marks["block_after_switch"] = watch.longest(since) if "switch" in marks else None
        marks["own_block_after_switch"] = watch.longest_own(since) if "switch" in marks else None
        marks["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        marks["blocks"] = watch.report(4)
        watch.stop()
        print(json.dumps(marks), flush=True)
        app.quit()
poller = QTimer(); poller.setInterval(10); poller.timeout.connect(poll); poller.start()
QTimer.singleShot(900_000, app.quit)
app.exec()
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
    return run_in_tree(tree, _WINDOW, [data_dir, str(memories), WATCH, first], timeout=1800)


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


def measure(memories: int, repeat: int, trees: list[tuple[str, str]]) -> Measured:
    """Every process of one size, ``repeat`` times each, the trees and the bare window alternating."""
    folder = cached_bank(memories, int(memories * 2.5))
    data_dir = tempfile.mkdtemp(prefix="keepgui-bench-block-")
    bank_in_data_dir(folder, data_dir)
    bank_in_data_dir(cached_bank(100, 250), data_dir, "a-small")
    found = Measured(memories, {n: [] for n, _ in trees}, {n: [] for n, _ in trees}, {n: [] for n, _ in trees}, [])
    for _ in range(repeat):
        found.bare.append(bare_window())
        for name, tree in trees:
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
    block, own = _median(runs, "block"), _median(runs, "own_block")
    after, own_after = _median(switched, "block_after_switch"), _median(switched, "own_block_after_switch")
    core_wall, core_cpu = _median(cores, "wall"), _median(cores, "cpu")
    table = statistics.median(m["table"] - m["switch"] for m in switched)
    first = _median(switched, "first_rows")
    rss = _median(runs, "rss")
    worst = max(runs, key=lambda m: m["block"])["blocks"][:1]
    out = [
        Result(
            f"longest GUI block, window opened on the bank (first show included), {n}",
            block * 1000,
            "ms",
            bare_block * 1000,
            "bare PySide6 window's first show",
            block / bare_block if bare_block else None,
            "×",
            "≤ 16 ms beyond a bare window's first show",
            block - bare_block <= 0.016,
            f"less the GUI thread's run-queue wait {own * 1000:.1f} ms; longest: {'; '.join(worst) or '—'}",
        ),
        Result(
            f"longest GUI block, the bank opened while the window is up, {n}",
            after * 1000,
            "ms",
            bare_idle * 1000,
            "bare PySide6 window idling",
            after / bare_idle if bare_idle else None,
            "×",
            "≤ 16 ms",
            after <= 0.016,
            f"less the GUI thread's run-queue wait {own_after * 1000:.1f} ms",
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
            f"window peak RSS, opened on the bank, {n}",
            rss,
            "MiB",
            _median(found.bare, "rss"),
            "bare PySide6 window",
            None,
            "",
            "≤ 1.5 GiB at 1M",
            rss <= 1536 if found.memories >= 1_000_000 else None,
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
        ("block_after_switch", "the bank opened while the window is up", found.switched),
    ):
        ours, theirs = _median(marks["lane"], key), _median(marks["baseline"], key)
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
        runs, switched, cores = found.runs, found.switched, found.cores
        for name, _ in trees:
            core_cpu = statistics.median(c["cpu"] for c in cores[name])
            core_wall = statistics.median(c["wall"] for c in cores[name])
            print(
                f"{memories:>9,} {name:8}: core load (MemoryLog.refresh, fresh process) {core_cpu:6.2f} s CPU, "
                f"{core_wall:6.2f} s wall",
                flush=True,
            )
            block = statistics.median(m["block"] for m in runs[name]) * 1000
            own = statistics.median(m["own_block"] for m in runs[name]) * 1000
            table = statistics.median(m["table"] for m in runs[name])
            loaded = statistics.median(m["loaded"] for m in runs[name])
            rss = statistics.median(m["rss"] for m in runs[name])
            each = ", ".join(f"{m['block'] * 1000:.0f}" for m in runs[name])
            print(
                f"{memories:>9,} {name:8}: longest GUI block {block:7.1f} ms (runs: {each}; less run-queue wait "
                f"{own:.1f} ms); table full {table:6.2f} s from process start = {table / core_cpu:.2f}x core CPU, "
                f"{table / core_wall:.2f}x core wall (loaded {loaded:.2f} s); peak RSS {rss:6.0f} MiB",
                flush=True,
            )
        for name, _ in trees:
            core_cpu = statistics.median(c["cpu"] for c in cores[name])
            core_wall = statistics.median(c["wall"] for c in cores[name])
            after = [m["block_after_switch"] * 1000 for m in switched[name]]
            own = statistics.median(m["own_block_after_switch"] for m in switched[name]) * 1000
            table = statistics.median(m["table"] - m["switch"] for m in switched[name])
            print(
                f"{memories:>9,} {name:8}: opened after a small bank, longest GUI block while it loads "
                f"{statistics.median(after):7.1f} ms (runs: {', '.join(f'{a:.0f}' for a in after)}; less run-queue "
                f"wait {own:.1f} ms); table full {table:6.2f} s after the switch = {table / core_cpu:.2f}x core CPU, "
                f"{table / core_wall:.2f}x core wall",
                flush=True,
            )
        worst = max(switched["lane"], key=lambda m: m["block_after_switch"])
        for line in worst["blocks"]:
            print(f"          lane block (switched): {line}", flush=True)
        worst = max(runs["lane"], key=lambda m: m["block"])
        for line in worst["blocks"]:
            print(f"          lane block: {line}", flush=True)


if __name__ == "__main__":
    if "--table" in sys.argv:
        print_table(run("--quick" in sys.argv))
    else:
        main()
