"""A person's write runs off the GUI thread (review debt: a keep over SSH held it 149 ms): the
GUI thread keeps beating while a slow backend writes, the writes run one after another in the
order they were asked for, and Undo pressed before a write ran still takes back that write."""

from __future__ import annotations

import os
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

SLOW = 1.0  # seconds each instrumented write sleeps


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
    assert time.monotonic() - started < SLOW / 2  # perform came back before the write ran
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


def test_quick_keep_waits_for_its_write_then_closes_and_undo_takes_it_back(make_window, demo_copy, qtbot):
    """The popup's keep runs off the GUI thread: the popup waits (its line disabled), then says
    what it did and closes; the window's undo takes the keep back byte for byte."""
    from PySide6.QtCore import Qt

    from keepgui.backends.nanobot.bank import KEEP_BANK
    from keepgui.core.source import BankKey
    from keepgui.ui.quickkeep import open_quick_keep
    from tests.ui.test_quickkeep import keep_bytes

    window = make_window(demo_copy.iii, workspace=demo_copy.nanobot)
    qtbot.waitUntil(lambda: window.hub.sources[demo_copy.nanobot].doc is not None, timeout=10_000)
    popup = open_quick_keep(window)
    qtbot.addWidget(popup)
    original = keep_bytes(demo_copy.nanobot)
    popup.set_target(BankKey(demo_copy.nanobot, KEEP_BANK))
    popup.edit.setText("Has a cat called Miso")
    qtbot.keyClick(popup.edit, Qt.Key.Key_Return)
    assert not popup.edit.isEnabled()  # waiting for its write
    settle(qtbot, window)
    assert keep_bytes(demo_copy.nanobot) == original + b"- Has a cat called Miso\n"
    qtbot.waitUntil(lambda: not popup.isVisible())
    assert window.statusBar().currentMessage().startswith("Kept: Has a cat called Miso")
    window.undo_stack.undo()
    settle(qtbot, window)
    assert keep_bytes(demo_copy.nanobot) == original


def test_a_new_bank_is_selected_once_its_write_ran(make_window, demo_copy, qtbot, monkeypatch):
    """Bank → New bank: the bank is created off the GUI thread, then the window goes to it."""
    from keepgui.ui import bankactions
    from keepgui.ui.dialogs import NameDialog

    window = make_window(demo_copy.iii)
    monkeypatch.setattr(NameDialog, "exec", lambda self: True)
    monkeypatch.setattr(NameDialog, "value", lambda self: "fresh")
    monkeypatch.setattr(NameDialog, "extra_value", lambda self: "made while the window ran on")
    bankactions.new_bank(window)
    assert window.undo_stack.count() == 1
    settle(qtbot, window)
    assert os.path.isdir(os.path.join(demo_copy.iii, "fresh"))
    qtbot.waitUntil(lambda: window.current is not None and window.current.bank == "fresh", timeout=10_000)
    window.undo_stack.undo()
    settle(qtbot, window)
    qtbot.waitUntil(lambda: "fresh" not in window.hub.banks(str(demo_copy.iii)), timeout=10_000)
