"""The Hermes backend on its own (no hermes-agent needed): parsing, counts, homes and settings, writes under
the lock, forget and restore, undo refused over someone else's change, the pending queue, state.db read
without touching it, watching, compaction and review, and the CLI's functions."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from keepgui.backends.hermes.backend import HermesSource, discover, identify
from keepgui.backends.hermes.commands import approve, keep, pending, reject
from keepgui.backends.hermes.context import memory_part, project_context, session_context
from keepgui.backends.hermes.entries import parse, percent, read_state
from keepgui.backends.hermes.home import load_settings, resolve_home
from keepgui.backends.hermes.statedb import read_sessions
from keepgui.backends.hermes.writes import Refused
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput
from keepgui.core.history import History


def write(path, data) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def home(tmp_path):
    root = tmp_path / ".hermes"
    write(root / "memories" / "MEMORY.md", "Tea.\n§\nCoffee.\n§\nMilk.")
    write(root / "memories" / "USER.md", "User is Ada.")
    return root


def open_source(tmp_path, root) -> HermesSource:
    return HermesSource(str(root), environ={"HOME": str(tmp_path)}, history=History(str(tmp_path / "history")))


# ---------------------------------------------------------------------- format


@pytest.mark.parametrize(
    ("text", "entries"),
    [
        ("Tea.\n§\nCoffee.\n", ["Tea.", "Coffee."]),
        ("Tea.\r\n§\r\nCoffee.", ["Tea.", "Coffee."]),
        ("  Tea.  \n§\n\n§\nTea.\n§\n", ["Tea."]),
        ("Tea.\n§ \nCoffee.", ["Tea.\n§ \nCoffee."]),
        ("Tea.\n§\n§\nCoffee.", ["Tea.", "§\nCoffee."]),
        ("Tea.\n§", ["Tea.\n§"]),
        ("\u200bTea.\u00a0", ["\u200bTea."]),
    ],
)
def test_entries_are_parsed_as_hermes_parses_them(text, entries):
    assert parse(text.replace("\r\n", "\n")) == entries


def test_percent_uses_hermes_float_division_and_counts_differ_when_blocked():
    assert (percent(29, 100), percent(57, 100), percent(638, 2200), percent(1254, 2200)) == (28, 56, 28, 56)
    assert percent(9000, 2200) == 100 and percent(5, 0) == 0
    state = read_state("memory", "Check in with Sam on Mondays.\n§\nTea.".encode(), 2200)
    assert state.tool_count == 36 and state.header_count > state.tool_count
    assert state.blocked[0].findings == ("c2_heartbeat",)
    bad = read_state("user", b"ok \xff", 1375)
    assert bad.undecodable and "loads no memory at all" in bad.problem


def test_memory_part_is_anchored_on_a_header_not_on_a_rule_line():
    rule = "═" * 46
    prompt = (
        f"{rule}\nSOUL with rules\n{rule}\n\n{rule}\nUSER PROFILE (who the user is) [0% — 1/1,375 chars]\n{rule}\nx"
    )
    assert memory_part(prompt + "\n\nConversation started: Monday") == prompt[prompt.index(f"{rule}\nUSER") :]
    assert memory_part("no memory here\n\nConversation started: x") is None


# ---------------------------------------------------------------------- homes and settings


def test_home_resolution_follows_hermes(tmp_path):
    native = tmp_path / ".hermes"
    os.makedirs(native / "profiles" / "work")
    env = {"HOME": str(tmp_path)}
    assert resolve_home(env).home == str(native)
    write(native / "active_profile", "work\n")
    found = resolve_home(env)
    assert (found.home, found.profile) == (str(native / "profiles" / "work"), "work")
    assert resolve_home({**env, "HERMES_S6_SUPERVISED_CHILD": "1"}).home == str(native)
    docker = tmp_path / "opt" / "data"
    os.makedirs(docker)
    assert resolve_home({**env, "HERMES_HOME": str(docker)}).home == str(docker)  # ~/.hermes ignored
    profile = docker / "profiles" / "coder"
    assert resolve_home({**env, "HERMES_HOME": str(profile)}).root == str(docker)
    write(native / "active_profile", "gone")
    assert "does not exist" in resolve_home(env).problem


def test_settings_merge_expand_and_read_like_hermes(tmp_path):
    home = tmp_path / "h"
    write(
        home / "config.yaml",
        'memory:\n  user_profile_enabled: "false"\n  memory_char_limit: ${LIMIT}\n  write_approval: Approve\n',
    )
    settings = load_settings(str(home), {"LIMIT": "900"})
    assert settings.user_profile_enabled  # a quoted "false" is a non-empty string: on
    assert settings.limit("memory") == "900" and "not a number" in settings.limit_problem()
    assert settings.write_approval and settings.limit("user") == 1375
    write(home / "config.yaml", "memory: [unclosed\n")
    broken = load_settings(str(home), {})
    assert broken.problems and broken.memory_enabled
    managed = tmp_path / "managed"
    write(managed / "config.yaml", "memory:\n  memory_enabled: false\n")
    write(home / "config.yaml", "memory:\n  memory_enabled: true\n")
    assert not load_settings(str(home), {"HERMES_MANAGED_DIR": str(managed)}).memory_enabled


def test_registry_sees_homes_and_profiles(tmp_path, home):
    assert identify(str(home)).kind == "hermes"
    assert identify(str(tmp_path)).kind is None
    os.makedirs(home / "profiles" / "work" / "memories")
    assert [f.path for f in discover({"HOME": str(tmp_path)})] == [str(home)]
    assert open_source(tmp_path, home).scan().names == ("default", "work")


def test_project_context_is_picked_in_hermes_order(tmp_path):
    repo = tmp_path / "repo"
    sub = repo / "pkg"
    os.makedirs(repo / ".git")
    write(sub / "AGENTS.md", "agents")
    write(repo / "HERMES.md", "hermes")
    assert project_context(str(sub)).path == str(repo / "HERMES.md")
    write(repo / "HERMES.md", "   \n")  # empty after stripping: the next kind is taken
    assert project_context(str(sub)).path == str(sub / "AGENTS.md")


# ---------------------------------------------------------------------- writes


def test_keep_writes_hermes_format_keeps_the_mode_and_undo_is_refused_over_a_later_change(tmp_path, home):
    path = home / "memories" / "MEMORY.md"
    write(path, "  Tea. \r\n§\r\n\r\n§\r\nCoffee.\r\n")
    os.chmod(path, 0o640)
    source = open_source(tmp_path, home)
    bank = source.bank("default")
    bank.load()
    change = bank.keep("  Milk.  ")
    assert read(path) == "Tea.\n§\nCoffee.\n§\nMilk.".encode()
    assert oct(os.stat(path).st_mode & 0o777) == "0o640"
    assert os.path.exists(str(path) + ".lock")
    assert not bank.keep("Milk.").written  # an exact duplicate: nothing written
    write(path, read(path) + "\n§\nSugar.".encode())  # the agent writes meanwhile
    with pytest.raises(Conflict):
        change.undo()
    assert read(path).endswith(b"Sugar.")


def test_a_write_based_on_an_old_read_is_refused(tmp_path, home):
    bank = open_source(tmp_path, home).bank("default")
    bank.load()
    write(home / "memories" / "MEMORY.md", "Tea.\n§\nCoffee.\n§\nMilk.\n§\nHermes wrote this.")
    key = next(r.id for r in bank.rows() if r.text == "Coffee.")
    with pytest.raises(Conflict):
        bank.edit(key, "text", "Espresso.")
    assert read(home / "memories" / "MEMORY.md").endswith(b"Hermes wrote this.")


def test_over_the_limit_or_blocked_is_said_first_and_can_be_forced(tmp_path, home):
    write(home / "config.yaml", "memory:\n  memory_char_limit: 30\n")
    bank = open_source(tmp_path, home).bank("default")
    bank.load()
    refused = bank.keep("A long fact that will not fit under thirty.")
    assert not refused.written and "over Hermes's limit" in refused.message
    with pytest.raises(Refused):
        bank.rewrite("memory", lambda e: ([*e, "check in with Sam"], ["check in with Sam"]), "Add")
    forced = bank.keep("A long fact that will not fit under thirty.", force=True)
    assert forced.written and bank.summary().compaction_due


def test_forget_and_restore_put_the_entry_back_between_its_neighbours(tmp_path, home):
    bank = open_source(tmp_path, home).bank("default")
    bank.load()
    key = next(r.id for r in bank.rows() if r.text == "Coffee.")
    bank.set_live([key], False)
    assert read(home / "memories" / "MEMORY.md") == "Tea.\n§\nMilk.".encode()
    retired = next(r for r in bank.rows() if r.invalid_at is not None)
    assert retired.text == "Coffee."
    bank.set_live([retired.id], True)
    assert read(home / "memories" / "MEMORY.md") == "Tea.\n§\nCoffee.\n§\nMilk.".encode()
    assert all(r.invalid_at is None for r in bank.rows())
    moved = bank.move([next(r.id for r in bank.rows() if r.text == "Milk.")], -2)
    assert read(home / "memories" / "MEMORY.md") == "Milk.\n§\nTea.\n§\nCoffee.".encode()
    moved.undo()
    assert read(home / "memories" / "MEMORY.md") == "Tea.\n§\nCoffee.\n§\nMilk.".encode()
    stamp = fsio.current_stamp(str(home / "memories" / "MEMORY.md"))
    edge = bank.move([next(r.id for r in bank.rows() if r.text == "Milk.")], 1)  # last of MEMORY.md already
    assert not edge.written and edge.message == "already the last entry of MEMORY.md"
    assert fsio.current_stamp(str(home / "memories" / "MEMORY.md")) == stamp


def test_keepgui_waits_for_a_process_that_holds_the_lock(tmp_path, home):
    lock = str(home / "memories" / "MEMORY.md.lock")
    code = (
        "import fcntl, sys, time\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\ntime.sleep(1.5)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, lock], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(fsio.Busy), fsio.sidecar_lock(lock, timeout=0.2):
        pass
    bank = open_source(tmp_path, home).bank("default")
    bank.load()
    start = time.monotonic()
    assert bank.keep("After the lock.").written  # waits for the holder (up to 3 s), then writes
    assert time.monotonic() - start > 0.5
    holder.wait(timeout=10)
    with open(lock, "a+") as fh:  # and the lock is free again
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)


# ---------------------------------------------------------------------- pending


def stage(home, ident, payload, at):
    record = {
        "id": ident,
        "subsystem": "memory",
        "action": payload["action"],
        "summary": f"{payload['action']} x",
        "origin": "background_review",
        "created_at": at,
        "payload": payload,
    }
    write(home / "pending" / "memory" / f"{ident}.json", json.dumps(record, indent=2))


def test_pending_writes_are_computed_in_order_approved_together_and_undone(tmp_path, home):
    stage(home, "aaaa0001", {"action": "add", "target": "memory", "content": "Sugar."}, 1.0)
    stage(home, "aaaa0002", {"action": "replace", "target": "memory", "old_text": "Sugar", "content": "Honey."}, 2.0)
    stage(home, "aaaa0003", {"action": "remove", "target": "memory", "old_text": "nothing like this"}, 3.0)
    source = open_source(tmp_path, home)
    writes = source.approvals().pending()
    assert [w.id for w in writes] == ["aaaa0001", "aaaa0002", "aaaa0003"]
    assert writes[1].after.endswith("Honey.") and writes[1].applicable  # computed on top of the first
    assert "No entry matched" in writes[2].problem
    with pytest.raises(InvalidInput):
        approve(source, ["all"])  # one cannot be applied: nothing is
    assert read(home / "memories" / "MEMORY.md") == "Tea.\n§\nCoffee.\n§\nMilk.".encode()
    change = source.approvals().approve(["aaaa0001", "aaaa0002"])
    assert read(home / "memories" / "MEMORY.md").endswith("§\nHoney.".encode())
    assert sorted(os.listdir(home / "pending" / "memory")) == ["aaaa0003.json"]
    change.undo()
    assert read(home / "memories" / "MEMORY.md") == "Tea.\n§\nCoffee.\n§\nMilk.".encode()
    assert len(os.listdir(home / "pending" / "memory")) == 3
    raw = read(home / "pending" / "memory" / "aaaa0003.json")
    rejected = source.approvals().reject(["aaaa0003"])
    assert "Rejected" in reject(source, ["aaaa0001"])
    rejected.undo()
    assert read(home / "pending" / "memory" / "aaaa0003.json") == raw
    objs, lines = pending(source)
    assert [o["id"] for o in objs] == ["aaaa0002", "aaaa0003"] and lines


def test_cli_keep_and_context(tmp_path, home):
    source = open_source(tmp_path, home)
    message, status = keep(source, "default", "From the command line.")
    assert status == 0 and "From the command line." in message
    context = session_context(str(tmp_path), {"HOME": str(tmp_path)})
    obj = context.to_obj()
    assert obj["memory_prompt"].endswith(
        "From the command line.\n\n"
        + "═" * 46
        + "\nUSER PROFILE (who the user is) [0% — 12/1,375 chars]\n"
        + "═" * 46
        + "\nUser is Ada."
    )
    assert obj["files"]["MEMORY.md"]["tool_count"] == len("Tea.\n§\nCoffee.\n§\nMilk.\n§\nFrom the command line.")


# ---------------------------------------------------------------------- state.db


def test_state_db_is_read_from_a_copy_while_a_writer_commits(tmp_path, home):
    db = str(home / "state.db")
    writer = sqlite3.connect(db, check_same_thread=False)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute(
        "CREATE TABLE sessions (id TEXT, source TEXT, model TEXT, system_prompt TEXT, "
        "parent_session_id TEXT, started_at REAL, ended_at REAL, end_reason TEXT, title TEXT)"
    )
    writer.commit()
    stop = threading.Event()

    def commit_rows() -> None:
        n = 0
        while not stop.is_set() and n < 400:
            writer.execute(
                "INSERT INTO sessions VALUES (?, 'cli', 'm', ?, NULL, ?, NULL, NULL, NULL)",
                (f"s{n}", f"p{n}", float(n)),
            )
            writer.commit()
            n += 1

    thread = threading.Thread(target=commit_rows)
    thread.start()
    seen = []
    try:
        for _ in range(20):
            seen.append(len(read_sessions(str(home), 1000)))
    finally:
        stop.set()
        thread.join()
    assert seen == sorted(seen)  # every read saw a consistent, growing table
    final = read_sessions(str(home), 1000)
    assert len(final) == writer.execute("SELECT count(*) FROM sessions").fetchone()[0]
    assert final[0].system_prompt == f"p{len(final) - 1}"
    writer.close()


def test_a_read_of_a_quiet_state_db_creates_nothing_in_the_home(tmp_path, home):
    """SQLite's own read-only open of a WAL database creates -wal and -shm beside it; keepgui's never does."""
    db = str(home / "state.db")
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE sessions (id TEXT, source TEXT, model TEXT, system_prompt TEXT, "
        "parent_session_id TEXT, started_at REAL, ended_at REAL, end_reason TEXT, title TEXT)"
    )
    conn.execute("INSERT INTO sessions VALUES ('a', 'cli', 'm', 'prompt', NULL, 1.0, NULL, NULL, NULL)")
    conn.commit()
    conn.close()  # a clean close checkpoints and removes the WAL
    listed = sorted(os.listdir(home))
    assert [s.system_prompt for s in read_sessions(str(home))] == ["prompt"]
    assert sorted(os.listdir(home)) == listed
    probe = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    probe.execute("SELECT count(*) FROM sessions").fetchone()
    probe.close()
    assert sorted(os.listdir(home)) != listed  # why keepgui does not open it this way


# ---------------------------------------------------------------------- watching, compaction, review


def test_classify_names_what_changed(tmp_path, home):
    source = open_source(tmp_path, home)
    plan = source.classify(
        [("memories", "MEMORY.md"), ("pending", "memory", "x.json"), ("state.db-wal",), ("profiles", "new")],
        ["default"],
    )
    assert plan.refresh == frozenset({"default"}) and plan.rescan
    assert plan.documents == {"default": frozenset({"MEMORY.md"})}


def test_compaction_plan_gets_under_the_limit_and_review_restores_a_dropped_entry(tmp_path, home):
    entries = [f"Fact {i}: something worth keeping about the project." for i in range(8)]
    entries.insert(3, "Fact 1: something worth keeping about the project, again.")
    write(home / "memories" / "MEMORY.md", "\n§\n".join(entries))
    write(home / "config.yaml", "memory:\n  memory_char_limit: 300\n")
    bank = open_source(tmp_path, home).bank("default")
    bank.load()
    plan = bank.plan("compact")
    assert {op.kind for op in plan.operations} >= {"merge", "drop"}
    assert plan.counts(plan.select("all")).after <= 300
    change = bank.apply_plan(plan, plan.select("all"), "Compact")
    assert bank.state("memory").tool_count <= 300
    change.undo()
    assert read(home / "memories" / "MEMORY.md") == "\n§\n".join(entries).encode()
    # the agent rewrites the file on its own: the load asks for a review, which can restore
    write(home / "memories" / "MEMORY.md", "\n§\n".join(entries[1:]))
    assert bank.load().reviews == ("MEMORY.md",)
    review = bank.plan("MEMORY.md")
    [restore] = [op for op in review.operations if op.kind == "removed"]
    bank.apply_plan(review, frozenset({restore.id}), "Restore")
    assert entries[0] in bank.state("memory").texts
