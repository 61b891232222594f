"""The memory graph, built and laid out off the GUI thread (no Qt): memories, what they name, and
where each is drawn; the graph the view draws and its live updates.

Nodes are the rows (memories, entries, topic files) and their *hubs*: the
names rows link to (a row's ``entities``; a name that is another row's, from
:meth:`~keepgui.core.source.Bank.row_names`, is that row). Rows that name
nothing hang on one hub, "(no entities)", as in the iii console. An edge joins
a row to each hub it names.

Building is in three steps, so that a big graph costs the GUI process almost nothing:
:func:`columns_of` reads what the layout needs of each row into compact
columns; :func:`lay_out` does the work with numpy and networkx and returns a
:class:`Layout` of arrays (both in :mod:`keepgui.core.graphlayout`, which
describes the two layouts); :meth:`MemoryGraph.from_layout` makes the graph the
view draws. :class:`LayoutWorker` (:mod:`keepgui.core.graphworker`, a
:class:`~keepgui.core.childwork.ChildWorker`) runs :func:`lay_out` in a child
process (a fresh interpreter, sharing nothing with a Qt program): the columns go
to it in pieces of :data:`CHUNK` rows, each a few milliseconds, and the arrays
come back, so the GUI thread of the parent never waits long for the interpreter
lock, and its garbage collector never sees the layout's objects. The names of
those two modules are importable from here.

Live updates do not lay out again: :meth:`MemoryGraph.update` places a new row
in its group's next seat (or beside the hubs it names) and moves nothing else.
"""

from __future__ import annotations

import math
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from keepgui.core.graphlayout import (
    CHUNK,
    FULL_LIMIT,
    GOLDEN_ANGLE,
    MAX_GROUPS,
    MAX_HUBS,
    NO_ENTITIES,
    OTHER_ENTITIES,
    PAUSE,
    SEAT,
    Columns,
    GraphOptions,
    Layout,
    breathe,
    columns_of,
    hub_names,
    hub_radius,
    lay_out,
)
from keepgui.core.graphworker import (
    HANG_TIMEOUT,
    IDLE_EXIT,
    LayoutCancelled,
    LayoutFailed,
    LayoutWorker,
    child_layout_unavailable,
    layout_worker,
)
from keepgui.core.pace import age_young_objects

__all__ = [
    "CHUNK",
    "FULL_LIMIT",
    "GOLDEN_ANGLE",
    "HANG_TIMEOUT",
    "IDLE_EXIT",
    "MAX_GROUPS",
    "MAX_HUBS",
    "NO_ENTITIES",
    "OTHER_ENTITIES",
    "PAUSE",
    "SEAT",
    "Columns",
    "GraphOptions",
    "Group",
    "Hub",
    "KeyIndex",
    "Layout",
    "LayoutCancelled",
    "LayoutFailed",
    "LayoutWorker",
    "MemoryGraph",
    "accepts",
    "build_graph",
    "child_layout_unavailable",
    "columns_of",
    "hub_names",
    "hub_radius",
    "lay_out",
    "layout_worker",
    "sunflower",
]


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
    """Rows that name the same hubs: a disc centred at ``x, y``; ``hubs`` are indexes in the graph's.

    The rows laid out in it are ``by_group[start:end]`` of the graph (rows placed in it live are
    among the graph's loose rows)."""

    hubs: tuple[int, ...]
    x: float = 0.0
    y: float = 0.0
    size: int = 0
    start: int = 0
    end: int = 0

    @property
    def radius(self) -> float:
        """The disc's radius once ``size`` rows sit in it."""
        return SEAT * math.sqrt(max(1, self.size)) + SEAT


# ---------------------------------------------------------------------- the graph


class KeyIndex:
    """Row keys to row indexes, as :data:`SHARDS` dicts chosen by the key's hash.

    One dict of a million keys rehashes itself whole each time it doubles: a single C call that
    holds the interpreter lock for 100 ms and more while the graph is made off the GUI thread.
    A shard doubles at a few thousand keys, in well under a millisecond."""

    SHARDS = 256

    def __init__(self) -> None:
        self._shards: list[dict[str, int]] = [{} for _ in range(self.SHARDS)]

    def get(self, key: str) -> int | None:
        """The index of a key (None when it has none)."""
        return self._shards[hash(key) % self.SHARDS].get(key)

    def __setitem__(self, key: str, index: int) -> None:
        self._shards[hash(key) % self.SHARDS][key] = index

    def __len__(self) -> int:
        return sum(map(len, self._shards))

    def add(self, keys: Iterable[str], first: int) -> None:
        """Index ``keys`` as rows ``first``, ``first + 1``, …"""
        shards, n = self._shards, self.SHARDS
        for i, key in enumerate(keys, first):
            shards[hash(key) % n][key] = i

    def release(self, pause: float = 0.0) -> None:
        """Empty it a shard at a time, sleeping ``pause`` seconds between shards."""
        for shard in self._shards:
            shard.clear()
            breathe(pause)


class _Links:
    """``graph.links[i]``: the hub indexes row ``i`` links to (a view of the graph's link codes)."""

    def __init__(self, graph: MemoryGraph) -> None:
        self._graph = graph

    def __len__(self) -> int:
        return len(self._graph.link_code)

    def __getitem__(self, i: int) -> tuple[int, ...]:
        graph = self._graph
        return graph.link_sets[graph.link_code[i]]

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        sets = self._graph.link_sets
        return (sets[c] for c in self._graph.link_code)


@dataclass
class MemoryGraph:
    """What the graph view draws: hubs, rows (``keys`` with positions), their edges and groups.

    ``xs``/``ys`` are the rows' positions; ``links[i]`` the hubs row ``i`` names (stored as
    ``link_code[i]``, an index in ``link_sets``); ``pinned``/``retired``/``gone`` flags (a gone
    row was drawn and is no more); ``group_of[i]`` its group (grouped layout) or -1;
    ``rows[i]`` the row itself. ``by_group`` lists the rows laid out group after group (a group's
    are ``by_group[start:end]``); rows a live update placed are ``loose``, looked at one by one. ``hidden_hubs`` counts names not drawn as hubs; ``tags`` the tags of the rows and how
    many rows carry each (the view's tag filter); ``laid_out_by`` the process that laid it out.
    """

    mode: str = "full"
    hubs: list[Hub] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    rows: list[Any] = field(default_factory=list)
    xs: array[float] = field(default_factory=lambda: array("d"))
    ys: array[float] = field(default_factory=lambda: array("d"))
    link_code: array[int] = field(default_factory=lambda: array("q"))
    link_sets: list[tuple[int, ...]] = field(default_factory=list)
    pinned: bytearray = field(default_factory=bytearray)
    retired: bytearray = field(default_factory=bytearray)
    gone: bytearray = field(default_factory=bytearray)
    group_of: array[int] = field(default_factory=lambda: array("q"))
    groups: list[Group] = field(default_factory=list)
    by_group: array[int] = field(default_factory=lambda: array("q"))
    loose: list[int] = field(default_factory=list)
    hidden_hubs: int = 0
    total_rows: int = 0
    tags: list[tuple[str, int]] = field(default_factory=list)
    options: GraphOptions = field(default_factory=GraphOptions)
    row_names: Mapping[str, str] = field(default_factory=dict)
    laid_out_by: int = 0
    note: str = ""
    """Why the graph was not laid out where it was meant to be (the layout process failed), or ""."""
    _index: KeyIndex = field(default_factory=KeyIndex)
    _hub_index: dict[str, int] = field(default_factory=dict)
    _group_index: dict[tuple[int, ...], int] = field(default_factory=dict)
    _link_index: dict[tuple[int, ...], int] = field(default_factory=dict)
    _gone_count: int = 0
    _loose_set: set[int] = field(default_factory=set)
    _link_table: tuple[Any, Any, Any] | None = None
    touched: set[int] = field(default_factory=set)
    """Groups whose rows a live update changed (the view redraws those)."""

    # ------------------------------------------------------------------ questions

    def __len__(self) -> int:
        return len(self.keys) - self._gone_count

    @property
    def links(self) -> _Links:
        """``links[i]``: the hub indexes row ``i`` links to, ascending."""
        return _Links(self)

    def index_of(self, key: str) -> int | None:
        """The row index of a key drawn (None when it is not)."""
        i = self._index.get(key)
        return None if i is None or self.gone[i] else i

    def row(self, key: str) -> Any:
        """The row drawn for a key (None when it is not drawn)."""
        i = self.index_of(key)
        return None if i is None or i >= len(self.rows) else self.rows[i]

    def hub_of(self, name: str) -> Hub | None:
        """A hub by name."""
        i = self._hub_index.get(name)
        return None if i is None else self.hubs[i]

    def arrays(self) -> tuple[Any, Any, Any]:
        """``xs``, ``ys`` and the gone flags as numpy arrays (views: do not keep them past a call that
        may add a row)."""
        import numpy as np

        return (
            np.frombuffer(self.xs, np.float64),
            np.frombuffer(self.ys, np.float64),
            np.frombuffer(self.gone, np.uint8),
        )

    def rows_of_hub(self, name: str) -> list[str]:
        """The keys of the rows drawn that name a hub."""
        import numpy as np

        h = self._hub_index.get(name)
        if h is None or not self.keys:
            return []
        codes = [c for c, hubs in enumerate(self.link_sets) if h in hubs]
        hit = np.isin(np.frombuffer(self.link_code, np.int64), codes) & (np.frombuffer(self.gone, np.uint8) == 0)
        keys = self.keys
        return [keys[i] for i in np.flatnonzero(hit).tolist()]

    def rows_of_group(self, group: int) -> list[int]:
        """The indexes of a group's rows (gone ones included)."""
        import numpy as np

        if not self.keys:
            return []
        return np.flatnonzero(np.frombuffer(self.group_of, np.int64) == group).tolist()

    def bounds(self) -> tuple[float, float, float, float]:
        """``(left, top, right, bottom)`` of everything drawn."""
        xs = [h.x - h.radius for h in self.hubs] + [h.x + h.radius for h in self.hubs]
        ys = [h.y - h.radius - 14 for h in self.hubs] + [h.y + h.radius for h in self.hubs]
        if self.keys:
            x, y, _gone = self.arrays()
            xs += [float(x.min()), float(x.max())]
            ys += [float(y.min()), float(y.max())]
        if not xs:
            return (-100.0, -100.0, 100.0, 100.0)
        return (min(xs) - 60, min(ys) - 20, max(xs) + 60, max(ys) + 20)  # room for the hubs' labels

    def rows_in(self, left: float, top: float, right: float, bottom: float) -> Any:
        """Indexes of the rows drawn inside a rectangle, ascending (a numpy array): only the rows of
        the groups whose disc touches it are looked at, and the loose rows."""
        import numpy as np

        n = len(self.keys)
        if not n:
            return np.zeros(0, np.int64)
        if self.mode == "grouped":
            by_group = np.frombuffer(self.by_group, np.int64)
            parts = []
            for group in self.groups:
                r = group.radius
                if group.end > group.start and not (
                    group.x + r < left or group.x - r > right or group.y + r < top or group.y - r > bottom
                ):
                    parts.append(by_group[group.start : group.end])
            if self.loose:
                parts.append(np.array(self.loose, np.int64))
            if not parts:
                return np.zeros(0, np.int64)
            candidates = np.concatenate(parts)
        else:
            candidates = np.arange(n)
        xs, ys, gone = self.arrays()
        x, y = xs[candidates], ys[candidates]
        inside = (x >= left) & (x <= right) & (y >= top) & (y <= bottom) & (gone[candidates] == 0)
        found = candidates[inside]
        return np.unique(found) if self.mode == "grouped" else found

    def row_at(self, x: float, y: float, reach: float) -> int | None:
        """The row drawn nearest to a point within ``reach`` (None when there is none)."""
        found = self.rows_in(x - reach, y - reach, x + reach, y + reach)
        if not len(found):
            return None
        xs, ys, _gone = self.arrays()
        d = (xs[found] - x) ** 2 + (ys[found] - y) ** 2
        best = int(d.argmin())
        return int(found[best]) if d[best] <= reach * reach else None

    def hub_at(self, x: float, y: float, slack: float = 0.0) -> Hub | None:
        """The hub under a point (the smallest when several are)."""
        found = [h for h in self.hubs if (h.x - x) ** 2 + (h.y - y) ** 2 <= (h.radius + slack) ** 2]
        return min(found, key=lambda h: h.radius) if found else None

    def link_table(self) -> tuple[Any, Any, Any]:
        """The link sets as numpy arrays ``(start, length, hubs)``: set ``c`` is
        ``hubs[start[c]:start[c] + length[c]]`` (made once, again after a live update adds a set)."""
        import numpy as np

        table = self._link_table
        if table is None or len(table[0]) != len(self.link_sets):
            length = np.fromiter((len(s) for s in self.link_sets), np.int64, len(self.link_sets))
            start = np.zeros(len(length), np.int64)
            np.cumsum(length[:-1], out=start[1:])
            hubs = np.fromiter((h for s in self.link_sets for h in s), np.int64, int(length.sum()))
            table = self._link_table = (start, length, hubs)
        return table

    def edges_of(self, rows: Any) -> tuple[Any, Any]:
        """For row indexes (a numpy array), the ``(row, hub)`` index pairs of their edges."""
        import numpy as np

        start, length, hubs = self.link_table()
        codes = np.frombuffer(self.link_code, np.int64)[rows]
        counts = length[codes]
        total = int(counts.sum())
        if not total:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        row_of_edge = np.repeat(rows, counts)
        # Each edge's place in ``hubs``: its set's start plus its rank within the row's edges.
        first = np.repeat(np.cumsum(counts) - counts, counts)
        offset = np.repeat(start[codes], counts) + (np.arange(total) - first)
        return row_of_edge, hubs[offset]

    # ------------------------------------------------------------------ building

    @classmethod
    def from_layout(
        cls,
        layout: Layout,
        ids: Sequence[str],
        rows: Sequence[Any] | None,
        options: GraphOptions,
        row_names: Mapping[str, str],
        pause: float = 0.0,
    ) -> MemoryGraph:
        """The graph of a layout of ``rows`` (whose keys are ``ids``), made in steps of
        :data:`CHUNK` rows, sleeping ``pause`` seconds between steps."""
        graph = cls(mode=layout.mode, options=options, row_names=row_names, laid_out_by=layout.pid)
        age_young_objects()  # its lists grow to a row each: no young collection looks at them
        graph.hubs = [Hub(name, x, y, count, row) for name, x, y, count, row in layout.hubs]
        graph.groups = [Group(hubs, x, y, size, start, start + size) for hubs, x, y, size, start in layout.groups]
        graph.tags = layout.tags
        graph.hidden_hubs = layout.hidden_hubs
        graph.total_rows = layout.total_rows
        graph.link_sets = list(layout.link_sets)
        graph._link_index = {s: c for c, s in enumerate(graph.link_sets)}
        graph.xs = array("d", layout.xs.tobytes())
        graph.ys = array("d", layout.ys.tobytes())
        graph.link_code = array("q", layout.link_code.astype("int64").tobytes())
        graph.group_of = array("q", layout.group_of.astype("int64").tobytes())
        graph.by_group = array("q", layout.by_group.astype("int64").tobytes())
        graph.pinned = bytearray(layout.pinned.tobytes())
        graph.retired = bytearray(layout.retired.tobytes())
        graph.gone = bytearray(len(layout.xs))
        # The rows kept in their input order: copied in order (a gather in any other order costs a
        # cache miss per row).
        shown = memoryview(layout.shown.astype("uint8").tobytes())
        keys, kept, index = graph.keys, graph.rows, graph._index
        for a in range(0, len(ids), CHUNK):
            first = len(keys)
            keys.extend(compress(ids[a : a + CHUNK], shown[a : a + CHUNK]))
            if rows is not None:
                kept.extend(compress(rows[a : a + CHUNK], shown[a : a + CHUNK]))
            index.add(keys[first:], first)
            breathe(pause)
        graph._hub_index = {h.name: i for i, h in enumerate(graph.hubs)}
        graph._group_index = {g.hubs: i for i, g in enumerate(graph.groups)}
        return graph

    def release(self, pause: float = 0.0) -> None:
        """Let go of the rows, keys and key index in steps of :data:`CHUNK` (sleeping ``pause``
        seconds between them): freed in one piece, a million rows' lists and index each hold the
        interpreter lock for tens of milliseconds (a reference dropped per row, each a cache miss).
        The graph is empty after."""
        _release_list(self.rows, pause)
        _release_list(self.keys, pause)
        self._index.release(pause)
        self._gone_count = 0

    # ------------------------------------------------------------------ live updates

    def update(self, rows: Iterable[Any]) -> int:
        """Show rows that are new or changed without laying anything else out again; returns how
        many rows were placed anew (a row whose hubs did not change stays where it is)."""
        placed = 0
        for row in rows:
            wanted = accepts(row, self.options)
            i = self._index.get(row.id)
            if i is not None:
                self.touched.add(self.group_of[i])
                if i < len(self.rows):
                    self.rows[i] = row
            if i is not None and not self.gone[i]:
                if not wanted:
                    self.gone[i] = 1
                    self._gone_count += 1
                    self._count(self.links[i], -1)
                    self.total_rows -= 1
                    continue
                self.pinned[i], self.retired[i] = bool(row.pinned), row.invalid_at is not None
                links = self._hubs_for(row)
                if links == self.links[i]:
                    continue
                self._count(self.links[i], -1)
                self._count(links, 1)
                self.link_code[i] = self._link_code(links)
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
                if len(self.rows) == i:
                    self.rows.append(row)
                self._index[row.id] = i
                self.xs.append(0.0)
                self.ys.append(0.0)
                self.link_code.append(self._link_code(links))
                self.pinned.append(bool(row.pinned))
                self.retired.append(row.invalid_at is not None)
                self.gone.append(0)
                self.group_of.append(-1)
            else:  # shown again (restored, or the tag came back)
                self.gone[i] = 0
                self._gone_count -= 1
                self.link_code[i] = self._link_code(links)
                self.pinned[i], self.retired[i] = bool(row.pinned), row.invalid_at is not None
            self.total_rows += 1
            self._place(i)
            placed += 1
        return placed

    def _link_code(self, links: tuple[int, ...]) -> int:
        code = self._link_index.get(links)
        if code is None:
            code = self._link_index[links] = len(self.link_sets)
            self.link_sets.append(links)
        return code

    def _hubs_for(self, row: Any) -> tuple[int, ...]:
        """The hubs a row links to (new ones made; in the grouped layout only the hubs drawn)."""
        names = hub_names(row.entities, self.row_names, row.id)
        if self.mode == "grouped" and names != (NO_ENTITIES,):
            names = tuple(n for n in names if n in self._hub_index) or (OTHER_ENTITIES,)
        out = {self._hub_index[n] if n in self._hub_index else self._new_hub(n) for n in names}
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
            if i not in self._loose_set:  # outside its group's block now: looked at on its own
                self._loose_set.add(i)
                self.loose.append(i)
        else:
            x, y = _centre([(self.hubs[h].x, self.hubs[h].y) for h in links])
            turn = (zlib.crc32(self.keys[i].encode("utf-8")) % 360) / 360 * 2 * math.pi
            self.xs[i], self.ys[i] = x + 30 * math.cos(turn), y + 30 * math.sin(turn)


# ---------------------------------------------------------------------- filtering


def accepts(row: Any, options: GraphOptions) -> bool:
    """Whether the graph draws a row under these options (the ``around`` and ``focus`` filters are
    applied on the whole graph, in :func:`lay_out`)."""
    if row.invalid_at is not None and not options.show_retired:
        return False
    return options.tag is None or options.tag in row.tags


def sunflower(n: int) -> tuple[float, float]:
    """The ``n``-th seat of a sunflower spiral (even spacing, no two seats closer than ~SEAT)."""
    r = SEAT * math.sqrt(n + 0.5)
    return r * math.cos(n * GOLDEN_ANGLE), r * math.sin(n * GOLDEN_ANGLE)


def _centre(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    if not points:
        return 0.0, 0.0
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)


# ---------------------------------------------------------------------- building and laying out


def build_graph(
    rows: Sequence[Any],
    row_names: Mapping[str, str] | None = None,
    options: GraphOptions | None = None,
    worker: LayoutWorker | None = None,
    pause: float = 0.0,
    stop_when: Callable[[], bool] | None = None,
) -> MemoryGraph:
    """Build and lay out the graph of ``rows`` (call off the GUI thread: this is the slow part);
    with a ``worker``, the layout is done in its child process, and stopped (:class:`LayoutCancelled`)
    as soon as ``stop_when()`` is true. What is done in this process is done in steps, sleeping
    ``pause`` seconds between them (:data:`PAUSE` for a window)."""
    options = options or GraphOptions()
    row_names = dict(row_names or {})
    rows = rows if isinstance(rows, list) else list(rows)
    columns = columns_of(rows, pause)
    layout: Layout | None = None
    note = ""
    if worker is not None:
        try:
            layout = worker.lay_out(columns, row_names, options, pause, stop_when)
        except LayoutFailed as failure:
            note = f"laid out in this process: {failure}"
    if layout is None:
        layout = lay_out(columns, row_names, options)
    graph = MemoryGraph.from_layout(layout, columns.ids, rows, options, row_names, pause)
    graph.note = note
    _release_list(columns.ids, pause)  # the columns' own: dropped whole, a reference per row at once
    return graph


def _release_list(items: list[Any], pause: float) -> None:
    """Empty a list in steps of :data:`CHUNK` (see :meth:`MemoryGraph.release`)."""
    while items:
        del items[-CHUNK:]
        breathe(pause)
