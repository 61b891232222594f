"""A syntax highlighter whose colours follow the palette (a light/dark switch re-derives them)."""

from __future__ import annotations

from abc import abstractmethod

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QSyntaxHighlighter
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit


class PaletteHighlighter(QSyntaxHighlighter):
    """Highlights the document of a text widget.

    Subclasses define ``set_formats()``, building their text formats from
    ``keepgui.ui.theme``; it runs on creation and again, followed by a
    re-highlight, when the widget's palette changes. Only that widget's events
    are watched (a filter on the application would see every event of every object).
    """

    def __init__(self, widget: QPlainTextEdit | QTextEdit) -> None:
        super().__init__(widget.document())
        self.set_formats()
        widget.installEventFilter(self)

    @abstractmethod
    def set_formats(self) -> None:
        """Build the text formats from the theme (each subclass has its own)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:
            self.set_formats()
            self.rehighlight()
        return False
