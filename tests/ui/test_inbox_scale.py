"""Issue 29 at scale: the inbox of a keep.md of 100,000 entries whose journal holds 10,000 recorded
changes opens without blocking the GUI thread.

The window runs in a process of its own, as a person's keepgui does (the benchmark's own window,
:func:`tests.bench.bench_inbox.inbox_window`): in this test process, a thousand tests' leftover
threads and objects compete for the interpreter lock, which a person's window never meets. The journal
is written in its own format (a whole version, then one delta per appended line, a whole version every
:data:`~keepgui.core.journal.CHAIN`), straight to disk so the test does not spend minutes making it. A
1 ms timer on the GUI thread (:mod:`tests.bench.guiwatch`) measures its longest gap from the moment the
Inbox is shown until it holds every change and the newest one's entry changes are on screen. What the
test holds is the GUI thread's own work within one gap — its CPU time there, neither its waits for a CPU
nor for the interpreter lock, which a shared test machine moves by several milliseconds either way
(the wall-clock gap less the CPU wait was 13.8 ms in one whole run and 16.9 in the next): the median of
three windows stays within the window's 16 ms budget. The wall-clock figure beside its target is
``make bench``'s (``bench_inbox``).
"""

from __future__ import annotations

import re
import statistics

ENTRIES = 100_000
CHANGES = 10_000
BUDGET_MS = 16.0


def test_the_inbox_of_10000_changes_of_100000_entries_opens_within_the_frame_budget():
    from tests.bench.bench_inbox import inbox_window, synthetic

    with synthetic(ENTRIES, CHANGES) as prepared:  # one journal written for the three windows (most of the time)
        runs = [inbox_window(ENTRIES, CHANGES, prepared)[0] for _ in range(3)]
    told = [(f"{r.figure:.1f} ms", f"{r.baseline:.1f} ms less CPU wait", r.note) for r in runs]
    cpu = [float(re.search(r"GUI CPU in one gap at most ([0-9.]+) ms", r.note).group(1)) for r in runs]  # type: ignore[union-attr]
    print("inbox opening, GUI CPU per gap at most:", cpu, told)
    assert all(f"{CHANGES:,} rows listed" in r.note for r in runs), told
    assert statistics.median(cpu) <= BUDGET_MS, (cpu, told)
