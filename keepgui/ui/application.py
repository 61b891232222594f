"""The QApplication, the window and its sources: what ``keepgui`` (no command) runs."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from keepgui.core import childwork
from keepgui.core.source import BankKey
from keepgui.ui.appearance import apply_theme
from keepgui.ui.hub import Hub
from keepgui.ui.mainwindow import MainWindow
from keepgui.ui.settings import Settings
from keepgui.ui.startup import DESKTOP_ID, explicit_sources, initial_sources, make_app

__all__ = ["DESKTOP_ID", "build_window", "initial_sources", "launch", "make_app", "take_screenshot"]

SCREENSHOT_SIZE = (1440, 900)


def throwaway_run(args: argparse.Namespace) -> bool:
    """A demo or screenshot run: it must leave the person's settings as they were."""
    return bool(getattr(args, "demo", False) or getattr(args, "screenshot", None))


def reload_command_for(args: argparse.Namespace, settings: Settings | None = None) -> str | None:
    """The command that tells a running agent to reload: ``--reload-command``, else none at all
    for the demo (no agent reads a throw-away copy), else ``$KEEPGUI_RELOAD_COMMAND``, else the one
    chosen in Preferences, else the backends' default (None)."""
    given = getattr(args, "reload_command", None)
    if given is None and getattr(args, "demo", False):
        return ""
    if given is None and "KEEPGUI_RELOAD_COMMAND" not in os.environ and settings is not None:
        return settings.reload_command()
    return given


def reload_override(args: argparse.Namespace) -> str:
    """Why the reload command of Preferences is not the one this run uses ("" when it is)."""
    if getattr(args, "demo", False):
        return "This is the demo: no running agent reads its throw-away copy, so none is told."
    if getattr(args, "reload_command", None) is not None:
        return "For this run, --reload-command decides (given on the command line)."
    if "KEEPGUI_RELOAD_COMMAND" in os.environ:
        return "For this run, $KEEPGUI_RELOAD_COMMAND decides (set in the environment)."
    return ""


def build_window(args: argparse.Namespace, settings: Settings | None = None, watch: bool = True) -> MainWindow:
    """The main window with its sources opened as the arguments ask."""
    settings = settings or Settings(read_only=throwaway_run(args))
    apply_theme(settings.theme())
    sources, persist = initial_sources(args, settings)
    hub = Hub(
        reload_command=reload_command_for(args, settings),
        watch=watch,
        report_follow_ups=not getattr(args, "demo", False),
    )
    window = MainWindow(hub, settings, persist_sources=persist and not getattr(args, "screenshot", None))
    window.reload_override = reload_override(args)
    if getattr(args, "bank", None):
        window.want_bank_named(args.bank, [path for _kind, path in sources])
    elif persist and settings.last_bank():
        window.want_bank(settings.last_bank())
    for kind, path in sources:
        window.hub.add(kind, path)
        if persist:
            window.remembered.add(os.path.abspath(path))
    window.update_start_page()
    if getattr(args, "panel", None):
        window.show_panel(args.panel)
    if getattr(args, "query", None):
        preview = window.panel("preview")
        if preview is not None and hasattr(preview, "set_query"):
            preview.set_query(args.query)
    return window


IDLE_POLL_MS = 100
IDLE_POLLS = 3
"""The window has nothing more to load after this many polls in a row find no background work."""


def take_screenshot(window: MainWindow, path: str, timeout_ms: int = 60_000) -> int:
    """Render the window to ``path`` once the shown bank has loaded, or as soon as nothing more
    will load (no bank to show: a nanobot-only source, an empty or missing data dir, ``--bank``
    naming nothing); ``timeout_ms`` is only a fallback. Returns the exit status."""
    app = QApplication.instance()
    if app is None:
        raise RuntimeError("a screenshot needs the running application")
    result = {"status": 1, "shot": False, "idle": 0, "loaded": False}

    def shoot() -> None:
        if result["shot"]:
            return
        shown = window.tabs.currentWidget()
        if getattr(shown, "busy", lambda: False)() and result.setdefault("waits", 0) < 100:
            result["waits"] += 1
            QTimer.singleShot(100, shoot)  # the shown panel is still working (a graph being laid out)
            return
        result["shot"] = True
        QApplication.processEvents()
        image = window.grab()
        ok = image.save(path, "PNG")
        result["status"] = 0 if ok else 1
        if not ok:
            print(f"keepgui: could not write {path}", file=sys.stderr)
        app.quit()

    def on_loaded(_key: object) -> None:
        result["loaded"] = True
        table = window.memories.table
        if not table.selectionModel().hasSelection() and table.model().rowCount():
            table.selectRow(0)  # show a memory's fields and history in the detail pane
        result["idle"] = 0  # the other banks' counts go on loading: shoot once the hub idles too

    def poll_idle() -> None:
        # Background work hands results to the GUI thread by queued signals, which may start
        # more work (the bank the window opens): idle only counts when it lasts a few polls.
        # With a bank shown, the sidebar's counts of the other banks must have arrived too (a
        # screenshot with "loading…" beside a bank is not the window a person sees).
        result["idle"] = 0 if window.hub.busy() else result["idle"] + 1
        if result["idle"] >= IDLE_POLLS:
            idle.stop()
            shoot()

    window.loaded.connect(on_loaded)
    idle = QTimer(window)
    idle.timeout.connect(poll_idle)
    idle.start(IDLE_POLL_MS)
    QTimer.singleShot(timeout_ms, shoot)
    window.resize(*SCREENSHOT_SIZE)
    window.show()
    app.exec()
    finish(window)
    return result["status"]


def finish(window: MainWindow) -> None:
    """After the event loop ends: what closing the window would have done, when the loop ended
    without it closing (a screenshot taken, a quit by signal): its state remembered, the watcher
    and the background threads stopped (the hub's shutdown may run twice)."""
    if window.isVisible():
        window.save_state()
    window.hub.shutdown()


def single_instance_applies(args: argparse.Namespace) -> bool:
    """Whether this start hands over to (or becomes) the one running keepgui.

    Not with ``--stand-alone`` (asked for), ``--screenshot`` (renders and exits)
    or ``--demo`` (a throw-away copy that must neither take over the person's
    running window nor be handed their keeps).
    """
    return not (
        getattr(args, "stand_alone", False) or getattr(args, "screenshot", None) or getattr(args, "demo", False)
    )


def activation_request(args: argparse.Namespace) -> dict[str, Any]:
    """The ``activate`` request's arguments: the sources, bank, panel and query this start names."""
    from keepgui.ui.ipc import activation_token

    sources = [{"kind": kind, "path": path} for kind, path in explicit_sources(args)]
    return {
        "sources": sources,
        "bank": getattr(args, "bank", None),
        "panel": getattr(args, "panel", None),
        "query": getattr(args, "query", None),
        "activation_token": activation_token(),
    }


def quit_on_signals(app: QApplication) -> None:
    """SIGINT (Ctrl+C in the terminal) and SIGTERM quit the window as File → Quit does, so what a
    normal exit does still happens (the demo copy removed, the watcher stopped).

    Python runs a signal handler only between bytecodes, and Qt's event loop runs none while it
    waits: a short timer lets Python look in regularly.
    """

    def ask_to_quit(_signum: int, _frame: object) -> None:
        QTimer.singleShot(0, app.quit)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, ask_to_quit)
    heartbeat = QTimer(app)
    heartbeat.setInterval(200)
    heartbeat.timeout.connect(lambda: None)
    heartbeat.start()


def launch(args: argparse.Namespace) -> int:
    """Run the window until it closes (or raise the running one and return at once)."""
    app = make_app()
    quit_on_signals(app)
    childwork.use_children(True)  # a window's long passes over a bank run beside it, not in its process
    from keepgui.ui.memorypanel.feed import TABLE_CHILD
    from keepgui.ui.memorypanel.search import INDEX_CHILD

    childwork.warm_up(dict((TABLE_CHILD, INDEX_CHILD)))
    if getattr(args, "screenshot", None):
        window = build_window(args)
        return take_screenshot(window, args.screenshot)
    server = None
    if single_instance_applies(args):
        from keepgui.ui import ipc

        try:
            reply, server = ipc.become_instance("activate", activation_request(args))
        except ipc.IpcError as exc:
            print(f"keepgui: {exc}", file=sys.stderr)
            return 1
        if reply is not None:
            if not reply.get("ok"):
                print(f"keepgui: the running keepgui refused: {reply.get('error')}", file=sys.stderr)
                return 1
            print("keepgui: showed the running keepgui window (start another one with --stand-alone)", file=sys.stderr)
            return 0
    window = build_window(args)
    from keepgui.ui.desktop import install

    desktop = install(window, app, server)

    def compact(key: BankKey) -> None:
        # The tray's "Compaction due": show the bank and open the plan for review.
        desktop.show_bank(key)
        window.review_compaction(key)

    desktop.set_compaction_handler(compact)
    if getattr(args, "tray", False) and desktop.tray is not None:
        app.setQuitOnLastWindowClosed(False)  # in the tray only: Quit in its menu ends it
    else:
        window.show()
    status = app.exec()
    finish(window)
    return status
