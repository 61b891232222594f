"""Small dialogs: a name with its backend's rule and a suggestion, a new memory, the trash."""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set as AbstractSet

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.source import NameRule, Trashed
from keepgui.ui import theme
from keepgui.ui.timefmt import relative


class NameDialog(QDialog):
    """Asks for a bank or document name; explains the backend's rule and offers a suggestion for an invalid name."""

    def __init__(
        self,
        title: str,
        prompt: str,
        rule: NameRule,
        taken: AbstractSet[str] = frozenset(),
        parent: QWidget | None = None,
        extra_label: str | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self._rule = rule
        self._taken = set(taken)
        self.name = QLineEdit(self)
        self.name.setAccessibleName(prompt)
        self.extra = QLineEdit(self) if extra_label else None
        self.hint = QLabel(self)
        self.hint.setWordWrap(True)
        self.hint.setAccessibleName("Name rule")
        self.use_slug = QPushButton("Use suggestion", self)
        self.use_slug.setAutoDefault(False)  # Enter is OK's, wherever the focus is
        self.use_slug.clicked.connect(self._use_suggestion)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        for which in (QDialogButtonBox.StandardButton.Ok, QDialogButtonBox.StandardButton.Cancel):
            self.buttons.button(which).setAutoDefault(False)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setDefault(True)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow(prompt, self.name)
        if self.extra is not None:
            form.addRow(extra_label or "", self.extra)
        layout = QVBoxLayout(self)
        # The dialog grows with its hint (a long suggestion wraps onto more lines and is read whole).
        layout.setSizeConstraint(QLayout.SizeConstraint.SetMinimumSize)
        layout.addLayout(form)
        layout.addWidget(self.hint)
        layout.addWidget(self.use_slug)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(self.fontMetrics().averageCharWidth() * 56)
        self.name.textChanged.connect(self._validate)
        self._validate("")

    def _use_suggestion(self) -> None:
        """Take the suggested name; the focus goes back to the name, so Enter is OK."""
        self.name.setText(self._rule.suggest(self.name.text()))
        self.name.setFocus()

    def _validate(self, text: str) -> None:
        ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        slug = self._rule.suggest(text)
        problem = self._rule.problem(text) if text else ""
        if not text:
            message, ok = self._rule.describe(), False
        elif text in self._taken:
            message, ok = f"`{text}` already exists.", False
        elif not problem:
            message, ok = "", True
        else:
            message = problem
            if slug and slug not in self._taken:
                message += f" Suggestion: {slug}"
            ok = False
        self.hint.setText(message)
        self.hint.setStyleSheet("" if ok or not text else f"color: {theme.strong('removed').name()}")
        self.use_slug.setVisible(bool(text) and not ok and bool(slug) and slug != text and slug not in self._taken)
        ok_button.setEnabled(ok)
        self.hint.setMinimumHeight(self.hint.heightForWidth(max(self.hint.width(), self.minimumWidth() - 24)))

    def value(self) -> str:
        """The name typed."""
        return self.name.text()

    def extra_value(self) -> str:
        """The second field (a description)."""
        return self.extra.text() if self.extra is not None else ""


class NewMemoryDialog(QDialog):
    """A new memory: its text (checked by the bank's ``check(text) -> (label, ok)``), and the tags,
    entities and pin the bank's rows have."""

    def __init__(
        self,
        bank: str,
        check: Callable[[str], tuple[str, bool]],
        parent: QWidget | None = None,
        *,
        tags: bool = True,
        entities: bool = True,
        pin: bool = True,
    ) -> None:
        super().__init__(parent)
        self._check = check
        self.setWindowTitle(f"New memory in {bank}")
        self.text = QPlainTextEdit(self)
        self.text.setPlaceholderText("remember something…")
        self.text.setAccessibleName("Memory text")
        self.tags = QLineEdit(self)
        self.tags.setPlaceholderText("style, people")
        self.entities = QLineEdit(self)
        self.entities.setPlaceholderText("user, mike")
        self.pinned = QCheckBox("Pin (untouchable by automatic paths)", self)
        self.count = QLabel(self)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Text", self.text)
        form.addRow("", self.count)
        if tags:
            form.addRow("Tags", self.tags)
        if entities:
            form.addRow("Entities", self.entities)
        if pin:
            form.addRow("", self.pinned)
        for widget, shown in ((self.tags, tags), (self.entities, entities), (self.pinned, pin)):
            widget.setVisible(shown)
        form.addRow(self.buttons)
        self.text.textChanged.connect(self._validate)
        self._validate()

    def _validate(self) -> None:
        label, ok = self._check(self.text.toPlainText())
        self.count.setText(label)
        self.buttons.button(QDialogButtonBox.StandardButton.Save).setEnabled(ok)

    def values(self) -> tuple[str, list[str], list[str], bool]:
        """``(text, tags, entities, pinned)``."""
        return (
            self.text.toPlainText(),
            split_labels(self.tags.text()),
            split_labels(self.entities.text()),
            self.pinned.isChecked(),
        )


def split_labels(text: str) -> list[str]:
    """Tags or entities typed as "a, b" or "#a #b"."""
    parts = text.split(",") if "," in text else text.split()
    return [p.strip().lstrip("#") for p in parts if p.strip().lstrip("#")]


class TrashDialog(QDialog):
    """Choose a trashed bank to restore."""

    def __init__(self, trashed: Sequence[Trashed], taken: AbstractSet[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Restore a bank from the trash")
        self.list = QListWidget(self)
        self.list.setAccessibleName("Trashed banks")
        for t in trashed:
            item = QListWidgetItem(f"{t.bank} — trashed {relative(t.trashed_at)}  ({t.folder})")
            item.setData(256, t.folder)
            if t.bank in taken:
                item.setText(item.text() + " — a bank with this name exists")
            self.list.addItem(item)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Restore")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list)
        layout.addWidget(self.buttons)
        if self.list.count():
            self.list.setCurrentRow(0)

    def folder(self) -> str | None:
        """The trash folder chosen."""
        item: QListWidgetItem | None = self.list.currentItem()  # None when the list is empty
        return None if item is None else str(item.data(256))
