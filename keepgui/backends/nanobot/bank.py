"""A nanobot workspace's keep.md as a bank of the seam: its entries as rows, keep, forget and edit, its preview and plans."""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from keepgui.backends.nanobot.activity import KeepActivity, ProjectMatcher
from keepgui.backends.nanobot.documents import DOCUMENT_FILES, WorkspaceDocs
from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, SOFT_CAP, KeepDoc, normalise
from keepgui.backends.nanobot.triage import KEEP as KEEP_VERDICT
from keepgui.backends.nanobot.workspace import KEEP_MD, MEMORY_MD
from keepgui.backends.nanobot.writes import (
    ALREADY_KEPT,
    KEEP_CAPABILITIES,
    MAX_WORDS,
    REDIRECTED,
    REPLACE_OFFERED,
    KeepResult,
    KeepStore,
)
from keepgui.core import fsio
from keepgui.core.defaults import replace_whole
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.paths import short_path
from keepgui.core.source import (
    COMPACT,
    CREATE,
    DISK,
    ENTITIES,
    HISTORY,
    MOVE,
    PIN,
    QUERY,
    RANKED,
    TAGS,
    WHAT_IF,
    Activity,
    BankDefaults,
    BankKey,
    BankSummary,
    Capabilities,
    Change,
    FileRow,
    Hint,
    Pending,
    Problem,
    Progress,
    Row,
    RowDelta,
    plural,
    stamps_of,
)

if TYPE_CHECKING:
    from keepgui.backends.nanobot.backend import NanobotSource
    from keepgui.backends.nanobot.context import PromptPreview
    from keepgui.core.compaction import Plan

KEEP_BANK = KEEP_MD
"""A workspace's one bank is its keep.md."""

CAPABILITIES = Capabilities(
    missing={
        MOVE: "keepgui does not reorder keep.md: nanobot reads every entry on every turn, wherever it stands",
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


REMOVED_PREFIX = "removed:"
"""The key of a retired row: an entry keepgui removed, kept in its history."""


"""Workspace paths of the documents the editor shows, and their names."""

_WAYS_ON = {
    REDIRECTED: "Ctrl+Enter keeps it in keep.md anyway.",
    REPLACE_OFFERED: "Alt+Enter replaces that entry; Ctrl+Enter keeps both.",
    ALREADY_KEPT: "Ctrl+Enter keeps it as a separate variant.",
}
"""What the person can do after a keep that wrote nothing (an identical entry has no way on)."""


def _via_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options of a rewrite by a command: ``via_timeout`` is its ``timeout``."""
    out = dict(options)
    if "via_timeout" in out:
        timeout = out.pop("via_timeout")
        if timeout is not None and timeout <= 0:
            raise InvalidInput("--via-timeout must be a number of seconds above 0")
        if timeout is not None:
            out["timeout"] = timeout
    return out


def _quote(text: str, limit: int = 70) -> str:
    from keepgui.core.compaction import excerpt

    return f"“{excerpt(text, limit)}”"


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


LEFTOVER = (
    "a temporary file a killed keepgui write left behind (it may hold a line being forgotten); "
    "look at it, then remove it"
)


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
        self._memory_looked: tuple[int, int, int] | None = None  # MEMORY.md's inode, size, time when last recorded

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
            self._saw_memory_md()
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

    def _saw_memory_md(self) -> None:
        """Record MEMORY.md as it is when keep.md is read: a rewrite of it from then on (Dream's) has the
        version before it to be reviewed against, whether or not the documents editor has read it yet.
        A copy caught mid-write or unreadable is left to the editor and the review to report."""
        workspace, history = self.source.workspace, self.source.history
        path = workspace.path(MEMORY_MD)
        try:
            st = os.stat(path)
        except OSError:
            return
        looked = (st.st_ino, st.st_size, st.st_mtime_ns)
        if looked == self._memory_looked:
            return  # as this bank recorded it last: keep.md's reloads do not read it again
        last = history.latest(path)
        try:
            data, _stamp = workspace.read(MEMORY_MD, settled=True, before=last.size if last else None)
        except (KeepguiError, OSError):
            return
        if data is not None:
            history.record(path, data, source="seen")
            self._memory_looked = looked

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Read keep.md; every row when anything changed (or ``full``), nothing for an unchanged file."""
        with self.lock:
            before, doc, rows, changed = self._read()
        rewritten = before is not None and before.stamp.sha256 != doc.stamp.sha256 and not full
        return Change(
            self.source.path,
            KEEP_BANK,
            origin=DISK,
            rows=RowDelta(rows, (), True) if changed or full else RowDelta(),
            notes=(f"keep.md changed on disk: {doc.entry_count} entries (was {before.entry_count})",)
            if rewritten and before is not None
            else (),
            reviews=(KEEP_MD,) if rewritten else (),
        )

    def rows(self) -> Sequence[Row]:
        """The rows as last read."""
        return list(self.delivered)

    def memory_files(self) -> list[str]:
        """keep.md, then the workspace's documents."""
        return [self.store.path, *(p for p in super().memory_files() if p != self.store.path)]

    def write_file(self, path: str, text: str, expect: fsio.Stamp) -> Change:
        """keep.md replaced whole under the workspace's lock (conflict-checked, undoable); the
        documents as the editor saves them."""
        if path != self.store.path:
            return super().write_file(path, text, expect)
        with self.lock:
            return replace_whole((self.source.path, KEEP_BANK), path, text, expect)

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
            f"{plural(doc.entry_count, 'entry', 'entries')} · {plural(doc.line_count, 'line', 'lines')}"
            + (" · compaction due" if doc.compaction_due else ""),
            compaction_due=due,
            size=f"{doc.line_count} lines",
        )

    def documents(self) -> WorkspaceDocs:
        """AGENTS.md and the Dream-managed documents."""
        return WorkspaceDocs(self.source)

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> PromptPreview:
        """nanobot's system prompt parts, plus keep.md (the question changes nothing)."""
        from keepgui.backends.nanobot.context import build_preview

        return build_preview(self.source.workspace)

    def context(self, query: str = "", **options: Any) -> PromptPreview:
        """The memory-bearing part of nanobot's system prompt (``memory_prompt``), exactly; with
        ``exact`` (nanobot-ai installed), nanobot's own whole ``system_prompt`` too."""
        from keepgui.backends.nanobot.context import build_preview

        exact = bool(options.pop("exact", False))
        if options:
            raise InvalidInput(f"nanobot's context has no option {', '.join(sorted(options))}")
        return build_preview(self.source.workspace, exact=exact)

    # ------------------------------------------------------------------ plans

    def plan(self, what: str, **options: Any) -> Plan:
        """A compaction plan of keep.md (``"compact"``; ``options``: ``target``, ``threshold``, or ``via``
        with ``via_timeout`` to have a command rewrite it), or the review of a rewrite of keep.md or
        MEMORY.md (``options``: ``threshold``)."""
        from keepgui.backends.nanobot.compact import plan_keep, review, rewrite_via

        with self.lock:
            if what == COMPACT and options.get("via"):
                via = str(options.pop("via"))
                return rewrite_via(self.source.workspace, via, history=self.source.history, **_via_options(options))
            if what == COMPACT:
                return plan_keep(self.source.workspace, history=self.source.history, **options)
            if what in CAPABILITIES.reviews:
                return review(self.source.workspace, what, history=self.source.history, **options)
        raise InvalidInput(
            f"nothing to plan named `{what}` for keep.md (plans: compact, {', '.join(CAPABILITIES.reviews)})"
        )

    def apply_plan(self, plan: Plan, selection: frozenset[str], text: str) -> Change:
        """Apply a compaction's (or a review's) selection; undo puts back exactly what was there."""
        from keepgui.core.compaction import Applied

        change = self._change(text, lambda store: plan.apply(selection))
        applied = change.result
        if not isinstance(applied, Applied) or not applied.changed:
            return replace(change, written=False)
        return self._undoable(self._with_files(change, applied), applied)

    def _with_files(self, change: Change, applied: Any) -> Change:
        """``change`` naming every file ``applied`` wrote besides keep.md (AGENTS.md, MEMORY.md…)
        with its stamp, and the documents among them: the watcher's echo of them is known as ours."""
        workspace = self.source.workspace
        rels = [f.rel for f in getattr(applied, "files", ())]
        paths = [p for p in dict.fromkeys(workspace.path(rel) for rel in rels) if p != self.store.path]
        names = frozenset(DOCUMENT_FILES[rel] for rel in rels if rel in DOCUMENT_FILES)
        return replace(change, files=(*change.files, *stamps_of(*paths)), documents=change.documents | names)

    def _undoable(self, change: Change, applied: Any) -> Change:
        """``change`` taken back by ``applied``'s own undo (and that undo's redo)."""
        text = change.text

        def back() -> Change:
            undone = self._with_files(self._change(text, lambda store: applied.undo()), applied)
            return replace(undone, result=applied, reverse=forth)

        def forth() -> Change:
            redone = self._with_files(self._change(text, lambda store: applied.redo()), applied)
            return replace(redone, result=applied, reverse=back)

        return replace(change, reverse=back)

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a compaction (or a review's restore) applied from the command line, from its journal form."""
        from keepgui.backends.nanobot import compact  # noqa: F401 - registers the kinds of applied plans it journals
        from keepgui.core.compaction import load_applied

        done = load_applied(dict(applied), self.source.history)
        workspace = getattr(done, "workspace", None)
        if not isinstance(workspace, str) or os.path.realpath(workspace) != os.path.realpath(self.source.path):
            raise InvalidInput(f"not a compaction of this workspace ({done.target}): nothing was undone")
        change = self._change(f"Undo: {done.description}", lambda store: done.undo())
        return replace(change, result=done, message=f"undone: {done.description}")

    def accept_review(self, plan: Plan) -> Change:
        """Accept an outside rewrite as it is: later changes are compared with this version."""
        accept = getattr(plan, "accept", None)
        if accept is None:
            raise InvalidInput(f"{plan.subject}: only the review of a rewrite can be accepted")
        change = self._change("Accept rewrite", lambda store: accept())
        return replace(change, message="rewrite accepted: keepgui compares later changes with this version")

    # ------------------------------------------------------------------ writing keep.md

    def _change(self, text: str, action: Callable[[KeepStore], Any]) -> Change:
        """Run ``action(store)`` and read keep.md back, under the lock; the Change knows the bytes it replaced."""
        with self.lock:
            before = self.source.workspace.read(KEEP_MD, settled=True)
            self.store.writes = []
            try:
                result = action(self.store)
            finally:
                after = self.source.workspace.read(KEEP_MD, settled=True)
                _old, _doc, rows, _changed = self._read()  # also records this version in keepgui's history
            writes, self.store.writes = self.store.writes, []
        if writes and all(a[1] == b[0] for a, b in itertools.pairwise(writes)):
            # undo puts back what keepgui's own writes replaced, not what was read before them:
            # another program's lines added in between stay
            before, after = writes[0][0], writes[-1][1]
        return Change(
            self.source.path,
            KEEP_BANK,
            text,
            rows=RowDelta(rows, (), True),
            files=stamps_of(self.store.path),
            result=result,
            written=bool(writes) or (not hasattr(result, "written") and after[0] != before[0]),
            reverse=lambda: self._swap(text, before, after),
        )

    def _swap(
        self, text: str, target: tuple[bytes | None, fsio.Stamp], expected: tuple[bytes | None, fsio.Stamp]
    ) -> Change:
        """Write ``target``'s bytes over exactly ``expected`` (refused when keep.md changed since)."""
        data = target[0] if target[0] is not None else b""

        def put(store: KeepStore) -> None:
            store.workspace.write(store.path, data, expect=expected[1])

        return replace(self._change(text, put), reverse=lambda: self._swap(text, expected, target))

    def problems(self) -> list[Problem]:
        """keepgui's temporary files a killed write left in the workspace or its memory folder (a killed
        forget can leave the forgotten line in one)."""
        root = self.source.workspace.root
        found = fsio.leftover_temps(root, deep=False) + fsio.leftover_temps(os.path.join(root, "memory"), deep=False)
        return [Problem(path, 0, LEFTOVER, "leftover-temp") for path in found]

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
            return dataclasses.replace(change, feedback=tuple(hints), message=result.message)
        message = f"Kept: {result.fact} — keep.md of {short_path(self.source.path)}"
        if any(n.code == "compaction-due" for n in result.notices):
            message += f" (compaction is due: {result.counts.get('lines')} lines)"
        return dataclasses.replace(change, message=message)

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
