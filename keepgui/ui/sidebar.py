"""The sidebar: sources, their banks with counts, and each data dir's trash.

A :class:`SourceTreeModel` (a QStandardItemModel) is rebuilt per source when
its banks change; the view keeps the selected bank across rebuilds. Each bank
row draws two lines: its name, and "N memories · P pinned · R rules" (or why
it cannot be read).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QMouseEvent, QPainter, QPalette, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QTreeView, QWidget

from keepgui.core import remote
from keepgui.core.paths import short_path
from keepgui.core.source import BankKey, BankSummary, Source, Trashed
from keepgui.ui import theme
from keepgui.ui.steadyviews import SteadyOnActivation
from keepgui.ui.timefmt import relative

KindRole = Qt.ItemDataRole.UserRole + 20
"""``source``, ``bank``, ``trash`` or ``trashed``."""
BankKeyRole = Qt.ItemDataRole.UserRole + 21
"""The BankKey of a bank row."""
SourceRole = Qt.ItemDataRole.UserRole + 22
"""The source folder of any row."""
DetailRole = Qt.ItemDataRole.UserRole + 23
"""The second line of a row (counts, or why it cannot be read)."""
FolderRole = Qt.ItemDataRole.UserRole + 24
"""The trash folder name of a trashed bank."""
ProblemRole = Qt.ItemDataRole.UserRole + 25
"""True when the row has a problem (unreadable)."""
ProblemCountRole = Qt.ItemDataRole.UserRole + 26
"""How many problems reading the bank found (the badge; 0: none)."""
IconNameRole = Qt.ItemDataRole.UserRole + 27
"""The themed icon of a row (``warning!``: the warning in its strong colour), drawn again when the theme changes."""
WARNING_ICON = "warning!"
HostRole = Qt.ItemDataRole.UserRole + 28
"""The machine a host row stands for (``alice@box``): its sources, opened over SSH, are its children."""


def _themed(item: QStandardItem, name: str) -> None:
    """Give ``item`` the themed icon ``name`` in the palette's colours now (and remember the name)."""
    item.setData(name, IconNameRole)
    shown = theme.icon("warning", theme.strong("warning")) if name == WARNING_ICON else theme.icon(name)
    if item.icon().cacheKey() != shown.cacheKey():  # icons are cached: same key, same picture
        item.setIcon(shown)


class SourceTreeModel(QStandardItemModel):
    """Sources → banks (+ trash → trashed banks)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setHorizontalHeaderLabels(["Sources"])
        self._trashed: dict[str, list[Trashed]] = {}  # the trashed banks each source's Trash node shows

    def _source_item(self, path: str) -> QStandardItem | None:
        for row in range(self.rowCount()):
            item = self.item(row)
            if item.data(SourceRole) == path:
                return item
            if item.data(KindRole) == "host":  # the sources of another machine are listed under it
                for inner in range(item.rowCount()):
                    if item.child(inner).data(SourceRole) == path:
                        return item.child(inner)
        return None

    def set_source_note(self, path: str, note: str) -> None:
        """A note on a source's second line (the secrets its banks hold), before its folder."""
        item = self._source_item(path)
        if item is not None:
            _set(item, f"{note} · {path}" if note else path, DetailRole)

    def _host_item(self, machine: str) -> QStandardItem:
        """The row of another machine (made, at the end, when it has none yet)."""
        for row in range(self.rowCount()):
            item = self.item(row)
            if item.data(KindRole) == "host" and item.data(HostRole) == machine:
                return item
        item = QStandardItem(machine)
        _themed(item, "folder")
        item.setData("host", KindRole)
        item.setData(machine, HostRole)
        item.setToolTip(f"{machine}: sources on another machine, over SSH")
        item.setEditable(False)
        self.appendRow([item])
        return item

    def set_sources(self, sources: Sequence[Source]) -> None:
        """Make the top level match the open sources (in the given order); a source on another machine is
        listed under that machine's row."""
        wanted = [s.path for s in sources]
        for row in reversed(range(self.rowCount())):
            item = self.item(row)
            if item.data(KindRole) == "host":
                for inner in reversed(range(item.rowCount())):
                    if item.child(inner).data(SourceRole) not in wanted:
                        item.removeRow(inner)
                if not item.rowCount():
                    self.removeRow(row)
            elif item.data(SourceRole) not in wanted:
                self.removeRow(row)
        position = 0
        for source in sources:
            machine = remote.machine_of(source.path)
            if self._source_item(source.path) is None:
                item = QStandardItem(source.label)
                _themed(item, "folder")
                item.setData("source", KindRole)
                item.setData(source.path, SourceRole)
                item.setData(source.path, DetailRole)
                item.setToolTip(short_path(source.path))
                item.setEditable(False)
                if machine is not None:
                    self._host_item(machine).appendRow([item])
                else:
                    self.insertRow(position, [item])
            if machine is None:
                position += 1

    def set_source_status(self, path: str, status: str) -> None:
        """Show beside a source what keeps it from being written ("offline — read-only"), or nothing."""
        item = self._source_item(path)
        if item is None:
            return
        base = item.data(Qt.ItemDataRole.DisplayRole).split("  —  ", 1)[0]
        item.setData(f"{base}  —  {status}" if status else base, Qt.ItemDataRole.DisplayRole)
        item.setToolTip(f"{short_path(path)}\n{status}" if status else short_path(path))

    def set_banks(
        self,
        path: str,
        names: Sequence[str],
        summary: Callable[[str], BankSummary | None],
        icon: str = "bank",
        trashed: Sequence[Trashed] | None = None,
    ) -> None:
        """Bring the banks of one source up to date: their names, each one's summary (None while it
        loads), the icon of its banks, and its trash (None: no trash node).

        Rows are updated in place; the Trash node is rebuilt only when the trashed banks changed,
        so an expanded Trash stays expanded.
        """
        parent = self._source_item(path)
        if parent is None:
            return
        existing = {
            parent.child(r).data(BankKeyRole): parent.child(r)
            for r in range(parent.rowCount())
            if parent.child(r).data(KindRole) == "bank"
        }
        names = list(names)
        trash = None
        # drop banks that vanished; the trash node is kept aside (it stays last)
        for row in reversed(range(parent.rowCount())):
            child = parent.child(row)
            key = child.data(BankKeyRole)
            if child.data(KindRole) == "trash":
                trash = child
            elif key is not None and key.bank not in names:
                parent.removeRow(row)
        for position, name in enumerate(names):
            key = BankKey(path, name)
            item = existing.get(key)
            if item is None:
                item = QStandardItem(name)
                item.setData("bank", KindRole)
                item.setData(key, BankKeyRole)
                item.setData(path, SourceRole)
                item.setEditable(False)
                parent.insertRow(position, [item])
            known = summary(name)
            detail = known.detail if known is not None else "loading…"
            problem = bool(known is not None and known.problem)
            description = known.description if known is not None else ""
            problems = known.problems if known is not None else 0
            title = known.title if known is not None and known.title else name
            _set(item, title, Qt.ItemDataRole.DisplayRole)
            _set(item, detail, DetailRole)
            _set(item, problem, ProblemRole)
            _set(item, problems, ProblemCountRole)
            tip = (
                (title if title == name else f"{title}  ({name})")
                + f"\n{detail}"
                + (f"\n{description}" if description else "")
            )
            if problems:
                tip += f"\n⚠ {problems} problem{'s' if problems != 1 else ''} reading it: Bank → Problems lists them"
            _set(item, tip, Qt.ItemDataRole.ToolTipRole)
            _themed(item, WARNING_ICON if problem else icon)
        # the source's badge: every problem of its banks (a collapsed source, or one bank, still shows it)
        total = sum(parent.child(r).data(ProblemCountRole) or 0 for r in range(parent.rowCount()))
        _set(parent, total, ProblemCountRole)
        trashed = None if trashed is None else list(trashed)
        if trash is not None:
            if trashed is not None and self._trashed.get(path) == trashed:
                return  # unchanged: keep the node, and whether it is expanded
            parent.removeRow(trash.row())
        if trashed is None:
            self._trashed.pop(path, None)
            return
        self._trashed[path] = trashed
        trash = QStandardItem("Trash")
        _themed(trash, "trash")
        trash.setData("trash", KindRole)
        trash.setData(path, SourceRole)
        trash.setData(
            f"{len(trashed)} trashed bank{'s' if len(trashed) != 1 else ''}" if trashed else "empty", DetailRole
        )
        trash.setEditable(False)
        for t in trashed:
            child = QStandardItem(t.folder)
            _themed(child, icon)
            child.setData("trashed", KindRole)
            child.setData(path, SourceRole)
            child.setData(t.folder, FolderRole)
            child.setData(f"bank `{t.bank}`, trashed {relative(t.trashed_at)}", DetailRole)
            child.setToolTip(f"{t.path}\nRestore it from the context menu or Bank → Restore from trash")
            child.setEditable(False)
            trash.appendRow([child])
        parent.appendRow([trash])

    def refresh_icons(self) -> None:
        """Draw every row's icon again in the palette's colours (the theme changed)."""
        pending = [self.item(row) for row in range(self.rowCount())]
        while pending:
            item = pending.pop()
            name = item.data(IconNameRole)
            if isinstance(name, str):
                _themed(item, name)
            pending.extend(item.child(row) for row in range(item.rowCount()))

    def index_of_source(self, path: str) -> QModelIndex:
        """The index of a source row (invalid when not shown)."""
        item = self._source_item(path)
        return item.index() if item is not None else QModelIndex()

    def index_of_bank(self, key: BankKey) -> QModelIndex:
        """The index of a bank row (invalid when not shown)."""
        parent = self._source_item(key.source)
        if parent is None:
            return QModelIndex()
        for row in range(parent.rowCount()):
            if parent.child(row).data(BankKeyRole) == key:
                return parent.child(row).index()
        return QModelIndex()


class TwoLineDelegate(QStyledItemDelegate):
    """Draws a row's name and, smaller and muted, its detail line."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802 - Qt override
        base = super().sizeHint(option, index)
        if index.data(DetailRole):
            return QSize(base.width(), int(base.height() * 1.9))
        return base

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        detail = index.data(DetailRole)
        if not detail:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""
        widget: QWidget | None = opt.widget  # None outside a view (the stubs say otherwise)
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget) if style else opt.rect
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        pal = opt.palette
        main_color = pal.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        sub_color = main_color if selected else theme.muted_text()
        if index.data(ProblemRole) and not selected:
            sub_color = theme.strong("removed")
        painter.save()
        badge = index.data(ProblemCountRole) or 0
        if badge:
            rect = rect.adjusted(0, 0, -draw_badge(painter, opt, rect, badge, selected) - 6, 0)
        top = QRect(rect.left(), rect.top(), rect.width(), rect.height() // 2)
        bottom = QRect(rect.left(), rect.top() + rect.height() // 2, rect.width(), rect.height() // 2)
        font = QFont(opt.font)
        if index.data(KindRole) in ("source", "bank"):
            font.setBold(True)
        painter.setFont(font)
        painter.setPen(main_color)
        painter.drawText(
            top,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
            painter.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, top.width()),
        )
        small = QFont(opt.font)
        small.setPointSizeF(max(6.0, opt.font.pointSizeF() * 0.85))
        painter.setFont(small)
        painter.setPen(sub_color)
        painter.drawText(
            bottom,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
            # a source's detail is its folder (the ends of a path say most); a bank's is a sentence
            # of counts, read from the left ("index 2… lines" hid the number)
            painter.fontMetrics().elidedText(
                str(detail),
                Qt.TextElideMode.ElideMiddle if index.data(KindRole) == "source" else Qt.TextElideMode.ElideRight,
                bottom.width(),
            ),
        )
        painter.restore()


def _badge_font(font: QFont) -> QFont:
    small = QFont(font)
    small.setPointSizeF(max(6.0, font.pointSizeF() * 0.85))
    small.setBold(True)
    return small


def _badge_text(count: int) -> str:
    return f"⚠ {count}" if count < 1000 else "⚠ 999+"


def badge_width(font: QFont, count: int) -> int:
    """How wide the problems badge of ``count`` is, drawn in a row of ``font``."""
    return QFontMetrics(_badge_font(font)).horizontalAdvance(_badge_text(count)) + 12


def draw_badge(painter: QPainter, opt: QStyleOptionViewItem, rect: QRect, count: int, selected: bool) -> int:
    """The problems badge: ``count`` in a warning-tinted pill at the right end of ``rect``; its width."""
    painter.setFont(_badge_font(opt.font))
    text = _badge_text(count)
    width = badge_width(opt.font, count)
    height = painter.fontMetrics().height() + 2
    pill = QRect(rect.right() - width, rect.center().y() - height // 2, width, height)
    painter.setPen(Qt.PenStyle.NoPen)
    tint = theme.tint("warning")
    painter.setBrush(tint)
    painter.drawRoundedRect(pill, height / 2, height / 2)
    # its small bold count 4.5:1 on the pill (in the dark palette the strong amber was 3.2:1)
    readable = theme.readable(theme.strong("warning"), tint, 4.5)
    painter.setPen(readable if not selected else opt.palette.color(QPalette.ColorRole.Text))
    painter.drawText(pill, Qt.AlignmentFlag.AlignCenter, text)
    return width


class SourceTree(SteadyOnActivation, QTreeView):
    """The sidebar view.

    Signals:
        bankActivated(object key): the person selected a bank.
        problemsRequested(object key): the person clicked a problems badge (a bank's, or the first
            bank with problems of a source whose badge it was).
    """

    bankActivated = Signal(object)
    problemsRequested = Signal(object)

    def __init__(self, model: SourceTreeModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setModel(model)
        self.tree_model = model
        self.setHeaderHidden(True)
        self.setItemDelegate(TwoLineDelegate(self))
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.setAccessibleName("Sources and banks")
        self.setUniformRowHeights(False)
        self.setExpandsOnDoubleClick(True)
        self.selectionModel().currentChanged.connect(self._on_current)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:  # a theme change: the rows' icons in the new colours
            self.tree_model.refresh_icons()
        super().changeEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        index = self.indexAt(event.position().toPoint())
        key = self._badge_at(index, event.position().toPoint().x())
        if key is not None and event.button() == Qt.MouseButton.LeftButton:
            event.accept()
            self.problemsRequested.emit(key)
            return
        super().mousePressEvent(event)

    def _badge_at(self, index: QModelIndex, x: int) -> BankKey | None:
        """The bank whose problems the badge at ``x`` of ``index``'s row stands for (None: no badge there)."""
        count = index.data(ProblemCountRole) or 0 if index.isValid() else 0
        if not count or not index.data(DetailRole):
            return None
        right = self.visualRect(index).right() - 4  # the text rect's end, less the item's margin
        if x < right - badge_width(self.font(), count) - 4:
            return None
        key = index.data(BankKeyRole)
        if key is not None:
            return key if isinstance(key, BankKey) else None
        for row in range(self.tree_model.rowCount(index)):  # a source's badge: its first bank with problems
            child = self.tree_model.index(row, 0, index)
            found = child.data(BankKeyRole)
            if child.data(ProblemCountRole) and isinstance(found, BankKey):
                return found
        return None

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        key = current.data(BankKeyRole)
        if key is not None:
            self.bankActivated.emit(key)

    def select_bank(self, key: BankKey) -> bool:
        """Select a bank row; False when it is not in the tree."""
        index = self.tree_model.index_of_bank(key)
        if not index.isValid():
            return False
        self.expand(index.parent())
        self.setCurrentIndex(index)
        return True


def _set(item: QStandardItem, value: object, role: int) -> None:
    """Set a role only when its value changes (each change repaints and re-lays out the row)."""
    if item.data(role) != value:
        item.setData(value, role)
