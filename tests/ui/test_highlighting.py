"""Highlighters re-derive their colours when the palette switches between light and dark."""

from __future__ import annotations

import contextlib

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QPlainTextEdit

from keepgui.ui.adapters.iii import SectionHighlighter
from keepgui.ui.diffview import DiffHighlighter
from keepgui.ui.markdown import MarkdownHighlighter


@contextlib.contextmanager
def dark_palette():
    """The application palette switched to a dark one for the duration."""
    app = QApplication.instance()
    light = app.palette()
    dark = QPalette(light)
    for role, name in (
        (QPalette.ColorRole.Window, "#2b2b2b"),
        (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Base, "#1e1e1e"),
        (QPalette.ColorRole.Text, "#e6e6e6"),
    ):
        dark.setColor(role, QColor(name))
    try:
        app.setPalette(dark)
        yield
    finally:
        app.setPalette(light)


def test_highlighters_follow_a_palette_switch(qtbot):
    editors = [QPlainTextEdit() for _ in range(3)]
    for editor in editors:
        qtbot.addWidget(editor)
    diff = DiffHighlighter(editors[0])
    markdown = MarkdownHighlighter(editors[1])
    section = SectionHighlighter(editors[2])

    def colours():
        return (
            diff.added.background().color().name(),
            markdown.code.background().color().name(),
            section.warn.background().color().name(),
        )

    light = colours()
    with dark_palette():
        qtbot.waitUntil(lambda: all(a != b for a, b in zip(light, colours(), strict=True)))
    qtbot.waitUntil(lambda: colours() == light)
