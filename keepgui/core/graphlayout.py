"""Where each node of the memory graph is drawn: the rows read into compact columns, laid out with
numpy and networkx (no Qt), returned as arrays.

Two layouts, both deterministic (seeded):

* **every node** (:data:`FULL_LIMIT` nodes at most): networkx's force-directed
  ``spring_layout`` on the graph itself, rows and hubs alike;
* **grouped**, for more: rows that name the same hubs are interchangeable in
  the picture, so each such *group* becomes one node of the force-directed
  layout, with the hubs (the :data:`MAX_HUBS` most named; the others are
  counted, and shown when a filter picks them); then discs are pushed apart
  until they do not overlap, and each group's rows are placed on a sunflower
  spiral in its disc, pinned and newest in the middle. A 100,000-row bank lays
  out a few hundred nodes, not 100,000; a group's rows are stored side by side,
  so the rows in view are found group by group.

:func:`columns_of` reads what the layout needs of each row into compact columns
(a distinct entity or tag tuple is stored once, rows hold its number);
:func:`lay_out` does the work and returns a :class:`Layout` of arrays, cheap to
send between processes (:mod:`keepgui.core.graphworker` runs it in a child
process); :mod:`keepgui.core.graph` makes the graph the view draws of it.
"""

from __future__ import annotations

import math
import os
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import count, repeat
from operator import attrgetter, is_not
from typing import Any

from keepgui.core.pace import age_young_objects

NO_ENTITIES = "(no entities)"
"""The hub of rows that name nothing."""
OTHER_ENTITIES = "(other entities)"
"""The hub of rows whose names are all among the hubs not drawn."""
FULL_LIMIT = 450
"""Up to this many nodes every row is a node of the force-directed layout (networkx's dense solver
is used below 500 nodes and needs nothing more than numpy)."""
MAX_HUBS = 150
MAX_GROUPS = 300
SEAT = 9.0
"""Distance between neighbouring rows in a group's disc (scene units, about pixels at zoom 1)."""
GOLDEN_ANGLE = math.pi * (3 - math.sqrt(5))
CHUNK = 1_000
"""Rows per step of the work done in the GUI's process (reading the columns, sending them, making
the graph of the layout): each step is a few C loops over the rows, under a millisecond each even
when every row is a cache miss, and the interpreter lock is free between them."""
PAUSE = 0.0002
"""Seconds a build for a window sleeps after each step: a thread waiting for the interpreter lock
(the GUI thread, whose every call from Qt into Python needs it) gets it at once, instead of after
the interpreter's switch interval (5 ms, paid again at each of a frame's many calls)."""


def hub_radius(count: int) -> float:
    """A hub's radius from how many rows name it (the console's ``min(22, 6 + 2.4·√count)``, grown
    slowly past it for hubs of thousands)."""
    r = 6 + 2.4 * math.sqrt(count)
    return r if r <= 22 else 22 + 4 * math.log10(r / 22 * 10)


@dataclass(frozen=True)
class GraphOptions:
    """What the graph shows: retired rows (faded), one tag, hubs whose name holds ``focus``, or
    the neighbourhood of ``around`` (the rows that share a hub with them)."""

    show_retired: bool = False
    tag: str | None = None
    focus: str = ""
    around: frozenset[str] | None = None


# ---------------------------------------------------------------------- the layout's input and output


@dataclass
class Columns:
    """What the layout reads of each row, one compact column per attribute.

    Each distinct entity tuple is stored once, in ``entity_sets``, in the order of the rows where
    it first appears; ``entity_code[i]`` is the index of that first row for row ``i``'s tuple (so
    the codes ascend as the tuples do). Likewise ``tag_code``/``tag_sets``. ``pinned``/``retired``
    are flags; ``updated`` its ``updated_at`` (0 when it has none)."""

    ids: list[str]
    entity_sets: list[tuple[str, ...]]
    entity_code: array[int]
    tag_sets: list[tuple[str, ...]]
    tag_code: array[int]
    pinned: bytearray
    retired: bytearray
    updated: array[int]

    def __len__(self) -> int:
        return len(self.ids)


def columns_of(rows: Sequence[Any], pause: float = 0.0) -> Columns:
    """The columns of ``rows``, read :data:`CHUNK` rows at a time (each step a few C loops of a
    millisecond or less, allocating no object the garbage collector tracks but a list per column,
    so no collection is set off), sleeping ``pause`` seconds between steps."""
    columns = Columns([], [], array("q"), [], array("q"), bytearray(), bytearray(), array("q"))
    age_young_objects()  # the lists grow to a row each: no young collection looks at them
    entity_index: dict[tuple[str, ...], int] = {}
    tag_index: dict[tuple[str, ...], int] = {}
    get_id, get_entities, get_tags = attrgetter("id"), attrgetter("entities"), attrgetter("tags")
    get_pinned, get_invalid, get_updated = attrgetter("pinned"), attrgetter("invalid_at"), attrgetter("updated_at")
    for a in range(0, len(rows), CHUNK):
        part = rows[a : a + CHUNK]
        columns.ids.extend(map(get_id, part))
        # A tuple's code is the index of the first row that has it (one hash per row, in C); the
        # layout numbers them densely.
        columns.entity_code.extend(map(entity_index.setdefault, map(get_entities, part), count(a)))
        columns.tag_code.extend(map(tag_index.setdefault, map(get_tags, part), count(a)))
        columns.pinned.extend(map(bool, map(get_pinned, part)))
        columns.retired.extend(map(is_not, map(get_invalid, part), repeat(None)))
        updated = list(map(get_updated, part))
        columns.updated.extend([u or 0 for u in updated] if None in updated else updated)
        breathe(pause)
    columns.entity_sets = list(entity_index)
    columns.tag_sets = list(tag_index)
    return columns


@dataclass
class Layout:
    """What :func:`lay_out` found, as arrays (cheap to send between processes).

    The graph's rows are the input rows ``shown`` (a flag per input row) in their input order:
    graph row ``i`` is drawn at ``xs[i], ys[i]``, linked to the hubs ``link_sets[link_code[i]]``,
    in group ``group_of[i]`` (-1 in the every-node layout). ``by_group`` lists the graph's rows
    group after group; ``groups`` are ``(hub indexes, x, y, size, start in by_group)``, ``hubs``
    ``(name, x, y, count, row key)``. ``pid`` is the process that laid it out."""

    mode: str
    hubs: list[tuple[str, float, float, int, str | None]]
    groups: list[tuple[tuple[int, ...], float, float, int, int]]
    shown: Any
    by_group: Any
    xs: Any
    ys: Any
    link_code: Any
    link_sets: list[tuple[int, ...]]
    group_of: Any
    pinned: Any
    retired: Any
    tags: list[tuple[str, int]]
    hidden_hubs: int
    total_rows: int
    pid: int


def hub_names(entities: Sequence[str], row_names: Mapping[str, str], key: str | None = None) -> tuple[str, ...]:
    """The hubs a row with these entities names, in order and without repeats (not the row ``key``
    itself, when one of its names is its own)."""
    names = tuple(dict.fromkeys(e for e in entities if e and (key is None or row_names.get(e) != key)))
    return names or (NO_ENTITIES,)


def breathe(pause: float) -> None:
    """Sleep ``pause`` seconds between two steps of work done in a window's process (none for 0)."""
    if pause:
        time.sleep(pause)


class _Interned:
    """Distinct tuples, numbered in the order first seen."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, ...]] = []
        self._index: dict[tuple[Any, ...], int] = {}

    def code(self, item: tuple[Any, ...]) -> int:
        found = self._index.get(item)
        if found is None:
            found = self._index[item] = len(self.items)
            self.items.append(item)
        return found


def lay_out(columns: Columns, row_names: Mapping[str, str], options: GraphOptions) -> Layout:
    """Lay out the graph of rows given as :class:`Columns` (what :class:`LayoutWorker`'s process
    runs; in this process for small graphs)."""
    import numpy as np

    n = len(columns)
    ids = columns.ids
    # The codes number tuples by the row where each first appears: numbered densely here (the
    # tuples' order, the rows' order of first appearance, is kept).
    entity_code = np.unique(np.frombuffer(columns.entity_code, np.int64), return_inverse=True)[1].reshape(-1)
    tag_code = np.unique(np.frombuffer(columns.tag_code, np.int64), return_inverse=True)[1].reshape(-1)
    pinned = np.frombuffer(columns.pinned, np.uint8).astype(bool)
    retired = np.frombuffer(columns.retired, np.uint8).astype(bool)
    updated = np.frombuffer(columns.updated, np.int64)

    # Tags of the rows the history setting shows, and how many carry each.
    counted = np.ones(n, bool) if options.show_retired else ~retired
    tag_counts: dict[str, int] = {}
    for code, many in enumerate(np.bincount(tag_code[counted], minlength=len(columns.tag_sets)).tolist()):
        if many:
            for tag in columns.tag_sets[code]:
                tag_counts[tag] = tag_counts.get(tag, 0) + many
    tags = sorted(tag_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = counted.copy()
    if options.tag is not None:
        has_tag = np.array([options.tag in s for s in columns.tag_sets], bool)
        shown &= has_tag[tag_code]

    # The names each row links to: per distinct entity tuple, unless a name is a row's own.
    names = _Interned()
    own = [any(e in row_names for e in s) for s in columns.entity_sets]
    by_set = np.array([names.code(hub_names(s, row_names)) for s in columns.entity_sets] or [0], np.int64)
    name_code = by_set[entity_code]
    if any(own):
        for i in np.flatnonzero(np.array(own, bool)[entity_code] & shown).tolist():
            name_code[i] = names.code(hub_names(columns.entity_sets[entity_code[i]], row_names, ids[i]))
    name_sets = names.items

    if options.around is not None:
        around = options.around
        near: set[str] = set()
        chosen = np.zeros(n, bool)
        for i in np.flatnonzero(shown).tolist():
            if ids[i] in around:
                chosen[i] = True
                near.update(name_sets[name_code[i]])
        near.discard(NO_ENTITIES)
        touches = np.array([bool(near.intersection(s)) for s in name_sets] or [False], bool)
        shown &= chosen | touches[name_code]
    if options.focus:
        needle = options.focus.casefold()
        holds = np.array([any(needle in name.casefold() for name in s) for s in name_sets] or [False], bool)
        shown &= holds[name_code]

    shown_rows = np.flatnonzero(shown)
    count: dict[str, int] = {}
    for code, many in enumerate(np.bincount(name_code[shown_rows], minlength=len(name_sets)).tolist()):
        if many:
            for name in name_sets[code]:
                count[name] = count.get(name, 0) + many
    base = {"tags": tags, "total_rows": len(shown_rows), "pid": os.getpid()}
    found = _Shown(columns, row_names, shown_rows, name_code, name_sets, count, pinned, retired, updated, base)
    return _lay_out_every_node(found) if len(shown_rows) + len(count) <= FULL_LIMIT else _lay_out_groups(found)


def _spring(nodes: list[Any], edges: list[tuple[Any, Any, float]], unit: float) -> dict[Any, tuple[float, float]]:
    """networkx's force-directed layout, seeded (the same picture for the same graph, in any process), of each
    connected part on its own, the parts then packed in rows (a spring layout of the whole would
    push unconnected parts to the far corners). ``unit`` is the space one node needs."""
    import networkx as nx

    g: nx.Graph[Any] = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_weighted_edges_from(edges)
    parts = sorted((sorted(c, key=str) for c in nx.connected_components(g)), key=lambda c: (-len(c), str(c[0])))
    laid: list[tuple[float, dict[Any, tuple[float, float]]]] = []
    for part in parts:
        size = unit * (math.sqrt(len(part)) + 1)
        if len(part) == 1:
            pos = {part[0]: (0.0, 0.0)}
        else:
            # A part of its own with its nodes in a fixed order: a subgraph view lists a small part's
            # nodes in set order, which follows string hashing, different in every process.
            sub: Any = nx.Graph()
            sub.add_nodes_from(part)
            sub.add_edges_from(g.subgraph(part).edges(data=True))
            raw = nx.spring_layout(sub, seed=7, iterations=80, scale=size * 0.7)  # a margin
            pos = {n: (float(p[0]), float(p[1])) for n, p in raw.items()}
        laid.append((size, pos))
    # Rows of parts, as wide as all of them would be square.
    width = math.sqrt(sum((2 * size) ** 2 for size, _ in laid)) * 1.2
    out: dict[Any, tuple[float, float]] = {}
    x = y = row_height = 0.0
    for size, pos in laid:
        if x > 0 and x + 2 * size > width:
            x, y, row_height = 0.0, y + row_height, 0.0
        for node, (px, py) in pos.items():
            out[node] = (x + size + px, y + size + py)
        x += 2 * size
        row_height = max(row_height, 2 * size)
    return out


@dataclass
class _Shown:
    """What :func:`lay_out` found before laying out: the rows shown (input indexes), the names
    each links to (``name_sets[name_code[i]]``), how many rows name each, and the flags."""

    columns: Columns
    row_names: Mapping[str, str]
    rows: Any
    name_code: Any
    name_sets: list[tuple[str, ...]]
    count: dict[str, int]
    pinned: Any
    retired: Any
    updated: Any
    base: dict[str, Any]


def _lay_out_every_node(found: _Shown) -> Layout:
    import numpy as np

    columns, row_names, shown_rows, name_code = found.columns, found.row_names, found.rows, found.name_code
    name_sets, count, pinned, retired, base = found.name_sets, found.count, found.pinned, found.retired, found.base
    ids = columns.ids
    order = shown_rows.tolist()
    hub_list = sorted(count, key=lambda n: (-count[n], n))
    hub_index = {n: i for i, n in enumerate(hub_list)}
    nodes: list[Any] = [("h", n) for n in hub_list] + [("r", ids[i]) for i in order]
    edges = [(("r", ids[i]), ("h", n), 1.0) for i in order for n in name_sets[name_code[i]]]
    pos = _spring(nodes, edges, unit=60.0) if nodes else {}
    links = _Interned()
    link_code = [links.code(tuple(sorted(hub_index[n] for n in name_sets[name_code[i]]))) for i in order]
    return Layout(
        mode="full",
        hubs=[(n, *pos[("h", n)], count[n], row_names.get(n)) for n in hub_list],
        groups=[],
        shown=_flags(len(ids), shown_rows),
        by_group=np.zeros(0, np.int64),
        xs=np.array([pos[("r", ids[i])][0] for i in order], np.float64),
        ys=np.array([pos[("r", ids[i])][1] for i in order], np.float64),
        link_code=np.array(link_code, np.int64),
        link_sets=links.items,
        group_of=np.full(len(order), -1, np.int64),
        pinned=pinned[shown_rows].astype(np.uint8),
        retired=retired[shown_rows].astype(np.uint8),
        hidden_hubs=0,
        **base,
    )


def _lay_out_groups(found: _Shown) -> Layout:
    import numpy as np

    columns, row_names, shown_rows, name_code = found.columns, found.row_names, found.rows, found.name_code
    name_sets, count, pinned, retired, base = found.name_sets, found.count, found.pinned, found.retired, found.base
    updated = found.updated

    ranked = sorted(count, key=lambda n: (-count[n], n))
    kept = ranked[:MAX_HUBS]
    kept_set = set(kept)
    # A row's signature: the hubs drawn among its names (or "other" when none is drawn).
    signatures = _Interned()
    sig_of_names = np.array(
        [signatures.code(tuple(n for n in s if n in kept_set) or (OTHER_ENTITIES,)) for s in name_sets] or [0],
        np.int64,
    )
    row_sig = sig_of_names[name_code[shown_rows]]
    sigs = signatures.items
    sizes = np.bincount(row_sig, minlength=len(sigs)).tolist()
    # The most common combinations are groups of their own; a rare one joins the group of its
    # first hub (its other edges are still drawn).
    common = set(sorted((s for s in range(len(sigs)) if sizes[s]), key=lambda s: (-sizes[s], sigs[s]))[:MAX_GROUPS])
    group_names = _Interned()
    group_of_sig = np.array(
        [group_names.code(sigs[s] if s in common else sigs[s][:1]) for s in range(len(sigs))] or [0], np.int64
    )
    row_group = group_of_sig[row_sig]
    members = np.bincount(row_group, minlength=len(group_names.items)).tolist()
    present = [g for g in range(len(group_names.items)) if members[g]]
    order_of_groups = sorted(present, key=lambda g: (-members[g], group_names.items[g]))
    others = sizes[signatures.code((OTHER_ENTITIES,))] if (OTHER_ENTITIES,) in signatures._index else 0
    hub_list = list(kept) + ([OTHER_ENTITIES] if others else [])
    hub_index = {n: i for i, n in enumerate(hub_list)}
    group_sigs = [group_names.items[g] for g in order_of_groups]
    nodes: list[Any] = [("h", n) for n in hub_list] + [("g", s) for s in group_sigs]
    edges = [(("g", s), ("h", n), 1.0) for s in group_sigs for n in s]
    pos = _spring(nodes, edges, unit=1.0)
    single = {group_names.items[g][0]: members[g] for g in present if len(group_names.items[g]) == 1}
    radii = [hub_radius(count.get(n, single.get(n, 0))) + 30 for n in hub_list]
    radii += [SEAT * math.sqrt(members[g]) + SEAT * 2 for g in order_of_groups]
    placed = _spread([pos[n] for n in nodes], radii)
    hubs = [
        (n, *placed[i], count.get(n, others if n == OTHER_ENTITIES else 0), row_names.get(n))
        for i, n in enumerate(hub_list)
    ]
    # Rows in group order; in a group pinned first, then newest, then by key; seated on a spiral.
    rank_of_group = np.zeros(len(group_names.items), np.int64)
    rank_of_group[order_of_groups] = np.arange(len(order_of_groups))
    row_rank = rank_of_group[row_group]
    ids = np.array([columns.ids[i] for i in shown_rows.tolist()]) if len(shown_rows) else np.zeros(0, str)
    by = np.lexsort((ids, -updated[shown_rows], ~pinned[shown_rows], row_rank))
    del ids
    rank_sorted = row_rank[by]
    starts = np.searchsorted(rank_sorted, np.arange(len(order_of_groups)))
    seat = np.arange(len(by)) - starts[rank_sorted]
    radius = SEAT * np.sqrt(seat + 0.5)
    angle = seat * GOLDEN_ANGLE
    centre = np.array([placed[len(hub_list) + g] for g in range(len(order_of_groups))], np.float64).reshape(-1, 2)
    xs = np.empty(len(by), np.float64)
    ys = np.empty(len(by), np.float64)
    xs[by] = centre[rank_sorted, 0] + radius * np.cos(angle)
    ys[by] = centre[rank_sorted, 1] + radius * np.sin(angle)
    links = _Interned()
    link_of_sig = np.array(
        [links.code(tuple(sorted(hub_index[n] for n in sigs[s]))) if sizes[s] else -1 for s in range(len(sigs))]
        or [0],  # a signature no row shown has is never looked up
        np.int64,
    )
    groups = [
        (tuple(hub_index[n] for n in group_sigs[k]), *placed[len(hub_list) + k], members[g], int(starts[k]))
        for k, g in enumerate(order_of_groups)
    ]
    return Layout(
        mode="grouped",
        hubs=hubs,
        groups=groups,
        shown=_flags(len(columns), shown_rows),
        by_group=by,
        xs=xs,
        ys=ys,
        link_code=link_of_sig[row_sig],
        link_sets=links.items,
        group_of=row_rank,
        pinned=pinned[shown_rows].astype(np.uint8),
        retired=retired[shown_rows].astype(np.uint8),
        hidden_hubs=max(0, len(ranked) - MAX_HUBS),
        **base,
    )


def _flags(n: int, rows: Any) -> Any:
    import numpy as np

    flags = np.zeros(n, np.uint8)
    flags[rows] = 1
    return flags


def _spread(points: list[tuple[float, float]], radii: list[float]) -> list[tuple[float, float]]:
    """Scale a layout of unit size to its discs' sizes, then push overlapping discs apart."""
    import numpy as np

    pos = np.array(points, dtype=float).reshape(-1, 2)
    r = np.array(radii, dtype=float)
    if len(pos) <= 1:
        return [(float(p[0]), float(p[1])) for p in pos]
    # Scale so that the discs, packed, would cover about a third of the picture.
    span = np.ptp(pos, axis=0).max() or 1.0
    pos *= math.sqrt(float((r**2).sum()) * math.pi * 3) / span
    for _ in range(60):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.sqrt((delta**2).sum(-1)) + np.eye(len(pos))
        need = r[:, None] + r[None, :]
        overlap = np.clip(need - dist, 0, None)
        np.fill_diagonal(overlap, 0)
        if overlap.max() < 0.5:
            break
        push = (delta / dist[..., None]) * (overlap / 2)[..., None]
        pos += push.sum(axis=1)
    return [(float(x), float(y)) for x, y in pos]
