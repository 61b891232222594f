"""Hermes Agent's memory, read and written as Hermes itself does (no Qt).

Hermes Agent (NousResearch, ``hermes-agent`` on PyPI) keeps its durable memory in two small files
under ``<home>/memories/``: ``MEMORY.md`` (the agent's notes) and ``USER.md`` (the user profile),
entries joined by ``"\\n§\\n"``, limited to 2,200 and 1,375 characters by default. A session freezes
them into its system prompt when it starts; a resumed session replays the prompt stored in
``state.db``; with ``memory.write_approval`` on, writes wait under ``pending/memory/``.

:mod:`.home` finds the homes (``~/.hermes``, ``$HERMES_HOME``, profiles) and their settings,
:mod:`.entries` parses and renders a file, :mod:`.threats` is Hermes's injection scan,
:mod:`.context` the exact memory part of the next session's prompt and what resumed sessions still
see (:mod:`.statedb`), :mod:`.writes` the writes under Hermes's own lock, :mod:`.pending` the
approval queue, :mod:`.bank` / :mod:`.documents` / :mod:`.compact` the face the window uses, and
:mod:`.backend` the source and the registry entry.

Every rule was checked against the real ``hermes-agent`` (version :data:`CHECKED_VERSION`) run
offline against a loopback model server (``tests/backends/hermes/test_hermes_compare.py``,
``make hermes-compare``). Where the spec (``shared/spec/hermes-memory.md``) and the program
disagreed, the program was followed; the modules say where.

This package imports nothing from the other backends.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from keepgui.core.agents import Agent
from keepgui.core.registry import Backend, lazy

CHECKED_VERSION = "0.19.0"
"""The hermes-agent version keepgui's rendering, parser and writes were compared with."""


def installed_version(hermes: str | None = None) -> str | None:
    """The version of the ``hermes`` command on PATH (or ``hermes``), from ``hermes --version``; None when
    there is none or it does not answer."""
    binary = hermes or shutil.which("hermes")
    if not binary or not os.path.exists(binary):
        return None
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    words = done.stdout.split()
    # "Hermes Agent v0.19.0 (2026.7.20)"
    for word in words:
        if word.startswith("v") and word[1:2].isdigit():
            return word[1:]
    return None


_SOURCE = "keepgui.backends.hermes.backend"

BACKEND = Backend(
    kind="hermes",
    label="Hermes Agent home",
    icon="notes",
    open=lazy(_SOURCE, "open_source"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    projects=True,
    home_is_source=True,
    window_arg="hermes",
    window_help="Hermes Agent home (~/.hermes, or a profile's folder) to open in the window (repeatable)",
    demo_folder="hermes",
    prepare_demo=lazy(_SOURCE, "prepare_demo"),
    agent=Agent(name="Hermes Agent", checked=CHECKED_VERSION, command="hermes", distribution="hermes-agent"),
    start_rank=40,
    keep_rank=40,
)
"""Hermes Agent, as the registry knows it."""
