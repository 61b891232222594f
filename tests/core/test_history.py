"""keepgui's own history: versions deduplicated by hash, robust index reading, removed entries."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.core.errors import NotFound, Unreadable
from keepgui.core.history import History, file_key
from keepgui.core.jsonl import dump_line
from keepgui.core.paths import app_data_dir


@pytest.fixture
def history(tmp_path):
    return History(tmp_path / "history")


def test_versions_are_deduplicated_by_content(history, tmp_path):
    path = tmp_path / "keep.md"
    a1 = history.record(path, b"- a\n", at=1000)
    assert history.record(path, b"- a\n", at=2000) == a1  # same as the latest: no-op
    b = history.record(path, b"- a\n- b\n", source="saved", at=3000)
    a2 = history.record(path, b"- a\n", at=4000)  # back to an older content: a new version
    versions = history.versions(path)
    assert [v.seq for v in versions] == [0, 1, 2] and versions == [a1, b, a2]
    assert [v.at for v in versions] == [1000, 3000, 4000] and b.source == "saved"
    assert a1.sha256 == a2.sha256 and a1.size == 4
    assert history.read(b) == b"- a\n- b\n" and history.latest(path) == a2
    assert history.previous(a2) == b and history.previous(a1) is None
    assert history.find(path, b.sha256[:10]) == b
    with pytest.raises(NotFound):
        history.find(path, "0" * 10)
    # one blob per content
    blobs = [n for _d, _s, names in os.walk(os.path.join(history.root, "blobs")) for n in names]
    assert len(blobs) == 2


def test_versions_are_kept_per_file(history, tmp_path):
    history.record(tmp_path / "a" / "keep.md", b"x")
    history.record(tmp_path / "b" / "keep.md", b"x")
    assert len(history.versions(tmp_path / "a" / "keep.md")) == 1
    assert history.versions(tmp_path / "missing.md") == [] and history.latest(tmp_path / "missing.md") is None


def test_paths_are_identified_through_links(history, tmp_path):
    os.makedirs(tmp_path / "real")
    os.symlink(tmp_path / "real", tmp_path / "link")
    history.record(tmp_path / "link" / "USER.md", b"u")
    assert len(history.versions(tmp_path / "real" / "USER.md")) == 1
    assert file_key(tmp_path / "link" / "USER.md") == file_key(tmp_path / "real" / "USER.md")


def test_corrupt_and_torn_index_lines_are_skipped_and_reported(history, tmp_path):
    path = tmp_path / "MEMORY.md"
    history.record(path, b"one")
    index = history._index_path(file_key(path))
    with open(index, "ab") as fh:
        fh.write(b'garbage\n[1]\n{"path": "other"}\n')
        fh.write(json.dumps({"path": file_key(path), "sha256": "zz", "size": 1, "at": 1}).encode() + b"\n")
        fh.write(b'{"path": "torn')  # a crash half-way through a line
    versions, problems = history.scan(path)
    assert len(versions) == 1 and len(problems) == 5
    assert "skipped" in str(problems[0]) and problems[0].line == 2
    history.record(path, b"two")  # appending repairs the torn tail first
    assert [history.read(v) for v in history.versions(path)] == [b"one", b"two"]
    assert len(history.problems(path)) == 5


def test_a_damaged_or_missing_blob_is_unreadable(history, tmp_path):
    version = history.record(tmp_path / "SOUL.md", b"soul")
    blob = history._blob_path(version.sha256)
    with open(blob, "wb") as fh:
        fh.write(b"tampered")
    with pytest.raises(Unreadable, match="damaged"):
        history.read(version)
    history.record(tmp_path / "other.md", b"soul")  # recording the same bytes repairs the blob
    assert history.read(version) == b"soul"
    os.unlink(blob)
    with pytest.raises(Unreadable, match="missing"):
        history.read(version)


def test_removed_entries_log(history, tmp_path):
    keep = str(tmp_path / "ws" / "keep.md")
    first = history.log_removed(
        path=keep,
        workspace=str(tmp_path / "ws"),
        text="Tea",
        raw="* Tea",
        line=0,
        number=1,
        before=None,
        after="Figs",
        at=10,
    )
    second = history.log_removed(
        path=keep,
        workspace=str(tmp_path / "ws"),
        text="Figs",
        raw="- Figs",
        line=0,
        number=1,
        before=None,
        after=None,
        reason="replaced",
        at=20,
    )
    other = history.log_removed(
        path=str(tmp_path / "x.md"),
        workspace=str(tmp_path),
        text="X",
        raw="- X",
        line=3,
        number=2,
        before="W",
        after=None,
        at=30,
    )
    assert history.last_removed(keep) == second
    history.mark_restored(second, at=40)
    assert history.last_removed(keep) == first
    assert [e.text for e in history.removed(keep)] == ["Tea"]
    assert [e.text for e in history.removed(keep, include_restored=True)] == ["Tea", "Figs"]
    assert history.get_removed(second.id).restored_at == 40
    assert [e.id for e in history.removed()] == [first.id, other.id]
    history.cancel_removed(first)
    assert history.last_removed(keep) is None
    with pytest.raises(NotFound):
        history.get_removed("nope")


def test_removed_log_survives_corrupt_lines(history, tmp_path):
    keep = str(tmp_path / "keep.md")
    history.log_removed(
        path=keep, workspace=str(tmp_path), text="Tea", raw="- Tea", line=0, number=1, before=None, after=None
    )
    with open(history.removed_log, "ab") as fh:
        fh.write(b'not json\n{"event": "removed", "id": "x"}\n{"event": "what"}\n{"event": "removed", "id": 5,')
    entries, problems = history.scan_removed()
    assert [e.text for e in entries] == ["Tea"] and len(problems) == 4
    history.log_removed(
        path=keep, workspace=str(tmp_path), text="Figs", raw="- Figs", line=1, number=2, before="Tea", after=None
    )
    assert [e.text for e in history.removed(keep)] == ["Tea", "Figs"]


def test_default_root_is_keepguis_data_dir():
    assert History().root == os.path.join(app_data_dir(), "history")
    assert os.environ["KEEPGUI_HOME"] in History().root


def test_json_lines_are_written_compact_and_in_utf_8():
    assert dump_line({"text": "café ☕", "n": [1, 2]}) == '{"text":"café ☕","n":[1,2]}\n'.encode()
