"""One undo command for every change: a :class:`~keepgui.core.source.Change` on the undo stack.

The first ``redo`` runs the operation through the hub (a backend write that
returns a Change). ``undo`` asks that Change to take itself back, which returns
the Change that did it; the next ``redo`` takes *that* one back, and so on: the
backend decides how (a compensating revision appended to a log, the exact
bytes of a file written back over exactly what the change left, a bank moved
back out of the trash). A Change that can no longer be taken back because its
files changed since raises, and nothing is overwritten.

Every step is a write, and a write never runs on the GUI thread: the command
is on the stack at once (so an Undo pressed next takes back *this* change), and
each step is queued on the hub's one lane of writes (:meth:`keepgui.ui.hub.Hub.write`),
which runs them one after another in the order they were asked for; a step
reads the Change the step before it left when it runs, not when it was asked
for. Its Change comes back on the GUI thread, where the views are told and the
:class:`Outcome` settles (its :meth:`Outcome.then` callbacks run).

A command whose write is refused (the bank became unreadable, the file changed
since) raises nothing into Qt: it reports through ``on_error`` and marks itself
obsolete, and the stack drops it (at once when it is the step next to the
stack's index, else when the stack reaches it); the steps asked of it meanwhile
do nothing. (A caller that handles the first run's refusal itself, such as the
editor's three-way view on a conflict, passes ``quiet_first``; undo and redo
failures are still reported.) One that wrote nothing (already kept) is obsolete
too: there is nothing to undo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtGui import QUndoCommand, QUndoStack

from keepgui.core.errors import KeepguiError
from keepgui.core.source import BankKey, Change

log = logging.getLogger(__name__)


class Outcome:
    """What a pushed command's first step did, kept outside the command (the stack may delete an
    obsolete one): ``change`` is the first Change (None when the write failed, or until it ran),
    ``error`` why it failed and ``exception`` the error itself (a Conflict opens the three-way
    view). ``settled`` once the write ran (or failed); :meth:`then` runs a callback then."""

    def __init__(self) -> None:
        self.change: Change | None = None
        self.error: str | None = None
        self.exception: Exception | None = None
        self.settled = False
        self._then: list[Callable[[Outcome], object]] = []

    def then(self, callback: Callable[[Outcome], object]) -> Outcome:
        """Call ``callback(self)`` on the GUI thread once settled (at once when it already is)."""
        if self.settled:
            callback(self)
        else:
            self._then.append(callback)
        return self

    def settle(self, change: Change | None, exception: Exception | None = None) -> None:
        """The first step ran (``change``) or was refused (``exception``): tell who waits."""
        self.change = change
        if exception is not None:
            self.error = str(exception)
            self.exception = exception
        self.settled = True
        waiting, self._then = self._then, []
        for callback in waiting:
            callback(self)


class _Skipped(Exception):
    """A step asked of a command whose earlier step failed: nothing to do."""


class ChangeCommand(QUndoCommand):
    """Any change of any backend as one undo step (see the module docstring).

    ``stack``: the stack it is pushed on, so a refused step takes it off at once. ``wait``: the
    first step's answer is needed before :meth:`redo` returns (a caller that cannot wait for a
    callback): the GUI thread waits for it (and the writes queued before it)."""

    def __init__(
        self,
        hub: Any,
        target: BankKey | str,
        operation: Callable[[Any], Change],
        text: str | None = None,
        on_error: Callable[[str], None] | None = None,
        outcome: Outcome | None = None,
        quiet_first: bool = False,
        stack: QUndoStack | None = None,
        wait: bool = False,
    ) -> None:
        super().__init__(text or "")
        self._hub = hub
        self._target = target
        self._operation = operation
        self._on_error = on_error
        self._quiet = quiet_first
        self._stack = stack
        self._wait = wait
        self.outcome = outcome or Outcome()
        self._started = False
        self._stepping = False
        # Read and written only by the steps, on the lane of writes, in order:
        self._last: Change | None = None  # the Change whose undo takes the stack one step back or forth
        self._failed = False  # a step was refused: the later ones do nothing

    def redo(self) -> None:
        self._stepping = True  # the stack is in the middle of a call: it deletes an obsolete command itself
        try:
            if not self._started:
                self._started = True
                target, operation, hub = self._target, self._operation, self._hub
                self._queue(lambda: operation(hub.target(target)), first=True)
            else:
                self._queue(self._take_back, first=False)
        finally:
            self._stepping = False

    def undo(self) -> None:
        self._stepping = True
        try:
            self._queue(self._take_back, first=False)
        finally:
            self._stepping = False

    def _take_back(self) -> Change:
        if self._last is None:
            raise _Skipped()
        return self._last.undo()

    def _queue(self, step: Callable[[], Change], first: bool) -> None:
        def work() -> Change:  # on the lane of writes
            if self._failed:
                raise _Skipped()
            try:
                change = step()
            except BaseException:
                self._failed = True
                raise
            self._last = change
            return change

        self._hub.write(
            work,
            lambda change: self._ran(change, first),
            lambda exc: self._refused(exc, first),
            wait=self._wait and first,
        )

    def _ran(self, change: Change, first: bool) -> None:
        alive = shiboken6.isValid(self)
        if first:
            if alive and not self.text():
                self.setText(change.text)
                if self._stack is not None and self._stack.command(self._stack.index() - 1) is self:
                    self._stack.undoTextChanged.emit(self._stack.undoText())
            if alive and not change.can_undo:
                self._drop()  # nothing was written (already kept, refused…): nothing to undo
            self.outcome.settle(change)

    def _refused(self, exc: Exception, first: bool) -> None:
        if isinstance(exc, _Skipped):
            return
        alive = shiboken6.isValid(self)
        if not isinstance(exc, (KeepguiError, OSError)):
            log.error("a write failed", exc_info=exc)
        message = f"{(self.text() if alive else '') or 'The change'} failed: {exc}"
        if alive:
            self._drop()
        if self._on_error is not None and not (self._quiet and first):
            self._on_error(message)
        if first:
            self.outcome.settle(None, exc)

    def _drop(self) -> None:
        """Obsolete: the stack deletes it without running it, at once when it is next to the
        stack's index (it stays in place, and is dropped when the stack reaches it, otherwise)."""
        self.setObsolete(True)
        stack = self._stack
        if self._stepping or stack is None or not shiboken6.isValid(stack):
            return  # answered within the stack's own call (a waited write): the stack drops it
        index = stack.index()
        if index > 0 and stack.command(index - 1) is self:
            stack.undo()  # an obsolete command is deleted, not undone
        elif index < stack.count() and stack.command(index) is self:
            stack.redo()
