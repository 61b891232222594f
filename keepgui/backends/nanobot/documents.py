"""A nanobot workspace's documents for the editor: AGENTS.md and the Dream-managed USER.md, SOUL.md, MEMORY.md."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from keepgui.backends.nanobot import dream as nb
from keepgui.backends.nanobot.workspace import KEEP_MD as KEEP_BANK
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.source import (
    Change,
    Document,
    Hint,
    stamps_of,
)

if TYPE_CHECKING:
    from keepgui.backends.nanobot.backend import NanobotSource

DOCUMENT_FILES = {kind.rel: kind.name for kind in nb.DOCUMENTS.values()}


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
        return Change(
            source.path,
            KEEP_BANK,
            f"Save {doc.title}",
            documents=frozenset({doc.name}),
            files=stamps_of(doc.path),
            result=saved,
            written=result.written,
            feedback=tuple(Hint(n.level, n.message) for n in result.notices),
            reverse=self._undo(saved, result.previous, f"Save {doc.title}") if result.written else None,
        )

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
            return Change(
                source.path,
                KEEP_BANK,
                text,
                documents=frozenset({saved.name}),
                files=stamps_of(saved.path),
                result=restored,
                reverse=self._redo(restored, again, text),
            )

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
            return Change(
                source.path,
                KEEP_BANK,
                text,
                documents=frozenset({saved.name}),
                files=stamps_of(saved.path),
                result=saved,
                reverse=self._undo(saved, result.previous, text),
            )

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
