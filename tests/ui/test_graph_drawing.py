"""How the graph is drawn: dots where the rows are, in their style's colour, with no Python call per
row (numpy arrays handed to QPainter), the same picture when the arrays cannot be handed over; and
the panel laying a big bank out in the layout process."""

from __future__ import annotations

import os

from PySide6.QtGui import QColor, QPalette

from keepgui.core.graph import build_graph
from keepgui.ui import arrays, theme
from keepgui.ui.graph import ROW_BUDGET, GraphView
from tests.calls import counting_calls
from tests.core.test_graph import rows_named


def zoomed_view(qtbot, graph, zoom: float) -> GraphView:
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    view.set_graph(graph)
    big = max(graph.groups, key=lambda g: g.size)
    view.scale(zoom / view.zoom(), zoom / view.zoom())
    view.centerOn(big.x, big.y)
    qtbot.wait(20)
    return view


def centres_in_view(view, graph, limit: int = 40) -> list[tuple[int, int, int]]:
    """(row, x, y) of rows whose centre is well inside the view and far from any other row's."""
    rect = view.mapToScene(view.viewport().rect().adjusted(40, 40, -40, -40)).boundingRect()
    found = graph.rows_in(rect.left(), rect.top(), rect.right(), rect.bottom()).tolist()
    out = []
    for i in found[:limit]:
        p = view.mapFromScene(graph.xs[i], graph.ys[i])
        out.append((i, p.x(), p.y()))
    return out


def test_dots_are_drawn_at_the_rows_in_their_styles_colour(qtbot, monkeypatch):
    graph = build_graph(rows_named(4_000))
    view = zoomed_view(qtbot, graph, 2.0)
    image = view.viewport().grab().toImage()
    text = theme.palette().color(QPalette.ColorRole.Text)
    base = theme.palette().color(QPalette.ColorRole.Base)
    expected = {True: theme.accent(), False: theme.mix(text, base, 0.35)}
    checked = centres_in_view(view, graph)
    assert len(checked) >= 20 and 0 < view.canvas.last_paint_rows <= ROW_BUDGET
    for i, x, y in checked:
        assert QColor(image.pixel(x, y)) == expected[bool(graph.pinned[i])], (i, x, y)
    assert any(graph.pinned[i] for i, _x, _y in checked)
    # Where Qt's structs could not be handed over as arrays, each shape is drawn on its own: the
    # same picture.
    monkeypatch.setattr(arrays, "layout_ok", lambda: False)
    view.viewport().repaint()
    again = view.viewport().grab().toImage()
    for i, x, y in checked:
        assert QColor(again.pixel(x, y)) == expected[bool(graph.pinned[i])], (i, x, y)


def paint_calls(view) -> tuple[int, set[str]]:
    """Python calls made while the view repaints, and the names of the QPainter methods called."""
    painter_methods: set[str] = set()

    def note(fn: object) -> None:
        if getattr(fn, "__qualname__", "").startswith("QPainter."):
            painter_methods.add(fn.__qualname__)

    _, calls = counting_calls(view.viewport().repaint, note)
    return calls, painter_methods


def test_a_frame_makes_no_python_call_per_row(qtbot):
    graph = build_graph(rows_named(20_000))
    small = zoomed_view(qtbot, graph, 2.0)
    big = zoomed_view(qtbot, graph, 0.5)
    few_calls, _ = paint_calls(small)
    few = small.canvas.last_paint_rows
    many_calls, methods = paint_calls(big)
    many = big.canvas.last_paint_rows
    assert many > few + 2_000
    assert many_calls - few_calls < (many - few) / 10  # per hub and per group, not per row
    assert "QPainter.drawPixmapFragments" in methods
    assert "QPainter.drawPixmap" not in methods and "QPainter.drawPoint" not in methods


def test_the_panel_lays_a_big_bank_out_in_the_layout_process(make_window, demo_copy, qtbot, monkeypatch):
    import keepgui.ui.graph as graph_module

    monkeypatch.setattr(graph_module, "PROCESS_FROM", 10)  # the demo bank counts as big
    window = make_window(demo_copy.iii, bank="main")
    window.show_panel("graph")
    qtbot.waitUntil(lambda: window.graph.view.graph is not None and not window.graph.busy(), timeout=30_000)
    graph = window.graph.view.graph
    assert graph.laid_out_by not in (0, os.getpid())
    assert set(graph.keys) == {r.id for r in window.hub.rows(window.current) if r.invalid_at is None}
