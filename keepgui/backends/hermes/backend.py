"""Hermes Agent behind the source protocol (:mod:`keepgui.core.source`), and its registry entry.

A :class:`HermesSource` is opened on a Hermes root (``~/.hermes``, or the folder ``$HERMES_HOME``
names) or on one profile's home (``…/profiles/NAME``). Its banks are the homes it holds: the
root's own home (``default``) and each profile under ``profiles/`` — each a
:class:`~keepgui.backends.hermes.bank.HermesHome` with the entries of its MEMORY.md and USER.md.
Its :meth:`~HermesSource.approvals` is the pending queue of every home (:mod:`.pending`).

The source says what changed files mean: a file under a home's ``memories/`` re-reads that home
(an outside rewrite is offered for review), its ``pending/`` re-reads it too (the sidebar's count
of staged writes), ``config.yaml`` re-reads it (limits and switches), a profile folder that came or
went re-lists the homes. ``state.db``, logs, sessions and skills are not memory and are ignored.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence

from keepgui.backends.hermes import CHECKED_VERSION, installed_version
from keepgui.backends.hermes.bank import HermesHome
from keepgui.backends.hermes.home import DEFAULT_PROFILE, default_root, looks_like_home, profiles, resolve_home
from keepgui.backends.hermes.pending import HermesApprovals
from keepgui.backends.hermes.writes import MemoryFiles
from keepgui.core import fsio
from keepgui.core.errors import NotFound
from keepgui.core.history import History
from keepgui.core.paths import short_path
from keepgui.core.registry import Found, OpenOptions, Verdict
from keepgui.core.source import CREATE_BANK, TRASH_BANK, Capabilities, Change, Listing, SourceDefaults, WatchPlan

KIND = "hermes"

SOURCE_CAPABILITIES = Capabilities(
    missing={
        CREATE_BANK: "a Hermes profile is made with `hermes profile create NAME`",
        TRASH_BANK: "keepgui does not delete Hermes profiles (`hermes profile delete NAME` does)",
    }
)

__all__ = ["CHECKED_VERSION", "HermesSource", "installed_version"]


class HermesSource(SourceDefaults):
    """A Hermes root or profile home (see the module docstring)."""

    kind = KIND
    capabilities = SOURCE_CAPABILITIES
    bank_names = None

    def __init__(
        self,
        path: str,
        options: OpenOptions | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        history: History | None = None,
        project: str | None = None,
    ) -> None:
        """Open ``path``; ``environ`` is the environment Hermes's sessions run in (this process's by
        default: it expands ``${VAR}`` in config.yaml and finds a managed config); ``project`` the folder
        whose context file the documents show (None: the current folder)."""
        self.path = os.path.abspath(path)
        self.environ = dict(os.environ if environ is None else environ)
        self.history = history or History()
        self.project = project
        self.lock = threading.RLock()
        self._banks: dict[str, HermesHome] = {}
        self.is_profile = os.path.basename(os.path.dirname(self.path)) == "profiles"
        self.label = f"Hermes · {short_path(self.path)}"
        self._approvals = HermesApprovals(self.path, self._homes, self._reread)

    # ------------------------------------------------------------------ banks

    def home_of(self, name: str) -> str:
        """The folder of the home named ``name``."""
        if self.is_profile:
            return self.path
        return self.path if name == DEFAULT_PROFILE else os.path.join(self.path, "profiles", name)

    def scan(self) -> Listing:
        """The root's own home and each profile (or the one profile opened); no trash. A session started
        with this root as its home uses the root's own (``own``)."""
        if self.is_profile:
            return Listing((os.path.basename(self.path),))
        return Listing((DEFAULT_PROFILE, *profiles(self.path)), own=DEFAULT_PROFILE)

    def bank(self, name: str) -> HermesHome:
        """One home (the same object for the same name while the source is open)."""
        made = self._banks.get(name)  # without the lock, which a load holds for seconds: the GUI thread asks
        if made is not None:
            return made
        with self.lock:
            bank = self._banks.get(name)
            if bank is None:
                if name not in self.scan().names:
                    raise NotFound(f"{self.path} has no Hermes home `{name}` (it has {', '.join(self.scan().names)})")
                bank = self._banks[name] = HermesHome(self, name, self.home_of(name))
            return bank

    def _homes(self) -> list[tuple[str, str, MemoryFiles]]:
        return [(name, self.home_of(name), self.bank(name).files) for name in self.scan().names]

    def _reread(self, name: str) -> Change:
        return self.bank(name).load()

    def approvals(self) -> HermesApprovals:
        """The pending queue of every home of the source."""
        return self._approvals

    def pending_count(self, name: str) -> int:
        """How many memory writes are staged in home ``name``."""
        folder = os.path.join(self.home_of(name), "pending", "memory")
        try:
            return sum(1 for n in os.listdir(folder) if n.endswith(".json"))
        except OSError:
            return 0

    # ------------------------------------------------------------------ watching

    def classify(self, changed: Sequence[tuple[str, ...]], listed: Sequence[str]) -> WatchPlan:
        """Which homes to re-read, which of their documents changed, which rewrites to review."""
        refresh: set[str] = set()
        documents: dict[str, set[str]] = {}
        reviews: dict[str, list[str]] = {}
        rescan = False
        notes = []
        for parts in changed:
            if not parts or fsio.is_temp_name(parts[-1]) or parts[-1].startswith(".mem_"):
                continue
            name, rest = DEFAULT_PROFILE, list(parts)
            if self.is_profile:
                name = os.path.basename(self.path)
            elif parts[0] == "profiles":
                if len(parts) <= 2:
                    rescan = True
                    continue
                name, rest = parts[1], list(parts[2:])
            if name not in listed:
                rescan = True
                continue
            head = rest[0]
            if head == "memories" and len(rest) == 2 and rest[1] in ("MEMORY.md", "USER.md"):
                refresh.add(name)
                documents.setdefault(name, set()).add(rest[1])
            elif head == "pending":
                refresh.add(name)
                notes.append(f"Hermes's pending queue changed ({name})")
            elif head in ("config.yaml", "SOUL.md") and len(rest) == 1:
                refresh.add(name)
                documents.setdefault(name, set()).add("memory settings" if head == "config.yaml" else "SOUL.md")
        return WatchPlan(
            rescan,
            frozenset(refresh),
            {n: frozenset(d) for n, d in documents.items()},
            {n: tuple(r) for n, r in reviews.items()},
            tuple(dict.fromkeys(notes)),
        )


# ---------------------------------------------------------------------- the registry's entry


def open_source(path: str, options: OpenOptions) -> HermesSource:
    """Open a Hermes root or profile home (``options.project``: the folder whose context file a session
    started there loads; None: the current folder)."""
    return HermesSource(path, options, options.environ, project=options.project)


def identify(path: str) -> Verdict:
    """A Hermes home: ``memories/``, or Hermes's state with ``skills/``, or profiles that are homes."""
    why = looks_like_home(path)
    if why:
        return Verdict(KIND, "a Hermes Agent home", why)
    return Verdict(None, "a Hermes Agent home", "no memories/ folder, Hermes state or profiles")


def discover(environ: Mapping[str, str]) -> list[Found]:
    """``~/.hermes`` and the home ``$HERMES_HOME`` names (its root), where they exist."""
    out = []
    native = default_root(environ)
    if os.path.isdir(native):
        out.append(Found(KIND, native, "Hermes Agent's home"))
    if environ.get("HERMES_HOME", "").strip():
        found = resolve_home(environ)
        root = found.root if os.path.isdir(found.root) else found.home
        if os.path.isdir(root) and os.path.abspath(root) != os.path.abspath(native):
            out.append(Found(KIND, root, "$HERMES_HOME"))
    return out


def prepare_demo(folder: str, shift_ms: int, edited_ns: int) -> dict[str, str]:
    """The demo's Hermes home: ``hermes/`` itself (its pending record's time moved to the present)."""
    import json
    import time

    pending = os.path.join(folder, "pending", "memory")
    try:
        names = sorted(n for n in os.listdir(pending) if n.endswith(".json"))
    except OSError:
        names = []
    for offset, name in enumerate(names):
        path = os.path.join(pending, name)
        data, stamp = fsio.read_stamped(path)
        obj = json.loads(data or b"{}")
        obj["created_at"] = time.time() - 3600 + offset
        fsio.atomic_write(path, json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8"), expect=stamp)
    return {"source": folder}


def home(environ: Mapping[str, str]) -> str:
    """The home ``--agent hermes`` opens: the one a new ``hermes`` session in ``environ`` would use."""
    return resolve_home(environ).home
