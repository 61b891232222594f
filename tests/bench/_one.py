"""Run one benchmark module in this (fresh) process and print its results as JSON lines."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> int:
    name, quick = sys.argv[1], "--quick" in sys.argv[2:]
    module = importlib.import_module(f"tests.bench.{name}")
    run = getattr(module, "run", None)
    if not callable(run):  # make bench runs every bench_* module: each needs run(quick) -> list[Result]
        print(f"tests.bench.{name} has no run(quick=False) -> list[Result]", file=sys.stderr)
        return 2
    for result in run(quick=quick):
        print("RESULT " + json.dumps(dataclasses.asdict(result), ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
