"""A person's write runs off the GUI thread (review debt: a keep over SSH held it 149 ms): the
GUI thread keeps beating while a slow backend writes, the writes run one after another in the
order they were asked for, and Undo pressed before a write ran still takes back that write."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QTimer

from keepgui.backends.iii.bank import IiiBank
from keepgui.backends.iii.record import fingerprint
from keepgui.core.errors import ReadOnly
from tests.ui.conftest import ran, settle
from tests.ui.test_mainwindow import fresh

pytestmark = pytest.mark.async_writes

SLOW = 0.6  # seconds each instrumented write sleeps


class Heartbeat:
    """The GUI thread's timer ticks: the longest gap between two is how long it was held."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(lambda: self.ticks.append(time.monotonic()))
        self.timer.start()

    def longest_gap(self) -> float:
        return max(b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False))


def slow_writes(monkeypatch, threads: list[str]) -> None:
    """The iii bank's create and its undo's writes sleep first (a slow disk, a far machine)."""
    original = IiiBank.create

    def create(self, *args, **kwargs):
        threads.append(threading.current_thread().name)
        time.sleep(SLOW)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(IiiBank, "create", create)


def test_a_slow_write_does_not_hold_the_gui_thread(make_window, demo_copy, qtbot, monkeypatch):
    window = make_window(demo_copy.iii)
    threads: list[str] = []
    slow_writes(monkeypatch, threads)
    beat = Heartbeat()
    qtbot.wait(50)
    started = time.monotonic()
    outcome = window.perform(window.current, lambda bank: bank.create("Mike plays chess on Fridays", [], [], False))
    assert time.monotonic() - started < SLOW / 4  # perform came back before the write ran
    assert not outcome.settled
    ran(qtbot, outcome)
    qtbot.wait(50)
    beat.timer.stop()
    assert outcome.change is not None and outcome.change.written
    assert threads and threads[0] != threading.main_thread().name
    assert beat.longest_gap() < SLOW / 2, beat.longest_gap()
    mid = fingerprint("Mike plays chess on Fridays")
    assert fresh(demo_copy.iii, "main", mid).text == "Mike plays chess on Fridays"


def test_undo_before_the_writes_ran_takes_them_back_in_order(make_window, demo_copy, qtbot, monkeypatch):
    window = make_window(demo_copy.iii)
    slow_writes(monkeypatch, [])
    stack = window.undo_stack
    texts = ["Anna swims on Tuesdays", "Anna reads on Sundays"]
    outcomes = [window.perform(window.current, lambda bank, t=t: bank.create(t, [], [], False), t) for t in texts]
    stack.undo()  # before either write ran: takes back the second, once it ran
    assert not any(o.settled for o in outcomes)
    settle(qtbot, window)
    first, second = (fresh(demo_copy.iii, "main", fingerprint(t)) for t in texts)
    assert first.invalid_at is None and second.invalid_at is not None
    stack.undo()
    stack.redo()
    stack.redo()  # asked for at once; run in order, each after the step before it
    settle(qtbot, window)
    first, second = (fresh(demo_copy.iii, "main", fingerprint(t)) for t in texts)
    assert first.invalid_at is None and second.invalid_at is None
    assert stack.index() == stack.count() == 2
    stack.undo()
    stack.undo()
    settle(qtbot, window)
    assert all(fresh(demo_copy.iii, "main", fingerprint(t)).invalid_at is not None for t in texts)


def test_a_refused_write_leaves_nothing_on_the_stack(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    errors: list[str] = []
    window.show_error = errors.append

    def refuse(_bank):
        raise ReadOnly("the file changed since")

    outcome = window.perform(window.current, refuse, "Refused write")
    assert window.undo_stack.count() == 1  # on the stack at once, until it is known to be refused
    ran(qtbot, outcome)
    assert outcome.change is None and isinstance(outcome.exception, ReadOnly)
    assert window.undo_stack.count() == 0 and not window.undo_stack.canUndo()
    assert errors == ["Refused write failed: the file changed since"]
