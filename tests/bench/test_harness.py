"""``make bench`` cannot rot: every benchmark module runs under it, and the harness prints one table.

Quick (not slow): the harness itself on two cheap benchmarks at 1,000 memories; the table's shape.
"""

from __future__ import annotations

import ast
import io
import os
import pkgutil
import subprocess
import sys

from tests.bench.__main__ import BASELINE_NAME, with_baselines
from tests.bench.common import ROOT, Result, bench_size, bench_sizes, print_table

HERE = os.path.join(ROOT, "tests", "bench")
HEADER = ["benchmark", "figure", "baseline", "ratio", "target", "met"]


def test_every_benchmark_module_has_the_run_make_bench_calls():
    modules = sorted(m.name for m in pkgutil.iter_modules([HERE]) if m.name.startswith("bench_"))
    assert len(modules) >= 14
    for name in modules:
        with open(os.path.join(HERE, name + ".py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
        assert runs, f"{name} has no run(): make bench would fail on it"
        assert [a.arg for a in runs[0].args.args] == ["quick"], name


def test_sizes_follow_keepgui_bench_sizes(monkeypatch):
    monkeypatch.delenv("KEEPGUI_BENCH_SIZES", raising=False)
    assert bench_sizes() == [10_000, 100_000] and bench_size() == 100_000
    assert bench_sizes(quick=True) == [10_000]
    monkeypatch.setenv("KEEPGUI_BENCH_SIZES", "1000,5000")
    assert bench_sizes() == [1_000, 5_000] and bench_size(quick=True) == 5_000


def test_the_table_has_its_columns_and_one_line_per_figure():
    out = io.StringIO()
    rows = [
        Result("a figure", 12.5, "ms", 5.0, "bare PySide6 window", 2.5, "×", "≤ 16 ms", True, "why"),
        Result("a figure without a baseline", 0.25, "s"),
    ]
    print_table(rows, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == HEADER
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].startswith("a figure ") and "12.50 ms" in lines[2] and "5.00 ms (bare PySide6 window)" in lines[2]
    assert "2.5×" in lines[2] and lines[2].rstrip().endswith("yes")
    assert "250.0 ms" in lines[3] and lines[3].rstrip().endswith("—")
    assert lines[4] == "  · a figure: why"


def test_the_harness_runs_benchmarks_and_prints_one_table(tmp_path):
    env = dict(
        os.environ,
        KEEPGUI_BENCH_SIZES="1000",
        KEEPGUI_BENCH_REPEAT="1",
        KEEPGUI_BENCH_CACHE=str(tmp_path / "cache"),
        QT_QPA_PLATFORM="offscreen",
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench", "--quick", "bench_store", "bench_secrets"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == HEADER)
    figures = [line for line in lines[start + 2 :] if line and not line.startswith(("  ·", "FAILED", "2 benchmark"))]
    assert any("1,000" in line for line in figures), done.stdout
    assert len(figures) >= 4
    assert lines[-1].startswith("2 benchmark modules, ") and " 0 failed" in lines[-1]


def test_a_module_without_run_fails_the_harness_with_its_name(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench._one", "synth"],  # a helper module: it has no run()
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "tests.bench.synth has no run(" in done.stderr


def test_a_figure_without_a_baseline_gets_the_baseline_trees_figure_of_the_same_name():
    ours = [
        Result("load", 2.0, "s"),
        Result("block", 30.0, "ms", 5.0, "bare window", 6.0, "×"),
        Result("new", 1.0, "s"),
    ]
    theirs = [Result("load", 4.0, "s"), Result("block", 60.0, "ms"), Result("load", 9.0, "ms")]
    load, block, new = with_baselines(ours, theirs)
    assert (load.baseline, load.baseline_name, load.ratio) == (4.0, BASELINE_NAME, 0.5)
    assert (block.baseline, block.baseline_name) == (5.0, "bare window")  # its own baseline stays
    assert new.baseline is None and new.ratio is None  # not measured in the baseline tree
