"""``keepgui pending``: every agent's staged writes, written once against the approvals seam."""

from __future__ import annotations

import json
import os

import pytest

from keepgui import cli
from tests.conftest import OLD_FORM, run_cli

WRITE_KEYS = [
    "id",
    "agent",
    "source",
    "bank",
    "path",
    "target",
    "summary",
    "created_ms",
    "applicable",
    "problem",
    "diff",
]


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture
def homes(demo_copy, tmp_path, monkeypatch):
    """The demo's agents as this machine's own: an empty HOME, the demo's Hermes and Gemini homes."""
    empty = tmp_path / "home"
    empty.mkdir()
    monkeypatch.setenv("HOME", str(empty))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_HOME", demo_copy.path("hermes"))
    monkeypatch.setenv("GEMINI_CLI_HOME", os.path.dirname(demo_copy.path("gemini")))
    return demo_copy


def test_every_agents_queue_is_listed_with_the_diff_each_write_would_make(homes):
    code, out, err = run_cli(["pending", "--json"])
    assert code == 0, err
    writes = json.loads(out)
    assert [w["agent"] for w in writes] == ["hermes", "gemini", "gemini"]
    assert all(list(w) == WRITE_KEYS for w in writes)
    hermes = writes[0]
    assert hermes["path"] == os.path.join(homes.path("hermes"), "memories", "MEMORY.md")
    assert "+Nightjar training data now lives on the NAS: /volume1/nightjar." in hermes["diff"].splitlines()
    assert all(w["diff"].startswith(f"--- a/{w['target']}\n+++ b/{w['target']}\n") for w in writes)
    assert all(os.path.isfile(w["path"]) and w["applicable"] for w in writes)
    code, out, _err = run_cli(["pending"])
    assert code == 0 and "5f0c2a91" in out and "+- Prefers pytest's -x flag" in out
    assert "approve: keepgui pending --agent hermes approve ID" in out


def test_approve_applies_one_write_and_reject_all_empties_a_queue(homes):
    memory = os.path.join(homes.path("hermes"), "memories", "MEMORY.md")
    code, out, err = run_cli(["pending", "approve", "5f0c2a91", "--agent", "hermes"])
    assert code == 0, err
    assert read(memory).endswith("\n§\nNightjar training data now lives on the NAS: /volume1/nightjar.")
    assert os.listdir(os.path.join(homes.path("hermes"), "pending", "memory")) == []
    gemini = ["--agent", "gemini", "--source", homes.path("gemini")]
    before = {w["path"]: read(w["path"]) for w in json.loads(run_cli(["pending", *gemini, "--json"])[1])}
    code, out, err = run_cli(["pending", *gemini, "reject", "all", "--json"])
    assert code == 0, err
    assert [c["text"] for c in json.loads(out)] == ["Reject 2 Auto Memory patches"]
    assert {path: read(path) for path in before} == before  # nothing applied
    assert json.loads(run_cli(["pending", "--json"])[1]) == []
    code, out, _err = run_cli(["pending"])
    assert code == 0 and out.startswith("No writes await approval (looked at ")


def test_what_cannot_be_decided_is_said_and_nothing_is_written(homes):
    code, _out, err = run_cli(["pending", "approve", "nosuchid", "--source", homes.path("hermes")])
    assert code == 1 and "no staged write nosuchid is waiting" in err
    code, _out, err = run_cli(["pending", "--agent", "nanobot", "--source", homes.path("nanobot")])
    assert code == 1 and "stages no writes for approval" in err
    code, _out, err = run_cli(["pending", "approve", "--source", homes.path("hermes")])
    assert code == 1 and "say which writes to approve" in err
    assert len(os.listdir(os.path.join(homes.path("hermes"), "pending", "memory"))) == 1


def test_the_old_gemini_command_says_what_replaces_it_and_leaves_the_name_inbox_free(homes):
    code, out, err = run_cli(["gemini-inbox", "--source", homes.path("gemini"), "--json"])
    assert code == 0 and OLD_FORM in err and "`keepgui pending --agent gemini`" in err
    assert len(json.loads(out)) == 2
    inbox = cli.build_parser()._subparsers._group_actions[0].choices["inbox"]  # type: ignore[union-attr]
    assert "gemini" not in (inbox.description or "").lower() + inbox.prog  # the name is the generic inbox's


def test_agent_alone_is_its_homes_queue_whatever_the_current_folder(homes, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["pending", "--agent", "gemini", "--json"])
    assert code == 0, err
    assert [w["id"] for w in json.loads(out)] == ["backend:private/extraction.patch", "backend:global/extraction.patch"]
    code, out, err = run_cli(["pending", "--agent", "hermes", "--json"])
    assert code == 0 and [w["id"] for w in json.loads(out)] == ["5f0c2a91"], err
