"""A syntax highlighter whose colours follow the palette (a light/dark switch re-derives them)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtGui import QSyntaxHighlighter


class PaletteHighlighter(QSyntaxHighlighter):
    """Subclasses define ``set_formats()``, building their text formats from ``keepgui.ui.theme``;
    it runs on creation and again, followed by a re-highlight, whenever the application palette changes."""

    def __init__(self, document) -> None:
        super().__init__(document)
        self.set_formats()
        app = QCoreApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.ApplicationPaletteChange and watched is QCoreApplication.instance():
            self.set_formats()
            self.rehighlight()
        return False
