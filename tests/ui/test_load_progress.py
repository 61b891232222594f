"""A load's progress moves the bar without a paint of its own inside the progress slot."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject


class _Paints(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, _watched, event) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def test_progress_is_drawn_with_the_next_paint_not_at_once(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    bar = window.progress
    bar.show()
    qtbot.waitUntil(bar.isVisible)
    paints = _Paints()
    bar.installEventFilter(paints)
    for done in [*range(0, 1000, 7), 1000]:  # a load reports far more often than its percent moves
        window._on_bank_progress(window.current, done, 1000)
        assert paints.count == 0  # QProgressBar.setValue alone repaints synchronously, in this slot
    assert bar.value() == 100 and bar.text() == "loading 100%"
    window._on_bank_progress(window.current, 420, 1000)
    assert bar.value() == 42 and bar.text() == "loading 42%"
    qtbot.waitUntil(lambda: paints.count > 0)  # drawn with the window's next paint
