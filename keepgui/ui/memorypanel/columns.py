"""The memory table's column widths: the text takes the room, metadata columns fit their content.

At 1440 px the Memory column showed about 20 characters while fixed widths for
tags, entities, dates and counts took the rest. :class:`ColumnFitter` sizes
every metadata column to what it shows (its header, and the widest cell of a
sample of rows: enough to be right, few enough to cost a millisecond at 100,000
rows), caps the free-text ones (tags, entities) so one long value cannot take
the row, and lets the text column stretch over what is left. Where the table is
narrow (a 1024-px window with the detail pane open), the capped columns give up
width, down to :data:`FLOOR_CHARS` characters, so the text keeps at least
:data:`TEXT_SHARE` of the table; this is worked out again when the table is resized.

A column the person resized by hand keeps its width: its field is remembered in
the settings (``columns/manual``) and fitting leaves it alone, until View →
Columns → Fit columns to content forgets those choices.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractItemModel, QEvent, QObject, Qt
from PySide6.QtWidgets import QHeaderView, QStyle, QTableView

from keepgui.ui.memorypanel.model import COLUMNS

STRETCH_FIELD = "text"
"""The column that takes the width the others leave."""
CAPPED = {"tags": 24, "entities": 24, "confidence": 14}
"""Free-text metadata columns are at most this many average characters wide (the tooltip and the
detail pane show the rest)."""
TEXT_SHARE = 0.4
"""The part of the table's width the text column keeps when the capped columns can give it up."""
FLOOR_CHARS = 8
"""Capped columns shrink for the text down to this many average characters."""
SAMPLE_ROWS = 300
"""Rows whose cells are measured: the first ones shown, then a spread over the rest."""
MANUAL_SETTING = "columns/manual"


def sample_rows(count: int, limit: int = SAMPLE_ROWS) -> list[int]:
    """Up to ``limit`` row numbers of ``count``: the first half of them in order, the rest spread evenly."""
    if count <= limit:
        return list(range(count))
    head = limit // 2
    step = (count - head) / (limit - head)
    return list(range(head)) + [head + int(i * step) for i in range(limit - head)]


def display_texts(model: QAbstractItemModel, column: int, rows: list[int]) -> list[Any]:
    """What the cells of ``rows`` in ``column`` show (their display role), in one call into the model
    where it answers :meth:`display_texts` itself (one entry into Python, not one per cell), else
    through an index per cell."""
    answer = getattr(model, "display_texts", None)
    if answer is not None:
        texts: list[Any] = answer(column, rows)
        return texts
    return [model.index(row, column).data(Qt.ItemDataRole.DisplayRole) for row in rows]


class ColumnFitter(QObject):
    """Fits the columns of one memory table (see the module docstring)."""

    def __init__(self, table: QTableView, settings: Any = None) -> None:
        super().__init__(table)
        self.table = table
        self.settings = settings
        self._fitting = False
        self._dragging = False
        self._wanted: dict[int, int] = {}  # column -> the width its content wants (as last fitted)
        header = table.horizontalHeader()
        header.sectionResized.connect(self._on_resized)
        header.viewport().installEventFilter(self)
        self._viewport = table.viewport()  # kept: the table may be half gone when its last events come
        self._viewport.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self._viewport:
            if event.type() == QEvent.Type.Resize and self._wanted:
                self._apply()
            return False
        # A resize between the press and the release of a button on the header is the person's drag.
        if event.type() == QEvent.Type.MouseButtonPress:
            self._dragging = True
        elif event.type() == QEvent.Type.MouseButtonRelease:
            self._dragging = False
        return False

    @property
    def manual(self) -> set[str]:
        """Fields of the columns the person sized by hand."""
        if self.settings is None:
            return set()
        value = self.settings.get(MANUAL_SETTING, [])
        return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()

    def _on_resized(self, logical: int, _old: int, _new: int) -> None:
        field = COLUMNS[logical].field if 0 <= logical < len(COLUMNS) else None
        # Only a drag of the header's edge is the person's choice (fits, restores and the stretch are ours).
        if self._fitting or not self._dragging or field in (None, STRETCH_FIELD) or self.settings is None:
            return
        manual = self.manual
        if field not in manual:
            self.settings.set(MANUAL_SETTING, sorted(manual | {field}))

    def forget_manual(self) -> None:
        """View → Columns → Fit columns to content: every column fits again."""
        if self.settings is not None:
            self.settings.set(MANUAL_SETTING, [])
        self.fit()

    def width_for(self, column: int, rows: list[int]) -> int:
        """The width column ``column`` needs for its header and the cells of ``rows`` (proxy rows)."""
        table = self.table
        model = table.model()
        metrics = table.fontMetrics()
        style = table.style()
        padding = 2 * (style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, table) + 1) + 8
        field = COLUMNS[column].field
        header = table.horizontalHeader()
        widest = header.sectionSizeFromContents(column).width()
        if COLUMNS[column].toggle:
            box = style.pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, table)
            return max(widest, box + padding + 8)
        # Each distinct text measured once (relative dates and counts repeat a lot).
        for text in set(display_texts(model, column, rows)):
            if text:
                widest = max(widest, metrics.horizontalAdvance(str(text)) + padding)
        cap = CAPPED.get(field)
        if cap is not None:
            widest = min(widest, cap * metrics.averageCharWidth() + padding)
        return widest

    def fit(self) -> None:
        """Fit every metadata column the person did not size by hand; the text column stretches."""
        table = self.table
        model: QAbstractItemModel | None = table.model()  # null until a model is set
        if model is None:
            return
        header = table.horizontalHeader()
        rows = sample_rows(model.rowCount())
        manual = self.manual
        self._wanted = {}
        for column, spec in enumerate(COLUMNS):
            if spec.field == STRETCH_FIELD:
                header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
                continue
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            if spec.field in manual or table.isColumnHidden(column):
                continue
            self._wanted[column] = self.width_for(column, rows)
        self._apply()

    def _apply(self) -> None:
        """Give the fitted columns their widths, the capped ones less where the text would get less than
        :data:`TEXT_SHARE` of the table."""
        table = self.table
        widths = dict(self._wanted)
        shown = [c for c in range(len(COLUMNS)) if not table.isColumnHidden(c) and COLUMNS[c].field != STRETCH_FIELD]
        taken = sum(widths.get(c, table.columnWidth(c)) for c in shown)
        excess = taken - int(table.viewport().width() * (1 - TEXT_SHARE))
        floor = FLOOR_CHARS * table.fontMetrics().averageCharWidth()
        give = {c: widths[c] - floor for c in widths if COLUMNS[c].field in CAPPED and widths[c] > floor}
        if excess > 0 and give:
            share = min(1.0, excess / sum(give.values()))
            for column, spare in give.items():
                widths[column] -= int(spare * share)
        self._fitting = True
        try:
            for column, width in widths.items():
                if table.columnWidth(column) != width:
                    table.setColumnWidth(column, width)
        finally:
            self._fitting = False
