"""Unified diffs on screen: a read-only text view with a small palette-aware highlighter.

The highlighter is a state machine over the lines of a unified diff (file
headers, hunk headers, added, removed, context) in the style of git-cola; its
colours are tints of the palette's base colour, so a diff reads in light and
dark mode alike. The diff itself is computed in :mod:`keepgui.core.textdiff`.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontDatabase, QTextCharFormat
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from keepgui.ui import theme
from keepgui.ui.highlighting import PaletteHighlighter


class DiffHighlighter(PaletteHighlighter):
    """Colours the lines of a unified diff."""

    def set_formats(self) -> None:
        """Formats from the current palette."""
        self.added = QTextCharFormat()
        self.added.setBackground(theme.tint("added"))
        self.removed = QTextCharFormat()
        self.removed.setBackground(theme.tint("removed"))
        self.hunk = QTextCharFormat()
        self.hunk.setForeground(theme.accent())
        self.header = QTextCharFormat()
        self.header.setFontWeight(QFont.Weight.Bold)
        self.note = QTextCharFormat()
        self.note.setForeground(theme.muted_text())

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if text.startswith(("+++ ", "--- ")):
            fmt = self.header
        elif text.startswith("@@"):
            fmt = self.hunk
        elif text.startswith("+"):
            fmt = self.added
        elif text.startswith("-"):
            fmt = self.removed
        elif text.startswith("\\"):
            fmt = self.note
        else:
            return
        self.setFormat(0, len(text), fmt)


class DiffView(QPlainTextEdit):
    """A read-only, monospaced, highlighted unified diff."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.highlighter = DiffHighlighter(self)
