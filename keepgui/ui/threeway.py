"""The three-way view shown when a save is refused: what was loaded, what is on disk now, your edits.

Nothing is overwritten from here without the person choosing it: "Use the
version on disk" drops the edits, "Overwrite with mine" writes them over the
disk version *as shown in this dialog* (if the file changes again meanwhile,
that save is refused too), "Merge" combines both sides' changes in the editor
(:mod:`keepgui.core.textmerge`: ``git merge-file``; conflicts marked, nothing
saved until the person saves), "Keep editing" closes the view.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSize
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.textdiff import unified
from keepgui.core.textmerge import why_no_merge
from keepgui.ui.diffview import DiffView
from keepgui.ui.geometry import resize_to_fit

TAKE_DISK, OVERWRITE, MERGE, KEEP_EDITING = "disk", "overwrite", "merge", "keep"
BOTH_DISK_FIRST, BOTH_MINE_FIRST, DISK_ONLY, MINE_ONLY = "both-disk-first", "both-mine-first", "disk", "mine"
CHOICES = (
    (BOTH_DISK_FIRST, "Keep both: the disk's lines, then yours"),
    (BOTH_MINE_FIRST, "Keep both: your lines, then the disk's"),
    (DISK_ONLY, "Keep the disk's lines"),
    (MINE_ONLY, "Keep your lines"),
)
"""What a person can make of one conflict, the first the default (nothing is lost)."""


@dataclass(frozen=True)
class Conflict:
    """Where both sides changed the same lines: your lines and the disk's (each ending in a newline)."""

    mine: str
    disk: str

    def resolved(self, choice: str) -> str:
        """The lines kept for ``choice`` (one of :data:`CHOICES`)."""
        return {
            BOTH_DISK_FIRST: self.disk + self.mine,
            BOTH_MINE_FIRST: self.mine + self.disk,
            DISK_ONLY: self.disk,
            MINE_ONLY: self.mine,
        }[choice]


def split_conflicts(text: str) -> list[str | Conflict]:
    """A merged text (:func:`keepgui.core.textmerge.merge3`: your side first, then the disk's) as
    its plain stretches and its conflicts, in order; a base section (``|||||||``) is left out."""
    parts: list[str | Conflict] = []
    plain: list[str] = []
    side: list[str] | None = None
    mine: list[str] = []
    disk: list[str] = []
    for line in text.splitlines(keepends=True):
        marker = line[:8]
        if side is None and marker == "<<<<<<< ":
            parts.append("".join(plain))
            plain, mine, disk = [], [], []
            side = mine
        elif side is not None and line.rstrip("\r\n") == "=======":
            side = disk
        elif side is not None and line.startswith("|||||||"):
            side = []  # the base's lines: not offered
        elif side is not None and marker == ">>>>>>> ":
            parts.append(Conflict("".join(mine), "".join(disk)))
            side = None
        elif side is not None:
            side.append(line)
        else:
            plain.append(line)
    if side is not None:  # an unclosed conflict (not the tools' output): the text as it is
        return [text]
    parts.append("".join(plain))
    return [p for p in parts if p != ""]


class ConflictsDialog(QDialog):
    """Each conflict of a merge side by side — on disk now, your edits — with what to keep of it;
    the text it makes has no conflict markers."""

    def __init__(self, title: str, merged: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{title}: resolve the conflicts")
        self.parts = split_conflicts(merged)
        self.choices: list[QComboBox] = []
        conflicts = [p for p in self.parts if isinstance(p, Conflict)]
        intro = QLabel(
            f"Both you and someone else changed the same lines of <b>{title}</b> in "
            f"{len(conflicts)} place{'s' if len(conflicts) != 1 else ''}. Choose what to keep in each; "
            "the rest of both changes is merged already. Nothing is saved until you save.",
            self,
        )
        intro.setWordWrap(True)
        inner = QWidget(self)
        rows = QVBoxLayout(inner)
        for number, conflict in enumerate(conflicts, start=1):
            rows.addWidget(QLabel(f"<b>Conflict {number}</b>", inner))
            sides = QHBoxLayout()
            for side_title, text in (("On disk now", conflict.disk), ("Your edits", conflict.mine)):
                box = QVBoxLayout()
                box.addWidget(QLabel(side_title, inner))
                view = QPlainTextEdit(inner)
                view.setReadOnly(True)
                view.setPlainText(text.rstrip("\n") or "(nothing: these lines were removed)")
                view.setAccessibleName(f"Conflict {number}, {side_title.lower()}")
                view.setMaximumHeight(max(60, view.fontMetrics().lineSpacing() * (text.count("\n") + 2) + 12))
                box.addWidget(view)
                sides.addLayout(box, 1)
            rows.addLayout(sides)
            choice = QComboBox(inner)
            for key, label in CHOICES:
                choice.addItem(label, key)
            choice.setAccessibleName(f"What to keep of conflict {number}")
            rows.addWidget(choice)
            self.choices.append(choice)
        rows.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Put in the editor")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(scroll, 1)
        layout.addWidget(buttons)
        resize_to_fit(self, QSize(1000, 640))

    def choose(self, number: int, choice: str) -> None:
        """Keep ``choice`` (one of :data:`CHOICES`) of conflict ``number`` (from 1)."""
        box = self.choices[number - 1]
        box.setCurrentIndex(box.findData(choice))

    def resolved_text(self) -> str:
        """The merged text with each conflict as chosen: no markers left."""
        out = []
        chosen = iter(box.currentData() for box in self.choices)
        for part in self.parts:
            out.append(part.resolved(next(chosen)) if isinstance(part, Conflict) else part)
        return "".join(out)


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
        self.merge = QPushButton("Merge", self)
        why_not = why_no_merge() if on_disk is not None else "the file was deleted on disk: there is nothing to merge"
        self.merge.setEnabled(not why_not)
        self.merge.setToolTip(
            why_not
            or "Combine the changes made on disk with yours in the editor (git merge-file); where both changed "
            "the same lines, the conflict is marked for you to resolve. Nothing is saved until you save."
        )
        keep = QPushButton("Keep editing", self)
        for button, choice, role in (
            (take, TAKE_DISK, QDialogButtonBox.ButtonRole.DestructiveRole),
            (overwrite, OVERWRITE, QDialogButtonBox.ButtonRole.AcceptRole),
            (self.merge, MERGE, QDialogButtonBox.ButtonRole.AcceptRole),
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
        resize_to_fit(self, QSize(1100, 700))

    def _choose(self, choice: str) -> None:
        self.choice = choice
        self.accept() if choice != KEEP_EDITING else self.reject()
