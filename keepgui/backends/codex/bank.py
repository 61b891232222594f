"""A Codex home's memory as a bank of the seam (:mod:`keepgui.core.source`).

Codex's memory is global to its home, so every bank of a Codex source shows the
same rows (:mod:`.rows`: the summary by section and bullet, the handbook, the
notes, and the files Codex regenerates, read-only). What differs between banks
is the folder a session starts in: the home's own bank (``memory``) shows the
memory block and the global ``AGENTS.md`` alone; a project bank shows that
folder's whole ``AGENTS.md`` chain in the documents editor, its budget, and the
exact context of a session started there (:mod:`.context`).

The operations write only what Codex allows (:mod:`.writes`):

* **keep** (Quick keep, New memory) writes a new ad-hoc note — Codex's own
  channel for "remember this" — and never touches a file Codex owns;
* **correct** (editing a row's text) writes a note that says what to change,
  quoting the entry as it is; **forget** (:meth:`CodexBank.forget`) a note that
  says what to drop. Until a consolidation succeeds the summary keeps its old
  text: the row's status says the note is pending;
* the summary itself is edited in the documents editor, with the truth said
  first and refused while Codex's consolidation holds its lease;
* **review** (:mod:`.compact`) shows what a consolidation changed in the
  summary entry by entry; "restore" keeps a note that asks for it back.

Every write returns a Change that undoes itself (a note keepgui just kept is
removed while no consolidation has read it).
"""

from __future__ import annotations

import calendar
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from keepgui.backends.codex import writes
from keepgui.backends.codex.compact import REVIEW_NAME, ConsolidationReview, NoteApplied, remember, review
from keepgui.backends.codex.context import CodexPreview, SessionContext, build_preview, home_context, session_context
from keepgui.backends.codex.documents import CodexDocuments
from keepgui.backends.codex.layout import CodexConfig, CodexEnv, MemoryRoot, active_root, read_config
from keepgui.backends.codex.memory import consolidation_lease, version_word
from keepgui.backends.codex.rows import NOTE, PENDING, HomeState, read_state, rows_of, sizes
from keepgui.backends.codex.text import is_blank, size_words, utf8_len
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.paths import short_path
from keepgui.core.source import (
    COMPACT,
    CREATED,
    DISK,
    EDITED,
    ENTITIES,
    FORCE,
    HISTORY,
    MOVE,
    PIN,
    QUERY,
    RANKED,
    TAGS,
    TOMBSTONE,
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
    RowDelta,
    Written,
    nothing_written,
)

if TYPE_CHECKING:
    from keepgui.backends.codex.backend import CodexSource
import dataclasses

TITLE_CHARS = 32
"""A project's folder longer than this is named by its last two folders in the sidebar (the tooltip has it whole)."""

HOME_BANK = "memory"
"""The name of a home's own bank (the memory with the global AGENTS.md alone)."""

CAPABILITIES = Capabilities(
    missing={
        MOVE: "memory_summary.md's order is Codex's consolidation's; notes are files with no order",
        PIN: "Codex has no pin: memory_summary.md is injected whole (up to 10,000 bytes); the rest is read on demand",
        TOMBSTONE: "Codex forgets through a note: select the memory and use Edit to say what to drop, or "
        "`keepgui forget --agent codex`; the consolidation agent applies it",
        TAGS: "the tags say where a memory stands (injected, pending…); Codex's files have no tags",
        ENTITIES: "Codex's memory has no entities",
        HISTORY: "keepgui keeps every version of the summary it saw instead: the review shows what changed",
        RANKED: "Codex has no recall ranking: the summary is injected, the rest the model searches itself",
        QUERY: "what a Codex session is given at its start does not depend on a question",
        WHAT_IF: "the preview shows the files as they are saved",
        COMPACT: "Codex consolidates its memory itself; keepgui reviews what a consolidation changed "
        "(Bank → Review outside rewrite)",
        FORCE: "every note is kept as written; Codex's consolidation merges what repeats",
    },
    fields=frozenset({"text", "tags", "updated"}),
    ordered=True,
    noun="memory",
    nouns="memories",
    retire="Forget",
    reviews=(REVIEW_NAME,),
)
"""What a Codex bank can do in the window, and why not."""


def correction_text(old: str, new: str) -> str:
    """The note that corrects a memory entry: what it says now, and what it should say."""
    return (
        "Correct this memory. It currently says:\n\n" + _quoted(old) + "\n\nIt should say instead:\n\n" + _quoted(new)
    )


def forget_text(entries: Sequence[str]) -> str:
    """The note that asks to forget memory entries."""
    return "Forget these memories; they are wrong or no longer wanted:\n\n" + "\n\n".join(_quoted(e) for e in entries)


def _note_time(key: str) -> int | None:
    """The time (epoch ms, UTC) a note's name records, or None when the name has none."""
    name = key.split(":", 1)[1]
    try:
        return int(calendar.timegm(time.strptime(name[:19], "%Y-%m-%dT%H-%M-%S")) * 1000)
    except ValueError:
        return None


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip("\n").split("\n"))


def _both(first: writes.Done, then: writes.Done) -> writes.Done:
    """Two writes as one: their files, and a reverse that takes back the second, then the first."""
    done = writes.Done(first.text, [*first.files, *then.files], first.result)
    if first.reverse is not None and then.reverse is not None:
        undo_first, undo_then = first.reverse, then.reverse
        done.reverse = lambda: _both(undo_then(), undo_first())
    return done


class CodexBank(BankDefaults):
    """The memory of a Codex home seen from one folder (see the module docstring)."""

    def __init__(self, source: CodexSource, name: str, cwd: str | None) -> None:
        self.source = source
        self.name = name
        self.cwd = cwd
        self.key = BankKey(source.path, name)
        self.capabilities = CAPABILITIES
        self.delivered: list[FileRow] = []
        self.problem = ""
        self._state: HomeState | None = None
        self._loaded = False
        self._loaded_summary: str | None = None
        """The summary's SHA-256 at the last load: a read of the state by anyone else in between (a
        background scan asking for a preview) must not hide a rewrite from the next load."""
        self._problem_count = 0

    # ------------------------------------------------------------ what it is

    @property
    def env(self) -> CodexEnv:
        """The Codex home's environment."""
        return self.source.env

    @property
    def lock(self) -> threading.RLock:
        """One lock per source: reads and writes never interleave."""
        return self.source.lock

    @property
    def title(self) -> str:
        """How the sidebar names the bank: ``memory`` for the home, the project's folder otherwise."""
        if self.cwd is None:
            return HOME_BANK
        shown = short_path(self.cwd)
        if len(shown) <= TITLE_CHARS:
            return shown
        return os.path.join(*self.cwd.split(os.sep)[-2:])  # a long path: its last two folders

    def root(self) -> MemoryRoot:
        """The active memory root now."""
        return active_root(self.env.home)

    def memory_files(self) -> list[str]:
        """The documents' files and the ad hoc notes (rows of the bank, each a file of its own)."""
        from keepgui.backends.codex.memory import NOTES_DIR

        notes = os.path.join(self.root().path, NOTES_DIR)
        try:
            names = sorted(n for n in os.listdir(notes) if n.endswith(".md") and not n.startswith("."))
        except OSError:
            names = []
        return [*super().memory_files(), *(os.path.join(notes, n) for n in names)]

    def state(self) -> HomeState:
        """The home as last read (read now when it was not yet)."""
        with self.lock:
            if self._state is None:
                self._state = read_state(self.env, self.cwd)
            return self._state

    def state_config(self) -> CodexConfig:
        """The configuration as last read."""
        state = self._state
        if state is not None:
            return state.config
        return read_config(self.env.home, None if self.cwd is None else os.path.realpath(self.cwd), self.env.paths)

    def forget_state(self) -> None:
        """The home changed: read it again when next asked."""
        with self.lock:
            self._state = None

    # ------------------------------------------------------------ reading

    def is_loaded(self) -> bool:
        """True once the home was read."""
        return self._loaded

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Read the home; every row when anything changed; a review asked when a consolidation (or anyone)
        changed the summary since the version a person last accepted."""
        with self.lock:
            first = not self._loaded
            try:
                state = read_state(self.env, self.cwd)
                rows = rows_of(state)
                pending = remember(state, self.source.history)
            except (KeepguiError, OSError) as exc:
                self.problem = str(exc)
                raise
            changed = first or rows != self.delivered
            previous, self._loaded_summary = self._loaded_summary, state.summary.stamp.sha256
            self._state, self.delivered, self.problem, self._loaded = state, rows, "", True
            self._problem_count = len(self.problems())
        change = Change(
            self.source.path,
            self.name,
            origin=DISK,
            rows=RowDelta(rows, (), True) if changed or full else RowDelta(),
            documents=frozenset({state.summary.path}) if changed and not first else frozenset(),
        )
        summary_moved = previous is None or previous != state.summary.stamp.sha256
        if pending and summary_moved and self.name == self.source.review_bank:
            # one bank of the source asks: they all show the same summary
            return dataclasses.replace(change, reviews=(REVIEW_NAME,))
        return change

    def rows(self) -> Sequence[FileRow]:
        """The rows as last read."""
        return list(self.delivered)

    def summary(self) -> BankSummary:
        """``14 memories · memory on (V2) · 2,163 bytes injected · 1 note pending``."""
        description = f"Codex home {short_path(self.env.home)}"
        if self.cwd is not None:
            description = f"sessions started in {self.cwd}\n{description}"
        if self.env.problem:
            return BankSummary(f"Codex would not start: {self.env.problem}", problem=self.env.problem, title=self.title)
        if self.problem:
            return BankSummary(f"unreadable: {self.problem}", problem=self.problem, title=self.title)
        state = self._state
        if state is None or not self._loaded:
            return BankSummary("loading…", description=description, title=self.title)
        sized = sizes(state)
        memory = (
            f"memory on ({state.root.version.upper()})"
            if state.config.memory_on
            else "memory OFF: " + ("not turned on" if not state.config.features_memories else "use_memories = false")
        )
        parts = [CAPABILITIES.count(len(self.delivered)), memory]
        if state.block is not None:
            parts.append(f"{sized['injected']:,} bytes injected")
        elif state.config.memory_on:
            parts.append("nothing injected")
        waiting = sum(1 for r in self.delivered if r.id.startswith(NOTE + ":") and PENDING in r.tags)
        if waiting:
            parts.append(f"{waiting} note{'s' if waiting != 1 else ''} pending")
        description += (
            f"\nmemory root {version_word(state.root.version)}: {state.root.why}"
            f"\ninjected at every start: {size_words(sized['injected'])}; read on demand: "
            f"{size_words(sized['on_demand'])}"
        )
        if not state.config.memory_on:
            description += f"\n{state.config.why_off}"
        return BankSummary(
            " · ".join(parts),
            description=description,
            size=f"{sized['summary']:,} bytes",
            problems=self._problem_count,  # counted by the load, off the GUI thread
            title=self.title,
        )

    def activity(self) -> Activity:
        """When the memory's files were written: a note when its name says, a rollout summary when it was
        synced, the summary's entries (and the handbook's) when their file last changed — Codex keeps no
        time per entry."""
        events: list[tuple[int, str, str]] = []
        for row in self.delivered:
            when = _note_time(row.id) if row.id.startswith(NOTE + ":") else row.updated_at
            if when is not None:
                kind = EDITED if row.id.startswith(("summary:", "handbook:", "raw")) else CREATED
                events.append((when, kind, row.id))
        return Activity.from_events(
            events, note="when each file was written: Codex keeps no time per entry of its summary"
        )

    def problems(self) -> list[Problem]:
        """What keeps Codex from reading its memory files as a person expects."""
        state = self._state
        if state is None:
            return []
        out = [Problem(state.config.path, 0, p, "config") for p in state.config.problems]
        if self.env.problem:
            out.append(Problem(self.env.home, 0, self.env.problem, "codex-home"))
        summary = state.summary
        if summary.exists and summary.text is None:
            out.append(Problem(summary.path, 0, summary.problem, "not-utf8"))
        if summary.truncation.cut:
            out.append(
                Problem(
                    summary.path,
                    0,
                    f"{summary.truncation.size:,} bytes, over the 10,000 Codex injects whole: "
                    f"{summary.truncation.dropped:,} bytes in the middle are never seen",
                    "summary-cut",
                )
            )
        if state.baseline_problem:
            out.append(Problem(state.root.path, 0, state.baseline_problem, "baseline", "note"))
        if self.cwd is not None:
            context = session_context(self.cwd, self.env)
            out.extend(Problem(f.path, 0, f.reason, f"agents-{f.status}") for f in context.chain.files if f.reason)
        return out

    def documents(self) -> CodexDocuments:
        """The AGENTS.md files a session here reads, then the summary (and the handbook in V1)."""
        return CodexDocuments(self)

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> CodexPreview:
        """What the next session here is given from its memory files, exactly (:mod:`.context`)."""
        if self.cwd is not None and os.path.isdir(self.cwd):
            return build_preview(session_context(self.cwd, self.env))
        return build_preview(home_context(self.env), folder_known=False)

    def context(self, query: str = "", **options: Any) -> SessionContext:
        """``keepgui context --agent codex --project DIR``: the parts ``memory`` and ``agents_md``, exactly."""
        if options:
            raise InvalidInput(f"no options of its own for Codex's context: {', '.join(sorted(options))}")
        return session_context(self.cwd, self.env) if self.cwd is not None else home_context(self.env)

    # ------------------------------------------------------------ writes

    def _note(self, text: str, label: str, message: str) -> Change:
        with self.lock:
            root = self.root()
            done = writes.keep_note(self.env.home, root, text)
        return self._change_of(done, label, message)

    def _change_of(self, done: writes.Done, label: str, message: str = "") -> Change:
        with self.lock:
            self._state = read_state(self.env, self.cwd)
            rows = rows_of(self._state)
            self.delivered = rows
        change = Change(
            self.source.path,
            self.name,
            label,
            rows=RowDelta(rows, (), True),
            files=tuple(Written(path, stamp) for path, stamp in done.files),
            result=done.result,
            message=message,
        )
        if done.reverse is None:
            return change
        reverse = done.reverse
        return dataclasses.replace(change, reverse=lambda: self._change_of(reverse(), label))

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """Keep a fact as a new ad-hoc note (Codex's own channel); the next consolidation folds it in."""
        if is_blank(text):
            raise InvalidInput("there is nothing to keep: the text is empty")
        change = self._note(text, "Keep note", "")
        return dataclasses.replace(
            change,
            message=f"Kept as a note: {os.path.basename(str(change.result))} — Codex folds it into its memory at "
            "the next successful consolidation",
        )

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """New memory: a note (tags and entities have no place in Codex's files)."""
        if tags or entities or pinned:
            raise InvalidInput("a Codex note is text only: no tags, entities or pin")
        return self.keep(text)

    def _row(self, key: str) -> FileRow:
        row = next((r for r in self.delivered if r.id == key), None)
        if row is None:
            raise NotFound(f"{self.title} has no memory {key}")
        return row

    def redact_row(self, key: str, text: str, pairs: Sequence[tuple[str, str]]) -> Change:
        """A secret out of a note keepgui kept that no consolidation has read yet: the note is kept
        again without it (a new name, made of the redacted text) and the old one removed, as one
        undoable write. Never through a correction note (it would quote the secret); the files Codex
        writes itself, and a note it has read, are Codex's: refused with the reason."""
        if not key.startswith("note:"):
            raise ReadOnly(
                f"{self._row(key).id}: Codex writes its memory files itself; keepgui redacts the secret in "
                "memory_summary.md (a document), and Codex's own files keep it until its next consolidation"
            )
        with self.lock:
            root = self.root()
            path = os.path.join(writes.notes_folder(root), key.split(":", 1)[1])
            seen = writes.note_seen_by_codex(root, path)
            if seen:
                raise ReadOnly(f"{os.path.basename(path)}: {seen}; Codex's notes are never rewritten")
            data, stamp = fsio.read_stamped(path)
            if data is None:
                raise NotFound(f"{path}: the note is gone")
            clean = data.decode("utf-8", "replace")
            for secret, replacement in pairs:
                clean = clean.replace(secret, replacement)
            kept = writes.keep_note(self.env.home, root, clean)
            removed = writes.remove_own_note(self.env.home, root, path, stamp, data)
        return self._change_of(_both(kept, removed), "Redact secret")

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """Correct a memory: a note that quotes the entry and says what it should say (the files Codex
        owns are never edited; the summary itself is edited in the documents editor)."""
        if field != "text":
            raise InvalidInput(CAPABILITIES.why_not(TAGS if field == "tags" else ENTITIES))
        if not isinstance(value, str) or is_blank(value):
            raise InvalidInput("a correction needs the text the memory should say; to drop it, forget it")
        row = self._row(key)
        if row.text.strip() == value.strip():
            return nothing_written(self.source.path, self.name, "Correct memory", "nothing changed")
        change = self._note(correction_text(row.text, value), "Correct memory", "")
        return dataclasses.replace(
            change,
            message=f"Kept a correction note: {os.path.basename(str(change.result))}. The memory reads as before "
            "until Codex's next consolidation applies it",
        )

    def forget(self, keys: Sequence[str]) -> Change:
        """Forget memories: one note that quotes them and asks the consolidation to drop them."""
        rows = [self._row(k) for k in keys]
        if not rows:
            return nothing_written(self.source.path, self.name, "Forget", "nothing selected")
        change = self._note(forget_text([r.text for r in rows]), f"Forget {CAPABILITIES.count(len(rows))}", "")
        return dataclasses.replace(
            change,
            message=f"Kept a note asking to forget {CAPABILITIES.count(len(rows))}: "
            f"{os.path.basename(str(change.result))}",
        )

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """Where the note would go, and what would stop it (a consolidation's lease, a root that is a file)."""
        lease = consolidation_lease(self.env.home)
        if lease is not None:
            return (Hint("error", lease.sentence()),)
        if is_blank(text):
            return ()
        root = self.root()
        folder = short_path(writes.notes_folder(root))
        return (
            Hint("ok", f"A new note in {folder}/{writes.note_name(writes.slug_of(text))}"),
            Hint(
                "info",
                "Codex does not inject notes: its next successful consolidation folds the note into the summary",
            ),
        )

    def text_problem(self, text: str) -> tuple[str, bool]:
        """The note's size as typed."""
        return f"{utf8_len(text):,} bytes · a new note", not is_blank(text)

    # ------------------------------------------------------------ review

    def plan(self, what: str, **options: Any) -> ConsolidationReview:
        """The review of what changed in the summary since the accepted version."""
        if what != REVIEW_NAME:
            raise InvalidInput(CAPABILITIES.why_not(COMPACT) if what == COMPACT else f"no plan {what!r} for Codex")
        with self.lock:
            return review(read_state(self.env, self.cwd), self.source.history, self.cwd)

    def apply_plan(self, plan: object, selection: frozenset[str], text: str) -> Change:
        """Restore the selected changes as one note (one undoable change)."""
        if not isinstance(plan, ConsolidationReview):
            raise InvalidInput(f"{self.title}: not a review of a Codex memory")
        with self.lock:
            applied = plan.apply(selection)
        return self._applied_change(applied, text)

    def _applied_change(self, applied: NoteApplied, text: str) -> Change:
        done = applied.done
        if done is None:
            return nothing_written(self.source.path, self.name, text, "nothing selected", result=applied)
        return dataclasses.replace(
            self._change_of(done, text),
            result=applied,
            message=f"kept a note asking to restore {len(applied.lines)} change(s): {os.path.basename(str(done.result))}",
        )

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a restore applied from the command line (``keepgui review --undo``): its note is removed
        while its bytes are as keepgui kept them (refused once anyone, a consolidation too, changed it)."""
        from keepgui.core.compaction import load_applied

        done = load_applied(dict(applied), self.source.history)
        if not isinstance(done, NoteApplied) or os.path.realpath(done.home) != os.path.realpath(self.env.home):
            raise InvalidInput(f"not a restore kept in {self.env.home}: nothing was undone")
        with self.lock:
            done.undo()
        if done.done is None:
            raise InvalidInput("nothing to undo")
        change = self._change_of(done.done, f"Undo: {done.description}")
        return dataclasses.replace(change, result=done, message=f"undone: {done.description}")

    def accept_review(self, plan: object) -> Change:
        """Take the summary as the review read it as the accepted version (nothing written in the home)."""
        if not isinstance(plan, ConsolidationReview):
            raise InvalidInput(f"{self.title}: not a review of a Codex memory")
        with self.lock:
            plan.accept()
        return Change(
            self.source.path,
            self.name,
            "Accept the summary as it is",
            written=False,
            message="accepted: keepgui compares later changes with the summary as it is now",
        )
