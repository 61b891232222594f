"""What an adapter offers the generic window, and what it does for a backend that needs none.

An :class:`Adapter` makes the widget that shows a backend's preview
(:class:`PreviewView`). The generic one shows the preview's text as it is;
an adapter module replaces it where a backend's preview has more to show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QFontDatabase, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QVBoxLayout, QWidget

CHUNK_CHARS = 32_768
"""A longer text is put into a :class:`LongTextView` this many characters (then to the end of the line)
per turn of the event loop: a 1 MB GEMINI.md set at once held the GUI thread ~150 ms, its layout more."""


class LongTextView(QPlainTextEdit):
    """Read-only text that puts a long text in piece by piece, one per turn of the event loop, so the
    GUI thread is never held by one (:meth:`setPlainText`; ``then`` runs once all of it is in)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.document().setUndoRedoEnabled(False)
        self._pending: tuple[str, int] | None = None  # the text still being put in, and how far
        self._then: Callable[[], object] | None = None

    @property
    def loading(self) -> bool:
        """True while a long text is still being put in."""
        return self._pending is not None

    def setPlainText(self, text: str, then: Callable[[], object] | None = None) -> None:  # noqa: N802 - Qt's name
        """Show ``text`` (a long one piece by piece); then call ``then``."""
        self._pending, self._then = None, None
        end = text.find("\n", CHUNK_CHARS) if len(text) > CHUNK_CHARS else -1
        super().setPlainText(text if end < 0 else text[:end])
        if end < 0:
            if then is not None:
                then()
            return
        self._pending, self._then = (text, end), then
        QTimer.singleShot(0, self, lambda: self._put(text))

    def _put(self, text: str) -> None:
        if self._pending is None or self._pending[0] is not text:
            return  # another text was set meanwhile
        at = self._pending[1]
        end = text.find("\n", at + CHUNK_CHARS)
        end = len(text) if end < 0 else end
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text[at:end])
        if end < len(text):
            self._pending = (text, end)
            QTimer.singleShot(0, self, lambda: self._put(text))
            return
        then, self._pending, self._then = self._then, None, None
        if then is not None:
            then()


def plain_view(name: str, parent: QWidget) -> QPlainTextEdit:
    """A read-only, fixed-width text view (what the agent is given is shown verbatim)."""
    view = LongTextView(parent)
    view.setAccessibleName(name)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    return view


class PreviewView(QWidget):
    """Shows one backend's preview ("what the agent sees next") inside the generic Preview panel.

    :meth:`show_result` draws a result; :meth:`summary` is the line above it;
    :meth:`injected_text` is exactly what would be given to the agent (the Copy
    button), in the forms :attr:`copy_choices` names. A view with settings of
    its own (the iii worker's) shows them with :meth:`show_settings` and emits
    ``settingsChanged(dict)`` when the person changes them.

    Signals:
        settingsChanged(dict values): settings of the shown source, as they should be remembered.
    """

    settingsChanged = Signal(dict)

    copy_choices: tuple[tuple[str, str], ...] = (("Exactly what is injected", "all"),)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.build()

    def build(self) -> None:
        """Make the view's widgets: here one text view of what the agent is given."""
        self.text = plain_view("What the agent is given", self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.text, 1)

    def show_result(self, result: Any) -> None:
        """Draw a preview."""
        self.text.setPlainText(self.injected_text(result, "all"))

    def clear(self) -> None:
        """Nothing to show."""
        self.text.setPlainText("")

    def summary(self, result: Any) -> str:
        """The line above the preview."""
        return f"what the agent is given next · {len(self.injected_text(result, 'all').encode('utf-8')):,} bytes"

    def injected_text(self, result: Any, what: str) -> str:
        """Exactly what would be given to the agent (a preview's ``text``, else its string form)."""
        text = getattr(result, "text", None)
        return text if isinstance(text, str) else str(result)

    def show_settings(self, values: dict[str, Any]) -> None:
        """The shown source's settings (none here)."""


class Adapter:
    """The UI of one backend that the generic window cannot draw itself (see the package docstring)."""

    kind = ""

    def preview_view(self, parent: QWidget) -> PreviewView:
        """The widget that shows this backend's preview."""
        return PreviewView(parent)
