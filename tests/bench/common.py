"""What every benchmark reports, and how ``make bench`` prints it.

A benchmark module exposes ``run(quick: bool = False) -> list[Result]``. Each
figure is measured side by side with its baseline in the same process, several
times, and reported as medians; the ratio is figure / baseline (or, for
"faster than" targets, baseline / figure); ``ratio_label`` is its unit as
printed after the number ("×", "× faster", "%").
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

CACHE = os.environ.get("KEEPGUI_BENCH_CACHE", os.path.join(tempfile.gettempdir(), "keepgui-bench-cache"))


@dataclass
class Result:
    """One line of the benchmark table."""

    name: str
    figure: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    ratio: float | None = None
    ratio_label: str = ""
    target: str = ""
    met: bool | None = None
    note: str = ""


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The checkout these benchmarks belong to (a baseline tree is another checkout beside it)."""


def run_in_tree(tree: str, script: str, args: list[str], timeout: float) -> dict:
    """Run ``python -c script *args`` with keepgui imported from checkout ``tree`` (offscreen) and
    return the JSON object it printed last; refuses a child that imported keepgui from elsewhere
    (the script prints ``keepgui``'s folder as ``tree``)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=tree,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": tree},
        timeout=timeout,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"the child of {tree} failed: {done.stderr[-1500:]}")
    marks: dict = json.loads(lines[-1])
    if os.path.realpath(marks["tree"]) != os.path.realpath(tree):
        raise RuntimeError(f"the child imported keepgui from {marks['tree']}, not {tree}")
    return marks


def median_time(fn: Callable[[], object], repeat: int = 5, setup: Callable[[], object] | None = None) -> float:
    """Median wall time of ``fn`` in seconds over ``repeat`` runs (``setup`` runs untimed before each)."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(a: Callable[[], object], b: Callable[[], object], repeat: int = 5) -> tuple[float, float]:
    """Median times of ``a`` and ``b`` measured alternately, so machine noise hits both alike."""
    ta, tb = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        a()
        ta.append(time.perf_counter() - start)
        start = time.perf_counter()
        b()
        tb.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def bench_sizes(quick: bool = False) -> list[int]:
    """The bank sizes (memories) of the benchmarks that run at several: ``KEEPGUI_BENCH_SIZES`` (e.g.
    ``10000,100000,1000000``), else 10,000 and 100,000 (10,000 for ``--quick``). A million is left to
    ``make bench-million``: generating its bank and loading it in every process takes most of an hour."""
    given = os.environ.get("KEEPGUI_BENCH_SIZES")
    if given:
        return [int(s) for s in given.split(",")]
    return [10_000] if quick else [10_000, 100_000]


def bench_size(quick: bool = False) -> int:
    """The one bank size (memories) of a benchmark that runs at one size: the largest of
    :func:`bench_sizes` (100,000 by default, 10,000 for ``--quick``)."""
    return max(bench_sizes(quick))


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB."""
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage / 1024 if sys.platform != "darwin" else usage / (1024 * 1024)


def cached_bank(memories: int = 100_000, lines: int = 250_000, seed: int = 7) -> str:
    """A generated bank folder, made once and reused across runs; returns the bank folder."""
    from tests.bench.synth import make_bank

    folder = os.path.join(CACHE, f"bank-{memories}-{lines}-{seed}")
    log = os.path.join(folder, "memories.jsonl")
    if not os.path.exists(log):
        tmp = folder + ".partial"
        shutil.rmtree(tmp, ignore_errors=True)
        make_bank(tmp, memories, lines, seed)
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(tmp, folder)
    return folder


def bank_in_data_dir(folder: str, data_dir: str, name: str = "bank") -> str:
    """Put a cached bank into ``data_dir`` as a real folder whose files are hard links to the cache
    (the worker, and keepgui as it does, skips a bank folder that is a symbolic link); copies where
    hard links cannot be made. Returns the bank folder."""
    bank = os.path.join(data_dir, name)
    os.makedirs(bank, exist_ok=True)
    for entry in os.listdir(folder):
        src, dst = os.path.join(folder, entry), os.path.join(bank, entry)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
            continue
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
    return bank


def fresh_copy(folder: str) -> str:
    """A throwaway copy of a cached bank (for benchmarks that write)."""
    dest = tempfile.mkdtemp(prefix="keepgui-bench-")
    target = os.path.join(dest, os.path.basename(folder))
    shutil.copytree(folder, target)
    return target


def fmt(value: float | None, unit: str = "") -> str:
    """A figure for the table."""
    if value is None:
        return "—"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "ms":
        return f"{value:.2f} ms"
    if unit == "x":
        return f"{value:.2f}×"
    if unit == "MiB":
        return f"{value:.0f} MiB"
    return f"{value:.3g} {unit}".strip()


def print_table(results: list[Result], out=sys.stdout) -> None:
    """The one table ``make bench`` prints."""
    header = ("benchmark", "figure", "baseline", "ratio", "target", "met")
    rows = []
    for r in results:
        base = f"{fmt(r.baseline, r.unit)} ({r.baseline_name})" if r.baseline is not None else "—"
        ratio = f"{r.ratio:.3g}{r.ratio_label}" if r.ratio is not None else "—"
        met = "—" if r.met is None else ("yes" if r.met else "NO")
        rows.append((r.name, fmt(r.figure, r.unit), base, ratio, r.target or "—", met))
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line, file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)), file=out)
    for r in results:
        if r.note:
            print(f"  · {r.name}: {r.note}", file=out)
