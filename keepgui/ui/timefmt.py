"""Times in the window: relative with a locale date after a week, absolute in tooltips."""

from __future__ import annotations

from PySide6.QtCore import QDateTime, QLocale

from keepgui.core.timefmt import now_ms, relative_time

__all__ = ["absolute", "now_ms", "relative"]


def _locale_date(ms: int) -> str:
    return QLocale().toString(QDateTime.fromMSecsSinceEpoch(ms).date(), "d MMM yyyy")


def relative(ms: int | None, now: int | None = None) -> str:
    """How long ago ``ms`` was ("5m ago", "3d ago", or a short locale date)."""
    return relative_time(ms, now, _locale_date)


def absolute(ms: int | None) -> str:
    """A full local date and time, for tooltips."""
    if ms is None:
        return ""
    return QLocale().toString(QDateTime.fromMSecsSinceEpoch(ms), QLocale.FormatType.LongFormat)
