"""Writers killed with SIGKILL in the middle of their work, and logs left with a torn last line."""

from __future__ import annotations

import os
import random
import re
import signal
import time

from tests.reliability.child import (
    CRASH_BATCH_TEXTS,
    CRASH_NOW,
    CRASH_RULE_V1,
    CRASH_RULE_V2,
    append_batch_lines,
    append_batch_texts,
    rule_content,
)
from tests.reliability.common import send_go, spawn, wait_ready

_HEADER = re.compile(rb"v(\d+)\.(\d+)\n")


def _start(role: str, *args) -> object:
    proc = spawn(role, *args)
    wait_ready(proc, role)
    send_go(proc)
    return proc


def _kill_after(proc, rng: random.Random, at_least: int, jitter: float) -> tuple[int, int]:
    """Let the child report ``at_least`` units of progress, then SIGKILL it at a random moment.

    Waiting on the progress lines (a condition) guarantees some work was
    committed in this run; the small random delay after it is deliberate:
    it spreads the moment of death over the child's write cycle, so kills
    land before, inside and after its write, replace and fsync calls.
    Returns ``(progress when the kill was decided, last progress reported)``.
    """
    last = -1
    while last < at_least:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read().decode(errors="replace")
            raise RuntimeError(f"the child exited before it was killed: {err[-3000:]}")
        last = int(line)
    decided = last
    time.sleep(rng.random() * jitter)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for line in proc.stdout.read().split():  # what it still reported before it died
        last = max(last, int(line))
    proc.stdout.close()
    proc.stderr.close()
    return decided, last


def sigkill_rule_saves(
    folder: str, runs: int = 30, seed: int = 0, pad_min: int = 8_000, pad_max: int = 400_000, jitter: float = 0.004
) -> dict:
    """Kill a child that saves one rule in a loop (``Bank.write_rule``), ``runs`` times.

    After each kill the rule must be exactly one whole version this run
    saved (or the one in flight), never missing, empty or mixed; leftover
    files in ``rules/`` must be temporary names (``.tmp``, never ``.md``)
    that ``doctor`` reports as temp files, and ``rules`` must list only the rule.
    Returns ``runs``, ``torn`` (runs that broke any of that), ``temp_files``
    (kills that landed mid-write and left a temp file), ``failures`` (details).
    """
    from keepgui.backends.iii.doctor import diagnose
    from keepgui.backends.iii.store import DataDir
    from keepgui.core import fsio

    data_dir = os.path.join(folder, "memory")
    datadir = DataDir(data_dir)
    bank, _ = datadir.ensure_bank("main")
    rng = random.Random(seed)
    torn = temp_files = 0
    failures: list[str] = []
    path = os.path.join(bank.rules_path, "style.md")
    for run in range(runs):
        proc = _start("rule-saver", data_dir, "main", run, pad_min, pad_max)
        decided, last = _kill_after(proc, rng, rng.randint(1, 3), jitter)
        problems = []
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            data = None
        match = _HEADER.match(data or b"")
        if data is None:
            problems.append("the rule file is missing")
        elif not match:
            problems.append(f"the rule file is not a whole version ({len(data)} bytes: {data[:40]!r})")
        else:
            r, v = int(match.group(1)), int(match.group(2))
            if r != run or not decided <= v <= last + 1:
                problems.append(f"the rule is version {r}.{v}; expected one of {run}.{decided}..{run}.{last + 1}")
            elif data != rule_content(r, v, pad_min, pad_max).encode("utf-8"):
                problems.append(f"version {r}.{v} is there but its bytes are not the ones written ({len(data)})")
        leftovers = sorted(set(os.listdir(bank.rules_path)) - {"style.md"})
        bad = [n for n in leftovers if not fsio.is_temp_name(n) or n.endswith(".md")]
        if bad:
            problems.append(f"files that are not temporary names were left: {bad}")
        if bank.rule_names() != ["style"]:
            problems.append(f"`rules` lists {bank.rule_names()}")
        reported = sorted(os.path.basename(f.path) for f in diagnose(datadir) if f.kind == "temp-file")
        if reported != leftovers:
            problems.append(f"doctor reports temp files {reported}, the folder holds {leftovers}")
        temp_files += bool(leftovers)
        for name in leftovers:  # what a person does after doctor says "safe to delete"
            os.unlink(os.path.join(bank.rules_path, name))
        if problems:
            torn += 1
            failures.append(f"run {run}: " + "; ".join(problems))
    return {"runs": runs, "torn": torn, "temp_files": temp_files, "failures": failures}


def sigkill_log_appends(folder: str, runs: int = 20, seed: int = 0, max_batch: int = 60, jitter: float = 0.004) -> dict:
    """Kill a child that appends batches of memories through keepgui, ``runs`` times.

    The log is checked byte for byte after each kill: it must be what was
    there before, then every batch the child reported committed (each append
    begins with its own ``\\n``), then a prefix of the batch it was writing. A fresh replay must hold every committed record
    intact, and a long-lived incrementally refreshed MemoryLog must equal it.
    Returns ``runs``, ``torn`` (runs breaking any of that), ``torn_tails``
    (kills that cut a write short), ``partial_batches`` (a batch cut short
    at a line boundary, so some of its lines are there), ``unreported``
    (batches committed but killed before saying so), ``records``, ``failures``.
    """
    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.store import DataDir

    data_dir = os.path.join(folder, "memory")
    bank, _ = DataDir(data_dir).ensure_bank("main")
    follower = MemoryLog(bank.log_path)
    rng = random.Random(seed)
    offset, prev_torn = 0, False
    torn = torn_tails = partial = unreported = 0
    committed_texts: list[str] = []
    failures: list[str] = []
    for run in range(runs):
        proc = _start("log-appender", data_dir, "main", run, max_batch)
        _, last = _kill_after(proc, rng, rng.randint(0, 3), jitter)
        with open(bank.log_path, "rb") as fh:
            data = fh.read()
        new = data[offset:]
        head = b"".join(b"\n" + append_batch_lines(run, b, max_batch) for b in range(last + 1))
        inflight = b"\n" + append_batch_lines(run, last + 1, max_batch)
        problems = []
        rest = new[len(head) :]
        if not new.startswith(head):
            problems.append("the log does not hold exactly the committed batches after what was there")
        elif not inflight.startswith(rest):
            problems.append(
                f"after the committed batches come {len(rest)} bytes that are not a prefix of the batch being written"
            )
        elif rest == inflight:
            unreported += 1
        elif rest.endswith(b"\n"):
            partial += 1
        prev_torn = bool(rest) and not rest.endswith(b"\n")
        torn_tails += prev_torn
        for b in range(last + 1):
            committed_texts.extend(append_batch_texts(run, b, max_batch))
        fresh = MemoryLog(bank.log_path)
        fresh.refresh()
        texts = {m.text for m in fresh.records.values() if m.live}
        missing = [t for t in committed_texts if t not in texts]
        if missing:
            problems.append(f"{len(missing)} committed records are missing from a fresh replay")
        if fresh.unreadable:
            problems.append(f"the log became unreadable: {fresh.unreadable}")
        follower.refresh()
        if follower.records != fresh.records:
            problems.append("the incrementally refreshed state differs from a fresh replay")
        if (fresh.torn_tail is not None) != prev_torn:
            problems.append(f"torn tail reported: {fresh.torn_tail is not None}, expected {prev_torn}")
        offset = len(data)
        if problems:
            torn += 1
            failures.append(f"run {run}: " + "; ".join(problems))
    return {
        "runs": runs,
        "torn": torn,
        "torn_tails": torn_tails,
        "partial_batches": partial,
        "unreported": unreported,
        "records": len(committed_texts),
        "failures": failures,
    }


def torn_tail_then_append(folder: str) -> dict:
    """A log whose last line was cut short, then a keepgui save: nothing complete is lost.

    Three cases: the fragment is the start of a record; it is a whole record
    missing only its newline; it is cut inside a multi-byte UTF-8 character.
    Returns ``cases`` and ``failures`` (descriptions; empty when all held).
    """
    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.store import DataDir
    from keepgui.core.errors import KeepguiError

    failures: list[str] = []
    cases = {
        "start of a record": lambda line: line[: len(line) // 2],
        "a whole record without its newline": lambda line: line[:-1],
        "cut inside a UTF-8 character": lambda line: line[: line.index("é".encode()) + 1],
    }
    for i, (name, cut) in enumerate(cases.items()):
        bank, _ = DataDir(os.path.join(folder, f"torn-{i}")).ensure_bank("main")
        for n in range(3):
            bank.save(f"complete record number {n}", now=1 + n)
        lost = bank.get(bank.save("the record a crash cut short, é", now=5).record.id)
        with open(bank.log_path, "rb") as fh:
            data = fh.read()
        # Take the last record back off and leave only a fragment of it, as a crash would.
        line = lost.to_line()
        with open(bank.log_path, "wb") as fh:
            fh.write(data[: len(data) - len(line)] + cut(line))
        before = MemoryLog(bank.log_path)
        before.refresh()
        fresh_bank = DataDir(os.path.join(folder, f"torn-{i}")).bank("main")
        with open(bank.log_path, "rb") as fh:
            torn_bytes = fh.read()
        try:
            new = fresh_bank.save("a new record after the crash", now=9).record
        except KeepguiError as exc:
            # Refusing is right only where completing the line would make the bank unreadable,
            # and then nothing may have been written.
            with open(bank.log_path, "rb") as fh:
                unchanged = fh.read() == torn_bytes
            # (Such a bank is unloadable for the worker already: invalid UTF-8 in its last line.)
            if "UTF-8" not in str(exc) or not name.startswith("cut inside"):
                failures.append(f"{name}: the save was refused: {exc}")
            elif not unchanged:
                failures.append(f"{name}: the save was refused but the log changed")
            elif not before.unreadable:
                failures.append(f"{name}: refused, but the bank does not read as unloadable")
            continue
        if name.startswith("cut inside"):
            failures.append(f"{name}: the save went through after a torn line that is not valid UTF-8")
        after = MemoryLog(bank.log_path)
        after.refresh()
        texts = {m.text for m in after.records.values()}
        want = {f"complete record number {n}" for n in range(3)} | {new.text}
        if after.unreadable:
            failures.append(f"{name}: the save made the bank unreadable: {after.unreadable}")
        elif not want <= texts:
            failures.append(f"{name}: after the save the replay holds {sorted(texts)}")
        elif after.get(new.id) != new:
            failures.append(f"{name}: the new record is not intact")
        elif after.torn_tail is not None:
            failures.append(f"{name}: a torn tail is still reported after the repairing append")
    return {"cases": len(cases), "failures": failures}


RULE_POINTS = ("half-written", "before-fsync", "before-replace", "before-dir-fsync")
LOG_POINTS = ("half-written", "before-fsync")


def sigkill_at_points(folder: str) -> dict:
    """SIGKILL a save at each chosen point of fsio's write path, deterministically.

    Rule saves die with the temporary file half written, before its fsync,
    before the rename, and after the rename but before the folder fsync: the
    rule must then be exactly version one (exactly version two after the
    rename), with at most one leftover ``.tmp`` that ``doctor`` reports. Log
    appends die half-way through the batch's single write (a torn tail) and
    before the fsync: every earlier record must stay intact, the torn tail
    must be reported, and the next keepgui save must repair it and land intact.
    Returns ``points`` (how many were tried), ``torn`` and ``failures``.
    """
    from keepgui.backends.iii.doctor import diagnose
    from keepgui.backends.iii.log import MemoryLog
    from keepgui.backends.iii.store import DataDir
    from keepgui.core import fsio

    failures: list[str] = []
    tried = 0
    for what, points in (("rule", RULE_POINTS), ("log", LOG_POINTS)):
        for point in points:
            tried += 1
            data_dir = os.path.join(folder, f"{what}-{point}")
            datadir = DataDir(data_dir)
            bank, _ = datadir.ensure_bank("main")
            if what == "rule":
                bank.write_rule("style", CRASH_RULE_V1)
            else:
                for i in range(3):
                    bank.save(f"committed before the crash {i}", now=CRASH_NOW)
            proc = spawn("crash-at", data_dir, "main", what, point)
            wait_ready(proc, "crash-at")
            send_go(proc)
            _out, err = proc.communicate(timeout=60)
            where = f"{what} killed at {point}"
            if proc.returncode != -signal.SIGKILL:
                failures.append(f"{where}: the child was not killed (exit {proc.returncode}) {err[-500:]!r}")
                continue
            if what == "rule":
                content = bank.read_rule("style").content
                want = CRASH_RULE_V2 if point == "before-dir-fsync" else CRASH_RULE_V1
                if content != want:
                    failures.append(f"{where}: the rule is {content[:30]!r}…, not the whole expected version")
                leftovers = sorted(set(os.listdir(bank.rules_path)) - {"style.md"})
                reported = sorted(os.path.basename(f.path) for f in diagnose(datadir) if f.kind == "temp-file")
                if any(not fsio.is_temp_name(n) or n.endswith(".md") for n in leftovers) or reported != leftovers:
                    failures.append(f"{where}: leftovers {leftovers}, doctor reports {reported}")
                if len(leftovers) != (0 if point == "before-dir-fsync" else 1):
                    failures.append(f"{where}: {len(leftovers)} temporary files left")
                continue
            log = MemoryLog(bank.log_path)
            log.refresh()
            texts = {m.text for m in log.records.values()}
            committed = {f"committed before the crash {i}" for i in range(3)}
            if not committed <= texts:
                failures.append(f"{where}: committed records lost: {sorted(committed - texts)}")
            if point == "half-written" and log.torn_tail is None:
                failures.append(f"{where}: the half-written batch left no torn tail")
            if point == "before-fsync" and texts != committed | set(CRASH_BATCH_TEXTS):
                failures.append(f"{where}: a batch written before its fsync is not all there")
            try:
                new = DataDir(data_dir).bank("main").save("saved after the crash", now=CRASH_NOW + 2).record
            except Exception as exc:  # noqa: BLE001 - any refusal here is the finding
                failures.append(f"{where}: the next save failed: {exc}")
                continue
            after = MemoryLog(bank.log_path)
            after.refresh()
            if after.get(new.id) != new or not committed <= {m.text for m in after.records.values()}:
                failures.append(f"{where}: after the repairing save, records are missing or damaged")
            if after.torn_tail is not None or after.unreadable:
                failures.append(f"{where}: still torn or unreadable after the repairing save")
            # The fragment becomes one skipped line just before the new record (whole lines of
            # the cut batch before it are valid records: a batch cut short is partly visible).
            if point == "half-written" and [p.line for p in after.problems if p.kind == "corrupt"] != [after.lines - 1]:
                failures.append(
                    f"{where}: the torn fragment should be one skipped line ({after.lines - 1}): {after.problems}"
                )
    return {"points": tried, "torn": len(failures), "failures": failures}
