"""The Graph panel: memories and what they name, drawn with QGraphicsView.

The graph is built and laid out off the GUI thread (:func:`keepgui.core.graph.build_graph`,
networkx's force-directed layout) from the bank's rows, and handed to the
view in one piece. One :class:`GraphCanvas` item draws it all with level of
detail, so 100,000 rows cost what the visible part costs: zoomed out, the hubs,
the groups' discs and one bundled edge per group and hub; zoomed in, every row
in view as a dot with its edges (found through the graph's grid, never by
looking at every row). Pinned rows use the accent colour; retired ones (under
View → Show history) are faded; selected ones are ringed.

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

import concurrent.futures
import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QLineF, QObject, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QFont,
    QFontMetricsF,
    QMouseEvent,
    QPainter,
    QPalette,
    QPen,
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
from keepgui.core.graph import NO_ENTITIES, OTHER_ENTITIES, GraphOptions, MemoryGraph, build_graph
from keepgui.core.source import BankKey
from keepgui.ui import theme
from keepgui.ui.detail import DetailPanel

_POOL = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-graph")
DOT = 3.5
"""A row's radius in scene units."""
ROW_LOD = 0.25
"""Below this zoom rows are not drawn one by one (their groups' discs are)."""
ROW_BUDGET = 3_000
"""More rows than this in view are drawn as their groups' discs (a frame's worth of drawing)."""
EDGE_BUDGET = 800
"""More rows than this in view have their edges drawn as one bundle per group and hub."""
LIVE_UPDATE_LIMIT = 500
"""More changed rows than this at once are laid out again instead of placed one by one."""


class _Delivery(QObject):
    done = Signal(int, object)


class GraphCanvas(QGraphicsItem):
    """Draws a :class:`MemoryGraph` with level of detail (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.graph: MemoryGraph | None = None
        self.selected: set[int] = set()
        self.hover_hub: str | None = None
        self._rect = QRectF(-100, -100, 200, 200)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.last_paint_rows = 0
        self._cache: dict[int, tuple[dict[str, list[QPointF]], list[QLineF]]] = {}
        self._exposed = (0.0, 0.0, 0.0, 0.0)

    def set_graph(self, graph: MemoryGraph | None) -> None:
        """Show another graph."""
        self.prepareGeometryChange()
        self.graph = graph
        self.selected = set()
        self._cache.clear()
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
        self.last_paint_rows = 0
        hubs = graph.hubs
        parts = self._parts_in(rect) if lod >= ROW_LOD or graph.mode == "full" else []
        in_view = len(graph) if graph.mode == "full" else sum(graph.groups[g].size for g in parts)
        # Level of detail by what is in view, not only by zoom: rows one by one while there are few
        # enough to draw within a frame, their edges while there are fewer still.
        rows_drawn = graph.mode == "full" or (lod >= ROW_LOD and in_view <= ROW_BUDGET)
        edges_drawn = graph.mode == "full" or (rows_drawn and in_view <= EDGE_BUDGET)
        if graph.mode == "grouped" and rows_drawn:
            self._exposed = (rect.left(), rect.top(), rect.right(), rect.bottom())
            parts = [-2]  # only the rows in view, not their whole groups
        # Edges first, under everything.
        if not edges_drawn:
            for group in graph.groups:
                for h in group.hubs:
                    hub = hubs[h]
                    width = max(0.5, math.log2(1 + group.size) * 0.6)
                    painter.setPen(QPen(edge, width / max(lod, 0.05) * 0.3))
                    painter.drawLine(QPointF(group.x, group.y), QPointF(hub.x, hub.y))
        else:
            painter.setRenderHint(
                QPainter.RenderHint.Antialiasing, False
            )  # thin lines: aliasing is invisible, and it is cheap
            painter.setPen(QPen(edge, 0))
            for part in parts:
                lines = self._cached(part)[1]
                if lines:
                    painter.drawLines(lines)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod > 0.15)
        if self.selected:
            painter.setPen(QPen(accent, 1.5 / max(lod, 0.05)))
            sel_lines: list[QLineF] = []
            for i in self.selected:
                if i < len(graph.keys) and i not in graph._gone:
                    x, y = graph.xs[i], graph.ys[i]
                    sel_lines.extend(QLineF(x, y, hubs[h].x, hubs[h].y) for h in graph.links[i])
            if sel_lines:
                painter.drawLines(sel_lines)
        # Groups' discs when rows are too small to tell apart.
        if not rows_drawn:
            fill = theme.mix(base, accent, 0.35)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(fill)
            for group in graph.groups:
                r = group.radius - SEAT_MARGIN
                painter.drawEllipse(QPointF(group.x, group.y), r, r)
        # Rows.
        if rows_drawn:
            self._paint_rows(painter, parts, lod)
        # Hubs on top, with their labels.
        hub_fill = theme.mix(base, text, 0.12)
        font = QFont(painter.font())
        font.setPointSizeF(max(1.0, 9.0 / max(lod, 0.35)))
        painter.setFont(font)
        metrics = QFontMetricsF(font)
        for hub in hubs:
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

    def _parts_in(self, rect: QRectF) -> list[int]:
        """The parts (groups; the one part of a small graph, -1) with rows inside ``rect``."""
        graph = self._shown()
        if graph.mode != "grouped":
            return [-1]
        out = []
        for g, group in enumerate(graph.groups):
            r = group.radius
            if group.size and rect.intersects(QRectF(group.x - r, group.y - r, 2 * r, 2 * r)):
                out.append(g)
        return out

    def _cached(self, part: int) -> tuple[dict[str, list[QPointF]], list[QLineF]]:
        """A part's rows as points by style and its edges as lines, made once (a live update drops
        the parts it touched); part -2 is the rows inside the rectangle being painted (a zoomed-in
        view of big groups draws only what is in view, found through the grid)."""
        if part == -2:
            return self._drawing(self._shown().rows_in(*self._exposed))
        found = self._cache.get(part)
        if found is not None:
            return found
        graph = self._shown()
        found = self._drawing(range(len(graph.keys)) if part < 0 else graph.rows_of_group(part))
        self._cache[part] = found
        return found

    def _drawing(self, rows: Any) -> tuple[dict[str, list[QPointF]], list[QLineF]]:
        graph = self._shown()
        xs, ys, pinned, retired, gone, links, hubs = (
            graph.xs,
            graph.ys,
            graph.pinned,
            graph.retired,
            graph._gone,
            graph.links,
            graph.hubs,
        )
        points: dict[str, list[QPointF]] = {"normal": [], "pinned": [], "retired": []}
        lines: list[QLineF] = []
        for i in rows:
            if i in gone:
                continue
            x, y = xs[i], ys[i]
            points["retired" if retired[i] else ("pinned" if pinned[i] else "normal")].append(QPointF(x, y))
            lines.extend(QLineF(x, y, hubs[h].x, hubs[h].y) for h in links[i])
        return ({kind: p for kind, p in points.items() if p}, lines)

    def invalidate(self, parts: Any = None) -> None:
        """Drop the cached drawing of some parts (all of them with None) and repaint."""
        if parts is None:
            self._cache.clear()
        else:
            for part in parts:
                self._cache.pop(part, None)
            self._cache.pop(-1, None)
        self.update()

    def _paint_rows(self, painter: QPainter, parts: list[int], lod: float) -> None:
        graph = self._shown()
        accent = theme.accent()
        text = theme.palette().color(QPalette.ColorRole.Text)
        base = theme.palette().color(QPalette.ColorRole.Base)
        colours = {"retired": theme.mix(text, base, 0.75), "normal": theme.mix(text, base, 0.35), "pinned": accent}
        # A small graph's rows stay at least 6 pixels wide; a grouped one's keep their seats.
        width = max(2 * DOT, 6 / lod) if graph.mode == "full" else 2 * DOT
        drawn = 0
        radius = width / 2
        painter.setPen(Qt.PenStyle.NoPen)
        for kind in ("retired", "normal", "pinned"):
            # Filled circles: the raster engine's fast path (wide round-capped points are stroked
            # as paths, several times slower when zoomed in).
            painter.setBrush(colours[kind])
            for part in parts:
                points = self._cached(part)[0].get(kind)
                if points:
                    for point in points:
                        painter.drawEllipse(point, radius, radius)
                    drawn += len(points)
        self.last_paint_rows = drawn
        if self.selected:
            painter.setPen(QPen(accent, 1.6 / max(lod, 0.05)))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            xs, ys, gone = graph.xs, graph.ys, graph._gone
            for i in self.selected:
                if i < len(graph.keys) and i not in gone:
                    painter.drawEllipse(QPointF(xs[i], ys[i]), DOT + 2.5, DOT + 2.5)


SEAT_MARGIN = 4.0


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
        self.rows: dict[str, Any] = {}  # the rows the graph was built from, by key (for the detail pane)
        self.show_history = False
        self.selected_keys: set[str] = set()
        self._token = 0
        self._dirty = True
        self._building = False
        self._delivery = _Delivery(self)
        self._delivery.done.connect(self._on_built)
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
            hub.historyReady.connect(
                lambda key, row, revisions: self.detail.set_history(row, revisions) if key == self.key else None
            )
        self._update_status()

    # ------------------------------------------------------------------ the bank shown

    def set_bank(self, key: BankKey | None) -> None:
        """Follow a bank (built when the panel is shown and the bank has loaded)."""
        self.key = key
        self.rows = {}
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

        def build() -> tuple[MemoryGraph, dict[str, Any]]:
            rows = list(bank.rows())
            return build_graph(rows, bank.row_names(), options), {r.id: r for r in rows}

        future = _POOL.submit(build)
        future.add_done_callback(lambda f: self._delivery.done.emit(token, f))

    def _on_built(self, token: int, future: Any) -> None:
        if token != self._token:
            return
        self._building = False
        error = future.exception()
        if error is not None:
            self.status.setText(f"the graph could not be built: {error}")
            if not isinstance(error, (KeepguiError, OSError)):
                raise error
            return
        graph, rows = future.result()
        old = self.view.graph
        self.rows = rows
        self.view.set_graph(graph, fit=old is None or old.options != graph.options)
        self._set_tags(graph.tags)
        self._highlight_keys()
        self._update_status()

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
            if all(self.rows.get(r.id) == r for r in delta.rows) and not delta.removed:
                return  # a bank shown again, its rows unchanged
            self.rebuild()
            return
        for row in delta.rows:
            self.rows[row.id] = row
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
        if current is not None and current.id in self.rows and self.rows[current.id] is not current:
            self.detail.show_record(self.rows[current.id])

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
            if key in self.rows:
                self.detail.show_record(self.rows[key])

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
        row = self.rows.get(key)
        if row is not None:
            self.detail.show_record(row)
            if self.key is not None and self.hub is not None and len(keys) == 1:
                self.hub.request_history(self.key, key)
        self.rowsChosen.emit(sorted(keys))

    def _on_hub_clicked(self, name: str, add: bool) -> None:
        graph = self.view.graph
        if graph is None:
            return
        hub = graph.hub_of(name)
        if hub is not None and hub.row is not None and hub.row in self.rows:
            keys = {hub.row}  # the hub is a row (others link to it): select that row
        else:
            keys = set(graph.rows_of_hub(name))
        keys = (self.selected_keys | keys) if add else keys
        self.selected_keys = keys
        self._highlight_keys()
        self.detail.show_empty(f"{name}: {len(keys):,} selected")
        self.rowsChosen.emit(sorted(keys))

    def _row_text(self, key: str) -> str:
        row = self.rows.get(key)
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
            text = f"{len(graph):,} memories · {named:,} names"
            if graph.mode == "grouped":
                text += " · grouped by the names they share"
            if graph.hidden_hubs:
                text += f" · {graph.hidden_hubs:,} rarer names not drawn (focus one to see it)"
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
