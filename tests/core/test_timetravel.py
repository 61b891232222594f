"""Time travel with real processes: a journal written by real syncs of a changing source (agent-like writes
and keepgui's own), then ``--at`` answers compared byte for byte with what ``memories --json`` and
``context --json`` printed at that moment — for every backend, by the same test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime

import pytest

from keepgui.core.errors import InvalidInput
from keepgui.core.timetravel import parse_when
from tests.conftest import ROOT

# kind -> (how the command names the source, HOME (the demo place), the memory file the agent edits)
SOURCES = {
    "iii": (lambda c: ["--source", c.iii, "--bank", "coding"], None, "/coding/rules/style.md"),
    "nanobot": (lambda c: ["--source", c.nanobot], None, "/keep.md"),
    "hermes": (lambda c: ["--source", c.hermes], None, "/hermes/memories/MEMORY.md"),
    "claude": (lambda c: ["--agent", "claude", "--project", c.claude_project], "claude_home", "/memory/MEMORY.md"),
    "codex": (lambda c: ["--agent", "codex", "--project", c.codex_project], "codex_home", "/api/AGENTS.md"),
    "gemini": (lambda c: ["--agent", "gemini", "--project", c.gemini_project], "gemini_home", "/.gemini/GEMINI.md"),
}
QUERY = {"iii": ["--query", "tests"]}


HELD = (
    "import runpy, sys, time; held = int(sys.argv.pop(1)); time.time_ns = lambda: held; sys.argv[0] = 'keepgui';"
    "runpy.run_module('keepgui', run_name='__main__', alter_sys=True)"
)
"""keepgui with its clock held at a moment (ns): what it answers is what it answered at that moment."""


def keepgui(env: dict[str, str], *argv: str, check: bool = True, clock: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (asked at ``clock``, an ISO moment, when given: its clock held there)."""
    held = ["-c", HELD, str(parse_when(clock) * 1_000_000)] if clock else ["-m", "keepgui"]
    done = subprocess.run(
        [sys.executable, *held, *argv], env=env, capture_output=True, text=True, timeout=180, cwd=env["HOME"]
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def stamp() -> str:
    """Now as ISO 8601 (local time, to the microsecond), after the clock moved on from the last write."""
    time.sleep(0.05)
    moment = datetime.now().astimezone().isoformat()
    time.sleep(0.05)
    return moment


def agent_edit(path: str, marker: str) -> None:
    """An agent-like process rewriting one memory file in place (a line added after its first one)."""
    script = (
        "import sys; p, m = sys.argv[1], sys.argv[2]; t = open(p, encoding='utf-8').read().split('\\n', 1);"
        "open(p, 'w', encoding='utf-8').write(t[0] + '\\n' + m + '\\n' + (t[1] if len(t) > 1 else ''))"
    )
    subprocess.run([sys.executable, "-c", script, path, marker], check=True, timeout=60)


@pytest.fixture
def place(tmp_path, demo_copy, request):
    kind = request.param
    named, home_place, _edited = SOURCES[kind]
    home = demo_copy.places[home_place] if home_place else str(tmp_path / "user")
    if kind == "codex":
        home = os.path.dirname(home)
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, KEEPGUI_HOME=str(tmp_path / "kg"), PYTHONPATH=ROOT, HOME=home)
    env.pop("CODEX_HOME", None)
    env.pop("CLAUDE_CONFIG_DIR", None)
    return kind, env, named(demo_copy)


def answers(kind: str, env: dict[str, str], where: list[str], *at: str, clock: str = "") -> tuple[str, str]:
    memories = keepgui(env, "memories", *where, "--json", *at, clock=clock).stdout
    context = keepgui(env, "context", *where, "--json", *at, *QUERY.get(kind, []), clock=clock).stdout
    return memories, context


def memory_file(kind: str, env: dict[str, str]) -> str:
    """The memory file the agent edits (one the journal records)."""
    from keepgui.core.journal import Journal

    journal = Journal(os.path.join(env["KEEPGUI_HOME"], "data", "journal"))
    files = sorted(p for p in journal.tracked() if p.endswith(SOURCES[kind][2]) and os.path.isfile(p))
    assert files, "the journal records the source's files"
    return files[0]


@pytest.mark.parametrize(
    "place",
    # Claude Code's project (its memory outside the folder, under a slug of the path) runs by default
    [k if k == "claude" else pytest.param(k, marks=pytest.mark.slow) for k in sorted(SOURCES)],
    indirect=True,
)
def test_at_answers_are_the_bytes_the_source_gave_then(place):
    """Each look is asked at a known moment (its clock held there: recall's scores decay with the time of
    asking), and ``--at`` that moment, asked later, prints the same bytes."""
    kind, env, where = place
    t1 = stamp()
    first = answers(kind, env, where, clock=t1)  # the first look records a baseline
    path = memory_file(kind, env)
    agent_edit(path, f"- travel marker one for {kind}")
    keepgui(env, "keep", *where, "--stand-alone", f"The {kind} agent learned the travel fact", check=False)
    t2 = stamp()
    second = answers(kind, env, where, clock=t2)
    agent_edit(path, f"- travel marker two for {kind}")
    t3 = stamp()
    third = answers(kind, env, where, clock=t3)
    assert second != first and third != second  # each moment is a different answer
    got = {at: answers(kind, env, where, "--at", at) for at in (t1, t2, t3)}
    assert answers(kind, env, where, "--at", "now")[0].splitlines() == third[0].splitlines()
    for at, then in ((t1, first), (t2, second), (t3, third)):
        assert got[at][0].splitlines() == then[0].splitlines()  # memories --json, line by line
        assert got[at][1] == then[1]  # context --json, byte for byte
    with open(path, encoding="utf-8") as fh:
        assert f"travel marker two for {kind}" in fh.read()  # the copy never wrote through to the source


@pytest.mark.parametrize("place", ["nanobot"], indirect=True)
def test_a_time_before_the_record_is_said_plainly(place):
    _kind, env, where = place
    keepgui(env, "memories", *where)
    done = keepgui(env, "memories", *where, "--at", "1d", check=False)
    assert done.returncode == 1
    assert "starts at" in done.stderr and "before that" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("place", ["nanobot"], indirect=True)
def test_restore_at_puts_an_entry_and_a_file_back_through_the_backend(place):
    _kind, env, where = place
    rows = [json.loads(line) for line in keepgui(env, "memories", *where, "--json").stdout.splitlines()]
    t1 = stamp()
    keep = os.path.join(where[1], "keep.md")
    victim = rows[0]["text"]
    with open(keep, encoding="utf-8") as fh:
        original = fh.read()
    with open(keep, "w", encoding="utf-8") as fh:  # the agent drops a fact and adds one
        fh.write("".join(line + "\n" for line in original.splitlines() if victim not in line) + "- A later fact\n")
    keepgui(env, "memories", *where)  # recorded
    keepgui(env, "restore", *where, "--at", t1, rows[0]["id"])
    now = [json.loads(line)["text"] for line in keepgui(env, "memories", *where, "--json").stdout.splitlines()]
    assert victim in now  # the entry is back ...
    assert any("A later fact" in text for text in now)  # ... and what the agent wrote after stays
    keepgui(env, "restore", *where, "--at", t1, "--file", keep)
    with open(keep, encoding="utf-8") as fh:
        assert fh.read() == original
    again = keepgui(env, "restore", *where, "--at", t1, "--file", keep)
    assert "nothing to restore" in again.stderr


def test_times_are_read_as_people_write_them():
    now = 1_800_000_000_000
    assert parse_when("2h", now) == now - 7_200_000
    assert parse_when("3d", now) == now - 3 * 86_400_000
    assert parse_when("1w", now) == now - 7 * 86_400_000
    assert parse_when("now", now) == now
    assert parse_when("2027-01-15T08:00:00Z") == now
    assert parse_when("2027-01-15T10:00:00+00:00") == parse_when("2027-01-15T10:00:00Z")
    with pytest.raises(InvalidInput, match="not a time"):
        parse_when("yesterday-ish")


@pytest.mark.parametrize("place", ["nanobot"], indirect=True)
def test_context_diff_between_two_moments_names_new_memories_and_changed_files(place):
    _kind, env, where = place
    keepgui(env, "context", *where)
    t1 = stamp()
    agent_edit(os.path.join(where[1], "keep.md"), "- The agent noted a brand new travel fact")
    agent_edit(os.path.join(where[1], "memory", "MEMORY.md"), "- Dream wrote a travel summary line")
    keepgui(env, "memories", *where)
    obj = json.loads(keepgui(env, "context", *where, "--at", t1, "--diff", "now", "--json").stdout)
    # keep.md is kept but not injected (nanobot reads it through its keep skill); MEMORY.md is injected
    assert obj["memories"] == {"new": 1, "new_seen": 0, "removed": 0, "cut": 0}
    assert sorted(os.path.basename(p) for p in obj["files_changed"]) == ["MEMORY.md", "keep.md"]
    assert len(obj["sha256"]) == 2 and obj["sha256"][0] != obj["sha256"][1]
    changed = [p for p in obj["parts"].values() if p["diff"]]
    assert changed and all("+- Dream wrote a travel summary line" in p["diff"] for p in changed)
    assert all(p["added"] >= 1 and len(p["sha256"]) == 2 for p in changed)
    text = keepgui(env, "context", *where, "--at", t1, "--diff", "now").stdout
    assert "sees 0 new memories (1 more kept but not given)" in text and "changed: " in text


@pytest.mark.parametrize("place", ["claude"], indirect=True)
def test_context_diff_counts_claudes_index_cut_and_a_new_topic_by_its_index_line(place):
    """Claude Code is given MEMORY.md's first 200 lines, not the topic files: a new topic whose index line
    the agent put near the top is a new memory it sees, and the line it pushed past the cut is a memory
    still kept but no longer given — as the reminder shows (its warning names that line's file, which
    does not make it given)."""
    _kind, env, where = place
    keepgui(env, "context", *where)
    t1 = stamp()
    index = memory_file("claude", env)
    folder = os.path.dirname(index)
    with open(index, encoding="utf-8") as fh:
        lines = fh.read().splitlines(True)
    assert len(lines) > 200  # the demo's index is already past the cut
    pushed = lines[199]
    script = (
        "import os, sys; folder, index = sys.argv[1:3]; t = open(index, encoding='utf-8').read().splitlines(True);"
        "t.insert(2, '- [Deploy window](deploy-window.md) — deploys only Tue/Thu\\n');"
        "open(os.path.join(folder, 'deploy-window.md'), 'w', encoding='utf-8').write("
        "'---\\nname: Deploy window\\ntype: project\\n---\\n\\nDeploys on Tuesdays and Thursdays only.\\n');"
        "open(index, 'w', encoding='utf-8').write(''.join(t))"
    )
    subprocess.run([sys.executable, "-c", script, folder, index], check=True, timeout=60)
    obj = json.loads(keepgui(env, "context", *where, "--at", t1, "--diff", "now", "--json").stdout)
    assert obj["memories"] == {"new": 1, "new_seen": 1, "removed": 0, "cut": 1}, (obj["summary"], pushed)
    assert sorted(os.path.basename(p) for p in obj["files_changed"]) == ["MEMORY.md", "deploy-window.md"]


@pytest.mark.parametrize("place", ["claude"], indirect=True)
def test_restore_at_brings_back_a_memory_forgotten_since_under_its_own_id(place):
    kind, env, where = place
    first = json.loads(keepgui(env, "memories", *where, "--json").stdout.splitlines()[0])
    t1 = stamp()
    keepgui(env, "forget", *where, first["id"])
    assert first["id"] not in keepgui(env, "memories", *where, "--json").stdout
    done = keepgui(env, "restore", *where, "--at", t1, first["id"])
    assert f"restored {first['id']}" in done.stdout
    now = [json.loads(line) for line in keepgui(env, "memories", *where, "--json").stdout.splitlines()]
    assert [r["text"] for r in now if r["id"] == first["id"]] == [first["text"]], kind


def test_a_copy_of_the_machine_maps_its_paths_both_ways(tmp_path):
    from keepgui.core.pathmap import RootedPaths

    root = str(tmp_path / "copy")
    os.makedirs(root)
    paths = RootedPaths(root)
    inside = os.path.join(root, "home", "me", "project")
    assert paths.shown(inside) == "/home/me/project" and paths.shown(root) == os.sep
    assert paths.shown("/elsewhere/x") == "/elsewhere/x"  # not below the copy: as it is
    assert paths.local("/home/me/project") == inside
    assert paths.local(inside) == inside  # already in the copy
    assert paths.local("relative/x") == "relative/x"
    # a link the copy made to the machine's own folder leads back into the copy
    assert paths.resolved("/home/me/project/docs/a.md") == os.path.join(inside, "docs", "a.md")


@pytest.mark.parametrize("place", ["claude"], indirect=True)
def test_a_moment_is_opened_without_touching_this_process_environment(place, monkeypatch):
    """A window looks at a moment while other threads open other sources: the copy's backend gets an
    environment of its own (HOME into the copy), and ``os.environ`` stays as it was the whole time."""
    import threading

    from keepgui.core import registry
    from keepgui.core.journal import Journal
    from keepgui.core.timetravel import opened_at

    kind, env, where = place
    for name in ("HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", env["HOME"])  # this process runs as the agent's user
    then = [json.loads(line)["text"] for line in keepgui(env, "memories", *where, "--json").stdout.splitlines()]
    t1 = parse_when(stamp())
    first = json.loads(keepgui(env, "memories", *where, "--json").stdout.splitlines()[0])
    keepgui(env, "forget", *where, first["id"])  # recorded: the present lacks it
    journal = Journal(os.path.join(env["KEEPGUI_HOME"], "data", "journal"))
    project = where[-1]

    def texts(source) -> list[str]:
        bank = source.bank(source.scan().names[0])
        bank.load(full=True)
        return [r.text for r in bank.rows() if r.invalid_at is None]

    before = dict(os.environ)
    meanwhile: list[list[str]] = []
    with opened_at(journal, registry.open_source(kind, project), t1) as past:
        assert dict(os.environ) == before  # nothing process-wide moved into the copy
        other = threading.Thread(target=lambda: meanwhile.append(texts(registry.open_source(kind, project))))
        other.start()
        other.join(60)
        assert sorted(texts(past.source)) == sorted(then)  # the copy is the moment ...
    assert dict(os.environ) == before
    assert first["text"] in then and first["text"] not in meanwhile[0]  # ... the other open, meanwhile, is now
    assert sorted(meanwhile[0]) == sorted(texts(registry.open_source(kind, project)))
