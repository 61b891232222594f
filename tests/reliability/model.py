"""An independent reference model of the worker's rules, and a harness that checks keepgui against it.

:class:`ModelBank` re-implements spec §1.5–§1.6 and §5 on plain dicts, written
from the spec and deliberately sharing no code with ``keepgui.backends.iii``: its
own FNV-1a fingerprint, its own label normalisation, its own merge rule, and
its own encoder (``json.dumps`` in the worker's key order, as the worker's
serde_json writes). Because it also keeps the exact bytes the worker would
have appended, the harness can compare keepgui with it byte for byte.

:class:`MutationHarness` runs operations (tuples, see :data:`OPS`) through
``keepgui.backends.iii.store`` on a real data dir and through the model, and
checks after each step that they agree; :func:`random_ops` makes a seeded
random sequence of them, :func:`random_mutation_run` runs one.

Operations:
    ("save", text, entities, tags, pinned, session)
    ("update", ref, text|None, entities|None, tags|None, pinned|None)
    ("pin", ref, pinned)         ("delete", ref)        ("restore", ref)
    ("supersede", ref, ref_by)   ("reinforce", ref)
    ("batch", [op, ...])         several of the above in one Batch (all or nothing)
    ("external", op)             a save/update/pin/delete/supersede appended the
                                 worker's way (plain append of json.dumps + "\\n")
    ("refresh",)                 an incremental refresh, checked against the model
    ("tick", ms)                 advance the clock (0 keeps the same millisecond)
A ``ref`` is an int picking one of the known ids (sorted), or -1 for an id that does not exist.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile

U32_MAX = (1 << 32) - 1
MISSING_ID = "fp0123456789abcdef"
KEY_ORDER = (
    "id",
    "text",
    "entities",
    "tags",
    "confidence",
    "corroboration",
    "pinned",
    "source",
    "created_at",
    "updated_at",
    "invalid_at",
    "superseded_by",
    "revision",
)
OPTIONAL = ("source", "invalid_at", "superseded_by")
OPS = ("save", "update", "pin", "delete", "restore", "supersede", "reinforce", "batch", "external", "refresh", "tick")


# ---------------------------------------------------------------------- the worker's rules, independently


def model_fingerprint(text: str) -> str:
    """Spec §5.1: FNV-1a 64 of the whitespace-collapsed, lowercased text, as ``fp`` + 16 hex digits.

    ``str.split`` equals Rust's ``split_whitespace`` for every character the
    generators use (they never produce U+001C..U+001F, where the two differ).
    """
    h = 0xCBF29CE484222325
    for byte in " ".join(text.split()).lower().encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) % (1 << 64)
    return f"fp{h:016x}"


def model_labels(values) -> list[str]:
    """Spec §5.2: trimmed, lowercased, empty ones dropped, the first 8 kept (no de-duplication)."""
    out = []
    for value in values:
        value = value.strip().lower()
        if value:
            out.append(value)
    return out[:8]


def worker_line(record: dict) -> bytes:
    """The bytes the worker appends for a record: compact serde-style JSON in struct key order, raw UTF-8."""
    ordered = {k: record[k] for k in KEY_ORDER if k in record and not (k in OPTIONAL and record[k] is None)}
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class ModelError(Exception):
    """A mutation the worker refuses: ``kind`` is ``invalid`` or ``notfound``; ``phrase`` must be in the message."""

    def __init__(self, kind: str, phrase: str) -> None:
        super().__init__(f"{kind}: {phrase}")
        self.kind = kind
        self.phrase = phrase


class ModelBank:
    """The reference state of one bank: current record per id, and the log bytes, line by line."""

    def __init__(self) -> None:
        self.records: dict[str, dict] = {}
        self.lines: list[bytes] = []

    # Each rule returns the record to append (None: nothing is written) without changing the state;
    # ``state`` is the record map to read (a batch passes its own working copy).

    @staticmethod
    def _clean(text: str) -> str:
        text = text.strip()
        if not 3 <= len(text.encode("utf-8")) <= 2000:
            raise ModelError("invalid", "3..2000")
        return text

    def save(self, state, text, entities, tags, pinned, session, now) -> dict:
        """§5.2: create, reinforce (live) or resurrect (retired)."""
        text = self._clean(text)
        mid = model_fingerprint(text)
        cur = state.get(mid)
        if cur is None:
            return {
                "id": mid,
                "text": text,
                "entities": model_labels(entities),
                "tags": model_labels(tags),
                "confidence": "stated",
                "corroboration": 0,
                "pinned": bool(pinned),
                "source": {"session_id": session} if session is not None else None,
                "created_at": now,
                "updated_at": now,
                "revision": 0,
            }
        rec = dict(cur)
        merged = list(cur["tags"])
        for tag in model_labels(tags):
            if len(merged) < 8 and tag not in merged:
                merged.append(tag)
        rec.update(
            corroboration=min(cur["corroboration"] + 1, U32_MAX),
            pinned=cur["pinned"] or bool(pinned),
            tags=merged,
            updated_at=now,
            revision=cur["revision"] + 1,
            invalid_at=None,
            superseded_by=None,
        )
        return rec

    def update(self, state, mid, text, entities, tags, pinned, now) -> dict:
        """§5.4/§5.5: replace the given fields; live or retired alike; always a new revision."""
        cur = state.get(mid)
        if cur is None:
            raise ModelError("notfound", "not found")
        rec = dict(cur)
        if text is not None:
            rec["text"] = self._clean(text)
        if entities is not None:
            rec["entities"] = model_labels(entities)
        if tags is not None:
            rec["tags"] = model_labels(tags)
        if pinned is not None:
            rec["pinned"] = bool(pinned)
        rec.update(updated_at=now, revision=cur["revision"] + 1)
        return rec

    def delete(self, state, mid, now) -> dict | None:
        """§5.6: tombstone a live record; a retired one is a no-op."""
        cur = state.get(mid)
        if cur is None:
            raise ModelError("notfound", "not found")
        if cur.get("invalid_at") is not None:
            return None
        return {**cur, "invalid_at": now, "updated_at": now, "revision": cur["revision"] + 1}

    def supersede(self, state, loser, winner, now) -> dict:
        """§5.7, with its six error checks in the worker's order."""
        if loser == winner:
            raise ModelError("invalid", "cannot supersede itself")
        w = state.get(winner)
        if w is None:
            raise ModelError("notfound", "not found")
        if w.get("invalid_at") is not None:
            raise ModelError("invalid", "is not a live memory")
        cur = state.get(loser)
        if cur is None:
            raise ModelError("notfound", "not found")
        if cur["pinned"]:
            raise ModelError("invalid", "is pinned")
        if cur.get("invalid_at") is not None:
            raise ModelError("invalid", "already retired")
        return {**cur, "invalid_at": now, "superseded_by": winner, "updated_at": now, "revision": cur["revision"] + 1}

    def restore(self, state, mid, now) -> dict | None:
        """keepgui's un-tombstone: a retired record comes back as a new revision; a live one is left alone."""
        cur = state.get(mid)
        if cur is None:
            raise ModelError("notfound", "not found")
        if cur.get("invalid_at") is None:
            return None
        return {**cur, "invalid_at": None, "superseded_by": None, "updated_at": now, "revision": cur["revision"] + 1}

    def reinforce(self, state, mid, now) -> dict:
        """Reinforce a live record by id (as a re-save of its text would)."""
        cur = state.get(mid)
        if cur is None:
            raise ModelError("notfound", "not found")
        if cur.get("invalid_at") is not None:
            raise ModelError("invalid", "not live")
        return {
            **cur,
            "corroboration": min(cur["corroboration"] + 1, U32_MAX),
            "updated_at": now,
            "revision": cur["revision"] + 1,
        }

    def commit(self, records: list[dict], keepgui: bool = False) -> None:
        """Append records: the log grows by their lines; replay keeps a line when its revision is >= (§1.6).

        ``keepgui``: appended by keepgui, whose append of a shared log begins with its own
        ``\\n`` (a blank line, which replay skips) so it can never be glued onto a worker line.
        """
        if keepgui and records:
            self.lines.append(b"\n")
        for rec in records:
            self.lines.append(worker_line(rec))
            cur = self.records.get(rec["id"])
            if cur is None or rec["revision"] >= cur["revision"]:
                self.records[rec["id"]] = {k: v for k, v in rec.items() if not (k in OPTIONAL and v is None)}

    def listing(self, history: bool) -> list[dict]:
        """``memory::list`` order: ``updated_at`` descending, then id ascending."""
        rows = [r for r in self.records.values() if history or r.get("invalid_at") is None]
        return sorted(rows, key=lambda r: (-r["updated_at"], r["id"]))


def replay_lines(lines: list[bytes]) -> dict[str, dict]:
    """Spec §1.6/§1.6a on raw lines: blank lines skipped, unparseable ones skipped, per id ``>=``
    revision wins; a line that is not UTF-8 makes the whole bank unloadable (``{}``).

    ``lines`` are the pieces between newlines, the unterminated last one included
    (Rust's ``lines()`` yields it). Used by the replay property test; "parseable"
    is judged by keepgui's parse_line, since validating every serde rule again is
    not this model's job.
    """
    from keepgui.backends.iii.record import RecordError, parse_line

    out: dict[str, dict] = {}
    for line in lines:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return {}
        if not line.strip():
            continue
        try:
            memory = parse_line(line)
        except RecordError:
            continue
        cur = out.get(memory.id)
        if cur is None or memory.revision >= cur["revision"]:
            out[memory.id] = memory.to_obj()
    return out


# ---------------------------------------------------------------------- random operations

BASE_TEXTS = [
    "User prefers short names",
    "The API port is 3111",
    "Café menus are printed weekly",
    "日本語のメモ テスト",
    'Quotes "inside" and back\\slashes / here',
    "control \x01 and escape \x1b and del \x7f chars",
    "line\nbreak and\ttab inside",
    "emoji 🎉 and non-BMP 𝄞 music",
    "NBSP\xa0and U+2028\u2028separators",
    "Mike's blog publishes on Tuesday mornings",
]
INVALID_TEXTS = ["", "ab", "  x  ", "é", "x" * 2001, "é" * 1001]
EDGE_VALID_TEXTS = ["abc", "é" * 1000, "x" * 2000, "  padded with spaces  "]
LABELS = [
    "user",
    " User ",
    "API",
    "",
    "  ",
    "style",
    "iii",
    "café",
    "日本",
    "x" * 40,
    "tag-a",
    "tag-b",
    "tag-c",
    "tag-d",
]


def _variant(rng: random.Random, text: str) -> str:
    """The same memory written differently: case and whitespace changes keep the fingerprint."""
    choice = rng.randrange(4)
    if choice == 0:
        return text
    if choice == 1:
        return text.upper()
    if choice == 2:
        return "  " + text.replace(" ", "   ") + "\t"
    return text.lower() + " "


def random_text(rng: random.Random) -> str:
    """A save text: mostly a variant of a small pool (so saves reinforce and resurrect), some new, some invalid."""
    roll = rng.random()
    if roll < 0.70:
        return _variant(rng, rng.choice(BASE_TEXTS))
    if roll < 0.85:
        return f"fresh memory {rng.randrange(10**6)} " + " ".join(rng.choice(BASE_TEXTS).split()[:3])
    if roll < 0.93:
        return rng.choice(EDGE_VALID_TEXTS)
    return rng.choice(INVALID_TEXTS)


def random_labels(rng: random.Random) -> list[str]:
    """0..10 labels, so the cap of 8 and normalisation both get exercised."""
    return [rng.choice(LABELS) for _ in range(rng.choice((0, 0, 1, 2, 3, 9, 10)))]


def random_ref(rng: random.Random) -> int:
    """An id reference: usually an existing id, sometimes one that does not exist."""
    return -1 if rng.random() < 0.07 else rng.randrange(1 << 16)


def random_simple_op(rng: random.Random) -> tuple:
    """One mutation that can also go in a batch."""
    kind = rng.choices(
        ("save", "update", "pin", "delete", "restore", "supersede", "reinforce"), weights=(30, 12, 10, 10, 8, 10, 6)
    )[0]
    if kind == "save":
        return (
            "save",
            random_text(rng),
            random_labels(rng),
            random_labels(rng),
            rng.random() < 0.15,
            rng.choice((None, None, "s_1", "session-é")),
        )
    if kind == "update":
        return (
            "update",
            random_ref(rng),
            random_text(rng) if rng.random() < 0.5 else None,
            random_labels(rng) if rng.random() < 0.4 else None,
            random_labels(rng) if rng.random() < 0.4 else None,
            rng.choice((None, None, True, False)),
        )
    if kind == "pin":
        return ("pin", random_ref(rng), rng.random() < 0.5)
    if kind == "supersede":
        return ("supersede", random_ref(rng), random_ref(rng) if rng.random() < 0.9 else None)
    return (kind, random_ref(rng))


def random_op(rng: random.Random) -> tuple:
    """Any operation, batches and worker-style appends included."""
    roll = rng.random()
    if roll < 0.10:
        return ("batch", [random_simple_op(rng) for _ in range(rng.randint(1, 6))])
    if roll < 0.20:
        op = random_simple_op(rng)
        while op[0] in ("restore", "reinforce"):  # not operations the worker has
            op = random_simple_op(rng)
        return ("external", op)
    if roll < 0.25:
        return ("refresh",)
    if roll < 0.40:
        return ("tick", rng.choice((0, 1, 1, 2, 1000)))
    return random_simple_op(rng)


def random_ops(seed: int, steps: int) -> list[tuple]:
    """A deterministic sequence of ``steps`` operations for ``seed``."""
    rng = random.Random(seed)
    return [random_op(rng) for _ in range(steps)]


# ---------------------------------------------------------------------- the harness


class Mismatch(AssertionError):
    """keepgui and the reference model disagree; the message says where and how."""


class MutationHarness:
    """Runs operations through keepgui's store and through :class:`ModelBank`, checking they agree.

    ``check(full=True)`` also compares the file byte for byte with the
    worker's bytes, replays it afresh (new DataDir and MemoryLog), re-encodes
    every line, and checks revisions per id strictly increase in file order.
    """

    def __init__(self, data_dir: str, now: int = 1_750_000_000_000) -> None:
        from keepgui.backends.iii.store import DataDir

        self.data_dir = data_dir
        self.datadir = DataDir(data_dir)
        self.bank, _ = self.datadir.ensure_bank("main")
        self.bank.refresh()  # loaded from the start, so every later refresh is incremental
        self.model = ModelBank()
        self.now = now
        self.steps = 0
        self.refused = 0
        self.external_pending: list[str] = []

    # ------------------------------------------------------------------ running

    def resolve(self, ref) -> str:
        """The id a reference means now (None means the same as -1: a missing id)."""
        ids = sorted(self.model.records)
        if ref is None or ref < 0 or not ids:
            return MISSING_ID
        return ids[ref % len(ids)]

    def _model_step(self, state: dict, op: tuple) -> dict | None:
        m, now = self.model, self.now
        kind = op[0]
        if kind == "save":
            return m.save(state, op[1], op[2], op[3], op[4], op[5], now)
        if kind == "update":
            return m.update(state, self.resolve(op[1]), op[2], op[3], op[4], op[5], now)
        if kind == "pin":
            return m.update(state, self.resolve(op[1]), None, None, None, op[2], now)
        if kind == "delete":
            return m.delete(state, self.resolve(op[1]), now)
        if kind == "restore":
            return m.restore(state, self.resolve(op[1]), now)
        if kind == "supersede":
            return m.supersede(state, self.resolve(op[1]), self.resolve(op[2]), now)
        if kind == "reinforce":
            return m.reinforce(state, self.resolve(op[1]), now)
        raise ValueError(f"unknown operation {op!r}")

    def _store_step(self, batch, op: tuple):
        kind = op[0]
        if kind == "save":
            return batch.save(op[1], op[2], op[3], op[4], op[5])
        if kind == "update":
            return batch.update(self.resolve(op[1]), op[2], op[3], op[4], op[5])
        if kind == "pin":
            return batch.pin(self.resolve(op[1]), op[2])
        if kind == "delete":
            return batch.delete(self.resolve(op[1]))
        if kind == "restore":
            return batch.restore(self.resolve(op[1]))
        if kind == "supersede":
            return batch.supersede(self.resolve(op[1]), self.resolve(op[2]))
        if kind == "reinforce":
            return batch.reinforce(self.resolve(op[1]))
        raise ValueError(f"unknown operation {op!r}")

    def run(self, op: tuple) -> None:
        """Apply one operation to both sides and compare what they did (raises :class:`Mismatch`)."""
        self.steps += 1
        kind = op[0]
        if kind == "tick":
            self.now += op[1]
            return
        if kind == "refresh":
            # A log that did not exist at the last read and was created by the worker's
            # append is read from scratch: a reset is right then, and only then.
            created = len(self.model.lines) == len(self.external_pending) > 0
            delta = self.bank.refresh()
            expected = list(dict.fromkeys(self.external_pending))
            self.external_pending = []
            if (delta.reset and not created) or (not delta.reset and delta.changed != expected):
                raise Mismatch(
                    f"step {self.steps}: refresh delta changed={delta.changed} reset={delta.reset}, "
                    f"expected the externally appended ids {expected}"
                )
            self.compare_state()
            return
        if kind == "external":
            self._external(op[1])
            return
        ops = op[1] if kind == "batch" else [op]
        self._mutate(ops, op)

    def _mutate(self, ops: list[tuple], whole: tuple) -> None:
        from keepgui.core.errors import InvalidInput, KeepguiError, NotFound

        # The model first: the records it would append, or the error it expects.
        state = dict(self.model.records)
        planned: list[dict] = []
        expected_error: ModelError | None = None
        for sub in ops:
            try:
                rec = self._model_step(state, sub)
            except ModelError as exc:
                expected_error = exc
                break
            if rec is not None:
                planned.append(rec)
                state[rec["id"]] = {k: v for k, v in rec.items() if not (k in OPTIONAL and v is None)}
        size = os.path.getsize(self.bank.log_path) if os.path.exists(self.bank.log_path) else 0
        written: list = []
        error: Exception | None = None
        try:
            with self.bank.batch(self.now) as batch:
                for sub in ops:
                    self._store_step(batch, sub)
            written = batch.report.records
        except KeepguiError as exc:
            error = exc
        # Store-side writes also refreshed, consuming any worker-style appends.
        self.external_pending = []
        where = f"step {self.steps} {whole!r}"
        if expected_error is not None:
            self.refused += 1
            want = NotFound if expected_error.kind == "notfound" else InvalidInput
            if not isinstance(error, want) or expected_error.phrase not in str(error):
                raise Mismatch(f"{where}: expected {want.__name__} with '{expected_error.phrase}', got {error!r}")
            now_size = os.path.getsize(self.bank.log_path) if os.path.exists(self.bank.log_path) else 0
            if now_size != size:
                raise Mismatch(f"{where}: a refused mutation changed the log ({size} -> {now_size} bytes)")
            return
        if error is not None:
            raise Mismatch(f"{where}: keepgui refused ({error!r}) what the model accepts")
        got = [m.to_line() for m in written]
        want_lines = [worker_line(r) for r in planned]
        if got != want_lines:
            raise Mismatch(f"{where}: keepgui appended\n  {got}\nthe worker would append\n  {want_lines}")
        self.model.commit(planned, keepgui=True)

    def _external(self, op: tuple) -> None:
        """The worker's own write: computed by the model, appended without keepgui's lock or code."""
        try:
            rec = self._model_step(dict(self.model.records), op)
        except ModelError:
            self.refused += 1
            return
        if rec is None:
            return
        line = worker_line(rec)
        with open(self.bank.log_path, "ab") as fh:  # the worker's way: one write, then fsync
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.model.commit([rec])
        self.external_pending.append(rec["id"])

    # ------------------------------------------------------------------ checking

    def compare_state(self) -> None:
        """keepgui's in-memory (incrementally refreshed) records equal the model's, byte for byte."""
        mine = {mid: m.to_line() for mid, m in self.bank.log.records.items()}
        want = {mid: worker_line(r) for mid, r in self.model.records.items()}
        if mine != want:
            diff = sorted(set(mine.items()) ^ set(want.items()))[:4]
            raise Mismatch(f"step {self.steps}: in-memory state differs from the model: {diff}")

    def check(self, full: bool = True) -> None:
        """Compare everything; ``full`` adds the file, a fresh replay and the per-line checks."""
        from keepgui.backends.iii.log import MemoryLog
        from keepgui.backends.iii.record import RecordError, parse_line
        from keepgui.backends.iii.store import DataDir

        self.bank.refresh()
        self.external_pending = []
        self.compare_state()
        if not full:
            return
        where = f"step {self.steps}"
        try:
            with open(self.bank.log_path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:  # nothing written yet: the worker would not have created it either
            data = b""
        if data != b"".join(self.model.lines):
            raise Mismatch(f"{where}: memories.jsonl differs from the bytes the worker would have written")
        last_rev: dict[str, int] = {}
        for lineno, line in enumerate(data.split(b"\n")[:-1], 1):
            if not line:
                continue  # the newline each keepgui append begins with
            try:
                memory = parse_line(line)
            except RecordError as exc:
                raise Mismatch(f"{where}: line {lineno} does not parse: {exc}") from None
            if memory.to_line() != line + b"\n":
                raise Mismatch(f"{where}: line {lineno} does not re-encode to the same bytes")
            if memory.revision <= last_rev.get(memory.id, -1):
                raise Mismatch(
                    f"{where}: line {lineno}: revision {memory.revision} of {memory.id} "
                    f"does not increase (previous {last_rev[memory.id]})"
                )
            last_rev[memory.id] = memory.revision
        fresh = MemoryLog(self.bank.log_path)
        fresh.refresh()
        if fresh.records != self.bank.log.records or fresh.problems:
            raise Mismatch(f"{where}: a fresh replay differs from the incremental state ({fresh.problems[:2]})")
        reopened = DataDir(self.data_dir).bank("main")
        got = [m.to_line() for m in reopened.memories(history=True)]
        want = [worker_line(r) for r in self.model.listing(history=True)]
        if got != want:
            raise Mismatch(f"{where}: a reopened bank lists {len(got)} rows, the model {len(want)} (or another order)")
        live = [m.id for m in reopened.memories()]
        if live != [r["id"] for r in self.model.listing(history=False)]:
            raise Mismatch(f"{where}: the live listing differs from the model")


def random_mutation_run(seed: int, steps: int, folder: str | None = None, check_every: int = 25) -> dict:
    """One seeded random walk of ``steps`` operations, checked against the model.

    Returns ``{"sequences": 1, "steps", "mismatches", "refused", "records", "lines", "first_mismatch"}``;
    a mismatch ends the walk (later steps would only repeat it).
    """
    own = folder is None
    folder = tempfile.mkdtemp(prefix=f"keepgui-walk-{seed}-") if own else folder
    try:
        harness = MutationHarness(os.path.join(folder, "memory"))
        mismatches, first = 0, ""
        try:
            for i, op in enumerate(random_ops(seed, steps), 1):
                harness.run(op)
                if i % check_every == 0:
                    harness.check(full=(i % (check_every * 4) == 0))
            harness.check(full=True)
        except Mismatch as exc:
            mismatches, first = 1, f"seed {seed}: {exc}"
        return {
            "sequences": 1,
            "steps": harness.steps,
            "mismatches": mismatches,
            "refused": harness.refused,
            "records": len(harness.model.records),
            "lines": len(harness.model.lines),
            "first_mismatch": first,
        }
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)
