"""The documents editor's view of a Gemini CLI launch folder: the files that load, and how.

The list is Gemini's own order: the system instruction's files (the global files, then the private
``MEMORY.md`` or legacy files), then the first user turn's (extension files, sorted; project files,
sorted by absolute path — so ``Alpha/GEMINI.md`` comes before ``GEMINI.md``), each file's imports
indented under it; then the files that load later (below the launch folder, when a tool touches their
folder), and the ones that exist but never load, each with its reason (above the project root, the
folder not trusted, hidden by ``MEMORY.md``, a note read on demand, the same file under another path).
A missing global ``GEMINI.md``, private ``MEMORY.md`` or launch-folder ``GEMINI.md`` is listed as new:
saving creates it (the private folder claimed as Gemini claims it, :func:`~.writes.ensure_private`).

Every document says where it goes and what it costs (bytes on disk, bytes sent with every request, a
token estimate) and lists each ``@word`` Gemini will treat as an import with exactly what it becomes
(:meth:`GeminiDocuments.marks` also tints them in the editor). There is no size limit to meter: the
meter shows this file's share of what every request carries. Saves present the stamp read, keep the
file's BOM and line endings, and go through :mod:`.writes`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from keepgui.backends.gemini import writes
from keepgui.backends.gemini.context import TAKES_EFFECT, block, size_of, tokens_of
from keepgui.backends.gemini.discovery import (
    EMPTY,
    EXTENSION,
    GLOBAL,
    LATER,
    LOADED,
    PRIVATE,
    PROJECT,
    MemoryFile,
    project_root,
    reader,
)
from keepgui.backends.gemini.imports import CODE, IMPORTED, ImportToken, describe_token, process
from keepgui.backends.gemini.layout import DEFAULT_NAME, MEMORY_INDEX
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.source import Budget, BudgetSegment, Change, Document, TextMark, Written, nothing_written

if TYPE_CHECKING:
    from keepgui.backends.gemini.bank import GeminiBank

BOM = b"\xef\xbb\xbf"
AGENT = "Gemini CLI"
TIER_WORD = {GLOBAL: "global", PRIVATE: "private memory", EXTENSION: "extension", PROJECT: "project"}
WHERE = {
    GLOBAL: "the system instruction",
    PRIVATE: "the system instruction",
    EXTENSION: "the first message",
    PROJECT: "the first message",
}


@dataclass(frozen=True)
class Entry:
    """One document of the list: ``state`` is ``loaded``, ``empty``, ``later``, ``never``, ``new`` or
    ``import`` (a file another one imports: ``parent``, ``depth``, ``token``)."""

    path: str
    tier: str
    state: str
    reason: str = ""
    parent: str | None = None
    depth: int = 0
    token: ImportToken | None = None
    sent: int = 0
    extension: str = ""


@dataclass(frozen=True)
class FileStyle:
    """What a Document carries as ``raw``: its entry and how its file is written (BOM, CRLF)."""

    entry: Entry
    bom: bool
    crlf: bool


def _decode(data: bytes | None) -> tuple[str, bool, bool]:
    if data is None:
        return "", False, False
    bom = data.startswith(BOM)
    text = (data[3:] if bom else data).decode("utf-8", errors="surrogateescape")
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    return (text.replace("\r\n", "\n") if crlf else text), bom, crlf


def _encode(text: str, bom: bool, crlf: bool) -> bytes:
    if crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return (BOM if bom else b"") + text.encode("utf-8", errors="surrogateescape")


def _imports(parent: MemoryFile) -> list[Entry]:
    out: list[Entry] = []

    def walk(tokens: Sequence[ImportToken], owner: str, depth: int) -> None:
        for token in tokens:
            if token.outcome == IMPORTED and token.target:
                out.append(Entry(token.target, parent.tier, "import", "", owner, depth, token))
                walk(token.children, token.target, depth + 1)

    if parent.processed is not None:
        walk(parent.processed.tokens, parent.path, 1)
    return out


def listing(bank: GeminiBank) -> list[Entry]:
    """The documents of the bank's launch folder, in the order the editor lists them."""
    found = bank.discovery()
    out: list[Entry] = []
    listed: set[str] = set()

    def add(entry: Entry) -> None:
        if entry.path not in listed or entry.state == "import":
            listed.add(entry.path)
            out.append(entry)

    for tier in (GLOBAL, PRIVATE, EXTENSION, PROJECT):
        for f in found.tier(tier):
            sent = size_of(block(found.env.paths.shown(f.path), f.processed.text)) if f.processed is not None else 0
            add(Entry(f.path, tier, f.state, f.reason, sent=sent, extension=f.extension))
            for imported in _imports(f):
                add(imported)
    for path, tier in bank.new_documents(found):
        add(Entry(path, tier, "new"))
    for f in found.later():
        add(Entry(f.path, f.tier, LATER, f.reason))
    for f in found.never():
        if os.path.isfile(f.path):
            add(Entry(f.path, f.tier, "never", f.reason))
    return out


def _where(path: str, cwd: str | None, home: str, root: str | None = None) -> str:
    """A file as the list names it: relative to the launch folder when inside its project, else ``~/…``."""
    top = root or cwd
    if cwd and top and path.startswith(top.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, cwd)
    if home and path.startswith(home.rstrip(os.sep) + os.sep):
        return "~" + path[len(home) :]
    return path


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1024:,.1f} KiB"


class GeminiDocuments:
    """A launch folder's documents as the editor sees them (see the module docstring)."""

    creatable = False
    why_not_create = (
        "Gemini CLI reads its memory files where it looks for them; keepgui lists each one a session would "
        "read (a missing global GEMINI.md, MEMORY.md or project GEMINI.md as new: saving creates it)"
    )
    empty_deletes = False
    previews_drafts = False
    names = None

    def __init__(self, bank: GeminiBank) -> None:
        self.bank = bank

    def _entries(self) -> list[Entry]:
        entries = self.bank.documents_cache
        if entries is None:
            entries = self.bank.documents_cache = listing(self.bank)
        return entries

    def _entry(self, name: str) -> Entry:
        for entry in self._entries():
            if entry.path == name:
                return entry
        raise NotFound(f"{name} is not one of the files a Gemini CLI session in {self.bank.title} reads")

    def _root(self) -> str | None:
        found = self.bank.discovery()
        return project_root(found.cwd, found.settings.boundary_markers)

    def _title(self, entry: Entry) -> str:
        where = _where(entry.path, self.bank.cwd, self.bank.env.home, self._root())
        if entry.state == "import":
            return f"{'    ' * (entry.depth - 1)}  ↳ {where} · @import"
        word = {
            LOADED: "",
            EMPTY: ", empty",
            LATER: ", loads later",
            "never": ", not loaded",
            "new": ", new",
        }[entry.state]
        kind = f"extension {entry.extension}" if entry.tier == EXTENSION and entry.extension else TIER_WORD[entry.tier]
        return f"{where} · {kind}{word}"

    def list(self) -> builtins.list[tuple[str, str]]:
        """``(name, title)`` in Gemini's order; a name is the file's path."""
        seen: set[str] = set()
        out = []
        for entry in self._entries():
            if entry.path in seen:
                continue  # a file imported twice is one document (listed where it first appears)
            seen.add(entry.path)
            out.append((entry.path, self._title(entry)))
        return out

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of every document that exists."""
        out = []
        for name, _title in self.list():
            text, _stamp = self.current_of(name)
            if text is not None:
                out.append((name, text))
        return out

    def current_of(self, path: str) -> tuple[str | None, fsio.Stamp]:
        """A file's text as the editor shows it (None when missing), and its stamp."""
        try:
            data, stamp = fsio.read_stamped(path, limit=writes.FILE_LIMIT)
        except (OSError, KeepguiError):
            return None, fsio.Stamp.missing()
        return (None if data is None else _decode(data)[0]), stamp

    def read(self, name: str) -> Document:
        """Open one document with where it goes, what it costs and what its ``@`` words become."""
        entry = self._entry(name)
        data, stamp = fsio.read_stamped(entry.path, limit=writes.FILE_LIMIT)
        text, bom, crlf = _decode(data)
        read_only = ""
        if data is not None:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                read_only = (
                    f"byte {exc.start} is not valid UTF-8: keepgui would lose it on saving (Gemini reads it as �)"
                )
        managed = AGENT if entry.tier in (GLOBAL, PRIVATE) and entry.state != "import" else ""
        return Document(
            entry.path,
            self._title(entry),
            entry.path,
            text,
            stamp,
            managed_by=managed,
            status=self._status(entry, data),
            notices=tuple(self._notices(entry, text)),
            raw=FileStyle(entry, bom, crlf),
            read_only=read_only,
        )

    def _status(self, entry: Entry, data: bytes | None) -> str:
        size = len(data or b"")
        if entry.state in (LOADED, EMPTY):
            if entry.state == EMPTY:
                return f"Loads into {WHERE[entry.tier]} but is empty after trimming: no text is sent · {_size(size)}"
            return (
                f"Loads into {WHERE[entry.tier]} of every request ({TIER_WORD[entry.tier]}) · {_size(size)} on disk · "
                f"{_size(entry.sent)} sent ≈ {tokens_of(entry.sent):,} tokens, with no limit"
            )
        if entry.state == "import":
            return f"Imported by {entry.parent}: its text is inserted there · {_size(size)}"
        if entry.state == "new":
            return "Does not exist yet: Gemini CLI would read it here. Saving creates it."
        if entry.state == LATER:
            return f"Not at start: {entry.reason}"
        return f"Not loaded: {entry.reason}"

    def _notices(self, entry: Entry, text: str) -> builtins.list[str]:
        out = []
        tokens = self._tokens(entry, text)
        flagged = [t for t in tokens if t.outcome != CODE]
        if flagged:
            out.append(f"{len(flagged)} @ word{'s' if len(flagged) != 1 else ''} Gemini treats as imports:")
            out.extend("  " + describe_token(t) for t in flagged)
        if entry.tier == PROJECT and entry.state in (LOADED, EMPTY, "new"):
            trust = self.bank.discovery().trust
            if trust.trusted is not True:
                out.append(f"Loads only in a trusted folder: {trust.why}.")
        if entry.tier == PRIVATE and entry.state in (LOADED, EMPTY, "new"):
            out.append(
                f"Private to you and this launch folder ({self.bank.discovery().private.folder}); not in any repository."
            )
            out.append(f"Notes beside it are read on demand only: point to them from {MEMORY_INDEX}.")
        out.append(TAKES_EFFECT)
        return out

    def _tokens(self, entry: Entry, text: str) -> builtins.list[ImportToken]:
        if entry.state == "new" and not text:
            return []
        settings = self.bank.discovery().settings
        paths = self.bank.env.paths
        done = process(
            text, entry.path, settings.import_format, settings.boundary_markers, reader(paths), paths.resolved
        )
        return list(done.tokens)

    def marks(self, name: str, text: str) -> builtins.list[TextMark]:
        """The ``@`` words of the edited ``text`` Gemini will treat as imports, each with what it becomes."""
        try:
            entry = self._entry(name)
        except NotFound:
            return []
        out = []
        for token in self._tokens(entry, text):
            if token.outcome == CODE:
                continue
            level = "info" if token.outcome == IMPORTED else "warning"
            out.append(TextMark(token.start, token.end, level, describe_token(token)))
        return out

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc``."""
        return self.current_of(doc.path)

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """Before saving the global file or private memory: the agent rewrites them from its own copy."""
        if not doc.managed_by:
            return []
        out = [
            (
                f"Gemini CLI's agent edits {os.path.basename(doc.path)} itself, writing the copy its session loaded "
                "at start over the file, with no lock. keepgui saves only over exactly the version you opened, but a "
                "session already running may later write its older copy over your edit: keepgui would then offer a "
                "review of what was lost."
            )
        ]
        style = doc.raw
        if isinstance(style, FileStyle) and style.entry.state == "new" and os.path.basename(doc.path) == MEMORY_INDEX:
            hidden = [e.path for e in self._entries() if e.tier == PRIVATE and e.state in (LOADED, EMPTY)]
            if hidden:
                out.append(f"Creating {MEMORY_INDEX} hides {', '.join(hidden)}: Gemini stops loading it.")
        return out

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` over exactly the version of ``doc`` that was read."""
        if doc.read_only:
            raise ReadOnly(f"{doc.path}: {doc.read_only}")
        if not isinstance(doc.raw, FileStyle):
            raise InvalidInput(f"{doc.title} is not a document of a Gemini CLI folder")
        style = doc.raw
        bank = self.bank
        if not doc.stamp.exists and not text.strip():
            return nothing_written(bank.source.path, bank.name, f"Save {doc.title}", "nothing to save: it is empty")
        label = f"Edit {_where(doc.path, bank.cwd, bank.env.home)}"
        data = _encode(text, style.bom, style.crlf)
        return bank.write(lambda: bank.save_document(doc.path, data, doc.stamp, label), label, documents={doc.name})

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document | None:
        """``doc`` as the disk version a person was shown (None: it changed again)."""
        _text, now = self.current_of(doc.path)
        return doc.with_disk(on_disk or "", stamp) if now.same_content(stamp) else None

    def create(self, name: str) -> Change:
        """Refused: see :attr:`why_not_create`."""
        raise ReadOnly(self.why_not_create)

    def rename_document(self, doc: Document, new: str) -> Change:
        """Refused: see :attr:`why_not_create`."""
        raise ReadOnly(self.why_not_create)

    def delete(self, doc: Document) -> Change:
        """Refused: see :attr:`why_not_create`."""
        raise ReadOnly(self.why_not_create)

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget:
        """This file's share of the bytes every request carries (Gemini has no limit to meter)."""
        entries = [e for e in self._entries() if e.state in (LOADED, EMPTY)]
        segments = []
        start = 0
        current: str | None = None
        for entry in entries:
            sent = entry.sent
            if entry.path == name:
                current = name
                paths = self.bank.env.paths
                done = process(text, name, *self._format(), reader(paths), paths.resolved)
                sent = size_of(block(paths.shown(name), done.text))
            segments.append(BudgetSegment(entry.path, start, sent, sent, "fit"))
            start += sent
        total = max(start, 1)
        mine = next((s for s in segments if s.name == name), None)
        if mine is not None:
            sentence = (
                f"{_size(mine.sent)} of this file sent ≈ {tokens_of(mine.sent):,} tokens, with every request of "
                "the session (Gemini cuts nothing)"
            )
        else:
            sentence = "This file is not sent at the start of a session."
        summary = f"Every request carries {_size(start)} of memory ≈ {tokens_of(start):,} tokens in all ({len(segments)} files)."
        return Budget(total, tuple(segments), current, sentence, summary)

    def _format(self) -> tuple[str, tuple[str, ...]]:
        settings = self.bank.discovery().settings
        return settings.import_format, settings.boundary_markers

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Which documents the changed (absolute) paths are."""
        wanted = {os.path.normpath(p) for p in paths}
        return {e.path for e in self._entries() if os.path.normpath(e.path) in wanted}


def default_new(
    gemini_dir: str, names: Sequence[str], cwd: str | None, memory_dir: str
) -> builtins.list[tuple[str, str]]:
    """The documents listed as new when missing: the first global file, ``MEMORY.md``, the launch folder's
    ``GEMINI.md`` (its first configured name)."""
    out = [(os.path.join(gemini_dir, names[0] if names else DEFAULT_NAME), GLOBAL)]
    out.append((os.path.join(memory_dir, MEMORY_INDEX), PRIVATE))
    if cwd:
        out.append((os.path.join(cwd, names[0] if names else DEFAULT_NAME), PROJECT))
    return out


def written(files: Sequence[tuple[str, fsio.Stamp | None]]) -> tuple[Written, ...]:
    """The seam's Written records of a write."""
    return tuple(Written(p, s) for p, s in files)
