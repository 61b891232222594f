"""Issue 2's benchmark: loading a 100,000-memory, 250,000-line bank, full and incremental.

Side by side in one process: keepgui's full replay vs a bare ``json.loads``
loop over the same file (target ≤ 1.5×), and an incremental refresh after 100
appended lines vs a full load (target ≤ 1%). Peak RSS is reported.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import time

from tests.bench.common import Result, bench_size, cached_bank, fresh_copy, peak_rss_mb


def _bare_loop(path: str) -> int:
    n = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                json.loads(line)
                n += 1
    return n


def run(quick: bool = False) -> list[Result]:
    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.record import fingerprint, new_memory

    memories = bench_size(quick)
    lines = memories * 5 // 2
    folder = fresh_copy(cached_bank(memories, lines))
    path = os.path.join(folder, "memories.jsonl")
    repeat = 3 if quick else 5
    bare, full = [], []
    log = None
    for _ in range(repeat):
        log = None  # the previous load is not kept alive while the next one runs
        gc.collect()
        start = time.perf_counter()
        _bare_loop(path)
        bare.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        log = MemoryLog(path)
        log.refresh()
        full.append(time.perf_counter() - start)
    bare_s, full_s = statistics.median(bare), statistics.median(full)
    assert len(log.records) == memories

    incremental = []
    serial = 0
    for _ in range(repeat):
        extra = []
        for _ in range(100):
            text = f"appended benchmark memory {serial}"
            serial += 1
            extra.append(
                new_memory(
                    id=fingerprint(text),
                    text=text,
                    entities=["bench"],
                    tags=[],
                    confidence="stated",
                    corroboration=0,
                    pinned=False,
                    created_at=1,
                    updated_at=1,
                    revision=0,
                ).to_line()
            )
        with open(path, "ab") as fh:
            fh.write(b"".join(extra))
        start = time.perf_counter()
        delta = log.refresh()
        incremental.append(time.perf_counter() - start)
        assert len(delta.added) == 100 and not delta.reset
    inc_s = statistics.median(incremental)
    rss = peak_rss_mb()
    shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    size_mb = os.path.getsize(os.path.join(cached_bank(memories, lines), "memories.jsonl")) / 2**20
    return [
        Result(
            f"full load, {memories:,} memories / {lines:,} lines ({size_mb:.0f} MiB)",
            full_s,
            "s",
            bare_s,
            "bare json.loads loop",
            full_s / bare_s,
            "×",
            "≤ 1.5×",
            full_s / bare_s <= 1.5,
        ),
        Result(
            "incremental refresh after 100 appended lines",
            inc_s,
            "s",
            full_s,
            "full load",
            100 * inc_s / full_s,
            "%",
            "≤ 1%",
            inc_s / full_s <= 0.01,
        ),
        Result("peak RSS after load", rss, "MiB", note="whole benchmark process"),
    ]


if __name__ == "__main__":
    from tests.bench.common import print_table

    print_table(run())
