"""Every write keepgui makes in a Codex home: notes created by Codex's rule and never over another file,
the files Codex owns never written, ``memories/`` never created in a V2 home, the consolidation
lease respected, the summary and AGENTS.md saved atomically over exactly what was read."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import stat
import sys
import time

import pytest

from keepgui.backends.codex import writes
from keepgui.backends.codex.demo import write_baseline
from keepgui.backends.codex.layout import active_root
from keepgui.backends.codex.memory import consolidation_lease
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, ReadOnly


def put(root, rel: str, content: str | bytes) -> str:
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def lease(home, until: int, db: str = "memories_v2_1.sqlite", status: str = "running") -> None:
    """A consolidation job row as Codex writes it (the columns read are the real ones)."""
    with sqlite3.connect(os.path.join(str(home), db)) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS jobs (kind TEXT NOT NULL, job_key TEXT NOT NULL, status TEXT NOT NULL, "
            "worker_id TEXT, ownership_token TEXT, started_at INTEGER, finished_at INTEGER, lease_until INTEGER, "
            "retry_at INTEGER, retry_remaining INTEGER NOT NULL, last_error TEXT, input_watermark INTEGER, "
            "last_success_watermark INTEGER, PRIMARY KEY (kind, job_key))"
        )
        conn.execute("DELETE FROM jobs")
        conn.execute(
            "INSERT INTO jobs VALUES ('memory_consolidate_global', 'global', ?, 'w', 't', ?, NULL, ?, NULL, 3, "
            "NULL, 0, 0)",
            (status, until - 3600, until),
        )


# ---------------------------------------------------------------------- notes


def test_a_note_is_named_by_codex_rule_and_written_verbatim(tmp_path):
    os.makedirs(tmp_path / "memories_v2")
    root = active_root(str(tmp_path))
    at = 1_749_999_000.7  # 2025-06-15T14:50:00Z
    done = writes.keep_note(str(tmp_path), root, "Use `uv run pytest` — always!", at=at)
    path = str(done.result)
    name = os.path.basename(path)
    assert name == "2025-06-15T14-50-00-use-uv-run-pytest-always.md" and writes.NOTE_NAME.match(name)
    assert os.path.dirname(path) == str(tmp_path / "memories_v2" / "extensions" / "ad_hoc" / "notes")
    assert read(path) == "Use `uv run pytest` — always!".encode()  # no newline added, as Codex's tool
    second = writes.keep_note(str(tmp_path), root, "Use `uv run pytest` — always!", at=at)
    assert os.path.basename(str(second.result)) == "2025-06-15T14-50-00-use-uv-run-pytest-always-2.md"
    assert read(path) == "Use `uv run pytest` — always!".encode()  # the first one untouched


def test_slugs_stay_within_codex_limits():
    assert writes.slug_of("Ünïcode only ☃") == "unicode-only"
    assert writes.slug_of("☃☃") == "note"
    long = writes.slug_of("word " * 60)
    assert len(long) <= 80 and not long.endswith("-") and not long.startswith("-")
    name = writes.note_name(long, 0, attempt=12)
    assert writes.NOTE_NAME.match(name) and len(name.encode()) <= 128 and name.endswith("-12.md")
    with pytest.raises(InvalidInput):
        writes.note_name("-bad", 0)


def test_an_empty_note_is_refused(tmp_path):
    with pytest.raises(InvalidInput, match="must not be empty"):
        writes.keep_note(str(tmp_path), active_root(str(tmp_path)), " \n\u3000")
    assert os.listdir(tmp_path) == []


def test_a_note_in_a_home_without_roots_creates_memories_v2_never_memories(tmp_path):
    root = active_root(str(tmp_path))
    writes.keep_note(str(tmp_path), root, "first note")
    assert sorted(os.listdir(tmp_path)) == ["memories_v2"]
    assert active_root(str(tmp_path)).version == "v2"
    with pytest.raises(ReadOnly, match=r"would create .*memories, and a home with an entry named `memories`"):
        writes.check_writable(str(tmp_path), root, str(tmp_path / "memories" / "extensions" / "x.md"))
    assert not os.path.lexists(tmp_path / "memories")


def test_a_v1_home_gets_its_notes_under_memories(tmp_path):
    os.makedirs(tmp_path / "memories")
    os.makedirs(tmp_path / "memories_v2")
    done = writes.keep_note(str(tmp_path), active_root(str(tmp_path)), "v1 note")
    assert str(done.result).startswith(str(tmp_path / "memories" / "extensions" / "ad_hoc" / "notes") + os.sep)


def test_a_file_named_memories_has_no_root_for_notes(tmp_path):
    put(tmp_path, "memories", "not a folder")
    with pytest.raises(ReadOnly, match="not a folder"):
        writes.keep_note(str(tmp_path), active_root(str(tmp_path)), "x")


@pytest.mark.parametrize(
    "rel",
    [
        "memories_v2/raw_memories.md",
        "memories_v2/rollout_summaries/a.md",
        "memories_v2/phase2_workspace_diff.md",
        "memories_v2/.git/HEAD",
        "memories_v2/.codex-baseline/.git/codex-baseline.lock",
        "memories_v2/extensions/external_agent_import/resources/2025-01-01T00-00-00-x.md",
        "memories_v2/extensions/ad_hoc/instructions.md",
        "memories/raw_memories.md",
        "memories_v2.lock",
        "memories_1.sqlite-wal",
    ],
)
def test_codex_owned_paths_are_never_written(tmp_path, rel):
    os.makedirs(tmp_path / "memories_v2")
    with pytest.raises(ReadOnly, match="nothing was written"):
        writes.check_writable(str(tmp_path), active_root(str(tmp_path)), str(tmp_path / rel))


def test_the_consolidation_lease_refuses_writes_under_the_root(tmp_path):
    os.makedirs(tmp_path / "memories_v2")
    root = active_root(str(tmp_path))
    lease(tmp_path, int(time.time()) + 600)
    assert consolidation_lease(str(tmp_path)) is not None
    with pytest.raises(ReadOnly, match="consolidation holds the memory folder until"):
        writes.keep_note(str(tmp_path), root, "blocked")
    lease(tmp_path, int(time.time()) - 5)  # a lease that ran out: free again
    assert consolidation_lease(str(tmp_path)) is None
    writes.keep_note(str(tmp_path), root, "now it goes")
    lease(tmp_path, int(time.time()) + 600, db="memories_1.sqlite")  # either database may hold it
    with pytest.raises(ReadOnly):
        writes.keep_note(str(tmp_path), root, "blocked again")
    lease(tmp_path, int(time.time()) + 600, db="memories_1.sqlite", status="done")
    writes.keep_note(str(tmp_path), root, "a finished job holds nothing")


def test_undo_removes_only_a_note_no_consolidation_has_seen(tmp_path):
    os.makedirs(tmp_path / "memories_v2")
    root = active_root(str(tmp_path))
    done = writes.keep_note(str(tmp_path), root, "take me back")
    path = str(done.result)
    undone = done.reverse()
    assert not os.path.exists(path) and undone.reverse is not None
    redone = undone.reverse()
    assert read(path) == b"take me back"
    rel = os.path.relpath(path, root.path)
    write_baseline(root.path, {rel: b"take me back"}, int(time.time()))
    with pytest.raises(ReadOnly, match="already read it, and Codex's notes are never deleted"):
        redone.reverse()
    assert read(path) == b"take me back"


def test_undo_of_a_note_edited_since_is_refused(tmp_path):
    os.makedirs(tmp_path / "memories_v2")
    done = writes.keep_note(str(tmp_path), active_root(str(tmp_path)), "mine")
    put(os.path.dirname(str(done.result)), os.path.basename(str(done.result)), "someone edited it")
    with pytest.raises(Conflict):
        done.reverse()
    assert read(str(done.result)) == b"someone edited it"


def _keeper(home: str, at: float, queue) -> None:
    root = active_root(home)
    done = writes.keep_note(home, root, "the same fact, kept at the same second " * 50, at=at)
    queue.put(str(done.result))


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
def test_notes_kept_at_once_by_many_processes_are_all_kept_whole(tmp_path):
    os.makedirs(tmp_path / "memories_v2")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    at = time.time()
    procs = [ctx.Process(target=_keeper, args=(str(tmp_path), at, queue)) for _ in range(8)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(30)
    paths = sorted(queue.get(timeout=5) for _ in procs)
    assert len(set(paths)) == 8
    folder = os.path.dirname(paths[0])
    assert sorted(os.path.join(folder, n) for n in os.listdir(folder)) == paths  # no temporary file left
    assert all(read(p) == ("the same fact, kept at the same second " * 50).encode() for p in paths)


# ---------------------------------------------------------------------- whole files


def test_the_summary_is_saved_over_exactly_what_was_read_and_undone(tmp_path):
    path = put(tmp_path, "memories_v2/memory_summary.md", "v1\n- old\n")
    os.chmod(path, 0o600)
    root = active_root(str(tmp_path))
    _data, stamp = fsio.read_stamped(path)
    done = writes.save_summary(str(tmp_path), root, b"v1\n- new\n", stamp)
    assert read(path) == b"v1\n- new\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(Conflict):
        writes.save_summary(str(tmp_path), root, b"v1\n- stale\n", stamp)
    back = done.reverse()
    assert read(path) == b"v1\n- old\n"
    back.reverse()
    assert read(path) == b"v1\n- new\n"
    lease(tmp_path, int(time.time()) + 600)
    _data, now = fsio.read_stamped(path)
    with pytest.raises(ReadOnly, match="consolidation holds"):
        writes.save_summary(str(tmp_path), root, b"v1\n- during a run\n", now)
    assert read(path) == b"v1\n- new\n"


def test_a_summary_edit_racing_codex_is_refused_not_lost(tmp_path):
    path = put(tmp_path, "memories_v2/memory_summary.md", "v1\n- before\n")
    _data, stamp = fsio.read_stamped(path)
    put(tmp_path, "memories_v2/memory_summary.md", "v1\n- consolidation wrote this\n")
    with pytest.raises(Conflict):
        writes.save_summary(str(tmp_path), active_root(str(tmp_path)), b"v1\n- mine\n", stamp)
    assert read(path) == b"v1\n- consolidation wrote this\n"


def test_a_new_agents_md_is_created_and_its_undo_removes_it(tmp_path):
    os.makedirs(tmp_path / "codex")
    project = tmp_path / "p"
    project.mkdir()
    root = active_root(str(tmp_path / "codex"))
    done = writes.save_instructions(
        str(tmp_path / "codex"), root, str(project / "AGENTS.md"), b"new rules\n", fsio.Stamp.missing()
    )
    assert read(project / "AGENTS.md") == b"new rules\n"
    done.reverse()
    assert not (project / "AGENTS.md").exists()
