"""Secrets in the window: found in the background after a load, a badge on the row, the span marked
in the detail pane and the editor, a count on the source's line, the preview's sentence; redacted
from Bank → Secrets… as one undo step."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt

from keepgui.core import registry
from keepgui.core.history import History
from keepgui.core.secrets.purge import plan_purge
from keepgui.core.secrets.scan import SENT
from keepgui.core.source import BankKey
from keepgui.ui.memorypanel.model import COLUMNS
from keepgui.ui.secrets import SecretsDialog
from keepgui.ui.sidebar import DetailRole
from tests.secrets_corpus import secret_named


def _plant(demo_copy) -> tuple[str, str, str]:
    source = registry.open_source("iii", demo_copy.iii, registry.OpenOptions(reload_command=""))
    bank = source.bank("main")
    bank.load()
    row_secret = secret_named("github")[0]
    change = bank.create(f"CI pushes tags with {row_secret}", pinned=True)
    doc_secret = secret_named("groq")[0]
    docs = bank.documents()
    name = docs.list()[0][0]
    doc = docs.read(name)
    docs.save(doc, doc.text + f"\nThe Groq key is {doc_secret}\n")
    return change.rows.rows[0].id, row_secret, doc_secret


def _log(demo_copy) -> bytes:
    with open(os.path.join(demo_copy.iii, "main", "memories.jsonl"), "rb") as fh:
        return fh.read()


def test_found_shown_and_redacted_with_undo(make_window, demo_copy, qtbot):
    row_key, row_secret, doc_secret = _plant(demo_copy)
    window = make_window(demo_copy.iii, watch=False)
    key = BankKey(demo_copy.iii, "main")
    watch = window.secrets
    qtbot.waitUntil(lambda: len(watch.found.get(key, [])) >= 2, timeout=20_000)

    item = window.tree_model.itemFromIndex(window.tree_model.index_of_source(demo_copy.iii))
    assert item.data(DetailRole).startswith("2 secrets")
    model = window.memories.model
    text_column = next(i for i, c in enumerate(COLUMNS) if c.field == "text")
    row = model.index(model.row_of(row_key), text_column)
    assert model.data(row, Qt.ItemDataRole.DecorationRole) is not None
    tip = model.data(row, Qt.ItemDataRole.ToolTipRole)
    assert "GitHub Token" in tip and row_secret not in tip
    window.memories.detail.show_record(model.row_object(model.row_of(row_key)))
    html = window.memories.detail.browser.toHtml()
    assert "GitHub Token" in html and "background-color" in html
    assert SENT in window.preview.secrets_line.text()  # a pinned memory and a rule: given every session

    window.tabs.setCurrentWidget(window.rules)
    window.rules.open_document(window.hub.bank(key).documents().list()[0][0])
    qtbot.waitUntil(lambda: window.rules.doc is not None, timeout=5_000)
    window.rules._refresh_derived()
    qtbot.waitUntil(lambda: not window.rules.derived_pending)  # worked out off the GUI thread
    marks = [m for m in window.rules._marks if "secret" in m.note]
    assert marks and doc_secret not in marks[0].note

    before = _log(demo_copy)
    dialog = SecretsDialog(watch, key, window)
    assert all(row_secret not in dialog.list.item(i).text() for i in range(dialog.list.count()))
    qtbot.waitUntil(lambda: "history" in dialog.purge_note.text(), timeout=30_000)  # what it removes, said first
    # a version keepgui's history kept of a file that held it (as it does of keep.md, MEMORY.md...)
    History().record(os.path.join(demo_copy.iii, "main", "rules", "old.md"), f"key {doc_secret}\n".encode())
    assert plan_purge([row_secret, doc_secret])
    dialog.purge.setChecked(True)
    dialog.redact_button.click()
    qtbot.waitUntil(lambda: not watch.found.get(key), timeout=20_000)
    assert row_secret.encode() not in _log(demo_copy)
    qtbot.waitUntil(lambda: not plan_purge([row_secret, doc_secret]), timeout=20_000)  # keepgui's copies gone
    assert item.data(DetailRole) == demo_copy.iii
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: _log(demo_copy) == before, timeout=10_000)
    qtbot.waitUntil(lambda: len(watch.found.get(key, [])) >= 2, timeout=20_000)


def test_not_a_secret_is_an_undo_step(make_window, demo_copy, qtbot):
    _plant(demo_copy)
    window = make_window(demo_copy.iii, watch=False)
    key = BankKey(demo_copy.iii, "main")
    watch = window.secrets
    qtbot.waitUntil(lambda: len(watch.found.get(key, [])) == 2, timeout=20_000)
    dialog = SecretsDialog(watch, key, window)
    dialog.list.setCurrentRow(0)
    dialog.allow_button.click()
    qtbot.waitUntil(lambda: len(watch.found.get(key, [])) == 1, timeout=20_000)
    assert window.undo_stack.undoText() == "Mark not a secret"
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: len(watch.found.get(key, [])) == 2, timeout=20_000)
