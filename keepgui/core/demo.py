"""The bundled demo: one folder per backend, copied fresh for each run.

The packaged files are never modified. ``make_demo_copy`` copies them to a new
temporary folder, makes every file look edited an hour ago, and lets each
backend place its part (its registry entry's ``demo_folder`` and
``prepare_demo``): move the timestamps inside its files forward by the time
elapsed since ``DEMO_EPOCH``, so the demo's ages ("3d ago", "a year ago")
always look as they did when it was written, and name any further places in it
(the Claude Code demo's home and project folders). A new backend's demo is one
more folder and its own ``prepare_demo``; nothing here changes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from keepgui.core import registry
from keepgui.core.paths import resources_dir

DEMO_EPOCH = 1_750_000_000_000
"""The "now" the demo data was written for (2025-06-15T15:06:40Z)."""


@dataclass(frozen=True)
class DemoCopy:
    """Where a fresh demo copy lives: its root, each backend's source in it (``copy.iii``...), and
    the further places the backends named (``copy.claude_home``...)."""

    root: str
    sources: tuple[tuple[str, str], ...]
    places: dict[str, str] = field(default_factory=dict)

    def path(self, kind: str) -> str:
        """The folder of the demo source of ``kind``."""
        for known, path in self.sources:
            if known == kind:
                return path
        raise AttributeError(f"the demo has no {kind} source")

    def __getattr__(self, name: str) -> str:
        if name.startswith("_") or name in ("root", "sources", "places"):
            raise AttributeError(name)
        if name in self.places:
            return self.places[name]
        return self.path(name)


def demo_source() -> str:
    """The packaged demo folder (read-only for keepgui)."""
    return os.path.join(resources_dir(), "demo")


def make_demo_copy(parent: str | None = None, now_ms: int | None = None) -> DemoCopy:
    """Copy the demo to a new temporary folder with its times moved to the present."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    shift = max(0, now_ms - DEMO_EPOCH)
    root = tempfile.mkdtemp(prefix="keepgui-demo-", dir=parent)
    shutil.copytree(demo_source(), root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    edited = (now_ms - 3_600_000) * 1_000_000  # the demo's files look edited an hour ago
    for folder, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(folder, name), ns=(edited, edited))
    sources = []
    places: dict[str, str] = {}
    for backend in registry.backends():
        if backend.demo_folder and os.path.isdir(os.path.join(root, backend.demo_folder)):
            folder = os.path.join(root, backend.demo_folder)
            named = backend.prepare_demo(folder, shift, edited) if backend.prepare_demo is not None else {}
            sources.append((backend.kind, named.get("source", folder)))
            places.update(named)
    return DemoCopy(root, tuple(sources), places)
