"""Time travel in the window: the shown bank as it was at a recorded moment, read-only, and what to put back.

View → View as of… (a time: ISO 8601 or a time ago such as ``2h``) or the activity strip's context
menu (View as of the end of a day) puts a read-only view of that moment in place of the panels: its
memories, its documents and what the agent was given then (the preview), under a banner "Viewing …
as of … — read-only" with **Back to now**. The time field of the banner moves the moment.

Everything about the moment is read off the GUI thread (a lane of :mod:`keepgui.ui.tasks`, the newest
moment asked winning): the source is opened afresh there, the journal brought up to date with it, and
:func:`keepgui.core.timetravel.opened_at` opens its copy of then in an environment of its own (this
process's never changes, so the hub goes on loading other sources meanwhile); what the view needs is
read into plain data and the copy removed before the answer reaches the GUI thread.

**Restore selected** makes each selected memory hold its text of then again and **Restore file…** a
memory file whole, through :mod:`keepgui.core.restore` (the command line's ``restore --at``): every
write is the bank's own conflict-checked write, pushed on the window's undo stack as one step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import pace, registry, restore
from keepgui.core.errors import KeepguiError
from keepgui.core.journal import Journal, sync_source
from keepgui.core.paths import elide_middle
from keepgui.core.source import BankKey
from keepgui.core.timefmt import now_ms
from keepgui.core.timetravel import describe_when, opened_at, parse_when
from keepgui.ui import theme
from keepgui.ui.banner import Banner
from keepgui.ui.tasks import lane
from keepgui.ui.timefmt import relative

MainWindow = Any
"""The window (typed loosely: this module is a layer below :mod:`keepgui.ui.mainwindow`)."""

log = logging.getLogger(__name__)

BANNER_LABEL = 48
"""The most characters of the source's name the time-travel banner shows (elided in the middle beyond: at
1024 pixels the banner's words take two lines beside its three buttons, not three)."""
TIME_HELP = "ISO 8601 such as 2026-03-01T14:30, or a time ago: 90s, 15m, 2h, 3d, 1w"
_COLUMNS = ("Memory", "Tags", "Updated", "State")
_RELEASE_HERE = 2000
"""Rows a moment's table lets go of on the GUI thread; more are released on :data:`_RELEASE`."""
_RELEASE = lane("time travel: release")


@dataclass
class Moment:
    """What a bank held at ``at``, read off the GUI thread as plain data (the copy is gone by then).

    ``rows``: ``(id, text, tags, updated_at, live)``, live ones first as the view shows them (``live``
    of them); ``documents``: ``(title, text)``; ``files``: each memory file of the bank now → its text
    then (None: it did not exist then). Everything the view shows is worked out here, so taking a moment
    in on the GUI thread costs the same at 100 memories as at 100,000."""

    key: BankKey
    at: int
    label: str
    rows: list[tuple[str, str, str, int | None, bool]] = field(default_factory=list)
    documents: list[tuple[str, str]] = field(default_factory=list)
    preview: str = ""
    files: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    live: int = 0


def read_moment(journal: Journal, kind: str, key: BankKey, at: int) -> Moment:
    """The bank ``key`` (of a source of ``kind``) as it was at ``at`` (runs off the GUI thread)."""
    source = registry.open_source(kind, key.source)
    sync_source(journal, source)  # what changed until now is recorded first
    bank_now = source.bank(key.bank)
    moment = Moment(key, at, source.label)
    with opened_at(journal, source, at) as past:
        bank = past.bank(key.bank)
        bank.load(lambda _done, _total, _since: pace.checkpoint(), full=True)  # gives way to a busy window
        for n, r in enumerate(bank.rows()):
            if n % 1000 == 0:
                pace.checkpoint()
            tags = " ".join("#" + t for t in r.tags)
            moment.rows.append((r.id, past.shown(r.text), tags, r.updated_at, r.invalid_at is None))
        moment.rows.sort(key=lambda r: not r[4])  # live ones first (a stable sort: the bank's order within)
        moment.live = sum(1 for r in moment.rows if r[4])
        try:
            documents = bank.documents()
            moment.documents = [(title, past.shown(documents.read(name).text)) for name, title in documents.list()]
        except (KeepguiError, OSError) as exc:
            moment.notes.append(f"its documents could not be read: {exc}")
        try:
            moment.preview = past.shown(bank.preview("").text)
        except (KeepguiError, OSError) as exc:
            moment.preview = f"(what the agent was given cannot be shown: {exc})"
        moment.notes.extend(past.notes)
    for path in bank_now.memory_files():
        try:
            moment.files[path] = restore.file_then(journal, bank_now, path, at)[1]
        except KeepguiError:
            moment.files[path] = None
    return moment


class MomentRows(QAbstractTableModel):
    """A moment's memories, read-only (nothing in this table can be edited)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[str, str, str, int | None, bool]] = []

    def set_rows(self, rows: list[tuple[str, str, str, int | None, bool]]) -> None:
        """Show these rows (in their order: :func:`read_moment` put the live ones first). The rows shown
        before are let go off the GUI thread, a slice at a time: a list of 100,000 rows freed at once
        holds the interpreter lock for tens of milliseconds."""
        self.beginResetModel()
        old: list[Any] = self.rows
        self.rows = rows
        self.endResetModel()
        if len(old) > _RELEASE_HERE:
            _RELEASE.run(partial(pace.release, old))  # the lane's task holds the last reference

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:  # noqa: N802 - Qt override
        return 0 if parent is not None and parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex | None = None) -> int:  # noqa: N802 - Qt
        return len(_COLUMNS)

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable  # never editable

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:  # noqa: N802 - Qt
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return _COLUMNS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        key, text, tags, updated, live = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            first = text.strip().splitlines()[0] if text.strip() else ""
            return (first[:300], tags, relative(updated) if updated else "", "" if live else "forgotten")[
                index.column()
            ]
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 0:
            return text[:2000]
        if role == Qt.ItemDataRole.UserRole:
            return key
        if role == Qt.ItemDataRole.ForegroundRole and not live:
            return theme.muted_text()
        return None


class PastView(QWidget):
    """The read-only view of a moment, in place of the panels (see the module docstring)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("The bank as it was")
        self.banner = Banner(self)
        self.banner.close_button.hide()  # Back to now is the way out
        self.time = QLineEdit(self)
        self.time.setPlaceholderText(TIME_HELP)
        self.time.setAccessibleName("View as of time")
        self.time.setToolTip(f"Move to another moment: {TIME_HELP}")
        self.status = QLabel(self)
        self.status.setAccessibleName("Time travel status")
        self.status.setWordWrap(True)
        self.rows = MomentRows(self)
        self.table = QTableView(self)
        self.table.setModel(self.rows)
        self.table.setAccessibleName("Memories as they were")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        width = self.fontMetrics().averageCharWidth()
        for column, chars in ((1, 18), (2, 12), (3, 10)):  # fixed: fitting to contents reads every row
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, width * chars)
        self.documents = QListWidget(self)
        self.documents.setAccessibleName("Documents as they were")
        self.document = QPlainTextEdit(self)
        self.document.setReadOnly(True)
        self.document.setAccessibleName("Document text as it was")
        docs = QSplitter(Qt.Orientation.Horizontal, self)
        docs.addWidget(self.documents)
        docs.addWidget(self.document)
        docs.setStretchFactor(1, 3)
        self.preview = QPlainTextEdit(self)
        self.preview.setReadOnly(True)
        self.preview.setAccessibleName("What the agent was given then")
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.table, "Memories")
        self.tabs.addTab(docs, "Documents")
        self.tabs.addTab(self.preview, "Preview")
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        bar.addWidget(QLabel("As of:", self))
        bar.addWidget(self.time, 1)
        self.go = QPushButton("&Go", self)
        bar.addWidget(self.go)
        bar.addWidget(self.status, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.banner)
        layout.addLayout(bar)
        layout.addWidget(self.tabs, 1)
        self._texts: list[str] = []
        self.documents.currentRowChanged.connect(self._show_document)

    def show_moment(self, moment: Moment) -> None:
        """Show what the bank held (cheap: the table is a model over the rows)."""
        self.rows.set_rows(moment.rows)
        self.documents.clear()
        self._texts = [text for _title, text in moment.documents]
        self.documents.addItems([title for title, _text in moment.documents])
        if self._texts:
            self.documents.setCurrentRow(0)
        else:
            self.document.setPlainText("")
        self.preview.setPlainText(_cut(moment.preview))
        live = moment.live
        self.status.setText(f"{live} then · " + "; ".join(moment.notes) if moment.notes else f"{live} then")
        self.status.setToolTip("\n".join(moment.notes))

    def _show_document(self, row: int) -> None:
        self.document.setPlainText(_cut(self._texts[row]) if 0 <= row < len(self._texts) else "")

    def selected_ids(self) -> list[str]:
        """The ids (as they were) of the selected memories."""
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.rows.rows[r][0] for r in rows]


class TimeTravel:
    """The window's time travel: its actions, the past view in place of the panels, the restores."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.journal: Journal = window.inbox.journal
        self.moment: Moment | None = None
        self.asked: tuple[BankKey, int] | None = None
        self._lane = lane("time travel")
        self.view = PastView(window.tabs.parentWidget())
        self.view.hide()
        center = window.tabs.parentWidget().layout()
        if isinstance(center, QVBoxLayout):
            center.addWidget(self.view, 1)
        self.view.go.clicked.connect(self._go)
        self.view.time.returnPressed.connect(self._go)
        self.act_view_at = self._action("View as &of…", self.ask_time, "Show the bank as it was at a recorded moment")
        self.act_now = self._action("Back to &now", self.back_to_now, "Leave the view of a moment")
        self.act_restore = self._action(
            "Restore selected as they &were", self.restore_selected, "Put the selected memories back as they were then"
        )
        self.act_restore_file = self._action(
            "Restore &file as it was…", self.restore_file, "Put one memory file back, whole, as it was then"
        )
        for act in (self.act_now, self.act_restore, self.act_restore_file):
            act.setEnabled(False)
        leave = QAction("Back to now", self.view)  # Esc inside the view of a moment
        leave.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        leave.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        leave.triggered.connect(lambda _checked=False: self.back_to_now())
        self.view.addAction(leave)
        strip = window.memories.strip
        strip.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        strip.customContextMenuRequested.connect(self._strip_menu)
        window.loaded.connect(self._on_loaded)

    def _on_loaded(self, key: BankKey) -> None:
        """Another bank shown: the view of a moment of the last one goes."""
        if self.asked is not None and key != self.asked[0]:
            self.back_to_now()

    def _action(self, text: str, slot: Callable[[], None], tip: str) -> QAction:
        action = QAction(text, self.window)
        action.setStatusTip(tip)
        action.setToolTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        self.window.addAction(action)
        return action

    def add_to_menus(self) -> None:
        """View → View as of…, Back to now; Memory → the two restores."""
        view = self.window.view_menu
        view.addSeparator()
        view.addAction(self.act_view_at)
        view.addAction(self.act_now)
        memory = menu_titled(self.window, "&Memory")
        if memory is not None:
            memory.addSeparator()
            memory.addAction(self.act_restore)
            memory.addAction(self.act_restore_file)

    # ------------------------------------------------------------------ choosing the moment

    def _strip_menu(self, pos: Any) -> None:
        strip = self.window.memories.strip
        self.strip_menu(pos).exec(strip.mapToGlobal(pos))

    def strip_menu(self, pos: Any) -> QMenu:
        """The activity strip's context menu at ``pos``: the end of the day there, or a time asked."""
        strip = self.window.memories.strip
        day = strip.day_at(pos.x())
        menu = QMenu(strip)
        if day is not None:
            from keepgui.ui.activity import local_midnight

            end = min(now_ms(), local_midnight(day.addDays(1)) - 1)
            menu.addAction(
                f"View as of the end of {day.toString('ddd d MMM yyyy')}",
                lambda: self.view_at(self.window.current, end),
            )
        menu.addAction(self.act_view_at)
        if self.asked is not None:
            menu.addAction(self.act_now)
        return menu

    def ask_time(self) -> None:
        """View → View as of…: a time, then the view of that moment."""
        if self.window.current is None:
            self.window.note("select a bank to see it as it was")
            return
        text, ok = QInputDialog.getText(self.window, "View as of…", f"Time ({TIME_HELP}):", text="1h")
        if ok:
            self.view_text(text)

    def _go(self) -> None:
        self.view_text(self.view.time.text())

    def view_text(self, text: str) -> None:
        """The moment ``text`` names (an error in the banner when it names none)."""
        key = self.asked[0] if self.asked else self.window.current
        try:
            at = parse_when(text)
        except KeepguiError as exc:
            self.window.show_error(str(exc))
            return
        if key is not None:
            self.view_at(key, at)

    def view_at(self, key: BankKey | None, at: int) -> None:
        """Show ``key`` as it was at ``at`` (read in the background; the newest moment asked wins)."""
        if key is None or key.source not in self.window.hub.sources:
            return
        kind = self.window.hub.source(key.source).kind
        self.asked = (key, at)
        self.view.time.setText(describe_when(at))
        self.view.status.setText("reading the moment…")
        self._enter(key, at)
        journal = self.journal
        self._lane.run(
            lambda: read_moment(journal, kind, key, at),
            self._arrived,
            self._failed,
            owner=self.view,
            newest="moment",
            made_old=True,  # the rows of then, allocated at once: never walked by a young collection
        )

    def _enter(self, key: BankKey, at: int) -> None:
        label = self.window.hub.source(key.source).label
        text = (
            f"Viewing <b>{_escape(elide_middle(label, BANNER_LABEL))} · {_escape(key.bank)}</b> as of "
            f"<b>{describe_when(at)}</b> — read-only"
        )
        self.view.banner.label.setToolTip(f"{label} · {key.bank}")  # the whole source, where it was elided
        if self.view.isVisible():  # the moment moved: only the words change (the buttons stay)
            self.view.banner.label.setText(text)
            return
        self.view.banner.show_message(
            text,
            "info",
            [
                ("Restore selected", self.restore_selected),
                ("Restore file…", self.restore_file),
                ("Back to now", self.back_to_now),
            ],
        )
        self.window.memories.table.clearSelection()  # the hidden panels' row actions act on nothing meanwhile
        self.window.tabs.hide()
        self.view.show()
        self.view.table.setFocus()
        self.act_now.setEnabled(True)

    def _arrived(self, moment: Moment) -> None:
        if self.asked != (moment.key, moment.at):
            return
        self.moment = moment
        self.view.show_moment(moment)
        self.act_restore.setEnabled(True)
        self.act_restore_file.setEnabled(True)

    def _failed(self, exc: Exception) -> None:
        if not isinstance(exc, (KeepguiError, OSError)):
            log.error("reading a moment failed", exc_info=exc)
        self.view.status.setText(str(exc))
        self.window.show_error(f"Cannot show the bank as it was: {exc}")

    def back_to_now(self) -> None:
        """Leave the moment: the panels again."""
        self.asked = self.moment = None
        self.view.hide()
        self.window.tabs.show()
        for act in (self.act_now, self.act_restore, self.act_restore_file):
            act.setEnabled(False)

    # ------------------------------------------------------------------ restores

    def restore_selected(self) -> None:
        """Each selected memory as it was then, as one undo step of the bank's own writes."""
        moment = self.moment
        if moment is None:
            return
        ids = set(self.view.selected_ids())
        if not ids:
            self.window.note("select the memories to restore in the view of the moment")
            return
        texts = {r[0]: r[1] for r in moment.rows if r[0] in ids and r[4]}
        hub = self.window.hub
        try:
            bank = hub.bank(moment.key)
            items = restore.planned(list(bank.rows()), texts)
            steps = [(item, w) for item in items for w in item.writes(bank)]
        except (KeepguiError, OSError, KeyError) as exc:
            self.window.show_error(f"Cannot restore: {exc}")
            return
        if not steps:
            self.window.note(f"already as they were at {describe_when(moment.at)}: nothing to restore")
            return
        self._as_one_step(
            f"Restore {len(items)} as of {describe_when(moment.at)}",
            [(moment.key, write, f"Restore {item.key}") for item, write in steps],
        )

    def restore_file(self, path: str | None = None) -> None:
        """One memory file of the bank, whole, as it was then (asked which when there are several)."""
        moment = self.moment
        if moment is None:
            return
        there = [p for p, text in moment.files.items() if text is not None]
        if path is None:
            if not there:
                self.window.note("no memory file of this bank was recorded by then")
                return
            path = there[0]
            if len(there) > 1:
                path, ok = QInputDialog.getItem(self.window, "Restore file as it was", "File:", there, 0, False)
                if not ok:
                    return
        text = moment.files.get(path)
        if text is None:
            self.window.show_error(f"{path} did not exist at {describe_when(moment.at)}: nothing to restore")
            return
        write = restore.file_write(path, text)
        if write is None:
            self.window.note(f"{path} is as it was at {describe_when(moment.at)}: nothing to restore")
            return
        self._as_one_step(f"Restore file as of {describe_when(moment.at)}", [(moment.key, write, "Restore file")])

    def _as_one_step(self, text: str, writes: list[tuple[BankKey, Callable[[Any], Any], str]]) -> None:
        stack = self.window.undo_stack
        stack.beginMacro(text)
        try:
            for key, write, label in writes:
                self.window.perform(key, write, label)
        finally:
            stack.endMacro()
        self.window.note(text)


def menu_titled(window: Any, title: str) -> QMenu | None:
    """The window's menu of the menu bar titled ``title`` (``&File``), or None."""
    for action in window.menuBar().actions():
        menu = action.menu()
        if isinstance(menu, QMenu) and menu.title() == title:
            return menu
    return None


SHOWN_CHARS = 64 * 1024
"""A document or preview of then longer than this is shown cut (laying out more blocks the GUI thread)."""


def _cut(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    return (
        text[:SHOWN_CHARS]
        + f"\n\n… shown cut: {len(text) - SHOWN_CHARS:,} more characters (keepgui context --at has all)"
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def install(window: MainWindow) -> TimeTravel:
    """Give the window its time travel (actions in the View and Memory menus, the strip's menu)."""
    travel = TimeTravel(window)
    travel.add_to_menus()
    return travel
