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
    """A unified diff of two texts ("" when they are equal); a missing final newline is marked.

    Small texts are compared by :mod:`difflib` as they are; a big one (an index of 60,000 lines) is
    first anchored on the lines that occur once on each side, in order, and only the stretches
    between anchors go to difflib, so the cost stays about linear (difflib alone grows with the
    square of the lines, minutes for such a file)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    if a == b:
        return ""
    matcher = difflib.SequenceMatcher(None, a, b) if len(a) * len(b) <= _SMALL else _Anchored(a, b)
    lines = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        lines.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[i1:i2]]
                continue
            lines += ["-" + line for line in a[i1:i2]]
            lines += ["+" + line for line in b[j1:j2]]
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


class _Anchored(difflib.SequenceMatcher[str]):
    """difflib's grouping of opcodes (hunks with their context), over the anchored opcodes."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, [], [])
        self.codes = _anchored_opcodes(a, b)

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:  # type: ignore[override]
        """The anchored opcodes (see :func:`_anchored_opcodes`)."""
        return self.codes


_SMALL = 4_000_000
"""Texts whose line counts multiply to more than this are diffed anchored (see :func:`unified`)."""


def _range(start: int, stop: int) -> str:
    """A hunk's range as the unified format writes it: ``start,length`` (1-based; 0-based when empty)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _anchored_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Opcodes (difflib's shape) from the lines unique on both sides kept in order (the longest
    increasing run of their positions, found in n log n), the stretches between them diffed by
    difflib when small and taken as replaced when not."""
    import bisect
    from collections import Counter

    count_a, count_b = Counter(a), Counter(b)
    where_b = {line: j for j, line in enumerate(b) if count_b[line] == 1}
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if count_a[line] == 1 and line in where_b]
    tails: list[int] = []  # the longest increasing run of b-positions: patience sorting
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for k, (_i, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[pos], tail_at[pos] = j, k
        back[k] = tail_at[pos - 1] if pos else -1
    anchors: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        anchors.append(pairs[k])
        k = back[k]
    anchors.reverse()
    out: list[tuple[str, int, int, int, int]] = []
    i0 = j0 = 0
    for i, j in [*anchors, (len(a), len(b))]:
        out += _gap(a, b, i0, i, j0, j)
        if i < len(a):
            out.append(("equal", i, i + 1, j, j + 1))
        i0, j0 = i + 1, j + 1
    return _joined(out)


def _gap(a: list[str], b: list[str], i0: int, i1: int, j0: int, j1: int) -> list[tuple[str, int, int, int, int]]:
    if i0 == i1 and j0 == j1:
        return []
    if (i1 - i0) * (j1 - j0) > _SMALL or i0 == i1 or j0 == j1:
        tag = "delete" if j0 == j1 else "insert" if i0 == i1 else "replace"
        return [(tag, i0, i1, j0, j1)]
    codes = difflib.SequenceMatcher(None, a[i0:i1], b[j0:j1]).get_opcodes()
    return [(tag, x1 + i0, x2 + i0, y1 + j0, y2 + j0) for tag, x1, x2, y1, y2 in codes]


def _joined(codes: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """Neighbouring ``equal`` opcodes made one (difflib's grouping expects them so)."""
    out: list[tuple[str, int, int, int, int]] = []
    for code in codes:
        if out and code[0] == "equal" == out[-1][0] and out[-1][2] == code[1]:
            out[-1] = ("equal", out[-1][1], code[2], out[-1][3], code[4])
        else:
            out.append(code)
    return out


SHOWN_CHARS = 20_000
"""Longest text shown whole; the worker's own texts are at most 2,000 bytes."""


def shown_text(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` for display: whole up to ``limit`` characters, else cut with a note saying how much.

    Laying out megabytes of one unbroken line froze the window for minutes.
    """
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit:,} more characters not shown]"


LONGEST_SHOWN_LINE = 2_000
"""Longest line a view lays out whole: one line of a megabyte froze the window for a minute."""


def elided_lines(text: str, width: int = LONGEST_SHOWN_LINE) -> str:
    """``text`` for display with every line longer than ``width`` characters cut, saying how much was
    left out; the other lines as they are. Copying takes the exact text, never this."""
    if len(text) <= width:
        return text
    out = []
    for line in text.split("\n"):
        if len(line) > width:
            line = line[:width] + f"… [{len(line) - width:,} more characters on this line not shown]"
        out.append(line)
    return "\n".join(out)
