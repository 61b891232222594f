"""Writes to MEMORY.md and USER.md that Hermes accepts as its own (no Qt).

Every write is Hermes's own kind of write (``tools/memory_tool.py`` of 0.19.0):

1. take an exclusive ``flock`` on the sidecar ``<file>.lock`` (opened for appending, created if
   missing; ``msvcrt.locking`` of its first byte on Windows) — the very lock Hermes's memory tool,
   its background review and ``/memory approve`` take, so neither side ever writes over the other;
2. read the file again under that lock and refuse (:class:`~keepgui.core.errors.Conflict`) when
   it is not what the person's change was based on;
3. write the whole list in Hermes's format — stripped, non-empty, unique entries joined by
   ``"\\n§\\n"``, UTF-8 without BOM, LF only, no trailing newline, an empty list as an empty file
   — atomically through :mod:`keepgui.core.fsio` (a symbolic link is written through to its
   target, as Hermes does); an existing file keeps its mode, a new one is made 0600 as Hermes
   makes it;
4. keep the version replaced in keepgui's history (so a rewrite that drops anything can be undone
   and reviewed), then let the lock go.

The tool's operations (:meth:`MemoryFiles.tool`) follow Hermes's rules exactly — ``add`` skips
the drift guard and is a no-op on an exact duplicate, ``replace``/``remove`` pick one entry by
unique substring, a batch is all or nothing, the limit is checked on the raw count, new text is
scanned — so an approved pending write lands as Hermes would land it. keepgui's own edits
(:meth:`MemoryFiles.rewrite`) check the same limit and scan but say so first and can be forced
(the person decides; the sidebar then says Hermes will refuse its own writes until the file is
consolidated). Hermes's ``.bak`` files are its drift guard's; keepgui keeps its own history instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from keepgui.backends.hermes.entries import (
    FILE_NAMES,
    SEPARATOR,
    FileState,
    read_state,
    serialize,
    size,
)
from keepgui.backends.hermes.threats import refusal, scan
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError
from keepgui.core.history import History

LOCK_WAIT = 3.0
"""How long a write waits for Hermes to let its memory lock go."""

FILE_LIMIT = 64 * 1024 * 1024


class Refused(InvalidInput):
    """A write Hermes's own rules refuse (over the limit, blocked by the scan, no unique match...):
    ``force`` lets a person write it anyway where keepgui allows that."""

    def __init__(self, message: str, *, forceable: bool = False) -> None:
        super().__init__(message)
        self.forceable = forceable


@dataclass(frozen=True)
class Snapshot:
    """One memory file as read: its bytes, stamp and entries."""

    target: str
    path: str
    data: bytes | None
    stamp: fsio.Stamp
    state: FileState

    @property
    def entries(self) -> list[str]:
        """The raw entries."""
        return self.state.texts


@dataclass(frozen=True)
class ToolResult:
    """What one of Hermes's memory tool operations did: ``success`` as Hermes reports it, the bytes
    before and after (equal when nothing was written), and Hermes's message or error."""

    success: bool
    message: str
    before: bytes | None = None
    after: bytes | None = None
    stamp: fsio.Stamp | None = None

    @property
    def written(self) -> bool:
        """True when the file's bytes changed."""
        return self.success and self.before != self.after


@dataclass
class MemoryFiles:
    """The two memory files of one home, written as Hermes writes them (see the module docstring).

    ``limits(target)`` gives the limit of a store now (the home's settings); ``history`` keeps
    every version keepgui replaced or wrote.
    """

    home: str
    limits: Callable[[str], int]
    history: History = field(default_factory=History)

    def path(self, target: str) -> str:
        """``<home>/memories/MEMORY.md`` or ``USER.md``."""
        return os.path.join(self.home, "memories", FILE_NAMES[target])

    def read(self, target: str) -> Snapshot:
        """The file as it is now (Unreadable errors become the state's ``problem``)."""
        path = self.path(target)
        try:
            data, stamp = fsio.read_stamped(path, limit=FILE_LIMIT)
        except (OSError, KeepguiError):
            data, stamp = None, fsio.Stamp.missing()
        return Snapshot(target, path, data, stamp, read_state(target, data, self.limits(target)))

    @contextlib.contextmanager
    def locked(self, target: str, expect: fsio.Stamp | None = None) -> Iterator[Snapshot]:
        """Hold Hermes's lock of ``target`` and yield the file read under it; Conflict when ``expect``
        (the stamp a change was based on) no longer describes it."""
        path = self.path(target)
        fsio.make_dirs(os.path.dirname(path))
        with fsio.sidecar_lock(path + ".lock", LOCK_WAIT, "Hermes"):
            snap = self.read(target)
            if snap.state.undecodable:
                raise InvalidInput(snap.state.problem)
            if expect is not None and not expect.same_content(snap.stamp):
                raise Conflict(path, expect, snap.stamp)
            yield snap

    def _write(self, snap: Snapshot, entries: Sequence[str]) -> tuple[bytes, fsio.Stamp]:
        """Write ``entries`` over ``snap`` (the lock held); the replaced bytes go to keepgui's history."""
        data = serialize(entries)
        if snap.data is not None:
            self.history.record(snap.path, snap.data, source="before-save")
        target = os.path.realpath(snap.path) if os.path.islink(snap.path) else snap.path
        stamp = fsio.atomic_write(target, data, expect=snap.stamp, mode=0o600)
        self.history.record(snap.path, data, source="saved")
        return data, stamp

    # ------------------------------------------------------------------ keepgui's own edits

    def check(self, target: str, entries: Sequence[str], changed: Sequence[str]) -> list[str]:
        """What Hermes would object to in ``entries`` (the whole new list) where ``changed`` are the new
        texts: over the limit, an entry longer than the whole limit, a text its scan blocks."""
        limit = self.limits(target)
        name = FILE_NAMES[target]
        out = []
        total = size(entries)
        if total > limit:
            out.append(
                f"{name} would be {total:,} / {limit:,} chars, over Hermes's limit: Hermes refuses its own "
                "memory writes until the file is consolidated under it"
            )
        for text in changed:
            if len(text) > limit:
                out.append(
                    f"an entry of {len(text):,} characters is longer than the whole limit ({limit:,}): "
                    "Hermes's replace and remove refuse the file until it is shortened"
                )
            found = scan(text).ids
            if found:
                out.append(f"{refusal(found)} (Hermes's prompt would show a [BLOCKED] placeholder instead)")
        return out

    def rewrite(
        self,
        target: str,
        change: Callable[[list[str]], tuple[list[str], list[str]]],
        *,
        expect: fsio.Stamp | None = None,
        force: bool = False,
    ) -> ToolResult:
        """Apply ``change`` (entries -> (new entries, new texts)) under the lock and write the result in
        Hermes's format; Refused (forceable) when Hermes would object and ``force`` is not given."""
        with self.locked(target, expect) as snap:
            new, changed = change(list(snap.entries))
            cleaned = list(dict.fromkeys(e.strip() for e in new if e.strip()))
            if not force:
                problems = self.check(target, cleaned, [c.strip() for c in changed])
                if problems:
                    raise Refused("; ".join(problems), forceable=True)
            if cleaned == snap.entries and snap.data == serialize(cleaned):
                return ToolResult(True, "nothing to change", snap.data, snap.data, snap.stamp)
            data, stamp = self._write(snap, cleaned)
            return ToolResult(True, "written", snap.data, data, stamp)

    def swap(self, target: str, data: bytes | None, expect: bytes | None) -> fsio.Stamp:
        """Put ``data`` back exactly (undo), only over exactly ``expect``; Conflict otherwise."""
        with self.locked(target) as snap:
            if snap.data != expect and not (snap.data in (None, b"") and expect in (None, b"")):
                raise Conflict(snap.path, None, snap.stamp)
            if snap.data is not None:
                self.history.record(snap.path, snap.data, source="before-save")
            if data is None:  # the file did not exist before: remove it again
                fsio.remove_file(snap.path, expect=snap.stamp)
                return fsio.Stamp.missing()
            return fsio.atomic_write(os.path.realpath(snap.path), data, expect=snap.stamp, mode=0o600)

    # ------------------------------------------------------------------ Hermes's tool, exactly

    def tool(self, target: str, payload: Mapping[str, Any]) -> ToolResult:
        """Replay one memory tool call (``action`` add / replace / remove / batch) by Hermes's rules,
        under Hermes's lock (what ``/memory approve`` does)."""
        with self.locked(target) as snap:
            outcome = simulate(snap, payload, self.limits(target))
            if not outcome.success or outcome.entries is None:
                return ToolResult(outcome.success, outcome.message, snap.data, snap.data, snap.stamp)
            data, stamp = self._write(snap, outcome.entries)
            return ToolResult(True, outcome.message, snap.data, data, stamp)


@dataclass(frozen=True)
class Outcome:
    """What a memory tool call would do to a file: ``entries`` to write (None: nothing is written)."""

    success: bool
    message: str
    entries: list[str] | None = None


def _drift_message(snap: Snapshot, limit: int) -> str:
    from keepgui.backends.hermes.entries import drift

    reason = drift(snap.state.raw, limit) if snap.data is not None else ""
    if not reason:
        return ""
    return (
        f"Refusing to write {FILE_NAMES[snap.target]}: file on disk has content that wouldn't round-trip "
        f"through the memory tool ({reason}); Hermes writes a .bak copy and changes nothing"
    )


def _scan_refusal(texts: Sequence[str]) -> str:
    for text in texts:
        found = scan(text).ids if text else ()
        if found:
            return refusal(found)
    return ""


def simulate(snap: Snapshot, payload: Mapping[str, Any], limit: int) -> Outcome:
    """What Hermes's memory tool would do with ``payload`` on the file ``snap`` (nothing is written)."""
    action = payload.get("action")
    if snap.state.undecodable:
        return Outcome(False, snap.state.problem)
    if action == "batch":
        return _simulate_batch(snap, payload.get("operations") or [], limit)
    content = (payload.get("content") or "").strip()
    old = (payload.get("old_text") or "").strip()
    entries = list(snap.entries)
    if action == "add":
        if not content:
            return Outcome(False, "Content cannot be empty.")
        blocked = _scan_refusal([content])
        if blocked:
            return Outcome(False, blocked)
        if content in entries:
            return Outcome(True, "Entry already exists (no duplicate added).")
        if size([*entries, content]) > limit:
            return Outcome(
                False,
                f"Memory at {size(entries):,}/{limit:,} chars. Adding this entry ({len(content)} chars) would "
                "exceed the limit.",
            )
        return Outcome(True, "Entry added.", [*entries, content])
    if action not in ("replace", "remove"):
        return Outcome(False, f"Unknown staged action '{action}'.")
    if not old:
        return Outcome(False, "old_text cannot be empty.")
    if action == "replace":
        if not content:
            return Outcome(False, "new_content cannot be empty. Use 'remove' to delete entries.")
        blocked = _scan_refusal([content])
        if blocked:
            return Outcome(False, blocked)
    drift = _drift_message(snap, limit)
    if drift:
        return Outcome(False, drift)
    hits = [i for i, e in enumerate(entries) if old in e]
    if not hits:
        return Outcome(False, f"No entry matched '{old}'.")
    if len({entries[i] for i in hits}) > 1:
        return Outcome(False, f"Multiple entries matched '{old}'. Be more specific.")
    if action == "remove":
        entries.pop(hits[0])
        return Outcome(True, "Entry removed.", entries)
    entries[hits[0]] = content
    if size(entries) > limit:
        return Outcome(False, f"Replacement would put memory at {size(entries):,}/{limit:,} chars.")
    return Outcome(True, "Entry replaced.", entries)


def _simulate_batch(snap: Snapshot, operations: Sequence[Any], limit: int) -> Outcome:
    if not operations:
        return Outcome(False, "operations list is empty.")
    for i, op in enumerate(operations):
        op = op if isinstance(op, Mapping) else {}
        if op.get("action") in ("add", "replace") and op.get("content"):
            blocked = _scan_refusal([op["content"]])
            if blocked:
                return Outcome(False, f"Operation {i + 1}: {blocked}")
    drift = _drift_message(snap, limit)
    if drift:
        return Outcome(False, drift)
    working = list(snap.entries)
    for i, op in enumerate(operations):
        error = _batch_step(working, op if isinstance(op, Mapping) else {}, i + 1)
        if error:
            return Outcome(False, error + " No operations were applied (batch is all-or-nothing).")
    if size(working) > limit:
        return Outcome(
            False,
            f"After applying all {len(operations)} operations, memory would be at {size(working):,}/{limit:,} "
            "chars -- over the limit.",
        )
    return Outcome(True, f"Applied {len(operations)} operation(s).", working)


def _batch_step(working: list[str], op: Mapping[str, Any], number: int) -> str:
    """Apply one batch operation to ``working`` in place; the error ("" when it applied)."""
    act = op.get("action")
    content = (op.get("content") or "").strip()
    old = (op.get("old_text") or "").strip()
    pos = f"Operation {number} ({act or 'unknown'})"
    if act == "add":
        if not content:
            return f"{pos}: content is required."
        if content not in working:
            working.append(content)
        return ""
    if act not in ("replace", "remove"):
        return f"{pos}: unknown action. Use add, replace, or remove."
    if not old:
        return f"{pos}: old_text is required."
    if act == "replace" and not content:
        return f"{pos}: content is required (use action='remove' to delete)."
    hits = [j for j, e in enumerate(working) if old in e]
    if not hits:
        return f"{pos}: no entry matched '{old}'."
    if len({working[j] for j in hits}) > 1:
        return f"{pos}: '{old}' matched multiple distinct entries -- be more specific."
    if act == "remove":
        working.pop(hits[0])
    else:
        working[hits[0]] = content
    return ""


def joined(entries: Sequence[str]) -> str:
    """The entries as Hermes writes them, as text."""
    return SEPARATOR.join(entries)
