"""``keepgui claude …``: the window's operations on a Claude Code project's memory, from the command line."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.backends.claude.layout import ClaudeEnv, memory_location
from tests.conftest import errors_of, run_cli


def put(path, text: str) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder whose memory (in a HOME of its own) has an index over the 200-line limit."""
    home, proj = tmp_path / "home", tmp_path / "app"
    proj.mkdir()
    put(proj / "CLAUDE.md", "Rules.\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    mem = memory_location(ClaudeEnv.from_environ({"HOME": str(home)}), str(proj)).path
    lines = []
    for i in range(205):
        put(
            os.path.join(mem, f"n{i}.md"),
            f"---\nname: n{i}\ndescription: fact {i}\nmetadata:\n  type: project\n---\n\nFact number {i}.\n",
        )
        lines.append(f"- [N{i}](n{i}.md) — fact {i}\n")
    put(os.path.join(mem, "MEMORY.md"), "".join(lines))
    return str(proj), mem


def test_memories_keep_forget_and_restore(project):
    proj, mem = project
    code, out, _ = run_cli(["claude", "memories", "--project", proj, "--json"])
    obj = json.loads(out)
    assert code == 0 and obj["summary"] == "205 memories · index 205 lines · 5 not loaded"
    row = next(m for m in obj["memories"] if m["id"] == "n204.md")
    assert row["tags"] == ["project", "not-loaded"] and row["index_line"] == 205
    code, out, err = run_cli(["claude", "keep", "--project", proj, "--type", "user", "Mike", "lives", "in", "Lisbon"])
    assert code == 0 and "mike-lives-in-lisbon.md" in out and "past the cut" in out
    assert "  type: user\n" in read(os.path.join(mem, "mike-lives-in-lisbon.md")).decode()
    code, out, err = run_cli(["claude", "keep", "--project", proj, "Mike lives in Lisbon"])
    assert code == 1 and "Already kept: mike-lives-in-lisbon.md" in err
    index_before = read(os.path.join(mem, "MEMORY.md"))
    code, out, _ = run_cli(["claude", "forget", "--project", proj, "n3.md", "--json"])
    forgotten = json.loads(out)["restore_ids"]
    assert code == 0 and len(forgotten) == 1 and not os.path.exists(os.path.join(mem, "n3.md"))
    assert b"(n3.md)" not in read(os.path.join(mem, "MEMORY.md"))
    code, out, _ = run_cli(["claude", "restore", "--project", proj, forgotten[0][:6]])
    assert code == 0 and read(os.path.join(mem, "MEMORY.md")) == index_before
    code, _out, err = run_cli(["claude", "forget", "--project", proj, "nope.md"])
    assert code == 1 and len(errors_of(err)) == 1 and "has no memory nope.md" in err


def test_review_and_compact_with_undo(project):
    proj, mem = project
    run_cli(["claude", "memories", "--project", proj])  # the first look is the baseline
    os.remove(os.path.join(mem, "n7.md"))  # the agent deletes one
    code, out, _ = run_cli(["claude", "review", "--project", proj])
    assert code == 0 and "1 memory deleted" in out and "--restore 1,2 (or all)" in out
    code, out, _ = run_cli(["claude", "review", "--project", proj, "--restore", "all"])
    assert code == 0 and os.path.exists(os.path.join(mem, "n7.md"))
    code, out, _ = run_cli(["claude", "review", "--project", proj])
    assert "no changes since the last review" in out
    before = read(os.path.join(mem, "MEMORY.md"))
    code, out, _ = run_cli(["claude", "compact", "--project", proj])
    assert code == 0 and "Newest entries first" in out and read(os.path.join(mem, "MEMORY.md")) == before
    os.utime(os.path.join(mem, "n204.md"), (2_000_000_000, 2_000_000_000))  # the newest memory is cut
    code, out, _ = run_cli(["claude", "compact", "--project", proj, "--apply"])
    assert code == 0 and "applied:" in out and read(os.path.join(mem, "MEMORY.md")).startswith(b"- [N204](n204.md)")
    code, out, _ = run_cli(["claude", "compact", "--project", proj, "--undo"])
    assert code == 0 and out.startswith("undone:") and read(os.path.join(mem, "MEMORY.md")) == before
    code, out, _ = run_cli(["claude", "review", "--project", proj])
    assert "no changes since the last review" in out  # keepgui's own writes are not the agent's
