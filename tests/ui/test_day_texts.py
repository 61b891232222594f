"""A table's dates older than a week: the day's text as Qt's locale writes it, worked out once a day."""

from __future__ import annotations

import random
import time

from PySide6.QtCore import QDateTime, QLocale

from keepgui.ui import timefmt


def test_a_day_s_text_is_qt_s_locale_date_of_that_moment():
    r = random.Random(3)
    for ms in [r.randrange(-(10**12), 4 * 10**12) for _ in range(5000)] + [0, -1, 999, -999, 86_399_999]:
        assert timefmt._locale_date(ms) == QLocale().toString(QDateTime.fromMSecsSinceEpoch(ms).date(), "d MMM yyyy")


def test_the_cells_of_one_day_cost_one_locale_call(monkeypatch):
    calls = []

    class Counted(QLocale):
        def toString(self, *args):  # noqa: N802 - Qt's name
            calls.append(args)
            return super().toString(*args)

    monkeypatch.setattr(timefmt, "QLocale", Counted)
    timefmt._day_text.cache_clear()
    days = [int(time.mktime((2020, 9, 1 + d, 11, 0, 0, 0, 0, -1))) * 1000 for d in range(10)]  # local late mornings
    texts = [timefmt.relative(day + minute * 60_000, now=2_000_000_000_000) for minute in range(100) for day in days]
    assert len(set(texts)) == 10 and len(calls) == 10  # was a QLocale, a QDateTime and a format per cell
    timefmt._day_text.cache_clear()
