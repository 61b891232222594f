"""Undoing an applied plan: the exact previous bytes of every file it wrote go back, after a stamp check.

An apply is kept in keepgui's undo journal (:class:`FileApplied`, by the hashes
of the bytes in keepgui's history), so it can be undone after a restart too.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from keepgui.backends.nanobot.compact.accepted import ReviewLog
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.core import fsio
from keepgui.core.compaction import Applied, ChangedSince, register_applied_kind
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.history import History, RemovedEntry, file_key


@dataclass
class FileChange:
    """One file an apply replaced: its workspace path, the bytes before (None: it did not exist),
    the bytes written, and the stamp they were written with."""

    rel: str
    before: bytes | None
    after: bytes
    stamp: fsio.Stamp | None = None

    def revert(self, workspace: Workspace, history: History) -> None:
        """Put ``before`` back if the file still holds ``after`` (ChangedSince otherwise)."""
        stamp = _expect(workspace, self.rel, self.after, "undone")
        _swap(workspace, history, self.rel, stamp, self.before, "undone")

    def to_obj(self) -> dict[str, Any]:
        """The hashes that find the bytes again in keepgui's history."""
        return {
            "rel": self.rel,
            "before": _sha(self.before) if self.before is not None else None,
            "after": _sha(self.after),
        }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _expect(workspace: Workspace, rel: str, expected: bytes | None, doing: str) -> fsio.Stamp:
    """The stamp of ``rel`` if it holds ``expected`` (None: it does not exist); ChangedSince otherwise."""
    current, stamp = workspace.read(rel)
    if current != expected:
        path = workspace.path(rel)
        raise ChangedSince(
            path,
            f"{path} changed after the compaction, so it was not {doing}; nothing was "
            "written. Its earlier versions are in keepgui's history.",
        )
    return stamp


def _swap(workspace: Workspace, history: History, rel: str, stamp: fsio.Stamp, new: bytes | None, doing: str) -> None:
    """Replace ``rel``, checked by :func:`_expect` as ``stamp``, with ``new`` (None: delete it)."""
    path = workspace.path(rel)
    if new is None:
        workspace.check_writable(path)
        fsio.remove_file(path, expect=stamp)
        return
    workspace.write(rel, new, expect=stamp)
    history.record(path, new, source="compaction-undone" if doing == "undone" else "compacted")


class FileApplied(Applied):
    """A compaction of workspace files, and how to take it back.

    ``files``: the :class:`FileChange` s in the order written; ``removed``: the
    removed-entry records logged. Undo checks that every file still holds what
    was written, then puts the exact previous bytes back (newest write first)
    and marks the removed entries restored; redo writes the result again.
    """

    kind = "workspace-files"

    def __init__(
        self,
        workspace: str,
        files: list[FileChange],
        removed: list[RemovedEntry],
        lines: Iterable[str],
        description: str,
        history: History,
        review_marker: str | None = None,
    ) -> None:
        target = file_key(Workspace(workspace).path(files[-1].rel)) if files else os.path.abspath(workspace)
        super().__init__(description, lines, bool(files), target)
        self.workspace = workspace
        self.files = list(files)
        self.removed = list(removed)
        self.history = history
        self.review_marker = review_marker

    def _check_all(self, ws: Workspace, want_after: bool, doing: str) -> list[fsio.Stamp]:
        """The stamp of every file, once each holds what it should (before anything is written)."""
        return [_expect(ws, change.rel, change.after if want_after else change.before, doing) for change in self.files]

    def _undo(self) -> None:
        ws = Workspace(self.workspace)
        stamps = self._check_all(ws, True, "undone")
        for change, stamp in reversed(list(zip(self.files, stamps, strict=True))):
            _swap(ws, self.history, change.rel, stamp, change.before, "undone")
        for record in self.removed:
            self.history.mark_restored(record)
        if self.review_marker:
            ReviewLog(self.history).withdraw(self.review_marker)

    def _redo(self) -> None:
        ws = Workspace(self.workspace)
        stamps = self._check_all(ws, False, "redone")
        for change, stamp in zip(self.files, stamps, strict=True):
            _swap(ws, self.history, change.rel, stamp, change.after, "redone")
        self.removed = [
            self.history.log_removed(
                path=r.path,
                workspace=r.workspace,
                text=r.text,
                raw=r.raw,
                line=r.line,
                number=r.number,
                before=r.before,
                after=r.after,
                reason=r.reason,
            )
            for r in self.removed
        ]
        if self.review_marker:
            path = ws.path(self.files[-1].rel)
            version = self.history.latest(path)
            if version is not None:
                self.review_marker = ReviewLog(self.history).accept(path, version)

    def to_obj(self) -> dict[str, Any]:
        """The workspace, the files (by hash) and the removed-entry ids."""
        obj = super().to_obj()
        obj.update(
            {
                "workspace": self.workspace,
                "files": [f.to_obj() for f in self.files],
                "removed": [r.id for r in self.removed],
                "review_marker": self.review_marker,
            }
        )
        return obj

    @classmethod
    def from_obj(cls, obj: dict[str, Any], history: History) -> FileApplied:
        """Rebuild from :meth:`to_obj`, reading the bytes back from keepgui's history."""
        try:
            ws = Workspace(obj["workspace"])
            files = []
            for f in obj["files"]:
                path = ws.path(f["rel"])
                before = history.read(history.find(path, f["before"])) if f.get("before") else None
                files.append(FileChange(f["rel"], before, history.read(history.find(path, f["after"]))))
            removed = []
            for rid in obj.get("removed", ()):
                try:
                    removed.append(history.get_removed(rid))
                except NotFound:
                    continue
            applied = cls(
                obj["workspace"],
                files,
                removed,
                obj.get("lines", ()),
                obj["description"],
                history,
                obj.get("review_marker"),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable entry ({exc})") from None
        applied.state = obj.get("state", "applied")
        applied.at = obj.get("at", applied.at)
        return applied


register_applied_kind("workspace-files", FileApplied.from_obj)
