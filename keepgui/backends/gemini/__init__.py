"""Gemini CLI's memory, read and written as Gemini CLI itself does (no Qt).

Gemini CLI (``@google/gemini-cli`` on npm) keeps memory in plain Markdown files, in tiers:

* the **global** ``~/.gemini/GEMINI.md`` (and the other configured context file names) and the
  **private** ``~/.gemini/tmp/<slug>/memory/MEMORY.md`` of each launch folder go into the system
  instruction;
* **extension** context files and the **project** ``GEMINI.md`` files from the launch folder up to its
  project root (sorted by absolute path) go into the first user turn; files below the launch folder
  load later, when a tool touches their folder.

Every file goes through ``@path`` import processing first, and nothing is size-capped. The modules:
:mod:`.layout` (homes, settings, trust, the private folder's slug — predicted without writing),
:mod:`.imports` (what every ``@word`` becomes), :mod:`.discovery` (which files, in which order),
:mod:`.context` (the two ``<loaded_context>`` elements, byte for byte), :mod:`.memory` (lines as rows),
:mod:`.writes` (atomic, conflict-checked writes; the Auto Memory lock), :mod:`.patches` and
:mod:`.inbox` (the Auto Memory inbox, applied as Gemini applies it), :mod:`.compact` (the review of a
stale overwrite), :mod:`.documents`, :mod:`.bank` and :mod:`.backend` (the seam) and :mod:`.demo`;
``keepgui pending --agent gemini`` lists, approves and rejects its proposals.

Every rule was checked against the real CLI, version :data:`CHECKED_VERSION`, offline: its first
request's elements compared byte for byte with keepgui's on generated trees, and its own exported inbox
functions run in Node on generated inboxes (``tests/backends/gemini/``, ``make gemini-compare``).

Where the spec (``gemini-cli-memory.md``) and the CLI disagreed, the CLI was followed:

* a missing ``context.includeDirectories`` folder is not skipped: 0.61.0 stops at start with an error
  (keepgui reports it as a problem of the folder) — spec §3.2;
* the top file of an import chain is not on the chain: a file importing itself is inlined once, then
  ``File already processed`` (spec §5.3 said "a file already on the current import chain");
* in flat format a file importing itself appears twice (once under its folder's label) — spec §5.4;
* a slug folder whose ``.project_root`` cannot be read counts as taken, and the scan for a lost mapping
  stops in a folder at such a marker — spec §4.2 (not covered there).

This package imports nothing from the other backends.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping

from keepgui.core.agents import Agent
from keepgui.core.registry import Backend, Command, Option, lazy

CHECKED_VERSION = "0.61.0"
"""The Gemini CLI version keepgui's rendering was compared with, byte for byte."""


def installed_version(environ: Mapping[str, str] | None = None) -> str | None:
    """The version of the ``gemini`` command on ``PATH`` (read from its package's ``package.json``, the link
    followed; running ``gemini --version`` would write into the Gemini folder), or None when there is none."""
    env = os.environ if environ is None else environ
    command = shutil.which("gemini", path=env.get("PATH", ""))
    if command is None:
        return None
    folder = os.path.dirname(os.path.realpath(command))
    for _ in range(4):  # bundle/gemini.js → the package folder holding package.json
        manifest = os.path.join(folder, "package.json")
        try:
            with open(manifest, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            folder = os.path.dirname(folder)
            continue
        if isinstance(data, dict) and data.get("name") == "@google/gemini-cli" and isinstance(data.get("version"), str):
            return str(data["version"])
        folder = os.path.dirname(folder)
    return None


_SOURCE = "keepgui.backends.gemini.backend"

BACKEND = Backend(
    kind="gemini",
    label="Gemini CLI folder",
    icon="document",
    open=lazy(_SOURCE, "open_source"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    projects=True,
    window_arg="gemini",
    window_help="Gemini CLI home (~/.gemini) or the folder a session starts in, to open in the window (repeatable)",
    commands=(Command("gemini-inbox", "keepgui.commands.gemini"),),
    options=(
        Option(
            "context",
            "--untrusted",
            "gemini: as in a folder Gemini does not trust (no project files, no workspace settings)",
        ),
    ),
    demo_folder="gemini",
    prepare_demo=lazy(_SOURCE, "prepare_demo"),
    agent=Agent(name="Gemini CLI", checked=CHECKED_VERSION, command="gemini", npm_package="@google/gemini-cli"),
    start_rank=65,
    keep_rank=65,
)
"""Gemini CLI, as the registry knows it."""
