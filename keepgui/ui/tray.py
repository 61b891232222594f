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

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
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
        showRequested(): Show window was chosen (or the icon clicked).
        compactionRequested(object key): a "Compaction due" entry was chosen for this bank.
        keepRunningChanged(bool on): "Keep running in the tray" was toggled.
        quitRequested(): Quit was chosen.
    """

    quickKeepRequested = Signal()
    showRequested = Signal()
    compactionRequested = Signal(object)
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
        self.menu.addAction(self.act_compaction)
        self._compaction_submenu_action = self.menu.addMenu(self.compaction_menu)
        self._compaction_submenu_action.setVisible(False)
        self.menu.addSeparator()
        self.menu.addAction(self.act_keep_running)
        self.menu.addAction(self.act_quit)
        self.setContextMenu(self.menu)
        self.activated.connect(self._on_activated)
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
        # Since GNOME Shell 3.26 some reasons never arrive; the menu has every action anyway.
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.showRequested.emit()
        elif reason == QSystemTrayIcon.ActivationReason.MiddleClick:
            self.quickKeepRequested.emit()
