"""The window's place on the desktop: one running instance, the tray icon, quick keep.

:func:`install` wires a built :class:`~keepgui.ui.mainwindow.MainWindow` to

* the single-instance server (:mod:`keepgui.ui.ipc`), when this process is the
  running instance: ``activate`` raises the window (opening the sources the
  second start named), ``keep`` keeps a fact through the window's undo stack
  and answers with the result, ``quick-keep`` opens the Quick keep popup;
* the tray icon (:mod:`keepgui.ui.tray`), where the desktop has a tray;
* the "Compaction due" hook (any bank whose summary says a compaction is
  due): :attr:`Desktop.compactionRequested` and :meth:`Desktop.set_compaction_handler`.

Closing the window quits keepgui, unless a tray icon shows *and* the person
ticked "Keep running in the tray when the window closes" in its menu (off by
default, remembered in the settings). The first time the window closes into
the tray a tray message says so, and both Quit entries (File and tray) really
quit. Without a tray the setting does nothing, so keepgui can never end up
running with no visible way back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtWidgets import QApplication

from keepgui.core import registry
from keepgui.core.errors import InvalidInput
from keepgui.core.paths import short_path
from keepgui.core.source import KEEP, BankKey, Change
from keepgui.ui.quickkeep import keep_into, open_quick_keep
from keepgui.ui.settings import NOTIFY_SETTING
from keepgui.ui.tray import KeepTray, tray_available

if TYPE_CHECKING:  # the window is handed in; only its type is needed here
    from keepgui.ui.ipc import InstanceServer
    from keepgui.ui.mainwindow import MainWindow

KEEP_RUNNING_SETTING = "tray/keep_running"
"""Settings key: keep running in the tray when the window closes (bool, default False)."""


class Desktop(QObject):
    """Tray, single-instance handlers and the compaction hook of one window.

    Find it later with ``window.findChild(Desktop)``.

    Signals:
        compactionRequested(object key): "Compaction due" was chosen for this bank
            (emitted before the handler set with :meth:`set_compaction_handler` runs).
    """

    compactionRequested = Signal(object)

    def __init__(
        self, window: MainWindow, app: QApplication, server: InstanceServer | None = None, use_tray: bool | None = None
    ) -> None:
        super().__init__(window)
        self.window = window
        self.app = app
        self.server = server
        self.tray: KeepTray | None = None
        self._compaction_handler: Callable[[BankKey], None] = self.show_bank
        self._quitting = False
        self._told_about_tray = False
        if tray_available() if use_tray is None else use_tray:
            self.tray = KeepTray(bool(window.settings.get(KEEP_RUNNING_SETTING, False)), self)
            self.tray.quickKeepRequested.connect(self.quick_keep)
            self.tray.showRequested.connect(self.show_window)
            self.tray.compactionRequested.connect(self.request_compaction)
            self.tray.keepRunningChanged.connect(self.set_keep_running)
            self.tray.quitRequested.connect(self.quit)
            self.tray.approvalsRequested.connect(self.show_approvals)
            self.tray.show()
            tray = self.tray
            window.approvals.listed.connect(lambda items: tray.set_pending(len(items)))
            window.approvals.arrived.connect(lambda _n, sentence: tray.notify(sentence))
            self.tray.inboxRequested.connect(self.show_inbox)
            window.inbox.listed.connect(lambda listing: tray.set_unreviewed(listing.unreviewed))
            window.inbox.arrived.connect(self._change_arrived)
        self._apply_quit_policy()
        window.installEventFilter(self)
        # File → Quit must really quit, even when closing the window only hides it.
        window.act_quit.triggered.disconnect()
        window.act_quit.triggered.connect(self.quit)
        window.hub.banksChanged.connect(lambda _path: self.update_compaction())
        window.hub.sourcesChanged.connect(self.update_compaction)
        self.update_compaction()
        if server is not None:
            server.register("activate", self._ipc_activate)
            server.register("keep", self._ipc_keep)
            server.register("quick-keep", self._ipc_quick_keep)
            server.setParent(self)
            app.aboutToQuit.connect(server.close)

    # ------------------------------------------------------------------ window and popup

    def show_window(self, activation_token: str | None = None) -> None:
        """Bring the window up: shown, not minimised, raised and (where allowed) focused."""
        if activation_token:
            # Qt's Wayland plugin uses (and clears) this token on the next activation request.
            os.environ["XDG_ACTIVATION_TOKEN"] = activation_token
        window = self.window
        if window.isMinimized():
            window.showNormal()
        else:
            window.show()
        window.raise_()
        window.activateWindow()

    def show_inbox(self) -> None:
        """Show the window and its inbox (the tray's entry)."""
        self.show_window()
        self.window.show_inbox()

    def _change_arrived(self, _count: int, sentence: str) -> None:
        """A desktop notification per change an agent made, when the person asked for them."""
        if self.tray is not None and self.window.settings.get(NOTIFY_SETTING, False):
            self.tray.notify(sentence, "Memory changed")

    def show_approvals(self) -> None:
        """Show the window and the writes awaiting approval (the tray's entry)."""
        self.show_window()
        self.window.show_approvals()

    def quick_keep(self) -> None:
        """Open the Quick keep popup (the window may stay hidden in the tray)."""
        open_quick_keep(self.window)

    # ------------------------------------------------------------------ compaction hook

    def compaction_due(self) -> list[tuple[BankKey, str, str]]:
        """Open banks whose backend says a compaction is due: ``(key, label, size)``."""
        hub = self.window.hub
        due = []
        for path in hub.sources:
            for name in hub.banks(path):
                key = BankKey(path, name)
                summary = hub.summary(key)
                if summary is not None and summary.compaction_due:
                    due.append((key, f"{name} — {short_path(path, 34)}", summary.size))
        return sorted(due, key=lambda item: (item[0].source, item[0].bank))

    def update_compaction(self) -> None:
        """Refresh the tray's "Compaction due" entry."""
        if self.tray is not None:
            self.tray.set_compaction_due(self.compaction_due())

    def set_compaction_handler(self, handler: Callable[[BankKey], None] | None) -> None:
        """Who answers "Compaction due": ``handler(key)``; None restores the default (:meth:`show_bank`)."""
        self._compaction_handler = handler or self.show_bank

    def request_compaction(self, key: BankKey) -> None:
        """Compaction of a bank was asked for (tray menu, or any caller)."""
        self.compactionRequested.emit(key)
        self._compaction_handler(key)

    def show_bank(self, key: BankKey) -> None:
        """The default compaction answer: show the window on that bank."""
        self.show_window()
        if key.source in self.window.hub.sources:
            self.window.select_bank(key)

    # ------------------------------------------------------------------ closing and quitting

    def keeps_running(self) -> bool:
        """True when closing the window hides it in the tray instead of quitting."""
        return (
            self.tray is not None
            and self.tray.isVisible()
            and bool(self.window.settings.get(KEEP_RUNNING_SETTING, False))
        )

    def set_keep_running(self, on: bool) -> None:
        """Remember whether closing the window keeps keepgui running in the tray."""
        self.window.settings.set(KEEP_RUNNING_SETTING, bool(on))
        self._apply_quit_policy()

    def _apply_quit_policy(self) -> None:
        # While keepgui lives on in the tray, only an explicit Quit ends it (a hidden window or a
        # closing popup must not count as "the last window closed").
        self.app.setQuitOnLastWindowClosed(not self.keeps_running())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.window and event.type() == QEvent.Type.Close and not self._quitting and self.keeps_running():
            event.ignore()
            self.window.hide()
            if not self._told_about_tray and self.tray is not None:
                self._told_about_tray = True
                self.tray.notify(
                    "keepgui is still running here. Quick keep and the window are in this icon's "
                    "menu; choose Quit there to stop it.",
                    "Still running in the tray",
                )
            return True
        return super().eventFilter(watched, event)

    def quit(self) -> None:
        """Quit keepgui (File → Quit, tray → Quit): the window's own close checks still run."""
        self._quitting = True
        if self.window.close():  # unsaved-edit guard, settings, background threads
            self.app.quit()
            return
        self._quitting = False  # the person chose to stay (unsaved changes): show why
        self.show_window()

    # ------------------------------------------------------------------ requests from later starts

    def _ipc_activate(self, args: dict[str, Any]) -> dict[str, Any]:
        hub = self.window.hub
        opened = []
        for item in args.get("sources") or []:
            if not isinstance(item, dict):
                raise InvalidInput(f"not a source to open: {item!r}")
            kind, path = item.get("kind"), item.get("path")
            if kind not in registry.kinds() or not isinstance(path, str) or not os.path.isabs(path):
                raise InvalidInput(f"not a source to open: {item!r}")
            if path not in hub.sources:
                # for this session only, like sources named on a first start's command line
                hub.add(kind, path)
                opened.append(path)
        token = args.get("activation_token")
        self.show_window(token if isinstance(token, str) else None)
        bank = args.get("bank")
        if isinstance(bank, str) and bank:
            self._select_named_bank(bank, [s["path"] for s in args.get("sources") or []])
        panel = args.get("panel")
        if isinstance(panel, str) and panel:
            self.window.show_panel(panel)
        query = args.get("query")
        preview = self.window.panel("preview")
        if isinstance(query, str) and query and preview is not None and hasattr(preview, "set_query"):
            preview.set_query(query)
        return {"shown": True, "opened": opened}

    def _select_named_bank(self, bank: str, named: Sequence[str]) -> None:
        """Select ``bank`` in the sources the request named, else in any open source."""
        hub = self.window.hub
        paths = [p for p in named if p in hub.sources] or list(hub.sources)
        self.window.want_bank_named(bank, paths)

    def _ipc_keep(self, args: dict[str, Any]) -> dict[str, Any]:
        text, workspace = args["text"], args.get("source", args.get("workspace"))
        if not isinstance(text, str) or not isinstance(workspace, str):
            raise InvalidInput("keep needs a text and the folder of a source")
        bank = args.get("bank")
        key = self._keep_target(workspace, bank if isinstance(bank, str) else None)
        if key is None:
            return {"handled": False, "reason": f"the running keepgui window does not show {workspace}"}
        answer: list[tuple[Change | None, str | None]] = []
        keep_into(  # the command line waits for its answer: this keep is waited for
            self.window,
            key,
            text,
            lambda change, error: answer.append((change, error)),
            force=bool(args.get("force")),
            replace=bool(args.get("replace")),
            undo_text="Keep fact",
            wait=True,
        )
        change, error = answer[0]
        if change is None:
            raise InvalidInput(error or "not kept")
        if change.written:
            self.window.note(f"from the command line — {change.message}")
        result = change.result
        obj = result.to_obj() if hasattr(result, "to_obj") else {"written": change.written, "message": change.message}
        said = {  # the same for every backend: what `keepgui keep --json` prints
            "written": change.written,
            "message": change.message,
            "feedback": [{"level": h.level, "text": h.text} for h in change.feedback],
            "notes": list(change.notes),
        }
        return {"handled": True, "undoable": change.written, "result": obj, "change": said}

    def _keep_target(self, folder: str, bank: str | None = None) -> BankKey | None:
        """The bank of the open source at ``folder`` that keeps facts (``bank``, when named)."""
        hub = self.window.hub
        wanted = os.path.realpath(folder)
        for path in hub.sources:
            if os.path.realpath(path) == wanted:
                for name in hub.banks(path) if bank is None else [n for n in hub.banks(path) if n == bank]:
                    key = BankKey(path, name)
                    if hub.capabilities(key).can(KEEP):
                        return key
        return None

    def _ipc_quick_keep(self, args: dict[str, Any]) -> dict[str, Any]:
        token = args.get("activation_token")
        if isinstance(token, str) and token:
            os.environ["XDG_ACTIVATION_TOKEN"] = token
        text = args.get("text")
        open_quick_keep(self.window, text if isinstance(text, str) else "")
        return {"shown": True}


def install(
    window: MainWindow, app: QApplication, server: InstanceServer | None = None, use_tray: bool | None = None
) -> Desktop:
    """Give ``window`` its tray icon, Quick keep, and the single-instance handlers of ``server``.

    ``use_tray`` None asks the desktop (:func:`~keepgui.ui.tray.tray_available`);
    the screenshot path never calls this.
    """
    return Desktop(window, app, server, use_tray)
