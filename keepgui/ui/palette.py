"""The command palette (Ctrl+K): one box that finds banks, memories, keep.md entries, documents and
every menu action, in every open source.

Everything is found through the protocol (:mod:`keepgui.core.source`): a bank's
rows, whatever its backend calls them, and its documents; the window's menus
give the actions. Searching stays off the GUI thread: :class:`PaletteIndex`
keeps one word index (:class:`~keepgui.core.search.TextSearch`) per loaded bank,
built on a background thread and rebuilt only for a bank whose rows changed
since, plus a small one of the actions, banks and documents made each time the
palette opens. Each keystroke is one question to that thread; only the newest
is answered, and the GUI thread receives at most :data:`SHOWN` results to draw.
At 100,000 memories a keystroke costs the GUI thread the drawing of a short list.

Signals:
    CommandPalette.chosen(object entry): a result was chosen (Enter, click); the window carries it out.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Protocol

from PySide6.QtCore import (
    QAbstractListModel,
    QEvent,
    QModelIndex,
    QObject,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence, QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.errors import KeepguiError
from keepgui.core.search import TextSearch
from keepgui.core.source import Bank, BankKey, Change, Row
from keepgui.core.textdiff import shown_text
from keepgui.ui import theme
from keepgui.ui.hub import Hub
from keepgui.ui.scores import Index, paint_with_room
from keepgui.ui.tasks import lane

SHOWN = 50
"""Results drawn for one query."""
PER_BANK = 200
"""Best rows of each bank considered for one query (the list shows the best of all of them)."""

ACTION, BANK, DOCUMENT, ROW = "action", "bank", "document", "row"
_ORDER = {ACTION: 0, BANK: 1, DOCUMENT: 2, ROW: 3}
_BOOST = {ACTION: 6.0, BANK: 5.0, DOCUMENT: 4.0, ROW: 0.0}  # equal words: a command before a memory


@dataclass(frozen=True)
class Entry:
    """One thing the palette can find: its kind, what the list shows, and what choosing it does
    (``target``: the QAction, the BankKey, or ``(BankKey, row key or document name)``)."""

    kind: str
    title: str
    detail: str
    target: Any = field(compare=False)
    score: float = 0.0


def _plain(text: str) -> str:
    """A menu text without its mnemonic ampersands."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def menu_actions(menus: list[QMenu]) -> list[tuple[QAction, str]]:
    """Every action reachable in these menus with its menu path ("Edit › Undo"), in menu order."""
    out: list[tuple[QAction, str]] = []

    def walk(menu: QMenu, path: str) -> None:
        for action in menu.actions():
            if action.isSeparator():
                continue
            sub = action.menu()
            name = _plain(action.text())
            if isinstance(sub, QMenu):
                walk(sub, f"{path} › {name}" if path else name)
            elif name:
                out.append((action, f"{path} › {name}" if path else name))

    for menu in menus:
        walk(menu, _plain(menu.title()))
    return out


class PaletteIndex(QObject):
    """The word indexes the palette searches, kept and queried on one background thread.

    Signals:
        answered(int token, list entries, list indexing): the best entries for question ``token``, and
            the banks whose rows are still being indexed (their rows come in a later answer).
    """

    answered = Signal(int, list, list)

    def __init__(self, hub: Hub, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self._lane = lane("palette")  # the index's own: builds and questions in the order asked
        self._lock = threading.Lock()
        # a loaded bank's rows: key -> (generation indexed, word index, rows by key, the rows' noun)
        self._banks: dict[BankKey, tuple[int, TextSearch[str], dict[str, Row], str]] = {}
        self._generation: dict[BankKey, int] = {}
        self._fixed: tuple[TextSearch[int], dict[int, Entry]] = (TextSearch(), {})  # actions, banks, documents
        self._indexing: set[BankKey] = set()  # banks whose rows are queued for indexing
        hub.changed.connect(self._on_change)

    def _on_change(self, change: Change) -> None:
        key = change.key
        if key is not None and change.rows:
            with self._lock:
                self._generation[key] = self._generation.get(key, 0) + 1

    def shutdown(self) -> None:
        """Stop the background thread (the window is closing)."""
        self._lane.close(wait=False)

    # ------------------------------------------------------------------ what can be found

    def refresh(self, actions: list[tuple[QAction, str]], banks: list[tuple[BankKey, str]]) -> None:
        """The palette opens: index the actions and banks now shown, then (in the background) the banks'
        documents and, for every loaded bank whose rows changed since, its rows."""
        entries: list[Entry] = []
        for action, path in actions:
            keys = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            entries.append(Entry(ACTION, path, keys, action))
        for key, detail in banks:
            entries.append(Entry(BANK, key.bank, detail, key))
        loaded = [key for key, _detail in banks if self.hub.is_loaded(key)]
        bank_objects = {key: self.hub.bank(key) for key, _detail in banks if key.source in self.hub.sources}
        with self._lock:
            self._indexing |= {k for k in loaded if self._banks.get(k, (None,))[0] != self._generation.get(k, 0)}

        def build() -> None:
            fixed = list(entries)
            for key, bank in bank_objects.items():
                try:
                    for name, title in bank.documents().list():
                        fixed.append(Entry(DOCUMENT, title, f"document of {key.bank}", (key, name)))
                except (KeepguiError, OSError):
                    continue  # a bank whose documents cannot be listed just now shows none
            index: TextSearch[int] = TextSearch()
            by_key: dict[int, Entry] = {}
            for i, entry in enumerate(fixed):
                index.set(i, entry.title, entry.detail if entry.kind != ACTION else "")
                by_key[i] = entry
            with self._lock:
                self._fixed = (index, by_key)
                wanted = {k: self._generation.get(k, 0) for k in loaded}
                stale = [k for k, g in wanted.items() if self._banks.get(k, (None,))[0] != g]
                for gone in set(self._banks) - set(wanted):
                    del self._banks[gone]
            for key in stale:
                self._index_bank(key, wanted[key], bank_objects[key])
            with self._lock:
                self._indexing.clear()

        self._lane.run(build)

    def _index_bank(self, key: BankKey, generation: int, bank: Bank) -> None:
        try:
            rows = list(bank.rows())
            noun = bank.capabilities.noun
        except (KeepguiError, OSError):
            return
        index: TextSearch[str] = TextSearch()
        by_key: dict[str, Row] = {}
        index.set_many((row.id, (row.text, *row.tags, *row.entities)) for row in rows)
        for row in rows:
            by_key[row.id] = row
        with self._lock:
            self._banks[key] = (generation, index, by_key, noun)
            self._indexing.discard(key)

    # ------------------------------------------------------------------ asking

    def ask(self, query: str, token: int) -> None:
        """The best entries for ``query`` (answered by ``answered``, unless a newer question came)."""

        def run() -> tuple[list[Entry], list[str]]:
            found = self.search(query)
            with self._lock:
                indexing = sorted(key.bank for key in self._indexing)
            return found, indexing

        # The person typing on makes a question still queued not worth answering: the newest wins.
        self._lane.run(run, lambda answer: self.answered.emit(token, *answer), owner=self, newest="ask")

    def search(self, query: str) -> list[Entry]:
        """The best :data:`SHOWN` entries for ``query`` (call on the palette's thread)."""
        with self._lock:
            index, fixed = self._fixed
            banks = list(self._banks.items())
        if not query.strip():
            return sorted(fixed.values(), key=lambda e: _ORDER[e.kind])[:SHOWN]
        found: list[Entry] = []
        for i, score in index.search(query).items():
            entry = fixed[i]
            found.append(Entry(entry.kind, entry.title, entry.detail, entry.target, score + _BOOST[entry.kind]))
        for key, (_generation, rows_index, rows, noun) in banks:
            # nlargest loops in Python: a sort of tens of thousands of matches in one C call would hold
            # the GIL, and the GUI thread, for its whole length
            best = heapq.nlargest(PER_BANK, rows_index.search(query).items(), key=itemgetter(1))
            for row_key, score in best:
                row = rows[row_key]
                retired = " · retired" if row.invalid_at is not None else ""
                text = shown_text(row.text, 300).replace("\n", " ⏎ ")
                found.append(Entry(ROW, text, f"{noun} in {key.bank}{retired}", (key, row_key), score))
        found.sort(key=lambda e: (-e.score, _ORDER[e.kind], e.title))
        return found[:SHOWN]


class _Results(QAbstractListModel):
    """The entries of the last answer."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.entries: list[Entry] = []

    def set_entries(self, entries: list[Entry]) -> None:
        self.beginResetModel()
        self.entries = list(entries)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.entries)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        entry = self.entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return entry.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return entry.detail
        if role == Qt.ItemDataRole.UserRole:
            return entry
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{entry.title}, {entry.detail}"
        return None


class _EntryDelegate(QStyledItemDelegate):
    """A result: its title, and to the right, muted, what it is (the menu path's keys, the bank)."""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:  # noqa: N802 - Qt override
        base = super().sizeHint(option, index)
        return QSize(base.width(), max(base.height(), option.fontMetrics.height() + 10))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        entry: Entry = index.data(Qt.ItemDataRole.UserRole)
        metrics = option.fontMetrics
        room = min(metrics.horizontalAdvance(entry.detail) + 24, option.rect.width() // 2)
        opt = paint_with_room(self, painter, option, index, room + 12)
        if opt is None:
            return
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        painter.save()
        painter.setPen(opt.palette.color(QPalette.ColorRole.HighlightedText) if selected else theme.muted_text())
        rect = opt.rect.adjusted(opt.rect.width() - room, 0, -8, 0)
        painter.drawText(
            rect,
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            metrics.elidedText(entry.detail, Qt.TextElideMode.ElideLeft, rect.width()),
        )
        painter.restore()


_STEPS = {Qt.Key.Key_Down.value: 1, Qt.Key.Key_Up.value: -1, Qt.Key.Key_PageDown.value: 8, Qt.Key.Key_PageUp.value: -8}
"""How far a key in the box moves the current result."""


class CommandPalette(QFrame):
    """The palette (see the module docstring): a panel over the top of the window, not a window of its
    own, so no window manager has to place, focus or raise it; it goes on Esc, on a choice, and when
    the focus moves elsewhere."""

    chosen = Signal(object)

    def __init__(self, index: PaletteIndex, parent: QWidget) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.Window)
        self.index = index
        self.setAccessibleName("Command palette")
        self.box = QLineEdit(self)
        self.box.setPlaceholderText("find a bank, a memory, an entry, a document, or any command…")
        self.box.setAccessibleName("Find anything")
        self.box.setClearButtonEnabled(True)
        self.results = _Results(self)
        self.list = QListView(self)
        self.list.setModel(self.results)
        self.list.setItemDelegate(_EntryDelegate(self.list))
        self.list.setUniformItemSizes(True)
        self.list.setAccessibleName("Results")
        self.list.activated.connect(self._choose_index)
        self.list.clicked.connect(self._choose_index)
        self.status = QLabel(self)
        self.status.setAccessibleName("Palette status")
        self.status.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.box)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.status)
        self._token = 0
        self._shown = 0
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(0)  # a burst of key events becomes one question
        self._debounce.timeout.connect(self._ask)
        self.box.textChanged.connect(lambda _text: self._debounce.start())
        self.box.installEventFilter(self)
        self.list.installEventFilter(self)
        index.answered.connect(self._on_answer)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._on_focus)
        self._before: QWidget | None = None
        self.hide()

    def open_over(self, window: QWidget, actions: list[tuple[QAction, str]], banks: list[tuple[BankKey, str]]) -> None:
        """Show the palette at the top of ``window``, the indexes refreshed, the box empty."""
        self.index.refresh(actions, banks)
        width = min(760, max(420, window.width() * 2 // 3))
        height = min(460, max(240, window.height() // 2))
        self.setGeometry((window.width() - width) // 2, 48, width, height)
        self._before = QApplication.focusWidget()
        self.box.clear()
        self.show()
        self.raise_()
        self.box.setFocus()
        self._ask()

    def dismiss(self) -> None:
        """Hide the palette and give the focus back to where it was."""
        if not self.isVisible():
            return
        self.hide()
        if self._before is not None and self._before.isVisible():
            self._before.setFocus()

    def _on_focus(self, _old: QWidget | None, new: QWidget | None) -> None:
        if self.isVisible() and new is not None and not self.isAncestorOf(new):
            self.hide()

    def _ask(self) -> None:
        self._token += 1
        self.index.ask(self.box.text(), self._token)

    def _on_answer(self, token: int, entries: list[Entry], indexing: list[str] | None = None) -> None:
        if token < self._shown:
            return
        self._shown = token
        self.results.set_entries(entries)
        if indexing:
            self.status.setText(f"Still reading the rows of {', '.join(indexing)}: they join the results shortly.")
            QTimer.singleShot(400, self._ask_again)  # the rows join once indexed
        self.status.setVisible(bool(indexing))
        if entries:
            self.list.setCurrentIndex(self.results.index(0))

    def _ask_again(self) -> None:
        if self.isVisible():
            self._ask()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        # Up/Down move in the results while the typing stays in the box; Enter chooses; Esc closes.
        if not isinstance(event, QKeyEvent) or event.type() != QEvent.Type.KeyPress:
            return super().eventFilter(watched, event)
        if event.key() == Qt.Key.Key_Escape:
            self.dismiss()
            return True
        if watched is self.box:
            key = event.key()
            step = _STEPS.get(key)
            if step is not None:
                row = self.list.currentIndex().row()
                count = self.results.rowCount()
                if count:
                    self.list.setCurrentIndex(self.results.index(max(0, min(count - 1, row + step))))
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self._choose_index(self.list.currentIndex())
                return True
        return super().eventFilter(watched, event)

    def _choose_index(self, index: Index) -> None:
        if not index.isValid():
            return
        entry = index.data(Qt.ItemDataRole.UserRole)
        self.dismiss()
        self.chosen.emit(entry)


class DocumentShower(Protocol):
    """The window's documents panel, as :func:`carry_out` uses it."""

    def show_document(self, name: str) -> bool:
        """Open the document ``name`` of the shown bank; whether it is open now."""


class PaletteHost(Protocol):
    """What :func:`carry_out` needs of the window."""

    @property
    def hub(self) -> Hub:
        """The open sources."""

    @property
    def rules(self) -> DocumentShower:
        """The documents panel."""

    def note(self, text: str) -> None:
        """Say something in the status bar."""

    def select_bank(self, key: BankKey) -> None:
        """Show a bank."""

    def show_panel(self, name: str) -> None:
        """Bring a panel forward ("memories", "rules"...)."""


def carry_out(window: PaletteHost, entry: Entry, select_row: Callable[[BankKey, str], None]) -> None:
    """Do what choosing ``entry`` means in ``window``: run the action, show the bank, the document, the row."""
    if entry.kind == ACTION:
        if entry.target.isEnabled():
            entry.target.trigger()
        else:
            window.note(
                f"{entry.title} cannot be done now" + (f": {entry.target.toolTip()}" if entry.target.toolTip() else "")
            )
        return
    if entry.kind == BANK:
        window.select_bank(entry.target)
        window.show_panel("memories")
        return
    key, name = entry.target
    if key.source not in window.hub.sources:
        return
    window.select_bank(key)
    if entry.kind == DOCUMENT:
        if window.rules.show_document(name):
            window.show_panel("rules")
        return
    select_row(key, name)
