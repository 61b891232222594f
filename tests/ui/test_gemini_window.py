"""Gemini CLI in the window, through the seam (issue #28): the home and its launch folder in the sidebar,
memories as rows, the documents in Gemini's order with each @word marked, the exact preview, undoable
writes, the review of a stale overwrite, and the Auto Memory inbox as approvals.

Every test runs on a fresh copy of the bundled demo: a home (``.gemini`` with a global GEMINI.md and
its legacy section, the private memory of ``webshop/Backend`` with a sibling note, two inbox patches)
and the project (``webshop/GEMINI.md`` importing ``docs/conventions.md`` and mentioning ``@alice``,
``Backend/GEMINI.md`` sorting before it, ``Backend/payments/GEMINI.md`` loading later).
"""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from keepgui.backends.gemini.context import session_context
from keepgui.core.approvals import approvals_of
from keepgui.core.source import BankKey
from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, RecordRole
from keepgui.ui.settings import Settings
from tests.ui.conftest import window_args


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def gemini_window(qtbot, tmp_path, demo_copy):
    """A window on the demo's Gemini home, its launch folder shown; returns ``(window, key)``."""
    from keepgui.ui.application import build_window

    windows = []

    def build(watch: bool = True):
        args = window_args(gemini=[demo_copy.gemini], bank="backend")
        window = build_window(args, Settings(str(tmp_path / f"settings-{len(windows)}.json")), watch=watch)
        windows.append(window)
        window.resize(1440, 900)
        window.show()
        key = BankKey(demo_copy.gemini, "backend")
        qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=15_000)
        return window, key

    yield build
    for window in windows:
        if window.rules.dirty:
            window.rules.discard()
        window.close()
        window.hub.shutdown()
        window.deleteLater()


def keys_of(proxy) -> list[str]:
    return [proxy.index(r, 0).data(KeyRole) for r in range(proxy.rowCount())]


def row_with(proxy, text: str) -> int:
    return next(
        r for r in range(proxy.rowCount()) if proxy.index(r, COLUMN_INDEX["text"]).data(RecordRole).text == text
    )


def test_the_home_and_its_launch_folder_with_the_sidebar_line_and_rows(gemini_window, demo_copy, qtbot):
    window, key = gemini_window(watch=False)
    from keepgui.ui.sidebar import DetailRole

    bank = window.hub.bank(key)
    sent = bank.assembled.sent_bytes
    expected = (
        f"global 1 file · private 4 lines · project 2 files · {sent / 1024:,.1f} KB sent on every request · "
        "2 awaiting approval"
    )
    qtbot.waitUntil(lambda: window.tree_model.index_of_bank(key).data(DetailRole) == expected, timeout=10_000)
    source = window.tree_model.index_of_source(key.source)
    assert source.data(Qt.ItemDataRole.DisplayRole).startswith("Gemini CLI · ")
    assert window.tree_model.index_of_bank(key).data(Qt.ItemDataRole.DisplayRole) == "…/webshop/Backend"
    proxy = window.memories.proxy
    assert proxy.rowCount() == 14  # 7 global lines, 4 private lines, 1 note, 2 Auto Memory proposals
    chips = dict(window.memories.chips._buttons)
    assert {"global", "private", "note", "gemini-added", "not-loaded", "inbox"} <= set(chips)
    assert chips["gemini-added"].text() == "#gemini-added · 3"
    pin = proxy.index(0, COLUMN_INDEX["pinned"])
    assert not (pin.flags() & Qt.ItemFlag.ItemIsEnabled) and "no pin" in pin.data(Qt.ItemDataRole.ToolTipRole)
    window.memories.select_key("note:deploy-notes.md")
    assert "read on demand, not loaded" in window.memories.detail.browser.toPlainText()


def test_edit_keep_forget_and_restore_are_each_one_undoable_change(gemini_window, demo_copy, qtbot, monkeypatch):
    window, _key = gemini_window(watch=False)
    proxy = window.memories.proxy
    stack = window.undo_stack
    global_file = os.path.join(demo_copy.gemini, "GEMINI.md")
    before = read(global_file)
    row = row_with(proxy, "Timezone: Europe/Lisbon.")
    assert proxy.setData(proxy.index(row, COLUMN_INDEX["text"]), "Timezone: Europe/Porto.")
    assert read(global_file) == before.replace(b"Lisbon", b"Porto")
    assert stack.undoText() == "Edit memory"
    stack.undo()
    assert read(global_file) == before
    # forget through the Live box: the line goes, a retired row stays to bring it back
    row = row_with(proxy, "Timezone: Europe/Lisbon.")
    proxy.setData(proxy.index(row, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    assert b"Lisbon" not in read(global_file) and stack.undoText() == "Forget 1 memory"
    window.memories.set_show_history(True)
    retired = next(r for r in range(proxy.rowCount()) if str(proxy.index(r, 0).data(KeyRole)).startswith("forgotten:"))
    proxy.setData(
        proxy.index(retired, COLUMN_INDEX["live"]), Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole
    )
    assert read(global_file) == before
    # New memory: a line in the private MEMORY.md (one undo step)
    from keepgui.ui.dialogs import NewMemoryDialog

    memory = os.path.join(demo_copy.gemini, "tmp", "backend", "memory", "MEMORY.md")
    private_before = read(memory)
    monkeypatch.setattr(NewMemoryDialog, "exec", lambda self: True)
    monkeypatch.setattr(NewMemoryDialog, "values", lambda self: ("Staging resets on Mondays.", [], [], False))
    window.memories.new_memory()
    assert read(memory) == private_before + b"- Staging resets on Mondays.\n"
    stack.undo()
    assert read(memory) == private_before


def test_the_documents_in_geminis_order_with_every_at_word_marked(gemini_window, demo_copy, qtbot, monkeypatch):
    window, _key = gemini_window(watch=False)
    window.show_panel("rules")
    rules = window.rules
    titles = [rules.list.item(i).text() for i in range(rules.list.count())]
    assert titles == [
        "~/.gemini/GEMINI.md · global",
        "~/.gemini/tmp/backend/memory/MEMORY.md · private memory",
        "GEMINI.md · project",  # Backend/GEMINI.md sorts before its parent's file
        "../GEMINI.md · project",
        "  ↳ ../docs/conventions.md · @import",
        "payments/GEMINI.md · project, loads later",
        "~/.gemini/tmp/backend/memory/deploy-notes.md · private memory, not loaded",
    ]
    rules.list.setCurrentRow(3)
    text = rules.editor.toPlainText()
    qtbot.waitUntil(lambda: len(rules._marks) == 2, timeout=5_000)
    at = text.index("@alice")
    mark = rules.mark_at(at + 2)
    assert mark is not None and mark.level == "warning" and "<!-- Import failed: alice - ENOENT" in mark.note
    assert rules.mark_at(text.index("@docs/conventions.md")).level == "info"
    tinted = [(s.cursor.selectionStart(), s.cursor.selectionEnd()) for s in rules.editor.extraSelections()]
    assert (at, at + len("@alice")) in tinted
    assert "line 6: @alice → replaced by <!-- Import failed: alice - ENOENT" in rules.notices.text()
    assert "sent ≈" in rules.meter.label.text() and "Gemini cuts nothing" in rules.meter.label.text()
    # typing follows: the mention in backticks is left alone, the mark goes
    rules.editor.setPlainText(text.replace("@alice", "`@alice`"))
    qtbot.waitUntil(lambda: len(rules._marks) == 1, timeout=5_000)
    rules.discard()
    # a project file save is one undo step, and the preview follows it
    path = rules.doc.path
    before = read(path)
    rules.editor.setPlainText(rules.doc.text + "- Release on Tuesdays.\n")
    assert rules.save()
    window.show_panel("preview")
    qtbot.waitUntil(lambda: "Release on Tuesdays" in window.preview.injected_text("session"), timeout=5_000)
    window.undo_stack.undo()
    assert read(path) == before
    # the private MEMORY.md asks first: a running session may write its older copy over the edit
    window.show_panel("rules")
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.Yes)
    rules.list.setCurrentRow(1)
    rules.editor.setPlainText(rules.doc.text + "- Note from the editor.\n")
    assert rules.save() and "older copy over your edit" in asked[0]


def test_the_preview_is_both_elements_exactly(gemini_window, demo_copy, qtbot):
    window, key = gemini_window(watch=False)
    window.show_panel("preview")
    pane = window.preview
    qtbot.waitUntil(lambda: pane.last_result is not None, timeout=10_000)
    bank = window.hub.bank(key)
    expected = session_context(bank.cwd, bank.env)
    assert pane.injected_text("system") == expected.system_context
    assert pane.injected_text("session") == expected.session_context
    assert "<!-- Import failed: alice - ENOENT" in expected.session_context
    shown = pane.view.text.toPlainText()
    assert expected.system_context in shown and expected.session_context in shown
    assert "payments/GEMINI.md" in pane.view.lists.toPlainText()


def test_the_inbox_is_approved_and_rejected_through_the_undo_stack(gemini_window, demo_copy, qtbot):
    window, key = gemini_window(watch=False)
    queue = approvals_of(window.hub.sources[key.source])
    assert queue is not None
    pending = {p.id: p for p in queue.pending()}
    assert set(pending) == {"backend:private/extraction.patch", "backend:global/extraction.patch"}
    private = pending["backend:private/extraction.patch"]
    assert private.applicable and private.after.endswith("do not run migrations then.\n")
    memory = os.path.join(demo_copy.gemini, "tmp", "backend", "memory", "MEMORY.md")
    before = read(memory)
    window.perform(key.source, lambda source: approvals_of(source).approve([private.id]), "Approve")
    assert read(memory) == private.after.encode()
    proxy = window.memories.proxy
    qtbot.waitUntil(
        lambda: any(
            "do not run migrations" in proxy.index(r, COLUMN_INDEX["text"]).data(RecordRole).text
            for r in range(proxy.rowCount())
        ),
        timeout=5_000,
    )
    assert [p.id for p in queue.pending()] == ["backend:global/extraction.patch"]
    window.undo_stack.undo()
    assert read(memory) == before and len(queue.pending()) == 2
    window.perform(
        key.source, lambda source: approvals_of(source).reject(["backend:global/extraction.patch"]), "Reject"
    )
    assert [p.id for p in queue.pending()] == [private.id]
    window.undo_stack.undo()
    assert len(queue.pending()) == 2


def test_the_agent_writing_memory_and_a_project_folder_opened(gemini_window, demo_copy, qtbot, monkeypatch):
    window, key = gemini_window(watch=True)
    memory = os.path.join(demo_copy.gemini, "tmp", "backend", "memory", "MEMORY.md")
    with open(memory, "a", encoding="utf-8") as fh:  # the agent, with its own file tools
        fh.write("- Written by the agent during a session.\n")
    proxy = window.memories.proxy
    qtbot.waitUntil(
        lambda: any(
            proxy.index(r, COLUMN_INDEX["text"]).data(RecordRole).text == "Written by the agent during a session."
            for r in range(proxy.rowCount())
        ),
        timeout=10_000,
    )
    # File → Open Gemini CLI folder… on the launch folder: what a session there loads, in this environment
    from keepgui.ui.opening import SourceFolderDialog

    action = next(a for a in window.open_actions if a.text() == "Open Gemini CLI folder…")
    monkeypatch.setattr(SourceFolderDialog, "exec", lambda self: 1)
    monkeypatch.setattr(SourceFolderDialog, "selectedFiles", lambda self: [demo_copy.gemini_project])
    monkeypatch.setenv("HOME", demo_copy.gemini_home)
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    action.trigger()
    qtbot.waitUntil(lambda: demo_copy.gemini_project in window.hub.sources, timeout=10_000)
    other = BankKey(demo_copy.gemini_project, "backend")
    qtbot.waitUntil(lambda: window.hub.is_loaded(other), timeout=10_000)
    assert window.hub.summary(other).detail == window.hub.summary(key).detail


def test_the_inbox_in_the_approvals_window_with_the_trays_attention(gemini_window, demo_copy, qtbot):
    window, _key = gemini_window(watch=True)
    arrived: list[str] = []
    window.approvals.arrived.connect(lambda _n, sentence: arrived.append(sentence))
    dialog = window.show_approvals()
    panel = dialog.panel
    qtbot.waitUntil(lambda: len(panel.items) == 2, timeout=10_000)
    row = next(r for r, (_p, w) in enumerate(panel.items) if w.id == "backend:private/extraction.patch")
    panel.list.clearSelection()
    panel.list.setCurrentRow(row)
    diff = panel.diff.toPlainText()
    assert diff.splitlines()[0] == "--- a/tmp/backend/memory/MEMORY.md"
    assert "+- The staging database is reset every Monday" in diff
    memory = os.path.join(demo_copy.gemini, "tmp", "backend", "memory", "MEMORY.md")
    patch = os.path.join(demo_copy.gemini, "tmp", "backend", "memory", ".inbox", "private", "extraction.patch")
    before = read(memory)
    qtbot.mouseClick(panel.approve_button, Qt.MouseButton.LeftButton)
    assert b"do not run migrations then." in read(memory) and not os.path.exists(patch)
    qtbot.waitUntil(lambda: len(panel.items) == 1, timeout=10_000)
    window.undo_stack.undo()
    assert read(memory) == before and os.path.exists(patch)
    qtbot.waitUntil(lambda: len(panel.items) == 2, timeout=10_000)
    # Auto Memory proposes another patch: the watcher re-reads the folder, the window is told once
    memory_dir = os.path.dirname(memory)
    with open(os.path.join(memory_dir, ".inbox", "private", "more.patch"), "w", encoding="utf-8") as fh:
        fh.write(f"--- /dev/null\n+++ {memory_dir}/release-notes.md\n@@ -0,0 +1 @@\n+Release notes live in the wiki.\n")
    qtbot.waitUntil(lambda: len(panel.items) == 3, timeout=15_000)
    assert len(arrived) == 1 and "release-notes.md" in arrived[0]
    dialog.close()


def test_the_window_takes_gemini_folders_on_its_command_line(tmp_path):
    from keepgui.cli import build_parser
    from keepgui.ui.startup import explicit_sources

    args = build_parser().parse_args(["--gemini", str(tmp_path / "a"), "--gemini", str(tmp_path / "b")])
    assert [s for s in explicit_sources(args) if s[0] == "gemini"] == [
        ("gemini", str(tmp_path / "a")),
        ("gemini", str(tmp_path / "b")),
    ]
