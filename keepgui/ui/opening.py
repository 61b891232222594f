"""Opening a folder as a source: say what it is before opening it, and ask before opening a stranger.

Ctrl+O took any folder, and a source checkout opened as an iii data dir showed
every subfolder as a "0 memories" bank. Now the folder chooser says, under its
list, what the highlighted folder is — "an iii data dir: 3 banks: blog, coding,
main", "a nanobot workspace, not an iii data dir", or neither and why — as the
registry's backends recognise it (:func:`keepgui.core.registry.identify`), for
every registered backend alike. Choosing one that another backend recognises
offers to open it as that; choosing one that no backend recognises asks first.

Recognising a folder lists it (and, for some backends, its subfolders): it runs
on a background thread (:class:`FolderVerdicts`), never on the GUI thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QGridLayout, QLabel, QMessageBox, QWidget

from keepgui.core import registry
from keepgui.core.registry import Verdict
from keepgui.ui.tasks import lane

_IDENTIFY = lane("identify")


def a(label: str) -> str:
    """``label`` with its indefinite article: "an iii data dir", "a nanobot workspace"."""
    return f"{'an' if label[:1].lower() in 'aeiou' else 'a'} {label}"


def verdict_for(kind: str, path: str) -> Verdict:
    """What ``path`` is, asking the backend of ``kind`` first (a folder two backends would open is
    the one asked for), then every backend."""
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(path):
        return registry.identify(path)  # "not a folder", and why
    own = registry.backend(kind).identify(path)
    if own.opens:
        return own
    other = registry.identify(path)
    # No backend opens it: why it is not the one asked for is what the person needs to hear.
    return other if other.opens else Verdict(None, "neither", own.why)


def describe(kind: str, verdict: Verdict) -> str:
    """One line for a person: what the folder is, for someone about to open a source of ``kind``."""
    label = registry.backend(kind).label
    if verdict.kind == kind:
        return f"✓ {verdict.what[0].upper()}{verdict.what[1:]}: {verdict.why}"
    if verdict.kind is not None:
        return f"⚠ {verdict.what[0].upper()}{verdict.what[1:]} ({verdict.why}), not {a(label)}"
    return f"✗ Not {a(label)}: {verdict.why} (nor any other source keepgui knows)"


class FolderVerdicts(QObject):
    """Asks the registry what folders are, off the GUI thread; answers arrive by signal.

    Signals:
        answered(str kind, str path, object verdict)
    """

    answered = Signal(str, str, object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.known: dict[tuple[str, str], Verdict] = {}
        self.answered.connect(self._remember)

    def _remember(self, kind: str, path: str, verdict: Verdict) -> None:
        self.known[(kind, path)] = verdict

    def ask(self, kind: str, path: str) -> None:
        """Find out what ``path`` is for a source of ``kind`` (the answer comes by ``answered``)."""
        path = os.path.abspath(os.path.expanduser(path))
        known = self.known.get((kind, path))
        if known is not None:
            self.answered.emit(kind, path, known)
            return

        def work() -> Verdict:
            try:
                return verdict_for(kind, path)
            except OSError as exc:  # a folder that vanished or cannot be listed
                return Verdict(None, "not readable", f"{path}: {exc.strerror or exc}")

        _IDENTIFY.run(work, lambda verdict: self.answered.emit(kind, path, verdict), owner=self)


class SourceFolderDialog(QFileDialog):
    """Choose a folder to open as a source of ``kind``; a line under the list says what the folder
    highlighted (or entered) is."""

    def __init__(self, kind: str, parent: QWidget | None = None, verdicts: FolderVerdicts | None = None) -> None:
        label = registry.backend(kind).label
        super().__init__(parent, f"Open {label}")
        self.kind = kind
        self.setFileMode(QFileDialog.FileMode.Directory)
        self.setOption(QFileDialog.Option.ShowDirsOnly, True)
        self.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # the native one has no room for the line
        self.verdicts = verdicts or FolderVerdicts(self)
        self.verdict_label = QLabel(f"Highlight a folder to see whether it is {a(label)}.", self)
        self.verdict_label.setWordWrap(True)
        self.verdict_label.setAccessibleName("What this folder is")
        grid = self.layout()  # Qt's own (non-native) dialog lays itself out on a grid
        if isinstance(grid, QGridLayout):
            grid.addWidget(self.verdict_label, grid.rowCount(), 0, 1, grid.columnCount())
        elif grid is not None:
            grid.addWidget(self.verdict_label)
        self._looking_at = ""
        self.verdicts.answered.connect(self._on_answer)
        self.currentChanged.connect(self.look_at)
        self.directoryEntered.connect(self.look_at)

    def look_at(self, path: str) -> None:
        """Say what ``path`` is (as soon as the background check answers)."""
        if not path:
            return
        self._looking_at = os.path.abspath(path)
        self.verdicts.ask(self.kind, path)

    def _on_answer(self, kind: str, path: str, verdict: Verdict) -> None:
        if kind == self.kind and path == self._looking_at:
            self.verdict_label.setText(describe(kind, verdict))


def confirm_kind(parent: QWidget, kind: str, path: str, verdict: Verdict) -> str | None:
    """The kind to open ``path`` as, after asking when the folder is not a source of ``kind``
    (another backend's: offer that one; no backend's: ask before opening it anyway); None: cancelled."""
    label = registry.backend(kind).label
    if verdict.kind == kind:
        return kind
    box = QMessageBox(parent)
    box.setWindowTitle(f"Open {label}")
    if verdict.kind is not None:
        other = registry.backend(verdict.kind).label
        box.setIcon(QMessageBox.Icon.Question)
        box.setText(f"{path} is {verdict.what}, not {a(label)}.")
        box.setInformativeText(f"{verdict.why[0].upper()}{verdict.why[1:]}. Open it as {a(other)}?")
        preferred = box.addButton(f"Open as {a(other)}", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(preferred)
        box.exec()
        return verdict.kind if box.clickedButton() is preferred else None
    box.setIcon(QMessageBox.Icon.Warning)
    box.setText(f"{path} does not look like {a(label)}.")
    box.setInformativeText(f"{verdict.why[0].upper()}{verdict.why[1:]}.\n\nOpen it as {a(label)} anyway?")
    anyway = box.addButton("Open anyway", QMessageBox.ButtonRole.DestructiveRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.exec()
    return kind if box.clickedButton() is anyway else None


def choose_source(
    parent: QWidget, kind: str, verdicts: FolderVerdicts, then: Callable[[str, str], None], start: str = ""
) -> None:
    """File → Open <source>…: choose a folder, learn what it is, confirm, then ``then(kind, path)``."""
    dialog = SourceFolderDialog(kind, parent, verdicts)
    if start:
        dialog.setDirectory(start)
    if not dialog.exec() or not dialog.selectedFiles():
        return
    path = os.path.abspath(dialog.selectedFiles()[0])
    known = verdicts.known.get((kind, path))
    if known is not None:
        decide(parent, kind, path, known, then)
        return

    def answered(asked: str, where: str, verdict: Verdict) -> None:
        if asked == kind and where == path:
            verdicts.answered.disconnect(answered)
            decide(parent, kind, path, verdict, then)

    verdicts.answered.connect(answered)
    verdicts.ask(kind, path)


def decide(parent: QWidget, kind: str, path: str, verdict: Verdict, then: Callable[[str, str], None]) -> None:
    """Open ``path`` (as the kind the person confirms), or nothing when they cancel."""
    chosen = confirm_kind(parent, kind, path, verdict)
    if chosen is not None:
        then(chosen, path)
