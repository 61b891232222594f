"""The feed of the panel: the hub's deliveries of rows, into the table, the search index and the
tag chips.

A handful of changed rows goes into the model in place; a long load's parts, and
the whole bank after them, are built into a
:class:`~keepgui.core.rowtable.RowTable` off the GUI thread
(:meth:`PanelFeed.build_rows`) and swapped in whole, changes that arrive
meanwhile applied after it. After a person's change the selection follows the
rows it brought into view, or moves to the row after those it took away.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QWidget

from keepgui.core import childwork, pace
from keepgui.core.rowtable import RowTable, build_table, sort_key, table_from_columns, table_lists
from keepgui.core.source import OURS, RANKED, Capabilities, Change
from keepgui.ui.memorypanel.model import COLUMN_INDEX
from keepgui.ui.memorypanel.search import BUILDS
from keepgui.ui.memorypanel.view import RANKED_TIP, PanelView
from keepgui.ui.tasks import Task

_INDEX_IN_PLACE = 256  # more changed rows than this are indexed in the background, from scratch (each row
# indexed on the GUI thread costs ~40 µs: 256 of them fit a frame)
_FOLLOW_LIMIT = 2000  # a person's change of more rows than this (a compaction) leaves the selection alone
BUILD_OFF_THREAD = 5000
"""A load (or a part of one) of more rows than this is built into a RowTable off the GUI thread
and swapped in whole; fewer are handed to the model directly."""


CHILD_ROWS = 20_000
"""A table of at least this many rows is sorted and counted in a child process when the process is a
window's (:mod:`keepgui.core.childwork`): only the columns the sort needs go there, taken in C."""

TABLE_CHILD = ("table", ("keepgui.core.rowtable",))
"""The child that sorts tables, and what it imports as it starts."""

log = logging.getLogger(__name__)


def table_of(rows: list[Any], field: str, after: threading.Event | None = None) -> RowTable:
    """``build_table(rows, field)``, its sort and counts made in a child process for a big table (here,
    with the reason logged, when the child fails); begun once ``after`` is set (the first screenful
    picked: the two would share the interpreter lock, and the first rows wait longest), or after
    :data:`FIRST_WAIT_S`."""
    if after is not None:
        deadline = time.monotonic() + FIRST_WAIT_S  # checkpoints wait too: timed, not counted
        while not after.wait(_WAIT_STEP) and time.monotonic() < deadline:
            pace.checkpoint()  # a table no longer wanted stops here
    if len(rows) >= CHILD_ROWS and childwork.children_used():
        lists = table_lists(rows, field)
        try:
            columns = childwork.worker(*TABLE_CHILD).call("keepgui.core.rowtable", "table_columns", field, lists=lists)
        except (childwork.ChildFailed, RuntimeError) as exc:
            log.warning("the table is sorted in the window's process: %s", str(exc).splitlines()[0])
        else:
            table = table_from_columns(rows, lists["ids"], lists["live"], columns, field)
            for column in lists.values():
                pace.release(column)  # a million items each: freed a slice at a time
            return table
    return build_table(rows, field)


FIRST_WAIT_S = 3.0
"""The longest a big table's build waits for its first screenful to be picked (seconds)."""

_WAIT_STEP = 0.02


def _first_screen_urgently(rows: list[Any], field: str, descending: bool, done: threading.Event) -> RowTable:
    """:func:`first_screen` as urgent work (a person waits for it), then ``done`` set, whatever became of it."""
    try:
        return pace.urgent(lambda: first_screen(rows, field, descending))
    finally:
        done.set()


SAME_ROWS_MAX = 50_000
"""The most rows :meth:`PanelFeed._shows_already` compares one by one on the GUI thread (~5 ms)."""

FIRST_SCREEN = 200
"""Rows shown first while a big table is built (the first ones of the order shown): a screenful and more."""


def first_screen(rows: list[Any], field: str, descending: bool) -> RowTable:
    """The table of the :data:`FIRST_SCREEN` rows a big table shows first, sorted by ``field`` shown
    ``descending`` or not: exactly the rows at the top of the whole table (sort keys are unique)."""
    pick = heapq.nlargest if descending else heapq.nsmallest
    key = sort_key(field)
    best: list[Any] = []
    for lo in range(0, len(rows), _FIRST_STEP):  # in steps, giving way between them: a pass over 100,000
        best = pick(FIRST_SCREEN, [*best, *rows[lo : lo + _FIRST_STEP]], key=key)  # rows in one go is
        pace.checkpoint()  # a Python loop the GUI thread would wait for the interpreter lock behind
    return build_table(best, field)


_FIRST_STEP = 8192
"""Rows :func:`first_screen` looks at between two checkpoints."""


class PanelFeed(PanelView):
    """The panel's view, fed: rows delivered by the hub, built off the GUI thread when many."""

    _tag_counts: list[tuple[str, int]] | None
    """The tags and counts the chips show."""

    def __init__(self, hub: Any = None, settings: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(hub, settings, parent)
        self._build_token = 0
        self._build: Task[RowTable] | None = None  # the table being built (cancelled once not wanted)
        self._building = None  # the token of a RowTable being built
        self._building_after: list[Change] = []
        self._parts_shown = False  # the bank shown arrives in parts (a long load) and is not complete yet
        self._tag_counter: Counter[str] = Counter()
        self._tag_counts = None

    def _on_change(self, change: Change) -> None:
        if self.key is None or change.key != self.key or not change.rows:
            return
        delta = change.rows
        if change.partial:
            self._parts_shown = True
        elif delta.complete and self._parts_shown and not delta.removed and self._shows_already(delta.rows):
            # The load's end delivers again the rows its parts showed (a Claude Code project's, shown
            # before their versions were stored): only the search index, held back for it, is built.
            self._parts_shown = False
            self._fitted = (self.key, True)  # fitted to these very rows already
            self.index.rebuild(self.model.rows(), row_of=self.model.rows_by_key())  # off the GUI thread
            if self.search.text().strip():
                self._apply_query()
            else:
                self._update_status()
            return
        # A long load's parts, and the whole bank after them, are built into a RowTable off the GUI
        # thread past a few hundred rows: inserted into the table here, each row would cost a Python
        # call (its place in the sort order) on the GUI thread.
        off_thread = (
            BUILD_OFF_THREAD if not (change.partial or (delta.complete and self._parts_shown)) else _INDEX_IN_PLACE
        )
        if (delta.complete or change.partial) and len(delta.rows) > off_thread:
            if delta.complete:
                self._parts_shown = False
            self.build_rows(delta.rows, final=delta.complete)
            return
        if delta.complete:
            self._parts_shown = False
        if self._building is not None:
            self._building_after.append(change)  # applied once the table being built is shown
            return
        follow = change.origin == OURS and len(delta.rows) <= _FOLLOW_LIMIT
        shown_before = {r.id for r in delta.rows if self._is_shown(r.id)} if follow else set()
        if delta.removed:
            self.remove_rows(delta.removed)
        touched = self.upsert_rows(list(delta.rows), final=delta.complete, partial=change.partial)
        if follow:
            self._keep_a_selection([k for k in touched if k not in shown_before])

    def _shows_already(self, rows: Sequence[Any]) -> bool:
        """True when the table holds exactly ``rows``, the same objects (looked at up to
        :data:`SAME_ROWS_MAX`: a longer list is taken as new)."""
        model = self.model
        if self._building is not None or len(rows) != model.rowCount() or len(rows) > SAME_ROWS_MAX:
            return False
        place, held = model.rows_by_key(), model.rows()
        return all((i := place.get(row.id)) is not None and held[i] is row for row in rows)

    def _is_shown(self, key: str) -> bool:
        row = self.model.row_of(key)
        return row is not None and self._is_shown_row(row)

    def _is_shown_row(self, row: int) -> bool:
        return self.proxy.mapFromSource(self.model.index(row, 0)).isValid()

    def _keep_a_selection(self, appeared: list[str]) -> None:
        """After a person's change the selection is not lost: rows it brought into view (restored by
        an undo, just created) are selected; when it took the selected rows out of view (deleted,
        history hidden), the row after them is."""
        shown = [row for row in map(self.model.row_of, appeared) if row is not None and self._is_shown_row(row)]
        selection = self.table.selectionModel()
        if shown:
            first = self.proxy.mapFromSource(self.model.index(shown[0], COLUMN_INDEX["text"]))
            selection.setCurrentIndex(
                first, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            )
            for row in shown[1:]:
                index = self.proxy.mapFromSource(self.model.index(row, 0))
                selection.select(
                    index, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
                )
            self.table.scrollTo(first)
            return
        if not selection.hasSelection() and self._anchor is not None and self.proxy.rowCount():
            row = min(self._anchor, self.proxy.rowCount() - 1)
            selection.setCurrentIndex(
                self.proxy.index(row, COLUMN_INDEX["text"]),
                QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
            )

    def build_rows(self, rows: Any, final: bool = True) -> None:
        """Show these rows (every row of the bank, or of a load so far) once they are built into a
        RowTable off the GUI thread; the table stays as it is until then."""
        self._build_token += 1
        token, field = self._build_token, self.proxy.sort_field
        self._building = token
        self._building_after = []
        rows = rows if isinstance(rows, list) else list(rows)
        # Its dict and lists made old at once; stopped at its next checkpoint when a newer delivery
        # replaces it (the newest build of this panel wins) or another bank is shown (cancelled).
        first: threading.Event | None = None
        if not self.model.rowCount() and len(rows) >= CHILD_ROWS and childwork.children_used():
            descending, first = self.proxy.descending, threading.Event()  # the first screenful first
            BUILDS.run(
                lambda: _first_screen_urgently(rows, field, descending, first),
                lambda table: self._on_first_screen(token, field, table),
                owner=self,
                newest=(self, FIRST_SCREEN),
                abandon=True,
            )
        self._build = BUILDS.run(
            lambda: table_of(rows, field, after=first),
            lambda table: self._on_built(token, field, final, table),
            owner=self,
            newest=self,
            abandon=True,
            made_old=True,
        )
        self._update_status()

    def _on_first_screen(self, token: int, field: str, table: RowTable) -> None:
        """Show the first rows of a big table being built (nothing once it is shown, or not wanted)."""
        if token != self._build_token or self._building != token or field != self.proxy.sort_field:
            return
        if self.model.rowCount():
            return
        self.model.adopt(table, self.capabilities)
        self.index.invalidate()
        self._fit_columns(False)
        self._update_status()

    def _on_built(self, token: int, field: str, final: bool, table: RowTable) -> None:
        if token != self._build_token:
            return
        if field != self.proxy.sort_field:  # the person sorted by another column meanwhile
            self.build_rows(table.rows, final)
            return
        self._building = None
        current = self.current_key()
        self.model.adopt(table, self.capabilities)
        self._fit_columns(final)
        if final:
            self.index.rebuild(table.rows, row_of=self.model.rows_by_key())  # off the GUI thread
        else:
            self.index.invalidate()
        self._tag_counter = Counter(dict(table.tag_counts))
        self._show_tags()
        self.detail.show_empty()
        if current is not None:
            self.select_key(current)
        later, self._building_after = self._building_after, []
        for change in later:
            self._on_change(change)
        if self.search.text().strip():
            self._apply_query()
        else:
            self._update_status()

    def remove_rows(self, keys: Any) -> None:
        """Rows that are gone."""
        keys = [k for k in keys if self.model.row_of(k) is not None]
        if keys:
            self._count_tags([self.model.row_object(i) for i in map(self.model.row_of, keys) if i is not None], -1)
            self.model.remove_keys(keys)
            self.index.remove(keys)
            self._show_tags()
            self._update_status()

    def reset_rows(self, rows: list[Any], capabilities: Capabilities) -> None:
        """A bank was opened: show its rows (possibly the first part of a long load)."""
        self._build_token += 1  # a table still being built for the bank shown before is not shown
        if self._build is not None:
            self._build.cancel()
        self._parts_shown = False
        self._building = None
        self._building_after = []
        self._tag_counter = Counter()
        self.model.reset_rows(rows, capabilities)
        self.index.rebuild(rows, row_of=self.model.rows_by_key())
        self.ranking_available = capabilities.can(RANKED)
        self.ranked.setEnabled(self.ranking_available)
        self.act_ranked.setEnabled(self.ranking_available)
        self.ranked.setToolTip(RANKED_TIP if self.ranking_available else capabilities.why_not(RANKED))
        if not self.ranking_available:
            self.ranked.setChecked(False)
        self.detail.show_empty()
        self._refresh_tags()
        self._apply_query()

    def upsert_rows(self, rows: list[Any], final: bool = False, partial: bool = False) -> list[str]:
        """Rows arrived or changed; ``final`` means these are all the bank's rows, ``partial`` that
        they are the first part of a long load (every row so far). Returns the keys of the rows that
        are new or differ from those shown."""
        tags_moved = self._tags_moved(rows)
        if final:
            keys = {r.id for r in rows}
            gone = [r.id for r in self.model.rows() if r.id not in keys]
            if gone:
                self._count_tags([self.model.row_object(i) for i in map(self.model.row_of, gone) if i is not None], -1)
                self.model.remove_keys(gone)
                self.index.remove(gone)
                tags_moved = True
        if tags_moved:
            model = self.model
            self._count_tags(
                [model.row_object(i) for i in map(model.row_of, (r.id for r in rows)) if i is not None], -1
            )
            self._count_tags(rows, +1)
        changed, inserted = self.model.upsert(rows)
        touched = [self.model.row_object(r).id for r in (*inserted, *changed)]
        self._fit_columns(final)
        if partial:
            # More rows are on their way: the search index is built once, when they are all in, not
            # again for every part (each rebuild beside the load and the first show held the lock).
            self.index.invalidate()
        elif len(rows) > _INDEX_IN_PLACE or (final and not self.index.is_ready):
            self.index.rebuild(self.model.rows(), row_of=self.model.rows_by_key())  # off the GUI thread
        else:
            self.index.update(rows)
            if self.index.stale:  # many single changes since it was built: lay it out again
                self.index.rebuild(self.model.rows(), keep_answering=True, row_of=self.model.rows_by_key())
        current = self.detail.record
        if current is not None:
            row = self.model.row_of(current.id)
            if row is not None and self.model.row_object(row) is not current:
                self.detail.show_record(self.model.row_object(row))
                self.selectionChangedTo.emit(self.selected_records())
        if tags_moved:
            self._show_tags()
        if self.search.text().strip():
            self._apply_query()
        else:
            self._update_status()
        return touched

    def _fit_columns(self, final: bool) -> None:
        """Fit the columns to the bank's first rows, and once more when all of them are in."""
        state = (self.key, final or bool(self._fitted and self._fitted[1]))
        if self._fitted != state and self.model.rowCount():
            self._fitted = state
            self.columns.fit()

    def _tags_moved(self, rows: list[Any]) -> bool:
        """Whether delivering ``rows`` can change the tag counts: a new live row has tags, or
        a known row's tags or liveness changed."""
        model = self.model
        for row in rows:
            i = model.row_of(row.id)
            if i is None:
                if row.tags and row.invalid_at is None:
                    return True
                continue
            old = model.row_object(i)
            if old is not row and (old.tags != row.tags or (old.invalid_at is None) != (row.invalid_at is None)):
                return True
        return False

    def _count_tags(self, rows: Any, sign: int) -> None:
        """Add (``sign`` +1) or take away (-1) the tags of the live ones of ``rows`` in the chips' counts."""
        for row in rows:
            if row.invalid_at is None:
                for tag in row.tags:
                    self._tag_counter[tag] += sign

    def _refresh_tags(self) -> None:
        """Count the tags of every live row again (a bank was opened or rows were removed)."""
        self._tag_counter = Counter()
        self._count_tags(self.model.rows(), +1)
        self._show_tags()

    def _show_tags(self) -> None:
        counts = {tag: n for tag, n in self._tag_counter.items() if n > 0}
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if ordered != self._tag_counts:  # recreating every chip is the costly part
            self._tag_counts = ordered
            self.chips.set_counts(ordered)
        self.chips.setVisible(bool(counts))
