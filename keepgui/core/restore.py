"""Memories and files put back as they were at a recorded moment, through the bank's own writes (no Qt).

The command line's ``restore --at`` and the window's time travel share these: what a moment held is
read from the source as it was then (:mod:`keepgui.core.timetravel`), and each memory is made to hold
its text of then again by the one write (or two) of the bank that does it — brought back when it was
forgotten since (under an id of its own, where the backend gives forgotten rows one), its text put
back when it was edited, kept again when it is gone — each a conflict-checked, undoable Change.
A whole file is written back through the bank's ``write_file``, refused when the file did not exist
then (keepgui never deletes an agent's file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from keepgui.core import fsio
from keepgui.core.defaults import refuse
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.history import file_key
from keepgui.core.journal import Journal
from keepgui.core.source import EDIT, FORCE, KEEP, TOMBSTONE, Bank, Change, Row
from keepgui.core.timetravel import describe_when

Write = Callable[[Bank], Change]
"""One write of a bank: given the bank, it writes and returns the Change (an undo step of the window)."""


@dataclass(frozen=True)
class RowRestore:
    """One memory to make hold ``text`` again: ``key`` is its id now (``now`` its row now, None when it
    is gone), ``asked`` the id it had at the moment."""

    asked: str
    key: str
    text: str
    now: Row | None

    def writes(self, bank: Bank) -> list[Write]:
        """The writes that make it so ([] when it is already so); refused with the bank's reason when
        the bank cannot make them."""
        return row_writes(bank, self.key, self.text, self.now)


def planned(rows_now: Sequence[Row], texts_then: Mapping[str, str]) -> list[RowRestore]:
    """Each memory of ``texts_then`` (id at the moment → its text then) matched with the bank's rows
    now: by id, else — gone under that id — a forgotten row with the same text (brought back)."""
    before = {r.id: r for r in rows_now}
    retired = {r.text: r for r in rows_now if r.invalid_at is not None}
    out = []
    for key, text in texts_then.items():
        now = before.get(key)
        if now is None and text in retired:
            now = retired[text]
            out.append(RowRestore(key, now.id, text, now))
        else:
            out.append(RowRestore(key, key, text, now))
    return out


def _can(bank: Bank, what: str) -> None:
    if not bank.capabilities.can(what):
        refuse(bank.capabilities, what)


def row_writes(bank: Bank, key: str, text: str, now: Row | None) -> list[Write]:
    """The writes that make ``key`` hold ``text`` again (see :class:`RowRestore`)."""
    if now is None:
        _can(bank, KEEP)
        return [lambda b: b.keep(text, force=b.capabilities.can(FORCE), replace=False)]
    if now.invalid_at is not None:
        _can(bank, TOMBSTONE)
        writes: list[Write] = [lambda b: b.set_live([key], True)]
        if now.text != text:
            _can(bank, EDIT)
            writes.append(lambda b: _edit_if_needed(b, key, text))
        return writes
    if now.text == text:
        return []
    _can(bank, EDIT)
    return [lambda b: b.edit(key, "text", text)]


def _edit_if_needed(bank: Bank, key: str, text: str) -> Change:
    """The text put back once the row is live again (nothing written when bringing it back did not)."""
    row = next((r for r in bank.rows() if r.id == key), None)
    if row is None or row.invalid_at is not None or row.text == text:
        return Change(bank.key.source, bank.key.bank, "Restore text", written=False)
    return bank.edit(key, "text", text)


def run(bank: Bank, writes: Sequence[Write]) -> list[Change]:
    """Make the writes one after another (the command line; the window makes each an undo step)."""
    return [write(bank) for write in writes]


def file_then(journal: Journal, bank: Bank, given: str, at: int) -> tuple[str, str]:
    """``(path, text)``: the memory file ``given`` of ``bank`` as it was at ``at``; NotFound when keepgui
    recorded no version of it by then, InvalidInput when it is not the bank's or did not exist then."""
    path = file_key(os.path.abspath(os.path.expanduser(given)))
    mine = {file_key(p) for p in bank.memory_files()}
    if path not in mine:
        raise InvalidInput(f"{path} is not a memory file of bank `{bank.key}` (`keepgui inbox` names them)")
    versions = journal.versions(path, until=at)
    if not versions:
        first = journal.versions(path)
        since = f" (its record starts at {describe_when(first[0].at)})" if first else ""
        raise NotFound(f"keepgui recorded no version of {path} at {describe_when(at)}{since}")
    if versions[-1].gone:
        raise InvalidInput(f"{path} did not exist at {describe_when(at)}; keepgui does not delete an agent's file")
    return path, journal.read(versions[-1], versions).decode("utf-8", "replace")


def file_write(path: str, text: str) -> Write | None:
    """The write that puts ``text`` back into ``path`` (None: it holds that already), conflict-checked
    against the file as it is when the write is made."""
    data, _stamp = fsio.read_stamped(path)
    if data is not None and data.decode("utf-8", "replace") == text:
        return None

    def write(bank: Bank) -> Change:
        _data, stamp = fsio.read_stamped(path)
        return bank.write_file(path, text, stamp)

    return write
