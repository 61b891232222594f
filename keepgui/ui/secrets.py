"""Secrets in the window: found in the background, shown where they matter, redacted with undo.

Every Change the hub delivers for a bank schedules a scan of that bank on the ``secrets`` lane of
:mod:`keepgui.ui.tasks` (the newest request for a bank wins; the scan itself is
:class:`keepgui.core.secrets.scan.Scanner`, incremental by the hash of each block of rows). What
it finds is shown: a badge on each row holding one (its tooltip names the type and the masked
form), the span marked in the detail pane, a count on the source's line in the sidebar, and above
the preview "this secret is sent to the model at the start of every session" for those the agent
is given. The documents editor marks them itself (:func:`keepgui.core.secrets.scan.secret_marks`).

Bank → Secrets… lists them (masked) and redacts all of them as one undo step, optionally purging
them from keepgui's own history (it says what that removes first), or marks one "not a secret".
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.secrets.purge import plan_purge
from keepgui.core.secrets.redact import redact
from keepgui.core.secrets.scan import SENT, Finding, Scanner
from keepgui.core.source import BankKey, Change
from keepgui.ui import tasks

_LANE = "secrets"


def badge_text(findings: list[Finding]) -> str:
    """The badge's tooltip: each secret's type and masked form, and whether the agent is given it."""
    lines = [f"Holds a secret: {f.kind} {f.masked}" for f in findings]
    if any(f.sent for f in findings):
        lines.append(SENT[0].upper() + SENT[1:])
    return "\n".join(lines)


class SecretsWatch(QObject):
    """The window's secrets: scans on every change of a bank, and what each view shows of them."""

    def __init__(self, window: Any) -> None:
        """``window``: the main window (its hub, sidebar, panels and Bank menu)."""
        super().__init__(window)
        self.window = window
        self.found: dict[BankKey, list[Finding]] = {}
        self._scanners: dict[str, Scanner] = {}
        self._shown: tuple[BankKey | None, dict[str, str]] | None = None  # the badges the table shows
        window.hub.changed.connect(self._on_change)
        # an undo or redo of "Not a secret" changes no file the hub would deliver: scan again once each
        # step of the undo stack has run (off the GUI thread), not when the stack moved
        window.hub.written.connect(lambda _change: self.scan(window.current) if window.current else None)
        self.act_secrets = QAction("&Secrets…", window)
        self.act_secrets.setToolTip("Secrets found in this bank: redact them, or mark one not a secret")
        self.act_secrets.triggered.connect(self.show_dialog)
        window.bank_menu.addSeparator()
        window.bank_menu.addAction(self.act_secrets)
        window.tree.selectionModel().currentChanged.connect(lambda *_: QTimer.singleShot(0, self.show_current))

    def scanner(self, path: str) -> Scanner:
        """The scanner of an open source (one per source, kept while it is open)."""
        scanner = self._scanners.get(path)
        if scanner is None or scanner.source is not self.window.hub.sources.get(path):
            scanner = self._scanners[path] = Scanner(self.window.hub.sources[path])
        return scanner

    def _on_change(self, change: Change) -> None:
        key = change.key
        if key is not None and key.source in self.window.hub.sources:
            self.scan(key)

    def scan(self, key: BankKey) -> None:
        """Scan one bank in the background (once it is loaded); the views follow when it answers."""
        try:
            bank = self.window.hub.bank(key)
        except (KeyError, LookupError):
            return
        if not bank.is_loaded():
            return
        scanner = self.scanner(key.source)

        def work() -> list[Finding]:
            found = scanner.scan_bank(bank)
            scanner.cache.save()
            return found

        tasks.lane(_LANE).run(
            work, lambda found: self._found(key, found), lambda _exc: None, owner=self, newest=key, abandon=True
        )

    def _found(self, key: BankKey, findings: list[Finding]) -> None:
        self.found[key] = [f for f in findings if not f.allowed]
        total = sum(len(v) for k, v in self.found.items() if k.source == key.source)
        self.window.tree_model.set_source_note(
            key.source, f"{total} secret{'s' if total != 1 else ''}" if total else ""
        )
        if key == self.window.current:
            self.show_current()

    def show_current(self) -> None:
        """Show the current bank's secrets in the table, the detail pane and the preview."""
        key = self.window.current
        found = self.found.get(key, []) if key is not None else []
        by_row: dict[str, list[Finding]] = {}
        for f in found:
            if f.key:
                by_row.setdefault(f.key, []).append(f)
        memories: Any = self.window.memories
        badges = {k: badge_text(v) for k, v in by_row.items()}
        if (key, badges) != self._shown:  # unchanged (a write's rescan found the same): no repaint of every row
            self._shown = (key, badges)
            memories.model.set_secrets(badges)
            memories.detail.set_secrets(by_row)
        sent = [f for f in found if f.sent]
        self.window.preview.show_secrets(
            f"{len(sent)} secret(s) here ({', '.join(sorted({f.kind for f in sent}))}): {SENT}." if sent else ""
        )
        self.act_secrets.setEnabled(key is not None)

    def show_dialog(self) -> None:
        """Bank → Secrets…"""
        key = self.window.current
        if key is None:
            return
        SecretsDialog(self, key, self.window).exec()


class SecretsDialog(QDialog):
    """The secrets of one bank, masked: redact them all (one undo step), or mark one not a secret."""

    def __init__(self, watch: SecretsWatch, key: BankKey, parent: QWidget) -> None:
        super().__init__(parent)
        self.watch = watch
        self.key = key
        self.setWindowTitle(f"Secrets in {key.bank}")
        self.findings = list(watch.found.get(key, []))
        self.list = QListWidget(self)
        self.list.setAccessibleName("Secrets found")
        for f in self.findings:
            item = QListWidgetItem(f"{f.kind} · {f.where} · {f.masked}" + ("  — sent every session" if f.sent else ""))
            item.setData(Qt.ItemDataRole.UserRole, f.id)
            self.list.addItem(item)
        self.purge = QCheckBox("Also purge them from keepgui's history", self)
        self.purge.setAccessibleName("Also purge from keepgui's history")
        self.purge_note = QLabel("keepgui keeps every version of memory files it has seen; looking for copies…", self)
        self.purge_note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.redact_button = QPushButton("&Redact all", self)
        self.allow_button = QPushButton("&Not a secret", self)
        buttons.addButton(self.redact_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.allow_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.redact_button.clicked.connect(self.redact_all)
        self.allow_button.clicked.connect(self.allow_selected)
        self.redact_button.setEnabled(bool(self.findings))
        self.allow_button.setEnabled(bool(self.findings))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"{len(self.findings)} secret(s) found (masked: keepgui never shows them)", self))
        layout.addWidget(self.list, 1)
        layout.addWidget(self.purge)
        layout.addWidget(self.purge_note)
        layout.addWidget(buttons)
        secrets = [f.secret for f in self.findings]
        tasks.lane(_LANE).run(
            lambda: plan_purge(secrets).describe(), self.purge_note.setText, lambda _e: None, owner=self
        )

    def redact_all(self) -> None:
        """One undo step for the bank's redaction; then the purge, when asked for (not undoable)."""
        secrets = [f.secret for f in self.findings]
        refused: list[str] = []

        def operation(bank: Any) -> Change:
            change, no = redact(bank, secrets, "Redact secrets")
            refused.extend(f"{r.where}: {r.reason}" for r in no)
            return change

        window, purge = self.watch.window, self.purge.isChecked()

        def redacted(_outcome: Any) -> None:  # the redaction ran (off the GUI thread); the purge comes after
            if refused:
                window.show_error("Not redacted: " + "; ".join(refused))
            if purge:
                tasks.lane(_LANE).run(
                    lambda: plan_purge(secrets).apply(),
                    lambda n: window.note(f"Purged the secrets from keepgui's history ({n} file(s))"),
                    lambda exc: window.show_error(f"The purge failed: {exc}"),
                )

        window.perform(self.key, operation, "Redact secrets").then(redacted)
        self.accept()

    def allow_selected(self) -> None:
        """Mark the selected finding (or the first) "not a secret" in this source."""
        if self.list.count() == 0:
            return
        item = self.list.currentItem()
        if self.list.row(item) < 0:
            item = self.list.item(0)
        picked = [f for f in self.findings if f.id == item.data(Qt.ItemDataRole.UserRole)]
        allowlist = self.watch.scanner(self.key.source).allowlist
        self.watch.window.perform(self.key, lambda bank: allowlist.allow_change(bank, picked), "Mark not a secret")
        self.list.takeItem(self.list.row(item))
