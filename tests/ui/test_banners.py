"""Banners belong to the view they describe; the compaction dialog fits the screen and offers the
review from the window, not a command to type (#16.11)."""

from __future__ import annotations

import os

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication

from keepgui.core.source import BankKey
from keepgui.ui.banner import Banner
from keepgui.ui.compaction import CompactionDialog
from keepgui.ui.geometry import fitted_size
from tests.ui.conftest import open_keep


def test_the_compaction_banner_goes_with_its_bank_and_comes_back(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    assert window.banner.isVisible() and "compaction is due" in window.banner.label.text()
    main = BankKey(demo_copy.iii, "main")
    window.select_bank(main)
    qtbot.waitUntil(lambda: window.current == main and window._loading is None, timeout=10_000)
    assert not window.banner.isVisible()  # it described keep.md, not this bank
    window.select_bank(key)
    qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)
    assert window.banner.isVisible() and "compaction is due" in window.banner.label.text()
    window.banner.dismiss()  # dismissed: it stays away for this bank too
    window.select_bank(main)
    window.select_bank(key)
    assert not window.banner.isVisible()


def test_a_message_for_every_view_stays_and_a_views_own_is_kept(qtbot):
    banner = Banner()
    qtbot.addWidget(banner)
    banner.set_view("a")
    banner.show_message("about b", owner="b")
    assert not banner.isVisible()  # b is not shown: kept for later
    banner.set_view("b")
    assert banner.isVisible() and banner.label.text() == "about b" and banner.owner == "b"
    banner.show_message("the last action failed")  # no owner: whatever is shown
    banner.set_view("a")
    assert banner.isVisible() and banner.label.text() == "the last action failed"
    banner.dismiss()
    banner.set_view("b")
    assert banner.label.text() == "about b"
    banner.forget("b")
    assert not banner.isVisible()


def test_the_compaction_dialog_fits_a_small_screen(make_window, demo_copy, qtbot):
    assert fitted_size(QSize(1280, 820), QRect(0, 0, 1366, 768 - 30)) == QSize(1256, 678)
    assert fitted_size(QSize(1280, 820), QRect(0, 0, 1920, 1080)) == QSize(1280, 820)
    window, key = open_keep(make_window, demo_copy, qtbot)
    window.review_compaction(key)
    qtbot.waitUntil(lambda: isinstance(window.compaction.dialog, CompactionDialog), timeout=15_000)
    available = QGuiApplication.primaryScreen().availableGeometry()  # 800×800 offscreen
    size = window.compaction.dialog.size()
    assert size.width() <= available.width() and size.height() <= available.height()


def test_an_unreviewed_rewrite_is_offered_for_review_in_the_dialog(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    doc = window.hub.sources[demo_copy.nanobot].doc
    with open(os.path.join(demo_copy.nanobot, "keep.md"), "w", encoding="utf-8") as fh:  # the agent rewrites it
        fh.write("".join(f"- {e.text}\n" for e in doc.entries[:60]))
    qtbot.waitUntil(lambda: "rewritten by another program" in window.banner.label.text(), timeout=15_000)
    window.review_compaction(key)
    qtbot.waitUntil(lambda: isinstance(window.compaction.dialog, CompactionDialog), timeout=15_000)
    dialog = window.compaction.dialog
    assert "not reviewed yet" in dialog.notices.text() and "keepgui review" not in dialog.notices.text()
    assert dialog.review_first.isVisibleTo(dialog)
    dialog.review_first.click()
    qtbot.waitUntil(
        lambda: window.compaction.dialog is not dialog and window.compaction.dialog is not None, timeout=15_000
    )
    assert window.compaction.dialog.review  # the review of the rewrite, with restore per entry


def test_a_banner_shown_takes_the_new_theme_s_colours(qtbot):
    """Switching the theme while a banner is up: its tint and its words follow the new palette (it set
    its own palette, which kept the old theme's colours)."""
    from PySide6.QtGui import QPalette

    from keepgui.ui import appearance, theme

    was = appearance._applied or "system"
    banner = Banner()
    qtbot.addWidget(banner)
    try:
        appearance.apply_theme("light")
        banner.show_message("keep.md was rewritten by another program", "warning")
        light = banner.palette().color(banner.backgroundRole())
        appearance.apply_theme("dark")
        qtbot.wait(20)
        dark = banner.palette().color(banner.backgroundRole())
        assert dark != light and dark == theme.tint("warning") and theme.is_dark()
        text = banner.palette().color(QPalette.ColorRole.WindowText)
        assert theme.contrast(text, dark) >= 4.5
    finally:
        appearance.apply_theme(was)
