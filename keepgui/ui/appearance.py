"""The theme a person chose: follow the desktop, or a light or dark palette of keepgui's own.

``system`` keeps the style and palette the desktop gave the application (and
asks Qt to follow the desktop's colour scheme); ``light`` and ``dark`` use
Qt's Fusion style, which draws with the palette it is given everywhere, and a
palette made here. Every colour keepgui derives (tints, muted text, headings,
diff backgrounds, icons) comes from the palette (:mod:`keepgui.ui.theme`), so
the whole window follows; icons already drawn are drawn again in the new text
colour (:func:`refresh_icons`).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QColor, QGuiApplication, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleFactory, QStyleOption, QWidget

from keepgui.ui import theme

_Role = QPalette.ColorRole
_Group = QPalette.ColorGroup

DARK = {
    _Role.Window: "#2b2b2b",
    _Role.WindowText: "#e6e6e6",
    _Role.Base: "#1e1e1e",
    _Role.AlternateBase: "#262626",
    _Role.ToolTipBase: "#3a3a3a",
    _Role.ToolTipText: "#eeeeee",
    _Role.PlaceholderText: "#8a8a8a",
    _Role.Text: "#e6e6e6",
    _Role.Button: "#353535",
    _Role.ButtonText: "#e6e6e6",
    _Role.BrightText: "#ff6b6b",
    _Role.Light: "#4a4a4a",
    _Role.Midlight: "#3d3d3d",
    _Role.Mid: "#2a2a2a",
    _Role.Dark: "#171717",
    _Role.Shadow: "#000000",
    _Role.Highlight: "#2f65a8",
    _Role.HighlightedText: "#ffffff",
    _Role.Link: "#7cb8ff",
    _Role.LinkVisited: "#c39bff",
}
"""keepgui's dark palette (the active and inactive groups; disabled text is dimmed below)."""

LIGHT = {
    _Role.Window: "#efefef",
    _Role.WindowText: "#141414",
    _Role.Base: "#ffffff",
    _Role.AlternateBase: "#f5f5f5",
    _Role.ToolTipBase: "#ffffdc",
    _Role.ToolTipText: "#141414",
    _Role.PlaceholderText: "#7a7a7a",
    _Role.Text: "#141414",
    _Role.Button: "#efefef",
    _Role.ButtonText: "#141414",
    _Role.BrightText: "#ffffff",
    _Role.Light: "#ffffff",
    _Role.Midlight: "#cacaca",
    _Role.Mid: "#b8b8b8",
    _Role.Dark: "#9f9f9f",
    _Role.Shadow: "#767676",
    _Role.Highlight: "#3074c6",
    _Role.HighlightedText: "#ffffff",
    _Role.Link: "#1a5fb4",
    _Role.LinkVisited: "#8a3ab9",
}
"""keepgui's light palette."""


class KeepguiStyle(QProxyStyle):
    """Qt's Fusion, whose check boxes and radio buttons keep a visible outline on a dark palette.

    Fusion draws that outline in the window colour darkened, which on a dark palette is the colour
    of the box and of the table around it: unchecked Pin boxes were invisible in dark mode.
    """

    OUTLINE_BASE = QColor("#b4b4b4")
    """The window colour Fusion derives a dark palette's indicator outline from (a mid grey)."""

    def __init__(self) -> None:
        super().__init__(QStyleFactory.create("Fusion"))

    def drawPrimitive(  # noqa: N802 - Qt override
        self,
        element: QStyle.PrimitiveElement,
        option: QStyleOption,
        painter: QPainter,
        widget: QWidget | None = None,
    ) -> None:
        indicator = element in (
            QStyle.PrimitiveElement.PE_IndicatorCheckBox,
            QStyle.PrimitiveElement.PE_IndicatorRadioButton,
        )
        if indicator and option.palette.color(_Role.Base).lightness() < 128:
            option = type(option)(option)  # a copy: every QStyleOption copies itself
            palette = QPalette(option.palette)
            for group in (_Group.Active, _Group.Inactive, _Group.Disabled):
                palette.setColor(group, _Role.Window, self.OUTLINE_BASE)
            option.palette = palette
        super().drawPrimitive(element, option, painter, widget)


_system: tuple[str, QPalette] | None = None  # the style name and palette the desktop gave, before any change
_applied = "system"  # the theme in use: "system" until another is chosen (then the desktop's is kept aside)


def make_palette(colours: dict[QPalette.ColorRole, str]) -> QPalette:
    """A palette of these colours, with disabled text half way to the window colour."""
    palette = QPalette()
    for role, name in colours.items():
        palette.setColor(role, QColor(name))
    window = QColor(colours[_Role.Window])
    for role in (_Role.WindowText, _Role.Text, _Role.ButtonText, _Role.HighlightedText):
        palette.setColor(_Group.Disabled, role, theme.mix(QColor(colours[role]), window, 0.55))
    palette.setColor(_Group.Disabled, _Role.Highlight, theme.mix(QColor(colours[_Role.Highlight]), window, 0.5))
    return palette


def apply_theme(choice: str) -> None:
    """Use the theme ``choice`` (``system``, ``light`` or ``dark``) for the whole application.

    Choosing the theme in use already changes nothing (a window opened on ``system`` leaves the
    application's palette as the desktop, or whoever set it, left it)."""
    global _system, _applied
    app = QApplication.instance()
    if (
        not isinstance(app, QApplication)
        or choice == _applied
        or (choice not in ("light", "dark") and _applied == "system")
    ):
        return
    _applied = choice if choice in ("light", "dark") else "system"
    if _system is None:
        _system = (app.style().name(), QPalette(app.palette()))
    hints = QGuiApplication.styleHints()
    scheme = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}.get(choice, Qt.ColorScheme.Unknown)
    if hasattr(hints, "setColorScheme"):  # Qt 6.8: tell the platform (native dialogs, title bars)
        hints.setColorScheme(scheme)
    if choice in ("light", "dark"):
        if not isinstance(app.style(), KeepguiStyle):
            app.setStyle(KeepguiStyle())
        app.setPalette(make_palette(DARK if choice == "dark" else LIGHT))
    else:
        style, palette = _system
        if app.style().name().lower() != style.lower():
            app.setStyle(QStyleFactory.create(style))
        app.setPalette(palette)
    refresh_icons(app)


def refresh_icons(root: QObject) -> None:
    """Draw the themed icons of every action again, in the palette's text colour."""
    actions = root.findChildren(QAction) if not isinstance(root, QApplication) else []
    if isinstance(root, QApplication):
        for widget in root.allWidgets():
            actions.extend(widget.actions())
    for action in set(actions):
        name = action.property(theme.ICON_PROPERTY)
        if isinstance(name, str) and name:
            action.setIcon(theme.icon(name))
