"""Work in a child process (keepgui.core.childwork): columns back, lists joined in slices; a child
that dies is started again once, one that hangs is killed; a bug in the work is raised here."""

from __future__ import annotations

import os
import signal
import threading
import time
from array import array

import pytest

from keepgui.core import childwork
from keepgui.core.childwork import ChildCancelled, ChildFailed, ChildWorker
from tests.core.test_graph import gone

HERE = __name__


def columns(n: int) -> dict[str, object]:
    """What a child sends back: a list longer than a slice, bytes, a number (run in the child)."""
    return {"ids": [f"id-{i}" for i in range(n)], "blob": bytes(range(256)) * 3, "pid": os.getpid(), "empty": []}


def slow(seconds: float) -> dict[str, object]:
    time.sleep(seconds)
    return {"pid": os.getpid()}


def chatty(n: int) -> dict[str, object]:
    """Tells ``n`` pieces of news while it works, the last a big one, then answers."""
    for i in range(n - 1):
        childwork.tell(("step", i))
    childwork.tell(("blob", b"x" * 3_000_000))
    return {"told": n}


def die() -> dict[str, object]:
    os._exit(3)


def broken() -> dict[str, object]:
    raise ValueError("a bug in the work")


def echo(offset: int, ids: list[str], codes: array, flags: bytearray, none: array) -> dict[str, object]:
    """Array columns as the child got them, and one made there."""
    return {
        "ids": ids,
        "kinds": (type(codes).__name__, codes.typecode, type(flags).__name__, none.typecode, len(none)),
        "codes": array("q", (c + offset for c in codes)),
        "flags": bytes(flags),
    }


@pytest.fixture
def worker():
    made = ChildWorker("test")
    yield made
    made.close()


def test_columns_come_back_whole_from_another_process(worker):
    got = worker.call(HERE, "columns", childwork.SLICE * 2 + 5)
    assert got["ids"] == [f"id-{i}" for i in range(childwork.SLICE * 2 + 5)]
    assert got["blob"] == bytes(range(256)) * 3 and got["empty"] == []
    assert got["pid"] != os.getpid() and got["pid"] == worker.pid
    assert worker.call(HERE, "columns", 1)["pid"] == got["pid"]  # the same child serves the next call


def test_news_told_while_the_child_works_arrive_in_order_before_the_answer(worker):
    heard: list[object] = []
    got = worker.call(HERE, "chatty", 4, on_news=heard.append)
    assert heard[:3] == [("step", 0), ("step", 1), ("step", 2)] and heard[3] == ("blob", b"x" * 3_000_000)
    assert got == {"told": 4}
    assert worker.call(HERE, "chatty", 2) == {"told": 2}  # no one listening: the news is dropped
    assert chatty(2) == {"told": 2}  # in-process, telling does nothing


def test_a_child_killed_while_working_is_started_again_once(worker):
    first = worker.call(HERE, "slow", 0.0)["pid"]
    answer: dict[str, object] = {}
    thread = threading.Thread(target=lambda: answer.update(worker.call(HERE, "slow", 1.5)))
    thread.start()
    time.sleep(0.5)
    os.kill(first, signal.SIGKILL)
    thread.join(60)
    assert answer["pid"] not in (None, first)


def test_a_child_that_dies_twice_fails_and_a_bug_is_raised_with_its_traceback(worker):
    with pytest.raises(ChildFailed, match="exit status 3"):
        worker.call(HERE, "die")
    with pytest.raises(RuntimeError, match="a bug in the work"):
        worker.call(HERE, "broken")


def test_a_hung_child_is_killed():
    hung = ChildWorker("hung", hang_timeout=4.0)  # a fresh child is silent while it imports
    try:
        pid = hung.call(HERE, "slow", 0.0)["pid"]
        assert isinstance(pid, int)
        timer = threading.Timer(0.5, os.kill, (pid, signal.SIGSTOP))  # alive, answering nothing
        timer.start()
        began = time.monotonic()
        with pytest.raises(ChildFailed, match="stopped answering"):
            hung.call(HERE, "slow", 30.0)
        assert time.monotonic() - began < 20
        timer.join()
    finally:
        hung.close()
    with pytest.raises(ChildFailed, match="ended"):
        hung.call(HERE, "slow", 0.0)


def test_children_are_used_only_when_the_process_says_so(monkeypatch):
    monkeypatch.setattr(childwork, "_enabled", False)
    assert not childwork.children_used()
    childwork.use_children(True)
    assert childwork.children_used()


def test_a_call_stopped_half_way_leaves_nothing_for_the_next(worker, monkeypatch):
    first = worker.call(HERE, "columns", 1)["pid"]
    parts = []

    def checkpoint() -> None:
        parts.append(1)
        if len(parts) == 2:
            raise RuntimeError("obsolete")  # as pace.Cancelled at a checkpoint

    monkeypatch.setattr(childwork.pace, "checkpoint", checkpoint)
    with pytest.raises(RuntimeError, match="obsolete"):
        worker.call(HERE, "columns", childwork.SLICE * 5)  # stopped while its answer comes back
    monkeypatch.undo()
    got = worker.call(HERE, "columns", 3)  # the rest of that answer is read and dropped first
    assert got["ids"] == ["id-0", "id-1", "id-2"] and got["pid"] == first  # by the same child


def test_a_call_stopped_while_its_work_is_sent_ends_its_child(worker, monkeypatch):
    first = worker.call(HERE, "columns", 1)["pid"]

    def checkpoint() -> None:
        raise RuntimeError("obsolete")

    monkeypatch.setattr(childwork.pace, "checkpoint", checkpoint)
    with pytest.raises(RuntimeError, match="obsolete"):
        worker.call("keepgui.core.search", "index_columns", lists={"texts": [("a b",)] * (childwork.SLICE * 3)})
    monkeypatch.undo()
    got = worker.call(HERE, "columns", 2)  # the child waiting for the rest of its work was killed
    assert got["ids"] == ["id-0", "id-1"] and got["pid"] != first


def test_a_warmed_child_is_started_before_the_first_call_and_serves_it():
    warm = ChildWorker("warm", preload=("keepgui.core.rowtable",))
    try:
        warm.warm()
        pid = warm.pid
        assert pid is not None
        assert warm.call(HERE, "columns", 1)["pid"] == pid
        warm.warm()  # running already: nothing
        assert warm.pid == pid
    finally:
        warm.close()


def test_array_columns_go_to_the_child_in_blocks_and_come_back_as_they_were(worker):
    n = childwork.BLOCK // 8 * 2 + 7  # three blocks of bytes, the last part-full
    codes = array("q", range(-5, n - 5))
    flags = bytearray(i % 3 == 0 for i in range(childwork.BLOCK + 1))
    got = worker.call(
        HERE, "echo", 10, lists={"ids": ["a", "b"]}, arrays={"codes": codes, "flags": flags, "none": array("d")}
    )
    assert got["kinds"] == ("array", "q", "bytearray", "d", 0)
    assert got["codes"] == array("q", range(5, n + 5)) and got["flags"] == bytes(flags)
    assert got["ids"] == ["a", "b"]


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    """Whether the process is gone (reaped) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return gone(pid)


def test_a_call_whose_stop_condition_comes_true_is_stopped_its_child_killed(worker):
    with pytest.raises(ChildCancelled):  # not wanted from the start: no child is started for it
        worker.call(HERE, "slow", 0.0, stop_when=lambda: True)
    assert worker.pid is None
    first = worker.call(HERE, "slow", 0.0)["pid"]
    assert isinstance(first, int)
    asked = threading.Event()
    threading.Timer(0.5, asked.set).start()
    began = time.monotonic()
    with pytest.raises(ChildCancelled) as stopped:  # the child is busy for 30 s: killed half way
        worker.call(HERE, "slow", 30.0, stop_when=asked.is_set)
    assert time.monotonic() - began < 3 and wait_gone(first)
    assert not isinstance(stopped.value, ChildFailed)  # not a failure: nothing to do in-process instead
    again = worker.call(HERE, "columns", 2)  # the worker serves the next call, in a new child
    assert again["ids"] == ["id-0", "id-1"] and again["pid"] not in (first, os.getpid())


def test_cancel_stops_a_call_under_way_from_another_thread(worker):
    first = worker.call(HERE, "slow", 0.0)["pid"]
    assert isinstance(first, int)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            worker.call(HERE, "slow", 30.0)
        except BaseException as error:  # noqa: BLE001 - what the thread ended with is the test's
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.5)
    assert thread.is_alive()
    began = time.monotonic()
    worker.cancel()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - began < 3
    assert len(outcome) == 1 and isinstance(outcome[0], ChildCancelled)
    assert wait_gone(first)
    assert worker.call(HERE, "slow", 0.0)["pid"] not in (first, os.getpid())
