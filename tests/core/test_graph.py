"""The memory graph without a window: the columns a layout reads, the layout process, the same picture
in any process, finding rows and edges in a rectangle, and live updates on a laid-out graph."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import msgspec
import pytest

from keepgui.core.graph import (
    NO_ENTITIES,
    GraphOptions,
    LayoutCancelled,
    LayoutWorker,
    build_graph,
    child_layout_unavailable,
    columns_of,
    lay_out,
)
from keepgui.core.source import FileRow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ["mike", "ana", "api", "blog", "deploy", "grafana", "lisbon", "docs", "rust", "sam"]


def rows_named(n: int, seed: int = 5, names: list[str] = NAMES) -> list[FileRow]:
    """``n`` rows naming 0 to 3 of ``names`` (repeats and empty names included), some pinned,
    some retired, with tags."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        entities = tuple(rng.choice(names) for _ in range(rng.choice([0, 1, 1, 2, 3])))
        if i % 41 == 0:
            entities += ("", entities[0] if entities else "mike")
        out.append(
            FileRow(
                id=f"row{i:06d}",
                text=f"memory {i}",
                entities=entities,
                tags=tuple(rng.sample(["people", "infra", "style"], rng.choice([0, 1, 2]))),
                pinned=i % 17 == 0,
                invalid_at=1_700_000_000_000 if i % 23 == 0 else None,
                updated_at=1_700_000_000_000 + rng.randrange(10**9),
            )
        )
    return out


def picture(graph) -> dict:
    """Everything drawn, by key (independent of the order rows are stored in)."""
    hubs = [h.name for h in graph.hubs]
    return {
        "rows": {
            k: (round(graph.xs[i], 6), round(graph.ys[i], 6), sorted(hubs[h] for h in graph.links[i]), graph.pinned[i])
            for i, k in enumerate(graph.keys)
        },
        "hubs": [(h.name, round(h.x, 6), round(h.y, 6), h.count) for h in graph.hubs],
        "groups": [(g.hubs, round(g.x, 6), round(g.y, 6), g.size) for g in graph.groups],
    }


@pytest.fixture(scope="module")
def worker():
    worker = LayoutWorker()
    yield worker
    worker.stop()


def test_columns_store_each_distinct_entity_and_tag_tuple_once():
    rows = rows_named(3_000)
    columns = columns_of(rows)
    assert columns.ids == [r.id for r in rows]
    assert len(set(columns.entity_sets)) == len(columns.entity_sets) == len({r.entities for r in rows})
    # A code is the index of the first row with that tuple, and names the row's own tuple.
    first = {}
    for i, r in enumerate(rows):
        first.setdefault(r.entities, i)
        assert columns.entity_code[i] == first[r.entities]
    assert [rows[c].entities for c in sorted(set(columns.entity_code))] == columns.entity_sets
    assert list(columns.retired) == [r.invalid_at is not None for r in rows]
    assert list(columns.updated) == [r.updated_at for r in rows]


def test_a_big_graph_is_laid_out_in_another_process_and_comes_out_the_same(worker):
    rows = rows_named(6_000)
    options = GraphOptions(show_retired=True, tag="infra")
    here = build_graph(rows, {}, options)
    there = build_graph(rows, {}, options, worker)
    assert there.laid_out_by == worker.pid != os.getpid() == here.laid_out_by
    assert there.mode == here.mode == "grouped"
    assert picture(there) == picture(here)
    assert set(there.keys) == {r.id for r in rows if "infra" in r.tags}
    assert there.rows == [r for r in rows if "infra" in r.tags]  # in the bank's order


def test_the_layout_process_comes_back_after_it_was_killed(worker):
    rows = rows_named(600)
    first = build_graph(rows, {}, GraphOptions(), worker)
    os.kill(first.laid_out_by, signal.SIGKILL)
    again = build_graph(rows, {}, GraphOptions(), worker)
    assert again.laid_out_by not in (first.laid_out_by, os.getpid())
    assert picture(again) == picture(first)


def test_a_bug_in_the_layout_process_comes_back_with_its_traceback(worker):
    columns = columns_of(rows_named(100))
    del columns.entity_code[50:]  # columns that do not agree: the layout fails there
    with pytest.raises(RuntimeError, match="failed in its process") as failure:
        worker.lay_out(columns, {}, GraphOptions())
    assert "Traceback" in str(failure.value)
    assert build_graph(rows_named(100), {}, GraphOptions(), worker).keys  # and it still works


def gone(pid: int) -> bool:
    """Whether a process no longer exists (reaped, not a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_hung_layout_process_is_killed_and_the_graph_laid_out_here(worker):
    hung = LayoutWorker(hang_timeout=4.0)  # a fresh process is silent while it imports: seconds on a busy machine
    rows = rows_named(600)
    first = build_graph(rows, {}, GraphOptions(), hung)
    assert first.laid_out_by == hung.pid and not first.note
    os.kill(first.laid_out_by, signal.SIGSTOP)  # alive, answering nothing
    try:
        start = time.monotonic()
        graph = build_graph(rows, {}, GraphOptions(), hung)
        waited = time.monotonic() - start
    finally:
        if not gone(first.laid_out_by):
            os.kill(first.laid_out_by, signal.SIGKILL)
    assert waited < 12  # the hang timeout and a little, never forever
    assert graph.laid_out_by == os.getpid() and "stopped answering" in graph.note
    assert picture(graph) == picture(first)
    assert gone(first.laid_out_by)  # killed and reaped
    again = build_graph(rows, {}, GraphOptions(), hung)  # a fresh process next time
    assert again.laid_out_by not in (first.laid_out_by, os.getpid()) and not again.note
    hung.stop()


class DyingWorker(LayoutWorker):
    """A layout process that exits as soon as it starts."""

    def child_code(self) -> str:
        return "import os; os._exit(3)"


def test_a_layout_process_that_dies_at_once_leaves_the_graph_laid_out_here_with_a_note():
    rows = rows_named(600)
    graph = build_graph(rows, {}, GraphOptions(), DyingWorker())
    assert graph.laid_out_by == os.getpid()
    assert graph.note == "laid out in this process: the graph's layout process stopped (exit status 3)"
    assert picture(graph) == picture(build_graph(rows))


def test_cancel_stops_a_layout_under_way_at_once_and_ends_the_process():
    stuck = LayoutWorker(hang_timeout=60)
    build_graph(rows_named(50), {}, GraphOptions(), stuck)
    pid = stuck.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    outcome: list[BaseException] = []

    def build() -> None:
        try:
            stuck.lay_out(columns_of(rows_named(600)), {}, GraphOptions())
        except BaseException as error:  # noqa: BLE001 - what the thread ended with is the test's
            outcome.append(error)

    thread = threading.Thread(target=build)
    thread.start()
    time.sleep(0.3)
    assert thread.is_alive()  # waiting for the stopped process
    start = time.monotonic()
    stuck.cancel()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - start < 3
    assert len(outcome) == 1 and isinstance(outcome[0], LayoutCancelled)
    deadline = time.monotonic() + 3
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)
    assert build_graph(rows_named(50), {}, GraphOptions(), stuck).laid_out_by not in (pid, os.getpid())
    stuck.stop()


def test_a_layout_whose_stop_condition_comes_true_is_stopped_and_its_process_killed():
    stuck = LayoutWorker(hang_timeout=60)
    with pytest.raises(LayoutCancelled):  # stopped before it starts: no process is started for it
        stuck.lay_out(columns_of(rows_named(50)), {}, GraphOptions(), stop_when=lambda: True)
    assert stuck.pid is None
    build_graph(rows_named(50), {}, GraphOptions(), stuck)
    pid = stuck.pid
    os.kill(pid, signal.SIGSTOP)
    asked = threading.Event()
    start = time.monotonic()
    threading.Timer(0.3, asked.set).start()
    with pytest.raises(LayoutCancelled):
        build_graph(rows_named(600), {}, GraphOptions(), stuck, stop_when=asked.is_set)
    assert time.monotonic() - start < 3 and gone(pid)
    stuck.stop()


def test_a_frozen_program_starts_no_layout_process(monkeypatch):
    assert child_layout_unavailable() is None
    monkeypatch.setattr(sys, "frozen", True, raising=False)  # what PyInstaller's bootloader sets
    assert "frozen" in (child_layout_unavailable() or "")


LAYOUT_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from keepgui.core.graph import build_graph
from tests.core.test_graph import rows_named
graph = build_graph(rows_named(120, names={names!r}))
print(json.dumps([(k, round(graph.xs[i], 6), round(graph.ys[i], 6)) for i, k in enumerate(graph.keys)]))
"""


def test_the_layout_is_the_same_whatever_the_process_hashes_strings_with():
    # Several unconnected parts: networkx lists a small part's nodes in set order.
    names = [f"{a}{b}" for a in "pqrs" for b in "xyz"]
    script = LAYOUT_SCRIPT.format(root=ROOT, names=names)
    pictures = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        pictures.append(json.loads(done.stdout))
    assert pictures[0] == pictures[1] and len(pictures[0]) > 50


def brute_rows_in(graph, left, top, right, bottom) -> list[int]:
    return [
        i
        for i in range(len(graph.keys))
        if not graph.gone[i] and left <= graph.xs[i] <= right and top <= graph.ys[i] <= bottom
    ]


def test_rows_in_a_rectangle_are_found_group_by_group_even_after_live_updates():
    rows = rows_named(5_000)
    graph = build_graph(rows)
    assert graph.mode == "grouped"
    rng = random.Random(1)
    left0, top0, right0, bottom0 = graph.bounds()

    def check() -> None:
        for _ in range(40):
            x, y = rng.uniform(left0, right0), rng.uniform(top0, bottom0)
            w, h = rng.uniform(5, 800), rng.uniform(5, 800)
            assert graph.rows_in(x, y, x + w, y + h).tolist() == brute_rows_in(graph, x, y, x + w, y + h)

    check()
    # Live: a new row, a row that names other hubs now (moved to another group), a row retired.
    moved = next(r for r in rows if r.invalid_at is None and r.entities == ("mike",))
    retired = next(r for r in rows if r.invalid_at is None and r.id != moved.id)
    placed = graph.update(
        [
            FileRow(id="new", text="new", entities=("ana", "api")),
            msgspec.structs.replace(moved, entities=("docs", "rust")),
            msgspec.structs.replace(retired, invalid_at=1),
        ]
    )
    assert placed == 2 and graph.index_of(retired.id) is None
    i = graph.index_of(moved.id)
    assert {graph.hubs[h].name for h in graph.links[i]} == {"docs", "rust"}
    check()
    x, y = graph.xs[i], graph.ys[i]
    assert i in graph.rows_in(x - 1, y - 1, x + 1, y + 1).tolist()
    assert graph.row_at(x + 0.5, y, 3) == i


def test_edges_of_rows_are_every_hub_each_row_links_to():
    graph = build_graph(rows_named(2_000))
    rows = graph.rows_in(*graph.bounds())
    picked = rows[::7]
    row_of_edge, hub_of_edge = graph.edges_of(picked)
    assert sorted(zip(row_of_edge.tolist(), hub_of_edge.tolist(), strict=True)) == sorted(
        (i, h) for i in picked.tolist() for h in graph.links[i]
    )


def test_the_rows_a_hub_and_a_group_hold():
    rows = rows_named(3_000)
    graph = build_graph(rows)
    live = [r for r in rows if r.invalid_at is None]
    assert set(graph.rows_of_hub("mike")) == {r.id for r in live if "mike" in r.entities}
    assert set(graph.rows_of_hub(NO_ENTITIES)) == {r.id for r in live if not any(r.entities)}
    for g, group in enumerate(graph.groups[:20]):
        members = graph.rows_of_group(g)
        assert len(members) == group.size and sorted(graph.by_group[group.start : group.end]) == members
    assert graph.row(live[0].id) is live[0] and graph.row(rows[0].id if rows[0].invalid_at else "nope") is None


def test_an_empty_bank_and_a_small_one_lay_out_in_this_process():
    empty = lay_out(columns_of([]), {}, GraphOptions())
    assert empty.mode == "full" and len(empty.xs) == 0
    graph = build_graph(rows_named(40))
    assert graph.mode == "full" and graph.laid_out_by == os.getpid()
    assert len(graph) == sum(1 for r in rows_named(40) if r.invalid_at is None)


def test_a_graph_replaced_lets_go_of_its_rows_in_steps():
    rows = rows_named(2_500)
    graph = build_graph(rows)
    assert len(graph.keys) > 2 * 1_000 and graph.index_of(graph.keys[0]) == 0
    graph.release()
    assert graph.keys == [] and graph.rows == [] and graph.index_of(rows[0].id) is None and len(graph) == 0


def test_the_key_index_finds_every_key_in_its_shards():
    from keepgui.core.graph import KeyIndex

    index = KeyIndex()
    keys = [f"key{i}" for i in range(5_000)]
    index.add(keys[:3_000], 0)
    index.add(keys[3_000:], 3_000)
    index["late"] = 7
    assert len(index) == 5_001 and all(index.get(k) == i for i, k in enumerate(keys))
    assert index.get("late") == 7 and index.get("absent") is None
    index.release()
    assert len(index) == 0 and index.get(keys[0]) is None


def test_a_bank_s_rows_are_made_old_so_no_young_collection_walks_them():
    import gc

    from keepgui.core.pace import made_old

    rows = made_old(lambda: [[i] for i in range(10_000)])  # containers the collector tracks
    assert gc.isenabled()
    assert not any(o is rows for o in gc.get_objects(0)) and not any(o is rows for o in gc.get_objects(1))
    assert any(o is rows for o in gc.get_objects(2))
