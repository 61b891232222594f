"""A window with no source greets: what keepgui found here, the demo, one Open button per backend,
recent sources (#16.5); the Open dialog says what a folder is and asks before opening a stranger (#16.6)."""

from __future__ import annotations

import os
import shutil

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from keepgui.core import registry
from keepgui.ui import opening
from keepgui.ui.opening import SourceFolderDialog, confirm_kind, describe, verdict_for
from keepgui.ui.settings import Settings
from tests.reliability.common import ROOT
from tests.ui.conftest import window_args
from tests.ui.test_seam import notes_backend, notes_folder  # noqa: F401 - fixtures: a third backend


def _empty_window(qtbot, tmp_path, **settings_values):
    from keepgui.ui.application import build_window

    settings = Settings(str(tmp_path / "settings.json"))
    settings.set_sources([])  # not a first start: nothing was open last time
    for key, value in settings_values.items():
        settings.set(key, value)
    window = build_window(window_args(), settings, watch=False)
    qtbot.addWidget(window)
    window.show()
    return window


def test_a_window_with_no_source_shows_the_welcome_page(qtbot, tmp_path, demo_copy, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(demo_copy.nanobot, home / ".nanobot" / "workspace")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KEEPGUI_DATA_DIR", demo_copy.iii)
    gone = str(tmp_path / "gone")
    window = _empty_window(qtbot, tmp_path, recent_sources=[{"kind": "iii", "path": gone}])
    welcome = window.welcome
    assert window.pages.currentWidget() is welcome
    qtbot.waitUntil(lambda: len(welcome.found) == 2, timeout=10_000)
    assert [(f.kind, f.path) for f in welcome.found] == [
        ("iii", demo_copy.iii),
        ("nanobot", str(home / ".nanobot" / "workspace")),
    ]
    labels = [b.text() for b in welcome.open_buttons]
    assert labels == [f"Open {opening.a(b.label)}…" for b in registry.backends()]
    assert welcome.recent_box.isVisible()
    recent_open = welcome.recent_layout.itemAtPosition(0, 1).widget()
    assert not recent_open.isEnabled()  # that folder is gone
    found_open = welcome.found_layout.itemAtPosition(0, 1).widget()
    found_open.click()  # open the data dir it found
    assert window.pages.currentWidget() is window.splitter and demo_copy.iii in window.hub.sources
    qtbot.waitUntil(lambda: window.current is not None, timeout=10_000)
    assert window.settings.recent_sources()[0] == {"kind": "iii", "path": demo_copy.iii}
    window.tree.setCurrentIndex(window.tree_model.index_of_source(demo_copy.iii))
    window.remove_current_source()  # File → Close source
    assert window.pages.currentWidget() is welcome  # the last source closed: welcome again
    window.hub.shutdown()


def test_nothing_found_says_where_it_looked_and_the_demo_opens_for_this_session(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    monkeypatch.delenv("KEEPGUI_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # the worker's default data dir is ./data/memory
    window = _empty_window(qtbot, tmp_path)
    welcome = window.welcome
    qtbot.waitUntil(lambda: "Nothing found" in welcome.found_status.text(), timeout=10_000)
    assert "an iii data dir" in welcome.found_status.text() and not welcome.recent_box.isVisible()
    welcome.demo_button.click()
    qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=15_000)
    assert len(window.hub.sources) >= 2 and window.remembered == set()
    window.save_state()
    assert Settings(str(tmp_path / "settings.json")).sources() == []  # the demo is never remembered
    window.hub.shutdown()


def test_every_registered_backend_gets_its_open_button(notes_backend, qtbot, tmp_path):  # noqa: F811
    window = _empty_window(qtbot, tmp_path)
    assert "Open a notes folder…" in [b.text() for b in window.welcome.open_buttons]
    assert "Open notes folder…" in [a.text() for a in window.open_actions]
    window.hub.shutdown()


def test_the_open_dialog_says_what_a_folder_is(demo_copy, qtbot):
    verdict = verdict_for("iii", demo_copy.iii)
    assert describe("iii", verdict) == "✓ An iii data dir: 3 banks: blog, coding, main"
    verdict = verdict_for("iii", demo_copy.nanobot)
    assert verdict.kind == "nanobot"
    assert describe("iii", verdict).startswith("⚠ A nanobot workspace (") and "not an iii data dir" in describe(
        "iii", verdict
    )
    checkout = verdict_for("iii", ROOT)  # a source checkout: every subfolder would be a "0 memories" bank
    assert checkout.kind is None and describe("iii", checkout) == (
        f"✗ Not an iii data dir: no bank folder (one with memories.jsonl, rules/ or bank.yaml) in {ROOT} "
        "(nor any other source keepgui knows)"
    )
    dialog = SourceFolderDialog("iii")
    qtbot.addWidget(dialog)
    dialog.look_at(demo_copy.iii)
    qtbot.waitUntil(lambda: dialog.verdict_label.text().startswith("✓ An iii data dir"), timeout=5_000)
    dialog.look_at(ROOT)
    qtbot.waitUntil(lambda: dialog.verdict_label.text().startswith("✗"), timeout=5_000)


def _answer(text: str) -> None:
    """Click the button ``text`` of the message box about to open."""

    def click() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, click)
            return
        next(b for b in box.buttons() if b.text() == text).click()

    QTimer.singleShot(0, click)


def test_opening_a_folder_that_is_not_such_a_source_asks_first(demo_copy, qtbot, tmp_path, monkeypatch):
    from keepgui.ui.application import build_window

    window = build_window(window_args(data_dir=demo_copy.iii), Settings(str(tmp_path / "s.json")), watch=False)
    qtbot.addWidget(window)
    # Ctrl+O on a source checkout: asked, and Cancel opens nothing
    _answer("Cancel")
    assert confirm_kind(window, "iii", ROOT, verdict_for("iii", ROOT)) is None
    _answer("Open anyway")
    assert confirm_kind(window, "iii", ROOT, verdict_for("iii", ROOT)) == "iii"
    # a nanobot workspace chosen for "Open iii data dir": offered as what it is
    _answer("Open as a nanobot workspace")
    assert confirm_kind(window, "iii", demo_copy.nanobot, verdict_for("iii", demo_copy.nanobot)) == "nanobot"
    # the whole flow of File → Open, the folder chosen in the dialog
    monkeypatch.setattr(SourceFolderDialog, "exec", lambda self: 1)
    monkeypatch.setattr(SourceFolderDialog, "selectedFiles", lambda self: [demo_copy.nanobot])
    _answer("Open as a nanobot workspace")
    window.open_actions[0].trigger()  # Open iii data dir…
    qtbot.waitUntil(lambda: demo_copy.nanobot in window.hub.sources, timeout=10_000)
    assert window.hub.backend(demo_copy.nanobot).kind == "nanobot"
    assert os.path.abspath(demo_copy.nanobot) in window.remembered
    window.hub.shutdown()


def test_the_welcome_column_is_centred_and_names_the_keys_that_open_and_find(qtbot, tmp_path):
    from PySide6.QtGui import QKeySequence

    from keepgui.ui import shortcuts
    from keepgui.ui.welcome import WelcomePage

    page = WelcomePage()
    qtbot.addWidget(page)
    page.resize(1440, 900)
    page.show()
    qtbot.waitExposed(page)
    column = page.title_label.parentWidget()
    left = column.mapTo(page, column.rect().topLeft()).x()
    right = page.viewport().width() - (left + column.width())
    assert column.width() <= 960 and abs(left - right) <= 2, (left, right)  # not stuck to the left edge
    hint = page.keys_hint.text()
    open_key = QKeySequence(shortcuts.OPEN_SOURCE[0]).toString(QKeySequence.SequenceFormat.NativeText)
    palette_key = QKeySequence(shortcuts.PALETTE).toString(QKeySequence.SequenceFormat.NativeText)
    assert open_key in hint and palette_key in hint
    assert "undone" in page.what.text()  # what keepgui does, before the first click
