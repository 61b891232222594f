"""The one door from the command line to the window: display checks, starting it, talking to a running one.

``keepgui`` with no command opens the main window (:func:`run_gui`).
``--demo`` opens a fresh temporary copy of the demo data; ``--screenshot
PATH`` renders the window offscreen once the shown bank has loaded, writes a
PNG and exits (so the README can show real screenshots and a headless check
can look at the window).

Commands under :mod:`keepgui.commands` that reach the window (Quick keep, a keep
handed to the running window) use only this module, never ``keepgui.ui``
itself: an import-linter contract holds them to it. Qt is imported only when a
function here needs it.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def has_display() -> bool:
    """True when a window can be shown here (a display, or an offscreen Qt platform)."""
    if sys.platform in ("win32", "darwin"):
        return True
    if os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] in ("offscreen", "minimal", "vnc", "eglfs", "linuxfb"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_gui(args: Any) -> int:
    """Open keepgui's window (or render it to a PNG with ``--screenshot``)."""
    if getattr(args, "screenshot", None):
        if not has_display():
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
    elif not has_display():
        print(
            "keepgui: no display found (DISPLAY/WAYLAND_DISPLAY unset); use a command such as "
            "`keepgui banks`, or `keepgui --screenshot out.png` to render the window",
            file=sys.stderr,
        )
        return 1
    from keepgui.ui.application import launch

    return launch(args)


def start_app() -> None:
    """Create the QApplication first (a request to a running window would otherwise make a bare
    QCoreApplication, and a popup on its own needs widgets)."""
    from keepgui.ui.startup import make_app

    make_app()


def window_may_be_running() -> bool:
    """Whether a keepgui window may be running for this user (one stat(), no Qt event machinery)."""
    from keepgui.ui import ipc

    return ipc.may_be_running()


def ask_window(command: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """Send a request to the running keepgui window; its reply, or None when none runs."""
    from keepgui.ui import ipc

    if command in ("quick-keep", "activate"):
        args = {**args, "activation_token": ipc.activation_token()}
    return ipc.request(command, args)


def quick_keep_alone(args: Any) -> int:
    """The Quick keep popup on its own, until it closes (no window runs)."""
    from keepgui.ui.quickkeep import run_standalone

    return run_standalone(args)
