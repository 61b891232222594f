"""Several processes appending to one ``memories.jsonl`` at the same time."""

from __future__ import annotations

import json
import os
import time

from tests.reliability.child import SHARED_TEXT, keepgui_text, worker_text
from tests.reliability.common import send_go, spawn, wait_ready


def concurrent_writers(
    folder: str,
    keepgui_procs: int = 2,
    records_each: int = 1500,
    worker_style_records: int = 1500,
    seed: int = 0,
    max_batch: int = 12,
    shared_every: int = 50,
    timeout: float = 600.0,
) -> dict:
    """Run keepgui writers and one worker-style writer against one bank at once, then read it back.

    ``keepgui_procs`` processes each save ``records_each`` distinct memories
    through keepgui (Bank.save and batches), and every ``shared_every``
    records reinforce one memory they all share; one process appends
    ``worker_style_records`` the worker's way (no lock, one write + fsync).
    All start on one signal.

    Returns ``written`` / ``read_back`` / ``lost`` (distinct memories),
    ``bad_lines`` (lines that do not parse, or do not re-encode to their own
    bytes), ``blank_lines`` (one per keepgui append, which begins with its own
    ``\\n``; the worker and keepgui skip them), ``interleaved`` (lines holding
    parts of two records),
    ``examples`` (the first odd lines, described),
    ``lost_reinforcements`` (shared saves that did not raise corroboration),
    ``repeated_revisions`` (two lines of an id with one revision number),
    ``order_errors`` (a process's records out of its own order), ``writer_switches``
    (adjacent lines from different writers: how much the writers overlapped),
    ``lines``, ``expected_lines``, ``seconds``.
    """
    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.record import RecordError, fingerprint, parse_line
    from keepgui.backends.iii.store import DataDir

    data_dir = os.path.join(folder, "memory")
    bank, _ = DataDir(data_dir).ensure_bank("main")
    procs = [
        spawn("keepgui-writer", data_dir, "main", p, records_each, seed, shared_every, max_batch)
        for p in range(keepgui_procs)
    ]
    if worker_style_records:
        procs.append(spawn("worker-writer", bank.log_path, worker_style_records, seed))
    try:
        for proc in procs:
            wait_ready(proc, "a writer")
        start = time.perf_counter()
        for proc in procs:  # every writer is ready: start them together
            send_go(proc)
        summaries = []
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"a writer failed (exit {proc.returncode}): {err.decode(errors='replace')[-3000:]}")
            summaries.append(json.loads(out.decode().strip().splitlines()[-1]))
        seconds = time.perf_counter() - start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    shared_saves = sum(s.get("shared_saves", 0) for s in summaries)
    expected: dict[str, tuple[int, int]] = {}  # id -> (writer, sequence number) in its writer's order
    texts: dict[str, str] = {}
    for p in range(keepgui_procs):
        for i in range(records_each):
            text = keepgui_text(p, i, seed)
            expected[fingerprint(text)] = (p, i)
            texts[fingerprint(text)] = text
    for i in range(worker_style_records):
        text = worker_text(i, seed)
        expected[fingerprint(text)] = (-1, i)
        texts[fingerprint(text)] = text
    written = len(expected) + (1 if shared_saves else 0)

    with open(bank.log_path, "rb") as fh:
        data = fh.read()
    bad_lines = interleaved = order_errors = repeated = blank = 0
    examples: list[str] = []
    last_seq: dict[int, int] = {}
    switches, previous_writer = 0, None  # consecutive lines from different writers: proof of real overlap
    shared_id = fingerprint(SHARED_TEXT)
    shared_revisions: list[int] = []
    lines = data.split(b"\n")
    if lines[-1]:
        bad_lines += 1  # a torn tail: no writer may leave one
    for lineno, line in enumerate(lines[:-1], 1):
        if not line.strip():
            blank += 1  # every shared-log append of keepgui begins with its own "\n"; readers skip them
            continue
        if line.count(b'{"id":') != 1:
            interleaved += 1
        try:
            memory = parse_line(line)
        except RecordError as exc:
            bad_lines += 1
            examples.append(f"line {lineno} does not parse ({exc}): {line[:100]!r}")
            continue
        if memory.to_line() != line + b"\n":
            bad_lines += 1
        if memory.id == shared_id:
            if shared_revisions and memory.revision <= shared_revisions[-1]:
                repeated += 1
            shared_revisions.append(memory.revision)
            continue
        where = expected.get(memory.id)
        if where is not None:
            writer, seq = where
            switches += previous_writer is not None and writer != previous_writer
            previous_writer = writer
            if seq <= last_seq.get(writer, -1):
                order_errors += 1
            last_seq[writer] = seq

    replay = MemoryLog(bank.log_path)
    replay.refresh()
    read_back = sum(
        1 for mid, text in texts.items() if (m := replay.records.get(mid)) is not None and m.text == text and m.live
    )
    shared = replay.records.get(shared_id)
    if shared_saves:
        read_back += shared is not None
    lost_reinforcements = 0
    if shared_saves:
        got = shared.corroboration + 1 if shared is not None else 0
        lost_reinforcements = shared_saves - got
    return {
        "written": written,
        "read_back": read_back,
        "lost": written - read_back,
        "bad_lines": bad_lines + len([p for p in replay.problems if p.kind != "corrupt"]),
        "blank_lines": blank,
        "examples": examples[:10],
        "interleaved": interleaved,
        "lost_reinforcements": lost_reinforcements,
        "repeated_revisions": repeated,
        "order_errors": order_errors,
        "writer_switches": switches,
        "lines": len(lines) - 1 - blank,
        "expected_lines": len(expected) + shared_saves,
        "seconds": seconds,
    }


def racing_appends(
    folder: str,
    saves: int = 300,
    pins: int = 300,
    worker_records: int = 1500,
    keepgui_procs: int = 1,
    via_cli: bool = False,
    seed: int = 0,
    worker_idle_ms: float = 0,
    timeout: float = 900.0,
) -> dict:
    """keepgui saves and pins racing the worker's real two-write append (spec §1.6a).

    One child appends ``worker_records`` records as the Rust worker does
    (``write(json)``, a 0-2 ms pause, ``write("\\n")``, no lock; then up to
    ``worker_idle_ms`` idle, to spread its records over a slower run) while
    ``keepgui_procs`` children each make ``saves`` saves and ``pins`` pin
    toggles (``via_cli``: the parent runs ``keepgui save`` / ``keepgui pin``
    commands instead, one process each, as a person's script would).

    Counts every record of both writers: ``written`` (records appended),
    ``read_back`` (the same ``(id, revision)`` found on a line of its own that
    parses), ``lost``, ``glued`` (lines holding more than one record),
    ``bad_lines`` (non-blank lines that do not parse), ``blank_lines`` (left
    by appends that began with their own newline; harmless), ``failed``
    (keepgui commands that exited non-zero), ``replay_ok`` (the final state
    has every memory with its last pin), ``worker_gaps`` (how often a keepgui
    append landed while a worker line lacked its newline: proof of a race).
    """
    import random

    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.record import RecordError, parse_line
    from keepgui.backends.iii.store import DataDir
    from tests.reliability.child import keepgui_text, two_write_record
    from tests.reliability.common import run_cli

    data_dir = os.path.join(folder, "memory")
    bank, _ = DataDir(data_dir).ensure_bank("main")
    worker = spawn("two-write-worker", bank.log_path, worker_records, seed, worker_idle_ms)
    writers = (
        []
        if via_cli
        else [spawn("save-pinner", data_dir, "main", saves, pins, seed * 10 + p) for p in range(keepgui_procs)]
    )
    written: list[tuple[str, int]] = []
    failed = 0
    start = time.perf_counter()
    try:
        for proc in [worker, *writers]:
            wait_ready(proc, "a writer")
        for proc in [worker, *writers]:
            send_go(proc)
        if via_cli:
            rng = random.Random(f"{seed}/cli")
            saved: list[str] = []
            order = ["save"] * saves + ["pin"] * pins
            rng.shuffle(order)
            for op in order:
                if op == "pin" and saved:
                    mid = rng.choice(saved)
                    result = run_cli(data_dir, "pin", "main", mid, *(["--off"] if rng.random() < 0.5 else []), "--json")
                else:
                    result = run_cli(data_dir, "save", "main", keepgui_text(8, len(saved), seed), "--json")
                if result.rc != 0:
                    failed += 1
                    continue
                record = json.loads(result.stdout)["memory"]
                if op != "pin" or not saved:
                    saved.append(record["id"])
                written.append((record["id"], record["revision"]))
        outputs = []
        for proc in writers + [worker]:
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"a writer failed (exit {proc.returncode}): {err.decode(errors='replace')[-3000:]}")
            outputs.append(json.loads(out.decode().strip().splitlines()[-1]))
    finally:
        for proc in [worker, *writers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    seconds = time.perf_counter() - start
    for summary in outputs[:-1]:
        written.extend((mid, rev) for mid, rev in summary["written"])
    keepgui_records = len(written)
    written.extend((two_write_record(i, seed)["id"], 0) for i in range(worker_records))

    with open(bank.log_path, "rb") as fh:
        data = fh.read()
    found: set[tuple[str, int]] = set()
    glued = bad = blank = gaps = 0
    lines = data.split(b"\n")
    previous = b""
    for line in lines[:-1]:
        # A keepgui line right after a worker line, with no blank line between, began while
        # the worker's line still lacked its newline: its own "\n" ended the worker's line.
        gaps += b"two-write worker" in previous and b"keepgui writer" in line
        previous = line
        if not line.strip():
            blank += 1
            continue
        if line.count(b'{"id":') > 1:
            glued += 1
            continue
        try:
            memory = parse_line(line)
        except RecordError:
            bad += 1
            continue
        found.add((memory.id, memory.revision))
    lost = [key for key in written if key not in found]
    replay = MemoryLog(bank.log_path)
    replay.refresh()
    last: dict[str, int] = {}
    for mid, rev in written:
        last[mid] = max(rev, last.get(mid, -1))
    replay_ok = all((m := replay.records.get(mid)) is not None and m.revision == rev for mid, rev in last.items())
    return {
        "written": len(written),
        "keepgui_records": keepgui_records,
        "worker_records": worker_records,
        "read_back": len(written) - len(lost),
        "lost": len(lost),
        "glued": glued,
        "bad_lines": bad + (1 if lines[-1] else 0),
        "blank_lines": blank,
        "failed": failed,
        "replay_ok": replay_ok,
        "worker_gaps": gaps,
        "examples": [repr(k) for k in lost[:5]],
        "seconds": seconds,
    }
