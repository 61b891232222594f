"""Across agents with real processes: ``keepgui export`` a bank as a bundle, ``keepgui import`` it into
another agent as a plan and then through that agent's own keep (its limits refusing what does not fit,
saying why), and ``keepgui copy`` / ``--move`` one memory from one agent to another."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.fixture
def env(tmp_path):
    return dict(os.environ, KEEPGUI_HOME=str(tmp_path / "kg"), PYTHONPATH=ROOT, HOME=str(tmp_path))


def keepgui(env: dict[str, str], *argv: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == code, done.stderr
    return done


def rows(env: dict[str, str], *where: str) -> list[dict]:
    return [json.loads(line) for line in keepgui(env, "memories", *where, "--json").stdout.splitlines()]


def test_export_writes_every_memory_for_people_and_for_programs(env, demo_copy, tmp_path):
    where = ("--source", demo_copy.nanobot)
    bundle = tmp_path / "b.json"
    keepgui(env, "export", *where, "--format", "json", "-o", str(bundle))
    obj = json.loads(bundle.read_text(encoding="utf-8"))
    listed = rows(env, *where)
    assert obj["format"] == "keepgui-bundle" and obj["agent"] == "nanobot"
    assert [m["text"] for m in obj["memories"]] == [r["text"] for r in listed]
    assert set(obj["memories"][0]) == {"id", "text", "tags", "pinned", "created_at", "updated_at", "agent"}
    again = keepgui(env, "export", *where, "--format", "json", "-o", str(bundle), code=1)
    assert "exists" in again.stderr  # never over a file
    md = keepgui(env, "export", *where).stdout
    assert md.startswith("# Memories of nanobot") and all(r["text"] in md for r in listed)


def test_import_is_a_plan_then_the_targets_own_keep_within_its_limits(env, demo_copy, tmp_path):
    bundle = tmp_path / "b.json"
    keepgui(env, "export", "--source", demo_copy.nanobot, "--format", "json", "-o", str(bundle))
    target = ("--source", demo_copy.hermes)
    before = rows(env, *target)
    plan = keepgui(env, "import", str(bundle), *target, "--json")
    items = json.loads(plan.stdout)["items"]
    assert {i["state"] for i in items} == {"planned"} and rows(env, *target) == before  # nothing written
    done = keepgui(env, "import", str(bundle), *target, "--apply", "--json", code=1)
    items = json.loads(done.stdout)["items"]
    kept = [i for i in items if i["state"] == "kept"]
    refused = [i for i in items if i["state"] == "refused"]
    assert kept and refused  # Hermes's file limit takes some, refuses the rest
    assert all("limit" in i["why"] for i in refused)
    now = {r["text"] for r in rows(env, *target)}
    assert all(i["text"] in now for i in kept) and not any(i["text"] in now for i in refused)
    again = json.loads(keepgui(env, "import", str(bundle), *target, "--json").stdout)["items"]
    assert sum(1 for i in again if i["state"] == "present") == len(kept)


def test_copy_and_move_one_memory_to_another_agent(env, demo_copy):
    source, target = ("--source", demo_copy.hermes), ("--source", demo_copy.nanobot)
    first = rows(env, *source)[0]
    keepgui(env, "copy", first["id"], *source, "--to-agent", "nanobot", "--to-source", demo_copy.nanobot)
    assert any(first["text"].strip() in r["text"] for r in rows(env, *target))
    assert first["id"] in {r["id"] for r in rows(env, *source)}  # a copy leaves it
    second = rows(env, *source)[1]
    keepgui(env, "copy", second["id"], *source, "--to-agent", "nanobot", "--to-source", demo_copy.nanobot, "--move")
    assert any(second["text"].strip() in r["text"] for r in rows(env, *target))
    assert second["id"] not in {r["id"] for r in rows(env, *source)}  # moved: forgotten at the source
