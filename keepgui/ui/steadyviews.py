"""Item views that do not repaint themselves whole when their window is activated or deactivated.

Qt's item views repaint their whole viewport on every activation change of their window (opening a
dialog over the window, switching to another program and back), because a style may draw a selection
in the palette's inactive colours. Where the palette's active and inactive colours are the same — every
palette keepgui makes, and Fusion's own — that repaint draws the same pixels again: for the memory
table it is every visible cell through the model, 4 to 10 ms of the GUI thread, in the same pass of
the event loop as the new window's first paint. :class:`SteadyOnActivation` skips it there, and keeps
it for a desktop palette whose inactive colours differ. The view's focus and current row are repainted
by their own events, as before.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent
from PySide6.QtGui import QPalette

_ACTIVATION = (QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate)


def same_when_inactive(palette: QPalette) -> bool:
    """True when ``palette`` draws everything alike in an active and an inactive window."""
    return palette.isEqual(QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive)


class SteadyOnActivation:
    """Mixed into a :class:`~PySide6.QtWidgets.QAbstractItemView` (first among its bases): its viewport
    is not repainted for an activation change that changes none of its colours."""

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() in _ACTIVATION and same_when_inactive(self.palette()):  # type: ignore[attr-defined]
            return False  # the viewport's own handling (no repaint for an unchanged palette) still runs
        result: Any = super().viewportEvent(event)  # type: ignore[misc]
        return bool(result)
