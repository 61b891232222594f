"""The tag chips above the table: one checkable chip per tag, with its count."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QToolButton, QWidget


class TagChips(QScrollArea):
    """One checkable chip per tag ("#style · 12"); clicking filters the table.

    Signals:
        tagChosen(object tag): a tag, or None for "all".
    """

    tagChosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._inner = QWidget()
        self._layout = QHBoxLayout(self._inner)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self.setWidget(self._inner)
        self.setFixedHeight(34)
        self._buttons: dict[str, QToolButton] = {}
        self._current: str | None = None

    def set_counts(self, counts: list[tuple[str, int]]) -> None:
        """Show these tags (count descending, then name)."""
        while self._layout.count():
            item = self._layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()  # gone at once, not when the event loop gets to the deletion
                widget.deleteLater()
        self._buttons = {}
        for tag, count in counts:
            button = QToolButton(self._inner)
            button.setText(f"#{tag} · {count}")
            button.setCheckable(True)
            button.setChecked(tag == self._current)
            button.setAutoRaise(True)
            button.setAccessibleName(f"Filter by tag {tag} ({count} {'memory' if count == 1 else 'memories'})")
            button.setToolTip(f"Show only memories tagged #{tag}")
            button.toggled.connect(lambda on, t=tag: self._choose(t if on else None))
            self._layout.addWidget(button)
            self._buttons[tag] = button
        self._layout.addStretch(1)
        if self._current is not None and self._current not in self._buttons:
            self._choose(None)

    def _choose(self, tag: str | None) -> None:
        if tag == self._current:
            return
        self._current = tag
        for name, button in self._buttons.items():
            button.blockSignals(True)
            button.setChecked(name == tag)
            button.blockSignals(False)
        self.tagChosen.emit(tag)

    def clear_choice(self) -> None:
        """Drop the tag filter."""
        self._choose(None)

    @property
    def current(self) -> str | None:
        """The chosen tag."""
        return self._current
