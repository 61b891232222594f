"""Every keyboard shortcut of keepgui, in one place.

Standard actions use the platform's own keys (``QKeySequence.StandardKey``);
keepgui's own actions get a fixed sequence here, so they are easy to find,
document and keep free of clashes. Values are StandardKey members or portable
strings, never QKeySequence objects: building a standard sequence needs the
platform theme, which exists only once the application does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence

from keepgui.ui import theme

Std = QKeySequence.StandardKey
Key = QKeySequence.StandardKey | str
"""One key of this module: a StandardKey member or a portable string."""
Keys = Key | tuple[Key, ...]
"""A shortcut of this module: one key, or a tuple of alternatives."""

OPEN_SOURCE: tuple[Key, ...] = (Std.Open, "Ctrl+Shift+O", "Ctrl+Alt+O", "Ctrl+Alt+Shift+O")
"""File → Open <source>…, one per backend in the registry's order (more backends get no key)."""
RELOAD = Std.Refresh
QUIT = "Ctrl+Q"  # Std.Quit is empty on some Linux platform themes
UNDO = Std.Undo
REDO = (Std.Redo, "Ctrl+Y", "Ctrl+Shift+Z")
"""Both common redo keys work everywhere, whichever one the platform's standard is."""
FIND = Std.Find
SAVE = Std.Save
COPY = Std.Copy
EDIT_MEMORY = "F2"
NEW_MEMORY = Std.New
PIN = "Ctrl+P"
UNPIN = "Ctrl+Shift+P"
TOMBSTONE = Std.Delete
RESTORE = "Ctrl+Shift+R"
MOVE_UP = "Alt+Up"
MOVE_DOWN = "Alt+Down"
SHOW_HISTORY = "Ctrl+H"
RANKED = "Ctrl+R"
NEW_BANK = "Ctrl+Shift+N"
QUICK_KEEP = "Ctrl+Shift+K"
COMPACT = "Ctrl+Shift+C"
APPROVALS = "Ctrl+Shift+Y"
INBOX = "Ctrl+Shift+I"
DETAILS = "Ctrl+Shift+D"
CLEAR_SEARCH = "Esc"
"""In a search box: clear it (an empty box gives the focus back to the list)."""
PANEL_MEMORIES = "Ctrl+1"
PANEL_RULES = "Ctrl+2"
PANEL_PREVIEW = "Ctrl+3"
PANEL_GRAPH = "Ctrl+4"
ACTIVITY_STRIP = "Ctrl+Shift+A"
GRAPH_FIT = "Ctrl+0"
GRAPH_AROUND = "Ctrl+Shift+G"
HELP = Std.HelpContents
PREFERENCES = (Std.Preferences, "Ctrl+,")
"""Edit → Preferences: the platform's key (Cmd+, on macOS), and Ctrl+, where it has none (most Linux desktops)."""
PALETTE = "Ctrl+K"
"""The command palette: find a bank, a memory, an entry, a document or any menu action."""


def sequences(spec: Any, primary: bool = False) -> list[QKeySequence]:
    """The key sequences of a shortcut of this module (one, or a tuple of alternatives), each once and
    none empty (a StandardKey the platform leaves unbound is dropped). A StandardKey brings every
    binding the platform gives it, or with ``primary`` only its main one (what a list of shortcuts shows)."""
    out: list[QKeySequence] = []
    for item in spec if isinstance(spec, (tuple, list)) else (spec,):
        whole = isinstance(item, Std) and not primary
        for sequence in QKeySequence.keyBindings(item) if whole else [QKeySequence(item)]:
            if not sequence.isEmpty() and sequence not in out:
                out.append(sequence)
    return out


def set_keys(action: QAction, spec: Any) -> None:
    """Give ``action`` the shortcut(s) ``spec`` (see :func:`sequences`)."""
    action.setShortcuts(sequences(spec))


def make_action(
    parent: QObject,
    text: str,
    slot: Callable[..., Any],
    shortcut: Any = None,
    tip: str = "",
    checkable: bool = False,
    icon: str | None = None,
) -> QAction:
    """A menu action with its shortcut (one of this module's), tooltip, icon, and the slot it runs
    (``toggled`` for a checkable one)."""
    action = QAction(text, parent)
    if shortcut is not None:
        set_keys(action, shortcut)
    if tip:
        action.setStatusTip(tip)
        action.setToolTip(tip)
    if icon:
        action.setIcon(theme.icon(icon))
        action.setProperty(theme.ICON_PROPERTY, icon)  # drawn again when the theme changes
    action.setCheckable(checkable)
    if checkable:
        action.toggled.connect(slot)
    else:
        # ``triggered`` carries ``checked`` (always False here): a slot with an optional first
        # argument (the bank, the trash folder) would take it for one.
        action.triggered.connect(lambda _checked=False: slot())
    return action


def describe() -> list[tuple[str, str]]:
    """``(action, keys)`` for the README and the About box, in menu order."""
    from keepgui.core import registry

    # the first backends have an Open shortcut each, in registry order; any further one has none
    names: list[tuple[str, Keys]] = [
        (f"Open {backend.label}", keys) for backend, keys in zip(registry.backends(), OPEN_SOURCE, strict=False)
    ]
    names += [
        ("Reload from disk", RELOAD),
        ("Quit", QUIT),
        ("Undo", UNDO),
        ("Redo", REDO),
        ("Find", FIND),
        ("Clear the search box", CLEAR_SEARCH),
        ("Save rule", SAVE),
        ("New memory", NEW_MEMORY),
        ("Edit memory", EDIT_MEMORY),
        ("Pin", PIN),
        ("Unpin", UNPIN),
        ("Delete (tombstone)", TOMBSTONE),
        ("Restore", RESTORE),
        ("Move up", MOVE_UP),
        ("Move down", MOVE_DOWN),
        ("Show history", SHOW_HISTORY),
        ("Show details", DETAILS),
        ("Ranked search", RANKED),
        ("New bank", NEW_BANK),
        ("Quick keep", QUICK_KEEP),
        ("Review compaction", COMPACT),
        ("Memories panel", PANEL_MEMORIES),
        ("Rules panel", PANEL_RULES),
        ("Preview panel", PANEL_PREVIEW),
        ("Graph panel", PANEL_GRAPH),
        ("Activity strip", ACTIVITY_STRIP),
        ("Graph: fit to window", GRAPH_FIT),
        ("Graph: around the selection", GRAPH_AROUND),
        ("Preferences", PREFERENCES),
        ("Command palette", PALETTE),
    ]
    native = QKeySequence.SequenceFormat.NativeText
    return [(name, ", ".join(k.toString(native) for k in sequences(seq, primary=True))) for name, seq in names]
