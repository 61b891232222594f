"""The shape every review window of keepgui shares: a list of things to review above what the
selected one does, a status line, the actions, and the same panel in a window of its own.

:class:`ReviewPanel` lays out a list view (``listing``) over a detail view (``detail``: the entry
changes of an inbox item, the diff of a staged write) in a splitter, optional widgets under them (a
line saying why the selected write cannot be approved), and a row with the status line and the
action buttons (:meth:`ReviewPanel.place`, :meth:`ReviewPanel.add_button`). :class:`ReviewDialog` puts a panel in a window of
its own with a Close button and asks its lister for a fresh listing. :func:`by_source` groups the
chosen items by the source folder each acts on: every action is one undoable change per source.

Used by :mod:`keepgui.ui.inbox` and :mod:`keepgui.ui.approvals`; the lists themselves (a lazily fed
model, a list widget) and what the actions do stay theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.source import Change

T = TypeVar("T")

Perform = Callable[[str, Callable[[Any], Change], str], Any]
"""``perform(source folder, operation, text)``: run a write as one undo step (the window's ``perform``)."""


class Refreshable(Protocol):
    """A lister: it can be asked for a fresh listing."""

    def refresh(self) -> None: ...


class ReviewPanel(QWidget):
    """A list over the selected item's detail, a status line and action buttons (see the module docstring)."""

    def __init__(self, status_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.status = QLabel(self)
        self.status.setAccessibleName(status_name)
        self.buttons: dict[str, QPushButton] = {}
        self._row = QHBoxLayout()
        self._row.addWidget(self.status, 1)
        self.split = QSplitter(Qt.Orientation.Vertical, self)

    def place(self, listing: QAbstractItemView, detail: QWidget, under: Iterable[QWidget] = ()) -> None:
        """Lay out ``listing`` (several items may be selected) over ``detail``, then ``under``, then
        the status line and the buttons."""
        listing.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.split.addWidget(listing)
        self.split.addWidget(detail)
        layout = QVBoxLayout(self)
        layout.addWidget(self.split, 1)
        for widget in under:
            layout.addWidget(widget)
        layout.addLayout(self._row)

    def first_shown(self) -> None:
        """The window was painted once: fill what waited for that (nothing here)."""

    def add_button(self, name: str, label: str, tip: str, slot: Callable[[], object]) -> QPushButton:
        """An action button at the end of the row (``label`` with its ``&`` mnemonic)."""
        button = QPushButton(label, self)
        button.setToolTip(tip)
        button.clicked.connect(lambda _=False: slot())
        self.buttons[name] = button
        self._row.addWidget(button)
        return button


class ReviewDialog(QDialog):
    """A review panel in a window of its own, with a Close button.

    Once the window was painted the first time (its layout, fonts and frame, Qt's own work on the GUI
    thread), the panel fills what waited (:meth:`ReviewPanel.first_shown`) and the lister lists
    afresh: the listing's work on its lane never competes with that first paint for the interpreter
    lock."""

    def __init__(
        self,
        title: str,
        size: tuple[int, int],
        make_panel: Callable[[QWidget], ReviewPanel],
        lister: Refreshable,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(*size)
        self.body = make_panel(self)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.body, 1)
        layout.addWidget(close)
        self._lister = lister
        self._painted = False

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        if not self._painted:
            self._painted = True
            QTimer.singleShot(0, self, self._first_shown)

    def _first_shown(self) -> None:
        self.body.first_shown()
        self._lister.refresh()


def by_source(items: Iterable[T], source_of: Callable[[T], str]) -> dict[str, list[T]]:
    """``items`` grouped by the source folder each belongs to, in their order."""
    found: dict[str, list[T]] = {}
    for item in items:
        found.setdefault(source_of(item), []).append(item)
    return found
