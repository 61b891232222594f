"""The documents editor's view of a Codex bank: the AGENTS.md files with their budget, and the summary.

The list, in the order a session reads them:

* the **global** file of the home (``AGENTS.override.md`` when it is there,
  ``AGENTS.md``, listed as new when missing: saving creates it) — loaded whole,
  outside the project budget;
* for a project bank, the **project chain** from the project root down to the
  session folder: the file that claims each folder, how it fares in the shared
  ``project_doc_max_bytes`` budget (loaded, cut at a byte, skipped, blank), and
  the files a claiming file hides (a blank ``AGENTS.override.md`` hides its
  folder's ``AGENTS.md``: warned). With no project file at all, the root's
  ``AGENTS.md`` is listed as new;
* **``memory_summary.md``** of the active root — editable, with the truth said
  first (:meth:`CodexDocuments.pre_save_warnings`), read-only while Codex's
  consolidation holds its lease; and, in a V1 root, ``MEMORY.md`` (read-only:
  the consolidation agent writes it; a note is the way to change it).

The budget meter (:meth:`CodexDocuments.budget`) draws the project files as
segments of one budget, the cut byte of the edited file shaded in the editor;
the summary against the 10,000 bytes Codex injects whole (a longer one loses
its middle). Line endings and a byte-order mark are kept as the file had them;
every save presents the stamp read and goes through :mod:`.writes`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from keepgui.backends.codex import writes
from keepgui.backends.codex.compact import remember
from keepgui.backends.codex.context import TAKES_EFFECT
from keepgui.backends.codex.instructions import (
    AGENTS,
    BLANK,
    CUT,
    GLOBAL_NAMES,
    HIDDEN,
    LOADED,
    SKIPPED,
    UNREADABLE,
    ProjectFile,
    agents_chain,
    global_file,
    lay_out,
)
from keepgui.backends.codex.memory import (
    CONSOLIDATED,
    HANDBOOK_NAME,
    SUMMARY_HALF,
    SUMMARY_LIMIT,
    SUMMARY_NAME,
    consolidation_lease,
    truncation,
)
from keepgui.backends.codex.text import char_offset, rust_trim, rust_trim_start, size_words
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.source import Budget, BudgetSegment, Change, Document, Written, nothing_written

if TYPE_CHECKING:
    from keepgui.backends.codex.bank import CodexBank

BOM = b"\xef\xbb\xbf"
READ_LIMIT = 16 * 1024 * 1024
GLOBAL, PROJECT, SUMMARY, HANDBOOK = "global", "project", "summary", "handbook"

SUMMARY_TRUTH = (
    "memory_summary.md is what Codex injects at the start of every session. An edit takes effect at the next "
    "session start. Codex's next consolidation may rewrite it (it sees your edit in its diff and may keep, "
    "merge or drop it): for a fact that must stick, keep a note instead. Keep `v1` as the first line and the "
    "sections (## User Profile, ## User preferences, ## General Tips, ## What's in Memory): a summary without "
    "them is regenerated, and a V2 one is refused by Codex's check."
)


@dataclass(frozen=True)
class Entry:
    """One listed document: its path, what it is (:data:`GLOBAL`…), and for a project file how it fares."""

    path: str
    kind: str
    project: ProjectFile | None = None
    exists: bool = True
    label: str = ""
    used: bool = True


@dataclass(frozen=True)
class FileStyle:
    """What the editor does not show of a file: a byte-order mark, CRLF line endings."""

    bom: bool
    crlf: bool


def _decode(data: bytes | None) -> tuple[str, FileStyle]:
    if data is None:
        return "", FileStyle(False, False)
    bom = data.startswith(BOM)
    text = (data[3:] if bom else data).decode("utf-8", "surrogateescape")
    crlf = "\r\n" in text and text.count("\n") == text.count("\r\n")
    return (text.replace("\r\n", "\n") if crlf else text), FileStyle(bom, crlf)


def _encode(text: str, style: FileStyle) -> bytes:
    if style.crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return (BOM if style.bom else b"") + text.encode("utf-8", "surrogateescape")


def _editor_offset(style: FileStyle, data: bytes, byte: int) -> int:
    """The editor's character offset of byte ``byte`` of a file in ``style``."""
    body = data[3:] if style.bom else data
    at = max(0, byte - (3 if style.bom else 0))
    offset = char_offset(body, at)
    if style.crlf:
        offset -= body[:at].decode("utf-8", "surrogateescape").count("\r\n")
    return offset


def listing(bank: CodexBank) -> list[Entry]:
    """The documents of ``bank`` in the order of the module docstring."""
    home = bank.env.home
    out: list[Entry] = []
    present = [n for n in GLOBAL_NAMES if os.path.isfile(os.path.join(home, n))]
    used = global_file(home).path
    for name in present or [AGENTS]:
        path = os.path.join(home, name)
        out.append(Entry(path, GLOBAL, None, bool(present), used=path == used or not present))
    if bank.cwd is not None and os.path.isdir(bank.cwd):
        chain = agents_chain(bank.cwd, home, bank.state_config(), bank.env.paths)
        # named from the project root (the folder the budget starts from), as a person finds them
        out.extend(Entry(f.path, PROJECT, f, label=os.path.relpath(f.path, chain.root)) for f in chain.files)
        if not chain.files:
            out.append(Entry(os.path.join(chain.root, AGENTS), PROJECT, None, False, AGENTS))
    root = bank.root()
    out.append(Entry(os.path.join(root.path, SUMMARY_NAME), SUMMARY))
    if os.path.isfile(os.path.join(root.path, HANDBOOK_NAME)):
        out.append(Entry(os.path.join(root.path, HANDBOOK_NAME), HANDBOOK))
    return out


def _short(path: str, home: str) -> str:
    return "~" + path[len(home) :] if home and path.startswith(home + os.sep) else path


class CodexDocuments:
    """A bank's documents as the editor sees them (see the module docstring)."""

    creatable = False
    why_not_create = (
        "Codex reads its AGENTS.md files where it looks for them: keepgui lists each one a session reads "
        "(a missing global or project AGENTS.md as new: saving creates it)"
    )
    empty_deletes = False
    previews_drafts = False
    names = None

    def __init__(self, bank: CodexBank) -> None:
        self.bank = bank
        self._entries: list[Entry] | None = None
        self._styles: dict[str, FileStyle] = {}

    def entries(self) -> list[Entry]:
        """The listed documents (read once per DocumentSet)."""
        if self._entries is None:
            self._entries = listing(self.bank)
        return self._entries

    def _entry_kind(self, name: str) -> str:
        return next((e.kind for e in self.entries() if e.path == name), "")

    def _entry(self, name: str) -> Entry:
        for entry in self.entries():
            if entry.path == name:
                return entry
        raise NotFound(f"{name} is not one of the files a Codex session in {self.bank.title} reads")

    def _title(self, entry: Entry) -> str:
        where = entry.label or _short(entry.path, self.bank.env.user_home)
        if entry.kind == GLOBAL:
            state = ", new" if not entry.exists else "" if entry.used else ", not read (the override is used)"
            return f"{where} · global{state}"
        if entry.kind == SUMMARY:
            return f"{os.path.basename(entry.path)} · injected memory"
        if entry.kind == HANDBOOK:
            return "MEMORY.md · handbook (read on demand)"
        fare = entry.project
        if fare is None:
            return f"{where} · project, new"
        word = {
            LOADED: "",
            CUT: f", cut at byte {fare.read:,}",
            SKIPPED: ", skipped (budget spent)",
            BLANK: ", blank",
            HIDDEN: ", not read",
            UNREADABLE: ", unreadable",
        }[fare.status]
        return f"{where} · project{word}"

    def list(self) -> builtins.list[tuple[str, str]]:
        """``(name, title)`` in reading order; a name is the file's path."""
        return [(e.path, self._title(e)) for e in self.entries()]

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of every document that exists, each as its bytes (decoded so that encoding
        it again gives the same bytes: the budget counts bytes)."""
        out = []
        for entry in self.entries():
            try:
                data, _stamp = fsio.read_stamped(entry.path, limit=READ_LIMIT)
            except (OSError, KeepguiError):
                continue
            if data is not None:
                out.append((entry.path, data.decode("utf-8", "surrogateescape")))
        return out

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc`` (as the editor shows it)."""
        try:
            data, stamp = fsio.read_stamped(doc.path, limit=READ_LIMIT)
        except (OSError, KeepguiError):
            return None, fsio.Stamp.missing()
        return (None if data is None else _decode(data)[0]), stamp

    def read(self, name: str) -> Document:
        """Open one document with what it is, how it fares and what to know before saving."""
        entry = self._entry(name)
        data, stamp = fsio.read_stamped(entry.path, limit=READ_LIMIT)
        text, style = _decode(data)
        self._styles[entry.path] = style
        read_only = ""
        managed = ""
        if entry.kind == HANDBOOK:
            read_only = CONSOLIDATED
            managed = "Codex"
        elif entry.kind == SUMMARY:
            managed = "Codex"
            lease = consolidation_lease(self.bank.env.home)
            root = self.bank.root()
            if lease is not None:
                read_only = lease.sentence()
            elif not root.exists:
                read_only = f"{root.path} does not exist yet: Codex creates it at its next start with memory on"
        return Document(
            entry.path,
            self._title(entry),
            entry.path,
            text,
            stamp,
            managed_by=managed,
            status=self._status(entry, data),
            notices=tuple(self._notices(entry)),
            raw=style,
            read_only=read_only,
        )

    def _status(self, entry: Entry, data: bytes | None) -> str:
        size = len(data or b"")
        if entry.kind == GLOBAL:
            if data is None:
                return "Does not exist yet: Codex would read it for every session. Saving creates it."
            return f"Global instructions ({size_words(size)}): loaded whole, trimmed, outside the project budget."
        if entry.kind == SUMMARY:
            return self._summary_status(data)
        if entry.kind == HANDBOOK:
            return (
                f"The handbook ({size_words(size)}): not injected; the model searches it when the summary points there."
            )
        fare = entry.project
        if fare is None:
            return "Does not exist yet: Codex would read it here. Saving creates it."
        budget = self.bank.state_config().max_bytes
        if fare.status == LOADED:
            return f"Loaded whole: {size_words(fare.read)} of the {budget:,}-byte project budget."
        if fare.status == CUT:
            return (
                f"Cut at byte {fare.read:,} of {fare.size:,}: the project budget ({budget:,} bytes, shared from the "
                "root down) runs out inside it. The model never sees the rest and is not told (shaded)."
            )
        return f"Not read: {fare.reason}."

    def _summary_status(self, data: bytes | None) -> str:
        state = self.bank.state()
        if data is None:
            return "There is no summary yet: Codex's consolidation writes it. Nothing is injected."
        if not state.config.memory_on:
            return f"Not injected: {state.config.why_off}."
        if state.summary.problem:
            return f"Not injected: {state.summary.problem}."
        block = state.block
        size = block.size if block is not None else 0
        return f"Injected at the start of every session: a memory block of {size_words(size)}."

    def _notices(self, entry: Entry) -> builtins.list[str]:
        out: list[str] = []
        if entry.kind == PROJECT and entry.project is not None:
            fare = entry.project
            if fare.hides:
                hidden = ", ".join(os.path.basename(h) for h in fare.hides)
                if fare.status == BLANK:
                    out.append(
                        f"⚠ This AGENTS.override.md is blank, yet it claims its folder: {hidden} there is not read."
                    )
                else:
                    out.append(f"It claims its folder: {hidden} there is not read (one file per folder).")
            out.append("Checked into the repository, most likely: your edit is shared with everyone who works on it.")
        if entry.kind == GLOBAL:
            out.append("Read for every session of this Codex home, in any folder.")
        if entry.kind == SUMMARY:
            out.append(SUMMARY_TRUTH)
        if os.path.islink(entry.path):
            out.append(f"A link to {os.path.realpath(entry.path)}: keepgui does not replace links.")
        out.append(TAKES_EFFECT)
        return out

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """Before saving the summary: the truth about what the edit does."""
        if self._entry(doc.name).kind != SUMMARY:
            return []
        return [SUMMARY_TRUTH]

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` over exactly the version of ``doc`` that was read; ``result`` is the document read back."""
        if doc.read_only:
            raise ReadOnly(f"{doc.path}: {doc.read_only}")
        entry = self._entry(doc.name)
        bank = self.bank
        style = doc.raw if isinstance(doc.raw, FileStyle) else FileStyle(False, False)
        if not doc.stamp.exists and not text.strip():
            return nothing_written(bank.source.path, bank.name, f"Save {doc.title}", "nothing to save: it is empty")
        data = _encode(text, style)
        root = bank.root()
        if entry.kind == SUMMARY:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"{doc.path}: byte {exc.start} is not UTF-8, and Codex injects no memory at all from a summary "
                    "that is not valid UTF-8: remove the characters shown as unknown; nothing was written"
                ) from None
            done = writes.save_summary(bank.env.home, root, data, doc.stamp)
        else:
            done = writes.save_instructions(bank.env.home, root, doc.path, data, doc.stamp)
        return self._change(doc.name, done)

    def _change(self, name: str, done: writes.Done) -> Change:
        bank = self.bank
        bank.forget_state()
        self._entries = None
        if self._entry_kind(name) == SUMMARY:
            # keepgui's own edit is not a rewrite to review: it becomes the accepted version
            remember(bank.state(), bank.source.history, accept=True, source="keepgui")
        change = Change(
            bank.source.path,
            bank.name,
            done.text,
            documents=frozenset({name}),
            files=tuple(Written(path, stamp) for path, stamp in done.files),
            result=self.read(name) if os.path.exists(name) else None,
        )
        if done.reverse is None:
            return change
        reverse = done.reverse
        return replace(change, reverse=lambda: self._change(name, reverse()))

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document | None:
        """``doc`` as the disk version the person was shown, to overwrite exactly that (None: changed again)."""
        _text, now = self.current(doc)
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

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget | None:
        """The project budget for a project file, the 10,000 injected bytes for the summary, the
        global file outside any budget; None for the handbook."""
        entry = self._entry(name)
        style = self._styles.get(name, FileStyle(False, False))
        data = _encode(text, style)
        if entry.kind == SUMMARY:
            return summary_meter(name, data, style)
        if entry.kind == GLOBAL:
            return Budget(
                max(1, len(data)),
                (BudgetSegment(name, 0, len(data), len(data), "fit"),),
                name,
                f"{size_words(len(data))}: loaded whole (trimmed) for every session",
                "The global AGENTS.md does not count against the project budget.",
            )
        if entry.kind != PROJECT:
            return None
        return self._project_meter(name, data, style, texts)

    def _project_meter(
        self, name: str, data: bytes, style: FileStyle, texts: Sequence[tuple[str, str]] | None
    ) -> Budget:
        known = dict(texts if texts is not None else self.texts())
        chain = [
            e for e in self.entries() if e.kind == PROJECT and e.project is not None and e.project.status != HIDDEN
        ]
        files: list[tuple[str, bytes]] = []
        for item in chain:
            if item.path == name:
                files.append((name, data))
            elif item.path in known:
                files.append((item.path, known[item.path].encode("utf-8", "surrogateescape")))
        if not any(n == name for n, _d in files):
            files.append((name, data))  # a new file: where it would go is unknown, shown last
        budget = self.bank.state_config().max_bytes
        spent = lay_out(files, budget)
        segments = tuple(
            BudgetSegment(
                s.name,
                s.start,
                s.read,
                s.size,
                {LOADED: "fit", CUT: "truncated"}.get(s.status, "omitted"),
            )
            for s in spent
        )
        mine = next(s for s in spent if s.name == name)
        total_used = sum(s.read for s in spent)
        summary = (
            f"One budget of {budget:,} bytes for every project AGENTS.md from the root down: {total_used:,} used. "
            "Codex tells the model nothing about a cut or a skip."
        )
        if mine.status == CUT:
            sentence = (
                f"Cut at byte {mine.read:,} of {mine.size:,} (byte {mine.start + mine.read:,} of the budget): "
                "the shaded rest is never sent"
            )
            cut = _editor_offset(style, data, mine.read)
            return Budget(max(budget, 1), segments, name, sentence, summary, cut, True)
        if mine.status == SKIPPED:
            return Budget(
                max(budget, 1), segments, name, "Skipped: the budget is spent before this file", summary, 0, True
            )
        if mine.status == BLANK:
            return Budget(max(budget, 1), segments, name, "Blank: it gives nothing and costs nothing", summary)
        return Budget(
            max(budget, 1),
            segments,
            name,
            f"{mine.read:,} bytes, bytes {mine.start:,}–{mine.start + mine.read:,} of the budget: all of it is sent",
            summary,
        )

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Which documents the changed (absolute) paths are."""
        wanted = {os.path.normpath(p) for p in paths}
        return {e.path for e in self.entries() if os.path.normpath(e.path) in wanted}


def summary_meter(name: str, data: bytes, style: FileStyle) -> Budget:
    """The summary against the 10,000 bytes Codex injects whole; a longer one loses its middle."""
    text = data.decode("utf-8", "replace")
    trimmed = rust_trim(text).encode("utf-8")
    cut = truncation(trimmed)
    size = len(trimmed)
    lead = len(text.encode("utf-8")) - len(rust_trim_start(text).encode("utf-8")) if trimmed else 0
    note = (
        f"Codex injects a trimmed summary of up to {SUMMARY_LIMIT:,} bytes whole; a longer one keeps its first and "
        f"last {SUMMARY_HALF:,} bytes and drops the middle, saying only “…N tokens truncated…”."
    )
    if not cut.cut:
        return Budget(
            SUMMARY_LIMIT,
            (BudgetSegment(name, 0, size, size, "fit"),),
            name,
            f"{size:,} of {SUMMARY_LIMIT:,} bytes: all of it is injected",
            note,
        )
    segments = (
        BudgetSegment(name, 0, cut.head, size, "truncated"),
        BudgetSegment(name + "#tail", cut.tail, size - cut.tail, size, "truncated"),
    )
    sentence = (
        f"{size:,} bytes: bytes {cut.head:,}–{cut.tail:,} (shaded from here) are dropped, {cut.marker} "
        "stands in their place; the last 5,000 bytes are injected again"
    )
    return Budget(
        max(size, SUMMARY_LIMIT), segments, name, sentence, note, _editor_offset(style, data, lead + cut.head), True
    )
