"""Removing secrets from a bank, as one undoable Change through the backend's own writes (no Qt).

Every occurrence of each secret in the bank's rows is replaced by :data:`REPLACEMENT` through the
bank's own write path — ``redact_row(key, text, pairs)`` where a backend defines one (iii rewrites
the earlier revisions in its log too; a backend whose rows cannot be edited in place refuses, with
the reason), else ``edit(key, "text", ...)`` — then every document that still holds one is saved
without it (``DocumentSet.save``: the agent's format, its limits, its conflict check). The Change
undoes all of it in reverse order, and redoes it the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from keepgui.core.errors import KeepguiError
from keepgui.core.source import Bank, Change, RowDelta, Written

REPLACEMENT = "[REDACTED]"
"""What a secret is replaced with: short (within every agent's limits), plain, and findable."""


def redacted(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every occurrence of each secret replaced (the longest first)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, REPLACEMENT)
    return text


@dataclass(frozen=True)
class Refusal:
    """A place the redaction could not write, and why (it is still there)."""

    where: str
    reason: str


def _merge(changes: Sequence[Change], bank: Bank, text: str) -> Change:
    """One Change of several (rows by key, documents, files); its undo takes them back in reverse."""
    rows: dict[str, object] = {}
    complete = False
    documents: set[str] = set()
    files: dict[str, Written] = {}
    for c in changes:
        complete = complete or c.rows.complete
        for r in c.rows.rows:
            rows[r.id] = r
        documents |= c.documents
        for w in c.files:
            files[w.path] = w
    merged = Change(
        bank.key.source,
        bank.key.bank,
        text,
        rows=RowDelta(list(bank.rows()) if complete else list(rows.values()), (), complete),  # type: ignore[arg-type]
        documents=frozenset(documents),
        files=tuple(files.values()),
        written=any(c.written for c in changes),
    )
    undoable = [c for c in changes if c.written]
    if not all(c.can_undo for c in undoable):
        return replace(merged, why_not_undo="a part of this redaction cannot be undone")

    def back() -> Change:
        undone = [c.undo() for c in reversed(undoable)]
        return _merge(undone, bank, text)

    return replace(merged, reverse=back)


def redact(bank: Bank, secrets: Sequence[str], text: str = "Redact secret") -> tuple[Change, list[Refusal]]:
    """Replace every occurrence of ``secrets`` in the bank's rows and documents; the Change (one undo
    for all of it) and the places that refused (a read-only document, rows an agent owns)."""
    wanted = [s for s in dict.fromkeys(secrets) if s]
    changes: list[Change] = []
    refused: list[Refusal] = []
    hook: Callable[[str, str, Sequence[tuple[str, str]]], Change] | None = getattr(bank, "redact_row", None)
    for row in list(bank.rows()):
        body = row.text
        inside = [s for s in wanted if s in body]
        if not inside:
            continue
        new = redacted(body, inside)
        try:
            if hook is not None:
                changes.append(hook(row.id, new, [(s, REPLACEMENT) for s in inside]))
            else:
                changes.append(bank.edit(row.id, "text", new))
        except KeepguiError as exc:
            refused.append(Refusal(f"entry {row.id}", str(exc)))
    documents = bank.documents()
    for name, _title in documents.list():
        try:
            doc = documents.read(name)
        except (KeepguiError, OSError):
            continue
        inside = [s for s in wanted if s in doc.text]
        if not inside:
            continue
        if doc.read_only:
            refused.append(Refusal(f"document {name}", doc.read_only))
            continue
        try:
            changes.append(documents.save(doc, redacted(doc.text, inside), confirmed=True))
        except KeepguiError as exc:
            refused.append(Refusal(f"document {name}", str(exc)))
    return _merge(changes, bank, text), refused
