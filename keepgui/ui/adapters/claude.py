"""The Claude Code preview: the reminder the next session is given, verbatim, with the index's cut drawn.

Left, the reminder exactly as the CLI sends it (the Copy button copies these
very characters), with a dashed line drawn across it where ``MEMORY.md`` is
cut and the CLI's warning below the line shaded. Right, what a person needs to
read it: the memories past the cut by name ("these 20 memories are invisible
to Claude"), the files in the reminder in order with their labels, the files
that load later (and when), the ones that never load (and why), and when an
edit takes effect (a running session keeps what it loaded until ``/compact``,
``/clear`` or a restart).
"""

from __future__ import annotations

import html
import os
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontDatabase, QPainter, QPaintEvent, QPen, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QSplitter, QTextBrowser, QTextEdit, QVBoxLayout, QWidget

from keepgui.backends.claude.context import ClaudePreview
from keepgui.ui import theme
from keepgui.ui.adapters.base import Adapter, LongTextView, PreviewView


def _esc(text: str) -> str:
    return html.escape(text)


LIST_MAX = 200
"""Each list beside the reminder names this many items at most: laid out as HTML on the GUI thread, the
5,000 entries past the cut of a big project's index held the window 4 s."""


def _more(total: int, muted: str) -> str:
    """The line that says how many items a list did not name ("" when it named them all)."""
    rest = total - LIST_MAX
    return f"<p style='color:{muted}'>… and {rest:,} more</p>" if rest > 0 else ""


class CutLineView(LongTextView):
    """Read-only text with one horizontal line drawn after the character ``cut_at`` (the index's cut)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("The reminder the next session is given")
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.cut_at: int | None = None
        self.cut_label = ""

    def show_text(self, text: str, cut_at: int | None = None, label: str = "") -> None:
        """Show ``text`` and, when ``cut_at`` is given, the cut line there (what follows it shaded)."""
        self.cut_at, self.cut_label = cut_at, label
        self.setPlainText(text, lambda: self._shade(text, cut_at))

    def _shade(self, text: str, cut_at: int | None) -> None:
        """Once ``text`` is in: what follows the cut shaded."""
        selections = []
        if cut_at is not None:
            shade = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setBackground(theme.tint("removed"))
            shade.format = fmt
            cursor = QTextCursor(self.document())
            cursor.setPosition(min(cut_at, len(text)))
            end = text.rfind("\n</system-reminder>")
            cursor.setPosition(end if end > cut_at else len(text), QTextCursor.MoveMode.KeepAnchor)
            shade.cursor = cursor
            selections.append(shade)
        self.setExtraSelections(selections)
        self.viewport().update()

    def cut_block(self) -> int | None:
        """The number of the text line (block) after which the cut line is drawn."""
        if self.cut_at is None:
            return None
        return self.document().findBlock(self.cut_at).blockNumber()

    def cut_y(self) -> float | None:
        """Where the cut line is drawn in the viewport (None when there is no cut)."""
        if self.cut_at is None:
            return None
        block = self.document().findBlock(self.cut_at)
        if not block.isValid():
            return None
        return self.blockBoundingGeometry(block).translated(self.contentOffset()).bottom()

    def scroll_to_cut(self) -> None:
        """Bring the cut into view."""
        if self.cut_at is not None:
            cursor = QTextCursor(self.document())
            cursor.setPosition(self.cut_at)
            self.setTextCursor(cursor)
            self.centerCursor()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        y = self.cut_y()
        if y is None or not 0 <= y <= self.viewport().height():
            return
        painter = QPainter(self.viewport())
        color = theme.strong("removed")
        pen = QPen(color, 2, Qt.PenStyle.DashLine)
        painter.setPen(pen)
        width = self.viewport().width()
        painter.drawLine(QPointF(0, y), QPointF(width, y))
        if self.cut_label:
            # the label goes in the blank line below the cut (the CLI puts one before its warning)
            metrics = painter.fontMetrics()
            text = metrics.elidedText(self.cut_label, Qt.TextElideMode.ElideRight, max(40, width - 8))
            painter.drawText(
                QRectF(4, y + 1, width - 8, metrics.height() + 2),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                text,
            )
        painter.end()


class ClaudePreviewView(PreviewView):
    """The reminder with its cut line, beside the lists that explain it."""

    copy_choices = (("The reminder, exactly as the CLI sends it", "all"),)
    text: CutLineView  # the base view's text, as the view with the cut line that build() makes

    def build(self) -> None:
        """The reminder on the left, the lists on the right."""
        self.text = CutLineView(self)
        self.lists = QTextBrowser(self)
        self.lists.setAccessibleName("What loads, what loads later and what never loads")
        self.lists.setOpenLinks(False)
        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.addWidget(self.text)
        self.split.addWidget(self.lists)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.split, 1)

    def show_result(self, preview: Any) -> None:
        """Draw the reminder (with its cut) and the lists."""
        if not isinstance(preview, ClaudePreview):
            self.text.show_text(str(preview))
            self.lists.setHtml("")
            return
        label = ""
        if preview.cut_at is not None:
            label = (
                f"MEMORY.md is cut here: from line {preview.cut_line} on, "
                f"{len(preview.hidden)} {'entry does' if len(preview.hidden) == 1 else 'entries do'} not load"
            )
        self.text.show_text(preview.text, preview.cut_at, label)
        self.lists.setHtml(self.lists_html(preview))

    def clear(self) -> None:
        """Nothing to show."""
        self.text.show_text("")
        self.lists.setHtml("")

    def lists_html(self, preview: ClaudePreview) -> str:
        """The lists beside the reminder, as HTML."""
        muted = theme.muted_text().name()
        warn = theme.strong("removed").name()
        out = []
        if preview.hidden:
            n = len(preview.hidden)
            out.append(
                f"<h3 style='color:{warn}'>Past the cut: {'this memory is' if n == 1 else f'these {n} memories are'} "
                "invisible to Claude</h3>"
                f"<p style='color:{muted}'>Their index lines are past the cut, so a session does not see them at its "
                "start (the agent appends, so these are the newest). Bank → Review compaction plans a fix.</p><ul>"
            )
            for entry in preview.hidden[:LIST_MAX]:
                part = " (only its start loads)" if entry.partial else ""
                out.append(
                    f"<li>line {entry.line}: <b>{_esc(entry.title)}</b> → <code>{_esc(entry.target)}</code>{part}</li>"
                )
            out.append("</ul>" + _more(len(preview.hidden), muted))
        out.append(f"<h3>In the reminder, in this order ({len(preview.loaded)})</h3><ol>")
        for item in preview.loaded[:LIST_MAX]:
            out.append(
                f"<li><code>{_esc(item.path)}</code><br><span style='color:{muted}'>{_esc(item.what)}"
                + (f" · {_esc(item.detail)}" if item.detail else "")
                + "</span></li>"
            )
        out.append("</ol>" + _more(len(preview.loaded), muted))
        if preview.later:
            out.append("<h3>Loads later</h3><ul>")
            for item in preview.later[:LIST_MAX]:
                detail = f" ({_esc(item.detail)})" if item.detail else ""
                out.append(
                    f"<li><code>{_esc(item.path)}</code><br><span style='color:{muted}'>{_esc(item.what)}{detail}</span></li>"
                )
            out.append("</ul>" + _more(len(preview.later), muted))
        if preview.never:
            out.append("<h3>Never loads at session start</h3><ul>")
            for item in preview.never[:LIST_MAX]:
                out.append(
                    f"<li><code>{_esc(_short(item.path, preview))}</code><br>"
                    f"<span style='color:{muted}'>{_esc(item.what)}</span></li>"
                )
            out.append("</ul>" + _more(len(preview.never), muted))
        out.append("<h3>When it takes effect</h3>" + "".join(f"<p>{_esc(note)}</p>" for note in preview.notes))
        return "".join(out)

    def summary(self, preview: Any) -> str:
        """Exact or not, the size, the cut, and when it takes effect."""
        if not isinstance(preview, ClaudePreview):
            return super().summary(preview)
        mode = (
            f"exact, as Claude Code {preview.claude_version} sends it"
            if preview.exact
            else "MEMORY.md only: the project folder is unknown"
        )
        line = (
            f"The reminder a new session starts with · {mode} · {preview.units:,} characters ≈ "
            f"{preview.tokens:,} tokens · {len(preview.loaded)} files"
            if preview.text
            else f"Nothing loads at session start · {mode}"
        )
        if preview.hidden:
            line += (
                f" · MEMORY.md cut at line {preview.cut_line}: {len(preview.hidden)} "
                f"{'memory' if len(preview.hidden) == 1 else 'memories'} invisible to Claude"
            )
        return line + "\nA running session keeps what it loaded until /compact, /clear or a restart."

    def injected_text(self, preview: Any, what: str) -> str:
        """The reminder, exactly."""
        return preview.text if isinstance(preview, ClaudePreview) else str(preview)


def _short(path: str, preview: ClaudePreview) -> str:
    memory = preview.memory_dir.rstrip(os.sep) + os.sep
    return "memory/" + path[len(memory) :] if path.startswith(memory) else path


class ClaudeAdapter(Adapter):
    """Claude Code's view of its preview."""

    kind = "claude"

    def preview_view(self, parent: QWidget) -> PreviewView:
        """The reminder with its cut line, and the lists."""
        return ClaudePreviewView(parent)


ADAPTER = ClaudeAdapter()
