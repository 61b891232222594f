"""Gemini CLI memory files as lines, and the lines as the rows of a bank (no Qt).

Gemini keeps memory as plain Markdown the agent edits itself: the global ``GEMINI.md`` (cross-project
preferences), the private ``MEMORY.md`` of a launch folder (personal notes, with one-line pointers to
sibling notes read on demand) and, from versions before 0.44, the ``## Gemini Added Memories`` section
its ``save_memory`` tool appended ``- <fact>`` bullets to. keepgui shows every line of text of these
files as a row (headings, fences and blank lines are structure, not rows): a bullet's marker is not
part of its text, the heading above a line is its section, and a line under ``## Gemini Added
Memories`` is tagged ``gemini-added``. A sibling note is one row, tagged ``note`` and ``not-loaded``.

A row's key is its file, a hash of its text and the occurrence of that text in the file, so it stays
the same when lines move and other lines change; the same text twice is two rows.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from keepgui.backends.gemini.imports import code_regions, find_imports

LEGACY_HEADING = "## Gemini Added Memories"
"""The heading under which ``save_memory`` (v0.10–v0.43) appended facts."""

GLOBAL_TAG, PRIVATE_TAG, NOTE_TAG, LEGACY_TAG = "global", "private", "note", "gemini-added"
NOT_LOADED, IMPORT_TAG, HIDDEN_TAG = "not-loaded", "import", "hidden"

_BULLET = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Line:
    """One physical line: ``number`` (1-based), ``raw`` with its line ending, ``body`` without it,
    ``prefix`` (indent and bullet marker) and ``text`` (the rest), the ``section`` heading above it, and
    its ``kind``: ``text``, ``bullet``, ``heading``, ``fence``, ``code`` or ``blank``."""

    number: int
    raw: str
    body: str
    prefix: str
    text: str
    section: str
    kind: str

    @property
    def is_row(self) -> bool:
        """True for a line shown as a row (text or a bullet, outside code fences)."""
        return self.kind in ("text", "bullet")


def split_lines(text: str) -> list[str]:
    """``text``'s lines with their endings (``\\n``, ``\\r\\n``; a lone ``\\r`` is not an ending)."""
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def parse(text: str) -> list[Line]:
    """Every line of a memory file with its kind and section."""
    out: list[Line] = []
    section = ""
    fence = ""
    for number, raw in enumerate(split_lines(text), start=1):
        body = raw.rstrip("\n").rstrip("\r")
        if fence:
            closing = _FENCE.match(body)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = ""
                out.append(Line(number, raw, body, "", body, section, "fence"))
            else:
                out.append(Line(number, raw, body, "", body, section, "code"))
            continue
        opening = _FENCE.match(body)
        if opening:
            fence = opening.group(1)
            out.append(Line(number, raw, body, "", body, section, "fence"))
            continue
        if not body.strip():
            out.append(Line(number, raw, body, "", "", section, "blank"))
            continue
        heading = _HEADING.match(body)
        if heading:
            section = body.strip()
            out.append(Line(number, raw, body, "", (heading.group(2) or "").strip(), section, "heading"))
            continue
        bullet = _BULLET.match(body)
        if bullet:
            out.append(Line(number, raw, body, bullet.group(1), bullet.group(2), section, "bullet"))
        else:
            indent = body[: len(body) - len(body.lstrip())]
            out.append(Line(number, raw, body, indent, body.strip(), section, "text"))
    return out


def line_key(scope: str, text: str, occurrence: int) -> str:
    """A row's key: its file's scope, a hash of its text, and which occurrence of that text it is."""
    digest = hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{scope}#{digest}-{occurrence}"


@dataclass(frozen=True)
class LineRow:
    """A line of a memory file as a row: its key, the file and scope, and the line."""

    key: str
    path: str
    scope: str
    line: Line


def rows_of_file(path: str, scope: str, text: str) -> list[LineRow]:
    """The rows of one memory file (see the module docstring)."""
    seen: dict[str, int] = {}
    out: list[LineRow] = []
    for line in parse(text):
        if not line.is_row:
            continue
        normal = " ".join(line.text.split())
        occurrence = seen.get(normal, 0)
        seen[normal] = occurrence + 1
        out.append(LineRow(line_key(scope, line.text, occurrence), path, scope, line))
    return out


@dataclass(frozen=True)
class Mention:
    """An ``@word`` in a line that Gemini will treat as an import (not in a code span)."""

    token: str
    column: int


def mentions(text: str) -> list[Mention]:
    """The ``@`` tokens of one line of text that Gemini turns into imports (code spans excepted)."""
    regions = code_regions(text)
    return [
        Mention("@" + path, start + 1)
        for start, _end, path in find_imports(text)
        if not any(s <= start < e for s, e in regions)
    ]


def import_warning(text: str) -> str:
    """What a person should know before keeping ``text``: the ``@`` words Gemini will import ("" when none)."""
    found = mentions(text)
    if not found:
        return ""
    names = ", ".join(m.token for m in found[:3]) + ("…" if len(found) > 3 else "")
    return (
        f"{names}: Gemini treats a word starting with @ as a file to import and replaces it "
        "(with an “Import failed” comment when no such file exists): write it in `backticks` or without the @"
    )
