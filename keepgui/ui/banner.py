"""A non-modal banner above the panels: a message, a few buttons, and a close button.

Used for errors a person must see ("the last action failed: …") and for
notices that offer a choice ("keep.md was rewritten by another program … Review").
The colours are palette tints, so the banner reads in light and dark mode.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from keepgui.ui import theme


class Banner(QFrame):
    """One message with actions; hidden until :meth:`show_message`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(self.label.textInteractionFlags())
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setAccessibleName("Dismiss message")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(8, 4, 4, 4)
        self._layout.addWidget(self.label, 1)
        self._buttons: list[QPushButton] = []
        self._layout.addWidget(self.close_button)
        self.hide()

    def show_message(
        self, text: str, kind: str = "warning", actions: list[tuple[str, Callable[[], None]]] | None = None
    ) -> None:
        """Show ``text`` with a ``warning``/``removed``/``info`` tint and optional buttons."""
        for button in self._buttons:
            self._layout.removeWidget(button)
            button.deleteLater()
        self._buttons = []
        for title, callback in actions or []:
            button = QPushButton(title, self)
            button.clicked.connect(callback)
            self._layout.insertWidget(self._layout.count() - 1, button)
            self._buttons.append(button)
        pal = self.palette()
        pal.setColor(
            self.backgroundRole(), theme.tint(kind if kind in ("added", "removed", "warning", "info") else "warning")
        )
        self.setPalette(pal)
        self.label.setText(text)
        self.show()

    def dismiss(self) -> None:
        """Hide the banner."""
        self.hide()

    @property
    def buttons(self) -> list[QPushButton]:
        """The action buttons shown."""
        return list(self._buttons)
