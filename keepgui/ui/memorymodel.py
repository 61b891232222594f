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

:class:`MemoryProxyModel` does its filtering and sorting in bulk, in Python
lists and sets, instead of a per-row ``filterAcceptsRow`` callback, which would
cost a Python call per row per keystroke at 100,000 rows. Sort keys are unique
(the id breaks ties), so the proxy row of a source row is found by bisection.

Signals:
    MemoryTableModel.toggleRequested(list keys, str field, bool value)
    MemoryTableModel.editRequested(str key, str field, str text): an in-place edit of
        ``text``, ``tags`` (space or comma separated) or ``entities`` (comma separated).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import compress
from typing import Any, Iterable

from PySide6.QtCore import QAbstractProxyModel, QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QFont

from keepgui.core.rowtable import RowTable, sort_key
from keepgui.core.source import PIN, TOMBSTONE, Capabilities, Row
from keepgui.core.textdiff import shown_text
from keepgui.ui import theme
from keepgui.ui.timefmt import absolute, now_ms, relative

NO_CAPABILITIES = Capabilities()
"""Before a bank is shown: nothing greyed (there are no rows to act on)."""

TABLE_CHARS = 1000
"""A table cell shows at most this much of a text (one elided line; the detail pane shows more)."""

RecordRole = Qt.ItemDataRole.UserRole + 1
"""The row object itself (the backend's record, a :class:`~keepgui.core.source.Row`)."""
KeyRole = Qt.ItemDataRole.UserRole + 2
"""The row's stable key (the memory id)."""
PinnedRole = Qt.ItemDataRole.UserRole + 3
"""bool: the memory is pinned."""
TombstonedRole = Qt.ItemDataRole.UserRole + 4
"""bool: the memory is retired (deleted or superseded)."""
ScoreRole = Qt.ItemDataRole.UserRole + 5
"""float | None: the search or recall score of the row in the current query."""
SortRole = Qt.ItemDataRole.UserRole + 6
"""The value a column sorts by."""

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
    return row.id


class MemoryTableModel(QAbstractTableModel):
    """Every memory of one bank, one row each, in load order."""

    toggleRequested = Signal(list, str, bool)
    editRequested = Signal(str, str, str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[Any] = []
        self._row_of: dict[str, int] = {}
        self.live_count = 0
        self._scores: dict[str, float] = {}
        self.capabilities = NO_CAPABILITIES
        self.now = now_ms()
        self._strike = QFont()
        self._strike.setStrikeOut(True)
        self._table: RowTable | None = None  # adopted, for the proxy to take at the reset

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

    def set_scores(self, scores: dict[str, float]) -> None:
        """Attach search or recall scores to rows (shown in tooltips, available as ScoreRole)."""
        self._scores = dict(scores)

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

    def score(self, key: str) -> float | None:
        """The current query's score of a key."""
        return self._scores.get(key)

    # ------------------------------------------------------------------ Qt model

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        column = COLUMNS[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return column.tooltip or None
        return None

    def flags(self, index):
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        column = COLUMNS[index.column()]
        flags = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled
        if column.field in EDITABLE and self.capabilities.can(EDITABLE[column.field]):
            flags |= Qt.ItemFlag.ItemIsEditable
        if column.toggle:
            capability = PIN if column.field == "pinned" else TOMBSTONE
            if not self.capabilities.can(capability):
                return Qt.ItemFlag.ItemIsSelectable  # greyed: the tooltip says why
            row = self._rows[index.row()]
            if column.field == "pinned" and row.invalid_at is not None:
                return Qt.ItemFlag.ItemIsSelectable  # a retired memory cannot be pinned
            flags |= Qt.ItemFlag.ItemIsUserCheckable
        return flags

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        field = COLUMNS[index.column()].field
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(row, field)
        if role == Qt.ItemDataRole.EditRole:
            if field == "text":
                return row.text
            if field == "tags":
                return " ".join(row.tags)
            if field == "entities":
                return ", ".join(row.entities)
            return None
        if role == Qt.ItemDataRole.CheckStateRole:
            # Shown even when the backend cannot toggle it: the box is drawn greyed (see flags).
            if field == "pinned":
                return Qt.CheckState.Checked if row.pinned else Qt.CheckState.Unchecked
            if field == "live":
                return Qt.CheckState.Checked if row.invalid_at is None else Qt.CheckState.Unchecked
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
        if role == Qt.ItemDataRole.FontRole:
            return self._strike if row.invalid_at is not None and field == "text" else None
        if role == Qt.ItemDataRole.ForegroundRole:
            return theme.muted_text() if row.invalid_at is not None else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(row, field)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return self._accessible(row, field)
        if role == Qt.ItemDataRole.TextAlignmentRole and field in ("seen", "revision"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole):  # noqa: N802 - Qt override
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
            return row.text + suffix
        if field in ("created", "updated"):
            return absolute(row.created_at if field == "created" else row.updated_at) or None
        return None

    def _accessible(self, row: Any, field: str) -> str | None:
        if field == "pinned":
            return "Pinned" if row.pinned else "Not pinned"
        if field == "live":
            return "Live" if row.invalid_at is None else "Deleted"
        return self._display(row, field)


def _runs(rows: list[int]) -> Iterable[tuple[int, int]]:
    """Consecutive runs ``(first, last)`` of sorted row numbers."""
    start = prev = None
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


class MemoryProxyModel(QAbstractProxyModel):
    """Filtered and sorted view of a :class:`MemoryTableModel`.

    Filters: retired rows (hidden unless ``show_history``), a tag, and a set of
    keys matched by the search box (``None`` = no query). Ranked mode orders the
    given scores instead of a column.

    The sort key of every source row and the order of all rows are kept for
    the current column, so a filter change (each keystroke) is one linear pass
    over an already sorted list, not a sort. Visible rows are kept ascending by
    key; a descending sort only reverses the mapping. Keys are unique (ids break
    ties), so rows are found and placed by bisection when sources change.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.show_history = False
        self.tag: str | None = None
        self.match_keys: set[str] | None = None
        self.ranked_scores: dict[str, float] | None = None
        self._sort_field = "updated"
        self._descending = True
        self._key_fn = sort_key(self._sort_field)
        self._keys_by_row: list[tuple] = []  # sort key of each source row
        self._live: list[bool] = []  # whether each source row is live
        self._all: list[int] = []  # every source row, ascending by key (not in ranked mode)
        self._rank: list[int] | None = None  # position of each source row in _all (rebuilt on demand)
        self._order: list[int] = []  # visible source rows, ascending by key
        self._keys: list[tuple] = []  # their keys, same order

    # ------------------------------------------------------------------ setup

    def setSourceModel(self, model: MemoryTableModel) -> None:  # noqa: N802 - Qt override
        old = self.sourceModel()
        if old is not None:
            for signal, slot in self._connections(old):
                signal.disconnect(slot)
        self.beginResetModel()
        super().setSourceModel(model)
        for signal, slot in self._connections(model):
            signal.connect(slot)
        self._rebuild(resort=True)
        self.endResetModel()

    def _connections(self, model):
        return (
            (model.modelReset, self._on_reset),
            (model.dataChanged, self._on_data_changed),
            (model.rowsInserted, self._on_rows_inserted),
            (model.rowsRemoved, self._on_reset),
        )

    # ------------------------------------------------------------------ filters

    def set_filters(
        self,
        *,
        show_history: bool | None = None,
        tag: str | None | type(...) = ...,
        match_keys: set[str] | None | type(...) = ...,
        ranked_scores: dict[str, float] | None | type(...) = ...,
    ) -> None:
        """Change any filter; the view keeps the selection of rows that stay visible."""
        before = (self.show_history, self.tag, self.match_keys, self.ranked_scores)
        was_ranked = self.ranked_scores is not None
        if show_history is not None:
            self.show_history = show_history
        if tag is not ...:
            self.tag = tag
        if match_keys is not ...:
            self.match_keys = match_keys
        if ranked_scores is not ...:
            self.ranked_scores = ranked_scores
        if (self.show_history, self.tag, self.match_keys, self.ranked_scores) == before:
            return  # the same filters (a search index that became ready, a query typed again): nothing moves
        self._relayout(resort=self.ranked_scores is not None or was_ranked)

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        """Sort by a column (Qt calls this from the header)."""
        if 0 <= column < len(COLUMNS):
            self.sort_by_field(COLUMNS[column].field, order == Qt.SortOrder.DescendingOrder)

    def sort_by_field(self, field: str, descending: bool = False) -> None:
        """Sort by a field that may not be a column (``position``: file order of keep.md)."""
        if field == self._sort_field and descending == self._descending and self._keys_by_row:
            return  # the header restored after a reset sorts again by what is shown: nothing moves
        resort = field != self._sort_field
        self._sort_field = field
        self._descending = descending
        self._relayout(resort=resort)

    # ------------------------------------------------------------------ building the order

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
        return True

    def _rebuild(self, resort: bool) -> None:
        source: MemoryTableModel | None = self.sourceModel()
        rows = source.rows() if source is not None else []
        if self.ranked_scores is not None:
            # Only the candidates are ranked: a small set, sorted directly.
            scores = self.ranked_scores
            self._key_fn = lambda r: (scores.get(r.id, 0.0), r.updated_at or 0, r.id)
            pairs = (
                sorted((self._key_fn(r), i) for i, r in enumerate(rows) if self._accepts(r))
                if len(scores) * 4 > len(rows)
                else sorted(
                    (self._key_fn(rows[i]), i)
                    for i in (source.row_of(k) for k in scores)
                    if i is not None and self._accepts(rows[i])
                )
            )
            self._keys = [k for k, _ in pairs]
            self._order = [i for _, i in pairs]
            return
        if resort or len(self._keys_by_row) != len(rows):
            self._key_fn = sort_key(self._sort_field)
            self._keys_by_row = list(map(self._key_fn, rows))
            self._live = [r.invalid_at is None for r in rows]
            self._all = sorted(range(len(rows)), key=self._keys_by_row.__getitem__)
            self._rank = None
        self._order = self._filtered(rows)
        self._keys = list(map(self._keys_by_row.__getitem__, self._order))

    def _ranks(self) -> list[int]:
        if self._rank is None:
            rank = [0] * len(self._all)
            for position, source_row in enumerate(self._all):
                rank[source_row] = position
            self._rank = rank
        return self._rank

    def _filtered(self, rows: list[Any]) -> list[int]:
        # Per keystroke at 100,000 rows: touch as few row objects as possible.
        history, tag, match = self.show_history, self.tag, self.match_keys
        order = self._all
        live = self._live
        if match is not None and tag is None:
            found = [i for i in map(self.sourceModel().row_of, match) if i is not None]
            if not history:
                found = list(compress(found, map(live.__getitem__, found)))
            found.sort(key=self._ranks().__getitem__)
            return found
        if tag is None:
            return list(order) if history else list(compress(order, map(live.__getitem__, order)))
        accepts = self._accepts
        return [i for i in order if accepts(rows[i])]

    def _relayout(self, resort: bool = False) -> None:
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        sources = [self.mapToSource(i) for i in persistent]
        self._rebuild(resort)
        self.changePersistentIndexList(persistent, [self.mapFromSource(s) for s in sources])
        self.layoutChanged.emit()

    # ------------------------------------------------------------------ mapping

    def _pos_to_row(self, pos: int) -> int:
        return len(self._order) - 1 - pos if self._descending_now() else pos

    def _position_of(self, source_row: int) -> int | None:
        key = self._row_key(source_row)
        pos = bisect.bisect_left(self._keys, key)
        if pos < len(self._order) and self._order[pos] == source_row:
            return pos
        return None

    def _row_key(self, source_row: int) -> tuple:
        if self.ranked_scores is None and source_row < len(self._keys_by_row):
            return self._keys_by_row[source_row]
        return self._key_fn(self.sourceModel().row_object(source_row))

    def mapToSource(self, proxy_index):  # noqa: N802 - Qt override
        if not proxy_index.isValid() or not 0 <= proxy_index.row() < len(self._order):
            return QModelIndex()
        return self.sourceModel().index(self._order[self._pos_to_row(proxy_index.row())], proxy_index.column())

    def mapFromSource(self, source_index):  # noqa: N802 - Qt override
        if not source_index.isValid():
            return QModelIndex()
        pos = self._position_of(source_index.row())
        if pos is None:
            return QModelIndex()
        return self.createIndex(self._pos_to_row(pos), source_index.column())

    def index(self, row, column, parent=QModelIndex()):
        if parent.isValid() or not (0 <= row < len(self._order) and 0 <= column < len(COLUMNS)):
            return QModelIndex()
        return self.createIndex(row, column)

    def parent(self, index=QModelIndex()):
        return QModelIndex()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self._order)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(COLUMNS)

    def hasChildren(self, parent=QModelIndex()) -> bool:  # noqa: N802 - Qt override
        return not parent.isValid()

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Vertical:
            return None
        return self.sourceModel().headerData(section, orientation, role) if self.sourceModel() else None

    # ------------------------------------------------------------------ source changes

    def _on_reset(self, *args) -> None:
        self.beginResetModel()
        table = self.sourceModel().adopted_table()
        if table is not None and table.sort_field == self._sort_field and self.ranked_scores is None:
            self._adopt(table)
        else:
            self._rebuild(resort=True)
        self.endResetModel()

    def _adopt(self, table: RowTable) -> None:
        """Take the order a RowTable was built with (no pass over its rows unless a filter is set)."""
        self._key_fn = sort_key(self._sort_field)
        self._keys_by_row = table.keys
        self._live = table.live
        self._all = table.order
        self._rank = None
        if self.tag is None and self.match_keys is None:
            if self.show_history:
                self._order = list(table.order)
                self._keys = list(map(table.keys.__getitem__, table.order))
            else:
                self._order, self._keys = table.live_order, table.live_keys
            return
        self._order = self._filtered(table.rows)
        self._keys = list(map(table.keys.__getitem__, self._order))

    @property
    def sort_field(self) -> str:
        """The field rows are sorted by (``position``: file order)."""
        return self._sort_field

    def _on_rows_inserted(self, parent, first: int, last: int) -> None:
        source: MemoryTableModel = self.sourceModel()
        if last - first + 1 > _BULK or self.ranked_scores is not None:
            self._relayout(resort=True)  # a chunk of a long load: one pass beats many inserts
            return
        for source_row in range(first, last + 1):
            row = source.row_object(source_row)
            key = self._key_fn(row)
            self._keys_by_row.append(key)
            self._live.append(row.invalid_at is None)
            bisect.insort(self._all, source_row, key=self._keys_by_row.__getitem__)
            self._rank = None
            if self._accepts(row):
                self._insert_visible(source_row, key)

    def _insert_visible(self, source_row: int, key: tuple) -> None:
        pos = bisect.bisect_left(self._keys, key)
        proxy_row = self._pos_to_row(pos) + (1 if self._descending_now() else 0)
        self.beginInsertRows(QModelIndex(), proxy_row, proxy_row)
        self._keys.insert(pos, key)
        self._order.insert(pos, source_row)
        self.endInsertRows()

    def _on_data_changed(self, top_left, bottom_right, roles=()) -> None:
        if (
            roles
            and len(roles) == 1
            and Qt.ItemDataRole.DisplayRole in roles
            and top_left.column() in TIME_COLUMNS
            and bottom_right.column() == top_left.column()
        ):
            if self._order:  # a clock tick: forward as is, nothing moves
                self.dataChanged.emit(
                    self.index(0, top_left.column()), self.index(len(self._order) - 1, top_left.column()), roles
                )
            return
        if bottom_right.row() - top_left.row() + 1 > _BULK or self.ranked_scores is not None:
            self._relayout(resort=True)
            if self._order:
                self.dataChanged.emit(self.index(0, 0), self.index(len(self._order) - 1, len(COLUMNS) - 1))
            return
        for source_row in range(top_left.row(), bottom_right.row() + 1):
            self._row_changed(source_row)

    def _row_changed(self, source_row: int) -> None:
        row = self.sourceModel().row_object(source_row)
        old_key = self._keys_by_row[source_row]
        new_key = self._key_fn(row)
        self._live[source_row] = row.invalid_at is None
        if new_key != old_key:
            del self._all[bisect.bisect_left(self._all, old_key, key=self._keys_by_row.__getitem__)]
            self._keys_by_row[source_row] = new_key
            bisect.insort(self._all, source_row, key=self._keys_by_row.__getitem__)
            self._rank = None
        pos = bisect.bisect_left(self._keys, old_key)
        visible_before = pos < len(self._order) and self._order[pos] == source_row
        visible_now = self._accepts(row)
        if not visible_before:
            if visible_now:
                self._insert_visible(source_row, new_key)
            return
        if not visible_now:
            proxy_row = self._pos_to_row(pos)
            self.beginRemoveRows(QModelIndex(), proxy_row, proxy_row)
            del self._keys[pos]
            del self._order[pos]
            self.endRemoveRows()
            return
        if new_key != old_key:
            self._move(pos, new_key)
            pos = bisect.bisect_left(self._keys, new_key)
        proxy_row = self._pos_to_row(pos)
        self.dataChanged.emit(self.index(proxy_row, 0), self.index(proxy_row, len(COLUMNS) - 1))

    def _move(self, old_pos: int, new_key: tuple) -> None:
        source_row = self._order[old_pos]
        del self._keys[old_pos]
        del self._order[old_pos]
        new_pos = bisect.bisect_left(self._keys, new_key)
        self._keys.insert(new_pos, new_key)
        self._order.insert(new_pos, source_row)
        if new_pos == old_pos:
            return
        # Tell the views with a layout change so persistent indexes (the selection) follow the row.
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        self.changePersistentIndexList(persistent, [self._remap(i, old_pos, new_pos) for i in persistent])
        self.layoutChanged.emit()

    def _remap(self, index: QModelIndex, old_pos: int, new_pos: int) -> QModelIndex:
        n = len(self._order)
        desc = self._descending_now()
        pos = n - 1 - index.row() if desc else index.row()
        if pos == old_pos:
            pos = new_pos
        elif old_pos < pos <= new_pos:
            pos -= 1
        elif new_pos <= pos < old_pos:
            pos += 1
        return self.createIndex(n - 1 - pos if desc else pos, index.column())
