"""Claude Code in the window, through the seam (issue #17): sources, memories, documents, the
preview with its cut line, safe writes, the review of what the agent changed, compaction, the demo.

Every test runs on a fresh copy of the bundled demo: a HOME whose ``.claude``
holds one project's memory (215 topic files, an index of 220 lines, so 20
entries past the cut, one orphan each way) and the project folder itself
(CLAUDE.md importing docs/architecture.md, CLAUDE.local.md, a rule with and
one without ``paths:``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from keepgui.backends.claude import layout
from keepgui.backends.claude.context import session_context
from keepgui.backends.claude.layout import project_folder_name
from keepgui.backends.claude.memory import read_folder
from keepgui.core import registry
from keepgui.core.source import BankKey
from keepgui.ui.compaction import rewrite_summary
from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, RecordRole
from keepgui.ui.opening import SourceFolderDialog
from keepgui.ui.settings import Settings
from tests.ui.conftest import window_args


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def write(path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


@pytest.fixture
def managed(tmp_path, monkeypatch):
    """An organisation's managed folder of the test's own (never /etc/claude-code)."""
    folder = tmp_path / "managed"
    folder.mkdir()
    monkeypatch.setattr(layout, "managed_dir_for", lambda platform=sys.platform: str(folder))
    return folder


@pytest.fixture
def claude_window(qtbot, tmp_path, demo_copy, managed):
    """A window on the demo's Claude Code home, its one project shown; returns ``(window, key, memory_dir)``."""
    from keepgui.ui.application import build_window

    windows = []
    config = os.path.join(demo_copy.claude_home, ".claude")
    name = project_folder_name(os.path.realpath(demo_copy.claude_project))

    def build(watch: bool = True):
        args = window_args(claude=[config], bank=name)
        window = build_window(args, Settings(str(tmp_path / f"settings-{len(windows)}.json")), watch=watch)
        windows.append(window)
        window.resize(1440, 900)
        window.show()
        key = BankKey(config, name)
        qtbot.waitUntil(
            lambda: window.current == key and window._loading is None and not window.rules.listing, timeout=15_000
        )
        return window, key, os.path.join(config, "projects", name, "memory")

    yield build
    for window in windows:
        if window.rules.dirty:
            window.rules.discard()
        window.close()
        window.hub.shutdown()
        window.deleteLater()


def texts_of(proxy) -> list[str]:
    return [proxy.index(r, COLUMN_INDEX["text"]).data(RecordRole).id for r in range(proxy.rowCount())]


def row_of(proxy, key: str) -> int:
    return next(r for r in range(proxy.rowCount()) if proxy.index(r, 0).data(KeyRole) == key)


# ---------------------------------------------------------------------- 1. sources


def test_the_home_and_its_project_in_the_sidebar_and_a_project_folder_opened(
    claude_window, demo_copy, qtbot, monkeypatch
):
    window, key, memory = claude_window()
    from keepgui.ui.sidebar import DetailRole

    def shown() -> tuple[str, str]:  # the title and counts come from the background scan: wait for them
        index = window.tree_model.index_of_bank(key)
        return index.data(Qt.ItemDataRole.DisplayRole), index.data(DetailRole)

    # the project, not `-tmp-…-slow-bytes`
    qtbot.waitUntil(
        lambda: shown() == ("slow-bytes", "216 memories · 1 without its file · index 220 lines · 20 not loaded"),
        timeout=10_000,
    )
    index = window.tree_model.index_of_bank(key)
    assert key.bank in index.data(Qt.ItemDataRole.ToolTipRole)
    source = window.tree_model.index_of_source(key.source)
    assert source.data(Qt.ItemDataRole.DisplayRole).startswith("Claude Code · ")
    # what the registry says about both kinds of folder (the Open dialog and the first start ask it)
    assert registry.identify(key.source).kind == "claude"
    assert registry.identify(demo_copy.claude_project).what == "a Claude Code project"
    found = registry.discover({"HOME": demo_copy.claude_home})
    assert [(f.kind, f.path) for f in found if f.kind == "claude"] == [("claude", key.source)]
    # File → Open Claude Code project folder…: the project's own memory, watched outside the folder
    action = next(a for a in window.open_actions if a.text() == "Open Claude Code project folder…")
    monkeypatch.setattr(SourceFolderDialog, "exec", lambda self: 1)  # the folder chosen in the Open dialog
    monkeypatch.setattr(SourceFolderDialog, "selectedFiles", lambda self: [demo_copy.claude_project])
    monkeypatch.setenv("HOME", demo_copy.claude_home)  # a project folder is opened in this process's environment
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    action.trigger()  # what the folder is is asked in the background: a Claude Code project, opened unasked
    qtbot.waitUntil(lambda: demo_copy.claude_project in window.hub.sources, timeout=10_000)
    project = window.hub.sources[demo_copy.claude_project]
    assert project.also_watched == (memory,)
    assert window.hub._watcher is not None and memory in window.hub._watcher.roots
    other = BankKey(demo_copy.claude_project, key.bank)
    qtbot.waitUntil(lambda: window.hub.is_loaded(other), timeout=10_000)
    assert window.hub.summary(other).detail == "216 memories · 1 without its file · index 220 lines · 20 not loaded"
    # the agent writes a memory: the project folder's source hears it through the folder outside it
    write(os.path.join(memory, "timezone.md"), "---\nname: timezone\n---\n\nMike moved to Porto.\n")
    qtbot.waitUntil(
        lambda: any(r.text == "Mike moved to Porto." for r in window.hub.bank(other).rows()), timeout=10_000
    )


def test_the_window_takes_claude_code_folders_on_its_command_line(tmp_path):
    from keepgui.cli import build_parser
    from keepgui.ui.startup import explicit_sources

    args = build_parser().parse_args(["--claude", str(tmp_path / "a"), "--claude", str(tmp_path / "b")])
    assert [s for s in explicit_sources(args) if s[0] == "claude"] == [
        ("claude", str(tmp_path / "a")),
        ("claude", str(tmp_path / "b")),
    ]


# ---------------------------------------------------------------------- 2. memories in the table


def test_memories_with_type_chips_orphans_both_ways_and_the_index_line_beside_the_file(claude_window, qtbot):
    window, _key, _memory = claude_window(watch=False)
    panel = window.memories
    proxy = panel.proxy
    assert proxy.rowCount() == 216  # 215 topic files and the index line whose file is missing
    chips = dict(panel.chips._buttons)
    assert {"project", "user", "feedback", "reference", "not-loaded", "unindexed", "missing-file"} <= set(chips)
    assert chips["not-loaded"].text() == "#not-loaded · 20"
    chips["not-loaded"].click()
    hidden = texts_of(proxy)
    assert len(hidden) == 20 and "post-feed-caching-11.md" in hidden
    chips["not-loaded"].click()
    chips["unindexed"].click()
    assert texts_of(proxy) == ["vps-backups.md"]  # a topic file no index line points at
    chips["unindexed"].click()
    chips["missing-file"].click()
    assert texts_of(proxy) == ["index:deploy-script.md"]  # an index line whose file is gone
    chips["missing-file"].click()
    # the newest memories first (the agent appends: the newest are the ones cut)
    assert texts_of(proxy)[1] == "post-feed-caching-11.md"
    window.memories.table.sortByColumn(COLUMN_INDEX["text"], Qt.SortOrder.AscendingOrder)
    shown = [proxy.index(r, COLUMN_INDEX["text"]).data(RecordRole).text.casefold() for r in range(proxy.rowCount())]
    assert shown == sorted(shown)
    panel.search.setText("pgx pools part 11")
    qtbot.waitUntil(lambda: 0 < proxy.rowCount() < 20, timeout=5_000)
    assert "post-pgx-pools-11.md" in texts_of(proxy)
    panel.search.clear()
    qtbot.waitUntil(lambda: proxy.rowCount() == 216)
    # what a Claude Code memory lacks is greyed with the reason; its empty columns are hidden
    pin = proxy.index(0, COLUMN_INDEX["pinned"])
    assert not (pin.flags() & Qt.ItemFlag.ItemIsEnabled) and "no pin" in pin.data(Qt.ItemDataRole.ToolTipRole)
    assert panel.table.isColumnHidden(COLUMN_INDEX["confidence"]) and not panel.table.isColumnHidden(
        COLUMN_INDEX["tags"]
    )
    # the detail pane: the index line and the topic file, side by side
    panel.select_key("post-feed-caching-11.md")
    detail = panel.detail.browser.toPlainText()
    assert "MEMORY.md, line 220" in detail and "- [Post feed caching 11](post-feed-caching-11.md)" in detail
    assert "past the cut: Claude does not see its index line" in detail
    assert "name: post-feed-caching-11" in detail  # the file itself, front matter and all


# ---------------------------------------------------------------------- 2. edit, create, forget, restore


def test_edit_create_forget_and_restore_are_each_one_undoable_change(claude_window, qtbot, monkeypatch):
    window, _key, memory = claude_window(watch=False)
    proxy = window.memories.proxy
    stack = window.undo_stack
    path = os.path.join(memory, "user-role.md")
    index_path = os.path.join(memory, "MEMORY.md")
    before, index_before = read(path), read(index_path)
    # the text in place: the body changes, the front matter stays byte for byte
    row = row_of(proxy, "user-role.md")
    assert proxy.setData(proxy.index(row, COLUMN_INDEX["text"]), "Mike is a backend developer (Go, Postgres, SQLite).")
    assert read(path).endswith(b"\n\nMike is a backend developer (Go, Postgres, SQLite).\n")
    assert read(path).split(b"---\n")[1] == before.split(b"---\n")[1]
    assert stack.count() == 1 and stack.undoText() == "Edit memory user-role.md"
    stack.undo()
    assert read(path) == before
    # the type is the tag (the status tags are not written); a type that is none of the four is refused
    row = row_of(proxy, "user-role.md")
    proxy.setData(proxy.index(row, COLUMN_INDEX["tags"]), "feedback")
    assert b"metadata:\n  type: feedback\n" in read(path)
    stack.undo()
    assert read(path) == before
    proxy.setData(proxy.index(row_of(proxy, "user-role.md"), COLUMN_INDEX["tags"]), "person")
    assert read(path) == before and "one of user, feedback, project, reference" in window.banner.label.text()
    window.banner.dismiss()
    # New memory: a topic file of the type given and its index line, one step
    from keepgui.ui.dialogs import NewMemoryDialog

    monkeypatch.setattr(NewMemoryDialog, "exec", lambda self: True)
    monkeypatch.setattr(
        NewMemoryDialog, "values", lambda self: ("Comments on posts are moderated by hand.", ["feedback"], [], False)
    )
    window.memories.new_memory()
    created = os.path.join(memory, "comments-on-posts-are-moderated-by-hand.md")
    assert b"  type: feedback\n" in read(created)
    assert read(index_path).endswith(
        b"(comments-on-posts-are-moderated-by-hand.md) \xe2\x80\x94 Comments on posts are moderated by hand.\n"
    )
    stack.undo()
    assert not os.path.exists(created) and read(index_path) == index_before
    # forget through the Live box: the file and its index line together, reversibly
    row = row_of(proxy, "user-role.md")
    proxy.setData(proxy.index(row, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    assert not os.path.exists(path) and b"(user-role.md)" not in read(index_path)
    assert stack.undoText() == "Forget 1 memory"
    window.memories.set_show_history(True)
    retired = next(r for r in range(proxy.rowCount()) if str(proxy.index(r, 0).data(KeyRole)).startswith("forgotten:"))
    assert proxy.index(retired, 0).data(RecordRole).text.startswith("Mike is a backend developer")
    stack.undo()
    assert read(path) == before and read(index_path) == index_before
    stack.redo()
    assert not os.path.exists(path)
    # restore through the retired row's Live box (a new step), exactly as it was
    retired = next(r for r in range(proxy.rowCount()) if str(proxy.index(r, 0).data(KeyRole)).startswith("forgotten:"))
    proxy.setData(
        proxy.index(retired, COLUMN_INDEX["live"]), Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole
    )
    assert read(path) == before and read(index_path) == index_before
    assert stack.undoText() == "Restore memory"


# ---------------------------------------------------------------------- 3. documents


def test_instruction_files_in_the_documents_editor_with_imports_and_budgets(claude_window, managed, qtbot, monkeypatch):
    write(managed / "CLAUDE.md", "Company policy: no secrets in memory.\n")
    window, _key, _memory = claude_window(watch=False)
    window.show_panel("rules")
    rules = window.rules
    titles = [rules.list.item(i).text() for i in range(rules.list.count())]
    assert titles == [
        f"{managed}/CLAUDE.md · managed",
        "~/.claude/CLAUDE.md · user",
        "~/.claude/rules/writing.md · user",
        "CLAUDE.md · project",
        "  ↳ docs/architecture.md · @import",
        ".claude/rules/testing.md · project",
        "CLAUDE.local.md · local",
        "~/.claude/rules/go.md · user, loads later",
        ".claude/rules/sql.md · project, loads later",
        "MEMORY.md · auto memory index",
    ]
    # the managed file is shown read-only, with why
    rules.list.setCurrentRow(0)
    assert rules.editor.isReadOnly() and not rules.act_save.isEnabled()
    assert "managed by your organisation's policy" in rules.status.text()
    # the import is resolved and shown; a rule with paths: says when it loads
    rules.list.setCurrentRow(3)
    assert not rules.editor.isReadOnly()
    assert (
        f"@import, line 3: {os.path.realpath(demo_path(window, 'docs/architecture.md'))} — loaded"
        in rules.notices.text()
    )
    rules.list.setCurrentRow(8)
    assert "Loads later" in rules.status.text() and "paths: internal/store" in rules.status.text()
    # MEMORY.md: the meter counts what a session loads and shades what it does not
    rules.list.setCurrentRow(9)
    qtbot.waitUntil(lambda: not rules.derived_pending)  # the budget is worked out off the GUI thread
    assert rules.meter.isVisible() and rules.meter.budget.warn
    qtbot.waitUntil(lambda: not rules.derived_pending)  # the budget is worked out off the GUI thread
    assert "20 entries are invisible to Claude" in rules.meter.label.text()
    shaded = rules.editor.extraSelections()
    assert len(shaded) == 1
    cut = shaded[0].cursor.selectionStart()
    assert rules.editor.toPlainText()[cut:].startswith("\n- [Post markdown footnotes 10]")
    # a CLAUDE.md save is one undo step, and the preview follows it
    rules.list.setCurrentRow(3)
    path = rules.doc.path
    before = read(path)
    rules.editor.setPlainText(rules.doc.text + "- Run `go vet ./...` before committing.\n")
    qtbot.waitUntil(lambda: not rules.derived_pending)  # the budget is worked out off the GUI thread
    assert "of the 4 MiB a file may have: it loads whole" in rules.meter.label.text()
    assert rules.save()
    assert read(path).endswith(b"- Run `go vet ./...` before committing.\n")
    window.show_panel("preview")
    qtbot.waitUntil(lambda: "go vet" in window.preview.injected_text("all"), timeout=5_000)
    window.undo_stack.undo()
    assert read(path) == before
    qtbot.waitUntil(lambda: "go vet" not in window.preview.injected_text("all"), timeout=5_000)


def demo_path(window, rel: str) -> str:
    source = next(s for s in window.hub.sources.values() if s.kind == "claude")
    bank = source.bank(source.scan().names[0])
    return os.path.join(bank.project, rel)


# ---------------------------------------------------------------------- 4. the preview


def test_the_preview_says_when_another_claude_code_is_installed(claude_window, qtbot, tmp_path, monkeypatch):
    """#23.13: keepgui's reminder is checked against Claude Code 2.1.332; with 2.1.197 on PATH the preview
    says so above what it shows (the version read on the preview's background task, never the GUI thread)."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    fake = folder / "claude"
    fake.write_text('#!/bin/sh\necho "2.1.197 (Claude Code)"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    window, _key, _memory = claude_window(watch=False)
    window.show_panel("preview")
    pane = window.preview
    qtbot.waitUntil(lambda: "Claude Code 2.1.197 is installed here" in pane.summary.text(), timeout=15_000)
    assert "checked against 2.1.332" in pane.summary.text() and pane.injected_text("all")


def test_the_preview_is_the_exact_reminder_with_the_cut_drawn_and_the_hidden_memories_named(claude_window, qtbot):
    window, key, _memory = claude_window(watch=False)
    window.show_panel("preview")
    pane = window.preview
    qtbot.waitUntil(lambda: pane.last_result is not None, timeout=10_000)
    bank = window.hub.bank(key)
    expected = session_context(bank.project, bank.env).reminder
    assert pane.injected_text("all") == expected and pane.view.text.toPlainText() == expected
    view = pane.view.text
    # the cut line is drawn after the last index line that loads (line 200 of MEMORY.md)
    block = view.document().findBlockByNumber(view.cut_block())
    assert block.text().startswith("- [Post feed caching 10](post-feed-caching-10.md)")
    view.scroll_to_cut()
    qtbot.wait(50)
    y = int(view.cut_y())
    image = view.viewport().grab().toImage()
    from keepgui.ui import theme

    color = theme.strong("removed")
    reds = sum(
        1
        for x in range(0, image.width(), 4)
        if abs(image.pixelColor(x, y).red() - color.red()) < 40
        and image.pixelColor(x, y).red() > image.pixelColor(x, y).green() + 40
    )
    assert reds > 10  # a line across the text, in the cut's colour
    lists = pane.view.lists.toPlainText()
    assert "Past the cut: these 20 memories are invisible to Claude" in lists
    assert "line 220: Post feed caching 11 → post-feed-caching-11.md" in lists
    assert "Loads later" in lists and "sql.md" in lists and "go.md" in lists
    assert "Never loads at session start" in lists and "vps-backups.md" in lists
    assert "until /compact, /clear or a restart" in pane.summary.text()
    assert "MEMORY.md cut at line 201: 20 memories invisible to Claude" in pane.summary.text()


def test_the_lists_beside_the_reminder_name_a_bounded_number_and_count_the_rest(claude_window, qtbot, monkeypatch):
    from keepgui.ui.adapters import claude as adapter

    monkeypatch.setattr(adapter, "LIST_MAX", 5, raising=False)
    window, _key, _memory = claude_window(watch=False)
    window.show_panel("preview")
    pane = window.preview
    qtbot.waitUntil(lambda: pane.last_result is not None, timeout=10_000)
    lists = pane.view.lists.toPlainText()
    assert "Past the cut: these 20 memories are invisible to Claude" in lists  # the count is the whole
    assert "… and 15 more" in lists
    assert "line 220: Post feed caching 11" not in lists  # the 20th entry past the cut is not named


# ---------------------------------------------------------------------- 6. writes that cannot hurt


def test_saves_are_refused_while_claude_consolidates_and_quick_keep_writes_file_and_index_line(
    claude_window, qtbot, monkeypatch
):
    from keepgui.ui.quickkeep import open_quick_keep

    window, key, memory = claude_window(watch=False)
    proxy = window.memories.proxy
    index_path = os.path.join(memory, "MEMORY.md")
    index_before = read(index_path)
    # Quick keep: a topic file in the CLI's format and its index line, one undo step
    popup = open_quick_keep(window)
    qtbot.addWidget(popup)
    assert popup.set_target(key)
    popup.edit.setText("#feedback Always run go vet before committing")
    qtbot.waitUntil(lambda: any("past the" in text for _level, text in popup.hints()), timeout=5_000)
    assert popup.keep()
    kept = os.path.join(memory, "always-run-go-vet-before-committing.md")
    assert read(kept) == (
        b"---\nname: always-run-go-vet-before-committing\ndescription: Always run go vet before committing\n"
        b"metadata:\n  type: feedback\n---\n\nAlways run go vet before committing\n"
    )
    assert (
        read(index_path)
        == index_before
        + (
            "- [Always run go vet before committing](always-run-go-vet-before-committing.md) — "
            "Always run go vet before committing\n"
        ).encode()
    )
    window.undo_stack.undo()
    assert not os.path.exists(kept) and read(index_path) == index_before
    # a consolidation holds the folder: forget is refused and says why, nothing is written
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write(os.path.join(memory, ".consolidate-lock"), str(sleeper.pid))
        row = row_of(proxy, "user-role.md")
        proxy.setData(
            proxy.index(row, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole
        )
        assert os.path.exists(os.path.join(memory, "user-role.md"))
        assert "consolidating this memory folder" in window.banner.label.text()
        assert window.undo_stack.count() == 0  # the refused step is not on the stack (nor the undone keep)
        window.show_panel("rules")
        window.rules.list.setCurrentRow(window.rules.list.count() - 1)
        assert window.rules.editor.isReadOnly() and "consolidating" in window.rules.status.text()
    finally:
        sleeper.kill()
        sleeper.wait()
    # the lock's process is gone: the lock no longer holds, and a save against a change on disk is refused
    window.rules.reload_from_disk()
    assert not window.rules.editor.isReadOnly()
    window.rules.editor.setPlainText(window.rules.doc.text + "- [Mine](mine.md) — mine\n")
    with open(index_path, "ab") as fh:
        fh.write(b"- [Theirs](theirs.md) - written by Claude meanwhile\n")
    agents = read(index_path)
    from keepgui.ui import threeway

    shown = []

    def exec_(dialog):
        shown.append(dialog)
        dialog.choice = threeway.KEEP_EDITING
        return 0

    monkeypatch.setattr(threeway.ThreeWayDialog, "exec", exec_)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    assert not window.rules.save()
    assert shown and read(index_path) == agents  # the agent's line is kept, nothing overwritten


# ---------------------------------------------------------------------- 7. review


def test_what_the_agent_changed_is_reviewed_entry_by_entry_and_restored(claude_window, qtbot):
    window, key, memory = claude_window(watch=True)
    index_path = os.path.join(memory, "MEMORY.md")
    originals = {name: read(os.path.join(memory, name)) for name in os.listdir(memory) if name.endswith(".md")}
    # the agent (or Auto Dream) deletes three memories, merges two into a third, and shortens the index
    for name in ("timezone.md", "hosting-ticket.md", "comments-off.md"):
        os.remove(os.path.join(memory, name))
    merged_into = os.path.join(memory, "postgres-16.md")
    extra = "".join(
        read(os.path.join(memory, n)).decode().split("---\n", 2)[2] for n in ("feed-cache.md", "goldmark-extensions.md")
    )
    with open(merged_into, "a", encoding="utf-8") as fh:
        fh.write(extra)
    for name in ("feed-cache.md", "goldmark-extensions.md"):
        os.remove(os.path.join(memory, name))
    lines = read(index_path).decode().splitlines(keepends=True)
    write(index_path, "".join(lines[:150]))
    banner = window.banner
    qtbot.waitUntil(
        lambda: banner.isVisible() and "rewritten by another program" in banner.label.text(), timeout=15_000
    )
    assert "3 memories deleted, 2 merged, 1 rewritten, index shortened (220 → 150 lines)" in banner.label.text()
    next(b for b in banner.buttons if b.text() == "Review").click()
    qtbot.waitUntil(lambda: window.compaction.dialog is not None and window.compaction.dialog.isVisible())
    dialog = window.compaction.dialog
    assert dialog.review and dialog.apply_button.text() == "Restore selected"
    # restore one entry
    dialog._set_selection([op.id for op in dialog.plan.operations if op.targets == ("timezone.md",)])
    dialog.apply_button.click()
    assert read(os.path.join(memory, "timezone.md")) == originals["timezone.md"]
    assert b"(timezone.md)" in read(index_path)
    assert not os.path.exists(os.path.join(memory, "hosting-ticket.md"))
    # and the rest, all at once, from a new review
    window.review_rewrite(key)  # Bank → Review outside rewrite: asked for, so the review itself (no banner)
    qtbot.waitUntil(lambda: window.compaction.dialog is not dialog and window.compaction.dialog is not None)
    again = window.compaction.dialog
    assert again.review and "2 memories deleted, 2 merged" in rewrite_summary(again.plan)
    again._set_selection(again.plan.select("all"))
    again.apply_button.click()
    for name in ("hosting-ticket.md", "comments-off.md", "feed-cache.md", "goldmark-extensions.md"):
        assert read(os.path.join(memory, name)) == originals[name]
    assert read(merged_into) == originals["postgres-16.md"]
    # one undo takes the restore-all back, exactly
    window.undo_stack.undo()
    assert not os.path.exists(os.path.join(memory, "comments-off.md"))


# ---------------------------------------------------------------------- 8. compaction


def test_the_index_compaction_is_reviewed_and_applied_as_one_undoable_change(claude_window, qtbot):
    window, key, memory = claude_window(watch=False)
    index_path = os.path.join(memory, "MEMORY.md")
    before = {name: read(os.path.join(memory, name)) for name in os.listdir(memory) if name.endswith(".md")}
    assert "compaction" in window.banner.label.text().lower() or "Review a plan" in window.banner.label.text()
    window.review_compaction(key)
    qtbot.waitUntil(lambda: window.compaction.dialog is not None, timeout=10_000)
    dialog = window.compaction.dialog
    kinds = {op.kind for op in dialog.plan.operations}
    assert {"duplicate", "shorten", "move-detail", "reorder"} <= kinds
    dialog.apply_button.click()
    folder = read_folder(memory)
    newest = max(folder.topics, key=lambda t: t.mtime_ms).rel
    assert next(e for e in folder.index.entries if e.target == newest).loaded  # the newest are no longer cut
    assert {t.rel for t in folder.topics} >= {n for n in before if n != "MEMORY.md"}  # no topic file deleted
    qtbot.waitUntil(lambda: "not loaded" in window.hub.detail(key))
    assert window.undo_stack.count() == 1
    window.undo_stack.undo()
    after = {name: read(os.path.join(memory, name)) for name in os.listdir(memory) if name.endswith(".md")}
    assert after == before and read(index_path) == before["MEMORY.md"]


# ---------------------------------------------------------------------- 9. the demo


def test_the_demo_opens_the_claude_code_home_with_ages_in_index_order(qtbot, tmp_path):
    from keepgui.ui.application import build_window

    window = build_window(window_args(demo=True), Settings(str(tmp_path / "s.json")), watch=False)
    try:
        claude = [s for s in window.hub.sources.values() if s.kind == "claude"]
        assert len(claude) == 1 and claude[0].is_home
        name = claude[0].scan().names[0]
        bank = claude[0].bank(name)
        bank.load()
        by_age = sorted(bank.folder.topics, key=lambda t: -t.mtime_ms)
        assert by_age[0].rel == "post-feed-caching-11.md"  # the last entry is the newest
        assert bank.project and os.path.isfile(os.path.join(bank.project, "CLAUDE.md"))
    finally:
        window.close()
        window.hub.shutdown()


# ---------------------------------------------------------------------- the views of issue #18, for this backend too


def test_the_activity_strip_and_the_graph_of_a_claude_code_project(claude_window, qtbot):
    window, _key, _memory = claude_window(watch=False)
    strip = window.memories.strip
    qtbot.waitUntil(lambda: strip.activity is not None, timeout=10_000)
    # every topic file was written at its own time (the demo's are three hours apart, newest last)
    assert len(strip.activity) == 215 and strip.activity.last >= strip.activity.first + 200 * 3 * 3_600_000
    window.show_panel("graph")
    qtbot.waitUntil(lambda: window.graph.view.graph is not None and not window.graph.busy(), timeout=15_000)
    graph = window.graph.view.graph
    hub = graph.hub_of("post-pgx-pools-2")  # part 3 says "It follows [[post-pgx-pools-2]]"
    assert hub is not None and hub.row == "post-pgx-pools-2.md"
