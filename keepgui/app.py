"""The window. Until the main window lands, ``keepgui`` without a command lists the banks."""

from __future__ import annotations


def run_gui(args) -> int:
    """Open keepgui's window (for now: the CLI listing of the data dir's banks)."""
    from keepgui.cli import Context
    from keepgui.commands.iii import cmd_banks

    args.json = False
    return cmd_banks(args, Context(args))
