"""The only writer: atomic replace, locked append with tail repair, stamps and conflicts."""

from __future__ import annotations

import os
import stat
import sys

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


def test_lines_around_reads_only_what_it_shows(tmp_path):
    """The Problems view's place of a log line (#16.10): lines around it, each cut, from a file of any size."""
    from keepgui.core.fsio import lines_around

    path = tmp_path / "log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 200_001)) + b"last, unterminated")
    assert lines_around(path, 3, 2) == [(n, f"line {n}") for n in range(1, 6)]
    assert lines_around(path, 150_000, 1) == [
        (149_999, "line 149999"),
        (150_000, "line 150000"),
        (150_001, "line 150001"),
    ]
    assert lines_around(path, 200_001, 1) == [(200_000, "line 200000"), (200_001, "last, unterminated")]
    path.write_bytes(b"a\n" + b"x" * 5_000_000 + b"\n\xff\xfeb\n")
    lines = lines_around(path, 2, 1, width=100)
    assert [(n, len(t)) for n, t in lines] == [(1, 1), (2, 100), (3, 3)] and lines[2][1] == "\ufffd\ufffdb"


def _write_in_the_window(monkeypatch, path, theirs: bytes):
    """Make another writer replace ``path`` (as an agent's Edit tool does: temp file, rename, no lock)
    right after atomic_write's last check, in the moment before its own rename."""
    real = fsio.check_unchanged
    calls = []

    def check_then_someone_writes(p, expect):
        result = real(p, expect)
        calls.append(p)
        if len(calls) == 2:  # the check just before the rename
            other = str(path) + ".agent"
            with open(other, "wb") as fh:
                fh.write(theirs)
            os.replace(other, path)
        return result

    monkeypatch.setattr(fsio, "check_unchanged", check_then_someone_writes)
    return calls


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2(RENAME_EXCHANGE) is Linux's")
def test_a_write_landing_between_the_last_check_and_the_rename_is_kept_and_ours_refused(tmp_path, monkeypatch):
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"as read\n")
    _data, stamp = fsio.read_stamped(path)
    calls = _write_in_the_window(monkeypatch, path, b"as read\nthe agent's new line\n")
    with pytest.raises(Conflict):
        fsio.atomic_write(path, b"as read\nkeepgui's line\n", expect=stamp)
    assert len(calls) == 2
    assert path.read_bytes() == b"as read\nthe agent's new line\n"  # the agent's write stands
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]  # no temporary file left


def test_an_exchange_the_filesystem_refuses_falls_back_to_a_replace(tmp_path, monkeypatch):
    path = tmp_path / "f.md"
    path.write_bytes(b"old\n")
    _data, stamp = fsio.read_stamped(path)
    monkeypatch.setattr(fsio, "_exchange", lambda a, b: False, raising=False)
    fsio.atomic_write(path, b"new\n", expect=stamp)
    assert path.read_bytes() == b"new\n" and [p.name for p in tmp_path.iterdir()] == ["f.md"]


def test_create_new_never_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / "note.md"
    stamp = fsio.create_new(path, b"first")
    assert path.read_bytes() == b"first" and stamp.same_content(fsio.current_stamp(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 & ~_umask()
    with pytest.raises(FileExistsError):
        fsio.create_new(path, b"second")
    assert path.read_bytes() == b"first"
    # a dangling link or a folder under the name counts as taken too
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        fsio.create_new(tmp_path / "gone.md", b"x")
    assert not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.md", "note.md"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _create_racer(path: str, label: str, queue) -> None:
    try:
        fsio.create_new(path, (label * 20_000).encode())
        queue.put(("made", label))
    except FileExistsError:
        queue.put(("taken", label))


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_create_new_racing_processes_one_wins_whole(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    path = str(tmp_path / "2025-01-01T00-00-00-race.md")
    procs = [ctx.Process(target=_create_racer, args=(path, chr(ord("a") + i), queue)) for i in range(8)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
    results = [queue.get(timeout=5) for _ in procs]
    made = [label for what, label in results if what == "made"]
    assert len(made) == 1, results
    with open(path, "rb") as fh:
        assert fh.read() == (made[0] * 20_000).encode()  # whole, the winner's alone
    assert os.listdir(tmp_path) == [os.path.basename(path)]


def test_create_new_without_hard_links_creates_exclusively(tmp_path, monkeypatch):
    import errno

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    fsio.create_new(tmp_path / "a.md", b"one")
    assert (tmp_path / "a.md").read_bytes() == b"one"
    with pytest.raises(FileExistsError):
        fsio.create_new(tmp_path / "a.md", b"two")
    assert (tmp_path / "a.md").read_bytes() == b"one" and os.listdir(tmp_path) == ["a.md"]


def test_create_new_failure_names_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio, "_os_write", full)
    with pytest.raises(WriteFailed, match=r"new\.md: No space left on device; nothing was created"):
        fsio.create_new(tmp_path / "new.md", b"x")
    assert os.listdir(tmp_path) == []


def test_create_new_lets_exactly_one_of_many_racing_processes_create_the_file(tmp_path):
    """An exclusive create (a lock, an ownership marker): of eight processes started together, one wins
    and the others get FileExistsError; the file holds the winner's bytes whole."""
    import subprocess
    import sys

    target = tmp_path / "lock"
    script = (
        "import sys, time\n"
        "from keepgui.core import fsio\n"
        "while time.time() < float(sys.argv[2]): pass\n"
        "try:\n"
        "    fsio.create_new(sys.argv[1], (sys.argv[3] * 4096).encode())\n"
        "    print('won')\n"
        "except FileExistsError:\n"
        "    print('lost')\n"
    )
    import time

    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(target), start, str(i)], stdout=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    results = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(results) == ["lost"] * 7 + ["won"]
    data = target.read_bytes()
    assert len(data) == 4096 and len(set(data)) == 1
    with pytest.raises(FileExistsError):
        fsio.create_new(target, b"again")
    assert target.read_bytes() == data


def mapped_resident_kb(path) -> int:
    """The resident kB of this process's mappings of ``path`` (Linux's /proc/self/smaps)."""
    total, ours = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            first = line.split(maxsplit=1)[0]
            if "-" in first and not first.endswith(":"):  # a mapping's header line
                ours = line.rstrip("\n").endswith(" " + str(path))
            elif ours and first == "Rss:":
                total += int(line.split()[1])
    return total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/self/smaps")
def test_a_mapped_file_s_pages_are_given_back_and_read_again_when_touched(tmp_path):
    import mmap

    path = tmp_path / "cache.bin"
    data = os.urandom(4 << 20)
    path.write_bytes(data)
    with open(path, "rb") as fh:
        view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    assert bytes(view) == data  # every page touched
    assert mapped_resident_kb(path) >= 4000
    assert fsio.release_pages(view[100:])  # a view into the map gives the whole map back
    assert mapped_resident_kb(path) == 0
    assert bytes(view[-5:]) == data[-5:]  # read again when touched (the kernel maps some pages around it)
    assert 0 < mapped_resident_kb(path) < 4096
    assert not fsio.release_pages(memoryview(b"not a mapping"))
