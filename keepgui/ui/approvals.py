"""Writes an agent staged for approval: a list, the diff each would make, Approve / Reject.

Some agents queue their memory writes for a person to approve (Hermes's ``pending/``, Gemini CLI's
Auto Memory inbox). This module shows every queue of every open source through
:func:`keepgui.core.approvals.approvals_of` — it names no backend:

* :class:`PendingLister` collects the staged writes of the open sources on a lane of the runner
  (:mod:`keepgui.ui.tasks`; a queue's ``pending()`` reads files and replays the agent's rules) whenever the hub reports a
  change or the sources change, and delivers them on the GUI thread (``listed``); it tells, once per
  write, when new ones appeared (``arrived``) — the tray's attention and a note;
* :class:`ApprovalsPanel` lists them (summary, when, target), shows the selected one's change as a
  unified diff of its target (:class:`~keepgui.ui.diffview.DiffView`) and why it cannot be approved
  now, and approves or rejects the selected writes — each action one undoable change on the window's
  undo stack, run through the hub like every Change;
* :class:`ApprovalsDialog` is the panel in a window of its own (menu Bank → Pending approvals…,
  the tray's entry); both have the shape every review window shares (:mod:`keepgui.ui.reviewlist`).

Signals (PendingLister):
    listed(object items): ``[(source folder, PendingWrite), ...]``, oldest first, on the GUI thread.
    arrived(int count, str sentence): writes not seen before were staged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QWidget

from keepgui.core.approvals import PendingWrite, approvals_of
from keepgui.core.errors import KeepguiError
from keepgui.core.source import Change
from keepgui.core.textdiff import unified
from keepgui.ui.diffview import DiffView
from keepgui.ui.reviewlist import Perform, ReviewDialog, ReviewPanel, by_source
from keepgui.ui.tasks import lane

Item = tuple[str, PendingWrite]


def diff_of(write: PendingWrite, context: int = 3) -> str:
    """The change a staged write would make, as a unified diff of its target (a last line without its
    newline marked, so a separator added after it does not read as that line rewritten)."""
    return unified(write.before, write.after, f"a/{write.target}", f"b/{write.target}", context)


def _collect(sources: dict[str, Any]) -> tuple[list[Item], list[str]]:
    items: list[Item] = []
    problems: list[str] = []
    for path, source in sources.items():
        try:
            queue = approvals_of(source)
            if queue is not None:
                items.extend((path, write) for write in queue.pending())
        except (KeepguiError, OSError) as exc:
            problems.append(f"{path}: {exc}")
    items.sort(key=lambda item: item[1].created_ms or 0)
    return items, problems


class PendingLister(QObject):
    """The staged writes of every open source, listed off the GUI thread (see the module docstring)."""

    listed = Signal(object)
    arrived = Signal(int, str)

    def __init__(self, hub: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.items: list[Item] = []
        self.problems: list[str] = []
        self._seen: set[tuple[str, str]] | None = None
        self._lane = lane("approvals")
        self._running = False
        self._again = False
        self._closed = False
        hub.changed.connect(lambda _change: self.refresh())
        hub.sourcesChanged.connect(self.refresh)
        hub.banksChanged.connect(lambda _path: self.refresh())

    def refresh(self) -> None:
        """List again (coalesced: one listing runs at a time, one more follows if asked meanwhile)."""
        if self._closed:
            return
        if self._running:
            self._again = True
            return
        self._running = True
        sources = dict(self.hub.sources)
        self._lane.run(lambda: _collect(sources), self._deliver, self._failed, owner=self)

    def _failed(self, error: Exception) -> None:
        self._deliver(([], [f"could not list the writes awaiting approval: {error}"]))

    def _deliver(self, result: tuple[list[Item], list[str]]) -> None:
        self._running = False
        if self._closed:
            return
        self.items, self.problems = result
        ids = {(path, write.id) for path, write in self.items}
        if self._seen is not None:
            new = [w for p, w in self.items if (p, w.id) not in self._seen]
            if new:
                first = new[0].summary
                more = f" and {len(new) - 1} more" if len(new) > 1 else ""
                self.arrived.emit(len(new), f"New write awaiting approval: {first}{more}")
        # every write ever listed counts as seen: one put back by an undo is not news
        self._seen = ids if self._seen is None else self._seen | ids
        self.listed.emit(self.items)
        if self._again:
            self._again = False
            self.refresh()

    def shutdown(self) -> None:
        """Stop the listing thread (pending listings are dropped; later refreshes do nothing)."""
        self._closed = True
        self._lane.close(wait=False)


def _age(created_ms: int | None) -> str:
    if not created_ms:
        return ""
    minutes = max(0, int((time.time() * 1000 - created_ms) / 60000))
    if minutes < 60:
        return f"{minutes} min ago"
    hours = minutes // 60
    return f"{hours} h ago" if hours < 48 else f"{hours // 24} d ago"


class ApprovalsPanel(ReviewPanel):
    """The staged writes, the diff of the selected one, Approve and Reject (see the module docstring).

    ``perform(source folder, operation, text)`` runs a write as one undo step (the window's
    ``perform``); ``on_error`` reports a refusal.
    """

    def __init__(self, lister: PendingLister, perform: Perform, parent: QWidget | None = None) -> None:
        super().__init__("Pending writes", parent)
        self.list = QListWidget(self)
        self.list.setAccessibleName("Writes awaiting approval")
        self.diff = DiffView(self)
        self.diff.setAccessibleName("The change the selected write would make")
        self.problem = QLabel(self)
        self.problem.setWordWrap(True)
        self.problem.setAccessibleName("Why the selected write cannot be approved now")
        self.place(self.list, self.diff, under=[self.problem])
        self.lister = lister
        self.perform = perform
        self.items: list[Item] = []
        self.reject_button = self.add_button(
            "reject", "&Reject", "Drop the selected writes without applying them (Undo puts them back)",
            lambda: self.decide(False),
        )  # fmt: skip
        self.approve_button = self.add_button(
            "approve", "&Approve", "Apply the selected writes by the agent's own rules (Undo takes them back)",
            lambda: self.decide(True),
        )  # fmt: skip
        self.list.itemSelectionChanged.connect(self._show_selected)
        lister.listed.connect(self.set_items)
        self.set_items(lister.items)

    def set_items(self, items: Sequence[Item]) -> None:
        """Show ``items`` (the selection is kept where the same writes are still there)."""
        chosen = {(p, w.id) for p, w in self.selected()}
        self.items = list(items)
        self.list.blockSignals(True)
        self.list.clear()
        for path, write in self.items:
            mark = "" if write.applicable else "⚠ "
            when = _age(write.created_ms)
            source = getattr(self.lister.hub, "sources", {}).get(path)
            where = f"{source.label} · {write.target}" if source is not None else write.target
            entry = QListWidgetItem(f"{mark}{write.summary}\n    {where}" + (f" · {when}" if when else ""))
            entry.setToolTip(write.problem or write.summary)
            self.list.addItem(entry)
            entry.setSelected((path, write.id) in chosen)
        self.list.blockSignals(False)
        if not self.list.selectedItems() and self.items:
            self.list.setCurrentRow(0)
        n = len(self.items)
        self.status.setText("No writes await approval" if not n else f"{n} write{'s' if n != 1 else ''} await approval")
        self._show_selected()

    def selected(self) -> list[Item]:
        """The selected writes, in list order."""
        rows = sorted(self.list.row(i) for i in self.list.selectedItems())
        return [self.items[r] for r in rows if 0 <= r < len(self.items)]

    def _show_selected(self) -> None:
        chosen = self.selected()
        if not chosen:
            self.diff.setPlainText("")
            self.problem.setText("")
        else:
            _path, write = chosen[0]
            self.diff.setPlainText(diff_of(write) or "(this write changes nothing: it is already there)")
            self.problem.setText(f"Cannot be approved now: {write.problem}" if write.problem else "")
        self.approve_button.setEnabled(bool(chosen) and all(w.applicable for _p, w in chosen))
        self.reject_button.setEnabled(bool(chosen))

    def decide(self, approve: bool) -> None:
        """Approve or reject the selected writes: one undoable change per source."""
        for path, chosen in by_source(self.selected(), lambda item: item[0]).items():
            ids = [write.id for _path, write in chosen]
            verb = "Approve" if approve else "Reject"
            text = f"{verb} {len(ids)} staged write{'s' if len(ids) != 1 else ''}"

            def operation(source: Any, ids: list[str] = ids) -> Change:
                queue = approvals_of(source)
                if queue is None:
                    raise KeepguiError("this source no longer has writes awaiting approval")
                return queue.approve(ids) if approve else queue.reject(ids)

            self.perform(path, operation, text)
        self.lister.refresh()


class ApprovalsDialog(ReviewDialog):
    """:class:`ApprovalsPanel` in a window of its own."""

    def __init__(self, lister: PendingLister, perform: Perform, parent: QWidget | None = None) -> None:
        super().__init__(
            "Pending approvals", (760, 560), lambda me: ApprovalsPanel(lister, perform, me), lister, parent
        )
        self.panel: ApprovalsPanel = self.body  # type: ignore[assignment]
