"""An agent rewriting a file with no lock while keepgui saves it: what each way of replacing loses.

``python -m tests.reliability.rewrite_race [RUNS] [AGENT_WRITES]`` runs an agent process that
rewrites ``MEMORY.md`` as Claude Code's Edit tool does (read it whole, write a temporary file,
``os.replace``, no lock) as fast as it can, while keepgui saves the same file in a loop with
:func:`keepgui.core.fsio.atomic_write` and the stamp it read. Each run is made twice, side by
side: with the exchange of the new file for the old (``renameat2(RENAME_EXCHANGE)``, what keepgui
does on Linux) and with a plain ``os.replace`` after the last check (what it did before, and does
where a filesystem cannot exchange). It prints the agent lines missing from the file at the end:
an agent line lost is one keepgui's save replaced, or one the agent itself dropped because it read
keepgui's file in the moment before keepgui swapped it back (no writer without a lock can rule
that out; the exchange only makes the moment short).
"""

from __future__ import annotations

import os
import sys
import tempfile

from keepgui.core import fsio
from keepgui.core.errors import Conflict
from tests.reliability.common import rewriting_agent


def one_run(exchange: bool, agent_writes: int) -> tuple[int, int, int]:
    """(keepgui saves that stood, saves refused, agent lines missing at the end)."""
    real = fsio._exchange
    if not exchange:
        fsio._exchange = lambda a, b: False  # type: ignore[assignment]
    try:
        folder = tempfile.mkdtemp(prefix="keepgui-race-")
        path = os.path.join(folder, "MEMORY.md")
        with open(path, "wb") as fh:
            fh.write(b"# Index\n")
        agent = rewriting_agent(path, agent_writes, "- agent {i}")
        saved = refused = 0
        while agent.poll() is None:
            try:
                data, stamp = fsio.read_stamped(path)
                fsio.atomic_write(path, (data or b"") + b"- mine %d\n" % (saved + refused), expect=stamp)
                saved += 1
            except Conflict:
                refused += 1
        with open(path, "rb") as fh:
            text = fh.read()
        missing = sum(1 for i in range(agent_writes) if b"- agent %d\n" % i not in text)
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
        return saved, refused, missing
    finally:
        fsio._exchange = real  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv else 12
    writes = int(argv[1]) if len(argv) > 1 else 3000
    totals = {True: [0, 0, 0], False: [0, 0, 0]}
    for _ in range(runs):
        for exchange in (False, True):  # side by side, so both see the same machine
            for i, n in enumerate(one_run(exchange, writes)):
                totals[exchange][i] += n
    for exchange, label in ((False, "os.replace after the last check"), (True, "exchange, swapped back on change")):
        saved, refused, missing = totals[exchange]
        print(
            f"{label}: {runs} runs x {writes:,} agent rewrites; keepgui saves {saved:,} stood, {refused:,} refused; "
            f"agent lines lost {missing:,} of {runs * writes:,}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
