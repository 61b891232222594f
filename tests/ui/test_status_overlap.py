"""Two status-bar messages are never drawn on top of each other (issue 24, item 11): a passing note
and the undo toast shown together used to overlap."""

from __future__ import annotations

from PySide6.QtGui import QUndoCommand, QUndoStack
from PySide6.QtWidgets import QMainWindow

from keepgui.ui.toast import UndoToast


def test_the_toast_replaces_a_passing_note(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    stack = QUndoStack(window)
    toast = UndoToast(stack, window)
    window.statusBar().addWidget(toast)
    window.show()
    window.statusBar().showMessage("from the command line — kept: tea", 8000)
    stack.push(QUndoCommand("Delete"))
    toast.offer("Deleted 1 memory")
    qtbot.wait(10)
    assert toast.isVisible()
    assert window.statusBar().currentMessage() == ""  # not both at once, one over the other


def _shown_text(label) -> str:
    from PySide6.QtWidgets import QLabel

    return QLabel.text(label)  # what the label draws (an elided label's ``text()`` is its whole text)


def test_at_1024_px_no_status_note_or_label_runs_into_another(make_window, demo_copy, qtbot):
    """A note, the toast and the bank's counts at 1024 px, beside the lasting labels (progress, a
    lasting problem, the reload time): none drawn over another, none cut mid-word."""
    from PySide6.QtWidgets import QLabel

    from keepgui.ui import tasks

    window = make_window(demo_copy.iii)
    window.resize(1024, 700)
    bar = window.statusBar()
    # the window's own work done first (a late load or scan sets the counts again): the text set below stays
    qtbot.waitUntil(
        lambda: not window.hub.busy() and not any(lane.pending() for lane in tasks.runner().lanes()), timeout=15_000
    )
    qtbot.wait(100)
    window.counts_label.setText("20 memories · memory on (V2) · 4,291 bytes injected · 2 notes pending")
    window._on_attention("`iii` is not on PATH; the running worker does not see the change until it reloads")
    window.progress.setRange(0, 100)
    window.progress.setValue(40)
    window.progress.show()
    qtbot.wait(50)
    permanent = [w for w in (window.progress, window.attention_label, window.reload_label) if w.isVisible()]
    assert len(permanent) == 3

    def lasting_start() -> int:
        return min(w.x() for w in permanent)

    window.note(
        "main: 3 memories added from the command line — kept: a long note that must end before the labels"
        " that stay on the right of the status bar, however long it is"
    )
    qtbot.wait(50)
    message = bar.currentMessage()
    assert message.endswith("…")
    assert 6 + bar.fontMetrics().horizontalAdvance(message) <= lasting_start() - 2  # Qt draws it from x = 6

    window.toast.offer("Deleted 12 memories")
    qtbot.wait(50)
    assert bar.currentMessage() == "" and window.toast.isVisible()
    shown = [w for w in bar.findChildren(QLabel) if w.isVisible()] + [window.toast, window.progress]
    for i, a in enumerate(shown):
        assert a.geometry().right() < bar.width(), a
        for b in shown[i + 1 :]:
            if a.parent() is bar and b.parent() is bar:
                assert not a.geometry().intersects(b.geometry()), (_shown_text(a) if isinstance(a, QLabel) else a, b)
    for widget in (window.counts_label, window.toast, window.file_label):
        assert widget.geometry().right() < lasting_start(), widget
    for label in [w for w in bar.findChildren(QLabel) if w.isVisible()]:
        text = _shown_text(label)
        assert label.fontMetrics().horizontalAdvance(text) <= label.contentsRect().width() + 1, text
    assert window.counts_label.text().endswith("2 notes pending")  # the whole text, its tooltip when cut


def test_the_banner_reads_and_stands_out_in_light_and_dark(qtbot):
    """The banner's text is 4.5:1 on its tint, and the bar of its hue along its left edge 3:1 on the
    window, in both of keepgui's palettes (a dark info banner was a faint navy on near-black)."""
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from keepgui.ui import appearance, theme
    from keepgui.ui.banner import EDGE_WIDTH, Banner

    try:
        for name in ("light", "dark"):
            appearance.apply_theme(name)
            host = QWidget()
            qtbot.addWidget(host)
            banner = Banner(host)
            QVBoxLayout(host).addWidget(banner)
            host.resize(600, 80)
            host.show()
            window = theme.palette().color(QPalette.ColorRole.Window)
            for kind in ("info", "warning", "removed", "added"):
                banner.show_message("The running worker was asked to reload.", kind)
                qtbot.wait(10)
                image = banner.grab().toImage()
                middle = banner.height() // 2
                edge, inside = image.pixelColor(1, middle), image.pixelColor(EDGE_WIDTH + 3, 2)
                text = banner.label.palette().color(QPalette.ColorRole.WindowText)
                assert theme.contrast(text, inside) >= 4.5, (name, kind)
                assert theme.contrast(edge, window) >= 3.0, (name, kind, edge.name(), window.name())
    finally:
        appearance.apply_theme("system")


def test_the_sidebars_problem_badge_reads_in_light_and_dark(qtbot):
    """The problems badge's count is 4.5:1 on its pill in both palettes (3.2:1 in the dark one)."""
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtWidgets import QStyleOptionViewItem, QWidget

    from keepgui.ui import appearance, theme
    from keepgui.ui.sidebar import draw_badge

    widget = QWidget()
    qtbot.addWidget(widget)
    try:
        for name in ("light", "dark"):
            appearance.apply_theme(name)
            option = QStyleOptionViewItem()
            option.initFrom(widget)
            image = QImage(120, 30, QImage.Format.Format_ARGB32)
            image.fill(QColor(0, 0, 0, 0))
            painter = QPainter(image)
            draw_badge(painter, option, QRect(0, 0, 118, 30), 3, False)
            painter.end()
            pill = theme.tint("warning")
            drawn = [image.pixelColor(x, y) for x in range(120) for y in range(30)]
            best = max(theme.contrast(c, pill) for c in drawn if c.alpha() == 255)  # the pill and its text
            assert best >= 4.5, (name, best)
    finally:
        appearance.apply_theme("system")
