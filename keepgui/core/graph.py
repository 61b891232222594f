"""The memory graph, built and laid out off the GUI thread (no Qt): memories, what they name, and
where each is drawn.

Nodes are the rows (memories, entries, topic files) and their *hubs*: the
names rows link to (a row's ``entities``; a name that is another row's, from
:meth:`~keepgui.core.source.Bank.row_names`, is that row). Rows that name
nothing hang on one hub, "(no entities)", as in the iii console. An edge joins
a row to each hub it names.

Two layouts, both deterministic (seeded):

* **every node** (:data:`FULL_LIMIT` nodes at most): networkx's force-directed
  ``spring_layout`` on the graph itself, rows and hubs alike;
* **grouped**, for more: rows that name the same hubs are interchangeable in
  the picture, so each such *group* becomes one node of the force-directed
  layout, with the hubs (the :data:`MAX_HUBS` most named; the others are
  counted, and shown when a filter picks them); then discs are pushed apart
  until they do not overlap, and each group's rows are placed on a sunflower
  spiral in its disc, pinned and newest in the middle. A 100,000-row bank lays
  out a few hundred nodes, not 100,000.

Live updates do not lay out again: :meth:`MemoryGraph.update` places a new row
in its group's next seat (or beside the hubs it names) and moves nothing else.
"""

from __future__ import annotations

import math
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
CELL = 64.0
"""Side of a cell of the grid that finds the rows near a point."""


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


@dataclass
class Hub:
    """A name rows link to, drawn as a circle: ``row`` is the key of the row it is, if any."""

    name: str
    x: float = 0.0
    y: float = 0.0
    count: int = 0
    row: str | None = None

    @property
    def radius(self) -> float:
        """Its radius (see :func:`hub_radius`)."""
        return hub_radius(self.count)


@dataclass
class Group:
    """Rows that name the same hubs: a disc centred at ``x, y``; ``hubs`` are indexes in the graph's."""

    hubs: tuple[int, ...]
    x: float = 0.0
    y: float = 0.0
    size: int = 0

    @property
    def radius(self) -> float:
        """The disc's radius once ``size`` rows sit in it."""
        return SEAT * math.sqrt(max(1, self.size)) + SEAT


@dataclass
class MemoryGraph:
    """What the graph view draws: hubs, rows (``keys`` with positions), their edges and groups.

    ``xs``/``ys`` are the rows' positions; ``links[i]`` the hubs row ``i`` names;
    ``pinned``/``retired`` flags; ``group_of[i]`` its group (grouped layout) or -1.
    ``hidden_hubs`` counts names not drawn as hubs; ``tags`` the tags of the rows
    and how many rows carry each (the view's tag filter).
    """

    mode: str = "full"
    hubs: list[Hub] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    xs: array[float] = field(default_factory=lambda: array("d"))
    ys: array[float] = field(default_factory=lambda: array("d"))
    links: list[tuple[int, ...]] = field(default_factory=list)
    pinned: bytearray = field(default_factory=bytearray)
    retired: bytearray = field(default_factory=bytearray)
    group_of: array[int] = field(default_factory=lambda: array("l"))
    groups: list[Group] = field(default_factory=list)
    hidden_hubs: int = 0
    total_rows: int = 0
    tags: list[tuple[str, int]] = field(default_factory=list)
    options: GraphOptions = field(default_factory=GraphOptions)
    row_names: Mapping[str, str] = field(default_factory=dict)
    _index: dict[str, int] = field(default_factory=dict)
    _hub_index: dict[str, int] = field(default_factory=dict)
    _group_index: dict[tuple[int, ...], int] = field(default_factory=dict)
    _grid: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    _gone: set[int] = field(default_factory=set)
    _members: dict[int, list[int]] | None = None
    _group_rows: dict[int, list[int]] | None = None
    touched: set[int] = field(default_factory=set)
    """Groups whose rows a live update changed (the view redraws those)."""

    # ------------------------------------------------------------------ questions

    def __len__(self) -> int:
        return len(self.keys) - len(self._gone)

    def index_of(self, key: str) -> int | None:
        """The row index of a key drawn (None when it is not)."""
        i = self._index.get(key)
        return None if i is None or i in self._gone else i

    def hub_of(self, name: str) -> Hub | None:
        """A hub by name."""
        i = self._hub_index.get(name)
        return None if i is None else self.hubs[i]

    def rows_of_hub(self, name: str) -> list[str]:
        """The keys of the rows drawn that name a hub."""
        i = self._hub_index.get(name)
        if i is None:
            return []
        if self._members is None:
            members: dict[int, list[int]] = {}
            for r, links in enumerate(self.links):
                for h in links:
                    members.setdefault(h, []).append(r)
            self._members = members
        return [self.keys[r] for r in self._members.get(i, ()) if r not in self._gone]

    def rows_of_group(self, group: int) -> list[int]:
        """The indexes of a group's rows (gone ones included)."""
        if self._group_rows is None:
            members: dict[int, list[int]] = {}
            for i, g in enumerate(self.group_of):
                members.setdefault(g, []).append(i)
            self._group_rows = members
        return self._group_rows.get(group, [])

    def bounds(self) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of everything drawn."""
        xs = [h.x - h.radius for h in self.hubs] + [h.x + h.radius for h in self.hubs]
        ys = [h.y - h.radius - 14 for h in self.hubs] + [h.y + h.radius for h in self.hubs]
        if self.keys:
            xs += [min(self.xs), max(self.xs)]
            ys += [min(self.ys), max(self.ys)]
        if not xs:
            return (-100.0, -100.0, 100.0, 100.0)
        return (min(xs) - 60, min(ys) - 20, max(xs) + 60, max(ys) + 20)  # room for the hubs' labels

    def rows_in(self, left: float, top: float, right: float, bottom: float) -> list[int]:
        """Indexes of the rows drawn inside a rectangle (the grid's cells that touch it)."""
        out: list[int] = []
        grid = self._grid
        for cx in range(math.floor(left / CELL), math.floor(right / CELL) + 1):
            for cy in range(math.floor(top / CELL), math.floor(bottom / CELL) + 1):
                out.extend(grid.get((cx, cy), ()))
        return [i for i in out if i not in self._gone]

    def row_at(self, x: float, y: float, reach: float) -> int | None:
        """The row drawn nearest to a point within ``reach`` (None when there is none)."""
        best, best_d = None, reach * reach
        for i in self.rows_in(x - reach, y - reach, x + reach, y + reach):
            d = (self.xs[i] - x) ** 2 + (self.ys[i] - y) ** 2
            if d <= best_d:
                best, best_d = i, d
        return best

    def hub_at(self, x: float, y: float, slack: float = 0.0) -> Hub | None:
        """The hub under a point (the smallest when several are)."""
        found = [h for h in self.hubs if (h.x - x) ** 2 + (h.y - y) ** 2 <= (h.radius + slack) ** 2]
        return min(found, key=lambda h: h.radius) if found else None

    # ------------------------------------------------------------------ building

    def _seat(self, i: int) -> None:
        self._grid.setdefault((math.floor(self.xs[i] / CELL), math.floor(self.ys[i] / CELL)), []).append(i)

    def _unseat(self, i: int) -> None:
        cell = self._grid.get((math.floor(self.xs[i] / CELL), math.floor(self.ys[i] / CELL)))
        if cell is not None and i in cell:
            cell.remove(i)

    def _index_rows(self) -> None:
        self._index = {k: i for i, k in enumerate(self.keys)}
        self._hub_index = {h.name: i for i, h in enumerate(self.hubs)}
        self._group_index = {g.hubs: i for i, g in enumerate(self.groups)}
        self._grid = {}
        for i in range(len(self.keys)):
            self._seat(i)

    # ------------------------------------------------------------------ live updates

    def update(self, rows: Iterable[Any]) -> int:
        """Show rows that are new or changed without laying anything else out again; returns how
        many rows were placed anew (a row whose hubs did not change stays where it is)."""
        placed = 0
        self._group_rows = None
        for row in rows:
            wanted = accepts(row, self.options)
            i = self._index.get(row.id)
            if i is not None:
                self.touched.add(self.group_of[i])
            if i is not None and i not in self._gone:
                if not wanted:
                    self._unseat(i)
                    self._gone.add(i)
                    self._count(self.links[i], -1)
                    self.total_rows -= 1
                    continue
                self.pinned[i], self.retired[i] = bool(row.pinned), row.invalid_at is not None
                links = self._hubs_for(row)
                if links == self.links[i]:
                    continue
                self._unseat(i)
                self._count(self.links[i], -1)
                self._count(links, 1)
                self.links[i] = links
                self._place(i)
                placed += 1
                continue
            if not wanted:
                continue
            links = self._hubs_for(row)
            self._count(links, 1)
            if i is None:
                i = len(self.keys)
                self.keys.append(row.id)
                self._index[row.id] = i
                self.xs.append(0.0)
                self.ys.append(0.0)
                self.links.append(links)
                self.pinned.append(bool(row.pinned))
                self.retired.append(row.invalid_at is not None)
                self.group_of.append(-1)
            else:  # shown again (restored, or the tag came back)
                self._gone.discard(i)
                self.links[i] = links
                self.pinned[i], self.retired[i] = bool(row.pinned), row.invalid_at is not None
            self.total_rows += 1
            self._place(i)
            placed += 1
        return placed

    def _hubs_for(self, row: Any) -> tuple[int, ...]:
        """The hubs a row links to (new ones made; in the grouped layout only the hubs drawn)."""
        names = hub_names(row, self.row_names)
        if self.mode == "grouped" and names != (NO_ENTITIES,):
            names = tuple(n for n in names if n in self._hub_index) or (OTHER_ENTITIES,)
        out = {self._hub_index[n] if n in self._hub_index else self._new_hub(n) for n in names}
        self._members = None
        return tuple(sorted(out))

    def _count(self, links: tuple[int, ...], step: int) -> None:
        for h in links:
            self.hubs[h].count += step

    def _new_hub(self, name: str) -> int:
        """A hub that appeared with a live update: placed beyond everything, at a stable angle."""
        left, top, right, bottom = self.bounds()
        reach = max(right - left, bottom - top) / 2 + 40
        angle = (zlib.crc32(name.encode("utf-8")) % 3600) / 3600 * 2 * math.pi
        cx, cy = (left + right) / 2, (top + bottom) / 2
        self.hubs.append(
            Hub(name, cx + reach * math.cos(angle), cy + reach * math.sin(angle), 0, self.row_names.get(name))
        )
        self._hub_index[name] = len(self.hubs) - 1
        return len(self.hubs) - 1

    def _place(self, i: int) -> None:
        links = self.links[i]
        if self.mode == "grouped":
            g = self._group_index.get(links)
            if g is None:
                x, y = _centre([(self.hubs[h].x, self.hubs[h].y) for h in links])
                self.groups.append(Group(links, x + SEAT * 4, y + SEAT * 4, 0))
                g = self._group_index[links] = len(self.groups) - 1
            group = self.groups[g]
            x, y = sunflower(group.size)
            group.size += 1
            self.group_of[i] = g
            self.touched.add(g)
            self.xs[i], self.ys[i] = group.x + x, group.y + y
        else:
            x, y = _centre([(self.hubs[h].x, self.hubs[h].y) for h in links])
            turn = (zlib.crc32(self.keys[i].encode("utf-8")) % 360) / 360 * 2 * math.pi
            self.xs[i], self.ys[i] = x + 30 * math.cos(turn), y + 30 * math.sin(turn)
        self._seat(i)


# ---------------------------------------------------------------------- filtering


def accepts(row: Any, options: GraphOptions) -> bool:
    """Whether the graph draws a row under these options (the ``around`` and ``focus`` filters are
    applied on the whole graph, in :func:`build_graph`)."""
    if row.invalid_at is not None and not options.show_retired:
        return False
    return options.tag is None or options.tag in row.tags


def hub_names(row: Any, row_names: Mapping[str, str]) -> tuple[str, ...]:
    """The hubs a row names, in order and without repeats (not itself)."""
    names = tuple(dict.fromkeys(e for e in row.entities if e and row_names.get(e) != row.id))
    return names or (NO_ENTITIES,)


def sunflower(n: int) -> tuple[float, float]:
    """The ``n``-th seat of a sunflower spiral (even spacing, no two seats closer than ~SEAT)."""
    r = SEAT * math.sqrt(n + 0.5)
    return r * math.cos(n * GOLDEN_ANGLE), r * math.sin(n * GOLDEN_ANGLE)


def _centre(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    if not points:
        return 0.0, 0.0
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)


def _newest_first(row: Any) -> tuple[bool, int, str]:
    return (not row.pinned, -(row.updated_at or 0), row.id)


def build_graph(
    rows: Sequence[Any], row_names: Mapping[str, str] | None = None, options: GraphOptions | None = None
) -> MemoryGraph:
    """Build and lay out the graph of ``rows`` (call off the GUI thread: this is the slow part)."""
    options = options or GraphOptions()
    row_names = dict(row_names or {})
    shown = [r for r in rows if accepts(r, options)]
    tag_counts: dict[str, int] = {}
    for row in rows:
        if row.invalid_at is None or options.show_retired:
            for tag in row.tags:
                tag_counts[tag] = tag_counts.get(tag, 0) + 1
    names_of = {r.id: hub_names(r, row_names) for r in shown}
    if options.around is not None:
        near = {n for k in options.around if k in names_of for n in names_of[k] if n != NO_ENTITIES}
        shown = [r for r in shown if r.id in options.around or near.intersection(names_of[r.id])]
    if options.focus:
        needle = options.focus.casefold()
        shown = [r for r in shown if any(needle in n.casefold() for n in names_of[r.id])]
    count: dict[str, int] = {}
    for row in shown:
        for name in names_of[row.id]:
            count[name] = count.get(name, 0) + 1
    graph = MemoryGraph(options=options, row_names=row_names)
    graph.tags = sorted(tag_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    graph.total_rows = len(shown)
    if len(shown) + len(count) <= FULL_LIMIT:
        _lay_out_every_node(graph, shown, names_of, count)
    else:
        _lay_out_groups(graph, shown, names_of, count)
    graph._index_rows()
    return graph


def _spring(nodes: list[Any], edges: list[tuple[Any, Any, float]], unit: float) -> dict[Any, tuple[float, float]]:
    """networkx's force-directed layout, seeded (the same picture for the same graph), of each
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
            raw = nx.spring_layout(g.subgraph(part), seed=7, iterations=80, scale=size * 0.7)  # a margin
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


def _lay_out_every_node(graph: MemoryGraph, shown: list[Any], names_of: dict[str, Any], count: dict[str, int]) -> None:
    graph.mode = "full"
    hub_names_sorted = sorted(count, key=lambda n: (-count[n], n))
    nodes: list[Any] = [("h", n) for n in hub_names_sorted] + [("r", r.id) for r in shown]
    edges = [(("r", r.id), ("h", n), 1.0) for r in shown for n in names_of[r.id]]
    pos = _spring(nodes, edges, unit=60.0) if nodes else {}
    graph.hubs = [Hub(n, *pos[("h", n)], count[n], graph.row_names.get(n)) for n in hub_names_sorted]
    hub_index = {n: i for i, n in enumerate(hub_names_sorted)}
    for row in shown:
        x, y = pos[("r", row.id)]
        _append_row(graph, row, tuple(sorted(hub_index[n] for n in names_of[row.id])), x, y, -1)


def _append_row(graph: MemoryGraph, row: Any, links: tuple[int, ...], x: float, y: float, group: int) -> None:
    graph.keys.append(row.id)
    graph.xs.append(x)
    graph.ys.append(y)
    graph.links.append(links)
    graph.pinned.append(bool(row.pinned))
    graph.retired.append(row.invalid_at is not None)
    graph.group_of.append(group)


def _lay_out_groups(graph: MemoryGraph, shown: list[Any], names_of: dict[str, Any], count: dict[str, int]) -> None:
    graph.mode = "grouped"
    ranked = sorted(count, key=lambda n: (-count[n], n))
    kept = ranked[:MAX_HUBS]
    graph.hidden_hubs = max(0, len(ranked) - MAX_HUBS)
    kept_set = set(kept)
    signature: dict[str, tuple[str, ...]] = {}
    sizes: dict[tuple[str, ...], int] = {}
    for row in shown:
        names = names_of[row.id]
        sig = tuple(n for n in names if n in kept_set) or (OTHER_ENTITIES,)
        signature[row.id] = sig
        sizes[sig] = sizes.get(sig, 0) + 1
    # The most common combinations are groups of their own; a rare one joins the group of its
    # first hub (its other edges are still drawn).
    common = set(sorted(sizes, key=lambda s: (-sizes[s], s))[:MAX_GROUPS])
    group_sig: dict[str, tuple[str, ...]] = {}
    for key, sig in signature.items():
        group_sig[key] = sig if sig in common else sig[:1]
    hub_list = list(kept) + ([OTHER_ENTITIES] if any(s == (OTHER_ENTITIES,) for s in signature.values()) else [])
    hub_index = {n: i for i, n in enumerate(hub_list)}
    members: dict[tuple[str, ...], list[Any]] = {}
    for row in shown:
        members.setdefault(group_sig[row.id], []).append(row)
    sigs = sorted(members, key=lambda s: (-len(members[s]), s))
    nodes: list[Any] = [("h", n) for n in hub_list] + [("g", s) for s in sigs]
    edges = [(("g", s), ("h", n), 1.0) for s in sigs for n in s]
    pos = _spring(nodes, edges, unit=1.0)
    radii = [hub_radius(count.get(n, len(members.get((n,), ())))) + 30 for n in hub_list]
    radii += [SEAT * math.sqrt(len(members[s])) + SEAT * 2 for s in sigs]
    placed = _spread([pos[n] for n in nodes], radii)
    graph.hubs = [
        Hub(n, *placed[i], count.get(n, sum(1 for s in signature.values() if n in s)), graph.row_names.get(n))
        for i, n in enumerate(hub_list)
    ]
    for g, sig in enumerate(sigs):
        x, y = placed[len(hub_list) + g]
        group = Group(tuple(hub_index[n] for n in sig), x, y, 0)
        graph.groups.append(group)
        for row in sorted(members[sig], key=_newest_first):
            dx, dy = sunflower(group.size)
            group.size += 1
            links = tuple(sorted(hub_index[n] for n in signature[row.id]))
            _append_row(graph, row, links, x + dx, y + dy, g)


def _spread(points: list[tuple[float, float]], radii: list[float]) -> list[tuple[float, float]]:
    """Scale a layout of unit size to its discs' sizes, then push overlapping discs apart."""
    import numpy as np

    pos = np.array(points, dtype=float).reshape(-1, 2)
    r = np.array(radii, dtype=float)
    if len(pos) <= 1:
        return [tuple(p) for p in pos]
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
