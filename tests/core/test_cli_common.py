"""The common commands for every backend: the same options, the same ``--json`` shapes, the exact
context of each, and the old command lines kept working, each saying what replaces it."""

from __future__ import annotations

import json
import os
import re

import pytest

from keepgui.core import registry
from tests.conftest import OLD_FORM, errors_of, run_cli

ROW_KEYS = [
    "id",
    "text",
    "tags",
    "entities",
    "pinned",
    "live",
    "invalid_at",
    "superseded_by",
    "corroboration",
    "confidence",
    "created_at",
    "updated_at",
    "revision",
    "position",
    "fields",
]
CHANGE_KEYS = ["written", "message", "feedback", "notes", "source", "bank", "rows"]
PLAN_KEYS = {"kind", "subject", "created_at", "operations", "selection", "counts", "notices", "diff"}


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


GOLDEN = os.path.join(os.path.dirname(__file__), "..", "backends", "claude", "context_demo_before.json")


@pytest.fixture
def demo(demo_copy, monkeypatch):
    """The demo, with the HOME its Claude Code project's sessions use."""
    monkeypatch.setenv("HOME", demo_copy.claude_home)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return demo_copy


def source_of(demo, kind: str) -> list[str]:
    """How each backend's demo source is named on a command line (iii: its ``blog`` bank)."""
    return {
        "iii": ["--agent", "iii", "--source", demo.iii, "--bank", "blog", "--reload-command", ""],
        "nanobot": ["--agent", "nanobot", "--source", demo.nanobot],
        "claude": ["--agent", "claude", "--project", demo.claude_project],
    }[kind]


# ---------------------------------------------------------------------- context, exactly as before


def normalised(text: str, root: str) -> str:
    return text.replace(root, "{ROOT}").replace(re.sub(r"[^A-Za-z0-9]", "-", root), "{SANITIZED_ROOT}")


def test_claude_context_is_byte_identical_to_the_command_before_the_common_one(demo):
    """``context --agent claude`` on the demo: stdout and stderr of the report, ``--json`` and ``--reminder``
    byte for byte what the command printed before it was written once for every backend (recorded from
    main then: ``context_demo_before.json``, the demo's folder written as ``{ROOT}``)."""
    with open(GOLDEN, encoding="utf-8") as fh:
        before = json.load(fh)
    base = ["context", "--agent", "claude", "--project", demo.claude_project]
    for name, extra in (("human", []), ("json", ["--json"]), ("reminder", ["--reminder"])):
        code, out, err = run_cli(base + extra)
        if name == "json":  # the one key added since (#23.13): which version is installed here
            out, added = re.subn(r',"agent_version":\{"checked":"2\.1\.332","installed":[^{}]*\}', "", out)
            assert added == 1, out[-300:]
        assert {"code": code, "stdout": normalised(out, demo.root), "stderr": normalised(err, demo.root)} == before[
            name
        ]
    code, out, _err = run_cli(base + ["--part", "reminder"])
    assert code == 0 and normalised(out, demo.root) == before["reminder"]["stdout"]
    # the old command line (no --agent) prints the same, and says what replaces it
    code, out, err = run_cli(["context", "--project", demo.claude_project])
    assert normalised(out, demo.root) == before["human"]["stdout"]
    assert errors_of(normalised(err, demo.root)) == before["human"]["stderr"].splitlines()
    assert "it is now `keepgui context --agent claude`" in err


@pytest.mark.parametrize("kind", ["iii", "nanobot", "claude"])
def test_every_backends_context_holds_its_parts_under_their_names(demo, kind):
    query = ["--query", "post length"] if kind == "iii" else []
    code, out, _err = run_cli(["context", *source_of(demo, kind), *query, "--json"])
    assert code == 0
    obj = json.loads(out)
    bank_parts = {"iii": ["system_prompt", "message"], "nanobot": ["memory_prompt", "system_prompt"]}
    for name in bank_parts.get(kind, ["reminder"]):
        code, part, _ = run_cli(["context", *source_of(demo, kind), *query, "--part", name])
        assert code == 0 and part == (obj[name] or "")
    code, _out, err = run_cli(["context", *source_of(demo, kind), *query, "--part", "no-such-part"])
    assert code == 1 and "has no part `no-such-part`" in err


# ---------------------------------------------------------------------- the same shapes for every backend


@pytest.mark.parametrize("kind", ["iii", "nanobot", "claude"])
def test_every_backend_answers_every_common_command_with_the_same_shapes(demo, kind):
    where = source_of(demo, kind)
    code, out, _ = run_cli(["memories", *where, "--json"])
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and rows and all(list(r) == ROW_KEYS for r in rows)
    code, out, err = run_cli(["keep", *where, "The staging database is rebuilt every Sunday night", "--json"])
    kept = json.loads(out)
    assert code == 0 and list(kept) == [*CHANGE_KEYS, "handled_by"] and kept["handled_by"] == "cli", err
    new = [r for r in kept["rows"] if "staging database" in r["text"]]
    assert len(new) == 1 and new[0]["live"]
    key = new[0]["id"]
    code, out, _ = run_cli(["forget", *where, key, "--json"])
    forgot = json.loads(out)
    assert code == 0 and list(forgot) == CHANGE_KEYS and forgot["written"]
    retired = [r["id"] for r in forgot["rows"] if not r["live"]]
    assert len(retired) == 1
    code, out, _ = run_cli(["restore", *where, retired[0], "--json"])
    assert code == 0 and list(json.loads(out)) == CHANGE_KEYS
    code, out, _ = run_cli(["memories", *where, "--json"])
    assert any("staging database" in json.loads(line)["text"] for line in out.splitlines())
    # what a backend cannot do is refused with the reason its Capabilities give (the greyed control's)
    bank = bank_of(demo, kind)
    for command, capability in (("pin", "pin"), ("unpin", "pin")):
        live = next(json.loads(line)["id"] for line in run_cli(["memories", *where, "--json"])[1].splitlines())
        code, out, err = run_cli([command, *where, live, "--json"])
        if bank.capabilities.can(capability):
            assert code == 0 and list(json.loads(out)) == CHANGE_KEYS
        else:
            assert code == 1 and bank.capabilities.why_not(capability) in err
    code, out, _ = run_cli(["problems", *where, "--json"])
    assert list(json.loads(out)) == ["source", "ok", "problems"]
    code, out, err = run_cli(["compact", *where, "--json"])
    assert code == 0 and set(json.loads(out)) >= PLAN_KEYS, err
    code, out, err = run_cli(["review", *where, "--json"])
    if bank.capabilities.can("review"):
        assert code == 0 and {"summary", *PLAN_KEYS} <= set(json.loads(out)), err
    else:
        assert code == 1 and bank.capabilities.why_not("review") in err


def bank_of(demo, kind: str):
    path = {"iii": demo.iii, "nanobot": demo.nanobot, "claude": demo.claude_project}[kind]
    source = registry.open_source(kind, path)
    return source.bank("blog" if kind == "iii" else source.scan().names[0])


def test_edit_and_pin_through_the_common_commands(demo):
    where = source_of(demo, "iii")
    code, out, _ = run_cli(["keep", *where, "Drafts live in the drafts folder", "--json"])
    key = json.loads(out)["rows"][0]["id"]
    code, out, _ = run_cli(["edit", *where, key[:8], "--text", "Drafts live in drafts/", "--tag", "workflow", "--json"])
    edited = json.loads(out)
    assert (
        code == 0
        and edited["rows"][-1]["text"] == "Drafts live in drafts/"
        and edited["rows"][-1]["tags"] == ["workflow"]
    )
    assert run_cli(["pin", *where, key])[0] == 0
    code, out, _ = run_cli(["memories", *where, "--tag", "workflow", "--json"])
    assert [json.loads(line)["pinned"] for line in out.splitlines() if json.loads(line)["id"] == key] == [True]
    code, _out, err = run_cli(["edit", *source_of(demo, "nanobot"), "e53adc", "--tag", "x"])
    assert code == 1 and "no tags" in err  # nanobot's reason


def test_a_source_is_chosen_by_agent_source_project_or_bank(demo, monkeypatch):
    monkeypatch.setenv("KEEPGUI_DATA_DIR", demo.iii)  # iii's home: the agent's own environment variable
    code, out, _ = run_cli(["memories", "--agent", "iii", "--bank", "blog"])
    assert code == 0 and "Guest posts" in out
    code, _out, err = run_cli(["memories", "--agent", "iii"])
    assert code == 1 and "3 banks: blog, coding, main; say which with --bank NAME" in err
    code, out, _ = run_cli(["memories", "--source", demo.nanobot])  # recognised by the registry
    assert code == 0 and "Lisbon" in out
    code, _out, err = run_cli(["memories", "--source", demo.root])
    assert code == 1 and "is not an agent's memory keepgui knows" in err
    code, _out, err = run_cli(["problems"])  # a command with no old form: the common one, which says what is missing
    kinds = registry.kinds()
    assert code == 1 and f"say whose memory: --agent KIND ({', '.join(kinds)}) or --source PATH" in err
    code, _out, err = run_cli(["memories", "--project", demo.claude_project])
    with_projects = ", ".join(b.kind for b in registry.backends() if b.projects)
    assert code == 1 and f"--project needs --agent KIND, one with projects: {with_projects}" in err
    code, _out, err = run_cli(["memories", "--agent", "nanobot", "--project", demo.root])
    assert code == 1 and "nanobot has no projects" in err
    monkeypatch.chdir(demo.claude_project)  # an agent with projects: the current folder
    code, out, _ = run_cli(["memories", "--agent", "claude"])
    assert code == 0 and "vps-backups.md" in out


def test_options_of_one_backend_are_refused_for_another(demo):
    code, _out, err = run_cli(["compact", *source_of(demo, "nanobot"), "--fuzzy"])
    assert code == 1 and "--fuzzy is an option of iii, not of nanobot" in err
    code, out, err = run_cli(["compact", *source_of(demo, "iii"), "--fuzzy", "--threshold", "60"])
    assert code == 0 and "0 of 1 operations selected" in out and "--fuzzy --threshold 60 --apply" in out, err


def test_compact_applies_and_undoes_through_the_protocol(demo):
    where = source_of(demo, "nanobot")
    before = read(os.path.join(demo.nanobot, "keep.md"))
    code, out, _ = run_cli(["compact", *where, "--apply", "--json"])
    applied = json.loads(out)
    assert code == 0 and applied["journal"] and read(os.path.join(demo.nanobot, "keep.md")) != before
    code, out, _ = run_cli(["compact", *where, "--undo"])
    assert code == 0 and out.startswith("undone:")
    assert read(os.path.join(demo.nanobot, "keep.md")) == before
    code, _out, err = run_cli(["compact", *where, "--undo"])
    assert code == 1 and "left to undo" in err


def test_review_restores_what_the_agent_removed(demo):
    where = source_of(demo, "claude")
    run_cli(["memories", *where])  # the first look is the baseline
    memory = registry.open_source("claude", demo.claude_project).bank(
        registry.open_source("claude", demo.claude_project).scan().names[0]
    )
    target = os.path.join(memory.memory_dir, "vps-backups.md")
    data = read(target)
    os.remove(target)  # the agent deletes one
    code, out, _ = run_cli(["review", *where])
    assert code == 0 and "restore some: keepgui review --agent claude" in out
    code, out, _ = run_cli(["review", *where, "--restore", "all", "--json"])
    assert code == 0 and json.loads(out)["journal"] and read(target) == data
    code, out, _ = run_cli(["review", *where, "--undo"])
    assert code == 0 and not os.path.exists(target)


# ---------------------------------------------------------------------- the old command lines


def old_forms(demo) -> list[tuple[list[str], str]]:
    """Each old command line (run on the demo) and what it says replaces it."""
    dd = ["--data-dir", demo.iii, "--reload-command", ""]
    ws = ["--workspace", demo.nanobot]
    proj = ["--project", demo.claude_project]
    return [
        (["memories", "main", *dd], f"memories --agent iii --source {demo.iii} --bank main"),
        (["save", "main", "Alias test memory", *dd], "keep --agent iii --source"),
        (["edit", "main", "fp", "--text", "x", *dd], "edit --agent iii --source"),
        (["pin", "main", "fp", *dd], "pin --agent iii"),
        (["pin", "main", "fp", "--off", *dd], "unpin --agent iii"),
        (["delete", "main", "fp", *dd], "forget --agent iii"),
        (["restore", "main", "fp", *dd], "restore --agent iii"),
        (["compact", "--bank", "main", *dd], "compact --agent iii"),
        (["keep", "Has a second cat named Figo", *ws], f"keep --agent nanobot --source {demo.nanobot} TEXT"),
        (["entries", *ws], "memories --agent nanobot"),
        (["forget", "Has a second cat named Figo", *ws], "forget --agent nanobot"),
        (["unforget", *ws], "restore --agent nanobot"),
        (["nanobot-preview", *ws], "context --agent nanobot"),
        (["compact", *ws], "compact --agent nanobot"),
        (["review", *ws], "review --agent nanobot"),
        (["claude", "memories", *proj], f"memories --agent claude --project {demo.claude_project}"),
        (["claude", "keep", "Alias test fact", *proj], "keep TEXT --agent claude"),
        (["claude", "review", *proj], "review --agent claude"),
        (["claude", "compact", *proj], "compact --agent claude"),
        (["context", *proj], "context --agent claude"),
        (["memories", *ws], "--agent nanobot --source DIR"),  # a window option given to a common command
        (["problems", "--data-dir", demo.iii], "--agent iii --source DIR"),
    ]


def test_every_old_command_line_still_works_and_says_what_replaces_it(demo):
    for argv, now in old_forms(demo):
        code, _out, err = run_cli(argv)
        assert OLD_FORM in err and now in err, (argv, err)
        assert "Traceback" not in err and code in (0, 1), (argv, err)
        if code == 1:  # only the ones given an id that is not there (fp) fail, and say why
            assert "fp" in argv and ("not found" in err or "no memory" in err), (argv, err)


def test_the_new_command_of_an_old_line_works(demo):
    """What the note names runs: ``memories --agent iii --source D --bank main`` lists what ``memories main`` did."""
    code, old, _ = run_cli(["memories", "main", "--data-dir", demo.iii])
    code2, new, _ = run_cli(["memories", "--agent", "iii", "--source", demo.iii, "--bank", "main"])
    assert code == code2 == 0
    assert [line.split()[0] for line in old.splitlines()] == [line.split()[0] for line in new.splitlines()]


@pytest.mark.parametrize("kind", [b.kind for b in registry.declared() if b.projects and not b.home_is_source])
def test_a_project_of_an_agent_with_no_home_says_where_the_home_was_looked_for(kind, tmp_path, monkeypatch):
    empty = tmp_path / "home"
    project = tmp_path / "project"
    os.makedirs(empty)
    os.makedirs(project)
    monkeypatch.setenv("HOME", str(empty))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = registry.backend(kind).home(os.environ)
    code, out, err = run_cli(["memories", "--agent", kind, "--project", str(project), "--json"])
    assert code == 0 and out == ""
    assert f"{home} does not exist (where --agent {kind} looks for the agent's own folder)" in err
    assert os.listdir(empty) == [] and os.listdir(project) == []
