"""Where a window opens: a size that suits the screen, and a saved geometry only when it still fits.

Dialogs that want much room (the compaction review, the three-way view) ask for
it through :func:`resize_to_fit`, which never makes them larger than the screen.

Qt sizes a window that was never shown from its contents' size hints, which for
keepgui's splitters and tables came to about 530×400 on a 1600×1000 screen (the
sidebar's bank names cut to a letter or two). A first start opens at
:func:`default_geometry` instead, centred on the screen; a saved geometry is used
only when it lies on one of today's screens and is big enough to work in
(:func:`fits`) — a laptop undocked from a large monitor, or a size saved while
the window was squeezed, no longer brings it back off-screen or tiny.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QRect, QSize
from PySide6.QtGui import QGuiApplication, QScreen
from PySide6.QtWidgets import QWidget

SHARE = 0.85
"""A first window covers this share of the screen's width and height..."""
LARGEST = QSize(1680, 1050)
"""...but no more than this (on a big monitor a larger window only spreads the text)..."""
SMALLEST = QSize(960, 640)
"""...and no less than this, when the screen has the room."""
USABLE = QSize(640, 420)
"""A saved geometry smaller than this is not restored (a window that small cannot show a bank)."""


def default_geometry(available: QRect) -> QRect:
    """The geometry of a first window on a screen whose free area is ``available``, centred."""
    width = max(min(int(available.width() * SHARE), LARGEST.width()), SMALLEST.width())
    height = max(min(int(available.height() * SHARE), LARGEST.height()), SMALLEST.height())
    size = QSize(min(width, available.width()), min(height, available.height()))
    rect = QRect(QRect().topLeft(), size)
    rect.moveCenter(available.center())
    return rect


def fits(frame: QRect, screens: list[QRect]) -> bool:
    """True when ``frame`` (a restored window) lies on one of ``screens`` (their free areas), within
    it but for a small margin, and is at least :data:`USABLE` in size."""
    if frame.width() < USABLE.width() or frame.height() < USABLE.height():
        return False
    for available in screens:
        grown = available.adjusted(-16, -16, 16, 16)  # window frames and shadows may overhang a little
        if grown.contains(frame):
            return True
    return False


def place_window(window: QWidget, saved: QByteArray | None) -> bool:
    """Give a window that was never shown its first geometry: ``saved`` when it still fits today's
    screens, else :func:`default_geometry` on the primary screen. Returns True when ``saved`` was used."""
    screens = [screen.availableGeometry() for screen in QGuiApplication.screens()]
    if saved is not None and window.restoreGeometry(saved) and fits(window.geometry(), screens):
        return True
    screen: QScreen | None = QGuiApplication.primaryScreen()  # null while there is no screen at all
    if screen is None:
        return False
    window.setGeometry(default_geometry(screen.availableGeometry()))
    return False


def fitted_size(wanted: QSize, available: QRect, share: float = 0.92) -> QSize:
    """``wanted``, shrunk to at most ``share`` of the ``available`` screen area in each direction."""
    return QSize(
        min(wanted.width(), int(available.width() * share)), min(wanted.height(), int(available.height() * share))
    )


def resize_to_fit(widget: QWidget, wanted: QSize) -> None:
    """Resize a dialog to ``wanted``, or less where its screen is smaller (a 768-px-high laptop)."""
    parent = widget.parentWidget()
    primary: QScreen | None = QGuiApplication.primaryScreen()  # null while there is no screen at all
    screen = (parent.screen() if parent is not None else None) or primary
    widget.resize(wanted if screen is None else fitted_size(wanted, screen.availableGeometry()))
