"""Epoch-millisecond times rendered for people ("just now", "3d ago", a date)."""

from __future__ import annotations

import time
from collections.abc import Callable


def now_ms() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def iso_date(ms: int) -> str:
    """``YYYY-MM-DD`` in local time."""
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))


def relative_time(ms: int | None, now: int | None = None, date: Callable[[int], str] = iso_date) -> str:
    """Relative time as the worker's console shows it: "just now", minutes, hours, days
    (under a week), then a date (``date`` formats it; the window passes a locale format)."""
    if ms is None:
        return ""
    now = now_ms() if now is None else now
    seconds = (now - ms) / 1000
    if seconds < 0:
        return "in the future"
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    if seconds < 7 * 86400:
        return f"{int(seconds // 86400)}d ago"
    return date(ms)
