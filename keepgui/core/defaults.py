"""What a backend inherits: the answers of a source, a bank and a set of documents to everything it
does not support, and the report of a context made of named parts (no Qt).

A backend's Bank inherits :class:`BankDefaults` and implements only what it supports (its rows,
summary and preview at least); each refusal is the sentence its
:class:`~keepgui.core.source.Capabilities` give. A Source inherits :class:`SourceDefaults`, a set of
read-only documents :class:`DocumentDefaults` (two methods: ``list`` and ``read``). The protocol
itself is :mod:`keepgui.core.source`, which also names these (``from keepgui.core.source import
BankDefaults`` works as before).
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from keepgui.core import pace
from keepgui.core.fsio import Stamp
from keepgui.core.source import (
    ACTIVITY,
    COMPACT,
    CREATE,
    CREATE_BANK,
    EDIT,
    KEEP,
    MOVE,
    PIN,
    RANKED,
    REVIEW,
    TOMBSTONE,
    TRASH_BANK,
    WHAT_IF,
    Activity,
    AgentContext,
    Budget,
    Capabilities,
    Change,
    Document,
    DocumentSet,
    Hint,
    NameRule,
    Pending,
    Preview,
    Problem,
    Row,
)

if TYPE_CHECKING:
    from keepgui.core.compaction import Plan


# ---------------------------------------------------------------------- documents


class DocumentDefaults:
    """What a :class:`DocumentSet` of read-only documents answers: a backend implements :meth:`list`
    and :meth:`read` (and :attr:`why_read_only`), and inherits the rest.

    Its documents are shown, never saved, created, renamed or deleted (each refused with
    :attr:`why_read_only`); their text is what the file holds now; they have no budget. A set
    whose documents can be saved overrides :meth:`save` (and whatever else it supports).
    """

    creatable = False
    why_not_create = "these documents are the agent's own files: keepgui shows them, read-only"
    why_read_only = "keepgui shows this document read-only"
    empty_deletes = False
    previews_drafts = False

    @property
    def names(self) -> NameRule | None:
        """None: documents are not named by a person."""
        return None

    def list(self) -> builtins.list[tuple[str, str]]:
        """``(name, title)`` in the order the agent reads them (none here)."""
        return []

    def read(self, name: str) -> Document:
        """Load one document with its stamp (a set with documents overrides this)."""
        from keepgui.core.errors import NotFound

        raise NotFound(f"there is no document `{name}`")

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of every document that can be read, in order."""
        from keepgui.core.errors import KeepguiError

        out = []
        for name, _title in self.list():
            try:
                out.append((name, self.read(name).text))
            except (KeepguiError, OSError):
                continue  # a document that cannot be read has no text to count
        return out

    def current(self, doc: Document) -> tuple[str | None, Stamp]:
        """The file as it is now (UTF-8, undecodable bytes escaped)."""
        from keepgui.core.fsio import read_stamped

        data, stamp = read_stamped(doc.path)
        return (None if data is None else data.decode("utf-8", "surrogateescape")), stamp

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """Nothing to warn about."""
        return []

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Refused: the document is read-only."""
        from keepgui.core.errors import ReadOnly

        raise ReadOnly(doc.read_only or self.why_read_only)

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: Stamp) -> Document | None:
        """``doc`` as the version on disk (None when the file is gone)."""
        return None if on_disk is None else doc.with_disk(on_disk, stamp)

    def create(self, name: str) -> Change:
        """Refused: documents are not created here."""
        from keepgui.core.errors import InvalidInput

        raise InvalidInput(self.why_not_create)

    def rename_document(self, doc: Document, new: str) -> Change:
        """Refused: documents are not renamed here."""
        return self.create(new)

    def delete(self, doc: Document) -> Change:
        """Refused: documents are not deleted here."""
        return self.create(doc.name)

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget | None:
        """No budget."""
        return None

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """The documents whose file is among ``paths``."""
        from keepgui.core.errors import KeepguiError

        changed = set(paths)
        out = set()
        for name, _title in self.list():
            try:
                if self.read(name).path in changed:
                    out.add(name)
            except (KeepguiError, OSError):
                continue  # a document that cannot be read shows nothing new
        return out


class NoDocuments(DocumentDefaults):
    """The documents of a bank that has none (the editor shows an empty list)."""

    why_not_create = "this memory has no documents"


# ---------------------------------------------------------------------- a context of named parts


@dataclass(frozen=True)
class PartsContext:
    """An :class:`AgentContext` made of named parts and a heading (what a backend without a report of
    its own gives: by default the bank's preview text as the part ``text``)."""

    parts: Mapping[str, str | None]
    heading: str = ""
    warnings: tuple[str, ...] = ()

    def named_parts(self) -> Mapping[str, str | None]:
        """The parts, in order."""
        return dict(self.parts)

    def to_obj(self) -> dict[str, Any]:
        """``{"heading": ..., <part>: <text>...}``."""
        return {"heading": self.heading, **self.parts}

    def describe(self) -> str:
        """The heading, then each part under a ``--- name ---`` line, exactly."""
        out = [self.heading + "\n"] if self.heading else []
        for name, text in self.parts.items():
            out.append(f"--- {name}, exactly ---\n" if text is not None else f"--- no {name} ---\n")
            if text is not None:
                out.append(text if text.endswith("\n") or not text else text + "\n")
        return "".join(out)


# ---------------------------------------------------------------------- banks and sources


def refuse(capabilities: Capabilities, what: str) -> NoReturn:
    """Raise the refusal of a missing capability, with the reason its Capabilities give."""
    from keepgui.core.errors import InvalidInput

    raise InvalidInput(capabilities.why_not(what) or f"not possible here: {what}")


class BankDefaults(ABC):
    """What a Bank that lacks a capability answers: a refusal that gives the capability's reason.

    A backend's Bank may inherit this and implement only what it supports (its rows, summary and
    preview at least); each refusal is the sentence its :class:`Capabilities` give (the same one
    the greyed control shows). It has no documents, and its context is its preview's text.
    """

    capabilities: Capabilities

    def _refuse(self, what: str) -> NoReturn:
        refuse(self.capabilities, what)

    @abstractmethod
    def preview(self, query: str, pending: Pending | None = None, now_ms: int | None = None) -> Preview:
        """What the agent is given next: every backend says it."""

    def revisions(self, key: str) -> builtins.list[Row]:
        """No revisions are kept."""
        return []

    def problems(self) -> builtins.list[Problem]:
        """No check of the files: nothing to report."""
        return []

    def documents(self) -> DocumentSet:
        """No documents."""
        return NoDocuments()

    def context(self, query: str = "", **options: Any) -> AgentContext:
        """The preview's text as the one part ``text`` (a backend with exact parts of its own says them)."""
        if options:
            from keepgui.core.errors import InvalidInput

            raise InvalidInput(f"no options of its own for this memory's context: {', '.join(sorted(options))}")
        return PartsContext({"text": self.preview(query).text})

    def rank(self, query: str, limit: int) -> dict[str, float]:
        """Refused: no ranking."""
        self._refuse(RANKED)

    def plan(self, what: str, **options: Any) -> Plan:
        """Refused: nothing to compact or review."""
        return self._refuse(COMPACT if what == COMPACT else REVIEW)

    def apply_plan(self, plan: Plan, selection: frozenset[str], text: str) -> Change:
        """Refused: no plans."""
        return self._refuse(COMPACT)

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        """Refused: no plans."""
        return self._refuse(COMPACT)

    def accept_review(self, plan: Plan) -> Change:
        """Refused: no reviews."""
        return self._refuse(REVIEW)

    def set_pinned(self, keys: Sequence[str], pinned: bool) -> Change:
        """Refused: no pin."""
        return self._refuse(PIN)

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        """Refused: rows are not retired."""
        return self._refuse(TOMBSTONE)

    def forget(self, keys: Sequence[str]) -> Change:
        """Retire the rows (refused where rows are not retired)."""
        return self.set_live(keys, False)

    def move(self, keys: Sequence[str], offset: int) -> Change:
        """Refused: rows are not reordered."""
        return self._refuse(MOVE)

    def edit(self, key: str, field: str, value: str | builtins.list[str]) -> Change:
        """Refused: rows are not edited in place."""
        return self._refuse(EDIT)

    def create(self, text: str, tags: Sequence[str] = (), entities: Sequence[str] = (), pinned: bool = False) -> Change:
        """Refused: no New memory."""
        return self._refuse(CREATE)

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        """Refused: facts are not kept here."""
        return self._refuse(KEEP)

    def check_keep(self, text: str) -> tuple[Hint, ...]:
        """Nothing to check."""
        return ()

    def apply_pending(self, pending: Pending) -> Change:
        """Refused: no what-if toggles."""
        return self._refuse(WHAT_IF)

    def text_problem(self, text: str) -> tuple[str, bool]:
        """The length typed, and whether there is any text."""
        return f"{len(text)} characters", bool(text.strip())

    def activity(self) -> Activity:
        """Refused: the backend cannot say when its rows changed."""
        return self._refuse(ACTIVITY)

    def row_names(self) -> Mapping[str, str]:
        """No row is named by another's entities."""
        return {}

    def memory_files(self) -> builtins.list[str]:
        """The files of its documents (a backend whose rows live in other files names those too)."""
        documents = self.documents()
        found: builtins.list[str] = []
        for name, _title in documents.list():
            path = documents.read(name).path
            if path and path not in found:
                found.append(path)
        return found

    def entries_of(self, path: str, text: str) -> builtins.list[tuple[str, str]]:
        """Every line that is not blank is an entry, matched by its text."""
        return [("", line.strip()) for line in pace.lines(text) if line.strip()]

    def write_file(self, path: str, text: str, expect: Stamp) -> Change:
        """Saved as the document of that file is saved (its own checks and undo), when it is one that
        may be saved; refused with the reason otherwise."""
        from keepgui.core.errors import Conflict, ReadOnly

        documents = self.documents()
        for name, _title in documents.list():
            doc = documents.read(name)
            if doc.path != path:
                continue
            if doc.read_only:
                raise ReadOnly(f"{path}: {doc.read_only}")
            if not doc.stamp.same_content(expect):
                raise Conflict(path, expect, doc.stamp)
            return documents.save(doc, text, confirmed=True)
        raise ReadOnly(f"keepgui does not rewrite {path} whole: only the agent's own operations change it")


class SourceDefaults:
    """What a Source that has no bank operations or settings answers (see :class:`BankDefaults`)."""

    capabilities: Capabilities
    bank_names: NameRule | None = None

    @property
    def also_watched(self) -> tuple[str, ...]:
        """No folders outside the source's own to watch."""
        return ()

    def configure(self, values: Mapping[str, Any]) -> None:
        """No settings of its own: nothing to keep."""

    def set_reload_command(self, command: str | None) -> None:
        """No running agent to tell: nothing to keep."""

    def create_bank(self, name: str, description: str = "") -> Change:
        """Refused: banks are not created here."""
        refuse(self.capabilities, CREATE_BANK)

    def trash_bank(self, name: str) -> Change:
        """Refused: banks are not trashed here."""
        refuse(self.capabilities, TRASH_BANK)

    def restore_bank(self, folder: str) -> Change:
        """Refused: there is no trash."""
        refuse(self.capabilities, TRASH_BANK)

    def close(self) -> None:
        """Nothing held open."""


def nothing_written(
    source: str, bank: str | None, text: str, message: str = "", feedback: Iterable[Hint] = (), result: object = None
) -> Change:
    """A Change that wrote nothing (already kept, refused by the backend's checks)."""
    return Change(source, bank, text, written=False, message=message, feedback=tuple(feedback), result=result)


def replace_whole(key: tuple[str, str | None], path: str, text: str, expect: Stamp) -> Change:
    """Replace ``path`` with ``text`` (atomic, refused when it no longer has the content of ``expect``)
    as a :class:`Change` of the bank ``key`` (source folder, bank name) whose undo puts the previous
    bytes back, refused in turn when the file changed again since."""
    return _write_whole(key, path, text.encode("utf-8", "surrogatepass"), expect)


def create_whole(key: tuple[str, str | None], path: str, text: str) -> Change:
    """Create ``path`` holding ``text`` (never replacing a file someone made meanwhile) as a
    :class:`Change` of the bank ``key`` whose undo removes it again, refused when it changed since."""
    return _write_whole(key, path, text.encode("utf-8", "surrogatepass"), None)


def _write_whole(key: tuple[str, str | None], path: str, data: bytes, expect: Stamp | None) -> Change:
    """The one body of :func:`replace_whole` and :func:`create_whole`: ``path`` holding ``data``,
    as an undoable Change. ``expect`` None creates it (undone by removing it again); a stamp
    replaces exactly that content (undone by putting the previous bytes back)."""
    from keepgui.core import fsio
    from keepgui.core.errors import Conflict
    from keepgui.core.source import Written

    name = path.rsplit("/", 1)[-1]
    if expect is None:
        try:
            written = fsio.create_new(path, data)
        except FileExistsError:
            raise Conflict(path, Stamp.missing(), fsio.current_stamp(path)) from None

        def back() -> Change:
            fsio.remove_file(path, expect=written)
            return Change(source=key[0], bank=key[1], text=f"Remove {name}", files=(Written(path, None),))

        verb, done = "Create", "created"
    else:
        previous, stamp = fsio.read_stamped(path)
        if previous is None or not stamp.same_content(expect):
            raise Conflict(path, expect, stamp)
        written = fsio.atomic_write(path, data, expect=stamp)

        def back() -> Change:
            return _write_whole(key, path, previous, written)

        verb, done = "Rewrite", "rewritten"
    return Change(
        source=key[0],
        bank=key[1],
        text=f"{verb} {name}",
        message=f"{path} {done}",
        files=(Written(path, written),),
        reverse=back,
    )
