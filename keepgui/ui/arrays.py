"""Many lines or sprites drawn from numpy arrays in one QPainter call each.

Drawing 3,000 dots one ``drawEllipse`` at a time costs a Python call (and an
antialiased path) per dot: ~20 ms, more than a frame. Qt's array overloads —
``drawLines(const QLineF *, int)`` and ``drawPixmapFragments(const
PixmapFragment *, int, pixmap)`` — draw them all in C++ from one block of
memory. PySide6 exposes them as taking a pointer to the first element, so a
numpy array laid out as Qt lays out those structs (``QLineF``: four doubles;
``PixmapFragment``: ten) is wrapped with ``shiboken6.wrapInstance`` and handed
over as it is; the array stays alive for the call. Whether the memory layout
really is Qt's is checked once against objects Qt made (:func:`layout_ok`); if
it is not (a Qt built with single-precision ``qreal``), each shape is drawn by
its own call instead: slower, never wrong.
"""

from __future__ import annotations

import ctypes
import functools
import math
from typing import Any, cast

import numpy as np
import shiboken6
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap

FRAGMENT_FIELDS = 10
"""x, y, sourceLeft, sourceTop, width, height, scaleX, scaleY, rotation, opacity."""


def _doubles_at(obj: Any, n: int) -> list[float]:
    address = shiboken6.getCppPointer(obj)[0]
    return list((ctypes.c_double * n).from_address(address))


@functools.lru_cache(maxsize=1)
def layout_ok() -> bool:
    """True when ``QLineF`` and ``QPainter.PixmapFragment`` are plain doubles in Qt's field order."""
    try:
        line = QLineF(1.0, 2.0, 3.0, 4.0)
        fragment = QPainter.PixmapFragment.create(QPointF(1, 2), QRectF(3, 4, 5, 6), 7, 8, 9, 0.5)
        return _doubles_at(line, 4) == [1, 2, 3, 4] and _doubles_at(fragment, 10) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0.5]
    except (TypeError, ValueError, AttributeError, OverflowError):
        return False


def draw_lines(painter: QPainter, lines: np.ndarray) -> int:
    """Draw ``lines`` (rows of x1, y1, x2, y2) with the painter's pen; returns how many."""
    count = len(lines)
    if not count:
        return 0
    block = np.ascontiguousarray(lines, dtype=np.float64)
    if layout_ok():
        painter.drawLines(cast(QLineF, shiboken6.wrapInstance(block.ctypes.data, QLineF)), count)
    else:
        painter.drawLines([QLineF(*row) for row in block.tolist()])
    return count


def draw_sprites(painter: QPainter, pixmap: QPixmap, xs: np.ndarray, ys: np.ndarray) -> int:
    """Draw ``pixmap`` centred on every point (``xs[i], ys[i]`` in the painter's coordinates, best
    with an identity transform: each copy is then a plain blit); returns how many."""
    count = len(xs)
    if not count:
        return 0
    ratio = pixmap.devicePixelRatio()
    width, height = pixmap.width(), pixmap.height()
    if layout_ok():
        block = np.zeros((count, FRAGMENT_FIELDS), np.float64)
        block[:, 0] = xs
        block[:, 1] = ys
        block[:, 4] = width
        block[:, 5] = height
        block[:, 6] = block[:, 7] = 1.0 / ratio  # the source is in the pixmap's pixels, the target logical
        block[:, 9] = 1.0
        first = cast(QPainter.PixmapFragment, shiboken6.wrapInstance(block.ctypes.data, QPainter.PixmapFragment))
        painter.drawPixmapFragments(first, count, pixmap)
    else:
        w, h = width / ratio, height / ratio
        for x, y in zip(np.asarray(xs).tolist(), np.asarray(ys).tolist(), strict=True):
            painter.drawPixmap(QPointF(x - w / 2, y - h / 2), pixmap)
    return count


def dot_pixmap(colour: QColor, diameter: float, ratio: float = 1.0, ring: float = 0.0) -> QPixmap:
    """An antialiased disc of ``diameter`` logical pixels (or, with ``ring``, a circle drawn with a
    pen that wide), for :func:`draw_sprites`."""
    reach = diameter + ring
    side = max(1, math.ceil(reach * ratio) + 2)
    pixmap = QPixmap(side, side)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    centre = side / 2
    r = diameter * ratio / 2
    if ring:
        painter.setPen(QPen(colour, ring * ratio))
        painter.setBrush(Qt.BrushStyle.NoBrush)
    else:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
    painter.drawEllipse(QPointF(centre, centre), r, r)
    painter.end()
    pixmap.setDevicePixelRatio(ratio)
    return pixmap
