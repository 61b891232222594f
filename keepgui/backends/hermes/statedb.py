"""The sessions Hermes stored in ``state.db``, read without ever locking or writing its database (no Qt).

A resumed Hermes session (``hermes chat -r ID``, ``-c``, a gateway chat that continues) replays
the system prompt stored in ``state.db``'s ``sessions.system_prompt`` byte for byte, whatever
the memory files say now. So "what a resumed session sees" is that column.

``state.db`` is SQLite in WAL mode, written by every running Hermes process. Opening it with
SQLite, even read-only (``mode=ro``), takes locks in its ``-shm`` file and — as keepgui found by
experiment — *creates* ``state.db-wal`` and ``state.db-shm`` in Hermes's home when they are
absent; ``immutable=1`` takes no lock but ignores the WAL, where a running Hermes's newest
sessions are. keepgui therefore never opens Hermes's database with SQLite: it reads the bytes of
``state.db`` and ``state.db-wal`` (plain reads: no lock, no write), checks that no checkpoint or
commit moved them while it read (the files' size and time, and the WAL's header, before and
after; read again when they moved), and opens that copy in a private temporary folder of its
own, where SQLite replays the WAL's committed frames as it would for Hermes. The copy is removed
at once.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

DB_NAME = "state.db"
ATTEMPTS = 5
"""How often a read is tried again when a writer moved the files while it read."""

SIZE_LIMIT = 1 << 30
"""keepgui reads no state.db (or WAL) larger than this."""


@dataclass(frozen=True)
class StoredSession:
    """One session row of ``state.db``: the prompt a resume of it replays, and what identifies it."""

    id: str
    source: str
    model: str
    started_at: float
    ended_at: float | None
    end_reason: str
    title: str
    parent: str
    system_prompt: str | None


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _snapshot(path: str) -> tuple[bytes, bytes | None]:
    """The bytes of ``state.db`` and its WAL as one consistent moment (see the module docstring)."""
    wal = path + "-wal"
    for attempt in range(ATTEMPTS):
        before = (_stat(path), _stat(wal))
        db_bytes, _ = fsio.read_stamped(path, limit=SIZE_LIMIT)
        wal_bytes, _ = fsio.read_stamped(wal, limit=SIZE_LIMIT)
        after = (_stat(path), _stat(wal))
        if db_bytes is None:
            raise FileNotFoundError(path)
        if before == after and (before[0] is None or len(db_bytes) == before[0][0]):
            return db_bytes, wal_bytes
        time.sleep(0.02 * (attempt + 1))  # a writer is committing or checkpointing: let it finish
    raise KeepguiError(f"{path} kept changing while keepgui read it; try again in a moment")


_QUERY = (
    "SELECT id, source, model, started_at, ended_at, end_reason, title, parent_session_id, system_prompt "
    "FROM sessions ORDER BY started_at DESC LIMIT ?"
)


def read_sessions(home: str, limit: int = 10) -> list[StoredSession]:
    """The newest ``limit`` sessions of ``<home>/state.db``, newest first ([] when there is no database).

    Raises KeepguiError with the reason when the database cannot be read."""
    path = os.path.join(home, DB_NAME)
    if not os.path.isfile(path):
        return []
    try:
        db_bytes, wal_bytes = _snapshot(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise KeepguiError(f"{path}: {exc.strerror or exc}") from None
    folder = tempfile.mkdtemp(prefix="keepgui-hermes-state-")
    try:
        copy = os.path.join(folder, DB_NAME)
        fsio.atomic_write(copy, db_bytes, mode=0o600)
        if wal_bytes:
            fsio.atomic_write(copy + "-wal", wal_bytes, mode=0o600)
        return _query(copy, limit)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _query(copy: str, limit: int) -> list[StoredSession]:
    try:
        with contextlib.closing(sqlite3.connect(copy)) as conn:
            rows = conn.execute(_QUERY, (limit,)).fetchall()
    except sqlite3.DatabaseError as exc:
        raise KeepguiError(f"{os.path.basename(copy)}: keepgui cannot read Hermes's sessions ({exc})") from None
    out = []
    for row in rows:
        ident, source, model, started, ended, reason, title, parent, prompt = row
        out.append(
            StoredSession(
                str(ident),
                source or "",
                model or "",
                float(started or 0),
                None if ended is None else float(ended),
                reason or "",
                title or "",
                parent or "",
                prompt if isinstance(prompt, str) else None,
            )
        )
    return out
