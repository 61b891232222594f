"""OpenAI Codex CLI's memory, read and written as Codex itself does (no Qt).

Codex (``@openai/codex``) keeps two kinds of durable memory, both files:

* **AGENTS.md** files — the global one in ``$CODEX_HOME`` and a chain from the
  project root down to the session folder, sharing one 32 KiB budget that is cut
  at a raw byte with no word to the model (:mod:`.instructions`);
* **the memories feature** — a root folder (``memories/`` V1 or ``memories_v2/``
  V2, :mod:`.layout`) that Codex regenerates and consolidates on its own, of
  which only ``memory_summary.md`` is injected (:mod:`.memory`, the block made
  from the templates of :mod:`.templates`), and whose ad-hoc notes are the
  channel Codex offers for "remember / forget / correct" (:mod:`.writes`).

:mod:`.context` renders what the next session is given, byte for byte;
:mod:`.rows` and :mod:`.bank` the memory as the window's rows; :mod:`.documents`
the AGENTS.md files with their budget and the summary; :mod:`.compact` the review
of what a consolidation changed; :mod:`.baseline` reads Codex's git baseline;
:mod:`.backend` is the source and the registry entry.

Every rule was checked by running the real CLI (the npm package
``@openai/codex``, version :data:`CHECKED_VERSION`) offline against generated
homes and projects and comparing its first request with keepgui's rendering
(``tests/backends/codex/test_codex_cli_compare.py``, ``make codex-compare``).
Where the spec (``codex-memory.md``) and the CLI differed, the CLI won:

* a trusted session folder's own ``.codex/config.toml`` is a configuration
  layer (it can change the budget and turn memory on) — the spec lists only
  ``$CODEX_HOME/config.toml`` (:func:`.layout.read_config`);
* a top-level ``profile = "…"`` in ``config.toml`` makes 0.169.0 refuse to start;
* a V2 consolidation is refused unless the summary keeps Codex's format (``v1``
  and its four sections): "invalid v2 memory summary";
* after a successful consolidation the git baseline is one commit of the root *as
  the consolidation left it*; the state before the run is not kept by Codex, so
  "what consolidation changed" is computed from the version keepgui saw before.

This package imports nothing from the other backends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from keepgui.core.agents import Agent
from keepgui.core.registry import Backend, lazy

CHECKED_VERSION = "0.169.0"
"""The ``@openai/codex`` version keepgui's rendering was compared with, byte for byte."""

PACKAGE = "@openai/codex"
"""The npm package of the Codex CLI."""


def installed_version(binary: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The version of the Codex CLI installed here (``codex --version``: ``codex-cli 0.169.0`` → ``0.169.0``),
    ``binary`` or the ``codex`` on ``PATH``; None when there is none or it does not answer in 10 s."""
    env = dict(os.environ if environ is None else environ)
    found = binary or shutil.which("codex", path=env.get("PATH"))
    if not found:
        return None
    try:
        done = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=10, env=env, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


_SOURCE = "keepgui.backends.codex.backend"

BACKEND = Backend(
    kind="codex",
    label="Codex home or project folder",
    icon="notes",
    open=lazy(_SOURCE, "open_source"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    projects=True,
    window_arg="codex",
    window_help="Codex home (~/.codex, $CODEX_HOME) or project folder to open in the window (repeatable)",
    demo_folder="codex",
    prepare_demo=lazy(_SOURCE, "prepare_demo"),
    agent=Agent(name="Codex CLI", checked=CHECKED_VERSION, command="codex"),
    start_rank=70,
    keep_rank=70,
)
"""OpenAI Codex, as the registry knows it."""
