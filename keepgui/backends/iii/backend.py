"""iii memory data dirs behind the source protocol (:mod:`keepgui.core.source`).

A data dir is a :class:`IiiSource`; each bank folder an :class:`IiiBank`
whose rows are the log's current records (the :class:`~keepgui.backends.iii.record.Memory`
structs themselves, never wrapped), whose documents are its ``rules/*.md``,
whose preview is ``memory::preview`` and whose plans are memory-consolidate's.

Locks: the source's lock guards the data dir's bank cache and the bank
listing; each bank's lock is held while its log is read or written, so a load
on a background thread and a write on the GUI thread never interleave. They are
always taken in that order (source, then bank).

Undo: a log is append-only, so taking a change back appends a compensating
revision: each memory's record from before the change (or a tombstone for a
memory the change created); redo appends the records the change wrote. Rule
saves are taken back by writing the previous text over exactly what the save
left (refused when the rule changed since); bank create, trash and restore by
the opposite move.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from keepgui.backends.iii.bank import IiiBank, count
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.documents import NAMES
from keepgui.backends.iii.log import LOG_NAME
from keepgui.backends.iii.store import (
    BANK_YAML,
    RULES_DIR,
    TRASH_DIR,
    Bank as CoreBank,
    DataDir,
    rust_stem_extension,
)
from keepgui.backends.iii.worker import NOT_SEEN, ReloadOutcome, WorkerLink
from keepgui.core import childwork, fsio
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import (
    BankKey,
    Capabilities,
    Change,
    Listing,
    SourceDefaults,
    Trashed,
    WatchPlan,
    stamps_of,
)

KIND = "iii"

SOURCE_CAPABILITIES = Capabilities(missing={}, noun="bank", nouns="banks", retire="Trash")
"""An iii data dir creates, trashes and restores banks."""


# ---------------------------------------------------------------------- the worker, off the caller's thread


class DeferredWorker:
    """A WorkerLink whose reload runs where ``run_later`` runs it (a helper thread in the window).

    A failure is reported by the sentence ``run_later``'s work returns; the write
    itself is told at once that the worker was asked.
    """

    def __init__(self, link: WorkerLink, run_later: Callable[[Callable[[], str | None]], None] | None) -> None:
        self.link = link
        self.run_later = run_later

    def reload(self) -> ReloadOutcome:
        """Ask a running worker to reload (now, or later off this thread)."""
        if self.run_later is None:
            return self.link.reload()

        def work() -> str | None:
            if self.link.reload_command is not None and not self.link.reload_command.strip():
                return None  # turned off on purpose: nothing went wrong, nothing to say
            outcome = self.link.reload()
            return None if outcome.ok else outcome.message

        try:
            self.run_later(work)
        except RuntimeError:  # the window is closing
            return ReloadOutcome(False, NOT_SEEN)
        return ReloadOutcome(True, "asked a running worker to reload")


# ---------------------------------------------------------------------- a data dir


class IiiSource(SourceDefaults):
    """An open iii data dir (see the module docstring)."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = NAMES

    def __init__(self, path: str, options: OpenOptions) -> None:
        self.path = os.path.abspath(path)
        self._link = WorkerLink(options.reload_command)
        self.datadir = DataDir(self.path, DeferredWorker(self._link, options.run_later))
        self.lock = threading.RLock()
        self.config = MemoryConfig()
        self._banks: dict[str, IiiBank] = {}
        self._listed: set[str] = set()  # the banks listed so far (a new one's child is started early)
        self.as_of = options.as_of
        """The moment recall is computed at (a copy of then, :mod:`keepgui.core.timetravel`); None: now."""

    @property
    def label(self) -> str:
        """How the sidebar names the source."""
        from keepgui.core.paths import short_path

        return f"iii · {short_path(self.path)}"

    @property
    def also_watched(self) -> tuple[str, ...]:
        """None: a data dir's banks, settings and worker state are all inside it."""
        return ()

    def key(self, name: str) -> BankKey:
        """The BankKey of one of its banks."""
        return BankKey(self.path, name)

    def core_bank(self, name: str) -> CoreBank:
        """The store's Bank of that name (raises NotFound)."""
        with self.lock:
            return self.datadir.bank(name)

    def scan(self) -> Listing:
        """Bank folders and the trash, as they are on disk now."""
        with self.lock:
            names = [b.name for b in self.datadir.banks()]
            trashed = self.datadir.trashed()
            for gone in set(self._banks) - set(names):
                del self._banks[gone]
            new, self._listed = set(names) - self._listed, set(names)
        if new and childwork.children_used():  # a window's: a big bank's replaying child started now
            from keepgui.backends.iii import warm

            for name in new:
                warm.expect(os.path.join(self.path, name, LOG_NAME))
        return Listing(tuple(names), tuple(Trashed(t.folder, t.bank, t.trashed_at, t.path) for t in trashed))

    def bank(self, name: str) -> IiiBank:
        """The bank of that folder name."""
        made = self._banks.get(name)  # without the lock, which a load holds for seconds: the GUI thread asks
        if made is not None:
            return made
        with self.lock:
            bank = self._banks.get(name)
            if bank is None:
                bank = self._banks[name] = IiiBank(self, name)
            return bank

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """Logs to re-read, rules that changed, banks that appeared or vanished."""
        rescan = False
        logs: set[str] = set()
        rules: dict[str, set[str]] = defaultdict(set)
        shown = set(listed)
        for parts in changed:
            if not parts or parts[0] == TRASH_DIR:
                rescan = True
                continue
            if parts[0].startswith("."):
                continue
            if len(parts) == 1:
                # Usually a file in the bank changed (its folder's own event): rescan only
                # when a bank folder appeared or vanished.
                rescan = rescan or (parts[0] in shown) != os.path.isdir(os.path.join(self.path, parts[0]))
            elif parts[1] == BANK_YAML:
                rescan = True  # a bank was described
            elif parts[1] == LOG_NAME:
                logs.add(parts[0])
            elif parts[1] == RULES_DIR:
                if len(parts) > 2:
                    rules[parts[0]].add(rust_stem_extension(parts[2])[0])
                elif not os.path.isdir(os.path.join(self.path, *parts)):
                    rules[parts[0]].add("")  # the folder itself went away
                # else: the folder's own event when a file in it changed; that file is reported itself
        notes = []
        for name in sorted(rules):
            notes.append(f"{name}: rules changed on disk")
            if name in shown:
                logs.add(name)  # its refresh recounts the rules
            else:
                rescan = True  # a new bank with only rules so far
        return WatchPlan(rescan, frozenset(logs), {n: frozenset(v) for n, v in rules.items()}, notes=tuple(notes))

    def set_reload_command(self, command: str | None) -> None:
        """The command run after every write to make a running worker reload (None: the default)."""
        self._link.reload_command = WorkerLink(command).reload_command

    def configure(self, values: Mapping[str, Any]) -> None:
        """The worker settings previews, rankings and budgets of this data dir use."""
        try:
            config = MemoryConfig.from_mapping(dict(values))
        except KeepguiError:
            config = MemoryConfig()
        self.config = config
        with self.lock:
            banks = list(self._banks.values())
        for bank in banks:
            if bank._engine is not None:
                bank._engine.config = config

    def _listing_change(
        self,
        text: str,
        result: object,
        reverse: Callable[[], Change] | None,
        message: str,
        gone: str = "",
        arrived: str = "",
    ) -> Change:
        # ``gone``: the bank folder this change took away (its files' removal is our own echo);
        # ``arrived``: the one it brought back, each of its files stamped as it is now
        files = stamps_of(os.path.join(self.path, gone)) if gone else ()
        if arrived:
            folder = os.path.join(self.path, arrived)
            files += stamps_of(*(os.path.join(base, f) for base, _dirs, names in os.walk(folder) for f in names))
        return Change(self.path, None, text, listing=True, result=result, message=message, reverse=reverse, files=files)

    def create_bank(self, name: str, description: str = "") -> Change:
        """A new bank folder with ``rules/`` and ``bank.yaml``; undo moves it to the trash."""
        with self.lock:
            _bank, created = self.datadir.create_bank(name, description)
        if not created:
            raise InvalidInput(f"a bank named `{name}` already exists")
        return self._listing_change(
            f"New bank {name}", name, lambda: self.trash_bank(name, f"New bank {name}"), f"created bank `{name}`"
        )

    def trash_bank(self, name: str, text: str | None = None) -> Change:
        """Move the bank to ``.trash/<bank>-<ms>``; undo brings it back."""
        text = text or f"Trash bank {name}"
        bank = self.bank(name)
        with self.lock, bank.lock:
            dest = self.datadir.trash_bank(name)
            self._banks.pop(name, None)
        folder = os.path.basename(dest)
        return self._listing_change(
            text, dest, lambda: self.restore_bank(folder, text), f"moved `{name}` to {dest}", gone=name
        )

    def restore_bank(self, folder: str, text: str | None = None) -> Change:
        """Move a trashed bank back under its name; undo trashes it again."""
        with self.lock:
            bank = self.datadir.restore_bank(folder)
        name = bank.name
        text = text or f"Restore bank {name}"
        return self._listing_change(
            text, name, lambda: self.trash_bank(name, text), f"restored bank `{name}`", arrived=name
        )

    def close(self) -> None:
        """Nothing to release: files are opened per read."""


# ---------------------------------------------------------------------- the registry's entry


def identify(path: str) -> Verdict:
    """An iii data dir holds bank folders (a ``memories.jsonl``, ``rules/`` or ``bank.yaml`` each)."""
    what = "an iii data dir"
    if os.path.isfile(os.path.join(path, LOG_NAME)):
        return Verdict(
            None,
            what,
            f"{path} is a bank folder itself (it has {LOG_NAME}); open its parent "
            f"{os.path.dirname(path)} as the data dir",
        )
    try:
        names = DataDir(path).bank_names()
    except KeepguiError as exc:
        return Verdict(None, what, str(exc))
    banks = [
        n for n in names if any(os.path.exists(os.path.join(path, n, f)) for f in (LOG_NAME, RULES_DIR, BANK_YAML))
    ]
    if not banks:
        return Verdict(None, what, f"no bank folder (one with {LOG_NAME}, {RULES_DIR}/ or {BANK_YAML}) in {path}")
    shown = ", ".join(banks[:5]) + ("…" if len(banks) > 5 else "")
    return Verdict(KIND, what, f"{count(len(banks), 'bank', 'banks')}: {shown}")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """``$KEEPGUI_DATA_DIR``, the worker's own default data dir, and ``~/.iii/data/memory``, where they exist."""
    from keepgui.backends.iii.store import default_data_dir

    found = []
    env = environ.get("KEEPGUI_DATA_DIR")
    home = environ.get("HOME") or os.path.expanduser("~")
    for path, why in ([(env, "$KEEPGUI_DATA_DIR")] if env else []) + [
        (default_data_dir(dict(environ)), "the memory worker's default data dir"),
        (os.path.join(home, ".iii", "data", "memory"), "~/.iii/data/memory"),
    ]:
        if path and os.path.isdir(path):
            found.append(Found(KIND, os.path.abspath(path), why))
    return found


def prepare_demo(folder: str, shift_ms: int, edited_ns: int) -> dict[str, str]:
    """Move every time in the demo banks' logs forward by ``shift_ms`` (the packaged copy is untouched);
    the logs keep looking edited at ``edited_ns``, as every file of the demo."""
    from keepgui.backends.iii.record import read_record

    for bank in sorted(os.listdir(folder)):
        path = os.path.join(folder, bank, LOG_NAME)
        if not os.path.isfile(path):
            continue
        data, _stamp = fsio.read_stamped(path)
        lines = (data or b"").split(b"\n")
        out = []
        for line in lines[:-1]:
            memory = read_record(line)
            if memory is None:
                out.append(line + b"\n")  # keep anything odd exactly as it is
                continue
            memory = memory.replace(
                created_at=memory.created_at + shift_ms,
                updated_at=memory.updated_at + shift_ms,
                invalid_at=None if memory.invalid_at is None else memory.invalid_at + shift_ms,
            )
            out.append(memory.to_line())
        fsio.atomic_write(path, b"".join(out) + lines[-1])
        os.utime(path, ns=(edited_ns, edited_ns))
    return {}


def home(environ: Mapping[str, str]) -> str:
    """The data dir ``--agent iii`` opens: ``$KEEPGUI_DATA_DIR``, else the worker's own default data dir."""
    from keepgui.backends.iii.store import default_data_dir

    given = environ.get("KEEPGUI_DATA_DIR")
    if given:
        return os.path.abspath(os.path.expanduser(given))
    return default_data_dir(environ)
