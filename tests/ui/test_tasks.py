"""The one way the window works off the GUI thread (keepgui.ui.tasks): real threads, a real event
loop. Newest request wins, exceptions come back, lanes do not wait for each other, shutdown joins,
answers arrive on the GUI thread, pacing and the collector's ageing are built in."""

from __future__ import annotations

import gc
import logging
import threading
import time

import pytest
import shiboken6
from PySide6.QtCore import QObject

from keepgui.core import pace
from keepgui.ui import tasks


@pytest.fixture
def lanes():
    """Lanes of the process's runner, closed (and joined) after the test."""
    made: list[tasks.Lane] = []

    def make(name: str = "test", workers: int = 1) -> tasks.Lane:
        lane = tasks.lane(name, workers)
        made.append(lane)
        return lane

    yield make
    for lane in made:
        lane.close(wait=True)


def blocked(lane: tasks.Lane) -> threading.Event:
    """Hold the lane's thread until the returned event is set (work put after it queues)."""
    release, started = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    lane.run(hold)
    assert started.wait(5)
    return release


def test_answers_arrive_on_the_gui_thread_and_the_work_runs_off_it(qtbot, lanes):
    lane = lanes()
    seen: dict[str, object] = {}

    def work() -> int:
        seen["work"] = threading.current_thread()
        return 42

    def done(value: int) -> None:
        seen["done"] = threading.current_thread()
        seen["value"] = value

    lane.run(work, done)
    qtbot.waitUntil(lambda: "value" in seen, timeout=5000)
    assert seen["value"] == 42
    assert seen["done"] is threading.main_thread()
    assert seen["work"] is not threading.main_thread()
    assert seen["work"].name == "keepgui-test"


def test_an_exception_is_delivered_to_failed_on_the_gui_thread(qtbot, lanes):
    lane = lanes()
    got: list[tuple[Exception, threading.Thread]] = []
    done: list[object] = []

    def work() -> None:
        raise ValueError("the log has a bad line")

    lane.run(work, done.append, lambda exc: got.append((exc, threading.current_thread())))
    qtbot.waitUntil(lambda: bool(got), timeout=5000)
    exc, thread = got[0]
    assert isinstance(exc, ValueError) and str(exc) == "the log has a bad line"
    assert thread is threading.main_thread()
    assert done == []


def test_an_exception_nobody_handles_is_logged_with_its_traceback(qtbot, lanes, caplog):
    lane = lanes("orphan")

    def work() -> None:
        raise RuntimeError("nobody asked")

    with caplog.at_level(logging.ERROR, logger="keepgui.ui.tasks"):
        lane.run(work)
        qtbot.waitUntil(lambda: any("orphan" in r.getMessage() for r in caplog.records), timeout=5000)
    record = next(r for r in caplog.records if "orphan" in r.getMessage())
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


def test_newest_request_wins_a_queued_older_one_never_runs(qtbot, lanes):
    lane = lanes()
    release = blocked(lane)
    ran: list[str] = []
    answers: list[str] = []

    def ask(query: str) -> tasks.Task[str]:
        def work() -> str:
            ran.append(query)
            return query

        return lane.run(work, answers.append, newest="search")

    first, second, third = ask("g"), ask("gr"), ask("gra")
    assert first.obsolete() and second.obsolete() and not third.obsolete()
    release.set()
    qtbot.waitUntil(lambda: answers == ["gra"], timeout=5000)
    assert ran == ["gra"]  # the superseded questions were skipped, not computed
    assert first.wait(5) and first.state == "cancelled"
    qtbot.wait(50)
    assert answers == ["gra"]


def test_newest_request_wins_a_running_one_stops_at_its_checkpoint_and_is_not_delivered(qtbot, lanes):
    lane = lanes()
    answers: list[str] = []
    steps: list[int] = []
    started = threading.Event()

    def long_build() -> str:
        started.set()
        for step in range(2000):
            steps.append(step)
            time.sleep(0.001)
            pace.checkpoint()  # where abandoning is safe
        return "old"

    old = lane.run(long_build, answers.append, newest="build", abandon=True)
    assert started.wait(5)
    lane.run(lambda: "new", answers.append, newest="build", abandon=True)
    qtbot.waitUntil(lambda: answers == ["new"], timeout=10_000)
    assert old.wait(5) and old.state == "cancelled"
    assert len(steps) < 2000  # it stopped early instead of finishing


def test_a_superseded_answer_that_was_not_abandoned_finishes_but_is_not_delivered(qtbot, lanes):
    lane = lanes()
    answers: list[str] = []
    started, go_on = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        go_on.wait(5)
        pace.checkpoint()  # not abandonable: a checkpoint does not stop it
        return "old"

    old = lane.run(slow, answers.append, newest="q")
    assert started.wait(5)
    lane.run(lambda: "new", answers.append, newest="q")
    go_on.set()
    qtbot.waitUntil(lambda: answers == ["new"], timeout=5000)
    assert old.state == "finished" and old.result == "old"
    qtbot.wait(50)
    assert answers == ["new"]


def test_lanes_are_independent_a_blocked_lane_does_not_delay_another(qtbot, lanes):
    loads, questions = lanes("loads"), lanes("questions")
    release = blocked(loads)
    queued_behind: list[str] = []
    answers: list[str] = []
    loads.run(lambda: "load", queued_behind.append)
    questions.run(lambda: "answer", answers.append)
    qtbot.waitUntil(lambda: answers == ["answer"], timeout=5000)
    assert queued_behind == [] and loads.pending() == 2
    release.set()
    qtbot.waitUntil(lambda: queued_behind == ["load"], timeout=5000)
    assert loads.pending() == 0


def test_work_on_one_lane_runs_in_the_order_it_was_put_there(qtbot, lanes):
    lane = lanes()
    order: list[int] = []
    for i in range(20):
        lane.run(lambda i=i: order.append(i))
    assert lane.drain(5)
    assert order == list(range(20))


def test_shutdown_joins_running_work_finishes_queued_work_is_dropped(qtbot, lanes):
    lane = lanes()
    finished: list[str] = []
    started = threading.Event()

    def running() -> None:
        started.set()
        time.sleep(0.3)
        finished.append("running")

    lane.run(running)
    queued = lane.run(lambda: finished.append("queued"))
    assert started.wait(5)
    threads = [t for t in threading.enumerate() if t.name == "keepgui-test"]
    assert len(threads) == 1
    lane.close(wait=True)
    assert finished == ["running"]  # joined: the running work finished before close returned
    assert not threads[0].is_alive()
    assert queued.ended and queued.state == "cancelled"
    later = lane.run(lambda: finished.append("later"))
    assert later.state == "cancelled" and later.wait(0)
    time.sleep(0.05)
    assert finished == ["running"] and lane.pending() == 0


def test_a_closed_lane_delivers_nothing_and_a_deleted_owner_gets_nothing(qtbot, lanes):
    lane = lanes()
    answers: list[str] = []
    started, release = threading.Event(), threading.Event()

    def running() -> str:
        started.set()
        release.wait(5)
        return "to a closed lane"

    closing = lane.run(running, answers.append)
    assert started.wait(5)
    lane.close(wait=False)
    release.set()
    assert closing.wait(5) and closing.state == "finished"  # it ran to its end, but nobody is told

    owner = QObject()
    other = lanes("other")
    other_release = blocked(other)
    other.run(lambda: "to a deleted owner", answers.append, owner=owner)
    owner.deleteLater()
    qtbot.waitUntil(lambda: not shiboken6.isValid(owner), timeout=5000)
    other_release.set()
    assert other.drain(5)
    qtbot.wait(100)
    assert answers == []


def test_two_workers_run_two_tasks_at_once(qtbot, lanes):
    lane = lanes("builds", workers=2)
    both = threading.Barrier(2, timeout=5)
    answers: list[str] = []

    def meet(name: str) -> str:
        both.wait()  # a lane of one thread would never get past this
        return name

    lane.run(lambda: meet("a"), answers.append)
    lane.run(lambda: meet("b"), answers.append)
    qtbot.waitUntil(lambda: sorted(answers) == ["a", "b"], timeout=5000)
    names = {t.name for t in threading.enumerate() if t.name.startswith("keepgui-builds")}
    assert names == {"keepgui-builds-1", "keepgui-builds-2"}


class _Patient(pace.Foreground):
    """A foreground whose background waits are long enough to see under load."""

    def wait(self, timeout: float = 10.0) -> None:
        super().wait(timeout)


def test_a_tasks_checkpoints_give_way_to_a_busy_gui_thread(qtbot, lanes):
    lane = lanes()
    foreground = _Patient()  # this (the GUI) thread
    pace.set_foreground(foreground)
    try:
        foreground.busy()
        stepped: list[float] = []

        def work() -> None:
            pace.checkpoint()  # between two steps of the work
            stepped.append(time.perf_counter())

        task = lane.run(work)
        time.sleep(0.1)
        idle_at = time.perf_counter()
        foreground.idle()
        assert task.wait(5)
        assert stepped[0] >= idle_at  # it waited, holding nothing, until the GUI thread was idle
    finally:
        pace.set_foreground(None)


def test_made_old_work_leaves_its_containers_in_the_oldest_generation(qtbot, lanes):
    lane = lanes()
    built: list[list[list[int]]] = []
    enabled = gc.isenabled()

    def build() -> list[list[int]]:
        assert not gc.isenabled()  # no collection runs while it allocates
        rows = [[i] for i in range(5000)]
        built.append(rows)
        return rows

    task = lane.run(build, made_old=True)
    assert task.wait(5)
    assert gc.isenabled() == enabled
    rows = built[0]
    assert any(o is rows for o in gc.get_objects(generation=2))
    assert not any(o is rows for o in gc.get_objects(generation=0))


# ---------------------------------------------------------------------- the hub's one ask


@pytest.fixture
def hub(qtbot, demo_copy):
    from keepgui.ui.hub import Hub

    made = Hub(watch=False)
    made.add("iii", demo_copy.iii, reload_command="")
    qtbot.waitUntil(lambda: made.is_listed(demo_copy.iii), timeout=10_000)
    yield made
    made.shutdown()


def test_ask_answers_after_the_loads_queued_for_the_source_on_the_gui_thread(qtbot, hub, demo_copy):
    from keepgui.core.source import BankKey

    key = BankKey(demo_copy.iii, "main")
    hub.open_bank(key)  # queued on the source's lane before the question
    answers: list[tuple[object, bool, threading.Thread]] = []

    def question(bank):
        return len(list(bank.rows()))

    hub.ask(key, question, lambda n: answers.append((n, hub.is_loaded(key), threading.current_thread())))
    qtbot.waitUntil(lambda: bool(answers), timeout=10_000)
    rows, loaded, thread = answers[0]
    assert rows == len(hub.rows(key)) > 0 and loaded  # the load ran first
    assert thread is threading.main_thread()


def test_ask_delivers_the_exception_the_question_raised(qtbot, hub, demo_copy):
    from keepgui.core.errors import KeepguiError
    from keepgui.core.source import BankKey

    got: list[object] = []

    def question(_bank):
        raise KeepguiError("main.jsonl, line 3: not JSON")

    hub.ask(BankKey(demo_copy.iii, "main"), question, got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=10_000)
    assert isinstance(got[0], KeepguiError) and "line 3" in str(got[0])


def test_ask_while_typing_answers_only_the_newest_and_a_long_load_does_not_delay_it(qtbot, hub, demo_copy):
    from keepgui.core.source import BankKey

    key = BankKey(demo_copy.iii, "main")
    hub.open_bank(key)
    qtbot.waitUntil(lambda: hub.is_loaded(key), timeout=10_000)
    release = threading.Event()
    hub.ask(key, lambda _bank: release.wait(10), lambda _r: None)  # the source's lane is held
    answers: list[str] = []
    asked: list[str] = []
    gate = threading.Event()
    started = threading.Event()

    def question(text):
        def ask(_bank):
            started.set()
            gate.wait(10)
            asked.append(text)
            return text

        return ask

    hub.ask(key, question("w"), answers.append, typing="preview")
    assert started.wait(10)  # the first question under way (a loaded machine may start it late)
    for text in ("wh", "who"):
        hub.ask(key, question(text), answers.append, typing="preview")
    gate.set()
    qtbot.waitUntil(lambda: answers == ["who"], timeout=10_000)  # while the source's lane is still held
    assert not release.is_set() and hub.busy()
    assert "wh" not in asked  # queued behind the first and superseded: never computed
    release.set()
    qtbot.waitUntil(lambda: not hub.busy(), timeout=10_000)
    assert answers == ["who"]


def test_pace_application_paces_an_application_keepgui_did_not_make(qapp):
    """What ``Application`` does for a person's window, done to pytest-qt's QApplication (the window tests
    that measure the GUI thread's blocks): an event marks the foreground busy, the loop's wait idle."""
    from PySide6.QtCore import QAbstractEventDispatcher, QCoreApplication, QEvent, QObject

    from keepgui.ui.startup import pace_application

    undo = pace_application(qapp)
    try:
        foreground = pace._foreground
        assert foreground is not None
        foreground.idle()
        QCoreApplication.sendEvent(QObject(), QEvent(QEvent.Type.User))
        assert not foreground._idle.is_set()  # the GUI thread handles an event: background work waits
        QAbstractEventDispatcher.instance(qapp.thread()).aboutToBlock.emit()
        assert foreground._idle.is_set()  # about to wait for events: background work runs
    finally:
        undo()
    assert pace._foreground is None


def test_a_bank_already_read_is_opened_as_urgent_work_and_a_first_load_is_not(qtbot, demo_copy, monkeypatch):
    """Opening a bank the window read before (the sidebar's count read it) is short and a person waits
    for it: it runs as urgent work, other background work giving way. A first load can take minutes:
    urgent, it would hold every other panel's work back for as long, so it is not."""
    from keepgui.core import pace
    from keepgui.core.source import BankKey
    from keepgui.ui.hub import Hub

    urgent: list[bool] = []
    real = pace.urgent
    monkeypatch.setattr(pace, "urgent", lambda work: urgent.append(True) or real(work))
    hub = Hub(watch=False)
    key = BankKey(demo_copy.iii, "main")
    loads: list[object] = []
    hub.changed.connect(lambda change: loads.append(change) if change.key == key and change.rows.complete else None)
    try:
        hub.add("iii", demo_copy.iii, reload_command="")
        hub.open_bank(key)  # the window opened on it: queued before the sidebar's counts
        qtbot.waitUntil(lambda: hub.is_loaded(key) and bool(loads) and not hub.busy(), timeout=10_000)
        assert urgent == []
        hub.open_bank(key)  # shown again, already read
        qtbot.waitUntil(lambda: len(loads) == 2, timeout=10_000)
        assert urgent == [True]
    finally:
        hub.shutdown()
