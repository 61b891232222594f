"""Bank → Problems: what a check of a bank's files finds (``keepgui doctor``), each line opening the place.

A corrupt line in a log showed only as status text that passed. The sidebar
now carries a badge with the count (:attr:`~keepgui.core.source.BankSummary.problems`),
and this dialog lists every problem of the bank (:meth:`~keepgui.core.source.Bank.problems`,
checked on the bank's background thread): where (file and line) and what. Opening a
line (double-click, Enter, or "Open") shows the place: a document of the bank in
the Rules panel, any other file at that line in a read-only view
(:class:`FileLinesDialog`, read in blocks off the GUI thread: a 100 MB log costs
no more than the lines shown).

Signals:
    ProblemsDialog.placeRequested(object problem): show where this problem is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFontDatabase, QFontMetrics, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTextEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import fsio
from keepgui.core.paths import short_path
from keepgui.core.source import BankKey, Problem
from keepgui.ui import theme
from keepgui.ui.hub import Hub
from keepgui.ui.tasks import lane

ProblemRole = Qt.ItemDataRole.UserRole + 95

_LINES = lane("lines")


def elide_where(where: str, metrics: QFontMetrics, width: int) -> str:
    """``where`` ("/a/long/path/memory/topic.md:12") in ``width`` pixels: the file's name and line
    whole, the folders before them shortened in the middle; when even the name does not fit, its
    end (the line) is kept."""
    if metrics.horizontalAdvance(where) <= width:
        return where
    folder, sep, name = where.rpartition("/")
    tail = sep + name
    room = width - metrics.horizontalAdvance(tail)
    if not folder or room < metrics.horizontalAdvance("…/"):
        return metrics.elidedText(name, Qt.TextElideMode.ElideLeft, width)
    return metrics.elidedText(folder, Qt.TextElideMode.ElideMiddle, room) + tail


class WhereElided(QStyledItemDelegate):
    """The Where cell: where a problem is differs at its end (the file and its line), so the
    folders before it are what gives way (:func:`elide_where`)."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802 - Qt override
        super().initStyleOption(option, index)
        width = option.rect.width() - option.decorationSize.width() - 12  # the icon and the margins
        if width > 0 and option.text:
            option.text = elide_where(option.text, option.fontMetrics, width)
        option.textElideMode = Qt.TextElideMode.ElideLeft


class ProblemsDialog(QDialog):
    """The problems of one bank (see the module docstring)."""

    placeRequested = Signal(object)

    def __init__(self, hub: Hub, key: BankKey, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.key = key
        self.setWindowTitle(f"Problems of {key.bank}")
        self.summary = QLabel("Checking the bank's files…", self)
        self.summary.setWordWrap(True)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(["Where", "What"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAccessibleName(f"Problems of {key.bank}")
        self.tree.setColumnWidth(0, 300)
        self.tree.setItemDelegateForColumn(0, WhereElided(self.tree))  # the file and line stay in view
        self.tree.itemActivated.connect(lambda item, _column: self.open_item(item))
        self.open_button = QPushButton("Open the place", self)
        self.open_button.clicked.connect(lambda: self.open_item(self.tree.currentItem()))
        self.recheck = QPushButton("Check again", self)
        self.recheck.clicked.connect(self.check)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.addButton(self.recheck, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)
        layout.addWidget(buttons)
        self.problems: list[Problem] | None = None
        self.resize(900, 420)
        self.check()

    def check(self) -> None:
        """Check the bank's files (again)."""
        self.summary.setText("Checking the bank's files…")
        key = self.key
        self.hub.ask(key, lambda bank: list(bank.problems()), lambda found: self._on_problems(key, found), owner=self)

    def _on_problems(self, key: BankKey, problems: Sequence[Problem] | Exception) -> None:
        if key != self.key:
            return
        self.tree.clear()
        if isinstance(problems, Exception):
            self.problems = []
            self.summary.setText(f"The bank could not be checked: {problems}")
            return
        self.problems = list(problems)
        faults = [p for p in self.problems if p.level != "note"]
        for problem in self.problems:
            item = QTreeWidgetItem([short_path(problem.where), problem.message])
            item.setData(0, ProblemRole, problem)
            item.setToolTip(0, problem.where)
            item.setToolTip(1, problem.message)
            item.setIcon(
                0, theme.icon("warning", theme.strong("warning")) if problem.level != "note" else theme.icon("document")
            )
            self.tree.addTopLevelItem(item)
        if not self.problems:
            self.summary.setText(f"Nothing wrong in the files of {self.key.bank}.")
        else:
            notes = len(self.problems) - len(faults)
            self.summary.setText(
                f"{len(faults)} problem{'s' if len(faults) != 1 else ''}"
                + (f" and {notes} note{'s' if notes != 1 else ''}" if notes else "")
                + f" in the files of {self.key.bank} — what `keepgui doctor` reports. Open a line to see the place."
            )
            first = self.tree.topLevelItem(0)
            if first is not None:
                self.tree.setCurrentItem(first)
        self.open_button.setEnabled(bool(self.problems))

    def open_item(self, item: QTreeWidgetItem | None) -> None:
        """Show where the problem of ``item`` is."""
        if item is not None:
            self.placeRequested.emit(item.data(0, ProblemRole))


class FileLinesDialog(QDialog):
    """A file around one line, read only, that line marked (the place of a problem)."""

    CONTEXT = 8

    def __init__(self, path: str, line: int, message: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path, self.line = path, line
        self.setWindowTitle(f"{os.path.basename(path)}" + (f", line {line}" if line else ""))
        heading = QLabel(f"<b>{short_path(path)}</b>" + (f" — line {line}" if line else ""), self)
        heading.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message = QLabel(message, self)
        self.message.setWordWrap(True)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setAccessibleName(f"{os.path.basename(path)} around line {line}")
        self.text.setPlainText("reading…")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(self.message)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.lines: list[tuple[int, str]] | None = None
        self.resize(900, 420)
        _LINES.run(lambda: fsio.lines_around(path, max(1, line), self.CONTEXT), self._show, self._show, owner=self)

    def _show(self, lines: list[tuple[int, str]] | Exception) -> None:
        if isinstance(lines, Exception):
            self.text.setPlainText(f"cannot be read: {lines}")
            return
        self.lines = lines
        width = len(str(lines[-1][0])) if lines else 1
        self.text.setPlainText("\n".join(f"{n:>{width}}  {t}" for n, t in lines))
        marked = next((i for i, (n, _t) in enumerate(lines) if n == self.line), None)
        if marked is None:
            return
        selection = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        fmt.setBackground(theme.tint("warning"))
        fmt.setProperty(QTextCharFormat.Property.FullWidthSelection, True)
        selection.format = fmt
        cursor = QTextCursor(self.text.document().findBlockByNumber(marked))
        selection.cursor = cursor
        self.text.setExtraSelections([selection])
        self.text.setTextCursor(cursor)
        self.text.centerCursor()
