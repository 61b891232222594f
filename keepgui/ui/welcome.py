"""What the window shows when no source is open: what keepgui found here, the demo, open…, recent.

With no ``--demo`` and nothing found, the window was blank with no hint. The
welcome page lists the sources the registry discovers on this machine (each
backend looks where its agent keeps memory), "Open the demo", one "Open a …"
button per registered backend (named by the registry's labels: a backend
registered later gets its button with no change here), and the sources opened
recently. Discovery runs off the GUI thread.

Signals:
    WelcomePage.openRequested(str kind, str path): open this folder as a source of ``kind``.
    WelcomePage.chooseRequested(str kind): File → Open for ``kind`` (choose a folder).
    WelcomePage.demoRequested(): open a throw-away copy of the demo.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import registry
from keepgui.core.paths import short_path
from keepgui.core.registry import Found
from keepgui.ui import shortcuts, theme
from keepgui.ui.opening import a
from keepgui.ui.tasks import lane

_DISCOVER = lane("discover")


def _heading(text: str, parent: QWidget) -> QLabel:
    label = QLabel(f"<b>{text}</b>", parent)
    label.setContentsMargins(0, 12, 0, 2)
    return label


class WelcomePage(QScrollArea):
    """The page of a window with no source open (see the module docstring)."""

    openRequested = Signal(str, str)
    chooseRequested = Signal(str)
    demoRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAccessibleName("Welcome")
        page = QWidget(self)
        self.setWidget(page)
        centre = QHBoxLayout(page)
        inner = QWidget(page)
        inner.setMaximumWidth(960)  # lines a person reads, buttons near what they open
        # the column sits in the middle of a wide window, a little above its centre
        centre.addStretch(1)
        centre.addWidget(inner, 10)
        centre.addStretch(1)
        outer = QVBoxLayout(inner)
        outer.setContentsMargins(32, 24, 32, 24)
        outer.addStretch(1)
        self.title_label = title = QLabel("<h2>Welcome to keepgui</h2>", inner)
        intro = QLabel(
            "See and control what your AI agents remember: open the folder where an agent keeps its "
            "memory, or look around in the demo first (a throw-away copy: nothing of yours is touched).",
            inner,
        )
        intro.setWordWrap(True)
        outer.addWidget(title)
        outer.addWidget(intro)
        self.what = QLabel(
            "<ul style='margin-left:-16px'>"
            "<li><b>Browse</b> what each agent remembers, search it as you type, and edit it by hand.</li>"
            "<li><b>Pin</b> what must stay; <b>remove</b> what must go — every change can be undone.</li>"
            "<li><b>Preview</b> byte for byte what the agent is given next, and review each rewrite of its "
            "memory as a diff.</li></ul>",
            inner,
        )
        self.what.setWordWrap(True)
        self.what.setTextFormat(Qt.TextFormat.RichText)
        outer.addWidget(self.what)

        outer.addWidget(_heading("Found on this machine", inner))
        self.found_box = QWidget(inner)
        self.found_layout = QGridLayout(self.found_box)
        self.found_layout.setContentsMargins(0, 0, 0, 0)
        self.found_status = QLabel("Looking where each agent keeps its memory…", inner)
        self.found_status.setWordWrap(True)
        outer.addWidget(self.found_status)
        outer.addWidget(self.found_box)

        outer.addWidget(_heading("Open", inner))
        buttons = QHBoxLayout()
        self.demo_button = QPushButton(theme.icon("keep"), "Open the demo", inner)
        self.demo_button.setToolTip("A fresh throw-away copy of the bundled demo, removed when keepgui quits")
        self.demo_button.clicked.connect(self.demoRequested)
        buttons.addWidget(self.demo_button)
        self.open_buttons: list[QPushButton] = []
        for backend in registry.backends():
            button = QPushButton(theme.icon("folder"), f"Open {a(backend.label)}…", inner)
            button.setToolTip(f"Choose a folder to open as {a(backend.label)}; keepgui says what it is first")
            button.clicked.connect(lambda _=False, kind=backend.kind: self.chooseRequested.emit(kind))
            buttons.addWidget(button)
            self.open_buttons.append(button)
        buttons.addStretch(1)
        outer.addLayout(buttons)
        keys = (
            [
                f"{QKeySequence(k).toString(QKeySequence.SequenceFormat.NativeText)} {what}"
                for k, what in (
                    (shortcuts.OPEN_SOURCE[0], f"opens {a(registry.backends()[0].label)}"),
                    (shortcuts.PALETTE, "finds any bank, memory or command"),
                )
            ]
            if registry.backends()
            else []
        )
        self.keys_hint = QLabel(" · ".join(keys), inner)
        self.keys_hint.setStyleSheet(f"color: {theme.muted_text().name()}")
        outer.addWidget(self.keys_hint)

        self.recent_heading = _heading("Recent", inner)
        outer.addWidget(self.recent_heading)
        self.recent_box = QWidget(inner)
        self.recent_layout = QGridLayout(self.recent_box)
        self.recent_layout.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.recent_box)
        outer.addStretch(3)
        self.found: list[Found] = []
        self.set_recent([])

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:  # a theme change: the buttons' icons in the new colours
            self.demo_button.setIcon(theme.icon("keep"))
            for button in self.open_buttons:
                button.setIcon(theme.icon("folder"))
            self.keys_hint.setStyleSheet(f"color: {theme.muted_text().name()}")
        super().changeEvent(event)

    # ------------------------------------------------------------------ found

    def discover(self) -> None:
        """Look for sources on this machine again (in the background; the list follows)."""
        self.found_status.setText("Looking where each agent keeps its memory…")
        self.found_status.show()

        def work() -> list[Found]:
            try:
                return registry.discover()
            except OSError:
                return []

        _DISCOVER.run(work, self._show_found, owner=self, newest=self)

    def _show_found(self, found: list[Found]) -> None:
        self.found = list(found)
        self._fill(self.found_layout, [(f.kind, f.path, f.why) for f in self.found])
        if self.found:
            self.found_status.hide()
        else:
            kinds = ", ".join(a(b.label) for b in registry.backends())
            self.found_status.setText(
                f"Nothing found in the places where agents keep their memory (looked for {kinds}). "
                "Open a folder, or the demo."
            )
            self.found_status.show()

    # ------------------------------------------------------------------ recent

    def set_recent(self, recent: Sequence[tuple[str, str]]) -> None:
        """The sources opened recently, newest first: ``(kind, path)``; ones that are gone are greyed."""
        known = set(registry.kinds())
        rows = [(kind, path, "") for kind, path in recent if kind in known]
        self._fill(self.recent_layout, rows)
        self.recent_heading.setVisible(bool(rows))
        self.recent_box.setVisible(bool(rows))

    def _fill(self, grid: QGridLayout, rows: list[tuple[str, str, str]]) -> None:
        while grid.count():
            item = grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        muted = theme.muted_text().name()
        for row, (kind, path, why) in enumerate(rows):
            label = registry.backend(kind).label
            exists = os.path.isdir(path)
            text = f"{label} · {short_path(path)}"
            if why:
                text += f" <span style='color:{muted}'>({why})</span>"
            elif not exists:
                text += f" <span style='color:{muted}'>(no longer there)</span>"
            name = QLabel(text, grid.parentWidget())
            name.setTextFormat(Qt.TextFormat.RichText)
            name.setToolTip(path)
            button = QPushButton("Open", grid.parentWidget())
            button.setEnabled(exists)
            button.setAccessibleName(f"Open {label} {path}")
            button.clicked.connect(lambda _=False, k=kind, p=path: self.openRequested.emit(k, p))
            grid.addWidget(name, row, 0)
            grid.addWidget(button, row, 1)
        grid.setColumnStretch(0, 1)
