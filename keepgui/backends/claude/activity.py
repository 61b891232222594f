"""When a Claude Code project's memories were written, and how they link to each other.

**When.** Two honest sources, and nothing guessed:

* a topic file's **time** is when it was last written (by the agent, its
  background extraction, Auto Dream or a person): for a file keepgui has seen
  unchanged since, that time is an event;
* keepgui's own **history of the folder** (:mod:`.review` records a manifest
  of the folder each time it sees it change): a file that appeared between two
  versions is a *create*, one with other bytes an *edit*, one that went a
  *retirement* — keyed by the retired row keepgui shows for it when keepgui
  forgot it. An event takes the file's own time when that time falls between
  the two versions (the file system knows better than when keepgui looked),
  else the time keepgui saw the new version.

**Links.** The CLI tells its agent to link memories as ``[[name]]``, ``name``
being a topic file's front-matter name (a kebab-case slug): those names, and
each file's name without ``.md``, are what rows link by.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from keepgui.backends.claude.compact import manifest_path
from keepgui.backends.claude.memory import INDEX_NAME, MemoryFolder
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History
from keepgui.core.source import CREATED, EDITED, RETIRED, Activity

NOTE = (
    "topic files' own times, and every version of the memory folder keepgui has seen "
    "(a file that appeared, changed or went between two of them)"
)


def row_names(folder: MemoryFolder) -> dict[str, str]:
    """``[[name]]`` -> topic file: each file's front-matter name and its file name without ``.md``."""
    out: dict[str, str] = {}
    for topic in folder.topics:
        stem = os.path.splitext(os.path.basename(topic.rel))[0]
        for name in (stem, topic.name):
            if name:
                out.setdefault(name, topic.rel)
    return out


def _files(data: bytes) -> dict[str, str] | None:
    try:
        obj = json.loads(data)
    except ValueError:
        return None
    files = obj.get("files") if isinstance(obj, dict) else None
    return {k: v for k, v in files.items() if k != INDEX_NAME} if isinstance(files, dict) else None


@dataclass
class FolderActivity:
    """The events of one memory folder, read on from the last manifest version compared."""

    memory_dir: str
    history: History
    _seen: int = 0
    _last: tuple[int, dict[str, str]] | None = None
    _baseline: dict[str, str] = field(default_factory=dict)
    _events: list[tuple[int, str, str]] = field(default_factory=list)

    def update(self, folder: MemoryFolder, forgotten: dict[str, str]) -> Activity:
        """Every event so far (``folder`` as last read; ``forgotten``: topic file -> its retired row's key)."""
        versions = self.history.versions(manifest_path(self.memory_dir))
        if len(versions) < self._seen:  # keepgui's history was cleared: start again
            self._seen, self._last, self._baseline, self._events = 0, None, {}, []
        mtimes = {t.rel: (t.mtime_ms, t.stamp.sha256) for t in folder.topics}

        def when(rel: str, sha: str, lo: int, hi: int) -> int:
            # the file's own time, if it is the bytes this version holds and it falls in between
            mtime, now_sha = mtimes.get(rel, (None, None))
            return mtime if mtime is not None and now_sha == sha and lo < mtime <= hi else hi

        for version in versions[self._seen :]:
            try:
                files = _files(self.history.read(version))
            except (KeepguiError, OSError):
                files = None
            if files is None:
                continue  # a missing stored copy: the next version is compared with the last one read
            if self._last is None:
                self._baseline = dict(files)
            else:
                at, before = self._last
                for rel, sha in files.items():
                    if rel not in before:
                        self._events.append((when(rel, sha, at, version.at), CREATED, rel))
                    elif before[rel] != sha:
                        self._events.append((when(rel, sha, at, version.at), EDITED, rel))
                for rel in before.keys() - files.keys():
                    self._events.append((version.at, RETIRED, forgotten.get(rel, rel)))
            self._last = (version.at, files)
        self._seen = len(versions)
        first_seen = versions[0].at if versions else None
        # a file keepgui first saw, unchanged since: its time says when it was written
        written = [
            (mtime, CREATED, rel)
            for rel, sha in self._baseline.items()
            for mtime, now_sha in [mtimes.get(rel, (None, None))]
            if mtime is not None and now_sha == sha and (first_seen is None or mtime <= first_seen)
        ]
        return Activity.from_events(self._events + written, note=NOTE)
