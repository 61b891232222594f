"""A legal Claude Code index of tens of thousands of lines is read, compacted and diffed in about
linear time (issue 24, item 7: 60,000 lines were not compacted after 900 s)."""

from __future__ import annotations

import os
import time

import pytest

from keepgui.backends.claude.layout import ClaudeEnv, memory_location
from keepgui.core import textdiff
from tests.conftest import run_cli
from tests.reliability.common import deadline


def big_project(tmp_path, monkeypatch, lines: int) -> str:
    home, proj = tmp_path / "home", tmp_path / "app"
    proj.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "kg"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    mem = memory_location(ClaudeEnv.from_environ({"HOME": str(home)}), str(proj)).path
    os.makedirs(mem)
    with open(os.path.join(mem, "MEMORY.md"), "w", encoding="utf-8") as fh:
        fh.write("".join(f"- [Memory {i}](m{i}.md) — what memory {i} is about\n" for i in range(lines)))
    for i in range(0, lines, max(1, lines // 200)):
        with open(os.path.join(mem, f"m{i}.md"), "w", encoding="utf-8") as fh:
            fh.write(f"---\nname: m{i}\ndescription: d{i}\nmetadata:\n  type: user\n---\n\nFact {i}.\n")
    return str(proj)


def compact_cpu_seconds(proj: str, limit: float) -> float:
    start = time.process_time()
    with deadline(limit * 10, "claude compact of a big index"):
        code, out, err = run_cli(["compact", "--agent", "claude", "--project", proj])
    assert code == 0, err
    assert "entries newest first" in out
    return time.process_time() - start


def test_compact_of_a_20000_line_index_takes_seconds(tmp_path, monkeypatch):
    proj = big_project(tmp_path, monkeypatch, 20_000)
    assert compact_cpu_seconds(proj, 15) < 15


@pytest.mark.slow
def test_compact_of_a_60000_line_index_takes_seconds(tmp_path, monkeypatch):
    proj = big_project(tmp_path, monkeypatch, 60_000)
    assert compact_cpu_seconds(proj, 40) < 40


def test_a_diff_of_a_big_reordered_file_is_linear_and_exact():
    # what a compaction of the index does: entries picked from all over the file move to its top
    old = "".join(f"- [M {i}](m{i}.md) — h\n" for i in range(60_000))
    lines = old.splitlines(keepends=True)
    picked, rest = lines[::300], [line for k, line in enumerate(lines) if k % 300]
    new = "".join(picked[::-1] + rest)
    start = time.process_time()
    diff = textdiff.unified(old, new)
    assert time.process_time() - start < 2  # difflib alone: 6 s, and it grows with the square
    body = diff.splitlines()[2:]
    added, removed = sum(line.startswith("+") for line in body), sum(line.startswith("-") for line in body)
    assert added == removed and 199 <= added <= 200
    small_old, small_new = "a\nb\nc\nd\n", "a\nc\nd\ne"
    import difflib

    expected = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        for line in difflib.unified_diff(
            small_old.splitlines(keepends=True), small_new.splitlines(keepends=True), "before", "after"
        )
    )
    assert textdiff.unified(small_old, small_new) == expected
