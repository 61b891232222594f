"""Hermes's queue of memory writes staged for approval, behind keepgui's approvals seam (no Qt).

With ``memory.write_approval`` on, Hermes does not write what its background review (or a
gateway chat, ``hermes -z``, a cron job) asks its memory tool to write: it stages the call as
``<home>/pending/memory/<8 hex>.json`` (``id``, ``subsystem``, ``action``, ``summary``,
``origin``, ``created_at`` in Unix seconds, ``payload`` — the tool call's arguments) and waits for
``/memory approve ID`` or ``/memory reject ID``. Skills have the same queue under
``pending/skills/``.

:class:`HermesApprovals` implements :class:`keepgui.core.approvals.Approvals` over every home of a
source: each staged memory write is shown as the whole file before and after, computed by Hermes's
own rules against the files as they are now (:func:`keepgui.backends.hermes.writes.simulate`:
the limit, duplicates, the unique substring match, the drift guard, the scan — none of which
Hermes applies when it stages, all of which it applies when a record is approved). Approving
replays the calls in ``created_at`` order under Hermes's lock and deletes each record once its
write succeeded — as ``/memory approve`` does — as one change whose undo puts the files and the
records back; rejecting deletes the records (undo writes them again, byte for byte).

Staged *skill* writes are listed with their diff and can be rejected; approving one is left to
Hermes (``/skills approve ID``), whose skill manager keepgui does not reproduce.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from keepgui.backends.hermes.entries import FILE_NAMES, MEMORY, USER, decode
from keepgui.backends.hermes.writes import MemoryFiles, Outcome, Snapshot, joined, simulate
from keepgui.core import fsio
from keepgui.core.approvals import PendingWrite
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound
from keepgui.core.source import Change, stamps_of

PENDING = "pending"
RECORD_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class Record:
    """One staged write as Hermes stored it."""

    home: str
    bank: str
    subsystem: str
    id: str
    path: str
    raw: bytes
    obj: dict[str, Any]

    @property
    def created_at(self) -> float:
        """Hermes's ``created_at`` (0 when missing, which sorts first, as in Hermes)."""
        value = self.obj.get("created_at", 0)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    @property
    def payload(self) -> dict[str, Any]:
        """The tool call's arguments."""
        value = self.obj.get("payload")
        return value if isinstance(value, dict) else {}

    @property
    def target(self) -> str:
        """``memory`` or ``user`` (Hermes's default for a missing target is ``memory``)."""
        return USER if self.payload.get("target") == USER else MEMORY

    @property
    def key(self) -> str:
        """Its id in keepgui: the record's id, prefixed by its profile outside the default home."""
        prefix = "" if self.bank == "default" else f"{self.bank}:"
        return f"{prefix}{self.subsystem[0] if self.subsystem == 'skills' else ''}{self.id}"


def read_records(home: str, bank: str, subsystem: str = "memory") -> tuple[list[Record], list[str]]:
    """The staged records of ``home`` in Hermes's order (``created_at``), and the files skipped (unreadable)."""
    folder = os.path.join(home, PENDING, subsystem)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return [], []
    out, skipped = [], []
    for name in names:
        path = os.path.join(folder, name)
        try:
            data, _stamp = fsio.read_stamped(path, limit=RECORD_LIMIT)
            obj = json.loads(data or b"")
        except (OSError, KeepguiError, ValueError):
            skipped.append(f"{path}: not a readable JSON record; Hermes skips it too")
            continue
        if not isinstance(obj, dict):
            skipped.append(f"{path}: not a JSON object; Hermes cannot list it")
            continue
        # Hermes approves and rejects a record by its file's name (<id>.json), whatever its "id" says
        out.append(Record(home, bank, subsystem, name[: -len(".json")], path, data or b"", obj))
    out.sort(key=lambda r: r.created_at)
    return out, skipped


class HermesApprovals:
    """The pending queue of every home of a source (see the module docstring).

    ``homes()`` gives ``(bank, home folder, MemoryFiles)`` for each home; ``source`` is the source's
    folder (targets are relative to it); ``reread(banks)`` is called after a write with the banks whose
    files changed (so their rows are read again).
    """

    def __init__(
        self,
        source: str,
        homes: Callable[[], list[tuple[str, str, MemoryFiles]]],
        reread: Callable[[str], Change] | None = None,
    ) -> None:
        self.source = source
        self.homes = homes
        self.reread = reread

    # ------------------------------------------------------------------ listing

    def records(self) -> list[Record]:
        """Every staged memory and skill record of every home, oldest first."""
        out: list[Record] = []
        for bank, home, _files in self.homes():
            for subsystem in ("memory", "skills"):
                out.extend(read_records(home, bank, subsystem)[0])
        out.sort(key=lambda r: r.created_at)
        return out

    def count(self) -> int:
        """How many writes are staged now (the sidebar's and the tray's figure)."""
        return len(self.records())

    def _files(self, bank: str) -> MemoryFiles:
        for name, _home, files in self.homes():
            if name == bank:
                return files
        raise NotFound(f"no Hermes home named {bank}")

    def _rel(self, path: str) -> str:
        return os.path.relpath(path, self.source)

    def pending(self) -> list[PendingWrite]:
        """Every staged write with the change it would make to the files as they are now. Memory writes
        are computed one after another in Hermes's order, each on the result of those before it."""
        states: dict[tuple[str, str], Snapshot] = {}
        out = []
        for record in self.records():
            if record.subsystem != "memory":
                out.append(self._skill(record))
                continue
            files = self._files(record.bank)
            key = (record.bank, record.target)
            snap = states.get(key) or files.read(record.target)
            outcome = simulate(snap, record.payload, files.limits(record.target))
            before = snap.state.raw if snap.data is not None else ""
            after = joined(outcome.entries) if outcome.entries is not None else before
            if outcome.success and outcome.entries is not None:
                states[key] = _advanced(snap, outcome, files)
            out.append(
                PendingWrite(
                    record.key,
                    self._rel(files.path(record.target)),
                    _summary(record),
                    before,
                    after,
                    int(record.created_at * 1000) if record.created_at else None,
                    record.bank,
                    "" if outcome.success else outcome.message,
                )
            )
        return out

    def _skill(self, record: Record) -> PendingWrite:
        payload = record.payload
        name = str(payload.get("name") or "?")
        rel = str(payload.get("file_path") or "SKILL.md")
        path = os.path.join(record.home, "skills", name, rel)
        try:
            current = decode(fsio.read_stamped(path, limit=RECORD_LIMIT)[0])
        except (OSError, KeepguiError, ValueError):
            current = ""
        action = payload.get("action")
        if action in ("create", "edit"):
            after = str(payload.get("content") or "")
        elif action == "patch":
            after = current.replace(str(payload.get("old_string") or ""), str(payload.get("new_string") or ""))
        elif action == "write_file":
            after = str(payload.get("file_content") or "")
        else:
            after = ""
        return PendingWrite(
            record.key,
            self._rel(path),
            _summary(record),
            current,
            after,
            int(record.created_at * 1000) if record.created_at else None,
            None,
            "a staged skill write: approve it in Hermes (/skills approve "
            f"{record.id}); keepgui shows and rejects skill writes but does not apply them",
        )

    def _find(self, ids: Sequence[str]) -> list[Record]:
        records = self.records()
        by_key = {r.key: r for r in records}
        wanted = [r.key for r in records] if list(ids) == ["all"] else list(ids)
        missing = [i for i in wanted if i not in by_key]
        if missing:
            raise NotFound(f"no staged Hermes write {', '.join(missing)} (it was approved or rejected meanwhile?)")
        chosen = set(wanted)
        return [r for r in records if r.key in chosen]

    # ------------------------------------------------------------------ approve and reject

    def approve(self, ids: Sequence[str]) -> Change:
        """Apply the staged memory writes ``ids`` (or ``["all"]``) in Hermes's order, as one change."""
        records = self._find(ids)
        pending = {p.id: p for p in self.pending()}
        refused = [f"{r.key}: {pending[r.key].problem}" for r in records if pending[r.key].problem]
        if refused:
            raise InvalidInput("nothing was approved: " + "; ".join(refused))
        undo: list[tuple[MemoryFiles, str, bytes | None, bytes | None]] = []
        written: list[str] = []
        try:
            for record in records:
                files = self._files(record.bank)
                result = files.tool(record.target, record.payload)
                if not result.success:
                    raise InvalidInput(f"{record.key}: {result.message}")
                if result.written:
                    undo.append((files, record.target, result.before, result.after))
                    written.append(files.path(record.target))
                fsio.remove_file(record.path)
        except KeepguiError:
            _put_back(undo, records)
            raise
        return self._change(f"Approve {_count(records)}", records, undo, written, approved=True)

    def reject(self, ids: Sequence[str]) -> Change:
        """Delete the staged writes ``ids`` (or ``["all"]``) without applying them (undo writes them back)."""
        records = self._find(ids)
        for record in records:
            fsio.remove_file(record.path, expect=fsio.read_stamped(record.path)[1])
        return self._change(f"Reject {_count(records)}", records, [], [], approved=False)

    def _change(
        self,
        text: str,
        records: list[Record],
        undo: list[tuple[MemoryFiles, str, bytes | None, bytes | None]],
        written: list[str],
        *,
        approved: bool,
    ) -> Change:
        banks = sorted({r.bank for r in records if r.subsystem == "memory"}) if written else []
        change = replace(
            self._reread(banks[0] if len(banks) == 1 else None, text),
            files=stamps_of(*written, *(r.path for r in records)),
            message=f"{'Approved' if approved else 'Rejected'} {_count(records)}",
        )

        def back() -> Change:
            _put_back(undo, records)
            undone = self._reread(change.bank, text)
            return replace(undone, files=stamps_of(*written, *(r.path for r in records)), reverse=forth)

        def forth() -> Change:
            redone = self.approve([r.key for r in records]) if approved else self.reject([r.key for r in records])
            return replace(redone, reverse=back)

        return replace(change, reverse=back)

    def _reread(self, bank: str | None, text: str) -> Change:
        if bank is not None and self.reread is not None:
            return replace(self.reread(bank), text=text, origin="keepgui")
        return Change(self.source, bank, text)


def _advanced(snap: Snapshot, outcome: Outcome, files: MemoryFiles) -> Snapshot:
    """``snap`` as it would be after ``outcome`` was written (for the next record's computation)."""
    from keepgui.backends.hermes.entries import read_state, serialize

    data = serialize(outcome.entries or [])
    return Snapshot(snap.target, snap.path, data, snap.stamp, read_state(snap.target, data, files.limits(snap.target)))


def _put_back(undo: list[tuple[MemoryFiles, str, bytes | None, bytes | None]], records: list[Record]) -> None:
    """Undo approvals: each file back to its bytes before (only over exactly what was written), and every
    record file written again as it was."""
    for files, target, before, after in reversed(undo):
        files.swap(target, before, after)
    for record in records:
        if not os.path.exists(record.path):
            fsio.make_dirs(os.path.dirname(record.path))
            fsio.atomic_write(record.path, record.raw, expect=fsio.Stamp.missing(), mode=0o644)


def _count(records: Sequence[Record]) -> str:
    n = len(records)
    return f"{n} staged write" + ("" if n == 1 else "s")


def _summary(record: Record) -> str:
    summary = record.obj.get("summary")
    origin = record.obj.get("origin")
    text = summary if isinstance(summary, str) and summary else f"{record.obj.get('action', '?')} ({record.subsystem})"
    by = {"background_review": "background review", "assistant_tool": "the agent", "foreground": "foreground"}
    return f"{text} — staged by {by.get(str(origin), str(origin or 'Hermes'))}"


def unified(pending: PendingWrite, context: int = 3) -> str:
    """A staged write as a unified diff of its target."""
    lines = difflib.unified_diff(
        pending.before.splitlines(keepends=True),
        pending.after.splitlines(keepends=True),
        f"a/{pending.target}",
        f"b/{pending.target}",
        n=context,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


__all__ = ["FILE_NAMES", "HermesApprovals", "Record", "read_records", "unified"]
