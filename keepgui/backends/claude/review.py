"""Review what Claude (or Auto Dream) changed in a memory folder, entry by entry, and restore.

keepgui keeps every version of the memory folder it has seen: :func:`remember`
stores each ``*.md`` file's bytes in keepgui's history (content-addressed,
outside the folder) and a *manifest* of the folder (``rel -> sha256``) as a
version of a virtual file beside them, only when something changed. The
*baseline* is the manifest a person last accepted (keepgui's own writes accept
what they leave); :func:`review` compares it with the folder now:

* a topic file gone is **deleted** — or **merged** when its body now stands,
  nearly word for word, in another file that was added or rewritten;
* a topic file with other bytes is **rewritten**; a new one is **new**;
* ``MEMORY.md`` shortened or rewritten is reported with its line counts, and
  every entry line dropped for a file that still exists can be put back.

The review is a :class:`keepgui.core.compaction.Plan`, so the existing review
dialog shows it: each operation is a restore (selected: none by default), the
diff shows what applying it writes, and the apply is one undoable change.
:meth:`FolderReview.accept` takes the folder as it is as the new baseline.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Sequence

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from keepgui.core import fsio
from keepgui.backends.claude.compact import Edit, FolderPlan, Texts
from keepgui.backends.claude.markdown import decode, split_front_matter
from keepgui.backends.claude.memory import INDEX_NAME, MemoryFolder, parse_link_line, read_folder
from keepgui.backends.claude.writes import links_to, split_lines
from keepgui.core.compaction import Counts, Operation, Selection, make_operation
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History, Journal
from keepgui.core.timefmt import now_ms

MANIFEST_NAME = ".keepgui-folder-versions"
"""The virtual file (never created on disk) whose versions in keepgui's history are the folder's manifests."""

MERGE_THRESHOLD = 90.0
"""A deleted memory counts as merged into an added or rewritten file that holds its body this closely
(rapidfuzz ``partial_ratio``: the best-matching stretch of the other file)."""

MERGE_MIN_CHARS = 20
"""A body shorter than this is never called merged (too little to tell)."""


def manifest_path(memory_dir: str) -> str:
    """The history key of a folder's manifests."""
    return os.path.join(memory_dir, MANIFEST_NAME)


def _manifest_of(
    folder: MemoryFolder, compare: dict[str, str] | None = None
) -> tuple[dict[str, str], dict[str, bytes]]:
    """``(rel -> sha256, rel -> bytes)`` of the folder's files. A file whose stamp (as the folder was
    read) matches ``compare`` is taken from the stamp and not read again; the others are read, and
    their bytes returned (every file's when ``compare`` is None)."""
    files: dict[str, str] = {}
    data: dict[str, bytes] = {}
    paths = [(t.rel, t.path, t.stamp) for t in folder.topics]
    if folder.index.exists:
        paths.append((INDEX_NAME, folder.index.path, folder.index.stamp))
    for rel, path, stamp in paths:
        if compare is not None and stamp.sha256 and compare.get(rel) == stamp.sha256:
            files[rel] = stamp.sha256
            continue
        try:
            content, _stamp = fsio.read_stamped(path)
        except (OSError, KeepguiError):
            continue
        if content is not None:
            files[rel] = hashlib.sha256(content).hexdigest()
            data[rel] = content
    return files, data


def _encode(files: dict[str, str]) -> bytes:
    return json.dumps({"files": files}, sort_keys=True, separators=(",", ":")).encode("utf-8")


def remember(folder: MemoryFolder, history: History | None = None, *, source: str = "seen") -> str:
    """Store the folder's files and its manifest in keepgui's history; returns the manifest's sha256."""
    history = history or History()
    previous = load_manifest(history, folder.path)
    files, data = _manifest_of(folder, previous)
    for rel, sha in files.items():
        if previous.get(rel) != sha:
            history.record(os.path.join(folder.path, rel), data[rel], source=source)
    return history.record(manifest_path(folder.path), _encode(files), source=source).sha256


def load_manifest(history: History, memory_dir: str, sha256: str | None = None) -> dict[str, str]:
    """A manifest (``rel -> sha256``): the one with ``sha256``, else the latest ({} when none)."""
    key = manifest_path(memory_dir)
    version = history.find(key, sha256) if sha256 else history.latest(key)
    if version is None:
        return {}
    try:
        obj = json.loads(history.read(version))
    except (KeepguiError, ValueError):
        return {}
    files = obj.get("files") if isinstance(obj, dict) else None
    return (
        {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(files, dict) else {}
    )


class Baselines(Journal):
    """Which manifest of each folder a person accepted last (keepgui's own writes accept too)."""

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "claude-reviewed.jsonl")

    def accept(self, memory_dir: str, sha256: str) -> None:
        """Take the manifest ``sha256`` as the folder's baseline."""
        # a fresh id per event: accepting an earlier manifest again must make it the latest
        self._append(
            {
                "event": "accepted",
                "id": secrets.token_hex(8),
                "memory_dir": os.path.realpath(memory_dir),
                "sha256": sha256,
                "at": now_ms(),
            }
        )

    def latest(self, memory_dir: str) -> str | None:
        """The sha256 of the folder's accepted manifest, or None."""
        key = os.path.realpath(memory_dir)
        found = [e for e in self.standing("accepted", "withdrawn") if e.get("memory_dir") == key]
        return found[-1].get("sha256") if found else None


def accept_current(folder: MemoryFolder, history: History | None = None, source: str = "seen") -> str:
    """Remember the folder and take it as it is as the baseline; returns the manifest's sha256."""
    history = history or History()
    sha = remember(folder, history, source=source)
    Baselines(history).accept(folder.path, sha)
    return sha


def _label(rel: str, data: bytes) -> str:
    """How a review lists a memory: its file and the first line of its text (the diff shows it whole)."""
    body = split_front_matter(decode(data)).body
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return f"{rel}: {first}" if first else rel


def _body_words(data: bytes) -> str:
    """A topic file's body (front matter left out) as rapidfuzz compares it."""
    return default_process(split_front_matter(decode(data)).body)


class FolderReview(FolderPlan):
    """The changes since the baseline, each a restore operation (see the module docstring)."""

    kind = "claude-review"

    def __init__(
        self, folder: MemoryFolder, history: History, baseline: dict[str, str], baseline_sha: str | None
    ) -> None:
        self.baseline = baseline
        self.baseline_sha = baseline_sha
        self.current, self._data = _manifest_of(folder, baseline)
        operations, edits, self.summary_parts = _review(folder, history, baseline, self.current, self._data)
        super().__init__(folder, history, operations, edits, folder.path)

    @property
    def pending(self) -> bool:
        """True when the folder differs from its baseline."""
        return bool(self.baseline) and self.baseline != self.current

    def describe(self) -> str:
        """``3 memories deleted, 2 merged, index shortened (230 → 140 lines)`` ("no changes" when none)."""
        return ", ".join(self.summary_parts) or "no changes since the last review"

    def replan(self) -> FolderReview:
        """The review computed again from the folder as it is now."""
        return review(self.folder.path, self.history)

    def counts(self, selection: Selection = None) -> Counts:
        """Memories now → after restoring the selection."""
        after: dict[str, str | None] = dict(self.current)
        for rel, text in self.texts_after(selection).items():
            if rel != INDEX_NAME:
                after[rel] = "restored" if text is not None else None
        live = [r for r, v in after.items() if v is not None and r != INDEX_NAME]
        now = [r for r in self.current if r != INDEX_NAME]
        return Counts(
            "memories", len(now), len(live), None, {"baseline": len([r for r in self.baseline if r != INDEX_NAME])}
        )

    def accept(self) -> str:
        """Take the folder as this review saw it as the baseline (a change made after the review was
        computed still shows in the next one)."""
        sha = self.history.record(manifest_path(self.folder.path), _encode(self.current), source="accepted").sha256
        Baselines(self.history).accept(self.folder.path, sha)
        return sha

    def _description(self, ops: Sequence[Operation]) -> str:
        return f"Restore {len(ops)} change{'s' if len(ops) != 1 else ''} to the memory folder"


def _review(
    folder: MemoryFolder, history: History, base: dict[str, str], now: dict[str, str], data: dict[str, bytes]
) -> tuple[list[Operation], list[Edit], list[str]]:
    operations: list[Operation] = []
    edits: list[Edit] = []
    summary: list[str] = []
    if not base or base == now:
        return operations, edits, summary

    def old_bytes(rel: str) -> bytes | None:
        try:
            return history.read(history.find(os.path.join(folder.path, rel), base[rel]))
        except KeepguiError:
            return None

    old_index = old_bytes(INDEX_NAME) if INDEX_NAME in base else None
    old_index_lines = split_lines(old_index.decode("utf-8", errors="surrogateescape")) if old_index else []

    def index_lines_for(rel: str) -> list[tuple[int, str]]:
        return [(n, line) for n, line in enumerate(old_index_lines) if links_to(line, rel)]

    def restore_lines(texts: Texts, lines: list[tuple[int, str]], rel: str) -> None:
        index = texts[INDEX_NAME] or ""
        current = split_lines(index)
        if any(links_to(line, rel) for line in current):
            return
        newline = "\r\n" if index.endswith("\r\n") else "\n"
        if current and not current[-1].endswith(("\n", "\r")):
            current[-1] += newline
        for position, line in lines:
            current.insert(min(position, len(current)), line if line.endswith(("\n", "\r")) else line + newline)
        texts[INDEX_NAME] = "".join(current)

    added_or_changed = {rel: data[rel] for rel in now if rel != INDEX_NAME and base.get(rel) != now[rel]}
    deleted = merged = rewritten = new = 0
    for rel in sorted(r for r in base if r != INDEX_NAME and r not in now):
        before = old_bytes(rel)
        if before is None:
            continue
        words = _body_words(before)
        into = None
        if len(words) >= MERGE_MIN_CHARS:
            for other, content in added_or_changed.items():
                if fuzz.partial_ratio(words, _body_words(content)) >= MERGE_THRESHOLD:
                    into = other
                    break
        lines = index_lines_for(rel)

        def restore_deleted(
            texts: Texts, rel: str = rel, before: bytes = before, lines: list[tuple[int, str]] = lines
        ) -> None:
            texts[rel] = before.decode("utf-8", errors="surrogateescape")
            if lines:
                restore_lines(texts, lines, rel)

        if into:
            merged += 1
            reason = (
                f"{rel} was deleted; its words now stand in {into} (merged). Restore brings the file back "
                "and leaves the merged one as it is"
            )
        else:
            deleted += 1
            reason = f"{rel} was deleted. Restore writes it back" + (" with its index line" if lines else "")
        operations.append(
            make_operation(
                "merged" if into else "removed",
                [rel],
                [_label(rel, before)],
                [],
                reason,
                evidence=[into] if into else [],
            )
        )
        edits.append(restore_deleted)
    for rel in sorted(r for r in now if r != INDEX_NAME and r in base and base[r] != now[r]):
        before = old_bytes(rel)
        if before is None:
            continue
        rewritten += 1

        def restore_rewritten(texts: Texts, rel: str = rel, before: bytes = before) -> None:
            texts[rel] = before.decode("utf-8", errors="surrogateescape")

        operations.append(
            make_operation(
                "reworded",
                [rel],
                [_label(rel, before)],
                [_label(rel, data[rel])],
                f"{rel} was rewritten. Restore puts the earlier version back",
            )
        )
        edits.append(restore_rewritten)
    for rel in sorted(r for r in now if r != INDEX_NAME and r not in base):
        new += 1
        operations.append(
            make_operation(
                "new",
                [rel],
                [],
                [_label(rel, data[rel])],
                f"{rel} is new (reported only: keepgui never deletes a memory unasked)",
                applicable=False,
            )
        )
        edits.append(_reported_only)
    if INDEX_NAME in base and base.get(INDEX_NAME) != now.get(INDEX_NAME) and old_index is not None:
        now_lines = (
            split_lines(data[INDEX_NAME].decode("utf-8", errors="surrogateescape")) if INDEX_NAME in data else []
        )
        dropped: list[tuple[int, str]] = []
        now_targets = {p[1] for p in (parse_link_line(line.rstrip("\r\n")) for line in now_lines) if p}
        for n, line in enumerate(old_index_lines):
            parsed = parse_link_line(line.rstrip("\r\n"))
            if parsed and parsed[1] not in now_targets and parsed[1] in now:
                dropped.append((n, line))
        word = "shortened" if len(now_lines) < len(old_index_lines) else "rewritten"
        summary_index = f"index {word} ({len(old_index_lines)} → {len(now_lines)} lines)"
        if dropped:

            def restore_index_lines(texts: Texts, dropped: list[tuple[int, str]] = dropped) -> None:
                for n, line in dropped:
                    parsed = parse_link_line(line.rstrip("\r\n"))
                    if parsed is not None:  # every dropped line links a memory (it was chosen for that)
                        restore_lines(texts, [(n, line)], parsed[1])

            operations.append(
                make_operation(
                    "removed",
                    [INDEX_NAME],
                    [line.rstrip("\r\n") for _n, line in dropped],
                    [],
                    f"{len(dropped)} index line{'s' if len(dropped) != 1 else ''} "
                    "dropped for memories that still exist (not visible at session start)."
                    " Restore puts them back",
                )
            )
            edits.append(restore_index_lines)
    else:
        summary_index = ""
    for count, what in ((deleted, "deleted"), (merged, "merged"), (rewritten, "rewritten"), (new, "new")):
        if count:
            summary.append(
                f"{count} {'memory' if count == 1 else 'memories'} {what}" if not summary else f"{count} {what}"
            )
    if summary_index:
        summary.append(summary_index)
    return operations, edits, summary


def _reported_only(texts: Texts) -> None:
    """The edit of an operation that is only reported: it changes nothing."""


def review(memory_dir: str, history: History | None = None) -> FolderReview:
    """What changed in a memory folder since its baseline (the first look takes it as the baseline)."""
    history = history or History()
    folder = read_folder(memory_dir)
    accepted = Baselines(history).latest(memory_dir)
    if accepted is None:
        accepted = accept_current(folder, history)
    else:
        remember(folder, history)
    baseline = load_manifest(history, memory_dir, accepted)
    return FolderReview(folder, history, baseline, accepted)
