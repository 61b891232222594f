"""The Inbox: every change made by anything other than keepgui, across the open sources, newest first.

Written once against the protocol through :mod:`keepgui.core.inbox` (it names no backend):

* :class:`InboxLister` compares every open source with its last recorded version in keepgui's
  journal and lists the inbox on a lane of the runner (:mod:`keepgui.ui.tasks`) — whenever the hub
  reports a change, the sources change, and every few seconds — and delivers the items on the GUI
  thread (``listed``); it tells once per change when new ones arrived (``arrived``: the tray's count
  and, if the person wants, a desktop notification). It opens sources of its own on its lane, so it
  never touches the hub's objects from another thread.
* :class:`InboxPanel` shows the items in a model that formats a row only when it is drawn (100,000
  rows cost the GUI thread a model reset, not 100,000 widgets), the selected item's entry changes
  (computed on the lane, the newest request winning), and Accept, Accept all, Revert change, Revert
  entry, Approve and Reject — each one undoable change on the window's undo stack, run through the hub.
* :class:`InboxDialog` is the panel in a window of its own (menu Bank → Inbox…, the tray's entry).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import inbox, registry
from keepgui.core.errors import KeepguiError
from keepgui.core.inbox import EntryChange, Item
from keepgui.core.journal import Journal, install, sync_source
from keepgui.core.source import Change, Source
from keepgui.ui.tasks import lane
from keepgui.ui.timefmt import relative

REFRESH_MS = 5000
"""How often the open sources are compared with the journal besides the hub's own reports."""


@dataclass
class Listing:
    """What a listing found: the items newest first, the journal's size, and what could not be read."""

    items: list[Item] = field(default_factory=list)
    size: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def unreviewed(self) -> int:
        """How many items wait for a person."""
        return len(self.items)


class _Opened:
    """The lane's own copies of the open sources (touched only on the lane's thread)."""

    def __init__(self) -> None:
        self.sources: dict[str, Source] = {}

    def collect(self, journal: Journal, wanted: Sequence[tuple[str, str]]) -> Listing:
        problems = []
        for path in set(self.sources) - {p for _k, p in wanted}:
            del self.sources[path]
        for kind, path in wanted:
            if not os.path.isdir(path):
                continue
            try:
                source = self.sources.get(path) or registry.open_source(kind, path)
                self.sources[path] = source
                sync_source(journal, source)
            except (KeepguiError, OSError) as exc:
                problems.append(f"{path}: {exc}")
        journal.thin()
        opened = list(self.sources.values())
        return Listing(inbox.items(journal, opened), inbox.size_text(journal), problems)


class InboxLister(QObject):
    """The inbox of every open source, listed off the GUI thread (see the module docstring)."""

    listed = Signal(object)
    arrived = Signal(int, str)

    def __init__(self, hub: Any, parent: QObject | None = None, journal: Journal | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.journal = journal or install()
        self.listing = Listing()
        self._opened = _Opened()
        self._seen: set[str] | None = None
        self._lane = lane("inbox")
        self._running = self._again = self._closed = False
        hub.changed.connect(lambda _change: self.refresh())
        hub.sourcesChanged.connect(self.refresh)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.refresh)
        self._timer.start(REFRESH_MS)
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.setInterval(500)
        self._retry.timeout.connect(self.refresh)

    def refresh(self) -> None:
        """Compare and list again (one listing at a time; one more follows if asked meanwhile)."""
        if self._closed:
            return
        if self._running:
            self._again = True
            return
        if self.hub.busy():  # a load is under way: the inbox waits, never competing with it
            self._retry.start()
            return
        self._running = True
        wanted = [(s.kind, path) for path, s in self.hub.sources.items()]
        opened, journal = self._opened, self.journal
        self._lane.run(lambda: opened.collect(journal, wanted), self._deliver, self._failed, owner=self, made_old=True)

    def _failed(self, error: Exception) -> None:
        self._deliver(Listing(problems=[f"could not list the inbox: {error}"]))

    def _deliver(self, listing: Listing) -> None:
        self._running = False
        if self._closed:
            return
        same = [i.id for i in listing.items] == [i.id for i in self.listing.items] and listing.size == self.listing.size
        self.listing = listing
        if same and self._seen is not None and not self._again:
            return  # nothing new: the views keep what they show
        ids = {i.id for i in listing.items}
        if self._seen is not None:
            new = [i for i in listing.items if i.id not in self._seen]
            if new:
                more = f" and {len(new) - 1} more" if len(new) > 1 else ""
                self.arrived.emit(len(new), f"{new[0].agent} changed {os.path.basename(new[0].path)}{more}")
        self._seen = ids if self._seen is None else self._seen | ids
        self.listed.emit(listing)
        if self._again:
            self._again = False
            self.refresh()

    def entries(self, item: Item, done: Callable[[list[EntryChange]], object], owner: QObject) -> None:
        """The entry changes of ``item``, computed on the lane, handed to ``done`` on the GUI thread."""
        opened, journal = self._opened, self.journal

        def work() -> list[EntryChange]:
            source = opened.sources.get(item.source)
            if source is None:
                return []
            names = source.scan().names
            bank = source.bank(item.bank if item.bank in names else names[0])
            return inbox.entry_changes(journal, item, bank)

        self._lane.run(work, done, lambda _e: done([]), owner=owner, newest=("entries", id(owner)), made_old=True)

    def shutdown(self) -> None:
        """Stop listing (queued work is dropped; later refreshes do nothing)."""
        self._closed = True
        self._timer.stop()
        self._retry.stop()
        self._lane.close(wait=False)


class InboxModel(QAbstractListModel):
    """The items as rows: each formatted only when the view draws it."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.items: list[Item] = []

    def set_items(self, items: list[Item]) -> None:
        """Show ``items`` (one reset, whatever their number)."""
        self.beginResetModel()
        self.items = items
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else len(self.items)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.items):
            return None
        item = self.items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            what = item.pending.summary if item.pending is not None else item.what
            return f"{item.agent} · {what} · {os.path.basename(item.path)} · {relative(item.at) if item.at else ''}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{item.id}: {item.path}"
        return None


class InboxPanel(QWidget):
    """The inbox, the selected item's entry changes, and what to do with it (see the module docstring).

    ``perform(source folder, operation, text)`` runs a write as one undo step (the window's ``perform``).
    """

    def __init__(
        self,
        lister: InboxLister,
        perform: Callable[[str, Callable[[Any], Change], str], Any],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.lister = lister
        self.perform = perform
        self.model = InboxModel(self)
        self.view = QListView(self)
        self.view.setModel(self.model)
        self.view.setUniformItemSizes(True)
        # laid out a batch at a time between events: Qt asks the model's rowCount once per row it lays out
        self.view.setLayoutMode(QListView.LayoutMode.Batched)
        self.view.setBatchSize(256)
        self.view.setSelectionMode(QListView.SelectionMode.ExtendedSelection)
        self.view.setAccessibleName("Changes made outside keepgui, newest first")
        self.entries = QListWidget(self)
        self.entries.setAccessibleName("What the selected change did, entry by entry")
        self.status = QLabel(self)
        self.status.setAccessibleName("Inbox")
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        for name, label, tip in (
            ("accept", "&Accept", "Mark the selected changes reviewed (Undo makes them unreviewed again)"),
            ("accept_all", "Accept a&ll", "Mark every change in the inbox reviewed"),
            ("revert_entry", "Revert &entry", "Take back the selected entry change, keeping what came after"),
            ("revert", "&Revert change", "Take back the whole change, keeping what the agent wrote after it"),
            ("approve", "A&pprove", "Apply the staged write by the agent's own rules"),
            ("reject", "Re&ject", "Drop the staged write without applying it"),
        ):
            button = QPushButton(label, self)
            button.setToolTip(tip)
            button.clicked.connect(lambda _=False, n=name: self.act(n))
            self.buttons[name] = button
            row.addWidget(button)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.view)
        split.addWidget(self.entries)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addLayout(row)
        self.view.selectionModel().selectionChanged.connect(lambda *_: self._show_selected())
        self.entries.itemSelectionChanged.connect(self._enable)
        lister.listed.connect(self.set_listing)
        QTimer.singleShot(0, self, lambda: self.set_listing(lister.listing))  # after the first show

    def set_listing(self, listing: Listing) -> None:
        """Show ``listing`` (the selection kept where its items are still there, else the first item)."""
        chosen = {i.id for i in self.selected()}
        changed = [i.id for i in listing.items] != [i.id for i in self.model.items]
        if changed:
            self.model.set_items(listing.items)
        n = listing.unreviewed
        problems = f" · {len(listing.problems)} source(s) unreadable" if listing.problems else ""
        self.status.setText(
            (f"{n} change{'s' if n != 1 else ''} to review" if n else "Nothing to review")
            + (f" · journal {listing.size}" if listing.size else "")
            + problems
        )
        if not changed:
            return
        selection = self.view.selectionModel()
        rows = [r for r, i in enumerate(listing.items[:1000]) if i.id in chosen] or ([0] if listing.items else [])
        for r in rows:
            selection.select(self.model.index(r), selection.SelectionFlag.Select)
        self._show_selected()

    def selected(self) -> list[Item]:
        """The selected items, in list order."""
        rows = sorted(i.row() for i in self.view.selectionModel().selectedRows())
        return [self.model.items[r] for r in rows if 0 <= r < len(self.model.items)]

    def _show_selected(self) -> None:
        self.entries.clear()
        chosen = self.selected()
        if len(chosen) == 1:
            self.lister.entries(chosen[0], self._show_entries, self)
        self._enable()

    def _show_entries(self, changes: list[EntryChange]) -> None:
        self.entries.clear()
        self.entries.addItems([f"{n}. {c.describe()}" for n, c in enumerate(changes[:500], 1)])

    def _enable(self) -> None:
        chosen = self.selected()
        changes = [i for i in chosen if i.version is not None]
        staged = [i for i in chosen if i.pending is not None]
        self.buttons["accept"].setEnabled(bool(changes))
        self.buttons["accept_all"].setEnabled(any(i.version is not None for i in self.model.items))
        self.buttons["revert"].setEnabled(len(changes) == 1 and not staged)
        self.buttons["revert_entry"].setEnabled(len(changes) == 1 and bool(self.entries.selectedItems()))
        self.buttons["approve"].setEnabled(bool(staged) and all(i.pending and i.pending.applicable for i in staged))
        self.buttons["reject"].setEnabled(bool(staged))

    def act(self, name: str) -> None:
        """Do ``name`` to the selected items: one undoable change per source."""
        journal = self.lister.journal
        chosen = self.model.items if name == "accept_all" else self.selected()
        if name in ("accept", "accept_all"):
            for path, items in _by_source([i for i in chosen if i.version is not None]).items():
                self.perform(path, partial(_accept, journal, items), f"Accept {len(items)} change(s)")
        elif name in ("revert", "revert_entry") and chosen:
            item = chosen[0]
            entry = self.entries.currentRow() + 1 if name == "revert_entry" else None

            def revert(source: Any) -> Change:
                names = source.scan().names
                return inbox.revert(journal, item, source.bank(item.bank if item.bank in names else names[0]), entry)

            self.perform(item.source, revert, f"Revert {os.path.basename(item.path)}")
        elif name in ("approve", "reject"):
            for path, items in _by_source([i for i in chosen if i.pending is not None]).items():
                verb = "Approve" if name == "approve" else "Reject"
                self.perform(path, partial(_approve, items, name == "approve"), verb)
        self.lister.refresh()


def _accept(journal: Journal, items: list[Item], _source: Any) -> Change:
    return inbox.accept(journal, items)


def _approve(items: list[Item], yes: bool, source: Any) -> Change:
    return inbox.approve(source, items, yes)


def _by_source(items: Sequence[Item]) -> dict[str, list[Item]]:
    found: dict[str, list[Item]] = {}
    for item in items:
        found.setdefault(item.source, []).append(item)
    return found


class InboxDialog(QDialog):
    """:class:`InboxPanel` in a window of its own."""

    def __init__(
        self,
        lister: InboxLister,
        perform: Callable[[str, Callable[[Any], Change], str], Any],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Inbox")
        self.resize(820, 600)
        self.panel = InboxPanel(lister, perform, self)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.panel, 1)
        layout.addWidget(close)
        lister.refresh()
