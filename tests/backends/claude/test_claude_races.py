"""Claude Code's memory folder written by keepgui while a real agent-like process writes it, or with
keepgui killed between the two writes of one change (issue 24, items 2, 3, 4, 11)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from keepgui.backends.claude import writes
from keepgui.backends.claude.layout import ClaudeEnv, memory_location
from keepgui.core import fsio
from keepgui.core.errors import Conflict
from keepgui.core.history import History
from tests.conftest import run_cli
from tests.reliability.agents import claude_kills, claude_orphans
from tests.reliability.common import ROOT, child_env

KILLED_AFTER_FIRST_WRITE = r"""
import os, signal, sys
from keepgui.backends.claude import writes
from keepgui.core.history import History
real = writes.put
def put_then_die(*args, **kwargs):
    done = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)  # killed between the change's two writes
    return done
writes.put = put_then_die
op, mem, arg = sys.argv[1:4]
if op == "keep":
    writes.keep(mem, title=arg, description=arg, body=arg, kind="user", history=History())
else:
    writes.forget(mem, arg, history=History())
"""


def put(path, text: str) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def read(path) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose memory folder (in a HOME of its own) holds three memories and their index."""
    home, proj = tmp_path / "home", tmp_path / "app"
    proj.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "kg"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    mem = memory_location(ClaudeEnv.from_environ({"HOME": str(home)}), str(proj)).path
    lines = []
    for i in range(3):
        put(
            os.path.join(mem, f"n{i}.md"),
            f"---\nname: n{i}\ndescription: fact {i}\nmetadata:\n  type: user\n---\n\nFact {i}.\n",
        )
        lines.append(f"- [N{i}](n{i}.md) — fact {i}\n")
    put(os.path.join(mem, "MEMORY.md"), "".join(lines))
    return str(proj), mem


def killed_between_writes(op: str, mem: str, arg: str) -> None:
    """Run one keep or forget in a real process that is SIGKILLed right after its first write."""
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_FIRST_WRITE, op, mem, arg], cwd=ROOT, env=child_env(), timeout=60
    )
    assert done.returncode == -9


def test_a_keep_killed_between_its_writes_is_completed_by_the_next_command(project):
    proj, mem = project
    killed_between_writes("keep", mem, "Mike drinks green tea")
    assert os.path.exists(os.path.join(mem, "mike-drinks-green-tea.md"))
    assert "mike-drinks-green-tea.md" not in read(os.path.join(mem, "MEMORY.md"))  # the orphan the kill left
    # the next command finishes it and says so (a retry used to say "Already kept" and never add the line)
    code, _out, err = run_cli(
        ["keep", "--agent", "claude", "--project", proj, "--stand-alone", "Mike", "likes", "jazz"]
    )
    assert code == 0, err
    assert "keep of mike-drinks-green-tea.md was cut short before its index line: the line is added now" in err
    index = read(os.path.join(mem, "MEMORY.md"))
    assert index.count("(mike-drinks-green-tea.md)") == 1 and "(mike-likes-jazz.md)" in index
    assert claude_orphans(mem) == 0


def test_a_forget_killed_between_its_writes_is_completed_and_can_be_restored(project):
    proj, mem = project
    killed_between_writes("forget", mem, "n1.md")
    assert os.path.exists(os.path.join(mem, "n1.md")) and "(n1.md)" not in read(os.path.join(mem, "MEMORY.md"))
    code, _out, err = run_cli(["memories", "--agent", "claude", "--project", proj])
    assert code == 0, err
    assert not os.path.exists(os.path.join(mem, "n1.md")) and claude_orphans(mem) == 0
    # the forget is whole, and restore undoes it: file and index line back
    pending = writes.pending_forgets(mem, History())
    assert [e["rel"] for e in pending] == ["n1.md"]
    code, _out, err = run_cli(["restore", "--agent", "claude", "--project", proj, "forgotten:" + pending[0]["id"]])
    assert code == 0, err
    assert os.path.exists(os.path.join(mem, "n1.md")) and "(n1.md)" in read(os.path.join(mem, "MEMORY.md"))


def test_a_new_topic_file_never_replaces_one_the_agent_made_meanwhile(project, monkeypatch):
    """The agent (a real process) creates the very file keepgui is creating, at the last moment
    before keepgui's file takes the name: keepgui refuses, the agent's file stays."""
    _proj, mem = project
    target = os.path.join(mem, "mike-drinks-green-tea.md")
    agent = "import sys; open(sys.argv[1], 'w').write('the agent wrote this\\n')"

    def agent_first(real):
        def run(*args, **kwargs):
            if not os.path.exists(target):
                subprocess.run([sys.executable, "-c", agent, target], check=True)
            return real(*args, **kwargs)

        return run

    monkeypatch.setattr(fsio, "_replace", agent_first(fsio._replace))
    monkeypatch.setattr(os, "link", agent_first(os.link))
    with pytest.raises(Conflict):
        writes.keep(mem, title="Mike drinks green tea", description="d", body="b", kind="user", history=History())
    assert read(target) == "the agent wrote this\n"
    assert "mike-drinks-green-tea" not in read(os.path.join(mem, "MEMORY.md"))
    assert not [n for n in os.listdir(mem) if fsio.is_temp_name(n)]


def test_a_nul_byte_in_an_index_link_is_a_problem_not_a_crash(project):
    proj, mem = project
    with open(os.path.join(mem, "MEMORY.md"), "a", encoding="utf-8") as fh:
        fh.write("- [Bad](b\x00c.md) — a NUL byte\n- [Worse](d%00e.md) — an escaped one\n")
    for argv in (["memories"], ["context"], ["compact"], ["problems"]):
        code, out, err = run_cli([*argv, "--agent", "claude", "--project", proj])
        assert "Traceback" not in err and "embedded null byte" not in err, (argv, err)
        assert code in (0, 1), (argv, err)
    code, out, err = run_cli(["problems", "--agent", "claude", "--project", proj])
    assert "a name with a NUL byte" in out + err


def test_an_unreadable_index_says_why_not_no_index(project):
    proj, mem = project
    os.unlink(os.path.join(mem, "MEMORY.md"))
    os.mkfifo(os.path.join(mem, "MEMORY.md"))
    code, out, err = run_cli(["claude", "memories", "--project", proj])  # the summary line says why
    assert code == 0, err
    assert "no index" not in out and "index not read (a FIFO" in out


def test_keep_and_forget_killed_at_random_leave_no_orphan_after_the_next_command(tmp_path):
    """A short run of the kill rounds of ``make stress``."""
    result = claude_kills(str(tmp_path), rounds=4, seed=5)
    assert result["orphaned"] == 0, result
