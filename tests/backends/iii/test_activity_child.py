"""A long log's activity read in a child process (the window's other core): the same events as a
read in the process, appended lines read here afterwards; a child that fails leaves the read to this
process, with a note saying so."""

from __future__ import annotations

import os
import random

import pytest

from keepgui.backends.iii import activity
from keepgui.backends.iii.activity import ActivityIndex
from keepgui.core import childwork
from keepgui.core.source import CAPTURE_KINDS
from tests.bench.synth import make_bank, make_records


def events(index: ActivityIndex) -> dict[str, list[tuple[int, str]]]:
    snap = index.snapshot()
    return {
        kind: [(t, snap.keys[r]) for t, r in zip(snap.times[kind], snap.rows[kind], strict=True)]
        for kind in CAPTURE_KINDS
    }


@pytest.fixture(autouse=True)
def any_log_goes_to_the_child(monkeypatch):
    monkeypatch.setattr(activity, "CHILD_BYTES", 0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_child_reads_what_this_process_reads(tmp_path, seed):
    rng = random.Random(seed)
    memories = rng.randrange(1, 3000)
    log = make_bank(str(tmp_path / "bank"), memories, memories + rng.randrange(0, 4000), seed)
    here, there = ActivityIndex(log), ActivityIndex(log)
    assert here.sync(in_child=False) == there.sync(in_child=True) > 0
    assert events(there) == events(here) and there.keys == here.keys and there.note == activity.NOTE
    assert there._offset == here._offset == os.path.getsize(log)
    extra = make_records(20, 60, seed + 100)
    with open(log, "ab") as fh:  # appended since: read in this process, after the child's columns
        fh.write(b"".join(m.to_line() for m in extra))
    assert here.sync(in_child=False) == there.sync(in_child=True) == 60
    assert events(there) == events(here)


def test_a_failed_child_leaves_the_read_to_this_process_with_a_note(tmp_path, monkeypatch):
    log = make_bank(str(tmp_path / "bank"), 500, 1200, 5)
    here = ActivityIndex(log)
    here.sync(in_child=False)

    class Dead:
        def call(self, *_args):
            raise childwork.ChildFailed("the activity process stopped (exit status -9)")

    monkeypatch.setattr(childwork, "worker", lambda *_args: Dead())
    there = ActivityIndex(log)
    assert there.sync(in_child=True) == len(here)
    assert events(there) == events(here)
    assert "read in the window's process: the activity process stopped" in there.snapshot().note


def test_the_window_makes_no_python_call_per_line_for_an_activity_read_in_a_child(tmp_path):
    from tests.calls import counting_calls

    log = make_bank(str(tmp_path / "bank"), 8000, 20_000, 8)
    there = ActivityIndex(log)
    events_read, calls = counting_calls(lambda: there.sync(in_child=True))
    assert events_read == 20_000 and calls < 20_000 / 20
    here = ActivityIndex(log)
    _, calls_here = counting_calls(lambda: here.sync(in_child=False))
    assert calls_here > 20_000  # read here: a record decoded per line


def test_the_child_s_keys_give_way_to_the_bank_s_own_id_strings(tmp_path, monkeypatch):
    """A window holds every id already (its records'): the child's copies of them are let go, a slice at
    a time, where a slice equals the bank's ids; a slice that differs keeps its own. The events are the
    same, and lines appended since are read against them."""
    monkeypatch.setattr(childwork, "SLICE", 64)
    log = make_bank(str(tmp_path / "bank"), 900, 2000, 8)
    here = ActivityIndex(log)
    here.sync(in_child=False)
    held = [key.encode().decode() for key in here.keys]  # the bank's strings: equal, other objects
    held[700] = "fp-not-this-one"  # the tenth slice differs
    there = ActivityIndex(log)
    there.sync(in_child=True, known_ids=lambda: held)
    shared = [key is mine for key, mine in zip(there.keys, held, strict=True)]
    assert shared == [not 640 <= row < 704 for row in range(len(held))]
    assert there.keys == here.keys and events(there) == events(here)
    with open(log, "ab") as fh:
        fh.write(b"".join(m.to_line() for m in make_records(30, 90, 81)))
    assert here.sync(in_child=False) == there.sync(in_child=True) == 90
    assert events(there) == events(here)
