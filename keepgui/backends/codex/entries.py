"""``memory_summary.md`` as entries: its sections, bullets and paragraphs, and which ones the model sees.

Codex's consolidation writes the summary as Markdown: ``v1`` on the first line,
then ``## User Profile`` (prose), ``## User preferences`` and ``## General Tips``
(bullets) and ``## What's in Memory`` (``###`` scopes, ``####`` days, bullets with
indented sub-bullets). :func:`summary_entries` cuts any such text into entries:

* a **bullet** (``-``, ``*``, ``+`` or ``1.`` at the margin) with every indented
  line after it (its sub-bullets and continuation lines);
* a **paragraph**: consecutive lines that are neither headings nor bullets;
* the first line ``v1`` is not an entry (it is the format's marker).

Each entry knows its **section** (the headings above it, ``What's in Memory ›
/work/app › 2025-06-14``), its first line, and its byte span in the summary as
Codex trims it, so :func:`seen` can say whether the model sees it whole, in part
or not at all when the summary is cut in the middle.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from keepgui.backends.codex.memory import Truncation

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t#]*$")
_BULLET = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
VERSION_LINE = "v1"

WHOLE, PART, NONE = "whole", "part", "none"
"""Whether the model sees an entry of a cut summary: whole, in part (the cut runs through it), not at all."""


@dataclass(frozen=True)
class Entry:
    """One entry of the summary: ``kind`` (``bullet`` or ``paragraph``), ``section`` (its headings
    joined by `` › ``), ``line`` (1-based, in the file), ``text``, and ``start``/``end``, its byte
    span in the trimmed summary."""

    kind: str
    section: str
    line: int
    text: str
    start: int
    end: int

    @property
    def key(self) -> str:
        """A key from the section and the text (the same entry keeps it when lines move)."""
        return hashlib.sha256(f"{self.section}\n{self.text}".encode()).hexdigest()[:12]


def summary_entries(raw_text: str, trimmed: str | None = None) -> list[Entry]:
    """The entries of a summary's text (``raw_text`` as in the file; ``trimmed`` what Codex keeps of
    it, for the byte spans: by default ``raw_text`` itself)."""
    lines = raw_text.split("\n")
    # where the trimmed text begins, in bytes of the raw text (entries are placed in the trimmed one)
    lead = 0
    if trimmed is not None and trimmed:
        lead = len(raw_text[: raw_text.find(trimmed)].encode("utf-8")) if trimmed in raw_text else 0
    offsets: list[int] = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line.encode("utf-8")) + 1
    stack: list[tuple[int, str]] = []
    out: list[Entry] = []
    i = 0
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    while i < len(lines):
        line = lines[i]
        if not line.strip() or (i == first and line.strip() == VERSION_LINE):
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            stack = [(lv, title) for lv, title in stack if lv < level] + [(level, heading.group(2))]
            i += 1
            continue
        j = _entry_end(lines, i)
        kind = "bullet" if _BULLET.match(line) else "paragraph"
        text = "\n".join(lines[i:j]).rstrip()
        start = offsets[i] - lead
        section = " › ".join(title for _lv, title in stack)
        out.append(Entry(kind, section, i + 1, text, start, start + len(text.encode("utf-8"))))
        i = j
    return out


def _entry_end(lines: list[str], i: int) -> int:
    """The line after the entry that starts at line ``i``."""
    bullet = bool(_BULLET.match(lines[i]))
    j = i + 1
    while j < len(lines):
        line = lines[j]
        if _HEADING.match(line):
            break
        if not line.strip():
            # a blank line ends a paragraph; a bullet goes on when an indented line follows it
            k = j
            while k < len(lines) and not lines[k].strip():
                k += 1
            if bullet and k < len(lines) and lines[k][:1] in (" ", "\t") and not _HEADING.match(lines[k]):
                j = k
                continue
            break
        if bullet and _BULLET.match(line) and line[:1] not in (" ", "\t"):
            break  # the next bullet at the margin
        if not bullet and _BULLET.match(line):
            break
        j += 1
    return j


def seen(entry: Entry, cut: Truncation) -> str:
    """Whether the model sees ``entry`` of a summary cut as ``cut`` says: :data:`WHOLE`, :data:`PART`
    or :data:`NONE`."""
    if not cut.cut:
        return WHOLE
    if entry.end <= cut.head or entry.start >= cut.tail:
        return WHOLE
    if entry.start >= cut.head and entry.end <= cut.tail:
        return NONE
    return PART
