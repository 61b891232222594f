"""The worker's mutation semantics as pure functions (spec §5.2–§5.7).

Each function takes the current record (or None) and returns the next record to
append, exactly as the worker would compute it; nothing here touches a file.
:class:`keepgui.backends.iii.store.Batch` applies them under the log's lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from keepgui.backends.iii.record import (
    MAX_LIST,
    TEXT_MAX_BYTES,
    TEXT_MIN_BYTES,
    U32_MAX,
    Memory,
    Source,
    fingerprint,
    new_memory,
    normalize_labels,
)
from keepgui.backends.iii.textrules import byte_len, rust_trim
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.timefmt import now_ms


def clean_text(text: str) -> str:
    """Trim ``text`` and check the worker's 3..2000 byte limit."""
    text = rust_trim(text)
    if not TEXT_MIN_BYTES <= byte_len(text) <= TEXT_MAX_BYTES:
        raise InvalidInput("text must be 3..2000 characters")
    return text


@dataclass(frozen=True)
class Transition:
    """The record a mutation appends, and what the worker would report about it.

    ``event`` is the worker's item event: ``created``, ``updated``, ``deleted``
    or ``superseded``; ``None`` with ``record=None`` means nothing is written.
    """

    record: Memory | None
    created: bool = False
    event: str | None = None
    previous: Memory | None = None

    @property
    def written(self) -> Memory:
        """The record appended, for the transitions that always append one (save, update, reinforce…)."""
        if self.record is None:
            raise NotFound(f"nothing is written for {self.previous.id if self.previous else 'this change'}")
        return self.record


def save_transition(
    existing: Memory | None,
    text: str,
    entities: Iterable[str] = (),
    tags: Iterable[str] = (),
    pinned: bool = False,
    session_id: str | None = None,
    now: int | None = None,
) -> Transition:
    """``memory::save``: create, reinforce a live record, or resurrect a retired one (§5.2).

    ``existing`` must be the current record for ``fingerprint(text)`` (or None).
    """
    text = clean_text(text)
    now = now_ms() if now is None else now
    mid = fingerprint(text)
    if existing is not None and existing.id != mid:
        raise ValueError("save_transition given the record of another id")
    new_tags = normalize_labels(tags)
    if existing is None:
        record = new_memory(
            id=mid,
            text=text,
            entities=normalize_labels(entities),
            tags=new_tags,
            confidence="stated",
            corroboration=0,
            pinned=bool(pinned),
            source=Source(session_id=session_id) if session_id is not None else None,
            created_at=now,
            updated_at=now,
            revision=0,
        )
        return Transition(record, created=True, event="created")
    merged = list(existing.tags)
    for tag in new_tags:
        if len(merged) >= MAX_LIST:
            break
        if tag not in merged:
            merged.append(tag)
    retired = existing.invalid_at is not None
    record = existing.replace(
        corroboration=min(existing.corroboration + 1, U32_MAX),
        pinned=existing.pinned or bool(pinned),
        tags=merged,
        updated_at=now,
        revision=existing.revision + 1,
        invalid_at=None,
        superseded_by=None,
    )
    if retired:
        return Transition(record, created=True, event="created", previous=existing)
    return Transition(record, created=False, event="updated", previous=existing)


def update_transition(
    existing: Memory | None,
    memory_id: str,
    text: str | None = None,
    entities: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    pinned: bool | None = None,
    now: int | None = None,
) -> Transition:
    """``memory::update`` (and ``memory::pin``): replace the given fields, keep the id (§5.4, §5.5).

    Live or retired alike; a retired record stays retired. ``updated_at`` and
    the revision move even when nothing changed, as the worker does.
    """
    if existing is None:
        raise NotFound(f"memory `{memory_id}` not found")
    changes: dict[str, Any] = {"updated_at": now_ms() if now is None else now, "revision": existing.revision + 1}
    if text is not None:
        changes["text"] = clean_text(text)
    if entities is not None:
        changes["entities"] = normalize_labels(entities)
    if tags is not None:
        changes["tags"] = normalize_labels(tags)
    if pinned is not None:
        changes["pinned"] = bool(pinned)
    return Transition(existing.replace(**changes), event="updated", previous=existing)


def delete_transition(existing: Memory | None, memory_id: str, now: int | None = None) -> Transition:
    """``memory::delete``: tombstone a live record; a retired one is left alone (§5.6)."""
    if existing is None:
        raise NotFound(f"memory `{memory_id}` not found")
    if existing.invalid_at is not None:
        return Transition(None, previous=existing)
    now = now_ms() if now is None else now
    record = existing.replace(invalid_at=now, updated_at=now, revision=existing.revision + 1)
    return Transition(record, event="deleted", previous=existing)


def supersede_transition(
    loser: Memory | None,
    loser_id: str,
    winner: Memory | None,
    winner_id: str,
    now: int | None = None,
) -> Transition:
    """``memory::supersede``: retire ``loser`` in favour of ``winner``, with the worker's
    error checks in the worker's order (§5.7). The winner is not modified."""
    if loser_id == winner_id:
        raise InvalidInput("a memory cannot supersede itself")
    if winner is None:
        raise NotFound(f"memory `{winner_id}` not found")
    if winner.invalid_at is not None:
        raise InvalidInput(f"superseded_by `{winner_id}` is not a live memory")
    if loser is None:
        raise NotFound(f"memory `{loser_id}` not found")
    if loser.pinned:
        raise InvalidInput(f"memory `{loser_id}` is pinned; pinned memories are untouchable by automatic paths")
    if loser.invalid_at is not None:
        raise InvalidInput(f"memory `{loser_id}` is already retired (superseded_by: {loser.superseded_by or 'none'})")
    now = now_ms() if now is None else now
    record = loser.replace(invalid_at=now, superseded_by=winner_id, updated_at=now, revision=loser.revision + 1)
    return Transition(record, event="superseded", previous=loser)


def restore_transition(existing: Memory | None, memory_id: str, now: int | None = None) -> Transition:
    """keepgui's un-tombstone: revision + 1, ``invalid_at`` and ``superseded_by`` removed,
    ``updated_at`` now, nothing else changed. A live record is left alone."""
    if existing is None:
        raise NotFound(f"memory `{memory_id}` not found")
    if existing.invalid_at is None:
        return Transition(None, previous=existing)
    now = now_ms() if now is None else now
    record = existing.replace(invalid_at=None, superseded_by=None, updated_at=now, revision=existing.revision + 1)
    return Transition(record, event="created", previous=existing)


def reinforce_transition(existing: Memory | None, memory_id: str, now: int | None = None) -> Transition:
    """Reinforce a live record by id (corroboration + 1, revision + 1), as ``memory::save``
    of its text would; used when the id is no longer the fingerprint of its edited text."""
    if existing is None:
        raise NotFound(f"memory `{memory_id}` not found")
    if existing.invalid_at is not None:
        raise InvalidInput(f"memory `{memory_id}` is not live")
    now = now_ms() if now is None else now
    record = existing.replace(
        corroboration=min(existing.corroboration + 1, U32_MAX), updated_at=now, revision=existing.revision + 1
    )
    return Transition(record, event="updated", previous=existing)


def revert_transition(existing: Memory | None, target: Memory) -> Transition:
    """Undo: write ``target`` again as a new revision (nothing is ever removed from a log, so undoing
    appends the earlier state on top), exactly as it was but for the revision: its ``updated_at``
    too, so an undone delete, pin or edit leaves the worker's ranking as it was (recency comes from
    ``updated_at``). The worker's replay orders revisions by ``revision`` alone and takes any
    ``updated_at``; only its own mutations set it to the time they run."""
    if existing is None:
        raise NotFound(f"memory `{target.id}` not found")
    if target.id != existing.id:
        raise ValueError("revert_transition given another id")
    record = target.replace(revision=existing.revision + 1)
    event = "deleted" if record.invalid_at is not None and existing.invalid_at is None else "updated"
    return Transition(record, event=event, previous=existing)
