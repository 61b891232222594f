"""The Preview panel: exactly what the agent will be given on the next turn.

For an iii bank it shows ``memory::preview`` as the worker would answer it:
the system-prompt section (truncation markers highlighted), the recalled
memories in injection order with score bars (each score's parts in a tooltip,
"ambient" for floor additions), how many were cut by the token budget, the
exact ``<memory>`` message, and a budget meter. It follows typing (debounced,
computed off the GUI thread) and recomputes for unsaved rule edits, pending
what-if toggles and settings changes — a what-if view, labelled as such.

For a nanobot workspace it shows nanobot's prompt preview: each part with its
size and token estimate, keep.md as its own part, and what could not be
reproduced without the nanobot package.

Signals:
    PreviewPane.settingsChanged(str data_dir, object config): the worker settings of a data dir changed.
    PreviewPane.applyWhatIfRequested(dict pins, dict live): the person wants the pending toggles written.
"""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QPainter, QTextCharFormat
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QListWidget,
    QListWidgetItem, QMenu, QPlainTextEdit, QProgressBar, QPushButton, QSpinBox, QSplitter, QStyle, QStyledItemDelegate,
    QToolButton, QVBoxLayout, QWidget,
)

from keepgui.core.errors import KeepguiError
from keepgui.core.iii.config import MemoryConfig
from keepgui.core.iii.preview import BYTES_PER_TOKEN, WhatIf
from keepgui.core.iii.textrules import byte_len
from keepgui.ui import theme
from keepgui.ui.highlighting import PaletteHighlighter

HitRole = Qt.ItemDataRole.UserRole + 60
TopScoreRole = Qt.ItemDataRole.UserRole + 61
DEBOUNCE_MS = 10
"""Short enough to follow typing, long enough to skip the keystrokes of a fast typist."""

SETTING_FIELDS = (("recall_limit", "Recall limit", 0, 100), ("recall_budget_tokens", "Recall budget (tokens)", 0, 1_000_000),
                  ("max_rule_chars", "Rule budget (bytes)", 0, 10_000_000),
                  ("decay_half_life_days", "Recency half-life (days)", 0, 100_000))


class SectionHighlighter(PaletteHighlighter):
    """Marks the rule headings and, in warning colours, the truncation and omission markers."""

    def set_formats(self) -> None:
        """Formats from the current palette."""
        self.warn = QTextCharFormat()
        self.warn.setBackground(theme.tint("warning"))
        self.warn.setForeground(theme.strong("warning"))
        self.heading = QTextCharFormat()
        self.heading.setForeground(theme.accent())

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if text.startswith("[rule truncated:") or (text.startswith("## ") and text.endswith("[omitted: over the injection budget]")):
            self.setFormat(0, len(text), self.warn)
        elif text.startswith("## ") or text.startswith("# Memory"):
            self.setFormat(0, len(text), self.heading)


class HitDelegate(QStyledItemDelegate):
    """A recalled memory: a score bar (relative to the top score), the score or "ambient", the text."""

    def sizeHint(self, option, index) -> QSize:  # noqa: N802 - Qt override
        base = super().sizeHint(option, index)
        return QSize(base.width(), max(base.height(), option.fontMetrics.height() + 10))

    def paint(self, painter: QPainter, option, index) -> None:
        hit = index.data(HitRole)
        if hit is None:
            super().paint(painter, option, index)
            return
        painter.save()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        if selected:
            painter.fillRect(option.rect, option.palette.highlight())
        top = index.data(TopScoreRole) or 1.0
        rect = option.rect.adjusted(6, 4, -6, -4)
        bar_w = 4 + 60 * (hit.score / top if top > 0 and not hit.ambient else 0)
        bar = QRectF(rect.left(), rect.center().y() - 4, bar_w, 8)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(theme.accent() if not hit.ambient else theme.muted_text())
        painter.drawRoundedRect(bar, 2, 2)
        fm = option.fontMetrics
        score_text = "ambient" if hit.ambient else f"{hit.score:.2f}"
        painter.setPen(theme.muted_text())
        score_rect = rect.adjusted(70, 0, 0, 0)
        painter.drawText(score_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, score_text)
        x = 70 + fm.horizontalAdvance("ambient") + 12
        if hit.memory.pinned:
            painter.setPen(theme.accent())
            painter.drawText(rect.adjusted(x, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter, "pinned")
            x += fm.horizontalAdvance("pinned") + 10
        painter.setPen(option.palette.highlightedText().color() if selected else option.palette.text().color())
        text_rect = rect.adjusted(x, 0, 0, 0)
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter,
                         fm.elidedText(hit.memory.text.replace("\n", " ⏎ "), Qt.TextElideMode.ElideRight,
                                       text_rect.width()))
        painter.restore()


def _plain_view(name: str, parent) -> QPlainTextEdit:
    view = QPlainTextEdit(parent)
    view.setReadOnly(True)
    view.setAccessibleName(name)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return view


class PreviewPane(QWidget):
    """Follows the shown bank; see the module docstring."""

    settingsChanged = Signal(str, object)
    applyWhatIfRequested = Signal(dict, dict)

    def __init__(self, hub, parent=None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.key = None
        self.config = MemoryConfig()
        self.drafts: dict[str, str | None] = {}
        self.pending_pins: dict[str, bool] = {}
        self.pending_live: dict[str, bool] = {}
        self._token = 0
        self._shown_token = 0
        self.last_result = None
        self.now_ms: int | None = None  # a fixed "now" makes the preview reproducible (tests, comparisons)

        self.query = QComboBox(self)
        self.query.setEditable(True)
        self.query.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.query.lineEdit().setPlaceholderText("ask like a chat user would — e.g. when do I publish?")
        self.query.lineEdit().setClearButtonEnabled(True)
        self.query.setAccessibleName("Question to preview")
        self.copy_button = QToolButton(self)
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy exactly what would be injected")
        self.copy_button.setAccessibleName("Copy injected text")
        self.copy_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        copy_menu = QMenu(self.copy_button)
        copy_menu.addAction("System-prompt section", lambda: self._copy("section"))
        copy_menu.addAction("Memory message", lambda: self._copy("message"))
        copy_menu.addAction("Both (section, then message)", lambda: self._copy("both"))
        self.copy_button.setMenu(copy_menu)
        self.whatif_label = QLabel(self)
        self.whatif_label.setWordWrap(True)
        self.apply_whatif = QPushButton("Apply pending toggles", self)
        self.discard_whatif = QPushButton("Discard", self)
        self.apply_whatif.clicked.connect(self._apply_pending)
        self.discard_whatif.clicked.connect(self.discard_pending)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.section = _plain_view("System-prompt section", self)
        self.section_highlighter = SectionHighlighter(self.section)
        self.hits = QListWidget(self)
        self.hits.setAccessibleName("Recalled memories in injection order")
        self.hits.setItemDelegate(HitDelegate(self.hits))
        self.hits.setMouseTracking(True)
        self.cut_label = QLabel(self)
        self.message = _plain_view("Memory message", self)
        self.budget = QProgressBar(self)
        self.budget.setAccessibleName("Memory token budget")
        self.budget.setTextVisible(True)
        self.settings_box = self._build_settings()

        top = QHBoxLayout()
        top.addWidget(self.query, 1)
        top.addWidget(self.copy_button)
        whatif = QHBoxLayout()
        whatif.addWidget(self.whatif_label, 1)
        whatif.addWidget(self.apply_whatif)
        whatif.addWidget(self.discard_whatif)
        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(QLabel("<b>System prompt gets</b> (every turn, guaranteed)", left))
        left_layout.addWidget(self.section, 1)
        right = QWidget(self)
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(QLabel("<b>Appended to the turn</b>", right))
        right_layout.addWidget(self.hits, 1)
        right_layout.addWidget(self.cut_label)
        right_layout.addWidget(self.budget)
        right_layout.addWidget(QLabel("Message exactly as sent:", right))
        right_layout.addWidget(self.message, 1)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([520, 520])
        self.split = split
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(whatif)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addWidget(self.settings_box)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.recompute)
        self.query.editTextChanged.connect(lambda _: self._debounce.start())
        self.query.activated.connect(lambda _: self.recompute())
        hub.previewReady.connect(self._on_ready)
        hub.bankRows.connect(self._on_rows)
        hub.rulesChanged.connect(lambda key: self._debounce.start() if key == self.key else None)
        hub.documentsChanged.connect(lambda src, names: self._debounce.start()
                                     if self.key is not None and self.key.source == src else None)
        self._update_whatif_label()

    def _on_rows(self, key, rows, final: bool) -> None:
        if key != self.key:
            return
        if final:
            self._suggest()  # the bank has (re)loaded: its tags and entities are known now
        self._debounce.start()

    # ------------------------------------------------------------------ settings

    def _build_settings(self) -> QWidget:
        box = QWidget(self)
        toggle = QToolButton(box)
        toggle.setText("Worker settings for this data dir (the preview uses them)")
        toggle.setCheckable(True)
        toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toggle.setArrowType(Qt.ArrowType.RightArrow)
        toggle.setAutoRaise(True)
        toggle.setAccessibleName("Show worker settings")
        form = QFormLayout()
        self.spins: dict[str, QSpinBox] = {}
        for field, label, low, high in SETTING_FIELDS:
            spin = QSpinBox(box)
            spin.setRange(low, high)
            spin.setAccessibleName(label)
            spin.valueChanged.connect(self._on_setting)
            self.spins[field] = spin
            form.addRow(label, spin)
        self.inject_rules = QCheckBox("Inject rules", box)
        self.inject_memories = QCheckBox("Inject memories", box)
        for check in (self.inject_rules, self.inject_memories):
            check.toggled.connect(self._on_setting)
            form.addRow("", check)
        buttons = QHBoxLayout()
        defaults = QPushButton("Worker defaults", box)
        defaults.clicked.connect(lambda: self.set_config(MemoryConfig(), emit=True))
        load = QPushButton("Import worker config JSON…", box)
        load.clicked.connect(self._import_config)
        buttons.addWidget(defaults)
        buttons.addWidget(load)
        buttons.addStretch(1)
        inner = QWidget(box)
        inner_layout = QVBoxLayout(inner)
        inner_layout.setContentsMargins(16, 0, 0, 0)
        inner_layout.addLayout(form)
        inner_layout.addLayout(buttons)
        self._settings_error = QLabel(inner)
        inner_layout.addWidget(self._settings_error)
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(toggle)
        layout.addWidget(inner)

        def show(on: bool) -> None:
            inner.setVisible(on)
            toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

        toggle.toggled.connect(show)
        inner.setVisible(False)
        self.settings_toggle = toggle
        return box

    def set_config(self, config: MemoryConfig, emit: bool = False) -> None:
        """Show these settings (and use them for the preview)."""
        self.config = config
        for field, spin in self.spins.items():
            spin.blockSignals(True)
            spin.setValue(getattr(config, field))
            spin.blockSignals(False)
        for check, field in ((self.inject_rules, "inject_rules"), (self.inject_memories, "inject_memories")):
            check.blockSignals(True)
            check.setChecked(getattr(config, field))
            check.blockSignals(False)
        if emit and self.key is not None:
            self.settingsChanged.emit(self.key.source, config)
        self._debounce.start()

    def _on_setting(self, *_args) -> None:
        values = {field: spin.value() for field, spin in self.spins.items()}
        values["inject_rules"] = self.inject_rules.isChecked()
        values["inject_memories"] = self.inject_memories.isChecked()
        self.set_config(self.config.replace(**values), emit=True)

    def _import_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import the memory worker's config", "", "JSON (*.json)")
        if not path:
            return
        try:
            self.set_config(MemoryConfig.load(path), emit=True)
            self._settings_error.setText("")
        except KeepguiError as exc:
            self._settings_error.setText(str(exc))

    # ------------------------------------------------------------------ inputs

    def set_bank(self, key) -> None:
        """Follow the shown bank."""
        self.key = key
        self.drafts = {}
        self.discard_pending()
        source = self.hub.sources.get(key.source) if key is not None else None
        nanobot = source is not None and source.kind == "nanobot"
        self.query.setEnabled(not nanobot)
        self.settings_box.setVisible(not nanobot)
        self.hits.setVisible(not nanobot)
        self.message.setVisible(not nanobot)
        self.budget.setVisible(not nanobot)
        self.cut_label.setVisible(not nanobot)
        self._suggest()
        self.recompute()

    def set_query(self, text: str) -> None:
        """Preview this question (the window's ``--query``)."""
        self.query.setEditText(text)
        self.recompute()

    def set_drafts(self, key, drafts: dict) -> None:
        """Unsaved rule texts of the rule editor (what-if)."""
        if key == self.key and drafts != self.drafts:
            self.drafts = dict(drafts)
            self._update_whatif_label()
            self._debounce.start()

    def add_pending(self, memory_id: str, pinned: bool | None = None, live: bool | None = None) -> None:
        """A what-if toggle that is not written: "what if this were pinned / deleted?"."""
        if pinned is not None:
            self.pending_pins[memory_id] = pinned
        if live is not None:
            self.pending_live[memory_id] = live
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

    def whatif(self) -> WhatIf:
        """The unsaved changes the preview shows as if saved."""
        return WhatIf(rules=dict(self.drafts), pins=dict(self.pending_pins), live=dict(self.pending_live),
                      config=self.config)

    def _update_whatif_label(self) -> None:
        parts = []
        if self.drafts:
            parts.append(f"unsaved edits to {', '.join(n + '.md' for n in self.drafts)}")
        if self.pending_pins:
            parts.append(f"{len(self.pending_pins)} pin change(s)")
        if self.pending_live:
            parts.append(f"{len(self.pending_live)} delete/restore change(s)")
        pending = bool(self.pending_pins or self.pending_live)
        self.apply_whatif.setVisible(pending)
        self.discard_whatif.setVisible(pending)
        if parts:
            self.whatif_label.setText("<b>What-if view</b> — includes " + "; ".join(parts) +
                                      ". Nothing has been written.")
            self.whatif_label.setStyleSheet(f"background: {theme.tint('warning').name()}; padding: 4px")
        else:
            self.whatif_label.setText("")
            self.whatif_label.setStyleSheet("")
        self.whatif_label.setVisible(bool(parts))

    def _suggest(self) -> None:
        """Suggestions from the bank's tags and entities (as the worker's console offers them)."""
        current = self.query.currentText()
        self.query.blockSignals(True)
        self.query.clear()
        suggestions: list[str] = []
        source = self.hub.sources.get(self.key.source) if self.key is not None else None
        if source is not None and source.kind == "iii":
            try:
                bank = source.bank(self.key.bank)
                records = []
                if self.key.bank in source.loaded:  # never start a load from here
                    with source.bank_lock(self.key.bank):
                        records = list(bank.log.records.values())
                counts = Counter(t for m in records if m.invalid_at is None for t in set(m.tags))
                tags = sorted(counts, key=lambda t: (-counts[t], t))
                entities: list[str] = []
                for m in records:
                    for e in m.entities:
                        if e != "user" and e not in entities:
                            entities.append(e)
                    if len(entities) >= 2:
                        break
                suggestions += [f"what do we know about {t}?" for t in tags[:2]]
                suggestions += [f"tell me about {e}" for e in entities[:2]]
                suggestions.append("who is the user?")
            except (KeepguiError, OSError):
                suggestions = ["who is the user?"]
        for text in dict.fromkeys(suggestions):
            self.query.addItem(text)
        self.query.setEditText(current)
        self.query.blockSignals(False)

    # ------------------------------------------------------------------ computing

    def recompute(self) -> None:
        """Ask for a fresh preview (answered by the hub on its preview thread)."""
        if self.key is None:
            self._clear("Select a bank to see what its next turn would be given.")
            return
        self._token += 1
        source = self.hub.sources.get(self.key.source)
        if source is not None and source.kind == "iii" and self.key.bank not in source.loaded:
            self._clear("Loading the bank…")
            return
        self.hub.request_preview(self.key, self.query.currentText(), self._token, self.whatif(), self.now_ms)

    def _on_ready(self, key, token: int, result) -> None:
        if key != self.key or token < self._shown_token:
            return
        self._shown_token = token
        self.last_result = result
        if isinstance(result, Exception):
            self._clear(f"No preview: {result}")
            return
        if hasattr(result, "parts"):
            self._show_nanobot(result)
        else:
            self._show_iii(result)

    def _clear(self, text: str) -> None:
        self.summary.setText(text)
        self.section.setPlainText("")
        self.hits.clear()
        self.message.setPlainText("")
        self.cut_label.setText("")

    def _show_iii(self, preview) -> None:
        rules = f"{preview.rules} rule{'s' if preview.rules != 1 else ''}"
        over = " · over budget, truncated" if preview.rules_truncated else ""
        injected = "" if preview.config.inject_rules else " · rules NOT injected (inject_rules is off)"
        notice = preview.notice
        lexical = (f"\n{'⚠ ' if notice.worker_may_rank_differently else ''}Lexical only: {notice.why()}"
                   if notice is not None else "")
        budget = f"\nBudget: {preview.budget_note}" if preview.budget_note else ""
        self.summary.setText(
            f"System prompt gets: {rules}{over}{injected} · retrieval: {preview.retrieval} · query tokens: "
            f"{' '.join(preview.query_tokens) or '—'}{lexical}{budget}")
        self.section.setPlainText(preview.system_prompt_section)
        self.hits.clear()
        top = max((h.score for h in preview.memories if not h.ambient), default=0.0)
        for hit in preview.memories:
            item = QListWidgetItem(hit.memory.text)
            item.setData(HitRole, hit)
            item.setData(TopScoreRole, top)
            tip = "ambient: did not match the question, but strong enough that every turn gets it" \
                if hit.ambient else hit.parts.explain()
            item.setToolTip(f"{hit.memory.text}\n\n{tip}")
            item.setData(Qt.ItemDataRole.AccessibleTextRole,
                         f"{'ambient' if hit.ambient else f'score {hit.score:.2f}'}: {hit.memory.text}")
            self.hits.addItem(item)
        cut = len(preview.candidates) - len(preview.memories)
        budget = preview.config.recall_budget_tokens * BYTES_PER_TOKEN
        used = sum(byte_len(h.memory.text) for h in preview.memories)
        self.cut_label.setText(
            f"{len(preview.memories)} appended, in order" + (f" · {cut} more cut by the token budget" if cut else "")
            + ("" if preview.config.inject_memories else " · NOT sent: inject_memories is off"))
        self.budget.setRange(0, max(1, budget))
        self.budget.setValue(min(used, budget))
        self.budget.setFormat(f"{used:,} of {budget:,} bytes ({preview.config.recall_budget_tokens:,} tokens × 4)")
        self.message.setPlainText(preview.message or "(no message: nothing would be appended)")

    def _show_nanobot(self, preview) -> None:
        lines = []
        for part in preview.parts:
            state = "injected" if part.injected else "not injected"
            lines.append(f"── {part.label} · {state} · {part.size_bytes:,} bytes · ~{part.tokens:,} tokens"
                         + (f" · {part.status}" if part.status else ""))
            lines.append(part.text.rstrip("\n"))
            lines.append("")
        self.section.setPlainText("\n".join(lines))
        notes = list(preview.notes) + [f"not reproduced: {n}" for n in preview.not_reproduced]
        mode = f"exact (nanobot {preview.nanobot_version})" if preview.nanobot_version else "built-in rendering"
        self.summary.setText(f"nanobot system prompt, memory-bearing parts · {mode} · "
                             f"{preview.injected_bytes:,} bytes ≈ {preview.injected_tokens:,} tokens injected\n"
                             + "\n".join(notes))

    # ------------------------------------------------------------------ output

    def injected_text(self, what: str = "both") -> str:
        """Exactly what would be injected: the section, the message, or both."""
        result = self.last_result
        if result is None or isinstance(result, Exception):
            return ""
        if hasattr(result, "parts"):
            return result.memory_prompt
        section = result.system_prompt_section
        message = result.message or ""
        return {"section": section, "message": message}.get(what, section + ("\n\n" + message if message else ""))

    def _copy(self, what: str) -> None:
        QGuiApplication.clipboard().setText(self.injected_text(what))

