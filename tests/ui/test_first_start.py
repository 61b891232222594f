"""The first window fits the screen; a saved geometry comes back only when it still fits (#16.4).

The first window was 531×395 on a 1600×1000 screen, the sidebar's names cut to one or two letters.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QRect
from PySide6.QtGui import QGuiApplication

from keepgui.ui.geometry import default_geometry, fits


def test_a_first_window_takes_most_of_the_screen_centred():
    assert default_geometry(QRect(0, 0, 1600, 1000)) == QRect(120, 75, 1360, 850)
    assert default_geometry(QRect(0, 0, 1920, 1080 - 32)) == QRect(0, 0, 1632, 890).translated(144, 79)
    assert default_geometry(QRect(0, 0, 3840, 2160)).size().toTuple() == (1680, 1050)  # not spread over 4K
    small = default_geometry(QRect(0, 0, 1024, 700))
    assert small.size().toTuple() == (960, 640) and QRect(0, 0, 1024, 700).contains(small)
    tiny = default_geometry(QRect(0, 27, 800, 573))
    assert tiny == QRect(0, 27, 800, 573)  # never larger than the screen


def test_a_saved_geometry_is_used_only_when_it_still_fits():
    screens = [QRect(0, 0, 1600, 1000)]
    assert fits(QRect(100, 80, 1200, 800), screens)
    assert not fits(QRect(609, 408, 531, 395), screens)  # the tiny first window of the report
    assert not fits(QRect(1800, 80, 1200, 800), screens)  # on a monitor that is gone
    assert fits(QRect(1800, 80, 1200, 800), [*screens, QRect(1600, 0, 1920, 1080)])
    assert fits(QRect(-8, -8, 1616, 1016), screens)  # maximised, its frame overhanging


def test_the_first_window_opens_at_the_default_size(tmp_path, qtbot, demo_copy):
    from keepgui.ui.application import build_window
    from keepgui.ui.settings import Settings
    from tests.ui.conftest import window_args

    def build(settings: Settings):
        window = build_window(window_args(data_dir=demo_copy.iii), settings, watch=False)
        qtbot.addWidget(window)
        return window

    available = QGuiApplication.primaryScreen().availableGeometry()
    window = build(Settings(os.path.join(str(tmp_path), "fresh.json")))
    assert window.geometry() == default_geometry(available)
    assert window.tree.minimumWidth() >= 22 * window.fontMetrics().averageCharWidth()
    window.hub.shutdown()

    squeezed = Settings(os.path.join(str(tmp_path), "squeezed.json"))
    window.setGeometry(QRect(20, 20, 531, 395))
    squeezed.set_state("geometry", window.saveGeometry())
    again = build(squeezed)
    assert again.geometry() == default_geometry(available)  # the squeezed size is not brought back
    again.hub.shutdown()

    good = Settings(os.path.join(str(tmp_path), "good.json"))
    window.setGeometry(QRect(10, 30, 700, 500))
    good.set_state("geometry", window.saveGeometry())
    restored = build(good)
    assert restored.geometry().size().toTuple() == (700, 500)
    restored.hub.shutdown()
