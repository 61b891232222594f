"""Capture events behind the activity strip (no Qt): the iii log's revisions, keep.md's versions in
keepgui's history, and the projects a keep.md entry names."""

from __future__ import annotations

import os

import pytest

from keepgui.backends.iii.activity import ActivityIndex
from keepgui.backends.iii.record import Memory, fingerprint
from keepgui.backends.nanobot.activity import ProjectMatcher, project_slugs
from keepgui.core import registry
from keepgui.core.errors import InvalidInput
from keepgui.core.source import (
    ACTIVITY,
    CREATED,
    EDITED,
    REINFORCED,
    RETIRED,
    Activity,
    BankDefaults,
    Capabilities,
)
from tests.backends.nanobot.nanobot_helpers import make_workspace

DAY = 86_400_000
T0 = 1_750_000_000_000


def record(first_text: str, revision: int, at: int, **fields) -> Memory:
    """A revision of the memory first saved as ``first_text`` (its id)."""
    values = dict(
        id=fingerprint(first_text),
        text=first_text,
        entities=(),
        tags=(),
        confidence="stated",
        corroboration=0,
        pinned=False,
        created_at=T0,
        updated_at=at,
        revision=revision,
    )
    values.update(fields)
    return Memory(**values)


def write_log(path, *lines: bytes | Memory, mode: str = "wb") -> None:
    with open(path, mode) as fh:
        fh.writelines(line.to_line() if isinstance(line, Memory) else line for line in lines)


def events(activity: Activity) -> list[tuple[int, str, str]]:
    """Every event as (time, kind, key), in time order."""
    out = []
    for kind in activity.times:
        out += [(t, kind, activity.keys[r]) for t, r in zip(activity.times[kind], activity.rows[kind], strict=True)]
    return sorted(out)


def test_every_revision_the_worker_reads_is_one_event_of_its_kind(tmp_path):
    log = tmp_path / "memories.jsonl"
    a, b = fingerprint("Prefers tea"), fingerprint("Lives in Lisbon")
    write_log(
        log,
        record("Prefers tea", 0, T0),
        record("Lives in Lisbon", 0, T0 + 1),
        record("Prefers tea", 1, T0 + DAY, corroboration=1),  # stated again
        b'{"id":"fp0000000000000000","text":"torn\n',  # corrupt: the worker skips it
        record("Prefers tea", 2, T0 + 2 * DAY, corroboration=1, text="Prefers green tea"),  # edited
        record("Lives in Lisbon", 1, T0 + 2 * DAY, pinned=True),  # a pin is an edit too
        record("Prefers tea", 1, T0 + 3 * DAY, corroboration=5),  # lower revision: ignored by the worker
        record("Lives in Lisbon", 2, T0 + 4 * DAY, pinned=True, invalid_at=T0 + 4 * DAY),  # deleted
        record("Lives in Lisbon", 3, T0 + 5 * DAY, pinned=True),  # brought back: an edit
        b"\n",
    )
    index = ActivityIndex(str(log))
    assert index.sync() == 7
    assert events(index.snapshot()) == [
        (T0, CREATED, a),
        (T0 + 1, CREATED, b),
        (T0 + DAY, REINFORCED, a),
        (T0 + 2 * DAY, EDITED, a),
        (T0 + 2 * DAY, EDITED, b),
        (T0 + 4 * DAY, RETIRED, b),
        (T0 + 5 * DAY, EDITED, b),
    ]


def test_appended_lines_are_read_alone_and_a_rewrite_is_read_again(tmp_path):
    log = tmp_path / "memories.jsonl"
    write_log(log, record("Prefers tea", 0, T0))
    index = ActivityIndex(str(log))
    index.sync()
    first = index.snapshot()
    write_log(log, record("Prefers tea", 1, T0 + DAY, corroboration=1), b'{"id":"fp', mode="ab")
    assert index.sync() == 1  # the unterminated last line waits for its newline
    assert len(first) == 1 and len(index.snapshot()) == 2  # a snapshot is not changed by later reads
    write_log(log, record("Drinks coffee", 0, T0 + 2 * DAY).to_line()[3:], mode="ab")
    # The torn start and its continuation make one line that does not parse: skipped, as the worker does.
    assert index.sync() == 0 and index._offset == os.path.getsize(log)
    size = os.path.getsize(log)
    with open(log, "r+b") as fh:  # rewritten in place, same size and file: every line is read again
        data = fh.read().replace(b'"corroboration":1', b'"corroboration":0')
        fh.seek(0)
        fh.write(data)
    assert os.path.getsize(log) == size
    write_log(log, record("Drinks coffee", 0, T0 + 3 * DAY), mode="ab")
    index.sync()
    kinds = [kind for _t, kind, _k in events(index.snapshot())]
    assert kinds == [CREATED, EDITED, CREATED]  # corroboration 0 again: an edit, not a reinforcement


def test_snapshots_share_the_event_arrays_until_a_read_appends(tmp_path):
    """A snapshot is not a copy of every event (80 MB at a million memories): the next read that appends
    copies them first, so every snapshot handed out keeps exactly the events it had."""
    log = tmp_path / "memories.jsonl"
    write_log(log, record("Prefers tea", 0, T0), record("Lives in Lisbon", 0, T0 + 1))
    index = ActivityIndex(str(log))
    index.sync()
    first, again = index.snapshot(), index.snapshot()
    assert first.times[CREATED] is again.times[CREATED]  # nothing read between them: shared
    before = events(first)
    write_log(log, record("Prefers tea", 1, T0 + DAY, corroboration=1), record("Drinks coffee", 0, T0 - DAY), mode="ab")
    assert index.sync() == 2
    assert events(first) == events(again) == before  # the read appended to copies
    after = events(index.snapshot())
    assert after == sorted(
        [*before, (T0 + DAY, REINFORCED, fingerprint("Prefers tea")), (T0 - DAY, CREATED, fingerprint("Drinks coffee"))]
    )


def test_out_of_order_times_are_sorted_and_days_counted(tmp_path):
    log = tmp_path / "memories.jsonl"
    write_log(
        log,
        record("one", 0, T0 + 3 * DAY),
        record("two", 0, T0 + DAY),
        record("three", 0, T0 + 2 * DAY + 5),
        record("one", 1, T0, corroboration=1),
    )
    index = ActivityIndex(str(log))
    index.sync()
    activity = index.snapshot()
    assert list(activity.times[CREATED]) == [T0 + DAY, T0 + 2 * DAY + 5, T0 + 3 * DAY]
    bounds = [T0 + i * DAY for i in range(5)]
    assert activity.counts(bounds) == {
        CREATED: [0, 1, 1, 1],
        REINFORCED: [1, 0, 0, 0],
        EDITED: [0, 0, 0, 0],
        RETIRED: [0, 0, 0, 0],
    }
    assert activity.keys_between(T0 + DAY, T0 + 3 * DAY) == {fingerprint("two"), fingerprint("three")}
    assert activity.keys_between(T0, T0 + DAY, kinds=(CREATED,)) == set()
    assert (activity.first, activity.last) == (T0, T0 + 3 * DAY)


@pytest.mark.slow
def test_sorting_many_events_written_out_of_order_lets_other_threads_run(tmp_path):
    import random
    import threading
    import time

    log = tmp_path / "memories.jsonl"
    rng = random.Random(3)
    ats = [T0 + rng.randrange(0, 1000) * 1000 for _ in range(200_000)]  # in no order, many at the same time
    write_log(log, *(record(f"fact {i}", 0, at) for i, at in enumerate(ats)))
    index = ActivityIndex(str(log))
    index.sync()
    gaps, done = [0.0], threading.Event()

    def beat() -> None:  # a thread that wants the interpreter lock every millisecond, as the GUI thread does
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps[0], last = max(gaps[0], now - last), now

    beating = threading.Thread(target=beat)
    beating.start()
    activity = index.snapshot()
    done.set()
    beating.join()
    keys = [fingerprint(f"fact {i}") for i in sorted(range(len(ats)), key=ats.__getitem__)]  # stable: log order
    assert [activity.keys[r] for r in activity.rows[CREATED]] == keys
    assert list(activity.times[CREATED]) == sorted(ats)
    assert gaps[0] < 0.2  # sorted() with a key held the lock through the whole sort (~0.5 s here)


def test_an_iii_bank_answers_through_the_protocol_and_follows_its_writes(tmp_path):
    from keepgui.backends.iii.store import DataDir

    DataDir(str(tmp_path)).ensure_bank("main")[0].save("Prefers metric units")
    bank = registry.open_source("iii", str(tmp_path)).bank("main")
    bank.load(full=True)
    assert bank.capabilities.can(ACTIVITY)
    assert [kind for _t, kind, _k in events(bank.activity())] == [CREATED]
    key = fingerprint("Prefers metric units")
    bank.set_pinned([key], True)
    bank.set_live([key], False)
    bank.load()
    assert [(kind, k) for _t, kind, k in events(bank.activity())] == [(CREATED, key), (EDITED, key), (RETIRED, key)]


def test_a_backend_without_activity_refuses_with_its_reason():
    class Plain(BankDefaults):
        capabilities = Capabilities({ACTIVITY: "these notes carry no dates"})

        def preview(self, query, pending=None, now_ms=None):
            return "every note"  # what the agent is given: the one thing every bank says

    with pytest.raises(InvalidInput, match="carry no dates"):
        Plain().activity()
    assert Plain().row_names() == {}


def test_keep_md_versions_keepgui_saw_become_events_after_the_first(tmp_path):
    workspace = make_workspace(tmp_path / "ws", keep="- Prefers tea\n- Lives in Lisbon\n- Has a beagle\n")
    source = registry.open_source("nanobot", workspace)
    bank = source.bank("keep.md")
    bank.load(full=True)
    first = bank.activity()
    assert len(first) == 0 and first.since is not None  # the first version seen is the baseline
    with open(os.path.join(workspace, "keep.md"), "w", encoding="utf-8") as fh:
        fh.write("- Prefers green tea\n- Lives in Lisbon\n- Has a beagle\n- Runs on Saturdays\n")
    rows = {r.text: r.id for r in bank.load().rows.rows}
    bank.set_live([rows["Has a beagle"]], False)  # forgotten by keepgui: logged in its history
    retired = next(r.id for r in bank.rows() if r.text == "Has a beagle")
    assert retired.startswith("removed:")
    found = [(kind, key) for _t, kind, key in events(bank.activity())]
    assert sorted(found) == sorted(
        [(EDITED, rows["Prefers green tea"]), (CREATED, rows["Runs on Saturdays"]), (RETIRED, retired)]
    )


def test_a_keep_md_entry_names_the_projects_of_its_workspace(tmp_path):
    workspace = make_workspace(
        tmp_path / "ws", keep="- Writes a blog called Slow Bytes\n- Plays chess as mike_slowbytes\n- Likes tea\n"
    )
    assert project_slugs(workspace) == ()
    os.makedirs(os.path.join(workspace, "projects", "slow-bytes"))
    os.makedirs(os.path.join(workspace, "projects", ".hidden"))
    assert project_slugs(workspace) == ("slow-bytes",)
    matcher = ProjectMatcher.of(("slow-bytes", "tea"))
    assert matcher.named_in("SLOW-BYTES is a blog") == ("slow-bytes",)
    assert matcher.named_in("slow_bytes and slowbytes") == ("slow-bytes",)
    assert matcher.named_in("mike_slowbytes; teapot") == ()
    source = registry.open_source("nanobot", workspace)
    bank = source.bank("keep.md")
    rows = {r.text: r.entities for r in bank.load(full=True).rows.rows}
    assert rows == {
        "Writes a blog called Slow Bytes": ("slow-bytes",),
        "Plays chess as mike_slowbytes": (),
        "Likes tea": (),
    }
    assert "entities" in bank.capabilities.fields
    plan = source.classify([("projects", "slow-bytes")], ["keep.md"])
    assert plan.refresh == frozenset({"keep.md"})  # a project folder came or went: entries re-read
