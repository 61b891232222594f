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
