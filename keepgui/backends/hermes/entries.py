"""MEMORY.md and USER.md as Hermes reads and writes them: entries, counts, the prompt block (no Qt).

A memory file is a list of entries joined by ``"\\n§\\n"``. Hermes decodes it as strict UTF-8
(a BOM stays, as U+FEFF), translates ``\\r\\n`` and a lone ``\\r`` to ``\\n`` (universal
newlines), splits on the exact separator, strips each piece with ``str.strip()``, drops the empty
ones and de-duplicates them (first kept). It writes the list back joined by the separator: UTF-8,
no BOM, LF only, no trailing newline, an empty list as an empty file.

Its limits are code points of the joined list (2,200 for MEMORY.md, 1,375 for USER.md by default)
and bind its own tool writes only: loading never cuts anything. Three counts exist (see
:class:`FileState`): the one the prompt header shows (after blocked entries are replaced by their
placeholder), the one the tool enforces (the raw entries), and each entry's own length, which the
tool's drift guard compares with the whole limit.

Facts from hermes-agent 0.19.0 (``tools/memory_tool.py``), checked by running it (see
``tests/backends/hermes/test_hermes_compare.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from keepgui.backends.hermes.threats import Finding, placeholder, scan

SEPARATOR = "\n§\n"
"""What joins two entries on disk and in the prompt."""

RULE = "═" * 46
"""The line above and below a block's header."""

MEMORY = "memory"
USER = "user"
TARGETS = (MEMORY, USER)
"""Hermes's names of the two stores (the ``target`` of its memory tool)."""

FILE_NAMES = {MEMORY: "MEMORY.md", USER: "USER.md"}
"""The file of each store under ``<home>/memories/``."""

LABELS = {MEMORY: "MEMORY (your personal notes)", USER: "USER PROFILE (who the user is)"}
"""The header label of each store's prompt block."""

SHORT = {MEMORY: "MEMORY", USER: "USER"}
"""How the sidebar names each store."""

DEFAULT_LIMITS = {MEMORY: 2200, USER: 1375}
"""Hermes's default limits (``memory.memory_char_limit``, ``memory.user_char_limit``)."""


class Undecodable(ValueError):
    """A memory file is not valid UTF-8: Hermes then loads no memory block at all for the session."""

    def __init__(self, name: str, offset: int) -> None:
        super().__init__(
            f"{name} is not valid UTF-8 (byte {offset:,}): Hermes loads no memory at all — neither "
            "MEMORY.md nor USER.md — while this file is invalid. Fix or remove the bad bytes."
        )
        self.name = name
        self.offset = offset


def decode(data: bytes | None, name: str = "memory file") -> str:
    """The text Hermes reads from ``data`` (None: a missing file, ""): strict UTF-8, BOM kept,
    universal newlines. Raises :class:`Undecodable`."""
    if data is None:
        return ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Undecodable(name, exc.start) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def pieces(text: str) -> list[str]:
    """The stripped, non-empty pieces of ``text`` in file order, duplicates kept (what the drift guard
    compares); [] for blank text."""
    if not text.strip():
        return []
    return [p for p in (part.strip() for part in text.split(SEPARATOR)) if p]


def parse(text: str) -> list[str]:
    """The entries of decoded ``text``: stripped, non-empty, de-duplicated (first kept), in order."""
    return list(dict.fromkeys(pieces(text)))


def serialize(entries: Sequence[str]) -> bytes:
    """The exact bytes Hermes writes for ``entries`` (already stripped and unique)."""
    return SEPARATOR.join(entries).encode("utf-8")


def size(entries: Sequence[str]) -> int:
    """Code points of the entries joined by the separator (0 for none): what limits are measured in."""
    return len(SEPARATOR.join(entries)) if entries else 0


def percent(current: int, limit: int) -> int:
    """The header's and the tool's percentage: float division truncated, capped at 100, 0 for no limit
    (the float matters: 29/100 gives 28, as in Hermes)."""
    return min(100, int((current / limit) * 100)) if limit > 0 else 0


def usage(current: int, limit: int) -> str:
    """``"6% — 141/2,200 chars"`` (the header's bracket and the tool's ``usage``)."""
    return f"{percent(current, limit)}% — {current:,}/{limit:,} chars"


def drift(text: str, limit: int) -> str:
    """Why Hermes's drift guard would refuse a ``replace``/``remove`` on a file holding ``text`` (decoded),
    or "": padding or blank entries that would not round-trip, or one entry longer than ``limit``."""
    if not text.strip():
        return ""
    found = pieces(text)
    if text.strip() != SEPARATOR.join(found):
        return "blank entries or spaces around entries or separators would not survive Hermes's rewrite"
    longest = max((len(p) for p in found), default=0)
    if longest > limit:
        return f"one entry is {longest:,} characters, longer than the whole limit of {limit:,}"
    return ""


@dataclass(frozen=True)
class Entry:
    """One entry of a store: its text, its place, and what the injection scan found in it.

    ``findings`` are the scan's ids in Hermes's order; ``shown`` is what the prompt holds instead of
    the entry (the entry itself, or its ``[BLOCKED: …]`` placeholder); ``unstable`` marks a
    placeholder whose wording varies between Hermes processes (two different invisible characters).
    """

    target: str
    index: int
    text: str
    findings: tuple[str, ...] = ()
    shown: str = ""
    unstable: bool = False

    @property
    def blocked(self) -> bool:
        """True when the prompt shows a placeholder instead of this entry."""
        return bool(self.findings)

    @property
    def chars(self) -> int:
        """Its length in code points."""
        return len(self.text)


def _entry(target: str, index: int, text: str) -> Entry:
    if text.startswith("[BLOCKED:"):
        return Entry(target, index, text, (), text)  # passes through unscanned
    found: Finding = scan(text)
    if not found.ids:
        return Entry(target, index, text, (), text)
    return Entry(target, index, text, found.ids, placeholder(FILE_NAMES[target], found.ids), found.unstable)


@dataclass(frozen=True)
class FileState:
    """One store as read: its entries, limit, counts, and whether it can be read at all.

    ``raw`` is the file's decoded text ("" when missing or undecodable); ``problem`` why it cannot
    be read (an undecodable file); ``drift`` why Hermes's own replace/remove would refuse it.
    """

    target: str
    limit: int
    entries: tuple[Entry, ...] = ()
    raw: str = ""
    exists: bool = False
    problem: str = ""
    drift: str = ""
    undecodable: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        """MEMORY.md or USER.md."""
        return FILE_NAMES[self.target]

    @property
    def texts(self) -> list[str]:
        """The raw entry texts."""
        return [e.text for e in self.entries]

    @property
    def tool_count(self) -> int:
        """The count Hermes's tool enforces and reports (the raw entries)."""
        return size(self.texts)

    @property
    def header_count(self) -> int:
        """The count the prompt header shows (blocked entries counted as their placeholder)."""
        return size([e.shown for e in self.entries])

    @property
    def over(self) -> bool:
        """True when the tool count is over the limit: Hermes refuses its own adds until it shrinks."""
        return self.tool_count > self.limit

    @property
    def blocked(self) -> tuple[Entry, ...]:
        """The entries the prompt shows as a placeholder."""
        return tuple(e for e in self.entries if e.blocked)

    def block(self) -> str:
        """The store's prompt block exactly (header, rules, entries), or "" when it has no entries."""
        if not self.entries:
            return ""
        content = SEPARATOR.join(e.shown for e in self.entries)
        header = f"{LABELS[self.target]} [{usage(len(content), self.limit)}]"
        return f"{RULE}\n{header}\n{RULE}\n{content}"

    def meter(self) -> str:
        """``"1,964 / 2,200 chars"`` (the tool count: what Hermes enforces)."""
        return f"{self.tool_count:,} / {self.limit:,} chars"


def read_state(target: str, data: bytes | None, limit: int) -> FileState:
    """The store ``target`` from the file's bytes (None: missing)."""
    name = FILE_NAMES[target]
    try:
        text = decode(data, name)
    except Undecodable as exc:
        return FileState(target, limit, (), "", True, str(exc), "", True)
    entries = tuple(_entry(target, i, t) for i, t in enumerate(parse(text)))
    return FileState(target, limit, entries, text, data is not None, "", drift(text, limit))
