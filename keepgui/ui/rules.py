"""The Rules panel: a bank's documents, the markdown editor, the budget meter, changes on disk.

Written once for every backend against its :class:`~keepgui.core.source.DocumentSet`:
an iii bank's ``rules/*.md`` in injection order, a nanobot workspace's AGENTS.md
and the Dream-managed USER.md, SOUL.md and MEMORY.md (badged, with the warnings
their backend gives before a save), or any other backend's documents. Where
the agent enforces a budget, the backend lays it out and the meter shows it.

Nothing is ever silently overwritten: every save presents the stamp the text
was loaded with. When the file changes on disk, a clean buffer reloads
quietly; a dirty one gets a banner (show diff / reload, discarding mine / keep
mine); a save against a changed file is refused and opens the three-way view.
Every save, new document, rename and delete is one undo step of the window
(the ``perform`` callable it gives the panel).

Signals:
    RulesPanel.draftChanged(object key, dict drafts): unsaved texts of the shown bank's
        documents changed (name -> text, or None for one being deleted), for the what-if preview.
    RulesPanel.note(str): a status-bar note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QFontDatabase, QHelpEvent, QKeySequence, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QSplitter,
    QTextEdit,
    QToolBar,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from keepgui.core.errors import Conflict, KeepguiError
from keepgui.core.fsio import Stamp
from keepgui.core.secrets.scan import secret_marks
from keepgui.core.source import OURS, BankKey, Change, Document, DocumentSet, TextMark, marks_of
from keepgui.core.textdiff import unified
from keepgui.core.textmerge import conflict_spans, merge3
from keepgui.ui import shortcuts, theme
from keepgui.ui.banner import Banner
from keepgui.ui.budget import BudgetMeter
from keepgui.ui.commands import Outcome
from keepgui.ui.dialogs import NameDialog
from keepgui.ui.diffview import DiffView
from keepgui.ui.markdown import MarkdownHighlighter, RenderedView
from keepgui.ui.tasks import Task, lane
from keepgui.ui.threeway import MERGE, OVERWRITE, TAKE_DISK, ConflictsDialog, ThreeWayDialog

NameRole = Qt.ItemDataRole.UserRole + 40


HIGHLIGHT_MAX_LINES = 2000
"""A document of this many lines or more is shown without Markdown highlighting and not rendered (see
``_load_text``)."""
PLAIN_NOTICE = f"Shown without highlighting and not rendered: {HIGHLIGHT_MAX_LINES:,} lines or more."
LOAD_CHUNK_CHARS = 32_768
"""A longer document is put into the editor this many characters per turn of the event loop (a 1 MB
GEMINI.md set at once held the GUI thread ~150 ms, and its layout ~65 ms more)."""

_DERIVED = lane("rules")
"""The marks, the secrets in the text and the budget of the edited text are worked out here (a 1 MB
GEMINI.md: ~200 ms; a nanobot workspace's rule texts, keep.md included: seconds)."""


Derived = tuple[list[TextMark], dict[str, str] | None, Any]
"""What :func:`_derived` works out: the marks, the rule texts read, the budget (None: no meter)."""


Listed = tuple[list[tuple[str, str]] | Exception, Document | None]
"""A bank's documents (or why they could not be listed), and the first of them read (None: none)."""

Looked = tuple[list[tuple[str, str]] | Exception, Stamp | None, Document | None]
"""A bank's documents listed again (or why not), the stamp of the one shown, and that document read
again when its content changed (see :func:`_looked`)."""


def _listed(docs: DocumentSet) -> Listed:
    """Off the GUI thread: a bank's documents (an error is the answer too, shown by the list) and the
    first of them, read (a backend's read may wait for its source's lock, held by a load: a nanobot
    workspace's keep.md of 100,000 lines held the GUI thread ~0.9 s)."""
    try:
        items = list(docs.list())
    except (KeepguiError, OSError) as exc:
        return exc, None
    try:
        return items, docs.read(items[0][0]) if items else None
    except (KeepguiError, OSError):
        return items, None  # opened on the GUI thread then, which says why it cannot be


def _looked(docs: DocumentSet, doc: Document | None) -> Looked:
    """Off the GUI thread, after a change on disk: the bank's documents listed again (a Claude Code
    project's list resolves each file's place), the stamp of the one shown (None: none, or unreadable)
    and, when its content changed, the document read again (None when it cannot be: the GUI thread
    reads it then, and says why it cannot)."""
    items: list[tuple[str, str]] | Exception
    try:
        items = list(docs.list())
    except (KeepguiError, OSError) as exc:
        items = exc
    if doc is None:
        return items, None, None
    try:
        stamp = docs.current(doc)[1]
    except (KeepguiError, OSError):
        return items, None, None
    if stamp.same_content(doc.stamp):
        return items, stamp, None
    try:
        return items, stamp, docs.read(doc.name)
    except (KeepguiError, OSError):
        return items, stamp, None


def _derived(docs: DocumentSet | None, name: str, text: str, rule_texts: dict[str, str] | None) -> Derived:
    """Off the GUI thread: the backend's marks and the secrets of ``text``, the bank's rule texts
    (read when ``rule_texts`` is None) and the budget, as ``_refresh_derived`` shows them."""
    try:
        marks = marks_of(docs, name, text) if docs is not None else []
        marks += secret_marks(text)
    except (KeepguiError, OSError):
        marks = []
    if docs is None:
        return marks, rule_texts, None
    if rule_texts is None:
        # Read once per bank and per change on disk, not on every pause in typing.
        try:
            rule_texts = dict(docs.texts())
        except (KeepguiError, OSError):
            rule_texts = None  # unreadable just now: the budget uses the edited text alone
    budget = docs.budget(name, text, list((rule_texts or {}).items()))
    return marks, rule_texts, budget


class RulesPanel(QWidget):
    """Documents list + editor + rendered view + budget meter for the shown bank."""

    draftChanged = Signal(object, dict)
    note = Signal(str)

    def __init__(
        self,
        hub: Any,
        perform: Callable[[BankKey | str, Callable[[Any], Change], str | None, bool], Outcome] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.hub = hub
        self.perform = perform
        self.key: BankKey | None = None
        self.docs: DocumentSet | None = None
        self.doc: Document | None = None
        self._loading_text = False
        # The bank's rule texts as last read, for the budget meter; None: read again.
        self._rule_texts: dict[str, str] | None = None
        # Spans of the edited text the agent treats specially (a backend's marks), with their notes.
        self._marks: list[TextMark] = []
        self._derived_token = 0  # the newest derived work asked for; an older answer is dropped
        self._derived_shown = 0  # the derived work whose answer is shown
        self._chunks: tuple[str, int] | None = None  # a long text being put into the editor, and how far
        self._read_ahead: Document | None = None  # the first document, read with the listing
        self._listing: Task[Any] | None = None  # the task listing the shown bank's documents (set_bank)
        self._looking: Task[Any] | None = None  # the look after a change on disk (_changed_on_disk)

        self.list = QListWidget(self)
        self.list.setAccessibleName("Documents")
        self.list.currentItemChanged.connect(self._on_pick)
        self.title = QLabel(self)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.notices = QLabel(self)
        self.notices.setWordWrap(True)
        self.banner = Banner(self)
        self.editor = QPlainTextEdit(self)
        self.editor.setAccessibleName("Rule text")
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setTabChangesFocus(False)
        self.highlighter = MarkdownHighlighter(self.editor)
        self.editor.viewport().installEventFilter(self)  # a mark's note as the tooltip over it
        self.rendered = RenderedView(self)
        self.meter = BudgetMeter(self)

        self.toolbar = QToolBar(self)
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.act_save = self._act("Save", self.save, shortcuts.SAVE, "Save this document (Ctrl+S)")
        self.act_new = self._act("New rule…", self.new_rule, tip="Create a rule in this bank")
        self.act_rename = self._act("Rename…", self.rename_rule, tip="Rename this rule")
        self.act_delete = self._act("Delete…", self.delete_rule, tip="Delete this rule (asks first)")
        self.act_rendered = self._act(
            "Rendered", self._toggle_rendered, tip="Show the rendered markdown beside the text"
        )
        self.act_rendered.setCheckable(True)
        self.act_rendered.setChecked(True)
        for action in (self.act_save, self.act_new, self.act_rename, self.act_delete, self.act_rendered):
            self.toolbar.addAction(action)

        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.addWidget(self.editor)
        self.split.addWidget(self.rendered)
        right = QWidget(self)
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        header = QHBoxLayout()
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.toolbar)
        right_layout.addLayout(header)
        right_layout.addWidget(self.status)
        right_layout.addWidget(self.banner)
        right_layout.addWidget(self.split, 1)
        right_layout.addWidget(self.notices)
        right_layout.addWidget(self.meter)
        outer = QSplitter(Qt.Orientation.Horizontal, self)
        outer.addWidget(self.list)
        outer.addWidget(right)
        outer.setStretchFactor(1, 1)
        outer.setSizes([200, 900])
        self.outer = outer
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(outer)

        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(150)
        self._render_timer.timeout.connect(self._refresh_derived)
        self.editor.textChanged.connect(self._on_text_changed)
        hub.changed.connect(self._on_change)
        self._show_nothing()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.PaletteChange:  # a theme change: the list's icons in the new colours
            for i in range(self.list.count()):
                self.list.item(i).setIcon(theme.icon("document"))
        super().changeEvent(event)

    def _act(self, text: str, slot: Callable[..., object], shortcut: Any = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.setToolTip(tip)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    # ------------------------------------------------------------------ state

    @property
    def dirty(self) -> bool:
        """True when the editor holds changes not saved to disk."""
        return self.doc is not None and self._chunks is None and self.editor.toPlainText() != self.doc.text

    @property
    def derived_pending(self) -> bool:
        """True while the marks and the budget of the shown text are still being worked out."""
        return self.loading or (self.doc is not None and self._derived_shown != self._derived_token)

    @property
    def loading(self) -> bool:
        """True while a long document is still being put into the editor, piece by piece."""
        return self._chunks is not None

    def drafts(self) -> dict[str, str | None]:
        """Unsaved document texts the preview shows as a what-if (name -> text)."""
        if self.doc is None or self.docs is None or not self.docs.previews_drafts or self.loading or not self.dirty:
            return {}
        return {self.doc.name: self.editor.toPlainText()}

    def discard(self) -> None:
        """Drop unsaved edits (back to the text as loaded)."""
        if self.doc is not None:
            self._load_text(self.doc.text)

    def can_leave(self) -> bool:
        """The unsaved-changes guard: ask before dropping edits (switching bank, quitting)."""
        if not self.dirty or self.doc is None:
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"{self.doc.title} has unsaved changes. Save them?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        self.discard()
        return True

    # ------------------------------------------------------------------ bank and document

    def set_bank(self, key: BankKey | None) -> None:
        """Show the documents of a bank (None: nothing); the first listing is read off the GUI thread
        (a backend finds its documents there: Claude Code's instruction files, ~0.2 s at 5,000 topics)."""
        self.key = key
        try:
            self.docs = self.hub.bank(key).documents() if key is not None else None
        except (KeyError, KeepguiError, OSError):
            self.docs = None
        self.doc = None
        docs = self.docs
        if docs is None:
            self._listing = None
            self._reload_list()
            return
        self.list.blockSignals(True)  # the old bank's names are gone before the new docs could be asked for them
        self.list.clear()
        self.list.blockSignals(False)
        self._show_nothing("Reading the documents…")
        for action in (self.act_new, self.act_rename, self.act_delete):
            action.setEnabled(False)  # until the listing says what there is
        self._listing = _DERIVED.run(
            lambda: _listed(docs),
            lambda found: self._listed(docs, found),
            owner=self,
            newest=(self, "list"),
        )

    def _listed(self, docs: DocumentSet, found: Listed) -> None:
        """The first listing of a bank's documents, and the first of them, read off the GUI thread."""
        self._listing = None
        if docs is self.docs:
            items, self._read_ahead = found
            try:
                self._reload_list(items=items)
            finally:
                self._read_ahead = None

    @property
    def listing(self) -> bool:
        """True while the shown bank's documents are being listed, or looked at again after a change on
        disk (off the GUI thread)."""
        return any(
            task is not None and not (task.ended and (task.state != "finished" or task.obsolete()))
            for task in (self._listing, self._looking)  # each cleared when its answer is shown
        )

    def _reload_list(self, select: str | None = None, items: list[tuple[str, str]] | Exception | None = None) -> None:
        self._rule_texts = None
        self.list.blockSignals(True)
        self.list.clear()
        if self.docs is None:
            self.list.blockSignals(False)
            self._show_nothing()
            return
        try:
            if isinstance(items, Exception):
                raise items
            items = self.docs.list() if items is None else items
        except (KeepguiError, OSError) as exc:
            items = []
            self.banner.show_message(str(exc), "removed")
        for name, title in items:
            item = QListWidgetItem(theme.icon("document"), title)
            item.setData(NameRole, name)
            self.list.addItem(item)
        self.list.blockSignals(False)
        creatable = self.docs.creatable
        for action in (self.act_new, self.act_rename, self.act_delete):
            # Rename and Delete need a rule to act on: none listed, they are greyed
            action.setEnabled(creatable and (action is self.act_new or bool(items)))
            action.setToolTip(action.toolTip() if creatable else self.docs.why_not_create)
        names = [n for n, _ in items]
        target = select if select in names else (self.doc.name if self.doc and self.doc.name in names else None)
        if target is None and names:
            target = names[0]
        if target is None:
            self._show_nothing("No rules yet. Create one, for example a `style` rule." if creatable else "")
            return
        self.list.setCurrentRow(names.index(target))

    def _on_pick(self, current: QListWidgetItem | None, previous: QListWidgetItem | None) -> None:
        if current is None:
            return
        name = current.data(NameRole)
        if self.doc is not None and name == self.doc.name:
            return
        if not self.can_leave():
            self.list.blockSignals(True)
            if previous is not None:
                self.list.setCurrentItem(previous)
            self.list.blockSignals(False)
            return
        self.open_document(name)

    def show_document(self, name: str) -> bool:
        """Select and open one document of the shown bank (asking first about unsaved edits)."""
        if self.docs is None or (self.doc is not None and self.doc.name == name):
            return self.doc is not None
        if not self.can_leave():
            return False
        self.doc = None
        self._reload_list(select=name)
        return self._shown_name() == name

    def _shown_name(self) -> str | None:
        """The name of the document in the editor (None: none is)."""
        return self.doc.name if self.doc is not None else None

    def open_document(self, name: str) -> None:
        """Load one document into the editor."""
        if self.docs is None:
            return
        ahead = self._read_ahead
        try:
            self.doc = ahead if ahead is not None and ahead.name == name else self.docs.read(name)
        except (KeepguiError, OSError) as exc:
            self.doc = None
            self._show_nothing(f"{name} cannot be opened: {exc}")
            return
        self.banner.dismiss()
        self._load_text(self.doc.text)

    def _load_text(self, text: str) -> None:
        self._loading_text = True
        # Highlighting costs ~0.1 ms a line on the GUI thread while the text is set (a 1 MB GEMINI.md of
        # 10,000 lines held the window 12 s): a long document is shown plain, and the notices say so.
        plain = text.count("\n") >= HIGHLIGHT_MAX_LINES
        if plain and self.highlighter.document() is not None:
            self.highlighter.setDocument(None)
        if len(text) > LOAD_CHUNK_CHARS:
            # in pieces, one per turn of the event loop, read-only and out of the undo history meanwhile
            self._chunks = (text, 0)
            self.editor.document().setUndoRedoEnabled(False)
            self.editor.setPlainText("")
            self.editor.setReadOnly(True)
            self.act_save.setEnabled(False)
            self.editor.setEnabled(True)
            self._refresh_labels()
            self._put_chunk(text)
            return
        self._chunks = None
        self.editor.setPlainText(text)
        if not plain and self.highlighter.document() is None:
            self.highlighter.setDocument(self.editor.document())  # highlights it once, at the next turn of the loop
        self._loaded(text)

    def _put_chunk(self, text: str) -> None:
        """Put the next piece of a long text into the editor; the last one finishes the load."""
        if self._chunks is None or self._chunks[0] is not text:
            return  # another document (or none) was shown meanwhile
        at = self._chunks[1]
        end = text.find("\n", at + LOAD_CHUNK_CHARS)
        end = len(text) if end < 0 else end
        cursor = QTextCursor(self.editor.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text[at:end])
        if end < len(text):
            self._chunks = (text, end)
            QTimer.singleShot(0, self, lambda: self._put_chunk(text))
            return
        self._chunks = None
        document = self.editor.document()
        document.setUndoRedoEnabled(True)
        document.setModified(False)
        self.editor.moveCursor(QTextCursor.MoveOperation.Start)
        if text.count("\n") < HIGHLIGHT_MAX_LINES and self.highlighter.document() is None:
            self.highlighter.setDocument(document)
        self._loaded(text)

    def _loaded(self, text: str) -> None:
        """The document's text is in the editor: its state, labels and derived views follow."""
        self._loading_text = False
        self.editor.setEnabled(True)
        # a document the backend will not save (a policy-managed file...) is shown, never edited
        read_only = self.doc.read_only if self.doc is not None else ""
        self.editor.setReadOnly(bool(read_only))
        self.act_save.setEnabled(not read_only)
        self.act_save.setToolTip(read_only or "Save this document (Ctrl+S)")
        self._refresh_labels()
        self._refresh_derived(text)
        self._emit_drafts()

    def _show_nothing(self, text: str = "") -> None:
        self.doc = None
        self._chunks = None
        self.editor.document().setUndoRedoEnabled(True)
        self._loading_text = True
        self.editor.setPlainText("")
        self._loading_text = False
        self.editor.setEnabled(False)
        self.editor.setPlaceholderText(text)
        self.act_save.setEnabled(False)
        self.title.setText("")
        self.status.setText(text)
        self.notices.setText("")
        self.rendered.setHtml("")
        self.meter.setVisible(False)
        self.meter.label.setText("")  # the bank shown before's budget never reappears for this one

    # ------------------------------------------------------------------ editing

    def _on_text_changed(self) -> None:
        if self._loading_text:
            return
        self._refresh_labels()
        self._render_timer.start()
        self._emit_drafts()

    def _emit_drafts(self) -> None:
        if self.key is not None:
            self.draftChanged.emit(self.key, self.drafts())

    def _refresh_labels(self) -> None:
        if self.doc is None:
            return
        dirty = self.dirty  # compares the whole text: once
        marker = " ● unsaved" if dirty else ""
        self.title.setText(f"<b>{self.doc.title}</b>{marker}")
        self.title.setAccessibleName(f"{self.doc.title}{' (unsaved changes)' if dirty else ''}")
        status = self.doc.status
        if self.doc.managed_by:
            status = f"⚠ {status}"
        if self.doc.read_only:
            status = f"🔒 Read-only: {self.doc.read_only}" + (f"\n{status}" if status else "")
        self.status.setText(status)
        self.status.setStyleSheet(f"color: {theme.strong('warning').name()}" if self.doc.managed_by else "")
        plain = [PLAIN_NOTICE] if self.highlighter.document() is None else []
        self.notices.setText("\n".join([*self.doc.notices, *plain]))

    def _refresh_derived(self, text: str | None = None) -> None:
        """The rendered view, the budget meter and the truncation highlight follow the text (``text``:
        the editor's, when the caller has it): the rendered view at once, the marks and the budget once
        worked out off the GUI thread."""
        if self.doc is None or self.loading:
            return
        text = self.editor.toPlainText() if text is None else text
        if self.act_rendered.isChecked():
            if self.highlighter.document() is None:  # a long document: rendering it is seconds on the GUI thread
                self.rendered.setPlainText(PLAIN_NOTICE)
            else:
                self.rendered.show_markdown(text)
        self._derived_token += 1
        token, doc, docs, rule_texts = self._derived_token, self.doc, self.docs, self._rule_texts
        _DERIVED.run(
            lambda: _derived(docs, doc.name, text, rule_texts),
            lambda found: self._show_derived(token, doc, text, found),
            lambda exc: self._show_derived(token, doc, text, ([], None, None), exc),
            owner=self,
            newest=self,
        )

    def _show_derived(
        self, token: int, doc: Document, text: str, found: Derived, error: Exception | None = None
    ) -> None:
        """The marks and the budget of ``text`` worked out off the GUI thread (dropped when stale)."""
        if token != self._derived_token or doc is not self.doc:
            return
        self._derived_shown = token
        if error is not None:
            self.note.emit(f"The budget of {doc.title} could not be worked out: {error}")
        self._marks, rule_texts, budget = found
        if self.docs is not None and self._rule_texts is None:
            self._rule_texts = rule_texts
        self.editor.setExtraSelections(self._conflict_marks(text))
        if self.docs is None:
            self.meter.setVisible(False)
            return
        self.meter.setVisible(budget is not None)
        if budget is None:
            return
        self.meter.show_budget(budget)
        if budget.cut_char is not None:
            self._mark_cut(budget.cut_char, text)

    def _mark_cut(self, position: int, text: str) -> None:
        """Shade the text that would not be sent (from the cut to the end)."""
        selection = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        fmt.setBackground(theme.tint("removed"))
        selection.format = fmt
        cursor = QTextCursor(self.editor.document())
        cursor.setPosition(min(position, len(text)))
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        selection.cursor = cursor
        self.editor.setExtraSelections([*self._conflict_marks(text), selection])

    def _agent_marks(self, text: str) -> list[QTextEdit.ExtraSelection]:
        """The backend's marks of the edited text, tinted and underlined (their notes are the tooltips)."""
        out: list[QTextEdit.ExtraSelection] = []
        for mark in self._marks:
            selection = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setBackground(theme.tint("warning" if mark.level == "warning" else "info"))
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            fmt.setToolTip(mark.note)
            selection.format = fmt
            cursor = QTextCursor(self.editor.document())
            cursor.setPosition(min(mark.start, len(text)))
            cursor.setPosition(min(mark.end, len(text)), QTextCursor.MoveMode.KeepAnchor)
            selection.cursor = cursor
            out.append(selection)
        return out

    def mark_at(self, position: int) -> TextMark | None:
        """The backend's mark over a character of the edited text (None: none)."""
        return next((m for m in self._marks if m.start <= position < m.end), None)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.editor.viewport() and event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            mark = self.mark_at(self.editor.cursorForPosition(event.pos()).position())
            if mark is not None:
                QToolTip.showText(event.globalPos(), mark.note, self.editor.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().eventFilter(watched, event)

    def _conflict_marks(self, text: str) -> list[QTextEdit.ExtraSelection]:
        """The merge conflicts left in the text, tinted (they follow the editing: re-found each time),
        with the backend's marks under them."""
        marks: list[QTextEdit.ExtraSelection] = self._agent_marks(text)
        for start, end in conflict_spans(text):
            selection = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setBackground(theme.tint("warning"))
            selection.format = fmt
            cursor = QTextCursor(self.editor.document())
            cursor.setPosition(start)
            cursor.setPosition(min(end, len(text)), QTextCursor.MoveMode.KeepAnchor)
            selection.cursor = cursor
            marks.append(selection)
        return marks

    def _toggle_rendered(self, on: bool) -> None:
        self.rendered.setVisible(on)
        if on:
            self._refresh_derived()

    # ------------------------------------------------------------------ saving

    def save(self) -> bool:
        """Ctrl+S: write the document, refusing (three-way view) when it changed on disk."""
        if self.doc is None or self.docs is None:
            return True
        if self.doc.read_only:
            self.banner.show_message(f"{self.doc.title} is read-only: {self.doc.read_only}", "warning")
            return False
        text = self.editor.toPlainText()
        markers = f"{self.doc.title} still has merge conflict markers (<<<<<<< … >>>>>>>). Save it with them?"
        if conflict_spans(text) and not self._agree("Conflicts not resolved", markers, "Save"):
            return False
        empty = f"Saving empty content deletes {self.doc.title}. Delete it?"
        if not text.strip() and self.docs.empty_deletes and not self._agree("Delete rule?", empty, "Yes"):
            return False
        confirmed = False
        if self.doc.managed_by:
            detail = "\n\n".join(self.docs.pre_save_warnings(self.doc))
            answer = QMessageBox.question(self, f"Save {self.doc.title}?", detail + "\n\nSave anyway?")
            if answer != QMessageBox.StandardButton.Yes:
                return False
            confirmed = True
        return self._write(text, self.doc, confirmed)

    def _agree(self, title: str, question: str, yes: str) -> bool:
        """Ask before a save that may not be what the person wants; ``yes`` names the button that goes on."""
        go: QMessageBox.StandardButton = getattr(QMessageBox.StandardButton, yes)
        stop = QMessageBox.StandardButton.Cancel if yes == "Save" else QMessageBox.StandardButton.No
        return QMessageBox.question(self, title, question, go | stop, stop) == go

    def _do(self, operation: Callable[[DocumentSet], Change]) -> tuple[Change | None, BaseException | None]:
        """Run a document write as an undo step; ``(change, exception)`` (the exception when it was refused)."""
        docs, key = self.docs, self.key
        if docs is None or key is None:
            return None, KeepguiError("no bank's documents are shown")
        if self.perform is None:
            try:
                return self.hub.perform(key, lambda _bank: operation(docs)), None
            except (KeepguiError, OSError) as exc:
                return None, exc
        outcome = self.perform(key, lambda _bank: operation(docs), None, False)
        return outcome.change, outcome.exception

    def _write(self, text: str, base: Document, confirmed: bool) -> bool:
        change, error = self._do(lambda docs: docs.save(base, text, confirmed=confirmed))
        if isinstance(error, Conflict):
            return self._resolve_conflict(text, confirmed)
        if change is None:
            self.banner.show_message(f"{base.title} was not saved: {error}", "removed")
            return False
        self._rule_texts = None
        new_doc = change.result
        if not isinstance(new_doc, Document):  # None: the save deleted it
            self.note.emit(change.message or f"{base.title} deleted")
            self.doc = None
            self._reload_list()
            return True
        self.doc = new_doc
        self.banner.dismiss()
        self._refresh_labels()
        self._emit_drafts()
        self.note.emit(f"saved {new_doc.title}")
        if change.feedback:
            self.banner.show_message("\n".join(h.text for h in change.feedback), "info")
        return True

    def _resolve_conflict(self, mine: str, confirmed: bool) -> bool:
        if self.doc is None or self.docs is None:
            return False
        on_disk, stamp = self.docs.current(self.doc)
        dialog = ThreeWayDialog(self.doc.title, self.doc.text, on_disk, mine, self)
        dialog.exec()
        if dialog.choice == TAKE_DISK:
            self.reload_from_disk()
            return True
        if dialog.choice == OVERWRITE:
            # Overwrite exactly the disk version the person was shown, nothing newer.
            base = self.docs.base_for_overwrite(self.doc, on_disk, stamp)
            if base is None:  # it changed again meanwhile: show the new version
                return self._resolve_conflict(mine, confirmed)
            return self._write(mine, base, confirmed)
        if dialog.choice == MERGE:
            self.merge_with_disk(mine, on_disk, stamp)
        return False

    def merge_with_disk(self, mine: str, on_disk: str | None, stamp: Stamp) -> bool:
        """Merge: the editor gets opened → disk and opened → mine combined (conflicts marked), on top of the
        disk version, so the next save writes over exactly that; nothing is saved here."""
        opened, docs = self.doc, self.docs
        if opened is None or docs is None:
            return False
        base = docs.base_for_overwrite(opened, on_disk, stamp) if on_disk is not None else None
        if base is None or on_disk is None:
            self.banner.show_message(f"{opened.title} changed again on disk: save again to see it.", "warning")
            return False
        try:
            merged = merge3(opened.text, on_disk, mine)
        except KeepguiError as exc:
            self.banner.show_message(f"{opened.title} could not be merged: {exc}", "removed")
            return False
        text = merged.text
        if merged.conflicts:  # resolved side by side, not by editing markers
            dialog = ConflictsDialog(opened.title, merged.text, self)
            if not dialog.exec():
                return False  # nothing changes: the editor keeps your edits, the save stays refused
            text = dialog.resolved_text()
        self.doc = base
        self._loading_text = True
        self.editor.setPlainText(text)
        self._loading_text = False
        self._on_text_changed()
        self._refresh_derived()
        if merged.conflicts:
            self.banner.show_message(
                f"Merged with the version on disk ({merged.tool}): {merged.conflicts} conflict"
                f"{'s' if merged.conflicts != 1 else ''} resolved as you chose. Check the text, then save.",
                "info",
            )
        else:
            self.banner.show_message(
                f"Merged with the version on disk ({merged.tool}): no conflict. Check the text, then save.", "info"
            )
        return True

    def reload_from_disk(self, *, looked: Looked | None = None) -> None:
        """Drop the buffer and load the file as it is now (as ``looked`` found it off the GUI thread:
        the listing and the document read again; else both read here)."""
        if self.doc is not None:
            name = self.doc.name
            self.doc = None
            items, _stamp, self._read_ahead = looked if looked is not None else (None, None, None)
            try:
                self._reload_list(select=name, items=items)
            finally:
                self._read_ahead = None

    # ------------------------------------------------------------------ changed on disk

    def _on_change(self, change: Change) -> None:
        if self.key is not None and change.key == self.key and change.documents:
            self._changed_on_disk(quiet=change.origin == OURS, ours=change.text if change.origin == OURS else None)

    def _changed_on_disk(self, quiet: bool = False, ours: str | None = None) -> None:
        """A document may have changed: list them again and look at the shown one off the GUI thread
        (:func:`_looked`), then :meth:`_on_looked`."""
        self._rule_texts = None
        docs, doc = self.docs, self.doc
        if docs is None:
            self._reload_list()
            return
        self._looking = _DERIVED.run(
            lambda: _looked(docs, doc),
            lambda found: self._on_looked(docs, doc, found, quiet, ours),
            owner=self,
            newest=(self, "disk"),
        )

    def _on_looked(self, docs: DocumentSet, doc: Document | None, found: Looked, quiet: bool, ours: str | None) -> None:
        """Reload a clean buffer; over unsaved edits, say so — as a change on disk, or as keepgui's
        own (``ours``: its undo step's text, an undo or redo)."""
        self._looking = None
        if docs is not self.docs or doc is not self.doc:
            return  # another bank or document was opened since, read as it was then
        items, stamp, _read = found
        if doc is None:
            self._reload_list(items=items)
            return
        if stamp is None:
            return
        if stamp.same_content(doc.stamp):
            self._refresh_derived()  # another rule changed: the shared budget may have moved
            if not isinstance(items, Exception) and self._listed_names() != {n for n, _ in items}:
                self._reload_list(select=doc.name, items=items)
            return
        title = doc.title
        if not self.dirty:
            self.reload_from_disk(looked=found)
            if not quiet:
                self.note.emit(f"{title} changed on disk: reloaded")
            return
        what = (
            f"{title} was written by keepgui ({ours or 'an undo or redo'}) while you edited it."
            if ours is not None
            else f"{title} changed on disk since you opened it."
        )
        self.banner.show_message(
            f"{what} Your unsaved edits are still here.",
            "warning",
            [
                ("Show diff", self._show_disk_diff),
                ("Reload (discard mine)", self.reload_from_disk),
                ("Keep mine", self.banner.dismiss),
            ],
        )

    def _listed_names(self) -> set[str]:
        return {self.list.item(i).data(NameRole) for i in range(self.list.count())}

    def _show_disk_diff(self) -> None:
        if self.doc is None or self.docs is None:
            return
        on_disk, _ = self.docs.current(self.doc)
        box = QMessageBox(self)
        box.setWindowTitle(f"{self.doc.title}: on disk vs yours")
        view = DiffView(box)
        view.setPlainText(
            unified(on_disk or "", self.editor.toPlainText(), "on disk now", "your edits") or "(no difference)"
        )
        view.setMinimumSize(800, 400)
        grid = box.layout()
        if isinstance(grid, QGridLayout):  # a message box lays itself out on a grid
            grid.addWidget(view, 0, 0, 1, grid.columnCount())
        box.exec()

    # ------------------------------------------------------------------ rule files

    def _taken(self) -> set[str]:
        return {self.list.item(i).data(NameRole) for i in range(self.list.count())}

    def new_rule(self) -> None:
        """Create a rule (name rule enforced, slug suggested)."""
        if self.docs is None or not self.docs.creatable or self.docs.names is None or not self.can_leave():
            return
        dialog = NameDialog("New rule", "Rule name", self.docs.names, self._taken(), self)
        if not dialog.exec():
            return
        name = dialog.value()
        change, error = self._do(lambda docs: docs.create(name))
        if change is None:
            self.banner.show_message(f"The rule was not created: {error}", "removed")
            return
        self.doc = None
        self._reload_list(select=_name_of(change))

    def rename_rule(self) -> None:
        """Rename the shown rule."""
        docs = self.docs
        if self.doc is None or docs is None or not docs.creatable or docs.names is None or not self.can_leave():
            return
        dialog = NameDialog(f"Rename {self.doc.title}", "New name", docs.names, self._taken(), self)
        dialog.name.setText(self.doc.name)
        if not dialog.exec():
            return
        doc, new = self.doc, dialog.value()
        change, error = self._do(lambda docs: docs.rename_document(doc, new))
        if change is None:
            self.banner.show_message(f"{doc.title} was not renamed: {error}", "removed")
            return
        self.doc = None
        self._reload_list(select=_name_of(change))

    def delete_rule(self) -> None:
        """Delete the shown rule, after asking."""
        if self.doc is None or self.docs is None or not self.docs.creatable:
            return
        answer = QMessageBox.question(
            self,
            "Delete rule",
            f"Delete {self.doc.title}?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.No,
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        doc = self.doc
        change, error = self._do(lambda docs: docs.delete(doc))
        if isinstance(error, Conflict):
            self.banner.show_message(f"{doc.title} changed on disk; it was not deleted. Review it first.", "warning")
            return
        if change is None:
            self.banner.show_message(f"{doc.title} was not deleted: {error}", "removed")
            return
        self.note.emit(f"deleted {doc.title}")
        self.doc = None
        self._reload_list()


def _name_of(change: Change) -> str | None:
    """The name of the document a create or rename made (its Change's ``result``)."""
    return change.result.name if isinstance(change.result, Document) else None
