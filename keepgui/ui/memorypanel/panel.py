"""The Memories panel: filter bar, tag chips, the memory table and the detail panel, and the
actions on its rows.

The panel owns its actions (pin, delete, restore, edit, copy, new memory,
what-if, history, ranked, columns): the window only puts them in its menus.
What a bank cannot do is greyed with the reason (its
:class:`~keepgui.core.source.Capabilities`); every write goes through the
``perform`` callable the window gives it (the window's undo stack), and the
rows come back through the hub's one ``changed`` signal
(:mod:`keepgui.ui.memorypanel.feed`).

Signals (besides :class:`~keepgui.ui.memorypanel.view.PanelView`'s):
    MemoryPanel.whatIfRequested(list keys, object pinned, object live): preview these rows as if
        pinned/unpinned or deleted/restored (nothing written).
    MemoryPanel.note(str): a status-bar note.
    MemoryPanel.warning(str): something to show in the window's banner (a keep that wrote nothing).
    MemoryPanel.retired(str text): rows were deleted or forgotten ("2 memories deleted"): offer Undo.
    MemoryPanel.historyRead(object key, str row, list revisions): the revisions of the row selected
        arrived (shown in the detail pane; others showing that row may show them too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QInputDialog, QMenu, QWidget

from keepgui.core.source import (
    CREATE,
    EDIT,
    HISTORY,
    KEEP,
    MOVE,
    PIN,
    TOMBSTONE,
    WHAT_IF,
    BankKey,
    Change,
)
from keepgui.ui import shortcuts
from keepgui.ui.commands import Outcome
from keepgui.ui.dialogs import NewMemoryDialog, split_labels
from keepgui.ui.hub import RANKED_LIMIT
from keepgui.ui.memorypanel.feed import PanelFeed
from keepgui.ui.memorypanel.model import COLUMN_INDEX, COLUMNS, NO_CAPABILITIES


def past_participle(verb: str) -> str:
    """ "Delete" -> "deleted", "Forget" -> "forgotten": the verb of a Capabilities' ``retire``, done."""
    irregular = {"forget": "forgotten"}
    word = verb.lower()
    return irregular.get(word, word + ("d" if word.endswith("e") else "ed"))


class MemoryPanel(PanelFeed):
    """Filter bar + table + detail for one bank at a time, and the actions on its rows."""

    whatIfRequested = Signal(list, object, object)
    note = Signal(str)
    warning = Signal(str)
    retired = Signal(str)
    historyRead = Signal(object, str, list)

    def __init__(
        self,
        hub: Any = None,
        settings: Any = None,
        perform: Callable[[BankKey, Callable[[Any], Change], str | None], Outcome] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(hub, settings, parent)
        self.perform = perform
        self.splitter.splitterMoved.connect(lambda *_: self._sync_details_action())
        self._build_actions()
        if hub is not None:
            hub.changed.connect(self._on_change)
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
        self.act_move_up = a(
            "Move &up",
            lambda: self.move_selected(-1),
            shortcuts.MOVE_UP,
            "Move the selected entry one place up in its file (the order the agent reads it in)",
        )
        self.act_move_down = a(
            "Move do&wn",
            lambda: self.move_selected(1),
            shortcuts.MOVE_DOWN,
            "Move the selected entry one place down in its file (the order the agent reads it in)",
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
            self.act_move_up,
            self.act_move_down,
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
        movable = len(live) == 1 and len(records) == 1 and caps.ordered and caps.can(MOVE)
        self.act_move_up.setEnabled(movable and self._neighbour(live[0], -1) is not None)
        self.act_move_down.setEnabled(movable and self._neighbour(live[0], 1) is not None)
        self.act_copy.setEnabled(has)
        self.act_new_memory.setEnabled(self.key is not None and (caps.can(CREATE) or caps.can(KEEP)))
        for action, what in (
            (self.act_pin, PIN),
            (self.act_unpin, PIN),
            (self.act_delete, TOMBSTONE),
            (self.act_restore, TOMBSTONE),
            (self.act_move_up, MOVE),
            (self.act_move_down, MOVE),
        ):
            why = caps.why_not(what)
            action.setToolTip(why or action.statusTip())
        if len(records) == 1 and self.key is not None and self.hub is not None and caps.can(HISTORY):
            self._ask_history(self.key, records[0].id)

    def _ask_history(self, key: BankKey, row: str) -> None:
        """Read every revision of one row off the GUI thread, for the detail pane (and
        ``historyRead``)."""

        def show(revisions: list[Any] | Exception) -> None:
            found = [] if isinstance(revisions, Exception) else revisions  # a log that cannot be read: none
            if key == self.key:
                self.detail.set_history(row, found)
            self.historyRead.emit(key, row, found)

        self.hub.ask(key, lambda bank: bank.revisions(row), show, owner=self)

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
        """Show a bank (its rows arrive through the hub), or nothing. The search text is the shown
        bank's: another bank starts with an empty box."""
        if key != self.key and self.search.text():
            self.search.blockSignals(True)  # the rows of the bank shown next are filtered once, below
            self.search.clear()
            self.search.blockSignals(False)
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

    # ------------------------------------------------------------------ writes

    def _request_ranking(self, query: str, token: int) -> None:
        key = self.key
        if key is None or self.hub is None or not self.hub.is_loaded(key):
            return  # the bank's own load comes first; its rows ask again
        self.hub.ask(
            key,
            lambda bank: bank.rank(query, RANKED_LIMIT),
            lambda scores: self.apply_ranking(token, scores) if key == self.key else None,
            typing="ranking",
            owner=self,
        )

    def _perform(
        self,
        operation: Callable[[Any], Change],
        text: str | None = None,
        then: Callable[[Change], object] | None = None,
    ) -> None:
        """A write as one undo step, off the GUI thread; ``then(change)`` once it ran (a failure:
        the window said why)."""
        if self.key is None or self.perform is None:
            return
        outcome = self.perform(self.key, operation, text)
        if then is not None:
            outcome.then(lambda o: then(o.change) if o.change is not None else None)

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
            said = f"{caps.count(len(ids))} {past_participle(caps.retire)}"
            self._perform(
                lambda bank: bank.set_live(ids, live),
                then=lambda change: self.retired.emit(said) if not live and change.written else None,
            )

    def _neighbour(self, record: Any, offset: int) -> Any:
        """The live row ``offset`` places from ``record`` in file order, or None (the bank itself says when
        that row is in another of its files)."""
        same = sorted(
            (r for r in self.model.rows() if r.invalid_at is None and r.position is not None),
            key=lambda r: r.position,
        )
        ids = [r.id for r in same]
        if record.id not in ids:
            return None
        at = ids.index(record.id) + offset
        return same[at] if 0 <= at < len(same) else None

    def move_selected(self, offset: int) -> None:
        """Memory → Move up / Move down: the selected entry one place in its file (one undo step)."""
        live = [r for r in self.selected_records() if r.invalid_at is None]
        if len(live) != 1 or not self.capabilities.ordered or not self.capabilities.can(MOVE):
            return
        if self._neighbour(live[0], offset) is None:
            return
        key = live[0].id

        def moved(change: Change) -> None:
            if not change.written and change.message:
                self.note.emit(change.message)  # already first or last in its file: nothing moved
            self.select_key(key)

        self._perform(lambda bank: bank.move([key], offset), then=moved)

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
            self._perform(lambda bank: bank.keep(text), "Keep fact", self.report_keep)

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
            self.act_move_up,
            self.act_move_down,
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
