"""Demo and screenshot runs leave nothing behind (#16.3).

``--demo`` and ``--screenshot`` runs wrote the person's settings.json (the next real start came
up at the screenshot's size), demo copies stayed in the temporary folder, and a quit could print
watchdog's "InotifyEmitter … thread is inactive".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.reliability.common import ROOT, child_env


def _env(tmp_path, **extra):
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return child_env(QT_QPA_PLATFORM="offscreen", KEEPGUI_HOME=str(tmp_path / "home"), TMPDIR=str(tmp), **extra)


def _leftovers(tmp_path) -> list[str]:
    return sorted(os.listdir(tmp_path / "tmp"))


def _keepgui(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "keepgui", *args],
        cwd=ROOT,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=90,
    )


def test_a_demo_screenshot_writes_no_settings_and_removes_its_copy(tmp_path):
    home = tmp_path / "home" / "config"
    home.mkdir(parents=True)
    before = {"version": 2, "state/geometry": "AAAA", "panel": "rules"}
    (home / "settings.json").write_text(json.dumps(before))
    shot = tmp_path / "shot.png"
    done = _keepgui(tmp_path, "--demo", "--panel", "preview", "--screenshot", str(shot))
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG")
    assert json.loads((home / "settings.json").read_text()) == before  # read, never written
    assert _leftovers(tmp_path) == []  # the demo copy is gone
    assert "thread is inactive" not in done.stderr and "Traceback" not in done.stderr


def test_a_screenshot_of_real_sources_does_not_create_settings(tmp_path):
    data_dir = tmp_path / "memory"
    (data_dir / "main").mkdir(parents=True)
    done = _keepgui(tmp_path, "--data-dir", str(data_dir), "--screenshot", str(tmp_path / "s.png"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "home" / "config" / "settings.json").exists()


def test_sigterm_quits_the_demo_window_and_removes_its_copy(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "keepgui", "--demo"],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _leftovers(tmp_path):
            time.sleep(0.1)
        assert _leftovers(tmp_path), "the demo copy never appeared"
        time.sleep(1.5)  # the window is up and watching
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert _leftovers(tmp_path) == []
    assert "thread is inactive" not in err and "Traceback" not in err


def test_a_demo_command_says_it_wrote_to_a_throwaway_copy(tmp_path):
    done = _keepgui(tmp_path, "--demo", "keep", "Plays the cello on Sundays")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kept: - Plays the cello on Sundays")
    assert "throw-away copy of the demo" in done.stderr and "removed when the command ends" in done.stderr
    assert _leftovers(tmp_path) == []
