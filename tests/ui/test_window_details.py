"""The smaller things a new user saw in the window (issue 23, item 12's window parts, and item 6's
rendered view): plurals, plain words for the preview, the rule meter's last rule, HTML comments and
conflict markers in the rendered view, Rename/Delete with no rules, Escape, the F2 editor, the
activity strip's dates and scale, and the sidebar's count."""

from __future__ import annotations

from PySide6.QtCore import QDate, Qt
from PySide6.QtWidgets import QAbstractItemView

from keepgui.core.source import BankKey
from keepgui.ui.memorypanel.model import COLUMN_INDEX
from keepgui.ui.sidebar import DetailRole
from tests.ui.conftest import open_keep
from tests.ui.test_claude_window import claude_window, managed  # noqa: F401 - fixtures


def _one_memory_bank(window, demo_copy, qtbot) -> BankKey:
    path = str(demo_copy.iii)
    assert window.perform(path, lambda s: s.create_bank("solo", ""), report=False).change is not None
    key = BankKey(path, "solo")
    qtbot.waitUntil(lambda: "solo" in window.hub.banks(path), timeout=10_000)
    window.select_bank(key)
    qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)
    assert window.perform(key, lambda bank: bank.create("The only memory", ["one"], [], False)).change is not None
    qtbot.waitUntil(lambda: window.memories.model.live_count == 1, timeout=10_000)
    return key


def test_one_of_a_thing_is_said_in_the_singular(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    key = _one_memory_bank(window, demo_copy, qtbot)
    window.show_panel("rules")
    rules = window.panel("rules")
    qtbot.waitUntil(lambda: rules.docs is not None, timeout=10_000)
    assert window.perform(key, lambda bank: bank.documents().create("style")).change is not None
    window.select_bank(BankKey(key.source, "main"))
    window.select_bank(key)
    qtbot.waitUntil(
        lambda: (window.tree_model.index_of_bank(key).data(DetailRole) or "").endswith(" 1 rule"), timeout=10_000
    )
    detail = window.tree_model.index_of_bank(key).data(DetailRole)
    assert "1 memories" not in detail and "1 rule" in detail and "1 rules" not in detail
    qtbot.waitUntil(lambda: window.memories.model.live_count == 1, timeout=10_000)
    assert "1 memory " in window.memories.search.placeholderText()
    qtbot.waitUntil(lambda: rules.doc is not None and rules.meter.label.text() != "", timeout=10_000)
    assert "1 rules use" not in rules.meter.label.text() and "1 rule uses" in rules.meter.label.text()


def test_the_last_rule_cut_by_the_budget_does_not_speak_of_later_rules(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.show_panel("rules")
    rules = window.panel("rules")
    qtbot.waitUntil(lambda: rules.docs is not None and rules.doc is not None, timeout=10_000)
    last = rules.list.item(rules.list.count() - 1)
    rules.list.setCurrentItem(last)
    qtbot.waitUntil(lambda: rules.doc is not None and rules.doc.title == last.text(), timeout=5_000)
    rules.editor.setPlainText("# Long\n" + "x" * 20_000 + "\n")
    qtbot.waitUntil(
        lambda: "TRUNCATED" in rules.meter.label.text() or "OMITTED" in rules.meter.label.text(), timeout=5_000
    )
    assert "later rule" not in rules.meter.label.text()
    rules.discard()


def test_rename_and_delete_are_greyed_with_no_rules(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = str(demo_copy.iii)
    assert window.perform(path, lambda s: s.create_bank("empty", ""), report=False).change is not None
    qtbot.waitUntil(lambda: "empty" in window.hub.banks(path), timeout=10_000)
    window.show_panel("rules")
    window.select_bank(BankKey(path, "empty"))
    rules = window.panel("rules")
    qtbot.waitUntil(lambda: rules.key == BankKey(path, "empty") and rules.docs is not None, timeout=10_000)
    qtbot.waitUntil(lambda: not rules.listing and rules.list.count() == 0, timeout=5_000)
    assert rules.act_new.isEnabled()
    assert not rules.act_rename.isEnabled() and not rules.act_delete.isEnabled()


def test_escape_in_the_table_clears_the_search(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel = window.memories
    panel.search.setText("tea")
    qtbot.waitUntil(lambda: 0 < panel.proxy.rowCount() < panel.model.live_count, timeout=5_000)
    panel.table.setFocus()
    panel.table.selectRow(0)
    qtbot.keyClick(panel.table, Qt.Key.Key_Escape)
    assert panel.search.text() == ""
    panel.search.setText("tea")
    qtbot.keyClick(panel.detail.browser, Qt.Key.Key_Escape)
    assert panel.search.text() == ""


def test_the_f2_editor_keeps_to_its_column(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    panel = window.memories
    table = panel.table
    table.selectRow(0)
    index = table.currentIndex().siblingAtColumn(COLUMN_INDEX["text"])
    table.setCurrentIndex(index)
    table.setColumnWidth(COLUMN_INDEX["text"], 200)
    panel.edit_current()
    qtbot.waitUntil(lambda: table.state() == QAbstractItemView.State.EditingState, timeout=2_000)
    editor = table.focusWidget()
    qtbot.keyClicks(editor, " and a great deal more text typed at the end of it" * 3)
    cell = table.visualRect(index)
    assert editor.geometry().right() <= cell.right() + 1
    qtbot.keyClick(editor, Qt.Key.Key_Escape)


def test_the_activity_strip_writes_dates_and_keeps_small_days_readable(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    strip = window.memories.strip
    qtbot.waitUntil(lambda: strip.activity is not None, timeout=10_000)
    labels = strip.date_labels()
    assert len(labels) >= 2 and labels[-1][1] == "today"
    texts = [t for _x, t in labels]
    assert any(QDate.fromString(t + f" {QDate.currentDate().year()}", "d MMM yyyy").isValid() for t in texts)
    xs = [x for x, _t in labels]
    assert xs == sorted(xs)
    full = strip.bar_height(400, 400)
    assert strip.bar_height(1, 400) >= full / 10  # a bulk edit today does not flatten the rest


def test_the_sidebar_counts_what_the_table_lists(claude_window, qtbot):  # noqa: F811
    window, key, _memory = claude_window(watch=False)
    qtbot.waitUntil(lambda: window.memories.model.live_count > 0, timeout=10_000)

    def detail() -> str:
        return str(window.tree_model.index_of_bank(key).data(DetailRole))

    # the sidebar counts from the bank's own load, which may land a moment after the table's rows
    # (it said "loading…" then, on a busy machine): the two agree once both are in
    qtbot.waitUntil(lambda: "loading" not in detail(), timeout=10_000)
    assert detail().startswith(f"{window.memories.model.live_count} memories")


def test_the_rendered_view_hides_html_comments_and_draws_markers_as_lines(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.show_panel("rules")
    rules = window.panel("rules")
    qtbot.waitUntil(lambda: rules.docs is not None and rules.doc is not None, timeout=10_000)
    rules.act_rendered.setChecked(True)
    rules.editor.setPlainText(
        "# Notes\n<!-- a note for people, not for the agent -->\n- a\n<<<<<<< on disk now\n- b\n=======\n"
        "- c\n>>>>>>> your edits\n"
    )
    qtbot.waitUntil(lambda: "Notes" in rules.rendered.toPlainText(), timeout=5_000)
    shown = rules.rendered.toPlainText()
    assert "a note for people" not in shown
    assert "<<<<<<< on disk now" in shown and ">>>>>>> your edits" in shown
    html = rules.rendered.toHtml()
    assert "blockquote" not in html.lower() and "<h1" not in html.lower().replace("<h1", "", 1)
    rules.discard()


def test_nanobot_parts_say_once_whether_they_reach_the_model(make_window, demo_copy, qtbot):
    window, _key = open_keep(make_window, demo_copy, qtbot)
    window.show_panel("preview")
    pane = window.preview
    qtbot.waitUntil(
        lambda: pane.last_result is not None and not isinstance(pane.last_result, Exception), timeout=10_000
    )
    qtbot.waitUntil(lambda: "── " in pane.view.section.toPlainText(), timeout=10_000)
    text = pane.view.section.toPlainText()
    headers = [line for line in text.splitlines() if line.startswith("── ")]
    assert headers
    assert all(line.count("injected") <= 1 for line in headers)
    assert any("in the system prompt" in line for line in headers)


def test_the_preview_says_how_it_ranked_in_plain_words(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.show_panel("preview")
    pane = window.preview
    pane.set_query("what does the user drink")
    qtbot.waitUntil(
        lambda: pane.last_result is not None and not isinstance(pane.last_result, Exception), timeout=10_000
    )
    assert "Lexical only" not in pane.summary.text()
    assert "Ranked by words" in pane.summary.text()


def test_a_merge_conflict_is_resolved_side_by_side_in_a_real_dialog(make_window, demo_copy, qtbot):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from keepgui.ui.threeway import BOTH_DISK_FIRST, ConflictsDialog

    window = make_window(demo_copy.iii, watch=False)
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path, opened = rules.doc.path, rules.doc.text
    with open(path, "a", encoding="utf-8") as fh:  # each side appended a different line
        fh.write("- from the agent\n")
    rules.editor.setPlainText(opened + "- from me\n")
    seen: list[list[str]] = []

    def resolve() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, ConflictsDialog):
            QTimer.singleShot(20, resolve)
            return
        seen.append([box.currentData() for box in dialog.choices])
        dialog.accept()

    QTimer.singleShot(20, resolve)
    _on_disk, stamp = rules.docs.current(rules.doc)
    rules.merge_with_disk(opened + "- from me\n", opened + "- from the agent\n", stamp)
    text = rules.editor.toPlainText()
    if seen:  # a conflict (the merge tool could not keep both by itself): shown side by side, both kept
        assert seen == [[BOTH_DISK_FIRST]]
    assert "<<<<<<<" not in text and ">>>>>>>" not in text
    assert text.endswith("- from the agent\n- from me\n")
    rules.discard()
