"""The rule budget meter: where a rule sits in the shared ``max_rule_chars`` budget.

Rules are injected in name order and share one byte budget. The meter draws
the budget as a bar, each rule as a segment (fits / truncated / omitted), the
edited rule highlighted, and says in words where it starts and ends and
exactly where truncation or omission begins. The numbers come from
:func:`keepgui.core.iii.preview.render_rules`, the same code the preview uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QPalette, QPen
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from keepgui.core.iii.preview import RuleOutcome, render_rules
from keepgui.core.iii.textrules import cut_at_char_boundary, rust_trim
from keepgui.ui import theme


@dataclass(frozen=True)
class RulePlace:
    """Where one rule lands in the budget: its outcome, first byte, and the cut in the editor text."""

    outcome: RuleOutcome
    start: int
    budget: int
    cut_char: int | None  # character offset in the editor text where cutting/omission begins

    @property
    def end(self) -> int:
        """One past the rule's last injected byte in the shared budget."""
        return self.start + self.outcome.injected

    def describe(self) -> str:
        """The meter's sentence."""
        o = self.outcome
        where = f"bytes {self.start:,}–{self.start + o.size:,} of the {self.budget:,}-byte budget"
        if o.status == "fit":
            left = self.budget - self.end
            return f"{o.name}.md: {o.size:,} bytes, {where}; fits ({left:,} bytes left after it)"
        if o.status == "truncated":
            return (f"{o.name}.md: {o.size:,} bytes, {where}; TRUNCATED after byte {o.injected:,} — the last "
                    f"{o.size - o.injected:,} bytes (highlighted) are not sent, and every later rule is omitted")
        return (f"{o.name}.md: {o.size:,} bytes; OMITTED — earlier rules leave "
                f"{max(0, self.budget - self.start):,} bytes, too few to send any of it (a cut needs more than 200)")


def place_rules(rules: list[tuple[str, str]], max_rule_chars: int) -> dict[str, RulePlace]:
    """Where every rule lands, by name (``rules`` in injection order, unsaved texts included)."""
    _, _, outcomes = render_rules(rules, max_rule_chars)
    texts = dict(rules)
    places: dict[str, RulePlace] = {}
    used = 0
    for outcome in outcomes:
        cut = None
        if outcome.status != "fit":
            text = texts[outcome.name]
            sent = rust_trim(text)  # what is sent starts after the leading white space
            lead = text.find(sent) if sent else len(text)
            cut = lead + len(cut_at_char_boundary(sent, outcome.injected))
        places[outcome.name] = RulePlace(outcome, used, max_rule_chars, cut)
        used += outcome.injected
    return places


class BudgetBar(QWidget):
    """The bar: one segment per rule over the whole budget."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.places: list[RulePlace] = []
        self.current: str | None = None
        self.budget = 1
        self.setMinimumHeight(18)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(300, 18)

    def set_places(self, places: list[RulePlace], current: str | None, budget: int) -> None:
        """What to draw."""
        self.places, self.current, self.budget = places, current, max(1, budget)
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(0.5, 2.5, -0.5, -2.5)
        pal = self.palette()
        painter.setPen(QPen(pal.color(QPalette.ColorRole.Mid)))
        painter.setBrush(pal.color(QPalette.ColorRole.Base))
        painter.drawRoundedRect(rect, 3, 3)
        scale = rect.width() / self.budget
        for place in self.places:
            o = place.outcome
            if o.status == "omitted":
                continue
            x = rect.left() + place.start * scale
            w = max(1.0, o.injected * scale)
            color = theme.accent() if o.status == "fit" else theme.strong("warning")
            if o.name != self.current:
                color = theme.mix(color, pal.color(QPalette.ColorRole.Base), 0.6)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color)
            painter.drawRect(QRectF(x, rect.top() + 1, w, rect.height() - 2))
        painter.end()


class BudgetMeter(QWidget):
    """The bar plus the sentence for the rule being edited."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.bar = BudgetBar(self)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setAccessibleName("Rule budget")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 2, 0, 2)
        layout.addWidget(self.bar)
        layout.addWidget(self.label)
        self.place: RulePlace | None = None

    def show_rules(self, rules: list[tuple[str, str]], current: str | None, max_rule_chars: int) -> RulePlace | None:
        """Lay out ``rules`` and describe ``current``; returns its place (None if it is not a rule)."""
        places = place_rules(rules, max_rule_chars)
        self.bar.set_places(list(places.values()), current, max_rule_chars)
        self.place = places.get(current) if current else None
        used = sum(p.outcome.injected for p in places.values())
        total = f"{len(places)} rules use {used:,} of {max_rule_chars:,} bytes"
        self.label.setText(f"{self.place.describe()}\n{total}" if self.place else total)
        color = "" if self.place is None or self.place.outcome.status == "fit" else theme.strong("warning").name()
        self.label.setStyleSheet(f"color: {color}" if color else "")
        return self.place
