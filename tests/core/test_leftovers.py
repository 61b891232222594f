"""Temporary files a killed keepgui write leaves behind are reported and removed by ``doctor``, which
also shows how big keepgui's history is (issue 24, item 10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from keepgui.core import fsio
from tests.conftest import run_cli
from tests.reliability.common import ROOT, child_env

KILLED_MID_WRITE = r"""
import os, signal, sys
from keepgui.core import fsio
def write_then_die(fd, data):
    os.write(fd, bytes(data)[:10])
    os.kill(os.getpid(), signal.SIGKILL)  # killed with the temporary file half written
fsio._os_write = write_then_die
fsio.atomic_write(sys.argv[1], b"- a line being forgotten\n" * 100)
"""


def killed_write(path: str) -> str:
    """A real process killed inside an atomic write of ``path``; returns the temporary file it left."""
    done = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, path], cwd=ROOT, env=child_env(), timeout=60)
    assert done.returncode == -9
    (left,) = [n for n in os.listdir(os.path.dirname(path)) if fsio.is_temp_name(n)]
    return os.path.join(os.path.dirname(path), left)


def age(path: str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_killed_write_leaves_a_temp_file_that_is_found_once_old_and_removed(tmp_path):
    target = tmp_path / "keep.md"
    target.write_bytes(b"- kept\n")
    left = killed_write(str(target))
    assert fsio.leftover_temps(tmp_path) == []  # young: it could be a write under way
    assert not fsio.remove_leftover(left)
    age(left, fsio.LEFTOVER_AGE_SECONDS + 5)
    assert fsio.leftover_temps(tmp_path) == [left]
    assert fsio.remove_leftover(left) and not os.path.exists(left)
    assert target.read_bytes() == b"- kept\n"
    assert not fsio.remove_leftover(str(target))  # never anything but keepgui's temporary files


def test_doctor_reports_and_removes_leftovers_and_shows_the_history_size(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "kg"))
    os.makedirs(data_dir / "rules")
    rule = data_dir / "rules" / "style.md"
    rule.write_bytes(b"Be brief.\n")
    left = killed_write(str(rule))
    age(left, fsio.LEFTOVER_AGE_SECONDS + 5)
    _code, out, err = run_cli(["--data-dir", str(data_dir), "doctor"])
    assert f"{left}: a temporary file a killed keepgui write left behind; removed" in out, out + err
    assert not os.path.exists(left) and rule.read_bytes() == b"Be brief.\n"
    assert "history: " in out and " MiB in " in out
    _code, out, err = run_cli(["--data-dir", str(data_dir), "doctor", "--json"])
    obj = json.loads(out)
    assert obj["leftover_temps"] == {"found": [], "removed": []}
    assert set(obj["history"]) == {"folder", "files", "bytes", "cap"} and obj["history"]["cap"] > 0


def test_nanobot_and_claude_problems_report_leftovers(tmp_path, monkeypatch):
    from tests.backends.nanobot.nanobot_helpers import make_workspace

    monkeypatch.setenv("KEEPGUI_HOME", str(tmp_path / "kg"))
    ws = make_workspace(tmp_path / "ws")
    left = killed_write(os.path.join(ws, "keep.md"))
    age(left, fsio.LEFTOVER_AGE_SECONDS + 5)
    _code, out, err = run_cli(["problems", "--source", ws])
    assert left in out + err and "killed keepgui write" in out + err
