"""Replaying and following memories.jsonl (spec §1.6)."""

from __future__ import annotations

import os

import pytest

from keepgui.core import fsio
from keepgui.core.iii.log import MemoryLog
from keepgui.core.iii.record import fingerprint, new_memory


def rec(text, revision=0, **kw):
    fields = dict(id=fingerprint(text), text=text, entities=[], tags=[], confidence="stated", corroboration=0,
                  pinned=False, created_at=1, updated_at=1 + revision, revision=revision)
    fields.update(kw)
    return new_memory(**fields)


def write(path, *chunks):
    with open(path, "ab") as fh:
        for chunk in chunks:
            fh.write(chunk if isinstance(chunk, bytes) else chunk.to_line())


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
    write(log_path, rec("first good line"), b'{"id": "fp-torn\n', b"   \n", b"\n", rec("second good line"),
          b'{"id":"fp1","text":"abc","confidence":"maybe","created_at":1,"updated_at":1}\n')
    log = MemoryLog(log_path)
    log.refresh()
    assert len(log.live()) == 2
    corrupt = [p for p in log.problems if p.kind == "corrupt"]
    assert [p.line for p in corrupt] == [2, 6]
    assert "confidence" in corrupt[1].reason or "enum" in corrupt[1].reason.lower()


def test_unterminated_last_line_is_a_torn_tail_not_data(log_path):
    good = rec("a complete line")
    partial = rec("written without its newline").to_line()[:-1]
    write(log_path, good, partial)
    log = MemoryLog(log_path)
    log.refresh()
    assert list(log.records) == [good.id]
    assert log.torn_tail is not None and log.torn_tail.line == 2
    write(log_path, b"\n")  # the writer finishes the line
    delta = log.refresh()
    assert len(log.records) == 2 and log.torn_tail is None
    assert delta.added == [fingerprint("written without its newline")]
    assert not [p for p in log.problems if p.kind == "torn-tail"]


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
    line = (b'{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":2,"extra":1}\n')
    write(log_path, line)
    log = MemoryLog(log_path)
    log.refresh()
    assert log.raw_line("fp1") == line.decode().rstrip("\n")


def test_raw_lines_gives_what_raw_line_gives_for_every_id(log_path):
    a = rec("alpha beta gamma")
    b = rec("delta epsilon", revision=2)
    canonical_b = b.to_line()
    write(log_path, a,
          b'{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":2,"extra":1}\r\n',
          b"\n", b"{not json}\n",
          canonical_b,
          canonical_b[:-1] + b"\r\n",  # the same record again, with CRLF: the later line is the one shown
          b.replace(text="older revision", revision=1),  # lower revision: never the current record
          a.replace(revision=1),
          b'{"id":"torn')
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
