"""Undoable changes to memories: every mutation is a QUndoCommand.

A log is append-only, so undo never removes a line: it appends a compensating
revision. The first ``redo`` performs the action and remembers, per id, the
record before and after; ``undo`` writes each "before" back as a new revision
(or tombstones a memory the action created); a later ``redo`` writes each
"after" back. A bulk action is one command, so one undo step, and one append.

A command whose write is refused (the bank became unreadable, a memory
vanished) raises nothing into Qt: it reports through ``on_error`` and marks
itself obsolete so the stack drops it.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtGui import QUndoCommand

from keepgui.core.errors import KeepguiError
from keepgui.core.iii.record import Memory
from keepgui.ui.hub import BankKey, Hub

Action = Callable[[Any], None]
"""Something done to a :class:`~keepgui.core.iii.store.Batch`."""


class MemoryCommand(QUndoCommand):
    """One undoable change to one bank's memories (possibly many of them)."""

    def __init__(self, hub: Hub, key: BankKey, text: str, action: Action,
                 on_error: Callable[[str], None] | None = None) -> None:
        super().__init__(text)
        self._hub = hub
        self._key = key
        self._action = action
        self._on_error = on_error
        self._before: dict[str, Memory | None] = {}
        self._after: dict[str, Memory] = {}
        self._done_once = False

    def redo(self) -> None:
        if not self._done_once:
            self._done_once = True
            self._run(self._first)
        else:
            self._run(lambda b: [b.revert(m) for m in self._after.values()])

    def undo(self) -> None:
        def back(batch) -> None:
            for mid, before in self._before.items():
                if before is None:
                    batch.delete(mid)  # it did not exist: retire what the action created
                else:
                    batch.revert(before)

        self._run(back)

    def _first(self, batch) -> None:
        start = len(batch.pending)
        self._action(batch)
        for record in batch.pending[start:]:
            if record.id not in self._before:
                self._before[record.id] = batch.bank.log.get(record.id)
            self._after[record.id] = record
        if len(batch.pending) == start:
            self.setObsolete(True)  # nothing changed: nothing to undo

    def _run(self, change: Action) -> None:
        try:
            self._hub.mutate(self._key, change)
        except (KeepguiError, OSError) as exc:
            self.setObsolete(True)
            if self._on_error is not None:
                self._on_error(f"{self.text()} failed: {exc}")


def describe(action: str, count: int) -> str:
    """Undo menu text: "Pin memory", "Delete 12 memories"."""
    noun = "memory" if count == 1 else f"{count} memories"
    return f"{action} {noun}"


class KeepCommand(QUndoCommand):
    """One undoable change to a workspace's keep.md, undone byte for byte.

    The first ``redo`` runs ``action(store)`` (keep, edit, forget, restore) and
    remembers keep.md's bytes and stamp before and after. ``undo`` writes the
    "before" bytes back only if keep.md is still exactly what the action wrote
    (its stamp); if the agent or anyone else changed it since, the undo is
    refused and nothing is overwritten. ``redo`` works the same way round.
    """

    def __init__(self, hub: Hub, key: BankKey, text: str, action: Callable[[Any], Any],
                 on_error: Callable[[str], None] | None = None,
                 on_result: Callable[[Any], None] | None = None) -> None:
        super().__init__(text)
        self._hub = hub
        self._key = key
        self._action = action
        self._on_error = on_error
        self._on_result = on_result
        self._before: tuple[bytes | None, Any] | None = None
        self._after: tuple[bytes | None, Any] | None = None

    def _snapshot(self, store) -> tuple[bytes | None, Any]:
        return store.workspace.read("keep.md")

    def redo(self) -> None:
        if self._before is None:
            def first(store):
                self._before = self._snapshot(store)
                result = self._action(store)
                self._after = self._snapshot(store)
                return result

            result = self._run(first)
            if self._after is not None and self._before is not None and self._after[0] == self._before[0]:
                self.setObsolete(True)  # nothing was written (already kept, refused…): nothing to undo
            if self._on_result is not None and result is not None:
                self._on_result(result)
        else:
            self._run(lambda store: self._put(store, self._after, self._before))

    def undo(self) -> None:
        self._run(lambda store: self._put(store, self._before, self._after))

    def _put(self, store, target: tuple[bytes | None, Any], expected: tuple[bytes | None, Any]) -> None:
        data, _ = target
        # The hub's keep_change reads keep.md back (so keepgui's history records this version).
        store.workspace.write(store.path, data if data is not None else b"", expect=expected[1])

    def _run(self, change: Callable[[Any], Any]) -> Any:
        try:
            return self._hub.keep_change(self._key, change)
        except (KeepguiError, OSError) as exc:
            self.setObsolete(True)
            if self._on_error is not None:
                self._on_error(f"{self.text()} failed: {exc}")
            return None
