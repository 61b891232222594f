"""``keepgui --screenshot`` finishes as soon as the window has nothing more to load (#13.5).

It waited for its full 60 s fallback whenever no bank loaded: a nanobot-only source,
an empty or missing data dir, ``--bank`` naming nothing.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.reliability.common import ROOT, child_env


def _screenshot(tmp_path, *args: str) -> tuple[float, bytes]:
    out = tmp_path / "shot.png"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "--stand-alone", *args, "--screenshot", str(out)],
        cwd=ROOT,
        env=child_env(QT_QPA_PLATFORM="offscreen", KEEPGUI_HOME=str(tmp_path / "home")),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=90,
    )
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return seconds, out.read_bytes()


@pytest.mark.parametrize("case", ["missing data dir", "empty data dir", "nanobot only", "--bank naming nothing"])
def test_a_screenshot_of_a_window_with_nothing_to_load_is_taken_at_once(tmp_path, case):
    empty = tmp_path / "empty"
    empty.mkdir()
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n")
    (workspace / "keep.md").write_text("- a fact\n")
    args = {
        "missing data dir": ["--data-dir", str(tmp_path / "missing")],
        "empty data dir": ["--data-dir", str(empty)],
        "nanobot only": ["--workspace", str(workspace)],
        "--bank naming nothing": ["--demo", "--bank", "nothing-here"],
    }[case]
    seconds, png = _screenshot(tmp_path, *args)
    assert png.startswith(b"\x89PNG") and seconds < 20, f"{case}: took {seconds:.1f} s"


def test_a_log_that_is_one_50_mb_line_opens_in_seconds(tmp_path):
    """#13.5, #23.15b: the worker loads such a line, and so does keepgui; a 50 MB or a 1 MB text is
    shown cut, never laid out whole."""
    import json

    data_dir = tmp_path / "memory"
    for name, size in (("huge", 50_000_000), ("long", 1_000_000)):
        (data_dir / name).mkdir(parents=True)
        record = {
            "id": "fp0000000000000001",
            "text": "x" * size,
            "entities": [],
            "tags": [],
            "confidence": "stated",
            "corroboration": 0,
            "pinned": False,
            "created_at": 1,
            "updated_at": 1,
            "revision": 0,
        }
        (data_dir / name / "memories.jsonl").write_text(json.dumps(record, separators=(",", ":")) + "\n")
    for bank in ("huge", "long"):
        seconds, png = _screenshot(tmp_path, "--data-dir", str(data_dir), "--bank", bank)
        assert png.startswith(b"\x89PNG") and seconds < 30, f"{bank}: {seconds:.1f} s"


_SIDEBAR_AT_SHOT = r"""
import json, sys
from keepgui.ui.startup import make_app
from keepgui.ui import application
from keepgui.ui.application import build_window
from keepgui.ui.settings import Settings
from keepgui.ui.sidebar import DetailRole
from keepgui.cli import build_parser
import time
from keepgui.ui.hub import Hub
counted = Hub._count_task
def slow_count(self, opened, name):  # the other banks take a while to count
    time.sleep(0.4)
    counted(self, opened, name)
Hub._count_task = slow_count
app = make_app()
args = build_parser([]).parse_args(["--demo", "--screenshot", sys.argv[1]])
window = build_window(args, Settings(read_only=True), watch=False)
seen = []
real_grab = window.grab
def grab(*a):
    model = window.tree_model
    pending = [model.item(r) for r in range(model.rowCount())]
    while pending:
        item = pending.pop()
        seen.append(str(item.data(DetailRole) or ""))
        pending.extend(item.child(r) for r in range(item.rowCount()))
    return real_grab(*a)
window.grab = grab
status = application.take_screenshot(window, sys.argv[1], timeout_ms=30_000)
print(json.dumps({"status": status, "details": seen}))
"""


def test_a_screenshot_waits_for_every_banks_count_in_the_sidebar(tmp_path):
    """The shown bank loaded is not enough: a sidebar with "loading…" beside the other banks is
    not the window a person sees once it settled (the demo's Claude Code project was)."""
    import json

    done = subprocess.run(
        [sys.executable, "-c", _SIDEBAR_AT_SHOT, str(tmp_path / "shot.png")],
        cwd=ROOT,
        env=child_env(QT_QPA_PLATFORM="offscreen", KEEPGUI_HOME=str(tmp_path / "home")),
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    shot = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert shot["status"] == 0 and len(shot["details"]) >= 4, shot
    assert not [d for d in shot["details"] if "loading" in d], shot["details"]
