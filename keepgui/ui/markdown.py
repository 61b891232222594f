"""Markdown in the rule editor: a palette-aware highlighter and a rendered view that loads nothing.

The highlighter is a small state machine (fenced code spans lines) whose
colours come from the palette, so dark mode works. The rendered view turns
markdown into HTML with markdown-it-py (raw HTML in the source is escaped, not
rendered) and shows it in a QTextBrowser that never fetches anything: no
remote images, no local files, no link navigation.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from PySide6.QtCore import QRegularExpression, QUrl
from PySide6.QtGui import QFont, QPalette, QTextCharFormat
from PySide6.QtWidgets import QTextBrowser, QWidget

from keepgui.ui import theme
from keepgui.ui.highlighting import PaletteHighlighter

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_IN_FENCE = 1


def render_html(text: str) -> str:
    """The HTML of a markdown text (raw HTML is shown as text, never interpreted)."""
    html: str = _MD.render(text)
    return html


class MarkdownHighlighter(PaletteHighlighter):
    """Headings, list markers, emphasis, inline code and fenced code blocks."""

    def set_formats(self) -> None:
        """Formats from the current palette."""
        pal = theme.palette()
        accent = theme.accent()
        text = pal.color(QPalette.ColorRole.Text)
        self.heading = QTextCharFormat()
        self.heading.setFontWeight(QFont.Weight.Bold)
        self.heading.setForeground(theme.mix(text, accent, 0.55))
        self.marker = QTextCharFormat()
        self.marker.setForeground(accent)
        self.marker.setFontWeight(QFont.Weight.Bold)
        self.emphasis = QTextCharFormat()
        self.emphasis.setFontItalic(True)
        self.strong = QTextCharFormat()
        self.strong.setFontWeight(QFont.Weight.Bold)
        self.code = QTextCharFormat()
        self.code.setFontFamilies(["monospace"])
        self.code.setBackground(theme.mix(pal.color(QPalette.ColorRole.Base), text, 0.08))
        self.muted = QTextCharFormat()
        self.muted.setForeground(theme.muted_text())

    _RULES = (
        (QRegularExpression(r"^\s{0,3}([-*+]|\d+[.)])\s"), "marker"),
        (QRegularExpression(r"\*\*[^*\n]+\*\*|__[^_\n]+__"), "strong"),
        (QRegularExpression(r"(?<![*\w])\*[^*\n]+\*(?!\*)|(?<![_\w])_[^_\n]+_(?![_\w])"), "emphasis"),
        (QRegularExpression(r"`[^`\n]+`"), "code"),
        (QRegularExpression(r"^\s{0,3}>.*$"), "muted"),
        (QRegularExpression(r"<!--.*-->"), "muted"),
    )

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        fence = re.match(r"^\s{0,3}(```|~~~)", text)
        if self.previousBlockState() == _IN_FENCE:
            self.setFormat(0, len(text), self.code)
            self.setCurrentBlockState(-1 if fence else _IN_FENCE)
            return
        if fence:
            self.setFormat(0, len(text), self.code)
            self.setCurrentBlockState(_IN_FENCE)
            return
        self.setCurrentBlockState(-1)
        if re.match(r"^\s{0,3}#{1,6}(\s|$)", text):
            self.setFormat(0, len(text), self.heading)
            return
        for pattern, name in self._RULES:
            matches = pattern.globalMatch(text)
            while matches.hasNext():
                match = matches.next()
                start = match.capturedStart(1) if name == "marker" else match.capturedStart()
                length = match.capturedLength(1) if name == "marker" else match.capturedLength()
                self.setFormat(start, length, getattr(self, name))


class RenderedView(QTextBrowser):
    """Read-only rendered markdown that never loads a resource or follows a link."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setAccessibleName("Rendered rule")

    def loadResource(self, kind: int, url: QUrl | str) -> object:  # noqa: N802 - Qt override
        return None  # images, stylesheets, anything: never fetched, never read from disk

    def show_markdown(self, text: str) -> None:
        """Render ``text``, keeping the scroll position."""
        bar = self.verticalScrollBar()
        position = bar.value()
        self.setHtml(render_html(text))
        bar.setValue(position)
