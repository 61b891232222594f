"""Each agent's installed version beside the one keepgui was checked against (#23.13).

keepgui's exact views are checked against one version of each agent; an unpinned install gave Claude
Code 2.1.197, whose reminder differs, and keepgui answered for 2.1.332 without a word. Now every
backend's registry entry names its agent and the version checked, :mod:`keepgui.core.agents` reads
the installed one (cached per binary path and mtime, with a short timeout), and ``keepgui context``
says it (``--json``: ``agent_version``). Real processes: fake agents are scripts on ``PATH``, and the
real pinned agents in ``build/`` are asked too.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from keepgui.core import agents, registry
from tests.conftest import ROOT, run_cli


def _script(folder, name: str, body: str) -> str:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    """A PATH of one folder for fake agents (and sh's own tools)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    return folder


def test_every_backend_names_its_agent_and_the_version_checked():
    checked = {b.kind: b.agent.checked for b in registry.backends() if b.agent is not None}
    assert checked == {
        "claude": "2.1.332",
        "codex": "0.169.0",
        "gemini": "0.61.0",
        "hermes": "0.19.0",
        "iii": "0.2.2",
        "nanobot": "0.3.5",
    }


def test_a_fake_claude_of_another_version_is_read_once_per_binary(fake_path, tmp_path):
    calls = tmp_path / "calls"
    claude = _script(fake_path, "claude", f'echo x >> "{calls}"\necho "2.1.197 (Claude Code)"\n')
    found = agents.version_of("claude")
    assert found is not None and (found.installed, found.differs, found.where) == ("2.1.197", True, claude)
    assert found.to_obj() == {"checked": "2.1.332", "installed": "2.1.197", "differs": True}
    assert "Claude Code 2.1.197 is installed here" in found.sentence() and "2.1.332" in found.sentence()
    assert agents.version_of("claude") == found and calls.read_text() == "x\n"  # cached: asked once
    _script(fake_path, "claude", 'echo "2.1.332 (Claude Code)"\n')  # upgraded: a new mtime, read again
    os.utime(claude, ns=(time.time_ns(), time.time_ns() + 10**9))
    again = agents.version_of("claude")
    assert again is not None and not again.differs and again.sentence() == ""


def test_a_silent_or_hanging_agent_costs_the_timeout_and_says_nothing(fake_path, monkeypatch):
    monkeypatch.setattr(agents, "TIMEOUT", 0.5)
    _script(fake_path, "codex", "sleep 30\n")
    start = time.perf_counter()
    found = agents.version_of("codex")
    assert time.perf_counter() - start < 5
    assert found is not None and found.installed is None and not found.differs and found.sentence() == ""
    assert agents.version_of("gemini").why == "`gemini` is not on PATH"  # type: ignore[union-attr]
    assert "engine" in agents.version_of("iii").why  # type: ignore[union-attr]


def test_nothing_is_run_when_only_the_cache_may_answer(fake_path, tmp_path):
    calls = tmp_path / "calls"
    _script(fake_path, "hermes", f'echo x >> "{calls}"\necho "Hermes Agent v0.18.2 (2026.6.1)"\n')
    assert agents.said("hermes", run=False) == "" and not calls.exists()  # the GUI thread never waits
    assert agents.beside("hermes", 42) == 42 and calls.exists()  # a background task reads it
    assert agents.said("hermes", run=False).startswith("Hermes Agent 0.18.2 is installed here")


def test_context_says_the_installed_version_when_it_differs(demo_copy, fake_path, monkeypatch):
    monkeypatch.setenv("HOME", demo_copy.claude_home)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    _script(fake_path, "claude", 'echo "2.1.197 (Claude Code)"\n')
    where = ["context", "--agent", "claude", "--project", demo_copy.claude_project]
    code, out, _err = run_cli([*where, "--json"])
    assert code == 0 and json.loads(out)["agent_version"] == {
        "checked": "2.1.332",
        "installed": "2.1.197",
        "differs": True,
    }
    code, _out, err = run_cli(where)
    assert code == 0 and "Claude Code 2.1.197 is installed here" in err and "checked against 2.1.332" in err
    _script(fake_path, "claude", 'echo "2.1.332 (Claude Code)"\n')
    os.utime(fake_path / "claude", ns=(time.time_ns(), time.time_ns() + 10**9))
    code, _out, err = run_cli(where)
    assert code == 0 and "is installed here" not in err


PINNED = {
    "claude": "build/claude-cli/node_modules/.bin",
    "codex": "build/codex-cli/node_modules/.bin",
    "gemini": "build/gemini-cli/node_modules/.bin",
    "hermes": "build/hermes-venv/bin",
    "nanobot": "build/nanobot-venv/bin",
}


@pytest.mark.parametrize("kind", sorted(PINNED))
def test_the_real_pinned_agents_in_build_are_the_versions_checked(kind, monkeypatch):
    folder = os.path.join(ROOT, PINNED[kind])
    agent = registry.backend(kind).agent
    assert agent is not None and agent.command is not None
    if not os.path.exists(os.path.join(folder, agent.command)):
        pytest.skip(f"{kind} is not installed in {PINNED[kind]} (make {'agents' if kind != 'nanobot' else 'test'})")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(agents, "TIMEOUT", 60.0)  # a cold node start on a busy machine
    found = agents.installed(agent)
    assert (found.installed, found.differs) == (agent.checked, False), found
