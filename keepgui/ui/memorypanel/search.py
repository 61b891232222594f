"""The panel's search index: the words of every row, asked as the person types.

Search follows typing: each keystroke asks the word index
(:class:`~keepgui.core.search.TextSearch`) for the matching keys and hands
them to the proxy as one bulk filter, a numpy bool per row. For a big bank the
question goes to the search lane (:meth:`SearchIndex.ask`, the newest one
wins), which also works out the rows shown from the proxy's sort order, so the
GUI thread only swaps the answer in. The index for a big bank is built on a
background thread the first time; changes that arrive meanwhile are applied
when it is ready.
"""

from __future__ import annotations

import itertools
import logging
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from keepgui.core import childwork, pace
from keepgui.core.rowtable import fit_mask, rows_mask
from keepgui.core.search import TextSearch
from keepgui.ui.memorypanel.model import Layout, visible_rows
from keepgui.ui.tasks import lane

BUILDS = lane("index", workers=2)
"""The panel's builds off the GUI thread: search indexes and the tables of long loads."""
_QUESTIONS = lane("search")


def search_texts(row: Any) -> tuple[str, ...]:
    """What the search box matches for a row: its text, tags and entities."""
    return (row.text, *row.tags, *row.entities)


CHILD_ROWS = 20_000
"""An index of at least this many rows is built in a child process (:mod:`keepgui.core.childwork`) when
the process is a window's: its words, sets and sorts (about a second and a half of Python at 100,000
rows) never hold the window's interpreter lock; only the texts go there and the arrays come back."""

INDEX_CHILD = ("index", ("keepgui.core.search",))
"""The child that lays indexes out, and what it imports as it starts."""

log = logging.getLogger(__name__)
_ID, _TEXT, _TAGS, _ENTITIES = map(operator.attrgetter, ("id", "text", "tags", "entities"))


def built_in_child(rows: Sequence[Any]) -> TextSearch[str] | None:
    """The index of ``rows`` laid out in a child process and taken as arrays (None, with the reason
    logged, when the child failed: the caller builds it here)."""
    keys: list[str] = []
    texts: list[Any] = []  # what search_texts gives, as (text, tags, entities): no Python call per row
    for lo in range(0, len(rows), _LOOKUP_STEP):
        part = rows[lo : lo + _LOOKUP_STEP]
        keys += map(_ID, part)
        texts += zip(map(_TEXT, part), map(_TAGS, part), map(_ENTITIES, part), strict=True)
        pace.checkpoint()
    try:
        columns = childwork.worker(*INDEX_CHILD).call("keepgui.core.search", "index_columns", lists={"texts": texts})
    except (childwork.ChildFailed, RuntimeError) as exc:
        log.warning("the search index is built in the window's process: %s", str(exc).splitlines()[0])
        return None
    finally:
        pace.release(texts)  # a tuple per row: freed a slice at a time, not in one C call
    return TextSearch.from_columns(keys, columns)


@dataclass(frozen=True)
class Match:
    """What the search box and the day range leave shown, as the proxy takes it.

    ``scores`` the search's score per key (empty without a query: a dict, or the index's
    :class:`~keepgui.core.search.Found` read as one); ``rows`` a numpy bool per source row of
    ``row_of`` as it was when asked (None: every row); ``row_of`` the model's key -> row dict it was
    worked out against (a reset or removal since makes it stale)."""

    scores: Mapping[str, float]
    rows: np.ndarray | None
    row_of: dict[str, int]
    layout: Layout | None = None
    """The proxy's layout the rows shown were worked out against (:meth:`SearchIndex.ask`)."""
    visible: tuple[np.ndarray, np.ndarray] | None = None
    """:func:`~keepgui.ui.memorypanel.model.visible_rows` of ``layout`` for ``rows``."""


_LOOKUP_STEP = 16_384
"""Keys looked up in the model's row dict between two pace checkpoints (about a millisecond)."""


def _rows_of_keys(keys: Sequence[str], row_of: dict[str, int]) -> np.ndarray:
    """The source row of each key (-1: not a row), int64, with pace checkpoints between slices."""
    parts = []
    for lo in range(0, len(keys), _LOOKUP_STEP):
        pace.checkpoint()
        piece = keys[lo : lo + _LOOKUP_STEP]
        parts.append(np.fromiter(map(row_of.get, piece, itertools.repeat(-1)), dtype=np.int64, count=len(piece)))
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


class SearchIndex(QObject):
    """A TextSearch kept in step with the table model, built (and frozen for numpy answers) off the
    GUI thread, and asked either on the GUI thread (:meth:`match`) or on its own lane (:meth:`ask`,
    the newest question wins).

    Signals:
        ready(): the index can answer queries.
        answered(int token, Match match): the answer to :meth:`ask`'s question ``token``.
    """

    ready = Signal()
    answered = Signal(int, object)

    REFREEZE = 4096
    """Keys changed since the index was frozen past which it is built again (off the GUI thread,
    the old one answering meanwhile): each costs every query a few Python steps."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._index: TextSearch[str] | None = None
        self._pending: list[Any] = []
        self._building = False  # a build is on its way: changes go to _pending too
        self._generation = 0
        # (day keys, row_of, n, their mask): the last day range's rows
        self._days: tuple[set[str], dict[str, int], int, np.ndarray] | None = None
        # (index, row_of, len(row_of) when looked up, the source row of each slot of the index)
        self._slot_rows: tuple[TextSearch[str], dict[str, int], int, np.ndarray] | None = None

    @property
    def is_ready(self) -> bool:
        """True once queries can be answered."""
        return self._index is not None

    @property
    def stale(self) -> bool:
        """Enough rows changed since the index was built that building it again pays."""
        index = self._index
        return (
            index is not None
            and not self._building
            and index.changed_since_freeze > max(self.REFREEZE, len(index) // 64)
        )

    def rebuild(self, rows: list[Any], keep_answering: bool = False, row_of: dict[str, int] | None = None) -> None:
        """Index these rows from scratch in the background; until it is ready the index answers
        nothing, or (``keep_answering``: the same rows, changed in place) as it did. ``row_of``, the
        model's key -> row dict, has each key's row looked up there too (not at the first query)."""
        self._generation += 1
        generation = self._generation
        if not keep_answering:
            self._index = None
        self._pending = []
        self._building = True
        snapshot = list(rows)

        def build() -> tuple[TextSearch[str], tuple[int, np.ndarray] | None]:
            index = built_in_child(snapshot) if len(snapshot) >= CHILD_ROWS and childwork.children_used() else None
            if index is None:
                index = TextSearch()
                index.set_many((r.id, search_texts(r)) for r in snapshot)
                index.freeze()
            if row_of is None:
                return index, None
            known = len(row_of)  # before the look-ups: rows appended meanwhile are looked up later
            return index, (known, _rows_of_keys(index.slot_keys(), row_of))

        # A set per row: made old at once. A build asked for again before this one is done stops.
        BUILDS.run(
            build,
            lambda built: self._on_built(generation, row_of, built),
            lambda _error: self._on_failed(generation),
            owner=self,
            newest=self,
            abandon=True,
            made_old=True,
        )

    def _on_failed(self, generation: int) -> None:
        if generation == self._generation:
            self._building = False

    def _on_built(
        self,
        generation: int,
        row_of_built: dict[str, int] | None,
        built: tuple[TextSearch[str], tuple[int, np.ndarray] | None],
    ) -> None:
        if generation != self._generation:
            return
        self._building = False
        index, looked_up = built
        if looked_up is not None and row_of_built is not None:
            self._slot_rows = (index, row_of_built, *looked_up)
        for row in self._pending:
            index.set(row.id, *search_texts(row))
        self._pending = []
        self._index = index
        self.ready.emit()

    def invalidate(self) -> None:
        """Many rows are arriving (a long load): stop answering until :meth:`rebuild`."""
        self._generation += 1
        self._index = None
        self._pending = []
        self._building = False

    def update(self, rows: list[Any]) -> None:
        """Rows changed or were added (a handful: indexed in place)."""
        if self._index is None or self._building:
            self._pending.extend(rows)
        if self._index is not None:
            for row in rows:
                self._index.set(row.id, *search_texts(row))

    def remove(self, keys: Iterable[str]) -> None:
        """Rows disappeared (entries of a file read again whole)."""
        if self._index is not None:
            for key in keys:
                self._index.remove(key)

    def search(self, query: str) -> dict[str, float] | None:
        """Matching keys with scores; None while the index is being built."""
        return None if self._index is None else self._index.search(query)

    def match(self, query: str, row_of: dict[str, int], n: int, day_keys: set[str] | None) -> Match:
        """The rows of a table of ``n`` rows (``row_of`` its key -> row) that the search box's
        ``query`` (blank: no query) and the day range's keys (None: no range) leave shown.

        Every key the index finds and the range holds (all of them while the index is being
        built). Numpy passes over the index's slots, no Python step per key found; the first
        question about a new ``row_of`` looks every key up once, so ask big ones off the GUI thread."""
        days = self._day_mask(day_keys, row_of, n)
        index = self._index
        if not query.strip() or index is None:
            return Match({}, days, row_of)
        found = index.find(query)
        rows = self._rows_of_slots(index, row_of)[found.slots]
        mask = np.zeros(n, dtype=np.bool_)
        mask[rows[(rows >= 0) & (rows < n)]] = True
        if days is not None:
            mask &= fit_mask(days, n)
        return Match(found, mask, row_of)

    def _rows_of_slots(self, index: TextSearch[str], row_of: dict[str, int]) -> np.ndarray:
        """The model's source row of each slot of ``index`` (-1: none), kept while ``row_of`` is the
        same dict: it only grows then (rows appended), so only new slots and keys that had no row
        are looked up again."""
        keys = index.slot_keys()
        size, known = len(keys), len(row_of)
        cached = self._slot_rows
        if cached is None or cached[0] is not index or cached[1] is not row_of:
            slot_rows = _rows_of_keys(keys[:size], row_of)
        else:
            slot_rows = cached[3]
            if len(slot_rows) == size and cached[2] == known:
                return slot_rows
            if cached[2] != known:  # keys without a row then may have one now
                slot_rows = slot_rows.copy()
                missing = np.flatnonzero(slot_rows < 0)
                slot_rows[missing] = _rows_of_keys([keys[i] for i in missing.tolist()], row_of)
            if len(slot_rows) < size:
                slot_rows = np.concatenate((slot_rows, _rows_of_keys(keys[len(slot_rows) : size], row_of)))
        self._slot_rows = (index, row_of, known, slot_rows)
        return slot_rows

    def _day_mask(self, day_keys: set[str] | None, row_of: dict[str, int], n: int) -> np.ndarray | None:
        if day_keys is None:
            return None
        last = self._days
        if last is not None and last[0] is day_keys and last[1] is row_of and last[2] == n:
            return last[3]  # the same range of the same rows: typing on within a range
        mask = rows_mask(day_keys, row_of, n)
        self._days = (day_keys, row_of, n, mask)
        return mask

    def ask(
        self,
        token: int,
        query: str,
        row_of: dict[str, int],
        n: int,
        day_keys: set[str] | None,
        layout: Layout | None = None,
    ) -> None:
        """:meth:`match` on the search lane, and the rows it shows in the proxy's ``layout``;
        ``answered(token, match)`` follows unless a newer question was asked meanwhile (then this
        one stops at its next pace checkpoint)."""

        def run() -> Match:
            match = self.match(query, row_of, n, day_keys)
            pace.checkpoint()  # asked again meanwhile: the rows shown would not be looked at
            if layout is not None and len(layout.order) == n:
                shown = visible_rows(layout.order, layout.rank, layout.live, layout.tagged, match.rows)
                match = Match(match.scores, match.rows, row_of, layout, shown)
            return match

        _QUESTIONS.run(run, lambda match: self.answered.emit(token, match), owner=self, newest=self, abandon=True)
