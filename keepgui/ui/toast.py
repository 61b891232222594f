"""A passing "Deleted 2 memories — Undo" in the status bar, after a change a person may regret; and
the status bar's labels that give way to what is beside them (:class:`ElidedPath`, :class:`ElidedLabel`)
instead of running into it.

Deleting rows gave no feedback: the rows simply vanished. The toast says what
was done and offers Undo for a few seconds. Its Undo takes back exactly that
change: once the undo stack moves on (another change, or Edit → Undo) the toast
goes, so its button never undoes something else.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer
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


class StatusNote(QObject):
    """The window's passing note in the status bar, ending in "…" before the lasting labels (the
    whole of it in the bar's tooltip).

    Its room is measured once the bar's own widgets gave way to it (a passing message hides them,
    and the lasting labels then widen: a progress bar squeezed to 95 px grows to its 180), and again
    whenever a lasting label moves, appears, grows, or the bar is resized: measured before, a note
    at 1024 px ran under the progress bar that widened once it was shown."""

    GAP = 24
    """Pixels kept free before the first lasting label."""

    def __init__(self, bar: QStatusBar, lasting: list[QWidget]) -> None:
        super().__init__(bar)
        self.bar = bar
        self.lasting = lasting
        self._text = ""
        self._until = 0.0
        for widget in [bar, *lasting]:
            widget.installEventFilter(self)
        bar.messageChanged.connect(self._on_message)

    def show(self, text: str, ms: int = 8000) -> None:
        """Say ``text`` for ``ms`` milliseconds."""
        self._text = text
        self._until = time.monotonic() + ms / 1000
        self.bar.showMessage(text, ms)  # the bar's own widgets give way now
        self._fit()

    def _on_message(self, message: str) -> None:
        if not message:
            self._text = ""  # timed out, cleared, or replaced by the toast
            self.bar.setToolTip("")

    def _fit(self) -> None:
        if not self._text or not self.bar.currentMessage():
            return
        layout = self.bar.layout()
        if layout is not None:
            layout.activate()
        shown_lasting = [w for w in self.lasting if w.isVisible()]
        room = (min(w.x() for w in shown_lasting) if shown_lasting else self.bar.width()) - self.GAP
        shown = self.bar.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, max(0, room))
        self.bar.setToolTip(self._text if shown != self._text else "")
        if shown != self.bar.currentMessage():
            left = max(1, round((self._until - time.monotonic()) * 1000))
            text = self._text
            self.bar.showMessage(shown, left)
            self._text = text

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if self._text and event.type() in (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.Hide):
            QTimer.singleShot(0, self._fit)
        return False


class ElidedLabel(QLabel):
    """A status-bar label that asks for the room of its whole text and, given less, ends in "…"
    (the whole text its tooltip): beside the toast at 1024 px the bank's counts ran into it, cut
    mid-word. ``text()`` is the whole text."""

    MINIMUM = 60
    """The narrowest it becomes (pixels)."""
    SLACK = 4
    """Pixels beyond the text's advance it asks for (rounding of the label's own layout)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""

    def setText(self, text: str) -> None:  # noqa: N802 - Qt override
        self._full = text
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        return self._full

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint()
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(self._full) + margins.left() + margins.right() + 2 * self.SLACK
        return QSize(width, hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(min(self.MINIMUM, self.sizeHint().width()), super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        room = max(0, self.contentsRect().width() - self.SLACK)
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, room)
        self.setToolTip(self._full if shown != self._full else "")
        super().setText(shown)


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
