"""A watchdog on a window's GUI thread: the longest time it went without answering a 1 ms timer,
and what it was doing meanwhile.

:class:`GuiWatch` runs a 1 ms timer on the GUI thread and keeps every gap between two of its
ticks (a gap is how long the GUI thread could not have answered anything: a block). A thread of
its own looks every 2 ms; while the gap under way is longer than ``threshold`` it records the GUI
thread's innermost Python frames and what the other Python threads are doing, so a long block is
explained by where the time went, not guessed at.

A GUI thread that waits for the interpreter lock still shows the frame it waits in: a long block
whose samples spread over many small frames while another thread works is lock contention; one
whose samples sit in one call is that call.

Each gap also records how long the GUI thread waited in it, ready to run, for a CPU (Linux's
``/proc/self/task/<tid>/schedstat``, second field): the gap less that wait is the block the window's
own work (and its waits for the interpreter lock) made, told apart from a machine busy with others.
The first field, the time the GUI thread ran on a CPU, gives each gap's CPU time: the work the GUI
thread itself did in it, neither its waits for a CPU nor its waits for the interpreter lock (a thread
waiting for the lock sleeps) — the figure least moved by a loaded machine (:meth:`GuiWatch.longest_cpu`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QTimer


def _frames(frame: Any, depth: int) -> tuple[str, ...]:
    """The innermost ``depth`` frames, innermost first (no source lines read: cheap while sampling)."""
    out = []
    while frame is not None and len(out) < depth:
        code = frame.f_code
        out.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}:{code.co_name}")
        frame = frame.f_back
    return tuple(out)


@dataclass
class Block:
    """One gap between two ticks longer than the threshold, and the stacks sampled during it."""

    start: float
    seconds: float = 0.0
    samples: Counter = field(default_factory=Counter)
    others: Counter = field(default_factory=Counter)

    def describe(self, top: int = 3) -> str:
        """Where the GUI thread was during the gap (innermost frames first), most samples first."""
        total = sum(self.samples.values()) or 1
        show = int(os.environ.get("KEEPGUI_WATCH_FRAMES", "4"))
        parts = [f"{100 * n // total}% {' < '.join(stack[:show])}" for stack, n in self.samples.most_common(top)]
        busy = [" < ".join(stack[: max(1, show // 2)]) for stack, _ in self.others.most_common(2)]
        text = f"{self.seconds * 1000:.0f} ms at {self.start:.2f} s: " + (
            " | ".join(parts) or "no sample (the watcher never ran in it: the interpreter lock was held throughout)"
        )
        return text + (f" [other threads: {', '.join(busy)}]" if busy else "")


class GuiWatch:
    """Gaps of a 1 ms timer on the GUI thread, and stacks sampled during long ones (see the module)."""

    def __init__(self, threshold: float = 0.016, depth: int = 8, t0: float | None = None) -> None:
        self.threshold = threshold
        self.depth = depth
        self.t0 = time.perf_counter() if t0 is None else t0
        self.gaps: list[tuple[float, float]] = []  # (seconds, when it began, since t0)
        self.waits: list[float] = []  # per gap: seconds the GUI thread waited for a CPU in it
        self.cpu: list[float] = []  # per gap: seconds the GUI thread ran on a CPU in it
        self.blocks: list[Block] = []
        self._gui = threading.get_ident()
        self._schedstat = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        self._ran, self._queued = self._schedstat_now()
        self._last = time.perf_counter()
        self._current: Block | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer = QTimer()
        self._timer.setInterval(1)
        self._timer.timeout.connect(self._tick)
        self._timer.start()
        self._thread = threading.Thread(target=self._watch, name="guiwatch", daemon=True)
        self._thread.start()

    def _schedstat_now(self) -> tuple[float, float]:
        """Seconds the GUI thread has run on a CPU, and waited, ready to run, for one, so far (0 where
        Linux does not say)."""
        try:
            fd = os.open(self._schedstat, os.O_RDONLY)
            try:
                fields = os.read(fd, 128).split()
                return int(fields[0]) / 1e9, int(fields[1]) / 1e9
            finally:
                os.close(fd)
        except (OSError, IndexError, ValueError):
            return 0.0, 0.0

    def _tick(self) -> None:
        now = time.perf_counter()
        ran, queued = self._schedstat_now()
        with self._lock:
            began, self._last = self._last, now
            block, self._current = self._current, None
        self.gaps.append((now - began, began - self.t0))
        self.waits.append(queued - self._queued)
        self.cpu.append(ran - self._ran)
        self._ran, self._queued = ran, queued
        if block is None and now - began > self.threshold:
            block = Block(began - self.t0)  # no sample: the watcher never ran in it (the lock held throughout)
        if block is not None:
            block.seconds = now - began
            self.blocks.append(block)

    def _watch(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(0.002):
            began = self._last
            if time.perf_counter() - began < self.threshold:
                continue
            frames = sys._current_frames()
            gui = frames.get(self._gui)
            sample = _frames(gui, self.depth) if gui is not None else None
            others = [_frames(frame, self.depth) for ident, frame in frames.items() if ident not in (self._gui, me)]
            del frames, gui
            with self._lock:  # held only to attach the sample: the GUI thread's tick takes it too
                if self._last != began:
                    continue
                if self._current is None:
                    self._current = Block(began - self.t0)
                block = self._current
                if sample is not None:
                    block.samples[sample] += 1
                for stack in others:
                    if stack and not stack[0].endswith(("_worker", ":wait", ":get")):
                        block.others[stack] += 1

    def stop(self) -> None:
        """Stop the timer and the watching thread."""
        self._timer.stop()
        self._stop.set()

    def longest(self, since: int = 0) -> float:
        """The longest gap so far (seconds), of the gaps from number ``since`` on."""
        return max((g for g, _ in self.gaps[since:]), default=0.0)

    def longest_own(self, since: int = 0) -> float:
        """The longest gap less the GUI thread's wait for a CPU in it (seconds), from gap ``since`` on."""
        return max((g - w for (g, _), w in zip(self.gaps[since:], self.waits[since:], strict=True)), default=0.0)

    def longest_cpu(self, since: int = 0) -> float:
        """The most CPU time the GUI thread spent within one gap (seconds), from gap ``since`` on."""
        return max(self.cpu[since:], default=0.0)

    def report(self, top: int = 5, since_s: float = 0.0) -> list[str]:
        """The ``top`` longest blocks that began ``since_s`` seconds after t0 or later, explained."""
        blocks = [b for b in self.blocks if b.start >= since_s]
        return [b.describe() for b in sorted(blocks, key=lambda b: -b.seconds)[:top]]
