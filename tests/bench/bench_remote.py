"""Opening a remote 10,000-memory iii bank over SSH vs the same bank locally, in the same run, and the
round trips each open costs (``python -m tests.bench remote``; a real sshd on 127.0.0.1, see
tests/core/sshd.py).

Every open runs in a fresh process (imports, the registry, the bank's load: every row read), each
over a new SSH connection (the master of an earlier one closed first), so the figures are what a
person waits for when keepgui starts:

* local: the bank opened in place (cold: keepgui's own cache of the replayed log empty; warm: filled);
* over SSH, cold: nothing mirrored yet (the listing, then every file fetched);
* over SSH, warm: the mirror kept from the last open and nothing changed there (one listing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from tests.bench.common import ROOT, Result

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from keepgui.core import registry
where, trips = sys.argv[1], 0
if ":" in where and not where.startswith("/"):
    from keepgui.core.remote import open_mirror
    mirror = open_mirror(where)
    where, trips = mirror.local, mirror.connection.round_trips
bank = registry.open_source("iii", where).bank("bank")
bank.load()
rows = len(bank.rows())
print(json.dumps({"seconds": time.perf_counter() - t0, "round_trips": trips, "rows": rows}))
"""


def _open(where: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, where], capture_output=True, text=True, env=env, cwd=ROOT, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "the open failed")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(quick: bool = False) -> list[Result]:
    """The figures (see the module docstring); ``quick`` opens 1,000 memories instead of 10,000."""
    from keepgui.core.remote.ssh import Connection
    from keepgui.core.remote.target import parse
    from tests.bench.synth import make_bank
    from tests.core.sshd import ALIAS, Server, available

    if available():
        raise RuntimeError(available())
    memories = 1_000 if quick else 10_000
    folder = tempfile.mkdtemp(prefix="keepgui-bench-remote-")
    server = Server(folder)
    try:
        data_dir = os.path.join(server.home, "memory")
        make_bank(os.path.join(data_dir, "bank"), memories, int(memories * 2.5))
        size = os.path.getsize(os.path.join(data_dir, "bank", "memories.jsonl"))
        env = dict(os.environ, KEEPGUI_SSH_CONFIG=server.config, PYTHONPATH=ROOT, QT_QPA_PLATFORM="offscreen")

        def fresh_connection() -> None:
            os.environ["KEEPGUI_SSH_CONFIG"] = server.config
            Connection(parse(f"{ALIAS}:")).close()

        local_env = dict(env, KEEPGUI_HOME=os.path.join(folder, "home-local"))
        remote_env = dict(env, KEEPGUI_HOME=os.path.join(folder, "home-remote"))
        local_cold = _open(data_dir, local_env)
        local_warm = _open(data_dir, local_env)
        fresh_connection()
        remote_cold = _open(f"{ALIAS}:{data_dir}", remote_env)
        fresh_connection()
        remote_warm = _open(f"{ALIAS}:{data_dir}", remote_env)
        assert local_cold["rows"] == remote_cold["rows"] == remote_warm["rows"]
        fresh_connection()
        began = time.perf_counter()
        Connection(parse(f"{ALIAS}:")).run("true")
        connect = time.perf_counter() - began
        save, poll = _round_trips(server.home, os.path.join(folder, "home-rt"))
    finally:
        server.stop()
    note = f"{memories:,} memories, a {size / 1e6:.1f} MB log; sshd on 127.0.0.1, a new connection per open"
    out = []
    for name, remote, local in (("cold", remote_cold, local_cold), ("warm", remote_warm, local_warm)):
        ratio = remote["seconds"] / local["seconds"]
        out.append(
            Result(
                f"open a {memories:,}-memory bank over SSH ({name})",
                round(remote["seconds"], 3),
                "s",
                round(local["seconds"], 3),
                f"the same bank opened locally ({name})",
                round(ratio, 2),
                "× local",
                note=note,
            )
        )
        out.append(Result(f"round trips to open it over SSH ({name})", remote["round_trips"], "round trips"))
    out.append(Result("a new SSH connection alone (part of each open above)", round(connect, 3), "s", note=note))
    out.append(Result("a save over SSH, once open (median of 20)", round(save * 1000, 1), "ms"))
    out.append(Result("an idle poll over SSH, once open (median of 20)", round(poll * 1000, 1), "ms"))
    return out


def _round_trips(home: str, keepgui_home: str) -> tuple[float, float]:
    """Medians of 20 saves of a small file and of 20 polls that find nothing changed, over an open mirror."""
    import statistics

    from keepgui.core import fsio
    from keepgui.core.remote import open_mirror
    from tests.core.sshd import ALIAS

    os.environ["KEEPGUI_HOME"] = keepgui_home
    folder = os.path.join(home, "saves")
    os.makedirs(folder)
    with open(os.path.join(folder, "keep.md"), "w") as fh:
        fh.write("- a\n")
    mirror = open_mirror(f"{ALIAS}:{folder}")
    path = os.path.join(mirror.local, "keep.md")
    saves, polls = [], []
    for i in range(20):
        stamp = fsio.current_stamp(path)
        began = time.perf_counter()
        fsio.atomic_write(path, b"- a\n- %d\n" % i, expect=stamp)
        saves.append(time.perf_counter() - began)
    for _ in range(20):
        began = time.perf_counter()
        mirror.sync()
        polls.append(time.perf_counter() - began)
    return statistics.median(saves), statistics.median(polls)


if __name__ == "__main__":
    for result in run(quick="--quick" in sys.argv):
        print(result)
