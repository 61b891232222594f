"""iii memory data dirs: the memory worker's banks, read and written as the worker does (no Qt).

This module is the backend's registry entry (:data:`BACKEND`); :mod:`.backend` is the source,
:mod:`.bank` a bank, :mod:`.documents` its rules, :mod:`.context` ``memory::preview``,
:mod:`.compact` memory-consolidate's plans, :mod:`.writes` the writes. Its command-line commands
are :mod:`keepgui.commands.iii` and :mod:`keepgui.commands.recall`.
"""

from keepgui.core.agents import Agent
from keepgui.core.registry import Backend, Command, Option, lazy

_SOURCE = "keepgui.backends.iii.backend"
_COMMANDS = "keepgui.commands.iii"

CHECKED_VERSION = "0.2.2"
"""The memory worker's version (iii-hq/workers, Cargo version 0.2.2 at the commits the spec cites) keepgui's
rules were read from."""

BACKEND = Backend(
    kind="iii",
    label="iii data dir",
    icon="bank",
    open=lazy(_SOURCE, "IiiSource"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    window_arg="data_dir",
    window_help="iii memory data dir to open in the window (repeatable; default: $KEEPGUI_DATA_DIR, "
    "else the worker's own default)",
    commands=(
        Command("banks", _COMMANDS),
        Command("supersede", _COMMANDS),
        Command("rules", _COMMANDS),
        Command("rule-set", _COMMANDS),
        Command("bank", _COMMANDS),
        Command("doctor", _COMMANDS),
        Command("preview", "keepgui.commands.recall"),
        Command("recall", "keepgui.commands.recall"),
        # today's verbs, kept working (each says on stderr what replaces it)
        Command("save", _COMMANDS),
        Command("delete", _COMMANDS),
        Command("memories", _COMMANDS),
        Command("edit", _COMMANDS),
        Command("pin", _COMMANDS),
        Command("restore", _COMMANDS),
        Command("compact", _COMMANDS, when=("--bank",)),
    ),
    options=(
        Option(
            "compact",
            "--fuzzy",
            "iii: also propose rapidfuzz near-duplicate groups (never selected by default; compares every pair)",
        ),
        Option(
            "compact",
            "--threshold",
            "near-duplicate cut-off, 0–100 on rapidfuzz token_set_ratio (iii and nanobot: 85)",
            metavar="N",
            type="float",
        ),
    ),
    demo_folder="iii",
    prepare_demo=lazy(_SOURCE, "prepare_demo"),
    agent=Agent(
        name="the iii memory worker",
        checked=CHECKED_VERSION,
        why_unread="the iii engine runs the memory worker, and says no version of it",
    ),
    start_rank=0,
    keep_rank=10,
)
"""iii, as the registry knows it."""
