"""A full disk never leaves half a record, an empty bank folder or a torn rule (issue #13.2).

After any failed append the log ends as it was (or, when another writer appended after
keepgui's partial bytes, in a newline); the error names the file and says nothing was
saved. Two ways in: a real, small tmpfs filled up (skipped where it cannot be mounted),
and an ``ENOSPC`` (or a short write) injected at every ``write()`` call of fsio in turn.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.store import DataDir
from keepgui.core import fsio
from keepgui.core.errors import WriteFailed
from tests.conftest import errors_of
from tests.reliability.common import run_cli

BIG_TEXT = "a record of about two kilobytes " + "x" * 2000
BIG_TEXT = BIG_TEXT[:1990]


# ---------------------------------------------------------------------- a real full filesystem


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs mounted for the test (root and a kernel that allows it), else skip."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'mount failed'})")
    try:
        yield str(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: str) -> str:
    """Fill the filesystem of ``folder`` until no more whole page can be written to a new file."""
    filler = os.path.join(folder, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            try:
                if os.write(fd, b"f" * 4096) < 4096:
                    break
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    finally:
        os.close(fd)
    return filler


def _room_in_last_page(path: str) -> int:
    size = os.path.getsize(path)
    return -size % 4096


def test_a_save_on_a_full_disk_fails_cleanly_and_names_the_file(small_tmpfs):
    data_dir = os.path.join(small_tmpfs, "memory")
    bank, _ = DataDir(data_dir).ensure_bank("main")
    bank.save("a first memory on the small disk", now=1)
    # Pad the log so its last page has about 800 bytes of room, then fill everything else.
    n = 0
    while not 500 < _room_in_last_page(bank.log_path) < 1100:
        size = min(max(_room_in_last_page(bank.log_path) - 1050, 10), 1900)
        bank.save(f"padding {n} " + "p" * size, now=2)
        n += 1
    filler = _fill(small_tmpfs)
    before = Path(bank.log_path).read_bytes()
    assert 0 < _room_in_last_page(bank.log_path) < 2000

    result = run_cli(data_dir, "save", "main", BIG_TEXT)
    assert result.rc == 1 and len(errors_of(result.stderr)) == 1, result.stderr  # (and the old form's note)
    assert bank.log_path in result.stderr and "No space left on device" in result.stderr
    assert "nothing was saved" in result.stderr and "Traceback" not in result.stderr
    assert Path(bank.log_path).read_bytes() == before

    # Without the reservation (a filesystem lacking fallocate) the write is cut short,
    # and the partial bytes are taken back.
    saved = fsio._fallocate
    fsio._fallocate = None
    try:
        with pytest.raises(WriteFailed, match="nothing was saved"):
            DataDir(data_dir).bank("main").save(BIG_TEXT, now=3)
    finally:
        fsio._fallocate = saved
    assert Path(bank.log_path).read_bytes() == before

    result = run_cli(data_dir, "bank", "create", "newbank")
    assert result.rc == 1 and "nothing was created" in result.stderr and "Traceback" not in result.stderr
    assert sorted(os.listdir(data_dir)) == ["main"]  # no bank folder, no temporary folder left

    rule_before = os.listdir(bank.rules_path)
    result = run_cli(data_dir, "rule-set", "main", "style", "--stdin", stdin="# Style\n" + "r" * 9000)
    assert result.rc == 1 and "nothing was saved" in result.stderr and "Traceback" not in result.stderr
    assert os.listdir(bank.rules_path) == rule_before

    os.unlink(filler)
    result = run_cli(data_dir, "save", "main", BIG_TEXT)
    assert result.rc == 0, result.stderr
    log = MemoryLog(bank.log_path)
    log.refresh()
    assert log.problems == [] and len(log.live()) == 2 + n
    assert Path(bank.log_path).read_bytes().endswith(b"\n")


# ---------------------------------------------------------------------- ENOSPC at every write call


class _Faults:
    """Replaces fsio's ``write()``: call number ``at`` fails (``ENOSPC``, or half written and short)."""

    def __init__(self, at: int, short: bool) -> None:
        self.at = at
        self.short = short
        self.calls = 0
        self.hit = False
        self.real = os.write

    def __call__(self, fd: int, data) -> int:
        n = self.calls
        self.calls += 1
        if n != self.at:
            return self.real(fd, data)
        self.hit = True
        data = bytes(data)
        if self.short and len(data) > 1:
            return self.real(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _operations():
    def batch_save(datadir):
        bank = datadir.bank("main")
        with bank.batch(now=50) as batch:
            for i in range(4):
                batch.save(f"batched record {i} " + "é" * 40)
            batch.pin(bank.log.records and min(bank.log.records))

    def single_save(datadir):
        datadir.bank("main").save("one more memory", now=51)

    def create_bank(datadir):
        datadir.create_bank("fresh", "a new bank")

    def write_rule(datadir):
        datadir.bank("main").write_rule("style", "# Style\n" + "s" * 3000)

    return {"batch save": batch_save, "single save": single_save, "bank create": create_bank, "rule save": write_rule}


@pytest.mark.parametrize("short", [False, True], ids=["ENOSPC", "short write"])
@pytest.mark.parametrize("name", list(_operations()))
def test_a_fault_at_every_write_call_leaves_every_file_whole(tmp_path, monkeypatch, name, short):
    operation = _operations()[name]
    template = tmp_path / "template"
    bank, _ = DataDir(template / "memory").ensure_bank("main")
    for i in range(3):
        bank.save(f"existing memory {i}", now=1 + i)
    bank.write_rule("style", "# Style\nversion one\n")
    at = 0
    while True:
        work = tmp_path / f"run-{at}"
        shutil.copytree(template, work, symlinks=True)
        data_dir = str(work / "memory")
        log_path = os.path.join(data_dir, "main", "memories.jsonl")
        rule_path = os.path.join(data_dir, "main", "rules", "style.md")
        log_before = Path(log_path).read_bytes()
        rule_before = Path(rule_path).read_bytes()
        faults = _Faults(at, short)
        monkeypatch.setattr(fsio, "_os_write", faults)
        try:
            operation(DataDir(data_dir))
            error = None
        except WriteFailed as exc:
            error = str(exc)
        finally:
            monkeypatch.setattr(fsio, "_os_write", os.write)
        where = f"{name}, fault at write call {at}"
        log_after = Path(log_path).read_bytes()
        assert log_after == log_before or (error is None and log_after.startswith(log_before)), where
        assert log_after.endswith(b"\n"), where
        fresh = MemoryLog(log_path)
        fresh.refresh()
        assert fresh.problems == [] and fresh.unreadable is None, where
        leftovers = [n for n in os.listdir(data_dir) if n.startswith(".")]
        leftovers += [n for n in os.listdir(os.path.dirname(rule_path)) if n != "style.md"]
        assert leftovers == [], where
        if error is not None:
            assert faults.hit and "nothing was" in error, where
            assert os.path.abspath(data_dir) in error, where
            assert not os.path.exists(os.path.join(data_dir, "fresh")), where
            assert Path(rule_path).read_bytes() == rule_before, where
        if not faults.hit:
            break  # the operation made fewer write calls than `at`: every call has had its fault
        at += 1
    assert at >= 1


def test_no_space_for_the_reservation_writes_nothing(tmp_path, monkeypatch):
    bank, _ = DataDir(tmp_path / "memory").ensure_bank("main")
    bank.save("already there", now=1)
    before = Path(bank.log_path).read_bytes()

    def full(fd, mode, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_write(fd, data):
        raise AssertionError("wrote although the space could not be reserved")

    monkeypatch.setattr(fsio, "_fallocate", full)
    monkeypatch.setattr(fsio, "_os_write", no_write)
    with pytest.raises(WriteFailed) as info:
        bank.save("never written", now=2)
    assert str(info.value) == f"{bank.log_path}: No space left on device; nothing was saved"
    assert Path(bank.log_path).read_bytes() == before


def test_a_partial_write_followed_by_another_writer_is_not_cut(tmp_path, monkeypatch):
    """Taking back partial bytes would cut a line another process appended after them: they stay,
    the log ends in a newline, and the error says so."""
    bank, _ = DataDir(tmp_path / "memory").ensure_bank("main")
    bank.save("already there", now=1)
    worker_line = (
        b'{"id":"fp00000000000000ff","text":"the worker wrote meanwhile","entities":[],"tags":[],'
        b'"confidence":"stated","corroboration":0,"pinned":false,"created_at":1,"updated_at":1,'
        b'"revision":0}'
    )

    calls = []

    def short_then_worker(fd, data):
        calls.append(bytes(data))
        if len(calls) > 1:
            return os.write(fd, data)
        written = os.write(fd, bytes(data)[:20])
        with open(bank.log_path, "ab") as fh:  # the worker's json lands after our partial bytes
            fh.write(worker_line)
        return written

    monkeypatch.setattr(fsio, "_os_write", short_then_worker)
    with pytest.raises(WriteFailed, match="another program appended"):
        bank.save("cut short by a full disk", now=2)
    monkeypatch.setattr(fsio, "_os_write", os.write)
    data = Path(bank.log_path).read_bytes()
    assert data.endswith(b"\n") and worker_line in data


def test_a_half_made_bank_folder_is_removed_or_reported(tmp_path, monkeypatch):
    """A bank create interrupted before its rename removes its hidden folder on the way out; one
    left by a kill (nothing runs then) is not a bank for anyone, and doctor names it."""
    from keepgui.backends.iii.doctor import diagnose

    datadir = DataDir(tmp_path / "memory")
    datadir.ensure_bank("main")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(fsio, "rename_durably", interrupted)
    with pytest.raises(KeyboardInterrupt):
        datadir.create_bank("fresh")
    monkeypatch.undo()
    assert os.listdir(tmp_path / "memory") == ["main"]
    left = fsio.temp_name_for(os.path.join(datadir.path, "killed"))
    os.makedirs(os.path.join(left, "rules"))
    assert datadir.bank_names() == ["main"]
    assert [f.path for f in diagnose(datadir) if f.kind == "temp-file"] == [left]
