"""``python -m tests.stress [--quick] [--seed N] [--only NAME ...]``: the long reliability run.

Runs the scenarios of :mod:`tests.reliability` at full size and prints ONE
summary table: concurrent writers (records written and read back; lost),
SIGKILL during writes (runs; files found torn), the hostile-input corpus
(inputs tried; crashes; files changed by reading), random mutation sequences
(sequences and steps; mismatches). Every "must be 0" figure that is not zero
makes the exit status 1, and the first failures are printed under the table.

Full size takes about ten minutes on two cores; ``--quick`` is a one-minute
smoke run of the same code at smaller sizes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field

from tests.reliability import (
    concurrent_writers,
    hostile_corpus,
    racing_appends,
    random_mutation_run,
    release_corpus,
    run_hostile,
    sigkill_at_points,
    sigkill_log_appends,
    sigkill_rule_saves,
    torn_tail_then_append,
)

FULL = {
    "writers": dict(keepgui_procs=2, records_each=20_000, worker_style_records=20_000),
    "contended": dict(keepgui_procs=3, records_each=2_000, worker_style_records=0, max_batch=3, shared_every=1),
    "race": dict(saves=5_000, pins=5_000, worker_records=20_000, keepgui_procs=2),
    "race_cli": dict(saves=300, pins=300, worker_records=10_000, worker_idle_ms=30),
    "rule_kills": 320,
    "log_kills": 320,
    "fuzz": 40,
    "walks": (100, 1_000),  # sequences x steps: 100,000 random mutations
    "hypothesis": 2_000,  # examples of the property test's generated sequences
    "agents": (300, 60, 60),  # keeps racing nanobot, keeps/forgets racing Claude Code, kill rounds
}
QUICK = {
    "writers": dict(keepgui_procs=2, records_each=2_000, worker_style_records=2_000),
    "contended": dict(keepgui_procs=3, records_each=200, worker_style_records=0, max_batch=3, shared_every=1),
    "race": dict(saves=500, pins=500, worker_records=2_000, keepgui_procs=2),
    "race_cli": dict(saves=20, pins=20, worker_records=400, worker_idle_ms=30),
    "rule_kills": 30,
    "log_kills": 30,
    "fuzz": 4,
    "walks": (10, 500),
    "hypothesis": 100,
    "agents": (30, 10, 6),
}


@dataclass
class Row:
    """One line of the summary: what ran, and the figures that must be zero."""

    scenario: str
    done: str
    zeros: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every must-be-zero figure is zero."""
        return all(v == 0 for v in self.zeros.values())


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_writers(root: str, size: dict, seed: int) -> Row:
    """Concurrent keepgui writers and a worker-style writer; then a contended shared reinforcement."""
    main = concurrent_writers(os.path.join(root, "writers"), seed=seed, **size["writers"])
    hot = concurrent_writers(os.path.join(root, "contended"), seed=seed + 1, **size["contended"])
    w = size["writers"]
    done = (
        f"{w['keepgui_procs']}x{w['records_each']:,} keepgui + {w['worker_style_records']:,} worker-style: "
        f"{main['written']:,} records written, {main['read_back']:,} read back; "
        f"{hot['written']:,} more under contention, {hot['read_back']:,} read back"
    )
    zeros = {
        "lost": main["lost"] + hot["lost"],
        "bad or interleaved lines": sum(r[k] for r in (main, hot) for k in ("bad_lines", "interleaved")),
        "lost reinforcements": main["lost_reinforcements"]
        + hot["lost_reinforcements"]
        + main["repeated_revisions"]
        + hot["repeated_revisions"],
        "missing or extra lines": abs(main["lines"] - main["expected_lines"])
        + abs(hot["lines"] - hot["expected_lines"]),
    }
    return Row("concurrent writers", done, zeros, main["examples"] + hot["examples"])


def run_race(root: str, size: dict, seed: int) -> Row:
    """keepgui saves and pins racing the worker's two-write append, in-process and via the CLI."""
    lib = racing_appends(os.path.join(root, "library"), seed=seed, **size["race"])
    cli = racing_appends(os.path.join(root, "cli"), seed=seed + 1, via_cli=True, **size["race_cli"])
    r, c = size["race"], size["race_cli"]
    done = (
        f"{r['keepgui_procs']}x({r['saves']:,} saves + {r['pins']:,} pins) vs a two-write worker of "
        f"{r['worker_records']:,}: {lib['written']:,} records written, {lib['read_back']:,} read back, "
        f"{lib['worker_gaps']:,} appends landed inside a worker append; {c['saves']} `keepgui save` + "
        f"{c['pins']} `keepgui pin` commands vs {c['worker_records']:,}: {cli['written']:,} written, "
        f"{cli['read_back']:,} read back, {cli['worker_gaps']} inside a worker append"
    )
    zeros = {
        "lost": lib["lost"] + cli["lost"],
        "glued": lib["glued"] + cli["glued"],
        "bad lines": lib["bad_lines"] + cli["bad_lines"],
        "failed commands": cli["failed"],
        "wrong final state": (not lib["replay_ok"]) + (not cli["replay_ok"]),
    }
    return Row("appends racing the worker's two-write append", done, zeros, lib["examples"] + cli["examples"])


def run_kills(root: str, size: dict, seed: int) -> Row:
    """SIGKILL at random moments (rules and log) and at each chosen point, plus torn tails."""
    rules = sigkill_rule_saves(os.path.join(root, "rule-kills"), runs=size["rule_kills"], seed=seed)
    _say(f"  rule saves: {rules['runs']} kills, {rules['temp_files']} landed mid-write")
    log = sigkill_log_appends(os.path.join(root, "log-kills"), runs=size["log_kills"], seed=seed)
    _say(
        f"  log appends: {log['runs']} kills, {log['torn_tails']} cut a write short, "
        f"{log['partial_batches']} left part of a batch"
    )
    points = sigkill_at_points(os.path.join(root, "kill-points"))
    torn = torn_tail_then_append(os.path.join(root, "torn-tails"))
    runs = rules["runs"] + log["runs"] + points["points"] + torn["cases"]
    done = (
        f"{runs} runs: {rules['runs']} rule saves ({rules['temp_files']} killed mid-write), "
        f"{log['runs']} log appends ({log['torn_tails']} torn tails), {points['points']} chosen kill points, "
        f"{torn['cases']} torn-tail repairs"
    )
    failures = rules["failures"] + log["failures"] + points["failures"] + torn["failures"]
    return Row(
        "SIGKILL during writes",
        done,
        {"files found torn": rules["torn"] + log["torn"] + points["torn"] + len(torn["failures"])},
        failures,
    )


def run_corpus(root: str, size: dict, seed: int) -> Row:
    """The full hostile corpus, every command for every bank name, plus seeded random damage."""
    folder = os.path.join(root, "corpus")
    os.makedirs(folder)
    try:
        cases = hostile_corpus(folder, fuzz=size["fuzz"], seed=seed)
        result = run_hostile(cases, thorough=True)
    finally:
        release_corpus(folder)
    done = f"{result['inputs']} inputs tried ({result['commands']} CLI commands, each also read through the library)"
    return Row(
        "hostile-input corpus",
        done,
        {"crashes": result["crashes"], "files changed by reading": result["files_changed_by_reading"]},
        result["failures"],
    )


def run_mutations(root: str, size: dict, seed: int) -> Row:
    """Seeded random walks, then the property test's generated sequences with many examples."""
    sequences, steps = size["walks"]
    total = mismatches = 0
    failures = []
    for n in range(sequences):
        r = random_mutation_run(seed * 100_000 + n, steps, folder=tempfile.mkdtemp(dir=root))
        total += r["steps"]
        mismatches += r["mismatches"]
        if r["first_mismatch"]:
            failures.append(r["first_mismatch"])
    hyp = _hypothesis_sequences(size["hypothesis"], root)
    done = (
        f"{sequences + hyp['sequences']:,} sequences, {total + hyp['steps']:,} steps ({sequences} seeded walks "
        f"of {steps:,}; {hyp['sequences']:,} generated by hypothesis)"
    )
    return Row(
        "random mutation sequences", done, {"mismatches": mismatches + hyp["mismatches"]}, failures + hyp["failures"]
    )


def _hypothesis_sequences(examples: int, root: str) -> dict:
    """Run the property test's strategy for ``examples`` examples, counting sequences and steps."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    from tests.backends.iii.test_property import ops
    from tests.reliability.model import MutationHarness

    count = {"sequences": 0, "steps": 0}

    @settings(
        max_examples=examples, deadline=None, database=None, print_blob=True, suppress_health_check=list(HealthCheck)
    )
    @given(st.lists(ops, min_size=1, max_size=80))
    def sequences(sequence):
        count["sequences"] += 1
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            harness = MutationHarness(os.path.join(tmp, "memory"))
            for op in sequence:
                harness.run(op)
                harness.check(full=False)
            harness.check(full=True)
            count["steps"] += harness.steps

    try:
        sequences()
    except Exception as exc:  # noqa: BLE001 - a falsifying example is the finding
        return {**count, "mismatches": 1, "failures": [f"hypothesis: {type(exc).__name__}: {str(exc)[:3000]}"]}
    return {**count, "mismatches": 0, "failures": []}


def run_agents(root: str, size: dict, seed: int) -> Row:
    """The command line racing nanobot's truncating rewrite and Claude Code's rewrites, and killed
    between the two writes of a change (:mod:`tests.reliability.agents`)."""
    from tests.reliability.agents import claude_kills, claude_race, nanobot_race

    ops, claude_ops, rounds = size["agents"]
    nb = nanobot_race(os.path.join(root, "nanobot"), ops, seed)
    cl = claude_race(os.path.join(root, "claude"), claude_ops, seed)
    kills = claude_kills(os.path.join(root, "kills"), rounds, seed)
    done = (
        f"{ops} `keepgui keep` vs nanobot ({nb['agent_ops']} rewrites): {nb['refused']} refused; "
        f"{claude_ops} keep/forget vs Claude Code ({cl['agent_ops']} rewrites): {cl['refused']} refused; "
        f"{rounds} kill rounds: {kills['orphaned_after_kill']} cut a change in two"
    )
    zeros = {
        "lost": nb["lost_agent"] + cl["lost_agent"],
        "torn": nb["torn"],
        "orphaned after the next command": nb["orphaned"] + cl["orphaned"] + kills["orphaned"],
        "empty versions in history": nb["empty_versions"],
    }
    return Row("agents racing the command line", done, zeros, nb["examples"] + cl["examples"])


SCENARIOS = {
    "writers": run_writers,
    "race": run_race,
    "kills": run_kills,
    "hostile": run_corpus,
    "mutations": run_mutations,
    "agents": run_agents,
}


def print_table(rows: list[Row], seconds: float) -> None:
    """The one summary table."""
    header = ("scenario", "what ran", "must be 0", "value", "verdict")
    lines = []
    for row in rows:
        first = True
        for name, value in row.zeros.items():
            lines.append(
                (
                    row.scenario if first else "",
                    row.done if first else "",
                    name,
                    str(value),
                    "ok" if value == 0 else "FAIL",
                )
            )
            first = False
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    widths[1] = min(widths[1], 90)

    def fmt(cells):
        out = []
        desc = cells[1]
        chunks = textwrap.wrap(desc, widths[1]) or [""]
        for n, chunk in enumerate(chunks):
            row = (cells[0] if n == 0 else "", chunk, *(cells[2:] if n == 0 else ("", "", "")))
            out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        return out

    rule = "  ".join("-" * w for w in widths)
    print(rule)
    print("\n".join(fmt(header)))
    print(rule)
    for line in lines:
        print("\n".join(fmt(line)))
    print(rule)
    verdict = "ALL MUST-BE-ZERO FIGURES ARE ZERO" if all(r.ok for r in rows) else "FAILED"
    print(f"{verdict} — {seconds / 60:.1f} min " + "  ".join(f"[{r.scenario}: {r.seconds:.0f} s]" for r in rows))


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios, print the table; 0 when every must-be-zero figure is zero, else 1."""
    parser = argparse.ArgumentParser(prog="python -m tests.stress", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a one-minute smoke run")
    parser.add_argument("--seed", type=int, default=0, help="base seed of every scenario (default 0)")
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="run only these scenarios")
    args = parser.parse_args(argv)
    size = QUICK if args.quick else FULL
    root = tempfile.mkdtemp(prefix="keepgui-stress-")
    rows: list[Row] = []
    start = time.perf_counter()
    try:
        for name, scenario in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            _say(f"running {name} ...")
            t0 = time.perf_counter()
            os.makedirs(os.path.join(root, name))
            try:
                row = scenario(os.path.join(root, name), size, args.seed)
            except Exception as exc:  # noqa: BLE001 - report it in the table and go on
                row = Row(name, "the scenario itself failed", {"scenario errors": 1}, [f"{type(exc).__name__}: {exc}"])
            row.seconds = time.perf_counter() - t0
            _say(f"  {name} took {row.seconds:.1f} s")
            rows.append(row)
    finally:
        release_corpus(root)
        shutil.rmtree(root, ignore_errors=True)
    print()
    print_table(rows, time.perf_counter() - start)
    for row in rows:
        for failure in row.failures[:10]:
            print(f"FAIL {row.scenario}: {failure[:2000]}")
        if len(row.failures) > 10:
            print(f"FAIL {row.scenario}: ... and {len(row.failures) - 10} more")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
