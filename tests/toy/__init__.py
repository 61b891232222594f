"""A toy backend, as a new backend is added: one folder and one registry line.

Its sources are folders with a ``jots.md`` (one jot per line: ``- text``, ``* text`` when pinned);
what it forgets waits in ``forgotten.md``. :mod:`.backend` is the source, its one bank, its
documents and its compaction plan; :mod:`.commands` its own command, ``keepgui jot-count``. Nothing
outside this folder names it: ``registry.register(tests.toy.BACKEND)`` is the one line that adds
it (a package installed beside keepgui would name ``BACKEND`` in its ``keepgui.backends`` entry
point instead). ``tests/core/test_new_backend.py`` opens it in the window and runs every command.
"""

from keepgui.core.registry import Backend, Command, Option, lazy

_SOURCE = "tests.toy.backend"

BACKEND = Backend(
    kind="jots",
    label="jots folder",
    icon="document",
    open=lazy(_SOURCE, "JotSource"),
    identify=lazy(_SOURCE, "identify"),
    discover=lazy(_SOURCE, "discover"),
    home=lazy(_SOURCE, "home"),
    window_arg="jots",
    window_help="jots folder to open in the window (repeatable)",
    commands=(Command("jot-count", "tests.toy.commands"),),
    options=(Option("context", "--numbered", "jots: number the jots in the prompt"),),
    start_rank=-1,
    keep_rank=-1,
)
"""The toy backend, as the registry knows it."""
