"""The journal and the inbox with real processes: an agent-like writer changes memory files while
keepgui runs (``keepgui watch``) and while it does not, and ``keepgui inbox`` lists, accepts and
reverts what it did (each command a process of its own, with a data folder of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

AGENT = r"""
import sys
path, how, text = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
if how == "append":
    lines.append(text + "\n")
elif how == "drop":
    lines = [l for l in lines if text not in l]
elif how == "edit":
    old, new = text.split("=>")
    lines = [l.replace(old, new) for l in lines]
with open(path, "w", encoding="utf-8") as fh:  # the agent's own way: truncate and write
    fh.write("".join(lines))
"""


def agent(path: str, how: str, text: str) -> None:
    """An agent-like process changing a memory file (read, modify, write in place)."""
    subprocess.run([sys.executable, "-c", AGENT, path, how, text], check=True, timeout=60)


@pytest.fixture
def place(tmp_path, demo_copy):
    """A data folder of keepgui's own and the demo's nanobot workspace."""
    env = dict(os.environ, KEEPGUI_HOME=str(tmp_path / "home"), PYTHONPATH=ROOT)
    return env, demo_copy.nanobot


def keepgui(env: dict[str, str], *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", *argv], env=env, capture_output=True, text=True, timeout=120
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def listed(env: dict[str, str], *argv: str) -> list[dict]:
    return json.loads(keepgui(env, "inbox", "--json", *argv).stdout)["items"]


def test_changes_made_while_keepgui_was_not_running_arrive_as_one_change(place):
    env, workspace = place
    keep = os.path.join(workspace, "keep.md")
    assert listed(env, "--source", workspace) == []  # first seen: a baseline, nothing in the inbox
    agent(keep, "append", "- The agent learned a fact")
    agent(keep, "edit", "Birthday is 1988-03-14=>Birthday is 14 March 1988")
    agent(keep, "drop", "Partner's name is Sam; they met in Porto")
    items = listed(env, "--source", workspace)
    assert len(items) == 1
    item = items[0]
    assert (item["agent"], item["kind"], item["path"]) == ("nanobot", "changed", os.path.realpath(keep))
    kinds = {(e["kind"], tuple(e["before"]), tuple(e["after"])) for e in item["entries"]}
    assert ("added", (), ("- The agent learned a fact",)) in kinds
    assert ("edited", ("- Birthday is 1988-03-14",), ("- Birthday is 14 March 1988",)) in kinds
    assert ("removed", ("- Partner's name is Sam; they met in Porto",), ()) in kinds
    # every other command records and compares just the same: no listing needed in between
    agent(keep, "append", "- Another fact")
    keepgui(env, "memories", "--source", workspace, "--json")
    agent(keep, "append", "- A third fact")
    assert len(listed(env, "--source", workspace)) == 3


def test_keepguis_own_writes_are_not_in_the_inbox(place):
    env, workspace = place
    assert listed(env, "--source", workspace) == []
    keepgui(env, "keep", "--source", workspace, "Kept by keepgui itself")
    assert listed(env, "--source", workspace) == []
    agent(os.path.join(workspace, "keep.md"), "append", "- by the agent")
    assert [e["after"] for e in listed(env, "--source", workspace)[0]["entries"]] == [["- by the agent"]]


def test_watch_records_every_version_while_it_runs(place):
    env, workspace = place
    keep = os.path.join(workspace, "keep.md")
    keepgui(env, "watch", "--once", "--source", workspace)  # the baseline
    watch = subprocess.Popen(
        [sys.executable, "-m", "keepgui", "watch", "--source", workspace, "--interval", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)  # started and looked once
        for n in range(3):
            agent(keep, "append", f"- fact {n} while keepgui watches")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(listed_quietly(env, workspace)) < n + 1:
                time.sleep(0.3)
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    items = listed(env, "--source", workspace)
    assert [i["entries"][0]["after"] for i in items] == [[f"- fact {n} while keepgui watches"] for n in (2, 1, 0)]


def listed_quietly(env: dict[str, str], workspace: str) -> list[dict]:
    """What the journal holds, without syncing (the watcher's record only)."""
    from keepgui.core import inbox
    from keepgui.core.journal import Journal

    journal = Journal(os.path.join(env["KEEPGUI_HOME"], "data", "journal"))
    return [i.to_obj() for i in inbox.changes(journal, sources=[workspace])]


def test_revert_keeps_what_the_agent_wrote_after_and_accept_empties_the_inbox(place):
    env, workspace = place
    keep = os.path.join(workspace, "keep.md")
    listed(env, "--source", workspace)
    agent(keep, "edit", "Birthday is 1988-03-14=>Birthday is unknown")
    agent(keep, "append", "- Bad fact the agent invented")
    first = listed(env, "--source", workspace)[0]
    agent(keep, "append", "- A later fact")  # written after the change being reverted
    keepgui(env, "inbox", "revert", first["id"], "--entry", "2")
    text = read(keep)
    assert "- Bad fact the agent invented" not in text
    assert "Birthday is unknown" in text and "- A later fact" in text
    keepgui(env, "inbox", "revert", first["id"])
    text = read(keep)
    assert "Birthday is 1988-03-14" in text and "- A later fact" in text
    assert [i["id"] for i in listed(env, "--source", workspace)] != [first["id"]]
    keepgui(env, "inbox", "accept", "all", "--source", workspace)
    assert listed(env, "--source", workspace) == []


def test_entries_reverted_one_by_one_are_marked_and_the_last_one_ends_the_change(place):
    """A change's entries reverted one at a time: the listing marks each as reverted since (the other
    still waits), and reverting the last takes the change out of the inbox (it stayed there whole)."""
    env, workspace = place
    keep = os.path.join(workspace, "keep.md")
    listed(env, "--source", workspace)
    agent(keep, "edit", "Birthday is 1988-03-14=>Birthday is unknown")
    agent(keep, "append", "- Bad fact the agent invented")
    (item,) = listed(env, "--source", workspace)
    assert [e["reverted"] for e in item["entries"]] == [False, False]
    keepgui(env, "inbox", "revert", item["id"], "--entry", "2")
    (still,) = listed(env, "--source", workspace)
    assert still["id"] == item["id"] and [e["reverted"] for e in still["entries"]] == [False, True]
    assert "(reverted since)" in keepgui(env, "inbox", "--source", workspace).stdout
    keepgui(env, "inbox", "revert", item["id"], "--entry", "1")
    assert "Birthday is 1988-03-14" in read(keep) and "Bad fact" not in read(keep)
    assert listed(env, "--source", workspace) == []


def test_a_revert_that_cannot_merge_is_refused_and_writes_nothing(place):
    env, workspace = place
    keep = os.path.join(workspace, "keep.md")
    listed(env, "--source", workspace)
    agent(keep, "edit", "Birthday is 1988-03-14=>Birthday is in March")
    item = listed(env, "--source", workspace)[0]
    agent(keep, "edit", "Birthday is in March=>Birthday is on the 14th of March")
    before = read(keep)
    done = keepgui(env, "inbox", "revert", item["id"], check=False)
    assert done.returncode == 1
    assert "changed again" in done.stderr and "nothing was written" in done.stderr
    assert read(keep) == before


def test_staged_writes_sit_in_the_same_list_and_entries_are_the_backends_own(tmp_path, demo_copy):
    env = dict(os.environ, KEEPGUI_HOME=str(tmp_path / "home"), PYTHONPATH=ROOT)
    home = demo_copy.hermes
    staged = [i for i in listed(env, "--source", home) if i["kind"] == "approval"]
    assert len(staged) == 1 and staged[0]["entries"][0]["kind"] == "added"
    text = staged[0]["entries"][0]["after"][0]
    keepgui(env, "inbox", "approve", staged[0]["id"], "--source", home)
    memory = os.path.join(home, "memories", "MEMORY.md")
    assert text in read(memory)
    assert listed(env, "--source", home) == []  # keepgui's own write (the approval) is no change to review
    # an agent adds one entry of two lines, in Hermes's own format: one entry, not two lines
    with open(memory, "a", encoding="utf-8") as fh:
        fh.write("\n§\nFirst line of a new entry\nand its second line")
    (item,) = listed(env, "--source", home)
    assert [(e["kind"], e["after"]) for e in item["entries"]] == [
        ("added", ["First line of a new entry\nand its second line"])
    ]
    out = json.loads(keepgui(env, "inbox", "--json", "--source", home).stdout)
    assert 0 < out["journal"]["bytes"] <= out["journal"]["cap"]


def test_files_an_agent_deleted_come_back_with_their_index_lines(tmp_path, demo_copy):
    """Auto Dream deleting topic files and their index lines (claude-code #47959): each deletion is an
    item of the inbox, and reverting them puts every file and line back."""
    env = dict(os.environ, KEEPGUI_HOME=str(tmp_path / "home"), PYTHONPATH=ROOT)
    home = os.path.join(demo_copy.claude_home, ".claude")
    assert listed(env, "--source", home) == []
    (memory,) = [
        os.path.join(p, "memory")
        for p in (os.path.join(home, "projects", n) for n in os.listdir(os.path.join(home, "projects")))
    ]
    names = sorted(n for n in os.listdir(memory) if n != "MEMORY.md")[:2]
    originals = {n: read(os.path.join(memory, n)) for n in names}
    index = read(os.path.join(memory, "MEMORY.md"))
    code = "import os, sys; [os.unlink(p) for p in sys.argv[1:]]"
    subprocess.run([sys.executable, "-c", code, *(os.path.join(memory, n) for n in names)], check=True)
    agent(os.path.join(memory, "MEMORY.md"), "drop", f"({names[0]})")
    agent(os.path.join(memory, "MEMORY.md"), "drop", f"({names[1]})")
    items = listed(env, "--source", home)
    assert sorted(i["kind"] for i in items) == ["changed", "deleted", "deleted"]
    for item in items:
        keepgui(env, "inbox", "revert", item["id"])
    assert {n: read(os.path.join(memory, n)) for n in names} == originals
    assert read(os.path.join(memory, "MEMORY.md")) == index
    assert listed(env, "--source", home) == []


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()
