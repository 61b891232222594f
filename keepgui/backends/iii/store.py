"""An iii memory data dir: banks, their rules and their logs, read and written as the worker does.

Layout (spec §1.2)::

    <data_dir>/<bank>/bank.yaml          description
    <data_dir>/<bank>/rules/<rule>.md    always-injected rules
    <data_dir>/<bank>/memories.jsonl     append-only log
    <data_dir>/.trash/<bank>-<ms>/       a trashed bank

Reading never changes a file. Every write goes through :mod:`keepgui.core.fsio`:
log records are appended under the log's lock (:class:`Batch`), rules and
``bank.yaml`` are replaced atomically, banks are trashed by rename. After each
write the data dir's :class:`~keepgui.backends.iii.worker.WorkerLink` asks a running
worker to reload, because the worker keeps its own copy in RAM.
"""

from __future__ import annotations

import contextlib
import heapq
import operator
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from keepgui.backends.iii import writes as mut
from keepgui.backends.iii.log import LOG_NAME, LogDelta, MemoryLog, Progress, newest_first
from keepgui.backends.iii.record import Memory, fingerprint
from keepgui.backends.iii.textrules import rust_trim
from keepgui.backends.iii.worker import Reloader, ReloadOutcome
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.timefmt import now_ms

_ID = operator.attrgetter("id")
_UPDATED_AT = operator.attrgetter("updated_at")


NAME_PATTERN = "[a-z0-9][a-z0-9_-]{0,63}"
_NAME_RE = re.compile(NAME_PATTERN)
BANK_YAML = "bank.yaml"
RULES_DIR = "rules"
TRASH_DIR = ".trash"
_BANK_YAML_LIMIT = 64 * 1024
_RULE_LIMIT = 16 * 1024 * 1024


def validate_name(name: object) -> str:
    """Return ``name`` if it is a valid bank or rule name, else raise InvalidInput (spec §1.3)."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise InvalidInput(f"name `{name}` must match {NAME_PATTERN}")
    return name


def is_valid_name(name: str) -> bool:
    """True when ``name`` follows the worker's name rule."""
    return bool(_NAME_RE.fullmatch(name))


def suggest_slug(name: str) -> str:
    """A valid name close to ``name``, as the worker's console suggests it ("" if none)."""
    slug = name.lower()
    slug = re.sub(r"[ :/\\]", "-", slug)
    slug = re.sub(r"[^a-z0-9_-]", "", slug)
    slug = re.sub(r"-{2,}", "-", slug)
    slug = slug.lstrip("-_")[:64]
    return slug.rstrip("-_")


def _plain_folder_name(name: object, what: str) -> str:
    """Refuse names that could leave the folder they belong in (``../x``, ``a/b``, ``.trash``)."""
    # A backslash is an ordinary character in a POSIX file name (the worker loads a bank
    # folder `back\\slash`); only where it separates folders can it leave the data dir.
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or ("\\" in name and "\\" in (os.sep, os.altsep))
        or "\x00" in name
        or name.startswith(".")
    ):
        raise InvalidInput(f"`{name}` is not a {what} name")
    return name


_YAML_STR = "tag:yaml.org,2002:str"


def _description_of(text: str) -> tuple[str, str]:
    """``(description, problem)`` of a ``bank.yaml`` text, never raising.

    Only the node tree is built (``yaml.compose``), never Python objects from
    the whole document: ``safe_load`` raises ValueError, KeyError or
    AttributeError for values such as ``2024-13-01``, ``!!int abc`` or
    ``!!bool maybe`` in *any* key, and RecursionError for deep nesting, all of
    which escaped as tracebacks; the composer also keeps aliases as shared
    nodes, so an alias bomb costs no more than its bytes. Only a plain string
    ``description`` counts, as for the worker (anything else reads as "").
    """
    import yaml  # only a bank.yaml read needs it (~20 ms of a command's start-up)

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        return "", f"{BANK_YAML} is not valid YAML ({str(exc).splitlines()[0]})"
    except RecursionError:
        return "", f"{BANK_YAML} is nested too deeply to be read"
    if node is None:
        return "", ""
    value = None
    if isinstance(node, yaml.MappingNode):
        for key, val in node.value:  # the last `description` wins, as with safe_load
            if isinstance(key, yaml.ScalarNode) and key.tag == _YAML_STR and key.value == "description":
                value = val
    if not (isinstance(value, yaml.ScalarNode) and value.tag == _YAML_STR):
        return "", f"{BANK_YAML} has no string `description`"
    try:
        value.value.encode("utf-8")
    except UnicodeEncodeError:  # a "\ud800" escape: not text the worker (or a terminal) can hold
        return "", f"{BANK_YAML} `description` holds an invalid (surrogate) character"
    return value.value, ""


def rust_stem_extension(file_name: str) -> tuple[str, str | None]:
    """``(stem, extension)`` as Rust's ``Path::file_stem`` / ``extension`` split a file name.

    A name that begins with ``.`` and has no other dot has no extension
    (``.md``); otherwise the extension is what follows the last dot, so
    ``..md`` is rule ``.`` and ``.foo.md`` is rule ``.foo`` (os.path.splitext
    would call ``..md`` extension-less).
    """
    head, dot, ext = file_name.rpartition(".")
    if not dot or not head:
        return file_name, None
    return head, ext


def ms_of(mtime_ns: int) -> int:
    """A file mtime in epoch milliseconds, as the worker reports it."""
    return mtime_ns // 1_000_000


@dataclass(frozen=True)
class Problem:
    """Something wrong found while reading, for ``doctor`` and the window's problem list."""

    where: str
    what: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.where}:{self.line}: {self.what}" if self.line else f"{self.where}: {self.what}"


@dataclass(frozen=True)
class Rule:
    """One rule file: its name (the file stem), content, mtime in ms, and the stamp it was read with."""

    name: str
    content: str
    updated_at: int
    path: str
    stamp: fsio.Stamp

    def to_obj(self) -> dict[str, Any]:
        """The worker's rule JSON: ``{name, content, updated_at}``."""
        return {"name": self.name, "content": self.content, "updated_at": self.updated_at}


@dataclass(frozen=True)
class BankInfo:
    """The worker's bank summary plus whether keepgui could read the bank and why not."""

    name: str
    description: str
    memories: int
    pinned: int
    rules: int
    readable: bool = True
    reason: str = ""

    def counts(self) -> str:
        """The counts as the sidebar and ``keepgui banks`` say them: "1 memory · 0 pinned · 2 rules"."""
        from keepgui.core.source import plural  # not at import: a preview's start-up need not pay for it

        return f"{plural(self.memories, 'memory', 'memories')} · {self.pinned} pinned · {plural(self.rules, 'rule', 'rules')}"

    def to_obj(self) -> dict[str, Any]:
        """``{name, description, memories, pinned, rules}`` plus ``readable``/``reason``."""
        obj: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "memories": self.memories,
            "pinned": self.pinned,
            "rules": self.rules,
            "readable": self.readable,
        }
        if not self.readable:
            obj["reason"] = self.reason
        return obj


@dataclass
class WriteReport:
    """What a write did: the records appended, and whether a running worker was told."""

    records: list[Memory] = field(default_factory=list)
    reload: ReloadOutcome | None = None


class Bank:
    """One bank folder. Reads are lazy and cached; :meth:`refresh` re-reads what changed.

    Attributes:
        datadir: the :class:`DataDir` it belongs to.
        name: the folder name.
        path: the folder.
        log: the :class:`MemoryLog` of its ``memories.jsonl``.
    """

    def __init__(self, datadir: DataDir, name: str) -> None:
        self.datadir = datadir
        self.name = name
        self.path = os.path.join(datadir.path, name)
        self.log = MemoryLog(os.path.join(self.path, LOG_NAME))
        self._description: tuple[fsio.Stamp, str, str] | None = None

    # ------------------------------------------------------------------ reading

    @property
    def log_path(self) -> str:
        """The ``memories.jsonl`` of this bank."""
        return self.log.path

    @property
    def rules_path(self) -> str:
        """The ``rules`` folder of this bank."""
        return os.path.join(self.path, RULES_DIR)

    def exists(self) -> bool:
        """True while the bank folder is there."""
        return os.path.isdir(self.path)

    def link_target(self) -> str | None:
        """Where the bank folder leads when it is a symbolic link (the worker skips it), else None."""
        return os.path.realpath(self.path) if os.path.islink(self.path) else None

    def link_reason(self) -> str | None:
        """Why a linked bank folder is not a bank, or None when it is a real folder."""
        target = self.link_target()
        if target is None:
            return None
        return (
            f"a link to {target}: the worker does not load it (it skips bank folders that are "
            "symbolic links), so keepgui neither previews it nor writes through it"
        )

    def refresh(self, progress: Progress | None = None) -> LogDelta:
        """Bring the memories up to date (incrementally when the log only grew).

        A bank folder that is a link reads as unloadable, as the worker sees it.
        """
        reason = self.link_reason()
        if reason is not None:
            return self.log.refuse(reason)
        return self.log.refresh(progress)

    def ensure_loaded(self) -> None:
        """Load the log once if it has not been read yet."""
        if not self.log.loaded:
            self.refresh()

    def refuse_writes_through_links(self) -> None:
        """Raise ReadOnly when the bank folder is a link: the worker would not see the write."""
        reason = self.link_reason()
        if reason is not None:
            raise ReadOnly(f"bank `{self.name}` ({self.path}) is not written to: {reason}")

    @property
    def unreadable(self) -> str | None:
        """Why the bank cannot be loaded (the worker skips it), or None."""
        self.ensure_loaded()
        return self.log.unreadable

    def description(self) -> str:
        """The ``description`` of ``bank.yaml``, read tolerantly ("" for anything unusable)."""
        return self._read_description()[0]

    def description_problem(self) -> str:
        """Why ``bank.yaml`` could not be used, or ""."""
        return self._read_description()[1]

    def _read_description(self) -> tuple[str, str]:
        path = os.path.join(self.path, BANK_YAML)
        try:
            data, stamp = fsio.read_stamped(path, limit=_BANK_YAML_LIMIT)
        except KeepguiError as exc:
            return "", str(exc)
        except OSError as exc:
            return "", f"cannot read {BANK_YAML}: {exc.strerror or exc}"
        if self._description is not None and self._description[0].same_content(stamp):
            return self._description[1], self._description[2]
        text, problem = "", ""
        if data is not None:
            try:
                text, problem = _description_of(data.decode("utf-8"))
            except UnicodeDecodeError:
                problem = f"{BANK_YAML} is not valid UTF-8"
        self._description = (stamp, text, problem)
        return text, problem

    def get(self, memory_id: str) -> Memory | None:
        """The current record of an id, live or retired."""
        self.ensure_loaded()
        return self.log.get(memory_id)

    def memories(self, history: bool = False, tag: str | None = None) -> list[Memory]:
        """Current records, ``updated_at`` descending then ``id`` ascending (``memory::list``).

        ``history`` includes retired records; ``tag`` keeps records carrying that exact tag.
        """
        rows = self._listed(history, tag)
        rows.sort(key=_ID)
        rows.sort(key=_UPDATED_AT, reverse=True)
        return rows

    def first_memories(self, limit: int, history: bool = False, tag: str | None = None) -> list[Memory]:
        """``memories(history, tag)[:limit]`` without sorting them all (ids are unique: the order is total),
        so a listing's first lines go out before the rest are sorted."""
        return heapq.nsmallest(limit, self._listed(history, tag), key=newest_first)

    def _listed(self, history: bool, tag: str | None) -> list[Memory]:
        self.ensure_loaded()
        records = self.log.records.values()
        if history and tag is None:
            return list(records)
        return [m for m in records if (history or m.invalid_at is None) and (tag is None or tag in m.tags)]

    def tags(self) -> list[tuple[str, int]]:
        """``memory::tags``: tags of live memories with counts, count descending then tag."""
        self.ensure_loaded()
        counts: dict[str, int] = {}
        for m in self.log.records.values():
            if m.invalid_at is None:
                for t in m.tags:
                    counts[t] = counts.get(t, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def info(self) -> BankInfo:
        """The bank summary (counts of live and pinned memories, and rule files)."""
        rules = len(self.rule_names())
        reason = self.unreadable
        if reason:
            return BankInfo(self.name, self.description(), 0, 0, rules, False, reason)
        live = pinned = 0
        for m in self.log.records.values():
            if m.invalid_at is None:
                live += 1
                pinned += m.pinned
        return BankInfo(self.name, self.description(), live, pinned, rules)

    # ------------------------------------------------------------------ rules

    def rule_names(self) -> list[str]:
        """Names of the rule files (``*.md``) in injection order, whether or not they read."""
        try:
            entries = list(os.scandir(self.rules_path))
        except OSError:  # missing, not a folder, no permission...: no rules to list
            return []
        names = []
        for entry in entries:
            stem, ext = rust_stem_extension(entry.name)
            if ext == "md":
                try:
                    if entry.is_file():
                        names.append(stem)
                except OSError:
                    continue
        return sorted(names)

    def rules(self, names: list[str] | None = None) -> tuple[list[Rule], list[Problem]]:
        """Every readable rule in injection order, and the problems with the others.

        ``names``: the :meth:`rule_names` the caller already listed (listed again when None).
        """
        rules: list[Rule] = []
        problems: list[Problem] = []
        for name in self.rule_names() if names is None else names:
            try:
                rules.append(self.read_rule(name))
            except KeepguiError as exc:
                problems.append(Problem(self.rule_file(name), str(exc)))
        return rules, problems

    def rule_file(self, name: str) -> str:
        """The file of rule ``name``: ``rules/<name>.md`` in this bank."""
        return os.path.join(self.rules_path, name + ".md")

    def read_rule(self, name: object) -> Rule:
        """Read one rule with the stamp a later save must present."""
        # Any name rule_names() lists must be readable: the worker injects `.foo.md` as
        # rule `.foo` (spec §1.8), so only what could leave rules/ is refused here
        # (_plain_folder_name's leading-dot check refused exactly those listed names).
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or "\x00" in name:
            raise InvalidInput(f"`{name}` is not a rule name")
        path = self.rule_file(name)
        # A link is followed, as the worker follows it (its content is injected); keepgui
        # never writes through one (see write_rule) and the doctor reports links that leave
        # the data dir.
        try:
            data, stamp = fsio.read_stamped(path, limit=_RULE_LIMIT)
        except OSError as exc:
            raise KeepguiError(f"cannot read rule `{name}`: {exc.strerror or exc}") from None
        if data is None:
            raise NotFound(f"rule `{name}` not found in bank `{self.name}`")
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KeepguiError(f"rule `{name}` is not valid UTF-8 (byte {exc.start}); the worker skips it") from None
        return Rule(name, content, ms_of(stamp.mtime_ns), path, stamp)

    def write_rule(self, name: str, content: str, expect: fsio.Stamp | None = None) -> Rule | None:
        """``memory::rule::set``: write the rule atomically; empty content deletes it.

        ``expect`` is the stamp the rule was loaded with (``Stamp.missing()`` for a
        new rule); the save is refused with Conflict when the file changed since.
        Returns the new rule, or None when it was deleted.
        """
        validate_name(name)
        path = self.rule_file(name)
        self._refuse_outside_writes()
        if not rust_trim(content):
            if not self.exists():
                return None
            fsio.remove_file(path, expect=expect)
            self.datadir.after_write()
            return None
        self.datadir.ensure_bank(self.name)
        fsio.make_dirs(self.rules_path)
        stamp = fsio.atomic_write(path, content.encode("utf-8"), expect=expect)
        self.datadir.after_write()
        return Rule(name, content, ms_of(stamp.mtime_ns), path, stamp)

    def links_outside(self, names: list[str] | None = None) -> list[tuple[str, str]]:
        """``(path, target)`` of rule files (or the rules folder) that are links leading out of the data dir.

        ``names``: the :meth:`rule_names` the caller already listed (listed again when None).
        """
        root = os.path.realpath(self.datadir.path)
        out = []
        names = self.rule_names() if names is None else names
        for path in [self.rules_path] + [self.rule_file(n) for n in names]:
            if os.path.islink(path):
                real = os.path.realpath(path)
                if os.path.commonpath([real, root]) != root:
                    out.append((path, real))
        return out

    def _refuse_outside_writes(self) -> None:
        self.refuse_writes_through_links()
        if os.path.islink(self.rules_path):
            real = os.path.realpath(self.rules_path)
            root = os.path.realpath(self.datadir.path)
            if os.path.commonpath([real, root]) != root:
                raise ReadOnly(
                    f"{self.rules_path} is a link to {real}, outside the data dir; keepgui does not write through it"
                )

    def delete_rule(self, name: str, expect: fsio.Stamp | None = None) -> None:
        """Delete a rule file (any listed name, valid or not), refusing if it changed since ``expect``."""
        if name not in self.rule_names():
            raise NotFound(f"rule `{name}` not found in bank `{self.name}`")
        self._refuse_outside_writes()
        fsio.remove_file(self.rule_file(name), expect=expect)
        self.datadir.after_write()

    def rename_rule(self, old: str, new: str, expect: fsio.Stamp | None = None) -> Rule:
        """Rename a rule; the new name must be valid and free."""
        validate_name(new)
        if old not in self.rule_names():
            raise NotFound(f"rule `{old}` not found in bank `{self.name}`")
        if new in self.rule_names():
            raise InvalidInput(f"a rule named `{new}` already exists in bank `{self.name}`")
        self._refuse_outside_writes()
        fsio.check_unchanged(self.rule_file(old), expect)
        fsio.rename_durably(self.rule_file(old), self.rule_file(new))
        self.datadir.after_write()
        return self.read_rule(new)

    # ------------------------------------------------------------------ writing memories

    def batch(self, now: int | None = None) -> Batch:
        """Mutations appended together, under the log's lock, in one write (see :class:`Batch`)."""
        return Batch(self, now)

    def save(
        self,
        text: str,
        entities: Iterable[str] = (),
        tags: Iterable[str] = (),
        pinned: bool = False,
        session_id: str | None = None,
        now: int | None = None,
    ) -> mut.Transition:
        """``memory::save`` (creates the bank if needed)."""
        with self.batch(now) as b:
            return b.save(text, entities, tags, pinned, session_id)

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        entities: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        pinned: bool | None = None,
        now: int | None = None,
    ) -> mut.Transition:
        """``memory::update``."""
        with self.batch(now) as b:
            return b.update(memory_id, text, entities, tags, pinned)

    def pin(self, memory_id: str, pinned: bool = True, now: int | None = None) -> mut.Transition:
        """``memory::pin``."""
        with self.batch(now) as b:
            return b.pin(memory_id, pinned)

    def delete(self, memory_id: str, now: int | None = None) -> mut.Transition:
        """``memory::delete`` (tombstone)."""
        with self.batch(now) as b:
            return b.delete(memory_id)

    def supersede(self, memory_id: str, by: str, now: int | None = None) -> mut.Transition:
        """``memory::supersede``."""
        with self.batch(now) as b:
            return b.supersede(memory_id, by)

    def restore(self, memory_id: str, now: int | None = None) -> mut.Transition:
        """Un-tombstone a retired memory."""
        with self.batch(now) as b:
            return b.restore(memory_id)


class Batch:
    """Mutations of one bank that land together: one locked append, one fsync.

    Entering takes the log's exclusive lock and brings the replayed state up to
    date *under* it, so each mutation is computed from what is really on disk;
    later mutations in the batch see earlier ones. Leaving without an error
    appends every record in one write and refreshes the bank; an error inside
    the block writes nothing. ``report`` tells what was written and whether the
    worker was asked to reload; ``deltas`` holds the log deltas the batch's own
    refreshes consumed (others' appends included), so a view can follow them.
    """

    def __init__(self, bank: Bank, now: int | None) -> None:
        self.bank = bank
        self.now = now
        self.pending: list[Memory] = []
        self._overlay: dict[str, Memory] = {}
        self._lock: fsio.LockedLog | None = None
        self.report = WriteReport()
        self.deltas: list[LogDelta] = []

    def __enter__(self) -> Batch:
        bank = self.bank
        if not bank.exists():
            raise NotFound(f"bank `{bank.name}` not found in {bank.datadir.path}")
        bank.refuse_writes_through_links()
        self._lock = fsio.LockedLog(bank.log_path)
        self._lock.__enter__()
        try:
            # Let a worker's write in flight finish first, so the state is computed from
            # complete lines, not from half of one (invalid UTF-8 for a moment, or a record
            # seen before it is there). The append itself needs no wait (see fsio).
            self._lock.settle()
            self.deltas.append(bank.log.refresh())
            if bank.log.unreadable:
                raise ReadOnly(f"bank `{bank.name}` is not written to: {bank.log_path}: {bank.log.unreadable}")
        except BaseException:
            self._lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        lock, self._lock = self._lock, None
        if lock is None:  # __enter__ failed, so there is nothing to write or release
            return
        try:
            if exc_type is None and self.pending:
                lock.write_lines([m.to_line() for m in self.pending])
                self.report.records = list(self.pending)
        finally:
            lock.__exit__(None, None, None)
        if exc_type is None and self.pending:
            self.deltas.append(self.bank.log.refresh())
            self.report.reload = self.bank.datadir.after_write()

    def current(self, memory_id: str) -> Memory | None:
        """The record of an id as it will be once this batch is written."""
        return self._overlay.get(memory_id) or self.bank.log.get(memory_id)

    def _time(self) -> int:
        return now_ms() if self.now is None else self.now

    def _apply(self, transition: mut.Transition) -> mut.Transition:
        if transition.record is not None:
            self.pending.append(transition.record)
            self._overlay[transition.record.id] = transition.record
        return transition

    def save(
        self,
        text: str,
        entities: Iterable[str] = (),
        tags: Iterable[str] = (),
        pinned: bool = False,
        session_id: str | None = None,
    ) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.save_transition`."""
        mid = fingerprint(mut.clean_text(text))
        return self._apply(
            mut.save_transition(self.current(mid), text, entities, tags, pinned, session_id, self._time())
        )

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        entities: Iterable[str] | None = None,
        tags: Iterable[str] | None = None,
        pinned: bool | None = None,
    ) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.update_transition`."""
        return self._apply(
            mut.update_transition(self.current(memory_id), memory_id, text, entities, tags, pinned, self._time())
        )

    def pin(self, memory_id: str, pinned: bool = True) -> mut.Transition:
        """``memory::pin``: exactly an update of ``pinned``."""
        return self.update(memory_id, pinned=pinned)

    def delete(self, memory_id: str) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.delete_transition`."""
        return self._apply(mut.delete_transition(self.current(memory_id), memory_id, self._time()))

    def supersede(self, memory_id: str, by: str) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.supersede_transition`."""
        return self._apply(
            mut.supersede_transition(self.current(memory_id), memory_id, self.current(by), by, self._time())
        )

    def restore(self, memory_id: str) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.restore_transition`."""
        return self._apply(mut.restore_transition(self.current(memory_id), memory_id, self._time()))

    def reinforce(self, memory_id: str) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.reinforce_transition`."""
        return self._apply(mut.reinforce_transition(self.current(memory_id), memory_id, self._time()))

    def revert(self, target: Memory) -> mut.Transition:
        """See :func:`keepgui.backends.iii.writes.revert_transition`."""
        return self._apply(mut.revert_transition(self.current(target.id), target))


@dataclass(frozen=True)
class TrashedBank:
    """A bank folder in ``.trash``: its folder name, the bank it was, and when (ms)."""

    folder: str
    bank: str
    trashed_at: int
    path: str


def default_data_dir(environ: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """The worker's own default data dir (spec §1.1): ``data/memory`` under
    ``$III_COMPOSE_DIR`` when set, else under the current directory."""
    env = os.environ if environ is None else environ
    return resolve_data_dir("data/memory", env, cwd)


def resolve_data_dir(value: str, environ: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """Resolve a configured ``data_dir`` exactly as the worker does (spec §1.1)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or env.get("USERPROFILE") or os.path.expanduser("~")
    if value == "~":
        return home
    if value.startswith("~/"):
        return os.path.join(home, value[2:])
    if os.path.isabs(value):
        return value
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    base = env.get("III_COMPOSE_DIR") or (cwd if cwd is not None else os.getcwd())
    return os.path.join(base, *parts)


class DataDir:
    """An iii memory data dir: its banks, its trash, and the link to a running worker.

    ``worker`` is a :class:`~keepgui.backends.iii.worker.WorkerLink` (or None to
    never notify); :meth:`after_write` is called after every write.
    """

    def __init__(self, path: str | os.PathLike[str], worker: Reloader | None = None) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.worker = worker
        self.last_reload: ReloadOutcome | None = None
        self._banks: dict[str, Bank] = {}

    def after_write(self) -> ReloadOutcome | None:
        """Tell a running worker to reload; returns (and keeps in ``last_reload``) its
        :class:`~keepgui.backends.iii.worker.ReloadOutcome`, or None when no worker link is set."""
        self.last_reload = None if self.worker is None else self.worker.reload()
        return self.last_reload

    # ------------------------------------------------------------------ banks

    def bank_names(self) -> list[str]:
        """Bank folders (directories not starting with ``.``), in byte order."""
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise KeepguiError(f"{self.path} is not a folder") from None
        except OSError as exc:  # no permission, a link loop...: an error to show, not a crash
            raise KeepguiError(f"cannot list {self.path}: {exc.strerror or exc}") from None
        names = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir():
                    names.append(entry.name)
            except OSError:
                continue
        return sorted(names)

    def banks(self) -> list[Bank]:
        """Every bank, loaded lazily; banks that disappeared are forgotten."""
        names = self.bank_names()
        for gone in set(self._banks) - set(names):
            del self._banks[gone]
        return [self.bank(name) for name in names]

    def bank(self, name: str) -> Bank:
        """The bank of that folder name (which must exist)."""
        _plain_folder_name(name, "bank")
        bank = self._banks.get(name)
        if bank is None or not bank.exists():
            if not os.path.isdir(os.path.join(self.path, name)):
                raise NotFound(f"bank `{name}` not found in {self.path}")
            bank = self._banks[name] = Bank(self, name)
        return bank

    def has_bank(self, name: str) -> bool:
        """True when a bank folder of that name exists."""
        try:
            _plain_folder_name(name, "bank")
        except InvalidInput:
            return False
        return os.path.isdir(os.path.join(self.path, name))

    def ensure_bank(self, name: str, description: str = "") -> tuple[Bank, bool]:
        """``ensure_bank``: create the bank when missing; returns ``(bank, created)``.

        An existing bank is left as it is (its description is not changed).
        """
        if self.has_bank(name):
            return self.bank(name), False
        validate_name(name)
        fsio.make_dirs(self.path)
        try:
            # Whole or not at all: a bank folder left empty by a failed write (a full disk)
            # would be loaded by the worker as a bank.
            fsio.create_folder(os.path.join(self.path, name), {BANK_YAML: bank_yaml(description)}, [RULES_DIR])
        except FileExistsError:
            return self.bank(name), False  # made by someone else a moment ago
        return self.bank(name), True

    def create_bank(self, name: str, description: str = "") -> tuple[Bank, bool]:
        """``memory::bank::create``; notifies the worker when a bank was created."""
        bank, created = self.ensure_bank(name, description)
        if created:
            self.after_write()
        return bank, created

    def trash_bank(self, name: str, now: int | None = None) -> str:
        """``memory::bank::delete``: move the bank to ``.trash/<bank>-<ms>``; returns that path."""
        bank = self.bank(name)
        bank.refuse_writes_through_links()
        trash = self._trash_folder()
        fsio.make_dirs(trash)
        ms = now_ms() if now is None else now
        while os.path.lexists(os.path.join(trash, f"{name}-{ms}")):
            ms += 1
        dest = os.path.join(trash, f"{name}-{ms}")
        fsio.rename_durably(bank.path, dest)
        self._banks.pop(name, None)
        self.after_write()
        return dest

    def _trash_folder(self) -> str:
        """``<data_dir>/.trash``, refusing (ReadOnly) when it is a link: banks would be moved out of the data dir."""
        trash = os.path.join(self.path, TRASH_DIR)
        if os.path.islink(trash):
            raise ReadOnly(
                f"{trash} is a link to {os.path.realpath(trash)}; keepgui does not move banks "
                "through it (fix or remove the link)"
            )
        return trash

    def trashed(self) -> list[TrashedBank]:
        """Banks in ``.trash``, newest first."""
        trash = os.path.join(self.path, TRASH_DIR)
        try:
            entries = list(os.scandir(trash))
        except OSError:  # missing, not a folder, no permission, a link loop: nothing listable
            return []
        out = []
        for entry in entries:
            bank, _, ms = entry.name.rpartition("-")
            if not (bank and ms.isdigit() and ms.isascii()):
                continue
            try:
                if not entry.is_dir():
                    continue
            except OSError:
                continue
            out.append(TrashedBank(entry.name, bank, int(ms), entry.path))
        out.sort(key=lambda t: (-t.trashed_at, t.folder))
        return out

    def restore_bank(self, folder: str) -> Bank:
        """Move a trashed bank back under its name; refused when that name is taken."""
        _plain_folder_name(folder, "trash folder")
        self._trash_folder()
        match = [t for t in self.trashed() if t.folder == folder]
        if not match:
            raise NotFound(f"`{folder}` is not in {os.path.join(self.path, TRASH_DIR)}")
        name = match[0].bank  # a non-empty prefix of `folder`, so it cannot start with "." either
        if os.path.lexists(os.path.join(self.path, name)):
            raise InvalidInput(f"a bank named `{name}` already exists; trash or rename it first")
        fsio.rename_durably(match[0].path, os.path.join(self.path, name))
        self.after_write()
        return self.bank(name)

    def iter_temp_files(self) -> Iterator[str]:
        """Leftover temporary files of interrupted writes (keepgui's or the worker's), and
        half-made bank folders of an interrupted ``bank create`` (hidden: the worker skips them)."""
        # a data dir that cannot be listed holds no leftovers keepgui could remove
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.path):
                if fsio.is_temp_name(entry.name):
                    yield entry.path
        for bank in self.bank_names():
            for folder in (os.path.join(self.path, bank), os.path.join(self.path, bank, RULES_DIR)):
                try:
                    for entry in os.scandir(folder):
                        if fsio.is_temp_name(entry.name):
                            yield entry.path
                except OSError:
                    continue


def bank_yaml(description: str) -> bytes:
    """``bank.yaml`` for a description: one line, ``description: <yaml scalar>``."""
    import yaml

    text = yaml.safe_dump(
        {"description": rust_trim(description)},
        allow_unicode=True,
        default_flow_style=False,
        sort_keys=False,
        width=1 << 30,
    )
    return text.encode("utf-8")
