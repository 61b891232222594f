"""Two status-bar messages are never drawn on top of each other (issue 24, item 11): a passing note
and the undo toast shown together used to overlap."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand, QUndoStack
from PySide6.QtWidgets import QMainWindow

from keepgui.ui.toast import UndoToast


def test_the_toast_replaces_a_passing_note(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    stack = QUndoStack(window)
    toast = UndoToast(stack, window)
    window.statusBar().addWidget(toast)
    window.show()
    window.statusBar().showMessage("from the command line — kept: tea", 8000)
    stack.push(QUndoCommand("Delete"))
    toast.offer("Deleted 1 memory")
    qtbot.wait(10)
    assert toast.isVisible()
    assert window.statusBar().currentMessage() == ""  # not both at once, one over the other
