"""The Inbox in the window, for every backend of the demo: an agent-like process changes one of the
source's memory files while the window runs; the change arrives in the inbox; the agent writes again
meanwhile; reverting the whole change keeps what it wrote after, and Undo puts the change back;
reverting one entry of the later change takes back that entry only, and Undo puts it back; Accept
empties the inbox of that file, and Undo brings its changes back. Every write a real process, every
action of keepgui's one undoable change through the window's undo stack."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from keepgui.core.history import file_key
from tests.ui.conftest import window_args

# backend -> (a memory file of its demo source, relative to the source's folder, a text an agent
# appends to it as an entry of its own format, and one it adds after: appended, or put first where
# two appends would touch the same last line, Hermes's entries having no newline after the last)
CHANGES = {
    "iii": ("blog/rules/style.md", "\n- Prefer short paragraphs, one idea each.\n", "\n- Link every claim.\n"),
    "nanobot": ("keep.md", "- The user keeps bees\n", "- The user moved to Leeds\n"),
    "claude": ("CLAUDE.md", "\n- Run the linters before committing.\n", "\n- Use tabs in Go files.\n"),
    "hermes": ("memories/MEMORY.md", "\n§\nThe cat is called Miso.", "^The boat is moored at Whitby.\n§\n"),
    "codex": ("AGENTS.md", "\n- Pin every dependency.\n", "\n- Keep handlers thin.\n"),
    "gemini": ("GEMINI.md", "\n- Dates are ISO 8601.\n", "\n- Money is integer cents.\n"),
}

AGENT = r"""
import sys
path, text = sys.argv[1], sys.argv[2]
if text.startswith("^"):  # put first: the file rewritten in place, as agents do
    old = open(path, encoding="utf-8").read()
    open(path, "w", encoding="utf-8").write(text[1:] + old)
else:
    open(path, "a", encoding="utf-8").write(text)
"""


def agent_writes(path: str, text: str) -> None:
    """An agent-like process adding ``text`` to a memory file (its own process, its own write)."""
    subprocess.run([sys.executable, "-c", AGENT, path, text], check=True, timeout=60)


def added(body: str, text: str) -> str:
    """``body`` as :func:`agent_writes` leaves it."""
    return text[1:] + body if text.startswith("^") else body + text


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture
def source_window(qtbot, tmp_path):
    from keepgui.ui.application import build_window
    from keepgui.ui.settings import Settings

    windows = []

    def build(path: str):
        args = window_args(source=[path])
        window = build_window(args, Settings(str(tmp_path / "settings.json")), watch=True)
        windows.append(window)
        window.resize(1000, 700)
        window.show()
        qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=30_000)
        return window

    yield build
    for window in windows:
        if window.rules.dirty:
            window.rules.discard()
        window.close()
        window.hub.shutdown()
        window.deleteLater()


def listed(lister, qtbot, want=lambda items: True):
    lister.refresh()
    qtbot.waitUntil(lambda: lister.listed_once and not lister._running and want(lister.listing.items), timeout=60_000)
    return lister.listing.items


def select(panel, qtbot, item) -> None:
    """Select ``item`` in the inbox and wait for its entry changes."""
    from PySide6.QtCore import QItemSelectionModel

    qtbot.waitUntil(lambda: item.id in panel.model.ids, timeout=60_000)
    row = panel.model.ids.index(item.id)
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
    panel.view.selectionModel().select(panel.model.index(row), flags)
    qtbot.waitUntil(lambda: panel.entries.count() > 0, timeout=60_000)


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_accept_revert_and_undo_in_the_window_while_the_agent_writes(kind, source_window, demo_copy, qtbot):
    folder = dict(demo_copy.sources)[kind]
    name, first, second = CHANGES[kind]
    path = os.path.join(folder, name)
    original = read(path)
    window = source_window(folder)
    lister = window.inbox
    lister._timer.stop()  # listings when the test asks and when the agent writes
    mine = lambda items: [i for i in items if i.path == file_key(path) and i.version is not None]  # noqa: E731
    assert mine(listed(lister, qtbot)) == []  # first seen: a baseline
    agent_writes(path, first)
    [change] = mine(listed(lister, qtbot, lambda items: len(mine(items)) == 1))
    assert change.agent == kind and change.what == "changed"
    dialog = window.show_inbox()
    panel = dialog.panel
    select(panel, qtbot, change)
    assert any(first.strip("\n§ ") in panel.entries.item(n).text() for n in range(panel.entries.count()))
    agent_writes(path, second)  # the agent writes again before the person acts
    later = [i for i in mine(listed(lister, qtbot, lambda items: len(mine(items)) == 2)) if i.id != change.id]
    # the whole first change taken back; what the agent wrote after it is kept
    select(panel, qtbot, change)
    panel.act("revert")
    qtbot.waitUntil(lambda: first not in read(path), timeout=60_000)
    assert read(path) == added(original, second)
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: read(path) == added(original + first, second), timeout=60_000)
    # one entry of the later change taken back, then put back
    select(panel, qtbot, later[0])
    panel.entries.setCurrentRow(0)
    assert panel.buttons["revert_entry"].isEnabled()
    panel.act("revert_entry")
    qtbot.waitUntil(lambda: read(path) == original + first, timeout=60_000)
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: read(path) == added(original + first, second), timeout=60_000)
    # the later change's one entry reverted took it out of the inbox; its undo put it back (a listing asked
    # while the window still settles the undo may come before that: wait for it)
    waiting = len(mine(listed(lister, qtbot, lambda items: len(mine(items)) >= 2)))
    # accepted: gone from the inbox; undone: back
    panel.act("accept_all")
    listed(lister, qtbot, lambda items: not mine(items))
    window.undo_stack.undo()
    listed(lister, qtbot, lambda items: len(mine(items)) == waiting)
    dialog.close()
