"""The bundled demo: an iii data dir, a nanobot workspace and a Claude Code home, copied fresh for each run.

The packaged files are never modified. ``make_demo_copy`` copies them to a new
temporary folder and moves every timestamp forward by the time elapsed since
``DEMO_EPOCH``, so the demo's ages ("3d ago", "a year ago") always look as
they did when it was written. The Claude Code project's memory folder is
renamed to the name Claude Code gives the copied project folder, and its
memories get ages in index order (the agent appends, so the last are newest).
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

from keepgui.core import fsio
from keepgui.core.iii.log import LOG_NAME
from keepgui.core.iii.record import read_record
from keepgui.core.paths import resources_dir

DEMO_EPOCH = 1_750_000_000_000
"""The "now" the demo data was written for (2025-06-15T15:06:40Z)."""


@dataclass(frozen=True)
class DemoCopy:
    """Where a fresh demo copy lives."""

    root: str
    iii: str
    nanobot: str
    claude_home: str = ""
    claude_project: str = ""


def demo_source() -> str:
    """The packaged demo folder (read-only for keepgui)."""
    return os.path.join(resources_dir(), "demo")


def make_demo_copy(parent: str | None = None, now_ms: int | None = None) -> DemoCopy:
    """Copy the demo to a new temporary folder with its times moved to the present."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    shift = max(0, now_ms - DEMO_EPOCH)
    root = tempfile.mkdtemp(prefix="keepgui-demo-", dir=parent)
    shutil.copytree(demo_source(), root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    iii = os.path.join(root, "iii")
    for bank in sorted(os.listdir(iii)):
        log = os.path.join(iii, bank, LOG_NAME)
        if os.path.isfile(log):
            _shift_log(log, shift)
    edited = (now_ms - 3_600_000) * 1_000_000  # the demo's files look edited an hour ago
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(edited, edited))
    # the Claude Code backend places its own demo (reached by name: shared core imports no backend)
    home, project = importlib.import_module("keepgui.core.claude.demo").place_demo(os.path.join(root, "claude"), edited)
    return DemoCopy(root, iii, os.path.join(root, "nanobot"), home, project)


def _shift_log(path: str, shift: int) -> None:
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    out = []
    for line in lines[:-1]:
        memory = read_record(line)
        if memory is None:
            out.append(line + b"\n")  # keep anything odd exactly as it is
            continue
        memory = memory.replace(
            created_at=memory.created_at + shift,
            updated_at=memory.updated_at + shift,
            invalid_at=None if memory.invalid_at is None else memory.invalid_at + shift,
        )
        out.append(memory.to_line())
    fsio.atomic_write(path, b"".join(out) + lines[-1])
