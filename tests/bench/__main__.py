"""``make bench``: every benchmark of keepgui in one run, printed as one table.

``python -m tests.bench [--quick] [NAME ...]`` runs the ``bench_*.py`` modules
(all of them, or those whose name contains a NAME) and prints each figure, its
baseline, the ratio, the target and whether it is met, then how long it all took. With
``KEEPGUI_BENCH_BASELINE`` (a checkout of main), every module also runs in that tree, and a figure
measured without a baseline of its own gets that tree's figure of the same name as its baseline
(the same run, alternately: main's figure beside this tree's). The run fails
(exit status 1) only when a benchmark module fails or reports nothing; a target not met is a
``NO`` in the table. Each module runs in a
fresh process, so no benchmark pays for the memory another one left behind;
within a module, a figure and its baseline are measured side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import pkgutil
import sys
import time

from tests.bench.common import Result, print_table

BASELINE_NAME = "KEEPGUI_BENCH_BASELINE, same run"


def with_baselines(results: list[Result], theirs: list[Result]) -> list[Result]:
    """``results`` where each figure with no baseline of its own gets the figure of the same name
    (and unit) in ``theirs`` — the baseline tree's run of the same module — as its baseline."""
    found = {(r.name, r.unit): r.figure for r in theirs}
    out = []
    for r in results:
        base = found.get((r.name, r.unit))
        if r.baseline is None and base is not None:
            ratio = r.figure / base if base else None
            r = Result(
                **{**r.__dict__, "baseline": base, "baseline_name": BASELINE_NAME, "ratio": ratio, "ratio_label": "×"}
            )
        out.append(r)
    return out


def compares_itself(path: str) -> bool:
    """A module that measures the ``KEEPGUI_BENCH_BASELINE`` tree beside its own figures itself."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    return "KEEPGUI_BENCH_BASELINE" in text or "trees_to_compare" in text


def run_module(name: str, quick: bool, tree: str, env: dict[str, str] | None = None) -> tuple[list[Result], str | None]:
    """One benchmark module in a fresh process of checkout ``tree``: its results, and why it failed (None)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench._one", name] + (["--quick"] if quick else []),
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
    )
    lines = [line[7:] for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    results = [Result(**json.loads(line)) for line in lines]
    if done.returncode != 0 or not lines:
        return results, (done.stderr.strip().splitlines() or ["no output"])[-1]
    return results, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer repeats (a smoke run)")
    parser.add_argument("names", nargs="*", help="only benchmarks whose module name contains one of these")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    modules = sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.startswith("bench_"))
    if args.names:
        modules = [m for m in modules if any(n in m for n in args.names)]
    results: list[Result] = []
    failed = []
    began = time.perf_counter()
    baseline = os.environ.get("KEEPGUI_BENCH_BASELINE")
    for name in modules:
        start = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        ours, why = run_module(name, args.quick, root)
        if why is not None:
            failed.append(f"{name}: {why}")
        if (
            baseline
            and not compares_itself(os.path.join(here, name + ".py"))
            and os.path.exists(os.path.join(baseline, "tests", "bench", name + ".py"))
        ):
            # the baseline tree's own run of the module (which then compares with nothing else)
            env = {k: v for k, v in os.environ.items() if k != "KEEPGUI_BENCH_BASELINE"}
            theirs, _ = run_module(name, args.quick, baseline, dict(env, PYTHONPATH=baseline))
            ours = with_baselines(ours, theirs)
        results.extend(ours)
        print(f"  {name} took {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    print()
    print_table(results)
    for line in failed:
        print(f"FAILED {line}")
    took = time.perf_counter() - began
    print(f"{len(modules)} benchmark modules, {len(results)} figures, {len(failed)} failed, in {took / 60:.1f} min")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
