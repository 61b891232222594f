"""Text differences for people: word-level changes of one memory, unified diffs of files.

Pure standard-library logic (difflib), kept apart from the widgets that draw
it, so it is tested without a display.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """The change from ``old`` to ``new`` as ``(op, text)`` pieces in order.

    ``op`` is ``"="`` (unchanged), ``"-"`` (removed) or ``"+"`` (added);
    joining the ``=`` and ``+`` pieces gives ``new``, the ``=`` and ``-`` give ``old``.
    """
    a = _TOKEN.findall(old)
    b = _TOKEN.findall(new)
    out: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            out.append(("=", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("+", "".join(b[j1:j2])))
    return _merge(out)


def _merge(pieces: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    for op, text in pieces:
        if not text:
            continue
        if merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        else:
            merged.append((op, text))
    return merged


def unified(old: str, new: str, old_name: str = "before", new_name: str = "after", context: int = 3) -> str:
    """A unified diff of two texts ("" when they are equal); a missing final newline is marked."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(a, b, old_name, new_name, n=context):
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)


SHOWN_CHARS = 20_000
"""Longest text shown whole; the worker's own texts are at most 2,000 bytes."""


def shown_text(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` for display: whole up to ``limit`` characters, else cut with a note saying how much.

    Laying out megabytes of one unbroken line froze the window for minutes.
    """
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters not shown]"
