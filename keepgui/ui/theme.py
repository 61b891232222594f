"""Colours and icons derived from the palette, so light and dark mode both read well.

Nothing here hard-codes a colour for text or backgrounds: accents come from the
palette's highlight, muted text from its placeholder role, and the diff and
warning tints are mixed from the base colour by its lightness (the git-cola
approach). Icons are SVG templates whose ``@COLOR@`` is filled with the
palette's text colour at render time, so they follow the colour scheme too.
"""

from __future__ import annotations

import functools
import os
import zlib

from PySide6.QtCore import QByteArray, QCoreApplication, QRectF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QImage, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import app_cache_dir, resources_dir


def palette() -> QPalette:
    """The application's current palette."""
    return QGuiApplication.palette()


def is_dark(pal: QPalette | None = None) -> bool:
    """True when the window background is dark."""
    pal = pal or palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < 128


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """``a`` moved a fraction ``t`` towards ``b``."""
    return QColor(
        round(a.red() + (b.red() - a.red()) * t),
        round(a.green() + (b.green() - a.green()) * t),
        round(a.blue() + (b.blue() - a.blue()) * t),
    )


def muted_text() -> QColor:
    """Secondary text (meta lines, retired rows)."""
    pal = palette()
    return mix(pal.color(QPalette.ColorRole.Text), pal.color(QPalette.ColorRole.Base), 0.45)


def accent() -> QColor:
    """The accent colour (pinned rows, score bars, budget meters)."""
    return palette().color(QPalette.ColorRole.Highlight)


def luminance(color: QColor) -> float:
    """Relative luminance (WCAG 2): 0 for black, 1 for white."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.red()) + 0.7152 * channel(color.green()) + 0.0722 * channel(color.blue())


def contrast(a: QColor, b: QColor) -> float:
    """The WCAG contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable(color: QColor, background: QColor | None = None, ratio: float = 4.5) -> QColor:
    """``color``, moved towards the palette's text colour until it reads on ``background`` (the
    base colour) with at least ``ratio`` contrast: an accent that is dark blue in a dark palette
    becomes a light blue instead of vanishing into the near-black."""
    pal = palette()
    background = background or pal.color(QPalette.ColorRole.Base)
    text = pal.color(QPalette.ColorRole.Text)
    for step in range(11):
        candidate = mix(color, text, step / 10)
        if contrast(candidate, background) >= ratio:
            return candidate
    return text


def accent_text() -> QColor:
    """The accent as a text colour (headings): the palette's highlight, made readable on the base."""
    return readable(accent())


def tint(hue: str) -> QColor:
    """A background tint for ``added``, ``removed``, ``warning`` or ``info`` that suits the palette."""
    base = palette().color(QPalette.ColorRole.Base)
    target = {
        "added": QColor(46, 160, 67),
        "removed": QColor(218, 54, 51),
        "warning": QColor(212, 160, 23),
        "info": palette().color(QPalette.ColorRole.Highlight),
    }[hue]
    return mix(base, target, 0.35 if is_dark() else 0.22)


def strong(hue: str) -> QColor:
    """A foreground colour for ``added``, ``removed``, ``warning`` or ``info`` text that stays readable."""
    target = {
        "added": QColor(46, 160, 67),
        "removed": QColor(218, 54, 51),
        "warning": QColor(190, 140, 10),
        "info": palette().color(QPalette.ColorRole.Highlight),
    }[hue]
    text = palette().color(QPalette.ColorRole.Text)
    return mix(target, text, 0.15 if is_dark() else 0.25)


def edge(hue: str, background: QColor) -> QColor:
    """The edge of a tinted area (a banner) on ``background``: its hue made strong enough to stand
    out against it (3:1, what WCAG asks of a shape a person must see), so a tint that is close to
    a dark window still shows where the message is."""
    return readable(strong(hue), background, 3.0)


ICON_PROPERTY = "keepgui_icon"
"""The dynamic property naming an action's themed icon, so a theme change can draw it again."""


@functools.lru_cache(maxsize=128)
def _svg_template(name: str) -> str:
    with open(os.path.join(resources_dir(), "icons", name + ".svg"), encoding="utf-8") as fh:
        return fh.read()


def icon(name: str, color: QColor | None = None) -> QIcon:
    """A themed icon from ``resources/icons/<name>.svg`` (crisp at every size).

    Rendered once per name and colour: the colour is resolved from the palette
    first, so after a palette change (dark mode) the icon comes in the new colour.
    """
    color = color or palette().color(QPalette.ColorRole.Text)
    return QIcon(_rendered_icon(name, color.name()))


@functools.lru_cache(maxsize=256)
def _rendered_icon(name: str, color: str) -> QIcon:
    svg = _svg_template(name).replace("@COLOR@", color)
    drawn = _svg_file_icon(name, color, svg)
    if drawn is not None:
        return drawn
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    result = QIcon()
    ratio = 2.0
    for size in (16, 20, 24, 32, 48, 64, 128, 256):
        image = QImage(int(size * ratio), int(size * ratio), QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        renderer.render(painter, QRectF(0, 0, image.width(), image.height()))
        painter.end()
        pixmap = QPixmap.fromImage(image)
        pixmap.setDevicePixelRatio(ratio)
        result.addPixmap(pixmap)
    return result


def _svg_file_icon(name: str, color: str, svg: str) -> QIcon | None:
    """The icon of ``svg`` (an icon in one colour) drawn by Qt's SVG icon engine, at each size only
    when it is first painted at that size (rendering every size up front, as the fallback does, costs
    a few milliseconds an icon on the GUI thread at the window's first show). Qt's engine reads a file:
    the icon in its colour is kept in keepgui's cache folder, named by its content. None when the file
    cannot be written or the engine is missing (then every size is rendered here)."""
    if not _has_svg_engine():
        return None
    data = svg.encode("utf-8")
    path = os.path.join(app_cache_dir(), "icons", f"{name}-{color.lstrip('#')}-{zlib.crc32(data):08x}.svg")
    if not os.path.exists(path):
        try:
            fsio.make_dirs(os.path.dirname(path))
            fsio.atomic_write(path, data, durable=False)
        except (OSError, KeepguiError):
            return None
    drawn = QIcon(path)
    return None if drawn.isNull() else drawn


@functools.lru_cache(maxsize=1)
def _has_svg_engine() -> bool:
    """True when Qt's SVG icon engine plugin is there (PySide6's wheels have it)."""
    return any(
        os.path.exists(os.path.join(folder, "iconengines"))
        and any("svg" in f for f in os.listdir(os.path.join(folder, "iconengines")))
        for folder in QCoreApplication.libraryPaths()
    )


def app_icon() -> QIcon:
    """keepgui's own icon (not themed: it has its own colours)."""
    return QIcon(os.path.join(resources_dir(), "icons", "keepgui.svg"))


ATTENTION = QColor(218, 54, 51)
"""The dot on keepgui's icon while something waits for the person (writes awaiting approval)."""


def attention_icon() -> QIcon:
    """keepgui's icon with a dot in its top right corner: something waits for the person."""
    base = app_icon()
    result = QIcon()
    for size in (16, 22, 24, 32, 48, 64):
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        base.paint(painter, 0, 0, size, size)
        dot = max(6.0, size * 0.42)
        painter.setPen(QColor(255, 255, 255))
        painter.setBrush(ATTENTION)
        painter.drawEllipse(QRectF(size - dot, 0, dot - 1, dot - 1))
        painter.end()
        result.addPixmap(QPixmap.fromImage(image))
    return result
