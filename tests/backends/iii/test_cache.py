"""The verified log cache (issue 15): the CLI's answers are the same with and without it, an
unchanged or appended-to log is resumed from it, and nothing wrong with the log or the cache
file ever makes it trusted or makes a command fail."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from keepgui.backends.iii.cache import _MAGIC, FORMAT, LogCache
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine
from keepgui.backends.iii.index import BankIndex
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.record import Memory
from keepgui.backends.iii.store import DataDir
from keepgui.core import fsio
from tests.bench.synth import make_bank, make_records
from tests.conftest import errors_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NOW = 1_767_000_000_000
QUERIES = ["what did we decide about the database", "deploy staging release", "zzz nothing matches"]


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data"
    make_bank(str(folder / "bank"), memories=1500, lines=3750, seed=11)
    return folder


def log_path(data_dir) -> str:
    return str(data_dir / "bank" / "memories.jsonl")


def keepgui(home, data_dir, *argv: str, hashseed: str = "random") -> str:
    """Run the CLI in its own process with keepgui's home at ``home``; its stdout (exit 0, quiet stderr)."""
    env = dict(os.environ, KEEPGUI_HOME=str(home), PYTHONHASHSEED=hashseed, PYTHONPATH=ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "--data-dir", str(data_dir), *argv],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert errors_of(done.stderr.decode()) == [], done.stderr.decode()  # quiet but for an old form's note
    return done.stdout.decode()


def outputs(home, data_dir, every: bool = False) -> list[str]:
    """``preview --json`` and ``memories --json --history``; ``every`` adds a second preview,
    ``recall --json`` and ``memories --json`` (each command is a process: the suite stays short)."""
    preview = ["preview", QUERIES[0], "--bank", "bank", "--now", str(NOW), "--json"]
    out = [keepgui(home, data_dir, *preview), keepgui(home, data_dir, "memories", "bank", "--json", "--history")]
    if every:
        out.append(keepgui(home, data_dir, "preview", QUERIES[1], "--bank", "bank", "--now", str(NOW), "--json"))
        out.append(keepgui(home, data_dir, "recall", QUERIES[0], "--bank", "bank", "--now", str(NOW), "--json"))
        out.append(keepgui(home, data_dir, "memories", "bank", "--json"))
    return out


def cache_files(home) -> list[str]:
    """The cache's state files (not the stamps vouching for the log, written when the log is old enough)."""
    folder = os.path.join(str(home), "cache", "iii-logs")
    return sorted(f for f in os.listdir(folder) if not f.endswith(".stat")) if os.path.isdir(folder) else []


def cache_for(home, data_dir) -> LogCache:
    return LogCache(MemoryLog(log_path(data_dir)), folder=os.path.join(str(home), "cache", "iii-logs"))


def fresh_outputs(tmp_path, data_dir, name: str) -> list[str]:
    """The answers with no cache at all (a home never used)."""
    return outputs(tmp_path / name, data_dir)


def append_records(data_dir, records: list[Memory]) -> int:
    """Append the records as the worker would; returns how many bytes the log grew by."""
    before = os.path.getsize(log_path(data_dir))
    fsio.append_lines(log_path(data_dir), [m.to_line() for m in records])
    return os.path.getsize(log_path(data_dir)) - before


def newer_revisions(data_dir, count: int) -> list[Memory]:
    """New revisions of ``count`` existing records (edited text) and as many new ids."""
    log = MemoryLog(log_path(data_dir))
    log.refresh()
    olds = list(log.records.values())[:count]
    edited = [
        Memory(**{**o.to_obj(), "revision": o.revision + 1, "text": o.text + " database migration decided"})
        for o in olds
    ]
    new = [
        Memory(**{**o.to_obj(), "id": o.id[:-4] + "zzzz", "revision": 1, "text": "deploy staging release notes"})
        for o in olds
    ]
    return edited + new


def test_outputs_are_identical_with_and_without_the_cache(tmp_path, data_dir):
    home = tmp_path / "home"
    uncached = outputs(tmp_path / "nohome", data_dir, every=True)
    first = outputs(home, data_dir, every=True)  # writes the cache
    assert [f.rsplit(".", 1)[1] for f in cache_files(home)] == ["index", "log"]
    stamp = {f: os.stat(os.path.join(str(home), "cache", "iii-logs", f)).st_mtime_ns for f in cache_files(home)}
    second = outputs(home, data_dir, every=True)  # answers from it
    assert first == uncached and second == uncached
    assert uncached[0].startswith("{") and len(uncached[4].splitlines()) > 1000
    # An unchanged bank is not written again.
    assert {f: os.stat(os.path.join(str(home), "cache", "iii-logs", f)).st_mtime_ns for f in cache_files(home)} == stamp
    assert cache_for(home, data_dir).load()


def test_an_appended_log_replays_only_its_tail(tmp_path, data_dir):
    home = tmp_path / "home"
    outputs(home, data_dir)
    appended = append_records(data_dir, newer_revisions(data_dir, 40))
    cache = cache_for(home, data_dir)
    assert cache.load()
    delta = cache.log.refresh()
    assert not delta.reset and delta.bytes_read == appended and len(delta.changed) == 80 and len(delta.added) == 40
    full = MemoryLog(log_path(data_dir))
    full.refresh()
    assert list(cache.log.records.items()) == list(full.records.items())
    assert (cache.log.lines, cache.log.offset, cache.log.valid_lines) == (full.lines, full.offset, full.valid_lines)
    assert outputs(home, data_dir, every=True) == outputs(tmp_path / "nohome", data_dir, every=True)
    assert cache.save()  # the tail moved the state on: written again
    again = cache_for(home, data_dir)
    assert again.load() and again.log.refresh().empty


def test_a_restored_index_ranks_as_a_rebuilt_one_after_appends(tmp_path, data_dir):
    home = tmp_path / "home"
    datadir = DataDir(str(data_dir))
    engine = BankEngine(datadir.bank("bank"), MemoryConfig())
    cache = LogCache(engine.bank.log, engine.index, folder=str(home))
    assert not cache.load()
    engine.refresh()
    engine.preview(QUERIES[0], now_ms=NOW)
    assert cache.save()
    append_records(data_dir, newer_revisions(data_dir, 25))
    restored = BankEngine(DataDir(str(data_dir)).bank("bank"), MemoryConfig())
    restored_cache = LogCache(restored.bank.log, restored.index, folder=str(home))
    assert restored_cache.load() and restored_cache._index_loaded
    restored.refresh()
    rebuilt = BankEngine(DataDir(str(data_dir)).bank("bank"), MemoryConfig())
    rebuilt.refresh()
    for query in QUERIES:
        for now in (NOW, NOW + 86_400_000 * 30):
            assert restored.preview(query, now_ms=now).to_json() == rebuilt.preview(query, now_ms=now).to_json()
            assert restored.recall(query, now_ms=now, include_superseded=True).to_json(parts=True) == (
                rebuilt.recall(query, now_ms=now, include_superseded=True).to_json(parts=True)
            )
    index = BankIndex(rebuilt.bank.log)
    index.ensure_current()
    assert restored.index.n == index.n and restored.index.total_tokens == index.total_tokens
    assert restored.index.top(50) == index.top(50)


def test_history_lookups_survive_another_process_hash_seed(tmp_path, data_dir):
    home = tmp_path / "home"
    keepgui(home, data_dir, "memories", "bank", "--json", hashseed="1")
    cache = cache_for(home, data_dir)
    assert cache.load()
    full = MemoryLog(log_path(data_dir))
    full.refresh()
    ids = list(full.records)[:: max(1, len(full.records) // 30)]
    for mid in ids:
        assert cache.log.revision_lines(mid) == full.revision_lines(mid)
        assert len(full.revision_lines(mid)) >= 1
    assert cache.log.raw_lines() == full.raw_lines()


def _rewrite_same_size(path: str) -> None:
    """Change one character of a text in place, keeping the size and the times."""
    st = os.stat(path)
    with open(path, "rb") as fh:
        data = fh.read()
    at = data.index(b'"text":"') + len(b'"text":"')
    swapped = b"Q" if data[at : at + 1] != b"Q" else b"R"
    with open(path, "r+b") as fh:  # an in-place edit, as a person's editor might make
        fh.seek(at)
        fh.write(swapped)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("change", ["rewritten", "shortened", "replaced", "rewritten-inside"])
def test_a_changed_log_is_never_trusted(tmp_path, data_dir, change):
    home = tmp_path / "home"
    outputs(home, data_dir)
    path = log_path(data_dir)
    with open(path, "rb") as fh:
        data = fh.read()
    if change == "rewritten":
        _rewrite_same_size(path)
    elif change == "shortened":
        cut = data.rindex(b"\n", 0, len(data) // 2) + 1
        fsio.atomic_write(path, data[:cut])  # its first half, complete lines
    elif change == "replaced":
        fsio.atomic_write(path, data)  # the very same bytes, but another file: not trusted
    else:
        # a byte changed deep inside, the file then grown: the head and the guard still match
        middle = data.index(b'"text":"', len(data) // 2) + len(b'"text":"')
        with open(path, "r+b") as fh:
            fh.seek(middle)
            fh.write(b"Q" if data[middle : middle + 1] != b"Q" else b"R")
        append_records(data_dir, newer_revisions(data_dir, 3))
    assert not cache_for(home, data_dir).load()
    assert outputs(home, data_dir) == fresh_outputs(tmp_path, data_dir, "nohome")


def test_a_log_truncated_in_place_is_not_trusted(tmp_path, data_dir):
    home = tmp_path / "home"
    outputs(home, data_dir)
    path = log_path(data_dir)
    size = os.path.getsize(path)
    os.truncate(path, size // 2)  # the same inode, shorter than what was replayed
    assert not cache_for(home, data_dir).load()
    assert outputs(home, data_dir) == fresh_outputs(tmp_path, data_dir, "nohome")


@pytest.mark.parametrize(
    "damage", ["garbage", "truncated", "foreign-version", "empty", "a-folder", "other-log", "a-byte-changed"]
)
def test_a_bad_cache_file_costs_only_a_slower_start(tmp_path, data_dir, damage):
    home = tmp_path / "home"
    outputs(home, data_dir)
    folder = os.path.join(str(home), "cache", "iii-logs")
    for name in cache_files(home):
        target = os.path.join(folder, name)
        with open(target, "rb") as fh:
            body = fh.read()
        if damage == "a-folder":
            os.unlink(target)
            os.mkdir(target)
            continue
        if damage == "other-log":
            continue
        new = {
            "garbage": _MAGIC + os.urandom(5000),
            "truncated": body[: len(body) // 2],
            "foreign-version": body.replace(f"keepgui-log-cache {FORMAT} ".encode(), b"keepgui-log-cache 999 ", 1),
            "empty": b"",
            # one byte of a record (or a posting) changed, the file whole: msgpack still reads it
            "a-byte-changed": body[: len(body) * 3 // 4]
            + bytes([body[len(body) * 3 // 4] ^ 0x01])
            + body[len(body) * 3 // 4 + 1 :],
        }[damage]
        fsio.atomic_write(target, new)
    if damage == "other-log":
        # the cache of another bank's log put in this one's place: its path says it is not this log's
        other = tmp_path / "other"
        make_bank(str(other / "bank"), memories=100, lines=250, seed=3)
        keepgui(tmp_path / "otherhome", other, "memories", "bank", "--json")
        ours = cache_files(home)[0].split(".")[0]
        for name in cache_files(tmp_path / "otherhome"):
            with open(os.path.join(str(tmp_path / "otherhome"), "cache", "iii-logs", name), "rb") as fh:
                fsio.atomic_write(os.path.join(folder, ours + "." + name.split(".")[1]), fh.read())
    assert not cache_for(home, data_dir).load()
    assert outputs(home, data_dir) == fresh_outputs(tmp_path, data_dir, "nohome")


def test_a_home_that_cannot_be_written_still_answers(tmp_path, data_dir):
    blocker = tmp_path / "home-is-a-file"
    fsio.atomic_write(str(blocker), b"not a folder\n")
    assert outputs(blocker, data_dir) == fresh_outputs(tmp_path, data_dir, "nohome")


def test_an_unterminated_last_line_is_not_cached(tmp_path, data_dir):
    home = tmp_path / "home"
    record = make_records(3, 3, seed=5)[0]
    with open(log_path(data_dir), "ab") as fh:  # a write in progress: no newline yet
        fh.write(record.to_line().rstrip(b"\n"))
    log = MemoryLog(log_path(data_dir))
    log.refresh()
    assert log.tail_record is not None and log.snapshot() is None
    assert not LogCache(log, folder=str(home)).save()
    assert outputs(home, data_dir) == fresh_outputs(tmp_path, data_dir, "nohome")
