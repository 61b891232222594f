"""The Graph panel: memories and what they name, drawn with QGraphicsView.

The graph is built off the GUI thread (:func:`keepgui.core.graph.build_graph`)
from the bank's rows; a big one (:data:`PROCESS_FROM` rows or more) is laid out
in a child process (:class:`~keepgui.core.graph.LayoutWorker`), so neither the
layout's work nor its garbage holds up the GUI thread; the graph is handed to the
view in one piece, and the one it replaces is freed off the GUI thread too. One
:class:`GraphCanvas` item draws it all with level of detail, so 100,000 rows cost
what the visible part costs: zoomed out, the hubs, the groups' discs and one
bundled edge per group and hub; zoomed in, every row in view as a dot with its
edges (found group by group, never by looking at every row). Dots are copies of
one small antialiased pixmap per style and lines come from numpy arrays, each
kind drawn by one QPainter call (:mod:`keepgui.ui.arrays`): no Python call per
row. Pinned rows use the accent colour; retired ones (under View → Show history)
are faded; selected ones are ringed.

A click on a row selects it in the memory table and shows it in this panel's
detail pane; a click on a hub selects every row that names it; rows selected
in the table are ringed here (:meth:`GraphPanel.highlight`). The toolbar
filters by tag (a Claude Code topic file's type is its tag), by hub name, and
switches to the neighbourhood of the selection. A live change is placed
without laying anything out again (:meth:`~keepgui.core.graph.MemoryGraph.update`).

Signals:
    GraphPanel.rowsChosen(list keys): rows clicked in the graph (select them in the table).
    GraphPanel.rowOpened(str key): a row double-clicked (show it in the table).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QCoreApplication, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QMouseEvent,
    QPainter,
    QPalette,
    QPen,
    QPixmap,
    QResizeEvent,
    QShowEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QComboBox,
    QGraphicsItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSplitter,
    QStyleOptionGraphicsItem,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.errors import KeepguiError
from keepgui.core.graph import (
    NO_ENTITIES,
    OTHER_ENTITIES,
    PAUSE,
    GraphOptions,
    LayoutCancelled,
    LayoutWorker,
    MemoryGraph,
    accepts,
    build_graph,
    child_layout_unavailable,
    layout_worker,
)
from keepgui.core.pace import made_old
from keepgui.core.source import BankKey
from keepgui.ui import theme
from keepgui.ui.arrays import dot_pixmap, draw_lines, draw_sprites
from keepgui.ui.detail import DetailPanel
from keepgui.ui.tasks import Task, lane

_LANE = lane("graph")
"""Builds (the layout process is started and watched from here) and the freeing of graphs replaced."""
DOT = 3.5
"""A row's radius in scene units."""
ROW_LOD = 0.25
"""Below this zoom rows are not drawn one by one (their groups' discs are)."""
ROW_BUDGET = 12_000
"""More rows than this in view are drawn as their groups' discs (a frame's worth of drawing)."""
EDGE_BUDGET = 800
"""More rows than this in view have their edges drawn as one bundle per group and hub."""
SELECTION_EDGE_BUDGET = 3_000
"""More rows selected than this have no edges of their own drawn (their rings are)."""
LIVE_UPDATE_LIMIT = 500
"""More changed rows than this at once are laid out again instead of placed one by one."""
PROCESS_FROM = 5_000
"""Graphs of this many rows or more are laid out in the layout process (smaller ones take less
than the process's start, and hold the interpreter lock for little)."""
SEAT_MARGIN = 4.0
STYLES = ("retired", "normal", "pinned")


def worker_for(rows: int) -> LayoutWorker | None:
    """The layout process that lays out a graph of this many rows, or None to lay it out in this
    process: a small graph (under :data:`PROCESS_FROM` rows), or a program that cannot start one
    (the frozen one-folder app: :func:`~keepgui.core.graph.child_layout_unavailable`)."""
    if rows < PROCESS_FROM or child_layout_unavailable() is not None:
        return None
    return layout_worker()


class GraphCanvas(QGraphicsItem):
    """Draws a :class:`MemoryGraph` with level of detail (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.graph: MemoryGraph | None = None
        self._selected: set[int] = set()
        self._selected_rows = np.zeros(0, np.int64)
        self.hover_hub: str | None = None
        self._rect = QRectF(-100, -100, 200, 200)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.last_paint_rows = 0
        self.last_paint_lines = 0
        self._sprites: dict[tuple[int, int, float, float], QPixmap] = {}
        self._bundles: list[tuple[float, np.ndarray]] | None = None

    @property
    def selected(self) -> set[int]:
        """The rows ringed (indexes in the graph)."""
        return self._selected

    @selected.setter
    def selected(self, rows: set[int]) -> None:
        self._selected = set(rows)
        self._selected_rows = np.fromiter(sorted(self._selected), np.int64, len(self._selected))

    def set_graph(self, graph: MemoryGraph | None) -> None:
        """Show another graph."""
        self.prepareGeometryChange()
        self.graph = graph
        self.selected = set()
        self._bundles = None
        self.refresh_bounds()

    def _shown(self) -> MemoryGraph:
        """The graph being drawn (painting starts only once there is one)."""
        if self.graph is None:
            raise RuntimeError("the graph canvas has no graph")
        return self.graph

    def refresh_bounds(self) -> None:
        """The graph grew (a live update): the item's rectangle follows."""
        self.prepareGeometryChange()
        if self.graph is not None:
            left, top, right, bottom = self.graph.bounds()
            self._rect = QRectF(left, top, right - left, bottom - top)
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self._rect

    def invalidate(self, parts: Any = None) -> None:
        """Rows of some groups (all with None) changed: what is drawn of them is made again."""
        self._bundles = None
        self.update()

    # ------------------------------------------------------------------ painting

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Any = None) -> None:
        graph = self.graph
        if graph is None:
            return
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        rect = option.exposedRect
        pal = theme.palette()
        text = pal.color(QPalette.ColorRole.Text)
        base = pal.color(QPalette.ColorRole.Base)
        accent = theme.accent()
        edge = theme.mix(text, base, 0.78)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod > 0.15)
        self.last_paint_rows = self.last_paint_lines = 0
        hubs = graph.hubs
        hub_x = np.fromiter((h.x for h in hubs), np.float64, len(hubs))
        hub_y = np.fromiter((h.y for h in hubs), np.float64, len(hubs))
        # Level of detail by what is in view, not only by zoom: rows one by one while there are few
        # enough to draw within a frame, their edges while there are fewer still.
        in_view = np.zeros(0, np.int64)
        if graph.mode == "full" or lod >= ROW_LOD:
            reach = DOT * 2 + (6 / lod if graph.mode == "full" else 0)
            in_view = graph.rows_in(
                rect.left() - reach, rect.top() - reach, rect.right() + reach, rect.bottom() + reach
            )
        rows_drawn = graph.mode == "full" or (lod >= ROW_LOD and len(in_view) <= ROW_BUDGET)
        edges_drawn = graph.mode == "full" or (rows_drawn and len(in_view) <= EDGE_BUDGET)
        # Edges first, under everything: a row's as thin lines without antialiasing (invisible there,
        # and costly), a group's bundles antialiased (a few hundred lines of many widths).
        if edges_drawn:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            painter.setPen(QPen(edge, 0))
            self.last_paint_lines += draw_lines(painter, self._edge_lines(in_view, hub_x, hub_y))
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod > 0.15)
        else:
            for width, lines in self._bundled_edges():
                pen = QPen(edge, width)
                pen.setCosmetic(True)
                painter.setPen(pen)
                self.last_paint_lines += draw_lines(painter, lines)
        if len(self._selected_rows) and len(self._selected_rows) <= SELECTION_EDGE_BUDGET:
            painter.setPen(QPen(accent, 1.5 / max(lod, 0.05)))
            shown = self._selected_rows[self._selected_rows < len(graph.keys)]
            shown = shown[graph.arrays()[2][shown] == 0]
            self.last_paint_lines += draw_lines(painter, self._edge_lines(shown, hub_x, hub_y))
        # Groups' discs when rows are too small to tell apart.
        if not rows_drawn:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(theme.mix(base, accent, 0.35))
            for group in graph.groups:
                r = group.radius - SEAT_MARGIN
                if group.size and rect.intersects(QRectF(group.x - r, group.y - r, 2 * r, 2 * r)):
                    painter.drawEllipse(QPointF(group.x, group.y), r, r)
        else:
            self._paint_rows(painter, in_view, lod, text, base, accent)
        self._paint_hubs(painter, rect, lod, text, base, accent)

    def _edge_lines(self, rows: np.ndarray, hub_x: np.ndarray, hub_y: np.ndarray) -> np.ndarray:
        """The edges of these rows, as rows of x1, y1, x2, y2."""
        graph = self._shown()
        row_of_edge, hub_of_edge = graph.edges_of(rows)
        xs, ys, _gone = graph.arrays()
        lines = np.empty((len(row_of_edge), 4), np.float64)
        lines[:, 0] = xs[row_of_edge]
        lines[:, 1] = ys[row_of_edge]
        lines[:, 2] = hub_x[hub_of_edge]
        lines[:, 3] = hub_y[hub_of_edge]
        return lines

    def _bundled_edges(self) -> list[tuple[float, np.ndarray]]:
        """One line per group and hub it links to, as wide as the group is big (in pixels, a few
        widths: one QPainter call each); made again after a live update."""
        if self._bundles is None:
            graph = self._shown()
            by_width: dict[float, list[tuple[float, float, float, float]]] = {}
            for group in graph.groups:
                if not group.size:
                    continue
                width = round(max(0.15, math.log2(1 + group.size) * 0.18) * 4) / 4 or 0.15
                for h in group.hubs:
                    hub = graph.hubs[h]
                    by_width.setdefault(width, []).append((group.x, group.y, hub.x, hub.y))
            self._bundles = [(w, np.array(lines, np.float64)) for w, lines in sorted(by_width.items())]
        return self._bundles

    def _sprite(self, colour: QColor, diameter: float, ratio: float, ring: float = 0.0) -> QPixmap:
        key = (colour.rgba(), round(diameter * 8), ratio, ring)
        found = self._sprites.get(key)
        if found is None:
            if len(self._sprites) > 64:  # the zoom went through many sizes: keep only the current ones
                self._sprites.clear()
            found = self._sprites[key] = dot_pixmap(colour, round(diameter * 8) / 8, ratio, ring)
        return found

    def _paint_rows(
        self, painter: QPainter, rows: np.ndarray, lod: float, text: QColor, base: QColor, accent: QColor
    ) -> None:
        graph = self._shown()
        colours = {"retired": theme.mix(text, base, 0.75), "normal": theme.mix(text, base, 0.35), "pinned": accent}
        # A small graph's rows stay at least 6 pixels wide; a grouped one's keep their seats.
        diameter = max(2 * DOT * lod, 6) if graph.mode == "full" else 2 * DOT * lod
        ratio = painter.device().devicePixelRatioF() if painter.device() is not None else 1.0
        transform = painter.worldTransform()
        xs, ys, _gone = graph.arrays()
        x, y = xs[rows], ys[rows]
        # In device pixels: with no scaling left, each dot is a plain copy of its pixmap.
        dx = transform.m11() * x + transform.m21() * y + transform.dx()
        dy = transform.m12() * x + transform.m22() * y + transform.dy()
        pinned = np.frombuffer(graph.pinned, np.uint8)[rows].astype(bool)
        retired = np.frombuffer(graph.retired, np.uint8)[rows].astype(bool)
        masks = {"retired": retired, "pinned": pinned & ~retired, "normal": ~pinned & ~retired}
        drawn = 0
        painter.save()
        painter.resetTransform()
        for style in STYLES:
            mask = masks[style]
            drawn += draw_sprites(painter, self._sprite(colours[style], diameter, ratio), dx[mask], dy[mask])
        if len(self._selected_rows):
            ring = self._sprite(accent, 2 * (DOT + 2.5) * lod, ratio, ring=1.6)
            chosen = np.isin(rows, self._selected_rows)
            draw_sprites(painter, ring, dx[chosen], dy[chosen])
        painter.restore()
        self.last_paint_rows = drawn

    def _paint_hubs(
        self, painter: QPainter, rect: QRectF, lod: float, text: QColor, base: QColor, accent: QColor
    ) -> None:
        """Hubs on top, with their labels."""
        hub_fill = theme.mix(base, text, 0.12)
        font = QFont(painter.font())
        font.setPointSizeF(max(1.0, 9.0 / max(lod, 0.35)))
        painter.setFont(font)
        metrics = QFontMetricsF(font)
        for hub in self._shown().hubs:
            r = hub.radius
            if not rect.adjusted(-r - 200, -r - 40, r + 200, r + 40).contains(QPointF(hub.x, hub.y)):
                continue
            special = hub.name in (NO_ENTITIES, OTHER_ENTITIES)
            painter.setPen(QPen(accent if hub.name == self.hover_hub else theme.mix(text, base, 0.4), 1.2 / lod))
            painter.setBrush(theme.mix(base, accent, 0.25) if hub.row is not None else hub_fill)
            painter.drawEllipse(QPointF(hub.x, hub.y), r, r)
            if r * lod >= 7:
                painter.setPen(text)
                painter.drawText(
                    QRectF(hub.x - r, hub.y - r, 2 * r, 2 * r), int(Qt.AlignmentFlag.AlignCenter), str(hub.count)
                )
            if lod * r >= 3 or lod > 0.6:
                painter.setPen(theme.muted_text() if special else text)
                label = hub.name if special else hub.name.lower()
                width = metrics.horizontalAdvance(label)
                painter.drawText(QPointF(hub.x - width / 2, hub.y - r - metrics.descent() - 2 / lod), label)


class GraphView(QGraphicsView):
    """Pan (drag), zoom (wheel, around the cursor), click and hover on a :class:`GraphCanvas`.

    Signals:
        rowClicked(int index, bool add): a row; ``add`` with Ctrl (add to the selection).
        hubClicked(str name, bool add)
        rowDoubleClicked(int index)
    """

    rowClicked = Signal(int, bool)
    hubClicked = Signal(str, bool)
    rowDoubleClicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.canvas = GraphCanvas()
        scene = QGraphicsScene(self)
        scene.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)  # one item: no index to keep
        scene.addItem(self.canvas)
        self.setScene(scene)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setMouseTracking(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # drag to pan
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAccessibleName("Memory graph")
        self._fitted = False  # the view shows the whole graph (kept so on resize until a zoom or pan)
        self._press: QPointF | None = None
        self.row_text: Callable[[str], str] = lambda key: key  # what hovering a row says (the panel knows the rows)

    @property
    def graph(self) -> MemoryGraph | None:
        """The graph shown."""
        return self.canvas.graph

    def set_graph(self, graph: MemoryGraph | None, fit: bool = True) -> None:
        """Show a graph (fitted to the view, or where the view was)."""
        self.canvas.set_graph(graph)
        self.scene().setSceneRect(self.canvas.boundingRect().adjusted(-2000, -2000, 2000, 2000))
        if fit:
            self.fit()

    def fit(self) -> None:
        """Everything in view."""
        if self.graph is not None:
            self.fitInView(self.canvas.boundingRect(), Qt.AspectRatioMode.KeepAspectRatio)
            self._fitted = True

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self._fitted:
            self.fit()

    def zoom(self) -> float:
        """The current scale (1 = a scene unit per pixel)."""
        return self.transform().m11()

    def center_on_row(self, index: int) -> None:
        """Bring a row into view (zooming in enough to see it as a row)."""
        graph = self.graph
        if graph is None:
            return
        if self.zoom() < ROW_LOD * 2:
            factor = ROW_LOD * 2 / self.zoom()
            self.scale(factor, factor)
        self.centerOn(graph.xs[index], graph.ys[index])
        self._fitted = False

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt override
        steps = event.angleDelta().y() / 120
        if steps:
            factor = 1.15**steps
            if 0.002 < self.zoom() * factor < 40:
                self.scale(factor, factor)
                self._fitted = False

    def _hit(self, pos: Any) -> tuple[str, Any] | None:
        graph = self.graph
        if graph is None:
            return None
        point = self.mapToScene(pos.toPoint() if hasattr(pos, "toPoint") else pos)
        reach = max(DOT + 2, 6 / max(self.zoom(), 0.01))
        if self.zoom() >= ROW_LOD:
            row = graph.row_at(point.x(), point.y(), reach)
            if row is not None:
                return ("row", row)
        hub = graph.hub_at(point.x(), point.y(), 3 / max(self.zoom(), 0.01))
        return ("hub", hub) if hub is not None else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        self._press = event.position()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        super().mouseReleaseEvent(event)
        press, self._press = self._press, None
        if press is None or (event.position() - press).manhattanLength() > 4:
            self._fitted = False
            return  # a drag: the view was panned
        hit = self._hit(event.position())
        add = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        if hit is not None and hit[0] == "row":
            self.rowClicked.emit(hit[1], add)
        elif hit is not None:
            self.hubClicked.emit(hit[1].name, add)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        hit = self._hit(event.position())
        if hit is not None and hit[0] == "row":
            self.rowDoubleClicked.emit(hit[1])
        else:
            super().mouseDoubleClickEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        super().mouseMoveEvent(event)
        if self._press is not None:
            return
        hit = self._hit(event.position())
        hub = hit[1].name if hit is not None and hit[0] == "hub" else None
        if hub != self.canvas.hover_hub:
            self.canvas.hover_hub = hub
            self.canvas.update()
        tip = self.describe(hit)
        if tip:
            QToolTip.showText(event.globalPosition().toPoint(), tip, self)
        else:
            QToolTip.hideText()

    def describe(self, hit: tuple[str, Any] | None) -> str:
        """What hovering a node says."""
        graph = self.graph
        if hit is None or graph is None:
            return ""
        if hit[0] == "hub":
            hub = hit[1]
            what = "a memory other memories link to" if hub.row is not None else "named by"
            return f"{hub.name}: {what} {hub.count} — click to select them"
        return self.row_text(graph.keys[hit[1]])


class GraphPanel(QWidget):
    """The Graph tab: the toolbar, the view and a detail pane (see the module docstring)."""

    rowsChosen = Signal(list)
    rowOpened = Signal(str)

    def __init__(self, hub: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.key: BankKey | None = None
        self.show_history = False
        self.selected_keys: set[str] = set()
        self._token = 0
        self._dirty = True
        self._building = False
        self._build: Task[MemoryGraph | None] | None = None
        self.view = GraphView(self)
        self.view.row_text = self._row_text
        self.detail = DetailPanel(self)
        self.detail.show_empty("Click a memory to see it here and select it in the table.")
        self.scope = QComboBox(self)
        self.scope.addItems(["Everything", "Around the selection"])
        self.scope.setToolTip("Draw every memory, or only the selected ones and those that share a name with them")
        self.scope.setAccessibleName("Graph scope")
        self.tag = QComboBox(self)
        self.tag.setToolTip("Only memories with this tag (a Claude Code memory's type is its tag)")
        self.tag.setAccessibleName("Filter the graph by tag")
        self.tag.addItem("every tag", None)
        self.focus = QLineEdit(self)
        self.focus.setPlaceholderText("focus names…")
        self.focus.setClearButtonEnabled(True)
        self.focus.setToolTip("Only the names (hubs) that contain this text, and their memories")
        self.focus.setAccessibleName("Focus on names")
        self.fit_button = QToolButton(self)
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("Show the whole graph")
        self.fit_button.clicked.connect(self.view.fit)
        self.relayout_button = QToolButton(self)
        self.relayout_button.setText("Lay out again")
        self.relayout_button.setToolTip("Live changes are placed without moving anything; lay it all out afresh")
        self.relayout_button.clicked.connect(self.rebuild)
        self.status = QLabel(self)
        self.status.setAccessibleName("Graph status")
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        for widget in (self.scope, self.tag, self.focus, self.fit_button, self.relayout_button):
            bar.addWidget(widget)
        bar.addWidget(self.status, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.view)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([900, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.splitter, 1)
        self._focus_timer = QTimer(self)
        self._focus_timer.setSingleShot(True)
        self._focus_timer.setInterval(250)
        self._focus_timer.timeout.connect(self.rebuild)
        self.focus.textChanged.connect(lambda _t: self._focus_timer.start())
        self.tag.currentIndexChanged.connect(lambda _i: self.rebuild())
        self.scope.currentIndexChanged.connect(lambda _i: self.rebuild())
        self.view.rowClicked.connect(self._on_row_clicked)
        self.view.hubClicked.connect(self._on_hub_clicked)
        self.view.rowDoubleClicked.connect(self._on_row_opened)
        if hub is not None:
            hub.changed.connect(self._on_change)
        app = QCoreApplication.instance()
        if app is not None:
            # A layout under way would keep the program from exiting until it is done (the build
            # thread is joined at exit): it is stopped as the program quits.
            app.aboutToQuit.connect(self.stop_layout)
        self._update_status()

    # ------------------------------------------------------------------ the bank shown

    def stop_layout(self) -> None:
        """End the layout process now, without waiting (the graph drawn stays)."""
        if self._building:
            self._token += 1  # what the stopped layout would have delivered is dropped
            self._building = False
            self._dirty = True
            if self._build is not None:
                self._build.cancel()
        if child_layout_unavailable() is None:
            layout_worker().cancel()
        self._update_status()

    def set_bank(self, key: BankKey | None) -> None:
        """Follow a bank (built when the panel is shown and the bank has loaded); another bank than
        the one shown ends the layout process (a layout under way for the old bank is stopped, and
        the memory the process holds goes back to the system)."""
        if key != self.key:
            self.stop_layout()
        self.key = key
        self.selected_keys = set()
        self._token += 1
        self._building = False
        self.view.set_graph(None)
        self.detail.show_empty("Click a memory to see it here and select it in the table.")
        self._dirty = True
        self._set_tags([])
        self._update_status()
        if key is not None and self.hub is not None and self.hub.is_loaded(key) and self.isVisible():
            self.rebuild()

    def set_show_history(self, on: bool) -> None:
        """View → Show history: retired rows drawn faded, or not at all."""
        if on != self.show_history:
            self.show_history = on
            self.rebuild()

    def options(self) -> GraphOptions:
        """What the toolbar asks for."""
        around = frozenset(self.selected_keys) if self.scope.currentIndex() == 1 else None
        return GraphOptions(
            show_retired=self.show_history, tag=self.tag.currentData(), focus=self.focus.text().strip(), around=around
        )

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._dirty:
            self.rebuild()

    def rebuild(self) -> None:
        """Build and lay out the graph again, off the GUI thread."""
        if self.key is None or self.hub is None or not self.hub.is_loaded(self.key):
            self._dirty = True
            return
        if not self.isVisible():
            self._dirty = True
            return
        self._dirty = False
        self._token += 1
        token, options = self._token, self.options()
        bank = self.hub.bank(self.key)
        self._building = True
        self._update_status()

        def build() -> MemoryGraph | None:
            if token != self._token:
                return None  # a newer build was asked for while this one waited: skip it
            rows = made_old(bank.rows)
            worker = worker_for(len(rows))
            pause = PAUSE if len(rows) >= PROCESS_FROM else 0.0
            return build_graph(rows, bank.row_names(), options, worker, pause, lambda: token != self._token)

        # The newest build wins: one asked for before it and still queued is skipped.
        self._build = _LANE.run(
            build,
            lambda graph: self._on_built(token, graph),
            lambda error: self._on_failed(token, error),
            owner=self,
            newest=self,
        )

    def _on_failed(self, token: int, error: Exception) -> None:
        if token != self._token:
            return
        self._building = False
        if isinstance(error, LayoutCancelled):
            self._dirty = True  # built again when asked (shown, or a change)
            self._update_status()
            return
        self.status.setText(f"the graph could not be built: {error}")
        if not isinstance(error, (KeepguiError, OSError)):
            raise error

    def _on_built(self, token: int, graph: MemoryGraph | None) -> None:
        if token != self._token:
            return
        self._building = False
        if graph is None:
            return
        old = self.view.graph
        fit = old is None or old.options != graph.options
        self.view.set_graph(graph, fit=fit)
        # The graph replaced is freed on the build thread, in steps: at a million rows its key index
        # alone takes tens of milliseconds to take apart.
        if old is not None:
            _LANE.run(lambda: old.release(PAUSE))
            del old
        self._set_tags(graph.tags)
        self._highlight_keys()
        self._update_status()

    def row(self, key: str) -> Any:
        """The row the graph draws for a key (None when it draws none)."""
        graph = self.view.graph
        return None if graph is None else graph.row(key)

    def _unchanged(self, delta: Any) -> bool:
        """Whether a delta of the whole bank (or a big one) changes nothing the graph draws (a bank
        shown again); big deltas are not compared here, on the GUI thread, but built again."""
        graph = self.view.graph
        if graph is None:
            return False
        options = graph.options
        if delta.removed or len(delta.rows) > LIVE_UPDATE_LIMIT or options.focus or options.around is not None:
            return False
        drawn = 0
        for row in delta.rows:
            if accepts(row, options):
                if graph.row(row.id) != row:
                    return False
                drawn += 1
            elif graph.index_of(row.id) is not None:
                return False
        return not delta.complete or drawn == len(graph)

    def _on_change(self, change: Any) -> None:
        if self.key is None or change.key != self.key or not change.rows or change.partial:
            return
        graph = self.view.graph
        delta = change.rows
        if graph is None or self._building:
            if self.isVisible() and not self._building:
                self.rebuild()
            else:
                self._dirty = True
            return
        if delta.complete or delta.removed or len(delta.rows) > LIVE_UPDATE_LIMIT:
            if not self._unchanged(delta):
                self.rebuild()
            return
        if self.options().focus or self.options().around is not None:
            self.rebuild()  # which rows a focus or a neighbourhood holds can change: build it again
            return
        graph.update(delta.rows)
        self.view.canvas.invalidate(graph.touched)
        graph.touched.clear()
        self.view.canvas.refresh_bounds()
        self._highlight_keys()
        self._update_status()
        current = self.detail.record
        now = None if current is None else graph.row(current.id)
        if now is not None and now is not current:
            self.detail.show_record(now)

    # ------------------------------------------------------------------ selection

    def highlight(self, keys: Any) -> None:
        """Ring these rows (the table's selection); in the neighbourhood scope, draw around them."""
        self.selected_keys = set(keys)
        if self.scope.currentIndex() == 1 and self.isVisible():
            self.rebuild()
            return
        self._highlight_keys()
        if len(self.selected_keys) == 1:
            key = next(iter(self.selected_keys))
            row = self.row(key)
            if row is not None:
                self.detail.show_record(row)

    def _highlight_keys(self) -> None:
        graph = self.view.graph
        canvas = self.view.canvas
        canvas.selected = (
            set() if graph is None else {i for k in self.selected_keys if (i := graph.index_of(k)) is not None}
        )
        canvas.update()

    def _on_row_opened(self, index: int) -> None:
        graph = self.view.graph
        if graph is not None:
            self.rowOpened.emit(graph.keys[index])

    def _on_row_clicked(self, index: int, add: bool) -> None:
        graph = self.view.graph
        if graph is None:
            return
        key = graph.keys[index]
        keys = (self.selected_keys | {key}) if add else {key}
        self.selected_keys = keys
        self._highlight_keys()
        row = self.row(key)
        if row is not None:
            self.detail.show_record(row)
            if self.key is not None and self.hub is not None and len(keys) == 1:
                self._ask_history(self.key, key)
        self.rowsChosen.emit(sorted(keys))

    def _on_hub_clicked(self, name: str, add: bool) -> None:
        graph = self.view.graph
        if graph is None:
            return
        hub = graph.hub_of(name)
        if hub is not None and hub.row is not None and self.row(hub.row) is not None:
            keys = {hub.row}  # the hub is a row (others link to it): select that row
        else:
            keys = set(graph.rows_of_hub(name))
        keys = (self.selected_keys | keys) if add else keys
        self.selected_keys = keys
        self._highlight_keys()
        self.detail.show_empty(f"{name}: {len(keys):,} selected")
        self.rowsChosen.emit(sorted(keys))

    def _ask_history(self, bank: BankKey, row: str) -> None:
        """Read every revision of one row off the GUI thread, for the detail pane."""
        self.hub.ask(
            bank,
            lambda found: found.revisions(row),
            lambda revisions: self.show_revisions(bank, row, revisions),
            owner=self,
        )

    def show_revisions(self, bank: BankKey, row: str, revisions: list[Any] | Exception) -> None:
        """The revisions of a row arrived (asked here, or by the table): shown if the detail pane
        shows that row of this bank."""
        if bank == self.key:
            self.detail.set_history(row, [] if isinstance(revisions, Exception) else revisions)

    def _row_text(self, key: str) -> str:
        row = self.row(key)
        if row is None:
            return key
        text = row.text if len(row.text) <= 160 else row.text[:159] + "…"
        state = " (retired)" if row.invalid_at is not None else (" (pinned)" if row.pinned else "")
        return f"{text}{state}\nclick to select it in the table; double-click to show it there"

    # ------------------------------------------------------------------ toolbar

    def _set_tags(self, tags: list[tuple[str, int]]) -> None:
        current = self.tag.currentData()
        self.tag.blockSignals(True)
        self.tag.clear()
        self.tag.addItem("every tag", None)
        for tag, count in tags:
            self.tag.addItem(f"#{tag} · {count}", tag)
        index = self.tag.findData(current) if current is not None else 0
        self.tag.setCurrentIndex(max(0, index))
        self.tag.blockSignals(False)
        self.tag.setVisible(bool(tags))

    def _update_status(self) -> None:
        graph = self.view.graph
        if self.key is None:
            text = ""
        elif self._building or (graph is None and self.hub is not None and not self.hub.is_loaded(self.key)):
            text = "laying out…"
        elif graph is None:
            text = ""
        else:
            named = sum(1 for h in graph.hubs if h.name not in (NO_ENTITIES, OTHER_ENTITIES))
            text = f"{len(graph):,} {'memory' if len(graph) == 1 else 'memories'} · {named:,} name{'' if named == 1 else 's'}"
            if graph.mode == "grouped":
                text += " · grouped by the names they share"
            if graph.hidden_hubs:
                text += f" · {graph.hidden_hubs:,} rarer names not drawn (focus one to see it)"
            if graph.note:
                text += f" · {graph.note}"
        self.status.setText(text)

    def busy(self) -> bool:
        """True while a layout is being computed (a screenshot waits for it)."""
        return self._building

    def fit(self) -> None:
        """View → Fit graph."""
        self.view.fit()

    def toggle_around(self) -> None:
        """View → Graph around the selection (on and off)."""
        self.scope.setCurrentIndex(0 if self.scope.currentIndex() == 1 else 1)
