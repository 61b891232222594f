"""One undo command for every change: a :class:`~keepgui.core.source.Change` on the undo stack.

The first ``redo`` runs the operation through the hub (a backend write that
returns a Change). ``undo`` asks that Change to take itself back, which returns
the Change that did it; the next ``redo`` takes *that* one back, and so on: the
backend decides how (a compensating revision appended to a log, the exact
bytes of a file written back over exactly what the change left, a bank moved
back out of the trash). A Change that can no longer be taken back because its
files changed since raises, and nothing is overwritten.

A command whose write is refused (the bank became unreadable, the file changed
since) raises nothing into Qt: it reports through ``on_error`` and marks itself
obsolete so the stack drops it. (A caller that handles the first run's refusal
itself, such as the editor's three-way view on a conflict, passes
``quiet_first``; undo and redo failures are still reported.) One that wrote
nothing (already kept) is obsolete too: there is nothing to undo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtGui import QUndoCommand

from keepgui.core.errors import KeepguiError
from keepgui.core.source import BankKey, Change


class Outcome:
    """What a pushed command did, kept outside the command (the stack may delete an obsolete one):
    ``change`` is the first Change (None when the write failed), ``error`` why it failed and
    ``exception`` the error itself (a Conflict opens the three-way view)."""

    def __init__(self) -> None:
        self.change: Change | None = None
        self.error: str | None = None
        self.exception: Exception | None = None


class ChangeCommand(QUndoCommand):
    """Any change of any backend as one undo step (see the module docstring)."""

    def __init__(
        self,
        hub: Any,
        target: BankKey | str,
        operation: Callable[[Any], Change],
        text: str | None = None,
        on_error: Callable[[str], None] | None = None,
        outcome: Outcome | None = None,
        quiet_first: bool = False,
    ) -> None:
        super().__init__(text or "")
        self._hub = hub
        self._target = target
        self._operation = operation
        self._on_error = on_error
        self._quiet = quiet_first
        self.outcome = outcome or Outcome()
        self._last: Change | None = None  # the Change whose undo takes the stack one step back or forth

    def redo(self) -> None:
        if self._last is None:
            change = self._run(lambda: self._hub.perform(self._target, self._operation))
            if change is None:
                return
            self.outcome.change = change
            if not self.text():
                self.setText(change.text)
            if not change.can_undo:
                self.setObsolete(True)  # nothing was written (already kept, refused…): nothing to undo
            return
        self._step()

    def undo(self) -> None:
        self._step()

    def _step(self) -> None:
        last = self._last
        if last is not None:
            self._run(lambda: self._hub.deliver(last.undo()))

    def _run(self, work: Callable[[], Change]) -> Change | None:
        try:
            change = work()
        except (KeepguiError, OSError) as exc:
            self.setObsolete(True)
            message = f"{self.text() or 'The change'} failed: {exc}"
            self.outcome.error = str(exc)
            self.outcome.exception = exc
            if self._on_error is not None and not (self._quiet and self._last is None):
                self._on_error(message)
            return None
        self._last = change
        return change
