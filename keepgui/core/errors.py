"""The errors keepgui reports to people.

Every error names what went wrong, where (the file, and the line when there is
one) and, where it helps, what to do. The CLI prints ``str(error)`` as its one
line; the window shows it in a banner. Nothing here imports Qt.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # fsio raises these errors, so it is imported for its types only
    from keepgui.core.fsio import Stamp


class KeepguiError(Exception):
    """Base class of every error keepgui raises on purpose."""


class InvalidInput(KeepguiError):
    """A value given by a person or a script is not acceptable (bad name, text too short...)."""


class NotFound(KeepguiError):
    """A bank, memory, rule or file that was asked for does not exist."""


class Unreadable(KeepguiError):
    """A file cannot be read as the format it should have (invalid UTF-8, not a file...).

    Attributes:
        path: the file.
        reason: why, in words a person understands.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class ReadOnly(KeepguiError):
    """Writing was refused because the target must never be written (or cannot be)."""


class WriteFailed(KeepguiError):
    """A write could not be completed (a full disk, a quota, an I/O error).

    The message names the file and says what was left: nothing (the file is as
    it was), or exactly what remained when it could not be put back.
    """


class Conflict(KeepguiError):
    """A save was refused because the file changed on disk since it was read.

    Attributes:
        path: the file that changed.
        expected: the stamp the caller loaded (``None`` if it did not exist then).
        actual: the stamp on disk now.
    """

    def __init__(self, path: str | os.PathLike[str], expected: Stamp | None, actual: Stamp) -> None:
        self.path = os.fspath(path)
        self.expected = expected
        self.actual: Stamp | None = actual  # None where a subclass has no file stamp to show
        if expected is None or not getattr(expected, "exists", True):
            what = "was created by someone else"
        elif not actual.exists:
            what = "was deleted by someone else"
        else:
            what = "was changed by someone else"
        super().__init__(
            f"{self.path} {what} since it was read; nothing was written. Reload it, compare, and save again."
        )
