"""The longest GUI-thread block while the window moves the time (issue 29.6), beside an idle baseline.

``QT_QPA_PLATFORM=offscreen .venv/bin/python tools/probe_timetravel.py [ENTRIES] [MOVES]``: a keep.md of
ENTRIES lines (20,000 by default) recorded by the journal, a later version recorded too, a window on it;
then the longest gap between 1 ms timer ticks of the GUI thread over 0.3 s of idling (the baseline) and
while View as of moves to a moment and back MOVES times (each until the moment is shown). Prints both
lists and their medians in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["KEEPGUI_HOME"] = tempfile.mkdtemp(prefix="keepgui-probe-")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from PySide6.QtCore import QElapsedTimer, QTimer


def main() -> None:
    entries = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    moves = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    from keepgui.ui.startup import make_app

    app = make_app()  # keepgui's own: background work gives way while the GUI thread is busy
    from keepgui.core import registry
    from keepgui.core.demo import make_demo_copy
    from keepgui.core.journal import install, sync_source
    from keepgui.core.source import BankKey
    from keepgui.ui.application import build_window
    from keepgui.ui.settings import Settings

    demo = make_demo_copy(parent=tempfile.mkdtemp())
    keep = os.path.join(demo.nanobot, "keep.md")
    with open(keep, "w", encoding="utf-8") as fh:
        fh.write("".join(f"- fact number {i} about travel and the {i % 97} things\n" for i in range(entries)))
    journal = install()
    sync_source(journal, registry.open_source("nanobot", demo.nanobot))
    time.sleep(0.05)
    then = int(time.time() * 1000)
    time.sleep(0.05)
    with open(keep, "a", encoding="utf-8") as fh:
        fh.write("- a later fact\n")
    sync_source(journal, registry.open_source("nanobot", demo.nanobot))
    values = dict(demo=False, data_dir=None, workspace=[demo.nanobot], bank=None, panel=None, query=None)
    args = argparse.Namespace(**values, screenshot=None, reload_command="")
    window = build_window(args, Settings(os.path.join(tempfile.mkdtemp(), "s.json")), watch=False)
    window.resize(1200, 800)
    window.show()
    key = BankKey(demo.nanobot, "keep.md")

    def spin(done: Callable[[], bool], limit: float = 120.0) -> None:
        end = time.monotonic() + limit
        while not done() and time.monotonic() < end:
            app.processEvents()
            time.sleep(0.002)

    def longest_gap(action: Callable[[], None], done: Callable[[], bool]) -> int:
        gaps: list[int] = []
        clock = QElapsedTimer()
        clock.start()
        last = [clock.elapsed()]
        timer = QTimer()
        timer.setInterval(1)

        def tick() -> None:
            now = clock.elapsed()
            gaps.append(now - last[0])
            last[0] = now

        timer.timeout.connect(tick)
        timer.start()
        action()
        spin(done)
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.001)
        timer.stop()
        return max(gaps, default=0)

    spin(lambda: window.hub.is_loaded(key))
    window.select_bank(key)
    spin(lambda: window.current == key and window._loading is None)
    spin(lambda: False, 8.0)  # the window's own first work (the inbox's listing...) done
    spin(lambda: not window.hub.busy())
    travel = window.time_travel
    idle = [longest_gap(lambda: None, lambda: True) for _ in range(moves)]
    moved = []
    for n in range(moves):
        travel.moment = None
        at = then if n % 2 == 0 else int(time.time() * 1000)
        moved.append(longest_gap(lambda at=at: travel.view_at(key, at), lambda: travel.moment is not None))
    print(f"entries {entries}: idle {idle} median {statistics.median(idle)} ms")
    print(f"entries {entries}: moving the time {moved} median {statistics.median(moved)} ms")
    window.hub.shutdown()


if __name__ == "__main__":
    main()
