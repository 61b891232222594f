"""Codex's command-line verbs (plain functions until the generic command line wires them), on the demo."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from keepgui.backends.codex import commands
from keepgui.core.demo import make_demo_copy
from keepgui.core.history import History
from tests.reliability.common import ROOT, child_env


@pytest.fixture
def demo(tmp_path):
    copy = make_demo_copy(parent=str(tmp_path))
    yield copy
    shutil.rmtree(copy.root, ignore_errors=True)


def run(argv, demo, tmp_path) -> tuple[int, str]:
    out = io.StringIO()
    environ = {"HOME": os.path.dirname(demo.codex_home)}
    code = commands.run(argv, environ, out, History(str(tmp_path / "history")))
    return code, out.getvalue()


def test_context_json_holds_both_blocks_exactly(demo, tmp_path):
    code, text = run(["context", "--project", demo.codex_project, "--json"], demo, tmp_path)
    obj = json.loads(text)
    assert code == 0 and obj["memory"].startswith("## Memory\n\n") and obj["memory"].endswith("ENDS =========\n")
    assert obj["agents_md"].startswith(f"# AGENTS.md instructions for {demo.codex_project}\n")
    assert obj["agents"]["cut"]["file_byte"] == 7_068 and obj["memory_parts"] == [len(obj["memory"].encode())]
    code, part = run(["context", "--project", demo.codex_project, "--part", "agents_md"], demo, tmp_path)
    assert part == obj["agents_md"]
    code, human = run(["context", "--project", demo.codex_project], demo, tmp_path)
    assert "     CUT  " in human and "not read" in human and "--- the memory block, exactly ---" in human


def test_keep_correct_forget_and_review_from_the_command_line(demo, tmp_path):
    notes = os.path.join(demo.codex_home, "memories_v2", "extensions", "ad_hoc", "notes")
    before = set(os.listdir(notes))
    code, text = run(["keep", "Deploys need a green /healthz"], demo, tmp_path)
    assert code == 0 and "Kept as a note" in text
    code, rows = run(["memories", "--json"], demo, tmp_path)
    key = next(r["key"] for r in json.loads(rows) if "imperative" in r["text"])
    run(["correct", key, "commit messages may be in any mood"], demo, tmp_path)
    run(["forget", key], demo, tmp_path)
    assert len(set(os.listdir(notes)) - before) == 3
    code, found = run(["review", "--json"], demo, tmp_path)
    assert json.loads(found)["found"] == "no changes since the last review"
    code, problems = run(["problems"], demo, tmp_path)
    assert code == 0 and problems == "no problems\n"


def test_the_module_runs_as_a_command_and_errors_are_one_line(demo, tmp_path):
    env = child_env(HOME=os.path.dirname(demo.codex_home), CODEX_HOME=str(tmp_path / "missing"))
    done = subprocess.run(
        [sys.executable, "-m", "keepgui.backends.codex.commands", "keep", "x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stderr.startswith("keepgui: error: CODEX_HOME points to")
    assert "Traceback" not in done.stderr


def test_the_generic_review_restores_by_a_note_and_undoes_it(demo, tmp_path, monkeypatch):
    import time

    from keepgui.backends.codex.demo import write_baseline
    from tests.conftest import run_cli

    monkeypatch.setenv("HOME", os.path.dirname(demo.codex_home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "keepgui"))
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
