"""Writes an agent staged for a person's approval, as the seam shows them (no Qt, no backend).

Some agents do not write memory at once: Hermes Agent keeps a queue of pending writes under
``pending/``, Gemini CLI's Auto Memory proposes patches into an inbox. A backend that has such a
queue gives its source an ``approvals()`` method returning an :class:`Approvals`; everything
above the seam (the window's approval list, the tray's attention, ``keepgui pending``, the inbox)
reaches it through :func:`approvals_of` and never names the backend.

A :class:`PendingWrite` carries the whole text of its target before and after, computed by the
agent's own rules (limits, duplicates, matching), so a person sees the exact change it would make;
``problem`` says why approving it would be refused now (over the limit, no unique match, the
target changed), and is empty when it can be applied. Approving and rejecting return a
:class:`~keepgui.core.source.Change` that undoes itself like every write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from keepgui.core.source import Change


@dataclass(frozen=True)
class PendingWrite:
    """One staged write: ``id`` is stable within its source (the queue's own name for it).

    ``target`` is the file it would change, relative to the source's folder; ``summary`` is one line
    for a list ("add to MEMORY.md: “Prefers tabs”"); ``before`` and ``after`` are the target's whole
    text now and once approved; ``created_ms`` is when the agent staged it (epoch milliseconds, None
    when unknown); ``bank`` names the bank whose rows it changes (None: none of them).
    """

    id: str
    target: str
    summary: str
    before: str
    after: str
    created_ms: int | None = None
    bank: str | None = None
    problem: str = ""

    @property
    def applicable(self) -> bool:
        """True when approving it now would be applied (``problem`` is empty)."""
        return not self.problem


@runtime_checkable
class Approvals(Protocol):
    """A source's queue of staged writes (see the module docstring)."""

    def pending(self) -> list[PendingWrite]:
        """Every staged write, oldest first, each computed against the files as they are now."""
        ...

    def approve(self, ids: Sequence[str]) -> Change:
        """Apply the staged writes ``ids`` by the agent's own rules, as one undoable change, and
        take them out of the queue; refused (nothing written) when any of them cannot be applied."""
        ...

    def reject(self, ids: Sequence[str]) -> Change:
        """Take the staged writes ``ids`` out of the queue without applying them (undoable: the
        undo puts them back)."""
        ...


def approvals_of(source: object) -> Approvals | None:
    """The approval queue of ``source``, or None when its agent stages no writes."""
    method = getattr(source, "approvals", None)
    if method is None:
        return None
    queue = method()
    return queue if isinstance(queue, Approvals) else None
