"""nanobot workspaces behind the source protocol (:mod:`keepgui.core.source`).

A workspace is a :class:`NanobotSource` with one bank, its keep.md
(:class:`KeepBank`): the rows are keep.md's entries, plus the entries keepgui
removed (kept in its own history) as retired rows that can be put back; the
documents are AGENTS.md and the Dream-managed USER.md, SOUL.md and MEMORY.md;
the preview is nanobot's system prompt; the plans are keep.md's compaction and
the review of a rewrite someone else made.

Undo is byte for byte: a change remembers keep.md's bytes before and after, and
taking it back writes the "before" bytes only if keep.md is still exactly what
the change left; if the agent (or anyone) changed it since, the undo is refused
and nothing is overwritten.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound
from keepgui.core.history import History
from keepgui.backends.nanobot import documents as nb
from keepgui.backends.nanobot.activity import PROJECTS_DIR, KeepActivity, ProjectMatcher, project_slugs
from keepgui.backends.nanobot.keep import (
    ALREADY_KEPT,
    KEEP as KEEP_VERDICT,
    KEEP_CAPABILITIES,
    MAX_WORDS,
    REDIRECTED,
    REPLACE_OFFERED,
    KeepResult,
    KeepStore,
)
from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, SOFT_CAP, KeepDoc, normalise
from keepgui.backends.nanobot.workspace import KEEP_MD, Workspace, default_workspace_path
from keepgui.core.paths import short_path
from keepgui.core.registry import Backend, Found, OpenOptions, Verdict
from keepgui.core.source import (
    COMPACT,
    CREATE,
    CREATE_BANK,
    DISK,
    ENTITIES,
    HISTORY,
    PIN,
    QUERY,
    RANKED,
    TAGS,
    TRASH_BANK,
    WHAT_IF,
    Activity,
    BankDefaults,
    BankKey,
    BankSummary,
    Capabilities,
    Change,
    Document,
    FileRow,
    Hint,
    Listing,
    Pending,
    Progress,
    Row,
    RowDelta,
    SourceDefaults,
    WatchPlan,
    stamps_of,
)

KIND = "nanobot"
KEEP_BANK = KEEP_MD
"""The one bank of a workspace: its keep.md."""

CAPABILITIES = Capabilities(
    missing={
        PIN: KEEP_CAPABILITIES.pin_reason,
        TAGS: "keep.md entries are plain one-line facts: no tags",
        ENTITIES: (
            "keep.md entries are plain one-line facts: the projects an entry names are found in its text "
            "(the workspace's projects/<slug>/ folders), not edited"
        ),
        RANKED: "keep.md is read whole on every turn; there is no recall ranking to show",
        HISTORY: "keep.md entries have no revisions; keepgui keeps every version of the file instead",
        CREATE: "a keep.md entry is one terse fact: keep it with Keep fact, which checks it first",
        QUERY: "nanobot's system prompt is the same whatever the question",
        WHAT_IF: "keep.md has no pin or tombstone to try out: forget an entry (Undo brings it back)",
    },
    # keep.md entries have no tags, entities, dates or revisions: those columns would only be
    # empty. The pin column stays, greyed, with its tooltip saying why.
    fields=frozenset({"pinned", "live", "text"}),
    ordered=True,
    noun="entry",
    nouns="entries",
    retire="Forget",
    reviews=(KEEP_MD, "MEMORY.md"),
)
"""What a keep.md can do in the window, and why not."""

CAPABILITIES_WITH_PROJECTS = replace(CAPABILITIES, fields=CAPABILITIES.fields | {"entities"})
"""A keep.md in a workspace with projects: its rows name them (the Entities column)."""

SOURCE_CAPABILITIES = Capabilities(
    missing={
        CREATE_BANK: "a nanobot workspace has one keep.md; it has no banks to create",
        TRASH_BANK: "a nanobot workspace's keep.md is not a bank that can be trashed",
    }
)

REMOVED_PREFIX = "removed:"
"""The key of a retired row: an entry keepgui removed, kept in its history."""

DOCUMENT_FILES = {kind.rel: kind.name for kind in nb.DOCUMENTS.values()}
"""Workspace paths of the documents the editor shows, and their names."""

_WAYS_ON = {
    REDIRECTED: "Ctrl+Enter keeps it in keep.md anyway.",
    REPLACE_OFFERED: "Alt+Enter replaces that entry; Ctrl+Enter keeps both.",
    ALREADY_KEPT: "Ctrl+Enter keeps it as a separate variant.",
}
"""What the person can do after a keep that wrote nothing (an identical entry has no way on)."""


def _quote(text: str, limit: int = 70) -> str:
    from keepgui.core.compaction import excerpt

    return f"“{excerpt(text, limit)}”"


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def keep_rows(doc: KeepDoc, removed: Iterable[Any] = (), projects: ProjectMatcher | None = None) -> list[Row]:
    """Rows for a keep.md document, plus retired rows for the entries keepgui removed; an entry's
    ``entities`` are the workspace's projects it names (see :mod:`keepgui.backends.nanobot.activity`)."""
    named = projects.named_in if projects is not None and projects.slugs else (lambda _text: ())
    rows: list[Row] = [FileRow(id=e.id, text=e.text, position=e.line, entities=named(e.text)) for e in doc.entries]
    present = {e.key for e in doc.entries}
    for record in removed:
        if record.restored_at is None and normalise(record.text) not in present:
            rows.append(
                FileRow(
                    id=REMOVED_PREFIX + record.id,
                    text=record.text,
                    position=1_000_000 + record.line,
                    invalid_at=record.removed_at,
                    updated_at=record.removed_at,
                    entities=named(record.text),
                )
            )
    return rows


def check_keep_md(store: KeepStore, text: str, doc: KeepDoc | None = None) -> tuple[Hint, ...]:
    """Quick keep's feedback for keeping ``text`` in a keep.md (reads keep.md unless ``doc`` is given,
    and MEMORY.md; writes nothing)."""
    try:
        found = store.check(text, doc)
    except KeepguiError as exc:
        return (Hint("error", str(exc)),)
    hints: list[Hint] = []
    if found.identical is not None:
        hints.append(
            Hint(
                "warning",
                f"Already kept as entry {found.identical.number}: {_quote(found.identical.text)} — nothing to add",
            )
        )
    elif found.contained_in:
        entry = found.contained_in[0]
        hints.append(
            Hint(
                "warning",
                f"Already kept: entry {entry.number} {_quote(entry.text)} contains it "
                "(Ctrl+Enter keeps it as a variant)",
            )
        )
    if found.triage.verdict == KEEP_VERDICT:
        if found.already_kept is None:
            hints.insert(0, Hint("ok", "A durable fact about the user: it belongs in keep.md"))
    else:
        hints.insert(
            0,
            Hint(
                "warning",
                f"Belongs in {found.triage.destination}: {found.triage.reason}. Ctrl+Enter keeps it in keep.md anyway",
            ),
        )
    for entry in found.contains:
        hints.append(
            Hint(
                "info",
                f"Contains entry {entry.number} {_quote(entry.text)}: Alt+Enter replaces it, Ctrl+Enter keeps both",
            )
        )
    for near in found.near[:3]:
        hints.append(
            Hint(
                "warning",
                "Near-duplicate: " + near.describe(f"entry {near.entry.number} {_quote(near.entry.text)}"),
            )
        )
    for match in found.memory[:2]:
        hints.append(Hint("info", f"Already in MEMORY.md, line {match.line}: {_quote(match.text.lstrip('-*+ '))}"))
    if found.words > MAX_WORDS:
        hints.append(Hint("warning", f"{found.words} words: keep.md entries are terse (5–{MAX_WORDS} words)"))
    return tuple(hints)


# ---------------------------------------------------------------------- documents


def _own(doc: Document) -> nb.Document:
    """The workspace document behind an editor's ``doc`` (every Document this backend hands out carries one)."""
    if not isinstance(doc.raw, nb.Document):
        raise InvalidInput(f"{doc.title} is not a document of a nanobot workspace")
    return doc.raw


class WorkspaceDocs:
    """AGENTS.md, USER.md, SOUL.md and MEMORY.md of a workspace, as the document editor sees them."""

    creatable = False
    why_not_create = "a nanobot workspace has a fixed set of documents"
    empty_deletes = False
    previews_drafts = False
    names = None
    NAMES = ("AGENTS.md", "USER.md", "SOUL.md", "MEMORY.md")

    def __init__(self, source: NanobotSource) -> None:
        self.source = source

    def list(self) -> list[tuple[str, str]]:
        """``(name, title)``: the four documents (Dream-managed ones say so)."""
        return [(name, name + ("  · Dream" if nb.document_kind(name).managed_by_dream else "")) for name in self.NAMES]

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of the four documents."""
        return [(name, self.read(name).text) for name in self.NAMES]

    def read(self, name: str) -> Document:
        """Open a document with its notices (its size in every turn's prompt, missing keep.md pointer…)."""
        with self.source.lock:
            document = nb.open_document(self.source.workspace, name, self.source.history)
        return self._wrap(document)

    @staticmethod
    def _wrap(document: nb.Document) -> Document:
        return Document(
            document.kind.name,
            document.kind.name,
            document.path,
            document.text,
            document.stamp,
            managed_by="Dream" if document.managed_by_dream else "",
            status=document.kind.status,
            notices=tuple(n.message for n in document.notices),
            raw=document,
        )

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc`` (BOM dropped, as the editor shows it)."""
        data, stamp = fsio.read_stamped(doc.path)
        return (None if data is None else data.decode("utf-8-sig", errors="replace")), stamp

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """What to say before saving a Dream-managed file (what Dream does with it, Dream possibly running…)."""
        if not doc.managed_by:
            return []
        warnings = [
            (
                f"{doc.title} is managed by Dream: the next Dream commit folds your edit in and labels it "
                "Dream's, and /dream-restore of an older commit overwrites it."
            )
        ]
        return warnings + [n.message for n in nb.pre_save_notices(self.source.workspace, _own(doc))]

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` (a Dream-managed file only when ``confirmed``); ``result`` is the document read back."""
        source = self.source
        with source.lock:
            result = nb.save_document(
                source.workspace, _own(doc), text, confirm_dream=confirmed, history=source.history
            )
        saved = self._wrap(result.document)
        change = Change(
            source.path,
            KEEP_BANK,
            f"Save {doc.title}",
            documents=frozenset({doc.name}),
            files=stamps_of(doc.path),
            result=saved,
            written=result.written,
            feedback=tuple(Hint(n.level, n.message) for n in result.notices),
        )
        if result.written:
            change.reverse = self._undo(saved, result.previous, change.text)
        return change

    def _undo(self, saved: Document, previous: Any, text: str) -> Callable[[], Change]:
        """Put the version before ``saved`` back (or remove a file the save created), exactly."""

        def back() -> Change:
            source = self.source
            with source.lock:
                if previous is not None:
                    result = nb.restore_version(
                        source.workspace, _own(saved), previous, confirm_dream=True, history=source.history
                    )
                    restored, again = self._wrap(result.document), result.previous
                else:
                    source.workspace.check_writable(saved.path)
                    fsio.remove_file(saved.path, expect=saved.stamp)
                    restored, again = self.read(saved.name), source.history.find(saved.path, saved.stamp.sha256)
            change = Change(
                source.path,
                KEEP_BANK,
                text,
                documents=frozenset({saved.name}),
                files=stamps_of(saved.path),
                result=restored,
            )
            change.reverse = self._redo(restored, again, text)
            return change

        return back

    def _redo(self, restored: Document, version: Any, text: str) -> Callable[[], Change]:
        """Write the saved version back over exactly what the undo left."""

        def forth() -> Change:
            source = self.source
            with source.lock:
                result = nb.restore_version(
                    source.workspace, _own(restored), version, confirm_dream=True, history=source.history
                )
            saved = self._wrap(result.document)
            change = Change(
                source.path,
                KEEP_BANK,
                text,
                documents=frozenset({saved.name}),
                files=stamps_of(saved.path),
                result=saved,
            )
            change.reverse = self._undo(saved, result.previous, text)
            return change

        return forth

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document | None:
        """The document read again, if it is still the version the person was shown (else None)."""
        base = self.read(doc.name)
        return base if base.stamp.same_content(stamp) else None

    def create(self, name: str) -> Change:
        """Refused: the set of documents is fixed."""
        raise InvalidInput(self.why_not_create)

    def rename_document(self, doc: Document, new: str) -> Change:
        """Refused: the set of documents is fixed."""
        raise InvalidInput(self.why_not_create)

    def delete(self, doc: Document) -> Change:
        """Refused: the set of documents is fixed."""
        raise InvalidInput(self.why_not_create)

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> None:
        """nanobot puts no byte budget on these files."""
        return

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """The names of the documents among the changed paths."""
        out = set()
        for path in paths:
            try:
                rel = self.source.workspace.relative(path)
            except KeepguiError:
                continue
            if rel in DOCUMENT_FILES:
                out.add(DOCUMENT_FILES[rel])
        return out


# ---------------------------------------------------------------------- keep.md


class KeepBank(BankDefaults):
    """keep.md of a workspace as a bank (see the module docstring); what it lacks, BankDefaults refuses."""

    def __init__(self, source: NanobotSource) -> None:
        self.source = source
        self.name = KEEP_BANK
        self.key = BankKey(source.path, KEEP_BANK)
        self.capabilities = CAPABILITIES
        self.doc: KeepDoc | None = None
        self.delivered: list[Row] = []
        self.problem = ""
        self._activity: KeepActivity | None = None

    @property
    def lock(self) -> threading.RLock:
        """keep.md has one lock: the workspace's."""
        return self.source.lock

    @property
    def store(self) -> KeepStore:
        """The workspace's KeepStore."""
        return self.source.store

    def is_loaded(self) -> bool:
        """True once keep.md was read."""
        return self.doc is not None

    def _read(self) -> tuple[KeepDoc | None, KeepDoc, list[Row], bool]:
        """Read keep.md and the removed entries (call with the lock held): ``(doc before, doc, rows, changed)``."""
        before = self.doc
        try:
            doc = self.store.load()
            projects = self.source.projects()
            rows = keep_rows(doc, self.store.removed(), projects)
            # The Entities column (the projects entries name) shows when the workspace has projects.
            self.capabilities = CAPABILITIES_WITH_PROJECTS if projects.slugs else CAPABILITIES
        except (KeepguiError, OSError) as exc:
            self.problem = str(exc)
            raise
        changed = before is None or before.stamp.sha256 != doc.stamp.sha256 or rows != self.delivered
        self.doc, self.delivered, self.problem = doc, rows, ""
        return before, doc, rows, changed

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Read keep.md; every row when anything changed (or ``full``), nothing for an unchanged file."""
        with self.lock:
            before, doc, rows, changed = self._read()
        change = Change(
            self.source.path, KEEP_BANK, origin=DISK, rows=RowDelta(rows, (), True) if changed or full else RowDelta()
        )
        if before is not None and before.stamp.sha256 != doc.stamp.sha256 and not full:
            change.notes = (f"keep.md changed on disk: {doc.entry_count} entries (was {before.entry_count})",)
            change.reviews = (KEEP_MD,)
        return change

    def rows(self) -> Sequence[Row]:
        """The rows as last read."""
        return list(self.delivered)

    def activity(self) -> Activity:
        """Entries that appeared, changed or went, version by version of keepgui's history of keep.md."""
        with self.lock:
            if self._activity is None:
                self._activity = KeepActivity(self.store.path, self.source.history, REMOVED_PREFIX)
            return self._activity.update()

    def summary(self) -> BankSummary:
        """ "159 entries · 161 lines · compaction due", or why keep.md cannot be read."""
        if self.problem:
            return BankSummary(f"unreadable: {self.problem}", problem=self.problem)
        doc = self.doc
        if doc is None:
            return BankSummary("loading…")
        due = ""
        if doc.compaction_due:
            due = (
                f"keep.md has {doc.line_count} lines, over the keep skill's {SOFT_CAP}-line cap: compaction is due "
                f"(target about {COMPACTION_TARGET}). Review a plan before anything is written."
            )
        return BankSummary(
            f"{doc.entry_count} entries · {doc.line_count} lines" + (" · compaction due" if doc.compaction_due else ""),
            compaction_due=due,
            size=f"{doc.line_count} lines",
        )

    def documents(self) -> WorkspaceDocs:
        """AGENTS.md and the Dream-managed documents."""
        return WorkspaceDocs(self.source)

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> object:
        """nanobot's system prompt parts, plus keep.md (the question changes nothing)."""
        from keepgui.backends.nanobot.prompt import build_preview

        return build_preview(self.source.workspace)

    # ------------------------------------------------------------------ plans

    def plan(self, what: str, **options: Any) -> object:
        """A compaction plan of keep.md (``"compact"``), or the review of a rewrite of keep.md or MEMORY.md."""
        from keepgui.backends.nanobot.compact import plan_keep, review

        with self.lock:
            if what == COMPACT:
                return plan_keep(self.source.workspace, history=self.source.history, **options)
            if what in CAPABILITIES.reviews:
                return review(self.source.workspace, what, history=self.source.history)
        raise InvalidInput(f"nothing to plan named `{what}` for keep.md")

    def apply_plan(self, plan: Any, selection: frozenset[str], text: str) -> Change:
        """Apply a compaction's (or a review's) selection; undo puts back exactly what was there."""
        from keepgui.core.compaction import Applied

        change = self._change(text, lambda store: plan.apply(selection))
        applied = change.result
        change.written = isinstance(applied, Applied) and applied.changed
        if isinstance(applied, Applied) and change.written:

            def back() -> Change:
                undone = self._change(text, lambda store: applied.undo())
                undone.result, undone.reverse = applied, forth
                return undone

            def forth() -> Change:
                redone = self._change(text, lambda store: applied.redo())
                redone.result, redone.reverse = applied, back
                return redone

            change.reverse = back
        return change

    def accept_review(self, plan: Any) -> Change:
        """Accept an outside rewrite as it is: later changes are compared with this version."""
        change = self._change("Accept rewrite", lambda store: plan.accept())
        change.message = "rewrite accepted: keepgui compares later changes with this version"
        return change

    # ------------------------------------------------------------------ writing keep.md

    def _change(self, text: str, action: Callable[[KeepStore], Any]) -> Change:
        """Run ``action(store)`` and read keep.md back, under the lock; the Change knows the bytes it replaced."""
        with self.lock:
            before = self.source.workspace.read(KEEP_MD)
            try:
                result = action(self.store)
            finally:
                after = self.source.workspace.read(KEEP_MD)
                _old, _doc, rows, _changed = self._read()  # also records this version in keepgui's history
        change = Change(
            self.source.path,
            KEEP_BANK,
            text,
            rows=RowDelta(rows, (), True),
            files=stamps_of(self.store.path),
            result=result,
            written=after[0] != before[0],
        )
        change.reverse = lambda: self._swap(text, before, after)
        return change

    def _swap(
        self, text: str, target: tuple[bytes | None, fsio.Stamp], expected: tuple[bytes | None, fsio.Stamp]
    ) -> Change:
        """Write ``target``'s bytes over exactly ``expected`` (refused when keep.md changed since)."""
        data = target[0] if target[0] is not None else b""

        def put(store: KeepStore) -> None:
            store.workspace.write(store.path, data, expect=expected[1])

        change = self._change(text, put)
        change.reverse = lambda: self._swap(text, expected, target)
        return change

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Forget entries (kept in keepgui's history), or put removed ones back where they were."""
        keys = list(keys)
        if live:
            records = [
                self.source.history.get_removed(k[len(REMOVED_PREFIX) :]) for k in keys if k.startswith(REMOVED_PREFIX)
            ]
            return self._change(
                CAPABILITIES.describe("Restore", len(records)), lambda store: [store.restore(r) for r in records]
            )
        ids = [k for k in keys if not k.startswith(REMOVED_PREFIX)]
        return self._change(f"Forget {CAPABILITIES.count(len(ids))}", lambda store: [store.remove(i) for i in ids])

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """Rewrite one entry in place (the old wording is kept in keepgui's history)."""
        if field != "text" or not isinstance(value, str):
            raise InvalidInput(CAPABILITIES.why_not(TAGS if field == "tags" else ENTITIES))
        return self._change("Edit entry", lambda store: store.edit(key, value))

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """The keep skill's protocol: clean, triage, check for duplicates, then write ``- fact``."""
        change = self._change(f"Keep {_quote(text, 40)}", lambda store: store.add(text, force=force, replace=replace))
        result: KeepResult = change.result  # type: ignore[assignment]
        if not result.written:
            hints = [Hint("warning", _sentence(result.message))]
            way = _WAYS_ON.get(result.outcome)
            if way and not (
                result.outcome == ALREADY_KEPT
                and result.entry is not None
                and normalise(result.entry.text) == normalise(result.fact)
            ):
                hints.append(Hint("info", way))
            change.feedback = tuple(hints)
            change.message = result.message
            return change
        message = f"Kept: {result.fact} — keep.md of {short_path(self.source.path)}"
        if any(n.code == "compaction-due" for n in result.notices):
            message += f" (compaction is due: {result.counts.get('lines')} lines)"
        change.message = message
        return change

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What keeping ``text`` would find: triage, the entries that hold or contain it, MEMORY.md."""
        doc = self.doc
        if doc is None:
            with self.lock:
                doc = self.store.load()
        return check_keep_md(self.store, text, doc)

    def text_problem(self, text: str) -> tuple[str, bool]:
        """Words of a fact as typed (the keep skill wants 5 to 15)."""
        words = len(text.split())
        return f"{words} words", bool(text.strip())


class NanobotSource(SourceDefaults):
    """An open nanobot workspace: keep.md as its one bank, the documents, keepgui's history
    (no banks to create or trash, no settings: SourceDefaults refuses those)."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = None

    def __init__(self, path: str, options: OpenOptions | None = None) -> None:
        self.path = os.path.abspath(path)
        self.workspace = Workspace(self.path)
        self.history = History()
        self.store = KeepStore(self.workspace, self.history)
        self.lock = threading.RLock()
        self.keep = KeepBank(self)
        self._projects = ProjectMatcher()

    @property
    def label(self) -> str:
        """How the sidebar names the source."""
        return f"nanobot · {short_path(self.path)}"

    @property
    def doc(self) -> KeepDoc | None:
        """keep.md as last read."""
        return self.keep.doc

    def scan(self) -> Listing:
        """One bank, keep.md, and no trash."""
        return Listing((KEEP_BANK,), None)

    def bank(self, name: str) -> KeepBank:
        """keep.md (the only bank)."""
        if name != KEEP_BANK:
            raise NotFound(f"a nanobot workspace has no bank `{name}`; its one bank is {KEEP_BANK}")
        return self.keep

    def projects(self) -> ProjectMatcher:
        """The workspace's projects, as its ``projects/`` folder holds them now."""
        slugs = project_slugs(self.path)
        if slugs != self._projects.slugs:
            self._projects = ProjectMatcher.of(slugs)
        return self._projects

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """keep.md to re-read (also when a project folder came or went: the projects its entries
        name), documents that changed, and MEMORY.md rewrites to review."""
        touched = {"/".join(parts) for parts in changed if parts}
        if any(len(parts) <= 2 and parts[0] == PROJECTS_DIR for parts in changed if parts):
            touched.add(KEEP_MD)
        names = sorted(DOCUMENT_FILES[t] for t in touched if t in DOCUMENT_FILES)
        documents = {KEEP_BANK: frozenset(names)} if names else {}
        reviews = {KEEP_BANK: ("MEMORY.md",)} if "MEMORY.md" in names else {}
        rels = sorted(t for t in touched if t in DOCUMENT_FILES)
        notes = (f"{', '.join(rels)} changed on disk",) if rels else ()
        return WatchPlan(
            False, frozenset({KEEP_BANK}) if KEEP_MD in touched else frozenset(), documents, reviews, notes
        )


# ---------------------------------------------------------------------- the registry's entry


def identify(path: str) -> Verdict:
    """A workspace has nanobot's memory folder (``memory/MEMORY.md`` or ``memory/history.jsonl``) or a keep.md."""
    what = "a nanobot workspace"
    workspace = Workspace(path)
    if workspace.is_workspace():
        return Verdict(KIND, what, "it has nanobot's memory folder (memory/MEMORY.md or memory/history.jsonl)")
    if os.path.isfile(os.path.join(path, KEEP_MD)):
        return Verdict(KIND, what, "it has a keep.md")
    return Verdict(None, what, "no memory/MEMORY.md, memory/history.jsonl or keep.md")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """nanobot's default workspace (``~/.nanobot/workspace``), where it exists."""
    path = default_workspace_path(environ)
    return [Found(KIND, os.path.abspath(path), "nanobot's default workspace")] if os.path.isdir(path) else []


BACKEND = Backend(
    kind=KIND,
    label="nanobot workspace",
    icon="keep",
    open=NanobotSource,
    identify=identify,
    discover=discover,
    window_arg="workspace",
    demo_folder="nanobot",
    start_rank=10,
    keep_rank=0,
)
"""nanobot, as the registry knows it."""
