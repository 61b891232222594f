"""Fitting the columns measures its sample of cells in one call into the model, not one per cell."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from keepgui.core.source import Capabilities, FileRow
from keepgui.ui.memorypanel import MemoryPanel
from keepgui.ui.memorypanel.columns import display_texts, sample_rows
from keepgui.ui.memorypanel.model import COLUMNS, MemoryProxyModel


class _Cells(QAbstractTableModel):
    """A model answering only through ``data()`` (no ``display_texts``)."""

    def __init__(self, proxy: MemoryProxyModel) -> None:
        super().__init__()
        self.proxy = proxy

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        return self.proxy.rowCount()

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        return len(COLUMNS)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        return self.proxy.index(index.row(), index.column()).data(role)


def _panel(qtbot, n: int) -> MemoryPanel:
    panel = MemoryPanel()
    qtbot.addWidget(panel)
    rows = [
        FileRow(id=f"r{i:05d}", text=f"memory {i} " * (i % 7), tags=("a", f"t{i % 13}"), updated_at=i * 3_600_000)
        for i in range(n)
    ]
    panel.reset_rows(rows, Capabilities())
    return panel


def test_display_texts_are_what_each_cell_shows(qtbot):
    panel = _panel(qtbot, 900)
    rows = sample_rows(panel.proxy.rowCount())
    for column in range(len(COLUMNS)):
        assert display_texts(panel.proxy, column, rows) == display_texts(_Cells(panel.proxy), column, rows)


def test_fitting_makes_no_call_into_python_per_cell(qtbot, monkeypatch):
    panel = _panel(qtbot, 2000)
    calls = []
    data = MemoryProxyModel.data

    def counted(self, index, role=Qt.ItemDataRole.DisplayRole):
        calls.append(role)
        return data(self, index, role)

    monkeypatch.setattr(MemoryProxyModel, "data", counted)
    fitter = panel.columns
    before = {c: fitter.width_for(c, sample_rows(panel.proxy.rowCount())) for c in range(len(COLUMNS))}
    assert len([r for r in calls if r == Qt.ItemDataRole.DisplayRole]) == 0  # was one per sampled cell
    reference = {}
    for column in range(len(COLUMNS)):  # the widths are those of every sampled cell measured through data()
        monkeypatch.setattr(panel.table, "model", lambda: _Cells(panel.proxy))
        reference[column] = fitter.width_for(column, sample_rows(panel.proxy.rowCount()))
    assert before == reference
