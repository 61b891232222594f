"""An item view is not repainted whole when its window is deactivated, where the palette draws an
inactive window the same (keepgui.ui.steadyviews); it is where the inactive colours differ."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QStringListModel
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QLineEdit, QTableView, QVBoxLayout, QWidget

from keepgui.ui.memorypanel.table import MemoryTableView
from keepgui.ui.sidebar import SourceTree, SourceTreeModel
from keepgui.ui.steadyviews import SteadyOnActivation, same_when_inactive


class Paints(QObject):
    """The viewport's paints that cover it whole (the focus moving repaints one row: not counted)."""

    def __init__(self, viewport: QWidget) -> None:
        super().__init__()
        self.viewport = viewport
        self.count = 0

    def eventFilter(self, _obj, event) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Paint and event.rect().contains(self.viewport.rect()):
            self.count += 1
        return False


class SteadyTable(SteadyOnActivation, QTableView):
    pass


def _window_with(view_class, qtbot):
    window = QWidget()
    view = view_class()
    model = QStringListModel([f"row {n}" for n in range(40)])
    view.setModel(model)
    view.selectRow(3)
    field = QLineEdit()  # the focus is elsewhere: a view losing it repaints itself whole, as before
    layout = QVBoxLayout(window)
    layout.addWidget(field)
    layout.addWidget(view)
    qtbot.addWidget(window)
    window.resize(400, 300)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    field.setFocus()
    qtbot.wait(50)
    return window, view, model


def _whole_paints_on_deactivation(window, view, qtbot) -> int:
    paints = Paints(view.viewport())
    view.viewport().installEventFilter(paints)
    other = QWidget()
    qtbot.addWidget(other)
    other.show()
    other.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is other)
    qtbot.wait(50)
    return paints.count


def test_a_palette_alike_when_inactive_spares_the_repaint(qtbot):
    assert same_when_inactive(QApplication.instance().palette())
    window, view, _model = _window_with(SteadyTable, qtbot)
    assert _whole_paints_on_deactivation(window, view, qtbot) == 0
    plain_window, plain, _ = _window_with(QTableView, qtbot)  # Qt's own view repaints: what is spared
    assert _whole_paints_on_deactivation(plain_window, plain, qtbot) >= 1


def test_an_inactive_palette_of_its_own_is_still_drawn(qtbot):
    window, view, _model = _window_with(SteadyTable, qtbot)
    palette = QPalette(view.palette())
    palette.setColor(QPalette.ColorGroup.Inactive, QPalette.ColorRole.Highlight, QColor("#888888"))
    view.setPalette(palette)
    qtbot.wait(50)
    assert not same_when_inactive(view.palette())
    assert _whole_paints_on_deactivation(window, view, qtbot) >= 1


def test_the_table_and_the_sidebar_are_steady(qtbot):
    assert issubclass(MemoryTableView, SteadyOnActivation)
    tree = SourceTree(SourceTreeModel())
    qtbot.addWidget(tree)
    assert isinstance(tree, SteadyOnActivation)
