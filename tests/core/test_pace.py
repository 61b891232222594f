"""Background work gives way to a busy foreground, but is never stopped by one."""

from __future__ import annotations

import threading
import time

import pytest

from keepgui.core import pace


@pytest.fixture
def foreground():
    fg = pace.Foreground()
    pace.set_foreground(fg)
    yield fg
    pace.set_foreground(None)


def _in_thread(fn) -> float:
    """Seconds ``fn`` took on another thread."""
    took: list[float] = []

    def run() -> None:
        start = time.perf_counter()
        fn()
        took.append(time.perf_counter() - start)

    t = threading.Thread(target=run)
    t.start()
    t.join(5)
    return took[0]


def test_no_foreground_installed_means_no_wait():
    pace.set_foreground(None)
    assert _in_thread(pace.checkpoint) < 0.01


def test_a_background_checkpoint_waits_while_the_foreground_is_busy_and_goes_on_when_it_is_idle(foreground):
    foreground.busy()
    idled: list[float] = []

    def idle() -> None:
        idled.append(time.perf_counter())
        foreground.idle()

    threading.Timer(0.02, idle).start()
    ended: list[float] = []
    took = _in_thread(lambda: (pace.checkpoint(), ended.append(time.perf_counter())))
    # it went on only once the foreground was idle (timed from then: a loaded machine starts the thread late)
    assert idled and ended[0] >= idled[0] and took < pace.MAX_WAIT
    assert foreground.waits == 1
    assert _in_thread(pace.checkpoint) < 0.01  # idle: no wait
    assert foreground.waits == 1


def test_the_foregrounds_own_checkpoints_never_wait(foreground):
    foreground.busy()
    start = time.perf_counter()
    pace.checkpoint()
    assert time.perf_counter() - start < 0.01
    assert foreground.waits == 0


def test_a_foreground_busy_for_long_costs_background_work_one_wait_not_one_per_checkpoint(foreground):
    # e.g. the GUI thread waiting for a lock the background thread holds while it loads
    foreground.busy()
    took = _in_thread(lambda: [pace.checkpoint() for _ in range(20)])
    assert pace.MAX_WAIT * 0.9 <= took < pace.MAX_WAIT * 3
    assert foreground.waits == 1
    foreground.idle()
    foreground.busy()  # a new busy period: background gives way again
    threading.Timer(0.01, foreground.idle).start()
    assert _in_thread(pace.checkpoint) < pace.MAX_WAIT
    assert foreground.waits == 2


def test_what_a_replay_allocated_is_old_at_once_so_no_young_collection_walks_it():
    """The window's loads made a bank's containers young: the next young collection looked at every
    one of them holding the interpreter lock (20-25 ms at 100k rows, on whichever thread allocated)."""
    import gc

    from keepgui.backends.iii.log import gc_paused

    with gc_paused():
        made = [[i] for i in range(10_000)]  # containers the collector tracks
    assert gc.isenabled()
    assert not any(o is made for o in gc.get_objects(0)) and not any(o is made for o in gc.get_objects(1))
    assert any(o is made for o in gc.get_objects(2))
    assert pace.made_old(lambda: [[1]]) == [[1]] and gc.isenabled()


def test_checkpoints_without_a_window_cost_next_to_nothing():
    pace.set_foreground(None)
    assert _in_thread(lambda: [pace.checkpoint() for _ in range(1000)]) < 0.05


def test_work_no_longer_wanted_stops_at_its_next_checkpoint():
    wanted = threading.Event()
    wanted.set()
    steps: list[int] = []

    def work() -> str:
        for i in range(100):
            pace.checkpoint()
            steps.append(i)
            if i == 9:
                wanted.clear()  # a newer delivery replaced what this builds
        return "done"

    with pytest.raises(pace.Cancelled):
        pace.unless_obsolete(work, lambda: not wanted.is_set())
    assert steps == list(range(10))
    pace.checkpoint()  # outside it, checkpoints never raise
    assert pace.unless_obsolete(lambda: "done", lambda: False) == "done"


def test_a_big_list_is_released_a_slice_at_a_time(monkeypatch):
    checkpoints = []
    monkeypatch.setattr(pace, "checkpoint", lambda: checkpoints.append(1))
    items: list[object] = [(i,) for i in range(pace.RELEASE_STEP * 3 + 1)]
    pace.release(items)
    assert items == [] and len(checkpoints) == 4


def test_slices_are_one_step_for_a_command_and_steps_with_checkpoints_beside_a_window(monkeypatch):
    items = list(range(10))
    assert list(pace.slices(items, 4)) == [(0, items)]  # no foreground: the whole at once
    waits = []
    monkeypatch.setattr(pace, "checkpoint", lambda: waits.append(1))
    pace.set_foreground(pace.Foreground())
    try:
        assert list(pace.slices(items, 4)) == [(0, [0, 1, 2, 3]), (4, [4, 5, 6, 7]), (8, [8, 9])]
    finally:
        pace.set_foreground(None)
    assert len(waits) == 3


def test_numbered_is_the_position_of_each_item_with_or_without_a_window():
    items = ["a", "b", None, "c", "b"]
    expected = {item: n for n, item in enumerate(items)}  # a repeat: its last position
    assert pace.numbered(items, 2) == expected
    pace.set_foreground(pace.Foreground())
    try:
        assert pace.numbered(items, 2) == expected
    finally:
        pace.set_foreground(None)


def test_other_background_work_gives_way_while_urgent_work_runs_and_the_urgent_work_never_does(foreground):
    """The first rows of a bank a person opened are picked as urgent work: another thread's checkpoint
    waits until it ends (at most MAX_WAIT a checkpoint); the urgent thread's own, nested or not, never
    wait; once it ended, nothing waits."""
    started, release = threading.Event(), threading.Event()
    own: list[float] = []

    def work() -> str:
        started.set()
        release.wait(5)
        start = time.perf_counter()
        pace.urgent(pace.checkpoint)  # nested: still urgent work, still no wait after it
        pace.checkpoint()
        own.append(time.perf_counter() - start)
        return "picked"

    answer: list[str] = []
    urgent = threading.Thread(target=lambda: answer.append(pace.urgent(work)))
    urgent.start()
    assert started.wait(5)
    threading.Timer(0.02, release.set).start()
    ended: list[float] = []
    took = _in_thread(lambda: (pace.checkpoint(), ended.append(time.perf_counter())))
    urgent.join(5)
    assert answer == ["picked"] and own[0] < 0.01
    assert 0.015 <= took < pace.MAX_WAIT * 1.5  # it waited for the urgent work, not longer than a wait
    assert _in_thread(pace.checkpoint) < 0.01  # none running: no wait


def test_urgent_work_holds_nothing_back_without_a_window():
    pace.set_foreground(None)
    release = threading.Event()
    urgent = threading.Thread(target=lambda: pace.urgent(lambda: release.wait(5)))
    urgent.start()
    try:
        assert _in_thread(pace.checkpoint) < 0.01
    finally:
        release.set()
        urgent.join(5)


def test_urgent_work_that_runs_on_is_given_way_to_for_a_bounded_time_only(foreground, monkeypatch):
    """Urgent work may wait for a lock that work waiting at a checkpoint holds (a question on the bank
    the urgent load wants): past URGENT_MAX_S nothing waits for it any more, so it never waits long
    behind what it held back."""
    monkeypatch.setattr(pace, "URGENT_MAX_S", 0.12)
    started, release = threading.Event(), threading.Event()
    urgent = threading.Thread(target=lambda: pace.urgent(lambda: (started.set(), release.wait(5))))
    urgent.start()
    try:
        assert started.wait(5)
        took = _in_thread(lambda: [pace.checkpoint() for _ in range(20)])  # 1 s at 50 ms each, unbounded
        assert 0.05 <= took < 0.12 + pace.MAX_WAIT + 0.15
    finally:
        release.set()
        urgent.join(5)
