"""keep.md written by a real nanobot-like process while keepgui keeps, edits and forgets (issue 24).

nanobot's keep skill rewrites keep.md with a truncating open and then a write: for a moment the file
is empty, or holds only part of what is on its way. Such a read must never become the base of a
whole-file write, and keepgui's history must not record it as a version.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from keepgui.backends.nanobot.writes import KeepStore
from keepgui.core import fsio
from keepgui.core.errors import Conflict
from keepgui.core.history import History
from tests.backends.nanobot.nanobot_helpers import SPEC_FIXTURE, make_workspace
from tests.reliability.agents import nanobot_race

SLOW_TRUNCATING_WRITER = r"""
import sys, time
path, hold, line = sys.argv[1], float(sys.argv[2]), sys.argv[3].encode()
with open(path, "rb") as fh:
    data = fh.read()
with open(path, "wb") as fh:  # truncated now: the file is empty until the write below
    print("truncated", flush=True)
    time.sleep(hold)
    fh.write(data + line + b"\n")
"""


def truncate_and_hold(path: str, hold: float, line: str) -> subprocess.Popen:
    """A real process that truncates ``path``, says so, holds it empty ``hold`` seconds, then writes it
    back whole with ``line`` added (nanobot's ``open(path, "w")`` then ``write``, on a busy machine)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_TRUNCATING_WRITER, path, str(hold), line], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "truncated"
    return proc


@pytest.fixture
def store(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    s = KeepStore(ws, History(tmp_path / "history"))
    s.load()  # keepgui has seen keep.md whole
    return s


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.mark.parametrize("op", ["keep", "forget", "edit"])
def test_a_truncated_keep_md_is_never_the_base_of_a_write(store, op):
    agent = truncate_and_hold(store.path, 0.25, "- Agent noted the dentist moved to Tuesdays")
    if op == "keep":
        store.add("Has a cat named Tofu")
    elif op == "forget":
        store.remove("Allergic to penicillin")
    else:
        store.edit("Partner's name is Sam", "Partner's name is Samuel")
    assert agent.wait(10) == 0
    text = read(store.path).decode()
    # the ten facts and the agent's new one are all there: the empty read was looked at again
    for fact in SPEC_FIXTURE.splitlines():
        if op == "keep" or ("penicillin" not in fact and "Sam" not in fact):
            assert fact in text
    assert "- Agent noted the dentist moved to Tuesdays\n" in text
    assert {"keep": "- Has a cat named Tofu", "forget": "", "edit": "Samuel"}[op] in text
    # and keepgui's history holds no empty version of keep.md
    assert all(v.size for v in store.history.versions(store.path))


def test_a_file_that_stays_torn_is_refused_not_written(store, monkeypatch):
    monkeypatch.setattr(fsio, "SETTLE_PAUSES", (0.01, 0.02))
    agent = truncate_and_hold(store.path, 1.0, "- Agent noted the late write")
    with pytest.raises(Conflict, match="being written by another program"):
        store.add("Has a cat named Tofu")
    assert agent.wait(10) == 0
    assert read(store.path) == SPEC_FIXTURE.encode() + b"- Agent noted the late write\n"


def test_an_all_digit_id_is_that_entry_not_a_number(tmp_path):
    # sha256("…")[:12] is all digits for about 0.35 % of entries; this one's id is 102858286411
    lines = [f"- Fact number {i} about the garden" for i in range(1, 4)]
    ws = make_workspace(tmp_path / "ws", keep="".join(line + "\n" for line in lines))
    s = KeepStore(ws, History(tmp_path / "history"))
    doc = s.load()
    digits = [e for e in doc.entries if e.id.isdigit()]
    if not digits:  # make one: find a fact whose id is all digits
        fact = next(f"Fact {n} about the garden" for n in range(100_000) if _id(f"Fact {n} about the garden").isdigit())
        ws = make_workspace(tmp_path / "ws2", keep="".join(line + "\n" for line in [*lines, f"- {fact}"]))
        s = KeepStore(ws, History(tmp_path / "history"))
        doc = s.load()
        digits = [e for e in doc.entries if e.id.isdigit()]
    entry = digits[0]
    s.edit(entry.id, "Waters the garden on Sundays")
    assert "- Waters the garden on Sundays\n" in read(s.path).decode()
    new = next(e for e in s.load().entries if e.text == "Waters the garden on Sundays")
    if new.id.isdigit():
        s.remove(new.id)
    assert len(s.load().entries) == len(doc.entries)


def _id(text: str) -> str:
    from keepgui.backends.nanobot.keepmd import KeepDoc

    return KeepDoc.parse(f"- {text}\n".encode()).entries[0].id


def test_keep_racing_nanobot_loses_nothing_and_retries():
    """A short run of the race of ``make stress``: ``keepgui keep`` (the command line, a real process)
    against nanobot's truncating rewrite of keep.md every 0–60 ms."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        result = nanobot_race(folder, ops=25, seed=3)
    assert result["lost_agent"] == 0 and result["torn"] == 0 and result["orphaned"] == 0, result
    assert result["empty_versions"] == 0, result
    assert result["refused"] <= 5, result  # 78 % were refused before keepgui tried again
