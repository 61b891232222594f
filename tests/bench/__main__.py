"""``make bench``: every benchmark of keepgui in one run, printed as one table.

``python -m tests.bench [--quick] [NAME ...]`` runs the ``bench_*.py`` modules
(all of them, or those whose name contains a NAME) and prints each figure, its
baseline, the ratio, the target and whether it is met, then how long it all took. The run fails
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
    for name in modules:
        start = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        done = subprocess.run(
            [sys.executable, "-m", "tests.bench._one", name] + (["--quick"] if args.quick else []),
            capture_output=True,
            text=True,
            cwd=root,
        )
        lines = [line[7:] for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        results.extend(Result(**json.loads(line)) for line in lines)
        if done.returncode != 0 or not lines:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            failed.append(f"{name}: {tail}")
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
