"""Codex in the window, through the generic UI only: the demo's home and project in the sidebar, the
memory as rows, the exact preview, the AGENTS.md budget drawn in the documents editor, keep and correct
as notes (one undo step each), the summary read-only while Codex consolidates, and what a consolidation
changed reviewed and restored by a note."""

from __future__ import annotations

import os
import time

import pytest
from PySide6.QtCore import Qt

from keepgui.backends.codex.bank import HOME_BANK
from keepgui.backends.codex.demo import write_baseline
from keepgui.core.source import BankKey
from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole
from keepgui.ui.settings import Settings
from tests.backends.codex.test_codex_writes import lease
from tests.ui.conftest import window_args


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def codex_window(qtbot, tmp_path, demo_copy):
    """A window on the demo's Codex home, ``bank`` shown; returns ``(window, key)``."""
    from keepgui.ui.application import build_window

    windows = []
    home = demo_copy.codex_home

    def build(bank: str = HOME_BANK, watch: bool = False):
        window = build_window(
            window_args(codex=[home], bank=bank), Settings(str(tmp_path / f"s-{len(windows)}.json")), watch=watch
        )
        windows.append(window)
        window.resize(1400, 900)
        window.show()
        key = BankKey(home, bank)
        qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=15_000)
        return window, key

    yield build
    for window in windows:
        if window.rules.dirty:
            window.rules.discard()
        window.close()
        window.hub.shutdown()
        window.deleteLater()


def notes(home: str) -> list[str]:
    return sorted(os.listdir(os.path.join(home, "memories_v2", "extensions", "ad_hoc", "notes")))


def test_the_home_its_project_rows_and_the_exact_preview(codex_window, demo_copy, qtbot):
    from keepgui.ui.sidebar import DetailRole

    window, key = codex_window()
    qtbot.waitUntil(
        lambda: "memory on (V2)" in str(window.tree_model.index_of_bank(key).data(DetailRole)), timeout=10_000
    )
    source = window.tree_model.index_of_source(key.source)
    assert source.data(Qt.ItemDataRole.DisplayRole).startswith("Codex · ")
    project = BankKey(key.source, demo_copy.codex_project)
    qtbot.waitUntil(lambda: window.tree_model.index_of_bank(project).isValid(), timeout=10_000)
    proxy = window.memories.proxy
    keys = [proxy.index(r, 0).data(KeyRole) for r in range(proxy.rowCount())]
    assert keys[0].startswith("summary:") and any(k.startswith("note:") for k in keys) and "raw" in keys
    window.show_panel("preview")
    qtbot.waitUntil(lambda: "MEMORY_SUMMARY BEGINS" in window.preview.injected_text("all"), timeout=10_000)
    assert "run the payment tests" in window.preview.injected_text("all")
    from keepgui.backends.codex.context import home_context
    from keepgui.backends.codex.layout import CodexEnv

    exact = home_context(CodexEnv.for_home(demo_copy.codex_home))
    assert window.preview.injected_text("memory") == exact.memory  # Copy gives the block byte for byte
    assert window.preview.injected_text("agents_md") == exact.agents_md
    assert "memory injected" in window.preview.summary.text()


def test_quick_keep_and_a_correction_are_notes_each_one_undo_step(codex_window, demo_copy, qtbot):
    from keepgui.ui.quickkeep import open_quick_keep

    window, key = codex_window()
    home = demo_copy.codex_home
    before = notes(home)
    popup = open_quick_keep(window)
    qtbot.addWidget(popup)
    assert popup.set_target(key)
    popup.edit.setText("The staging database is shop_staging")
    qtbot.waitUntil(lambda: any("new note" in text for _level, text in popup.hints()), timeout=5_000)
    assert popup.keep()
    kept = sorted(set(notes(home)) - set(before))
    assert len(kept) == 1 and kept[0].endswith("-the-staging-database-is-shop-staging.md")
    assert window.undo_stack.count() == 1
    window.undo_stack.undo()
    assert notes(home) == before
    proxy = window.memories.proxy
    row = next(
        r
        for r in range(proxy.rowCount())
        if "no new dependencies" in str(proxy.index(r, 0).data(KeyRole))
        or ("no new dependencies" in proxy.index(r, COLUMN_INDEX["text"]).data(Qt.ItemDataRole.DisplayRole))
    )
    assert proxy.setData(proxy.index(row, COLUMN_INDEX["text"]), "dependencies for tests are fine without asking")
    corrected = sorted(set(notes(home)) - set(before))
    assert len(corrected) == 1
    text = read(os.path.join(home, "memories_v2", "extensions", "ad_hoc", "notes", corrected[0])).decode()
    assert text.endswith("> dependencies for tests are fine without asking")
    window.undo_stack.undo()
    assert notes(home) == before


def test_the_budget_cut_is_shaded_and_the_summary_locks_while_codex_consolidates(codex_window, demo_copy, qtbot):
    window, _key = codex_window(bank=demo_copy.codex_project)
    window.show_panel("rules")
    rules = window.rules
    titles = [rules.list.item(i).text() for i in range(rules.list.count())]
    api = next(i for i, t in enumerate(titles) if "services/api/AGENTS.md" in t)
    assert titles[api].endswith("cut at byte 7,068")
    assert any(t.endswith("services/AGENTS.md · project, not read") for t in titles)
    rules.list.setCurrentRow(api)
    qtbot.waitUntil(lambda: not rules.derived_pending)  # the budget is worked out off the GUI thread
    assert rules.meter.isVisible() and rules.meter.budget.warn
    shaded = rules.editor.extraSelections()
    assert len(shaded) == 1
    assert "## Payments: the rules that matter most" in rules.editor.toPlainText()[shaded[0].cursor.selectionStart() :]
    lease(demo_copy.codex_home, int(time.time()) + 900)
    summary = next(i for i, t in enumerate(titles) if t.startswith("memory_summary.md"))
    rules.list.setCurrentRow(summary)
    assert rules.editor.isReadOnly() and "consolidation holds the memory folder" in rules.status.text()


def test_a_consolidation_rewrite_is_reviewed_and_restored_by_a_note(codex_window, demo_copy, qtbot):
    window, _key = codex_window(watch=True)
    home = demo_copy.codex_home
    path = os.path.join(home, "memories_v2", "memory_summary.md")
    qtbot.wait(300)
    after = (
        read(path).decode().replace("- keep commit messages in the imperative", "- write commit messages as you like")
    )
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(after)
    write_baseline(os.path.join(home, "memories_v2"), {"memory_summary.md": after.encode()}, int(time.time()))
    banner = window.banner
    qtbot.waitUntil(
        lambda: banner.isVisible() and "memory_summary.md was rewritten" in banner.label.text(), timeout=15_000
    )
    next(b for b in banner.buttons if b.text() == "Review").click()
    qtbot.waitUntil(lambda: window.compaction.dialog is not None and window.compaction.dialog.isVisible())
    dialog = window.compaction.dialog
    assert [op.kind for op in dialog.plan.operations] == ["reworded"]
    before = notes(home)
    dialog._set_selection(dialog.plan.select("all"))
    dialog.apply_button.click()
    added = sorted(set(notes(home)) - set(before))
    assert len(added) == 1 and added[0].endswith("-restore-after-consolidation.md")
    note = read(os.path.join(home, "memories_v2", "extensions", "ad_hoc", "notes", added[0])).decode()
    assert "Restore the earlier wording" in note and "keep commit messages in the imperative" in note
    window.undo_stack.undo()
    assert notes(home) == before


def test_the_window_takes_codex_folders_on_its_command_line(tmp_path):
    from keepgui.cli import build_parser
    from keepgui.ui.startup import explicit_sources

    args = build_parser().parse_args(["--codex", str(tmp_path / "a")])
    assert [s for s in explicit_sources(args) if s[0] == "codex"] == [("codex", str(tmp_path / "a"))]
