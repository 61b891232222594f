"""Open on another machine…: a host of ~/.ssh/config, the agents found in its home, opened over SSH.

The dialog lists the host aliases of the person's ssh_config to choose from (any ``[user@]host[:port]``
may be typed), and either a folder there (``~/.hermes``, an absolute path) or, with none given, the
agents' homes found in the remote user's home (one round trip). Everything that talks to the machine
runs on the ``remote`` lane, never on the GUI thread: discovery, the first mirror of each source, and
accepting a host key. An unknown host is asked about, its fingerprints shown; a changed host key is
refused with the reason. Each source opened is a local mirror (:mod:`keepgui.core.remote`), handed
to the window as any folder: the sidebar names it ``host:/path`` and :class:`RemoteStatus` marks it
"offline — read-only" while its machine does not answer.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import registry, remote
from keepgui.core.registry import Found
from keepgui.core.remote.ssh import UnknownHost, accept_host
from keepgui.core.remote.target import config_hosts
from keepgui.ui.tasks import lane

_REMOTE = lane("remote")

FoundRole = Qt.ItemDataRole.UserRole + 1


def _open_one(kind: str | None, spec: str) -> tuple[str, str]:
    """Mirror one remote folder (off the GUI thread); its kind (recognised when not given) and local folder."""
    mirror = remote.open_mirror(spec)
    if kind is None:
        verdict = registry.identify(mirror.local)
        if verdict.kind is None:
            raise remote.ssh.RemoteError(f"{spec} is not an agent's memory keepgui knows: {verdict.why}")
        kind = verdict.kind
    return kind, mirror.local


class RemoteDialog(QDialog):
    """File → Open on another machine… (see the module docstring). ``opened(kind, folder)`` is called for
    each source ready to show (the window's ``open_source``)."""

    def __init__(self, parent: QWidget | None, opened: Callable[[str, str], None]) -> None:
        super().__init__(parent)
        self.setWindowTitle("Open on another machine")
        self._opened = opened
        self.machine = QComboBox(self)
        self.machine.setEditable(True)
        self.machine.addItems(config_hosts())
        self.machine.setAccessibleName("Machine")
        self.machine.setToolTip("A host of your ~/.ssh/config, or [user@]host[:port]")
        self.folder = QLineEdit(self)
        self.folder.setAccessibleName("Folder there")
        self.folder.setPlaceholderText("empty: find the agents in the home folder")
        self.find_agents = QPushButton("&Find agents", self)
        self.find_agents.clicked.connect(self.discover)
        self.found = QListWidget(self)
        self.found.setAccessibleName("Agents found there")
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.open_chosen)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("&Machine:", self.machine)
        form.addRow("F&older:", self.folder)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.find_agents)
        layout.addWidget(self.found)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)
        self._pending = 0

    def _host(self) -> str:
        return self.machine.currentText().strip()

    def _busy(self, text: str) -> None:
        self.status.setText(text)
        self.find_agents.setEnabled(False)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(False)

    def _idle(self, text: str = "") -> None:
        self.status.setText(text)
        self.find_agents.setEnabled(True)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(True)

    def discover(self) -> None:
        """Find the agents' homes on the machine (in the background)."""
        host = self._host()
        if not host:
            self._idle("Choose or type a machine.")
            return
        self._busy(f"Connecting to {host}…")
        _REMOTE.run(
            lambda: remote.discover(host),
            self._show_found,
            lambda exc: self._failed(exc, self.discover),
            owner=self,
            newest=self,
        )

    def _show_found(self, found: list[Found]) -> None:
        self.found.clear()
        for item in found:
            label = registry.backend(item.kind).label
            row = QListWidgetItem(f"{label}: {item.path}")
            row.setData(FoundRole, (item.kind, item.path))
            row.setFlags(row.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            row.setCheckState(Qt.CheckState.Checked)
            self.found.addItem(row)
        self._idle(f"{len(found)} found." if found else "No agent's memory found in the home folder there.")

    def _failed(self, exc: Exception, retry: Callable[[], None]) -> None:
        if isinstance(exc, UnknownHost) and exc.keys:
            ask = QMessageBox(QMessageBox.Icon.Question, "Unknown host", str(exc).split("\nCheck", 1)[0], parent=self)
            ask.setInformativeText("Compare the fingerprint with the one the machine's owner gives you.")
            trust = ask.addButton("&Trust and connect", QMessageBox.ButtonRole.AcceptRole)
            ask.addButton(QMessageBox.StandardButton.Cancel)
            ask.exec()
            if ask.clickedButton() is trust:
                self._busy("Adding the host key to known_hosts…")
                _REMOTE.run(lambda: accept_host(exc), lambda _r: retry(), lambda e: self._failed(e, retry), owner=self)
                return
        self._idle(str(exc))

    def open_chosen(self) -> None:
        """Open the folder given, or every agent checked in the list (each mirrored in the background)."""
        host = self._host()
        folder = self.folder.text().strip()
        chosen: list[tuple[str | None, str]] = []
        if folder:
            chosen.append((None, f"{host}:{folder}" if not folder.startswith("ssh://") else folder))
        else:
            for row in range(self.found.count()):
                item = self.found.item(row)
                if item.checkState() == Qt.CheckState.Checked:
                    chosen.append(item.data(FoundRole))
        if not chosen:
            self._idle("Give a folder there, or find the agents and check the ones to open.")
            return
        self._busy(f"Reading {len(chosen)} source{'s' if len(chosen) != 1 else ''} from {host}…")
        self._pending = len(chosen)
        for kind, spec in chosen:
            _REMOTE.run(
                lambda kind=kind, spec=spec: _open_one(kind, spec),  # type: ignore[misc]
                self._one_opened,
                lambda exc: self._failed(exc, self.open_chosen),
                owner=self,
            )

    def _one_opened(self, result: tuple[str, str]) -> None:
        self._opened(*result)
        self._pending -= 1
        if self._pending <= 0:
            self.accept()


class RemoteStatus(QObject):
    """Marks the sources of machines that do not answer "offline — read-only" in the sidebar, and
    clears it when they answer again (a look at each remote source once a second: no I/O)."""

    def __init__(self, sources: Callable[[], list[str]], show: Callable[[str, str], None], parent: QObject) -> None:
        super().__init__(parent)
        self._sources = sources
        self._show = show
        self._shown: dict[str, str] = {}
        self._timer = QTimer(self)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self.refresh)
        self._timer.start()

    def refresh(self) -> None:
        """Bring every remote source's mark up to date."""
        for path in self._sources():
            if not remote.is_mirror_path(path):
                continue
            text = remote.status(path)
            if self._shown.get(path, "") != text:
                self._shown[path] = text
                self._show(path, text)
