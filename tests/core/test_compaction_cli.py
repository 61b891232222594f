"""``keepgui compact`` and ``keepgui review``: plans printed, --apply, --select, --undo, --via, --json,
and the restore commands a review prints actually work."""

from __future__ import annotations

import json
import os
import shlex
import sys

import pytest

from keepgui.backends.iii.record import Memory, fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.backends.nanobot.writes import KeepStore
from tests.backends.nanobot.nanobot_helpers import make_workspace, read, write
from tests.conftest import run_cli

KEEP = """- Prefers metric units, including in recipes
- Allergic to penicillin
- allergic to penicillin.
- Prefers tea
- Prefers green tea
- Always answer in English
- Sister Ana lives in Berlin
- Blood type is A+
"""


run = run_cli


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path / "ws", keep=KEEP)


def test_compact_prints_the_plan_and_writes_nothing(ws):
    code, out, _ = run(["compact", "--workspace", ws])
    assert code == 0
    assert out.splitlines()[0].endswith("3 of 4 operations selected · 8 → 5 lines (target 120; reached)")
    assert "Exact duplicates:" in out and "[x]" in out and "[ ]" in out
    assert "--- a/keep.md" in out and "+- Always answer in English" in out  # the AGENTS.md diff too
    assert f"apply it: keepgui compact --workspace {ws} --apply" in out
    assert read(os.path.join(ws, "keep.md")) == KEEP.encode()


def test_compact_apply_then_undo(ws):
    code, out, _ = run(["compact", "--workspace", ws, "--apply"])
    assert code == 0 and out.startswith("applied: compact keep.md (3 operations)")
    assert f"undo: keepgui compact --workspace {ws} --undo" in out
    text = read(os.path.join(ws, "keep.md")).decode()
    assert "allergic to penicillin." not in text and "- Prefers tea\n" in text
    assert "- Always answer in English" in read(os.path.join(ws, "AGENTS.md")).decode()
    code, out, _ = run(["compact", "--workspace", ws, "--undo"])
    assert code == 0 and out.startswith("undone:")
    assert read(os.path.join(ws, "keep.md")) == KEEP.encode()
    code, _out, err = run(["compact", "--workspace", ws, "--undo"])
    assert code == 1 and "no compaction of keep.md" in err


def test_compact_select(ws):
    code, out, _ = run(["compact", "--workspace", ws, "--json"])
    plan = json.loads(out)
    near = next(op for op in plan["operations"] if op["kind"] == "near-duplicate")
    code, out, _ = run(["compact", "--workspace", ws, "--select", f"none,+{near['number']}", "--apply"])
    assert code == 0
    assert "- Prefers tea\n" not in read(os.path.join(ws, "keep.md")).decode()
    assert read(os.path.join(ws, "keep.md")).decode().count("enicillin") == 2
    code, out, _ = run(["compact", "--workspace", ws, "--select", "none", "--apply"])
    assert code == 0 and "nothing written" in out


def test_compact_json(ws):
    code, out, _ = run(["compact", "--workspace", ws, "--json"])
    obj = json.loads(out)
    assert code == 0 and obj["kind"] == "keep.md" and obj["counts"]["before"] == 8
    assert obj["diff"].startswith("--- a/keep.md") and len(obj["selection"]) == 3
    code, out, _ = run(["compact", "--workspace", ws, "--json", "--apply"])
    obj = json.loads(out)
    assert obj["applied"]["changed"] and obj["journal"]


def test_compact_stale_between_plan_and_apply_is_refused(ws, monkeypatch):
    from keepgui.backends.nanobot import compact

    real = compact.plan_keep

    def plan_then_agent_edits(*args, **kwargs):
        plan = real(*args, **kwargs)
        write(os.path.join(ws, "keep.md"), KEEP + "- Plays chess\n")
        return plan

    monkeypatch.setattr(compact, "plan_keep", plan_then_agent_edits)
    code, out, err = run(["compact", "--workspace", ws, "--apply"])
    assert code == 1 and "changed since the plan was made; nothing was written" in err and "new plan:" in out
    assert read(os.path.join(ws, "keep.md")) == (KEEP + "- Plays chess\n").encode()


def test_compact_via(ws, tmp_path):
    fake = tmp_path / "fake-llm.py"
    fake.write_text(
        "import sys\nseen=set()\nfor l in sys.stdin:\n    k=l.strip('-* .\\n').lower()\n"
        "    if k not in seen:\n        seen.add(k); print(l, end='')\n"
    )
    via = shlex.join([sys.executable, str(fake)])
    code, out, _ = run(["compact", "--workspace", ws, "--via", via])
    assert code == 0 and "Removed duplicates (still covered):" in out
    code, out, _ = run(["compact", "--workspace", ws, "--via", via, "--apply"])
    assert code == 0 and read(os.path.join(ws, "keep.md")).decode().count("enicillin") == 1
    code, _out, err = run(["compact", "--workspace", ws, "--via", f"{sys.executable} -c 'import sys; sys.exit(2)'"])
    assert code == 1 and "exit status 2" in err


def test_compact_bank(data_dir):
    datadir = DataDir(data_dir)
    bank, _ = datadir.ensure_bank("main")
    with open(os.path.join(bank.path, "memories.jsonl"), "ab") as fh:
        fh.writelines(
            Memory(
                id=fingerprint(text),
                text=text,
                entities=(),
                tags=(),
                confidence="stated",
                corroboration=0,
                pinned=False,
                created_at=100 + i,
                updated_at=100 + i,
                revision=0,
            ).to_line()
            for i, text in enumerate(
                ("The API port is 3000", "the api port is 3000!", "Alice manages Bob", "Bob manages Alice")
            )
        )
    base = ["compact", "--bank", "main", "--data-dir", str(data_dir), "--reload-command", ""]
    code, out, _ = run(base)
    assert code == 0 and "1 of 2 operations selected · 4 → 3 memories" in out
    assert "[-]" in out and "supersede" in out
    code, out, _ = run(base + ["--json"])
    obj = json.loads(out)
    assert obj["report"]["groups"][0]["loser_ids"] == [fingerprint("the api port is 3000!")]
    code, out, _ = run(base + ["--apply"])
    assert code == 0 and "superseded" in out and f"--data-dir {data_dir} --undo" in out
    bank.refresh()
    assert len(bank.memories()) == 3
    code, out, _ = run(base + ["--undo"])
    assert code == 0
    bank.refresh()
    assert len(bank.memories()) == 4
    code, _out, err = run(base + ["--via", "x"])
    assert code == 1 and "--via rewrites keep.md" in err
    code, _out, err = run(["compact", "--bank", "nope", "--data-dir", str(data_dir)])
    assert code == 1 and "bank `nope` not found" in err


def test_compact_refuses_both_sources(ws, data_dir):
    code, _out, err = run(["compact", "--workspace", ws, "--bank", "main", "--data-dir", str(data_dir)])
    assert code == 1 and "either --workspace" in err


# ---------------------------------------------------------------------- review


def rewrite(ws):
    KeepStore(Workspace(ws)).load()
    write(
        os.path.join(ws, "keep.md"),
        KEEP.replace("- Blood type is A+\n", "").replace(
            "- Sister Ana lives in Berlin\n", "- Sister Ana lives in Berlin now\n"
        )
        + "- Loves trams\n",
    )


def test_review_prints_restore_commands_that_work(ws):
    rewrite(ws)
    code, out, _ = run(["review", "--workspace", ws])
    assert code == 0 and "warning: 1 entry was removed" in out and "--- seen/keep.md" in out
    lines = out.splitlines()
    commands = [line.split("restore it: ", 1)[1] for line in lines if "restore it: " in line]
    assert len(commands) == 3
    removed_cmd = next(
        line.split("restore it: ", 1)[1]
        for i, line in enumerate(lines)
        if "restore it: " in line and "Blood type" in lines[i - 1]
    )
    argv = shlex.split(removed_cmd)
    assert argv[0] == "keepgui"
    code, out, _ = run(argv[1:])
    assert code == 0 and out.startswith("restored:")
    assert "- Blood type is A+" in read(os.path.join(ws, "keep.md")).decode()
    code, out, _ = run(["review", "--workspace", ws])
    assert "has not been changed outside keepgui" in out
    code, out, _ = run(["review", "--workspace", ws, "--undo"])
    assert code == 0 and "Blood type" not in read(os.path.join(ws, "keep.md")).decode()


def test_review_restore_all_and_accept(ws):
    rewrite(ws)
    code, out, _ = run(["review", "--workspace", ws, "--restore", "all"])
    assert code == 0 and read(os.path.join(ws, "keep.md")) == KEEP.encode()
    rewrite(ws)
    code, out, _ = run(["review", "--workspace", ws, "--accept"])
    assert code == 0 and "accepted" in out
    code, out, _ = run(["review", "--workspace", ws, "--json"])
    obj = json.loads(out)
    assert obj["baseline"] is None and obj["operations"] == []


def test_review_json_lists_the_commands(ws):
    rewrite(ws)
    code, out, _ = run(["review", "--workspace", ws, "--json"])
    obj = json.loads(out)
    assert code == 0 and obj["kind"] == "review" and obj["rewrite"].startswith("--- seen/keep.md")
    assert all(cmd.startswith("keepgui review --workspace") for cmd in obj["commands"].values())
    code, _out, err = run(["review", "--workspace", ws, "--restore", "zzzz9999"])
    assert code == 1 and "no operation" in err


def test_review_memory_md_needs_confirm_dream(ws):
    memory = os.path.join(ws, "memory", "MEMORY.md")
    run(["review", "--workspace", ws, "--file", "MEMORY.md"])
    write(memory, "# Long-term Memory\n")
    code, out, _ = run(["review", "--workspace", ws, "--file", "MEMORY.md"])
    assert code == 0 and "--file MEMORY.md --restore" in out and "--confirm-dream" in out
    code, _out, err = run(["review", "--workspace", ws, "--file", "MEMORY.md", "--restore", "all"])
    assert code == 1 and "managed by Dream" in err
    code, _out, _err = run(["review", "--workspace", ws, "--file", "MEMORY.md", "--restore", "all", "--confirm-dream"])
    assert code == 0 and "Sister Ana lives in Berlin" in read(memory).decode()
