"""Edit → Preferences (the application menu on macOS): the theme, the reload command, the sources at start.

* **Theme**: System (follow the desktop), Light or Dark (:mod:`keepgui.ui.appearance`);
  applied at once.
* **Reload command**: what keepgui runs after every write so a running agent
  re-reads its files (for the iii worker ``iii trigger memory::reload``, the
  default); empty means never. ``--reload-command`` and
  ``$KEEPGUI_RELOAD_COMMAND`` still win for the run they are given to, and the
  dialog says so.
* **Sources at start**: those open when keepgui last closed (the default), or
  always the same ones, chosen here.

Nothing is written until OK; the dialog hands back :class:`Preferences` and the
window applies and remembers them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import registry
from keepgui.core.paths import short_path
from keepgui.ui.settings import NOTIFY_SETTING

THEME_CHOICES = (("system", "System (follow the desktop)"), ("light", "Light"), ("dark", "Dark"))

SourceRole = Qt.ItemDataRole.UserRole + 90


@dataclass
class Preferences:
    """What the dialog edits: ``reload_command`` None means the default; ``start_sources`` None means
    "those open when keepgui last closed"."""

    theme: str = "system"
    reload_command: str | None = None
    start_sources: list[tuple[str, str]] | None = None
    open_now: list[tuple[str, str]] = field(default_factory=list)
    """The sources open in the window now ("Use the open ones")."""
    autostart: bool = False
    """Start keepgui in the tray at login (the desktop's autostart entry, :mod:`keepgui.core.autostart`)."""
    notify_changes: bool = False
    """A desktop notification for each change an agent makes to its memory."""


class PreferencesDialog(QDialog):
    """The preferences (see the module docstring); ``choose_source(kind, then)`` picks a folder to add
    and calls ``then(kind, path)``."""

    def __init__(
        self,
        current: Preferences,
        parent: QWidget | None = None,
        overridden: str = "",
        choose_source: Callable[[str, Callable[[str, str], None]], None] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self._open_now = list(current.open_now)
        self._choose_source = choose_source

        self.theme = QComboBox(self)
        for value, title in THEME_CHOICES:
            self.theme.addItem(title, value)
        self.theme.setCurrentIndex(max(0, self.theme.findData(current.theme)))
        self.theme.setAccessibleName("Theme")

        self.default_reload = QRadioButton("The agent's own (iii: `iii trigger memory::reload` when iii is on PATH)")
        self.custom_reload = QRadioButton("This command:")
        self.reload = QLineEdit(self)
        self.reload.setPlaceholderText("empty: never tell a running agent")
        self.reload.setAccessibleName("Reload command")
        reload_group = QButtonGroup(self)
        reload_group.addButton(self.default_reload)
        reload_group.addButton(self.custom_reload)
        if current.reload_command is None:
            self.default_reload.setChecked(True)
        else:
            self.custom_reload.setChecked(True)
            self.reload.setText(current.reload_command)
        self.custom_reload.toggled.connect(self.reload.setEnabled)
        self.reload.setEnabled(self.custom_reload.isChecked())
        reload_box = QWidget(self)
        reload_layout = QVBoxLayout(reload_box)
        reload_layout.setContentsMargins(0, 0, 0, 0)
        reload_layout.addWidget(self.default_reload)
        row = QHBoxLayout()
        row.addWidget(self.custom_reload)
        row.addWidget(self.reload, 1)
        reload_layout.addLayout(row)
        explanation = QLabel(
            "Run after every write, so an agent that keeps its memory in RAM (the iii worker) reads the files again.",
            reload_box,
        )
        explanation.setWordWrap(True)
        reload_layout.addWidget(explanation)
        self.overridden = QLabel(overridden, reload_box)
        self.overridden.setWordWrap(True)
        self.overridden.setVisible(bool(overridden))
        reload_layout.addWidget(self.overridden)

        self.last_open = QRadioButton("Those open when keepgui last closed")
        self.fixed = QRadioButton("Always these:")
        start_group = QButtonGroup(self)
        start_group.addButton(self.last_open)
        start_group.addButton(self.fixed)
        self.sources = QListWidget(self)
        self.sources.setAccessibleName("Sources opened at start")
        self.add_button = QPushButton("Add", self)
        add_menu = QMenu(self.add_button)
        for backend in registry.backends():
            add_menu.addAction(f"{backend.label[0].upper()}{backend.label[1:]}…", partial(self._add, backend.kind))
        self.add_button.setMenu(add_menu)
        self.remove_button = QPushButton("Remove", self)
        self.use_open_button = QPushButton("Use the open ones", self)
        self.remove_button.clicked.connect(self._remove)
        self.use_open_button.clicked.connect(lambda: self._set_sources(self._open_now))
        self.add_button.setEnabled(choose_source is not None)
        self._set_sources(current.start_sources if current.start_sources is not None else current.open_now)
        (self.fixed if current.start_sources is not None else self.last_open).setChecked(True)
        self.fixed.toggled.connect(self._update_sources_enabled)
        self._update_sources_enabled()
        start_box = QWidget(self)
        start_layout = QVBoxLayout(start_box)
        start_layout.setContentsMargins(0, 0, 0, 0)
        start_layout.addWidget(self.last_open)
        start_layout.addWidget(self.fixed)
        start_layout.addWidget(self.sources)
        buttons_row = QHBoxLayout()
        for button in (self.add_button, self.remove_button, self.use_open_button):
            buttons_row.addWidget(button)
        buttons_row.addStretch(1)
        start_layout.addLayout(buttons_row)

        self.autostart = QCheckBox("Start keepgui in the tray at login (it records every change agents make)", self)
        self.autostart.setChecked(current.autostart)
        self.notify_changes = QCheckBox("A desktop notification for each change an agent makes", self)
        self.notify_changes.setChecked(current.notify_changes)
        inbox_box = QWidget(self)
        inbox_layout = QVBoxLayout(inbox_box)
        inbox_layout.setContentsMargins(0, 0, 0, 0)
        inbox_layout.addWidget(self.autostart)
        inbox_layout.addWidget(self.notify_changes)

        form = QFormLayout()
        form.addRow("Theme", self.theme)
        form.addRow("Reload command", reload_box)
        form.addRow("Sources at start", start_box)
        form.addRow("Inbox", inbox_box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self.resize(640, 460)

    # ------------------------------------------------------------------ sources at start

    def _set_sources(self, sources: Sequence[tuple[str, str]]) -> None:
        self.sources.clear()
        for kind, path in sources:
            self._append(kind, path)

    def _append(self, kind: str, path: str) -> None:
        if (kind, path) in self.start_list():
            return
        known = kind in registry.kinds()
        label = registry.backend(kind).label if known else kind
        item = QListWidgetItem(f"{label} · {short_path(path)}")
        item.setToolTip(path)
        item.setData(SourceRole, (kind, path))
        self.sources.addItem(item)

    def _add(self, kind: str) -> None:
        if self._choose_source is not None:
            self._choose_source(kind, self._append)

    def _remove(self) -> None:
        for item in self.sources.selectedItems():
            self.sources.takeItem(self.sources.row(item))

    def _update_sources_enabled(self) -> None:
        on = self.fixed.isChecked()
        for widget in (self.sources, self.add_button, self.remove_button, self.use_open_button):
            widget.setEnabled(on and (widget is not self.add_button or self._choose_source is not None))

    def start_list(self) -> list[tuple[str, str]]:
        """The sources in the list, in order."""
        return [tuple(self.sources.item(i).data(SourceRole)) for i in range(self.sources.count())]

    # ------------------------------------------------------------------ result

    def value(self) -> Preferences:
        """The preferences as chosen."""
        return Preferences(
            theme=self.theme.currentData(),
            reload_command=self.reload.text().strip() if self.custom_reload.isChecked() else None,
            start_sources=self.start_list() if self.fixed.isChecked() else None,
            open_now=list(self._open_now),
            autostart=self.autostart.isChecked(),
            notify_changes=self.notify_changes.isChecked(),
        )


def inbox_preferences(settings: Any) -> dict[str, bool]:
    """The inbox's preferences as they are now (``Preferences(**...)``)."""
    from keepgui.core import autostart

    return {"autostart": autostart.is_enabled(), "notify_changes": bool(settings.get(NOTIFY_SETTING, False))}


def apply_inbox_preferences(chosen: Preferences, settings: Any) -> str:
    """Write or remove the autostart entry and remember the notification choice; "" or why not."""
    from keepgui.core import autostart
    from keepgui.core.errors import KeepguiError

    settings.set(NOTIFY_SETTING, chosen.notify_changes)
    try:
        if chosen.autostart != autostart.is_enabled():
            autostart.set_enabled(chosen.autostart)
    except (KeepguiError, OSError) as exc:
        return f"start at login not changed: {exc}"
    return ""
