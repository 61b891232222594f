"""keepgui's tray icon: Quick keep, the window, compaction due, Quit.

A tray needs a host that shows one (a StatusNotifierItem or XEmbed tray on
Linux, the notification area on Windows and macOS); :func:`tray_available`
asks Qt first, and keepgui never depends on the tray: every entry of its menu
is also in the window's menus or on the command line. Under the offscreen
platform (the tests) Qt reports no tray.

The icon knows nothing about the window: it emits a signal per menu entry and
:mod:`keepgui.ui.desktop` connects them.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, QPoint, QTimer, Signal
from PySide6.QtGui import QAction, QCursor, QGuiApplication
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from keepgui.ui import theme


def tray_available() -> bool:
    """True when this desktop shows tray icons (never on the offscreen platform)."""
    return QSystemTrayIcon.isSystemTrayAvailable()


class KeepTray(QSystemTrayIcon):
    """The tray icon and its menu.

    ``set_compaction_due`` lists the banks whose compaction is due (a keep.md over
    its line cap...); with one, the entry opens it directly, with several it
    becomes a submenu.

    Signals:
        quickKeepRequested(): Quick keep… was chosen (or the icon middle-clicked).
        showRequested(): Show window was chosen (or the icon double-clicked; a click opens the menu).
        compactionRequested(object key): a "Compaction due" entry was chosen for this bank.
        approvalsRequested(): "Pending approvals" was chosen.
        keepRunningChanged(bool on): "Keep running in the tray" was toggled.
        quitRequested(): Quit was chosen.
    """

    quickKeepRequested = Signal()
    showRequested = Signal()
    compactionRequested = Signal(object)
    approvalsRequested = Signal()
    inboxRequested = Signal()
    keepRunningChanged = Signal(bool)
    quitRequested = Signal()

    def __init__(self, keep_running: bool = False, parent: QObject | None = None) -> None:
        super().__init__(theme.app_icon(), parent)
        self.setToolTip("keepgui")
        self.menu = QMenu()
        # No shortcut shown here: Ctrl+Shift+K works inside the window only (Qt has no global hotkeys;
        # bind a desktop shortcut to `keepgui quick-keep` for that).
        self.act_quick_keep = QAction(theme.icon("keep"), "&Quick keep…", self.menu)
        self.act_quick_keep.triggered.connect(self.quickKeepRequested)
        self.act_show = QAction("&Show window", self.menu)
        self.act_show.triggered.connect(self.showRequested)
        self.act_compaction = QAction(theme.icon("warning"), "No compaction due", self.menu)
        self.act_compaction.setEnabled(False)
        self.act_compaction.triggered.connect(self._on_single_compaction)
        self.act_approvals = QAction(theme.icon("warning"), "No writes await approval", self.menu)
        self.act_approvals.setEnabled(False)
        self.act_approvals.triggered.connect(self.approvalsRequested)
        self.pending = 0
        self.act_inbox = QAction("Inbox: nothing to review", self.menu)
        self.act_inbox.triggered.connect(self.inboxRequested)
        self.unreviewed = 0
        self.compaction_menu = QMenu("Compaction due", self.menu)
        self.compaction_menu.setIcon(theme.icon("warning"))
        self.act_keep_running = QAction("&Keep running in the tray when the window closes", self.menu)
        self.act_keep_running.setCheckable(True)
        self.act_keep_running.setChecked(keep_running)
        self.act_keep_running.toggled.connect(self.keepRunningChanged)
        self.act_quit = QAction("&Quit keepgui", self.menu)
        self.act_quit.triggered.connect(self.quitRequested)
        self.menu.addAction(self.act_quick_keep)
        self.menu.addAction(self.act_show)
        self.menu.addSeparator()
        self.menu.addAction(self.act_inbox)
        self.menu.addAction(self.act_approvals)
        self.menu.addAction(self.act_compaction)
        self._compaction_submenu_action = self.menu.addMenu(self.compaction_menu)
        self._compaction_submenu_action.setVisible(False)
        self.menu.addSeparator()
        self.menu.addAction(self.act_keep_running)
        self.menu.addAction(self.act_quit)
        self.setContextMenu(self.menu)
        self.activated.connect(self._on_activated)
        # A click opens the menu once the double-click interval has passed without a second click:
        # opened at once, the menu would grab the pointer and the second click of a double click
        # would close it instead of reaching the icon.
        self._click_at = QPoint()
        self._click_timer = QTimer(self)
        self._click_timer.setSingleShot(True)
        self._click_timer.setInterval(QGuiApplication.styleHints().mouseDoubleClickInterval())
        self._click_timer.timeout.connect(lambda: self.popup_menu(self._click_at))
        self.due: list[tuple[object, str, str]] = []

    def set_compaction_due(self, due: Sequence[tuple[object, str, str]]) -> None:
        """The banks whose compaction is due: ``(key, label, size)`` each ("172 lines")."""
        self.due = list(due)
        self.compaction_menu.clear()
        if len(self.due) <= 1:
            self._compaction_submenu_action.setVisible(False)
            self.act_compaction.setVisible(True)
            if self.due:
                _key, label, size = self.due[0]
                self.act_compaction.setText(f"Compaction due: {label} ({size})…")
                self.act_compaction.setEnabled(True)
            else:
                self.act_compaction.setText("No compaction due")
                self.act_compaction.setEnabled(False)
        else:
            self.act_compaction.setVisible(False)
            self._compaction_submenu_action.setVisible(True)
            self.compaction_menu.setTitle(f"Compaction due ({len(self.due)} banks)")
            for key, label, size in self.due:
                action = self.compaction_menu.addAction(f"{label} ({size})…")
                action.triggered.connect(lambda _=False, k=key: self.compactionRequested.emit(k))
        count = len(self.due)
        self.setToolTip(
            "keepgui" if not count else f"keepgui — compaction due in {count} bank{'s' if count != 1 else ''}"
        )

    def set_pending(self, count: int) -> None:
        """How many writes await approval: the icon carries a dot (attention), the menu entry opens them,
        and the tooltip says so."""
        if bool(count) != bool(self.pending):
            self.setIcon(theme.attention_icon() if count else theme.app_icon())
        self.pending = count
        self.act_approvals.setEnabled(bool(count))
        self.act_approvals.setText(f"Pending approvals ({count})…" if count else "No writes await approval")
        base = self.toolTip().split(" — ")[0] if count else "keepgui"
        self.setToolTip(f"{base} — {count} write{'s' if count != 1 else ''} await approval" if count else base)

    def set_unreviewed(self, count: int) -> None:
        """How many changes made outside keepgui wait for review: the menu entry says it and opens them."""
        self.unreviewed = count
        self.act_inbox.setText(f"Inbox ({count} to review)…" if count else "Inbox: nothing to review")

    def _on_single_compaction(self) -> None:
        if len(self.due) == 1:
            self.compactionRequested.emit(self.due[0][0])

    def notify(self, text: str, title: str = "keepgui") -> bool:
        """A short desktop notification from the icon; False (nothing shown) where messages are unsupported."""
        if not (self.isVisible() and QSystemTrayIcon.supportsMessages()):
            return False
        self.showMessage(title, text, theme.app_icon(), 4000)
        return True

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        # A click opens the menu (Show window is its second entry), as on most X11 and Windows trays:
        # under an XEmbed tray such as trayer a left click did nothing a person could see when the
        # window was already shown. A double click shows the window, a middle click opens Quick keep.
        # (Since GNOME Shell 3.26 some reasons never arrive; the menu has every action anyway.)
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self._click_at = QCursor.pos()
            self._click_timer.start()
        elif reason == QSystemTrayIcon.ActivationReason.DoubleClick:
            self._click_timer.stop()
            self.menu.hide()
            self.showRequested.emit()
        elif reason == QSystemTrayIcon.ActivationReason.MiddleClick:
            self.quickKeepRequested.emit()

    def popup_menu(self, at: QPoint | None = None) -> None:
        """Open the menu at ``at`` (default: the pointer, by the icon), as a right click does."""
        if not self.menu.isVisible():
            self.menu.popup(at if at is not None else QCursor.pos())
