"""nanobot workspaces: keep.md and the Dream-managed memory files, read and written as nanobot does (no Qt).

This module is the backend's registry entry (:data:`BACKEND`); :mod:`.backend` is the source,
:mod:`.bank` its one bank (keep.md), :mod:`.documents` AGENTS.md and Dream's files,
:mod:`.context` nanobot's system prompt, :mod:`.compact` keep.md's compaction and the review of a
rewrite, :mod:`.writes` the writes. Its command-line commands are :mod:`keepgui.commands.nanobot`.
"""

from keepgui.core.agents import Agent
from keepgui.core.registry import Backend, Command, Option, lazy

_SOURCE = "keepgui.backends.nanobot.backend"
_COMMANDS = "keepgui.commands.nanobot"

CHECKED_VERSION = "0.3.5"
"""The nanobot-ai version keepgui's prompt preview was compared with (`make nanobot-compare`)."""

BACKEND = Backend(
    kind="nanobot",
    label="nanobot workspace",
    icon="keep",
    open=lazy(_SOURCE, "NanobotSource"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    window_arg="workspace",
    window_help="nanobot workspace to open in the window (repeatable)",
    commands=(
        # today's verbs, kept working (each says on stderr what replaces it)
        Command("entries", _COMMANDS),
        Command("unforget", _COMMANDS),
        Command("nanobot-preview", _COMMANDS),
        Command("keep", _COMMANDS),
        Command("forget", _COMMANDS),
        Command("compact", _COMMANDS),
        Command("review", _COMMANDS),
    ),
    options=(
        Option("compact", "--target", "nanobot: the keep.md line count to reach (default 120)", "LINES", "int"),
        Option(
            "compact",
            "--threshold",
            "near-duplicate cut-off, 0–100 on rapidfuzz token_set_ratio (iii and nanobot: 85)",
            metavar="N",
            type="float",
        ),
        Option(
            "compact",
            "--via",
            "nanobot: have COMMAND (an LLM CLI...) rewrite keep.md, keep.md on stdin and the new file on "
            "stdout; its rewrite becomes the plan (run without a shell)",
            "COMMAND",
        ),
        Option("compact", "--via-timeout", "nanobot: stop the --via command after this long (300)", "SECONDS", "float"),
        Option(
            "review",
            "--threshold",
            "nanobot: similarity (0–100) from which a changed line counts as a rewording (default 75)",
            metavar="N",
            type="float",
        ),
        Option("context", "--exact", "nanobot: use nanobot's own ContextBuilder (needs nanobot-ai installed)"),
    ),
    demo_folder="nanobot",
    agent=Agent(name="nanobot", checked=CHECKED_VERSION, command="nanobot", distribution="nanobot-ai"),
    start_rank=10,
    keep_rank=0,
)
"""nanobot, as the registry knows it."""
