"""The iii preview: ``memory::preview`` as the worker would answer it, and the worker settings it uses.

The system-prompt section (truncation markers highlighted), the recalled
memories in injection order with score bars (each score's parts in a tooltip,
"ambient" for floor additions), how many the token budget cut, the exact
``<memory>`` message and the budget bar; below, the worker settings of the data
dir (recall limit, budgets, half-life, inject switches), remembered per data dir.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QTextCharFormat
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BYTES_PER_TOKEN
from keepgui.backends.iii.textrules import byte_len
from keepgui.core.errors import KeepguiError
from keepgui.ui import theme
from keepgui.ui.adapters.base import Adapter, PreviewView, plain_view
from keepgui.ui.highlighting import PaletteHighlighter

HitRole = Qt.ItemDataRole.UserRole + 60
TopScoreRole = Qt.ItemDataRole.UserRole + 61

SETTING_FIELDS = (
    ("recall_limit", "Recall limit", 0, 100),
    ("recall_budget_tokens", "Recall budget (tokens)", 0, 1_000_000),
    ("max_rule_chars", "Rule budget (bytes)", 0, 10_000_000),
    ("decay_half_life_days", "Recency half-life (days)", 0, 100_000),
)


def ranking_line(notice: Any) -> str:
    """How this preview ranked the memories, in a line a newcomer reads: by words only (keepgui
    cannot compute the embeddings), and whether the worker's own ranking can differ."""
    if not notice.embeddings_enabled:
        return "Ranked by words, as the worker ranks them too (its embeddings are switched off)."
    if not notice.current_vectors:
        return (
            "Ranked by words. The worker can also rank by meaning (embeddings), but this bank has no "
            "stored vectors yet, so it picks the same memories."
        )
    return (
        "⚠ Ranked by words only. The worker also ranks by meaning (embeddings), which keepgui cannot "
        "compute here: its memories and their order may differ."
    )


class SectionHighlighter(PaletteHighlighter):
    """Marks the rule headings and, in warning colours, the truncation and omission markers."""

    def set_formats(self) -> None:
        """Formats from the current palette."""
        self.warn = QTextCharFormat()
        self.warn.setBackground(theme.tint("warning"))
        self.warn.setForeground(theme.strong("warning"))
        self.heading = QTextCharFormat()
        self.heading.setForeground(theme.accent_text())  # the highlight itself is dark blue in dark palettes

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if text.startswith("[rule truncated:") or (
            text.startswith("## ") and text.endswith("[omitted: over the injection budget]")
        ):
            self.setFormat(0, len(text), self.warn)
        elif text.startswith(("## ", "# Memory")):
            self.setFormat(0, len(text), self.heading)


class HitDelegate(QStyledItemDelegate):
    """A recalled memory: a score bar (relative to the top score), the score or "ambient", the text."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802 - Qt override
        base = super().sizeHint(option, index)
        return QSize(base.width(), max(base.height(), option.fontMetrics.height() + 10))

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
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
            painter.setPen(theme.accent_text())
            painter.drawText(rect.adjusted(x, 0, 0, 0), Qt.AlignmentFlag.AlignVCenter, "pinned")
            x += fm.horizontalAdvance("pinned") + 10
        painter.setPen(option.palette.highlightedText().color() if selected else option.palette.text().color())
        text_rect = rect.adjusted(x, 0, 0, 0)
        painter.drawText(
            text_rect,
            Qt.AlignmentFlag.AlignVCenter,
            fm.elidedText(hit.memory.text.replace("\n", " ⏎ "), Qt.TextElideMode.ElideRight, text_rect.width()),
        )
        painter.restore()


class IiiPreviewView(PreviewView):
    """``memory::preview`` of a bank, and the data dir's worker settings (see the module docstring)."""

    copy_choices = (
        ("System-prompt section", "section"),
        ("Memory message", "message"),
        ("Both (section, then message)", "both"),
    )

    def build(self) -> None:
        """The section, the hits, the message, the budget and the settings."""
        self.config = MemoryConfig()
        self.section = plain_view("System-prompt section", self)
        self.section_highlighter = SectionHighlighter(self.section)
        self.hits = QListWidget(self)
        self.hits.setAccessibleName("Recalled memories in injection order")
        self.hits.setItemDelegate(HitDelegate(self.hits))
        self.hits.setMouseTracking(True)
        self.cut_label = QLabel(self)
        self.message = plain_view("Memory message", self)
        self.budget = QProgressBar(self)
        self.budget.setAccessibleName("Memory token budget")
        self.budget.setTextVisible(True)
        self.settings_box = self._build_settings()

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
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split, 1)
        layout.addWidget(self.settings_box)

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
        return box

    def show_settings(self, values: dict[str, Any]) -> None:
        """The data dir's remembered settings (the worker's defaults for the rest)."""
        try:
            config = MemoryConfig.from_mapping(values)
        except KeepguiError:
            config = MemoryConfig()
        self.set_config(config)

    def set_config(self, config: MemoryConfig, emit: bool = False) -> None:
        """Show these settings; with ``emit``, they become the data dir's (remembered, used by the preview)."""
        self.config = config
        for field, spin in self.spins.items():
            spin.blockSignals(True)
            spin.setValue(getattr(config, field))
            spin.blockSignals(False)
        for check, field in ((self.inject_rules, "inject_rules"), (self.inject_memories, "inject_memories")):
            check.blockSignals(True)
            check.setChecked(getattr(config, field))
            check.blockSignals(False)
        if emit:
            defaults = MemoryConfig()
            self.settingsChanged.emit(
                {f: getattr(config, f) for f in MemoryConfig.PREVIEW_KEYS if getattr(config, f) != getattr(defaults, f)}
            )

    def _on_setting(self, *_args: Any) -> None:
        values: dict[str, Any] = {field: spin.value() for field, spin in self.spins.items()}
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

    # ------------------------------------------------------------------ showing

    def clear(self) -> None:
        """Nothing to show."""
        self.section.setPlainText("")
        self.hits.clear()
        self.message.setPlainText("")
        self.cut_label.setText("")

    def summary(self, preview: Any) -> str:
        """Rules, truncation, retrieval mode, the query's tokens, and why the ranking is lexical only."""
        rules = f"{preview.rules} rule{'s' if preview.rules != 1 else ''}"
        over = " · over budget, truncated" if preview.rules_truncated else ""
        injected = "" if preview.config.inject_rules else " · rules NOT injected (inject_rules is off)"
        notice = preview.notice
        lexical = f"\n{ranking_line(notice)}" if notice is not None else ""
        budget = f"\nBudget: {preview.budget_note}" if preview.budget_note else ""
        return (
            f"System prompt gets: {rules}{over}{injected} · retrieval: {preview.retrieval} · query tokens: "
            f"{' '.join(preview.query_tokens) or '—'}{lexical}{budget}"
        )

    def show_result(self, preview: Any) -> None:
        """The section, the hits with their scores, what the budget cut, the message."""
        self.section.setPlainText(preview.system_prompt_section)
        self.hits.clear()
        top = max((h.score for h in preview.memories if not h.ambient), default=0.0)
        for hit in preview.memories:
            item = QListWidgetItem(hit.memory.text)
            item.setData(HitRole, hit)
            item.setData(TopScoreRole, top)
            tip = (
                "ambient: did not match the question, but strong enough that every turn gets it"
                if hit.ambient
                else hit.parts.explain()
            )
            item.setToolTip(f"{hit.memory.text}\n\n{tip}")
            item.setData(
                Qt.ItemDataRole.AccessibleTextRole,
                f"{'ambient' if hit.ambient else f'score {hit.score:.2f}'}: {hit.memory.text}",
            )
            self.hits.addItem(item)
        cut = len(preview.candidates) - len(preview.memories)
        budget = preview.config.recall_budget_tokens * BYTES_PER_TOKEN
        used = sum(byte_len(h.memory.text) for h in preview.memories)
        self.cut_label.setText(
            f"{len(preview.memories)} appended, in order"
            + (f" · {cut} more cut by the token budget" if cut else "")
            + ("" if preview.config.inject_memories else " · NOT sent: inject_memories is off")
        )
        self.budget.setRange(0, max(1, budget))
        self.budget.setValue(min(used, budget))
        self.budget.setFormat(f"{used:,} of {budget:,} bytes ({preview.config.recall_budget_tokens:,} tokens × 4)")
        self.message.setPlainText(preview.message or "(no message: nothing would be appended)")

    def injected_text(self, preview: Any, what: str) -> str:
        """The system-prompt section, the memory message, or both."""
        section: str = preview.system_prompt_section
        message: str = preview.message or ""
        return {"section": section, "message": message}.get(what, section + ("\n\n" + message if message else ""))


class IiiAdapter(Adapter):
    """iii's view of its preview."""

    kind = "iii"

    def preview_view(self, parent: QWidget) -> PreviewView:
        """The recall preview with score parts and worker settings."""
        return IiiPreviewView(parent)


ADAPTER = IiiAdapter()
