"""Fixtures for window tests: a fresh demo data dir and a main window on it."""

from __future__ import annotations

import argparse
import os
import shutil

import pytest

from keepgui.core.demo import make_demo_copy


@pytest.fixture(autouse=True)
def _writes_waited(request, monkeypatch):
    """A window's writes run off the GUI thread, and their Change comes back later
    (:meth:`keepgui.ui.hub.Hub.write`). The window tests that act and then check the disk at once
    have their writes waited for: the same lane of writes, the same delivery and callbacks, the
    GUI thread waiting for each. A test marked ``async_writes`` runs them as the window does
    (tests/ui/test_async_writes.py; :func:`settle` waits for them there)."""
    if request.node.get_closest_marker("async_writes"):
        return
    from keepgui.ui.hub import Hub

    write = Hub.write

    def waited(self, work, done, failed, *, wait=False):
        return write(self, work, done, failed, wait=True)

    monkeypatch.setattr(Hub, "write", waited)


@pytest.fixture
def demo_copy(tmp_path):
    """A fresh copy of the demo data (times moved to the present)."""
    copy = make_demo_copy(parent=str(tmp_path))
    yield copy
    shutil.rmtree(copy.root, ignore_errors=True)


def window_args(**kw) -> argparse.Namespace:
    """The parsed arguments the window is built from."""
    values = dict(
        demo=False, data_dir=None, workspace=None, bank=None, panel=None, query=None, screenshot=None, reload_command=""
    )
    values.update(kw)
    return argparse.Namespace(**values)


@pytest.fixture
def make_window(qtbot, tmp_path):
    """Build a MainWindow on a data dir and wait until its bank is loaded."""
    from keepgui.ui.application import build_window
    from keepgui.ui.settings import Settings

    windows = []

    def build(data_dir, bank="main", watch=True, workspace=None):
        settings = Settings(os.path.join(str(tmp_path), f"settings-{len(windows)}.json"))
        args = window_args(data_dir=str(data_dir), bank=bank, workspace=[str(workspace)] if workspace else None)
        window = build_window(args, settings, watch=watch)
        windows.append(window)  # closed below, after unsaved edits are dropped (not by qtbot)
        window.resize(1200, 800)
        window.show()
        if bank is not None:
            qtbot.waitUntil(
                lambda: window.current is not None and window.current.bank == bank and window._loading is None,
                timeout=15_000,
            )
        return window

    yield build
    for window in windows:
        rules = window.panel("rules")
        if rules is not None and rules.dirty:
            rules.discard()  # closing would otherwise ask about unsaved edits (a modal dialog)
        window.close()
        window.hub.shutdown()
        window.deleteLater()


def open_keep(make_window, demo_copy, qtbot):
    """A window on the demo with its workspace's keep.md shown; returns ``(window, key)``."""
    from keepgui.backends.nanobot.bank import KEEP_BANK
    from keepgui.core.source import BankKey

    window = make_window(demo_copy.iii, bank=None, workspace=demo_copy.nanobot)
    key = BankKey(demo_copy.nanobot, KEEP_BANK)
    qtbot.waitUntil(lambda: window.hub.is_loaded(key), timeout=10_000)
    window.select_bank(key)
    qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)
    return window, key


def paint_cell(delegate, index, widget, width: int, height: int):
    """What ``delegate`` draws for ``index`` in a ``width``×``height`` cell of ``widget``, as an image."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QStyleOptionViewItem

    option = QStyleOptionViewItem()
    option.initFrom(widget)
    option.rect = QRect(0, 0, width, height)
    option.widget = widget
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(0)
    painter = QPainter(image)
    delegate.paint(painter, option, index)
    painter.end()
    return image


def settle(qtbot, window, timeout: int = 15_000):
    """Wait until every write the window asked for ran and came back (they run off the GUI thread)."""
    hub = getattr(window, "hub", window)
    qtbot.waitUntil(lambda: not hub.writing(), timeout=timeout)


def ran(qtbot, outcome, timeout: int = 15_000):
    """The ``Outcome`` of a write, once the write ran (off the GUI thread)."""
    qtbot.waitUntil(lambda: outcome.settled, timeout=timeout)
    return outcome
