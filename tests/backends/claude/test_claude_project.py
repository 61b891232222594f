"""The Claude Code backend's face (source, projects, rows, documents, preview) and ``keepgui context``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from keepgui.backends.claude.backend import ClaudeSource
from keepgui.backends.claude.bank import discover_homes, project_path_for
from keepgui.backends.claude.context import PREAMBLE, session_context
from keepgui.backends.claude.documents import index_meter
from keepgui.backends.claude.layout import ClaudeEnv, git_roots, memory_location, project_folder_name
from keepgui.core.errors import ReadOnly
from keepgui.core.history import History
from tests.conftest import run_cli


def put(path, text) -> str:
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


@pytest.fixture
def world(tmp_path):
    """A HOME with a Claude config folder, a git project, its memory folder and one transcript."""
    home, proj = tmp_path / "home", tmp_path / "work" / "app"
    proj.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    put(home / ".claude" / "CLAUDE.md", "Be brief.\n")
    put(proj / "CLAUDE.md", "Project rules @docs/style.md\n")
    put(proj / "docs" / "style.md", "Style guide.\n")
    env = ClaudeEnv.from_environ({"HOME": str(home)}, managed_dir=str(tmp_path / "no-managed"))
    mem = memory_location(env, str(proj)).path
    put(
        os.path.join(mem, "build.md"),
        "---\nname: build\ndescription: make test runs it all\nmetadata:\n  type: project\n---\n\nRun make test.\n",
    )
    put(os.path.join(mem, "lonely.md"), "---\nname: lonely\ndescription: no index line\n---\nx\n")
    put(os.path.join(mem, "MEMORY.md"), "- [Build](build.md) — make test runs it all\n- [Gone](gone.md) — missing\n")
    transcripts = os.path.join(env.projects_dir, project_folder_name(str(proj / "sub")))
    put(os.path.join(transcripts, "s1.jsonl"), json.dumps({"type": "user", "cwd": str(proj / "sub")}) + "\n")
    os.makedirs(proj / "sub")
    return env, proj, mem, History(str(tmp_path / "keepgui-history"))


def test_the_source_lists_projects_and_finds_their_folder_from_a_transcript(world):
    env, proj, _mem, history = world
    source = ClaudeSource(env.config_dir, env=env, history=history)
    name = project_folder_name(str(proj))
    assert source.is_home and source.scan().names == (name,)  # the transcript-only folder has no memory folder
    assert project_path_for(env, name) == str(proj)  # found through the session started in app/sub
    bank = source.bank(name)
    assert bank.project is None  # found on the first load, off the GUI thread
    bank.load()
    assert bank.project == str(proj) and bank.summary().detail == "3 memories · 1 without its file · index 2 lines"
    assert discover_homes({"HOME": str(env.home)})[0].config_dir == env.config_dir


def _project_bank(env, proj, history):
    source = ClaudeSource(str(proj), env=env, history=history)
    assert not source.is_home and source.also_watched == (memory_location(env, str(proj)).path,)
    return source.bank(source.scan().names[0])


def test_rows_flag_orphans_both_ways_and_what_loads(world):
    env, proj, _mem, history = world
    bank = _project_bank(env, proj, history)
    rows = {r.id: r for r in bank.load().rows.rows}
    assert set(rows) == {"build.md", "lonely.md", "index:gone.md"}
    assert rows["build.md"].tags == ("project",) and rows["build.md"].position == 1
    assert rows["build.md"].text == "Run make test."
    assert rows["lonely.md"].tags == ("unindexed",) and rows["lonely.md"].position is None
    assert rows["index:gone.md"].tags == ("missing-file",)
    assert dict(rows["index:gone.md"].fields)["gone.md"].startswith("missing")


def test_operations_through_the_bank_are_undoable_and_not_reviewed_as_the_agents(world):
    env, proj, mem, history = world
    bank = _project_bank(env, proj, history)
    bank.load()
    change = bank.keep("#reference The staging database resets every Sunday.")
    kept = Path(mem, change.result)
    assert kept.exists() and "type: reference" in kept.read_text(encoding="utf-8")
    assert not bank.plan("memory folder").operations  # keepgui's own write is the new baseline
    forgot = bank.set_live(["build.md"], False)
    assert not os.path.exists(os.path.join(mem, "build.md"))
    assert any(r.id.startswith("forgotten:") and r.invalid_at for r in forgot.rows.rows)
    forgot.undo()
    assert os.path.exists(os.path.join(mem, "build.md"))
    assert not any(r.id.startswith("forgotten:") for r in bank.load(full=True).rows.rows)
    bank.edit("build.md", "description", "make test runs the whole suite")
    assert "description: make test runs the whole suite" in Path(mem, "build.md").read_text(encoding="utf-8")
    os.remove(os.path.join(mem, "lonely.md"))  # the agent deletes one
    assert bank.plan("memory folder").describe() == "1 memory deleted"


def test_documents_in_load_order_with_read_only_and_warnings(world, tmp_path):
    env, proj, mem, history = world
    bank = _project_bank(env, proj, history)
    bank.load()
    docs = bank.documents()
    names = [name for name, _title in docs.list()]
    assert [os.path.basename(n) for n in names] == ["CLAUDE.md", "CLAUDE.md", "style.md", "MEMORY.md"]
    style = docs.read(names[2])
    assert any(n.startswith("Imported by") for n in style.notices)
    assert any(n.startswith("Checked into the repository") for n in docs.read(names[1]).notices)
    change = docs.save(style, "Style guide, edited.\n")
    assert Path(style.path).read_text(encoding="utf-8") == "Style guide, edited.\n"
    change.undo()
    assert Path(style.path).read_text(encoding="utf-8") == "Style guide.\n"
    index = docs.read(names[-1])
    assert index.managed_by and not index.read_only
    with open(os.path.join(mem, ".consolidate-lock"), "w") as fh:
        fh.write(str(os.getpid()))
    locked = docs.read(names[-1])
    assert "consolidating" in locked.read_only
    with pytest.raises(ReadOnly):
        docs.save(locked, "x")


def test_the_index_budget_points_at_the_first_character_not_loaded():
    text = "---\nname: x\n---\n" + "".join(f"- [N{i}](n{i}.md)\n" for i in range(205))
    budget = index_meter("MEMORY.md", text)
    assert budget.warn and text[budget.cut_char :].startswith("\n- [N200](n200.md)")
    assert "5 entries are invisible" in budget.sentence
    assert index_meter("MEMORY.md", "- one\n").cut_char is None


def test_git_worktree_roots(tmp_path):
    main = tmp_path / "main"
    main.mkdir()

    def run(*a):
        return subprocess.run(
            ["git", "-c", "user.email=t@t", "-c", "user.name=t", *a], cwd=main, check=True, capture_output=True
        )

    run("init", "-q")
    put(main / "f", "x")
    run("add", "f")
    run("commit", "-qm", "x")
    run("worktree", "add", "-q", str(tmp_path / "wt"))
    roots = git_roots(str(tmp_path / "wt" / "deeper"))
    assert roots.root == str(tmp_path / "wt") and roots.canonical == str(main) and roots.worktree
    assert git_roots(str(tmp_path)).root is None


def test_context_command_json_and_human_output(world, monkeypatch):
    env, proj, mem, _history = world
    monkeypatch.setenv("HOME", env.home)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    code, out, err = run_cli(["context", "--agent", "claude", "--project", str(proj), "--json"])
    assert code == 0
    obj = json.loads(out)
    expected = session_context(str(proj), ClaudeEnv.from_environ({"HOME": env.home})).reminder
    assert obj["reminder"] == expected and obj["reminder"].startswith(f"<system-reminder>\n{PREAMBLE}")
    assert obj["claude_version"] and obj["memory_dir"] == mem
    files = {os.path.basename(f["path"]): f for f in obj["files"] if f["loaded"]}
    assert files["MEMORY.md"]["label"] == "user's auto-memory, persists across conversations"
    assert files["style.md"]["parent"] == str(proj / "CLAUDE.md")
    code, out, err = run_cli(["context", "--project", str(proj), "--reminder"])
    assert code == 0 and out == expected
    code, out, err = run_cli(["context", "--project", str(proj)])
    assert "Loaded at session start, in this order (4):" in out and "--- the reminder, exactly ---" in out
    assert "keeps what it loaded" in err


def test_context_command_honours_claude_config_dir_and_refuses_a_missing_folder(world, tmp_path, monkeypatch):
    env, proj, _mem, _history = world
    config = tmp_path / "elsewhere"
    put(config / "CLAUDE.md", "from CLAUDE_CONFIG_DIR\n")
    monkeypatch.setenv("HOME", env.home)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    code, out, _ = run_cli(["context", "--project", str(proj), "--json"])
    obj = json.loads(out)
    assert "from CLAUDE_CONFIG_DIR" in obj["reminder"] and "Be brief." not in obj["reminder"]
    assert obj["memory_dir"].startswith(str(config))
    code, out, err = run_cli(["context", "--agent", "claude", "--project", str(tmp_path / "nope")])
    assert code == 1 and err.count("\n") == 1 and "nope: no such folder" in err


def test_hostile_files_are_named_never_read_and_never_hang(world, monkeypatch):
    env, proj, mem, _history = world
    os.remove(proj / "CLAUDE.md")
    os.mkfifo(proj / "CLAUDE.md")
    os.remove(os.path.join(mem, "MEMORY.md"))
    os.mkfifo(os.path.join(mem, "MEMORY.md"))
    os.mkfifo(os.path.join(mem, "pipe.md"))
    put(proj / ".claude" / "settings.json", "{not json")
    monkeypatch.setenv("HOME", env.home)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    code, out, _err = run_cli(["context", "--project", str(proj), "--json"])
    assert code == 0
    obj = json.loads(out)
    problems = " | ".join(obj["problems"])
    assert "settings.json: not valid JSON" in problems and "MEMORY.md: a FIFO (named pipe), not a file" in problems
    assert "pipe.md: a FIFO (named pipe), not a memory file: skipped unread" in problems
    claude_md = next(f for f in obj["files"] if f["path"] == str(proj / "CLAUDE.md"))
    assert not claude_md["loaded"] and "not a regular file" in claude_md["reason"]


def test_the_package_data_patterns_ship_the_whole_claude_demo():
    """setuptools expands package data with glob, whose ** never enters a hidden folder such as .claude/."""
    import glob
    import tomllib

    from tests.conftest import ROOT

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        patterns = tomllib.load(fh)["tool"]["setuptools"]["package-data"]["keepgui.resources"]
    resources = os.path.join(ROOT, "resources")
    shipped = {
        os.path.normpath(p)
        for pattern in patterns
        for p in glob.glob(pattern, root_dir=resources, recursive=True)
        if os.path.isfile(os.path.join(resources, p))
    }
    demo = {
        os.path.relpath(os.path.join(b, f), resources)
        for b, _d, fs in os.walk(os.path.join(resources, "demo", "claude"))
        for f in fs
    }
    assert len(demo) > 200 and demo <= shipped
