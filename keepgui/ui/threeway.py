"""The three-way view shown when a save is refused: what was loaded, what is on disk now, your edits.

Nothing is overwritten from here without the person choosing it: "Use the
version on disk" drops the edits, "Overwrite with mine" writes them over the
disk version *as shown in this dialog* (if the file changes again meanwhile,
that save is refused too), "Keep editing" closes the view.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.textdiff import unified
from keepgui.ui.diffview import DiffView

TAKE_DISK, OVERWRITE, KEEP_EDITING = "disk", "overwrite", "keep"


def _pane(title: str, text: str, parent: QWidget | None) -> QWidget:
    box = QWidget(parent)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    label = QLabel(f"<b>{title}</b>", box)
    view = QPlainTextEdit(box)
    view.setReadOnly(True)
    view.setPlainText(text)
    view.setAccessibleName(title)
    layout.addWidget(label)
    layout.addWidget(view)
    return box


class ThreeWayDialog(QDialog):
    """Base (loaded) vs on disk now vs your unsaved edits, plus the diff of disk → yours."""

    def __init__(self, title: str, loaded: str, on_disk: str | None, mine: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{title} changed on disk")
        self.choice = KEEP_EDITING
        disk_text = on_disk if on_disk is not None else ""
        explanation = QLabel(
            f"<b>{title}</b> was changed by someone else after you opened it, so your save was refused and "
            "nothing was written." + (" It has been deleted on disk." if on_disk is None else ""),
            self,
        )
        explanation.setWordWrap(True)
        panes = QSplitter(self)
        panes.addWidget(_pane("What you opened", loaded, panes))
        panes.addWidget(_pane("On disk now", disk_text if on_disk is not None else "(deleted)", panes))
        panes.addWidget(_pane("Your unsaved edits", mine, panes))
        self.diff = DiffView(self)
        self.diff.setPlainText(unified(disk_text, mine, "on disk now", "your edits") or "(no difference)")
        self.diff.setAccessibleName("Difference between the disk version and your edits")
        split = QSplitter(self)
        split.setOrientation(split.orientation().Vertical)
        split.addWidget(panes)
        split.addWidget(self.diff)
        buttons = QDialogButtonBox(self)
        take = QPushButton("Use the version on disk (discard mine)", self)
        overwrite = QPushButton("Overwrite with mine", self)
        keep = QPushButton("Keep editing", self)
        for button, choice, role in (
            (take, TAKE_DISK, QDialogButtonBox.ButtonRole.DestructiveRole),
            (overwrite, OVERWRITE, QDialogButtonBox.ButtonRole.AcceptRole),
            (keep, KEEP_EDITING, QDialogButtonBox.ButtonRole.RejectRole),
        ):
            buttons.addButton(button, role)
            button.clicked.connect(lambda _=False, c=choice: self._choose(c))
        keep.setDefault(True)
        layout = QVBoxLayout(self)
        layout.addWidget(explanation)
        layout.addWidget(split, 1)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(buttons)
        layout.addLayout(row)
        self.resize(1100, 700)

    def _choose(self, choice: str) -> None:
        self.choice = choice
        self.accept() if choice != KEEP_EDITING else self.reject()
