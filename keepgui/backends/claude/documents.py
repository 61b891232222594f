"""The documents editor's view of a Claude Code project: its instruction files and ``MEMORY.md``.

The list is what a session launched in the project loads, in the CLI's order
(:func:`~keepgui.backends.claude.instructions.collect`): the managed file
(read-only), the user ``CLAUDE.md`` and rules, every project ``CLAUDE.md``,
``.claude/CLAUDE.md`` and rule from the top folder down, ``CLAUDE.local.md``,
each file's ``@imports`` indented under it; then the files that load later
(rules with ``paths:``, ``CLAUDE.md`` files below the launch folder), the
files that exist but do not load (and why), and ``MEMORY.md`` last. A user or
project ``CLAUDE.md`` that does not exist is listed as new, as ``/memory``
lists it: saving creates it.

Each document says whether it loads and as what, the imports it makes (each
resolved to its file, loaded or why not), who imports it, and what to know
before saving (shared with the team, imported elsewhere, a link). The budget
meter shows ``MEMORY.md`` against the 200 lines / 25,000 UTF-16 units a
session loads (the cut drawn in the editor), and any other file against the
4 MiB beyond which the CLI skips it. Saves present the stamp read and go
through :mod:`.writes` (refused when the file changed since: the three-way
view); line endings and a byte-order mark are kept as the file had them.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from keepgui.backends.claude import writes
from keepgui.backends.claude.context import TAKES_EFFECT
from keepgui.backends.claude.instructions import (
    AUTO_MEMORY,
    FILE_LIMIT,
    LABELS,
    LOCAL,
    MANAGED,
    PROJECT,
    USER,
    InstructionFile,
    collect,
    nested_files,
)
from keepgui.backends.claude.jstext import utf16_index
from keepgui.backends.claude.layout import approved_external, git_roots, load_settings
from keepgui.backends.claude.memory import LINE_LIMIT, SIZE_LIMIT, Prepared, cut_index, parse_link_line
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.source import Budget, BudgetSegment, Change, Document, Written, nothing_written

if TYPE_CHECKING:
    from keepgui.backends.claude.bank import ClaudeProject

BOM = b"\xef\xbb\xbf"
MANAGED_READ_ONLY = "managed by your organisation's policy; keepgui does not change it"
KIND_WORD = {MANAGED: "managed", USER: "user", PROJECT: "project", LOCAL: "local", AUTO_MEMORY: "auto memory"}
INDEX_WRITER = "Claude Code"
"""Who rewrites ``MEMORY.md`` on its own (the agent, its background extraction and Auto Dream)."""


@dataclass(frozen=True)
class Entry:
    """One document of the list: a file a session reads (or would), with where it stands.

    ``state`` is ``loaded``, ``later``, ``skipped`` (exists, does not load:
    ``reason``), ``new`` (does not exist; saving creates it) or ``index``;
    ``imports`` are the ``@imports`` it makes, each as the CLI resolved it.
    """

    path: str
    kind: str
    role: str
    state: str
    reason: str = ""
    parent: str | None = None
    line: int | None = None
    depth: int = 0
    globs: tuple[str, ...] = ()
    size: int = 0
    units: int = 0
    imports: tuple[InstructionFile, ...] = ()


@dataclass(frozen=True)
class FileStyle:
    """What a Document of this backend carries as its ``raw``: its entry, and how its file is written
    (a byte-order mark, CRLF line endings), so a save writes the edited text back in the same style."""

    entry: Entry
    bom: bool
    crlf: bool


def _style(doc: Document) -> FileStyle:
    """The entry and file style behind an editor's ``doc`` (every Document this backend hands out carries one)."""
    if not isinstance(doc.raw, FileStyle):
        raise InvalidInput(f"{doc.title} is not a document of a Claude Code project")
    return doc.raw


def _collected(bank: ClaudeProject, with_nested: bool) -> tuple[list[InstructionFile], str]:
    """The instruction files of a session in the project (user and managed ones only when the project
    folder is unknown), and the folder paths are shown relative to."""
    env = bank.env
    project = bank.project if bank.project and os.path.isdir(bank.project) else None
    cwd = os.path.realpath(project) if project else env.home
    roots = git_roots(cwd)
    settings = load_settings(env, cwd)
    files = collect(env, cwd, settings, roots, approved=approved_external(env, roots.root or cwd))
    if project is None:
        return [f for f in files if f.kind in (MANAGED, USER)], ""
    if with_nested:
        files.extend(nested_files(cwd))
    return files, cwd


def listing(bank: ClaudeProject, with_nested: bool = True) -> list[Entry]:
    """The documents of a project's sessions, in the order the editor lists them (see the module docstring)."""
    files, cwd = _collected(bank, with_nested)
    imports: dict[str, list[InstructionFile]] = {}
    for f in files:
        if f.parent is not None:
            imports.setdefault(f.parent, []).append(f)
    order = {"loaded": 0, "later": 1, "skipped": 2}
    out: list[Entry] = []
    seen: set[str] = set()
    missing_ok = {os.path.join(bank.env.config_dir, "CLAUDE.md")} | ({os.path.join(cwd, "CLAUDE.md")} if cwd else set())
    for rank in (0, 1, 2):
        for f in files:
            if f.role == "inline" or f.path in seen:
                continue
            state = f.status
            if state == "skipped" and f.reason == "missing":
                if f.parent is None and f.path in missing_ok and rank == 2:
                    seen.add(f.path)
                    out.append(Entry(f.path, f.kind, f.role, "new"))
                continue
            if order.get(state) != rank or (state == "skipped" and not os.path.isfile(f.path)):
                continue
            if state == "skipped" and f.reason == "already loaded earlier":
                continue
            seen.add(f.path)
            out.append(
                Entry(
                    f.path,
                    f.kind,
                    f.role,
                    state,
                    f.reason,
                    f.parent,
                    f.line,
                    f.depth if state == "loaded" else 0,
                    f.globs,
                    f.size,
                    f.units,
                    tuple(imports.get(f.path, ())),
                )
            )
    out.append(Entry(bank.index_path, AUTO_MEMORY, "memory-index", "index"))
    return out


def refresh_listing(bank: ClaudeProject) -> frozenset[str]:
    """Read the list again (off the GUI thread, during a load); the names when it changed, else none."""
    try:
        entries = listing(bank)
    except (KeepguiError, OSError):
        return frozenset()
    before, bank.documents_cache = bank.documents_cache, entries
    if before is None or [e.path for e in before] == [e.path for e in entries]:
        return frozenset()
    return frozenset(e.path for e in entries) | frozenset(e.path for e in before)


def _where(path: str, cwd: str | None, home: str) -> str:
    if cwd and path.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, cwd)
    if path.startswith(home.rstrip(os.sep) + os.sep):
        return "~" + path[len(home) :]
    return path


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1024:,.1f} KiB"


def _decode(data: bytes | None) -> tuple[str, bool, bool]:
    """``(text as the editor shows it, had a BOM, had CRLF line endings throughout)``."""
    if data is None:
        return "", False, False
    bom = data.startswith(BOM)
    text = (data[3:] if bom else data).decode("utf-8", errors="surrogateescape")
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    return (text.replace("\r\n", "\n") if crlf else text), bom, crlf


def _encode(text: str, bom: bool, crlf: bool) -> bytes:
    """The bytes of an edited text in the file's own style (its BOM and line endings kept)."""
    if crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return (BOM if bom else b"") + text.encode("utf-8", errors="surrogateescape")


class ClaudeDocuments:
    """A project's documents as the editor sees them (see the module docstring)."""

    creatable = False
    why_not_create = (
        "Claude Code reads its instruction files where it looks for them; keepgui lists each one a session "
        "would read (a missing CLAUDE.md as new: saving creates it)"
    )
    empty_deletes = False
    previews_drafts = False
    names = None

    def __init__(self, bank: ClaudeProject) -> None:
        self.bank = bank

    def _entries(self) -> list[Entry]:
        entries = self.bank.documents_cache
        if entries is None:
            # before the first load: the list without the walk below the project (the load adds it)
            entries = self.bank.documents_cache = listing(self.bank, with_nested=False)
        return entries

    def _entry(self, name: str) -> Entry:
        for entry in self._entries():
            if entry.path == name:
                return entry
        raise NotFound(f"{name} is not one of the files a Claude Code session in {self.bank.title} reads")

    def _cwd(self) -> str | None:
        project = self.bank.project
        return os.path.realpath(project) if project and os.path.isdir(project) else None

    def _title(self, entry: Entry, cwd: str | None) -> str:
        where = _where(entry.path, cwd, self.bank.env.home)
        if entry.state == "index":
            return f"{os.path.basename(entry.path)} · auto memory index"
        word = {"loaded": "", "later": ", loads later", "skipped": ", not loaded", "new": ", new"}[entry.state]
        kind = "@import" if entry.parent else KIND_WORD[entry.kind]
        lead = "    " * max(0, entry.depth - 1) + "  ↳ " if entry.parent and entry.state == "loaded" else ""
        return f"{lead}{where} · {kind}{word}"

    def list(self) -> list[tuple[str, str]]:
        """``(name, title)`` in load order (see the module docstring); a name is the file's path."""
        cwd = self._cwd()  # once: resolving the project's path is a walk of its links
        return [(e.path, self._title(e, cwd)) for e in self._entries()]

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of every document that exists."""
        out = []
        for entry in self._entries():
            text, _stamp = self.current_of(entry.path)
            if text is not None:
                out.append((entry.path, text))
        return out

    def current_of(self, path: str) -> tuple[str | None, fsio.Stamp]:
        """A file's text as the editor shows it (None when missing), and its stamp."""
        try:
            data, stamp = fsio.read_stamped(path, limit=16 * 1024 * 1024)
        except (OSError, KeepguiError):
            return None, fsio.Stamp.missing()
        return (None if data is None else _decode(data)[0]), stamp

    def read(self, name: str) -> Document:
        """Open one document with what it is, where it stands and what to know before saving."""
        entry = self._entry(name)
        data, stamp = fsio.read_stamped(entry.path, limit=16 * 1024 * 1024)
        text, bom, crlf = _decode(data)
        read_only = ""
        if entry.kind == MANAGED:
            read_only = MANAGED_READ_ONLY
        elif entry.state == "index":
            read_only = writes.lock_holder(self.bank.memory_dir) or ""
        return Document(
            entry.path,
            self._title(entry, self._cwd()),
            entry.path,
            text,
            stamp,
            managed_by=INDEX_WRITER if entry.state == "index" else "",
            status=self._status(entry, data),
            notices=tuple(self._notices(entry)),
            raw=FileStyle(entry, bom, crlf),
            read_only=read_only,
        )

    def _status(self, entry: Entry, data: bytes | None) -> str:
        size = len(data or b"")
        if entry.state == "index":
            if data is None:
                return "MEMORY.md does not exist yet: Claude Code creates it with its first memory (saving creates it)."
            return (
                f"The auto memory index ({_size(size)}): the first {LINE_LIMIT} lines or {SIZE_LIMIT:,} characters "
                "load at the start of every session; Claude Code (the agent and Auto Dream) rewrites it on its own."
            )
        label = LABELS[entry.kind]
        if entry.state == "loaded":
            via = f", imported by {entry.parent} (line {entry.line})" if entry.parent else ""
            return (
                f"Loads at the start of every session as “{label}”{via} · {_size(size)} · "
                f"{entry.units:,} characters in the reminder"
            )
        if entry.state == "later":
            globs = f" (paths: {', '.join(entry.globs)})" if entry.globs else ""
            return f"Loads later: {entry.reason}{globs}"
        if entry.state == "new":
            return "Does not exist yet: Claude Code would read it here. Saving creates it."
        return f"Not loaded: {entry.reason}"

    def _notices(self, entry: Entry) -> builtins.list[str]:
        out = []
        for made in entry.imports:
            state = "loaded" if made.loaded else made.reason
            out.append(f"@import, line {made.line}: {made.path} — {state}")
        if entry.parent:
            out.append(f"Imported by {entry.parent}: an edit changes what every file importing it says.")
        if entry.kind == PROJECT and entry.state != "new":
            out.append("Checked into the repository: your edit is shared with everyone who works on it.")
        if os.path.islink(entry.path):
            out.append(f"A link to {os.path.realpath(entry.path)}: the target is saved and the link kept.")
        out.append(TAKES_EFFECT)
        return out

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc`` (as the editor would show it)."""
        return self.current_of(doc.path)

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """Before saving ``MEMORY.md``: Claude Code rewrites it on its own, and a session keeps what it loaded."""
        if not doc.managed_by:
            return []
        return [
            (
                f"Claude Code (the agent, its background extraction and Auto Dream) rewrites "
                f"{os.path.basename(doc.path)} on its own, with no lock: keepgui saves only over exactly the "
                "version you opened, and refuses when it changed since."
            ),
            TAKES_EFFECT,
        ]

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` over exactly the version of ``doc`` that was read; ``result`` is the document read back."""
        if doc.read_only:
            raise ReadOnly(f"{doc.path}: {doc.read_only}")
        style = _style(doc)
        bank = self.bank
        if not doc.stamp.exists and not text.strip():
            return nothing_written(bank.source.path, bank.name, f"Save {doc.title}", "nothing to save: it is empty")
        data = _encode(text, style.bom, style.crlf)
        label = f"Edit {_where(doc.path, self._cwd(), bank.env.home)}"
        if style.entry.state == "index":
            change = bank.write(
                lambda: writes.save_file(bank.memory_dir, doc.path, data, doc.stamp, history=bank.history, text=label),
                label,
            )
            return replace(change, documents=frozenset({doc.name}), result=self.read(doc.name))
        done = writes.save_instruction(
            doc.path, data, doc.stamp, managed_dir=bank.env.managed_dir, history=bank.history
        )
        return self._instruction_change(doc.name, done, label)

    def _instruction_change(self, name: str, done: writes.MemoryChange, label: str) -> Change:
        """A save (or its undo) of an instruction file as the seam's Change."""
        bank = self.bank
        created = bool(done.files) and done.files[0][1] is not None
        listed = bank.documents_cache
        if created and listed is not None and any(e.path == name and e.state == "new" for e in listed):
            # a new file now exists: it loads, so the list says so (it changed on disk)
            bank.documents_cache = listing(bank)
        return Change(
            bank.source.path,
            bank.name,
            label,
            documents=frozenset({name}),
            files=tuple(Written(path, stamp) for path, stamp in done.files),
            written=done.written,
            result=self.read(name) if any(e.path == name for e in self._entries()) else None,
            notes=done.notes,
            reverse=(lambda: self._instruction_change(name, done.undo(), label)) if done.reverse is not None else None,
        )

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document | None:
        """``doc`` as the disk version the person was shown, to overwrite exactly that (None: changed again)."""
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
        """``MEMORY.md`` against what a session loads of it (the cut drawn), any other file against 4 MiB."""
        if name == self.bank.index_path:
            return index_meter(name, text)
        size = len(text.encode("utf-8", errors="surrogatepass"))
        fits = size <= FILE_LIMIT
        sentence = (
            f"{_size(size)} of the 4 MiB a file may have: it loads whole"
            if fits
            else f"{_size(size)}: over the 4 MiB a file may have, so Claude Code skips it entirely"
        )
        return Budget(
            max(FILE_LIMIT, size),
            (BudgetSegment(name, 0, size if fits else 0, size, "fit" if fits else "omitted"),),
            name,
            sentence,
            "Claude Code loads each instruction file whole up to 4 MiB (a larger one not at all); "
            "its docs advise keeping CLAUDE.md under 200 lines.",
            None,
            not fits,
        )

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Which documents the changed (absolute) paths are."""
        wanted = {os.path.normpath(p) for p in paths}
        return {e.path for e in self._entries() if os.path.normpath(e.path) in wanted}


def index_meter(name: str, text: str) -> Budget:
    """The budget meter of an edited ``MEMORY.md``: the binding limit (lines or characters), where the
    next session's cut falls in the edited text, and the entries past it."""
    prepared = Prepared(text)
    if not prepared.text:
        return Budget(LINE_LIMIT, (BudgetSegment(name, 0, 0, 0, "fit"),), name, "empty: nothing loads", _INDEX_LIMITS)
    cut = cut_index(prepared.text)
    by_lines = cut.lines / LINE_LIMIT >= cut.units / SIZE_LIMIT
    total, sent, size = (
        (max(LINE_LIMIT, cut.lines), cut.kept_lines, cut.lines)
        if by_lines
        else (max(SIZE_LIMIT, cut.units), cut.kept_units, cut.units)
    )
    segment = BudgetSegment(name, 0, sent, size, "truncated" if cut.cut else "fit")
    counts = f"{cut.lines} / {LINE_LIMIT} lines · {cut.units:,} / {SIZE_LIMIT:,} characters"
    if not cut.cut:
        return Budget(total, (segment,), name, f"{counts}: all of it loads", _INDEX_LIMITS)
    lines = prepared.text.split("\n")
    hidden = sum(1 for line in lines[cut.kept_lines + (1 if cut.partial else 0) :] if parse_link_line(line))
    # where the cut falls: after the last line kept whole, or inside the one line cut hard
    offset = utf16_index(lines[0], cut.kept_units) if cut.partial else len("\n".join(lines[: cut.kept_lines]))
    sentence = (
        f"{counts}: the next session loads lines 1–{cut.kept_lines}; from line {cut.kept_lines + 1} on, "
        f"{hidden} {'entry is' if hidden == 1 else 'entries are'} invisible to Claude (shaded)"
    )
    return Budget(total, (segment,), name, sentence, _INDEX_LIMITS, prepared.raw_offset(offset), True)


_INDEX_LIMITS = (
    f"A session loads the first {LINE_LIMIT} lines or {SIZE_LIMIT:,} characters (UTF-16 units, counted after "
    "front matter and HTML comments are removed) of MEMORY.md; the agent appends, so the newest entries are cut first."
)
