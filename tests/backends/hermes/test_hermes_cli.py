"""Hermes through the generic command line: ``--agent hermes`` is the home a new session uses (never the
current folder), ``--project DIR`` only where the session starts, and a missing home is said."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_cli


def write(path, text: str) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def tree(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, ds, fs in os.walk(root) for n in ds + fs)


@pytest.fixture
def place(tmp_path, monkeypatch):
    """An empty HOME, a Hermes root at $HERMES_HOME with a profile, and a project folder as the current one."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    os.makedirs(tmp_path / "home")
    root = tmp_path / "hermes"
    write(root / "memories" / "MEMORY.md", "Tea.\n§\nCoffee.")
    write(root / "profiles" / "work" / "memories" / "MEMORY.md", "Work notes.")
    monkeypatch.setenv("HERMES_HOME", str(root))
    project = tmp_path / "project"
    write(project / "AGENTS.md", "# Project rules\nUse tabs.\n")
    monkeypatch.chdir(project)
    return root, project


def test_keep_and_memories_work_on_the_home_a_session_uses_not_the_current_folder(place):
    root, project = place
    code, out, err = run_cli(["keep", "--agent", "hermes", "Milk."])
    assert code == 0, err
    with open(root / "memories" / "MEMORY.md", encoding="utf-8") as fh:
        assert fh.read() == "Tea.\n§\nCoffee.\n§\nMilk."
    assert tree(project) == ["AGENTS.md"]  # nothing written where the command ran
    code, out, err = run_cli(["memories", "--agent", "hermes", "--json"])
    assert code == 0 and [json.loads(line)["text"] for line in out.splitlines()] == ["Tea.", "Coffee.", "Milk."]
    code, out, err = run_cli(["memories", "--agent", "hermes", "--bank", "work", "--json"])
    assert code == 0 and [json.loads(line)["text"] for line in out.splitlines()] == ["Work notes."]


def test_context_project_is_where_the_session_starts(place, tmp_path):
    root, project = place
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / ".hermes.md", "Elsewhere.\n")
    code, out, _err = run_cli(["context", "--agent", "hermes", "--project", str(elsewhere), "--json"])
    obj = json.loads(out)
    assert code == 0 and obj["home"] == str(root)
    assert "Coffee." in obj["memory_prompt"]
    code, out, _err = run_cli(["context", "--agent", "hermes", "--project", str(elsewhere)])
    assert f"project context: {elsewhere / '.hermes.md'}" in out
    code, out, _err = run_cli(["context", "--agent", "hermes"])
    assert f"project context: {project / 'AGENTS.md'}" in out


def test_no_hermes_home_is_said_and_nothing_is_written(place, monkeypatch, tmp_path):
    _root, project = place
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "gone"))
    for argv in (["memories", "--agent", "hermes", "--json"], ["keep", "--agent", "hermes", "Milk."]):
        code, out, err = run_cli(argv)
        assert code == 1 and out == ""
        assert (
            err
            == f"keepgui: error: no Hermes Agent home at {tmp_path / 'gone'} (where --agent hermes looks); give --source PATH\n"
        )
    assert tree(project) == ["AGENTS.md"] and not os.path.exists(tmp_path / "gone")


def test_a_compaction_applied_from_the_command_line_is_undone_by_it(place):
    root, _project = place
    memory = root / "memories" / "MEMORY.md"
    entries = [f"Fact {i}: " + " ".join(f"w{i}x{j}" for j in range(18)) for i in range(20)]
    write(memory, "\n§\n".join(entries))
    with open(memory, "rb") as fh:
        before = fh.read()
    code, out, err = run_cli(["compact", "--agent", "hermes", "--select", "all", "--apply"])
    assert code == 0, err
    assert "undo: keepgui compact --agent hermes --undo" in out
    with open(memory, "rb") as fh:
        after = fh.read()
    assert len(after.decode()) <= 2200 < len(before.decode())
    code, out, err = run_cli(["compact", "--agent", "hermes", "--undo"])
    assert code == 0 and out.startswith("undone: MEMORY.md: "), err
    with open(memory, "rb") as fh:
        assert fh.read() == before
    code, _out, err = run_cli(["compact", "--agent", "hermes", "--undo"])
    assert code == 1 and "left to undo" in err
