"""Bank → Restore from trash… and the Trash node's context menu restore a trashed bank (issue 23,
item 3): both asked with the real dialog, in a real window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMenu

from keepgui.core.source import BankKey
from keepgui.ui.dialogs import TrashDialog
from keepgui.ui.sidebar import KindRole


def _trash_coding(window, demo_copy, qtbot) -> str:
    path = str(demo_copy.iii)
    outcome = window.perform(path, lambda s: s.trash_bank("coding"), report=False)
    assert outcome.change is not None
    qtbot.waitUntil(lambda: "coding" not in window.hub.banks(path) and bool(window.hub.trashed(path)), timeout=10_000)
    return path


def _accept_the_trash_dialog_when_it_opens(seen: list[str]) -> None:
    def accept() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, TrashDialog):
            seen.append(dialog.folder() or "")
            dialog.accept()
        else:
            QTimer.singleShot(20, accept)

    QTimer.singleShot(20, accept)


def test_bank_restore_from_trash_in_the_menu_restores_the_bank(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = _trash_coding(window, demo_copy, qtbot)
    seen: list[str] = []
    _accept_the_trash_dialog_when_it_opens(seen)
    window.act_restore_bank.trigger()
    assert seen and seen[0]
    assert "not a trash folder" not in window.banner.label.text()
    qtbot.waitUntil(lambda: "coding" in window.hub.banks(path), timeout=10_000)


def _trash_node(window, path):
    model = window.tree_model
    source = model.index_of_source(path)
    for row in range(model.rowCount(source)):
        index = model.index(row, 0, source)
        if index.data(KindRole) == "trash":
            return index
    raise AssertionError("no Trash node")


@pytest.mark.qt_log_ignore("This plugin does not support grabbing the keyboard")  # offscreen: a menu cannot grab
def test_the_trash_nodes_context_menu_restores_a_bank(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    path = _trash_coding(window, demo_copy, qtbot)
    node = _trash_node(window, path)
    window.tree.scrollTo(node)
    chosen: list[str] = []
    seen: list[str] = []

    def choose() -> None:
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            QTimer.singleShot(20, choose)
            return
        action = next(a for a in menu.actions() if a.text().replace("&", "").startswith("Restore from trash"))
        chosen.append(action.text())
        _accept_the_trash_dialog_when_it_opens(seen)
        action.trigger()
        menu.close()

    QTimer.singleShot(20, choose)
    window._tree_menu(window.tree.visualRect(node).center())
    qtbot.waitUntil(lambda: bool(seen), timeout=5_000)
    assert "not a trash folder" not in window.banner.label.text()
    qtbot.waitUntil(lambda: BankKey(path, "coding").bank in window.hub.banks(path), timeout=10_000)
