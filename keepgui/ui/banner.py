"""A non-modal banner above the panels: a message, a few buttons, and a close button.

Used for errors a person must see ("the last action failed: …") and for
notices that offer a choice ("keep.md was rewritten by another program … Review").
The colours are palette tints, so the banner reads in light and dark mode: its text is at least
4.5:1 on the tint, and a bar of the hue along its left edge (at least 3:1 on the window) shows it
apart from the window where a dark palette makes the tint itself faint.

A message may belong to a view (its ``owner``, e.g. the bank it describes):
it shows only while that view is the one shown (:meth:`Banner.set_view`), and
comes back when the person returns to it; a message without an owner stays
until dismissed, whatever is shown.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QRect
from PySide6.QtGui import QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

from keepgui.ui import theme

EDGE_WIDTH = 4
"""The width of the bar of the banner's hue along its left edge, in pixels."""


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
        self._layout.setContentsMargins(8 + EDGE_WIDTH, 4, 4, 4)
        self._layout.addWidget(self.label, 1)
        self._buttons: list[QPushButton] = []
        self._layout.addWidget(self.close_button)
        self._view: object = None  # the view shown now (see set_view)
        self._owner: object = None  # the view the message shown belongs to (None: every view)
        self._kept: dict[object, tuple[str, str, list[tuple[str, Callable[[], None]]]]] = {}
        self.kind = "warning"  # the tint shown
        self.hide()

    @property
    def owner(self) -> object:
        """The view the message shown (or last shown) belongs to; None for one that belongs to all."""
        return self._owner

    def show_message(
        self,
        text: str,
        kind: str = "warning",
        actions: list[tuple[str, Callable[[], None]]] | None = None,
        owner: object = None,
    ) -> None:
        """Show ``text`` with a ``warning``/``removed``/``info`` tint and optional buttons; with an
        ``owner``, only while that view is shown (it is kept for when the person comes back)."""
        if owner is not None:
            self._kept[owner] = (text, kind, list(actions or []))
            if owner != self._view:
                return
        self._draw(text, kind, actions)
        self._owner = owner

    def set_view(self, view: object) -> None:
        """The view shown changed: a message of another view goes; this view's own comes back."""
        self._view = view
        if self._owner is not None and self._owner != view and self.isVisible():
            self.hide()
        kept = self._kept.get(view) if view is not None else None
        if kept is not None and not (self.isVisible() and self._owner is None):
            self._draw(*kept)
            self._owner = view

    def _draw(self, text: str, kind: str, actions: list[tuple[str, Callable[[], None]]] | None) -> None:
        for button in self._buttons:
            self._layout.removeWidget(button)
            button.hide()  # not drawn until it is deleted (when the event loop next gets there)
            button.deleteLater()
        self._buttons = []
        for title, callback in actions or []:
            button = QPushButton(title, self)
            button.clicked.connect(callback)
            self._layout.insertWidget(self._layout.count() - 1, button)
            self._buttons.append(button)
        self.kind = kind if kind in ("added", "removed", "warning", "info") else "warning"
        self._tint()
        self.label.setText(text)
        self.show()

    def _tint(self) -> None:
        """The banner's tint and its readable text, from the application's palette as it is now."""
        pal = self.palette()
        tint = theme.tint(self.kind)
        text = theme.readable(theme.palette().color(QPalette.ColorRole.WindowText), tint, 4.5)
        if pal.color(self.backgroundRole()) == tint and pal.color(QPalette.ColorRole.WindowText) == text:
            return  # as it is (and no PaletteChange sent to come back here)
        pal.setColor(self.backgroundRole(), tint)
        pal.setColor(QPalette.ColorRole.WindowText, text)
        self.setPalette(pal)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        """The theme changed (Preferences, or the desktop's): the tint is made again from the new palette
        (the banner's own palette would otherwise keep the old theme's colours). Qt tells a widget with
        a palette of its own by a PaletteChange, after the application's palette changed."""
        super().changeEvent(event)
        if event.type() in (QEvent.Type.ApplicationPaletteChange, QEvent.Type.PaletteChange):
            self._tint()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        painter = QPainter(self)
        painter.fillRect(
            QRect(0, 0, EDGE_WIDTH, self.height()),
            theme.edge(self.kind, theme.palette().color(QPalette.ColorRole.Window)),
        )
        painter.end()

    def dismiss(self) -> None:
        """Hide the banner (a view's message does not come back)."""
        self._kept.pop(self._owner, None)
        self.hide()

    def forget(self, owner: object) -> None:
        """Drop the message kept for a view (what it described is over), hiding it if shown."""
        self._kept.pop(owner, None)
        if self._owner == owner and self.isVisible():
            self.hide()

    @property
    def buttons(self) -> list[QPushButton]:
        """The action buttons shown."""
        return list(self._buttons)
