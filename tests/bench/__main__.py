"""``make bench``: every benchmark of keepgui in one run, printed as one table.

``python -m tests.bench [--quick] [NAME ...]`` runs the ``bench_*.py`` modules
(all of them, or those whose name contains a NAME) and prints each figure, its
baseline, the ratio, the target and whether it is met.
"""

from __future__ import annotations

import argparse
import importlib
import os

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
    modules = sorted(m.name for m in pkgutil.iter_modules([here]) if m.name.startswith("bench_"))
    if args.names:
        modules = [m for m in modules if any(n in m for n in args.names)]
    results: list[Result] = []
    failed = []
    for name in modules:
        start = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"tests.bench.{name}")
            results.extend(module.run(quick=args.quick))
        except Exception as exc:  # report and go on: one broken benchmark must not hide the rest
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
        print(f"  {name} took {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    print()
    print_table(results)
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
