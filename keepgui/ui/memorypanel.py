"""The Memories panel: filter bar, tag chips, the memory table and the detail panel.

Search follows typing: each keystroke asks the word index
(:class:`~keepgui.core.search.TextSearch`) for the matching keys and hands
them to the proxy as one bulk filter, a numpy bool per row. For a bank of more
than :data:`ASK_IN_BACKGROUND` rows the question goes to the search thread
(the newest one wins), which also works out the rows shown from the proxy's
sort order, so the GUI thread only swaps the answer in. The index for a big bank is built on a
background thread the first time; changes that arrive meanwhile are applied
when it is ready. The "Ranked" switch replaces the word filter by the recall
scorer's ranking (when the bank has one).

The panel owns its actions (pin, delete, restore, edit, copy, new memory,
what-if, history, ranked, columns): the window only puts them in its menus.
What a bank cannot do is greyed with the reason (its
:class:`~keepgui.core.source.Capabilities`); every write goes through the
``perform`` callable the window gives it (the window's undo stack), and the
rows come back through the hub's one ``changed`` signal.

Signals:
    MemoryPanel.selectionChangedTo(list records)
    MemoryPanel.rankingRequested(str query, int token): ranked mode needs recall scores;
        answer with :meth:`MemoryPanel.apply_ranking`.
    MemoryPanel.whatIfRequested(list keys, object pinned, object live): preview these rows as if
        pinned/unpinned or deleted/restored (nothing written).
    MemoryPanel.note(str): a status-bar note.
    MemoryPanel.warning(str): something to show in the window's banner (a keep that wrote nothing).
    MemoryPanel.retired(str text): rows were deleted or forgotten ("2 memories deleted"): offer Undo.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import (
    QAbstractItemModel,
    QByteArray,
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QScrollArea,
    QSplitter,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import pace
from keepgui.core.pace import made_old, unless_obsolete
from keepgui.core.rowtable import build_table, fit_mask, rows_mask
from keepgui.core.search import TextSearch
from keepgui.core.source import (
    CREATE,
    EDIT,
    HISTORY,
    KEEP,
    OURS,
    PIN,
    RANKED,
    TOMBSTONE,
    WHAT_IF,
    BankKey,
    Capabilities,
    Change,
)
from keepgui.ui import shortcuts
from keepgui.ui.activity import ActivityStrip
from keepgui.ui.columns import ColumnFitter
from keepgui.ui.commands import Outcome
from keepgui.ui.detail import DetailPanel
from keepgui.ui.dialogs import NewMemoryDialog, split_labels
from keepgui.ui.memorymodel import (
    COLUMN_INDEX,
    COLUMNS,
    NO_CAPABILITIES,
    KeyRole,
    Layout,
    MemoryProxyModel,
    MemoryTableModel,
    RecordRole,
    visible_rows,
)
from keepgui.ui.scores import ScoreDelegate

_POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="keepgui-index")
_INDEX_IN_PLACE = 256  # more changed rows than this are indexed in the background, from scratch (each row
# indexed on the GUI thread costs ~40 µs: 256 of them fit a frame)
_ASK = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-search")
ASK_IN_BACKGROUND = 20_000
"""A bank of more rows than this is searched off the GUI thread (the newest query wins); a smaller
one on it, at once (a few milliseconds at 10,000 rows)."""
_FOLLOW_LIMIT = 2000  # a person's change of more rows than this (a compaction) leaves the selection alone
BUILD_OFF_THREAD = 5000
"""A load (or a part of one) of more rows than this is built into a RowTable off the GUI thread
and swapped in whole; fewer are handed to the model directly."""
RANKED_TIP = (
    "Rank by the recall scorer — the worker's own ranking of what a turn would be given — "
    "instead of matching words (top 100)"
)


def past_participle(verb: str) -> str:
    """ "Delete" -> "deleted", "Forget" -> "forgotten": the verb of a Capabilities' ``retire``, done."""
    irregular = {"forget": "forgotten"}
    word = verb.lower()
    return irregular.get(word, word + ("d" if word.endswith("e") else "ed"))


def search_texts(row: Any) -> tuple[str, ...]:
    """What the search box matches for a row: its text, tags and entities."""
    return (row.text, *row.tags, *row.entities)


class _Delivery(QObject):
    done = Signal(object, object)


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
    """:func:`~keepgui.ui.memorymodel.visible_rows` of ``layout`` for ``rows``."""


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
    GUI thread, and asked either on the GUI thread (:meth:`match`) or on its own thread (:meth:`ask`,
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
        self._delivery = _Delivery(self)
        self._delivery.done.connect(self._on_built)
        self._latest = 0  # the newest question asked
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
            index: TextSearch[str] = TextSearch()
            index.set_many((r.id, search_texts(r)) for r in snapshot)
            index.freeze()
            if row_of is None:
                return index, None
            known = len(row_of)  # before the look-ups: rows appended meanwhile are looked up later
            return index, (known, _rows_of_keys(index.slot_keys(), row_of))

        future = _POOL.submit(made_old, build)  # a set per row: made old at once
        future.add_done_callback(lambda f: self._delivery.done.emit((generation, row_of), f))

    def _on_built(
        self,
        asked: tuple[int, dict[str, int] | None],
        future: Future[tuple[TextSearch[str], tuple[int, np.ndarray] | None]],
    ) -> None:
        generation, row_of_built = asked
        if generation != self._generation:
            return
        self._building = False
        if future.exception() is not None:
            return
        index, looked_up = future.result()
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
        """:meth:`match` on the search thread, and the rows it shows in the proxy's ``layout``;
        ``answered(token, match)`` follows unless a newer question was asked before this one's turn
        came."""
        self._latest = token

        def run() -> None:
            if token != self._latest:
                return
            match = self.match(query, row_of, n, day_keys)
            if token != self._latest:
                return  # asked again meanwhile: the rows shown would not be looked at
            if layout is not None and len(layout.order) == n:
                shown = visible_rows(layout.order, layout.rank, layout.live, layout.tagged, match.rows)
                match = Match(match.scores, match.rows, row_of, layout, shown)
            self.answered.emit(token, match)

        _ASK.submit(run)


class TagChips(QScrollArea):
    """One checkable chip per tag ("#style · 12"); clicking filters the table.

    Signals:
        tagChosen(object tag): a tag, or None for "all".
    """

    tagChosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
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
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()  # gone at once, not when the event loop gets to the deletion
                widget.deleteLater()
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

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setSortingEnabled(True)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed | QAbstractItemView.EditTrigger.DoubleClicked)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.setAccessibleName("Memories")

    def setModel(self, model: QAbstractItemModel | None) -> None:  # noqa: N802 - Qt override
        super().setModel(model)
        if model is None:
            return
        self._configure_columns()
        # QHeaderView forgets section sizes, order and hidden columns on every model
        # reset (a bank switch): carry its state across.
        self._header_state: QByteArray | None = None
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
        widths = {
            "pinned": 5,
            "live": 5,
            "text": 60,
            "tags": 16,
            "entities": 16,
            "seen": 6,
            "confidence": 10,
            "created": 13,
            "updated": 13,
            "revision": 5,
        }
        for i, column in enumerate(COLUMNS):
            self.setColumnWidth(i, max(40, widths[column.field] * char + 16))
        header.setSectionResizeMode(COLUMN_INDEX["text"], QHeaderView.ResizeMode.Stretch)
        header.setSortIndicator(COLUMN_INDEX["updated"], Qt.SortOrder.DescendingOrder)


class MemoryPanel(QWidget):
    """Filter bar + table + detail for one bank at a time, and the actions on its rows."""

    selectionChangedTo = Signal(list)
    rankingRequested = Signal(str, int)
    whatIfRequested = Signal(list, object, object)
    note = Signal(str)
    warning = Signal(str)
    retired = Signal(str)

    def __init__(
        self,
        hub: Any = None,
        settings: Any = None,
        perform: Callable[[BankKey, Callable[[Any], Change], str | None], Outcome] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.hub = hub
        self.settings = settings
        self.perform = perform
        self.key: BankKey | None = None
        self.model = MemoryTableModel(self)
        self.proxy = MemoryProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.index = SearchIndex(self)
        self.index.ready.connect(self._apply_query)
        self.index.answered.connect(self._on_answer)
        self._asking: int | None = None  # the token of the search being answered off the GUI thread
        self._ask_token = 0
        self._built = _Delivery(self)
        self._built.done.connect(self._on_built)
        self._build_token = 0
        self._build_replaced = threading.Event()  # set once the table being built is no longer wanted
        self._building: int | None = None  # the token of a RowTable being built
        self._building_after: list[Change] = []
        self._parts_shown = False  # the bank shown arrives in parts (a long load) and is not complete yet
        self._tag_counter: Counter[str] = Counter()
        self.ranking_available = False
        self._ranking_token = 0
        self._tag_counts: list[tuple[str, int]] | None = None  # what the chips show
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
        self.splitter.splitterMoved.connect(lambda *_: self._sync_details_action())

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
        self._clock = QTimer(self)
        self._clock.setInterval(60_000)
        self._clock.timeout.connect(self.model.tick)
        self._clock.start()
        self._build_actions()
        if hub is not None:
            hub.changed.connect(self._on_change)
            hub.historyReady.connect(
                lambda key, row, revisions: self.detail.set_history(row, revisions) if key == self.key else None
            )
            hub.rankingReady.connect(
                lambda key, token, scores: self.apply_ranking(token, scores) if key == self.key else None
            )
            self.rankingRequested.connect(self._request_ranking)
        self.model.toggleRequested.connect(self._on_toggle)
        self.model.editRequested.connect(self._on_edit)
        self.selectionChangedTo.connect(self._update_actions)
        self.detail.memoryLinkActivated.connect(self.select_key)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._table_menu)
        self._update_status()
        self._update_actions([])

    # ------------------------------------------------------------------ actions

    def _build_actions(self) -> None:
        def a(*args: Any, **kwargs: Any) -> QAction:
            return shortcuts.make_action(self, *args, **kwargs)

        self.act_new_memory = a("&New memory…", self.new_memory, shortcuts.NEW_MEMORY, "Save a new memory")
        self.act_edit = a(
            "&Edit memory",
            self.edit_current,
            shortcuts.EDIT_MEMORY,
            "Edit the selected memory's text in place (a new revision)",
        )
        self.act_copy = a("&Copy text", self.copy_selected, shortcuts.COPY, "Copy the selected memories' text")
        self.act_pin = a(
            "&Pin",
            lambda: self.set_pinned(True),
            shortcuts.PIN,
            "Pin the selected memories (untouchable by automatic paths)",
            icon="pin",
        )
        self.act_unpin = a("U&npin", lambda: self.set_pinned(False), shortcuts.UNPIN, "Unpin the selected memories")
        self.act_delete = a(
            "&Delete (tombstone)",
            lambda: self.set_live(False),
            shortcuts.TOMBSTONE,
            "Tombstone the selected memories; they stay in the log and can be restored",
            icon="tombstone",
        )
        self.act_restore = a(
            "&Restore",
            lambda: self.set_live(True),
            shortcuts.RESTORE,
            "Bring deleted or superseded memories back",
            icon="restore",
        )
        self.act_history = a(
            "Show &history",
            self.set_show_history,
            shortcuts.SHOW_HISTORY,
            "Show deleted and superseded memories",
            checkable=True,
        )
        self.act_ranked = a(
            "&Ranked search",
            self.ranked.setChecked,
            shortcuts.RANKED,
            "Order search results by the recall scorer",
            checkable=True,
        )
        self.act_details = a(
            "Show &details",
            self.set_details_shown,
            shortcuts.DETAILS,
            "Show the selected row's every field and its history beside the table",
            checkable=True,
        )
        self.act_details.setChecked(True)
        self.act_fit_columns = a(
            "&Fit columns to content",
            self.columns.forget_manual,
            tip="Size every column to what it shows again, also those resized by hand",
        )
        self.act_activity = a(
            "&Activity strip",
            self.strip.setVisible,
            shortcuts.ACTIVITY_STRIP,
            "Show captures per day above the table; click or drag days to show what changed then",
            checkable=True,
        )
        self.act_activity.setChecked(True)
        self.history.toggled.connect(self._sync_history_action)
        self.ranked.toggled.connect(self._sync_ranked_action)
        self.row_actions = [
            self.act_edit,
            self.act_copy,
            self.act_pin,
            self.act_unpin,
            self.act_delete,
            self.act_restore,
        ]
        self.column_actions: list[QAction] = []
        hidden = set(self.settings.hidden_columns()) if self.settings is not None else set()
        for i, column in enumerate(COLUMNS):
            action = QAction(column.title, self)
            action.setCheckable(True)
            action.setChecked(column.field not in hidden)
            action.toggled.connect(lambda on, col=i: self._set_column_visible(col, on))
            self.column_actions.append(action)
            self.table.setColumnHidden(i, column.field in hidden)

    def actions_for_menus(self) -> list[QAction]:
        """Every action of the panel (the window adds them to itself so their shortcuts work)."""
        return [
            self.act_new_memory,
            *self.row_actions,
            self.act_history,
            self.act_ranked,
            self.act_activity,
            self.act_details,
        ]

    def details_shown(self) -> bool:
        """True when the detail pane has some width."""
        return self.splitter.sizes()[1] > 0

    def set_details_shown(self, shown: bool) -> None:
        """View → Show details: fold the detail pane away, or give it back its share."""
        if shown == self.details_shown():
            return
        total = sum(self.splitter.sizes()) or self.splitter.width()
        detail = max(self.detail.minimumSizeHint().width(), total // 4) if shown else 0
        self.splitter.setSizes([total - detail, detail])
        self._sync_details_action()

    def _sync_details_action(self) -> None:
        self.act_details.blockSignals(True)
        self.act_details.setChecked(self.details_shown())
        self.act_details.blockSignals(False)

    @property
    def capabilities(self) -> Capabilities:
        """What the shown bank can do."""
        return self.model.capabilities

    def _update_actions(self, records: list[Any]) -> None:
        has = bool(records) and self.key is not None
        caps = self.capabilities
        live = [r for r in records if r.invalid_at is None]
        retired = [r for r in records if r.invalid_at is not None]
        self.act_pin.setEnabled(has and caps.can(PIN) and any(not r.pinned for r in live))
        self.act_unpin.setEnabled(has and caps.can(PIN) and any(r.pinned for r in live))
        self.act_delete.setEnabled(has and caps.can(TOMBSTONE) and bool(live))
        self.act_restore.setEnabled(has and caps.can(TOMBSTONE) and bool(retired))
        self.act_edit.setEnabled(len(records) == 1 and caps.can(EDIT))
        self.act_copy.setEnabled(has)
        self.act_new_memory.setEnabled(self.key is not None and (caps.can(CREATE) or caps.can(KEEP)))
        for action, what in (
            (self.act_pin, PIN),
            (self.act_unpin, PIN),
            (self.act_delete, TOMBSTONE),
            (self.act_restore, TOMBSTONE),
        ):
            why = caps.why_not(what)
            action.setToolTip(why or action.statusTip())
        if len(records) == 1 and self.key is not None and self.hub is not None and caps.can(HISTORY):
            self.hub.request_history(self.key, records[0].id)

    def _sync_history_action(self, on: bool) -> None:
        """The History checkbox changed (itself, or from the action): the one place it is saved."""
        self.act_history.blockSignals(True)
        self.act_history.setChecked(on)
        self.act_history.blockSignals(False)
        if self.settings is not None:
            self.settings.set_show_history(on)

    def _sync_ranked_action(self, on: bool) -> None:
        self.act_ranked.blockSignals(True)
        self.act_ranked.setChecked(on)
        self.act_ranked.blockSignals(False)

    def _set_column_visible(self, column: int, visible: bool) -> None:
        self.table.setColumnHidden(column, not visible or self._column_not_applicable(column))
        if self.settings is not None:
            hidden = [COLUMNS[i].field for i, a in enumerate(self.column_actions) if not a.isChecked()]
            self.settings.set_hidden_columns(hidden)

    def _column_not_applicable(self, column: int) -> bool:
        return COLUMNS[column].field not in self.capabilities.fields

    def _apply_column_visibility(self) -> None:
        # A backend's rows may lack tags, entities, dates or revisions: those columns would
        # only be empty. A toggle column stays, greyed, with its tooltip saying why.
        for i, action in enumerate(self.column_actions):
            self.table.setColumnHidden(i, not action.isChecked() or self._column_not_applicable(i))

    # ------------------------------------------------------------------ the bank shown

    def set_bank(self, key: BankKey | None) -> None:
        """Show a bank (its rows arrive through the hub), or nothing."""
        self.key = key
        self._fitted = None
        caps = self.hub.capabilities(key) if key is not None and self.hub is not None else NO_CAPABILITIES
        self.strip.set_bank(key)  # drops a day range of the bank shown before
        self.reset_rows([], caps)
        self._apply_column_visibility()
        table = self.table
        if caps.ordered:
            # Rows in file order: header clicks (and header restores) must not re-sort them.
            table.setSortingEnabled(False)
            table.horizontalHeader().setSortIndicatorShown(False)
            self.proxy.sort_by_field("position")
        else:
            table.horizontalHeader().setSortIndicatorShown(True)
            table.setSortingEnabled(True)  # sorts by the header's indicator
        noun = caps.nouns
        self.act_delete.setText(f"&{caps.retire}" + (" (tombstone)" if caps.retire == "Delete" else ""))
        self.history.setToolTip(f"Show retired {noun} (struck through)")
        self._update_actions([])

    def _on_change(self, change: Change) -> None:
        if self.key is None or change.key != self.key or not change.rows:
            return
        delta = change.rows
        if change.partial:
            self._parts_shown = True
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
        # Its dict and lists made old at once; stopped when a newer delivery (or another bank) replaces
        # it (an Event, not this widget, is what the background thread looks at).
        self._build_replaced.set()
        replaced = self._build_replaced = threading.Event()
        future = _POOL.submit(made_old, lambda: unless_obsolete(lambda: build_table(rows, field), replaced.is_set))
        future.add_done_callback(lambda f: self._built.done.emit((token, field, final), f))
        self._update_status()

    def _on_built(self, what: Any, future: Any) -> None:
        token, field, final = what
        if token != self._build_token or future.exception() is not None:
            return
        table = future.result()
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

    # ------------------------------------------------------------------ writes

    def _on_tag_chosen(self, tag: str | None) -> None:
        self.proxy.set_filters(tag=tag)
        self._update_status()

    def _request_ranking(self, query: str, token: int) -> None:
        if self.key is not None and self.hub is not None:
            self.hub.request_ranking(self.key, query, token)

    def _perform(self, operation: Callable[[Any], Change], text: str | None = None) -> Change | None:
        if self.key is None or self.perform is None:
            return None
        return self.perform(self.key, operation, text).change  # None when the write failed (the window said why)

    def set_pinned(self, pinned: bool, records: list[Any] | None = None) -> None:
        """Pin or unpin the selection (one undo step)."""
        targets = [
            r
            for r in (records if records is not None else self.selected_records())
            if r.invalid_at is None and bool(r.pinned) != pinned
        ]
        if targets and self.capabilities.can(PIN):
            ids = [r.id for r in targets]
            self._perform(lambda bank: bank.set_pinned(ids, pinned))

    def set_live(self, live: bool, records: list[Any] | None = None) -> None:
        """Retire or restore the selection (one undo step)."""
        targets = [
            r for r in (records if records is not None else self.selected_records()) if (r.invalid_at is None) != live
        ]
        if targets and self.capabilities.can(TOMBSTONE):
            ids = [r.id for r in targets]
            caps = self.capabilities
            change = self._perform(lambda bank: bank.set_live(ids, live))
            if not live and change is not None and change.written:
                self.retired.emit(f"{caps.count(len(ids))} {past_participle(caps.retire)}")

    def _on_toggle(self, keys: list[str], field: str, value: bool) -> None:
        selected = self.selected_records()
        # a click on a selected row's box applies to the whole selection
        records = (
            selected
            if any(r.id in keys for r in selected)
            else [self.model.row_object(row) for k in keys if (row := self.model.row_of(k)) is not None]
        )
        if field == "pinned":
            self.set_pinned(value, records)
        else:
            self.set_live(value, records)

    def _on_edit(self, key: str, field: str, text: str) -> None:
        value: str | list[str] = text if field == "text" else split_labels(text)
        self._perform(lambda bank: bank.edit(key, field, value))

    def new_memory(self) -> None:
        """Edit → New memory: a memory with its fields, or a fact to keep where rows are kept facts."""
        if self.key is None:
            return
        caps = self.capabilities
        if caps.can(CREATE):
            bank = self.hub.bank(self.key)
            dialog = NewMemoryDialog(
                self.key.bank,
                bank.text_problem,
                self,
                tags=caps.can("tags"),
                entities=caps.can("entities"),
                pin=caps.can(PIN),
            )
            if dialog.exec():
                text, tags, entities, pinned = dialog.values()
                self._perform(lambda b: b.create(text, tags, entities, pinned))
        elif caps.can(KEEP):
            self.keep_fact_dialog()

    def keep_fact_dialog(self) -> None:
        """Ask for a fact and keep it in the shown bank (with the backend's own checks)."""
        if self.key is None:
            return
        text, ok = QInputDialog.getText(self, "Keep a fact", f"Fact to keep in {self.key.bank}:")
        if ok and text.strip():
            change = self._perform(lambda bank: bank.keep(text), "Keep fact")
            if change is not None:
                self.report_keep(change)

    def report_keep(self, change: Change) -> None:
        """Say what keeping a fact did (kept, already kept, a suggestion, warnings)."""
        if change.written:
            self.note.emit(change.message)
        elif change.message:
            self.warning.emit(change.message)

    def edit_current(self) -> None:
        """Edit → Edit memory: open the in-place editor on the text cell."""
        index = self.table.currentIndex()
        if index.isValid():
            self.table.edit(index.siblingAtColumn(COLUMN_INDEX["text"]))

    def copy_selected(self) -> None:
        """Edit → Copy text."""
        records = self.selected_records()
        if records:
            QGuiApplication.clipboard().setText("\n".join(r.text for r in records))

    def what_if(self, pinned: bool | None = None, live: bool | None = None) -> None:
        """Memory → What if…: preview a pin or delete without writing it."""
        keys = [r.id for r in self.selected_records()]
        if keys:
            self.whatIfRequested.emit(keys, pinned, live)

    def _table_menu(self, pos: Any) -> None:
        menu = QMenu(self)
        for action in (
            self.act_pin,
            self.act_unpin,
            None,
            self.act_delete,
            self.act_restore,
            None,
            self.act_edit,
            self.act_copy,
            None,
            self.act_new_memory,
        ):
            menu.addSeparator() if action is None else menu.addAction(action)
        if self.capabilities.can(WHAT_IF) and self.selected_records():
            whatif = menu.addMenu("What if… (preview only, nothing written)")
            whatif.addAction("…pinned", lambda: self.what_if(pinned=True))
            whatif.addAction("…unpinned", lambda: self.what_if(pinned=False))
            whatif.addAction("…deleted", lambda: self.what_if(live=False))
            whatif.addAction("…restored", lambda: self.what_if(live=True))
        menu.exec(self.table.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------------ feeding rows

    def reset_rows(self, rows: list[Any], capabilities: Capabilities) -> None:
        """A bank was opened: show its rows (possibly the first part of a long load)."""
        self._build_token += 1  # a table still being built for the bank shown before is not shown
        self._build_replaced.set()
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

    # ------------------------------------------------------------------ filtering

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
        self.search.setPlaceholderText(f"search {live:,} {self.capabilities.nouns} (fuzzy, as you type)…")
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

    def _on_selection(self, *_args: object) -> None:
        records = self.selected_records()
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
