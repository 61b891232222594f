"""Edit → Preferences: the theme (System/Light/Dark), the reload command, the sources at start, in the
standard place with the standard key; headings read in dark mode (#16.12)."""

from __future__ import annotations

import os

from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QPalette
from PySide6.QtWidgets import QApplication, QPlainTextEdit

from keepgui.ui import appearance, theme
from keepgui.ui.preferences import Preferences, PreferencesDialog
from keepgui.ui.settings import Settings
from keepgui.ui.startup import initial_sources
from tests.ui.conftest import window_args


def test_preferences_sit_in_the_edit_menu_with_the_standard_key(make_window, demo_copy):
    window = make_window(demo_copy.iii, watch=False)
    action = window.act_preferences
    assert action.menuRole() == QAction.MenuRole.PreferencesRole  # macOS moves it to the application menu
    edit = next(m for m in window.menuBar().actions() if m.text() == "&Edit").menu()
    assert action in edit.actions()
    keys = action.shortcuts()
    assert QKeySequence("Ctrl+,") in keys
    assert all(k in keys for k in QKeySequence.keyBindings(QKeySequence.StandardKey.Preferences))


def test_dark_and_light_themes_apply_at_once_and_system_comes_back(make_window, demo_copy):
    app = QApplication.instance()
    system = QPalette(app.palette())
    window = make_window(demo_copy.iii, watch=False)
    try:
        window.apply_preferences(Preferences(theme="dark"))
        style = app.style()
        assert theme.is_dark() and isinstance(style, appearance.KeepguiStyle)
        assert style.baseStyle().name().lower() == "fusion"
        assert window.settings.theme() == "dark"
        assert Settings(window.settings.path).theme() == "dark"  # remembered at once
        # the sidebar's icons are drawn again in the dark palette's text colour (source folders stayed black)
        QApplication.processEvents()
        source = window.tree_model.item(0)
        assert source.icon().cacheKey() == theme.icon("folder").cacheKey()
        trash = next(source.child(r) for r in range(source.rowCount()) if source.child(r).text() == "Trash")
        assert trash.icon().cacheKey() == theme.icon("trash").cacheKey()
        window.apply_preferences(Preferences(theme="light"))
        assert not theme.is_dark()
        window.apply_preferences(Preferences(theme="system"))
        assert app.palette().color(QPalette.ColorRole.Window) == system.color(QPalette.ColorRole.Window)
    finally:
        appearance.apply_theme("system")


def test_headings_read_on_a_dark_palette(make_window, demo_copy, qtbot):
    """#16.12: the preview's headings were the palette's highlight, dark blue on near-black."""
    from keepgui.ui.adapters.iii import SectionHighlighter
    from keepgui.ui.markdown import MarkdownHighlighter

    try:
        appearance.apply_theme("dark")
        base = QGuiApplication.palette().color(QPalette.ColorRole.Base)
        highlight = QGuiApplication.palette().color(QPalette.ColorRole.Highlight)
        assert theme.contrast(highlight, base) < 4.5  # the highlight itself would not read
        for highlighter in (SectionHighlighter(QPlainTextEdit()), MarkdownHighlighter(QPlainTextEdit())):
            heading = highlighter.heading.foreground().color()
            assert theme.contrast(heading, base) >= 4.5, type(highlighter).__name__
        window = make_window(demo_copy.iii, watch=False)
        window.show_panel("preview")
        view = window.preview.view
        qtbot.waitUntil(lambda: "## " in view.section.toPlainText(), timeout=10_000)
        colour = view.section_highlighter.heading.foreground().color()
        assert theme.contrast(colour, view.section.palette().color(QPalette.ColorRole.Base)) >= 4.5
    finally:
        appearance.apply_theme("system")


def test_the_reload_command_of_preferences_runs_after_every_write(demo_copy, qtbot, tmp_path):
    from keepgui.ui.application import build_window

    settings = Settings(str(tmp_path / "s.json"))
    window = build_window(window_args(data_dir=demo_copy.iii, bank="main", reload_command=None), settings, watch=False)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.current is not None and window._loading is None, timeout=15_000)
    marker = tmp_path / "reloaded"
    window.apply_preferences(Preferences(reload_command=f"touch {marker}"))
    assert window.settings.reload_command() == f"touch {marker}" and window.hub.reload_command == f"touch {marker}"
    panel = window.memories
    panel.set_pinned(True, [next(r for r in panel.model.rows() if not r.pinned and r.invalid_at is None)])
    qtbot.waitUntil(marker.exists, timeout=10_000)
    window.apply_preferences(Preferences(reload_command=None))  # back to the default
    assert window.settings.reload_command() is None and "reload_command" not in window.settings._values
    window.hub.shutdown()


def test_a_reload_command_given_for_the_run_wins_and_the_dialog_says_so(qtbot, demo_copy, tmp_path):
    from keepgui.ui.application import build_window

    settings = Settings(str(tmp_path / "s.json"))
    settings.set_reload_command("true")
    window = build_window(window_args(data_dir=demo_copy.iii, reload_command="false"), settings, watch=False)
    qtbot.addWidget(window)
    assert window.hub.reload_command == "false" and "--reload-command" in window.reload_override
    window.apply_preferences(Preferences(reload_command="echo"))
    assert window.hub.reload_command == "false" and settings.reload_command() == "echo"
    window.hub.shutdown()
    plain = build_window(window_args(data_dir=demo_copy.iii, reload_command=None), settings, watch=False)
    qtbot.addWidget(plain)
    assert plain.hub.reload_command == "echo" and plain.reload_override == ""
    plain.hub.shutdown()


def test_fixed_sources_at_start(demo_copy, tmp_path):
    settings = Settings(str(tmp_path / "s.json"))
    settings.set_sources([{"kind": "iii", "path": "/somewhere/else"}])
    assert initial_sources(window_args(), settings) == ([("iii", "/somewhere/else")], True)
    settings.set_start_sources([{"kind": "nanobot", "path": demo_copy.nanobot}])
    assert initial_sources(window_args(), settings) == ([("nanobot", demo_copy.nanobot)], True)
    settings.set_start_sources(None)
    assert initial_sources(window_args(), settings)[0] == [("iii", "/somewhere/else")]


def test_the_dialog_round_trips_what_it_shows(qtbot, demo_copy):
    current = Preferences(
        theme="dark",
        reload_command="",
        start_sources=None,
        open_now=[("iii", demo_copy.iii), ("nanobot", demo_copy.nanobot)],
    )
    added = []
    dialog = PreferencesDialog(current, None, "", lambda kind, then: (added.append(kind), then(kind, "/x/y")))
    qtbot.addWidget(dialog)
    assert dialog.value() == current  # unchanged: the same preferences
    assert dialog.custom_reload.isChecked() and dialog.reload.text() == ""
    assert not dialog.sources.isEnabled() and dialog.start_list() == current.open_now
    dialog.fixed.setChecked(True)
    dialog.add_button.menu().actions()[0].trigger()
    assert added == ["iii"] and dialog.start_list()[-1] == ("iii", "/x/y")
    dialog.sources.setCurrentRow(0)
    dialog._remove()
    dialog.default_reload.setChecked(True)
    dialog.theme.setCurrentIndex(dialog.theme.findData("light"))
    value = dialog.value()
    assert value.theme == "light" and value.reload_command is None
    assert value.start_sources == [("nanobot", demo_copy.nanobot), ("iii", "/x/y")]
    assert os.path.basename(demo_copy.nanobot) in dialog.sources.item(0).text()


def test_an_unchecked_box_shows_its_outline_on_the_dark_palette(qtbot):
    """Fusion outlines a check box in the window colour darkened: on the dark palette that was the
    box's own colour, and unchecked Pin boxes could not be seen."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionButton

    def outline_contrast() -> float:
        palette = QApplication.palette()
        base = palette.color(QPalette.ColorRole.Base)
        image = QImage(24, 24, QImage.Format.Format_ARGB32)
        image.fill(base)
        option = QStyleOptionButton()
        option.rect = QRect(4, 4, 14, 14)
        option.state = QStyle.StateFlag.State_Enabled | QStyle.StateFlag.State_Off
        option.palette = palette
        painter = QPainter(image)
        QApplication.style().drawPrimitive(QStyle.PrimitiveElement.PE_IndicatorCheckBox, option, painter)
        painter.end()
        return max(theme.contrast(image.pixelColor(x, y), base) for x in range(24) for y in range(24))

    try:
        appearance.apply_theme("dark")
        assert outline_contrast() >= 3.0
        appearance.apply_theme("light")
        assert outline_contrast() >= 1.5  # the light palette as Fusion draws it
    finally:
        appearance.apply_theme("system")
