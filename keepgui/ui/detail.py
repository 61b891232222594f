"""The detail panel: every field of the selected row and its history, revision by revision.

The fields shown are the ones the bank's rows have (its
:attr:`~keepgui.core.source.Capabilities.fields`), plus the extra labelled
values a row carries (:attr:`~keepgui.core.source.Row.fields`). History comes
from the backend (every revision of that row, read in the background);
consecutive text changes are shown as a word diff, and a superseded memory
links to the memory that replaced it (clicking the link selects it in the
table).

Signals:
    DetailPanel.memoryLinkActivated(str id)
"""

from __future__ import annotations

import html

from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import QTextBrowser, QVBoxLayout, QWidget

from keepgui.core.secrets.scan import SENT, Finding
from keepgui.core.source import ALL_FIELDS, Row
from keepgui.core.textdiff import SHOWN_CHARS, shown_text, word_diff
from keepgui.ui import theme
from keepgui.ui.timefmt import absolute, relative


def _esc(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


class DetailPanel(QWidget):
    """Fields and history of one memory (read-only)."""

    memoryLinkActivated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.browser = QTextBrowser(self)
        self.browser.setOpenLinks(False)
        self.browser.setOpenExternalLinks(False)
        self.browser.anchorClicked.connect(self._on_anchor)
        self.browser.setAccessibleName("Memory details and history")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.browser)
        self._record: Row | None = None
        self._history: list[Row] = []
        self.fields = ALL_FIELDS
        self.secrets: dict[str, list[Finding]] = {}
        self.show_empty()

    def set_fields(self, fields: frozenset[str]) -> None:
        """The fields the shown bank's rows have (the others are not shown)."""
        self.fields = fields

    def show_empty(self, text: str = "Select a memory to see every field and its history.") -> None:
        """Nothing selected."""
        self._record = None
        self._history = []
        self.browser.setHtml(f"<p style='color:{theme.muted_text().name()}'>{_esc(text)}</p>")

    def show_record(self, record: Row) -> None:
        """Show one record; its history (revisions, oldest first) comes later (:meth:`set_history`)."""
        self._record = record
        self._history = []
        self.browser.setHtml(self._render())

    def set_history(self, memory_id: str, revisions: list[Row]) -> None:
        """The background read of a memory's revisions arrived."""
        if self._record is not None and self._record.id == memory_id:
            self._history = revisions
            self.browser.setHtml(self._render())

    @property
    def record(self) -> Row | None:
        """The record shown (or None)."""
        return self._record

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == "memory":
            self.memoryLinkActivated.emit(url.path() or url.host())

    def set_secrets(self, secrets: dict[str, list[Finding]]) -> None:
        """The secrets found in rows (key -> findings): marked in the text, listed with the fields."""
        self.secrets = secrets
        if self._record is not None:
            self.browser.setHtml(self._render())

    def _marked_text(self, text: str, key: str) -> str:
        """The row's text with each secret's span tinted (the secret itself is the row's own text)."""
        spans = sorted((f.start, f.end) for f in self.secrets.get(key, ()) if f.end <= len(text))
        if not spans:
            return _esc(shown_text(text))
        out, at = [], 0
        tint = theme.tint("warning").name()
        for start, end in spans:
            if start < at:
                continue
            out.append(_esc(shown_text(text[at:start])))
            out.append(f"<span style='background:{tint}'>{_esc(shown_text(text[start:end]))}</span>")
            at = end
        out.append(_esc(shown_text(text[at:])))
        return "".join(out)

    def _render(self) -> str:
        r = self._record
        if r is None:
            return ""
        muted = theme.muted_text().name()
        rows = []

        def field(name: str, value: str) -> None:
            rows.append(f"<tr><td style='color:{muted};padding-right:8px'>{name}</td><td>{value}</td></tr>")

        state = "live"
        if r.invalid_at is not None:
            state = "superseded" if r.superseded_by else "deleted"
        field("id", f"<code>{_esc(r.id)}</code>")
        field("state", state + (f" {relative(r.invalid_at)}" if r.invalid_at else ""))
        if r.superseded_by:
            field("superseded by", f"<a href='memory:{_esc(r.superseded_by)}'>{_esc(r.superseded_by)}</a>")
        shown = self.fields
        if "pinned" in shown:
            field("pinned", "yes" if r.pinned else "no")
        if r.confidence:
            field("confidence", _esc(r.confidence))
        if r.corroboration is not None:
            field("seen", f"×{r.corroboration + 1}")
        if "entities" in shown:
            field("entities", _esc(", ".join(r.entities)) or "—")
        if "tags" in shown:
            field("tags", _esc(" ".join("#" + t for t in r.tags)) or "—")
        if r.created_at:
            field(
                "created",
                f"{relative(r.created_at)} <span style='color:{muted}'>({_esc(absolute(r.created_at))})</span>",
            )
        if r.updated_at:
            field(
                "updated",
                f"{relative(r.updated_at)} <span style='color:{muted}'>({_esc(absolute(r.updated_at))})</span>",
            )
        if r.revision is not None:
            field("revision", str(r.revision))
        for label, value in r.fields:  # the backend's own labelled values: where the row came from...
            field(_esc(label), f"<span style='white-space:pre-wrap'>{_esc(shown_text(value))}</span>")
        body = [f"<p style='white-space:pre-wrap'><b>{self._marked_text(r.text, r.id)}</b></p>"]
        for f in self.secrets.get(r.id, ()):
            sent = f" — {SENT}" if f.sent else ""
            field(
                "secret",
                f"<span style='color:{theme.strong('warning').name()}'>{_esc(f.kind)}: {_esc(f.masked)}{sent}</span>",
            )
        body.append("<table>" + "".join(rows) + "</table>")
        body.append(self._render_history())
        return "".join(body)

    def _render_history(self) -> str:
        if not self._history:
            return ""
        added = theme.tint("added").name()
        removed = theme.tint("removed").name()
        muted = theme.muted_text().name()
        items = []
        previous: Row | None = None
        for rev in self._history:
            what = _describe_change(previous, rev)
            text = ""
            if (
                previous is not None
                and previous.text != rev.text
                and max(len(previous.text), len(rev.text)) > SHOWN_CHARS
            ):
                text = "<br>the text changed (too long to compare here)"
            elif previous is not None and previous.text != rev.text:
                pieces = []
                for op, chunk in word_diff(previous.text, rev.text):
                    if op == "=":
                        pieces.append(_esc(chunk))
                    elif op == "+":
                        pieces.append(f"<span style='background:{added}'>{_esc(chunk)}</span>")
                    else:
                        pieces.append(f"<span style='background:{removed}'><s>{_esc(chunk)}</s></span>")
                text = "<br>" + "".join(pieces)
            items.append(f"<li><b>r{rev.revision}</b> · {relative(rev.updated_at)} · {what}{text}</li>")
            previous = rev
        return (
            f"<h4>History <span style='color:{muted};font-weight:normal'>"
            f"({len(self._history)} revision{'' if len(self._history) == 1 else 's'})</span></h4><ul>"
            + "".join(reversed(items))
            + "</ul>"
        )


def _describe_change(old: Row | None, new: Row) -> str:
    """What one revision did, in words."""
    if old is None:
        return "created" + (" (pinned)" if new.pinned else "")
    parts = []
    if old.invalid_at is None and new.invalid_at is not None:
        parts.append(
            f"superseded by <a href='memory:{_esc(new.superseded_by)}'>{_esc(new.superseded_by)}</a>"
            if new.superseded_by
            else "deleted"
        )
    elif old.invalid_at is not None and new.invalid_at is None:
        parts.append("restored")
    seen_before, seen_now = old.corroboration or 0, new.corroboration or 0  # None: the backend counts nothing
    if seen_now > seen_before:
        parts.append(f"reinforced (seen ×{seen_now + 1})")
    if new.text != old.text:
        parts.append("text edited")
    if new.pinned != old.pinned:
        parts.append("pinned" if new.pinned else "unpinned")
    if new.tags != old.tags:
        parts.append("tags: " + _esc(" ".join("#" + t for t in new.tags) or "none"))
    if new.entities != old.entities:
        parts.append("entities: " + _esc(", ".join(new.entities) or "none"))
    return ", ".join(parts) or "touched (no field changed)"
