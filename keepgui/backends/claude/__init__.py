"""Claude Code's memory, read and written as the Claude Code CLI itself does (no Qt).

Claude Code keeps two kinds of memory, both plain files:

* **instruction files** — the managed, user and project ``CLAUDE.md`` files,
  ``CLAUDE.local.md``, ``rules/`` folders, and the files they ``@import``
  (:mod:`.instructions`);
* **auto memory** — one folder per project, ``<config>/projects/<project>/memory/``,
  with one topic file per memory and the ``MEMORY.md`` index, of which only
  the first 200 lines / 25,000 UTF-16 units load (:mod:`.memory`).

:mod:`.layout` finds the folders (HOME, ``CLAUDE_CONFIG_DIR``, settings, git
roots, the project-folder names), :mod:`.context` renders what the next
session sees, byte for byte, :mod:`.project` is the face the window uses (a
source of projects, each a bank with rows, documents, a preview and undoable
operations), :mod:`.writes` the writes, :mod:`.review` the review of what the
agent changed, and :mod:`.compact` compaction plans for an index over its
limits.

Every rule was checked by running the real CLI (the npm package
``@anthropic-ai/claude-code``, version :data:`CHECKED_VERSION`) against
generated trees and comparing its first request with keepgui's rendering
(``tests/backends/claude/test_claude_cli_compare.py``, ``make claude-cli``). The CLI was
treated as a black box: run and observed, never read.

This package imports nothing from the other backends. This module is its registry entry
(:data:`BACKEND`); its command-line commands are :mod:`keepgui.commands.claude`.
"""

from keepgui.core.agents import Agent
from keepgui.core.registry import Backend, Command, Option, lazy

CHECKED_VERSION = "2.1.332"
"""The Claude Code CLI version keepgui's rendering was compared with, byte for byte."""

_SOURCE = "keepgui.backends.claude.backend"

BACKEND = Backend(
    kind="claude",
    label="Claude Code project folder",
    icon="notes",
    open=lazy(_SOURCE, "open_source"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    projects=True,
    window_arg="claude",
    window_help="Claude Code home (~/.claude) or project folder to open in the window (repeatable)",
    commands=(
        # today's command group and `context` without --agent, kept working (each says what replaces it)
        Command("claude", "keepgui.commands.claude"),
        Command("context"),
    ),
    options=(
        Option("context", "--reminder", "claude: print only the reminder text, exactly", means=("--part", "reminder")),
    ),
    demo_folder="claude",
    prepare_demo=lazy(_SOURCE, "prepare_demo"),
    agent=Agent(name="Claude Code", checked=CHECKED_VERSION, command="claude"),
    start_rank=60,
    keep_rank=60,
)
"""Claude Code, as the registry knows it."""
