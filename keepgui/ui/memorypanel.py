"""The Memories panel: filter bar, tag chips, the memory table and the detail panel.

Search follows typing: each keystroke asks the word index
(:class:`~keepgui.core.search.TextSearch`) for the matching keys and hands
them to the proxy as one bulk filter. The index for a big bank is built on a
background thread the first time; changes that arrive meanwhile are applied
when it is ready. The "Ranked" switch replaces the word filter by the recall
scorer's ranking (when the bank has one).

Signals:
    MemoryPanel.selectionChangedTo(list records)
    MemoryPanel.rankingRequested(str query, int token): ranked mode needs recall scores;
        answer with :meth:`MemoryPanel.apply_ranking`.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QFrame, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QScrollArea,
    QSplitter, QTableView, QToolButton, QVBoxLayout, QWidget,
)

from keepgui.core.search import TextSearch
from keepgui.ui.detail import DetailPanel
from keepgui.ui.memorymodel import COLUMN_INDEX, COLUMNS, KeyRole, MemoryProxyModel, MemoryTableModel, RecordRole

_POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="keepgui-index")
_INDEX_IN_PLACE = 2000  # more changed rows than this are indexed in the background, from scratch
RANKED_TIP = ("Rank by the recall scorer — the worker's own ranking of what a turn would be given — "
              "instead of matching words (top 100)")


def search_texts(row: Any) -> tuple[str, ...]:
    """What the search box matches for a row: its text, tags and entities."""
    return (row.text, *row.tags, *row.entities)


class _Delivery(QObject):
    done = Signal(object, object)


class SearchIndex(QObject):
    """A TextSearch kept in step with the table model, built off the GUI thread.

    Signals:
        ready(): the index can answer queries.
    """

    ready = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._index: TextSearch | None = None
        self._pending: list[Any] = []
        self._generation = 0
        self._delivery = _Delivery(self)
        self._delivery.done.connect(self._on_built)

    @property
    def is_ready(self) -> bool:
        """True once queries can be answered."""
        return self._index is not None

    def rebuild(self, rows: list[Any]) -> None:
        """Index these rows from scratch in the background."""
        self._generation += 1
        generation = self._generation
        self._index = None
        self._pending = []
        snapshot = list(rows)

        def build() -> TextSearch:
            index = TextSearch()
            index.set_many((r.id, search_texts(r)) for r in snapshot)
            return index

        future = _POOL.submit(build)
        future.add_done_callback(lambda f: self._delivery.done.emit(generation, f))

    def _on_built(self, generation: int, future) -> None:
        if generation != self._generation or future.exception() is not None:
            return
        index = future.result()
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

    def update(self, rows: list[Any]) -> None:
        """Rows changed or were added (a handful: indexed in place)."""
        if self._index is None:
            self._pending.extend(rows)
            return
        for row in rows:
            self._index.set(row.id, *search_texts(row))

    def remove(self, keys) -> None:
        """Rows disappeared (keep.md entries)."""
        if self._index is not None:
            for key in keys:
                self._index.remove(key)

    def search(self, query: str) -> dict | None:
        """Matching keys with scores; None while the index is being built."""
        return None if self._index is None else self._index.search(query)


class TagChips(QScrollArea):
    """One checkable chip per tag ("#style · 12"); clicking filters the table.

    Signals:
        tagChosen(object tag): a tag, or None for "all".
    """

    tagChosen = Signal(object)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._inner = QWidget()
        self._layout = QHBoxLayout(self._inner)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self.setWidget(self._inner)
        self.setFixedHeight(34)
        self._buttons: dict[str, QToolButton] = {}
        self._current: str | None = None

    def set_counts(self, counts: list[tuple[str, int]]) -> None:
        """Show these tags (count descending, then name)."""
        while self._layout.count():
            item = self._layout.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        self._buttons = {}
        for tag, count in counts:
            button = QToolButton(self._inner)
            button.setText(f"#{tag} · {count}")
            button.setCheckable(True)
            button.setChecked(tag == self._current)
            button.setAutoRaise(True)
            button.setAccessibleName(f"Filter by tag {tag} ({count} memories)")
            button.setToolTip(f"Show only memories tagged #{tag}")
            button.toggled.connect(lambda on, t=tag: self._choose(t if on else None))
            self._layout.addWidget(button)
            self._buttons[tag] = button
        self._layout.addStretch(1)
        if self._current is not None and self._current not in self._buttons:
            self._choose(None)

    def _choose(self, tag: str | None) -> None:
        if tag == self._current:
            return
        self._current = tag
        for name, button in self._buttons.items():
            button.blockSignals(True)
            button.setChecked(name == tag)
            button.blockSignals(False)
        self.tagChosen.emit(tag)

    def clear_choice(self) -> None:
        """Drop the tag filter."""
        self._choose(None)

    @property
    def current(self) -> str | None:
        """The chosen tag."""
        return self._current


class MemoryTableView(QTableView):
    """The table: row selection, fixed row height (fast at 100,000 rows), sortable header."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setSortingEnabled(True)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed
                             | QAbstractItemView.EditTrigger.DoubleClicked)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.setAccessibleName("Memories")

    def setModel(self, model) -> None:  # noqa: N802 - Qt override
        super().setModel(model)
        self._configure_columns()
        # QHeaderView forgets section sizes, order and hidden columns on every model
        # reset (a bank switch): carry its state across.
        self._header_state = None
        model.modelAboutToBeReset.connect(self._keep_header)
        model.modelReset.connect(self._restore_header)

    def _keep_header(self) -> None:
        self._header_state = self.horizontalHeader().saveState()

    def _restore_header(self) -> None:
        if self._header_state is not None:
            self.horizontalHeader().restoreState(self._header_state)

    def _configure_columns(self) -> None:
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setSectionsMovable(True)
        char = self.fontMetrics().averageCharWidth()
        widths = {"pinned": 5, "live": 5, "text": 60, "tags": 16, "entities": 16, "seen": 6,
                  "confidence": 10, "created": 13, "updated": 13, "revision": 5}
        for i, column in enumerate(COLUMNS):
            self.setColumnWidth(i, max(40, widths[column.field] * char + 16))
        header.setSectionResizeMode(COLUMN_INDEX["text"], QHeaderView.ResizeMode.Stretch)
        header.setSortIndicator(COLUMN_INDEX["updated"], Qt.SortOrder.DescendingOrder)


class MemoryPanel(QWidget):
    """Filter bar + table + detail for one bank at a time."""

    selectionChangedTo = Signal(list)
    rankingRequested = Signal(str, int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.model = MemoryTableModel(self)
        self.proxy = MemoryProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.index = SearchIndex(self)
        self.index.ready.connect(self._apply_query)
        self.ranking_available = False
        self._ranking_token = 0
        self._tag_counts: list[tuple[str, int]] | None = None  # what the chips show

        self.search = QLineEdit(self)
        self.search.setClearButtonEnabled(True)
        self.search.setPlaceholderText("search memories (fuzzy, as you type)…")
        self.search.setAccessibleName("Search memories")
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

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.ranked)
        bar.addWidget(self.history)
        bar.addWidget(self.status)

        self.table = MemoryTableView(self)
        self.table.setModel(self.proxy)
        self.detail = DetailPanel(self)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([900, 320])

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.chips)
        layout.addWidget(self.splitter, 1)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(0)  # coalesce a burst of key events into one filter pass
        self._debounce.timeout.connect(self._apply_query)
        self.search.textChanged.connect(lambda _: self._debounce.start())
        self.ranked.toggled.connect(lambda _: self._apply_query())
        self.history.toggled.connect(self._on_history)
        self.chips.tagChosen.connect(lambda tag: self.proxy.set_filters(tag=tag) or self._update_status())
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self._clock = QTimer(self)
        self._clock.setInterval(60_000)
        self._clock.timeout.connect(self.model.tick)
        self._clock.start()
        self._update_status()

    # ------------------------------------------------------------------ feeding rows

    def reset_rows(self, rows: list[Any], capabilities) -> None:
        """A bank was opened: show its rows (possibly the first part of a long load)."""
        self.model.reset_rows(rows, capabilities)
        self.index.rebuild(rows)
        self.ranking_available = capabilities.can("ranked")
        self.ranked.setEnabled(self.ranking_available)
        self.ranked.setToolTip(RANKED_TIP if self.ranking_available else capabilities.why_not("ranked"))
        if not self.ranking_available:
            self.ranked.setChecked(False)
        self.detail.show_empty()
        self._refresh_tags()
        self._apply_query()

    def upsert_rows(self, rows: list[Any], final: bool = False) -> None:
        """Rows arrived or changed; ``final`` means these are all the bank's rows."""
        tags_moved = self._tags_moved(rows)
        if final:
            keys = {r.id for r in rows}
            gone = [r.id for r in self.model.rows() if r.id not in keys]
            if gone:
                self.model.remove_keys(gone)
                self.index.remove(gone)
                tags_moved = True
        self.model.upsert(rows)
        if final and (len(rows) > _INDEX_IN_PLACE or not self.index.is_ready):
            self.index.rebuild(self.model.rows())  # off the GUI thread
        elif len(rows) > _INDEX_IN_PLACE:
            self.index.invalidate()  # a chunk of a long load; indexed once it is complete
        else:
            self.index.update(rows)
        current = self.detail.record
        if current is not None:
            row = self.model.row_of(current.id)
            if row is not None and self.model.row_object(row) is not current:
                self.detail.show_record(self.model.row_object(row))
                self.selectionChangedTo.emit(self.selected_records())
        if tags_moved:
            self._refresh_tags()
        if self.search.text().strip():
            self._apply_query()
        else:
            self._update_status()

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

    def _refresh_tags(self) -> None:
        counts: dict[str, int] = {}
        for row in self.model.rows():
            if row.invalid_at is None:
                for tag in row.tags:
                    counts[tag] = counts.get(tag, 0) + 1
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if ordered != self._tag_counts:  # recreating every chip is the costly part
            self._tag_counts = ordered
            self.chips.set_counts(ordered)
        self.chips.setVisible(bool(counts))

    # ------------------------------------------------------------------ filtering

    def _on_history(self, on: bool) -> None:
        self.proxy.set_filters(show_history=on)
        self._update_status()

    def set_show_history(self, on: bool) -> None:
        """View → Show history."""
        self.history.setChecked(on)

    def _apply_query(self) -> None:
        query = self.search.text()
        if self.ranked.isChecked() and self.ranking_available and query.strip():
            self._ranking_token += 1
            self.rankingRequested.emit(query, self._ranking_token)
            self.status.setText("ranking…")
            return
        if query.strip():
            matches = self.index.search(query)
            self.model.set_scores(matches or {})
            self.proxy.set_filters(ranked_scores=None, match_keys=None if matches is None else set(matches))
        else:
            self.model.set_scores({})
            self.proxy.set_filters(ranked_scores=None, match_keys=None)
        self._update_status()

    def apply_ranking(self, token: int, scores) -> None:
        """Recall scores for the ranked search arrived (ignored if the person typed on)."""
        if token != self._ranking_token or not self.ranked.isChecked():
            return
        if isinstance(scores, Exception):
            self.status.setText(f"ranking failed: {scores}")
            return
        self.model.set_scores(scores)
        self.proxy.set_filters(ranked_scores=dict(scores), match_keys=None)
        self._update_status()

    def _update_status(self) -> None:
        shown = self.proxy.rowCount()
        live = self.model.live_count
        total = self.model.rowCount()
        self.search.setPlaceholderText(f"search {live:,} memories (fuzzy, as you type)…")
        if self.search.text().strip() and not self.index.is_ready and not self.ranked.isChecked():
            self.status.setText("indexing…")
        elif self.ranked.isChecked() and self.search.text().strip():
            self.status.setText(f"{shown:,} ranked")
        elif shown != (total if self.history.isChecked() else live):
            self.status.setText(f"{shown:,} of {live:,}")
        else:
            self.status.setText(f"{live:,} live · {total - live:,} retired")

    # ------------------------------------------------------------------ selection

    def _on_selection(self, *_args) -> None:
        records = self.selected_records()
        if len(records) == 1:
            self.detail.show_record(records[0])
        elif records:
            self.detail.show_empty(f"{len(records)} memories selected")
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
            proxy_index = self.proxy.mapFromSource(self.model.index(source_row, COLUMN_INDEX["text"]))
        if not proxy_index.isValid():
            return False
        self.table.selectionModel().setCurrentIndex(
            proxy_index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.table.scrollTo(proxy_index)
        return True

    def current_key(self) -> str | None:
        """The id of the current row."""
        index: QModelIndex = self.table.currentIndex()
        return index.data(KeyRole) if index.isValid() else None

    def focus_search(self) -> None:
        """Edit → Find."""
        self.search.setFocus()
        self.search.selectAll()

