"""Reviewing a Dream rewrite of MEMORY.md in the window (issue 23, item 2): the review dialog asks
for the confirmation a Dream-managed file needs itself, and an error shows in that dialog, not in
a banner behind it."""

from __future__ import annotations

import os

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from keepgui.ui.compaction import CompactionDialog
from tests.ui.conftest import open_keep


def _memory_md(copy) -> str:
    return os.path.join(copy.nanobot, "memory", "MEMORY.md")


def _dream_rewrites_memory_md(window, demo_copy, qtbot, key) -> tuple[list[str], CompactionDialog]:
    path = _memory_md(demo_copy)
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines(keepends=True)
    lost = [line for line in lines if "beagle" in line or "green tea" in line]
    with open(path, "w", encoding="utf-8") as fh:  # Dream consolidates: two facts dropped
        fh.write("".join(line for line in lines if line not in lost))
    window.banner.dismiss()
    qtbot.wait(300)
    window.compaction.review_rewrite(key, "MEMORY.md")
    qtbot.waitUntil(
        lambda: isinstance(window.compaction.dialog, CompactionDialog) and window.compaction.dialog.isVisible(),
        timeout=15_000,
    )
    dialog = window.compaction.dialog
    assert dialog.review and dialog.plan.operations
    dialog._set_selection(dialog.plan.select("all"))
    return [line.strip() for line in lost], dialog


def _answer_the_question(answer: QMessageBox.StandardButton, asked: list[str]) -> None:
    def press() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            asked.append(box.text())
            box.button(answer).click()
        else:
            QTimer.singleShot(20, press)

    QTimer.singleShot(20, press)


def test_restore_selected_asks_for_the_dream_confirmation_and_restores(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    lost, dialog = _dream_rewrites_memory_md(window, demo_copy, qtbot, key)
    asked: list[str] = []
    _answer_the_question(QMessageBox.StandardButton.Yes, asked)
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: bool(asked), timeout=5_000)
    assert "Dream" in asked[0]
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5_000)
    with open(_memory_md(demo_copy), encoding="utf-8") as fh:
        text = fh.read()
    assert all(line in text for line in lost)
    assert "managed by Dream" not in window.banner.label.text()


def test_no_to_the_confirmation_writes_nothing_and_keeps_the_dialog(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    _lost, dialog = _dream_rewrites_memory_md(window, demo_copy, qtbot, key)
    with open(_memory_md(demo_copy), "rb") as fh:
        before = fh.read()
    asked: list[str] = []
    _answer_the_question(QMessageBox.StandardButton.No, asked)
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: bool(asked), timeout=5_000)
    qtbot.wait(100)
    assert dialog.isVisible()
    with open(_memory_md(demo_copy), "rb") as fh:
        assert fh.read() == before
    assert not window.banner.isVisible() or "managed by Dream" not in window.banner.label.text()


def test_an_error_while_restoring_shows_in_the_dialog(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    _lost, dialog = _dream_rewrites_memory_md(window, demo_copy, qtbot, key)
    os.remove(_memory_md(demo_copy))  # a folder where the file was: it cannot be read nor written
    os.mkdir(_memory_md(demo_copy))
    asked: list[str] = []
    _answer_the_question(QMessageBox.StandardButton.Yes, asked)
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: dialog.error.isVisible() and bool(dialog.error.text()), timeout=5_000)
    assert dialog.isVisible()
    assert not window.banner.isVisible() or "failed" not in window.banner.label.text()
