"""Undo leaves the worker's ranking as it was; a restore says that it moves it (#23.8).

An undone delete or unpin of an iii memory used to come back "just now": the revision that takes the
change back carried the time of the undo in ``updated_at``, which is what the worker's recency
decays from, so the memory jumped up the ranking without a word. The worker's replay takes any
``updated_at`` (revisions are ordered by ``revision``), so undo writes the earlier record exactly.
A restore is a new action and a new revision at its own time, as the worker's mutations are; the
Change says so, and the window and the command line show it.
"""

from __future__ import annotations

import json

from keepgui.core import registry
from tests.conftest import run_cli
from tests.memories import memory

DAY = 86_400_000
OLD = 1_700_000_000_000


def _bank(data_dir):
    folder = data_dir / "main"
    folder.mkdir()
    lines = [
        memory("The deploy runs on Fridays", updated_at=OLD, created_at=OLD, entities=["deploy"]),
        memory("The deploy needs two approvals", updated_at=OLD + 30 * DAY, pinned=True, entities=["deploy"]),
        memory("Deploy logs go to the ops channel", updated_at=OLD + 60 * DAY, entities=["deploy"]),
    ]
    (folder / "memories.jsonl").write_bytes(b"".join(m.to_line() for m in lines))
    source = registry.open_source("iii", str(data_dir))
    bank = source.bank("main")
    bank.load(full=True)
    return bank, [m.id for m in lines]


def _state(bank) -> dict[str, tuple[int | None, bool, bool]]:
    return {r.id: (r.updated_at, r.pinned, r.invalid_at is None) for r in bank.rows()}


def test_undo_of_a_delete_or_an_unpin_puts_the_memory_back_as_it_was_in_the_ranking(data_dir):
    bank, (friday, approvals, _logs) = _bank(data_dir)
    state, ranking = _state(bank), bank.rank("deploy", 10)
    for write in (lambda: bank.set_live([friday], False), lambda: bank.set_pinned([approvals], False)):
        change = write()
        assert change.written
        bank.load()
        assert _state(bank) != state
        change.undo()
        bank.load()
        assert _state(bank) == state  # updated_at too, so the recency the worker ranks by
        assert bank.rank("deploy", 10) == ranking
    log = (data_dir / "main" / "memories.jsonl").read_text()
    revisions = [json.loads(line) for line in log.splitlines() if line.strip()]
    assert [r["revision"] for r in revisions if r["id"] == friday] == [0, 1, 2]  # history only grows


def test_a_restore_says_it_makes_the_memory_recent_and_undo_takes_that_back(data_dir):
    bank, (friday, _approvals, _logs) = _bank(data_dir)
    state = _state(bank)
    deleted = bank.set_live([friday], False)
    restored = bank.set_live([friday], True)
    said = "restored; its recency is now today (the worker ranks a memory by when it last changed, and a restore"
    assert restored.notes[-1] == said + " is a change; Undo puts back the old recency)"
    bank.load()
    assert _state(bank)[friday][0] > OLD + 365 * DAY
    restored.undo()
    deleted.undo()
    bank.load()
    assert _state(bank) == state


def test_the_command_line_says_it_too(data_dir):
    friday, approvals, _logs = _bank(data_dir)[1]
    assert run_cli(["forget", "--source", str(data_dir), "--bank", "main", friday, approvals])[0] == 0
    code, out, err = run_cli(["restore", "--source", str(data_dir), "--bank", "main", friday, approvals])
    assert code == 0 and "2 restored; their recency is now today" in err, (out, err)
