"""Problems a person can read (issue 23, item 9): the Where column keeps the file and line, a
Claude Code project with problems has its badge (on the bank and its source), a click on a badge
opens the problems, and a long status message stops short of the "read …" label."""

from __future__ import annotations

import os

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QStyleOptionViewItem

from keepgui.core.source import BankKey
from keepgui.ui.problems import ProblemsDialog
from keepgui.ui.sidebar import ProblemCountRole
from tests.ui.test_claude_window import claude_window, managed  # noqa: F401 - fixtures


def _spoil_topics(memory: str, n: int) -> None:
    for i in range(n):
        with open(os.path.join(memory, f"broken_{i:03}.md"), "w", encoding="utf-8") as fh:
            fh.write("---\nname: never closed\n\nbody\n")


def test_a_claude_project_with_problems_has_a_badge_and_a_click_on_it_opens_them(claude_window, qtbot):  # noqa: F811
    window, key, memory = claude_window(watch=False)
    _spoil_topics(memory, 3)
    window.hub.refresh_bank(key)
    model = window.tree_model
    qtbot.waitUntil(lambda: (model.index_of_bank(key).data(ProblemCountRole) or 0) >= 3, timeout=10_000)
    source = model.index_of_source(key.source)
    assert (source.data(ProblemCountRole) or 0) >= 3  # the source says so too, even collapsed
    tree = window.tree
    index = model.index_of_bank(key)
    tree.scrollTo(index)
    rect = tree.visualRect(index)
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.right() - 10, rect.center().y()))
    qtbot.waitUntil(lambda: window.findChild(ProblemsDialog) is not None, timeout=5_000)
    dialog = window.findChild(ProblemsDialog)
    assert dialog.key == key
    qtbot.waitUntil(lambda: dialog.problems is not None, timeout=10_000)
    assert len([p for p in dialog.problems if "broken_" in p.path]) == 3
    dialog.close()


def test_the_where_column_elides_the_middle_and_keeps_file_and_line(claude_window, qtbot):  # noqa: F811
    window, key, memory = claude_window(watch=False)
    _spoil_topics(memory, 1)
    window.hub.refresh_bank(key)
    qtbot.wait(500)
    window.show_problems(key)
    dialog = window.findChild(ProblemsDialog)
    qtbot.waitUntil(lambda: bool(dialog.problems) and dialog.tree.topLevelItemCount() > 0, timeout=10_000)
    tree = dialog.tree
    tree.setColumnWidth(0, 220)
    index = tree.model().index(0, 0)
    where = index.data()
    assert len(where) > 60  # a long path: it cannot be shown whole in 220 pixels
    option = QStyleOptionViewItem()
    option.rect = tree.visualRect(index)
    option.font = tree.font()
    option.fontMetrics = tree.fontMetrics()
    tree.itemDelegateForIndex(index).initStyleOption(option, index)
    shown = option.text
    assert shown != where and "…" in shown
    assert shown.endswith("/broken_000.md:1")  # the file and its line, whole
    dialog.close()


def test_a_long_status_message_stops_before_the_read_label(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.resize(1024, 700)
    window._mark_reloaded()
    qtbot.waitUntil(lambda: window.reload_label.isVisible() and window.reload_label.text().startswith("read"))
    long = "the worker's reload command failed: " + "a very long explanation of what went wrong " * 10
    window.note(long)
    bar = window.statusBar()
    shown = bar.currentMessage()
    assert shown.endswith("…")
    assert bar.fontMetrics().horizontalAdvance(shown) + 6 < window.reload_label.x()
    assert bar.toolTip() == long
    assert BankKey(str(demo_copy.iii), "main") == window.current


def test_a_long_path_in_the_status_bar_stops_before_the_read_label(claude_window, qtbot):  # noqa: F811
    window, key, _memory = claude_window(watch=False)
    window.resize(1024, 700)
    window._mark_reloaded()
    qtbot.waitUntil(lambda: window.reload_label.isVisible() and window.reload_label.text().startswith("read"))
    qtbot.wait(50)
    label = window.file_label
    shown = label.text()
    assert len(os.path.join(key.source, key.bank)) > 100
    assert "…" in shown
    right = label.mapTo(window, label.rect().topLeft()).x() + label.fontMetrics().horizontalAdvance(shown)
    assert right + 6 < window.reload_label.mapTo(window, window.reload_label.rect().topLeft()).x()
