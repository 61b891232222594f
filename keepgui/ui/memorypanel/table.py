"""The memory table's view: row selection, fixed row height, a header kept across resets.

Its model is :mod:`keepgui.ui.memorypanel.model`; its column widths are
:mod:`keepgui.ui.memorypanel.columns`' to fit.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, QByteArray, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from keepgui.ui.memorypanel.model import COLUMN_INDEX, COLUMNS
from keepgui.ui.steadyviews import SteadyOnActivation


class MemoryTableView(SteadyOnActivation, QTableView):
    """The table: row selection, fixed row height (fast at 100,000 rows), sortable header."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setSortingEnabled(True)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.DoubleClicked)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.setAccessibleName("Memories")

    def setModel(self, model: QAbstractItemModel | None) -> None:  # noqa: N802 - Qt override
        super().setModel(model)
        if model is None:
            return
        self._configure_columns()
        # QHeaderView forgets section sizes, order and hidden columns on every model
        # reset (a bank switch): carry its state across.
        self._header_state: QByteArray | None = None
        model.modelAboutToBeReset.connect(self._keep_header)
        model.modelReset.connect(self._restore_header)

    def _keep_header(self) -> None:
        self._header_state = self.horizontalHeader().saveState()

    def _restore_header(self) -> None:
        if self._header_state is not None:
            self.horizontalHeader().restoreState(self._header_state)

    def _configure_columns(self) -> None:
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setSectionsMovable(True)
        char = self.fontMetrics().averageCharWidth()
        widths = {
            "pinned": 5,
            "live": 5,
            "text": 60,
            "tags": 16,
            "entities": 16,
            "seen": 6,
            "confidence": 10,
            "created": 13,
            "updated": 13,
            "revision": 5,
        }
        for i, column in enumerate(COLUMNS):
            self.setColumnWidth(i, max(40, widths[column.field] * char + 16))
        header.setSectionResizeMode(COLUMN_INDEX["text"], QHeaderView.ResizeMode.Stretch)
        header.setSortIndicator(COLUMN_INDEX["updated"], Qt.SortOrder.DescendingOrder)
