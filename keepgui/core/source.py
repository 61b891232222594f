"""THE protocol every memory backend presents, and the records that cross it (no Qt).

keepgui reads the memory of several agents (iii banks, nanobot workspaces, Claude
Code projects...). Each backend is one package that turns its files into the
objects of this module; the window and the generic commands are written once
against them and never learn a backend's file format.

The face of a backend:

* a :class:`Source` is one open place on disk (an iii data dir, a nanobot
  workspace, a Claude Code project): it lists its :class:`Bank`\\ s, says what a
  set of changed files means (:meth:`Source.classify`), and may create, trash and
  restore banks;
* a :class:`Bank` is what a person browses: its :class:`Row`\\ s (memories,
  entries, topic files), its :class:`DocumentSet` (rules, AGENTS.md, CLAUDE.md,
  MEMORY.md...), a preview ("what the agent sees next", exact), its
  :class:`Capabilities`, and operations;
* every operation that writes returns a :class:`Change`: what changed (rows by
  key, documents, the bank listing, the files with the stamps written) and how
  to take itself back (:meth:`Change.undo`, which refuses with
  :class:`~keepgui.core.errors.Conflict` when the files changed since).

Rows are the backend's own compact records (an iii ``Memory`` is a msgspec
Struct) or a :class:`FileRow`: one object per row, built off the GUI thread, and
handed over in bulk (:class:`RowDelta`), never wrapped again.
"""

from __future__ import annotations

import bisect
import builtins
import itertools
import os
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import msgspec

from keepgui.core.fsio import Stamp

if TYPE_CHECKING:  # compaction imports this module (its Notice); its plans are named here for types only
    from keepgui.core.compaction import Plan
    from keepgui.core.defaults import (
        BankDefaults as BankDefaults,
        DocumentDefaults as DocumentDefaults,
        NoDocuments as NoDocuments,
        PartsContext as PartsContext,
        SourceDefaults as SourceDefaults,
        nothing_written as nothing_written,
        refuse as refuse,
    )

_DEFAULTS = frozenset(
    {"BankDefaults", "DocumentDefaults", "NoDocuments", "PartsContext", "SourceDefaults", "nothing_written", "refuse"}
)
"""What :mod:`keepgui.core.defaults` defines and this module names too (backends import them from either)."""


def __getattr__(name: str) -> Any:
    """The defaults a backend inherits, named here as well (:mod:`keepgui.core.defaults` imports this
    module, so they are looked up when first asked for)."""
    if name in _DEFAULTS:
        from keepgui.core import defaults

        return getattr(defaults, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------- naming a bank


@dataclass(frozen=True)
class BankKey:
    """Which bank: the source folder and the bank name (unique in the window)."""

    source: str
    bank: str

    def __str__(self) -> str:
        return self.bank


@dataclass(frozen=True)
class Notice:
    """A remark for a person about a file: ``level`` is ``"info"`` or ``"warning"``.

    ``code`` is stable (the window picks icons and tests match on it); ``message``
    is the sentence shown.
    """

    code: str
    level: str
    message: str

    def to_obj(self) -> dict[str, str]:
        """``{code, level, message}``."""
        return {"code": self.code, "level": self.level, "message": self.message}


@dataclass(frozen=True)
class Hint:
    """One line of feedback while a person types (Quick keep): ``level`` is ``ok``, ``info``,
    ``warning`` or ``error``."""

    level: str
    text: str


# ---------------------------------------------------------------------- rows


@runtime_checkable
class Row(Protocol):
    """One row of the memory table: a memory, a keep.md entry, a topic file.

    Every backend's row has these attributes (``None`` or empty where the
    backend has no such field; :attr:`Capabilities.fields` says which are
    meaningful). ``id`` is the stable key; a row is *retired* (deleted,
    superseded, forgotten) when ``invalid_at`` is set. ``entities`` are the
    names the row links to (an iii memory's entities; a topic file's
    ``[[name]]`` links), so a graph can be drawn for any backend. ``position``
    is the row's place in its file for backends whose rows have a file order;
    ``fields`` are extra labelled values the detail pane (and ``memories
    --json``) shows as they are: where the row came from (an iii memory's
    session and agent), a topic file's description...
    """

    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def entities(self) -> tuple[str, ...]: ...
    @property
    def pinned(self) -> bool: ...
    @property
    def invalid_at(self) -> int | None: ...
    @property
    def superseded_by(self) -> str | None: ...
    @property
    def corroboration(self) -> int | None: ...
    @property
    def confidence(self) -> str | None: ...
    @property
    def created_at(self) -> int | None: ...
    @property
    def updated_at(self) -> int | None: ...
    @property
    def revision(self) -> int | None: ...
    @property
    def position(self) -> int | None: ...
    @property
    def fields(self) -> tuple[tuple[str, str], ...]: ...


class FileRow(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The row of a backend whose memory is files and lines (a keep.md entry, a topic file).

    One compact, immutable record per row (a msgspec Struct that the garbage
    collector does not track); two rows with equal fields compare equal, so a
    file read again whole changes nothing in the table.
    """

    id: str
    text: str
    position: int | None = None
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    pinned: bool = False
    invalid_at: int | None = None
    superseded_by: str | None = None
    corroboration: int | None = None
    confidence: str | None = None
    created_at: int | None = None
    updated_at: int | None = None
    revision: int | None = None
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RowDelta:
    """Rows handed to the table in one piece.

    ``rows`` are new or changed rows; ``removed`` keys that are gone. With
    ``complete``, ``rows`` is every row of the bank (a load, or a file read again
    whole): a key the table holds that is not among them is gone too.
    """

    rows: Sequence[Row] = ()
    removed: Sequence[str] = ()
    complete: bool = False

    def __bool__(self) -> bool:
        return bool(self.rows or self.removed or self.complete)

    @property
    def keys(self) -> list[str]:
        """The keys of the new or changed rows."""
        return [r.id for r in self.rows]


def plural(n: int, one: str, many: str, *, digits: str = "") -> str:
    """``"1 memory"``, ``"3 memories"`` (``digits``: a format spec for the number, ``","`` for ``1,024``)."""
    return f"{n:{digits}} {one if n == 1 else many}"


# ---------------------------------------------------------------------- capabilities

PIN = "pin"
"""Rows can be pinned."""
TOMBSTONE = "tombstone"
"""Rows can be retired and brought back (a tombstone, a reversible forget)."""
EDIT = "edit"
"""A row's text can be edited in place."""
TAGS = "tags"
"""Rows carry tags that can be edited."""
ENTITIES = "entities"
"""Rows carry entities that can be edited."""
HISTORY = "history"
"""A row has revisions to show in the detail pane."""
RANKED = "ranked"
"""The bank has a recall ranking for the search box's Ranked mode."""
CREATE = "create"
"""New rows are made with text, tags, entities and a pin (the New memory dialog)."""
KEEP = "keep"
"""A fact can be kept here (Quick keep, Keep fact)."""
FORCE = "force"
"""A keep can be forced past the backend's own checks (Ctrl+Enter)."""
QUERY = "query"
"""The preview depends on the question asked."""
WHAT_IF = "what-if"
"""The preview can show pins and deletions that are not written yet."""
COMPACT = "compact"
"""A compaction can be planned and reviewed."""
REVIEW = "review"
"""Rewrites made outside keepgui can be reviewed and undone entry by entry."""
CREATE_BANK = "create-bank"
"""(of a source) New banks can be made."""
TRASH_BANK = "trash-bank"
"""(of a source) Banks can be moved to a trash and restored."""
ACTIVITY = "activity"
"""The bank can say when its rows were captured and changed (:meth:`Bank.activity`: the activity strip)."""
MOVE = "move"
"""(of a bank whose rows keep their file order) A row can be moved up or down in its file (:meth:`Bank.move`)."""

ALL_FIELDS = frozenset(
    {"pinned", "live", "text", "tags", "entities", "seen", "confidence", "created", "updated", "revision"}
)
"""The table columns a row can fill."""


@dataclass(frozen=True)
class Capabilities:
    """What a bank (or a source) can do, and the reason for each thing it cannot.

    ``missing`` maps a capability it lacks (:data:`PIN`, :data:`TOMBSTONE`...)
    to the sentence a greyed control shows as its tooltip. ``fields`` are the
    columns its rows fill; ``ordered`` means rows keep their file order (the
    table shows them by :attr:`Row.position` and does not sort); ``noun`` and
    ``nouns`` name a row ("memory", "entry"); ``retire`` is the verb for
    retiring one ("Delete", "Forget"); ``reviews`` names the files whose rewrites
    by others can be reviewed.
    """

    missing: Mapping[str, str] = field(default_factory=dict)
    fields: frozenset[str] = ALL_FIELDS
    ordered: bool = False
    noun: str = "memory"
    nouns: str = "memories"
    retire: str = "Delete"
    reviews: tuple[str, ...] = ()

    def can(self, what: str) -> bool:
        """True when ``what`` is supported."""
        return what not in self.missing

    def why_not(self, what: str) -> str:
        """The explanation for a missing capability ("" when it is supported)."""
        return self.missing.get(what, "")

    def count(self, n: int) -> str:
        """``"1 memory"``, ``"12 entries"``."""
        return f"{n} {self.noun if n == 1 else self.nouns}"

    def describe(self, action: str, n: int) -> str:
        """An undo text: ``"Pin memory"``, ``"Delete 12 memories"``."""
        return f"{action} {self.noun if n == 1 else self.count(n)}"

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``."""
        return {
            "missing": dict(self.missing),
            "fields": sorted(self.fields),
            "ordered": self.ordered,
            "noun": self.noun,
            "nouns": self.nouns,
        }


# ---------------------------------------------------------------------- names and texts


class NameRule(Protocol):
    """The rule a new bank or document name must follow (the dialog explains it and suggests one)."""

    def describe(self) -> str:
        """The rule in words ("Lowercase letters, digits, - and _ ...")."""

    def problem(self, name: str) -> str:
        """Why ``name`` cannot be used ("" when it can)."""

    def suggest(self, name: str) -> str:
        """A usable name close to ``name`` ("" when there is none)."""


# ---------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Document:
    """A document as loaded into the editor (a rule, AGENTS.md, CLAUDE.md, MEMORY.md...).

    ``name`` identifies it in its :class:`DocumentSet`; ``title`` is what the
    list shows; ``text`` and ``stamp`` are what was read (the stamp is presented
    on save). ``managed_by`` names the program that rewrites the file on its own
    ("Dream"), or is "". ``status`` and ``notices`` are shown above the editor;
    ``raw`` is the backend's own object. ``read_only`` says why the document
    cannot be saved (a file an organisation's policy manages, a file locked
    while the agent consolidates it), or is "": the editor then shows it
    read-only with that reason.
    """

    name: str
    title: str
    path: str
    text: str
    stamp: Stamp
    managed_by: str = ""
    status: str = ""
    notices: tuple[str, ...] = ()
    raw: object = None
    read_only: str = ""

    @property
    def size(self) -> int:
        """UTF-8 bytes of the text."""
        return len(self.text.encode("utf-8", errors="surrogatepass"))

    def with_disk(self, text: str, stamp: Stamp) -> Document:
        """This document as the version on disk a person was shown (to save over exactly that)."""
        return replace(self, text=text, stamp=stamp)


@dataclass(frozen=True)
class BudgetSegment:
    """One document's part of a shared budget: where it starts, how much is sent, and how it fares."""

    name: str
    start: int
    sent: int
    size: int
    status: str  # "fit", "truncated", "omitted"


@dataclass(frozen=True)
class Budget:
    """Where the edited document sits in a budget the agent enforces (bytes), for the meter.

    ``cut_char`` is the character offset in the edited text from which nothing
    is sent (None when all of it is); ``sentence`` says it in words for the
    current document and ``summary`` for all of them; ``warn`` marks a cut.
    """

    total: int
    segments: tuple[BudgetSegment, ...]
    current: str | None
    sentence: str
    summary: str
    cut_char: int | None = None
    warn: bool = False

    @property
    def place(self) -> BudgetSegment | None:
        """The segment of the current document."""
        return next((s for s in self.segments if s.name == self.current), None)


@dataclass(frozen=True)
class TextMark:
    """A span of an edited document's text the agent will treat specially, and what it becomes.

    ``start`` and ``end`` are character offsets in the text; ``level`` is ``"info"`` or ``"warning"``;
    ``note`` says what the agent will make of the span (a Gemini CLI ``@word`` that becomes a failed
    import). The editor tints the spans and shows the note over them.
    """

    start: int
    end: int
    level: str
    note: str


def marks_of(documents: object, name: str, text: str) -> list[TextMark]:
    """The marks a document set gives for the edited ``text`` of document ``name`` ([] when it gives none).

    A :class:`DocumentSet` may define ``marks(name, text) -> list[TextMark]``; it is optional, so the
    editor asks through this function.
    """
    method = getattr(documents, "marks", None)
    if method is None:
        return []
    found = method(name, text)
    return [m for m in found if isinstance(m, TextMark)]


class DocumentSet(Protocol):
    """The documents of a bank, as the editor sees them.

    Every save presents the stamp the text was loaded with and is refused with
    :class:`~keepgui.core.errors.Conflict` when the file changed since; every
    write returns a :class:`Change` (so Undo takes it back).
    """

    creatable: bool
    """Documents can be created, renamed and deleted."""
    why_not_create: str
    empty_deletes: bool
    """Saving empty text deletes the document (after asking)."""
    previews_drafts: bool
    """Unsaved texts feed the preview's what-if view."""

    @property
    def names(self) -> NameRule | None:
        """The rule new document names follow (None: documents are not named by a person)."""

    def list(self) -> builtins.list[tuple[str, str]]:
        """``(name, title)`` in the order the agent reads them."""

    def read(self, name: str) -> Document:
        """Load one document with its stamp."""

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of every readable document, in order (for budgets)."""

    def current(self, doc: Document) -> tuple[str | None, Stamp]:
        """What is on disk now for ``doc`` (None when the file is gone)."""

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """What to tell a person before saving a managed document ([] otherwise)."""

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` over ``doc``; the Change's ``result`` is the document read back (None if deleted)."""

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: Stamp) -> Document | None:
        """``doc`` as the disk version a person was shown, to overwrite exactly that (None: changed again)."""

    def create(self, name: str) -> Change:
        """A new document (``result``: the Document)."""

    def rename_document(self, doc: Document, new: str) -> Change:
        """Rename (``result``: the Document under its new name)."""

    def delete(self, doc: Document) -> Change:
        """Delete (refused when it changed since it was loaded)."""

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget | None:
        """Where ``text`` (the edited document) sits in the agent's budget, or None when there is none
        (``texts``: the set's ``(name, content)`` as the caller last read them; None reads them now)."""

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Which of these documents' names the changed (absolute) paths are."""


# ---------------------------------------------------------------------- what the agent is given


class Preview(Protocol):
    """What the agent is given next from the bank, exactly, as the window's Preview panel shows it.

    ``text`` is all of it, as it would be given (the generic view and the Copy button show it);
    a backend's adapter (:mod:`keepgui.ui.adapters`) may read more of its own preview.
    """

    @property
    def text(self) -> str:
        """Exactly what would be given to the agent."""


class AgentContext(Protocol):
    """What an agent's next session is given from its memory, exactly: ``keepgui context``.

    :meth:`named_parts` are the exact texts by name, in the order the agent gets them (Claude
    Code's ``reminder``, nanobot's ``memory_prompt``...; None: the part is absent this time);
    ``keepgui context --part NAME`` prints one of them byte for byte. :meth:`to_obj` is the
    ``--json`` object: it holds every part under its own name, beside whatever else the backend
    says. :meth:`describe` is the report for a person (ending with the parts themselves) and
    :attr:`warnings` what to tell them beside it (on stderr).
    """

    @property
    def warnings(self) -> tuple[str, ...]:
        """Remarks for a person (when an edit takes effect, files that could not be read...)."""

    def named_parts(self) -> Mapping[str, str | None]:
        """The exact parts by name, in the order the agent gets them."""

    def to_obj(self) -> dict[str, Any]:
        """The ``--json`` object (every part under its own name)."""

    def describe(self) -> str:
        """The report for a person: what the parts are made of, then the parts themselves."""


# ---------------------------------------------------------------------- changes


@dataclass(frozen=True)
class Written:
    """A file a change wrote, with the stamp it left (None: the file was removed)."""

    path: str
    stamp: Stamp | None = None


OURS = "keepgui"
"""A change this program made (a person's action)."""
DISK = "disk"
"""A change found on disk: a load, or someone else's write."""


@dataclass(frozen=True)
class Change:
    """What one write changed, and how to take it back (every operation returns one).

    ``text`` is the undo menu's text ("Pin memory"). ``rows`` are the rows of
    ``bank`` that changed; ``documents`` the names of its documents that did;
    ``listing`` means banks appeared or vanished in the source; ``files`` the
    files written with their new stamps (the watcher's echo of them is ours).
    ``written`` is False when nothing was written (already kept, nothing to
    do): there is then nothing to undo. ``result`` is the backend's own result
    (the record saved, the KeepResult...); ``message`` a sentence for the person;
    ``feedback`` what to show when nothing was written; ``notes`` status lines;
    ``reviews`` files whose rewrite by someone else deserves a review.

    :meth:`undo` takes the change back and returns the Change that did so
    (whose own undo redoes this one); it raises
    :class:`~keepgui.core.errors.Conflict` when the files changed since, so
    nobody's later edit is overwritten. ``why_not_undo`` says why a change
    cannot be undone at all.

    A Change is built once and never altered: a backend that learns more after the write (its
    undo, a message) makes the final Change with :func:`dataclasses.replace`.
    """

    source: str
    bank: str | None = None
    text: str = ""
    origin: str = OURS
    rows: RowDelta = field(default_factory=RowDelta)
    documents: frozenset[str] = frozenset()
    listing: bool = False
    files: tuple[Written, ...] = ()
    written: bool = True
    result: object = None
    message: str = ""
    feedback: tuple[Hint, ...] = ()
    notes: tuple[str, ...] = ()
    reviews: tuple[str, ...] = ()
    partial: bool = False
    reverse: Callable[[], Change] | None = field(default=None, repr=False)
    why_not_undo: str = "this change cannot be undone"

    @property
    def key(self) -> BankKey | None:
        """The bank whose rows or documents changed."""
        return None if self.bank is None else BankKey(self.source, self.bank)

    @property
    def can_undo(self) -> bool:
        """True when :meth:`undo` can be tried (it may still refuse if the files changed since)."""
        return self.written and self.reverse is not None

    def undo(self) -> Change:
        """Take this change back; returns the Change that did it."""
        if self.reverse is None:
            from keepgui.core.errors import InvalidInput

            raise InvalidInput(f"{self.text or 'the change'}: {self.why_not_undo}")
        return self.reverse()


def stamps_of(*paths: str) -> tuple[Written, ...]:
    """:class:`Written` records for files just written, stamped as they are on disk now (size, time)."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(Written(path, None))
            continue
        out.append(Written(path, Stamp(True, st.st_size, st.st_mtime_ns)))
    return tuple(out)


# ---------------------------------------------------------------------- what a bank shows


@dataclass(frozen=True)
class BankSummary:
    """The sidebar's view of a bank: its second line, and what is wrong or due.

    ``detail`` is "41 memories · 3 pinned · 2 rules"; ``problem`` why the bank
    cannot be read (it is then shown, never written); ``description`` a longer
    text for the tooltip; ``compaction_due`` the sentence offering a compaction
    ("" when none is due) and ``size`` the figure the tray names ("172 lines");
    ``problems`` how many problems reading the bank found (lines the agent skips...),
    the count of the sidebar's badge (:meth:`Bank.problems` lists them, and whatever
    else a check of its files finds).
    ``title`` is how the sidebar names the bank when its name is a folder name
    not meant for people (a Claude Code project's ``-home-ann-work-app`` is shown
    as ``~/work/app``); "" shows the name.
    """

    detail: str
    problem: str = ""
    description: str = ""
    compaction_due: str = ""
    size: str = ""
    problems: int = 0
    title: str = ""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a bank's files, as a check of them (``keepgui doctor``) reports it.

    ``path`` is the file and ``line`` its line (0: the whole file); ``message`` says what is
    wrong and what the agent does about it; ``code`` is stable (tests match on it); a ``note``
    level marks something worth knowing that is not wrong (a line still being written).
    """

    path: str
    line: int
    message: str
    code: str = ""
    level: str = "warning"

    @property
    def where(self) -> str:
        """``file:line`` (or the file)."""
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True)
class Pending:
    """Unsaved changes a preview shows as if they were written (a what-if view).

    ``drafts``: document name -> unsaved text (None: being deleted);
    ``pins`` and ``live``: row key -> the state asked for.
    """

    drafts: Mapping[str, str | None] = field(default_factory=dict)
    pins: Mapping[str, bool] = field(default_factory=dict)
    live: Mapping[str, bool] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.drafts or self.pins or self.live)


@dataclass(frozen=True)
class Trashed:
    """A bank in a source's trash: its folder, the bank it was, when (ms), where."""

    folder: str
    bank: str
    trashed_at: int
    path: str


@dataclass(frozen=True)
class Listing:
    """What a scan of a source found: its banks, (None: no trash) its trashed banks, and ``own``: the
    bank the agent itself uses when none is named — a new session's (None: none stands out)."""

    names: tuple[str, ...]
    trashed: tuple[Trashed, ...] | None = None
    own: str | None = None


@dataclass(frozen=True)
class WatchPlan:
    """What a set of changed files means for a source (see :meth:`Source.classify`).

    ``rescan``: re-list the banks; ``refresh``: banks whose rows to re-read;
    ``documents``: bank -> names of its documents that changed;
    ``reviews``: bank -> files rewritten, worth a review; ``notes``: status lines.
    """

    rescan: bool = False
    refresh: frozenset[str] = frozenset()
    documents: Mapping[str, frozenset[str]] = field(default_factory=dict)
    reviews: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------------- activity

CREATED = "created"
"""A row was captured (a new memory, an entry that appeared in a file)."""
REINFORCED = "reinforced"
"""A row was stated again (its corroboration went up)."""
EDITED = "edited"
"""Any other revision of a row: its text, labels or pin changed, or it was brought back."""
RETIRED = "retired"
"""A row was deleted, superseded or forgotten (a tombstone)."""
CAPTURE_KINDS = (CREATED, REINFORCED, EDITED, RETIRED)
"""Every kind of capture event, in the order the activity strip stacks them."""


class Activity:
    """Every capture event of a bank: when it happened (epoch ms), what kind, and which row.

    Per kind (:data:`CAPTURE_KINDS`), ``times[kind]`` holds the events' times in
    ascending order and ``rows[kind]`` the index in ``keys`` of each event's row
    (compact arrays: a bank of a million memories has millions of events).
    ``since`` is when the record of events begins (None: from the bank's first
    row); ``note`` says where the events come from, for the strip's tooltip.
    An Activity is a snapshot: the backend hands out a new one when rows change.
    """

    __slots__ = ("keys", "note", "rows", "since", "times")

    def __init__(
        self,
        keys: Sequence[str],
        times: Mapping[str, array[int]],
        rows: Mapping[str, array[int]],
        since: int | None = None,
        note: str = "",
    ) -> None:
        self.keys = keys
        self.times = {kind: times.get(kind, array("q")) for kind in CAPTURE_KINDS}
        self.rows = {kind: rows.get(kind, array("l")) for kind in CAPTURE_KINDS}
        self.since = since
        self.note = note

    @classmethod
    def from_events(cls, events: Iterable[tuple[int, str, str]], since: int | None = None, note: str = "") -> Activity:
        """An Activity from ``(time ms, kind, row key)`` events in any order (for small banks)."""
        keys: list[str] = []
        index: dict[str, int] = {}
        per_kind: dict[str, list[tuple[int, int]]] = {kind: [] for kind in CAPTURE_KINDS}
        for at, kind, key in events:
            row = index.get(key)
            if row is None:
                row = index[key] = len(keys)
                keys.append(key)
            per_kind[kind].append((at, row))
        times = {kind: array("q", sorted(at for at, _ in pairs)) for kind, pairs in per_kind.items()}
        rows = {kind: array("l", (row for _, row in sorted(pairs))) for kind, pairs in per_kind.items()}
        return cls(keys, times, rows, since, note)

    def __len__(self) -> int:
        return sum(len(t) for t in self.times.values())

    @property
    def first(self) -> int | None:
        """The time of the earliest event (None when there is none)."""
        starts = [t[0] for t in self.times.values() if t]
        return min(starts) if starts else None

    @property
    def last(self) -> int | None:
        """The time of the latest event (None when there is none)."""
        ends = [t[-1] for t in self.times.values() if t]
        return max(ends) if ends else None

    def counts(self, bounds: Sequence[int]) -> dict[str, list[int]]:
        """Events of each kind in every interval ``[bounds[i], bounds[i + 1])`` (ascending bounds,
        e.g. local midnights): ``kind -> len(bounds) - 1 counts``."""
        out: dict[str, list[int]] = {}
        for kind, times in self.times.items():
            cuts = [bisect.bisect_left(times, b) for b in bounds]
            out[kind] = [hi - lo for lo, hi in itertools.pairwise(cuts)]
        return out

    def keys_between(self, start: int, end: int, kinds: Iterable[str] = CAPTURE_KINDS) -> set[str]:
        """The keys of the rows with an event of these kinds in ``[start, end)``."""
        found: set[int] = set()
        for kind in kinds:
            times = self.times[kind]
            lo, hi = bisect.bisect_left(times, start), bisect.bisect_left(times, end)
            found.update(self.rows[kind][lo:hi])
        keys = self.keys
        return {keys[i] for i in found}


Progress = Callable[[int, int, Callable[[], Sequence[Row]]], None]
"""``progress(done, total, rows_so_far)`` during a long load: bytes read of ``total``, and a
function that returns every row read so far (to show them while the load runs)."""


class Bank(Protocol):
    """One bank: rows, documents, a preview, capabilities and operations (see the module docstring).

    Reads and writes take the bank's own locks: call them from any thread.
    Loads, previews, rankings and plans run on background threads; writes on the
    GUI thread (an append and an fsync take milliseconds).
    """

    key: BankKey
    capabilities: Capabilities

    def load(self, progress: Progress | None = None, *, full: bool = False) -> Change:
        """Bring the rows up to date (incrementally when the files only grew).

        Returns a :data:`DISK` Change whose rows are every row (``complete``)
        with ``full`` or on a first load, else the rows that changed.
        """

    def is_loaded(self) -> bool:
        """True once the rows were read."""

    def rows(self) -> Sequence[Row]:
        """The rows as last loaded (do not mutate)."""

    def summary(self) -> BankSummary:
        """The sidebar's line (call after a load)."""

    def documents(self) -> DocumentSet:
        """The bank's documents."""

    def revisions(self, key: str) -> list[Row]:
        """Every revision of one row, oldest first ([] when the backend keeps none)."""

    def problems(self) -> list[Problem]:
        """Everything wrong with the bank's files (read only, on a background thread), in file order."""

    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> Preview:
        """What the agent would be given next, exactly (the adapter of the backend shows it)."""

    def context(self, query: str = "", **options: Any) -> AgentContext:
        """What the agent's next session is given, as named exact parts (``keepgui context``);
        ``options`` are the backend's own options of that command (its registry entry names them)."""

    def rank(self, query: str, limit: int) -> dict[str, float]:
        """Recall scores (key -> score) of the best rows for ``query`` (the Ranked search)."""

    def plan(self, what: str, **options: Any) -> Plan:
        """A compaction plan (``"compact"``) or a review of an outside rewrite of a file (its name);
        ``options`` are the backend's own options of ``keepgui compact`` / ``review``."""

    def apply_plan(self, plan: Plan, selection: frozenset[str], text: str) -> Change:
        """Apply the selected operations of a plan (one undoable change; its ``result`` is the
        :class:`~keepgui.core.compaction.Applied`, which the command line keeps for ``--undo``)."""

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Take back a plan applied earlier in another process, from its journal form
        (:meth:`~keepgui.core.compaction.Applied.to_obj`): ``keepgui compact --undo``."""

    def accept_review(self, plan: Plan) -> Change:
        """Accept an outside rewrite as it is (stop showing it)."""

    def set_pinned(self, keys: Sequence[str], pinned: bool) -> Change:
        """Pin or unpin rows."""

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Retire rows (a tombstone, a reversible forget) or bring them back."""

    def forget(self, keys: Sequence[str]) -> Change:
        """Forget rows the agent's way (``keepgui forget``): retire them (:meth:`set_live`) by default;
        an agent that forgets otherwise (a note its own consolidation applies) says so here."""

    def move(self, keys: Sequence[str], offset: int) -> Change:
        """Move one row ``offset`` places up (negative) or down in its file (:data:`MOVE`)."""

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        """Edit a row's ``text`` (a string) or its ``tags`` / ``entities`` (lists)."""

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """A new row with these fields (the New memory dialog)."""

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """Keep a fact as the agent's own keep command would (Quick keep)."""

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """What keeping ``text`` would find (duplicates, triage), writing nothing."""

    def apply_pending(self, pending: Pending) -> Change:
        """Write the what-if toggles of a preview."""

    def text_problem(self, text: str) -> tuple[str, bool]:
        """A label for a new row's text as typed ("12 / 2000 bytes") and whether it can be saved."""

    def activity(self) -> Activity:
        """Every capture event of the rows (call after a load, off the GUI thread); refused with the
        reason of :data:`ACTIVITY` when the backend cannot say when its rows changed."""

    def memory_files(self) -> Sequence[str]:
        """The files that hold this bank's memory, each an absolute path (missing ones too): keepgui's
        journal keeps every version of each, and its inbox lists what others changed in them."""
        ...

    def entries_of(self, path: str, text: str) -> Sequence[tuple[str, str]]:
        """The entries of one version (``text``) of one of :meth:`memory_files`, in file order, in the
        backend's own notion of an entry: ``(key, text)``, where ``key`` is the entry's identity when
        it has one (a memory's id, a topic file's name) or "" (entries are then matched by text)."""
        ...

    def write_file(self, path: str, text: str, expect: Stamp) -> Change:
        """Replace one of :meth:`memory_files` whole with ``text`` (a revert from the inbox), as the
        agent accepts it, refused with :class:`~keepgui.core.errors.Conflict` when the file no longer
        has the content of ``expect``, and with the reason when keepgui may not rewrite it."""
        ...

    def row_names(self) -> Mapping[str, str]:
        """The names by which rows link to other rows of the bank: name -> key (a row whose entity is
        such a name links to that row, as a topic file's ``[[name]]`` does); {} when entities name
        things, not rows."""


class Source(Protocol):
    """One open place on disk: its banks, and what its files' changes mean.

    ``kind`` is the registry's name of the backend; ``label`` how the sidebar
    names the source; ``capabilities`` what can be done to its banks
    (:data:`CREATE_BANK`, :data:`TRASH_BANK`). ``also_watched`` names folders
    outside ``path`` whose changes matter to the source too (a Claude Code
    project's memory folder lives under ``~/.claude``): the window watches them
    as well, and :meth:`classify` gets their files' parts relative to ``path``
    (so they begin with ``..``); a source whose folders are all inside ``path`` names none.
    """

    # Read-only members (a backend may keep each as an attribute or a property).
    @property
    def kind(self) -> str:
        """The registry's name of the backend."""

    @property
    def path(self) -> str:
        """The folder opened (absolute)."""

    @property
    def label(self) -> str:
        """How the sidebar names the source."""

    @property
    def capabilities(self) -> Capabilities:
        """What can be done to its banks."""

    @property
    def bank_names(self) -> NameRule | None:
        """The rule a new bank's name follows (None: banks are not named by a person)."""

    @property
    def also_watched(self) -> tuple[str, ...]:
        """Folders outside ``path`` whose changes matter to the source too."""

    def scan(self) -> Listing:
        """List the banks (and the trash) as they are on disk now."""

    def bank(self, name: str) -> Bank:
        """One bank (the same object for the same name while it exists)."""

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """What files changed under the source mean (``changed``: path parts relative to it;
        ``listed``: the bank names shown now)."""

    def configure(self, values: Mapping[str, Any]) -> None:
        """Settings a person chose for this source (the iii worker's settings the preview uses)."""

    def set_reload_command(self, command: str | None) -> None:
        """The command that tells a running agent to reload after a write (the preference changed;
        None: the backend's default, "": none), as given when the source was opened."""

    def create_bank(self, name: str, description: str = "") -> Change:
        """A new bank (``result``: its name)."""

    def trash_bank(self, name: str) -> Change:
        """Move a bank to the trash (restorable)."""

    def restore_bank(self, folder: str) -> Change:
        """Bring a trashed bank back (``result``: its name)."""

    def close(self) -> None:
        """The source is no longer shown."""
