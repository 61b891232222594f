"""The QApplication, the window and its sources: what ``keepgui`` (no command) runs."""

from __future__ import annotations

import atexit
import os
import shutil
import sys

from PySide6.QtCore import QTimer, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from keepgui import __version__
from keepgui.core.iii.store import default_data_dir
from keepgui.core.nanobot.workspace import default_workspace_path
from keepgui.ui import theme
from keepgui.ui.hub import KEEP_BANK, BankKey, Hub
from keepgui.ui.mainwindow import MainWindow
from keepgui.ui.settings import Settings

DESKTOP_ID = "io.github.keepgui.keepgui"
SCREENSHOT_SIZE = (1440, 900)


_QT_NOISE = ("This plugin does not support propagateSizeHints()",)


def _quiet_known_noise(mode, context, message) -> None:
    # The offscreen platform warns about window hints it cannot honour; that is
    # noise for screenshots and tests. Everything else goes to stderr as usual.
    if message in _QT_NOISE:
        return
    sys.stderr.write(message + "\n")


def make_app() -> QApplication:
    """The application object (created once), with keepgui's names and icon."""
    # Loads, previews and rankings run on background threads that share the GIL with
    # the GUI thread; a 1 ms switch interval (default 5 ms) keeps every GUI-thread wait
    # for the GIL short, so typing and scrolling never stutter while they compute.
    sys.setswitchinterval(0.001)
    qInstallMessageHandler(_quiet_known_noise)
    # Qt may log while it shuts down, after Python is gone: hand logging back to Qt first.
    atexit.register(qInstallMessageHandler, None)
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
    app.setApplicationName("keepgui")
    app.setApplicationDisplayName("keepgui")
    app.setApplicationVersion(__version__)
    app.setOrganizationName("keepgui")
    app.setDesktopFileName(DESKTOP_ID)
    app.setWindowIcon(theme.app_icon())
    return app


def explicit_sources(args) -> list[tuple[str, str]]:
    """The sources the command line names: ``(kind, absolute path)``, the data dir first."""
    sources = []
    if getattr(args, "data_dir", None):
        sources.append(("iii", os.path.abspath(os.path.expanduser(args.data_dir))))
    for workspace in getattr(args, "workspace", None) or []:
        sources.append(("nanobot", os.path.abspath(os.path.expanduser(workspace))))
    return sources


def initial_sources(args, settings: Settings) -> tuple[list[tuple[str, str]], bool]:
    """The sources to open, and whether they come from (and go back to) the settings."""
    if getattr(args, "demo", False):
        from keepgui.core.demo import make_demo_copy

        copy = make_demo_copy()
        if not os.environ.get("KEEPGUI_KEEP_DEMO"):
            atexit.register(shutil.rmtree, copy.root, True)
        return [("iii", copy.iii), ("nanobot", copy.nanobot)], False
    explicit = explicit_sources(args)
    if explicit:
        return explicit, False
    saved = settings.sources()
    if saved is not None:
        return [(s.get("kind", "iii"), s["path"]) for s in saved], True
    # First start: whatever is already on this machine.
    found = []
    env = os.environ.get("KEEPGUI_DATA_DIR")
    for path in ([env] if env else []) + [default_data_dir(), os.path.expanduser("~/.iii/data/memory")]:
        if path and os.path.isdir(path) and ("iii", path) not in found:
            found.append(("iii", os.path.abspath(path)))
    workspace = default_workspace_path()
    if os.path.isdir(workspace):
        found.append(("nanobot", workspace))
    return found, True


def build_window(args, settings: Settings | None = None, watch: bool = True) -> MainWindow:
    """The main window with its sources opened as the arguments ask."""
    settings = settings or Settings()
    sources, persist = initial_sources(args, settings)
    hub = Hub(reload_command=getattr(args, "reload_command", None), watch=watch)
    window = MainWindow(hub, settings, persist_sources=persist and not getattr(args, "screenshot", None))
    iii_paths = [path for kind, path in sources if kind == "iii"]
    workspaces = [path for kind, path in sources if kind == "nanobot"]
    wanted = None
    if getattr(args, "bank", None) == KEEP_BANK and workspaces:
        wanted = BankKey(workspaces[0], KEEP_BANK)
    elif getattr(args, "bank", None) and iii_paths:
        wanted = BankKey(iii_paths[0], args.bank)
    elif persist and settings.last_bank():
        wanted = BankKey(*settings.last_bank())
    window.want_bank(wanted)
    for kind, path in sources:
        window.hub.add(kind, path)
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
    result = {"status": 1, "shot": False, "idle": 0, "loaded": False}

    def shoot() -> None:
        if result["shot"]:
            return
        result["shot"] = True
        QApplication.processEvents()
        image = window.grab()
        ok = image.save(path, "PNG")
        result["status"] = 0 if ok else 1
        if not ok:
            print(f"keepgui: could not write {path}", file=sys.stderr)
        app.quit()

    def on_loaded(_key) -> None:
        result["loaded"] = True
        table = window.memories.table
        if not table.selectionModel().hasSelection() and table.model().rowCount():
            table.selectRow(0)  # show a memory's fields and history in the detail pane
        QTimer.singleShot(600, shoot)  # let the sidebar counts and the detail pane settle

    def poll_idle() -> None:
        # Background work hands results to the GUI thread by queued signals, which may start
        # more work (the bank the window opens): idle only counts when it lasts a few polls.
        result["idle"] = 0 if window.hub.busy() else result["idle"] + 1
        if result["idle"] >= IDLE_POLLS and not result["loaded"]:
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
    return result["status"]


def single_instance_applies(args) -> bool:
    """Whether this start hands over to (or becomes) the one running keepgui.

    Not with ``--stand-alone`` (asked for), ``--screenshot`` (renders and exits)
    or ``--demo`` (a throw-away copy that must neither take over the person's
    running window nor be handed their keeps).
    """
    return not (getattr(args, "stand_alone", False) or getattr(args, "screenshot", None)
                or getattr(args, "demo", False))


def activation_request(args) -> dict:
    """The ``activate`` request's arguments: the sources, bank, panel and query this start names."""
    from keepgui.ui.ipc import activation_token

    sources = [{"kind": kind, "path": path} for kind, path in explicit_sources(args)]
    return {"sources": sources, "bank": getattr(args, "bank", None), "panel": getattr(args, "panel", None),
            "query": getattr(args, "query", None), "activation_token": activation_token()}


def launch(args) -> int:
    """Run the window until it closes (or raise the running one and return at once)."""
    app = make_app()
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
            print("keepgui: showed the running keepgui window (start another one with --stand-alone)",
                  file=sys.stderr)
            return 0
    window = build_window(args)
    from keepgui.ui.desktop import install

    desktop = install(window, app, server)

    def compact(workspace: str) -> None:
        # The tray's "Compaction due": show keep.md and open the plan for review.
        desktop.show_keep(workspace)
        window.review_compaction(BankKey(workspace, KEEP_BANK))

    desktop.set_compaction_handler(compact)
    window.show()
    return app.exec()
