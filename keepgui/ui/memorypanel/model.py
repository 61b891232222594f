"""The memory table: a source model of every record, and a proxy that filters and sorts it.

:class:`MemoryTableModel` holds one row per memory (the current record of each
id, live or retired). Rows are the backends' own compact records, each
satisfying :class:`keepgui.core.source.Row` (one object per row, never
wrapped again); the bank's :class:`~keepgui.core.source.Capabilities` grey
what its rows cannot do. Live reloads insert and update rows in place
(``beginInsertRows`` / ``dataChanged`` with explicit roles), never a reset,
so selection and scroll position survive.

The model never writes: a click on a pin or live checkbox emits
``toggleRequested``; the window turns it into an undoable command that appends
a record, and the change comes back through the normal reload path.

:class:`MemoryProxyModel` does its filtering and sorting in bulk, in numpy arrays over the
source rows, instead of a per-row ``filterAcceptsRow`` callback, which would cost a Python call per
row per keystroke at a million rows. Sort keys are unique (the id breaks ties).

A paint asks every visible cell for all its roles at once (``multiData``): one entry into Python
per cell, with no source index made, and the proxy's ``index()`` is Qt's own.

Signals:
    MemoryTableModel.toggleRequested(list keys, str field, bool value)
    MemoryTableModel.editRequested(str key, str field, str text): an in-place edit of
        ``text``, ``tags`` (space or comma separated) or ``entities`` (comma separated).
    MemoryTableModel.rowsChanged(list rows): source rows changed in place by one upsert, all of
        them at once, before their ``dataChanged``.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any

import numpy as np
from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractTableModel,
    QModelIndex,
    QModelRoleData,
    QModelRoleDataSpan,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
    SignalInstance,
)
from PySide6.QtGui import QFont

from keepgui.core.rowtable import RowTable, fit_mask, inverse, live_mask, sort_key, sort_order
from keepgui.core.source import PIN, TOMBSTONE, Capabilities, Row
from keepgui.core.textdiff import shown_text
from keepgui.ui import theme
from keepgui.ui.scores import Index, ScoreRole  # UserRole + 5, between the roles below
from keepgui.ui.timefmt import absolute, now_ms, relative

NO_CAPABILITIES = Capabilities()
"""Before a bank is shown: nothing greyed (there are no rows to act on)."""

TABLE_CHARS = 400
"""A table cell shows at most this much of a text: one elided line, and its paint lays out what it is
given whole (a Claude Code topic's 1,000 characters: 0.46 ms a cell, a third of a paint). 400 fill a
text column 2,800 pixels wide; the detail pane shows the rest."""

RecordRole = Qt.ItemDataRole.UserRole + 1
"""The row object itself (the backend's record, a :class:`~keepgui.core.source.Row`)."""
KeyRole = Qt.ItemDataRole.UserRole + 2
"""The row's stable key (the memory id)."""
PinnedRole = Qt.ItemDataRole.UserRole + 3
"""bool: the memory is pinned."""
TombstonedRole = Qt.ItemDataRole.UserRole + 4
"""bool: the memory is retired (deleted or superseded)."""
SortRole = Qt.ItemDataRole.UserRole + 6
"""The value a column sorts by."""

# Plain ints: a paint compares them hundreds of times.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_CHECK = int(Qt.ItemDataRole.CheckStateRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_DECORATION = int(Qt.ItemDataRole.DecorationRole)
_NOTHING = frozenset({int(Qt.ItemDataRole.DecorationRole), int(Qt.ItemDataRole.BackgroundRole)})
"""Roles a delegate asks for on every paint that the table never answers."""

_BULK = 200  # beyond this many changed rows, re-sorting everything is cheaper than moving rows one by one


@dataclass(frozen=True)
class Column:
    """One table column: its field name, header, and whether it is a checkbox toggle."""

    field: str
    title: str
    toggle: bool = False
    tooltip: str = ""


COLUMNS = (
    Column("pinned", "Pin", True, "Pinned memories are untouchable by automatic paths"),
    Column("live", "Live", True, "Unchecked = deleted (a tombstone); check again to restore"),
    Column("text", "Memory"),
    Column("tags", "Tags"),
    Column("entities", "Entities"),
    Column("seen", "Seen", tooltip="How many times the memory was stated (corroboration + 1)"),
    Column("confidence", "Confidence"),
    Column("created", "Created"),
    Column("updated", "Updated"),
    Column("revision", "Rev", tooltip="Revision: +1 on every change appended to the log"),
)
COLUMN_INDEX = {c.field: i for i, c in enumerate(COLUMNS)}
EDITABLE = {"text": "edit", "tags": "tags", "entities": "entities"}
"""Columns edited in place, and the capability each needs."""
TIME_COLUMNS = (COLUMN_INDEX["created"], COLUMN_INDEX["updated"])


def _key(row: Any) -> str:
    key: str = row.id
    return key


_EMPTY = np.empty(0, dtype=np.int64)
_TAGS = operator.attrgetter("tags")


class MemoryTableModel(QAbstractTableModel):
    """Every memory of one bank, one row each, in load order."""

    toggleRequested = Signal(list, str, bool)
    editRequested = Signal(str, str, str)
    rowsChanged = Signal(list)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[Any] = []
        self._row_of: dict[str, int] = {}
        self.live_count = 0
        self._scores: Mapping[str, float] = {}
        self._secrets: Mapping[str, str] = {}  # row key -> what its secrets are (the badge's tooltip)
        self.capabilities = NO_CAPABILITIES
        self.now = now_ms()
        self._strike = QFont()
        self._strike.setStrikeOut(True)
        self._table: RowTable | None = None  # adopted, for the proxy to take at the reset
        self._flags: tuple[Capabilities, list[tuple[Qt.ItemFlag, Qt.ItemFlag]]] | None = None  # see row_flags

    # ------------------------------------------------------------------ feeding

    def adopt(self, table: RowTable, capabilities: Capabilities) -> None:
        """Show every row of a :class:`~keepgui.core.rowtable.RowTable` built off the GUI thread:
        one reset, no pass over the rows here (the proxy takes the table's sort order)."""
        self.beginResetModel()
        self._rows = table.rows
        self._row_of = table.row_of
        self.live_count = table.live_count
        self._scores = {}
        self.capabilities = capabilities
        self.now = now_ms()
        self._table = table
        self.endResetModel()
        self._table = None

    def adopted_table(self) -> RowTable | None:
        """During the reset of :meth:`adopt`, the table adopted (else None)."""
        return self._table

    def reset_rows(self, rows: Iterable[Row], capabilities: Capabilities = NO_CAPABILITIES) -> None:
        """Replace everything (a bank was opened)."""
        self.beginResetModel()
        self._rows = list(rows)
        self._row_of = {_key(r): i for i, r in enumerate(self._rows)}
        self.live_count = sum(1 for r in self._rows if r.invalid_at is None)
        self._scores = {}
        self.capabilities = capabilities
        self.now = now_ms()
        self.endResetModel()

    def upsert(self, rows: Iterable[Any]) -> tuple[list[int], list[int]]:
        """Insert new rows at the end and update known ones in place (a row equal to the
        one shown, read again, is no change).

        Returns ``(changed source rows, inserted source rows)``.
        """
        changed: list[int] = []
        new: list[Any] = []
        self.now = max(self.now, now_ms())  # a row just written is "just now", never "in the future"
        for row in rows:
            i = self._row_of.get(_key(row))
            if i is None:
                new.append(row)
                self.live_count += row.invalid_at is None
                continue
            old = self._rows[i]
            if old is not row and old != row:  # an equal row read again (keep.md re-read whole) is no change
                self.live_count += (row.invalid_at is None) - (old.invalid_at is None)
                self._rows[i] = row
                changed.append(i)
        if changed:
            self.rowsChanged.emit(changed)
        if len(changed) > _BULK:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, len(COLUMNS) - 1))
        else:
            for lo, hi in _runs(sorted(changed)):
                self.dataChanged.emit(self.index(lo, 0), self.index(hi, len(COLUMNS) - 1))
        inserted: list[int] = []
        if new:
            first = len(self._rows)
            self.beginInsertRows(QModelIndex(), first, first + len(new) - 1)
            for row in new:
                self._row_of[_key(row)] = len(self._rows)
                self._rows.append(row)
            self.endInsertRows()
            inserted = list(range(first, first + len(new)))
        return changed, inserted

    def remove_keys(self, keys: Iterable[str]) -> None:
        """Remove rows (a file read again whole lost an entry; log records never disappear)."""
        doomed = sorted({self._row_of[k] for k in keys if k in self._row_of})
        if not doomed:
            return
        for lo, hi in reversed(list(_runs(doomed))):  # bottom up, one signal per run of rows
            self.beginRemoveRows(QModelIndex(), lo, hi)
            del self._rows[lo : hi + 1]
            self.endRemoveRows()
        self._row_of = {_key(r): i for i, r in enumerate(self._rows)}
        self.live_count = sum(1 for r in self._rows if r.invalid_at is None)

    def set_scores(self, scores: Mapping[str, float]) -> None:
        """Attach search or recall scores to rows (shown in tooltips, available as ScoreRole).

        Kept as given, not copied (a million scores take tens of milliseconds to copy on the GUI
        thread): the caller hands over a mapping of its own (a dict, or the search's numpy answer read
        as one) and does not change it afterwards."""
        self._scores = scores

    def set_secrets(self, secrets: Mapping[str, str]) -> None:
        """Rows that hold a secret (key -> a sentence: types and masked forms): a badge on their text."""
        self._secrets = secrets
        if self._rows:
            column = next(i for i, c in enumerate(COLUMNS) if c.field == "text")
            self.dataChanged.emit(self.index(0, column), self.index(len(self._rows) - 1, column))

    def tick(self) -> None:
        """Refresh relative times ("5m ago") without touching anything else."""
        self.now = now_ms()
        if self._rows:
            for column in TIME_COLUMNS:
                self.dataChanged.emit(
                    self.index(0, column), self.index(len(self._rows) - 1, column), [Qt.ItemDataRole.DisplayRole]
                )

    # ------------------------------------------------------------------ queries

    def row_object(self, row: int) -> Any:
        """The record of a source row."""
        return self._rows[row]

    def rows(self) -> list[Any]:
        """All row objects (do not mutate)."""
        return self._rows

    def row_of(self, key: str) -> int | None:
        """The source row of a key."""
        return self._row_of.get(key)

    def rows_by_key(self) -> dict[str, int]:
        """Key -> source row of every row (do not mutate). New rows are added to this dict; a reset
        or a removal replaces it by another, so holding it tells whether row numbers still hold."""
        return self._row_of

    def score(self, key: str) -> float | None:
        """The current query's score of a key."""
        return self._scores.get(key)

    # ------------------------------------------------------------------ Qt model

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(  # noqa: N802 - Qt override
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        column = COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return column.tooltip or None
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return self.row_flags(self._rows[index.row()], index.column())

    def row_flags(self, row: Any, column_number: int) -> Qt.ItemFlag:
        """The flags of a row object's cell in a column (the proxy asks without a source index): of the
        column and whether the row is retired, worked out once per capabilities (a paint asks for every
        cell, and Qt's flags combined in Python cost a third of it)."""
        made = self._flags
        if made is None or made[0] is not self.capabilities:
            made = self._flags = (
                self.capabilities,
                [(self._column_flags(c, False), self._column_flags(c, True)) for c in range(len(COLUMNS))],
            )
        return made[1][column_number][row.invalid_at is not None]

    def _column_flags(self, column_number: int, retired: bool) -> Qt.ItemFlag:
        column = COLUMNS[column_number]
        flags = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled
        if column.field in EDITABLE and self.capabilities.can(EDITABLE[column.field]):
            flags |= Qt.ItemFlag.ItemIsEditable
        if column.toggle:
            capability = PIN if column.field == "pinned" else TOMBSTONE
            if not self.capabilities.can(capability):
                return Qt.ItemFlag.ItemIsSelectable  # greyed: the tooltip says why
            if column.field == "pinned" and retired:
                return Qt.ItemFlag.ItemIsSelectable  # a retired memory cannot be pinned
            flags |= Qt.ItemFlag.ItemIsUserCheckable
        return flags

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        return self.value(self._rows[index.row()], index.column(), role)

    def multiData(self, index: Index, roles: QModelRoleDataSpan | QModelRoleData) -> None:  # noqa: N802 - Qt override
        # A delegate asks for all the roles of a cell at once: one call into Python per cell,
        # not one per role (a table paints hundreds of cells).
        if index.isValid():
            self.fill(self._rows[index.row()], index.column(), roles)

    def fill(self, row: Any, column: int, roles: Any) -> None:
        """Answer every role of a ``QModelRoleDataSpan`` for a row object's cell (``Any``: the span is
        iterable at run time, though its stub does not say so)."""
        value = self.value
        for item in roles:
            item.setData(value(row, column, item.role()))

    def value(self, row: Any, column: int, role: int) -> Any:
        """What a row object's cell shows in one role (``data()`` without an index)."""
        field = COLUMNS[column].field
        if role == _DISPLAY:
            return self._display(row, field)
        if role in _NOTHING:
            if role == _DECORATION and field == "text" and row.id in self._secrets:
                return theme.icon("warning", theme.strong("warning"))
            return None
        if role == _CHECK:
            # Shown even when the backend cannot toggle it: the box is drawn greyed (see flags).
            if field == "pinned":
                return Qt.CheckState.Checked if row.pinned else Qt.CheckState.Unchecked
            if field == "live":
                return Qt.CheckState.Checked if row.invalid_at is None else Qt.CheckState.Unchecked
            return None
        if role == _FONT:
            return self._strike if row.invalid_at is not None and field == "text" else None
        if role == _FOREGROUND:
            return theme.muted_text() if row.invalid_at is not None else None
        if role == _ALIGNMENT:
            return _RIGHT if field in ("seen", "revision") else None
        if role == Qt.ItemDataRole.EditRole:
            if field == "text":
                return row.text
            if field == "tags":
                return " ".join(row.tags)
            if field == "entities":
                return ", ".join(row.entities)
            return None
        if role == RecordRole:
            return row
        if role == KeyRole:
            return row.id
        if role == PinnedRole:
            return bool(row.pinned)
        if role == TombstonedRole:
            return row.invalid_at is not None
        if role == ScoreRole:
            return self._scores.get(row.id)
        if role == SortRole:
            return sort_key(field)(row)[0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(row, field)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return self._accessible(row, field)
        return None

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802 - Qt override
        if not index.isValid():
            return False
        if role == Qt.ItemDataRole.EditRole:
            field = COLUMNS[index.column()].field
            if field not in EDITABLE or not (self.flags(index) & Qt.ItemFlag.ItemIsEditable):
                return False
            if str(value) != self.data(index, Qt.ItemDataRole.EditRole):
                self.editRequested.emit(self._rows[index.row()].id, field, str(value))
            return True
        if role != Qt.ItemDataRole.CheckStateRole:
            return False
        field = COLUMNS[index.column()].field
        if field not in ("pinned", "live") or not (self.flags(index) & Qt.ItemFlag.ItemIsUserCheckable):
            return False
        checked = Qt.CheckState(value) == Qt.CheckState.Checked if not isinstance(value, bool) else value
        # Nothing changes here: the window writes the record; the reload updates this row.
        self.toggleRequested.emit([self._rows[index.row()].id], field, bool(checked))
        return True

    # ------------------------------------------------------------------ rendering

    def _display(self, row: Any, field: str) -> str | None:
        if field in ("pinned", "live"):
            return None
        if field == "text":
            return shown_text(row.text, TABLE_CHARS).replace("\n", " ⏎ ")
        if field == "tags":
            return " ".join("#" + t for t in row.tags)
        if field == "entities":
            return ", ".join(row.entities)
        if field == "seen":
            return None if row.corroboration is None else f"×{row.corroboration + 1}"
        if field == "confidence":
            return row.confidence or ""
        if field == "created":
            return relative(row.created_at, self.now)
        if field == "updated":
            return relative(row.updated_at, self.now)
        if field == "revision":
            return None if row.revision is None else str(row.revision)
        return None

    def _tooltip(self, row: Any, field: str) -> str | None:
        if field == "text" and row.id in self._secrets:
            return self._secrets[row.id]
        if field == "pinned":
            if not self.capabilities.can(PIN):
                return self.capabilities.why_not(PIN)
            if row.invalid_at is not None:
                return "A retired memory cannot be pinned; restore it first"
            return "Pinned: untouchable by automatic paths" if row.pinned else "Not pinned"
        if field == "live":
            if not self.capabilities.can(TOMBSTONE):
                return self.capabilities.why_not(TOMBSTONE)
            if row.superseded_by:
                return f"Superseded by {row.superseded_by}; check to restore"
            return "Deleted (a tombstone); check to restore" if row.invalid_at is not None else "Live"
        if field == "text":
            score = self._scores.get(row.id)
            suffix = f"\n\nscore {score:.2f}" if score is not None else ""
            text: str = row.text
            return text + suffix
        if field in ("created", "updated"):
            return absolute(row.created_at if field == "created" else row.updated_at) or None
        return None

    def _accessible(self, row: Any, field: str) -> str | None:
        if field == "pinned":
            return "Pinned" if row.pinned else "Not pinned"
        if field == "live":
            return "Live" if row.invalid_at is None else "Deleted"
        return self._display(row, field)


def visible_rows(
    order: np.ndarray, rank: np.ndarray, live: np.ndarray | None, tagged: np.ndarray | None, match: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The source rows shown, ascending by key, and their places in ``order``: ``order`` (every
    source row ascending by key; ``rank`` where each stands in it) narrowed to the rows that are
    ``live`` (None: history shown), ``tagged`` (None: no tag chosen) and in ``match`` (a bool per
    source row, or an array of source rows; None: no query). Numpy passes only: it may run on any
    thread over arrays nobody changes meanwhile."""
    n = len(order)
    chosen: np.ndarray | None = None  # the few rows a filter names, when it names few
    mask = live
    if match is not None:
        if match.dtype == np.bool_:
            match = fit_mask(match, n)  # made before rows were appended: those are not in it
        if match.dtype == np.bool_ and int(np.count_nonzero(match)) * 16 >= n:
            mask = match if mask is None else mask & match
        else:
            chosen = np.flatnonzero(match) if match.dtype == np.bool_ else np.asarray(match, dtype=np.int64)
    if tagged is not None:
        mask = tagged if mask is None else mask & tagged
    if chosen is not None:
        if mask is not None:
            chosen = chosen[mask[chosen]]
        ranks = np.sort(rank[chosen])
        return order[ranks], ranks
    if mask is None:
        return order, np.arange(n, dtype=np.int64)
    keep = mask[order]
    return order[keep], np.flatnonzero(keep)


@dataclass(frozen=True)
class Layout:
    """What :func:`visible_rows` needs of a proxy, at one ``version`` of it (arrays held, not copied)."""

    version: int
    order: np.ndarray
    rank: np.ndarray
    live: np.ndarray | None
    tagged: np.ndarray | None


def _same(a: Any, b: Any) -> bool:
    """Whether two filter values filter alike (numpy arrays compared whole, in C)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    return bool(a == b)


def _runs(rows: list[int]) -> Iterable[tuple[int, int]]:
    """Consecutive runs ``(first, last)`` of sorted row numbers."""
    start: int | None = None
    prev = 0  # read only once a run has started
    for r in rows:
        if start is None:
            start = prev = r
        elif r == prev + 1:
            prev = r
        else:
            yield start, prev
            start = prev = r
    if start is not None:
        yield start, prev


class MemoryProxyModel(QAbstractTableModel):
    """Filtered and sorted view of a :class:`MemoryTableModel`: the table's own model.

    Filters: retired rows (hidden unless ``show_history``), a tag, a set of keys or of source rows
    matched by the search box (``None`` = no query); ranked mode orders the given scores instead of
    a column. Public surface (the window, the views and the tests build on it): :meth:`set_filters`,
    :meth:`sort` / :meth:`sort_by_field` / :attr:`sort_field`, :meth:`mapFromSource` /
    :meth:`mapToSource`, and the Qt model API (``index``, ``data``, ``setData``, ``rowCount``).

    It is a table model of its own rather than a QAbstractProxyModel so that a paint costs one
    entry into Python per cell (``multiData``) and none for the view's ``index()`` calls.

    The order of every source row by the current field is kept in numpy (``_order``, and
    ``_rank``: where each row stands in it), so a filter change (each keystroke) is a few
    vectorised passes, never a sort: the visible rows are ``_order`` masked by the filters,
    ascending by key; a descending sort only reverses the mapping. A source row is found by
    ``searchsorted`` of its rank. A big delivery is sorted off the GUI thread
    (:func:`keepgui.core.rowtable.build_table`) and adopted whole; a few new or changed rows are
    placed by bisection.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._model: MemoryTableModel | None = None
        self.show_history = False
        self.tag: str | None = None
        self.match_keys: set[str] | None = None
        self.match_rows: np.ndarray | None = None
        self.ranked_scores: dict[str, float] | None = None
        self._sort_field = "updated"
        self._descending = True
        self._reversed = True  # whether row 0 shows the last of _visible: the direction the rows are *shown* in,
        # which lags _descending / ranked_scores until the relayout that shows the new one (persistent
        # indexes, the selection's among them, are mapped back to their source rows by the old one)
        self._key_fn = sort_key(self._sort_field)
        self._order = _EMPTY  # every source row, ascending by key
        self._rank = _EMPTY  # _rank[source row] = its place in _order
        self._live = np.empty(0, dtype=np.bool_)  # whether each source row is live
        self._tag_masks: dict[str, np.ndarray] = {}  # tag -> rows holding it (until rows change)
        self._visible = _EMPTY  # visible source rows, ascending by key (ranked: by ranked key)
        self._visible_rank = _EMPTY  # their places in _order (ascending; not in ranked mode)
        self._ranked_at: dict[int, int] = {}  # ranked mode: source row -> position in _visible
        self._version = 0  # one more at every change of the order, the rows or the visible rows

    # ------------------------------------------------------------------ setup

    def setSourceModel(self, model: QAbstractItemModel) -> None:  # noqa: N802 - Qt API
        """Show ``model`` (the rows of one bank at a time)."""
        if not isinstance(model, MemoryTableModel):
            raise TypeError("the memory proxy sorts and filters a MemoryTableModel")
        old = self._model
        if old is not None:
            for signal, slot in self._connections(old):
                signal.disconnect(slot)
        self._version += 1
        self.beginResetModel()
        self._model = model
        for signal, slot in self._connections(model):
            signal.connect(slot)
        self._rebuild(resort=True)
        self._reversed = self._descending_now()
        self.endResetModel()

    def sourceModel(self) -> MemoryTableModel | None:  # noqa: N802 - Qt API
        """The model of every row."""
        return self._model

    @property
    def _source(self) -> MemoryTableModel:
        if self._model is None:
            raise RuntimeError("the memory proxy has no table yet")
        return self._model

    def _connections(self, model: MemoryTableModel) -> tuple[tuple[SignalInstance, Callable[..., None]], ...]:
        return (
            (model.modelReset, self._on_reset),
            (model.rowsChanged, self._on_rows_changed),
            (model.dataChanged, self._on_data_changed),
            (model.rowsInserted, self._on_rows_inserted),
            (model.rowsRemoved, self._on_reset),
        )

    # ------------------------------------------------------------------ filters

    def set_filters(
        self,
        *,
        show_history: bool | None = None,
        tag: str | EllipsisType | None = ...,
        match_keys: set[str] | EllipsisType | None = ...,
        match_rows: np.ndarray | EllipsisType | None = ...,
        ranked_scores: dict[str, float] | EllipsisType | None = ...,
    ) -> None:
        """Change any filter; the view keeps the selection of rows that stay visible.

        ``match_keys`` (a set of keys) and ``match_rows`` (a numpy bool per source row, or an array
        of source rows) both narrow the rows to those matched; setting one clears the other.
        """
        before = (self.show_history, self.tag, self.match_keys, self.match_rows, self.ranked_scores)
        if show_history is not None:
            self.show_history = show_history
        if tag is not ...:
            self.tag = tag
        if match_keys is not ...:
            self.match_keys = match_keys
            if match_rows is ...:
                self.match_rows = None
        if match_rows is not ...:
            self.match_rows = match_rows
            if match_keys is ...:
                self.match_keys = None
        if ranked_scores is not ...:
            self.ranked_scores = ranked_scores
        after = (self.show_history, self.tag, self.match_keys, self.match_rows, self.ranked_scores)
        if all(_same(a, b) for a, b in zip(before, after, strict=True)):
            return  # the same filters (a search index that became ready, a query typed again): nothing moves
        self._relayout()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort by a column (Qt calls this from the header)."""
        if 0 <= column < len(COLUMNS):
            self.sort_by_field(COLUMNS[column].field, order == Qt.SortOrder.DescendingOrder)

    def sort_by_field(self, field: str, descending: bool = False) -> None:
        """Sort by a field that may not be a column (``position``: file order of keep.md)."""
        if field == self._sort_field and descending == self._descending and len(self._order):
            return  # the header restored after a reset sorts again by what is shown: nothing moves
        resort = field != self._sort_field
        self._sort_field = field
        self._descending = descending
        self._relayout(resort=resort)

    @property
    def sort_field(self) -> str:
        """The field rows are sorted by (``position``: file order)."""
        return self._sort_field

    # ------------------------------------------------------------------ building the order

    def _rows(self) -> list[Any]:
        return self._model.rows() if self._model is not None else []

    @property
    def descending(self) -> bool:
        """Rows are shown in descending order (a ranked search always is)."""
        return self._descending_now()

    def _descending_now(self) -> bool:
        return True if self.ranked_scores is not None else self._descending

    def _accepts(self, row: Any) -> bool:
        if not self.show_history and row.invalid_at is not None:
            return False
        if self.tag is not None and self.tag not in row.tags:
            return False
        if self.ranked_scores is not None:
            return row.id in self.ranked_scores
        if self.match_keys is not None and row.id not in self.match_keys:
            return False
        if self.match_rows is not None:
            i = self._source.row_of(row.id)
            return i is not None and bool(self._match_mask()[i])
        return True

    def _rebuild(self, resort: bool) -> None:
        rows = self._rows()
        if resort or len(self._order) != len(rows):
            self._key_fn = sort_key(self._sort_field)
            self._set_order(sort_order(rows, self._sort_field), live_mask(rows))
        self._filter()

    def _set_order(self, order: np.ndarray, live: np.ndarray) -> None:
        self._order = order
        self._rank = inverse(order)
        self._live = live
        self._tag_masks = {}

    def _tag_mask(self, tag: str) -> np.ndarray:
        mask = self._tag_masks.get(tag)
        if mask is None:
            rows = self._rows()
            mask = np.fromiter(
                map(operator.contains, map(_TAGS, rows), itertools.repeat(tag)), dtype=np.bool_, count=len(rows)
            )
            self._tag_masks[tag] = mask
        return mask

    def _match_mask(self) -> np.ndarray:
        """``match_rows`` as a bool per source row."""
        match = self.match_rows
        if match is None:
            return np.ones(len(self._order), dtype=np.bool_)
        if match.dtype == np.bool_:
            return fit_mask(match, len(self._order))
        mask = np.zeros(len(self._order), dtype=np.bool_)
        mask[match] = True
        return mask

    def _filter(self) -> None:
        """Work out the visible rows from the order and the filters."""
        self._ranked_at = {}
        if self.ranked_scores is not None:
            self._rank_visible()
            return
        if self.match_keys is not None:
            found = [i for i in map(self._source.row_of, self.match_keys) if i is not None]
            match: np.ndarray | None = np.asarray(found, dtype=np.int64)
        else:
            match = self.match_rows
        layout = self.layout()
        if layout is None:
            return
        self._visible, self._visible_rank = visible_rows(layout.order, layout.rank, layout.live, layout.tagged, match)

    def _rank_visible(self) -> None:
        """Ranked mode: only the candidates, sorted directly (a small set)."""
        scores = self.ranked_scores
        if scores is None:
            return
        source = self._source
        rows = self._rows()
        self._key_fn = lambda r: (scores.get(r.id, 0.0), r.updated_at or 0, r.id)
        found = (source.row_of(k) for k in scores)
        pairs = sorted((self._key_fn(rows[i]), i) for i in found if i is not None and self._accepts(rows[i]))
        self._visible = np.asarray([i for _, i in pairs], dtype=np.int64)
        self._visible_rank = _EMPTY
        self._ranked_at = {i: p for p, (_, i) in enumerate(pairs)}

    def _relayout(self, resort: bool = False, visible: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        sources = [self.mapToSource(i) for i in persistent]
        if visible is not None:  # worked out already (off the GUI thread)
            self._visible, self._visible_rank = visible
            self._ranked_at = {}
        else:
            if self.ranked_scores is None:
                self._key_fn = sort_key(self._sort_field)
            self._rebuild(resort)
        self._reversed = self._descending_now()
        self._version += 1
        self.changePersistentIndexList(persistent, [self.mapFromSource(s) for s in sources])
        self.layoutChanged.emit()

    def layout(self) -> Layout | None:
        """What :func:`visible_rows` needs to work out the rows shown for another match elsewhere
        (None in ranked mode)."""
        if self.ranked_scores is not None:
            return None
        tagged = None if self.tag is None else self._tag_mask(self.tag)
        return Layout(self._version, self._order, self._rank, None if self.show_history else self._live, tagged)

    def show_prepared(
        self, match_rows: np.ndarray | None, layout: Layout, visible: tuple[np.ndarray, np.ndarray]
    ) -> bool:
        """Show ``match_rows`` (as :meth:`set_filters` would) with its rows ``visible`` worked out
        already by :func:`visible_rows` of ``layout``: one swap, no pass over the rows. False (and
        nothing done) when the proxy changed since ``layout`` was taken."""
        if layout.version != self._version:
            return False
        if self.match_keys is None and _same(self.match_rows, match_rows):
            return True
        self.match_keys = None
        self.match_rows = match_rows
        self._relayout(visible=visible)
        return True

    # ------------------------------------------------------------------ mapping

    def _pos_to_row(self, pos: int) -> int:
        return len(self._visible) - 1 - pos if self._reversed else pos

    def _source_row(self, row: int) -> int:
        return int(self._visible[len(self._visible) - 1 - row if self._reversed else row])

    def _position_of(self, source_row: int) -> int | None:
        if self.ranked_scores is not None:
            return self._ranked_at.get(source_row)
        if not 0 <= source_row < len(self._rank):
            return None
        rank = self._rank[source_row]
        pos = int(np.searchsorted(self._visible_rank, rank))
        if pos < len(self._visible_rank) and self._visible_rank[pos] == rank:
            return pos
        return None

    def mapToSource(self, proxy_index: QModelIndex | QPersistentModelIndex) -> QModelIndex:  # noqa: N802 - Qt API
        """The source model's index of a cell shown here."""
        if not proxy_index.isValid() or not 0 <= proxy_index.row() < len(self._visible):
            return QModelIndex()
        return self._source.index(self._source_row(proxy_index.row()), proxy_index.column())

    def mapFromSource(self, source_index: QModelIndex | QPersistentModelIndex) -> QModelIndex:  # noqa: N802 - Qt API
        """Where a source model's cell is shown here (invalid when it is filtered out)."""
        if not source_index.isValid():
            return QModelIndex()
        pos = self._position_of(source_index.row())
        if pos is None:
            return QModelIndex()
        return self.index(self._pos_to_row(pos), source_index.column())

    def source_row(self, row: int) -> int:
        """The source row shown at ``row``."""
        return self._source_row(row)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self._visible)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(  # noqa: N802 - Qt override
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Vertical or self._model is None:
            return None
        return self._source.headerData(section, orientation, role)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        # Straight to the row object: no source index is made for a cell the view paints.
        if not index.isValid() or not 0 <= index.row() < len(self._visible):
            return None
        source = self._source
        return source.value(source.row_object(self._source_row(index.row())), index.column(), role)

    def display_texts(self, column: int, rows: Sequence[int]) -> list[Any]:
        """The display role of ``column`` in each of ``rows`` (rows shown; others are left out), as
        ``data()`` would answer it, in one call (the column fitter measures hundreds of cells)."""
        source, n = self._source, len(self._visible)
        return [source.value(source.row_object(self._source_row(r)), column, _DISPLAY) for r in rows if 0 <= r < n]

    def multiData(self, index: Index, roles: QModelRoleDataSpan | QModelRoleData) -> None:  # noqa: N802 - Qt override
        if index.isValid() and 0 <= index.row() < len(self._visible):
            source = self._source
            source.fill(source.row_object(self._source_row(index.row())), index.column(), roles)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid() or not 0 <= index.row() < len(self._visible):
            return Qt.ItemFlag.NoItemFlags
        source = self._source
        return source.row_flags(source.row_object(self._source_row(index.row())), index.column())

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802 - Qt override
        source_index = self.mapToSource(index)
        return source_index.isValid() and self._source.setData(source_index, value, role)

    # ------------------------------------------------------------------ source changes

    def _on_reset(self, *_args: object) -> None:
        self._version += 1
        self.beginResetModel()
        table = self._source.adopted_table()
        if table is not None and table.sort_field == self._sort_field:
            self._key_fn = sort_key(self._sort_field)
            self._order, self._rank, self._live = table.order, table.rank, table.live
            self._tag_masks = {}
            self._filter()
        else:
            self._rebuild(resort=True)
        self._reversed = self._descending_now()
        self.endResetModel()

    def _on_rows_inserted(self, parent: Index, first: int, last: int) -> None:
        self._version += 1
        new = range(first, last + 1)
        rows = self._rows()
        self._tag_masks = {}
        self._live = np.concatenate((self._live, np.fromiter((rows[i].invalid_at is None for i in new), np.bool_)))
        self._place(new, appended=True)
        if len(new) > 1 or self.ranked_scores is not None:
            self._relayout()  # a chunk of rows: one pass beats many inserts
        elif self._accepts(rows[first]):
            self._insert_visible(first)

    def _place(self, source_rows: Sequence[int], appended: bool) -> bool:
        """Put rows (new ones at the end of the source, or changed ones) where their keys go in the
        order; True when any of them moved. Costs a bisection per row and a copy of the order."""
        rows = self._rows()
        key_fn = self._key_fn
        if appended:
            order, old = self._order, None
            rank = np.concatenate((self._rank, np.zeros(len(source_rows), dtype=np.int64)))
        else:
            old = self._rank[list(source_rows)]
            order, rank = np.delete(self._order, old), self._rank
        by_key = sorted((key_fn(rows[i]), i) for i in source_rows)
        positions = [bisect.bisect_left(order, k, key=lambda i: key_fn(rows[i])) for k, _ in by_key]
        self._order = np.insert(order, positions, [i for _, i in by_key]).astype(np.int64, copy=False)
        if not len(positions):
            return False
        # Only the stretch between the first and the last place touched moved.
        lo = min(positions) if old is None else min(*positions, int(old.min()))
        hi = len(self._order) if old is None else max(max(positions) + len(positions), int(old.max()) + 1)
        hi = min(hi, len(self._order))
        rank[self._order[lo:hi]] = np.arange(lo, hi, dtype=np.int64)
        self._rank = rank
        return old is None or bool((rank[list(source_rows)] != old).any())

    def _insert_visible(self, source_row: int) -> None:
        if self.ranked_scores is not None:
            self._relayout()
            return
        self._visible_rank = self._rank[self._visible] if len(self._visible) else _EMPTY
        rank = self._rank[source_row]
        pos = int(np.searchsorted(self._visible_rank, rank))
        proxy_row = self._pos_to_row(pos) + (1 if self._reversed else 0)
        self.beginInsertRows(QModelIndex(), proxy_row, proxy_row)
        self._visible = np.insert(self._visible, pos, source_row)
        self._visible_rank = np.insert(self._visible_rank, pos, rank)
        self.endInsertRows()

    def _on_rows_changed(self, source_rows: list[int]) -> None:
        """Rows of the source changed in place (every one of them at once, before its dataChanged)."""
        if not source_rows:
            return
        self._version += 1
        rows = self._rows()
        self._tag_masks = {}
        shown_before = [self._position_of(i) is not None for i in source_rows]
        self._live[source_rows] = [rows[i].invalid_at is None for i in source_rows]
        moved = self._place(source_rows, appended=False)
        shown_now = [self._accepts(rows[i]) for i in source_rows]
        if moved or shown_before != shown_now or self.ranked_scores is not None:
            self._relayout()

    def _on_data_changed(self, top_left: Index, bottom_right: Index, roles: Sequence[int] = ()) -> None:
        first, last = top_left.row(), bottom_right.row()
        if len(self._visible) and (last - first + 1 > _BULK or self.ranked_scores is not None):
            self.dataChanged.emit(
                self.index(0, top_left.column()), self.index(len(self._visible) - 1, bottom_right.column()), roles
            )
            return
        for source_row in range(first, last + 1):
            pos = self._position_of(source_row)
            if pos is not None:
                proxy_row = self._pos_to_row(pos)
                self.dataChanged.emit(
                    self.index(proxy_row, top_left.column()), self.index(proxy_row, bottom_right.column()), roles
                )
