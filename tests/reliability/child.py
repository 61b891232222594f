"""Entry points of the helper processes: ``python -m tests.reliability.child ROLE ARGS...``.

Every role prints ``ready`` once its imports are done, waits for one line on
stdin (so all writers start together), then works, printing progress lines
the parent uses as its "this much is committed" signal.

Roles:
    keepgui-writer DATA_DIR BANK PROC RECORDS SEED SHARED_EVERY MAX_BATCH
        saves RECORDS distinct memories through keepgui (single saves and
        batches), and every SHARED_EVERY records reinforces one shared memory;
        prints a JSON summary at the end.
    worker-writer LOG RECORDS SEED
        appends RECORDS records the worker's way: ``open(log, "ab")``, one
        ``write(json + "\\n")``, ``fsync``; no lock, no keepgui code.
    two-write-worker LOG RECORDS SEED [IDLE_MS]
        appends RECORDS records exactly as the Rust worker does (spec §1.6a):
        ``write(json)``, a random 0-2 ms pause, ``write("\\n")``, ``fsync``;
        no lock; then idles up to IDLE_MS (default 0) before the next record.
        Prints a JSON summary at the end.
    save-pinner DATA_DIR BANK SAVES PINS SEED
        interleaves SAVES saves of new memories and PINS pin toggles of
        memories it saved, each one ``Bank.save`` / ``Bank.pin`` (one locked
        append); prints every ``[id, revision]`` it wrote as a JSON summary.
    rule-saver DATA_DIR BANK RUN PAD_MIN PAD_MAX
        writes rule ``style`` through ``Bank.write_rule`` in a loop, version
        after version, printing each version number once it is saved.
    log-appender DATA_DIR BANK RUN MAX_BATCH
        appends batches of memories through keepgui in a loop, printing each
        batch number once the batch is committed.
    crash-at DATA_DIR BANK rule|log POINT
        one save that SIGKILLs itself at a chosen point (see :func:`crash_at`).
"""

from __future__ import annotations

import json
import os
import random
import sys


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


# ---------------------------------------------------------------------- deterministic contents

_WORDS = ["alpha", "beta", "café", "日本", "naïve", "🎉", 'quote"d', "back\\slash", "tab\there", "zeta"]


def keepgui_text(proc: int, i: int, seed: int) -> str:
    """The text keepgui writer ``proc`` saves as its ``i``-th record (unique, 30..~700 bytes)."""
    rng = random.Random(f"{seed}/{proc}/{i}")
    filler = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 80)))
    return f"keepgui writer {proc} record {i:07d} {filler}"


def worker_text(i: int, seed: int) -> str:
    """The text the worker-style writer saves as its ``i``-th record."""
    rng = random.Random(f"{seed}/worker/{i}")
    filler = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 80)))
    return f"worker-style record {i:07d} {filler}"


SHARED_TEXT = "Shared memory reinforced by every keepgui writer"


def batch_sizes(proc: int, records: int, seed: int, max_batch: int) -> list[int]:
    """How writer ``proc`` groups its records: single saves and batches up to ``max_batch``."""
    rng = random.Random(f"{seed}/{proc}/batches")
    sizes, left = [], records
    while left:
        size = min(left, 1 if rng.random() < 0.5 else rng.randint(1, max_batch))
        sizes.append(size)
        left -= size
    return sizes


def rule_content(run: int, version: int, pad_min: int, pad_max: int) -> str:
    """Version ``version`` of the rule in kill run ``run``: a header naming it, then padding."""
    size = random.Random(f"{run}/{version}").randint(pad_min, pad_max)
    unit = f"rule {run}.{version} padding line ✓\n"
    return f"v{run}.{version}\n" + (unit * (size // len(unit) + 1))[:size]


def append_batch_texts(run: int, batch: int, max_batch: int) -> list[str]:
    """The memories of batch ``batch`` in kill run ``run`` (1..max_batch texts of 40..1990 bytes)."""
    rng = random.Random(f"append/{run}/{batch}")
    texts = []
    for j in range(rng.randint(1, max_batch)):
        head = f"run {run} batch {batch} item {j} "
        texts.append(head + "x" * rng.randint(30, 1990 - len(head)))
    return texts


def append_batch_time(run: int, batch: int) -> int:
    """The ``now`` (epoch ms) of batch ``batch`` in kill run ``run``."""
    return 1_750_000_000_000 + run * 1_000_000 + batch


def append_batch_lines(run: int, batch: int, max_batch: int) -> bytes:
    """The exact bytes keepgui appends for that batch (new memories, saved the worker's way)."""
    from tests.reliability.model import model_fingerprint, worker_line

    now = append_batch_time(run, batch)
    return b"".join(
        worker_line(
            {
                "id": model_fingerprint(t),
                "text": t,
                "entities": [],
                "tags": [],
                "confidence": "stated",
                "corroboration": 0,
                "pinned": False,
                "created_at": now,
                "updated_at": now,
                "revision": 0,
            }
        )
        for t in append_batch_texts(run, batch, max_batch)
    )


# ---------------------------------------------------------------------- roles


def keepgui_writer(data_dir, bank_name, proc, records, seed, shared_every, max_batch) -> None:
    """Role ``keepgui-writer``: distinct saves through keepgui, and reinforcements of the shared memory."""
    from keepgui.backends.iii.store import DataDir

    proc, records, seed, shared_every, max_batch = map(int, (proc, records, seed, shared_every, max_batch))
    bank = DataDir(data_dir).bank(bank_name)
    bank.refresh()
    _ready()
    i = crossed = shared = 0
    for size in batch_sizes(proc, records, seed, max_batch):
        if size == 1 and i % 2:
            bank.save(keepgui_text(proc, i, seed), entities=[f"proc{proc}"], tags=["stress"])
            i += 1
        else:
            with bank.batch() as batch:
                for _ in range(size):
                    batch.save(keepgui_text(proc, i, seed), entities=[f"proc{proc}"], tags=["stress"])
                    i += 1
        if shared_every and i // shared_every > crossed:
            # Reinforce the one memory every writer shares: computed under the lock, so
            # no reinforcement may be lost and no revision may repeat.
            crossed = i // shared_every
            bank.save(SHARED_TEXT)
            shared += 1
    _say(json.dumps({"proc": proc, "records": i, "shared_saves": shared}))


def worker_writer(log, records, seed) -> None:
    """Role ``worker-writer``: appends the way the worker does, with no lock and no keepgui code."""
    from tests.reliability.model import model_fingerprint, worker_line

    records, seed = int(records), int(seed)
    _ready()
    for i in range(records):
        text = worker_text(i, seed)
        now = 1_750_000_000_000 + i
        rec = {
            "id": model_fingerprint(text),
            "text": text,
            "entities": ["worker"],
            "tags": [],
            "confidence": "extracted",
            "corroboration": 0,
            "pinned": False,
            "source": {"session_id": f"s_{i}"},
            "created_at": now,
            "updated_at": now,
            "revision": 0,
        }
        line = worker_line(rec)
        with open(log, "ab") as fh:  # the worker's append: no lock, one write, fsync
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    _say(json.dumps({"records": records}))


def two_write_record(i: int, seed: int) -> dict:
    """The ``i``-th record of the two-write worker (revision 0, a fresh id)."""
    from tests.reliability.model import model_fingerprint

    text = worker_text(i, seed).replace("worker-style", "two-write worker")
    now = 1_760_000_000_000 + i
    return {
        "id": model_fingerprint(text),
        "text": text,
        "entities": ["worker"],
        "tags": [],
        "confidence": "extracted",
        "corroboration": 0,
        "pinned": False,
        "source": {"session_id": f"s_{i}"},
        "created_at": now,
        "updated_at": now,
        "revision": 0,
    }


def two_write_worker(log, records, seed, idle_ms="0") -> None:
    """Role ``two-write-worker``: the Rust worker's append, JSON and newline in two writes."""
    import time

    from tests.reliability.model import worker_line

    records, seed, idle = int(records), int(seed), float(idle_ms) / 1000
    rng = random.Random(f"{seed}/two-write")
    _ready()
    for i in range(records):
        line = worker_line(two_write_record(i, seed))
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line[:-1])  # write_all(json)
            time.sleep(rng.uniform(0, 0.002))
            os.write(fd, b"\n")  # write_all(b"\n")
            os.fdatasync(fd)  # sync_data
        finally:
            os.close(fd)
        if idle:
            time.sleep(rng.uniform(0, idle))
    _say(json.dumps({"records": records}))


def save_pinner(data_dir, bank_name, saves, pins, seed) -> None:
    """Role ``save-pinner``: keepgui saves and pins, each its own locked append."""
    from keepgui.backends.iii.store import DataDir

    saves, pins, seed = int(saves), int(pins), int(seed)
    rng = random.Random(f"{seed}/save-pinner")
    bank = DataDir(data_dir).bank(bank_name)
    bank.refresh()
    _ready()
    written, saved = [], []
    order = ["save"] * saves + ["pin"] * pins
    rng.shuffle(order)
    if order and order[0] == "pin" and saves:  # something must be saved before it can be pinned
        first_save = order.index("save")
        order[0], order[first_save] = "save", "pin"
    from keepgui.core.errors import NotFound

    pinned: dict[str, bool] = {}
    vanished = 0
    for op in order:
        if op == "pin":
            mid = rng.choice(saved)
            try:
                record = bank.pin(mid, not pinned[mid]).record
            except NotFound:  # the save reported success but its record is not in the log
                vanished += 1
                continue
        else:
            record = bank.save(keepgui_text(9 + proc_offset(seed), len(saved), seed)).record
            saved.append(record.id)
        pinned[record.id] = record.pinned
        written.append([record.id, record.revision])
    _say(json.dumps({"written": written, "vanished": vanished}))


def proc_offset(seed: int) -> int:
    """Distinct text families for save-pinners started with different seeds."""
    return seed % 10


def rule_saver(data_dir, bank_name, run, pad_min, pad_max) -> None:
    """Role ``rule-saver``: saves rule ``style`` version after version until it is killed."""
    from keepgui.backends.iii.store import DataDir

    run, pad_min, pad_max = map(int, (run, pad_min, pad_max))
    bank = DataDir(data_dir).bank(bank_name)
    _ready()
    version = 0
    while True:
        version += 1
        bank.write_rule("style", rule_content(run, version, pad_min, pad_max))
        _say(str(version))


def log_appender(data_dir, bank_name, run, max_batch) -> None:
    """Role ``log-appender``: appends batches through keepgui until it is killed."""
    from keepgui.backends.iii.store import DataDir

    run, max_batch = int(run), int(max_batch)
    bank = DataDir(data_dir).bank(bank_name)
    bank.refresh()
    _ready()
    batch_no = 0
    while True:
        # A fixed clock makes every byte of the log predictable for the parent's check.
        with bank.batch(now=append_batch_time(run, batch_no)) as batch:
            for text in append_batch_texts(run, batch_no, max_batch):
                batch.save(text)
        _say(str(batch_no))
        batch_no += 1


def crash_at(data_dir, bank_name, what, point) -> None:
    """Save version 2 of the rule (``what=rule``) or batch 1 of the log (``what=log``) and die
    with SIGKILL at ``point``, by patching the one call of keepgui.core.fsio that marks it."""
    import signal

    from keepgui.backends.iii.store import DataDir
    from keepgui.core import fsio

    bank = DataDir(data_dir).bank(bank_name)
    bank.refresh()

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    real_write = os.write

    def half_then_die(fd, data):
        real_write(fd, bytes(data)[: max(1, len(data) // 2)])
        die()

    patches = {
        "half-written": ("write", half_then_die),
        "before-fsync": ("fsync", die),
        "before-replace": ("replace", die),
        "before-dir-fsync": (None, die),
    }
    name, fake = patches[point]
    _ready()
    if name is None:
        fsio.fsync_dir = fake
    elif name == "write":
        fsio._os_write = fake  # fsio's one write() call (its fault-injection point)
    else:
        setattr(fsio.os, name, fake)
    if what == "rule":
        bank.write_rule("style", CRASH_RULE_V2)
    else:
        with bank.batch(now=CRASH_NOW + 1) as batch:
            for text in CRASH_BATCH_TEXTS:
                batch.save(text)
    _say("survived")  # never reached: the patched call killed the process


CRASH_RULE_V1 = "# Style\nversion one: " + "a" * 5000 + "\n"
CRASH_RULE_V2 = "# Style\nversion two: " + "b" * 9000 + "\n"
CRASH_NOW = 1_750_000_000_000
CRASH_BATCH_TEXTS = [f"crash batch item {i} " + "é" * (50 + i) for i in range(6)]


ROLES = {
    "crash-at": crash_at,
    "keepgui-writer": keepgui_writer,
    "worker-writer": worker_writer,
    "rule-saver": rule_saver,
    "save-pinner": save_pinner,
    "two-write-worker": two_write_worker,
    "log-appender": log_appender,
}


def main(argv: list[str]) -> int:
    """Run the role named by the first argument."""
    role, *args = argv
    ROLES[role](*args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
