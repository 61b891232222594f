"""keepgui's main window: the sidebar of sources and banks, the panels, the menus, the undo stack.

The window is a coordinator. Files are read and written by the backends behind
:mod:`keepgui.core.source`, through the :class:`~keepgui.ui.hub.Hub`; every
change a person makes is one :class:`~keepgui.ui.commands.ChangeCommand` on one
undo stack (:meth:`MainWindow.perform`); the panels own their actions and
decide what to redraw from the hub's one ``changed`` signal. The window never
takes a lock and never asks which backend a source is: what a bank or source
cannot do is in its :class:`~keepgui.core.source.Capabilities`, and the
registry (:mod:`keepgui.core.registry`) says which backends exist.

Panels (Memories, Rules, Preview) follow the selected bank through
:meth:`add_panel`: each panel has ``set_bank(key_or_None)`` and may have
``can_leave() -> bool`` (an unsaved-changes guard).

Signals:
    loaded(object key): the shown bank finished loading.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QUndoStack
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from keepgui import __version__
from keepgui.core import registry
from keepgui.core.errors import KeepguiError
from keepgui.core.source import CREATE_BANK, TRASH_BANK, BankKey, Change, Pending, Problem
from keepgui.ui import bankactions, contextdiff, shortcuts, theme, timetravel, transfer
from keepgui.ui.appearance import apply_theme
from keepgui.ui.approvals import ApprovalsDialog, PendingLister
from keepgui.ui.banner import Banner
from keepgui.ui.commands import ChangeCommand, Outcome
from keepgui.ui.compaction import CompactionFlow
from keepgui.ui.geometry import place_window
from keepgui.ui.graph import GraphPanel
from keepgui.ui.hub import Hub
from keepgui.ui.inbox import InboxDialog, InboxLister
from keepgui.ui.memorypanel import MemoryPanel
from keepgui.ui.opening import FolderVerdicts, choose_source
from keepgui.ui.palette import CommandPalette, PaletteIndex, carry_out, menu_actions
from keepgui.ui.preferences import Preferences, PreferencesDialog, apply_inbox_preferences, inbox_preferences
from keepgui.ui.preview import PreviewPane
from keepgui.ui.problems import FileLinesDialog, ProblemsDialog
from keepgui.ui.remote import RemoteDialog, RemoteStatus
from keepgui.ui.rules import RulesPanel
from keepgui.ui.secrets import SecretsWatch
from keepgui.ui.settings import Settings
from keepgui.ui.sidebar import BankKeyRole, FolderRole, KindRole, SourceRole, SourceTree, SourceTreeModel
from keepgui.ui.timefmt import relative
from keepgui.ui.toast import ElidedLabel, ElidedPath, StatusNote, UndoToast
from keepgui.ui.welcome import WelcomePage


class MainWindow(QMainWindow):
    """The window a person opens every day."""

    loaded = Signal(object)

    def __init__(self, hub: Hub, settings: Settings, persist_sources: bool = True) -> None:
        super().__init__()
        self.hub = hub
        # every open source's writes awaiting approval (Hermes's pending queue...), listed off the GUI thread
        self.approvals = PendingLister(hub, self)
        self.approvals.arrived.connect(lambda _n, sentence: self.note(sentence))
        self.inbox = InboxLister(hub, self)  # every change made outside keepgui, across the open sources
        self.settings = settings
        self.persist_sources = persist_sources
        self.remembered: set[str] = set()  # the open sources the settings keep (not the demo, not a handover's)
        self.reload_override = ""  # why this run's reload command is not the one of Preferences
        self.verdicts = FolderVerdicts(self)
        self.undo_stack = QUndoStack(self)
        self.current: BankKey | None = None
        self._loading: BankKey | None = None
        self._last_reload: float | None = None
        # A bank name, the sources to look in (in order), and for each the listing that must have arrived
        # (a bank just created or restored is in the listing asked for after it, not in an older one).
        self._wanted: tuple[str, list[str], dict[str, int]] | None = None
        self._panels: list[tuple[str, QWidget]] = []
        self.setWindowTitle("keepgui")
        self.setWindowIcon(theme.app_icon())

        self.tree_model = SourceTreeModel(self)
        self.tree = SourceTree(self.tree_model, self)
        self.tree.setMinimumWidth(self.fontMetrics().averageCharWidth() * 22)  # bank names stay readable
        self.memories = MemoryPanel(hub, settings, self.perform, self)
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
        self.welcome = WelcomePage(self)
        self.welcome.openRequested.connect(self.open_source)
        self.welcome.chooseRequested.connect(self.open_dialog)
        self.welcome.demoRequested.connect(self.open_demo)
        self.pages = QStackedWidget(self)  # the sources and their banks, or the welcome page when none is open
        self.pages.addWidget(self.splitter)
        self.pages.addWidget(self.welcome)
        self.setCentralWidget(self.pages)
        self.add_panel("memories", "Memories", self.memories)
        self.rules = RulesPanel(hub, self.perform_now, self)
        self.add_panel("rules", "Rules", self.rules)
        self.preview = PreviewPane(hub, self, settings.source_settings)
        self.add_panel("preview", "Preview", self.preview)
        self.graph = GraphPanel(hub, self)
        self.add_panel("graph", "Graph", self.graph)
        self.compaction = CompactionFlow(self)

        self.counts_label = ElidedLabel(self)
        self.file_label = ElidedPath(self)
        self.reload_label = QLabel(self)
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(180)
        self.progress.setTextVisible(True)
        self.progress.setAccessibleName("Loading progress")
        self.progress.hide()
        self.toast = UndoToast(self.undo_stack, self)
        self.statusBar().addWidget(self.counts_label)
        self.statusBar().addWidget(self.toast)
        self.statusBar().addWidget(self.file_label, 1)
        self.attention_label = QLabel(self)  # a lasting condition, said once (see Hub.attention)
        self.attention_label.setAccessibleName("Lasting problem")
        self.attention_label.hide()
        self.status_note = StatusNote(self.statusBar(), [self.progress, self.attention_label, self.reload_label])
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.attention_label)
        self.statusBar().addPermanentWidget(self.reload_label)

        self._build_actions()
        self._build_menus()
        self.secrets = SecretsWatch(self)  # scans on every change; Bank → Secrets…
        self.time_travel = timetravel.install(self)  # View → View as of…, the strip's menu (issue 29.3)
        self.transfer = transfer.install(self)  # File → Export…/Import…, Memory → Copy/Move to… (29.5)
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

    def _open_graph_row(self, key: str) -> None:
        """A double click on a row of the graph: that row in the memories panel."""
        if self.memories.select_key(key):
            self.show_panel("memories")

    def show_panel(self, name: str) -> None:
        """Bring a panel to the front (``activity``: the Memories panel with its activity strip)."""
        if name == "activity":
            self.memories.act_activity.setChecked(True)
            name = "memories"
        widget = self.panel(name)
        if widget is not None:
            self.tabs.setCurrentWidget(widget)

    def _panels_can_leave(self) -> bool:
        return all(getattr(w, "can_leave", lambda: True)() for _, w in self._panels)

    # ------------------------------------------------------------------ writes

    def perform(
        self,
        target: BankKey | str,
        operation: Callable[[Any], Change],
        text: str | None = None,
        report: bool = True,
        wait: bool = False,
    ) -> Outcome:
        """Run a write of any backend as one undo step (``operation(bank)``, or ``operation(source)``
        for a source folder), off the GUI thread: the returned ``Outcome`` settles when it ran (its
        ``then``). Failures are shown in the banner; with ``report`` False the caller handles the
        first run's (its ``Outcome`` says why), and undo's and redo's are still shown. ``wait``:
        settled before this returns (the GUI thread waits; only where an answer is due at once)."""
        outcome = Outcome()
        command = ChangeCommand(
            self.hub, target, operation, text, self.show_error, outcome, not report, self.undo_stack, wait
        )
        self.undo_stack.push(command)
        return outcome

    def perform_now(
        self, target: BankKey | str, operation: Callable[[Any], Change], text: str | None = None, report: bool = True
    ) -> Outcome:
        """:meth:`perform`, settled before it returns (the rules editor's save answers at once)."""
        return self.perform(target, operation, text, report, wait=True)

    # ------------------------------------------------------------------ actions and menus

    def _action(
        self, text: str, slot: Callable[..., Any], shortcut: Any = None, tip: str = "", icon: str | None = None
    ) -> QAction:
        action = shortcuts.make_action(self, text, slot, shortcut, tip, icon=icon)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        a = self._action
        self.open_actions: list[QAction] = []
        keys_of = dict(enumerate(shortcuts.OPEN_SOURCE))
        for number, backend in enumerate(registry.backends()):  # backends past the shortcuts get none
            keys = keys_of.get(number)
            label = backend.label
            action = a(
                f"Open {label}…",
                lambda _=False, kind=backend.kind, what=label: self.open_dialog(kind, what),
                keys,
                f"Open a folder as a {label}",
                icon="folder" if not self.open_actions else None,
            )
            self.open_actions.append(action)
        self.act_open_remote = a(
            "Open on another &machine…", self.open_remote, tip="Open an agent's memory on another machine, over SSH"
        )
        self.act_remove_source = a(
            "&Close source", self.remove_current_source, tip="Stop showing this source (nothing on disk changes)"
        )
        self.act_reload = a(
            "&Reload from disk",
            self.reload_all,
            shortcuts.RELOAD,
            "Re-read every file (changes by others also show up on their own)",
        )
        self.act_quit = a("&Quit", self.close, shortcuts.QUIT)
        self.act_undo = self.undo_stack.createUndoAction(self, "&Undo")
        shortcuts.set_keys(self.act_undo, shortcuts.UNDO)
        self.act_redo = self.undo_stack.createRedoAction(self, "&Redo")
        shortcuts.set_keys(self.act_redo, shortcuts.REDO)
        self.act_find = a("&Find", self.find, shortcuts.FIND, "Search the rows of this bank")
        self.palette_index = PaletteIndex(self.hub, self)
        self.command_palette: CommandPalette | None = None
        self.act_palette = a(
            "Find &anything…",
            self.open_palette,
            shortcuts.PALETTE,
            "One box for every bank, memory, entry, document and command of the open sources",
        )
        self.act_quick_keep = a(
            "&Quick keep…",
            self.quick_keep,
            shortcuts.QUICK_KEEP,
            "Keep a fact in any open bank that keeps facts, with duplicate checks",
            icon="keep",
        )
        self.act_new_bank = a("&New bank…", self.new_bank, shortcuts.NEW_BANK, "Create a bank in this source")
        self.act_trash_bank = a(
            "&Trash bank…", self.trash_bank, tip="Move the bank to the trash (restorable)", icon="trash"
        )
        self.act_restore_bank = a("Restore from t&rash…", self.restore_bank, tip="Bring a trashed bank back")
        self.act_compact = a(
            "Review &compaction…",
            lambda: self.review_compaction(),
            shortcuts.COMPACT,
            "Plan a compaction of this bank and review it as a diff before anything is written",
        )
        self.act_problems = a(
            "&Problems…",
            lambda: self.show_problems(),
            tip="What a check of this bank's files finds (keepgui doctor), each line opening the place",
            icon="warning",
        )
        self.act_approvals = a(
            "Pending &approvals…",
            lambda: self.show_approvals(),
            shortcuts.APPROVALS,
            "Writes an agent staged for your approval: the change each makes, Approve or Reject (undoable)",
        )
        self.act_inbox = a(
            "&Inbox…",
            lambda: self.show_inbox(),
            shortcuts.INBOX,
            "Every change made outside keepgui, across sources: accept, or revert an entry or the whole change",
        )
        self.act_review = a(
            "Review &outside rewrite…",
            lambda: self.review_rewrite(),
            tip=("Compare a file with the last version keepgui saw, entry by entry, and restore what was lost"),
        )
        self.act_graph_fit = a("&Fit graph", self.graph.fit, shortcuts.GRAPH_FIT, "Show the whole graph")
        self.act_graph_around = a(
            "Graph &around the selection",
            self.graph.toggle_around,
            shortcuts.GRAPH_AROUND,
            "Draw only the selected memories and those that share a name with them (and back)",
        )
        self.act_preferences = a(
            "&Preferences…", self.edit_preferences, shortcuts.PREFERENCES, "Theme, reload command, sources at start"
        )
        self.act_preferences.setMenuRole(QAction.MenuRole.PreferencesRole)  # macOS: the application menu
        self.act_shortcuts = a("&Keyboard shortcuts", self.show_shortcuts, shortcuts.HELP)
        self.act_about = a("&About keepgui", self.about)
        self.panel_actions = QActionGroup(self)
        for name, title, seq in (
            ("memories", "&Memories", shortcuts.PANEL_MEMORIES),
            ("rules", "R&ules", shortcuts.PANEL_RULES),
            ("preview", "&Preview", shortcuts.PANEL_PREVIEW),
            ("graph", "&Graph", shortcuts.PANEL_GRAPH),
        ):
            action = a(title, lambda _=False, n=name: self.show_panel(n), seq)
            action.setCheckable(True)
            action.setData(name)
            self.panel_actions.addAction(action)
        for action in self.memories.actions_for_menus():
            self.addAction(action)  # the panel's shortcuts work anywhere in the window

    def _build_menus(self) -> None:
        m = self.memories
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        for act in (
            *self.open_actions,
            self.act_open_remote,
            self.act_remove_source,
            None,
            self.act_reload,
            None,
            self.act_quit,
        ):
            file_menu.addSeparator() if act is None else file_menu.addAction(act)
        edit = bar.addMenu("&Edit")
        for act in (
            self.act_undo,
            self.act_redo,
            None,
            self.act_find,
            self.act_palette,
            None,
            m.act_new_memory,
            self.act_quick_keep,
            m.act_edit,
            m.act_copy,
            None,
            self.act_preferences,
        ):
            edit.addSeparator() if act is None else edit.addAction(act)
        memory = bar.addMenu("&Memory")
        for act in (m.act_pin, m.act_unpin, None, m.act_delete, m.act_restore, None, m.act_move_up, m.act_move_down):
            memory.addSeparator() if act is None else memory.addAction(act)
        self.view_menu = bar.addMenu("&View")
        self.view_menu.addAction(m.act_history)
        self.view_menu.addAction(m.act_ranked)
        self.view_menu.addAction(m.act_activity)
        self.view_menu.addAction(self.act_graph_fit)
        self.view_menu.addAction(self.act_graph_around)
        self.view_menu.addAction(m.act_details)
        columns = self.view_menu.addMenu("&Columns")
        for action in m.column_actions:
            columns.addAction(action)
        columns.addSeparator()
        columns.addAction(m.act_fit_columns)
        self.view_menu.addSeparator()
        for action in self.panel_actions.actions():
            self.view_menu.addAction(action)
        self.act_compare_context = contextdiff.add_action(self)  # View → Compare context…
        self.bank_menu = bar.addMenu("&Bank")
        for act in (
            self.act_new_bank,
            self.act_trash_bank,
            self.act_restore_bank,
            None,
            self.act_compact,
            self.act_review,
            self.act_inbox,
            self.act_approvals,
            None,
            self.act_problems,
        ):
            self.bank_menu.addSeparator() if act is None else self.bank_menu.addAction(act)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.act_shortcuts)
        help_menu.addAction(self.act_about)

    def _connect(self) -> None:
        hub = self.hub
        hub.sourcesChanged.connect(self._on_sources_changed)
        RemoteStatus(lambda: list(hub.sources), self.tree_model.set_source_status, self)  # the window owns it
        hub.banksChanged.connect(self._on_banks_changed)
        hub.changed.connect(self._on_change)
        hub.bankProgress.connect(self._on_bank_progress)
        hub.bankFailed.connect(self._on_bank_failed)
        hub.note.connect(self.note)
        hub.error.connect(self.show_error)
        hub.attention.connect(self._on_attention)
        # A write of any kind (one the inbox or the approvals list) comes back after they last listed.
        hub.written.connect(self._after_write)
        self.tree.bankActivated.connect(self._on_bank_activated)
        self.tree.customContextMenuRequested.connect(self._tree_menu)
        self.tree.problemsRequested.connect(self.show_problems)
        self.memories.selectionChangedTo.connect(lambda _records: self._update_counts())
        self.memories.whatIfRequested.connect(self._what_if)
        self.memories.selectionChangedTo.connect(lambda records: self.graph.highlight(r.id for r in records))
        self.memories.historyRead.connect(self.graph.show_revisions)  # the row selected is ringed there too
        self.memories.history.toggled.connect(self.graph.set_show_history)
        self.graph.rowsChosen.connect(self.memories.select_keys)
        self.graph.rowOpened.connect(self._open_graph_row)
        self.memories.note.connect(self.note)
        self.memories.warning.connect(lambda text: self.banner.show_message(text, "warning"))
        self.memories.retired.connect(self.toast.offer)
        self.tabs.currentChanged.connect(self._on_tab)
        self.rules.draftChanged.connect(self.preview.set_drafts)
        self.rules.note.connect(self.note)
        self.preview.settingsChanged.connect(self._on_source_settings)
        self.preview.applyWhatIfRequested.connect(self._apply_whatif)

    # ------------------------------------------------------------------ sources

    def open_source(self, kind: str, path: str, remember: bool = True) -> None:
        """Open a folder as a source of ``kind`` (remembered for the next start, and as recent)."""
        path = os.path.abspath(path)
        self.hub.add(kind, path)
        if remember:
            self.remembered.add(path)
            if self.persist_sources:
                self.settings.add_recent_source(kind, path)
        self._save_sources()

    def open_dialog(self, kind: str, _label: str = "") -> None:
        """File → Open <source>…: choose a folder, see what it is, and confirm one that is not such a source."""
        choose_source(self, kind, self.verdicts, self.open_source)

    def open_remote(self) -> None:
        """File → Open on another machine…: a host, the agents found there, each opened over SSH."""
        RemoteDialog(self, self.open_source).open()

    def open_demo(self) -> None:
        """Open a throw-away copy of the demo (for this session: removed at exit, never remembered, and
        no running agent is told about its writes)."""
        from keepgui.core.demo import throwaway_demo_copy

        for kind, path in throwaway_demo_copy().sources:
            self.hub.add(kind, path, reload_command="")

    def update_start_page(self) -> None:
        """The welcome page when no source is open (what was found, the demo, open…, recent), else the banks."""
        empty = not self.hub.sources
        if empty and self.pages.currentWidget() is not self.welcome:
            recent = [(s.get("kind", ""), s["path"]) for s in self.settings.recent_sources()]
            self.welcome.set_recent(recent)
            self.welcome.discover()
        self.pages.setCurrentWidget(self.welcome if empty else self.splitter)

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
            kept = [s for s in self.hub.sources.values() if s.path in self.remembered]
            self.settings.set_sources([{"kind": s.kind, "path": s.path} for s in kept])

    def reload_all(self) -> None:
        """File → Reload: re-list every source and re-read the shown bank."""
        for path in list(self.hub.sources):
            self.hub.rescan(path)
        if self.current is not None:
            self.hub.refresh_bank(self.current)
        self.note("reloaded from disk")

    def _on_sources_changed(self) -> None:
        self.update_start_page()
        self.tree_model.set_sources(list(self.hub.sources.values()))
        for path in self.hub.sources:
            index = self.tree_model.index_of_source(path)
            self.tree.expand(index.parent())  # a source on another machine is under that machine's row
            self.tree.expand(index)

    def _on_banks_changed(self, path: str) -> None:
        if path not in self.hub.sources:
            return
        current = self.current
        self.tree.blockSignals(True)
        self.tree.selectionModel().blockSignals(True)
        # the trash is listed by the hub's background scan, not here on the GUI thread
        hub = self.hub
        self.tree_model.set_banks(
            path,
            hub.banks(path),
            lambda name: hub.summary(BankKey(path, name)),
            hub.backend(path).icon,
            hub.trashed(path),
        )
        if current is not None:
            self.tree.select_bank(current)
        self.tree.selectionModel().blockSignals(False)
        self.tree.blockSignals(False)
        self.tree.viewport().update()
        if current is not None and current.source == path and current.bank not in hub.banks(path):
            self._show_bank(None)
            self.note(f"bank `{current.bank}` is gone (trashed or removed on disk)")
        self._update_counts()
        self._select_wanted(path)

    def _select_wanted(self, path: str) -> None:
        """Select the bank asked for as soon as the sources list it; else a first bank at start-up."""
        hub = self.hub
        if self._wanted is not None:
            name, order, since = self._wanted
            for candidate in order:
                if candidate not in hub.sources:
                    continue
                if not hub.is_listed(candidate, since.get(candidate, 1)):
                    return  # an earlier source has not listed its banks (as they are now) yet
                if name in hub.banks(candidate):
                    self._wanted = None
                    self.select_bank(BankKey(candidate, name))
                    return
            self._wanted = None  # no source has it: show what a start shows
        if self.current is not None:
            return
        names = hub.banks(path)
        if not names:
            return
        rank = hub.backend(path).start_rank
        if any(hub.backend(p).start_rank < rank for p in hub.sources):
            return  # with nothing remembered, start on the preferred kind of bank; it reports shortly
        self.select_bank(BankKey(path, "main" if "main" in names else names[0]))

    def want_bank(self, key: BankKey | tuple[str, str] | None) -> None:
        """The bank to select as soon as its source is listed (start-up)."""
        if key is None:
            self._wanted = None
            return
        source, bank = (key.source, key.bank) if isinstance(key, BankKey) else key
        self._wanted = (bank, [source], {})

    def want_bank_named(self, name: str, sources: Sequence[str]) -> None:
        """Select the first of ``sources`` that lists a bank called ``name`` (now, or once listed)."""
        order = [os.path.abspath(p) for p in sources]
        self._wanted = (name, order, {p: self.hub.scan_count(p) for p in order if p in self.hub.sources})
        for path in list(self.hub.sources):
            self._select_wanted(path)
            if not self._still_wanted():
                break

    def _still_wanted(self) -> bool:
        """True while a bank asked for by name is not selected yet (selecting it clears the wish)."""
        return self._wanted is not None

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

    def _show_bank(self, key: BankKey | None) -> None:
        self.current = key
        self._loading = key
        self.banner.set_view(key)  # a banner about another bank goes; this bank's own comes back
        if key is not None:
            self.hub.configure(key.source, self.settings.source_settings(key.source))
        for _name, widget in self._panels:
            setter = getattr(widget, "set_bank", None)
            if setter is not None:
                setter(key)
        if key is None:
            self.file_label.set_path("")
            self.setWindowTitle("keepgui")
            self._update_counts()
            return
        self.setWindowTitle(f"{key.bank} — keepgui")
        self.file_label.set_path(os.path.join(key.source, key.bank))
        self.progress.setRange(0, 0)
        self.progress.show()
        if self.persist_sources:
            self.settings.set_last_bank(key.source, key.bank)
        self.hub.open_bank(key)
        self._update_counts()

    def _on_change(self, change: Change) -> None:
        key = change.key
        if key is None or key != self.current or not change.rows:
            return
        if change.rows.complete and self._loading == key:
            self._loading = None
            self.progress.hide()
            self._mark_reloaded()
            self.compaction.offer(key)
            self.loaded.emit(key)
        elif not change.rows.complete and self._loading != key:
            self._mark_reloaded()  # an incremental read of what others wrote
        self._update_counts()

    def _on_bank_progress(self, key: BankKey, done: int, total: int) -> None:
        if key != self.current or total <= 0:
            return
        # QProgressBar repaints at once when its value moves (a whole synchronous paint inside this
        # slot, while the load holds the interpreter lock between its checkpoints): with updates off
        # while it is set, the bar is only marked for the next paint of the window, merged with the rest.
        percent = min(100, 100 * done // total)
        bar = self.progress
        if percent == bar.value() and bar.maximum() == 100:
            return
        bar.setUpdatesEnabled(False)
        if bar.maximum() != 100:
            bar.setFormat("loading %p%")
            bar.setRange(0, 100)
        bar.setValue(percent)
        bar.setUpdatesEnabled(True)  # schedules an update (not a repaint)

    def _on_bank_failed(self, key: BankKey, reason: str) -> None:
        if key == self.current:
            self.progress.hide()
            self.banner.show_message(
                f"Bank `{key.bank}` cannot be read: {reason}. keepgui shows what it can and never "
                "writes to it; Bank → Problems lists what is wrong.",
                "removed",
                owner=key,
            )

    # ------------------------------------------------------------------ memory actions the window routes

    def set_pinned(self, pinned: bool, records: list[Any] | None = None) -> None:
        """Pin or unpin the selection (one undo step)."""
        self.memories.set_pinned(pinned, records)

    def set_live(self, live: bool, records: list[Any] | None = None) -> None:
        """Retire or restore the selection (one undo step)."""
        self.memories.set_live(live, records)

    def quick_keep(self) -> None:
        """Edit → Quick keep: the small popup that keeps into any open bank that keeps facts."""
        from keepgui.ui.quickkeep import open_quick_keep  # loaded on first use, like the popup itself

        open_quick_keep(self)

    def open_palette(self) -> None:
        """Edit → Find anything (Ctrl+K): the command palette over the window."""
        if self.command_palette is None:
            self.command_palette = CommandPalette(self.palette_index, self)
            self.command_palette.chosen.connect(lambda entry: carry_out(self, entry, self._select_row_when_shown))
        menus = [menu for action in self.menuBar().actions() if isinstance(menu := action.menu(), QMenu)]
        actions = [(action, path) for action, path in menu_actions(menus) if action is not self.act_palette]
        banks = [
            (BankKey(path, name), f"{self.hub.sources[path].label} · {self.hub.detail(BankKey(path, name))}")
            for path in self.hub.sources
            for name in self.hub.banks(path)
        ]
        self.command_palette.open_over(self, actions, banks)

    def _select_row_when_shown(self, key: BankKey, row: str) -> None:
        """Select a row of ``key`` as soon as that bank has loaded (now, when it has)."""

        def select() -> None:
            if self.current == key and self.memories.select_key(row):
                self.show_panel("memories")

        def once_loaded(loaded: BankKey) -> None:
            if loaded == key or self.current != key:
                self.loaded.disconnect(once_loaded)
                select()

        if self.current == key and self._loading is None:
            select()
        else:
            self.loaded.connect(once_loaded)

    def find(self) -> None:  # type: ignore[override]  # Edit → Find; QWidget.find (by window id) is not used
        """Edit → Find."""
        self.show_panel("memories")
        self.memories.focus_search()

    def _what_if(self, keys: list[str], pinned: bool | None, live: bool | None) -> None:
        for key in keys:
            self.preview.add_pending(key, pinned=pinned, live=live)
        self.show_panel("preview")

    def _apply_whatif(self, pins: dict[str, bool], live: dict[str, bool]) -> None:
        if (pins or live) and self.current is not None:
            pending = Pending(pins=pins, live=live)
            self.perform(self.current, lambda bank: bank.apply_pending(pending))

    def _on_source_settings(self, source: str, values: dict[str, Any]) -> None:
        self.settings.set_source_settings(source, values)
        self.hub.configure(source, values)
        self.rules._refresh_derived()

    # ------------------------------------------------------------------ compaction and outside rewrites

    def review_compaction(self, key: BankKey | None = None) -> None:
        """Bank → Review compaction: plan it in the background, then show the plan as a diff."""
        self.compaction.review(key or self.current)

    def review_rewrite(self, key: BankKey | None = None, name: str | None = None) -> None:
        """Bank → Review outside rewrite (a file of the shown or given bank)."""
        self.compaction.review_rewrite(key or self.current, name)

    # ------------------------------------------------------------------ problems

    def show_problems(self, key: BankKey | None = None) -> None:
        """Bank → Problems: what a check of the bank's files finds, each line opening the place."""
        key = key or self.current
        if key is None:
            self.note("select a bank to check its files")
            return
        dialog = ProblemsDialog(self.hub, key, self)
        dialog.placeRequested.connect(lambda problem: self.show_place(key, problem))
        dialog.finished.connect(dialog.deleteLater)
        dialog.show()

    def show_place(self, key: BankKey, problem: Problem) -> None:
        """Where a problem is: a document of the bank in the Rules panel, any other file at its line."""
        if self.current != key:
            self.select_bank(key)
        try:
            names = sorted(self.hub.bank(key).documents().documents_of([problem.path]))
        except (KeyError, KeepguiError, OSError):
            names = []
        if names and self.rules.show_document(names[0]):
            self.show_panel("rules")
            return
        FileLinesDialog(problem.path, problem.line, problem.message, self).show()

    # ------------------------------------------------------------------ bank actions

    def _current_source(self) -> str | None:
        path = self.current.source if self.current else self.tree.currentIndex().data(SourceRole)
        return path if path in self.hub.sources else None

    def new_bank(self) -> None:
        """Bank → New bank."""
        bankactions.new_bank(self)

    def trash_bank(self, key: BankKey | None = None) -> None:
        """Bank → Trash bank (after asking)."""
        bankactions.trash_bank(self, key)

    def restore_bank(self, folder: str | None = None, source_path: str | None = None) -> None:
        """Bank → Restore from trash."""
        bankactions.restore_bank(self, folder, source_path)

    # ------------------------------------------------------------------ context menus

    def _tree_menu(self, pos: Any) -> None:
        index: QModelIndex = self.tree.indexAt(pos)
        node = index.data(KindRole)
        menu = QMenu(self)
        if node == "bank":
            key = index.data(BankKeyRole)
            menu.addAction("Open", lambda: self.select_bank(key))
            menu.addAction(self.memories.act_new_memory)
            menu.addAction(theme.icon("warning"), "Problems…", lambda: self.show_problems(key))
            if self.hub.sources[key.source].capabilities.can(TRASH_BANK):
                menu.addSeparator()
                menu.addAction(theme.icon("trash"), "Trash bank…", lambda: self.trash_bank(key))
        elif node == "trashed":
            folder = index.data(FolderRole)
            menu.addAction(
                theme.icon("restore"), "Restore this bank", lambda: self.restore_bank(folder, index.data(SourceRole))
            )
        elif node in ("source", "trash"):
            source = self.hub.sources.get(index.data(SourceRole))
            if source is not None and source.capabilities.can(CREATE_BANK):
                menu.addAction(self.act_new_bank)
            if source is not None and source.capabilities.can(TRASH_BANK):
                path = index.data(SourceRole)  # this node's source, not the one shown
                menu.addAction(self.act_restore_bank.text(), lambda: self.restore_bank(None, path)).setStatusTip(
                    self.act_restore_bank.statusTip()
                )
            menu.addAction(self.act_reload)
            menu.addSeparator()
            menu.addAction(self.act_remove_source)
        else:
            for action in (*self.open_actions, self.act_open_remote):
                menu.addAction(action)
        menu.exec(self.tree.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------------ status

    def _update_counts(self) -> None:
        if self.current is None:
            self.counts_label.setText("")
            return
        selected = len(self.memories.selected_records())
        summary = self.hub.summary(self.current)
        if summary is not None and summary.title:
            self.setWindowTitle(f"{summary.title} — keepgui")  # a bank named by a folder name not for people
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

    def _after_write(self, _change: Change) -> None:
        self.inbox.refresh()
        self.approvals.refresh()

    def _on_attention(self, problem: str) -> None:
        # The sentence's first clause ("`iii` is not on PATH"), with the whole of it in the tooltip.
        self.attention_label.setText("⚠ " + problem.split(";")[0].strip() if problem else "")
        self.attention_label.setToolTip(problem)
        self.attention_label.setVisible(bool(problem))

    def show_inbox(self) -> InboxDialog:
        """The inbox in a window of its own (accept, revert, approve, reject: each undoable)."""
        dialog = InboxDialog(self.inbox, lambda path, op, text: self.perform(path, op, text), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def show_approvals(self) -> ApprovalsDialog:
        """The writes agents staged for approval, in a window of their own (approve or reject, undoable)."""
        dialog = ApprovalsDialog(self.approvals, lambda path, op, text: self.perform(path, op, text), self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def note(self, text: str) -> None:
        """A short status-bar note: one too long for the room left of the lasting labels ("read …")
        ends in "…" before them, the whole of it in the status bar's tooltip."""
        if text:
            self.status_note.show(text)

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

    def edit_preferences(self) -> None:
        """Edit → Preferences: theme, reload command, sources at start (applied and remembered on OK)."""
        settings = self.settings
        fixed = settings.start_sources()
        current = Preferences(
            theme=settings.theme(),
            reload_command=settings.reload_command(),
            start_sources=None if fixed is None else [(s.get("kind", ""), s["path"]) for s in fixed],
            open_now=[(s.kind, s.path) for s in self.hub.sources.values() if s.path in self.remembered],
            **inbox_preferences(settings),
        )
        dialog = PreferencesDialog(
            current,
            self,
            self.reload_override,
            lambda kind, then: choose_source(self, kind, self.verdicts, then),
        )
        if dialog.exec():
            self.apply_preferences(dialog.value())

    def apply_preferences(self, chosen: Preferences) -> None:
        """Use and remember preferences (the dialog's OK)."""
        settings = self.settings
        if chosen.theme != settings.theme():
            settings.set_theme(chosen.theme)
            apply_theme(chosen.theme)
            self._on_banks_refresh_icons()
        settings.set_reload_command(chosen.reload_command)
        if not self.reload_override:
            self.hub.set_reload_command(chosen.reload_command)
        starts = chosen.start_sources
        settings.set_start_sources(None if starts is None else [{"kind": k, "path": p} for k, p in starts])
        self.note(apply_inbox_preferences(chosen, settings))
        try:
            settings.save()
        except (KeepguiError, OSError) as exc:
            self.note(f"preferences not saved: {exc}")

    def _on_banks_refresh_icons(self) -> None:
        # Sidebar rows draw their icons once: after a theme change, draw them in the new colours.
        self.tree_model.set_sources([])
        self._on_sources_changed()
        for path in self.hub.sources:
            self._on_banks_changed(path)

    def show_shortcuts(self) -> None:
        """Help → Keyboard shortcuts."""
        rows = "".join(f"<tr><td>{name}</td><td><b>{keys}</b></td></tr>" for name, keys in shortcuts.describe())
        QMessageBox.information(self, "Keyboard shortcuts", f"<table>{rows}</table>")

    def about(self) -> None:
        """Help → About."""
        kinds = ", ".join(b.label for b in registry.backends())
        QMessageBox.about(
            self,
            "About keepgui",
            f"<h3>keepgui {__version__}</h3><p>See and control what your AI agents remember "
            f"({kinds}), read and written exactly as the agents do.</p><p>Nothing is ever "
            "silently overwritten; deletions are reversible; every change can be undone.</p>",
        )

    # ------------------------------------------------------------------ state

    def _restore_state(self) -> None:
        place_window(self, self.settings.state("geometry"))
        for name, restore in (
            ("window", self.restoreState),
            ("splitter", self.splitter.restoreState),
            ("memory_splitter", self.memories.splitter.restoreState),
            ("memory_header", self.memories.table.horizontalHeader().restoreState),
        ):
            value = self.settings.state(name)
            if value is not None:
                restore(value)
        self.memories.act_history.setChecked(self.settings.show_history())  # shows history in the panel too
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
            self.note(f"settings not saved: {exc}")

    def closeEvent(self, event: Any) -> None:  # noqa: N802 - Qt override
        if not self._panels_can_leave():
            event.ignore()
            return
        self.save_state()
        self.palette_index.shutdown()
        self.approvals.shutdown()
        self.inbox.shutdown()
        self.hub.shutdown()
        super().closeEvent(event)
