"""The review of a Gemini memory file a running session wrote over keepgui's edit (no Qt).

Gemini's agent edits memory files from the copy its session loaded at start, with a plain
truncate-and-write: an edit keepgui made meanwhile is silently overwritten by the session's stale copy.
keepgui cannot prevent that (Gemini takes no lock), so it detects it: every version keepgui writes is
kept in its history (:mod:`.writes`), and when a file no longer holds lines of the version keepgui
last wrote, :func:`review` makes a :class:`~keepgui.core.compaction.Plan` of them — one operation per
lost line, putting it back where it was (after the line that preceded it, when that line is still
there). Lines keepgui itself had added are selected by default: those are the edit the session
overwrote. Applying is one undoable write; accepting the file as it is stops the review from showing
(recorded in keepgui's history, ``gemini-reviewed.jsonl``).

No compaction is planned for Gemini: it enforces no size limit, so there is nothing to cut to (the
sidebar and the documents editor show the bytes every request carries instead).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

from keepgui.backends.gemini.memory import split_lines
from keepgui.backends.gemini.writes import SAVED, FileChange, save
from keepgui.core import fsio, textdiff
from keepgui.core.compaction import (
    Applied,
    Counts,
    Plan,
    Selection,
    make_operation,
    register_kinds,
)
from keepgui.core.errors import InvalidInput, Unreadable
from keepgui.core.history import History, Journal, Version, file_key
from keepgui.core.source import Notice
from keepgui.core.timefmt import now_ms

RESTORE = "gemini-restore-line"
register_kinds({RESTORE: "Lost line"})


class ReviewLog(Journal):
    """Which version of each file a person accepted after a review (``gemini-reviewed.jsonl``)."""

    def __init__(self, history: History) -> None:
        super().__init__(history, "gemini-reviewed.jsonl")

    def accept(self, path: str, sha: str) -> None:
        """Record that the content ``sha`` of ``path`` was accepted as it is."""
        marker = hashlib.sha256(f"{path}{sha}{now_ms()}".encode()).hexdigest()[:12]
        self._append({"event": "accepted", "id": marker, "path": file_key(path), "sha256": sha, "at": now_ms()})

    def accepted(self, path: str) -> set[str]:
        """Every content of ``path`` a person accepted."""
        key = file_key(path)
        return {
            str(obj.get("sha256"))
            for obj in self.standing("accepted", "withdrawn", lambda o: o if o.get("path") == key else None)
        }


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="surrogateescape")


def _nonblank(lines: Iterable[str]) -> list[str]:
    return [line for line in lines if line.strip()]


def last_written(history: History, path: str) -> tuple[Version | None, Version | None]:
    """keepgui's last write of ``path`` and the version it replaced (None, None: keepgui never wrote it)."""
    versions = history.versions(path)
    for version in reversed(versions):
        if version.source == SAVED:
            # the version just before keepgui's write is what it replaced (recorded as BEFORE, or the same
            # bytes recorded earlier: history keeps one version for equal bytes in a row)
            return version, versions[version.seq - 1] if version.seq > 0 else None
    return None, None


class OverwriteReview(Plan):
    """Lines of keepgui's last write of a file that the file no longer holds, as restore operations."""

    kind = "gemini-review"
    KINDS = (RESTORE,)

    def __init__(
        self,
        path: str,
        data: bytes | None,
        stamp: fsio.Stamp,
        lost: list[tuple[str, str | None, bool]],
        history: History,
        notices: Iterable[Notice] = (),
    ) -> None:
        self.path = path
        self.data = data
        self.stamp = stamp
        self.history = history
        self.lost = lost
        ops = [
            make_operation(
                RESTORE,
                [f"line:{k}"],
                [],
                [line.rstrip("\r\n")],
                (
                    "keepgui wrote this line; the file was saved again without it (most likely by a running "
                    "Gemini session from its older copy)"
                    if ours
                    else "in keepgui's last version of the file, gone since (removed outside keepgui)"
                ),
                selected=ours,
                evidence=[f"after: {after.rstrip()}" if after else "at the top of the file"],
            )
            for k, (line, after, ours) in enumerate(lost)
        ]
        super().__init__(ops, notices, path)

    @property
    def text(self) -> str:
        """The file's text now."""
        return _text(self.data)

    def restored(self, selection: Selection = None) -> str:
        """The file's text with the selected lost lines put back."""
        chosen = {self.origin[op.id] for op in self.selected(selection)}
        lines = split_lines(self.text)
        ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += ending
        for k in sorted(chosen, reverse=True):
            line, after, _ours = self.lost[k]
            raw = line if line.endswith("\n") else line + ending
            at = lines.index(after) + 1 if after is not None and after in lines else len(lines)
            lines.insert(at, raw)
        return "".join(lines)

    def counts(self, selection: Selection = None) -> Counts:
        """Lines now → after restoring the selection."""
        before = len(_nonblank(split_lines(self.text)))
        after = len(_nonblank(split_lines(self.restored(selection))))
        return Counts("lines", before, after)

    def render(self, selection: Selection = None, context: int = 3) -> str:
        """The file now → with the selected lines restored, as a unified diff."""
        name = os.path.basename(self.path)
        return textdiff.unified(self.text, self.restored(selection), f"now/{name}", f"restored/{name}", context)

    def check_fresh(self) -> None:
        """Stale when the file changed since the review read it."""
        if not fsio.current_stamp(self.path).same_content(self.stamp):
            raise self.stale(f"{self.path} changed since the review read it")

    def replan(self) -> OverwriteReview:
        """The review again, from the file as it is now."""
        return review(self.path, self.history)

    def apply(self, selection: Selection = None) -> Applied:
        """Put the selected lines back (one write, conflict-checked) and accept the result."""
        self.check_fresh()
        ops = self.selected(selection)
        data = self.restored(selection).encode("utf-8", errors="surrogateescape")
        if not ops or data == self.data:
            return ReviewApplied(None, self.path, 0)
        change = save(self.path, data, self.stamp, history=self.history, text=f"Restore {len(ops)} lost lines")
        ReviewLog(self.history).accept(self.path, hashlib.sha256(data).hexdigest())
        return ReviewApplied(change, self.path, len(ops), self.data, data)

    def accept(self) -> None:
        """Accept the file as it is (the review stops showing it)."""
        self.check_fresh()
        ReviewLog(self.history).accept(self.path, self.stamp.sha256)

    def describe(self) -> str:
        """How many lines were lost, and how many of them keepgui had written."""
        ours = sum(1 for _l, _a, o in self.lost if o)
        n = len(self.lost)
        lines = f"{n} line{'s' if n != 1 else ''} of keepgui's last version {'are' if n != 1 else 'is'} gone"
        if not ours:
            return lines
        return f"{lines} (keepgui's own edit)" if ours == n else f"{lines} ({ours} of them keepgui's own edit)"


class ReviewApplied(Applied):
    """A restore applied from a review: undo puts the file back as it was (refused when it changed since)."""

    kind = "gemini-review-applied"

    def __init__(
        self, change: FileChange | None, path: str, count: int, before: bytes | None = None, after: bytes | None = None
    ) -> None:
        super().__init__(
            f"restore {count} line{'' if count == 1 else 's'} of {os.path.basename(path)}", [], change is not None, path
        )
        self.change = change
        self.before, self.after = before, after
        self._undone: FileChange | None = None

    def _undo(self) -> None:
        if self.change is None:
            return
        self._undone = self.change.undo()

    def _redo(self) -> None:
        if self._undone is not None:
            self.change = self._undone.undo()

    def to_obj(self) -> dict[str, Any]:
        """For the command line's ``--undo``: the file's bytes before and after the restore."""

        def b64(data: bytes | None) -> str | None:
            return None if data is None else base64.b64encode(data).decode("ascii")

        return {**super().to_obj(), "before": b64(self.before), "after": b64(self.after)}

    @classmethod
    def from_obj(cls, obj: dict[str, Any]) -> ReviewApplied:
        """A restore applied from the command line, back from :meth:`to_obj` (its ``change`` is None: the
        bank's ``undo_applied`` writes ``before`` back over exactly ``after``)."""
        try:
            if obj.get("kind") != cls.kind or obj.get("before") is None or obj.get("after") is None:
                raise ValueError(f"kind {obj.get('kind')!r}, or no bytes kept")
            before, after = base64.b64decode(obj["before"]), base64.b64decode(obj["after"])
            path = str(obj["target"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"keepgui's compaction journal has an unusable entry ({exc})") from None
        applied = cls(None, path, 0, before, after)
        applied.description = obj.get("description", applied.description)
        applied.state = obj.get("state", "applied")
        return applied


def lost_lines(ours_text: str, before_text: str | None, now_text: str) -> list[tuple[str, str | None, bool]]:
    """Lines of ``ours_text`` (keepgui's last write) that ``now_text`` no longer holds, each with the line
    before it in ``ours_text`` and whether keepgui's write had added it (to ``before_text``)."""
    ours = split_lines(ours_text)
    now = Counter(line.rstrip("\r\n") for line in split_lines(now_text))
    added = Counter(line.rstrip("\r\n") for line in split_lines(ours_text))
    added.subtract(Counter(line.rstrip("\r\n") for line in split_lines(before_text or "")))
    out: list[tuple[str, str | None, bool]] = []
    for k, line in enumerate(ours):
        body = line.rstrip("\r\n")
        if not body.strip():
            continue
        if now[body] > 0:
            now[body] -= 1
            continue
        is_ours = before_text is not None and added[body] > 0
        if is_ours:
            added[body] -= 1
        out.append((line, ours[k - 1] if k > 0 else None, is_ours))
    return out


def review(path: str, history: History) -> OverwriteReview:
    """What of keepgui's last write of ``path`` the file lost since (empty when nothing, or accepted)."""
    data, stamp = fsio.read_stamped(path, limit=16 * 1024 * 1024)
    mine, before = last_written(history, path)
    if mine is None or (data is None and mine is None):
        return OverwriteReview(path, data, stamp, [], history, [_nothing(path, "keepgui has not written it")])
    if stamp.sha256 == mine.sha256 or stamp.sha256 in ReviewLog(history).accepted(path):
        return OverwriteReview(path, data, stamp, [], history, [_nothing(path, "nothing lost since keepgui wrote it")])
    try:
        ours = _text(history.read(mine))
        old = _text(history.read(before)) if before is not None else None
    except Unreadable:
        return OverwriteReview(path, data, stamp, [], history, [_nothing(path, "keepgui's copy is unreadable")])
    lost = lost_lines(ours, old, _text(data))
    notices = []
    if lost:
        notices.append(
            Notice(
                "stale-overwrite",
                "warning",
                f"{os.path.basename(path)} was saved again after keepgui's edit and lost {len(lost)} "
                f"line{'s' if len(lost) != 1 else ''} of it. "
                "A Gemini CLI session that was running writes its own, older copy of a file: the lines below are "
                "what it dropped. Restore them, or accept the file as it is.",
            )
        )
    return OverwriteReview(path, data, stamp, lost, history, notices)


def _nothing(path: str, why: str) -> Notice:
    return Notice("nothing-to-review", "info", f"{os.path.basename(path)}: {why}")


def review_due(path: str, history: History) -> bool:
    """True when :func:`review` would find lost lines (cheap when keepgui never wrote the file)."""
    mine, _before = last_written(history, path)
    if mine is None:
        return False
    current = fsio.current_stamp(path)
    if current.sha256 == mine.sha256 or current.sha256 in ReviewLog(history).accepted(path):
        return False
    return bool(review(path, history).operations)
