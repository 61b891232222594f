"""keepgui's command line racing agent-like writers, and killed mid-change: what is lost, refused, torn, orphaned.

Every side is a real process. The agents write as the real ones do, with no lock:

* nanobot's keep skill rewrites ``keep.md`` with a **truncating** open and then one write
  (``open(path, "w").write(...)``): for a moment the file is empty;
* Claude Code's file tools rewrite ``MEMORY.md`` whole (a temporary file renamed over it) and create
  topic files with a plain create-or-truncate.

keepgui's side is one process that runs ``keepgui.cli.main`` once per operation (the command line's
own path: opening the source, the checks, the write), so hundreds of operations cost no interpreter
starts. The figures, the same before and after a change (issue 24's closing note):

* **lost** — a line or file that was there (the seed, the agent's, or one keepgui said it kept) and
  is not at the end; split into ``lost_agent`` (what the agent or the seed wrote; keepgui's fault) and
  ``lost_keepgui`` (keepgui said it kept it, and an agent's stale rewrite dropped it: no writer without
  a lock can rule that out);
* **refused** — keepgui operations that exited non-zero (a conflict it gave up on);
* **torn** — lines at the end that are none of the known ones (half-written or glued), or known ones twice;
* **orphaned** — ``.keepgui-…tmp`` files left, and (Claude) topic files without their index line or
  index lines without their file.

``python -m tests.reliability.agents [nanobot|claude|kills|all] [OPS]`` prints them.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time

from tests.reliability.common import ROOT, child_env

NANOBOT_AGENT = r"""
import os, random, sys, time
path, stop, seed, max_pause, gap, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
rng = random.Random(seed)
i = 0
while not os.path.exists(stop) and i < limit:
    # nanobot's keep skill: read keep.md, then open it for writing (truncating) and write it whole;
    # a busy machine can hold the process between the two for a moment (``gap``)
    with open(path, "rb") as fh:
        data = fh.read()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    with open(path, "wb") as fh:
        time.sleep(rng.uniform(0, gap))
        fh.write(data + b"- Agent noted the %s checklist item\n" % (b"agent%05dx" % i))
    i += 1
    time.sleep(rng.uniform(0, max_pause))
print(i)
"""

CLAUDE_AGENT = r"""
import os, random, sys, time
mem, stop, seed, max_pause, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
index = os.path.join(mem, "MEMORY.md")
i = 0
while not os.path.exists(stop) and i < limit:
    name = "agent-%05d.md" % i
    with open(os.path.join(mem, name), "w") as fh:  # the Write tool: create or truncate, then write
        fh.write("---\nname: agent %d\ndescription: agent fact %d\nmetadata:\n  type: project\n---\n\nAgent %d.\n" % (i, i, i))
    with open(index, "rb") as fh:
        data = fh.read()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    with open(index + ".agent-tmp", "wb") as fh:
        fh.write(data + b"- [Agent %d](%s) - agent fact\n" % (i, name.encode()))
    os.replace(index + ".agent-tmp", index)
    i += 1
    time.sleep(rng.uniform(0, max_pause))
print(i)
"""

KEEPER = r"""
import io, json, sys, contextlib
from keepgui.cli import main
ops = json.loads(sys.stdin.readline())
for argv in ops:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
    print(json.dumps({"argv": argv, "rc": rc, "err": err.getvalue()[-300:]}), flush=True)
"""

_WORDS = "amber birch cedar delta ember fjord garnet harbor indigo juniper kelp lumen maple nectar onyx quartz".split()


def _token(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(9))


def nanobot_fact(rng: random.Random) -> str:
    """A fact that passes nanobot's triage and contains no other (a made-up word in it)."""
    return f"Keeps the {rng.choice(_WORDS)} {_token(rng)} key in the hallway drawer"


def _run_keeper(argvs: list[list[str]], env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", KEEPER], cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(argvs) + "\n")
    proc.stdin.close()
    proc.stdin = None
    return proc


def _results(proc: subprocess.Popen) -> list[dict]:
    out, _ = proc.communicate()
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _temps(folder: str) -> list[str]:
    return sorted(
        os.path.join(d, n) for d, _dirs, names in os.walk(folder) for n in names if ".keepgui-" in n and ".tmp" in n
    )


def _agent(script: str, target: str, folder: str, seed: int, *extra: float) -> tuple[subprocess.Popen, str]:
    stop = os.path.join(folder, "stop-agent")
    argv = [sys.executable, "-c", script, target, stop, str(seed), *map(str, extra)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True), stop


def _stop(agent: subprocess.Popen, stop: str) -> int:
    with open(stop, "w"):
        pass
    out, _ = agent.communicate()
    os.unlink(stop)
    return int(out.strip() or 0)


def nanobot_race(folder: str, ops: int = 100, seed: int = 0, max_pause: float = 0.06, gap: float = 0.005) -> dict:
    """``keepgui keep`` ×``ops`` against nanobot's truncating rewrite of keep.md ×``ops``."""
    rng = random.Random(seed)
    ws = os.path.join(folder, "ws")
    os.makedirs(os.path.join(ws, "memory"))
    seeded = [f"- {nanobot_fact(rng)}" for _ in range(40)]
    with open(os.path.join(ws, "keep.md"), "w", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in seeded))
    facts = [nanobot_fact(rng) for _ in range(ops)]
    env = child_env(KEEPGUI_HOME=os.path.join(folder, "home"))
    agent, stop = _agent(NANOBOT_AGENT, os.path.join(ws, "keep.md"), folder, seed, max_pause, gap, 4 * ops)
    keeper = _run_keeper([["keep", "--source", ws, "--stand-alone", fact] for fact in facts], env)
    results = _results(keeper)
    agent_ops = _stop(agent, stop)
    with open(os.path.join(ws, "keep.md"), encoding="utf-8") as fh:
        final = fh.read().splitlines()
    agent_lines = [f"- Agent noted the agent{i:05d}x checklist item" for i in range(agent_ops)]
    kept = [f"- {r['argv'][-1]}" for r in results if r["rc"] == 0]
    known = set(seeded) | set(agent_lines) | {f"- {f}" for f in facts}
    have = set(final)
    return {
        "ops": ops,
        "agent_ops": agent_ops,
        "lost_agent": sum(1 for line in seeded + agent_lines if line not in have),
        "lost_keepgui": sum(1 for line in kept if line not in have),
        "refused": sum(1 for r in results if r["rc"] != 0),
        "torn": sum(1 for line in final if line.strip() and line not in known) + (len(final) - len(have)),
        "orphaned": len(_temps(ws)),
        "empty_versions": _empty_history_versions(os.path.join(folder, "home")),
        "examples": [r["err"] for r in results if r["rc"] != 0][:3],
    }


def _empty_history_versions(home: str) -> int:
    """Versions of 0 bytes keepgui's history recorded of a file (a torn read taken for a version)."""
    count = 0
    for d, _dirs, names in os.walk(home):
        for n in names:
            if n.endswith(".jsonl"):
                with open(os.path.join(d, n), "rb") as fh:
                    for line in fh:  # a missing file's version ("gone") is not a read taken for the file
                        count += bool(re.search(rb'"size": ?0[,}]', line)) and not re.search(rb'"gone": ?true', line)
    return count


def _claude_home(folder: str) -> tuple[str, str, dict[str, str]]:
    """A HOME with one project whose memory folder holds 20 topic files and their index."""
    from keepgui.backends.claude.layout import ClaudeEnv, memory_location

    home, proj = os.path.join(folder, "home"), os.path.join(folder, "app")
    os.makedirs(proj)
    mem = memory_location(ClaudeEnv.from_environ({"HOME": home}), proj).path
    os.makedirs(mem)
    _seed_memory(mem)
    env = child_env(HOME=home, KEEPGUI_HOME=os.path.join(folder, "kg"))
    env.pop("CLAUDE_CONFIG_DIR", None)
    return proj, mem, env


def _seed_memory(mem: str) -> None:
    """20 topic files and their index, and nothing else in the folder."""
    for name in os.listdir(mem):
        if os.path.isfile(os.path.join(mem, name)):
            os.unlink(os.path.join(mem, name))
    lines = []
    for i in range(20):
        with open(os.path.join(mem, f"seed-{i}.md"), "w") as fh:
            fh.write(f"---\nname: seed-{i}\ndescription: seed {i}\nmetadata:\n  type: project\n---\n\nSeed fact {i}.\n")
        lines.append(f"- [Seed {i}](seed-{i}.md) — seed fact {i}\n")
    with open(os.path.join(mem, "MEMORY.md"), "w") as fh:
        fh.write("".join(lines))


def claude_orphans(mem: str) -> int:
    """Topic files no index line links to, plus index lines whose file is missing."""
    try:
        with open(os.path.join(mem, "MEMORY.md"), encoding="utf-8") as fh:
            index = fh.read()
    except FileNotFoundError:
        index = ""
    linked = set(re.findall(r"\]\(([^)\s]+\.md)\)", index))
    files = {n for n in os.listdir(mem) if n.endswith(".md") and n != "MEMORY.md"}
    return len(files - linked) + len(linked - files)


def claude_race(folder: str, ops: int = 60, seed: int = 0, max_pause: float = 0.06) -> dict:
    """``keepgui keep`` / ``forget`` against Claude Code rewriting MEMORY.md and creating topic files."""
    rng = random.Random(seed)
    proj, mem, env = _claude_home(folder)
    argvs = []
    for i in range(ops):
        if i % 3 == 2:
            argvs.append(["forget", "--agent", "claude", "--project", proj, f"seed-{i // 3 % 20}.md"])
        else:
            argvs.append(
                ["keep", "--agent", "claude", "--project", proj, "--stand-alone", f"Mike likes {_token(rng)} tea"]
            )
    agent, stop = _agent(CLAUDE_AGENT, mem, folder, seed, max_pause, 5 * ops)  # at most 5 memories a keepgui one
    keeper = _run_keeper(argvs, env)
    results = _results(keeper)
    agent_ops = _stop(agent, stop)
    with open(os.path.join(mem, "MEMORY.md"), encoding="utf-8") as fh:
        index = fh.read()
    agent_lost = 0
    for i in range(agent_ops):
        name = f"agent-{i:05d}.md"
        try:
            with open(os.path.join(mem, name)) as fh:
                ok = f"Agent {i}." in fh.read()
        except FileNotFoundError:
            ok = False
        agent_lost += (not ok) + (f"({name})" not in index)
    return {
        "ops": ops,
        "agent_ops": agent_ops,
        "lost_agent": agent_lost,
        "refused": sum(1 for r in results if r["rc"] != 0),
        "orphaned": claude_orphans(mem) + len(_temps(mem)),
        "examples": [r["err"] for r in results if r["rc"] != 0][:3],
    }


def claude_kills(folder: str, rounds: int = 30, seed: int = 0) -> dict:
    """``keepgui keep`` / ``forget`` killed (SIGKILL) at a random moment, ``rounds`` times; after each
    kill one more keepgui command runs (``memories``), then the folder is checked: a topic file without
    its index line, or an index line without its file, is an orphan."""
    rng = random.Random(seed)
    proj, mem, env = _claude_home(folder)
    seen_after_kill = standing = temps = 0
    for n in range(rounds):
        argvs = []
        for i in range(6):
            if i % 2:
                argvs.append(["forget", "--agent", "claude", "--project", proj, f"seed-{(n * 3 + i) % 20}.md"])
            else:
                argvs.append(["keep", "--agent", "claude", "--project", proj, "--stand-alone", f"Note {_token(rng)}"])
        keeper = _run_keeper(argvs, env)
        assert keeper.stdout is not None
        keeper.stdout.readline()  # the first operation is done: the others run now
        time.sleep(rng.uniform(0, 0.4))
        keeper.send_signal(signal.SIGKILL)
        keeper.communicate()
        seen_after_kill += claude_orphans(mem) > 0
        temps += len(_temps(mem))
        after = _run_keeper([["memories", "--agent", "claude", "--project", proj]], env)
        _results(after)
        standing += claude_orphans(mem) > 0
        _seed_memory(mem)  # the next round starts from the seeded folder again
    return {"rounds": rounds, "orphaned_after_kill": seen_after_kill, "orphaned": standing, "temps_left": temps}


def main(argv: list[str]) -> int:
    import tempfile

    what = argv[0] if argv else "all"
    ops = int(argv[1]) if len(argv) > 1 else 100
    for name, fn in (("nanobot", nanobot_race), ("claude", claude_race), ("kills", claude_kills)):
        if what in (name, "all"):
            with tempfile.TemporaryDirectory(prefix="keepgui-agents-") as folder:
                t0 = time.perf_counter()
                result = fn(folder, ops)
                print(name, json.dumps(result), f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
