"""Codex through the one generic command line (``keepgui VERB --agent codex``), on the demo: what a
session is given, the rows, keep / correct / forget as notes, the review and the problems (the
verbs a module of Codex's own once duplicated)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from keepgui.core.demo import make_demo_copy
from tests.conftest import run_cli
from tests.reliability.common import ROOT, child_env


@pytest.fixture
def demo(tmp_path, monkeypatch):
    copy = make_demo_copy(parent=str(tmp_path))
    monkeypatch.setenv("HOME", os.path.dirname(copy.codex_home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "keepgui"))
    yield copy
    shutil.rmtree(copy.root, ignore_errors=True)


def cli(*argv: str) -> tuple[int, str, str]:
    return run_cli([argv[0], "--agent", "codex", *argv[1:]])


def test_context_json_holds_both_blocks_exactly(demo):
    code, text, err = cli("context", "--project", demo.codex_project, "--json")
    obj = json.loads(text)
    assert code == 0 and obj["memory"].startswith("## Memory\n\n") and obj["memory"].endswith("ENDS =========\n"), err
    assert obj["agents_md"].startswith(f"# AGENTS.md instructions for {demo.codex_project}\n")
    assert obj["agents"]["cut"]["file_byte"] == 7_068 and obj["memory_parts"] == [len(obj["memory"].encode())]
    code, part, _err = cli("context", "--project", demo.codex_project, "--part", "agents_md")
    assert part == obj["agents_md"]
    code, human, _err = cli("context", "--project", demo.codex_project)
    assert "     CUT  " in human and "not read" in human and "--- the memory block, exactly ---" in human


def test_keep_correct_forget_and_review_from_the_command_line(demo):
    notes = os.path.join(demo.codex_home, "memories_v2", "extensions", "ad_hoc", "notes")
    before = set(os.listdir(notes))
    code, text, err = cli("keep", "Deploys need a green /healthz")
    assert code == 0 and "Kept as a note" in text, err
    code, rows, _err = cli("memories", "--json")
    key = next(r["id"] for r in map(json.loads, rows.splitlines()) if "imperative" in r["text"])
    code, text, err = cli("edit", key, "--text", "commit messages may be in any mood")
    assert code == 0 and "correction note" in text, err
    code, text, err = cli("forget", key)  # Codex forgets through a note its consolidation applies
    assert code == 0 and "Kept a note asking to forget 1 memory" in text, err
    assert len(set(os.listdir(notes)) - before) == 3
    code, found, _err = cli("review", "--json")
    assert json.loads(found)["summary"] == "no changes since the last review"
    code, problems, _err = cli("problems", "--source", demo.codex_home)
    assert code == 1 and problems.endswith(f"3 problem(s) in {demo.codex_home}\n")  # 1: problems found
    assert "cut after 7,068 of 8,125 bytes" in problems


def test_the_command_runs_as_a_command_and_errors_are_one_line(demo, tmp_path):
    env = child_env(HOME=os.path.dirname(demo.codex_home), KEEPGUI_HOME=str(tmp_path / "keepgui"))
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "edit", "--agent", "codex", "summary:nothing", "--text", "x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stderr.startswith("keepgui: error: "), done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_the_generic_review_restores_by_a_note_and_undoes_it(demo):
    from keepgui.backends.codex.demo import write_baseline

    root = os.path.join(demo.codex_home, "memories_v2")
    notes = os.path.join(root, "extensions", "ad_hoc", "notes")
    code, out, err = run_cli(["review", "--agent", "codex", "--source", demo.codex_home])
    assert code == 0 and "no changes since the last review" in out, err
    path = os.path.join(root, "memory_summary.md")
    with open(path, encoding="utf-8") as fh:
        text = fh.read().replace("one line under 72 characters", "one line under 50 characters")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    write_baseline(root, {"memory_summary.md": text.encode()}, int(time.time()))
    before = set(os.listdir(notes))
    code, out, err = run_cli(["review", "--agent", "codex", "--source", demo.codex_home, "--restore", "all"])
    assert code == 0, err
    [note] = set(os.listdir(notes)) - before
    assert note.endswith("-restore-after-consolidation.md")
    with open(os.path.join(notes, note), encoding="utf-8") as fh:
        assert "Restore the earlier wording" in fh.read()
    code, out, err = run_cli(["review", "--agent", "codex", "--source", demo.codex_home, "--undo"])
    assert code == 0 and out.startswith("undone: "), err
    assert set(os.listdir(notes)) == before
