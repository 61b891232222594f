"""What keepgui has seen vs what a person accepted: the review log and the version a review starts from.

keepgui records every version of keep.md it reads ("seen"). Seeing a rewrite
does not accept it: the review compares against the version just before the
first change keepgui did not make itself since the last *acceptance*, and only
an explicit accept or applying restores from a review records one (in
``reviewed.jsonl`` beside the history). keepgui's own later edits (a keep, a
compaction) do not accept an earlier outside rewrite either.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from keepgui.backends.nanobot.workspace import KEEP_MD, MEMORY_MD, Workspace
from keepgui.core.errors import InvalidInput
from keepgui.core.history import History, Journal, Version, file_key
from keepgui.core.timefmt import now_ms

WRITTEN_SOURCES = frozenset({"saved", "compacted", "compaction-undone", "review-restored"})
"""History sources of versions keepgui wrote itself; every other version was found on disk."""

EMPTY_SHA = hashlib.sha256(b"").hexdigest()
"""The hash an acceptance records for a file that is gone."""


@dataclass(frozen=True)
class Acceptance:
    """A person's "this version is fine": the file, the version's hash and sequence number."""

    id: str
    path: str
    sha256: str
    seq: int
    at: int


class ReviewLog(Journal):
    """Which version of each file a person accepted, in ``<history root>/reviewed.jsonl``.

    Events: ``accepted`` ``{id, path, sha256, seq, at}`` and ``withdrawn``
    ``{id}`` (the undo of the apply that accepted). Separate from the version
    index on purpose: keepgui records every version it *sees*, and seeing is not
    accepting.
    """

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "reviewed.jsonl")

    def accept(self, path: str, version: Version | None) -> str:
        """Record that ``version`` of ``path`` (None: the file is gone) was accepted; returns the marker id."""
        marker = hashlib.sha256(f"{path}{now_ms()}{os.getpid()}{id(self)}".encode()).hexdigest()[:12]
        self._append(
            {
                "event": "accepted",
                "id": marker,
                "path": file_key(path),
                "sha256": version.sha256 if version else EMPTY_SHA,
                "seq": version.seq if version else -1,
                "at": now_ms(),
            }
        )
        return marker

    def withdraw(self, marker: str) -> None:
        """Forget an acceptance (its apply was undone)."""
        self._append({"event": "withdrawn", "id": marker, "at": now_ms()})

    def latest(self, path: str) -> Acceptance | None:
        """The most recent acceptance of ``path`` still standing, or None."""
        key = file_key(path)

        def acceptance(obj: dict[str, Any]) -> Acceptance | None:
            if obj.get("path") != key:
                return None
            try:
                return Acceptance(obj["id"], key, str(obj["sha256"]), int(obj["seq"]), int(obj.get("at", 0)))
            except (KeyError, TypeError, ValueError):
                return None

        found = self.standing("accepted", "withdrawn", acceptance)
        return found[-1] if found else None


def review_rel(name: str) -> str:
    """The workspace path of the document a review is about (keep.md or MEMORY.md, by name or path)."""
    if name in (KEEP_MD, "keep"):
        return KEEP_MD
    if name in (MEMORY_MD, "MEMORY.md", "memory"):
        return MEMORY_MD
    raise InvalidInput(f"keepgui reviews keep.md and MEMORY.md, not `{name}`")


def review_baseline(history: History, path: str, current: bytes | None) -> tuple[Version | None, list[Version]]:
    """The version a review compares with, and the versions recorded since it (see the module doc)."""
    versions = history.versions(path)
    marker = ReviewLog(history).latest(path)
    start = -1
    if marker is not None:
        if 0 <= marker.seq < len(versions) and versions[marker.seq].sha256 == marker.sha256:
            start = marker.seq
        else:
            start = next((v.seq for v in reversed(versions) if v.sha256 == marker.sha256), -1)
    for v in versions[start + 1 :]:
        if v.seq > 0 and v.source not in WRITTEN_SOURCES and v.sha256 != versions[v.seq - 1].sha256:
            return versions[v.seq - 1], versions[v.seq :]
    if (
        current is None
        and versions
        and (marker is None or marker.sha256 != EMPTY_SHA)
        and versions[-1].sha256 != EMPTY_SHA
    ):
        return versions[-1], []  # the file was deleted outside keepgui
    return None, []


def pending_review(workspace: Workspace, name: str = KEEP_MD, history: History | None = None) -> Version | None:
    """The version a review would compare with when an outside rewrite awaits review, else None."""
    history = history if history is not None else History()
    rel = review_rel(name)
    data, _stamp = workspace.read(rel)
    baseline, _since = review_baseline(history, workspace.path(rel), data)
    return baseline
