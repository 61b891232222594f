"""What every start of a window (or of Quick keep on its own) needs first: the application, its sources.

The sources come from the command line (each backend's option, from the
registry: ``--data-dir``, ``--workspace``...), else the demo, else the saved
settings, else what the registry discovers on this machine.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QAbstractEventDispatcher, QCoreApplication, QEvent, QObject, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from keepgui import __version__
from keepgui.core import pace, registry, remote
from keepgui.core.errors import InvalidInput
from keepgui.ui import theme
from keepgui.ui.settings import Settings

DESKTOP_ID = "io.github.keepgui.keepgui"

_QT_NOISE = ("This plugin does not support propagateSizeHints()",)


def _quiet_known_noise(mode: Any, context: Any, message: str) -> None:
    # The offscreen platform warns about window hints it cannot honour; that is
    # noise for screenshots and tests. Everything else goes to stderr as usual.
    if message in _QT_NOISE:
        return
    sys.stderr.write(message + "\n")


FULL_COLLECTION_AFTER = 1000
"""Middle-generation collections before a full one is considered, in a window's process (Python's is 10)."""


def make_app() -> QApplication:
    """The application object (created once), with keepgui's names and icon."""
    # Loads, previews and rankings run on background threads that share the GIL with
    # the GUI thread; a 1 ms switch interval (default 5 ms) keeps every GUI-thread wait
    # for the GIL short, so typing and scrolling never stutter while they compute.
    sys.setswitchinterval(0.001)
    # A full collection walks every object the collector tracks, holding the GIL throughout: 100-250 ms
    # once a big bank is in (its search index's sets, the table's lists), in whichever thread allocated
    # last, often the GUI thread. Python starts one each time the old generation grew by a quarter
    # *and* ten middle collections ran; a big load's objects are aged at once (pace.made_old), so the
    # first condition holds again and again while a window loads. Asking for a hundred times more
    # middle collections first makes them rare; young objects, where nearly all garbage is, are
    # collected as often as before.
    gc.set_threshold(*gc.get_threshold()[:2], FULL_COLLECTION_AFTER)
    qInstallMessageHandler(_quiet_known_noise)
    # Qt may log while it shuts down, after Python is gone: hand logging back to Qt first.
    atexit.register(qInstallMessageHandler, None)
    running = QApplication.instance()
    app = Application(sys.argv[:1]) if running is None else running
    if not isinstance(app, QApplication):
        raise RuntimeError("a Qt application without widgets is already running in this process")
    app.setApplicationName("keepgui")
    app.setApplicationDisplayName("keepgui")
    app.setApplicationVersion(__version__)
    app.setOrganizationName("keepgui")
    app.setDesktopFileName(DESKTOP_ID)
    app.setWindowIcon(theme.app_icon())
    return app


class Application(QApplication):
    """keepgui's QApplication: background work gives way while the GUI thread handles an event.

    Every event the GUI thread handles (a paint, a timer, a queued signal, a key) passes through
    :meth:`notify`; from the first one on, :mod:`keepgui.core.pace` tells background threads to
    wait at their next checkpoint, so the hundreds of entries into Python a paint makes never queue
    behind them for the interpreter lock. They run again only when the event loop is about to wait
    for events (``aboutToBlock``), not between two events of one pass: each event would otherwise
    have to win the lock back from them before :meth:`notify` could even say it is busy. A nested
    event loop (a modal dialog) that waits for events lets them run too.
    """

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv)
        self._foreground = pace.Foreground()
        self._foreground.busy()  # building the window is GUI work too: idle once the event loop waits
        dispatcher = QAbstractEventDispatcher.instance(self.thread())
        if dispatcher is not None:
            dispatcher.aboutToBlock.connect(self._foreground.idle)
        pace.set_foreground(self._foreground)

    def notify(self, receiver: Any, event: Any) -> bool:
        self._foreground.busy()
        return super().notify(receiver, event)


class _BusyFilter(QObject):
    """An application-wide event filter that says the GUI thread is busy (see :func:`pace_application`)."""

    def __init__(self, foreground: pace.Foreground) -> None:
        super().__init__()
        self.foreground = foreground

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        self.foreground.busy()
        return False


def pace_application(app: QCoreApplication) -> Callable[[], None]:
    """Pace background work by ``app``'s GUI thread as :class:`Application` does, for an application
    keepgui did not make (a test's, made before keepgui's window): an event filter says busy, the
    event loop's wait says idle. Returns what undoes it."""
    foreground = pace.Foreground()
    busy = _BusyFilter(foreground)
    app.installEventFilter(busy)
    dispatcher = QAbstractEventDispatcher.instance(app.thread())
    if dispatcher is not None:
        dispatcher.aboutToBlock.connect(foreground.idle)
    pace.set_foreground(foreground)

    def undo() -> None:
        pace.set_foreground(None)
        app.removeEventFilter(busy)
        if dispatcher is not None:
            dispatcher.aboutToBlock.disconnect(foreground.idle)

    return undo


def explicit_sources(args: Any) -> list[tuple[str, str]]:
    """The sources the command line names: ``(kind, absolute path)``, those of ``--source`` (recognised by
    the registry; ``host:path`` and ``ssh://`` are mirrored from that machine) first, then each backend's window option in the registry's order."""
    sources = []
    given = getattr(args, "source", None)
    for path in given if isinstance(given, list) else [given] if given else []:
        if remote.looks_remote(path):  # another machine's folder: mirrored before the window opens
            folder = remote.open_mirror(path).local
        else:
            folder = os.path.abspath(os.path.expanduser(path))
        verdict = registry.identify(folder)
        if verdict.kind is None:
            raise InvalidInput(f"{folder} is not an agent's memory keepgui knows: {verdict.why}")
        sources.append((verdict.kind, folder))
    for backend in registry.backends():
        if backend.window_arg is None:
            continue
        given = getattr(args, backend.window_arg, None)
        for path in given if isinstance(given, list) else [given] if given else []:
            sources.append((backend.kind, os.path.abspath(os.path.expanduser(path))))
    return sources


def initial_sources(args: Any, settings: Settings) -> tuple[list[tuple[str, str]], bool]:
    """The sources to open, and whether they come from (and go back to) the settings."""
    if getattr(args, "demo", False):
        from keepgui.core.demo import throwaway_demo_copy

        return list(throwaway_demo_copy().sources), False
    explicit = explicit_sources(args)
    if explicit:
        return explicit, False
    known = set(registry.kinds())
    fixed = settings.start_sources()
    if fixed is not None:  # Preferences: always these (the settings keep the ones last open too)
        return [(s["kind"], s["path"]) for s in fixed if s.get("kind") in known], True
    saved = settings.sources()
    if saved is not None:
        return [(s["kind"], s["path"]) for s in saved if s.get("kind") in known], True
    # First start: whatever is already on this machine.
    return [(found.kind, found.path) for found in registry.discover()], True
