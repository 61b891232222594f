"""The command line's behaviour for Gemini CLI (plain functions until the generic ``--agent`` CLI wires them)."""

from __future__ import annotations

import json
import os

from keepgui.backends.gemini import commands
from keepgui.backends.gemini.context import session_context
from keepgui.backends.gemini.layout import GeminiEnv
from tests.backends.gemini.test_gemini_cli_compare import digest
from tests.backends.gemini.trees import put


def test_context_json_holds_both_elements_and_writes_nothing(place):
    put(os.path.join(place.repo, "GEMINI.md"), "Ask @alice.\n")
    before = digest(os.path.dirname(place.home))
    obj = commands.context(place.cwd, place.environ, as_json=True)
    assert digest(os.path.dirname(place.home)) == before
    expected = session_context(place.cwd, GeminiEnv.from_environ(place.environ))
    assert obj["system_context"] == expected.system_context and obj["system_context"].startswith("<loaded_context>")
    assert obj["session_context"] == expected.session_context
    assert obj["private_folder"]["how"] == "new" and obj["private_folder"]["slug"] == "api"
    assert set(obj["parts"]) == {"global", "private", "extension", "project"}
    assert json.loads(json.dumps(obj)) == obj
    [project] = [f for f in obj["files"] if f["tier"] == "project" and f["state"] == "loaded"]
    assert project["imports"][0]["token"] == "@alice." and project["imports"][0]["outcome"] == "failed"
    text = commands.context(place.cwd, place.environ)
    assert "line 1: @alice. → replaced by <!-- Import failed: alice. - ENOENT" in text
    assert expected.system_context in text and expected.session_context in text


def test_gemini_cli_home_is_honoured(place, tmp_path):
    other = str(tmp_path / "gemhome")
    put(os.path.join(other, ".gemini", "GEMINI.md"), "Global under GEMINI_CLI_HOME.\n")
    obj = commands.context(place.cwd, {**place.environ, "GEMINI_CLI_HOME": other}, as_json=True)
    assert "Global under GEMINI_CLI_HOME." in obj["system_context"]
    assert obj["gemini_dir"] == os.path.join(other, ".gemini")


def test_keep_then_context_shows_it_and_the_inbox_commands(place):
    change = commands.keep(place.cwd, "Deploys need a ticket", place.environ, place.history)
    assert change.written
    obj = commands.context(place.cwd, place.environ, as_json=True)
    assert "- Deploys need a ticket" in obj["system_context"] and "<user_project_memory>" in obj["system_context"]
    memory = obj["private_folder"]["memory_dir"]
    put(
        os.path.join(memory, ".inbox", "private", "extraction.patch"),
        f"--- {memory}/MEMORY.md\n+++ {memory}/MEMORY.md\n@@ -1 +1,2 @@\n - Deploys need a ticket\n+- And a reviewer\n",
    )
    [item] = commands.pending(place.cwd, place.environ, place.history)
    commands.approve(place.cwd, [item.id], place.environ, place.history)
    with open(os.path.join(memory, "MEMORY.md"), encoding="utf-8") as fh:
        assert fh.read() == "- Deploys need a ticket\n- And a reviewer\n"
    assert commands.pending(os.path.join(place.home, ".gemini"), place.environ, place.history) == []
