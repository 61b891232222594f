"""The toy backend's source, its one bank, its documents and its compaction (see the package docstring).

Small but real: every write goes through :mod:`keepgui.core.fsio` and presents the stamps it read,
and its Change takes itself back byte for byte (refused when the files changed since).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from keepgui.core import fsio
from keepgui.core.compaction import (
    Applied,
    Counts,
    Plan,
    Selection,
    make_operation,
    register_applied_kind,
    register_kinds,
)
from keepgui.core.defaults import BankDefaults, DocumentDefaults, PartsContext, SourceDefaults, nothing_written
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.history import History
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import (
    ACTIVITY,
    CREATE,
    CREATE_BANK,
    DISK,
    ENTITIES,
    FORCE,
    HISTORY,
    MOVE,
    QUERY,
    RANKED,
    REVIEW,
    TAGS,
    TRASH_BANK,
    WHAT_IF,
    BankSummary,
    Capabilities,
    Change,
    Document,
    FileRow,
    Hint,
    Listing,
    Problem,
    RowDelta,
    WatchPlan,
    stamps_of,
)
from keepgui.core.textdiff import unified

JOTS, FORGOTTEN, README, BANK = "jots.md", "forgotten.md", "README.md", "jots"

CAPABILITIES = Capabilities(
    missing={
        MOVE: "jots are kept in the order they were jotted",
        TAGS: "a jot is one line of text: no tags",
        ENTITIES: "a jot is one line of text: no entities",
        HISTORY: "a jot has no revisions",
        RANKED: "jots have no ranking",
        CREATE: "keep a jot instead",
        FORCE: "a jot is kept unless it is there already",
        QUERY: "every jot is read",
        WHAT_IF: "nothing to try out",
        REVIEW: "nobody else writes jots.md",
        ACTIVITY: "jots carry no dates",
    },
    fields=frozenset({"pinned", "live", "text"}),
    ordered=True,
    noun="jot",
    nouns="jots",
    retire="Forget",
)

Jot = tuple[bool, str]
"""``(pinned, text)``."""


def jot_id(text: str) -> str:
    """A jot's key: the same text has the same key."""
    return hashlib.sha1(" ".join(text.split()).lower().encode(), usedforsecurity=False).hexdigest()[:10]


def keys_of(jots: Sequence[Jot]) -> list[str]:
    """Each jot's key: its text's, and for a text written again, its copy's number after it (keys are unique)."""
    seen: dict[str, int] = {}
    out = []
    for _pinned, text in jots:
        key = jot_id(text)
        seen[key] = seen.get(key, 0) + 1
        out.append(key if seen[key] == 1 else f"{key}~{seen[key]}")
    return out


def parse(data: bytes | None) -> tuple[list[Jot], list[tuple[int, str]]]:
    """The jots of a file, and the lines that are none (``(line, text)``)."""
    jots, bad = [], []
    for number, line in enumerate((data or b"").decode("utf-8", "replace").splitlines(), start=1):
        if line.startswith(("- ", "* ")) and line[2:].strip():
            jots.append((line.startswith("*"), line[2:].strip()))
        elif line.strip():
            bad.append((number, line))
    return jots, bad


def render(jots: Sequence[Jot]) -> bytes:
    return "".join(f"{'*' if pinned else '-'} {text}\n" for pinned, text in jots).encode()


class JotDocs(DocumentDefaults):
    """The folder's README, read-only: the two methods a set of read-only documents needs."""

    why_read_only = "the toy shows its README read-only"

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def list(self) -> list[tuple[str, str]]:
        return [(README, README)] if os.path.isfile(os.path.join(self.folder, README)) else []

    def read(self, name: str) -> Document:
        if name != README:
            raise NotFound(name)
        path = os.path.join(self.folder, README)
        data, stamp = fsio.read_stamped(path)
        return Document(README, README, path, (data or b"").decode(), stamp, read_only=self.why_read_only)


class JotPreview:
    """What the agent is given: its jots, pinned first."""

    def __init__(self, jots: Sequence[Jot], numbered: bool = False) -> None:
        ordered = sorted(jots, key=lambda j: not j[0])
        self.text = "".join(
            f"{f'{n}. ' if numbered else '- '}{text}\n" for n, (_pinned, text) in enumerate(ordered, start=1)
        )


class JotBank(BankDefaults):
    """The jots of a folder."""

    def __init__(self, source: JotSource) -> None:
        self.source = source
        self.key = source.key
        self.capabilities = CAPABILITIES
        self.lock = threading.RLock()
        self._rows: list[FileRow] | None = None

    def _path(self, name: str) -> str:
        return os.path.join(self.source.path, name)

    def _files(self) -> tuple[list[Jot], list[Jot]]:
        live, _ = parse(fsio.read_stamped(self._path(JOTS))[0])
        gone, _ = parse(fsio.read_stamped(self._path(FORGOTTEN))[0])
        return live, gone

    def _read(self) -> list[FileRow]:
        live, gone = self._files()
        keys = keys_of(live)
        rows = [
            FileRow(id=k, text=t, position=i, pinned=p) for i, (k, (p, t)) in enumerate(zip(keys, live, strict=True))
        ]
        rows += [
            FileRow(id="forgotten:" + k, text=t, position=10_000 + i, invalid_at=1)
            for i, (k, (_p, t)) in enumerate(zip(keys_of(gone), gone, strict=True))
        ]
        self._rows = rows
        return rows

    def load(self, progress: Any = None, *, full: bool = False) -> Change:
        with self.lock:
            rows = self._read()
        return Change(self.source.path, BANK, origin=DISK, rows=RowDelta(rows, (), True))

    def is_loaded(self) -> bool:
        return self._rows is not None

    def rows(self) -> list[FileRow]:
        return list(self._rows or [])

    def summary(self) -> BankSummary:
        live = sum(1 for r in self._rows or [] if r.invalid_at is None)
        return BankSummary(CAPABILITIES.count(live))

    def documents(self) -> JotDocs:
        return JotDocs(self.source.path)

    def preview(self, query: str, pending: Any = None, now_ms: int | None = None) -> JotPreview:
        return JotPreview(self._files()[0])

    def context(self, query: str = "", **options: Any) -> PartsContext:
        numbered = bool(options.pop("numbered", False))
        if options:
            raise InvalidInput(f"the jots' context has no option {', '.join(options)}")
        text = JotPreview(self._files()[0], numbered).text
        return PartsContext({"prompt": text}, heading=f"jots of {self.source.path}")

    def problems(self) -> list[Problem]:
        data, _stamp = fsio.read_stamped(self._path(JOTS))
        return [Problem(self._path(JOTS), n, f"not a jot: {line!r}", "not-a-jot") for n, line in parse(data)[1]]

    # ------------------------------------------------------------------ writes

    def _write(self, text: str, live: list[Jot], gone: list[Jot], message: str = "") -> Change:
        """Write both files (refused when either changed since read); the Change writes them back."""
        with self.lock:
            before = {name: fsio.read_stamped(self._path(name)) for name in (JOTS, FORGOTTEN)}
            after = {JOTS: render(live), FORGOTTEN: render(gone)}
            self._put(after, {name: stamp for name, (_data, stamp) in before.items()})
            rows = self._read()
        old = {name: data or b"" for name, (data, _stamp) in before.items()}
        return Change(
            self.source.path,
            BANK,
            text,
            rows=RowDelta(rows, (), True),
            files=stamps_of(self._path(JOTS), self._path(FORGOTTEN)),
            message=message,
            reverse=lambda: self._swap(text, old, after),
        )

    def _put(self, contents: Mapping[str, bytes], expect: Mapping[str, fsio.Stamp]) -> None:
        for name, data in contents.items():
            fsio.atomic_write(self._path(name), data, expect=expect[name])

    def _swap(self, text: str, target: Mapping[str, bytes], expected: Mapping[str, bytes]) -> Change:
        """Write ``target`` over exactly ``expected`` (Conflict when a file holds anything else)."""
        with self.lock:
            stamps = {}
            for name, data in expected.items():
                now, stamp = fsio.read_stamped(self._path(name))
                if (now or b"") != data:
                    raise Conflict(self._path(name), stamp, stamp)
                stamps[name] = stamp
            self._put(target, stamps)
            rows = self._read()
        return Change(
            self.source.path,
            BANK,
            text,
            rows=RowDelta(rows, (), True),
            files=stamps_of(self._path(JOTS), self._path(FORGOTTEN)),
            reverse=lambda: self._swap(text, expected, target),
        )

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        words = " ".join(text.split())
        live, gone = self._files()
        if any(jot_id(t) == jot_id(words) for _p, t in live):
            return nothing_written(
                self.source.path, BANK, f"Keep {words}", "kept already", (Hint("warning", "Kept already"),)
            )
        return self._write(f"Keep {words}", [*live, (False, words)], gone, f"Kept: {words}")

    def _index(self, jots: list[Jot], key: str) -> int:
        for i, found in enumerate(keys_of(jots)):
            if found == key.removeprefix("forgotten:"):
                return i
        raise NotFound(f"no jot {key}")

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        jots, gone = self._files()
        source, target = (gone, jots) if live else (jots, gone)
        for key in keys:
            pinned, text = source.pop(self._index(source, key))
            target.append((pinned, text))
        return self._write(CAPABILITIES.describe("Restore" if live else "Forget", len(keys)), jots, gone)

    def set_pinned(self, keys: Sequence[str], pinned: bool) -> Change:
        jots, gone = self._files()
        for key in keys:
            i = self._index(jots, key)
            jots[i] = (pinned, jots[i][1])
        return self._write(CAPABILITIES.describe("Pin" if pinned else "Unpin", len(keys)), jots, gone)

    def edit(self, key: str, field: str, value: str | list[str]) -> Change:
        if field != "text" or not isinstance(value, str):
            return self._refuse(TAGS)
        jots, gone = self._files()
        i = self._index(jots, key)
        jots[i] = (jots[i][0], " ".join(value.split()))
        return self._write("Edit jot", jots, gone)

    # ------------------------------------------------------------------ compaction

    def plan(self, what: str, **options: Any) -> JotPlan:
        if what != "compact" or options:
            return self._refuse(REVIEW)
        return JotPlan(self)

    def apply_plan(self, plan: Plan, selection: frozenset[str], text: str) -> Change:
        if not isinstance(plan, JotPlan):
            raise InvalidInput("not a plan of these jots")
        plan.check_fresh()
        keep = plan.result(selection)
        change = self._write(text, keep, self._files()[1])
        applied = JotApplied(self.source.path, plan.data, render(keep), len(selection))
        return Change(
            change.source,
            BANK,
            text,
            rows=change.rows,
            files=change.files,
            result=applied,
            written=applied.changed,
            reverse=change.reverse,
        )

    def undo_applied(self, applied: Mapping[str, Any]) -> Change:
        from keepgui.core.compaction import load_applied

        done = load_applied(dict(applied))
        if not isinstance(done, JotApplied) or done.target != os.path.join(self.source.path, JOTS):
            raise InvalidInput("not a compaction of these jots")
        gone = render(self._files()[1])
        change = self._swap(
            f"Undo: {done.description}", {JOTS: done.before, FORGOTTEN: gone}, {JOTS: done.after, FORGOTTEN: gone}
        )
        return Change(change.source, BANK, change.text, rows=change.rows, files=change.files, result=done)


KINDS = register_kinds({"toy-duplicate": "Duplicate jots"})


class JotPlan(Plan):
    """One operation per jot written more than once: drop its later copies."""

    KINDS = KINDS

    def __init__(self, bank: JotBank) -> None:
        self.bank = bank
        self.data, self.stamp = fsio.read_stamped(bank._path(JOTS))
        self.jots = parse(self.data)[0]
        seen: dict[str, list[int]] = {}
        for i, (_p, text) in enumerate(self.jots):
            seen.setdefault(jot_id(text), []).append(i)
        self.drops: list[list[int]] = []
        ops = []
        for positions in seen.values():
            if len(positions) > 1:
                self.drops.append(positions[1:])
                text = self.jots[positions[0]][1]
                ops.append(
                    make_operation(
                        "toy-duplicate", [text], [text] * len(positions), [text], "written twice", selected=True
                    )
                )
        super().__init__(ops, subject=bank._path(JOTS))

    def result(self, selection: Selection = None) -> list[Jot]:
        ids = self.normalise_selection(selection)
        dropped = {i for op in self.operations if op.id in ids for i in self.drops[self.origin[op.id]]}
        return [jot for i, jot in enumerate(self.jots) if i not in dropped]

    def counts(self, selection: Selection = None) -> Counts:
        return Counts("jots", len(self.jots), len(self.result(selection)))

    def render(self, selection: Selection = None, context: int = 3) -> str:
        return unified((self.data or b"").decode(), render(self.result(selection)).decode(), JOTS, JOTS, context)

    def check_fresh(self) -> None:
        if fsio.read_stamped(self.bank._path(JOTS))[0] != self.data:
            raise self.stale("jots.md changed since the plan was made")

    def replan(self) -> JotPlan:
        return JotPlan(self.bank)

    def apply(self, selection: Selection = None) -> Applied:
        raise InvalidInput("apply a jots plan through its bank (Bank.apply_plan)")


class JotApplied(Applied):
    """A compaction written to jots.md, taken back by writing the bytes before over exactly the bytes after."""

    kind = "toy-jots"

    def __init__(self, folder: str, before: bytes | None, after: bytes, dropped: int) -> None:
        super().__init__(
            f"Drop {dropped} duplicate jot(s)",
            [f"{dropped} duplicate(s) dropped"],
            before != after,
            os.path.join(folder, JOTS),
        )
        self.before, self.after = before or b"", after

    def _undo(self) -> None:
        raise InvalidInput("undo a jots compaction through its bank (Bank.undo_applied)")

    def _redo(self) -> None:
        raise InvalidInput("redo a jots compaction through its bank")

    def to_obj(self) -> dict[str, Any]:
        return {**super().to_obj(), "before": self.before.decode(), "after": self.after.decode()}

    @classmethod
    def from_obj(cls, obj: dict[str, Any], history: History) -> JotApplied:
        applied = cls(os.path.dirname(obj["target"]), obj["before"].encode(), obj["after"].encode(), 0)
        applied.description = obj["description"]
        return applied


register_applied_kind(JotApplied.kind, JotApplied.from_obj)


class JotSource(SourceDefaults):
    """A folder of jots: one bank."""

    kind = "jots"
    capabilities = Capabilities(missing={CREATE_BANK: "one folder, one bank", TRASH_BANK: "jots are not trashed"})

    def __init__(self, path: str, options: OpenOptions | None = None) -> None:
        from keepgui.core.source import BankKey

        self.path = os.path.abspath(path)
        self.label = f"jots · {os.path.basename(self.path)}"
        self.key = BankKey(self.path, BANK)
        self.jots = JotBank(self)

    def scan(self) -> Listing:
        return Listing((BANK,))

    def bank(self, name: str) -> JotBank:
        if name != BANK:
            raise NotFound(f"a jots folder has one bank, `{BANK}`")
        return self.jots

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        names = {"/".join(parts) for parts in changed}
        return WatchPlan(
            refresh=frozenset({BANK}) if names & {JOTS, FORGOTTEN} else frozenset(),
            documents={BANK: frozenset({README})} if README in names else {},
        )


def identify(path: str) -> Verdict:
    if os.path.isfile(os.path.join(path, JOTS)):
        return Verdict("jots", "a jots folder", f"it has a {JOTS}")
    return Verdict(None, "a jots folder", f"no {JOTS}")


def discover(environ: Mapping[str, str]) -> list[Found]:
    return []


def home(environ: Mapping[str, str]) -> str | None:
    """``$JOTS_HOME``: the agent's own environment variable."""
    return environ.get("JOTS_HOME")
