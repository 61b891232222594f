"""keepgui's main window: sidebar of sources and banks, the panels, menus for every action.

The window is thin: files are read and written by :mod:`keepgui.core` through
the :class:`~keepgui.ui.hub.Hub`; every change a person makes is a
:class:`~keepgui.ui.commands.MemoryCommand` on one undo stack; every action has
a menu entry and, where it has one, a shortcut from :mod:`keepgui.ui.shortcuts`.

Panels (Memories, and the Rules and Preview panels) follow the selected bank
through :meth:`add_panel`: each panel has ``set_bank(key_or_None)`` and may
have ``can_leave() -> bool`` (an unsaved-changes guard).

Signals:
    loaded(object key): the shown bank finished loading.
"""

from __future__ import annotations

import os
import time

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QUndoStack
from PySide6.QtWidgets import (
    QFileDialog, QLabel, QMainWindow, QMenu, QMessageBox, QProgressBar, QSplitter, QTabWidget,
    QVBoxLayout, QWidget,
)

from keepgui import __version__
from keepgui.core.errors import KeepguiError
from keepgui.core.iii.config import MemoryConfig
from keepgui.core.nanobot.keepmd import COMPACTION_TARGET
from keepgui.ui import shortcuts, theme
from keepgui.ui.banner import Banner
from keepgui.ui.commands import KeepCommand, MemoryCommand, describe
from keepgui.ui.compaction import CompactionCommand, CompactionDialog, rewrite_summary
from keepgui.ui.dialogs import NameDialog, NewMemoryDialog, TrashDialog, split_labels
from keepgui.ui.hub import KEEP_BANK, BankKey, Hub
from keepgui.ui.keeprows import KEEP_ROW_CAPABILITIES
from keepgui.ui.memorymodel import COLUMNS, IIII_CAPABILITIES
from keepgui.ui.memorypanel import MemoryPanel
from keepgui.ui.preview import PreviewPane
from keepgui.ui.rules import RulesPanel
from keepgui.ui.settings import Settings
from keepgui.ui.sidebar import BankKeyRole, FolderRole, KindRole, SourceRole, SourceTree, SourceTreeModel
from keepgui.ui.timefmt import relative


KEEP_HIDDEN_COLUMNS = ("tags", "entities", "seen", "confidence", "created", "updated", "revision")


class MainWindow(QMainWindow):
    """The window a person opens every day."""

    loaded = Signal(object)

    def __init__(self, hub: Hub, settings: Settings, persist_sources: bool = True) -> None:
        super().__init__()
        self.hub = hub
        self.settings = settings
        self.persist_sources = persist_sources
        self.undo_stack = QUndoStack(self)
        self.current: BankKey | None = None
        self._loading: BankKey | None = None
        self._last_reload: float | None = None
        self._panels: list[tuple[str, QWidget]] = []
        self.setWindowTitle("keepgui")
        self.setWindowIcon(theme.app_icon())

        self.tree_model = SourceTreeModel(self)
        self.tree = SourceTree(self.tree_model, self)
        self.memories = MemoryPanel(self)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.banner = Banner(self)
        center = QWidget(self)
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        center_layout.addWidget(self.banner)
        center_layout.addWidget(self.tabs, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.tree)
        self.splitter.addWidget(center)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([300, 1000])
        self.setCentralWidget(self.splitter)
        self.add_panel("memories", "Memories", self.memories)
        self.rules = RulesPanel(hub, self._worker_config, self)
        self.add_panel("rules", "Rules", self.rules)
        self.preview = PreviewPane(hub, self)
        self.add_panel("preview", "Preview", self.preview)

        self.counts_label = QLabel(self)
        self.file_label = QLabel(self)
        self.reload_label = QLabel(self)
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(180)
        self.progress.setTextVisible(True)
        self.progress.setAccessibleName("Loading progress")
        self.progress.hide()
        self.statusBar().addWidget(self.counts_label)
        self.statusBar().addWidget(self.file_label, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.reload_label)

        self._build_actions()
        self._build_menus()
        self._connect()
        self._restore_state()
        self._clock = QTimer(self)
        self._clock.setInterval(30_000)
        self._clock.timeout.connect(self._update_reload_label)
        self._clock.start()

    # ------------------------------------------------------------------ panels

    def add_panel(self, name: str, title: str, widget: QWidget) -> None:
        """Add a panel tab that follows the selected bank."""
        self._panels.append((name, widget))
        self.tabs.addTab(widget, title)

    def panel(self, name: str) -> QWidget | None:
        """A panel by name."""
        return next((w for n, w in self._panels if n == name), None)

    def show_panel(self, name: str) -> None:
        """Bring a panel to the front."""
        widget = self.panel(name)
        if widget is not None:
            self.tabs.setCurrentWidget(widget)

    def _panels_can_leave(self) -> bool:
        return all(getattr(w, "can_leave", lambda: True)() for _, w in self._panels)

    # ------------------------------------------------------------------ actions and menus

    def _action(self, text: str, slot, shortcut=None, tip: str = "",
                checkable: bool = False, icon: str | None = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(tip)
        if icon:
            action.setIcon(theme.icon(icon))
        action.setCheckable(checkable)
        (action.toggled if checkable else action.triggered).connect(slot)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        a = self._action
        self.act_open = a("&Open iii data dir…", self.open_data_dir_dialog, shortcuts.OPEN_DATA_DIR,
                          "Open a folder of iii memory banks", icon="folder")
        self.act_open_ws = a("Open nanobot &workspace…", self.open_workspace_dialog, shortcuts.OPEN_WORKSPACE,
                             "Open a nanobot workspace (keep.md, MEMORY.md, USER.md…)")
        self.act_remove_source = a("&Close source", self.remove_current_source, tip="Stop showing this source "
                                   "(nothing on disk changes)")
        self.act_reload = a("&Reload from disk", self.reload_all, shortcuts.RELOAD,
                            "Re-read every file (changes by others also show up on their own)")
        self.act_quit = a("&Quit", self.close, shortcuts.QUIT)
        self.act_undo = self.undo_stack.createUndoAction(self, "&Undo")
        self.act_undo.setShortcut(shortcuts.UNDO)
        self.act_redo = self.undo_stack.createRedoAction(self, "&Redo")
        self.act_redo.setShortcut(shortcuts.REDO)
        self.act_find = a("&Find", self.find, shortcuts.FIND, "Search the memories of this bank")
        self.act_new_memory = a("&New memory…", self.new_memory, shortcuts.NEW_MEMORY, "Save a new memory")
        self.act_quick_keep = a("&Quick keep…", self.quick_keep, shortcuts.QUICK_KEEP,
                                "Keep a fact in any open keep.md or bank, with duplicate checks", icon="keep")
        self.act_edit = a("&Edit memory", self.edit_current, shortcuts.EDIT_MEMORY,
                          "Edit the selected memory's text in place (a new revision)")
        self.act_copy = a("&Copy text", self.copy_selected, shortcuts.COPY, "Copy the selected memories' text")
        self.act_pin = a("&Pin", lambda: self.set_pinned(True), shortcuts.PIN,
                         "Pin the selected memories (untouchable by automatic paths)", icon="pin")
        self.act_unpin = a("U&npin", lambda: self.set_pinned(False), shortcuts.UNPIN, "Unpin the selected memories")
        self.act_delete = a("&Delete (tombstone)", lambda: self.set_live(False), shortcuts.TOMBSTONE,
                            "Tombstone the selected memories; they stay in the log and can be restored",
                            icon="tombstone")
        self.act_restore = a("&Restore", lambda: self.set_live(True), shortcuts.RESTORE,
                             "Bring deleted or superseded memories back", icon="restore")
        self.act_history = a("Show &history", self._on_show_history, shortcuts.SHOW_HISTORY,
                             "Show deleted and superseded memories", checkable=True)
        self.act_ranked = a("&Ranked search", self._on_ranked, shortcuts.RANKED,
                            "Order search results by the recall scorer", checkable=True)
        self.act_new_bank = a("&New bank…", self.new_bank, shortcuts.NEW_BANK, "Create a bank in this data dir")
        self.act_trash_bank = a("&Trash bank…", self.trash_bank, tip="Move the bank to .trash (restorable)",
                                icon="trash")
        self.act_restore_bank = a("Restore from t&rash…", self.restore_bank, tip="Bring a trashed bank back")
        self.act_compact = a("Review &compaction…", lambda: self.review_compaction(), shortcuts.COMPACT,
                             "Plan a compaction of this bank or keep.md and review it as a diff before anything "
                             "is written")
        self.act_review = a("Review &outside rewrite…", lambda: self.review_rewrite(), tip=(
            "Compare keep.md with the last version keepgui saw, entry by entry, and restore what was lost"))
        self.act_shortcuts = a("&Keyboard shortcuts", self.show_shortcuts, shortcuts.HELP)
        self.act_about = a("&About keepgui", self.about)
        self.panel_actions = QActionGroup(self)
        for name, title, seq in (("memories", "&Memories", shortcuts.PANEL_MEMORIES),
                                 ("rules", "R&ules", shortcuts.PANEL_RULES),
                                 ("preview", "&Preview", shortcuts.PANEL_PREVIEW)):
            action = a(title, lambda _=False, n=name: self.show_panel(n), seq)
            action.setData(name)
            self.panel_actions.addAction(action)
        self.column_actions: list[QAction] = []
        hidden = set(self.settings.hidden_columns())
        for i, column in enumerate(COLUMNS):
            action = QAction(column.title, self)
            action.setCheckable(True)
            action.setChecked(column.field not in hidden)
            action.toggled.connect(lambda on, col=i: self._set_column_visible(col, on))
            self.column_actions.append(action)
            self.memories.table.setColumnHidden(i, column.field in hidden)
        self.memory_actions = [self.act_edit, self.act_copy, self.act_pin, self.act_unpin, self.act_delete,
                               self.act_restore]

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        for act in (self.act_open, self.act_open_ws, self.act_remove_source, None, self.act_reload, None,
                    self.act_quit):
            file_menu.addSeparator() if act is None else file_menu.addAction(act)
        edit = bar.addMenu("&Edit")
        for act in (self.act_undo, self.act_redo, None, self.act_find, None, self.act_new_memory,
                    self.act_quick_keep, self.act_edit, self.act_copy):
            edit.addSeparator() if act is None else edit.addAction(act)
        memory = bar.addMenu("&Memory")
        for act in (self.act_pin, self.act_unpin, None, self.act_delete, self.act_restore):
            memory.addSeparator() if act is None else memory.addAction(act)
        self.view_menu = bar.addMenu("&View")
        self.view_menu.addAction(self.act_history)
        self.view_menu.addAction(self.act_ranked)
        columns = self.view_menu.addMenu("&Columns")
        for action in self.column_actions:
            columns.addAction(action)
        self.view_menu.addSeparator()
        for action in self.panel_actions.actions():
            self.view_menu.addAction(action)
        self.bank_menu = bar.addMenu("&Bank")
        for act in (self.act_new_bank, self.act_trash_bank, self.act_restore_bank, None, self.act_compact,
                    self.act_review):
            if act is None:
                self.bank_menu.addSeparator()
                continue
            self.bank_menu.addAction(act)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.act_shortcuts)
        help_menu.addAction(self.act_about)

    def _connect(self) -> None:
        hub = self.hub
        hub.sourcesChanged.connect(self._on_sources_changed)
        hub.banksChanged.connect(self._on_banks_changed)
        hub.bankRows.connect(self._on_bank_rows)
        hub.bankProgress.connect(self._on_bank_progress)
        hub.bankFailed.connect(self._on_bank_failed)
        hub.historyReady.connect(lambda key, mid, revs: self.memories.detail.set_history(mid, revs)
                                 if key == self.current else None)
        hub.note.connect(self._note)
        hub.error.connect(self.show_error)
        hub.planReady.connect(self._on_plan)
        hub.keepChanged.connect(lambda source, before, after: self.hub.request_plan(
            BankKey(source, KEEP_BANK), "review:keep.md"))
        hub.documentsChanged.connect(lambda source, names: self.hub.request_plan(
            BankKey(source, KEEP_BANK), "review:MEMORY.md") if "memory/MEMORY.md" in names else None)
        self.tree.bankActivated.connect(self._on_bank_activated)
        self.tree.customContextMenuRequested.connect(self._tree_menu)
        self.memories.model.toggleRequested.connect(self._on_toggle)
        self.memories.model.editRequested.connect(self._on_edit)
        self.memories.selectionChangedTo.connect(self._on_selection)
        self.memories.detail.memoryLinkActivated.connect(self.memories.select_key)
        self.memories.rankingRequested.connect(
            lambda query, token: self.hub.request_ranking(self.current, query, token) if self.current else None)
        hub.rankingReady.connect(lambda key, token, scores: self.memories.apply_ranking(token, scores)
                                 if key == self.current else None)
        self.memories.history.toggled.connect(self._sync_history_action)
        self.memories.ranked.toggled.connect(self._sync_ranked_action)
        self.memories.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.memories.table.customContextMenuRequested.connect(self._table_menu)
        self.tabs.currentChanged.connect(self._on_tab)
        self.rules.draftChanged.connect(self.preview.set_drafts)
        self.rules.note.connect(self._note)
        self.preview.settingsChanged.connect(self._on_worker_settings)
        self.preview.applyWhatIfRequested.connect(self._apply_whatif)
        self._on_selection([])

    # ------------------------------------------------------------------ sources

    def open_data_dir(self, path: str) -> None:
        """Open an iii data dir as a source."""
        self.hub.add("iii", path)
        self._save_sources()

    def open_data_dir_dialog(self) -> None:
        """File → Open iii data dir."""
        path = QFileDialog.getExistingDirectory(self, "Open iii memory data dir")
        if path:
            self.open_data_dir(path)

    def open_workspace_dialog(self) -> None:
        """File → Open nanobot workspace."""
        path = QFileDialog.getExistingDirectory(self, "Open nanobot workspace")
        if path:
            self.open_workspace(path)

    def open_workspace(self, path: str) -> None:
        """Open a nanobot workspace as a source."""
        self.hub.add("nanobot", path)
        self._save_sources()

    def remove_current_source(self) -> None:
        """File → Close source."""
        source = self.tree.currentIndex().data(SourceRole)
        if source:
            if self.current is not None and self.current.source == source:
                self._show_bank(None)
            self.hub.remove_source(source)
            self._save_sources()

    def _save_sources(self) -> None:
        if self.persist_sources:
            self.settings.set_sources([{"kind": s.kind, "path": s.path} for s in self.hub.sources.values()])

    def reload_all(self) -> None:
        """File → Reload: re-list every source and re-read the shown bank."""
        for path in list(self.hub.sources):
            self.hub.rescan(path)
        if self.current is not None:
            self.hub.refresh_bank(self.current)
        self._note("reloaded from disk")

    def _on_sources_changed(self) -> None:
        self.tree_model.set_sources(list(self.hub.sources.values()))
        for source in self.hub.sources.values():
            self.tree.expand(self.tree_model.index_of_source(source.path))

    def _on_banks_changed(self, path: str) -> None:
        source = self.hub.sources.get(path)
        if source is None:
            return
        current = self.current
        self.tree.blockSignals(True)
        self.tree.selectionModel().blockSignals(True)
        # the trash is listed by the hub's background scan, not here on the GUI thread
        self.tree_model.set_banks(source, source.trashed if source.kind == "iii" else None)
        if current is not None:
            self.tree.select_bank(current)
        self.tree.selectionModel().blockSignals(False)
        self.tree.blockSignals(False)
        self.tree.viewport().update()
        if current is not None and current.source == path and current.bank not in source.names:
            self._show_bank(None)
            self._note(f"bank `{current.bank}` is gone (trashed or removed on disk)")
        self._update_counts()
        if self.current is None:
            self._select_initial(path)

    def _select_initial(self, path: str) -> None:
        wanted = getattr(self, "_wanted_bank", None)
        source = self.hub.sources.get(path)
        if source is None or not source.names:
            return
        if wanted is not None:
            if wanted.source != path and wanted.source in self.hub.sources:
                return  # wait for the wanted source
            if wanted.source == path and wanted.bank in source.names:
                self._wanted_bank = None
                self.select_bank(wanted)
                return
        if source.kind != "iii" and any(s.kind == "iii" for s in self.hub.sources.values()):
            return  # with nothing remembered, start on an iii bank; it reports shortly
        self._wanted_bank = None
        name = "main" if "main" in source.names else source.names[0]
        self.select_bank(BankKey(path, name))

    def want_bank(self, key: BankKey | None) -> None:
        """The bank to select as soon as its source is listed (start-up)."""
        self._wanted_bank = key

    # ------------------------------------------------------------------ banks

    def select_bank(self, key: BankKey) -> None:
        """Select a bank in the sidebar and show it."""
        self.tree.select_bank(key)  # shows it, unless the row was already the current one
        if self.current != key:
            self._show_bank(key)

    def _on_bank_activated(self, key: BankKey) -> None:
        if key == self.current:
            return
        if not self._panels_can_leave():
            if self.current is not None:
                self.tree.blockSignals(True)
                self.tree.select_bank(self.current)
                self.tree.blockSignals(False)
            return
        self._show_bank(key)

    def _is_keep(self, key: BankKey | None = None) -> bool:
        key = key or self.current
        source = self.hub.sources.get(key.source) if key is not None else None
        return source is not None and source.kind == "nanobot"

    def _show_bank(self, key: BankKey | None) -> None:
        self.current = key
        self._loading = key
        keep = key is not None and self._is_keep(key)
        self.memories.reset_rows([], KEEP_ROW_CAPABILITIES if keep else IIII_CAPABILITIES)
        self._apply_column_visibility(keep)
        table = self.memories.table
        if keep:
            # keep.md is shown in file order; header clicks (and header restores) must not re-sort it.
            table.setSortingEnabled(False)
            table.horizontalHeader().setSortIndicatorShown(False)
            self.memories.proxy.sort_by_field("position")
        else:
            table.horizontalHeader().setSortIndicatorShown(True)
            table.setSortingEnabled(True)  # sorts by the header's indicator
        if key is not None and not keep:
            config = self._worker_config(key)
            self.hub.set_config(key.source, config)
            self.preview.set_config(config)
        for _name, widget in self._panels:
            setter = getattr(widget, "set_bank", None)
            if setter is not None and widget is not self.memories:
                setter(key)
        if key is None:
            self.file_label.setText("")
            self.setWindowTitle("keepgui")
            self._update_counts()
            return
        self.setWindowTitle(f"{key.bank} — keepgui")
        self.file_label.setText(os.path.join(key.source, key.bank) if keep else
                                os.path.join(key.source, key.bank, "memories.jsonl"))
        self.progress.setRange(0, 0)
        self.progress.show()
        if self.persist_sources:
            self.settings.set_last_bank(key.source, key.bank)
        self.hub.open_bank(key)
        self._update_counts()

    def _on_bank_rows(self, key: BankKey, rows: list, final: bool) -> None:
        if key != self.current:
            return
        if final and self._loading == key:
            self._loading = None
            self.memories.upsert_rows(rows, final=True)
            self.progress.hide()
            self._mark_reloaded()
            self._offer_compaction(key)
            self.loaded.emit(key)
        else:
            self.memories.upsert_rows(rows, final=final)
            if not final and self._loading != key:
                self._mark_reloaded()
        self._update_counts()

    def _on_bank_progress(self, key: BankKey, done: int, total: int) -> None:
        if key != self.current or total <= 0:
            return
        self.progress.setRange(0, 1000)
        self.progress.setValue(int(1000 * done / total))
        self.progress.setFormat(f"loading {100 * done // total}%")

    def _on_bank_failed(self, key: BankKey, reason: str) -> None:
        if key == self.current:
            self.progress.hide()
            self.show_error(f"Bank `{key.bank}` cannot be read: {reason}. keepgui shows what it can and never "
                            "writes to it; see `keepgui doctor`.")

    # ------------------------------------------------------------------ memory actions

    def _selected(self) -> list:
        return self.memories.selected_records()

    def _on_selection(self, records: list) -> None:
        has = bool(records) and self.current is not None
        caps = self.memories.model.capabilities
        live = [r for r in records if r.invalid_at is None]
        retired = [r for r in records if r.invalid_at is not None]
        self.act_pin.setEnabled(has and caps.can("pin") and any(not r.pinned for r in live))
        self.act_unpin.setEnabled(has and caps.can("pin") and any(r.pinned for r in live))
        self.act_delete.setEnabled(has and caps.can("tombstone") and bool(live))
        self.act_restore.setEnabled(has and caps.can("tombstone") and bool(retired))
        self.act_edit.setEnabled(len(records) == 1 and caps.can("edit"))
        self.act_copy.setEnabled(has)
        if len(records) == 1 and self.current is not None and not self._is_keep():
            self.hub.request_history(self.current, records[0].id)
        self._update_counts()

    def push(self, text: str, action) -> None:
        """Run an undoable change to the shown iii bank (``action(batch)``)."""
        if self.current is None:
            return
        self.push_to(self.current, text, action)

    def push_keep(self, text: str, action, on_result=None) -> None:
        """Run an undoable change to the shown keep.md (``action(store)``)."""
        if self.current is None:
            return
        self.push_keep_to(self.current, text, action, on_result)

    def push_to(self, key: BankKey, text: str, action) -> None:
        """Run an undoable change to any open iii bank, shown or not (``action(batch)``)."""
        self.undo_stack.push(MemoryCommand(self.hub, key, text, action, self.show_error))

    def push_keep_to(self, key: BankKey, text: str, action, on_result=None) -> None:
        """Run an undoable change to any open workspace's keep.md, shown or not (``action(store)``)."""
        self.undo_stack.push(KeepCommand(self.hub, key, text, action, self.show_error, on_result))

    def set_pinned(self, pinned: bool, records: list | None = None) -> None:
        """Pin or unpin the selection (one undo step)."""
        targets = [r for r in (records if records is not None else self._selected())
                   if r.invalid_at is None and bool(r.pinned) != pinned]
        if targets:
            ids = [r.id for r in targets]
            self.push(describe("Pin" if pinned else "Unpin", len(ids)),
                      lambda b: [b.pin(i, pinned) for i in ids])

    def set_live(self, live: bool, records: list | None = None) -> None:
        """Tombstone or restore the selection (one undo step)."""
        targets = [r for r in (records if records is not None else self._selected())
                   if (r.invalid_at is None) != live]
        if not targets:
            return
        if self._is_keep():
            if live:
                records = [r.removed for r in targets if r.removed is not None]
                self.push_keep(describe("Restore", len(records)),
                               lambda store: [store.restore(rec) for rec in records])
            else:
                ids = [r.id for r in targets]
                self.push_keep(f"Forget {len(ids)} {'entry' if len(ids) == 1 else 'entries'}",
                               lambda store: [store.remove(i) for i in ids])
            return
        ids = [r.id for r in targets]
        if live:
            self.push(describe("Restore", len(ids)), lambda b: [b.restore(i) for i in ids])
        else:
            self.push(describe("Delete", len(ids)), lambda b: [b.delete(i) for i in ids])

    def _on_toggle(self, keys: list, field: str, value: bool) -> None:
        selected = self._selected()
        # a click on a selected row's box applies to the whole selection
        records = selected if any(r.id in keys for r in selected) else \
            [self.memories.model.row_object(self.memories.model.row_of(k)) for k in keys]
        if field == "pinned":
            self.set_pinned(value, records)
        else:
            self.set_live(value, records)

    def _on_edit(self, key: str, field: str, text: str) -> None:
        if self._is_keep():
            if field == "text":
                self.push_keep("Edit entry", lambda store: store.edit(key, text))
            return
        if field == "text":
            self.push("Edit memory", lambda b: b.update(key, text=text))
        elif field == "tags":
            self.push("Edit tags", lambda b: b.update(key, tags=split_labels(text)))
        elif field == "entities":
            self.push("Edit entities", lambda b: b.update(key, entities=split_labels(text)))

    def new_memory(self) -> None:
        """Edit → New memory (a new keep.md entry when keep.md is shown)."""
        if self.current is None:
            return
        if self._is_keep():
            self.keep_fact_dialog()
            return
        dialog = NewMemoryDialog(self.current.bank, self)
        if dialog.exec():
            text, tags, entities, pinned = dialog.values()
            self.push("New memory", lambda b: b.save(text, entities, tags, pinned))

    def quick_keep(self) -> None:
        """Edit → Quick keep: the small popup that keeps into any open keep.md or bank."""
        from keepgui.ui.quickkeep import open_quick_keep  # loaded on first use, like the popup itself

        open_quick_keep(self)

    def keep_fact_dialog(self) -> None:
        """Ask for a fact and keep it in the shown keep.md (with the keep skill's checks)."""
        from PySide6.QtWidgets import QInputDialog

        text, ok = QInputDialog.getText(self, "Keep a fact", "Fact to keep in keep.md:")
        if ok and text.strip():
            self.push_keep("Keep fact", lambda store: store.add(text), self._report_keep)

    def _report_keep(self, result) -> None:
        """Say what keeping a fact did (kept, already kept, a suggestion, warnings)."""
        message = getattr(result, "message", "")
        if getattr(result, "written", False):
            self._note(message)
        elif message:
            self.banner.show_message(message, "warning")

    def edit_current(self) -> None:
        """Edit → Edit memory: open the in-place editor on the text cell."""
        index = self.memories.table.currentIndex()
        if index.isValid():
            from keepgui.ui.memorymodel import COLUMN_INDEX

            self.memories.table.edit(index.siblingAtColumn(COLUMN_INDEX["text"]))

    def copy_selected(self) -> None:
        """Edit → Copy text."""
        records = self._selected()
        if records:
            QGuiApplication.clipboard().setText("\n".join(r.text for r in records))

    def find(self) -> None:
        """Edit → Find."""
        self.show_panel("memories")
        self.memories.focus_search()

    def _on_show_history(self, on: bool) -> None:
        self.memories.set_show_history(on)  # its checkbox's echo (_sync_history_action) remembers it

    def _sync_history_action(self, on: bool) -> None:
        """The panel's History checkbox changed (itself, or from the action): the one place it is saved."""
        self.act_history.blockSignals(True)
        self.act_history.setChecked(on)
        self.act_history.blockSignals(False)
        self.settings.set_show_history(on)

    def _on_ranked(self, on: bool) -> None:
        self.memories.ranked.setChecked(on)

    def _sync_ranked_action(self, on: bool) -> None:
        self.act_ranked.blockSignals(True)
        self.act_ranked.setChecked(on)
        self.act_ranked.blockSignals(False)

    def _set_column_visible(self, column: int, visible: bool) -> None:
        self.memories.table.setColumnHidden(column, not visible or self._column_not_applicable(column))
        hidden = [COLUMNS[i].field for i, a in enumerate(self.column_actions) if not a.isChecked()]
        self.settings.set_hidden_columns(hidden)

    def _column_not_applicable(self, column: int, keep: bool | None = None) -> bool:
        keep = self._is_keep() if keep is None else keep
        return keep and COLUMNS[column].field in KEEP_HIDDEN_COLUMNS

    def _apply_column_visibility(self, keep: bool) -> None:
        # keep.md entries have no tags, entities, dates or revisions: those columns would
        # only be empty. The pin column stays, greyed, with its tooltip saying why.
        for i, action in enumerate(self.column_actions):
            self.memories.table.setColumnHidden(i, not action.isChecked() or self._column_not_applicable(i, keep))

    # ------------------------------------------------------------------ worker settings and what-if

    def _worker_config(self, key: BankKey | None) -> MemoryConfig:
        """The worker settings remembered for a data dir (the worker's defaults otherwise)."""
        if key is None:
            return MemoryConfig()
        try:
            return MemoryConfig.from_mapping(self.settings.worker_config(key.source))
        except KeepguiError:
            return MemoryConfig()

    def _on_worker_settings(self, source: str, config: MemoryConfig) -> None:
        defaults = MemoryConfig()
        changed = {f: getattr(config, f) for f in MemoryConfig.PREVIEW_KEYS if getattr(config, f) != getattr(defaults, f)}
        self.settings.set_worker_config(source, changed)
        self.hub.set_config(source, config)
        self.rules._refresh_derived()

    def what_if(self, pinned: bool | None = None, live: bool | None = None) -> None:
        """Memory → What if…: preview a pin or delete without writing it."""
        for record in self._selected():
            self.preview.add_pending(record.id, pinned=pinned, live=live)
        self.show_panel("preview")

    def _apply_whatif(self, pins: dict, live: dict) -> None:
        if not (pins or live) or self.current is None or self._is_keep():
            return

        def action(batch) -> None:
            for mid, on in live.items():
                batch.restore(mid) if on else batch.delete(mid)
            for mid, on in pins.items():
                if batch.current(mid) is not None and batch.current(mid).invalid_at is None:
                    batch.pin(mid, on)

        self.push(describe("Apply what-if to", len(set(pins) | set(live))), action)

    # ------------------------------------------------------------------ compaction and outside rewrites

    def _offer_compaction(self, key: BankKey) -> None:
        """The "compaction due" badge: keep.md over the keep skill's 150-line cap."""
        source = self.hub.sources.get(key.source)
        doc = getattr(source, "doc", None)
        if doc is not None and doc.compaction_due and not self.banner.isVisible():
            self.banner.show_message(
                f"keep.md has {doc.line_count} lines, over the keep skill's 150-line cap: compaction is due "
                f"(target about {COMPACTION_TARGET}). Review a plan before anything is written.", "info",
                [("Review compaction", lambda: self.review_compaction(key))])

    def review_compaction(self, key: BankKey | None = None) -> None:
        """Bank → Review compaction: plan it in the background, then show the plan as a diff."""
        key = key or self.current
        if key is None:
            return
        self._note(f"planning a compaction of {key.bank}…")
        self.hub.request_plan(key, "compact")

    def review_rewrite(self, key: BankKey | None = None, name: str = "keep.md") -> None:
        """Bank → Review outside rewrite (keep.md of the shown or given workspace)."""
        key = key or self.current
        if key is None or not self._is_keep(key):
            self._note("open a nanobot workspace's keep.md to review rewrites made outside keepgui")
            return
        self.hub.request_plan(key, f"review:{name}")
        self._explicit_review = True

    def _on_plan(self, key: BankKey, kind: str, plan) -> None:
        if isinstance(plan, Exception):
            self.show_error(f"No plan for {key.bank}: {plan}")
            return
        review = kind.startswith("review:")
        name = kind.split(":", 1)[1] if review else key.bank
        if not review:
            self._open_plan(key, plan, f"Compaction of {key.bank}", review=False)
            return
        explicit = getattr(self, "_explicit_review", False)
        self._explicit_review = False
        if not plan.operations:
            if explicit:
                self._open_plan(key, plan, f"Outside rewrites of {name}", review=True)
            return
        summary = rewrite_summary(plan)
        self.banner.show_message(
            f"{name} was rewritten by another program: {summary or 'its entries changed'}.", "warning",
            [("Review", lambda: self._open_plan(key, plan, f"Rewrite of {name}", review=True))])

    def _open_plan(self, key: BankKey, plan, title: str, review: bool) -> None:
        dialog = CompactionDialog(plan, title, self, review=review)
        dialog.applyRequested.connect(lambda p, sel: self._apply_plan(key, dialog, p, sel, review))
        dialog.acceptRequested.connect(lambda p: self._accept_rewrite(key, dialog, p))
        dialog.finished.connect(dialog.deleteLater)
        self._compaction_dialog = dialog
        dialog.show()

    def _apply_plan(self, key: BankKey, dialog: CompactionDialog, plan, selection, review: bool) -> None:
        failure: list[Exception] = []
        text = (f"Restore {len(selection)} change(s) of {key.bank}" if review
                else f"Compact {key.bank} ({len(selection)} operations)")
        command = CompactionCommand(plan, selection, text, lambda action: self.hub.run_locked(key, action),
                                    failure.append, lambda: None)
        self.undo_stack.push(command)
        if failure:
            error = failure[0]
            replanned = getattr(error, "replanned", None)
            if replanned is not None:
                dialog.set_plan(replanned)
                dialog.notices.setText(f"{error}\n" + dialog.notices.text())
                dialog.notices.setVisible(True)
            else:
                self.show_error(f"{text} failed: {error}")
            return
        self.banner.dismiss()
        lines = getattr(command.applied, "lines", ())
        self._note("; ".join(lines[:3]) if lines else text)
        dialog.accept()

    def _accept_rewrite(self, key: BankKey, dialog: CompactionDialog, plan) -> None:
        try:
            self.hub.run_locked(key, plan.accept)
        except (KeepguiError, OSError) as exc:
            self.show_error(f"Not accepted: {exc}")
            return
        self.banner.dismiss()
        self._note("rewrite accepted: keepgui compares later changes with this version")
        dialog.accept()

    # ------------------------------------------------------------------ bank actions

    def _current_iii_source(self):
        path = self.current.source if self.current else self.tree.currentIndex().data(SourceRole)
        source = self.hub.sources.get(path) if path else None
        return source if source is not None and source.kind == "iii" else None

    def new_bank(self) -> None:
        """Bank → New bank."""
        source = self._current_iii_source()
        if source is None:
            self.show_error("Select an iii data dir first (File → Open iii data dir).")
            return
        dialog = NameDialog("New bank", "Bank name", set(source.names), self, extra_label="Description")
        if not dialog.exec():
            return
        try:
            with source.lock:
                source.datadir.create_bank(dialog.value(), dialog.extra_value())
        except (KeepguiError, OSError) as exc:
            self.show_error(f"Could not create the bank: {exc}")
            return
        self._adopt_bank(source, dialog.value())

    def _adopt_bank(self, source, name: str) -> None:
        """A bank this window just created or restored: list it and show it now
        (the background rescan that follows will agree)."""
        if name not in source.names:
            source.names = sorted([*source.names, name])
        self._on_banks_changed(source.path)
        self.select_bank(BankKey(source.path, name))
        self.hub.rescan(source.path)

    def trash_bank(self, key: BankKey | None = None) -> None:
        """Bank → Trash bank (after asking)."""
        key = key or self.current
        source = self.hub.sources.get(key.source) if key else None
        if key is None or source is None or source.kind != "iii":
            return
        answer = QMessageBox.question(
            self, "Trash bank",
            f"Move bank “{key.bank}” to the trash?\n\nNothing is deleted: the folder moves to "
            f"{os.path.join(key.source, '.trash')} and can be restored from the Trash node.")
        if answer != QMessageBox.StandardButton.Yes:
            return
        try:
            with source.lock, source.bank_lock(key.bank):
                dest = source.datadir.trash_bank(key.bank)
        except (KeepguiError, OSError) as exc:
            self.show_error(f"Could not trash `{key.bank}`: {exc}")
            return
        source.loaded.discard(key.bank)
        self._note(f"moved `{key.bank}` to {dest}")
        if key == self.current:
            self._show_bank(None)
        self.hub.rescan(source.path)

    def restore_bank(self, folder: str | None = None, source_path: str | None = None) -> None:
        """Bank → Restore from trash."""
        source = self.hub.sources.get(source_path) if source_path else self._current_iii_source()
        if source is None:
            return
        if folder is None:
            trashed = source.datadir.trashed()
            if not trashed:
                self._note("the trash is empty")
                return
            dialog = TrashDialog(trashed, set(source.names), self)
            if not dialog.exec() or dialog.folder() is None:
                return
            folder = dialog.folder()
        try:
            with source.lock:
                bank = source.datadir.restore_bank(folder)
        except (KeepguiError, OSError) as exc:
            self.show_error(f"Could not restore: {exc}")
            return
        self._adopt_bank(source, bank.name)

    # ------------------------------------------------------------------ context menus

    def _tree_menu(self, pos) -> None:
        index: QModelIndex = self.tree.indexAt(pos)
        kind = index.data(KindRole)
        menu = QMenu(self)
        if kind == "bank":
            key = index.data(BankKeyRole)
            menu.addAction("Open", lambda: self.select_bank(key))
            menu.addAction(self.act_new_memory)
            menu.addSeparator()
            menu.addAction(theme.icon("trash"), "Trash bank…", lambda: self.trash_bank(key))
        elif kind == "trashed":
            folder = index.data(FolderRole)
            menu.addAction(theme.icon("restore"), "Restore this bank",
                           lambda: self.restore_bank(folder, index.data(SourceRole)))
        elif kind in ("source", "trash"):
            menu.addAction(self.act_new_bank)
            menu.addAction(self.act_restore_bank)
            menu.addAction(self.act_reload)
            menu.addSeparator()
            menu.addAction(self.act_remove_source)
        else:
            menu.addAction(self.act_open)
            menu.addAction(self.act_open_ws)
        menu.exec(self.tree.viewport().mapToGlobal(pos))

    def _table_menu(self, pos) -> None:
        menu = QMenu(self)
        for action in (self.act_pin, self.act_unpin, None, self.act_delete, self.act_restore, None, self.act_edit,
                       self.act_copy, None, self.act_new_memory):
            menu.addSeparator() if action is None else menu.addAction(action)
        if not self._is_keep() and self._selected():
            whatif = menu.addMenu("What if… (preview only, nothing written)")
            whatif.addAction("…pinned", lambda: self.what_if(pinned=True))
            whatif.addAction("…unpinned", lambda: self.what_if(pinned=False))
            whatif.addAction("…deleted", lambda: self.what_if(live=False))
            whatif.addAction("…restored", lambda: self.what_if(live=True))
        menu.exec(self.memories.table.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------------ status

    def _update_counts(self) -> None:
        if self.current is None:
            self.counts_label.setText("")
            return
        selected = len(self._selected())
        text = self.hub.detail(self.current)
        if selected:
            text += f" · {selected} selected"
        self.counts_label.setText(text)

    def _mark_reloaded(self) -> None:
        self._last_reload = time.time()
        self._update_reload_label()

    def _update_reload_label(self) -> None:
        if self._last_reload is not None:
            self.reload_label.setText(f"read {relative(int(self._last_reload * 1000))}")

    def _note(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    def show_error(self, text: str) -> None:
        """Show a failure in the banner (it stays until dismissed)."""
        self.banner.show_message(text, "removed")

    def _on_tab(self, index: int) -> None:
        widget = self.tabs.widget(index)
        name = next((n for n, w in self._panels if w is widget), "memories")
        self.settings.set_panel(name)
        for action in self.panel_actions.actions():
            if action.data() == name:
                action.setChecked(True)

    def show_shortcuts(self) -> None:
        """Help → Keyboard shortcuts."""
        rows = "".join(f"<tr><td>{name}</td><td><b>{keys}</b></td></tr>" for name, keys in shortcuts.describe())
        QMessageBox.information(self, "Keyboard shortcuts", f"<table>{rows}</table>")

    def about(self) -> None:
        """Help → About."""
        QMessageBox.about(self, "About keepgui",
                          f"<h3>keepgui {__version__}</h3><p>See and control what your AI agents remember: "
                          "iii memory banks and nanobot workspaces, read and written exactly as the agents "
                          "do.</p><p>Nothing is ever silently overwritten; deletions are tombstones; every "
                          "change can be undone.</p>")

    # ------------------------------------------------------------------ state

    def _restore_state(self) -> None:
        for name, restore in (("geometry", self.restoreGeometry), ("window", self.restoreState),
                              ("splitter", self.splitter.restoreState),
                              ("memory_splitter", self.memories.splitter.restoreState),
                              ("memory_header", self.memories.table.horizontalHeader().restoreState)):
            value = self.settings.state(name)
            if value is not None:
                restore(value)
        self.act_history.setChecked(self.settings.show_history())  # shows history in the panel too
        self.show_panel(self.settings.panel())

    def save_state(self) -> None:
        """Remember geometry, splitters and columns."""
        self.settings.set_state("geometry", self.saveGeometry())
        self.settings.set_state("window", self.saveState())
        self.settings.set_state("splitter", self.splitter.saveState())
        self.settings.set_state("memory_splitter", self.memories.splitter.saveState())
        self.settings.set_state("memory_header", self.memories.table.horizontalHeader().saveState())
        try:
            self.settings.save()
        except (KeepguiError, OSError) as exc:
            self._note(f"settings not saved: {exc}")

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if not self._panels_can_leave():
            event.ignore()
            return
        self.save_state()
        self.hub.shutdown()
        super().closeEvent(event)

