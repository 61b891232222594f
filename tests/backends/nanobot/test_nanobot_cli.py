"""The nanobot commands: keep, entries, forget, unforget, nanobot-preview — output, --json, exit status."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from keepgui.backends.nanobot.dream import cross_check, keep_pointer
from keepgui.backends.nanobot.keepmd import KeepDoc
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.core.demo import make_demo_copy
from tests.backends.nanobot.nanobot_helpers import SPEC_FIXTURE, make_workspace, read
from tests.conftest import run_cli, tree_digest

run = run_cli


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path / "ws")


def test_keep_writes_and_reports(ws):
    code, out, _ = run(["keep", "remember", "that", "Has a cat called Miso", "--workspace", ws])
    assert code == 0
    assert out.splitlines()[0] == "kept: - Has a cat called Miso"
    assert "keep.md: 11 entries, 11 lines (cap 150, target ~120)" in out
    assert read(os.path.join(ws, "keep.md")) == SPEC_FIXTURE.encode() + b"- Has a cat called Miso\n"


def test_keep_already_kept_exits_1(ws):
    code, out, _ = run(["keep", "prefers metric units", "--workspace", ws])
    assert code == 1 and out.startswith("already kept: entry 1 `Prefers metric units, including in recipes`")
    assert "nothing written" in out and "--force" in out
    code, out, _ = run(["keep", "* Has a beagle named Biscuit", "--workspace", ws])
    assert code == 1 and "already kept: entry 7" in out and "--force" not in out
    assert read(os.path.join(ws, "keep.md")) == SPEC_FIXTURE.encode()


def test_keep_replace_offered_then_replace(ws):
    code, out, _ = run(["keep", "Allergic to penicillin and amoxicillin", "--workspace", ws])
    assert code == 1 and "contains entry 4 `Allergic to penicillin`" in out and "--replace" in out
    code, out, _ = run(["keep", "Allergic to penicillin and amoxicillin", "--replace", "--workspace", ws])
    assert code == 0 and out.startswith("replaced entry 4")
    assert KeepDoc.parse(read(os.path.join(ws, "keep.md"))).entries[3].text.endswith("amoxicillin")


def test_keep_triage_suggestion_and_force(ws):
    code, out, _ = run(["keep", "Always run the tests before committing", "--workspace", ws])
    assert code == 1 and "suggested place is AGENTS.md" in out and "--force" in out
    code, out, _ = run(["keep", "Always run the tests before committing", "--force", "--workspace", ws])
    assert code == 0 and "kept: - Always run the tests before committing" in out
    assert "info: kept although it looks like it belongs in AGENTS.md" in out


def test_keep_near_duplicate_warning(tmp_path):
    ws = make_workspace(tmp_path / "ws", keep="- Prefers tea\n")
    code, out, _ = run(["keep", "Prefers green tea", "--workspace", ws])
    # "Prefers tea" is not "100% similar": every word of the new fact is... the other way round
    assert code == 0 and "warning: near-duplicate: it has every word of entry 1 `Prefers tea`" in out


def test_keep_json(ws):
    code, out, _ = run(["keep", "Allergic to penicillin and amoxicillin", "--json", "--workspace", ws])
    obj = json.loads(out)
    assert code == 1 and obj["outcome"] == "replace_offered" and obj["written"] is False
    assert obj["replace_candidates"][0]["number"] == 4
    code, out, _ = run(["keep", "Has a cat", "--json", "--workspace", ws])
    obj = json.loads(out)
    assert (
        code == 0
        and obj["outcome"] == "kept"
        and obj["entry"]["text"] == "Has a cat"
        and obj["counts"]["entries"] == 11
    )


def test_keep_refuses_a_folder_that_is_not_a_workspace(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    code, _, err = run(["keep", "Has a cat", "--workspace", str(folder)])
    assert code == 1 and "does not look like a nanobot workspace" in err and not (folder / "keep.md").exists()
    code, _, err = run(["keep", "Has a cat", "--workspace", str(tmp_path / "missing")])
    assert code == 1 and "no such folder" in err


def test_entries_lists_entries_flags_and_counts(tmp_path):
    ws = make_workspace(tmp_path / "ws", keep=SPEC_FIXTURE + "## Pets\n* Has a beagle named Biscuit\n")
    code, out, _ = run(["entries", "--workspace", ws])
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == " 1  Prefers metric units, including in recipes"
    assert lines[10] == "11~ Has a beagle named Biscuit"
    assert "line 11: ## Pets  (heading: keep.md is a flat list without headings)" in out
    assert "duplicate: entries 7, 11 say `Has a beagle named Biscuit`" in out
    assert lines[-1] == "keep.md: 11 entries, 12 lines (cap 150, target ~120)"
    code, out, _ = run(["entries", "--json", "--workspace", ws])
    obj = json.loads(out)
    assert obj["counts"]["entries"] == 11 and obj["duplicates"] == [[7, 11]]
    assert obj["capabilities"]["can_pin"] is False and "no pin" in obj["capabilities"]["pin_reason"]
    assert [(f["line"], f["kind"]) for f in obj["flagged"]] == [(11, "heading"), (12, "entry")]


def test_entries_of_a_workspace_without_keep_md(tmp_path):
    ws = make_workspace(tmp_path / "ws", keep=None)
    code, out, _ = run(["entries", "--workspace", ws])
    assert code == 0 and "does not exist yet" in out and "0 entries" in out


def test_forget_and_unforget(ws):
    code, out, _ = run(["forget", "4", "--workspace", ws])
    assert code == 0 and out.startswith("forgot entry 4: Allergic to penicillin") and "keepgui unforget" in out
    code, out, _ = run(["forget", "beagle", "--workspace", ws])
    assert code == 0 and "Has a beagle named Biscuit" in out
    code, out, _ = run(["unforget", "--workspace", ws])
    assert code == 0 and out.startswith("restored `Has a beagle named Biscuit`")
    code, out, _ = run(["unforget", "--json", "--workspace", ws])
    assert code == 0 and json.loads(out)["restored"]["text"] == "Allergic to penicillin"
    assert read(os.path.join(ws, "keep.md")) == SPEC_FIXTURE.encode()
    code, _, err = run(["unforget", "--workspace", ws])
    assert code == 1 and "nothing to unforget" in err


def test_forget_errors(ws):
    code, _, err = run(["forget", "in", "--workspace", ws])
    assert code == 1 and "matches 3 entries" in err and "give the number" in err
    code, _, err = run(["forget", "99", "--workspace", ws])
    assert code == 1 and "has no entry 99" in err
    assert read(os.path.join(ws, "keep.md")) == SPEC_FIXTURE.encode()


def test_forget_json(ws):
    code, out, _ = run(["forget", "Partner's name is Sam", "--json", "--workspace", ws])
    obj = json.loads(out)
    assert code == 0 and obj["entry"]["number"] == 10 and obj["removed"]["before"] == 'Dislikes being called "buddy"'


def test_preview(tmp_path):
    ws = make_workspace(tmp_path / "ws", soul="Be calm.\n")
    before = tree_digest(ws)
    code, out, _ = run(["nanobot-preview", "--workspace", ws])
    assert code == 0 and "(built-in rendering)" in out
    assert "── SOUL.md (bootstrap file) · injected · 21 bytes · ~6 tokens\n## SOUL.md\n\nBe calm." in out
    assert "── AGENTS.md (bootstrap file) · skipped: the file does not exist" in out
    assert "keep.md (read by the keep skill, not injected by nanobot)" in out and "Has a beagle" in out
    assert "not reproduced: tool contract" in out
    code, out, _ = run(["nanobot-preview", "--summary", "--workspace", ws])
    assert "Be calm." not in out and "memory-bearing prompt:" in out
    code, out, _ = run(["nanobot-preview", "--json", "--workspace", ws])
    obj = json.loads(out)
    assert obj["mode"] == "built-in" and obj["memory_prompt"].startswith("## SOUL.md\n\nBe calm.\n")
    assert tree_digest(ws) == before


@pytest.mark.skipif(importlib.util.find_spec("nanobot") is not None, reason="nanobot is installed here")
def test_preview_exact_without_nanobot(ws):
    code, _, err = run(["nanobot-preview", "--exact", "--workspace", ws])
    assert code == 1 and "pip install nanobot-ai" in err


def test_workspace_given_before_the_command_name(ws):
    code, out, _ = run(["--workspace", ws, "entries"])
    assert code == 0 and "10 entries" in out


def test_workspace_from_nanobot_config(tmp_path, monkeypatch, ws):
    home = tmp_path / "home"
    (home / ".nanobot").mkdir(parents=True)
    (home / ".nanobot" / "config.json").write_text(json.dumps({"agents": {"defaults": {"workspace": ws}}}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NANOBOT_AGENTS__DEFAULTS__WORKSPACE", raising=False)
    code, out, _ = run(["entries"])
    assert code == 0 and "10 entries" in out


def test_demo_workspace(tmp_path):
    demo = make_demo_copy(str(tmp_path))
    ws = Workspace(demo.nanobot)
    assert ws.is_workspace()
    doc = KeepDoc.parse(read(ws.keep_md))
    assert doc.compaction_due and doc.line_count > 150 and 150 <= doc.entry_count <= 170
    assert doc.duplicates() and any(line.text == "## Pets" for line in doc.other_lines)
    assert any(any(ch.isdigit() for ch in e.text) and "-" in e.text for e in doc.entries)  # dated entries
    assert keep_pointer(ws).present
    check = cross_check(ws)
    assert any(m.triage.verdict == "agents" for m in check.misplaced)
    assert any(o.file == "MEMORY.md" for o in check.overlaps)
    assert ws.history().records and not ws.history().skipped
    code, out, _ = run(["--demo", "entries"])
    assert code == 0 and "compaction due" in out
