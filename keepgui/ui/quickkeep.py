"""Quick keep: a small popup that keeps one fact in any open bank that keeps facts.

One line to type in, a target picker (every open bank whose backend can keep a
fact: each nanobot workspace's keep.md, each bank of each iii data dir...), and
live feedback as the person types (debounced, computed on a background thread
by the backend, :meth:`~keepgui.core.source.Bank.check_keep`): for keep.md
where the keep skill's triage says the fact belongs and the entries or
MEMORY.md lines that already hold it; for an iii bank the memory with the same
fingerprint ("saving reinforces it") and near-duplicates.

Enter keeps, Ctrl+Enter keeps anyway (where the backend can force a keep past
its checks), Escape closes. The keep goes through the *host*'s undo
stack, so it can be undone from the window like any other change:

* the host is the :class:`~keepgui.ui.mainwindow.MainWindow` (from its Edit
  menu, the tray, or ``keepgui quick-keep`` handed over to it), or
* a :class:`StandaloneHost` with its own hub and undo stack, when
  ``keepgui quick-keep`` finds no running instance (:func:`run_standalone`).

A host offers ``hub``, ``settings``, ``perform(target, operation, text)`` (an
undo step; returns an :class:`~keepgui.ui.commands.Outcome`) and ``show_error(text)``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import shiboken6
from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCursor, QGuiApplication, QHideEvent, QKeyEvent, QPainter, QPaintEvent, QPalette, QUndoStack
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.errors import KeepguiError
from keepgui.core.paths import short_path
from keepgui.core.source import FORCE, KEEP, BankKey, Change, Hint
from keepgui.ui import theme
from keepgui.ui.commands import ChangeCommand, Outcome
from keepgui.ui.hub import Hub
from keepgui.ui.tasks import lane
from keepgui.ui.tray import KeepTray

if TYPE_CHECKING:  # the settings module is imported where a standalone popup makes them
    from keepgui.ui.settings import Settings

DEBOUNCE_MS = 250
"""Feedback waits this long after the last keystroke (typing stays smooth on big banks)."""
POPUP_WIDTH = 640
"""The popup's width in device-independent pixels; its height follows the feedback."""
TARGET_SETTING = "quick_keep/target"
"""Settings key of the last target kept into: ``[source folder, bank]``."""


# ---------------------------------------------------------------------- what the popup says


@dataclass(frozen=True)
class QuickCheck:
    """The feedback for one text and target."""

    key: BankKey
    text: str
    hints: tuple[Hint, ...]


def targets(hub: Hub) -> list[tuple[BankKey, str, str]]:
    """Every place a quick keep can go: ``(key, label, icon)``, in the backends' Quick keep order."""
    out = []
    for path in hub.sources:
        backend = hub.backend(path)
        for name in hub.banks(path):
            key = BankKey(path, name)
            if hub.capabilities(key).can(KEEP):
                summary = hub.summary(key)
                shown = summary.title if summary is not None and summary.title else name
                out.append(((backend.keep_rank, path), key, f"{shown} — {short_path(path, 34)}", backend.icon))
    out.sort(key=lambda item: item[0])
    return [(key, label, icon) for _rank, key, label, icon in out]


# ---------------------------------------------------------------------- keeping through an undo stack


class KeepHost(Protocol):
    """What Quick keep keeps through: the window, or :class:`StandaloneHost` when none runs."""

    @property
    def hub(self) -> Hub:
        """The open sources."""

    @property
    def settings(self) -> Settings:
        """Where the last target is remembered."""

    def perform(
        self,
        target: BankKey | str,
        operation: Callable[[Any], Change],
        text: str | None = None,
        report: bool = True,
        wait: bool = False,
    ) -> Outcome:
        """Run a write as one undo step (off the GUI thread; ``wait``: settled before it returns)."""


def keep_into(
    host: KeepHost,
    key: BankKey,
    text: str,
    then: Callable[[Change | None, str | None], object],
    *,
    force: bool = False,
    replace: bool = False,
    undo_text: str | None = None,
    wait: bool = False,
) -> None:
    """Keep ``text`` in the bank ``key`` through ``host``'s undo stack; ``then(change, error)`` once
    it ran, off the GUI thread (``wait``: before this returns).

    Nothing written (already kept, a suggestion) leaves nothing on the stack;
    an error is also reported by the host (its banner).
    """
    if key.source not in host.hub.sources:
        then(None, f"{key.source} is not open")
        return
    operation: Callable[[Any], Change] = lambda bank: bank.keep(text, force=force, replace=replace)  # noqa: E731
    host.perform(key, operation, undo_text, True, wait).then(
        lambda outcome: (
            then(outcome.change, None)
            if outcome.change is not None
            else then(None, outcome.error or f"bank `{key.bank}` is not open")
        )
    )


# ---------------------------------------------------------------------- the popup


def notify_for(host: KeepHost) -> Callable[[str], None]:
    """How a host confirms a keep: the tray's message when a tray shows, else the status bar."""

    def notify(text: str) -> None:
        tray = host.findChild(KeepTray) if isinstance(host, QObject) else None
        if tray is not None and tray.notify(text):
            return
        note = getattr(host, "note", None)  # the window's note ends in "…" before the status bar's labels
        if callable(note):
            note(text)
        elif hasattr(host, "statusBar"):
            host.statusBar().showMessage(text, 8000)

    return notify


class _HintRow(QWidget):
    """One feedback line: a coloured mark and the text, colours from the palette."""

    MARKS: ClassVar[dict[str, str]] = {"ok": "✓", "info": "•", "warning": "⚠", "error": "✕"}

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.mark = QLabel(self)
        self.mark.setFixedWidth(self.fontMetrics().horizontalAdvance("⚠") + 6)
        self.mark.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.mark, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.label, 1)
        self.hint: Hint | None = None

    def set_hint(self, hint: Hint) -> None:
        """Show ``hint`` (the level also reads as a word for screen readers)."""
        color = {
            "ok": theme.strong("added"),
            "warning": theme.strong("warning"),
            "error": theme.strong("removed"),
            "info": theme.muted_text(),
        }[hint.level]
        self.hint = hint
        self.mark.setText(self.MARKS[hint.level])
        font = self.mark.font()
        font.setBold(True)
        self.mark.setFont(font)
        pal = self.mark.palette()
        pal.setColor(QPalette.ColorRole.WindowText, color)
        self.mark.setPalette(pal)
        self.label.setText(hint.text)
        self.setAccessibleName(f"{hint.level}: {hint.text}")


class QuickKeepPopup(QFrame):
    """The quick keep popup (see the module docstring). One per host; reused between openings.

    Signals:
        closed(): the popup was closed or hidden.
    """

    closed = Signal()

    def __init__(self, host: KeepHost, notify: Callable[[str], None] | None = None, linger_ms: int = 0) -> None:
        # No parent: the popup must open while the window is hidden in the tray.
        super().__init__(
            None, Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint
        )
        self.host = host
        self.notify = notify or notify_for(host)
        self.linger_ms = linger_ms
        self.setAttribute(Qt.WidgetAttribute.WA_QuitOnClose, False)
        self.setObjectName("QuickKeepPopup")
        self.setWindowTitle("Quick keep — keepgui")
        self.setAccessibleName("Quick keep")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAutoFillBackground(True)
        self._checks = lane("quickkeep")  # the popup's own: closed with it
        self._seq = 0
        self._last: QuickCheck | None = None
        self._keys: list[BankKey] = []
        self._build()
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._start_check)
        self.edit.textChanged.connect(self._on_text)
        self.target.currentIndexChanged.connect(self._on_target)
        self.keep_button.clicked.connect(lambda: self.keep(force=False))
        self.close_button.clicked.connect(self.close)
        self.edit.installEventFilter(self)
        host.hub.sourcesChanged.connect(self.refresh_targets)
        host.hub.banksChanged.connect(lambda _path: self.refresh_targets())
        if isinstance(host, QObject):
            host.destroyed.connect(self.dispose)
        self.refresh_targets()
        self._apply_palette()
        self._show_hints((Hint("info", "Type a fact; keepgui checks it against what is already kept."),))

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        self.icon = QLabel(self)
        self.icon.setAccessibleName("Quick keep")
        self.title = QLabel("Quick keep", self)
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.1)
        self.title.setFont(font)
        self.into = QLabel("into", self)
        self.target = QComboBox(self)
        self.target.setAccessibleName("Keep into")
        self.target.setToolTip("Where the fact is kept: any open bank that keeps facts")
        self.target.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.target.setMinimumContentsLength(18)
        self.into.setBuddy(self.target)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setAccessibleName("Close Quick keep")
        self.close_button.setToolTip("Close (Esc)")
        header = QHBoxLayout()
        header.setSpacing(8)
        header.addWidget(self.icon)
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.into)
        header.addWidget(self.target)
        header.addWidget(self.close_button)

        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("A fact to keep, e.g. Prefers metric units, including in recipes")
        self.edit.setAccessibleName("Fact to keep")
        self.edit.setClearButtonEnabled(True)
        self.edit.setMaxLength(4000)
        big = self.edit.font()
        big.setPointSizeF(big.pointSizeF() * 1.25)
        self.edit.setFont(big)
        self.edit.setMinimumHeight(self.edit.fontMetrics().height() + 16)

        self.hints_box = QWidget(self)
        self.hints_layout = QVBoxLayout(self.hints_box)
        self.hints_layout.setContentsMargins(2, 0, 2, 0)
        self.hints_layout.setSpacing(3)
        self.rows: list[_HintRow] = []

        self.footer = QLabel(self)
        self.keep_button = QPushButton("Keep", self)
        self.keep_button.setDefault(True)
        self.keep_button.setToolTip("Keep the fact (Enter)")
        footer = QHBoxLayout()
        footer.addWidget(self.footer, 1)
        footer.addWidget(self.keep_button)

        self.rule = QFrame(self)
        self.rule.setFrameShape(QFrame.Shape.HLine)
        self.rule.setFrameShadow(QFrame.Shadow.Plain)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 10, 14, 12)
        layout.setSpacing(8)
        layout.addLayout(header)
        layout.addWidget(self.edit)
        layout.addWidget(self.hints_box)
        layout.addWidget(self.rule)
        layout.addLayout(footer)
        self.setFixedWidth(POPUP_WIDTH)

    def _apply_palette(self) -> None:
        self.icon.setPixmap(theme.icon("keep").pixmap(QSize(20, 20)))  # icons are drawn in the text colour
        pal = self.palette()
        muted = theme.muted_text()
        for label in (self.footer, self.into):
            p = label.palette()
            p.setColor(QPalette.ColorRole.WindowText, muted)
            label.setPalette(p)
        rule = self.rule.palette()
        rule.setColor(QPalette.ColorRole.WindowText, pal.color(QPalette.ColorRole.Mid))
        self.rule.setPalette(rule)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        # A frameless window draws its own edge, in the palette's mid tone so it reads in light and dark
        # mode (painted, not a style sheet: a style sheet would stop palette changes reaching the children).
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.Mid))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        painter.end()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:  # light/dark switch: re-derive every colour
            self._apply_palette()
            self.refresh_targets(redraw=True)  # the targets' icons too
            for row in self.rows:
                if row.hint is not None:
                    row.set_hint(row.hint)
        super().changeEvent(event)

    # ------------------------------------------------------------------ targets

    def refresh_targets(self, redraw: bool = False) -> None:
        """Rebuild the target list from the host's open sources, keeping the choice.

        Unless ``redraw``, an unchanged list is left alone.
        """
        current = self.target_key()
        listed = targets(self.host.hub)
        if not redraw and [key for key, _label, _icon in listed] == self._keys and self._keys:
            return  # banks report their counts often; an unchanged list must not flicker the combo
        self.target.blockSignals(True)
        self.target.clear()
        # The keys live beside the combo: a Python object stored as item data does not compare equal
        # to an equal key, so findData() could not find it.
        self._keys = []
        for key, label, icon in listed:
            self.target.addItem(theme.icon(icon), label)
            self.target.setItemData(
                self.target.count() - 1, os.path.join(key.source, key.bank), Qt.ItemDataRole.ToolTipRole
            )
            self._keys.append(key)
        if not self._keys:
            self.target.addItem("No open bank keeps facts")
        for wanted in (current, *self._preferred_targets()):
            if wanted in self._keys:
                self.target.setCurrentIndex(self._keys.index(wanted))
                break
        else:
            self.target.setCurrentIndex(0)
        self.target.blockSignals(False)
        has_target = self.target_key() is not None
        self._update_footer()
        self.target.setEnabled(has_target)
        self.keep_button.setEnabled(has_target)
        if not has_target:
            self._show_hints((Hint("info", "Open a source in keepgui first (File → Open…)."),))
        elif self.target_key() != current:
            self._schedule()

    def _preferred_targets(self) -> list[BankKey]:
        """The last target kept into, then the bank the window shows."""
        out = []
        saved = self.host.settings.get(TARGET_SETTING)
        if isinstance(saved, list) and len(saved) == 2 and all(isinstance(s, str) for s in saved):
            out.append(BankKey(*saved))
        shown = getattr(self.host, "current", None)
        if isinstance(shown, BankKey):
            out.append(shown)
        return out

    def target_key(self) -> BankKey | None:
        """The chosen target, or None when nothing is open."""
        index = self.target.currentIndex()
        return self._keys[index] if 0 <= index < len(self._keys) else None

    def set_target(self, key: BankKey) -> bool:
        """Choose ``key`` as the target; False when it is not an open bank that keeps facts."""
        if key not in self._keys:
            return False
        self.target.setCurrentIndex(self._keys.index(key))
        return True

    def _on_target(self, _index: int) -> None:
        self._update_footer()
        self._schedule()

    def _update_footer(self) -> None:
        key = self.target_key()
        hub = self.host.hub
        # "keep anyway" only means something where a keep can be refused (an iii save always writes)
        forced = key is not None and key.source in hub.sources and hub.capabilities(key).can(FORCE)
        anyway = "<b>Ctrl+Enter</b> keep anyway &nbsp;·&nbsp; " if forced else ""
        self.footer.setText(f"<b>Enter</b> keep &nbsp;·&nbsp; {anyway}<b>Esc</b> close")

    # ------------------------------------------------------------------ feedback

    def _on_text(self, _text: str) -> None:
        self._schedule()

    def _schedule(self) -> None:
        self._seq += 1  # anything in flight is now stale
        self._debounce.start()

    def _start_check(self) -> None:
        key, text = self.target_key(), self.edit.text()
        if key is None:
            return
        if not text.strip():
            self._show_hints((Hint("info", "Type a fact; keepgui checks it against what is already kept."),))
            self._last = None
            return
        if key.source not in self.host.hub.sources:
            return
        bank = self.host.hub.bank(key)
        self._seq += 1
        seq = self._seq
        # On a closed lane (the popup is going away) nothing runs; the newest check wins.
        self._checks.run(
            lambda: QuickCheck(key, text, bank.check_keep(text)),
            lambda check: self._on_checked(seq, check),
            lambda exc: self._on_checked(seq, QuickCheck(key, text, (Hint("error", f"Cannot check: {exc}"),))),
            owner=self,
            newest="check",
        )

    def _on_checked(self, seq: int, check: QuickCheck) -> None:
        if seq != self._seq or check.text != self.edit.text() or check.key != self.target_key():
            return  # the person typed on or switched target
        self._last = check
        self._show_hints(check.hints)

    def _show_hints(self, hints: Sequence[Hint]) -> None:
        while len(self.rows) < len(hints):
            row = _HintRow(self.hints_box)
            self.hints_layout.addWidget(row)
            self.rows.append(row)
        for row, hint in zip(self.rows, hints, strict=False):  # rows beyond the hints are hidden below
            row.set_hint(hint)
            row.show()
        for row in self.rows[len(hints) :]:
            row.hide()
        self._fit()

    def _fit(self) -> None:
        # Word-wrapped lines make the height depend on the width: ask the layout for exactly that.
        # The labels' layout requests are posted, not handled yet, and every level caches its
        # height-for-width: drop those caches from the bottom up before asking.
        for row in self.rows:
            row.label.updateGeometry()
            row.updateGeometry()
        self.hints_box.updateGeometry()
        layout = self.layout()
        if layout is None:
            return
        layout.invalidate()
        layout.activate()
        height = layout.totalHeightForWidth(self.width())
        self.setFixedHeight(max(height, layout.totalMinimumSize().height()))

    def hints(self) -> list[tuple[str, str]]:
        """The feedback shown now: ``(level, text)`` per line."""
        return [(r.hint.level, r.hint.text) for r in self.rows if not r.isHidden() and r.hint is not None]

    # ------------------------------------------------------------------ keeping

    def keep(self, force: bool = False, replace: bool = False) -> bool:
        """Keep the typed fact in the chosen target; True when the keep was asked for (it is
        written off the GUI thread: the popup waits, then says what it did, or closes).

        ``force`` keeps it past a triage suggestion or a containing entry; ``replace``
        replaces the entries it contains (both only matter where the backend can refuse a keep).
        """
        key, text = self.target_key(), self.edit.text()
        if key is None or not text.strip():
            return False
        if key.source not in self.host.hub.sources:
            self._show_hints((Hint("error", f"{key.source} is no longer open"),))
            return False
        self.edit.setEnabled(False)  # until the keep has run
        keep_into(
            self.host,
            key,
            text,
            lambda change, error: self._kept(key, change, error) if shiboken6.isValid(self) else None,
            force=force,
            replace=replace,
        )
        return True

    def _kept(self, key: BankKey, change: Change | None, error: str | None) -> None:
        if change is None or not change.written:
            self.edit.setEnabled(True)
            if change is None:
                self._show_hints((Hint("error", error or "not kept"),))
            else:
                self._show_hints(change.feedback or (Hint("warning", change.message or "Nothing was written"),))
            return
        message = change.message
        self._remember_target(key)
        self.notify(message)
        self.edit.clear()
        self._last = None
        if self.linger_ms > 0:
            self._show_hints((Hint("ok", message),))
            QTimer.singleShot(self.linger_ms, self.close)
        else:
            self.close()

    def _remember_target(self, key: BankKey) -> None:
        self.host.settings.set(TARGET_SETTING, [key.source, key.bank])

    # ------------------------------------------------------------------ showing

    def open(self, text: str = "") -> None:
        """Show the popup near the top of the screen under the mouse, focused on the text field."""
        if text:
            self.edit.setText(text)
        self.edit.setEnabled(True)
        self.refresh_targets()
        self._fit()
        screen = QGuiApplication.screenAt(QCursor.pos()) or QGuiApplication.primaryScreen()
        if screen is not None:
            area = screen.availableGeometry()
            self.move(area.x() + (area.width() - self.width()) // 2, area.y() + area.height() // 5)
        self.show()
        self.raise_()
        self.activateWindow()
        self.edit.setFocus(Qt.FocusReason.OtherFocusReason)
        self.edit.selectAll()
        self._schedule()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.edit and isinstance(event, QKeyEvent) and event.type() == QEvent.Type.KeyPress:
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                modifiers = event.modifiers()
                self.keep(
                    force=bool(modifiers & Qt.KeyboardModifier.ControlModifier),
                    replace=bool(modifiers & Qt.KeyboardModifier.AltModifier),
                )
                return True
            if event.key() == Qt.Key.Key_Escape:
                self.close()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt override
        super().hideEvent(event)
        self.closed.emit()

    def dispose(self, *_args: object) -> None:
        """Close for good: stop the feedback thread and delete the popup (its host is going away)."""
        self._checks.close(wait=False)
        with contextlib.suppress(RuntimeError):  # already gone with the application
            self.close()
            self.deleteLater()


_popups: dict[int, QuickKeepPopup] = {}


def popup_for(host: KeepHost, **kw: Any) -> QuickKeepPopup:
    """The host's quick keep popup (made on first use)."""
    popup = _popups.get(id(host))
    if popup is None:
        popup = QuickKeepPopup(host, **kw)
        _popups[id(host)] = popup
        if isinstance(host, QObject):
            key = id(host)
            host.destroyed.connect(lambda *_a: _popups.pop(key, None))
    return popup


def open_quick_keep(host: KeepHost, text: str = "") -> QuickKeepPopup:
    """Open the host's quick keep popup (Edit → Quick keep, the tray, ``keepgui quick-keep``)."""
    popup = popup_for(host)
    popup.open(text)
    return popup


# ---------------------------------------------------------------------- without a window


class StandaloneHost(QObject):
    """What the popup keeps through when no keepgui window runs: a hub, settings, an undo stack.

    Signals:
        failed(str message): a keep could not be written (shown in the popup too).
    """

    failed = Signal(str)

    def __init__(self, hub: Hub, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.settings = settings
        self.undo_stack = QUndoStack(self)

    def perform(
        self,
        target: BankKey | str,
        operation: Callable[[Any], Change],
        text: str | None = None,
        report: bool = True,
        wait: bool = False,
    ) -> Outcome:
        """Run a write as an undo step of this popup's own stack."""
        outcome = Outcome()
        command = ChangeCommand(
            self.hub, target, operation, text, self.show_error, outcome, not report, self.undo_stack, wait
        )
        self.undo_stack.push(command)
        return outcome

    def show_error(self, text: str) -> None:
        """A failed keep: reported by signal (the popup shows its own line)."""
        self.failed.emit(text)


def run_standalone(args: argparse.Namespace) -> int:
    """``keepgui quick-keep`` with no running instance: the popup on its own, until it closes."""
    from keepgui.ui.settings import Settings
    from keepgui.ui.startup import initial_sources, make_app

    app = make_app()
    settings = Settings()
    hub = Hub(reload_command=getattr(args, "reload_command", None), watch=False)
    host = StandaloneHost(hub, settings)
    sources, _persist = initial_sources(args, settings)
    for kind, path in sources:
        hub.add(kind, path)

    def say(text: str) -> None:
        print(text, flush=True)

    popup = QuickKeepPopup(host, notify=say, linger_ms=1200)
    popup.setWindowFlag(Qt.WindowType.Tool, False)  # alone, it is the application's window (taskbar, focus)
    popup.closed.connect(app.quit)
    popup.open(" ".join(getattr(args, "text", None) or []))
    if not sources:
        print("keepgui: no source found to keep into; open one in the window first", file=sys.stderr)
    status = app.exec()
    popup.dispose()
    try:
        settings.save()
    except (KeepguiError, OSError) as exc:
        print(f"keepgui: settings not saved: {exc}", file=sys.stderr)
    hub.shutdown()
    return status
