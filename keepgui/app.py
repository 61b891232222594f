"""Starting the window: display checks, sources, the demo, screenshots.

``keepgui`` with no command opens the main window. ``--demo`` opens a fresh
temporary copy of the demo data; ``--screenshot PATH`` renders the window
offscreen once the shown bank has loaded, writes a PNG and exits (so the README
can show real screenshots and a headless check can look at the window).
"""

from __future__ import annotations

import os
import sys


def _has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    if os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] in ("offscreen", "minimal", "vnc", "eglfs", "linuxfb"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_gui(args) -> int:
    """Open keepgui's window (or render it to a PNG with ``--screenshot``)."""
    if getattr(args, "screenshot", None):
        if not _has_display():
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
    elif not _has_display():
        print("keepgui: no display found (DISPLAY/WAYLAND_DISPLAY unset); use a command such as "
              "`keepgui banks`, or `keepgui --screenshot out.png` to render the window", file=sys.stderr)
        return 1
    from keepgui.ui.application import launch

    return launch(args)
