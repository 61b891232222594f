"""The keep.md model: a flat list of one-line facts, kept byte for byte (spec §5.3).

keep.md is the keep skill's store: ``- <terse fact>`` per line, no dates, no
headings. People and agents still put other things in it, so the model is
lossless: the file is split into physical lines, each remembering its own line
ending (``\\n``, ``\\r\\n`` or a lone ``\\r``, or none for a last line without a
final newline), and a leading UTF-8 BOM is remembered too. ``to_bytes()`` of an
unedited document is the file exactly; an edit touches only the lines it edits,
so a file with mixed line endings stays mixed everywhere else.

* An **entry** is a line matching ``^\\s*[-*]\\s+(.*\\S)\\s*$``; its text is the
  captured group. An entry written any other way than ``- <text>`` (a ``*``
  bullet, indentation, extra spaces) is flagged "not canonical".
* Every other line (headings, comments, prose) is kept exactly and flagged
  "not in canonical format"; blank lines are kept and are harmless.
* **Identity**: an entry's id is a hash of its normalised text plus its
  occurrence number among entries with that same text, so an id still names
  the same entry after other lines were added, removed or reordered.
* **Counts**: entries and physical lines. The keep skill compacts "when the file
  has more than 150 lines", to about 120; it does not say what a line is, so
  both counts are shown and ``compaction_due`` follows physical lines, the
  stricter reading (every line costs prompt space when the file is read).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, NotFound, Unreadable

SOFT_CAP = 150
"""The keep skill compacts keep.md when it has more than this many lines."""

COMPACTION_TARGET = 120
"""The keep skill rewrites keep.md to about this many lines."""

BOM = b"\xef\xbb\xbf"
ENTRY_RE = re.compile(r"^\s*[-*]\s+(.*\S)\s*$")
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_COMMENT_RE = re.compile(r"^\s*<!--.*-->\s*$|^\s*<!--|-->\s*$")
_NEWLINE_RE = re.compile(r"\r\n|\n|\r")
_SPACE_RE = re.compile(r"\s+")


def decode_text(data: bytes, path: str) -> tuple[str, bool]:
    """``(text, had_bom)`` of a UTF-8 file (a BOM is tolerated and remembered).

    Raises :class:`Unreadable` naming the line and byte when it is not UTF-8:
    keepgui edits only files it can write back exactly.
    """
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    try:
        return body.decode("utf-8"), bom
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise Unreadable(
            path,
            f"line {line} is not valid UTF-8 (byte {exc.start + (3 if bom else 0)}); "
            "re-save the file as UTF-8 before editing it in keepgui",
        ) from None


def normalise(text: str) -> str:
    """The comparison form of a fact (spec §5.3): NFC, casefolded, trimmed,
    internal whitespace collapsed, one trailing period dropped."""
    text = _SPACE_RE.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    return text


def contains(haystack: str, needle: str) -> bool:
    """True when normalised ``needle`` occurs in normalised ``haystack`` at word boundaries.

    The keep skill's rule is a case-insensitive substring match; requiring word
    boundaries keeps ``tea`` from matching inside ``steak``.
    """
    if not needle:
        return False
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        if (start == 0 or not haystack[start - 1].isalnum()) and (end == len(haystack) or not haystack[end].isalnum()):
            return True
        start = haystack.find(needle, start + 1)
    return False


_ALNUM_RUN = re.compile(r"[^\W_]+")
"""A maximal run of characters for which ``str.isalnum()`` holds (``\\w`` without the underscore)."""


class ContainmentIndex:
    """Which of many keys contain a needle at word boundaries (:func:`contains`), without trying them all.

    When ``contains(key, needle)`` holds, every maximal alphanumeric run of the
    needle is a maximal run of the key too: inside the needle a run is bounded
    by the needle's own non-alphanumeric characters, and at its ends by the
    word boundaries ``contains`` demands. So only the keys holding the needle's
    rarest run can contain it, and a plan over 100,000 entries looks at a few
    keys per entry instead of all of them.
    """

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self._postings: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            for run in set(_ALNUM_RUN.findall(key)):
                self._postings.setdefault(run, []).append(i)

    def containing(self, needle: str) -> list[int]:
        """Positions of the keys that contain ``needle`` (:func:`contains`), ascending."""
        runs = set(_ALNUM_RUN.findall(needle))
        candidates: Sequence[int]
        if runs:
            candidates = min((self._postings.get(run, ()) for run in runs), key=len)
        else:
            candidates = range(len(self.keys))
        keys = self.keys
        return [i for i in candidates if contains(keys[i], needle)]


def canonical_line(text: str) -> str:
    """How keepgui writes a fact: ``- <fact>``, one space after the dash, one line."""
    fact = _SPACE_RE.sub(" ", text).strip()
    if not fact:
        raise InvalidInput("an empty fact cannot be kept; say what should be remembered")
    return f"- {fact}"


def entry_id(key: str, occurrence: int) -> str:
    """The stable id of the ``occurrence``-th (1-based) entry whose normalised text is ``key``."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    return digest if occurrence == 1 else f"{digest}.{occurrence}"


@dataclass(frozen=True)
class Line:
    """One physical line of keep.md.

    ``index`` is 0-based; ``text`` excludes the line ending; ``ending`` is the
    exact terminator (``""`` for a last line without a final newline); ``kind``
    is ``entry``, ``blank``, ``heading``, ``comment`` or ``other``; ``issue``
    says why it is not canonical keep.md (None when it is, or for a blank line).
    """

    index: int
    text: str
    ending: str
    kind: str
    entry_text: str | None = None
    issue: str | None = None

    @property
    def number(self) -> int:
        """The 1-based line number, as editors show it."""
        return self.index + 1

    def to_obj(self) -> dict[str, Any]:
        """``{line, text, kind, issue}`` (1-based line number)."""
        return {"line": self.number, "text": self.text, "kind": self.kind, "issue": self.issue}


@dataclass(frozen=True)
class Entry:
    """A fact in keep.md.

    ``id`` is stable (see module doc); ``number`` is its 1-based position among
    the entries (what the CLI shows and ``forget 3`` means); ``line`` its 0-based
    physical line; ``raw`` the whole line as written; ``key`` its normalised text.
    """

    id: str
    number: int
    line: int
    text: str
    raw: str
    key: str
    canonical: bool

    def to_obj(self) -> dict[str, Any]:
        """``{id, number, line (1-based), text, canonical}``."""
        return {
            "id": self.id,
            "number": self.number,
            "line": self.line + 1,
            "text": self.text,
            "canonical": self.canonical,
        }


def _classify(index: int, text: str, ending: str) -> Line:
    match = ENTRY_RE.match(text)
    if match:
        fact = match.group(1)
        issue = (
            None
            if text == f"- {fact}" and "  " not in fact
            else ("entry not written as `- <fact>` (bullet, indentation or spacing differs)")
        )
        return Line(index, text, ending, "entry", fact, issue)
    if not text.strip():
        return Line(index, text, ending, "blank")
    if _HEADING_RE.match(text):
        return Line(index, text, ending, "heading", issue="heading: keep.md is a flat list without headings")
    if _COMMENT_RE.search(text):
        return Line(index, text, ending, "comment", issue="comment: not a keep.md entry")
    return Line(index, text, ending, "other", issue="not in canonical format: keep.md lines are `- <fact>`")


def _split(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    for match in _NEWLINE_RE.finditer(text):
        out.append((text[pos : match.start()], match.group()))
        pos = match.end()
    if pos < len(text):
        out.append((text[pos:], ""))
    return out


@dataclass(frozen=True)
class KeepDoc:
    """A parsed keep.md: its lines, its entries and how it is written.

    Immutable: every edit returns a new document (without a stamp); the
    caller writes ``to_bytes()`` with the stamp of the document it edited.
    ``path`` and ``stamp`` describe where and what was read (``stamp.exists``
    is False for a keep.md that does not exist yet).
    """

    lines: tuple[Line, ...]
    bom: bool = False
    path: str = ""
    stamp: fsio.Stamp = field(default_factory=fsio.Stamp.missing)

    # ---------------------------------------------------------------- reading

    @classmethod
    def parse(cls, data: bytes | None, path: str = "", stamp: fsio.Stamp | None = None) -> KeepDoc:
        """Parse keep.md bytes (``None``: the file does not exist).

        Raises :class:`Unreadable` for bytes that are not UTF-8, naming the line:
        keepgui edits only files it can write back exactly.
        """
        stamp = stamp or fsio.Stamp.missing()
        if not data:
            return cls((), False, path, stamp)
        text, bom = decode_text(data, path or "keep.md")
        lines = tuple(_classify(i, t, e) for i, (t, e) in enumerate(_split(text)))
        return cls(lines, bom, path, stamp)

    @classmethod
    def from_text(cls, text: str) -> KeepDoc:
        """Parse keep.md text (for tests and previews)."""
        return cls.parse(text.encode("utf-8"))

    def to_bytes(self) -> bytes:
        """The file's bytes: BOM, every line with its own ending."""
        body = "".join(line.text + line.ending for line in self.lines).encode("utf-8")
        return (BOM + body) if self.bom else body

    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        """The entries in file order, with stable ids."""
        seen: Counter[str] = Counter()
        out: list[Entry] = []
        for line in self.lines:
            if line.kind != "entry":
                continue
            key = normalise(line.entry_text or "")
            seen[key] += 1
            out.append(
                Entry(
                    entry_id(key, seen[key]),
                    len(out) + 1,
                    line.index,
                    line.entry_text or "",
                    line.text,
                    key,
                    line.issue is None,
                )
            )
        return tuple(out)

    @property
    def other_lines(self) -> tuple[Line, ...]:
        """Lines that are not entries and not blank (headings, comments, prose), all kept as they are."""
        return tuple(line for line in self.lines if line.kind not in ("entry", "blank"))

    @property
    def flagged(self) -> tuple[Line, ...]:
        """Every line that is not canonical keep.md, with its ``issue``."""
        return tuple(line for line in self.lines if line.issue)

    @property
    def entry_count(self) -> int:
        """How many entries."""
        return sum(1 for line in self.lines if line.kind == "entry")

    @property
    def line_count(self) -> int:
        """Physical lines (a last line without a newline counts; nothing after a final newline does)."""
        return len(self.lines)

    @property
    def compaction_due(self) -> bool:
        """True when keep.md has more than :data:`SOFT_CAP` lines (the keep skill's trigger)."""
        return self.line_count > SOFT_CAP

    @property
    def has_final_newline(self) -> bool:
        """True when the file ends with a line ending (an empty file counts as True)."""
        return not self.lines or self.lines[-1].ending != ""

    @property
    def newline(self) -> str:
        """The line ending used for new lines: the file's most common one (``\\n`` if none or a tie)."""
        counts = Counter(line.ending for line in self.lines if line.ending)
        if not counts:
            return "\n"
        best = max(counts.values())
        return "\n" if counts.get("\n") == best else next(e for e, c in counts.most_common() if c == best)

    def counts(self) -> dict[str, Any]:
        """``{entries, lines, soft_cap, target, compaction_due}``."""
        return {
            "entries": self.entry_count,
            "lines": self.line_count,
            "soft_cap": SOFT_CAP,
            "target": COMPACTION_TARGET,
            "compaction_due": self.compaction_due,
        }

    def duplicates(self) -> list[tuple[Entry, ...]]:
        """Groups of entries with the same normalised text (``* x`` and ``- X.`` are the same fact)."""
        groups: dict[str, list[Entry]] = {}
        for entry in self.entries:
            groups.setdefault(entry.key, []).append(entry)
        return [tuple(g) for g in groups.values() if len(g) > 1]

    def find(self, target: str | int) -> Entry:
        """The entry named by an id, a 1-based number (int or digits), or its text.

        Text matches after normalising: an exact match wins, else the one entry
        containing the text. Raises :class:`NotFound` (nothing matches) or
        :class:`InvalidInput` (several do), naming the file and what to do.
        """
        entries = self.entries
        where = self.path or "keep.md"
        if isinstance(target, str):
            # an id first: some ids are all digits, and such an id is that entry, not a number
            for entry in entries:
                if entry.id == target:
                    return entry
        if isinstance(target, int) or target.strip().isdigit():
            number = int(target)
            if 1 <= number <= len(entries):
                return entries[number - 1]
            raise NotFound(f"{where} has no entry {number} (it has {len(entries)}); list them with `keepgui entries`")
        key = normalise(target.lstrip("-* \t"))
        if not key:
            raise InvalidInput("say which entry: its number, its id or its text")
        exact = [e for e in entries if e.key == key]
        if exact:
            return exact[0]
        partial = [e for e in entries if contains(e.key, key)]
        if len(partial) == 1:
            return partial[0]
        if not partial:
            raise NotFound(f"no entry of {where} matches `{target}`; list them with `keepgui entries`")
        listed = "; ".join(f"{e.number}: {e.text}" for e in partial[:5])
        raise InvalidInput(f"`{target}` matches {len(partial)} entries of {where} ({listed}); give the number")

    def get(self, entry_id_: str) -> Entry | None:
        """The entry with this id, or None when it is no longer there."""
        return next((e for e in self.entries if e.id == entry_id_), None)

    def neighbours(self, entry: Entry) -> tuple[Entry | None, Entry | None]:
        """The entries just before and after ``entry`` (for restoring it where it was)."""
        entries = self.entries
        i = entry.number - 1
        return (entries[i - 1] if i > 0 else None, entries[i + 1] if i + 1 < len(entries) else None)

    # ---------------------------------------------------------------- editing

    def _with_lines(self, items: list[tuple[str, str]]) -> KeepDoc:
        lines = tuple(_classify(i, t, e) for i, (t, e) in enumerate(items))
        return KeepDoc(lines, self.bom, self.path, fsio.Stamp.missing())

    def _items(self) -> list[tuple[str, str]]:
        return [(line.text, line.ending) for line in self.lines]

    def insert_line(self, index: int, text: str) -> KeepDoc:
        """A copy with ``text`` inserted as physical line ``index`` (clamped), touching no other line
        except, at the very end, giving the old last line an ending so the new one starts a line.

        A file without a final newline keeps having none.
        """
        if "\n" in text or "\r" in text:
            raise InvalidInput("a keep.md line cannot contain a line break")
        items = self._items()
        index = max(0, min(index, len(items)))
        newline = self.newline
        if index == len(items):
            if items and items[-1][1] == "":
                items[-1] = (items[-1][0], newline)
                items.append((text, ""))
            else:
                items.append((text, newline))
        else:
            items.insert(index, (text, newline))
        return self._with_lines(items)

    def append_line(self, text: str) -> KeepDoc:
        """A copy with ``text`` added after the last non-blank line (trailing blank lines stay last)."""
        index = len(self.lines)
        while index > 0 and self.lines[index - 1].kind == "blank" and self.lines[index - 1].ending:
            index -= 1
        return self.insert_line(index, text)

    def append(self, fact: str) -> KeepDoc:
        """A copy with ``fact`` added as a canonical ``- <fact>`` entry."""
        return self.append_line(canonical_line(fact))

    def replace_entry(self, target: str | int, fact: str) -> KeepDoc:
        """A copy with one entry's line rewritten as ``- <fact>``, in place, keeping its line ending."""
        entry = self.find(target)
        items = self._items()
        items[entry.line] = (canonical_line(fact), items[entry.line][1])
        return self._with_lines(items)

    def remove_entry(self, target: str | int) -> KeepDoc:
        """A copy without one entry's line. Removing the last line of a file without a
        final newline leaves the new last line without one too."""
        return self.remove_line(self.find(target).line)

    def remove_line(self, index: int) -> KeepDoc:
        """A copy without physical line ``index`` (0-based), keeping "no final newline" as it was."""
        items = self._items()
        if not 0 <= index < len(items):
            raise NotFound(f"{self.path or 'keep.md'} has no line {index + 1}")
        removed = items.pop(index)
        if removed[1] == "" and items and index == len(items):
            items[-1] = (items[-1][0], "")
        return self._with_lines(items)

    def with_stamp(self, path: str, stamp: fsio.Stamp) -> KeepDoc:
        """This document labelled as what ``path`` holds with ``stamp`` (after a write)."""
        return replace(self, path=path, stamp=stamp)

    def to_obj(self) -> dict[str, Any]:
        """Entries, flagged lines and counts, for ``--json`` and the window."""
        return {
            "path": self.path,
            "exists": self.stamp.exists,
            "bom": self.bom,
            "final_newline": self.has_final_newline,
            "entries": [e.to_obj() for e in self.entries],
            "flagged": [line.to_obj() for line in self.flagged],
            "counts": self.counts(),
        }
