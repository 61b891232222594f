"""keep.md entries as rows of the memory table.

The table reads "memory-like" rows (the attribute names of an iii record).
:class:`KeepRow` gives a keep.md entry those names: its text and position are
real; the fields keep.md does not have (pin, tags, entities, dates, revision)
are empty, and the table greys their toggles with the reason from
:data:`KEEP_ROW_CAPABILITIES`. Entries keepgui removed (kept in its own
history) appear as retired rows when history is shown, and restoring one puts
the line back where it was.
"""

from __future__ import annotations

from keepgui.core.nanobot.keep import KEEP_CAPABILITIES
from keepgui.ui.memorymodel import Capabilities

KEEP_ROW_CAPABILITIES = Capabilities({
    "pin": KEEP_CAPABILITIES.pin_reason,
    "tags": "keep.md entries are plain one-line facts: no tags",
    "entities": "keep.md entries are plain one-line facts: no entities",
    "ranked": "keep.md is read whole on every turn; there is no recall ranking to show",
    "history": "keep.md entries have no revisions; keepgui keeps every version of the file instead",
})


class KeepRow:
    """One keep.md entry (or one removed by keepgui, when ``removed`` is set)."""

    __slots__ = ("id", "text", "position", "invalid_at", "updated_at", "removed")
    entities: tuple = ()
    tags: tuple = ()
    pinned = False
    superseded_by = None
    corroboration = None
    confidence = None
    created_at = None
    revision = None
    source = None

    def __init__(self, id: str, text: str, position: int, invalid_at: int | None = None, removed=None) -> None:
        self.id = id
        self.text = text
        self.position = position
        self.invalid_at = invalid_at
        self.updated_at = invalid_at
        self.removed = removed

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, KeepRow) and other.id == self.id and other.text == self.text
                and other.position == self.position and other.invalid_at == self.invalid_at)

    __hash__ = None  # type: ignore[assignment]


def keep_rows(doc, removed=()) -> list[KeepRow]:
    """Rows for a keep.md document, plus retired rows for the entries keepgui removed."""
    rows = [KeepRow(e.id, e.text, e.line) for e in doc.entries]
    present = {e.key for e in doc.entries}
    from keepgui.core.nanobot.keepmd import normalise

    for record in removed:
        if record.restored_at is None and normalise(record.text) not in present:
            rows.append(KeepRow("removed:" + record.id, record.text, 1_000_000 + record.line,
                                invalid_at=record.removed_at, removed=record))
    return rows
