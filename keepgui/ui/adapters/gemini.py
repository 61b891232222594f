"""The Gemini CLI preview: both ``<loaded_context>`` elements, exactly, and what they are made of.

Left, the two elements one after the other, each under a heading line with its files, bytes and an
estimated token count (the end of the system instruction: global and private memory; the first user
turn: extension and project memory). Right, the files in Gemini's order with their tier and size, the
files that load later or never (with why), and the notes (trust, the private folder, when an edit
takes effect). The Copy button copies either element exactly as Gemini sends it.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QTextBrowser, QVBoxLayout, QWidget

from keepgui.backends.gemini.context import GeminiPreview, tokens_of
from keepgui.ui.adapters.base import Adapter, PreviewView, plain_view


class GeminiPreviewView(PreviewView):
    """Both elements beside the lists that explain them."""

    copy_choices = (
        ("The system instruction's <loaded_context>, exactly", "system"),
        ("The first turn's <loaded_context>, exactly", "session"),
    )

    def build(self) -> None:
        """The elements on the left, the lists on the right."""
        self.text = plain_view("What the next Gemini CLI session is given", self)
        self.lists = QTextBrowser(self)
        self.lists.setAccessibleName("Which files load, later or never, and why")
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
        """Draw both elements and the lists."""
        self.text.setPlainText(self.injected_text(preview, "all"))
        self.lists.setHtml(self.lists_html(preview) if isinstance(preview, GeminiPreview) else "")

    def clear(self) -> None:
        """Nothing to show."""
        self.text.setPlainText("")
        self.lists.setHtml("")

    def summary(self, preview: Any) -> str:
        """The bytes every request carries."""
        if not isinstance(preview, GeminiPreview):
            return super().summary(preview)
        size = preview.sent_bytes
        return (
            f"what the next Gemini CLI session is given · {size:,} bytes ≈ {tokens_of(size):,} tokens "
            f"with every request (Gemini {preview.context.gemini_version})"
        )

    def injected_text(self, preview: Any, what: str) -> str:
        """One element exactly (``system``, ``session``), or both under their headings (``all``)."""
        if not isinstance(preview, GeminiPreview):
            return super().injected_text(preview, what)
        if what == "system":
            return preview.system or ""
        if what == "session":
            return preview.session or ""
        return preview.text

    def lists_html(self, preview: GeminiPreview) -> str:
        """The files in order, the ones that load later or never, and the notes, as HTML."""
        found = preview.context.discovery
        out = ["<h4>Loaded, in Gemini's order</h4><ol>"]
        for f in found.files:
            if f.state in ("loaded", "empty"):
                out.append(f"<li>{html.escape(f.path)} — {f.tier}{' (empty)' if f.state == 'empty' else ''}</li>")
        out.append("</ol>")
        later = found.later()
        if later:
            out.append("<h4>Loads later</h4><ul>")
            out.extend(f"<li>{html.escape(f.path)}: {html.escape(f.reason)}</li>" for f in later)
            out.append("</ul>")
        never = found.never()
        if never:
            out.append("<h4>Never loads</h4><ul>")
            out.extend(f"<li>{html.escape(f.path)}: {html.escape(f.reason)}</li>" for f in never)
            out.append("</ul>")
        notes = list(preview.notes) + list(found.problems)
        if notes:
            out.append("<h4>Notes</h4><ul>")
            out.extend(f"<li>{html.escape(n)}</li>" for n in notes)
            out.append("</ul>")
        return "".join(out)


class GeminiAdapter(Adapter):
    """Gemini CLI's view of its preview."""

    kind = "gemini"

    def preview_view(self, parent: QWidget) -> PreviewView:
        """Both elements and the lists."""
        return GeminiPreviewView(parent)


ADAPTER = GeminiAdapter()
