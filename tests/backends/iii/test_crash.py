"""Writers killed with SIGKILL: a rule is always one whole version, a log keeps every complete record.

Random kills (a child saving in a loop, killed at a random moment after it
reported progress) and chosen kills (a child that SIGKILLs itself at one
point of fsio's write path) both run; the stress run does 300+ random kills.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from keepgui.backends.iii.doctor import diagnose
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.store import DataDir
from tests.reliability import sigkill_at_points, sigkill_log_appends, sigkill_rule_saves, torn_tail_then_append


def test_rule_saves_killed_at_random_moments_are_never_torn(tmp_path):
    r = sigkill_rule_saves(str(tmp_path), runs=30, seed=2)
    assert r["runs"] == 30
    assert r["torn"] == 0, "\n".join(r["failures"])


def test_log_appends_killed_at_random_moments_keep_every_committed_record(tmp_path):
    r = sigkill_log_appends(str(tmp_path), runs=30, seed=3)
    assert r["torn"] == 0, "\n".join(r["failures"])
    assert r["records"] > 30


def test_kills_at_each_point_of_the_write_path(tmp_path):
    """Half-written temp file, before fsync, before rename, after rename; half-written append, before fsync."""
    r = sigkill_at_points(str(tmp_path))
    assert r["points"] == 6
    assert r["torn"] == 0, "\n".join(r["failures"])


def test_a_torn_tail_then_a_keepgui_append(tmp_path):
    r = torn_tail_then_append(str(tmp_path))
    assert r["failures"] == [], "\n".join(r["failures"])


def test_torn_fragment_becomes_one_reported_line_and_the_new_record_is_intact(tmp_path):
    datadir = DataDir(tmp_path / "memory")
    bank, _ = datadir.ensure_bank("main")
    for i in range(3):
        bank.save(f"complete record {i}", now=1)
    with open(bank.log_path, "ab") as fh:  # a crashed writer's half line, written directly
        fh.write(b'{"id":"fp00000000000000aa","text":"half a rec')
    assert [f.kind for f in diagnose(datadir)] == ["torn-tail"]
    new = DataDir(tmp_path / "memory").bank("main").save("written after the crash", now=2).record
    log = MemoryLog(bank.log_path)
    log.refresh()
    assert {m.text for m in log.live()} == {f"complete record {i}" for i in range(3)} | {new.text}
    assert log.get(new.id) == new and log.torn_tail is None
    with open(bank.log_path, "rb") as fh:
        fragment_line = fh.read().split(b"\n").index(b'{"id":"fp00000000000000aa","text":"half a rec') + 1
    assert [(p.kind, p.line) for p in log.problems] == [("corrupt", fragment_line)]
    with open(bank.log_path, "rb") as fh:
        assert fh.read().endswith(b'"text":"half a rec\n' + new.to_line())


def test_a_torn_tail_cut_inside_a_character_is_not_completed(tmp_path):
    """Invalid UTF-8 in the last line makes the bank unloadable for the worker (§1.6a): keepgui
    refuses to write, naming the file and the line, and changes nothing."""
    from keepgui.core.errors import ReadOnly

    bank, _ = DataDir(tmp_path / "memory").ensure_bank("main")
    bank.save("complete record", now=1)
    with open(bank.log_path, "ab") as fh:
        fh.write(b'{"id":"fp00000000000000aa","text":"caf' + "é".encode()[:1])
    before = Path(bank.log_path).read_bytes()
    with pytest.raises(ReadOnly) as refused:  # the save must not go through and make the log unreadable
        DataDir(tmp_path / "memory").bank("main").save("must not complete it", now=2)
    lines = Path(bank.log_path).read_bytes().count(b"\n") + 1
    assert (
        "UTF-8" in str(refused.value) and bank.log_path in str(refused.value) and f"line {lines}" in str(refused.value)
    )
    assert Path(bank.log_path).read_bytes() == before
    assert os.path.getsize(bank.log_path) == len(before)
