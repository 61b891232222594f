"""Issue 29's figures: the journal's size per 1,000 changes, and the inbox opened at scale.

* **Journal bytes per 1,000 changes**: a keep.md of N entries (10,000 and 100,000) recorded once,
  then 1,000 agent-like changes recorded with :meth:`keepgui.core.journal.Journal.record` (one entry
  appended, one edited in the middle, one removed, in turn); the bytes the journal grew by, beside
  what a whole copy per version would take (what :mod:`keepgui.core.history` stores), and the time
  per recorded change.
* **The inbox at scale**: a window on a nanobot workspace whose keep.md holds 100,000 entries and
  whose journal holds 10,000 recorded changes of it (written in the journal's own format: a whole
  version, then one delta per change, a whole version every :data:`~keepgui.core.journal.CHAIN`), the
  Inbox opened once the window idles; the longest GUI-thread block (a 1 ms timer's longest gap,
  :mod:`tests.bench.guiwatch`) from the menu entry until the list holds every change and the entries
  of the first are shown. Target ≤ 16 ms.
* **Moving the time at scale**: the same window and journal, View as of moved to five recorded
  moments spread over the 10,000 changes and back (each until that moment's table is shown); the
  longest GUI-thread block while moving, beside the same window's longest gap over as long idling
  just before (the baseline of the same run). Target ≤ 16 ms.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

from tests.bench.common import ROOT, Result, bench_size, bench_sizes

_WINDOW = r"""
import sys, time, json, os
sys.path.insert(0, os.getcwd())
from PySide6.QtCore import QTimer
from keepgui.cli import build_parser
from keepgui.ui.startup import make_app
from keepgui.ui.application import build_window
from keepgui.ui.settings import Settings
from tests.bench import guiwatch
workspace, changes = sys.argv[1], int(sys.argv[2])
app = make_app()
args = build_parser([]).parse_args(["--source", workspace, "--reload-command", ""])
window = build_window(args, Settings(os.path.join(workspace, "..", "settings.json")), watch=False)
window.resize(1200, 800)
window.show()
marks = {}
watch = guiwatch.GuiWatch()
def opened():
    marks["t"] = time.perf_counter()
    marks["g0"] = len(watch.gaps)
    marks["dialog"] = window.show_inbox()
    QTimer.singleShot(0, lambda: marks.setdefault("g1", len(watch.gaps)))
def poll():
    if "t" not in marks:
        if window.current is not None and window._loading is None and not window.hub.busy():
            marks.setdefault("idle", time.perf_counter())
            if time.perf_counter() - marks["idle"] > 3.0:
                opened()
        else:
            marks.pop("idle", None)
        return
    panel = marks["dialog"].panel
    if "g1" in marks and len(panel.model.items) >= changes and panel.entries.count() > 0:
        g0, g1 = marks["g0"], marks["g1"]
        show = max((g for g, _ in watch.gaps[g0:g1 + 1]), default=0.0)
        print(json.dumps({"block": watch.longest(g1 + 1), "own": watch.longest_own(g1 + 1), "show": show,
                          "cpu": watch.longest_cpu(g1 + 1),
                          "rows": len(panel.model.items), "seconds": time.perf_counter() - marks["t"],
                          "blocks": [b.describe() for b in sorted(watch.blocks, key=lambda b: -b.seconds)
                                     if b.start >= watch.gaps[g1][1]][:3]}), flush=True)
        watch.stop()
        app.quit()
poller = QTimer(); poller.setInterval(10); poller.timeout.connect(poll); poller.start()
QTimer.singleShot(600_000, app.quit)
app.exec()
"""


_TRAVEL = r"""
import sys, time, json, os
sys.path.insert(0, os.getcwd())
from PySide6.QtCore import QTimer
from keepgui.cli import build_parser
from keepgui.ui.startup import make_app
from keepgui.ui.application import build_window
from keepgui.ui.settings import Settings
from tests.bench import guiwatch
workspace, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
app = make_app()
args = build_parser([]).parse_args(["--source", workspace, "--reload-command", ""])
window = build_window(args, Settings(os.path.join(workspace, "..", "settings.json")), watch=False)
window.resize(1200, 800)
window.show()
moments = [first + (last - first) * k // 5 for k in range(1, 6)] + [first + (last - first) // 2]
state = {"phase": "load", "n": 0}
watch = guiwatch.GuiWatch()
def poll():
    travel = window.time_travel
    if state["phase"] == "load":
        if window.current is not None and window._loading is None and not window.hub.busy():
            state.setdefault("idle", time.perf_counter())
            if time.perf_counter() - state["idle"] > 3.0:
                state.update(phase="idle", g0=len(watch.gaps), t=time.perf_counter())
        else:
            state.pop("idle", None)
        return
    if state["phase"] == "idle":
        if time.perf_counter() - state["t"] > 2.0:
            state.update(phase="move", idle=watch.longest(state["g0"]), g1=len(watch.gaps), t=time.perf_counter())
            state["key"] = window.current
            travel.view_at(state["key"], moments[0])
        return
    moment = travel.moment
    if moment is None or moment.at != moments[state["n"]]:
        return
    state["n"] += 1
    if state["n"] < len(moments):
        travel.view_at(state["key"], moments[state["n"]])
        return
    g1 = state["g1"]
    print(json.dumps({"block": watch.longest(g1), "own": watch.longest_own(g1), "cpu": watch.longest_cpu(g1),
                      "idle": state["idle"], "rows": len(moment.rows), "moves": len(moments),
                      "seconds": (time.perf_counter() - state["t"]) / len(moments),
                      "blocks": [b.describe() for b in sorted(watch.blocks, key=lambda b: -b.seconds)
                                 if b.start >= watch.gaps[g1][1]][:3]}), flush=True)
    watch.stop()
    app.quit()
poller = QTimer(); poller.setInterval(10); poller.timeout.connect(poll); poller.start()
QTimer.singleShot(900_000, app.quit)
app.exec()
"""


def _keep(entries: int) -> bytes:
    return "".join(f"- fact {n}: the agent noted something about project {n % 97}\n" for n in range(entries)).encode()


def journal_per_thousand(entries: int) -> list[Result]:
    """Record 1,000 changes of a keep.md of ``entries`` entries; the journal's growth."""
    from keepgui.core.journal import Journal

    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(os.path.join(folder, "journal"))
        path = os.path.join(folder, "keep.md")
        body = bytearray(_keep(entries))
        journal.record(path, bytes(body))
        start_size = journal.size()
        began = time.perf_counter()
        whole = 0
        for n in range(1000):
            if n % 3 == 0:
                body += f"- new fact {n} the agent appended\n".encode()
            elif n % 3 == 1:
                at = body.find(b"- fact ", len(body) // 2)
                body[at : at + 7] = b"- Fact "
            else:
                at = body.find(b"\n", len(body) // 3) + 1
                end = body.find(b"\n", at) + 1
                del body[at:end]
            journal.record(path, bytes(body))
            whole += len(body)
        seconds = time.perf_counter() - began
        grown = journal.size() - start_size
    return [
        Result(
            f"journal per 1,000 changes, keep.md of {entries:,} entries",
            grown / 1e6,
            "MB",
            whole / 1e6,
            "a whole copy per version",
            whole / max(1, grown),
            "× smaller",
            "bounded (size cap)",
            None,
            f"{seconds:.1f} ms per recorded change",
        )
    ]


def _synthetic(folder: str, entries: int, changes: int) -> str:
    """A workspace with a keep.md of ``entries`` and keepgui's journal of ``changes`` appends to it."""
    from keepgui.core.history import file_key
    from keepgui.core.journal import CHAIN, Entry, Journal, Tracked

    workspace = os.path.join(folder, "workspace")
    os.makedirs(workspace)
    body = _keep(entries)
    path = os.path.join(workspace, "keep.md")
    with open(path, "wb") as fh:
        fh.write(body)
    journal = Journal(os.path.join(folder, "home", "data", "journal"))
    key = file_key(path)
    journal.track([Tracked("nanobot", workspace, "keep.md", key)])
    lines = []
    at = int(time.time() * 1000) - changes * 1000
    for seq in range(changes + 1):
        if seq:
            line = f"- appended fact {seq}\n".encode()
            base = len(body)
            body += line
        # a version's own hash is compared only with the file's (the last one); the others need only differ
        sha = hashlib.sha256(body if seq in (0, changes) else b"version %d" % seq).hexdigest()
        if seq % CHAIN == 0:
            entry = Entry(key, seq, sha, len(body), at + seq * 1000, seq == 0, False, journal._store(body))
        else:
            middle = journal._store(line)
            entry = Entry(key, seq, sha, len(body), at + seq * 1000, False, False, middle, seq - 1, base, 0)
        lines.append(entry.line())
    os.makedirs(os.path.dirname(journal.index_path(key)), exist_ok=True)
    with open(journal.index_path(key), "wb") as fh:
        fh.write(b"".join(lines))
    with open(path, "wb") as fh:
        fh.write(body)
    return workspace


@contextlib.contextmanager
def synthetic(entries: int, changes: int) -> Iterator[tuple[str, int]]:
    """A synthetic workspace of ``entries`` and ``changes`` recorded (:func:`_synthetic`), with its
    KEEPGUI_HOME beside it, for as long as the block runs: ``(workspace, first recorded moment, epoch
    ms)``. Several windows may be run on one (writing its journal is most of a window's run: a whole
    version of the file every :data:`~keepgui.core.journal.CHAIN` changes)."""
    with tempfile.TemporaryDirectory() as folder:
        at = int(time.time() * 1000) - changes * 1000  # no later than _synthetic's first moment
        yield _synthetic(folder, entries, changes), at


def _window(
    script: str,
    entries: int,
    changes: int,
    args: Callable[[int], list[int]],
    timeout: float = 900,
    prepared: tuple[str, int] | None = None,
) -> dict:
    """Run a window ``script`` (offscreen, the workspace's own KEEPGUI_HOME) on a synthetic workspace of
    ``entries`` and ``changes`` recorded (``prepared`` by :func:`synthetic`, else made for this run),
    given the workspace's path and ``args(at)`` (``at``: the first recorded moment, epoch ms); what it
    printed last, as JSON."""
    if prepared is None:
        with synthetic(entries, changes) as made:
            return _window(script, entries, changes, args, timeout, made)
    workspace, at = prepared
    home = os.path.join(os.path.dirname(workspace), "home")
    env = dict(os.environ, KEEPGUI_HOME=home, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", script, workspace, *map(str, args(at))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )
    found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if not found:
        raise RuntimeError(f"the window reported nothing: {done.stderr.strip()[-400:]}")
    return found[-1]


def inbox_window(entries: int, changes: int, prepared: tuple[str, int] | None = None) -> list[Result]:
    """The longest GUI-thread block opening the inbox of ``changes`` over ``entries`` (on a workspace
    ``prepared`` by :func:`synthetic`, else one made for it)."""
    got = _window(_WINDOW, entries, changes, lambda _at: [changes], prepared=prepared)
    return [
        Result(
            f"inbox, {changes:,} changes of {entries:,} entries: longest GUI block listing them",
            got["block"] * 1000,
            "ms",
            got["own"] * 1000,
            "less its wait for a CPU",
            None,
            "",
            "≤ 16 ms",
            got["block"] <= 0.016,
            f"{got['rows']:,} rows listed and the first change's entries shown in {got['seconds']:.1f} s; "
            f"GUI CPU in one gap at most {got['cpu'] * 1000:.1f} ms; " + " | ".join(got["blocks"][:2]),
        ),
        Result(
            "inbox: the dialog's first show (Qt's own cost, before the listing)",
            got["show"] * 1000,
            "ms",
        ),
    ]


def travel_window(entries: int, changes: int) -> list[Result]:
    """The longest GUI-thread block moving the time of a bank of ``entries`` over ``changes`` recorded."""
    got = _window(_TRAVEL, entries, changes, lambda at: [at + 1500, at + changes * 1000 - 500], timeout=1200)
    return [
        Result(
            f"time travel, {changes:,} changes of {entries:,} entries: longest GUI block moving the time",
            got["block"] * 1000,
            "ms",
            got["idle"] * 1000,
            "the same window idling",
            got["block"] / max(got["idle"], 1e-6),
            "× idle",
            "≤ 16 ms",
            got["block"] <= 0.016,
            f"{got['moves']} moves of {got['rows']:,} rows, {got['seconds']:.1f} s each; less CPU wait "
            f"{got['own'] * 1000:.0f} ms, GUI CPU {got['cpu'] * 1000:.0f} ms; " + " | ".join(got["blocks"][:2]),
        ),
    ]


def run(quick: bool = False) -> list[Result]:
    """Every figure (``quick``: 10,000 entries and 1,000 changes only)."""
    sizes = bench_sizes(quick)
    results = [r for n in sizes for r in journal_per_thousand(n)]
    results += inbox_window(bench_size(quick), bench_size(quick) // 10)
    results += travel_window(bench_size(quick), bench_size(quick) // 10)
    return results


if __name__ == "__main__":
    from tests.bench.common import print_table

    print_table(run("--quick" in sys.argv))
