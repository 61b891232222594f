"""Reliability scenarios shared by the short tests and the long stress run.

Each scenario is a plain function, parameterised by size and deterministic for
a given seed, that returns a dict of figures. ``tests/core/test_*.py`` call
them small and assert on the figures; ``python -m tests.stress`` calls them
large and prints one summary table.

* :func:`concurrent_writers` — keepgui processes and a worker-style writer
  appending to one ``memories.jsonl`` at once.
* :func:`racing_appends` — keepgui saves and pins racing the worker's real
  two-write append (JSON, a pause, then the newline).
* :func:`sigkill_rule_saves`, :func:`sigkill_log_appends`,
  :func:`sigkill_at_points`, :func:`torn_tail_then_append` — writers killed
  with SIGKILL mid-write, at random moments and at chosen points.
* :func:`hostile_corpus` + :func:`run_hostile` — damaged and malicious data
  dirs read through the CLI and the library.
* :func:`random_mutation_run` — a seeded random walk of mutations checked
  against an independent reference model of the worker's rules.

Separate processes are real ones (``python -m tests.reliability.child``), so
locks, ``O_APPEND`` and SIGKILL behave as they do for users.
"""

from tests.reliability.concurrency import concurrent_writers, racing_appends
from tests.reliability.crash import (
    sigkill_at_points,
    sigkill_log_appends,
    sigkill_rule_saves,
    torn_tail_then_append,
)
from tests.reliability.hostile import HostileCase, hostile_corpus, release_corpus, run_hostile
from tests.reliability.model import random_mutation_run

__all__ = [
    "HostileCase",
    "concurrent_writers",
    "hostile_corpus",
    "racing_appends",
    "random_mutation_run",
    "release_corpus",
    "run_hostile",
    "sigkill_at_points",
    "sigkill_log_appends",
    "sigkill_rule_saves",
    "torn_tail_then_append",
]
