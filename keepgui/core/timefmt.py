"""Epoch-millisecond times rendered for people ("just now", "3d ago", a date)."""

from __future__ import annotations

import time


def relative_time(ms: int, now_ms: int | None = None) -> str:
    """Relative time as the worker's console shows it: seconds, minutes, hours, days, then a date."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    delta = (now_ms - ms) / 1000
    if delta < 0:
        return "in the future"
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{int(delta // 60)}m ago"
    if delta < 86400:
        return f"{int(delta // 3600)}h ago"
    if delta < 7 * 86400:
        return f"{int(delta // 86400)}d ago"
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))
