"""Trusting an unchanged log by its stat (issue 32): a cached state whose log's stat is the one
stamped before its every byte was read is restored without hashing the log; any rewrite (even one
that restores the size and the mtime), a racy stamp, an appended log or another inode is checked as
before. Real files; only the clock is moved on where a stamp must be older than the racy margin."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from keepgui.backends.iii import cache as cache_module
from keepgui.backends.iii.cache import RACY_NS, LogCache
from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.record import Memory
from keepgui.core import fsio
from tests.bench.synth import make_bank


@pytest.fixture
def log(tmp_path) -> str:
    return make_bank(str(tmp_path / "bank"), memories=300, lines=750, seed=5)


@pytest.fixture
def hashes(monkeypatch) -> list[int]:
    """How many times the cache hashed a prefix of the log (the length of each)."""
    calls: list[int] = []
    real = cache_module._hash_prefix

    def counting(path: str, dev: int, ino: int, length: int):  # type: ignore[no-untyped-def]
        calls.append(length)
        return real(path, dev, ino, length)

    monkeypatch.setattr(cache_module, "_hash_prefix", counting)
    return calls


@pytest.fixture
def later(monkeypatch) -> None:
    """The commands run twice the racy margin after the log was written (the wall clock moved on)."""
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + 2 * RACY_NS)


def cache_of(log: str, folder) -> LogCache:
    return LogCache(MemoryLog(log), folder=str(folder))


def cached(log: str, folder) -> LogCache:
    """A full replay of the log, saved."""
    cache = cache_of(log, folder)
    assert not cache.load()
    cache.log.refresh()
    assert cache.save()
    return cache


def replayed(log: str) -> dict[str, Memory]:
    full = MemoryLog(log)
    full.refresh()
    return dict(full.records.items())


def tick() -> None:
    """Let the kernel's file-time clock move on (it ticks every few milliseconds)."""
    time.sleep(0.05)


def test_an_unchanged_log_is_trusted_by_its_stat(tmp_path, log, hashes, later):
    cached(log, tmp_path)
    assert os.path.exists(cache_of(log, tmp_path).stamp_file)
    cache = cache_of(log, tmp_path)
    assert cache.load() and hashes == []
    assert cache.log.refresh().empty and dict(cache.log.records.items()) == replayed(log)
    assert not cache.save()  # nothing new: not even the stamp is written again
    listing = cache_of(log, tmp_path)
    assert listing.verified_listing_head() and listing.load() and hashes == []


def test_a_rewrite_in_place_that_restores_size_and_mtime_is_caught(tmp_path, log, hashes, later):
    cached(log, tmp_path)
    before = os.stat(log)
    with open(log, "rb") as fh:
        data = fh.read()
    memory = replayed(log)[next(iter(replayed(log)))]
    assert memory.text.encode() in data  # in each of its revisions' lines
    edited = memory.text[:-1] + ("x" if memory.text[-1] != "x" else "y")
    tick()
    with open(log, "r+b") as fh:  # in place: the same inode and size
        fh.write(data.replace(memory.text.encode(), edited.encode()))
    os.utime(log, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(log)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    cache = cache_of(log, tmp_path)
    assert not cache.load() and len(hashes) == 1  # hashed, and the digest no longer matches
    assert cache.log.refresh().reset
    assert cache.log.records[memory.id].text == edited
    assert dict(cache.log.records.items()) == replayed(log)


def test_a_racy_stamp_is_neither_written_nor_trusted_and_the_next_hash_stamps_it(tmp_path, log, hashes, monkeypatch):
    cached(log, tmp_path)  # the log was written just now: racy
    assert not os.path.exists(cache_of(log, tmp_path).stamp_file)
    cache = cache_of(log, tmp_path)
    assert cache.load() and len(hashes) == 1
    assert not cache.save()  # what the hash earned is racy too
    fresh = cache.log.resume_point()
    assert fresh is not None
    # A stamp of this very stat, taken within the margin of the log's last change, is not trusted;
    # the same stamp taken later is (the stat alone decides).
    st = os.stat(log)
    for seen_ns, trusted in ((st.st_ctime_ns + RACY_NS // 2, False), (st.st_ctime_ns + 2 * RACY_NS, True)):
        stamp = cache_module._Stamp(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, seen_ns, fresh[1])
        fsio.atomic_write(cache.stamp_file, cache_module._encode_stamp(stamp))
        hashes.clear()
        assert cache_of(log, tmp_path).load() and hashes == ([] if trusted else [st.st_size])
    os.unlink(cache.stamp_file)
    # Later, the prefix hashed again earns a stamp that holds from then on.
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + 2 * RACY_NS)
    hashes.clear()
    cache = cache_of(log, tmp_path)
    assert cache.load() and len(hashes) == 1
    assert cache.save() and os.path.exists(cache.stamp_file)
    again = cache_of(log, tmp_path)
    assert again.load() and len(hashes) == 1
    assert dict(again.log.records.items()) == replayed(log)


def test_an_appended_log_is_hashed_and_replays_its_tail(tmp_path, log, hashes, later):
    cached(log, tmp_path)
    old = next(iter(replayed(log).values()))
    newer = Memory(**{**old.to_obj(), "revision": old.revision + 1, "text": old.text + " appended"})
    before = os.path.getsize(log)
    fsio.append_lines(log, [newer.to_line()])
    cache = cache_of(log, tmp_path)
    assert cache.load() and hashes == [before]
    delta = cache.log.refresh()
    assert not delta.reset and delta.bytes_read == os.path.getsize(log) - before and delta.changed == [old.id]
    assert dict(cache.log.records.items()) == replayed(log)


def test_another_inode_means_a_full_replay(tmp_path, log, hashes, later):
    cached(log, tmp_path)
    copy = log + ".new"
    shutil.copy2(log, copy)
    os.replace(copy, log)  # the same bytes and mtime, another file
    cache = cache_of(log, tmp_path)
    assert not cache.load()
    assert cache.log.refresh().reset and dict(cache.log.records.items()) == replayed(log)


def test_a_trusted_prefix_read_on_is_hashed_so_the_next_cache_is_checked_whole(tmp_path, log, hashes, later):
    cached(log, tmp_path)
    cache = cache_of(log, tmp_path)
    assert cache.load() and hashes == []
    old = next(iter(replayed(log).values()))
    fsio.append_lines(log, [Memory(**{**old.to_obj(), "revision": old.revision + 1}).to_line()])
    assert not cache.log.refresh().reset and len(hashes) == 1  # the prefix, hashed from the file
    assert cache.save()
    again = cache_of(log, tmp_path)
    assert again.load() and len(hashes) == 2  # read on since its stat: no stamp vouches for it
    assert again.log.refresh().empty and dict(again.log.records.items()) == replayed(log)


def test_a_trusted_prefix_rewritten_before_it_is_read_on_is_never_cached_as_read(tmp_path, log, hashes, later):
    cached(log, tmp_path)
    cache = cache_of(log, tmp_path)
    assert cache.load() and hashes == []
    with open(log, "rb") as fh:
        data = fh.read()
    middle = len(data) // 2  # past the head and the guard the log compares on refresh
    tick()
    with open(log, "r+b") as fh:
        fh.seek(middle)
        fh.write(b" " if data[middle : middle + 1] != b" " else b"_")
    old = next(iter(replayed(log).values()))
    fsio.append_lines(log, [Memory(**{**old.to_obj(), "revision": old.revision + 1}).to_line()])
    cache.log.refresh()
    assert cache.save()  # with a digest no prefix has
    again = cache_of(log, tmp_path)
    assert not again.load()
    again.log.refresh()
    assert dict(again.log.records.items()) == replayed(log)
