"""What a nanobot workspace can honestly say about its keep.md entries: when they changed, and
which projects they name.

**When.** keep.md has no dates (the keep skill forbids them: "No dates. Date adds
noise"), and nanobot's own git leaves it out. What is known is keepgui's own
history (:mod:`keepgui.core.history`): every version of the file keepgui saw,
and when. :class:`KeepActivity` compares each version with the one before: an
entry that appeared is a *create*, one that disappeared a *retirement* (keyed
by the retired row keepgui shows for it, when it logged the removal), and an
entry replaced in place (same line, other text) an *edit*. The first version
keepgui saw is the baseline, not a day of captures: activity starts there
(:attr:`Activity.since`).

**Which projects.** The keep skill keeps facts about the user, "not facts scoped
to one named project (that is project)": the ``/project`` skill keeps those
under ``projects/<slug>/``. Those folder names are the only names a workspace
defines, so an entry *names a project* when its text holds the slug, its words
separated by spaces, hyphens or underscores (case ignored): ``slow-bytes``
matches "Slow Bytes". People are not named: keep.md is a flat list of one-line
facts with no fields, and nothing in a workspace lists people, so any name
found would be a guess the agent never made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import regex

from keepgui.backends.nanobot.keepmd import KeepDoc, normalise
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History, RemovedEntry
from keepgui.core.source import CREATED, EDITED, RETIRED, Activity

PROJECTS_DIR = "projects"
"""Where the ``/project`` skill keeps project notes: one folder per project slug."""

NOTE = "versions of keep.md keepgui has seen (keep.md has no dates), each compared with the one before"


def project_slugs(root: str) -> tuple[str, ...]:
    """The project slugs of a workspace (its ``projects/<slug>/`` folders), sorted; () when none."""
    folder = os.path.join(root, PROJECTS_DIR)
    try:
        names = os.listdir(folder)
    except OSError:
        return ()
    return tuple(sorted(n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(folder, n))))


@dataclass(frozen=True)
class ProjectMatcher:
    """Finds the projects an entry names (see the module docstring)."""

    slugs: tuple[str, ...] = ()
    _patterns: tuple[tuple[str, regex.Pattern[str]], ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, slugs: tuple[str, ...]) -> ProjectMatcher:
        """A matcher for these slugs."""
        patterns = []
        for slug in slugs:
            words = [w for w in regex.split(r"[\s_\-]+", slug) if w]
            if words:
                body = r"[\s_\-]*".join(regex.escape(w) for w in words)
                patterns.append((slug, regex.compile(rf"(?<![\p{{L}}\p{{N}}_]){body}(?![\p{{L}}\p{{N}}_])", regex.I)))
        return cls(slugs, tuple(patterns))

    def named_in(self, text: str) -> tuple[str, ...]:
        """The slugs ``text`` names, in slug order."""
        return tuple(slug for slug, pattern in self._patterns if pattern.search(text))


def _entries(doc: KeepDoc) -> dict[str, tuple[int, str]]:
    """Entry id -> (physical line, normalised text)."""
    return {e.id: (e.line, e.key) for e in doc.entries}


@dataclass
class KeepActivity:
    """The events of one keep.md from keepgui's history, read on from the last version seen."""

    path: str
    history: History
    removed_prefix: str
    _seen: int = 0
    _last: dict[str, tuple[int, str]] | None = None
    _events: list[tuple[int, str, str]] = field(default_factory=list)
    _since: int | None = None

    def update(self) -> Activity:
        """Compare the versions recorded since the last call; every event so far."""
        versions = self.history.versions(self.path)
        if len(versions) < self._seen:  # the history was cleared: start again
            self._seen, self._last, self._events, self._since = 0, None, [], None
        new = versions[self._seen :]
        if new:
            removed = self.history.removed(self.path, include_restored=True)
            for version in new:
                try:
                    doc = KeepDoc.parse(self.history.read(version), self.path)
                except (KeepguiError, OSError):
                    continue  # a missing stored copy: the next version is compared with the last one read
                entries = _entries(doc)
                if self._last is None:
                    self._since = version.at
                else:
                    self._events.extend(_compare(self._last, entries, version.at, removed, self.removed_prefix))
                self._last = entries
            self._seen = len(versions)
        return Activity.from_events(self._events, since=self._since, note=NOTE)


def _compare(
    before: dict[str, tuple[int, str]],
    after: dict[str, tuple[int, str]],
    at: int,
    removed: list[RemovedEntry],
    removed_prefix: str,
) -> list[tuple[int, str, str]]:
    """The events between two versions of keep.md, all at ``at``."""
    appeared = {key: value for key, value in after.items() if key not in before}
    gone = {key: value for key, value in before.items() if key not in after}
    events: list[tuple[int, str, str]] = []
    line_of_new = {line: key for key, (line, _text) in appeared.items()}
    for key, (line, text) in gone.items():
        replacement = line_of_new.pop(line, None)
        if replacement is not None:  # the same line now says something else: an edit
            events.append((at, EDITED, replacement))
            appeared.pop(replacement)
            continue
        logged = [r for r in removed if normalise(r.text) == text and r.removed_at <= at]
        retired = removed_prefix + max(logged, key=lambda r: r.removed_at).id if logged else key
        events.append((at, RETIRED, retired))
    events.extend((at, CREATED, key) for key in appeared)
    return events
