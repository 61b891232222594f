"""The watcher: bursts coalesced into one change set, temp files ignored, changes classified by path."""

from __future__ import annotations

import os
import queue
import time

from keepgui.core import fsio
from keepgui.core.watch import ChangeSet, Watcher


def collect(tmp_path, quiet_ms=150, max_delay_ms=1000):
    got: queue.Queue = queue.Queue()
    watcher = Watcher(got.put, quiet_ms=quiet_ms, max_delay_ms=max_delay_ms)
    watcher.start()
    assert watcher.watch(str(tmp_path))
    return watcher, got


def drain(got: queue.Queue, settle: float = 0.6) -> list[ChangeSet]:
    out = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            out.append(got.get(timeout=settle))
        except queue.Empty:
            if out:
                break
    return out


def test_a_burst_arrives_as_one_change_set(tmp_path):
    (tmp_path / "main").mkdir()
    watcher, got = collect(tmp_path)
    try:
        log = tmp_path / "main" / "memories.jsonl"
        for i in range(20):  # an agent appending in a burst
            fsio.append_lines(log, [f'{{"n":{i}}}\n'.encode()])
        fsio.atomic_write(tmp_path / "main" / "style.md", b"# Style")  # temp file + rename
        batches = drain(got)
        assert len(batches) == 1
        paths = batches[0].paths
        assert str(log) in paths and str(tmp_path / "main" / "style.md") in paths
        assert not any(fsio.is_temp_name(os.path.basename(p)) for p in paths)
        assert ("main", "memories.jsonl") in batches[0].under(str(tmp_path))
    finally:
        watcher.stop()


def test_a_steady_stream_is_still_delivered_within_the_max_delay(tmp_path):
    watcher, got = collect(tmp_path, quiet_ms=300, max_delay_ms=500)
    try:
        start = time.monotonic()
        first = None
        while time.monotonic() - start < 1.6:
            fsio.append_lines(tmp_path / "stream.jsonl", [b"{}\n"])
            time.sleep(0.05)  # never quiet for 300 ms
            if first is None and not got.empty():
                first = time.monotonic() - start
        assert first is not None and first < 1.2
    finally:
        watcher.stop()


def test_unwatched_and_missing_roots(tmp_path):
    watcher, got = collect(tmp_path)
    try:
        assert not watcher.watch(str(tmp_path / "does-not-exist"))
        watcher.unwatch(str(tmp_path))
        (tmp_path / "after.md").write_text("x")
        assert drain(got, settle=0.5) == []
    finally:
        watcher.stop()


def test_change_set_helpers(tmp_path):
    root = str(tmp_path)
    cs = ChangeSet(frozenset({root, os.path.join(root, "a", "b.md"), "/elsewhere/x"}))
    assert sorted(cs.under(root)) == [(), ("a", "b.md")]
    assert cs.touches(os.path.join(root, "a", "b.md")) and not cs.touches(os.path.join(root, "c"))


def test_stopping_while_files_change_logs_no_error(tmp_path, caplog):
    """#16.3: watchdog's emitter, stopped while an event arrives, logged "InotifyEmitter.queue_events()
    called when the thread is inactive" at ERROR on quit; the watcher stops without it."""
    import logging
    import threading

    caplog.set_level(logging.WARNING, logger="watchdog")
    # The record itself, as watchdog logs it, is dropped; any other watchdog error is not.
    logging.getLogger("watchdog.observers.inotify").error(
        "InotifyEmitter.queue_events() called when the thread is inactive"
    )
    logging.getLogger("watchdog.observers.inotify").error("some other trouble")
    assert [r.getMessage() for r in caplog.records] == ["some other trouble"]
    caplog.clear()
    for k in range(4):
        (tmp_path / f"b{k}").mkdir()
    for attempt in range(12):
        watcher, _got = collect(tmp_path)
        stop = threading.Event()

        def write(stop: threading.Event = stop) -> None:
            i = 0
            while not stop.is_set():
                (tmp_path / f"b{i % 4}" / "x").write_text(str(i))
                i += 1
                time.sleep(0.001)

        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.03 + 0.02 * (attempt % 4))
        watcher.stop()
        stop.set()
        writer.join()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_single_append_is_delivered_at_once_not_after_the_quiet_period(tmp_path):
    watcher, got = collect(tmp_path, quiet_ms=1000, max_delay_ms=3000)
    try:
        log = tmp_path / "memories.jsonl"
        log.write_bytes(b"")
        drain(got, settle=0.3)  # the file's creation
        time.sleep(0.2)
        start = time.monotonic()
        fsio.append_lines(log, [b'{"n":1}\n'])
        batch = got.get(timeout=5)
        took = time.monotonic() - start
        assert str(log) in batch.paths
        assert took < 0.5, f"one appended line waited {took * 1000:.0f} ms (the quiet period is 1000 ms)"
    finally:
        watcher.stop()
