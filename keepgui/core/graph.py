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
  out a few hundred nodes, not 100,000; a group's rows are stored side by side,
  so the rows in view are found group by group.

Building is in three steps, so that a big graph costs the GUI process almost nothing:
:func:`columns_of` reads what the layout needs of each row into compact
columns (a distinct entity or tag tuple is stored once, rows hold its number);
:func:`lay_out` does the work with numpy and networkx and returns a
:class:`Layout` of arrays; :meth:`MemoryGraph.from_layout` makes the graph the
view draws. :class:`LayoutWorker` runs :func:`lay_out` in a child process
(a fresh interpreter, sharing nothing with a Qt program): the columns go to it and the
arrays come back in pieces of :data:`CHUNK` rows, each a few milliseconds, so
the GUI thread of the parent never waits long for the interpreter lock, and its
garbage collector never sees the layout's objects.

Live updates do not lay out again: :meth:`MemoryGraph.update` places a new row
in its group's next seat (or beside the hubs it names) and moves nothing else.
"""

from __future__ import annotations

import atexit
import math
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter, is_not
from typing import Any

from keepgui.core.errors import KeepguiError
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
IDLE_EXIT = 120.0
"""Seconds the layout process waits for work before it exits (its memory goes back to the system)."""
BEAT = 1.0
"""Seconds between the layout process's signs of life while it lays out."""
HANG_TIMEOUT = 20.0
"""Seconds without a sign of life (a piece taken, a beat) after which the layout process is taken
for hung: it is killed and the graph laid out in the GUI's process instead."""


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
        _breathe(pause)
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
            _breathe(pause)


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
            _breathe(pause)
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


def hub_names(entities: Sequence[str], row_names: Mapping[str, str], key: str | None = None) -> tuple[str, ...]:
    """The hubs a row with these entities names, in order and without repeats (not the row ``key``
    itself, when one of its names is its own)."""
    names = tuple(dict.fromkeys(e for e in entities if e and (key is None or row_names.get(e) != key)))
    return names or (NO_ENTITIES,)


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
        _breathe(pause)


def _breathe(pause: float) -> None:
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


# ---------------------------------------------------------------------- the layout process


_COLUMN_LISTS = ("ids", "entity_sets", "tag_sets")
_COLUMN_ARRAYS = ("entity_code", "tag_code", "pinned", "retired", "updated")


def serve(fd: int) -> None:
    """The layout process's body (``python -c`` runs it with its end of the socket pair): receive
    columns in pieces, lay them out (saying it is alive every :data:`BEAT` seconds meanwhile), send
    the Layout back; exit after :data:`IDLE_EXIT` seconds without work, or when the parent goes away."""
    from multiprocessing.connection import Connection

    conn = Connection(fd)
    sending = threading.Lock()
    while True:
        try:
            if not conn.poll(IDLE_EXIT):
                return
            parts: dict[str, list[Any]] = {}
            message = conn.recv()
            while message[0] == "part":
                parts.setdefault(message[1], []).append(message[2])
                message = conn.recv()
        except (EOFError, OSError):
            return
        _run, row_names, options = message
        working = threading.Event()
        beats = threading.Thread(target=_beat, args=(conn, sending, working), name="beat", daemon=True)
        beats.start()
        reply: tuple[str, Any]
        try:
            reply = ("ok", lay_out(_columns_from(parts), row_names, options))
        except Exception:  # noqa: BLE001 - a bug: its traceback goes to the parent, which raises it
            reply = ("error", traceback.format_exc())
        finally:
            working.set()
            del parts
        beats.join()
        try:
            with sending:
                conn.send(reply)
        except (EOFError, OSError):
            return
        del reply  # nothing of this layout is kept while the process waits for the next one


def _beat(conn: Any, sending: threading.Lock, done: threading.Event) -> None:
    """Tell the parent the layout process is alive, every :data:`BEAT` seconds until ``done``."""
    while not done.wait(BEAT):
        try:
            with sending:
                conn.send(("beat",))
        except (EOFError, OSError):
            return


def _columns_from(parts: Mapping[str, list[Any]]) -> Columns:
    """The columns sent in pieces, joined."""

    def joined_list(name: str) -> list[Any]:
        return [x for part in parts.get(name, ()) for x in part]

    def joined_array(name: str) -> array[int]:
        out = array("q")
        out.frombytes(b"".join(parts.get(name, ())))
        return out

    return Columns(
        ids=joined_list("ids"),
        entity_sets=joined_list("entity_sets"),
        entity_code=joined_array("entity_code"),
        tag_sets=joined_list("tag_sets"),
        tag_code=joined_array("tag_code"),
        pinned=bytearray(b"".join(parts.get("pinned", ()))),
        retired=bytearray(b"".join(parts.get("retired", ()))),
        updated=joined_array("updated"),
    )


class LayoutFailed(KeepguiError):
    """The layout process stopped (killed, or out of memory) twice in a row, or stopped answering."""


class LayoutCancelled(KeepguiError):
    """The layout was stopped by :meth:`LayoutWorker.cancel` (another bank shown, the program quits)."""


def child_layout_unavailable() -> str | None:
    """Why a layout process cannot be started here (None when it can): it is a fresh Python
    interpreter started as ``sys.executable -c``, and a frozen program's ``sys.executable`` is the
    program itself (PyInstaller's one-folder app), which runs no ``-c``."""
    if getattr(sys, "frozen", False):
        return "a frozen program has no Python interpreter to start"
    if not sys.executable or not os.path.exists(sys.executable):
        return "no Python interpreter to start (sys.executable is not set)"
    return None


class _Watchdog:
    """Kills a process when no sign of life (:meth:`alive`) came for ``timeout`` seconds (``fired``),
    or once ``stop_when()`` is true (``stopped``)."""

    def __init__(self, process: subprocess.Popen[bytes], timeout: float, stop_when: Callable[[], bool] | None) -> None:
        self.fired = self.stopped = False
        self._process, self._timeout, self._stop_when = process, timeout, stop_when
        self._last = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="keepgui-layout-watchdog", daemon=True)
        self._thread.start()

    def alive(self) -> None:
        """A sign of life."""
        self._last = time.monotonic()

    def stop(self) -> None:
        """Stop watching."""
        self._stopped.set()
        self._thread.join()

    def _watch(self) -> None:
        step = min(0.25, self._timeout / 4)
        while not self._stopped.wait(step):
            if self._stop_when is not None and self._stop_when():
                self.stopped = True
            elif time.monotonic() - self._last > self._timeout:
                self.fired = True
            else:
                continue
            self._process.kill()  # a send or a receive blocked in the parent ends at once
            return


class LayoutWorker:
    """Lays graphs out in a child process of its own, started on first use and again when it has
    exited. The child is a fresh interpreter started with ``python -c`` (nothing of the parent's
    threads, Qt or main script runs in it; multiprocessing's spawn would import the parent's
    main script there) that imports this module from the same folder; the two talk over a socket
    pair through multiprocessing's Connection. One layout at a time; call :meth:`lay_out` from a
    background thread (it waits), :meth:`cancel` from any.

    A child that dies is started again once; one that gives no sign of life for ``hang_timeout``
    seconds is killed; either way :meth:`lay_out` then raises :class:`LayoutFailed`, never waiting
    longer than that for a child that does nothing."""

    def __init__(self, hang_timeout: float = HANG_TIMEOUT) -> None:
        self.hang_timeout = hang_timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Any = None
        self._cancelled = False

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def child_code(self) -> str:
        """The Python the child runs (``{fd}`` stands for its end of the socket pair)."""
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return f"import sys; sys.path.insert(0, {root!r}); from keepgui.core.graph import serve; serve({{fd}})"

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", self.child_code().format(fd=theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        finally:
            theirs.close()
        self._conn = Connection(ours.detach())

    def stop(self) -> None:
        """End the child process (it is started again when needed)."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            conn.close()  # the child sees the end of its input and exits
        if process is not None:
            try:
                process.wait(2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(2)

    def cancel(self) -> None:
        """Kill the child now without waiting for it (safe on the GUI thread): a layout under way
        raises :class:`LayoutCancelled`, and the child's memory goes back to the system."""
        self._cancelled = True
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            threading.Thread(target=process.wait, name="keepgui-layout-reaper", daemon=True).start()

    def lay_out(
        self,
        columns: Columns,
        row_names: Mapping[str, str],
        options: GraphOptions,
        pause: float = 0.0,
        stop_when: Callable[[], bool] | None = None,
    ) -> Layout:
        """:func:`lay_out` in the child process (a bug there is raised here with its traceback);
        ``pause`` seconds of sleep between the pieces sent; stopped, the child killed, once
        ``stop_when()`` is true (looked at every quarter of a second)."""
        with self._lock:
            self._cancelled = False
            failure = ""
            for _attempt in range(2):
                if stop_when is not None and stop_when():
                    raise LayoutCancelled("the graph's layout was stopped")
                if self._process is None or self._process.poll() is not None:
                    self.stop()
                    self._start()
                process = self._process
                if process is None:
                    raise LayoutFailed("the graph's layout process could not be started")
                watchdog = _Watchdog(process, self.hang_timeout, stop_when)
                try:
                    self._send(columns, row_names, options, pause, watchdog.alive)
                    status, value = self._receive(watchdog.alive)
                except (EOFError, OSError):
                    self.stop()  # waits for the child: its exit status is known after
                    code = process.returncode
                    if self._cancelled or watchdog.stopped:
                        raise LayoutCancelled("the graph's layout was stopped") from None
                    if watchdog.fired:
                        raise LayoutFailed(
                            f"the graph's layout process stopped answering ({self.hang_timeout:g} s without a sign "
                            "of life)"
                        ) from None
                    failure = f"the graph's layout process stopped (exit status {code})"
                    continue
                finally:
                    watchdog.stop()
                if status == "error":
                    raise RuntimeError(f"laying out the graph failed in its process:\n{value}")
                if not isinstance(value, Layout):
                    raise LayoutFailed(f"the graph's layout process answered {type(value).__name__}, not a layout")
                return value
            raise LayoutFailed(failure)

    def _receive(self, alive: Callable[[], None]) -> tuple[str, Any]:
        """The child's answer (its beats taken as signs of life)."""
        while True:
            message = self._conn.recv()
            alive()
            if message[0] != "beat":
                return message[0], message[1]

    def _send(
        self,
        columns: Columns,
        row_names: Mapping[str, str],
        options: GraphOptions,
        pause: float,
        alive: Callable[[], None],
    ) -> None:
        conn = self._conn
        for name in _COLUMN_LISTS:
            values = getattr(columns, name)
            for a in range(0, len(values), CHUNK):
                conn.send(("part", name, values[a : a + CHUNK]))
                alive()
                _breathe(pause)
        for name in _COLUMN_ARRAYS:
            data = memoryview(getattr(columns, name)).cast("B")
            step = CHUNK * 200  # bytes: copying them takes far less than a frame
            for a in range(0, len(data), step):
                conn.send(("part", name, bytes(data[a : a + step])))
                alive()
            data.release()
        conn.send(("run", dict(row_names), options))
        alive()


_WORKER: LayoutWorker | None = None
_WORKER_LOCK = threading.Lock()


def layout_worker() -> LayoutWorker:
    """The process's one :class:`LayoutWorker` (stopped when the program exits)."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            _WORKER = LayoutWorker()
            atexit.register(_WORKER.stop)
        return _WORKER
