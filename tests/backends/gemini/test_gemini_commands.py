"""Gemini CLI on the command line: ``context`` (both exact parts), ``keep``, the common verbs, ``inbox``."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.backends.gemini.context import session_context
from keepgui.backends.gemini.layout import GeminiEnv
from tests.backends.gemini.test_gemini_cli_compare import digest
from tests.backends.gemini.trees import put
from tests.conftest import run_cli


@pytest.fixture
def cli_place(place, monkeypatch):
    """The test's Gemini home as this process's environment (the command line reads it as Gemini does)."""
    for name, value in place.environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.setenv("KEEPGUI_HOME", str(os.path.dirname(place.home)) + "/keepgui")
    return place


def test_context_json_holds_both_parts_and_writes_nothing(cli_place):
    place = cli_place
    put(os.path.join(place.repo, "GEMINI.md"), "Ask @alice.\n")
    before = digest(os.path.join(os.path.dirname(place.home), "home"))
    code, out, _err = run_cli(["context", "--agent", "gemini", "--project", place.cwd, "--json"])
    assert code == 0
    assert digest(os.path.join(os.path.dirname(place.home), "home")) == before  # not even projects.json
    obj = json.loads(out)
    expected = session_context(place.cwd, GeminiEnv.from_environ(place.environ))
    assert obj["system_context"] == expected.system_context and obj["system_context"].startswith("<loaded_context>")
    assert obj["session_context"] == expected.session_context
    assert obj["private_folder"]["how"] == "new" and obj["private_folder"]["slug"] == "api"
    [project] = [f for f in obj["files"] if f["tier"] == "project" and f["state"] == "loaded"]
    assert project["imports"][0]["token"] == "@alice." and project["imports"][0]["outcome"] == "failed"
    code, out, _err = run_cli(["context", "--agent", "gemini", "--project", place.cwd, "--part", "session_context"])
    assert code == 0 and out.rstrip("\n") == expected.session_context
    code, out, _err = run_cli(["context", "--agent", "gemini", "--project", place.cwd])
    assert "line 1: @alice. → replaced by <!-- Import failed: alice. - ENOENT" in out
    assert expected.system_context in out and expected.session_context in out
    code, out, _err = run_cli(["context", "--agent", "gemini", "--project", place.cwd, "--untrusted", "--json"])
    assert json.loads(out)["session_context"] is None and json.loads(out)["trusted"] is False


def test_gemini_cli_home_is_honoured(cli_place, tmp_path, monkeypatch):
    other = str(tmp_path / "gemhome")
    put(os.path.join(other, ".gemini", "GEMINI.md"), "Global under GEMINI_CLI_HOME.\n")
    monkeypatch.setenv("GEMINI_CLI_HOME", other)
    code, out, _err = run_cli(["context", "--agent", "gemini", "--project", cli_place.cwd, "--json"])
    obj = json.loads(out)
    assert code == 0 and "Global under GEMINI_CLI_HOME." in obj["system_context"]
    assert obj["gemini_dir"] == os.path.join(other, ".gemini")


def test_keep_the_common_verbs_and_the_inbox(cli_place):
    place = cli_place
    code, out, _err = run_cli(["keep", "--agent", "gemini", "--project", place.cwd, "Deploys need a ticket"])
    assert code == 0 and "the next Gemini CLI session started in" in out
    obj = json.loads(run_cli(["context", "--agent", "gemini", "--project", place.cwd, "--json"])[1])
    assert "- Deploys need a ticket" in obj["system_context"] and "<user_project_memory>" in obj["system_context"]
    memory = obj["private_folder"]["memory_dir"]
    code, out, _err = run_cli(["memories", "--agent", "gemini", "--project", place.cwd, "--json"])
    rows = [json.loads(line) for line in out.splitlines()]  # one JSON object a row
    texts = json.dumps(rows)
    assert code == 0 and "Deploys need a ticket" in texts and "Use tabs." in texts
    put(
        os.path.join(memory, ".inbox", "private", "extraction.patch"),
        f"--- {memory}/MEMORY.md\n+++ {memory}/MEMORY.md\n@@ -1 +1,2 @@\n - Deploys need a ticket\n+- And a reviewer\n",
    )
    code, out, _err = run_cli(["pending", "--agent", "gemini", "--project", place.cwd, "--diff"])
    assert code == 0 and "api:private/extraction.patch" in out and "+- And a reviewer" in out
    code, out, _err = run_cli(
        ["pending", "--agent", "gemini", "--project", place.cwd, "--approve", "api:private/extraction.patch"]
    )
    assert code == 0
    with open(os.path.join(memory, "MEMORY.md"), encoding="utf-8") as fh:
        assert fh.read() == "- Deploys need a ticket\n- And a reviewer\n"
    code, out, _err = run_cli(["pending", "--agent", "gemini", "--json"])  # the home: every launch folder
    assert code == 0 and json.loads(out) == []
