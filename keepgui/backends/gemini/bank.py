"""One Gemini CLI launch folder's memory as a bank of the seam (:mod:`keepgui.core.source`).

A :class:`GeminiBank` is what a session started in one folder remembers:

* its **rows** are the lines of the global files and of the private ``MEMORY.md`` (or the legacy private
  files), each a :class:`~keepgui.core.source.FileRow` tagged ``global`` / ``private`` (and
  ``gemini-added`` under a legacy ``## Gemini Added Memories`` heading, ``import`` when Gemini will treat
  an ``@word`` of it as an import); each sibling note of ``MEMORY.md`` is one row tagged ``note`` and
  ``not-loaded``; a legacy private file hidden by ``MEMORY.md`` shows its lines tagged ``hidden``; a line
  keepgui forgot is a retired row (restorable, kept in keepgui's history);
* its **documents** are the files that load, in Gemini's order (:mod:`.documents`);
* its **preview** is both ``<loaded_context>`` elements, exactly (:mod:`.context`);
* its **review** shows the lines a running session dropped by writing its stale copy over keepgui's edit
  (:mod:`.compact`); edit, New memory, Keep, Forget and Restore write through :mod:`.writes` and return
  Changes that undo themselves.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keepgui.backends.gemini import writes
from keepgui.backends.gemini.compact import OverwriteReview, ReviewApplied, review, review_due
from keepgui.backends.gemini.context import GeminiContext, GeminiPreview, assemble, preview_of, size_of, tokens_of
from keepgui.backends.gemini.discovery import EMPTY, GLOBAL, LOADED, NEVER, PRIVATE, PROJECT, Discovery, discover
from keepgui.backends.gemini.documents import GeminiDocuments, default_new, listing
from keepgui.backends.gemini.inbox import Inbox
from keepgui.backends.gemini.layout import MEMORY_INDEX, GeminiEnv
from keepgui.backends.gemini.memory import (
    GLOBAL_TAG,
    HIDDEN_TAG,
    IMPORT_TAG,
    LEGACY_HEADING,
    LEGACY_TAG,
    NOT_LOADED,
    NOTE_TAG,
    PRIVATE_TAG,
    LineRow,
    import_warning,
    mentions,
    rows_of_file,
)
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound
from keepgui.core.source import (
    ACTIVITY,
    COMPACT,
    DISK,
    ENTITIES,
    HISTORY,
    MOVE,
    PIN,
    QUERY,
    RANKED,
    TAGS,
    WHAT_IF,
    BankDefaults,
    BankKey,
    BankSummary,
    Capabilities,
    Change,
    FileRow,
    Hint,
    Pending,
    Progress,
    RowDelta,
    Written,
    nothing_written,
)

if TYPE_CHECKING:
    from keepgui.backends.gemini.backend import GeminiSource

INBOX_PREFIX = "inbox:"
"""The key prefix of a row that is an Auto Memory proposal waiting in the inbox (then its id there)."""

INBOX_TAG = "inbox"

REVIEW = "a memory file"
"""The name of the review of lines a running session dropped (the window's Review outside rewrite)."""

FORGOTTEN = "forgotten:"
"""The key prefix of a retired row: a line keepgui forgot (kept in its history)."""

NOTE_SHOWN = 4000

CAPABILITIES = Capabilities(
    missing={
        MOVE: "reorder lines in the documents editor (Rules): Gemini loads each file as written",
        PIN: "Gemini CLI has no pin: every line of these files is sent with every request",
        RANKED: "Gemini CLI has no recall ranking: everything loaded is sent whole",
        QUERY: "what a Gemini CLI session is given from memory does not depend on the question",
        WHAT_IF: "the preview shows the files as they are saved",
        HISTORY: "keepgui keeps every version of the files instead: the review shows what a session dropped",
        ENTITIES: "Gemini memory lines are plain Markdown: they link to nothing",
        TAGS: "a line's tags say where it is (global, private, note…): they are not written anywhere",
        COMPACT: "Gemini CLI cuts nothing and has no size limit: the sidebar shows what every request carries instead",
        ACTIVITY: "Gemini keeps no dates",  # its memory lines carry none (the strip shows only a short text)
    },
    fields=frozenset({"pinned", "live", "text", "tags"}),
    ordered=True,
    noun="memory",
    nouns="memories",
    retire="Forget",
    reviews=(REVIEW,),
)
"""What a Gemini launch folder's memory can do in the window, and why not."""


@dataclass(frozen=True)
class Located:
    """A row's place: the file and scope it is in, and its line (None for a whole note)."""

    path: str
    scope: str
    row: LineRow | None


TITLE_CHARS = 32
"""A launch folder longer than this is named by its last two parts in the sidebar (the tooltip has it whole)."""


def title_of(cwd: str, home: str) -> str:
    """How the sidebar names a launch folder: ``~/work/app``, or ``…/webshop/Backend`` when long."""
    if cwd == home:
        return "~ (the home folder)"
    short = _short(cwd, home)
    if len(short) <= TITLE_CHARS:
        return short
    parent, name = os.path.split(cwd)
    return f"…/{os.path.basename(parent)}/{name}"


def _short(path: str, home: str) -> str:
    return "~" + path[len(home) :] if home and path.startswith(home.rstrip(os.sep) + os.sep) else path


class GeminiBank(BankDefaults):
    """The memory of one launch folder (see the module docstring)."""

    def __init__(self, source: GeminiSource, name: str, cwd: str) -> None:
        self.source = source
        self.name = name
        self.key = BankKey(source.path, name)
        self.capabilities = CAPABILITIES
        self.cwd = cwd
        self.env: GeminiEnv = source.env
        self.history = source.history
        self.lock = threading.RLock()
        self.title = title_of(cwd, self.env.home)
        self.documents_cache: list[Any] | None = None
        self.found: Discovery | None = None
        self.assembled: GeminiContext | None = None
        self.delivered: list[FileRow] = []
        self.located: dict[str, Located] = {}
        self.problem = ""

    # ------------------------------------------------------------ reading

    def discovery(self) -> Discovery:
        """The files of a session here, as last read (read now when never read)."""
        found = self.found
        if found is None:
            found = self.found = discover(self.cwd, self.env, trusted=True)
        return found

    def new_documents(self, found: Discovery) -> list[tuple[str, str]]:
        """The documents listed as new when missing (see :func:`~.documents.default_new`)."""
        cwd = self.cwd if os.path.isdir(self.cwd) else None
        return [
            (p, t)
            for p, t in default_new(self.env.gemini_dir, found.settings.names, cwd, found.private.memory)
            if not os.path.lexists(p)
        ]

    def memory_files(self) -> list[str]:
        """The files whose lines are rows (global, private, notes, hidden legacy)."""
        found = self.discovery()
        return [f.path for f in found.files if f.tier in (GLOBAL, PRIVATE) and os.path.isfile(f.path)]

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Read every file a session here loads; every row when anything changed, and a review when a
        running session dropped lines keepgui wrote."""
        with self.lock:
            try:
                found = discover(self.cwd, self.env, trusted=True)
                rows, located = self._rows(found)
            except (KeepguiError, OSError) as exc:
                self.problem = str(exc)
                raise
            changed = rows != self.delivered or full
            self.found, self.assembled = found, assemble(found)
            self.delivered, self.located, self.problem = rows, located, ""
            before = self.documents_cache
            self.documents_cache = listing(self)
            documents: frozenset[str] = frozenset()
            if before is None or [e.path for e in before] != [e.path for e in self.documents_cache]:
                documents = frozenset(e.path for e in self.documents_cache)
        return Change(
            self.source.path,
            self.name,
            origin=DISK,
            rows=RowDelta(rows, (), True) if changed else RowDelta(),
            documents=documents,
            reviews=(REVIEW,) if any(review_due(p, self.history) for p in self.memory_files()) else (),
            notes=tuple(f"{self.title}: {p}" for p in found.problems),
        )

    def _rows(self, found: Discovery) -> tuple[list[FileRow], dict[str, Located]]:
        rows: list[FileRow] = []
        located: dict[str, Located] = {}
        rank = 0
        for f in found.files:
            if f.tier not in (GLOBAL, PRIVATE) or not os.path.isfile(f.path):
                continue
            rank += 1
            name = os.path.basename(f.path)
            if f.tier == PRIVATE and f.state == NEVER and "note beside" in f.reason:
                rows.append(self._note_row(f.path, rank))
                located[rows[-1].id] = Located(f.path, f"note:{name}", None)
                continue
            text, _stamp = self._text(f.path)
            if text is None:
                continue
            scope = f"{'global' if f.tier == GLOBAL else 'private'}:{name}"
            hidden = f.state == NEVER
            for lr in rows_of_file(f.path, scope, text):
                rows.append(self._line_row(lr, f.tier, hidden, rank))
                located[lr.key] = Located(f.path, scope, lr)
        rows.extend(self._forgotten(found))
        rows.extend(self._proposals(found))
        return rows, located

    def inbox(self, found: Discovery | None = None) -> Inbox:
        """This launch folder's Auto Memory inbox."""
        found = found or self.discovery()
        global_file = os.path.join(self.env.gemini_dir, found.settings.names[0])
        return Inbox(found.private.memory, global_file, self.history, self.env.paths)

    def _proposals(self, found: Discovery) -> list[FileRow]:
        """One row per Auto Memory proposal waiting in the inbox (approved or rejected in the approvals window)."""
        rows = []
        for proposal in self.inbox(found).proposals():
            added = [
                line[1:] for line in proposal.text.splitlines() if line.startswith("+") and not line.startswith("+++")
            ]
            text = next((a.strip().lstrip("-*+ ").strip() for a in added if a.strip()), "") or proposal.id
            fields = [
                ("proposed by", f"Gemini's Auto Memory ({proposal.kind}): {proposal.path}"),
                ("changes", ", ".join(t.path for t in proposal.targets) or ", ".join(proposal.heads)),
                ("to decide", "Bank → Pending approvals…: approve (applied as Gemini applies it) or reject"),
            ]
            if proposal.problem:
                fields.append(("cannot be applied now", proposal.problem))
            rows.append(
                FileRow(
                    id=INBOX_PREFIX + proposal.id,
                    text=text,
                    position=2 * 10**9,
                    tags=(INBOX_TAG, NOT_LOADED),
                    created_at=proposal.created_ms,
                    fields=tuple(fields),
                )
            )
        return rows

    def _text(self, path: str) -> tuple[str | None, fsio.Stamp]:
        data, stamp = fsio.read_stamped(path, limit=writes.FILE_LIMIT)
        return (None if data is None else data.decode("utf-8", errors="surrogateescape")), stamp

    def _line_row(self, lr: LineRow, tier: str, hidden: bool, rank: int) -> FileRow:
        line = lr.line
        tags = [GLOBAL_TAG if tier == GLOBAL else PRIVATE_TAG]
        if line.section.strip() == LEGACY_HEADING:
            tags.append(LEGACY_TAG)
        if hidden:
            tags += [HIDDEN_TAG, NOT_LOADED]
        found = mentions(line.text)
        if found:
            tags.append(IMPORT_TAG)
        where = "not loaded: MEMORY.md hides this legacy file" if hidden else "the system instruction of every request"
        fields = [("file", lr.path), ("line", str(line.number)), ("loads into", where)]
        if line.section:
            fields.append(("section", line.section))
        if found:
            fields.append(("@ imports", import_warning(line.text)))
        return FileRow(
            id=lr.key,
            text=line.text,
            position=rank * 1_000_000 + line.number,
            tags=tuple(tags),
            fields=tuple(fields),
        )

    def _note_row(self, path: str, rank: int) -> FileRow:
        text, _stamp = self._text(path)
        body = (text or "").strip()
        shown = body if len(body) <= NOTE_SHOWN else body[:NOTE_SHOWN] + "\n…"
        return FileRow(
            id=f"note:{os.path.basename(path)}",
            text=shown or os.path.basename(path),
            position=rank * 1_000_000,
            tags=(NOTE_TAG, NOT_LOADED),
            fields=(
                ("file", path),
                ("loads", f"read on demand, not loaded: the agent opens it when {MEMORY_INDEX} points to it"),
            ),
        )

    def _forgotten(self, found: Discovery) -> list[FileRow]:
        rows = []
        paths = {f.path for f in found.files if f.tier in (GLOBAL, PRIVATE)}
        paths.add(os.path.join(found.private.memory, MEMORY_INDEX))
        for path in sorted(paths):
            for entry in self.history.removed(path):
                rows.append(
                    FileRow(
                        id=FORGOTTEN + entry.id,
                        text=entry.text,
                        position=10**9 + entry.line,
                        tags=(GLOBAL_TAG if os.path.dirname(path) == self.env.gemini_dir else PRIVATE_TAG,),
                        invalid_at=entry.removed_at,
                        updated_at=entry.removed_at,
                        fields=(("file", path), ("forgotten", "by keepgui; Restore puts the line back where it was")),
                    )
                )
        return rows

    def is_loaded(self) -> bool:
        """True once the files were read."""
        return self.found is not None and self.assembled is not None

    def rows(self) -> Sequence[FileRow]:
        """The rows as last read."""
        return list(self.delivered)

    def summary(self) -> BankSummary:
        """``global 2 files · private 14 lines · project 3 files · 41 KB sent on every request``."""
        description = f"launch folder {self.cwd}"
        if self.problem:
            return BankSummary(f"unreadable: {self.problem}", problem=self.problem, title=self.title)
        context = self.assembled
        if context is None:
            return BankSummary("loading…", description=description, title=self.title)
        found = context.discovery
        private_lines = sum(
            1 for r in self.delivered if PRIVATE_TAG in r.tags and r.invalid_at is None and NOT_LOADED not in r.tags
        )
        counts = {t: len([f for f in found.tier(t) if f.state in (LOADED, EMPTY)]) for t in (GLOBAL, PROJECT)}
        parts = [
            f"global {counts[GLOBAL]} file{'s' if counts[GLOBAL] != 1 else ''}",
            f"private {private_lines} line{'s' if private_lines != 1 else ''}",
            f"project {counts[PROJECT]} file{'s' if counts[PROJECT] != 1 else ''}",
            f"{_kb(context.sent_bytes)} sent on every request",
        ]
        waiting = sum(1 for r in self.delivered if r.id.startswith(INBOX_PREFIX))
        if waiting:
            parts.append(f"{waiting} awaiting approval")
        description += f"\nprivate memory {found.private.memory} ({found.private.how})"
        description += f"\n≈ {tokens_of(context.sent_bytes):,} tokens with every request, and the project part again to the routing model"
        return BankSummary(
            " · ".join(parts),
            description=description,
            size=_kb(context.sent_bytes),
            problems=len(found.problems),
            title=self.title,
        )

    def documents(self) -> GeminiDocuments:
        """The files a session here loads, in Gemini's order."""
        return GeminiDocuments(self)

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> GeminiPreview:
        """Both ``<loaded_context>`` elements of the next session here, exactly."""
        with self.lock:
            return preview_of(assemble(discover(self.cwd, self.env, trusted=True)))

    def context(self, query: str = "", **options: Any) -> GeminiContext:
        """``keepgui context --agent gemini``: the parts ``system_context`` and ``session_context``, exactly,
        the folder taken as trusted (``untrusted``: as in a folder Gemini does not trust). Nothing is written."""
        unknown = sorted(set(options) - {"untrusted"})
        if unknown:
            raise InvalidInput(f"no option {unknown[0]} for Gemini CLI's context (it has --untrusted)")
        with self.lock:
            return assemble(discover(self.cwd, self.env, trusted=not options.get("untrusted")))

    # ------------------------------------------------------------ writes

    def write(self, action: Callable[[], writes.FileChange], text: str, *, documents: set[str] | None = None) -> Change:
        """Run a write under the lock and turn it into the seam's Change (its undo goes through here too)."""
        with self.lock:
            done = action()
            found = discover(self.cwd, self.env, trusted=True)
            rows, located = self._rows(found)
            self.found, self.assembled, self.delivered, self.located = found, assemble(found), rows, located
            self.documents_cache = listing(self)
        touched = {p for p, _s in done.files}
        docs = {e.path for e in self.documents_cache if e.path in touched} | set(documents or ())
        reverse = (lambda: self.write(done.undo, text, documents=documents)) if done.reverse is not None else None
        return Change(
            self.source.path,
            self.name,
            text or done.text,
            rows=RowDelta(rows, (), True),
            documents=frozenset(docs),
            files=tuple(Written(p, s) for p, s in done.files),
            written=done.written,
            result=self._read_back(next(iter(documents))) if documents else done.result,
            message=done.message,
            notes=done.notes,
            reverse=reverse,
        )

    def _read_back(self, name: str) -> object:
        try:
            return self.documents().read(name)
        except (KeepguiError, OSError):
            return None

    def save_document(self, path: str, data: bytes, expect: fsio.Stamp, label: str) -> writes.FileChange:
        """Save one document (a new private ``MEMORY.md`` claims the private folder first)."""
        found = self.discovery()
        if os.path.dirname(path) == found.private.memory and not os.path.lexists(path):
            writes.ensure_private(self.env, found.private)
        return writes.save(path, data, expect, history=self.history, text=label)

    def _locate(self, key: str) -> Located:
        if key.startswith(INBOX_PREFIX):
            raise InvalidInput(
                "this is a change Gemini's Auto Memory proposes: approve or reject it in Bank → Pending approvals…"
            )
        if key.startswith(FORGOTTEN):
            raise InvalidInput("this memory was forgotten: restore it first")
        where = self.located.get(key)
        if where is None:
            raise NotFound(f"{self.title} has no memory {key} (the file changed: reload)")
        return where

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """Edit a line's text (its bullet kept), or a note's whole text."""
        if field != "text" or not isinstance(value, str):
            raise InvalidInput(CAPABILITIES.why_not(TAGS) if field == "tags" else CAPABILITIES.why_not(ENTITIES))
        where = self._locate(key)

        def run() -> writes.FileChange:
            data, stamp = writes.read(where.path)
            if data is None:
                raise NotFound(f"{where.path} is gone")
            text = writes.text_of(where.path, data)
            if where.row is None:
                new = value.strip() + "\n"
            else:
                line = writes.find_line(text, where.row.line.number, where.row.line.body)
                new = writes.replace_line(text, line, value)
            return writes.save(where.path, new.encode("utf-8"), stamp, history=self.history, text="Edit memory")

        return self.write(run, "Edit memory")

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Forget lines (kept in keepgui's history) or put forgotten ones back where they were."""
        keys = list(keys)
        if live:
            ids = [k[len(FORGOTTEN) :] for k in keys if k.startswith(FORGOTTEN)]
            if not ids:
                return nothing_written(self.source.path, self.name, "Restore")
            text = CAPABILITIES.describe("Restore", len(ids))
            return self.write(lambda: self._restore(ids, text), text)
        located = [self._locate(k) for k in keys if not k.startswith(FORGOTTEN)]
        if not located:
            return nothing_written(self.source.path, self.name, "Forget")
        if any(w.row is None for w in located):
            raise InvalidInput("a note is a file of its own: edit it, or delete it in a file manager")
        text = f"Forget {CAPABILITIES.count(len(located))}"
        return self.write(lambda: self._forget(located, text), text)

    def _forget(self, located: list[Located], text: str) -> writes.FileChange:
        edits: list[writes.Edit] = []
        logged = []
        by_path: dict[str, list[Located]] = {}
        for where in located:
            by_path.setdefault(where.path, []).append(where)
        for path, items in by_path.items():
            data, stamp = writes.read(path)
            if data is None:
                raise NotFound(f"{path} is gone")
            content = writes.text_of(path, data)
            for where in sorted(items, key=lambda w: -(w.row.line.number if w.row else 0)):
                assert where.row is not None
                line = writes.find_line(content, where.row.line.number, where.row.line.body)
                before, after = writes.neighbours(content, line)
                logged.append(
                    self.history.log_removed(
                        path=path,
                        workspace=self.cwd,
                        text=line.text,
                        raw=line.raw,
                        line=line.number - 1,
                        number=line.number,
                        before=before,
                        after=after,
                    )
                )
                content = writes.drop_line(content, line)
            edits.append(writes.Edit(path, content.encode("utf-8"), stamp))
        try:
            done = writes.write_files(edits, history=self.history, text=text)
        except BaseException:
            for entry in logged:
                self.history.cancel_removed(entry)
            raise
        undo = done.reverse

        def reverse() -> writes.FileChange:
            assert undo is not None
            back = undo()
            for entry in logged:
                self.history.mark_restored(entry)
            return back

        done.reverse = reverse
        return done

    def _restore(self, ids: list[str], text: str) -> writes.FileChange:
        entries = [self.history.get_removed(i) for i in ids]
        by_path: dict[str, list[Any]] = {}
        for entry in entries:
            by_path.setdefault(entry.path, []).append(entry)
        edits = []
        for path, items in by_path.items():
            data, stamp = writes.read(path)
            content = writes.text_of(path, data) if data is not None else ""
            for entry in sorted(items, key=lambda e: e.line):
                content = writes.put_back(content, entry)
            edits.append(writes.Edit(path, content.encode("utf-8"), stamp))
        done = writes.write_files(edits, history=self.history, text=text)
        for entry in entries:
            self.history.mark_restored(entry)
        return done

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """New memory: a line in the private ``MEMORY.md``, or in the global file with the tag ``global``."""
        unknown = [t for t in tags if t not in (GLOBAL_TAG, PRIVATE_TAG)]
        if unknown:
            raise InvalidInput(
                f"give the tag global (the global file) or private (this folder's MEMORY.md), not {unknown[0]}"
            )
        return self.keep(text, force=True, scope=GLOBAL if GLOBAL_TAG in tags else PRIVATE)

    def target(self, scope: str = PRIVATE) -> str:
        """The file a keep writes: the global file's first name, or the private ``MEMORY.md`` (or, when only
        a legacy private file exists, that file, so nothing is hidden)."""
        found = self.discovery()
        if scope == GLOBAL:
            return os.path.join(self.env.gemini_dir, found.settings.names[0])
        index = os.path.join(found.private.memory, MEMORY_INDEX)
        legacy = [f.path for f in found.tier(PRIVATE)]
        return index if os.path.exists(index) or not legacy else legacy[0]

    def keep(self, text: str, *, force: bool = False, replace: bool = False, scope: str = PRIVATE) -> Change:
        """Keep: ``- <fact>`` appended to the private ``MEMORY.md`` as Gemini's own tool appended facts."""
        fact = writes.clean_fact(text)
        if not fact:
            raise InvalidInput("there is nothing to keep: the text is empty")
        existing = [r for r in self.delivered if r.invalid_at is None and " ".join(r.text.split()) == fact]
        if existing and not force:
            return nothing_written(
                self.source.path,
                self.name,
                "Keep memory",
                f"already kept: {existing[0].text}",
                (
                    Hint("warning", f"Already kept: “{existing[0].text}”"),
                    Hint("info", "Ctrl+Enter keeps it again anyway."),
                ),
            )
        path = self.target(scope)

        def run() -> writes.FileChange:
            found = self.discovery()
            if scope == PRIVATE and os.path.dirname(path) == found.private.memory:
                writes.ensure_private(self.env, found.private)
            data, stamp = writes.read(path)
            content = writes.text_of(path, data) if data is not None else ""
            done = writes.save(
                path, writes.appended(content, fact).encode("utf-8"), stamp, history=self.history, text="Keep memory"
            )
            done.result = path
            return done

        change = self.write(run, f"Keep memory {fact[:40]}")
        where = f"Kept in {_short(path, self.env.home)}: the next Gemini CLI session started in {self.title} sees it"
        return dataclasses.replace(change, message=where)

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What keeping ``text`` would do: where the line goes, and every ``@word`` Gemini would import."""
        fact = writes.clean_fact(text)
        if not fact:
            return ()
        path = self.target()
        hints = [
            Hint("ok", f"A new line “- {fact[:60]}” in {_short(path, self.env.home)}: loaded by the next session here")
        ]
        warning = import_warning(fact)
        if warning:
            hints.append(Hint("warning", warning))
        if "</loaded_context>" in fact or "</user_project_memory>" in fact:
            hints.append(Hint("warning", "the text closes one of Gemini's memory tags: the model would read past it"))
        if any(" ".join(r.text.split()) == fact for r in self.delivered if r.invalid_at is None):
            hints.append(Hint("warning", "Already kept word for word (Ctrl+Enter keeps it again)"))
        if self.discovery().private.how == "new":
            hints.append(
                Hint("info", f"Gemini has not seen {self.title} yet: keepgui claims its private folder as Gemini would")
            )
        return tuple(hints)

    def text_problem(self, text: str) -> tuple[str, bool]:
        """Bytes and a token estimate (Gemini has no limit), and whether there is text."""
        size = size_of(writes.clean_fact(text))
        return f"{size:,} bytes ≈ {tokens_of(size):,} tokens, sent with every request", bool(text.strip())

    # ------------------------------------------------------------ the review

    def plan(self, what: str, **options: Any) -> OverwriteReview:
        """``a memory file``: the lines of keepgui's last writes that a session dropped, per file (the first
        file with lost lines, or the private MEMORY.md)."""
        if what != REVIEW:
            return self._refuse(COMPACT)
        files = self.memory_files()
        for path in files:
            found = review(path, self.history)
            if found.operations:
                return found
        return review(files[0] if files else self.target(), self.history)

    def apply_plan(self, plan: object, selection: frozenset[str], text: str) -> Change:
        """Restore the selected lost lines (one undoable change)."""
        if not isinstance(plan, OverwriteReview):
            raise InvalidInput(f"{self.title}: not a review of a Gemini memory file")

        def run() -> writes.FileChange:
            applied = plan.apply(selection)
            change = applied.change if isinstance(applied, ReviewApplied) else None
            if change is None:
                return writes.FileChange(text, written=False, result=applied)
            change.result = applied
            return change

        return self.write(run, text)

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a restore applied from the command line (``keepgui review --undo``): the file as it was
        before goes back, only over exactly what the restore left."""
        done = ReviewApplied.from_obj(dict(applied))
        if done.target not in self.memory_files():
            raise InvalidInput(f"not a restore of {self.title}'s memory files: nothing was undone")
        text = f"Undo: {done.description}"

        def run() -> writes.FileChange:
            data, stamp = writes.read(done.target)
            if data != done.after:
                raise Conflict(done.target, None, stamp)
            change = writes.save(done.target, done.before or b"", stamp, history=self.history, text=text)
            change.result = done
            return change

        return dataclasses.replace(self.write(run, text), message=f"undone: {done.description}")

    def accept_review(self, plan: object) -> Change:
        """Accept the file as it is now (nothing written in it)."""
        if not isinstance(plan, OverwriteReview):
            raise InvalidInput(f"{self.title}: not a review of a Gemini memory file")
        plan.accept()
        return Change(self.source.path, self.name, "Accept the file as it is", written=False, message="accepted")


def _kb(n: int) -> str:
    return f"{n:,} B" if n < 1024 else f"{n / 1024:,.0f} KB" if n >= 10 * 1024 else f"{n / 1024:,.1f} KB"
