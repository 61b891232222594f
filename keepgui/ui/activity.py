"""The activity strip: captures per day above the memory table, and the day range it filters by.

:class:`ActivityStrip` draws one stacked bar per local day (created,
reinforced, edited, retired: :data:`~keepgui.core.source.CAPTURE_KINDS`, in
palette colours) for as many days as its width holds, ending today; the wheel
scrolls back in time. A click picks a day and a drag a range of days
(Shift+click extends it; Escape or the clear button drops it); the strip then
works out, off the GUI thread, which rows changed in that range and hands the
keys to the table as one filter. Hovering a day tells its counts.

The events come from the bank's :meth:`~keepgui.core.source.Bank.activity`
through the hub (on the source's thread); every Change of the bank's rows asks
again, and the backend reads only what its files gained. Counting the days
shown is a few bisections per day, cheap enough for the GUI thread.

Signals:
    ActivityStrip.rangeChosen(object keys, str label): the keys of the rows that changed in the
        chosen days (a set), or None when the range was cleared; ``label`` names the days.
"""

from __future__ import annotations

import math
import time
from typing import Any

from PySide6.QtCore import QDate, QDateTime, QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QToolButton, QToolTip, QWidget

from keepgui.core.source import ACTIVITY, CAPTURE_KINDS, CREATED, EDITED, REINFORCED, RETIRED, Activity, BankKey
from keepgui.ui import theme
from keepgui.ui.tasks import lane

_KEYS = lane("activity")
BAR_STEP = 6
"""Pixels per day (bar and gap) at the strip's usual width."""
MIN_DAYS = 30
"""The strip shows at least a month (the iii console's strip shows 30 days)."""
MAX_DAYS = 730
STRIP_HEIGHT = 40
KIND_LABELS = {CREATED: "created", REINFORCED: "reinforced", EDITED: "edited", RETIRED: "retired"}


def kind_colours() -> dict[str, QColor]:
    """The colour of each kind of event, from the palette (light and dark mode alike)."""
    accent = theme.accent()
    base = theme.palette().color(QPalette.ColorRole.Base)
    return {
        CREATED: accent,
        REINFORCED: theme.mix(accent, base, 0.5),
        EDITED: theme.strong("warning"),
        RETIRED: theme.muted_text(),
    }


def local_midnight(date: QDate) -> int:
    """Epoch ms of the start of ``date`` in local time (the C library's: a tenth of a ``QDateTime``'s
    0.08 ms, which the strip's recount paid for each of its 120 days on the GUI thread)."""
    return int(time.mktime((date.year(), date.month(), date.day(), 0, 0, 0, 0, 0, -1))) * 1000


class ActivityStrip(QWidget):
    """Captures per day for the shown bank (see the module docstring)."""

    rangeChosen = Signal(object, str)

    def __init__(self, hub: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.key: BankKey | None = None
        self.activity: Activity | None = None
        self.problem = ""
        self.today = QDate.currentDate()
        self.end_back = 0  # days between today and the last day shown (the wheel scrolls back)
        self.selection: tuple[QDate, QDate] | None = None  # first and last day chosen
        self._anchor: QDate | None = None
        self._dragging = False
        self._counts: dict[str, list[int]] = {}
        self._days: list[QDate] = []
        self._filter_token = 0
        self.setFixedHeight(STRIP_HEIGHT + self._label_height())
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName("Activity: captures per day")
        self.clear_button = QToolButton(self)
        self.clear_button.setText("×")
        self.clear_button.setAutoRaise(True)
        self.clear_button.setToolTip("Show every day again (Escape)")
        self.clear_button.setAccessibleName("Clear the day range")
        self.clear_button.clicked.connect(self.clear_range)
        self.clear_button.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addStretch(1)
        layout.addWidget(self.clear_button, 0, Qt.AlignmentFlag.AlignTop)
        self._again = QTimer(self)
        self._again.setSingleShot(True)
        self._again.setInterval(150)  # a burst of appended lines asks once
        self._again.timeout.connect(self.refresh)
        if hub is not None:
            hub.changed.connect(self._on_change)

    # ------------------------------------------------------------------ the bank shown

    def set_bank(self, key: BankKey | None) -> None:
        """Follow a bank (its events arrive from the hub), or nothing."""
        self.key = key
        self.activity = None
        self.problem = ""
        self.end_back = 0
        if self.selection is not None:
            self.clear_range()
        caps = self.hub.capabilities(key) if key is not None and self.hub is not None else None
        if caps is not None and not caps.can(ACTIVITY):
            self.problem = caps.why_not(ACTIVITY)
        self._recount()

    def refresh(self) -> None:
        """Ask for the bank's events again (after its rows changed)."""
        if self.key is not None and self.hub is not None and not self.problem:
            key = self.key
            self.hub.ask(key, lambda bank: bank.activity(), lambda found: self._on_activity(key, found), owner=self)

    def _on_change(self, change: Any) -> None:
        if self.key is not None and change.key == self.key and change.rows and not change.partial:
            self._again.start()

    def _on_activity(self, key: BankKey, activity: Any) -> None:
        if key != self.key:
            return
        if isinstance(activity, Exception):
            self.activity, self.problem = None, str(activity)
        else:
            self.activity, self.problem = activity, ""
            if self.selection is not None:
                self._choose_range(*self.selection)  # rows that changed in the range since are shown too
        self._recount()

    # ------------------------------------------------------------------ counting

    def day_count(self) -> int:
        """How many days the strip shows at its width."""
        return max(MIN_DAYS, min(MAX_DAYS, (self.width() - self._label_width() - 8) // BAR_STEP))

    def _label_width(self) -> int:
        return QFontMetrics(self.font()).horizontalAdvance("0000 captured this week") + 12

    def _recount(self) -> None:
        self.today = QDate.currentDate()
        n = self.day_count()
        last = self.today.addDays(-self.end_back)
        self._days = [last.addDays(i - n + 1) for i in range(n)]
        if self.activity is not None and self._days:
            bounds = [local_midnight(d) for d in self._days] + [local_midnight(last.addDays(1))]
            self._counts = self.activity.counts(bounds)
        else:
            self._counts = {}
        self.clear_button.setVisible(self.selection is not None)
        self.update()

    def counts_on(self, day: QDate) -> dict[str, int]:
        """The events of each kind on a day shown."""
        if day not in self._days or not self._counts:
            return dict.fromkeys(CAPTURE_KINDS, 0)
        i = self._days.index(day)
        return {kind: self._counts[kind][i] for kind in CAPTURE_KINDS}

    def week_total(self) -> int:
        """Captures (every kind) in the last seven days."""
        if self.activity is None:
            return 0
        end = local_midnight(self.today.addDays(1))
        return sum(sum(c) for c in self.activity.counts([local_midnight(self.today.addDays(-6)), end]).values())

    def summary(self) -> str:
        """The sentence beside the bars."""
        if self.problem:
            return self.problem
        if self.activity is None:
            return "reading activity…" if self.key is not None else ""
        week = self.week_total()
        head = f"{week:,} captured this week" if week else "nothing captured this week"
        first = self._days[0] if self._days else self.today
        parts = [head, f"{len(self._days)} days from {first.toString('d MMM yyyy')}", f"{len(self.activity):,} in all"]
        if self.activity.since is not None:
            since = QDateTime.fromMSecsSinceEpoch(self.activity.since).date()
            parts.append(f"recorded since {since.toString('d MMM yyyy')}")
        return " · ".join(parts)

    def shown_problem(self) -> str:
        """Why the strip has no bars, as drawn: across its width, elided only when it must be."""
        return self.fontMetrics().elidedText(self.problem, Qt.TextElideMode.ElideRight, max(0, self.width() - 8))

    # ------------------------------------------------------------------ geometry

    def _label_height(self) -> int:
        return QFontMetrics(self._date_font()).height() + 2

    def _date_font(self) -> QFont:
        small = QFont(self.font())
        small.setPointSizeF(max(6.0, self.font().pointSizeF() * 0.85))
        return small

    def _bars_rect(self) -> QRectF:
        return QRectF(self._label_width(), 4, len(self._days) * BAR_STEP, self.height() - 8 - self._label_height())

    def bar_height(self, total: int, peak: int) -> float:
        """How tall a day of ``total`` captures is drawn when the busiest day shown has ``peak``: on a
        log scale, so a day of a few hundred (a bulk edit today) leaves a day of one or two readable."""
        if total <= 0 or peak <= 0:
            return 0.0
        full = self._bars_rect().height() - 2
        return max(2.0, full * math.log1p(total) / math.log1p(peak))

    def date_labels(self) -> list[tuple[float, str]]:
        """The dates written under the bars: ``(left x, text)`` for the first day shown, each month's
        first day ("1 Mar", with the year in January) and today, never two on top of each other."""
        if not self._days:
            return []
        metrics = QFontMetrics(self._date_font())
        rect = self._bars_rect()
        wanted: list[tuple[QDate, str]] = [(self._days[0], self._days[0].toString("d MMM"))]
        for day in self._days[1:]:
            if day.day() == 1:
                wanted.append((day, day.toString("d MMM yyyy" if day.month() == 1 else "d MMM")))
        last = self._days[-1]
        end = ("today", last) if last == self.today else (last.toString("d MMM"), last)
        labels: list[tuple[float, str]] = []
        right_end = rect.right() - metrics.horizontalAdvance(end[0])
        taken = -1.0
        for day, text in wanted:
            x = self.x_of(day) - BAR_STEP / 2
            width = metrics.horizontalAdvance(text)
            if x > taken and x + width < right_end - 6:
                labels.append((x, text))
                taken = x + width + 6
        labels.append((right_end, end[0]))
        return labels

    def day_at(self, x: float) -> QDate | None:
        """The day under a horizontal position (None outside the bars)."""
        rect = self._bars_rect()
        if not self._days or not rect.left() <= x < rect.right():
            return None
        return self._days[int((x - rect.left()) // BAR_STEP)]

    def x_of(self, day: QDate) -> float:
        """The horizontal centre of a day's bar."""
        return self._bars_rect().left() + self._days.index(day) * BAR_STEP + BAR_STEP / 2

    # ------------------------------------------------------------------ drawing

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(640, STRIP_HEIGHT + self._label_height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._recount()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        pal = self.palette()
        text = pal.color(QPalette.ColorRole.WindowText)
        painter.setPen(text)
        if self.problem:  # no bars to draw: the whole sentence, across the strip
            painter.drawText(
                QRectF(4, 0, self.width() - 8, self.height()), int(Qt.AlignmentFlag.AlignVCenter), self.shown_problem()
            )
            painter.end()
            return
        label = QRectF(0, 0, self._label_width() - 8, self.height())
        week = self.week_total() if self.activity is not None else 0
        painter.drawText(
            label,
            int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
            f"{week:,} this week" if self.activity is not None else "",
        )
        rect = self._bars_rect()
        baseline = rect.bottom()
        painter.setPen(theme.mix(text, pal.color(QPalette.ColorRole.Window), 0.8))
        painter.drawLine(QPointF(rect.left(), baseline + 0.5), QPointF(rect.right(), baseline + 0.5))
        if self.selection is not None:
            first, last = self.selection
            shown = [d for d in self._days if first <= d <= last]
            if shown:
                left = self.x_of(shown[0]) - BAR_STEP / 2
                right = self.x_of(shown[-1]) + BAR_STEP / 2
                painter.fillRect(QRectF(left, 0, right - left, self.height()), theme.tint("info"))
        if self._counts:
            colours = kind_colours()
            totals = [sum(self._counts[k][i] for k in CAPTURE_KINDS) for i in range(len(self._days))]
            peak = max(totals) or 1
            painter.setPen(Qt.PenStyle.NoPen)
            for i, total in enumerate(totals):
                if not total:
                    continue
                x = rect.left() + i * BAR_STEP
                y = baseline
                height = self.bar_height(total, peak)  # the day's bar, shared by its kinds in proportion
                for kind in CAPTURE_KINDS:
                    n = self._counts[kind][i]
                    if n:
                        h = max(1.0, height * n / total)
                        painter.fillRect(QRectF(x, y - h, BAR_STEP - 1, h), colours[kind])
                        y -= h
        # Month starts are ticked, so a person can find a date without hovering.
        painter.setPen(theme.muted_text())
        for day in self._days:
            if day.day() == 1:
                x = self.x_of(day) - BAR_STEP / 2
                painter.drawLine(QPointF(x, baseline - 3), QPointF(x, baseline + 3))
        painter.setFont(self._date_font())
        for x, date_text in self.date_labels():
            painter.drawText(
                QRectF(x, baseline + 2, 400, self._label_height()), int(Qt.AlignmentFlag.AlignLeft), date_text
            )
        if self.hasFocus() and self.selection is not None:
            painter.setPen(pal.color(QPalette.ColorRole.Highlight))
            painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        painter.end()

    # ------------------------------------------------------------------ choosing days

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        day = self.day_at(event.position().x())
        if day is None or event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier and self.selection is not None:
            self._anchor = self.selection[0]
        elif self.selection == (day, day):
            self.clear_range()  # a second click on the one day chosen: every day again
            return
        else:
            self._anchor = day
        self._dragging = True
        self._preview(self._anchor, day)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        day = self.day_at(event.position().x())
        if self._dragging and day is not None and self._anchor is not None:
            self._preview(self._anchor, day)
        if day is not None:
            QToolTip.showText(event.globalPosition().toPoint(), self.describe_day(day), self)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._dragging and self.selection is not None:
            self._dragging = False
            self.choose(*self.selection)
            return
        super().mouseReleaseEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt override
        steps = event.angleDelta().y() // 120 or event.angleDelta().x() // 120
        if steps:
            self.end_back = max(0, self.end_back + steps * 7)  # a week per step, back in time
            self._recount()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        key = event.key()
        if key == Qt.Key.Key_Escape and self.selection is not None:
            self.clear_range()
            return
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            step = -1 if key == Qt.Key.Key_Left else 1
            first, last = self.selection or (self.today, self.today)
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.choose(first, max(first, min(self.today, last.addDays(step))))
            else:
                day = max(self._days[0] if self._days else self.today, min(self.today, last.addDays(step)))
                self.choose(day, day)
            return
        super().keyPressEvent(event)

    def _preview(self, a: QDate, b: QDate) -> None:
        self.selection = (min(a, b), max(a, b))
        self.clear_button.show()
        self.update()

    def describe_day(self, day: QDate) -> str:
        """What hovering a day says: its date and the counts of each kind."""
        counts = self.counts_on(day)
        total = sum(counts.values())
        head = day.toString("ddd d MMM yyyy")
        if not total:
            return f"{head}: nothing captured"
        parts = [f"{counts[k]} {KIND_LABELS[k]}" for k in CAPTURE_KINDS if counts[k]]
        return f"{head}: {total} — " + ", ".join(parts) + "\nclick or drag to show what changed then"

    def range_label(self) -> str:
        """The chosen days in words ("3 Jun 2025", "3 – 9 Jun 2025")."""
        if self.selection is None:
            return ""
        first, last = self.selection
        if first == last:
            return first.toString("d MMM yyyy")
        return f"{first.toString('d MMM yyyy')} – {last.toString('d MMM yyyy')}"

    def choose(self, first: QDate, last: QDate) -> None:
        """Filter the table to the rows that changed from ``first`` to ``last`` (local days, inclusive)."""
        self.selection = (min(first, last), max(first, last))
        self._choose_range(*self.selection)
        self._recount()

    def _choose_range(self, first: QDate, last: QDate) -> None:
        activity = self.activity
        if activity is None:
            return
        self._filter_token += 1
        token, label = self._filter_token, self.range_label()
        start, end = local_midnight(first), local_midnight(last.addDays(1))
        # At a million rows the keys of a long range are a big set: found off the GUI thread.
        _KEYS.run(
            lambda: activity.keys_between(start, end),
            lambda keys: self._on_keys(token, keys, label),
            owner=self,
            newest=self,
        )

    def _on_keys(self, token: int, keys: set[str], label: str) -> None:
        if token != self._filter_token or self.selection is None:
            return
        self.rangeChosen.emit(keys, label)

    def clear_range(self) -> None:
        """Every day again (the table is no longer filtered by day)."""
        self._filter_token += 1
        self.selection = None
        self._anchor = None
        self._dragging = False
        self.rangeChosen.emit(None, "")
        self._recount()
