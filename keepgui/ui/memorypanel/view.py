"""What the panel shows: its widgets, the filters over the table (search, tag, history, day
range, ranking), the status line and the selection.

:class:`PanelView` is the lowest of the panel's three layers: the feed of rows
(:mod:`keepgui.ui.memorypanel.feed`) builds on it, and the panel with its
actions (:mod:`keepgui.ui.memorypanel.panel`) on that. For a bank of more than
:data:`ASK_IN_BACKGROUND` rows the search box's question goes to the search
thread (:meth:`~keepgui.ui.memorypanel.search.SearchIndex.ask`); a smaller one
is answered on the GUI thread, at once. The "Ranked" switch replaces the word
filter by the recall scorer's ranking (when the bank has one).

Signals:
    PanelView.selectionChangedTo(list records)
    PanelView.rankingRequested(str query, int token): ranked mode needs recall scores;
        answer with :meth:`PanelView.apply_ranking`.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QItemSelection, QItemSelectionModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeyEvent
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QSplitter, QToolButton, QVBoxLayout, QWidget

from keepgui.core.source import BankKey, Capabilities
from keepgui.ui import shortcuts
from keepgui.ui.activity import ActivityStrip
from keepgui.ui.detail import DetailPanel
from keepgui.ui.memorypanel.chips import TagChips
from keepgui.ui.memorypanel.columns import ColumnFitter
from keepgui.ui.memorypanel.model import (
    COLUMN_INDEX,
    COLUMNS,
    KeyRole,
    MemoryProxyModel,
    MemoryTableModel,
    RecordRole,
)
from keepgui.ui.memorypanel.search import Match, SearchIndex
from keepgui.ui.memorypanel.table import MemoryTableView
from keepgui.ui.scores import CellDelegate, ScoreDelegate

ASK_IN_BACKGROUND = 20_000
"""A bank of more rows than this is searched off the GUI thread (the newest query wins); a smaller
one on it, at once (a few milliseconds at 10,000 rows)."""
RANKED_TIP = (
    "Rank by the recall scorer — the worker's own ranking of what a turn would be given — "
    "instead of matching words (top 100)"
)


class PanelView(QWidget):
    """The filter bar, tag chips, activity strip, table and detail pane of one bank, what they
    show and what is selected."""

    selectionChangedTo = Signal(list)
    rankingRequested = Signal(str, int)

    _building: int | None = None
    """The token of a RowTable being built (the feed's: the status says "loading…" meanwhile)."""
    act_ranked: QAction
    """Memory → Ranked search (the panel's action, greyed with the switch)."""

    def __init__(self, hub: Any = None, settings: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.settings = settings
        self.key: BankKey | None = None
        self.model = MemoryTableModel(self)
        self.proxy = MemoryProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.index = SearchIndex(self)
        self.index.ready.connect(self._apply_query)
        self.index.answered.connect(self._on_answer)
        self._asking: int | None = None  # the token of the search being answered off the GUI thread
        self._ask_token = 0
        self.ranking_available = False
        self._ranking_token = 0
        self._anchor: int | None = None  # the first selected row, last time there was a selection
        self.day_keys: set[str] | None = None  # the rows that changed in the days chosen on the strip
        self.day_label = ""

        self.search = QLineEdit(self)
        self.search.setClearButtonEnabled(True)
        self.search.setPlaceholderText("search memories (fuzzy, as you type)…")
        self.search.setAccessibleName("Search memories")
        clear = shortcuts.make_action(self.search, "Clear search", self.clear_search, shortcuts.CLEAR_SEARCH)
        clear.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.search.addAction(clear)
        self.ranked = QToolButton(self)
        self.ranked.setText("Ranked")
        self.ranked.setCheckable(True)
        self.ranked.setToolTip(RANKED_TIP)
        self.ranked.setAccessibleName("Ranked search")
        self.history = QCheckBox("History", self)
        self.history.setToolTip("Show deleted and superseded memories (struck through)")
        self.status = QLabel(self)
        self.status.setAccessibleName("Search status")
        self.chips = TagChips(self)
        self.strip = ActivityStrip(hub, self)
        self.strip.rangeChosen.connect(self.set_day_filter)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.ranked)
        bar.addWidget(self.history)
        bar.addWidget(self.status)

        self.table = MemoryTableView(self)
        self.table.setModel(self.proxy)
        self.columns = ColumnFitter(self.table, settings)
        self.table.setItemDelegate(CellDelegate(self.table))  # an edited cell keeps to its column
        self.table.setItemDelegateForColumn(
            COLUMN_INDEX["text"], ScoreDelegate(lambda: self.proxy.ranked_scores, self.table)
        )
        self._fitted: tuple[BankKey | None, bool] | None = None  # the bank (and whether all its rows) last fitted
        self.detail = DetailPanel(self)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.detail)
        self.splitter.setCollapsible(0, False)
        self.splitter.setCollapsible(1, True)  # the detail pane folds away (View → Show details)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([900, 320])

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.chips)
        layout.addWidget(self.strip)
        layout.addWidget(self.splitter, 1)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(0)  # coalesce a burst of key events into one filter pass
        self._debounce.timeout.connect(self._apply_query)
        self.search.textChanged.connect(lambda _: self._debounce.start())
        self.ranked.toggled.connect(lambda _: self._apply_query())
        self.history.toggled.connect(self._on_history)
        self.chips.tagChosen.connect(self._on_tag_chosen)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        # A sort, a filter or a reload moves rows without a selectionChanged; one it hid leaves the
        # selection silently: the detail pane and the actions follow what is selected now.
        self._selected_ids: tuple[str, ...] = ()
        for signal in (self.proxy.layoutChanged, self.proxy.modelReset, self.proxy.rowsRemoved):
            signal.connect(self._selection_may_have_moved)
        self._clock = QTimer(self)
        self._clock.setInterval(60_000)
        self._clock.timeout.connect(self.model.tick)
        self._clock.start()

    @property
    def capabilities(self) -> Capabilities:
        """What the shown bank can do."""
        return self.model.capabilities

    # ------------------------------------------------------------------ filtering

    def _on_tag_chosen(self, tag: str | None) -> None:
        self.proxy.set_filters(tag=tag)
        self._update_status()

    def _on_history(self, on: bool) -> None:
        self.proxy.set_filters(show_history=on)
        self._update_status()

    def set_show_history(self, on: bool) -> None:
        """View → Show history (its checkbox's echo, :meth:`_sync_history_action`, remembers it)."""
        self.history.setChecked(on)

    def _apply_query(self) -> None:
        query = self.search.text()
        self._ask_token += 1  # an answer still on its way is for an older question
        self._asking = None
        if self.ranked.isChecked() and self.ranking_available and query.strip():
            self._ranking_token += 1
            self.rankingRequested.emit(query, self._ranking_token)
            self.status.setText("ranking…")
            return
        model = self.model
        if model.rowCount() > ASK_IN_BACKGROUND:
            # Off the GUI thread: the words looked up and the keys found turned into rows there, and
            # the rows shown in the proxy's order (for a cleared box too: every row, a pass over a
            # million); the answer is handed to the proxy whole.
            self._asking = self._ask_token
            self.index.ask(
                self._ask_token, query, model.rows_by_key(), model.rowCount(), self.day_keys, self.proxy.layout()
            )
        elif not query.strip() and self.day_keys is None:
            self._show_match(Match({}, None, model.rows_by_key()))
        else:
            self._show_match(self.index.match(query, model.rows_by_key(), model.rowCount(), self.day_keys))

    def _on_answer(self, token: int, match: Match) -> None:
        if token != self._asking:
            return  # the person typed on (or the filters changed) meanwhile
        if match.row_of is not self.model.rows_by_key():
            self._apply_query()  # rows were replaced or removed meanwhile: their numbers moved
            return
        self._asking = None
        self._show_match(match)

    def _show_match(self, match: Match) -> None:
        self.model.set_scores(match.scores)
        # Rows shown worked out on the search thread too: one swap here, unless the table changed
        # meanwhile (then the mask is applied here, a few numpy passes).
        layout, visible = match.layout, match.visible
        if layout is None or visible is None or not self.proxy.show_prepared(match.rows, layout, visible):
            self.proxy.set_filters(ranked_scores=None, match_rows=match.rows)
        self._show_sort_arrow()
        self._update_status()

    def _within_days(self, keys: set[str] | None) -> set[str] | None:
        """``keys`` (None: every row) narrowed to the rows of the day range, when one is chosen."""
        if self.day_keys is None:
            return keys
        return self.day_keys if keys is None else keys & self.day_keys

    def set_day_filter(self, keys: set[str] | None, label: str = "") -> None:
        """Show only these rows (those that changed on the days chosen on the strip); None: every row."""
        # Kept as given, not copied (the strip's is a set of its own; a million keys take tens of
        # milliseconds to copy on the GUI thread); the panel never changes it.
        self.day_keys = keys
        self.day_label = label if keys is not None else ""
        self._apply_query()

    def apply_ranking(self, token: int, scores: dict[str, float] | Exception) -> None:
        """Recall scores for the ranked search arrived (ignored if the person typed on)."""
        if token != self._ranking_token or not self.ranked.isChecked():
            return
        if isinstance(scores, Exception):
            self.status.setText(f"ranking failed: {scores}")
            return
        self.model.set_scores(scores)
        within = self._within_days(set(scores)) or set()  # a set of keys gives a set back
        self.proxy.set_filters(ranked_scores={k: v for k, v in scores.items() if k in within}, match_keys=None)
        self._show_sort_arrow()
        self._update_status()

    def _show_sort_arrow(self) -> None:
        """The header's sort arrow shows while a column orders the rows, not while the ranking does
        (nor for a bank whose rows keep their file order)."""
        ranked = self.proxy.ranked_scores is not None
        self.table.horizontalHeader().setSortIndicatorShown(not ranked and not self.capabilities.ordered)

    def _update_status(self) -> None:
        shown = self.proxy.rowCount()
        live = self.model.live_count
        total = self.model.rowCount()
        caps = self.capabilities
        self.search.setPlaceholderText(
            f"search {live:,} {caps.noun if live == 1 else caps.nouns} (fuzzy, as you type)…"
        )
        self.search.setAccessibleName(f"Search {self.capabilities.nouns}")
        if self._building is not None:
            self.status.setText("loading…")
        elif self.search.text().strip() and not self.index.is_ready and not self.ranked.isChecked():
            self.status.setText("indexing…")
        elif self.ranked.isChecked() and self.search.text().strip():
            self.status.setText(f"{shown:,} ranked")
        elif self.day_keys is not None:
            self.status.setText(f"{shown:,} changed · {self.day_label}")
        elif shown != (total if self.history.isChecked() else live):
            self.status.setText(f"{shown:,} of {live:,}")
        else:
            self.status.setText(f"{live:,} live · {total - live:,} retired")

    # ------------------------------------------------------------------ selection

    def _selection_may_have_moved(self, *_args: object) -> None:
        selection = self.table.selectionModel().selection()
        rows = sum(selection.at(i).height() for i in range(selection.count()))  # ranges of whole rows
        if rows > 1000:  # a big selection: its size tells whether it changed
            if rows != len(self._selected_ids):
                self._on_selection()
            return
        if tuple(r.id for r in self.selected_records()) != self._selected_ids:
            self._on_selection()

    def _on_selection(self, *_args: object) -> None:
        records = self.selected_records()
        self._selected_ids = tuple(r.id for r in records)
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self._anchor = min(i.row() for i in rows)  # where a row deleted from view leaves its place
        if len(records) == 1:
            self.detail.show_record(records[0])
        elif records:
            self.detail.show_empty(f"{self.capabilities.count(len(records))} selected")
        else:
            self.detail.show_empty()
        self.selectionChangedTo.emit(records)

    def selected_records(self) -> list[Any]:
        """The records of the selected rows, in view order."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.proxy.index(r, 0).data(RecordRole) for r in rows]

    def select_key(self, key: str) -> bool:
        """Select and show the row of a memory id (showing history if it is retired)."""
        source_row = self.model.row_of(key)
        if source_row is None:
            return False
        record = self.model.row_object(source_row)
        if record.invalid_at is not None and not self.history.isChecked():
            self.history.setChecked(True)
        proxy_index = self.proxy.mapFromSource(self.model.index(source_row, COLUMN_INDEX["text"]))
        if not proxy_index.isValid():
            self.search.clear()
            self.chips.clear_choice()
            if self.day_keys is not None:
                self.strip.clear_range()
            proxy_index = self.proxy.mapFromSource(self.model.index(source_row, COLUMN_INDEX["text"]))
        if not proxy_index.isValid():
            return False
        self.table.selectionModel().setCurrentIndex(
            proxy_index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.table.scrollTo(proxy_index)
        return True

    def select_keys(self, keys: Any) -> int:
        """Select the rows of these keys (the graph's choice), the first one current; returns how many
        could be shown. Filters that hide them are dropped, as for :meth:`select_key`."""
        keys = [k for k in keys if self.model.row_of(k) is not None]
        if len(keys) <= 1:
            return int(bool(keys) and self.select_key(keys[0]))
        rows = [self.model.row_object(row) for k in keys if (row := self.model.row_of(k)) is not None]
        if any(r.invalid_at is not None for r in rows) and not self.history.isChecked():
            self.history.setChecked(True)
        text_column = COLUMN_INDEX["text"]

        def shown() -> list[QModelIndex]:
            found = (
                self.proxy.mapFromSource(self.model.index(row, text_column))
                for k in keys
                if (row := self.model.row_of(k)) is not None
            )
            return [i for i in found if i.isValid()]

        indexes = shown()
        if len(indexes) < len(keys) and (self.search.text() or self.chips.current is not None or self.day_keys):
            self.search.clear()
            self.chips.clear_choice()
            if self.day_keys is not None:
                self.strip.clear_range()
            indexes = shown()
        if not indexes:
            return 0
        selection = QItemSelection()
        for row in sorted({i.row() for i in indexes}):
            selection.select(self.proxy.index(row, 0), self.proxy.index(row, len(COLUMNS) - 1))
        model = self.table.selectionModel()
        model.select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        model.setCurrentIndex(indexes[0], QItemSelectionModel.SelectionFlag.NoUpdate)
        self.table.scrollTo(indexes[0])
        return len(indexes)

    def current_key(self) -> str | None:
        """The id of the current row."""
        index: QModelIndex = self.table.currentIndex()
        return index.data(KeyRole) if index.isValid() else None

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        """Escape anywhere in the panel (the table, the detail pane, a chip) clears the search; a
        widget that uses Escape itself (an open editor) has it first."""
        if (
            event.key() == Qt.Key.Key_Escape
            and event.modifiers() == Qt.KeyboardModifier.NoModifier
            and self.search.text()
        ):
            self.search.clear()
            event.accept()
            return
        super().keyPressEvent(event)

    def clear_search(self) -> None:
        """Esc in the search box: clear it; when it is empty already, back to the table."""
        if self.search.text():
            self.search.clear()
        else:
            self.table.setFocus()

    def focus_search(self) -> None:
        """Edit → Find."""
        self.search.setFocus()
        self.search.selectAll()
