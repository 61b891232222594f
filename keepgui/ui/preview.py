"""The Preview panel: exactly what the agent will be given on the next turn.

Written once for every backend: a question box (when the backend's preview
depends on the question), a Copy button for exactly what is injected, the
what-if line and its buttons, a summary, and the backend's own view of its
preview, chosen from the adapter registry (:mod:`keepgui.ui.adapters`): the
iii recall preview with its score parts and worker settings, nanobot's prompt
parts, or the injected text as it is.

It follows typing (debounced, computed off the GUI thread by the hub) and
recomputes when the bank's rows or documents change, for unsaved document
edits, pending what-if toggles and settings changes — a what-if view, labelled
as such.

Signals:
    PreviewPane.settingsChanged(str source, dict values): the settings of a source changed (remember them).
    PreviewPane.applyWhatIfRequested(dict pins, dict live): the person wants the pending toggles written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core import agents, pace
from keepgui.core.errors import KeepguiError
from keepgui.core.source import QUERY, BankKey, Change, Pending
from keepgui.ui import theme
from keepgui.ui.adapters import adapter_for
from keepgui.ui.adapters.base import PreviewView
from keepgui.ui.tasks import lane

DEBOUNCE_MS = 10
"""Short enough to follow typing, long enough to skip the keystrokes of a fast typist."""


_SUGGESTIONS = lane("suggest")


def suggestions_for(records: Any) -> list[str]:
    """The preview's suggested questions for these rows: their two commonest tags, two entities."""
    counts: Counter[str] = Counter()
    rows = records if isinstance(records, list) else list(records)
    for lo in range(0, len(rows), 4096):
        counts.update(t for m in rows[lo : lo + 4096] if m.invalid_at is None for t in set(m.tags))
        pace.checkpoint()  # off the GUI thread: give way to it between slices
    tags = sorted(counts, key=lambda t: (-counts[t], t))
    entities: list[str] = []
    for m in rows:
        for e in m.entities:
            if e != "user" and e not in entities:
                entities.append(e)
        if len(entities) >= 2:
            break
    suggestions = [f"what do we know about {t}?" for t in tags[:2]]
    suggestions += [f"tell me about {e}" for e in entities[:2]]
    suggestions.append("who is the user?")
    return suggestions


class PreviewPane(QWidget):
    """Follows the shown bank; see the module docstring."""

    settingsChanged = Signal(str, dict)
    applyWhatIfRequested = Signal(dict, dict)

    def __init__(
        self, hub: Any, parent: QWidget | None = None, settings_for: Callable[[str], dict[str, Any]] | None = None
    ) -> None:
        super().__init__(parent)
        self.hub = hub
        self.settings_for = settings_for or (lambda _source: {})
        self.key: BankKey | None = None
        self.drafts: dict[str, str | None] = {}
        self.pending_pins: dict[str, bool] = {}
        self.pending_live: dict[str, bool] = {}
        self._token = 0
        self._shown_token = 0
        self.last_result: Any = None
        self.now_ms: int | None = None  # a fixed "now" makes the preview reproducible (tests, comparisons)
        self._views: dict[str, PreviewView] = {}

        self.query = QComboBox(self)
        self.query.setEditable(True)
        self.query.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        line = self.query.lineEdit()
        if line is not None:  # an editable combo box has its line edit
            line.setPlaceholderText("ask like a chat user would — e.g. when do I publish?")
            line.setClearButtonEnabled(True)
        self.query.setAccessibleName("Question to preview")
        self.copy_button = QToolButton(self)
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy exactly what would be injected")
        self.copy_button.setAccessibleName("Copy injected text")
        self.copy_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.copy_menu = QMenu(self.copy_button)
        self.copy_button.setMenu(self.copy_menu)
        self.whatif_label = QLabel(self)
        self.whatif_label.setWordWrap(True)
        self.apply_whatif = QPushButton("Apply pending toggles", self)
        self.discard_whatif = QPushButton("Discard", self)
        self.apply_whatif.clicked.connect(self._apply_pending)
        self.discard_whatif.clicked.connect(self.discard_pending)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.stack = QStackedWidget(self)
        self.view: PreviewView = self._view_for("")

        top = QHBoxLayout()
        top.addWidget(self.query, 1)
        top.addWidget(self.copy_button)
        whatif = QHBoxLayout()
        whatif.addWidget(self.whatif_label, 1)
        whatif.addWidget(self.apply_whatif)
        whatif.addWidget(self.discard_whatif)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(whatif)
        layout.addWidget(self.summary)
        self.secrets_line = QLabel(self)  # "this secret is sent to the model at the start of every session"
        self.secrets_line.setWordWrap(True)
        self.secrets_line.setVisible(False)
        layout.addWidget(self.secrets_line)
        layout.addWidget(self.stack, 1)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.recompute)
        self.query.editTextChanged.connect(lambda _: self._debounce.start())
        self.query.activated.connect(lambda _: self.recompute())
        hub.changed.connect(self._on_change)
        self._show_view(self.view)
        self._update_whatif_label()

    # ------------------------------------------------------------------ the backend's view

    def _view_for(self, kind: str) -> PreviewView:
        view = self._views.get(kind)
        if view is None:
            view = self._views[kind] = adapter_for(kind).preview_view(self)
            view.settingsChanged.connect(self._on_settings)
            self.stack.addWidget(view)
        return view

    def _show_view(self, view: PreviewView) -> None:
        self.view = view
        self.stack.setCurrentWidget(view)
        self.copy_menu.clear()
        for label, what in view.copy_choices:
            self.copy_menu.addAction(label, partial(self._copy, what))

    def _on_settings(self, values: dict[str, Any]) -> None:
        if self.key is not None and self.sender() is self.view:
            self.settingsChanged.emit(self.key.source, values)
            self._debounce.start()

    def _on_change(self, change: Change) -> None:
        if self.key is None or change.key != self.key or not (change.rows or change.documents):
            return
        if change.rows.complete:
            self._suggest()  # the bank has (re)loaded: its tags and entities are known now
        self._debounce.start()

    # ------------------------------------------------------------------ inputs

    def set_bank(self, key: BankKey | None) -> None:
        """Follow the shown bank."""
        self.key = key
        self.drafts = {}
        self.discard_pending()
        kind = self.hub.backend(key.source).kind if key is not None else ""
        self._show_view(self._view_for(kind))
        if key is not None:
            self.view.show_settings(self.settings_for(key.source))
        asks = key is not None and self.hub.capabilities(key).can(QUERY)
        self.query.setEnabled(asks)
        self._suggest()
        self.recompute()

    def show_secrets(self, sentence: str) -> None:
        """Say which secrets the agent is given here ("" hides the line)."""
        self.secrets_line.setText(sentence)
        self.secrets_line.setStyleSheet(f"color: {theme.strong('warning').name()}")
        self.secrets_line.setVisible(bool(sentence))

    def set_query(self, text: str) -> None:
        """Preview this question (the window's ``--query``)."""
        self.query.setEditText(text)
        self.recompute()

    def set_drafts(self, key: BankKey, drafts: dict[str, str | None]) -> None:
        """Unsaved document texts of the editor (what-if)."""
        if key == self.key and drafts != self.drafts:
            self.drafts = dict(drafts)
            self._update_whatif_label()
            self._debounce.start()

    def add_pending(self, key: str, pinned: bool | None = None, live: bool | None = None) -> None:
        """A what-if toggle that is not written: "what if this were pinned / deleted?"."""
        if pinned is not None:
            self.pending_pins[key] = pinned
        if live is not None:
            self.pending_live[key] = live
        self._update_whatif_label()
        self._debounce.start()

    def discard_pending(self) -> None:
        """Forget the what-if toggles."""
        self.pending_pins, self.pending_live = {}, {}
        self._update_whatif_label()
        self._debounce.start()

    def _apply_pending(self) -> None:
        pins, live = dict(self.pending_pins), dict(self.pending_live)
        self.discard_pending()
        self.applyWhatIfRequested.emit(pins, live)

    def whatif(self) -> Pending:
        """The unsaved changes the preview shows as if saved."""
        return Pending(drafts=dict(self.drafts), pins=dict(self.pending_pins), live=dict(self.pending_live))

    def _update_whatif_label(self) -> None:
        parts = []
        if self.drafts:
            parts.append(f"unsaved edits to {', '.join(self.drafts)}")
        if self.pending_pins:
            parts.append(f"{len(self.pending_pins)} pin change(s)")
        if self.pending_live:
            parts.append(f"{len(self.pending_live)} delete/restore change(s)")
        pending = bool(self.pending_pins or self.pending_live)
        self.apply_whatif.setVisible(pending)
        self.discard_whatif.setVisible(pending)
        if parts:
            self.whatif_label.setText(
                "<b>What-if view</b> — includes " + "; ".join(parts) + ". Nothing has been written."
            )
            self.whatif_label.setStyleSheet(f"background: {theme.tint('warning').name()}; padding: 4px")
        else:
            self.whatif_label.setText("")
            self.whatif_label.setStyleSheet("")
        self.whatif_label.setVisible(bool(parts))

    def _suggest(self) -> None:
        """Questions from the bank's tags and entities (as the iii worker's console offers them),
        found off the GUI thread: a big bank has a million rows to count."""
        key = self.key
        if key is None or not self.hub.capabilities(key).can(QUERY):
            self._show_suggestions(key, [])
            return
        hub = self.hub

        def work() -> list[str]:
            try:
                return suggestions_for(hub.rows(key))  # the rows as loaded: never starts a load
            except (KeepguiError, OSError, KeyError):
                return ["who is the user?"]

        _SUGGESTIONS.run(
            work,
            lambda found: self._show_suggestions(key, found),
            lambda _error: self._show_suggestions(key, []),
            owner=self,
            newest=self,
        )

    def _show_suggestions(self, key: BankKey | None, suggestions: list[str]) -> None:
        if key != self.key:
            return
        current = self.query.currentText()
        self.query.blockSignals(True)
        self.query.clear()
        for text in dict.fromkeys(suggestions):
            self.query.addItem(text)
        self.query.setEditText(current)
        self.query.blockSignals(False)

    # ------------------------------------------------------------------ computing

    def recompute(self) -> None:
        """Ask for a fresh preview (answered off the GUI thread, on the hub's lane of questions)."""
        if self.key is None:
            self._clear("Select a bank to see what its next turn would be given.")
            return
        self._token += 1
        if not self.hub.is_loaded(self.key):
            self._clear("Loading the bank…")
            return
        key, token, kind = self.key, self._token, self.hub.source(self.key.source).kind
        query, pending, now_ms = self.query.currentText(), self.whatif(), self.now_ms
        self.hub.ask(
            key,
            lambda bank: agents.beside(kind, bank.preview(query, pending, now_ms)),  # the agent's version read too
            lambda result: self._on_ready(key, token, result),
            typing="preview",
            owner=self,
        )

    def _on_ready(self, key: BankKey, token: int, result: Any) -> None:
        if key != self.key or token < self._shown_token:
            return
        self._shown_token = token
        self.last_result = result
        if isinstance(result, Exception):
            self._clear(f"No preview: {result}")
            return
        said = agents.said(self.hub.source(key.source).kind, run=False)  # #23.13: from the cache, never a process
        self.summary.setText(self.view.summary(result) + (f"\n⚠ {said}" if said else ""))
        self.view.show_result(result)

    def _clear(self, text: str) -> None:
        self.summary.setText(text)
        self.view.clear()

    # ------------------------------------------------------------------ output

    def injected_text(self, what: str = "both") -> str:
        """Exactly what would be injected, in one of the view's forms (``copy_choices``)."""
        result = self.last_result
        if result is None or isinstance(result, Exception):
            return ""
        return self.view.injected_text(result, what)

    def _copy(self, what: str) -> None:
        QGuiApplication.clipboard().setText(self.injected_text(what))
