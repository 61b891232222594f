"""Render keepgui's icon to the PNG sizes of the hicolor icon theme.

``resources/icons/keepgui.svg`` is the one source; this writes
``resources/icons/hicolor/<n>x<n>/apps/io.github.keepgui.keepgui.png`` for each
size in :data:`SIZES`, plus ``hicolor/scalable/apps/io.github.keepgui.keepgui.svg``
(a copy), so the ``.desktop`` entry's ``Icon=io.github.keepgui.keepgui`` resolves
once the folder is installed under ``share/icons``. Run it after changing the
SVG and commit the results::

    python tools/render_icons.py          # (re)write the files
    python tools/render_icons.py --check  # exit 1 when a file is missing or differs from a fresh render
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ICONS = os.path.join(ROOT, "resources", "icons")
SOURCE = os.path.join(ICONS, "keepgui.svg")
APP_ID = "io.github.keepgui.keepgui"
SIZES = (16, 32, 48, 64, 128, 256)


def render(svg: str, size: int) -> QImage:
    """The SVG drawn into a transparent ``size``×``size`` image, antialiased."""
    renderer = QSvgRenderer(svg)
    if not renderer.isValid():
        raise SystemExit(f"render_icons: {svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def target(size: int | None) -> str:
    """Where one size goes (None: the scalable SVG)."""
    if size is None:
        return os.path.join(ICONS, "hicolor", "scalable", "apps", APP_ID + ".svg")
    return os.path.join(ICONS, "hicolor", f"{size}x{size}", "apps", APP_ID + ".png")


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` verify) every rendered size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with fresh renders")
    args = parser.parse_args(argv)
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # QImage and QSvgRenderer need one
    with open(SOURCE, "rb") as fh:
        svg_bytes = fh.read()
    stale = []
    for size in SIZES:
        path = target(size)
        image = render(SOURCE, size)
        if args.check:
            existing = QImage(path)
            if existing.isNull() or existing.convertToFormat(QImage.Format.Format_ARGB32) != image:
                stale.append(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not image.save(path, "PNG"):
            raise SystemExit(f"render_icons: could not write {path}")
        print(f"wrote {os.path.relpath(path, ROOT)}")
    scalable = target(None)
    if args.check:
        try:
            with open(scalable, "rb") as fh:
                if fh.read() != svg_bytes:
                    stale.append(scalable)
        except OSError:
            stale.append(scalable)
        for path in stale:
            print(f"stale: {os.path.relpath(path, ROOT)} (run tools/render_icons.py)")
        return 1 if stale else 0
    os.makedirs(os.path.dirname(scalable), exist_ok=True)
    with open(scalable, "wb") as fh:
        fh.write(svg_bytes)
    print(f"wrote {os.path.relpath(scalable, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
