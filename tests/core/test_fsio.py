"""The only writer: atomic replace, locked append with tail repair, stamps and conflicts."""

from __future__ import annotations

import os
import stat

import pytest

from keepgui.core import fsio
from keepgui.core.errors import Conflict, KeepguiError, ReadOnly, WriteFailed


def test_atomic_write_creates_and_replaces_keeping_mode(tmp_path):
    path = tmp_path / "rule.md"
    fsio.atomic_write(path, b"one")
    assert path.read_bytes() == b"one"
    os.chmod(path, 0o640)
    fsio.atomic_write(path, b"two")
    assert path.read_bytes() == b"two"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["rule.md"]  # no temp file left behind


def test_temp_names_never_end_in_md(tmp_path):
    name = os.path.basename(fsio.temp_name_for(tmp_path / "style.md"))
    assert name.startswith(".") and name.endswith(".tmp") and not name.endswith(".md")
    assert fsio.is_temp_name(name) and fsio.is_temp_name(".style.md.tmp") and not fsio.is_temp_name("style.md")


def test_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "keep.md"
    path.write_bytes(b"original")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsio.os, "replace", boom)
    with pytest.raises(WriteFailed, match=r"keep\.md: No space left on device; nothing was saved"):
        fsio.atomic_write(path, b"new content")
    assert path.read_bytes() == b"original"
    assert os.listdir(tmp_path) == ["keep.md"]


def test_stamp_conflict_refuses_and_content_decides(tmp_path):
    path = tmp_path / "a.md"
    path.write_bytes(b"v1")
    data, stamp = fsio.read_stamped(path)
    assert data == b"v1" and stamp.exists and stamp.size == 2
    os.utime(path, ns=(1, 1))  # touched, not changed: no conflict
    fsio.atomic_write(path, b"v2", expect=stamp)
    with pytest.raises(Conflict) as info:
        fsio.atomic_write(path, b"v3", expect=stamp)  # the file is v2 now, not what was read
    assert str(path) in str(info.value) and path.read_bytes() == b"v2"
    with pytest.raises(Conflict):
        fsio.atomic_write(path, b"x", expect=fsio.Stamp.missing())  # created by someone else
    missing = tmp_path / "new.md"
    fsio.atomic_write(missing, b"fresh", expect=fsio.Stamp.missing())
    assert missing.read_bytes() == b"fresh"


def test_remove_file_checks_the_stamp(tmp_path):
    path = tmp_path / "r.md"
    path.write_bytes(b"a")
    _, stamp = fsio.read_stamped(path)
    path.write_bytes(b"b")
    with pytest.raises(Conflict):
        fsio.remove_file(path, expect=stamp)
    assert path.exists()
    fsio.remove_file(path)
    assert not path.exists()


def test_links_are_never_replaced_or_appended_through(tmp_path):
    target = tmp_path / "outside.md"
    target.write_bytes(b"keep me")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    with pytest.raises(ReadOnly):
        fsio.atomic_write(link, b"overwritten")
    with pytest.raises(ReadOnly):
        fsio.append_lines(link, [b"x\n"])
    assert target.read_bytes() == b"keep me"


def test_append_repairs_a_torn_tail_in_the_same_write(tmp_path):
    path = tmp_path / "memories.jsonl"
    path.write_bytes(b'{"complete":1}\n{"torn":')
    offset = fsio.append_lines(path, [b'{"new":1}\n', b'{"new":2}\n'])
    assert path.read_bytes() == b'{"complete":1}\n{"torn":\n{"new":1}\n{"new":2}\n'
    assert offset == len(b'{"complete":1}\n{"torn":\n')


def test_append_refuses_anything_but_whole_lines(tmp_path):
    path = tmp_path / "m.jsonl"
    for bad in (b"no newline", b"two\nlines\n"):
        with pytest.raises(ValueError, match="exactly one \\\\n-terminated line"):
            fsio.append_lines(path, [bad])
    assert not path.exists() or path.read_bytes() == b""


def test_make_dirs_and_rename_durably(tmp_path):
    fsio.make_dirs(tmp_path / "a" / "b" / "c")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    fsio.rename_durably(tmp_path / "a", tmp_path / "z")
    assert (tmp_path / "z" / "b").is_dir()
    (tmp_path / "y").mkdir()
    with pytest.raises(FileExistsError):
        fsio.rename_durably(tmp_path / "z", tmp_path / "y")


def test_read_limit(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 100)
    with pytest.raises(Exception, match="more than"):
        fsio.read_stamped(path, limit=10)


def test_a_write_that_expects_nothing_only_stats_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "rule.md"
    path.write_bytes(b"old " * 1000)
    os.chmod(path, 0o640)

    def no_reading(*a, **k):
        raise AssertionError("the old file was read")

    monkeypatch.setattr(fsio, "read_stamped", no_reading)
    fsio.atomic_write(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(os.stat(path).st_mode) == 0o640
    fsio.remove_file(path)
    assert not path.exists()


def test_a_folder_or_a_fifo_is_refused_as_before(tmp_path):
    folder = tmp_path / "rule.md"
    folder.mkdir()
    for call in (lambda p, e: fsio.atomic_write(p, b"x", expect=e), lambda p, e: fsio.remove_file(p, expect=e)):
        for expect in (None, fsio.Stamp.missing()):
            with pytest.raises(KeepguiError, match="is a folder, not a file"):
                call(folder, expect)
    if not hasattr(os, "mkfifo"):
        return
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    for expect in (None, fsio.Stamp.missing()):
        with pytest.raises(KeepguiError, match="is not a regular file"):
            fsio.atomic_write(fifo, b"x", expect=expect)
        with pytest.raises(KeepguiError, match="is not a regular file"):
            fsio.remove_file(fifo, expect=expect)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and folder.is_dir()
