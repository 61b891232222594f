"""The command line is written once: ``keepgui/cli.py`` and the generic command modules name no backend.

Every token of those files — names, strings, docstrings and comments — is checked for a backend's
kind, its window option, the agents' own file names and the like: what differs between backends is
in their registry entries (:class:`keepgui.core.registry.Backend`) and their own command modules,
which the entries name. (On main before this step, the same check found 102 such lines in
``cli.py`` and the generic modules of then: ``commands/compaction.py``, ``context.py``,
``desktop.py``.) The import-linter contract "Generic commands import no backend" holds the imports.
"""

from __future__ import annotations

import io
import os
import re
import tokenize

from keepgui import cli
from keepgui.core import registry
from tests.conftest import ROOT

STATIC_WORDS = ("datadir", "keep.md", "MEMORY.md", "CLAUDE.md", "Dream", "memory::")
"""Names of the agents' own things that are no registry field (file names, a worker's function names)."""


def generic_modules() -> list[str]:
    """``cli.py`` and every command module no backend's entry names as its own."""
    named = {c.module for b in registry.declared() for c in b.commands if c.module}
    folder = os.path.join(ROOT, "keepgui", "commands")
    modules = [f"keepgui.commands.{n[:-3]}" for n in sorted(os.listdir(folder)) if n.endswith(".py")]
    return ["keepgui.cli"] + [m for m in modules if m not in named]


def backend_words() -> re.Pattern[str]:
    """Every backend's kind and window option (``data_dir``, ``--data-dir``, ``data-dir``), and :data:`STATIC_WORDS`."""
    words = set(STATIC_WORDS)
    for backend in registry.declared():
        words.add(backend.kind)
        if backend.window_arg:
            words |= {backend.window_arg, backend.window_arg.replace("_", "-"), backend.window_arg.replace("_", " ")}
    alternatives = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])({alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


def lines_naming_a_backend(path: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """``(line, token)`` for every token of the file (names, strings, comments) that names a backend."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    kinds = {tokenize.NAME, tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in kinds:
            match = pattern.search(token.string)
            if match:
                found.append((token.start[0], match.group(0)))
    return sorted(set(found))


def test_the_generic_command_line_names_no_backend():
    pattern = backend_words()
    modules = generic_modules()
    assert {"keepgui.cli", "keepgui.commands.memories", "keepgui.commands.plans", "keepgui.commands.context"} <= set(
        modules
    )
    assert "keepgui.commands.iii" not in modules  # a backend's own module: its entry names it
    offending = {}
    for module in modules:
        path = os.path.join(ROOT, *module.split(".")) + ".py"
        hits = lines_naming_a_backend(path, pattern)
        if hits:
            offending[module] = hits
    assert offending == {}


def test_the_check_finds_a_backend_named_in_a_generic_module(tmp_path):
    """The check is real: a line that names a backend, in any form, is found."""
    path = tmp_path / "generic.py"
    path.write_text(
        '"""Commands."""\n'
        "import os\n"
        "def open_it(args):\n"
        "    return args.data_dir  # a name\n"
        'HELP = "the nanobot workspace"\n'
        "# Claude Code's reminder\n"
        'X = f"{os.sep}keep.md"\n'
    )
    lines = {line for line, _word in lines_naming_a_backend(str(path), backend_words())}
    assert lines == {4, 5, 6, 7}


def test_every_generic_command_is_a_common_command_of_the_registry():
    assert set(registry.COMMON_COMMANDS) <= set(cli.GENERIC)
