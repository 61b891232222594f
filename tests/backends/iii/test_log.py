"""Replaying and following memories.jsonl (spec §1.6)."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.backends.iii.log import MemoryLog
from keepgui.core import fsio
from tests.memories import memory


def rec(text, revision=0, **kw):
    return memory(text, **{"updated_at": 1 + revision, "revision": revision, **kw})


def write(path, *chunks):
    with open(path, "ab") as fh:
        fh.writelines(chunk if isinstance(chunk, bytes) else chunk.to_line() for chunk in chunks)


@pytest.fixture
def log_path(tmp_path):
    return str(tmp_path / "memories.jsonl")


def test_missing_log_is_an_empty_bank(log_path):
    log = MemoryLog(log_path)
    delta = log.refresh()
    assert delta.reset and log.records == {} and not log.problems and log.unreadable is None


def test_last_wins_and_tombstones(log_path):
    a0 = rec("the api port is 3000")
    a1 = a0.replace(text="the api port is 4000", revision=1)
    write(log_path, a0, a1)
    log = MemoryLog(log_path)
    log.refresh()
    assert log.get(a0.id).text == "the api port is 4000" and log.get(a0.id).revision == 1
    write(log_path, a1.replace(revision=2, invalid_at=9))
    log.refresh()
    assert log.get(a0.id).invalid_at == 9 and log.live() == []
    fresh = MemoryLog(log_path)
    fresh.refresh()
    assert fresh.records == log.records


def test_equal_revision_later_line_wins_lower_is_ignored(log_path):
    a = rec("alpha beta gamma", revision=5)
    write(log_path, a, a.replace(text="same revision later", revision=5), a.replace(text="older", revision=4))
    log = MemoryLog(log_path)
    log.refresh()
    assert log.get(a.id).text == "same revision later"
    assert [m.text for m in log.history(a.id)] == ["alpha beta gamma", "same revision later", "older"]


def test_torn_and_corrupt_lines_are_skipped_and_reported(log_path):
    write(
        log_path,
        rec("first good line"),
        b'{"id": "fp-torn\n',
        b"   \n",
        b"\n",
        rec("second good line"),
        b'{"id":"fp1","text":"abc","confidence":"maybe","created_at":1,"updated_at":1}\n',
    )
    log = MemoryLog(log_path)
    log.refresh()
    assert len(log.live()) == 2
    corrupt = [p for p in log.problems if p.kind == "corrupt"]
    assert [p.line for p in corrupt] == [2, 6]
    assert "confidence" in corrupt[1].reason or "enum" in corrupt[1].reason.lower()


def test_unterminated_last_line_is_a_record_and_a_note(log_path):
    """Rust's lines() yields the final line without its newline, so it is a record (§1.6a)."""
    good = rec("a complete line")
    last = rec("written without its newline")
    write(log_path, good, last.to_line()[:-1])
    log = MemoryLog(log_path)
    log.refresh()
    assert set(log.records) == {good.id, last.id} and log.get(last.id) == last
    assert log.torn_tail is not None and log.torn_tail.kind == "unterminated" and log.torn_tail.line == 2
    assert "a write may be in progress" in log.torn_tail.reason
    assert [m.text for m in log.history(last.id)] == [last.text] and log.valid_lines == 2
    write(log_path, b"\n")  # the writer finishes the line
    delta = log.refresh()
    assert set(log.records) == {good.id, last.id} and log.torn_tail is None
    assert delta.added == [] and not [p for p in log.problems if p.kind in ("torn-tail", "unterminated")]


@pytest.mark.parametrize("ending", [b"", b"\r", b" \t ", b"\r\r", b" \t\r"])
def test_unterminated_last_line_with_crlf_or_trailing_whitespace_is_a_record(log_path, ending):
    last = rec("the last record")
    write(log_path, rec("first one"), last.to_line()[:-1] + ending)
    log = MemoryLog(log_path)
    log.refresh()
    assert log.get(last.id) == last and len(log.live()) == 2


def test_final_unterminated_tombstone_retires_its_memory(log_path):
    memory = rec("soon deleted memory")
    write(log_path, memory, memory.replace(revision=1, invalid_at=5, updated_at=5).to_line()[:-1])
    log = MemoryLog(log_path)
    log.refresh()
    assert log.get(memory.id).invalid_at == 5 and log.live() == []


def test_unterminated_line_that_does_not_parse_is_skipped_like_the_worker(log_path):
    write(log_path, rec("kept record"), b'{"id":"fp1","text":"half')
    log = MemoryLog(log_path)
    log.refresh()
    assert len(log.records) == 1 and log.torn_tail.kind == "torn-tail"
    assert "does not parse" in log.torn_tail.reason


def test_a_growing_last_line_is_taken_back_when_it_stops_parsing(log_path):
    """The writer may still extend an unterminated line: its record is provisional."""
    first = rec("first record here")
    provisional = rec("provisional record")
    write(log_path, first, provisional.to_line()[:-1])
    log = MemoryLog(log_path)
    log.refresh()
    assert provisional.id in log.records
    write(log_path, b"garbage glued on")  # now the last line does not parse
    log.refresh()
    assert set(log.records) == {first.id} and log.torn_tail.kind == "torn-tail"
    fresh = MemoryLog(log_path)
    fresh.refresh()
    assert fresh.records == log.records


def test_unterminated_revision_over_an_existing_record(log_path):
    a0 = rec("a memory that is edited")
    a1 = a0.replace(text="an edited memory text", revision=1)
    write(log_path, a0, a1.to_line()[:-1])
    log = MemoryLog(log_path)
    log.refresh()
    assert log.get(a0.id).text == "an edited memory text"
    write(log_path, b"x")  # the line grows into garbage: the older revision is back
    delta = log.refresh()
    assert log.get(a0.id) == a0 and delta.changed == [a0.id] and not delta.reset


def test_invalid_utf8_in_the_unterminated_last_line_makes_the_bank_unreadable(log_path):
    write(log_path, rec("fine line"), b'{"id":"fp1","text":"caf\xc3')
    log = MemoryLog(log_path)
    log.refresh()
    assert log.unreadable and "invalid UTF-8" in log.unreadable and log.records == {}


@pytest.mark.parametrize("field", ["revision", "created_at", "updated_at", "invalid_at", "corroboration"])
def test_negative_zero_in_an_integer_field_rejects_the_line(log_path, field):
    """serde_json reads -0 as a float, which no integer field accepts (§1.6a)."""
    memory = rec("a memory with minus zero")
    line = memory.to_line().decode()
    obj = json.loads(line)
    obj[field] = 0
    text = json.dumps(obj, separators=(",", ":")).replace(f'"{field}":0', f'"{field}":-0')
    write(log_path, text.encode() + b"\n")
    log = MemoryLog(log_path)
    log.refresh()
    assert log.records == {} and "-0" in log.problems[0].reason


def test_invalid_at_minus_zero_does_not_hide_a_live_memory(log_path):
    memory = rec("live memory to keep")
    tomb = memory.to_line().decode().replace('"revision":0', '"invalid_at":-0,"revision":1')
    write(log_path, memory, tomb.encode())
    log = MemoryLog(log_path)
    log.refresh()
    assert log.get(memory.id) == memory and log.get(memory.id).live


def test_repeated_unknown_keys_are_ignored_repeated_known_fields_reject(log_path):
    base = rec("unknown keys twice").to_line().decode().rstrip("\n")[:-1]
    lines = [
        base + ',"x":1,"x":2}',  # repeated unknown key: fine
        base.replace("unknown keys twice", "nested repeat").replace(
            rec("unknown keys twice").id, rec("nested repeat").id
        )
        + ',"x":{"a":1,"a":{"b":2,"b":3}}}',  # repeats inside an unknown value: fine
        base.replace(rec("unknown keys twice").id, rec("source repeat").id).replace(
            "unknown keys twice", "source repeat"
        )
        + ',"source":{"agent":"a","q":1,"q":2}}',  # unknown key repeated inside source: fine
        base.replace(rec("unknown keys twice").id, "fp00000000000000aa") + ',"revision":3}',  # known twice
        base.replace(rec("unknown keys twice").id, "fp00000000000000bb")
        + ',"source":{"agent":"a","agent":"b"}}',  # known source field twice
    ]
    write(log_path, *(line.encode() + b"\n" for line in lines))
    log = MemoryLog(log_path)
    log.refresh()
    assert {m.text for m in log.records.values()} == {"unknown keys twice", "nested repeat", "source repeat"}
    corrupt = [p for p in log.problems if p.kind == "corrupt"]
    assert [p.line for p in corrupt] == [4, 5] and "duplicate field" in corrupt[0].reason


def test_append_after_torn_tail_keeps_both(log_path):
    write(log_path, rec("one"), b'{"id":"fp-torn","text":"half')
    fsio.append_lines(log_path, [rec("two two").to_line()])
    log = MemoryLog(log_path)
    log.refresh()
    assert {m.text for m in log.live()} == {"one", "two two"}
    assert [p.line for p in log.problems if p.kind == "corrupt"] == [2]
    with open(log_path, "rb") as fh:
        assert fh.read().endswith(b"\n")


def test_invalid_utf8_makes_the_bank_unreadable(log_path):
    write(log_path, rec("fine line"), b'{"id":"fp1","text":"bad \xff byte"}\n', rec("after it"))
    log = MemoryLog(log_path)
    delta = log.refresh()
    assert delta.reset and log.unreadable and "line 2" in log.unreadable
    assert log.records == {}


def test_incremental_refresh_reads_only_appended_bytes(log_path):
    write(log_path, *(rec(f"memory number {i}") for i in range(500)))
    log = MemoryLog(log_path)
    first = log.refresh()
    size = os.path.getsize(log_path)
    assert first.reset and first.bytes_read == size
    extra = [rec(f"appended memory {i}") for i in range(3)] + [rec("memory number 7").replace(revision=1)]
    write(log_path, *extra)
    delta = log.refresh()
    assert not delta.reset
    assert delta.bytes_read == os.path.getsize(log_path) - size
    assert delta.added == [m.id for m in extra[:3]]
    assert delta.changed == [m.id for m in extra]
    assert log.refresh().empty


def test_replaced_or_shrunk_or_rewritten_file_is_replayed_whole(log_path, tmp_path):
    write(log_path, rec("one one"), rec("two two"))
    log = MemoryLog(log_path)
    log.refresh()
    other = tmp_path / "other.jsonl"
    write(str(other), rec("three three"))
    os.replace(other, log_path)  # new inode
    assert log.refresh().reset and {m.text for m in log.live()} == {"three three"}
    with open(log_path, "wb") as fh:  # same inode, shorter
        fh.write(rec("four").to_line())
    assert log.refresh().reset and {m.text for m in log.live()} == {"four"}
    with open(log_path, "r+b") as fh:  # same inode, same prefix length, rewritten and grown
        fh.write(rec("five").to_line() + rec("six six").to_line())
    assert log.refresh().reset and {m.text for m in log.live()} == {"five", "six six"}


def test_raw_line_is_exactly_as_stored(log_path):
    line = b'{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":2,"extra":1}\n'
    write(log_path, line)
    log = MemoryLog(log_path)
    log.refresh()
    assert log.raw_line("fp1") == line.decode().rstrip("\n")


def test_raw_lines_gives_what_raw_line_gives_for_every_id(log_path):
    a = rec("alpha beta gamma")
    b = rec("delta epsilon", revision=2)
    canonical_b = b.to_line()
    write(
        log_path,
        a,
        b'{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":2,"extra":1}\r\n',
        b"\n",
        b"{not json}\n",
        canonical_b,
        canonical_b[:-1] + b"\r\n",  # the same record again, with CRLF: the later line is the one shown
        b.replace(text="older revision", revision=1),  # lower revision: never the current record
        a.replace(revision=1),
        b'{"id":"torn',
    )
    log = MemoryLog(log_path)
    log.refresh()
    stored = log.raw_lines()
    assert set(stored) == set(log.records) == {a.id, b.id, "fp1"}
    assert stored == {mid: log.raw_line(mid) for mid in log.records}
    assert stored[b.id] == canonical_b.decode().rstrip("\n") and stored[a.id] == a.replace(revision=1).to_json()
    assert log.raw_line("nope") is None


def test_progress_is_reported(log_path):
    write(log_path, *(rec(f"progress memory {i}") for i in range(60_000 // 1000)))
    seen = []
    MemoryLog(log_path).refresh(progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] == os.path.getsize(log_path)


def test_a_line_far_over_any_record_is_read_as_the_worker_reads_it(log_path):
    """#23.15b: the worker loads a 50 MB line (a text of 50 MB, or a huge unknown value) and so does
    keepgui, in about the time of reading the bytes (#13.5 had it skipped unread)."""
    import time

    huge = rec("placeholder").to_line().replace(b"placeholder", b"x" * 50_000_000)
    blob = rec("small text, huge unknown value").to_line()[:-2] + b',"blob":"' + b"y" * 50_000_000 + b'"}\n'
    write(log_path, huge, blob, rec("a small record after it"))
    log = MemoryLog(log_path)
    start = time.perf_counter()
    log.refresh()
    seconds = time.perf_counter() - start
    texts = sorted(len(m.text) for m in log.records.values())
    assert texts == [len("a small record after it"), len("small text, huge unknown value"), 50_000_000]
    assert log.problems == [] and seconds < 10, f"{seconds:.1f} s"


def test_every_reader_of_the_log_takes_a_50_mb_line_in_about_its_reading(log_path):
    """#23.15b: the activity index and the line scan joined the bytes read so far on every read (a
    50 MB line cost gigabytes of copies, 12 s of the window's start); now each piece is joined once."""
    import time

    from keepgui.backends.iii.activity import ActivityIndex

    huge = rec("placeholder").to_line().replace(b"placeholder", b"x " * 25_000_000)
    write(log_path, rec("before it"), huge, rec("after it"))
    start = time.perf_counter()
    scanned = [(n, len(m.text)) for n, m in MemoryLog(log_path).scan()]
    index = ActivityIndex(log_path)
    events = index.sync()
    seconds = time.perf_counter() - start
    assert scanned == [(1, 9), (2, 50_000_000), (3, 8)] and events == 3
    assert seconds < 10, f"{seconds:.1f} s"


def test_an_oversized_line_that_is_not_utf8_still_makes_the_bank_unloadable(log_path):
    write(log_path, b'{"id":"' + b"z" * 2_000_000 + b'\xff"}\n', rec("a record"))
    log = MemoryLog(log_path)
    log.refresh()
    assert log.unreadable and "invalid UTF-8 at line 1" in log.unreadable
