"""Ranked search shows each row's score: a small figure at the right of its text, with a bar.

In Ranked mode the table is ordered by the recall scorer instead of a column,
but it showed no scores and kept the Updated column's sort arrow, so the order
looked arbitrary. :class:`ScoreDelegate` draws the score (the same number the
preview shows for a recalled memory) at the right end of the text cell, with a
bar relative to the best score of the query; the panel hides the sort arrow
while the ranking orders the rows.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QRectF, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QLineEdit, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from keepgui.ui import theme

ScoreRole = Qt.ItemDataRole.UserRole + 5
"""float | None: the search or recall score of a row in the current query (the memory table's
model answers it; the delegate draws it)."""

Index = QModelIndex | QPersistentModelIndex
"""An item's index, as Qt hands it to a delegate."""

BAR_WIDTH = 36
"""Pixels of the bar of the best score."""


def paint_with_room(
    delegate: QStyledItemDelegate, painter: QPainter, option: QStyleOptionViewItem, index: Index, room: int
) -> QStyleOptionViewItem | None:
    """Draw an item as its delegate would, its text cut to leave ``room`` pixels free at the right for
    the caller to draw in; the style option used (None: no style to draw with, drawn the default way)."""
    opt = QStyleOptionViewItem(option)
    delegate.initStyleOption(opt, index)
    opt.text = opt.fontMetrics.elidedText(opt.text, Qt.TextElideMode.ElideRight, max(0, opt.rect.width() - room))
    widget: QWidget | None = opt.widget  # None when painted outside a view
    if widget is None:
        QStyledItemDelegate.paint(delegate, painter, option, index)
        return None
    widget.style().drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
    return opt


class CellDelegate(QStyledItemDelegate):
    """A table cell edited in place (F2) in a plain line edit that keeps to its cell: Qt's default
    editor for text grows to the right as you type, over the next columns."""

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: Index) -> QWidget:  # noqa: N802 - Qt override
        editor = QLineEdit(parent)
        editor.setFrame(False)
        return editor

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem, index: Index) -> None:  # noqa: N802 - Qt override
        editor.setGeometry(option.rect)


class ScoreDelegate(CellDelegate):
    """The text cell, and in ranked mode its score (``scores()`` gives the ranking shown, or None)."""

    def __init__(self, scores: Callable[[], dict[str, float] | None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.scores = scores

    def score_text(self, score: float) -> str:
        """How a score is written in the cell."""
        return f"{score:.2f}"

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        ranking = self.scores()
        score = index.data(ScoreRole) if ranking else None
        if ranking is None or score is None:
            super().paint(painter, option, index)
            return
        label = self.score_text(score)
        opt = paint_with_room(
            self, painter, option, index, option.fontMetrics.horizontalAdvance(label) + BAR_WIDTH + 26
        )
        if opt is None:
            return
        best = max(ranking.values(), default=0.0) or 1.0
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        rect = opt.rect.adjusted(0, 0, -6, 0)
        painter.save()
        bar = QRectF(rect.right() - BAR_WIDTH, rect.center().y() - 3, max(2.0, BAR_WIDTH * score / best), 6)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(opt.palette.color(QPalette.ColorRole.HighlightedText) if selected else theme.accent())
        painter.drawRoundedRect(bar, 2, 2)
        painter.setPen(opt.palette.color(QPalette.ColorRole.HighlightedText) if selected else theme.muted_text())
        text_rect = rect.adjusted(0, 0, -(BAR_WIDTH + 6), 0)
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, label)
        painter.restore()
