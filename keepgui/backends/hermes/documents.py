"""A Hermes home's documents for the editor: MEMORY.md and USER.md (editable, with their meter), SOUL.md,
the project context file a session would pick, and the ``memory:`` settings — the last three read-only.

MEMORY.md and USER.md are saved in Hermes's format whatever the person typed (stripped, unique
entries joined by ``"\\n§\\n"``, no trailing newline) under Hermes's own lock, and refused when the
file changed since it was opened (the editor then shows the three versions). Their budget is the
limit Hermes's tool enforces, in characters. SOUL.md is written by ``hermes`` itself (it seeds it),
and the context file and settings belong to the project and to Hermes's config: keepgui shows them
with their effect and never writes them.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from keepgui.backends.hermes.context import project_context
from keepgui.backends.hermes.entries import FILE_NAMES, MEMORY, USER, parse, serialize
from keepgui.backends.hermes.writes import Refused
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound
from keepgui.core.source import Budget, BudgetSegment, Change, Document

if TYPE_CHECKING:
    from keepgui.backends.hermes.bank import HermesHome
from dataclasses import replace

SOUL = "SOUL.md"
CONTEXT = "project context"
SETTINGS = "memory settings"
EDITABLE = {FILE_NAMES[MEMORY]: MEMORY, FILE_NAMES[USER]: USER}
READ_ONLY = {
    SOUL: "SOUL.md is Hermes's identity text: edit it with Hermes or a text editor (keepgui shows what a session reads)",
    CONTEXT: "the project's context file belongs to the project; keepgui shows which one a session picks",
    SETTINGS: "Hermes's settings are changed with `hermes config set memory.KEY VALUE`; keepgui shows their effect",
}


class HomeDocs:
    """The documents of one Hermes home (see the module docstring)."""

    creatable = False
    why_not_create = "a Hermes home has a fixed set of memory documents"
    empty_deletes = False
    previews_drafts = False
    names = None

    def __init__(self, bank: HermesHome) -> None:
        self.bank = bank

    def list(self) -> builtins.list[tuple[str, str]]:
        """``(name, title)`` in the order a session reads them."""
        return [
            (SOUL, "SOUL.md · read-only"),
            (CONTEXT, "Project context · read-only"),
            ("MEMORY.md", "MEMORY.md"),
            ("USER.md", "USER.md"),
            (SETTINGS, "memory: settings · read-only"),
        ]

    def _path(self, name: str) -> str:
        home = self.bank.home
        if name in EDITABLE:
            return os.path.join(home, "memories", name)
        if name == SOUL:
            return os.path.join(home, SOUL)
        if name == SETTINGS:
            return os.path.join(home, "config.yaml")
        found = project_context(self.bank.project_folder())
        return found.path or ""

    def read(self, name: str) -> Document:
        """Open one document (read-only ones say why); NotFound for a name the Hermes home has not."""
        if name not in EDITABLE and name not in READ_ONLY:
            known = ", ".join([*EDITABLE, *READ_ONLY])
            raise NotFound(f"{name}: the Hermes home has no such document (it has {known})")
        path = self._path(name)
        if name == SETTINGS:
            settings = self.bank.settings()
            text = "\n".join(f"• {line}" for line in settings.effects())
            return Document(name, name, path, text, fsio.Stamp.missing(), read_only=READ_ONLY[name])
        if name == CONTEXT and not path:
            found = project_context(self.bank.project_folder())
            return Document(name, name, "", f"(none: {found.why})", fsio.Stamp.missing(), read_only=READ_ONLY[name])
        try:
            data, stamp = fsio.read_stamped(path, limit=16 * 1024 * 1024)
        except (OSError, KeepguiError) as exc:
            return Document(name, name, path, "", fsio.Stamp.missing(), status=str(exc), read_only=str(exc))
        text = (data or b"").decode("utf-8", errors="replace")
        if name in EDITABLE:
            state = self.bank.state(EDITABLE[name])
            status = f"{state.meter()} · {len(state.entries)} entries · entries are separated by a line holding only §"
            problem = state.problem
            return Document(
                name, name, path, text, stamp, status=status, notices=(problem,) if problem else (), read_only=problem
            )
        status = f"{path}"
        if name == CONTEXT:
            status = f"{path} — {project_context(self.bank.project_folder()).why}"
        return Document(name, name, path, text, stamp, status=status, read_only=READ_ONLY[name])

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, text)`` of the two memory files."""
        return [(name, self.read(name).text) for name in EDITABLE]

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc``."""
        data, stamp = fsio.read_stamped(doc.path) if doc.path else (None, fsio.Stamp.missing())
        return (None if data is None else data.decode("utf-8", errors="replace")), stamp

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """What saving will change about the typed text (Hermes's format), if anything."""
        return []

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Save a memory file in Hermes's format (refused when it changed since it was opened, or — unless
        ``confirmed`` — when Hermes would object to the result)."""
        target = EDITABLE.get(doc.name)
        if target is None:
            raise InvalidInput(doc.read_only or f"{doc.name} is read-only")
        entries = parse(text.replace("\r\n", "\n").replace("\r", "\n"))
        old = set(self.bank.state(target).texts)
        try:
            change = self.bank.rewrite(
                target,
                lambda _current: (entries, [e for e in entries if e not in old]),
                f"Save {doc.name}",
                expect=doc.stamp,
                force=confirmed,
            )
        except Refused as exc:
            raise InvalidInput(f"{exc} — save again to write it anyway") from None
        reformatted = serialize(entries).decode("utf-8") != text
        return replace(
            change,
            documents=frozenset({doc.name}),
            result=self.read(doc.name),
            notes=(f"{doc.name} saved in Hermes's format (entries stripped, no blank or repeated entries)",)
            if reformatted
            else change.notes,
        )

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document | None:
        """``doc`` as the disk version shown, to overwrite exactly that (None: it changed again)."""
        now = self.current(doc)
        return doc.with_disk(on_disk or "", stamp) if now[1].same_content(stamp) else None

    def create(self, name: str) -> Change:
        """Refused: the documents are fixed."""
        raise InvalidInput(self.why_not_create)

    def rename_document(self, doc: Document, new: str) -> Change:
        """Refused: the documents are fixed."""
        raise InvalidInput(self.why_not_create)

    def delete(self, doc: Document) -> Change:
        """Refused: forget entries instead."""
        raise InvalidInput("keepgui does not delete Hermes's memory files: forget their entries instead")

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget | None:
        """The file's limit in characters, as Hermes's tool counts it (the meter above the editor)."""
        target = EDITABLE.get(name)
        if target is None:
            return None
        entries = parse(text.replace("\r\n", "\n").replace("\r", "\n"))
        used = len("\n§\n".join(entries))
        limit = self.bank.settings().int_limit(target)
        over = used > limit
        sentence = f"{used:,} / {limit:,} chars as Hermes counts them"
        if over:
            sentence += " — over the limit: Hermes refuses its own memory writes until the file is consolidated"
        segment = BudgetSegment(name, 0, min(used, limit), used, "truncated" if over else "fit")
        return Budget(limit, (segment,), name, sentence, sentence, None, over)

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Which documents the changed paths are."""
        out = set()
        for path in paths:
            base = os.path.basename(path)
            if base in EDITABLE and os.path.basename(os.path.dirname(path)) == "memories":
                out.add(base)
            elif base == SOUL:
                out.add(SOUL)
            elif base == "config.yaml":
                out.add(SETTINGS)
        return out
