"""keepgui's history is bounded (issue 24.10): the oldest versions' bytes go first, the latest version of
every file and the removed-entries log stay, and a thinned version says why it cannot be read."""

from __future__ import annotations

import os

import pytest

from keepgui.core import history as history_module
from keepgui.core.errors import Unreadable
from keepgui.core.history import History


def _blob_bytes(root: str) -> int:
    total = 0
    for parent, _dirs, names in os.walk(os.path.join(root, "blobs")):
        total += sum(os.lstat(os.path.join(parent, n)).st_size for n in names)
    return total


def test_thin_drops_the_oldest_versions_and_keeps_every_files_latest(tmp_path):
    h = History(tmp_path / "history")
    files = [str(tmp_path / f"f{n}.md") for n in range(3)]
    for round_ in range(20):
        for n, path in enumerate(files):
            h.record(path, (f"{n}:{round_}:" + "x" * 10_000).encode(), at=1_000 + round_ * 10 + n)
    assert _blob_bytes(h.root) > 600_000
    freed = h.thin(cap=150_000)
    assert freed > 0 and h.size()[1] <= 150_000
    for n, path in enumerate(files):
        versions = h.versions(path)
        assert len(versions) == 20  # every version still listed
        assert h.read(versions[-1]).startswith(f"{n}:19:".encode())  # the latest is never thinned
        with pytest.raises(Unreadable, match="thins the oldest versions first"):
            h.read(versions[0])  # the oldest went first
    assert h.thin(cap=150_000) == 0  # under the cap: nothing more to do


def test_recording_keeps_the_history_under_its_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("KEEPGUI_HISTORY_CAP", "200000")
    monkeypatch.setattr(history_module, "THIN_EVERY", 5)
    h = History(tmp_path / "history")
    path = str(tmp_path / "keep.md")
    for round_ in range(120):
        h.record(path, (f"{round_}:" + "y" * 8_000).encode())
    assert h.size()[1] < 200_000 + 5 * 8_100  # at most THIN_EVERY versions past the cap between looks
    assert h.read(h.latest(path)).startswith(b"119:")  # type: ignore[arg-type]


def test_the_size_is_looked_at_once_until_this_process_count_passes_the_cap(tmp_path, monkeypatch):
    """A look walks the whole history (a year of versions is many thousand files): a first sight of a
    folder of 1,000 files looked 20 times, ~1 s before its rows. Now: at the first store, then only when
    what this process stored passes the cap (or every WALK_EVERY stores)."""
    monkeypatch.setenv("KEEPGUI_HISTORY_CAP", "80000")
    h = History(tmp_path / "history")
    walks = []
    real_size = h.size
    monkeypatch.setattr(h, "size", lambda: walks.append(1) or real_size())
    for n in range(60):
        h.record(str(tmp_path / f"f{n}.md"), f"{n}:".encode() + b"z" * 1_000)
    assert len(walks) == 1  # ~72 KB stored (blobs and index lines): under the cap, never looked again
    for n in range(60, 80):
        h.record(str(tmp_path / f"f{n}.md"), f"{n}:".encode() + b"z" * 1_000)
    assert len(walks) == 2  # the count passed 80 KB: looked at once (nothing to thin: all are latest)
    for n in range(80, 80 + history_module.THIN_EVERY):
        h.record(str(tmp_path / f"f{n}.md"), f"{n}:".encode() + b"z" * 1_000)
    assert len(walks) == 3  # still over: looked again after THIN_EVERY stores, not at each one
    assert h.size()[1] > 80_000  # every version is its file's latest: none was thinned


def test_another_process_stores_are_seen_at_the_next_walk(tmp_path, monkeypatch):
    monkeypatch.setenv("KEEPGUI_HISTORY_CAP", "200000")
    monkeypatch.setattr(history_module, "WALK_EVERY", 10)
    ours, theirs = History(tmp_path / "history"), History(tmp_path / "history")
    path = str(tmp_path / "keep.md")
    ours.record(path, b"first")
    for round_ in range(40):
        theirs.record(path, (f"{round_}:" + "y" * 8_000).encode())  # theirs thins its own as it goes
    monkeypatch.setenv("KEEPGUI_HISTORY_CAP", "100000")
    for round_ in range(10):
        ours.record(str(tmp_path / "other.md"), f"{round_}".encode())
    assert ours.size()[1] <= 100_000  # the tenth store looked, saw the other's versions and thinned them


def test_record_many_stores_what_record_would_with_each_blob_before_its_index_line(tmp_path, monkeypatch):
    from keepgui.core import fsio

    h = History(tmp_path / "history")
    paths = [str(tmp_path / f"f{n}.md") for n in range(5)]
    h.record(paths[0], b"already the latest")
    order: list[str] = []
    real_sync = fsio.sync_files

    def synced(files):
        files = list(files)
        for path in files:  # each blob whole on disk before any index line names it
            if os.sep + "blobs" + os.sep in path:
                assert not any(os.sep + "index" + os.sep in p for p in order)
        order.extend(files)
        return real_sync(files)

    monkeypatch.setattr(fsio, "sync_files", synced)
    h.record_many(
        [(paths[0], b"already the latest"), *((p, f"body {p}".encode()) for p in paths[1:]), (paths[4], b"dup")]
    )
    assert len(h.versions(paths[0])) == 1  # the same bytes as its latest: not stored again
    for p in paths[1:4]:
        (version,) = h.versions(p)
        assert h.read(version) == f"body {p}".encode() and version.source == "seen"
    assert [h.read(v) for v in h.versions(paths[4])] == [f"body {paths[4]}".encode(), b"dup"]  # in order
    assert sum(os.sep + "index" + os.sep in p for p in order) == 5 and sum("blobs" in p for p in order) == 5
