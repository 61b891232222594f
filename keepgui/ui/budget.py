"""The budget meter: where the edited document sits in a budget the agent enforces.

Some agents share one byte budget between documents (the iii worker injects
rules in name order within ``max_rule_chars``). The backend computes the
layout (:class:`~keepgui.core.source.Budget`: each document's segment, fits /
truncated / omitted, and where the cut begins in the edited text); the meter
draws it as a bar, the edited document highlighted, and says it in words.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from keepgui.core.source import Budget, BudgetSegment
from keepgui.ui import theme


class BudgetBar(QWidget):
    """The bar: one segment per document over the whole budget."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.segments: tuple[BudgetSegment, ...] = ()
        self.current: str | None = None
        self.total = 1
        self.setMinimumHeight(18)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(300, 18)

    def set_budget(self, budget: Budget) -> None:
        """What to draw."""
        self.segments, self.current, self.total = budget.segments, budget.current, max(1, budget.total)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 2.5, -0.5, -2.5)
        pal = self.palette()
        painter.setPen(QPen(pal.color(QPalette.ColorRole.Mid)))
        painter.setBrush(pal.color(QPalette.ColorRole.Base))
        painter.drawRoundedRect(rect, 3, 3)
        scale = rect.width() / self.total
        for segment in self.segments:
            if segment.status == "omitted":
                continue
            x = rect.left() + segment.start * scale
            w = max(1.0, segment.sent * scale)
            color = theme.accent() if segment.status == "fit" else theme.strong("warning")
            if segment.name != self.current:
                color = theme.mix(color, pal.color(QPalette.ColorRole.Base), 0.6)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color)
            painter.drawRect(QRectF(x, rect.top() + 1, w, rect.height() - 2))
        painter.end()


class BudgetMeter(QWidget):
    """The bar plus the sentence for the document being edited."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = BudgetBar(self)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setAccessibleName("Budget")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self.budget: Budget | None = None

    @property
    def place(self) -> BudgetSegment | None:
        """The edited document's segment (None when it has none)."""
        return self.budget.place if self.budget is not None else None

    def show_budget(self, budget: Budget) -> None:
        """Draw ``budget`` and describe the edited document's place in it."""
        self.budget = budget
        self.bar.set_budget(budget)
        self.label.setText(f"{budget.sentence}\n{budget.summary}" if budget.sentence else budget.summary)
        self.label.setStyleSheet(f"color: {theme.strong('warning').name()}" if budget.warn else "")
