"""Times in the window: relative with a locale date after a week, absolute in tooltips."""

from __future__ import annotations

import functools
import time

from PySide6.QtCore import QDate, QDateTime, QLocale

from keepgui.core.timefmt import now_ms, relative_time

__all__ = ["absolute", "now_ms", "relative"]


def _locale_date(ms: int) -> str:
    # Every table cell of a time older than a week shows its day: four Qt calls each, every one a
    # chance to wait for the interpreter lock while a load runs. One day's text is worked out once.
    day = time.localtime(ms // 1000)
    return _day_text(day.tm_year, day.tm_mon, day.tm_mday)


@functools.lru_cache(maxsize=4096)
def _day_text(year: int, month: int, day: int) -> str:
    return QLocale().toString(QDate(year, month, day), "d MMM yyyy")


def relative(ms: int | None, now: int | None = None) -> str:
    """How long ago ``ms`` was ("5m ago", "3d ago", or a short locale date)."""
    return relative_time(ms, now, _locale_date)


def absolute(ms: int | None) -> str:
    """A full local date and time, for tooltips."""
    if ms is None:
        return ""
    return QLocale().toString(QDateTime.fromMSecsSinceEpoch(ms), QLocale.FormatType.LongFormat)
