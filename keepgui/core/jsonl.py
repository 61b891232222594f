"""Reading JSON-lines files tolerantly: each line an object, or a reason it was skipped.

Used for keepgui's own history index and for nanobot's ``memory/history.jsonl``
(read only); the iii log has its own, exact replay (:mod:`keepgui.backends.iii.log`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def json_objects(data: bytes) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """``(line number, object, "")`` per JSON-object line, or ``(line number, None, why)`` for a bad one.

    Blank lines are skipped silently; numbers are 1-based.
    """
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            yield number, None, "not valid JSON (torn or corrupt)"
            continue
        if not isinstance(obj, dict):
            yield number, None, "not a JSON object"
            continue
        yield number, obj, ""


def dump_line(obj: dict[str, Any]) -> bytes:
    """``obj`` as one compact JSON-lines line: UTF-8, non-ASCII kept as is, ending in ``\\n``."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
