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


_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARKER = re.compile(r"^(<{7}|={7}|>{7}|\|{7})(?=\s|$)")


def _marker_block(line: str) -> str:
    """A conflict marker line as a block of its own, shown as code (what it is: not prose)."""
    shown = f"`{line}`" if "`" not in line else "\\" + line
    return f"\n{shown}\n"


def for_reading(text: str) -> str:
    """The Markdown a reader sees rendered: HTML comments left out (renderers hide them, and Claude
    Code strips them from CLAUDE.md before it injects it), and a merge's conflict markers
    (``<<<<<<<``, ``=======``, ``>>>>>>>``) kept as the plain lines they are, never read as nested
    quotes or a heading's underline. Fenced code is left as it is."""
    out: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            joined = _COMMENT.sub("", "\n".join(prose))
            out.extend(_marker_block(line) if _MARKER.match(line) else line for line in joined.split("\n"))
            prose.clear()

    fence = ""
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if fence:
            out.append(line)
            if found and found.group(1) == fence:
                fence = ""
        elif found:
            flush()
            fence = found.group(1)
            out.append(line)
        else:
            prose.append(line)
    flush()
    return "\n".join(out)


def render_html(text: str) -> str:
    """The HTML of a markdown text as a reader sees it (:func:`for_reading`); raw HTML is shown as
    text, never interpreted."""
    html: str = _MD.render(for_reading(text))
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
        self.heading.setForeground(theme.readable(theme.mix(text, accent, 0.55)))
        self.marker = QTextCharFormat()
        self.marker.setForeground(theme.accent_text())
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
