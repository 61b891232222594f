"""Several processes appending to one memories.jsonl at once: nothing lost, nothing interleaved.

Two keepgui processes save thousands of memories (single saves and batches,
each computed under the log's lock) while a third appends the worker's way
(plain ``open("ab")``, one ``write(json + "\\n")``, ``fsync``, no lock). The
stress run (``python -m tests.stress``) does the same with 20,000 each.
"""

from __future__ import annotations

from tests.reliability import concurrent_writers


def test_two_keepgui_writers_and_a_worker_lose_nothing(tmp_path):
    r = concurrent_writers(str(tmp_path), keepgui_procs=2, records_each=1500, worker_style_records=1500, seed=1)
    assert r["written"] == 2 * 1500 + 1500 + 1  # + the memory both keepgui writers reinforce
    assert r["read_back"] == r["written"] and r["lost"] == 0
    assert r["bad_lines"] == 0 and r["interleaved"] == 0, r["examples"]
    assert r["lines"] == r["expected_lines"]  # no line missing, none extra
    assert r["order_errors"] == 0  # each process's records appear in the order it wrote them
    assert r["lost_reinforcements"] == 0 and r["repeated_revisions"] == 0
    assert r["writer_switches"] > 20, "the writers did not really overlap; the test proved nothing"


def test_contended_reinforcements_are_computed_under_the_lock(tmp_path):
    """Every record also reinforces one shared memory: read-modify-write under heavy contention.

    A reinforcement computed from a stale copy would repeat a revision or
    lose a corroboration; both are counted.
    """
    r = concurrent_writers(
        str(tmp_path), keepgui_procs=3, records_each=250, worker_style_records=0, seed=2, max_batch=3, shared_every=1
    )
    assert r["lost"] == 0 and r["bad_lines"] == 0 and r["interleaved"] == 0
    assert r["lost_reinforcements"] == 0 and r["repeated_revisions"] == 0
    assert r["lines"] == r["expected_lines"]


def test_a_worker_line_in_flight_is_waited_for_and_kept(tmp_path):
    """keepgui sees the worker's line before its last page landed: it waits for the line to be
    completed before it reads the state, and its own append (which begins with "\\n") follows it.

    The worker's write is played slowly on purpose (half the line, a pause, the rest): the
    pause is the scenario, not a wait for a condition.
    """
    import threading
    import time

    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.store import DataDir
    from tests.reliability.hostile import record_line

    bank, _ = DataDir(tmp_path / "memory").ensure_bank("main")
    bank.save("already there", now=1)
    worker = record_line("written by the worker, slowly")
    half_written = threading.Event()

    def slow_worker():
        with open(bank.log_path, "ab", buffering=0) as fh:
            fh.write(worker[:20])
            half_written.set()
            time.sleep(0.01)
            fh.write(worker[20:])

    thread = threading.Thread(target=slow_worker)
    thread.start()
    half_written.wait()
    new = bank.save("saved by keepgui meanwhile", now=2).record
    thread.join()
    with open(bank.log_path, "rb") as fh:
        data = fh.read()
    assert data.endswith(worker + b"\n" + new.to_line())
    log = MemoryLog(bank.log_path)
    log.refresh()
    assert len(log.records) == 3 and log.problems == []


def test_appends_racing_the_workers_two_write_append_glue_nothing(tmp_path):
    """The Rust worker appends ``write(json)``, a pause, ``write("\\n")`` with no lock (spec §1.6a).

    keepgui's saves and pins race it from another process. Every record of both writers must
    be read back on a line of its own: an append that checked for a newline and then wrote
    glued itself onto the worker's line in flight (both records lost, success reported).
    ``make stress`` runs it long, and also through ``keepgui save`` / ``keepgui pin`` commands.
    """
    from tests.reliability import racing_appends

    r = racing_appends(str(tmp_path), saves=300, pins=300, worker_records=1500, seed=3)
    assert r["written"] == 300 + 300 + 1500 and r["failed"] == 0
    assert r["glued"] == 0 and r["bad_lines"] == 0, r["examples"]
    assert r["lost"] == 0 and r["read_back"] == r["written"], r["examples"]
    assert r["replay_ok"]
    assert r["worker_gaps"] > 0, "no keepgui append landed inside a worker append: the race was not exercised"
