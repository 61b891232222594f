"""The compaction dialog and the "an agent rewrote my memory" banner."""

from __future__ import annotations

import os

from keepgui.backends.iii.record import fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.backends.nanobot.keepmd import KeepDoc
from keepgui.ui.compaction import CompactionDialog
from tests.ui.conftest import open_keep


def keep_path(copy) -> str:
    return os.path.join(copy.nanobot, "keep.md")


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def wait_dialog(window, qtbot) -> CompactionDialog:
    qtbot.waitUntil(
        lambda: isinstance(window.compaction.dialog, CompactionDialog) and window.compaction.dialog.isVisible(),
        timeout=15_000,
    )
    return window.compaction.dialog


def test_compaction_due_badge_and_dialog_apply_exactly_the_checked_operations(make_window, demo_copy, qtbot):
    window, _key = open_keep(make_window, demo_copy, qtbot)
    assert window.banner.isVisible() and "compaction is due" in window.banner.label.text()
    original = read(keep_path(demo_copy))
    window.banner.buttons[0].click()  # "Review compaction"
    dialog = wait_dialog(window, qtbot)
    plan = dialog.plan
    safe = sorted(plan.default_selection())
    assert len(safe) >= 3
    chosen = frozenset(safe[:2])  # uncheck everything but two operations
    dialog._set_selection(chosen)
    assert dialog.selection() == chosen
    expected = plan.after_bytes(chosen)
    assert "→" in dialog.counts.text()
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5_000)
    assert read(keep_path(demo_copy)) == expected
    assert window.undo_stack.undoText().startswith("Compact keep.md")
    window.undo_stack.undo()
    assert read(keep_path(demo_copy)) == original
    window.undo_stack.redo()
    assert read(keep_path(demo_copy)) == expected


def test_each_operation_shows_its_own_diff(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    window.review_compaction(key)
    dialog = wait_dialog(window, qtbot)
    top = dialog.tree.topLevelItem(0)
    dialog.tree.setCurrentItem(top.child(0))
    op = dialog.plan.op(top.child(0).data(0, 256 + 80))
    assert dialog.op_diff.toPlainText() == (dialog.plan.render_operation(op.id) or "(no change to the file)")
    assert dialog.file_diff.toPlainText().startswith("---")


def test_rewrite_banner_appears_and_restore_brings_entries_back(make_window, demo_copy, qtbot):
    window, _key = open_keep(make_window, demo_copy, qtbot)
    window.banner.dismiss()
    doc = window.hub.sources[demo_copy.nanobot].doc
    kept = [e.text for e in doc.entries[:40]]
    lost = [e.text for e in doc.entries[40:]]
    with open(keep_path(demo_copy), "w", encoding="utf-8") as fh:  # the agent "compacts" on its own
        fh.write("".join(f"- {t}\n" for t in kept))
    qtbot.waitUntil(
        lambda: window.banner.isVisible() and "rewritten by another program" in window.banner.label.text(),
        timeout=15_000,
    )
    assert "entries removed" in window.banner.label.text()
    window.banner.buttons[0].click()  # "Review"
    dialog = wait_dialog(window, qtbot)
    assert dialog.review and dialog.apply_button.text() == "Restore selected"
    dialog._set_selection(dialog.plan.select("all"))
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5_000)
    after = KeepDoc.parse(read(keep_path(demo_copy)))
    texts = {e.text for e in after.entries}
    assert set(lost) - texts == set() and set(kept) <= texts
    window.undo_stack.undo()  # the restore is undoable too
    assert {e.text for e in KeepDoc.parse(read(keep_path(demo_copy))).entries} == set(kept)


def test_bank_compaction_supersedes_duplicates_in_one_undo_step(make_window, demo_copy, qtbot):
    bank = DataDir(demo_copy.iii).bank("blog")
    bank.save("The blog is called Slow Bytes and runs on Hugo!")  # a normalised-text twin of a pinned memory
    window = make_window(demo_copy.iii, bank="blog")
    window.review_compaction()
    dialog = wait_dialog(window, qtbot)
    ops = [op for op in dialog.plan.operations if op.kind == "supersede"]
    assert ops and dialog.selection()
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5_000)
    twin = DataDir(demo_copy.iii).bank("blog").get(fingerprint("The blog is called Slow Bytes and runs on Hugo!"))
    assert twin.invalid_at is not None and twin.superseded_by
    window.undo_stack.undo()
    assert DataDir(demo_copy.iii).bank("blog").get(twin.id).invalid_at is None
