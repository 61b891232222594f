"""Every file-based backend at scale in the window: opened, filtered and previewed (issue 32, item 3).

The memories of :mod:`tests.bench.synth_backends` (a Claude Code project of 5,000 topic files and a
5,000-line index, a 100,000-line ``keep.md``, a 1 MB ``GEMINI.md``, a full Hermes home) are each
opened in a fresh ``keepgui <option> FOLDER --bank NAME`` process, started through the command
line's own entry point as a person starts it, and watched by :mod:`tests.bench.guiwatch` from the
moment the window is shown (just before ``QApplication.exec``) in three steps, each until the window
settles (no background work queued or running for :data:`SETTLE_S`): **open** (the bank's rows in the
table), **filter** (a word typed into the search box key by key, the window settling after each),
**preview** (the Preview panel brought to the front and drawn). Each step's figure is the median over
``KEEPGUI_BENCH_REPEAT`` runs (3; 1 with ``--quick``) of its longest GUI-thread block, beside a bare
PySide6 window's longest block while idling, or, with ``KEEPGUI_BENCH_BASELINE`` (a checkout of main),
beside the same step of that tree's window; all measured alternately in the same run.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

from tests.bench.bench_block import WATCH, bare_window, trees_to_compare
from tests.bench.common import ROOT, Result, print_table, run_in_tree

SETTLE_S = 1.0
WORD = "deploy"
"""What is typed into the search box (a word every generated memory may hold)."""

_SCRIPT = r"""
import sys, time, json, os, resource, tempfile, importlib.util
t0 = time.perf_counter()
os.environ["KEEPGUI_HOME"] = tempfile.mkdtemp(prefix="keepgui-bench-home-")
from PySide6.QtCore import QTimer, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
import keepgui
from keepgui.cli import main
from keepgui.ui import mainwindow, tasks
option, folder, bank, watch_path, settle, word = sys.argv[1:7]
settle = float(settle)
spec = importlib.util.spec_from_file_location("guiwatch", watch_path)
guiwatch = sys.modules["guiwatch"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guiwatch)
marks = {"tree": os.path.dirname(os.path.dirname(keepgui.__file__))}
state = {"idle": None, "step": "open", "since": 0, "typed": 0}
def busy(window):
    return window.hub.busy() or any(lane.pending() for lane in tasks.runner().lanes())
def end_step(window, watch):
    step, since = state["step"], state["since"]
    marks[step] = watch.longest(since)
    marks[step + "_own"] = watch.longest_own(since)
    marks[step + "_blocks"] = watch.report(2, watch.gaps[since][1] if since < len(watch.gaps) else 0.0)
    state["since"] = len(watch.gaps)
def poll():
    window, watch, now = state["window"], state["watch"], time.perf_counter()
    panel = window.memories
    key = getattr(panel, "key", None)
    ready = key is not None and key.bank == bank and panel.model.rowCount() > 0
    if not ready or busy(window):
        state["idle"] = None
        return
    state["idle"] = state["idle"] or now
    if now - state["idle"] < settle:
        return
    state["idle"] = None
    step = state["step"]
    if step == "open":
        marks["rows"], marks["opened"] = panel.model.rowCount(), now - t0
        end_step(window, watch)
        state["step"] = "filter"
        panel.search.setFocus()
    if state["step"] == "filter":
        if state["typed"] < len(word):
            QTest.keyClick(panel.search, word[state["typed"]])
            state["typed"] += 1
            return
        marks["shown_after_filter"] = panel.proxy.rowCount()
        end_step(window, watch)
        state["step"] = "preview"
        window.show_panel("preview")
        return
    end_step(window, watch)
    marks["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    state["poller"].stop()
    watch.stop()
    print(json.dumps(marks), flush=True)
    QApplication.instance().quit()
shown = mainwindow.MainWindow.show
def show(window):
    shown(window)
    if "window" not in state:
        state["window"] = window
        state["watch"] = guiwatch.GuiWatch(t0=t0)
        state["poller"] = poller = QTimer()
        poller.setInterval(10)
        poller.timeout.connect(poll)
        poller.start()
        QTimer.singleShot(900_000, QApplication.instance().quit)
mainwindow.MainWindow.show = show
main([option, folder, "--bank=" + bank, "--reload-command", ""])
"""

STEPS = (("open", "opened"), ("filter", f"filtered (typing '{WORD}')"), ("preview", "previewed"))
WHAT = {
    "claude": "Claude Code project, 5,000 topic files and a 5,000-line index",
    "nanobot": "nanobot keep.md of 100,000 lines",
    "gemini": "Gemini CLI, a 1 MB GEMINI.md",
    "hermes": "Hermes home, 40 profiles full to their limits, 500 pending writes",
}


def window_steps(option: str, folder: str, bank: str, tree: str = ROOT) -> dict:
    """One window process of ``tree`` opening, filtering and previewing the bank: each step's longest block."""
    return run_in_tree(tree, _SCRIPT, [option, folder, bank, WATCH, str(SETTLE_S), WORD], timeout=1800)


def run(quick: bool = False) -> list[Result]:
    """``make bench``: each backend's three steps beside a bare window idling, and beside the
    ``KEEPGUI_BENCH_BASELINE`` tree's when one is given, alternately (see the module)."""
    from tests.bench.synth_backends import make_sources

    repeat = int(os.environ.get("KEEPGUI_BENCH_REPEAT", "1" if quick else "3"))
    trees = trees_to_compare()[:2]  # this tree, and the baseline tree when given
    sources = make_sources(tempfile.mkdtemp(prefix="keepgui-bench-backends-"))
    found: dict[tuple[str, str], list[dict]] = {(kind, name): [] for kind in sources for name, _ in trees}
    bare: list[dict] = []
    for _ in range(repeat):
        bare.append(bare_window())
        for kind, (option, folder, bank) in sources.items():
            for name, tree in trees:
                found[kind, name].append(window_steps(option, folder, bank, tree))
    idle = statistics.median(b["idle_block"] for b in bare)
    return [result(kind, step, found, idle) for kind in sources for step in STEPS]


def result(kind: str, step: tuple[str, str], found: dict[tuple[str, str], list[dict]], idle: float) -> Result:
    """One step of one backend: its median longest block beside the baseline tree's (else the bare window's)."""
    key, verb = step
    runs = found[kind, "lane"]
    block = statistics.median(m[key] for m in runs)
    own = statistics.median(m[key + "_own"] for m in runs)
    worst = max(runs, key=lambda m: m[key])[key + "_blocks"][:1]
    note = f"{runs[0]['rows']:,} rows; less the GUI thread's run-queue wait {own * 1000:.1f} ms"
    if key == "filter":
        note += f"; {runs[0]['shown_after_filter']:,} rows shown"
    base, base_name = idle, "bare PySide6 window idling"
    if (kind, "baseline") in found:
        note += f"; a bare PySide6 window idling {idle * 1000:.1f} ms"
        base = statistics.median(m[key] for m in found[kind, "baseline"])
        base_name = "KEEPGUI_BENCH_BASELINE, same run"
    return Result(
        f"longest GUI block, {WHAT[kind]}, {verb}",
        block * 1000,
        "ms",
        base * 1000,
        base_name,
        block / base if base else None,
        "×",
        "≤ 16 ms",
        block <= 0.016,
        note + (f"; longest: {worst[0]}" if worst else ""),
    )


if __name__ == "__main__":
    print_table(run("--quick" in sys.argv))
