"""The bundled demo: one folder per backend, copied fresh for each run.

The packaged files are never modified. ``make_demo_copy`` copies them to a new
temporary folder and lets each backend move its timestamps forward by the
time elapsed since ``DEMO_EPOCH`` (its registry entry's ``prepare_demo``), so
the demo's ages ("3d ago", "a year ago") always look as they did when it was
written. Which folder belongs to which backend is the registry's
``demo_folder``: a new backend's demo is one more folder, nothing here changes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass

from keepgui.core import registry
from keepgui.core.paths import resources_dir

DEMO_EPOCH = 1_750_000_000_000
"""The "now" the demo data was written for (2025-06-15T15:06:40Z)."""


@dataclass(frozen=True)
class DemoCopy:
    """Where a fresh demo copy lives: its root, and each backend's source in it (``copy.iii``...)."""

    root: str
    sources: tuple[tuple[str, str], ...]

    def path(self, kind: str) -> str:
        """The folder of the demo source of ``kind``."""
        for known, path in self.sources:
            if known == kind:
                return path
        raise AttributeError(f"the demo has no {kind} source")

    def __getattr__(self, kind: str) -> str:
        if kind.startswith("_") or kind in ("root", "sources"):
            raise AttributeError(kind)
        return self.path(kind)


def demo_source() -> str:
    """The packaged demo folder (read-only for keepgui)."""
    return os.path.join(resources_dir(), "demo")


def make_demo_copy(parent: str | None = None, now_ms: int | None = None) -> DemoCopy:
    """Copy the demo to a new temporary folder with its times moved to the present."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    shift = max(0, now_ms - DEMO_EPOCH)
    root = tempfile.mkdtemp(prefix="keepgui-demo-", dir=parent)
    shutil.copytree(demo_source(), root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    sources = []
    for backend in registry.backends():
        if backend.demo_folder and os.path.isdir(os.path.join(root, backend.demo_folder)):
            folder = os.path.join(root, backend.demo_folder)
            if backend.prepare_demo is not None:
                backend.prepare_demo(folder, shift)
            sources.append((backend.kind, folder))
    edited = (now_ms - 3_600_000) * 1_000_000  # the demo's files look edited an hour ago
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(edited, edited))
    return DemoCopy(root, tuple(sources))
