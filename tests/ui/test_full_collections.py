"""A window's process considers a full garbage collection a hundred times less often than Python does:
each walks every tracked object with the interpreter lock held (100-250 ms once a big bank is in)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import gc, os, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from keepgui.ui.startup import FULL_COLLECTION_AFTER, make_app
before = gc.get_threshold()
app = make_app()
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)
keep = []
for _ in range(3_000_000):  # what a load allocates and keeps: tracked containers
    keep.append([])
print(before[2], gc.get_threshold()[2], FULL_COLLECTION_AFTER, len(full))
"""


def test_a_window_s_process_seldom_collects_everything():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    python_default, window, wanted, full = map(int, out.stdout.split())
    assert python_default == 10 and window == wanted == 1000
    assert full == 0  # Python's own thresholds run several full collections over these three million
