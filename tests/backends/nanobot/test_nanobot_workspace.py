"""Finding the workspace (spec §5.1), the files keepgui must never write (§5.2), and reading history.jsonl."""

from __future__ import annotations

import base64
import json
import os

import pytest

from keepgui.backends.nanobot.workspace import (
    ENV_WORKSPACE,
    Workspace,
    _lookup,
    discover,
    discover_workspace,
    is_dream_session_stem,
    parse_history,
)
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, ReadOnly, Unreadable
from tests.backends.nanobot.nanobot_helpers import make_workspace, read, write
from tests.conftest import tree_digest


def config(tmp_path, obj) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj, encoding="utf-8")
    return str(path)


def test_workspace_from_config_with_tilde(tmp_path):
    path = config(tmp_path, {"agents": {"defaults": {"workspace": "~/bots/main", "maxTokens": 8192}}})
    env = {"HOME": str(tmp_path / "home")}
    assert discover_workspace(path, env) == str(tmp_path / "home" / "bots" / "main")
    assert discover(path, env).source == "config"


def test_snake_and_camel_case_keys_are_both_accepted():
    assert _lookup({"agentDefaults": {"maxTokens": 1}}, "agent_defaults", "max_tokens") == 1
    assert _lookup({"agent_defaults": {"max_tokens": 2}}, "agent_defaults", "max_tokens") == 2
    assert _lookup({"agents": []}, "agents", "defaults") is None


def test_environment_applies_when_the_file_does_not_set_it(tmp_path):
    path = config(tmp_path, {"agents": {"defaults": {"model": "x"}}})
    env = {"HOME": str(tmp_path), ENV_WORKSPACE: "~/from-env"}
    found = discover(path, env)
    assert found.path == str(tmp_path / "from-env") and found.source == "environment"
    lower = {"HOME": str(tmp_path), ENV_WORKSPACE.lower(): "/srv/ws"}  # pydantic-settings ignores case
    assert discover_workspace(path, lower) == "/srv/ws"


def test_the_file_wins_over_the_environment_as_in_nanobot(tmp_path):
    path = config(tmp_path, {"agents": {"defaults": {"workspace": "/from/file"}}})
    assert discover_workspace(path, {"HOME": str(tmp_path), ENV_WORKSPACE: "/from/env"}) == "/from/file"


def test_environment_without_a_config_file(tmp_path):
    env = {"HOME": str(tmp_path), ENV_WORKSPACE: "/srv/ws"}
    assert discover_workspace(str(tmp_path / "missing.json"), env) == "/srv/ws"


def test_default_workspace_and_default_config(tmp_path):
    env = {"HOME": str(tmp_path)}
    found = discover(None, env)
    assert found.path == str(tmp_path / ".nanobot" / "workspace") and found.source == "default"
    assert found.config_path == str(tmp_path / ".nanobot" / "config.json")
    os.makedirs(tmp_path / ".nanobot")
    config_path = tmp_path / ".nanobot" / "config.json"
    config_path.write_text(json.dumps({"agents": {"defaults": {"workspace": "~/w"}}}))
    assert discover_workspace(environ=env) == str(tmp_path / "w")


@pytest.mark.parametrize(
    "content, note",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"agents": {"defaults": {"workspace": 7}}}', "not a string"),
    ],
)
def test_a_bad_config_falls_back_to_the_default_and_says_why(tmp_path, content, note):
    found = discover(config(tmp_path, content), {"HOME": str(tmp_path)})
    assert found.source == "default" and note in found.note


def test_is_workspace(tmp_path):
    ws = Workspace(tmp_path / "w")
    assert not ws.exists() and not ws.is_workspace()
    os.makedirs(tmp_path / "w" / "memory")
    assert ws.exists() and not ws.is_workspace()
    (tmp_path / "w" / "memory" / "history.jsonl").write_bytes(b"")
    assert ws.is_workspace()
    os.unlink(tmp_path / "w" / "memory" / "history.jsonl")
    (tmp_path / "w" / "memory" / "MEMORY.md").write_text("# Memory\n")
    assert ws.is_workspace()


def test_several_workspaces_at_once(tmp_path):
    a = Workspace(make_workspace(tmp_path / "a"))
    b = Workspace(make_workspace(tmp_path / "b", keep="- other\n"))
    assert a != b and a.keep_md != b.keep_md and len({a, b, Workspace(tmp_path / "a")}) == 2


@pytest.mark.parametrize(
    "rel",
    [
        "memory/history.jsonl",
        "memory/.cursor",
        "memory/.dream_cursor",
        "memory/.dreamCursor",
        ".gitignore",
        ".git/config",
        ".git/HEAD",
        ".git",
    ],
)
def test_forbidden_files_are_never_written(tmp_path, rel):
    root = make_workspace(tmp_path / "ws")
    os.makedirs(os.path.join(root, ".git"), exist_ok=True)
    for name in ("memory/.cursor", "memory/.dream_cursor", ".gitignore", ".git/HEAD"):
        write(os.path.join(root, name), "x")
    ws = Workspace(root)
    before = tree_digest(root)
    expect = fsio.Stamp.missing() if rel == ".git" else fsio.current_stamp(ws.path(rel))
    with pytest.raises(ReadOnly, match="keepgui only reads it"):
        ws.write(rel, b"overwritten", expect=expect)
    with pytest.raises(ReadOnly):
        ws.check_writable(ws.path(rel))
    assert tree_digest(root) == before


def test_writes_outside_the_workspace_or_through_links_are_refused(tmp_path):
    root = make_workspace(tmp_path / "ws")
    ws = Workspace(root)
    with pytest.raises(ReadOnly, match="outside the nanobot workspace"):
        ws.write("../escape.md", b"x", expect=fsio.Stamp.missing())
    os.symlink(os.path.join(root, "memory", "history.jsonl"), os.path.join(root, "sneaky.md"))
    with pytest.raises(ReadOnly):
        ws.write("sneaky.md", b"x", expect=fsio.current_stamp(os.path.join(root, "sneaky.md")))
    assert not os.path.exists(tmp_path / "escape.md") and read(ws.history_jsonl) == b""


def test_a_write_must_say_what_it_read(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws"))
    with pytest.raises(InvalidInput):
        ws.write("keep.md", b"- x\n", expect=None)
    stamp = ws.write("projects/atlas/notes.md", b"x\n", expect=fsio.Stamp.missing())  # folders are created
    assert stamp.exists and read(ws.path("projects/atlas/notes.md")) == b"x\n"


def test_reading_a_folder_as_a_file_is_unreadable(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws"))
    os.makedirs(ws.path("AGENTS.md"))
    with pytest.raises(Unreadable, match=r"AGENTS\.md"):
        ws.read("AGENTS.md")


def test_history_reader_skips_malformed_lines_like_nanobot():
    data = b"\n".join(
        [
            json.dumps(
                {"cursor": 1, "timestamp": "2025-06-01 10:00", "content": "- [permanent] Has a beagle"}
            ).encode(),
            b"not json",
            b"[1, 2]",
            json.dumps({"cursor": True, "timestamp": "t", "content": "c"}).encode(),
            json.dumps({"cursor": -1, "timestamp": "t", "content": "c"}).encode(),
            json.dumps({"cursor": 3, "timestamp": 5, "content": "c"}).encode(),
            json.dumps({"cursor": 4, "timestamp": "t", "content": "c", "session_key": 9}).encode(),
            b"",
            json.dumps(
                {"cursor": 5, "timestamp": "2025-06-02 11:00", "content": "Sam ❤", "session_key": "tg:1"},
                ensure_ascii=False,
            ).encode(),
            b'{"cursor": 6, "timest',
        ]
    )
    read_ = parse_history(data)
    assert [r.cursor for r in read_.records] == [1, 5]
    assert read_.records[1].session_key == "tg:1" and read_.records[1].line == 9
    assert [s.line for s in read_.skipped] == [2, 3, 4, 5, 6, 7, 10]
    assert read_.records[0].to_obj()["line"] == 1


def test_where_a_fact_came_from_and_the_dream_cursor(tmp_path):
    history = (
        json.dumps(
            {"cursor": 1, "timestamp": "2025-06-01 10:00", "content": "- [permanent] Has a  beagle named Biscuit"}
        )
        + "\n"
    ).encode()
    ws = Workspace(make_workspace(tmp_path / "ws", history=history))
    [record] = ws.history_mentioning("has a beagle named biscuit")
    assert record.cursor == 1
    assert ws.history_mentioning("   ") == []
    assert ws.dream_cursor() is None
    write(ws.path("memory/.dreamCursor"), "7\n")
    assert ws.dream_cursor() == 7
    write(ws.path("memory/.dream_cursor"), "9")
    assert ws.dream_cursor() == 9


def test_dream_session_names():
    key = base64.urlsafe_b64encode(b"dream:20250601-120000").decode().rstrip("=")
    assert is_dream_session_stem(key)
    assert is_dream_session_stem("dream_20250601-120000")
    assert not is_dream_session_stem(base64.urlsafe_b64encode(b"telegram:123").decode().rstrip("="))
    assert not is_dream_session_stem("cli_direct")


def test_projects_lists_project_folders(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws"))
    assert ws.projects() == []
    os.makedirs(ws.path("projects/atlas"))
    os.makedirs(ws.path("projects/.hidden"))
    write(ws.path("projects/readme.md"), "x")
    assert ws.projects() == ["atlas"]
