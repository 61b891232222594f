"""The documents of a bank, as the rule editor sees them: iii rules or a workspace's documents.

One small interface for both backends, so the editor is written once:
``list()``, ``read(name)``, ``save(doc, text)``, and for iii rules
``create``/``rename_rule``/``delete``. Every save presents the stamp the text was
loaded with; a file changed on disk since is refused with
:class:`~keepgui.core.errors.Conflict`, never overwritten. The actual reading
and writing is done by :mod:`keepgui.core`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from keepgui.core import fsio
from keepgui.core.iii.textrules import byte_len
from keepgui.core.nanobot import documents as nb


@dataclass(frozen=True)
class EditableDoc:
    """A document as loaded into the editor.

    ``name`` is the rule name (or the document name); ``title`` what the list
    shows; ``text`` and ``stamp`` what was read; ``dream`` marks Dream-managed
    files; ``status`` and ``notices`` are shown above the editor.
    """

    name: str
    title: str
    path: str
    text: str
    stamp: fsio.Stamp
    dream: bool = False
    status: str = ""
    notices: tuple[str, ...] = field(default_factory=tuple)
    raw: object = None

    @property
    def size(self) -> int:
        """UTF-8 bytes of the text."""
        return byte_len(self.text)


class _Docs:
    """What both document sets share: reading what is on disk now."""

    # Rules keep a BOM as content (the worker sends it); workspace documents drop it.
    _encoding = "utf-8"

    def current(self, doc: EditableDoc) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc`` (None when the file is gone)."""
        data, stamp = fsio.read_stamped(doc.path)
        return (None if data is None else data.decode(self._encoding, errors="replace")), stamp


class RuleDocs(_Docs):
    """The rules of one iii bank."""

    kind = "rules"
    can_create = True
    why_not_create = ""

    def __init__(self, source, bank: str) -> None:
        self.source = source
        self.bank_name = bank

    def _bank(self):
        return self.source.bank(self.bank_name)

    def list(self) -> list[tuple[str, str]]:
        """``(name, title)`` in injection order."""
        return [(name, f"{name}.md") for name in self._bank().rule_names()]

    def texts(self) -> list[tuple[str, str]]:
        """``(name, content)`` of every readable rule, in injection order (for budgets and previews)."""
        rules, _ = self._bank().rules()
        return [(r.name, r.content) for r in rules]

    def read(self, name: str) -> EditableDoc:
        """Load one rule with its stamp."""
        rule = self._bank().read_rule(name)
        return EditableDoc(name, f"{name}.md", rule.path, rule.content, rule.stamp,
                           status="rule: sent word for word on every turn, within the shared budget")

    def save(self, doc: EditableDoc, text: str, *, confirmed: bool = False) -> tuple[EditableDoc | None, list[str]]:
        """Write ``text`` (empty text deletes the rule); returns the reloaded doc (None if deleted)."""
        with self.source.lock:
            rule = self._bank().write_rule(doc.name, text, expect=doc.stamp)
        if rule is None:
            return None, [f"{doc.title} deleted (empty content)"]
        return self.read(doc.name), []

    def create(self, name: str) -> EditableDoc:
        """A new rule with the console's starting content ``# <name>``."""
        with self.source.lock:
            self._bank().write_rule(name, f"# {name}\n", expect=fsio.Stamp.missing())
        return self.read(name)

    def rename_rule(self, doc: EditableDoc, new: str) -> EditableDoc:
        """Rename the rule file (refused if it changed since it was loaded)."""
        with self.source.lock:
            self._bank().rename_rule(doc.name, new, expect=doc.stamp)
        return self.read(new)

    def delete(self, doc: EditableDoc) -> None:
        """Delete the rule file (refused if it changed since it was loaded)."""
        with self.source.lock:
            self._bank().delete_rule(doc.name, expect=doc.stamp)

    def base_for_overwrite(self, doc: EditableDoc, on_disk: str | None, stamp: fsio.Stamp) -> EditableDoc:
        """``doc`` as the version on disk the person was shown (``stamp``), to save over exactly that."""
        return dataclasses.replace(doc, text=on_disk or "", stamp=stamp)


class WorkspaceDocs(_Docs):
    """AGENTS.md, USER.md, SOUL.md and MEMORY.md of a nanobot workspace."""

    kind = "workspace"
    can_create = False
    why_not_create = "a nanobot workspace has a fixed set of documents"
    NAMES = ("AGENTS.md", "USER.md", "SOUL.md", "MEMORY.md")
    _encoding = "utf-8-sig"

    def __init__(self, source) -> None:
        self.source = source

    def list(self) -> list[tuple[str, str]]:
        """``(name, title)``: the four documents (Dream-managed ones say so)."""
        return [(name, name + ("  · Dream" if nb.document_kind(name).managed_by_dream else "")) for name in self.NAMES]

    def read(self, name: str) -> EditableDoc:
        """Open a document with its notices (its size in every turn's prompt, missing keep.md pointer…)."""
        document = nb.open_document(self.source.workspace, name, self.source.history)
        return self._wrap(document)

    def _wrap(self, document) -> EditableDoc:
        return EditableDoc(document.kind.name, document.kind.name, document.path, document.text, document.stamp,
                           dream=document.managed_by_dream, status=document.kind.status,
                           notices=tuple(n.message for n in document.notices), raw=document)

    def pre_save_warnings(self, doc: EditableDoc) -> list[str]:
        """What to say before saving a Dream-managed file (Dream possibly running…)."""
        return [n.message for n in nb.pre_save_notices(self.source.workspace, doc.raw)]

    def save(self, doc: EditableDoc, text: str, *, confirmed: bool = False) -> tuple[EditableDoc | None, list[str]]:
        """Write ``text`` (a Dream-managed file only when ``confirmed``); returns the reloaded doc and notices."""
        with self.source.lock:
            result = nb.save_document(self.source.workspace, doc.raw, text, confirm_dream=confirmed,
                                      history=self.source.history)
        return self._wrap(result.document), [n.message for n in result.notices]

    def base_for_overwrite(self, doc: EditableDoc, on_disk: str | None, stamp: fsio.Stamp) -> EditableDoc | None:
        """The document read again, if it is still the version the person was shown (else None)."""
        base = self.read(doc.name)
        return base if base.stamp.same_content(stamp) else None


def docs_for(source, bank: str):
    """The document set of a bank (rules of an iii bank, or a workspace's documents)."""
    return WorkspaceDocs(source) if source.kind == "nanobot" else RuleDocs(source, bank)

