"""One way for tests to make a worker memory record: every field with a plain default (a stated,
unpinned, never-seen memory at revision 0, created and updated at ms 1), any of them given."""

from __future__ import annotations

from typing import Any

from keepgui.backends.iii.record import Memory, fingerprint, new_memory


def memory(text: str, **fields: Any) -> Memory:
    """The record of ``text`` (its id the worker's fingerprint of it) with ``fields`` overriding the defaults."""
    values: dict[str, Any] = dict(
        id=fingerprint(text),
        text=text,
        entities=[],
        tags=[],
        confidence="stated",
        corroboration=0,
        pinned=False,
        created_at=1,
        updated_at=1,
        revision=0,
    )
    values.update(fields)
    return new_memory(**values)
