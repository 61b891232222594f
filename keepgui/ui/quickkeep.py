"""Quick keep: a small popup that keeps one fact in any open keep.md or iii bank.

One line to type in, a target picker (each open nanobot workspace's keep.md
and each bank of each open iii data dir), and live feedback as the person
types (debounced, computed on a background thread): where the keep skill's
triage says the fact belongs, and what it would duplicate — for keep.md the
entries that already hold it, contain it or nearly match it and the
MEMORY.md lines that know it; for an iii bank the memory with the same
fingerprint ("saving reinforces it") and near-duplicates by rapidfuzz.

Enter keeps, Ctrl+Enter keeps anyway (past a triage suggestion or a
containing entry), Escape closes. The keep goes through the *host*'s undo
stack, so it can be undone from the window like any other change:

* the host is the :class:`~keepgui.ui.mainwindow.MainWindow` (from its Edit
  menu, the tray, or ``keepgui quick-keep`` handed over to it), or
* a :class:`StandaloneHost` with its own hub and undo stack, when
  ``keepgui quick-keep`` finds no running instance (:func:`run_standalone`).

A host offers ``hub``, ``settings``, ``push_keep_to(key, text, action,
on_result)``, ``push_to(key, text, action)`` and ``show_error(text)``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCursor, QGuiApplication, QPainter, QPalette, QUndoStack
from PySide6.QtWidgets import (
    QComboBox, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QToolButton, QVBoxLayout,
    QWidget,
)
from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from keepgui.core.compaction import excerpt
from keepgui.core.errors import KeepguiError
from keepgui.core.iii.mutations import clean_text
from keepgui.core.iii.record import fingerprint
from keepgui.core.nanobot.keep import (
    ALREADY_KEPT, FUZZY_THRESHOLD, KEEP, MAX_WORDS, REDIRECTED, REPLACE_OFFERED, KeepResult,
)
from keepgui.core.nanobot.keepmd import normalise
from keepgui.ui import theme
from keepgui.ui.commands import KeepCommand, MemoryCommand
from keepgui.ui.hub import KEEP_BANK, BankKey, Hub, short_path
from keepgui.ui.tray import KeepTray

DEBOUNCE_MS = 250
"""Feedback waits this long after the last keystroke (typing stays smooth on big banks)."""
POPUP_WIDTH = 640
"""The popup's width in device-independent pixels; its height follows the feedback."""
MAX_NEAR = 3
"""Near-duplicates shown at most."""
TARGET_SETTING = "quick_keep/target"
"""Settings key of the last target kept into: ``[source folder, bank]``."""


# ---------------------------------------------------------------------- what the popup says (no Qt)


@dataclass(frozen=True)
class Hint:
    """One line of feedback: ``level`` is ``ok``, ``info``, ``warning`` or ``error``."""

    level: str
    text: str


@dataclass(frozen=True)
class QuickCheck:
    """The feedback for one text and target."""

    key: BankKey
    text: str
    hints: tuple[Hint, ...]


def _quote(text: str, limit: int = 70) -> str:
    return f"“{excerpt(text, limit)}”"


def check_keep_md(store, text: str, doc=None) -> tuple[Hint, ...]:
    """Feedback for keeping ``text`` in a keep.md (``store`` is a KeepStore).

    Reads keep.md (unless ``doc`` is given) and MEMORY.md; writes nothing.
    """
    try:
        found = store.check(text, doc)
    except KeepguiError as exc:
        return (Hint("error", str(exc)),)
    hints: list[Hint] = []
    if found.identical is not None:
        hints.append(Hint("warning", f"Already kept as entry {found.identical.number}: "
                                     f"{_quote(found.identical.text)} — nothing to add"))
    elif found.contained_in:
        entry = found.contained_in[0]
        hints.append(Hint("warning", f"Already kept: entry {entry.number} {_quote(entry.text)} contains it "
                                     "(Ctrl+Enter keeps it as a variant)"))
    if found.triage.verdict == KEEP:
        if found.already_kept is None:
            hints.insert(0, Hint("ok", "A durable fact about the user: it belongs in keep.md"))
    else:
        hints.insert(0, Hint("warning", f"Belongs in {found.triage.destination}: {found.triage.reason}. "
                                        "Ctrl+Enter keeps it in keep.md anyway"))
    for entry in found.contains:
        hints.append(Hint("info", f"Contains entry {entry.number} {_quote(entry.text)}: "
                                  "Alt+Enter replaces it, Ctrl+Enter keeps both"))
    for near in found.near[:MAX_NEAR]:
        hints.append(Hint("warning", f"Near-duplicate of entry {near.entry.number} {_quote(near.entry.text)} "
                                     f"({near.score:.0f}% similar)"))
    for match in found.memory[:2]:
        hints.append(Hint("info", f"Already in MEMORY.md, line {match.line}: {_quote(match.text.lstrip('-*+ '))}"))
    if found.words > MAX_WORDS:
        hints.append(Hint("warning", f"{found.words} words: keep.md entries are terse (5–{MAX_WORDS} words)"))
    return tuple(hints)


def check_bank(text: str, existing, live: list[tuple[str, str]], bank: str,
               threshold: float = FUZZY_THRESHOLD) -> tuple[Hint, ...]:
    """Feedback for saving ``text`` to an iii bank.

    ``existing`` is the bank's record with ``text``'s fingerprint (or None);
    ``live`` the ``(id, text)`` of its live memories, for near-duplicates.
    """
    try:
        cleaned = clean_text(text)
    except KeepguiError as exc:
        return (Hint("error", f"Not saved as it is: {exc}"),)
    hints: list[Hint] = []
    mid = fingerprint(cleaned)
    if existing is None:
        hints.append(Hint("ok", f"A new memory in bank “{bank}”"))
    elif existing.invalid_at is None:
        hints.append(Hint("info", f"Already remembered in “{bank}” (seen {existing.seen}×): saving reinforces it"))
    else:
        hints.append(Hint("info", f"Matches a deleted memory of “{bank}”: saving brings it back"))
    others = [(i, t) for i, t in live if i != mid]
    if others:
        matches = process.extract(cleaned, [t for _, t in others], scorer=fuzz.token_set_ratio,
                                  processor=default_process, score_cutoff=threshold, limit=MAX_NEAR)
        for choice, score, _index in matches:
            hints.append(Hint("warning", f"Near-duplicate of {_quote(choice)} ({score:.0f}% similar)"))
    return tuple(hints)


def targets(hub: Hub) -> list[tuple[BankKey, str, str]]:
    """Every place a quick keep can go: ``(key, label, kind)``, keep.md files first."""
    out = []
    for source in sorted(hub.sources.values(), key=lambda s: (s.kind != "nanobot", s.path)):
        if source.kind == "nanobot":
            out.append((BankKey(source.path, KEEP_BANK), f"keep.md — {short_path(source.path, 34)}", "nanobot"))
        else:
            for name in source.names:
                out.append((BankKey(source.path, name), f"{name} — {short_path(source.path, 34)}", "iii"))
    return out


# ---------------------------------------------------------------------- keeping through an undo stack


def keep_in_keep_md(host, key: BankKey, text: str, *, force: bool = False, replace: bool = False,
                    undo_text: str | None = None) -> tuple[KeepResult | None, str | None]:
    """Keep ``text`` in the keep.md of ``key`` through ``host``'s undo stack: ``(result, error)``.

    Nothing written (already kept, a suggestion) leaves nothing on the stack;
    an error is also reported by the host (its banner).
    """
    outcome: dict[str, Any] = {}

    def action(store):
        try:
            outcome["result"] = store.add(text, force=force, replace=replace)
        except (KeepguiError, OSError) as exc:
            outcome["error"] = str(exc)
            raise
        return outcome["result"]

    host.push_keep_to(key, undo_text or f"Keep {_quote(text, 40)}", action)
    if "error" not in outcome and "result" not in outcome:
        outcome["error"] = f"{key.source} is not open"
    return outcome.get("result"), outcome.get("error")


def save_in_bank(host, key: BankKey, text: str, *, undo_text: str | None = None) -> tuple[Any, str | None]:
    """Save ``text`` in the iii bank ``key`` through ``host``'s undo stack: ``(transition, error)``."""
    outcome: dict[str, Any] = {}

    def action(batch):
        try:
            outcome["transition"] = batch.save(text)
        except (KeepguiError, OSError) as exc:
            outcome["error"] = str(exc)
            raise

    host.push_to(key, undo_text or f"Keep {_quote(text, 40)}", action)
    if "error" not in outcome and "transition" not in outcome:
        outcome["error"] = f"bank `{key.bank}` is not open"
    return outcome.get("transition"), outcome.get("error")


# ---------------------------------------------------------------------- the popup


def notify_for(host) -> Callable[[str], None]:
    """How a host confirms a keep: the tray's message when a tray shows, else the status bar."""

    def notify(text: str) -> None:
        tray = host.findChild(KeepTray) if isinstance(host, QObject) else None
        if tray is not None and tray.notify(text):
            return
        if hasattr(host, "statusBar"):
            host.statusBar().showMessage(text, 8000)

    return notify


class _HintRow(QWidget):
    """One feedback line: a coloured mark and the text, colours from the palette."""

    MARKS = {"ok": "✓", "info": "•", "warning": "⚠", "error": "✕"}

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
        color = {"ok": theme.strong("added"), "warning": theme.strong("warning"), "error": theme.strong("removed"),
                 "info": theme.muted_text()}[hint.level]
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
    _checked = Signal(int, object)

    def __init__(self, host, notify: Callable[[str], None] | None = None, linger_ms: int = 0) -> None:
        # No parent: the popup must open while the window is hidden in the tray.
        super().__init__(None, Qt.WindowType.Tool | Qt.WindowType.FramelessWindowHint
                         | Qt.WindowType.WindowStaysOnTopHint)
        self.host = host
        self.notify = notify or notify_for(host)
        self.linger_ms = linger_ms
        self.setAttribute(Qt.WidgetAttribute.WA_QuitOnClose, False)
        self.setObjectName("QuickKeepPopup")
        self.setWindowTitle("Quick keep — keepgui")
        self.setAccessibleName("Quick keep")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAutoFillBackground(True)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="keepgui-quickkeep")
        self._seq = 0
        self._last: QuickCheck | None = None
        self._keys: list[BankKey] = []
        self._build()
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._start_check)
        self._checked.connect(self._on_checked, Qt.ConnectionType.QueuedConnection)
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
        self.target.setToolTip("Where the fact is kept: a workspace's keep.md or an iii bank")
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

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        # A frameless window draws its own edge, in the palette's mid tone so it reads in light and dark
        # mode (painted, not a style sheet: a style sheet would stop palette changes reaching the children).
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.Mid))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        painter.end()

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt override
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
        if not redraw and [key for key, _label, _kind in listed] == self._keys and self._keys:
            return  # banks report their counts often; an unchanged list must not flicker the combo
        self.target.blockSignals(True)
        self.target.clear()
        # The keys live beside the combo: a Python object stored as item data does not compare equal
        # to an equal key, so findData() could not find it.
        self._keys = []
        for key, label, kind in listed:
            self.target.addItem(theme.icon("keep" if kind == "nanobot" else "bank"), label)
            self.target.setItemData(self.target.count() - 1, os.path.join(key.source, key.bank),
                                    Qt.ItemDataRole.ToolTipRole)
            self._keys.append(key)
        if not self._keys:
            self.target.addItem("No open keep.md or bank")
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
            self._show_hints((Hint("info", "Open a nanobot workspace or an iii data dir in keepgui first."),))
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
        """Choose ``key`` as the target; False when it is not an open keep.md or bank."""
        if key not in self._keys:
            return False
        self.target.setCurrentIndex(self._keys.index(key))
        return True

    def _on_target(self, _index: int) -> None:
        self._update_footer()
        self._schedule()

    def _update_footer(self) -> None:
        key = self.target_key()
        source = self.host.hub.sources.get(key.source) if key is not None else None
        # "keep anyway" only means something for keep.md (an iii save always writes)
        anyway = "" if source is not None and source.kind == "iii" else \
            "<b>Ctrl+Enter</b> keep anyway &nbsp;·&nbsp; "
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
        source = self.host.hub.sources.get(key.source)
        if source is None:
            return
        self._seq += 1
        seq = self._seq
        with contextlib.suppress(RuntimeError):  # the pool is shut down: the popup is going away
            self._pool.submit(self._check_task, seq, source, key, text)

    def _check_task(self, seq: int, source, key: BankKey, text: str) -> None:
        """Background thread: compute the feedback; the result goes back by signal (never touches a widget)."""
        try:
            if source.kind == "nanobot":
                doc = source.doc
                if doc is None:
                    with source.lock:
                        doc = source.store.load()
                check = QuickCheck(key, text, check_keep_md(source.store, text, doc))
            else:
                bank = source.bank(key.bank)  # before the bank lock: the hub takes them in this order
                with source.bank_lock(key.bank):
                    bank.ensure_loaded()
                    try:
                        existing = bank.log.get(fingerprint(clean_text(text)))
                    except KeepguiError:
                        existing = None
                    live = [(m.id, m.text) for m in bank.log.live()]
                check = QuickCheck(key, text, check_bank(text, existing, live, key.bank))
        except Exception as exc:  # shown in the popup, never lost in the thread
            check = QuickCheck(key, text, (Hint("error", f"Cannot check: {exc}"),))
        with contextlib.suppress(RuntimeError):  # the popup was deleted meanwhile
            self._checked.emit(seq, check)

    def _on_checked(self, seq: int, check: QuickCheck) -> None:
        if seq != self._seq or check.text != self.edit.text() or check.key != self.target_key():
            return  # the person typed on or switched target
        self._last = check
        self._show_hints(check.hints)

    def _show_hints(self, hints) -> None:
        while len(self.rows) < len(hints):
            row = _HintRow(self.hints_box)
            self.hints_layout.addWidget(row)
            self.rows.append(row)
        for row, hint in zip(self.rows, hints):
            row.set_hint(hint)
            row.show()
        for row in self.rows[len(hints):]:
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
        layout.invalidate()
        layout.activate()
        height = layout.totalHeightForWidth(self.width())
        self.setFixedHeight(max(height, layout.totalMinimumSize().height()))

    def hints(self) -> list[tuple[str, str]]:
        """The feedback shown now: ``(level, text)`` per line."""
        return [(r.hint.level, r.hint.text) for r in self.rows if not r.isHidden() and r.hint is not None]

    # ------------------------------------------------------------------ keeping

    def keep(self, force: bool = False, replace: bool = False) -> bool:
        """Keep the typed fact in the chosen target; True when something was written.

        ``force`` keeps it past a triage suggestion or a containing entry; ``replace``
        replaces the keep.md entries it contains (both only matter for keep.md).
        """
        key, text = self.target_key(), self.edit.text()
        if key is None or not text.strip():
            return False
        source = self.host.hub.sources.get(key.source)
        if source is None:
            self._show_hints((Hint("error", f"{key.source} is no longer open"),))
            return False
        if source.kind == "nanobot":
            result, error = keep_in_keep_md(self.host, key, text, force=force, replace=replace)
            if error is not None:
                self._show_hints((Hint("error", error),))
                return False
            if not result.written:
                hints = [Hint("warning", _sentence(result.message))]
                way = _WAYS_ON.get(result.outcome)
                if way and not (result.outcome == ALREADY_KEPT and result.entry is not None
                                and normalise(result.entry.text) == normalise(result.fact)):
                    hints.append(Hint("info", way))
                self._show_hints(tuple(hints))
                return False
            message = f"Kept: {result.fact} — keep.md of {short_path(key.source)}"
            if any(n.code == "compaction-due" for n in result.notices):
                message += f" (compaction is due: {result.counts.get('lines')} lines)"
        else:
            transition, error = save_in_bank(self.host, key, text)
            if error is not None:
                self._show_hints((Hint("error", error),))
                return False
            record = transition.record
            if transition.created:
                how = "a new memory"
            elif transition.previous is not None and transition.previous.invalid_at is not None:
                how = "brought back from the deleted memories"
            else:
                how = f"reinforced, seen {record.seen}×"
            message = f"Kept: {record.text} — bank “{key.bank}” ({how})"
        self._remember_target(key)
        self.notify(message)
        self.edit.clear()
        self._last = None
        if self.linger_ms > 0:
            self._show_hints((Hint("ok", message),))
            self.edit.setEnabled(False)
            QTimer.singleShot(self.linger_ms, self.close)
        else:
            self.close()
        return True

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

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        if watched is self.edit and event.type() == QEvent.Type.KeyPress:
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                modifiers = event.modifiers()
                self.keep(force=bool(modifiers & Qt.KeyboardModifier.ControlModifier),
                          replace=bool(modifiers & Qt.KeyboardModifier.AltModifier))
                return True
            if event.key() == Qt.Key.Key_Escape:
                self.close()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().hideEvent(event)
        self.closed.emit()

    def dispose(self, *_args) -> None:
        """Close for good: stop the feedback thread and delete the popup (its host is going away)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(RuntimeError):  # already gone with the application
            self.close()
            self.deleteLater()


_WAYS_ON = {
    REDIRECTED: "Ctrl+Enter keeps it in keep.md anyway.",
    REPLACE_OFFERED: "Alt+Enter replaces that entry; Ctrl+Enter keeps both.",
    ALREADY_KEPT: "Ctrl+Enter keeps it as a separate variant.",
}
"""What the person can do after a keep that wrote nothing (an identical entry has no way on)."""


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


_popups: dict[int, QuickKeepPopup] = {}


def popup_for(host, **kw) -> QuickKeepPopup:
    """The host's quick keep popup (made on first use)."""
    popup = _popups.get(id(host))
    if popup is None:
        popup = QuickKeepPopup(host, **kw)
        _popups[id(host)] = popup
        if isinstance(host, QObject):
            host.destroyed.connect(lambda *_a, k=id(host): _popups.pop(k, None))
    return popup


def open_quick_keep(host, text: str = "") -> QuickKeepPopup:
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

    def __init__(self, hub: Hub, settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.settings = settings
        self.undo_stack = QUndoStack(self)

    def push_to(self, key: BankKey, text: str, action) -> None:
        """Save into an iii bank (an undo step of this popup's own stack)."""
        self.undo_stack.push(MemoryCommand(self.hub, key, text, action, self.show_error))

    def push_keep_to(self, key: BankKey, text: str, action, on_result=None) -> None:
        """Keep in a keep.md (an undo step of this popup's own stack)."""
        self.undo_stack.push(KeepCommand(self.hub, key, text, action, self.show_error, on_result))

    def show_error(self, text: str) -> None:
        """A failed keep: reported by signal (the popup shows its own line)."""
        self.failed.emit(text)


def run_standalone(args) -> int:
    """``keepgui quick-keep`` with no running instance: the popup on its own, until it closes."""
    from keepgui.ui.application import initial_sources, make_app
    from keepgui.ui.settings import Settings

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
        print("keepgui: no nanobot workspace or iii data dir found; open one in the window first", file=sys.stderr)
    status = app.exec()
    popup.dispose()
    try:
        settings.save()
    except (KeepguiError, OSError) as exc:
        print(f"keepgui: settings not saved: {exc}", file=sys.stderr)
    hub.shutdown()
    return status

