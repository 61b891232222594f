"""``keepgui quick-keep``: the Quick keep popup, in the running window or on its own.

With a keepgui window running (and no ``--stand-alone``), the request is
handed to it over the single-instance socket and its popup opens: what is
kept there lands on the window's undo stack. Otherwise a small popup opens on
its own, on the sources the window would open (``--source``, a backend's window
option, ``--demo``, else the saved ones), and closes after a keep.
Without a display it says so and points at ``keepgui keep``.

This is the command a desktop shortcut should run: Qt has no portable global
hotkeys, so "bind Super+K to ``keepgui quick-keep``" is the portable answer
(the ``.desktop`` entry also offers it as an action).

Exit status: 0 when the popup opened (and, on its own, closed); 1 without a display.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from keepgui.core.errors import KeepguiError

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``quick-keep`` command."""
    p = sub.add_parser(
        "quick-keep",
        parents=[common],
        help="open the Quick keep popup (in the running keepgui window, else on its own)",
    )
    from keepgui.cli import declared_backends

    p.add_argument("text", nargs="*", help="text to start with (optional)")
    p.add_argument(
        "--source",
        metavar="PATH",
        action="append",
        default=argparse.SUPPRESS,
        help="a folder of an agent's memory to offer when no window runs (repeatable)",
    )
    for backend in declared_backends():
        if backend.window_flag is not None:
            p.add_argument(
                backend.window_flag,
                dest=backend.window_arg,
                metavar="DIR",
                action="append",
                default=argparse.SUPPRESS,
                help=f"{backend.label} to offer when no window runs (repeatable)",
            )
    p.add_argument(
        "--stand-alone",
        action="store_true",
        default=argparse.SUPPRESS,
        help="open a popup of its own even when a keepgui window is running",
    )
    p.set_defaults(func=cmd_quick_keep)


def cmd_quick_keep(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui quick-keep [TEXT]``."""
    from keepgui import app

    display = app.has_display()
    if display:
        app.start_app()
    text = " ".join(args.text)
    if not (getattr(args, "stand_alone", False) or getattr(args, "demo", False)):
        reply = app.ask_window("quick-keep", {"text": text})
        if reply is not None:
            if not reply.get("ok"):
                raise KeepguiError(reply.get("error") or "the running keepgui refused to open Quick keep")
            ctx.note("opened Quick keep in the running keepgui window")
            return 0
    if not display:
        ctx.note(
            "no display found (DISPLAY/WAYLAND_DISPLAY unset), so there is no popup to show; "
            "keep a fact from here with `keepgui keep TEXT`"
        )
        return 1
    return app.quick_keep_alone(args)
