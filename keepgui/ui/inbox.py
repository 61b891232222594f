"""The Inbox: every change made by anything other than keepgui, across the open sources, newest first.

Written once against the protocol through :mod:`keepgui.core.inbox` (it names no backend):

* :class:`InboxLister` compares every open source with its last recorded version in keepgui's
  journal and lists the inbox on a lane of the runner (:mod:`keepgui.ui.tasks`) — whenever the hub
  reports a change, the sources change, and every few seconds — and delivers the items on the GUI
  thread (``listed``, with the ids compared on the lane), then works out the newest item's entry
  changes ahead of the person opening the inbox. For each change that arrived since, it says
  once which agent changed which file and how many entries it added, removed and edited
  (``arrived``: a desktop notification per change if the person wants them, :data:`NOTIFY_EACH` at
  most, then one "and N more"); the tray counts what waits from ``listed``. It opens sources of its
  own on its lane, so it never touches the hub's objects from another thread.
* :class:`InboxPanel` shows the items in a model fed a step of rows at a time as the view scrolls,
  each formatted only when it is drawn (10,000 changes cost the GUI thread a reset and one step's
  layout), the selected item's entry changes (computed on the lane, the newest request winning, at
  most :data:`SHOWN_ENTRIES` laid out), and Accept, Accept all, Revert change, Revert entry, Approve
  and Reject — each one undoable change on the window's undo stack, run through the hub.
* :class:`InboxDialog` is the panel in a window of its own (menu Bank → Inbox…, the tray's entry);
  both have the shape every review window shares (:mod:`keepgui.ui.reviewlist`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtWidgets import QListView, QListWidget, QWidget

from keepgui.core import inbox, pace, registry
from keepgui.core.errors import KeepguiError
from keepgui.core.inbox import EntryChange, Item
from keepgui.core.journal import Journal, install, sync_source
from keepgui.core.source import Change, Source
from keepgui.ui import theme
from keepgui.ui.reviewlist import Perform, ReviewDialog, ReviewPanel, by_source
from keepgui.ui.tasks import lane
from keepgui.ui.timefmt import relative

Entries = tuple[list[EntryChange], list[bool]]
"""An item's entry changes, and per change whether the file no longer holds it (reverted since)."""

REFRESH_MS = 5000
"""How often the open sources are compared with the journal besides the hub's own reports."""
NOTIFY_EACH = 3
"""At most this many changes arriving together are told one by one; the rest in one "and N more"."""
SHOWN_ENTRIES = 500
"""At most this many entry changes of the selected item are laid out (a line says how many more)."""


@dataclass
class Listing:
    """What a listing found: the items newest first (and their ids), the journal's size, what could not
    be read, and a sentence per change that arrived since the last listing (:data:`NOTIFY_EACH` at most,
    then one for the rest: ``(how many it tells of, sentence)``)."""

    items: list[Item] = field(default_factory=list)
    size: str = ""
    problems: list[str] = field(default_factory=list)
    ids: tuple[str, ...] = ()
    news: list[tuple[int, str]] = field(default_factory=list)

    @property
    def unreviewed(self) -> int:
        """How many items wait for a person."""
        return len(self.items)


class _Opened:
    """The lane's own copies of the open sources, the ids it listed before and the entry changes it
    worked out last (touched only on the lane's thread)."""

    def __init__(self) -> None:
        self.sources: dict[str, Source] = {}
        self.seen: set[str] | None = None
        self.ids: tuple[str, ...] = ()
        self.entries: dict[tuple[str, str], list[EntryChange]] = {}

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
        found = inbox.items(journal, list(self.sources.values()))
        ids = tuple(i.id for i in found)
        news: list[tuple[int, str]] = []
        if self.seen is None:
            self.seen = set(ids)
        elif ids != self.ids:  # else nothing arrived
            # every item ever listed counts as seen: one put back by an undo is not news
            new = [i for i in found if i.version is not None and i.id not in self.seen]
            self.seen.update(ids)
            news = [(1, self.sentence(journal, i)) for i in new[:NOTIFY_EACH]]
            if len(new) > NOTIFY_EACH:
                rest = len(new) - NOTIFY_EACH
                news.append((rest, f"and {rest} more change{'s' if rest != 1 else ''} to review in the inbox"))
        self.ids = ids
        return Listing(found, inbox.size_text(journal), problems, ids, news)

    def changes_of(self, journal: Journal, item: Item) -> list[EntryChange]:
        """The entry changes of ``item`` (the last few worked out are kept: a listing's news and the
        selection ask for the same ones)."""
        staged = item.pending
        key = (item.id, item.version.sha256 if item.version is not None else str(staged and hash(staged.after)))
        if key in self.entries:
            return self.entries[key]
        pace.checkpoint()  # a window that just opened lays itself out first
        source = self.sources.get(item.source)
        if source is None:
            return []
        found = inbox.entry_changes(journal, item, inbox.bank_of(source, item))
        while len(self.entries) >= 8:
            del self.entries[next(iter(self.entries))]
        self.entries[key] = found
        return found

    def changes_and_states(self, journal: Journal, item: Item) -> Entries:
        """:meth:`changes_of`, and per entry change whether it is reverted since (the file as it is now)."""
        found = self.changes_of(journal, item)
        source = self.sources.get(item.source)
        if source is None or item.version is None:
            return found, [False] * len(found)
        return found, inbox.undone_now(item, inbox.bank_of(source, item), found)

    def sentence(self, journal: Journal, item: Item) -> str:
        """``nanobot changed keep.md: +2 added, −1 removed, ~1 edited`` (what the change did, entry by entry)."""
        name = os.path.basename(item.path)
        if item.what != "changed":
            return f"{item.agent} {item.what} {name}"
        try:
            found = self.changes_of(journal, item)
        except (KeepguiError, OSError, ValueError, LookupError):
            return f"{item.agent} changed {name}"
        return f"{item.agent} changed {name}: {counts(found)}"


def counts(changes: Sequence[EntryChange]) -> str:
    """``+2 added, −1 removed, ~1 edited`` (merged ones as ``⇉1 merged``; kinds with none left out)."""
    marks = (("added", "+"), ("removed", "−"), ("edited", "~"), ("merged", "⇉"))
    told = [f"{mark}{n} {kind}" for kind, mark in marks if (n := sum(1 for c in changes if c.kind == kind))]
    return ", ".join(told) or "no entry changed"


class InboxLister(QObject):
    """The inbox of every open source, listed off the GUI thread (see the module docstring)."""

    listed = Signal(object)
    arrived = Signal(int, str)
    filesChanged = Signal(str)  # a source folder written or changed on disk: entries may be reverted since

    def __init__(self, hub: Any, parent: QObject | None = None, journal: Journal | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.journal = journal or install()
        self.listing = Listing()
        self._opened = _Opened()
        self.listed_once = False
        self._lane = lane("inbox")
        self._running = self._again = self._closed = False
        hub.changed.connect(self._on_change)
        hub.written.connect(lambda change: self.filesChanged.emit(change.source))  # a revert of ours
        hub.sourcesChanged.connect(self.refresh)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.refresh)
        self._timer.start(REFRESH_MS)
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.setInterval(500)
        self._retry.timeout.connect(self.refresh)

    def _on_change(self, change: Change) -> None:
        self.filesChanged.emit(change.source)
        self.refresh()

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
        old, self.listing = self.listing, listing
        same = (listing.ids, listing.size, listing.problems) == (old.ids, old.size, old.problems) and self.listed_once
        self.listed_once = True
        for count, sentence in listing.news:
            self.arrived.emit(count, sentence)
        if listing.ids[:1] != old.ids[:1] and listing.items:
            self._warm(listing.items[0])
        if not same or self._again:  # else nothing new: the views keep what they show
            self.listed.emit(listing)
        if self._again:
            self._again = False
            self.refresh()

    def _warm(self, item: Item) -> None:
        """Work out the newest item's entry changes now, on the lane, so the inbox opens with them ready."""
        opened, journal = self._opened, self.journal

        def work() -> None:
            with contextlib.suppress(KeepguiError, OSError, ValueError, LookupError):  # said when it is shown
                opened.changes_of(journal, item)

        self._lane.run(work, newest="warm", made_old=True)

    def entries(self, item: Item, done: Callable[[Entries], object], owner: QObject) -> None:
        """The entry changes of ``item`` and which of them the file no longer holds (reverted since),
        computed on the lane, handed to ``done`` on the GUI thread."""
        opened, journal = self._opened, self.journal
        self._lane.run(
            lambda: opened.changes_and_states(journal, item), done, lambda _e: done(([], [])),
            owner=owner, newest=("entries", id(owner)), made_old=True,
        )  # fmt: skip

    def shutdown(self) -> None:
        """Stop listing (queued work is dropped; later refreshes do nothing)."""
        self._closed = True
        self._timer.stop()
        self._retry.stop()
        self._lane.close(wait=False)


class InboxModel(QAbstractListModel):
    """The items as rows, fed to the view :data:`STEP` rows at a time (Qt's ``fetchMore``, as the view
    scrolls down), each formatted only when the view draws it: 10,000 items cost the GUI thread a reset
    and the layout of one step, whatever their number."""

    STEP = 256

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.items: list[Item] = []
        self.ids: tuple[str, ...] = ()
        self.shown = 0

    def set_items(self, items: list[Item], ids: tuple[str, ...]) -> None:
        """Show ``items`` whose ids are ``ids`` (one reset, whatever their number; as many rows fed as
        before, a step at least)."""
        self.beginResetModel()
        self.shown = min(len(items), max(self.STEP, self.shown))
        self.items, self.ids = items, ids
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802 - Qt override
        return 0 if parent.isValid() else self.shown

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex) -> bool:  # noqa: N802 - Qt override
        return not parent.isValid() and self.shown < len(self.items)

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802 - Qt override
        if parent.isValid():
            return
        more = min(self.STEP, len(self.items) - self.shown)
        if more <= 0:
            return
        self.beginInsertRows(QModelIndex(), self.shown, self.shown + more - 1)
        self.shown += more
        self.endInsertRows()

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < self.shown:
            return None
        item = self.items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            what = item.pending.summary if item.pending is not None else item.what
            return f"{item.agent} · {what} · {os.path.basename(item.path)} · {relative(item.at) if item.at else ''}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{item.id}: {item.path}"
        return None


class InboxPanel(ReviewPanel):
    """The inbox, the selected item's entry changes, and what to do with it (see the module docstring).

    ``perform(source folder, operation, text)`` runs a write as one undo step (the window's ``perform``).
    """

    def __init__(self, lister: InboxLister, perform: Perform, parent: QWidget | None = None) -> None:
        super().__init__("Inbox", parent)
        self.lister = lister
        self.perform = perform
        self.model = InboxModel(self)
        self.view = QListView(self)
        self.view.setModel(self.model)
        self.view.setUniformItemSizes(True)
        self.view.setAccessibleName("Changes made outside keepgui, newest first")
        self.entries = QListWidget(self)
        self.entries.setUniformItemSizes(True)
        self.entries.setAccessibleName("What the selected change did, entry by entry")
        self.changes: list[EntryChange] = []
        self.undone: list[bool] = []  # per entry change shown: reverted since (the file no longer holds it)
        self.place(self.view, self.entries)
        for name, label, tip in (
            ("accept", "&Accept", "Mark the selected changes reviewed (Undo makes them unreviewed again)"),
            ("accept_all", "Accept a&ll", "Mark every change in the inbox reviewed"),
            ("revert_entry", "Revert &entry", "Take back the selected entry change, keeping what came after"),
            ("revert", "&Revert change", "Take back the whole change, keeping what the agent wrote after it"),
            ("approve", "A&pprove", "Apply the staged write by the agent's own rules"),
            ("reject", "Re&ject", "Drop the staged write without applying it"),
        ):
            self.add_button(name, label, tip, partial(self.act, name))
        self.view.selectionModel().selectionChanged.connect(lambda *_: self._show_selected())
        self.entries.itemSelectionChanged.connect(self._enable)
        lister.listed.connect(self.set_listing)
        lister.filesChanged.connect(self._restate)

    def first_shown(self) -> None:
        """The window was painted once: show what the lister listed last."""
        self.set_listing(self.lister.listing)

    def set_listing(self, listing: Listing) -> None:
        """Show ``listing`` (the selection kept where its items are still there, else the first item)."""
        chosen = {i.id for i in self.selected()}
        changed = listing.ids != self.model.ids
        if changed:
            self.model.set_items(listing.items, listing.ids)
        n = listing.unreviewed
        problems = f" · {len(listing.problems)} source(s) unreadable" if listing.problems else ""
        self.status.setText(
            (f"{n} change{'s' if n != 1 else ''} to review" if n else "Nothing to review")
            + (f" · journal {listing.size}" if listing.size else "")
            + problems
        )
        if not changed:
            return
        shown = listing.items[: self.model.shown]
        rows = [r for r, i in enumerate(shown) if i.id in chosen] if chosen else []
        rows = rows or ([0] if shown else [])
        if not rows:
            self._show_selected()
            return
        wanted = QItemSelection()
        for r in rows:
            wanted.select(self.model.index(r), self.model.index(r))
        self.view.selectionModel().select(wanted, QItemSelectionModel.SelectionFlag.Select)  # shows it

    def selected(self) -> list[Item]:
        """The selected items, in list order."""
        rows = sorted(i.row() for i in self.view.selectionModel().selectedRows())
        return [self.model.items[r] for r in rows if 0 <= r < self.model.shown]

    def _show_selected(self) -> None:
        self.entries.clear()
        self.changes, self.undone = [], []
        chosen = self.selected()
        if len(chosen) == 1:
            self.lister.entries(chosen[0], self._show_entries, self)
        self._enable()

    def _restate(self, source: str) -> None:
        """A file of ``source`` changed (a revert, an agent): which of the selected item's entries are
        reverted since is worked out again when the item is that source's, the entry selected staying selected."""
        chosen = self.selected()
        if len(chosen) == 1 and self.changes and chosen[0].source == source:
            row = self.entries.currentRow()
            self.lister.entries(chosen[0], lambda found: self._show_entries(found, row), self)

    def _show_entries(self, found: Entries, row: int = -1) -> None:
        changes, undone = found
        self.entries.clear()
        self.changes, self.undone = changes, undone
        lines = [
            f"{n}. {c.describe()}" + ("  — reverted since" if gone else "")
            for n, (c, gone) in enumerate(zip(changes[:SHOWN_ENTRIES], undone[:SHOWN_ENTRIES], strict=True), 1)
        ]
        if len(changes) > SHOWN_ENTRIES:
            lines.append(f"… {len(changes) - SHOWN_ENTRIES:,} more entry changes (Revert change takes back all)")
        self.entries.addItems(lines)
        muted = theme.muted_text()
        for n, gone in enumerate(undone[:SHOWN_ENTRIES]):
            if gone:  # said in words too: the colour is not the only sign
                self.entries.item(n).setForeground(muted)
        if 0 <= row < self.entries.count():
            self.entries.setCurrentRow(row)

    def _entry(self) -> int | None:
        """The number (from 1) of the selected entry change, if one of those listed is selected."""
        row = self.entries.currentRow()
        chosen = bool(self.entries.selectedItems()) and 0 <= row < min(len(self.changes), SHOWN_ENTRIES)
        return row + 1 if chosen and not self.undone[row] else None  # one reverted since: nothing to take back

    def _enable(self) -> None:
        chosen = self.selected()
        changes = [i for i in chosen if i.version is not None]
        staged = [i for i in chosen if i.pending is not None]
        self.buttons["accept"].setEnabled(bool(changes))
        self.buttons["accept_all"].setEnabled(any(i.version is not None for i in self.model.items))
        self.buttons["revert"].setEnabled(len(changes) == 1 and not staged)
        self.buttons["revert_entry"].setEnabled(len(changes) == 1 and self._entry() is not None)
        self.buttons["approve"].setEnabled(bool(staged) and all(i.pending and i.pending.applicable for i in staged))
        self.buttons["reject"].setEnabled(bool(staged))

    def act(self, name: str) -> None:
        """Do ``name`` to the selected items: one undoable change per source."""
        journal = self.lister.journal
        chosen = self.model.items if name == "accept_all" else self.selected()
        if name in ("accept", "accept_all"):
            for path, items in by_source([i for i in chosen if i.version is not None], _source).items():
                self.perform(path, partial(_accept, journal, items), f"Accept {len(items)} change(s)")
        elif name in ("revert", "revert_entry") and chosen:
            item = chosen[0]
            entry = self._entry() if name == "revert_entry" else None
            if name == "revert_entry" and entry is None:
                return

            def revert(source: Any) -> Change:
                return inbox.revert(journal, item, inbox.bank_of(source, item), entry)

            self.perform(item.source, revert, f"Revert {os.path.basename(item.path)}")
        elif name in ("approve", "reject"):
            for path, items in by_source([i for i in chosen if i.pending is not None], _source).items():
                verb = "Approve" if name == "approve" else "Reject"
                self.perform(path, partial(_approve, items, name == "approve"), verb)
        self.lister.refresh()


def _source(item: Item) -> str:
    return item.source


def _accept(journal: Journal, items: list[Item], _source: Any) -> Change:
    return inbox.accept(journal, items)


def _approve(items: list[Item], yes: bool, source: Any) -> Change:
    return inbox.approve(source, items, yes)


class InboxDialog(ReviewDialog):
    """:class:`InboxPanel` in a window of its own."""

    def __init__(self, lister: InboxLister, perform: Perform, parent: QWidget | None = None) -> None:
        super().__init__("Inbox", (820, 600), lambda me: InboxPanel(lister, perform, me), lister, parent)
        self.panel: InboxPanel = self.body  # type: ignore[assignment]
