"""Editing a row's text in place changes that text and nothing else, byte for byte, in every backend
whose rows can be edited (#23.4: a Claude Code memory gained one more blank line after its front
matter on every save).

Written against the protocol over the demo of every registered backend: each edit is made, then made
again, then taken back by editing the old text in; the files a backend replaces come back to their exact
bytes, and a log that is only appended to (an iii bank's) keeps every byte it had.
"""

from __future__ import annotations

import os

import pytest

from keepgui.core import registry
from keepgui.core.source import EDIT, Bank

EDITED = "Edited in place: the text changes and nothing else."
ROWS_PER_BANK = 3


def _tree(root: str) -> dict[str, bytes]:
    files = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as fh:
                    files[os.path.relpath(path, root)] = fh.read()
    return files


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> dict[str, tuple[bytes | None, bytes | None]]:
    return {
        p: (before.get(p), after.get(p)) for p in sorted(before.keys() | after.keys()) if before.get(p) != after.get(p)
    }


def _editable_banks(kind: str, path: str) -> list[Bank]:
    source = registry.open_source(kind, path)
    banks = []
    for name in source.scan().names:
        bank = source.bank(name)
        bank.load(full=True)
        if bank.capabilities.can(EDIT) and any(r.invalid_at is None for r in bank.rows()):
            banks.append(bank)
    return banks


def _the_row_with(bank: Bank, key: str, text: str) -> str:
    """The key of the live row now showing ``text`` (``key`` when it still is; an edit may give a new one)."""
    showing = [r.id for r in bank.rows() if r.invalid_at is None and r.text == text]
    assert showing, f"{bank.name}: no row shows the text written"
    return key if key in showing else showing[0]


def _appended_only(old: bytes | None, new: bytes | None) -> bool:
    """A log appended to (an iii bank's), or the empty sidecar a lock is taken on (Hermes's ``.lock``)."""
    return (old is None and new == b"") or (old is not None and new is not None and new.startswith(old))


EDITING = [b.kind for b in registry.backends() if b.demo_folder]


@pytest.mark.parametrize("kind", EDITING)
def test_editing_a_rows_text_changes_that_text_and_nothing_else(demo_copy, kind):
    banks = _editable_banks(kind, demo_copy.path(kind))
    if not banks:
        pytest.skip(f"no bank of the {kind} demo can edit its rows' text")
    for bank in banks:
        rows = [r for r in bank.rows() if r.invalid_at is None and r.text.strip()][:ROWS_PER_BANK]
        for row in rows:
            if not _edit_and_edit_back(demo_copy.root, bank, row.id, row.text):
                break  # the bank keeps an edit as a note beside the memory: nothing of it was replaced


def _edit_and_edit_back(root: str, bank: Bank, key: str, original: str) -> bool:
    """Edit the row twice and back; False when the backend kept the edit as a new file instead."""
    before = _tree(root)
    for text in (EDITED, EDITED + " Twice.", original):
        ahead = _tree(root)
        change = bank.edit(key, "text", text)
        assert change.written, f"{bank.name} {key}: {change.message}"
        bank.load(full=True)
        changed = _changed(ahead, _tree(root))
        if changed and all(old is None for old, _new in changed.values()):
            assert any(r.id == key and r.text == original for r in bank.rows()), "a note changed the row"
            return False
        key = _the_row_with(bank, key, text)
        for path, (old, new) in changed.items():
            if _appended_only(old, new):
                continue
            assert old is not None and new is not None, f"{path} appeared or vanished"
            if text != original and original.strip() in old.decode("utf-8", "replace"):
                assert text.encode() in new, f"{path} does not hold the new text"
    replaced = {p: v for p, v in _changed(before, _tree(root)).items() if not _appended_only(*v)}
    assert replaced == {}, f"{bank.name} {key}: edited and edited back, not the same bytes: " + ", ".join(
        f"{p}: {len(o or b'')} -> {len(n or b'')} bytes" for p, (o, n) in replaced.items()
    )
    return True
