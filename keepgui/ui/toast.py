"""A passing "Deleted 2 memories — Undo" in the status bar, after a change a person may regret; and
the status bar's path that gives way to what is beside it (:class:`ElidedPath`).

Deleting rows gave no feedback: the rows simply vanished. The toast says what
was done and offers Undo for a few seconds. Its Undo takes back exactly that
change: once the undo stack moves on (another change, or Edit → Undo) the toast
goes, so its button never undoes something else.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QResizeEvent, QUndoStack
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QStatusBar, QToolButton, QWidget

SHOWN_MS = 10_000
"""How long the toast stays."""


class UndoToast(QWidget):
    """What was just done, and Undo (hidden until :meth:`offer`)."""

    def __init__(self, stack: QUndoStack, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.stack = stack
        self.label = QLabel(self)
        self.button = QToolButton(self)
        self.button.setText("Undo")
        self.button.setAccessibleName("Undo what was just done")
        self.button.clicked.connect(self.undo)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.button)
        self._index: int | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SHOWN_MS)
        self._timer.timeout.connect(self.hide)
        stack.indexChanged.connect(self._on_index)
        self.hide()

    def _on_index(self, index: int) -> None:
        if index != self._index:
            self._index = None
            self.hide()

    def offer(self, text: str) -> None:
        """Say ``text`` ("Deleted 2 memories") and offer to undo the step just pushed."""
        self._index = self.stack.index()
        self.label.setText(text + " —")
        bar = self.parentWidget()
        if isinstance(bar, QStatusBar) and bar.currentMessage():
            # a passing message is drawn over the bar's normal widgets: shown together, the two were
            # drawn one on top of the other. The newer one, the toast, replaces it.
            bar.clearMessage()
        self.show()
        self._timer.start()

    def undo(self) -> None:
        """Undo the change the toast describes, if it is still the last one."""
        if self._index is not None and self.stack.index() == self._index and self.stack.canUndo():
            self.stack.undo()
        self._index = None
        self.hide()


class ElidedPath(QLabel):
    """A path in the status bar that gives way: too long for its room, it loses its middle
    ("/tmp/…/memory"), keeping a gap before the labels beside it; the whole path is its tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(40)

    def set_path(self, path: str) -> None:
        """Show ``path`` (elided to the room it has)."""
        self._full = path
        self.setToolTip(path)
        self._elide()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = max(0, self.width() - 12)  # a gap before what follows
        self.setText(self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideMiddle, room))
