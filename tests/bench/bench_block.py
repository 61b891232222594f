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
"""

from __future__ import annotations

import os
import statistics
import tempfile

from tests.bench.common import ROOT, bank_in_data_dir, cached_bank, run_in_tree

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


def main() -> None:
    """Print the figures of every size (see the module)."""
    baseline = os.environ.get("KEEPGUI_BENCH_BASELINE")
    sizes = [int(s) for s in os.environ.get("KEEPGUI_BENCH_SIZES", "10000,100000").split(",")]
    repeat = int(os.environ.get("KEEPGUI_BENCH_REPEAT", "3"))
    trees = [("lane", ROOT)] + ([("baseline", baseline)] if baseline else [])
    for extra in filter(None, os.environ.get("KEEPGUI_BENCH_EXTRA", "").split(";")):  # name=tree;...
        name, _, tree = extra.partition("=")
        trees.append((name, tree))
    for memories in sizes:
        folder = cached_bank(memories, int(memories * 2.5))
        data_dir = tempfile.mkdtemp(prefix="keepgui-bench-block-")
        bank_in_data_dir(folder, data_dir)
        bank_in_data_dir(cached_bank(100, 250), data_dir, "a-small")
        runs: dict[str, list[dict]] = {name: [] for name, _ in trees}
        switched: dict[str, list[dict]] = {name: [] for name, _ in trees}
        cores: dict[str, list[dict]] = {name: [] for name, _ in trees}
        for _ in range(repeat):
            for name, tree in trees:
                cores[name].append(core_load(tree, folder))
                runs[name].append(load_window(tree, data_dir, memories))
                switched[name].append(load_window(tree, data_dir, memories, first="a-small"))
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
    main()
