"""Which memory backends keepgui knows, and how to open, recognise and find their sources (no Qt).

A backend is one package (``keepgui/backends/<kind>/``) whose ``__init__``
defines ``BACKEND``, a :class:`Backend`: its registry entry. The built-in ones
are listed in :data:`BUILTIN` (one line each) and registered exactly as any
other: a package installed beside keepgui adds its own through the
``keepgui.backends`` entry point group, and a program (a test) through
:func:`register`. Nothing outside a backend's package and this list names it.

An entry is cheap to read: it names the backend's options and commands as
data and its functions as :func:`lazy` references, so the command line reads
every entry and imports only the backend a command works on (and the window
only the backends of the sources it opens). Installed packages are looked up
only when a kind is not found among the others, or every backend is asked for.

The registry answers three questions for any folder or machine:

* :func:`open_source` — open a folder as a source of a kind;
* :func:`identify` — what a folder is (an iii data dir, a nanobot workspace,
  neither and why), before anything is opened;
* :func:`discover` — which sources exist on this machine (the first start, the
  welcome screen).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from keepgui.core.agents import Agent
from keepgui.core.errors import InvalidInput
from keepgui.core.pathmap import LOCAL, PathMap

if TYPE_CHECKING:  # the protocol (and msgspec with it) is imported by the backends, when one opens a source
    from keepgui.core.source import Source

BUILTIN: tuple[str, ...] = (
    "keepgui.backends.iii",
    "keepgui.backends.nanobot",
    "keepgui.backends.claude",
    "keepgui.backends.hermes",
    "keepgui.backends.codex",
    "keepgui.backends.gemini",
)
"""The packages of the built-in backends, in the order the window lists them."""

ENTRY_POINT_GROUP = "keepgui.backends"
"""Installed packages register further backends here (each entry point loads a :class:`Backend`)."""

COMMON_COMMANDS = (
    "memories",
    "keep",
    "edit",
    "forget",
    "restore",
    "pin",
    "unpin",
    "problems",
    "export",
    "import",
    "copy",
    "review",
    "compact",
    "context",
    "pending",
)
"""The commands every backend answers through the protocol (:mod:`keepgui.commands`)."""


def lazy(module: str, name: str) -> Callable[..., Any]:
    """A function that imports ``module`` when first called and calls its ``name`` with the same
    arguments (a registry entry names its backend's functions without importing them)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__qualname__ = call.__name__ = f"lazy({module}.{name})"
    return call


@dataclass(frozen=True)
class Verdict:
    """What a folder is: ``kind`` is the backend that would open it (None: none would).

    ``what`` names it for a person ("an iii data dir"); ``why`` gives the
    evidence ("3 banks: blog, coding, main") or, for a folder no backend would
    open, the reasons each gave.
    """

    kind: str | None
    what: str
    why: str

    @property
    def opens(self) -> bool:
        """True when a backend recognises the folder."""
        return self.kind is not None


@dataclass(frozen=True)
class Found:
    """A source that exists on this machine: its kind, folder, and how it was found."""

    kind: str
    path: str
    why: str


@dataclass(frozen=True)
class OpenOptions:
    """What opening a source may use: the reload command of a running agent, and a way to run
    follow-up work (such a reload) off the caller's thread. ``run_later(work)`` runs ``work``,
    which returns a sentence to show when it failed (or None); without it work runs at once."""

    reload_command: str | None = None
    run_later: Callable[[Callable[[], str | None]], None] | None = None
    project: str | None = None
    """The folder a session starts in, for a backend whose source is the agent's home whatever the project
    (:attr:`Backend.home_is_source`); None: the current folder."""
    paths: PathMap = LOCAL
    """Where the absolute paths the agent's files name are read, and how a path read is named there
    (:mod:`keepgui.core.pathmap`); a source below a remote mirror is given the mirror's map."""
    as_of: int | None = None
    """The moment (epoch ms) the source is asked at; None: now. A source opened on a copy of its files as
    they were (:mod:`keepgui.core.timetravel`) answers as if asked then: a backend whose answers depend on
    the clock (a recall score's decay with age) computes them as of this moment."""
    environ: Mapping[str, str] | None = None
    """The environment the agent's sessions run in (``HOME``, ``CODEX_HOME``...); None: this process's.
    A source opened as it was at a moment (:mod:`keepgui.core.timetravel`) is given one whose folders
    point into its copy, so opening it changes nothing process-wide (other threads open other sources)."""


@dataclass(frozen=True)
class Command:
    """A command of one backend on the command line, added by ``module`` (its ``register(sub, common)``,
    imported only when the command is used).

    A name of its own (``doctor``) is the backend's own command. A name of a common command
    (:data:`COMMON_COMMANDS`, ``memories``) is an old form of it that this backend keeps working:
    the one used when the command line names no source (no ``--agent`` or ``--source``) and gives
    every option of ``when`` (``compact --bank``: the most options given wins); with no
    ``module`` it is the common command itself, as if ``--agent KIND`` were given (it says so on
    stderr).
    """

    name: str
    module: str = ""
    when: tuple[str, ...] = ()


@dataclass(frozen=True)
class Option:
    """An option this backend gives one of the common commands (``compact --fuzzy``).

    Given on the command line, its value reaches the bank under the option's name (``fuzzy``):
    ``Bank.plan(what, **options)`` for ``compact`` and ``review``, ``Bank.context(query, **options)``
    for ``context``. ``metavar`` "" makes it a flag; else it takes a value, converted by ``type``
    (``"int"``, ``"float"`` or ``"text"``). ``means`` makes it another name for common options
    (``--reminder`` is ``--part reminder``), passed to no bank.
    """

    command: str
    flag: str
    help: str
    metavar: str = ""
    type: str = "text"
    means: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """The keyword the bank gets (``--via-timeout`` -> ``via_timeout``)."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Backend:
    """One backend, as the registry knows it.

    ``kind`` is its stable name (settings store it; ``--agent KIND``); ``label`` names one of its
    sources ("iii data dir"); ``icon`` is the icon of its banks in the sidebar.
    ``open`` opens a folder as a :class:`~keepgui.core.source.Source`;
    ``identify`` says whether a folder is one of its sources (a Verdict whose
    kind is this backend's, or None with the reason); ``discover`` lists the
    sources found on this machine (``environ`` as for the agent itself).
    ``home(environ)`` is the folder ``--agent KIND`` opens, found as the agent
    finds its own (its environment variables honoured), or None when it has none;
    ``projects`` says its sources can be opened at a project folder
    (``--project DIR``, the current folder when neither a bank nor a source is named);
    ``home_is_source`` that its source is the agent's home whatever the project, and the project
    folder only says where a session starts (given to ``open`` as :attr:`OpenOptions.project`).
    ``window_arg`` is the window's command-line option naming sources of this kind
    (its argparse ``dest``; the option is ``--`` + it with ``-`` for ``_``, described
    by ``window_help``); given to a command it is an old way to say ``--source``.
    ``commands`` are its own commands and the old forms of common ones it keeps
    working; ``options`` the options it gives common commands.
    ``demo_folder`` is its folder in the
    bundled demo, which ``prepare_demo(folder, shift_ms, edited_ns)`` moves to
    the present (times inside files forward by ``shift_ms``; every file was just
    made to look edited at ``edited_ns``) and which returns the places it names
    (``"source"``: the folder to open, when not ``folder`` itself).
    ``start_rank`` orders the banks a first start shows (lowest first);
    ``keep_rank`` orders Quick keep's targets.
    ``agent`` is the agent's program and the version keepgui was checked against
    (:mod:`keepgui.core.agents` reads the one installed here).
    """

    kind: str
    label: str
    icon: str
    open: Callable[[str, OpenOptions], Source]
    identify: Callable[[str], Verdict]
    discover: Callable[[Mapping[str, str]], list[Found]]
    home: Callable[[Mapping[str, str]], str | None] | None = None
    projects: bool = False
    home_is_source: bool = False
    window_arg: str | None = None
    window_help: str = ""
    commands: tuple[Command, ...] = ()
    options: tuple[Option, ...] = ()
    demo_folder: str | None = None
    prepare_demo: Callable[[str, int, int], Mapping[str, str]] | None = None
    start_rank: int = 50
    keep_rank: int = 50
    agent: Agent | None = None

    @property
    def window_flag(self) -> str | None:
        """The window's option for sources of this kind (``--data-dir``), or None."""
        return None if self.window_arg is None else "--" + self.window_arg.replace("_", "-")


_loaded: dict[str, Backend] | None = None
_declared: dict[str, Backend] | None = None
_extra: list[Backend] = []


def register(backend: Backend) -> None:
    """Add a backend (after the built-in and installed ones); a kind already known is refused."""
    known = _backends()
    if backend.kind in known:
        raise InvalidInput(f"a memory backend of kind `{backend.kind}` is registered already")
    known[backend.kind] = backend
    _extra.append(backend)
    if _declared is not None:
        _declared.setdefault(backend.kind, backend)


def unregister(kind: str) -> None:
    """Forget a backend added by :func:`register` (a test's own backend, once the test is done)."""
    global _declared
    for backend in [b for b in _extra if b.kind == kind]:
        _extra.remove(backend)
        if _loaded is not None:
            _loaded.pop(kind, None)
        _declared = None


def _load_module(name: str) -> Backend:
    module = importlib.import_module(name)
    backend = getattr(module, "BACKEND", None)
    if not isinstance(backend, Backend):
        raise InvalidInput(f"{name} defines no BACKEND (a keepgui.core.registry.Backend)")
    return backend


def _installed() -> list[Backend]:
    from importlib import metadata  # reading every installed distribution's entry points takes tens of ms

    out = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        loaded = entry.load()
        if isinstance(loaded, Backend):
            out.append(loaded)
    return out


def _backends() -> dict[str, Backend]:
    """Every backend: the built-in ones, the installed ones and the registered ones."""
    global _loaded
    if _loaded is None:
        found: dict[str, Backend] = {}
        for backend in [*_builtin(), *_installed(), *_extra]:
            found.setdefault(backend.kind, backend)
        _loaded = found
    return _loaded


def _builtin() -> list[Backend]:
    return [_load_module(name) for name in BUILTIN]


def declared() -> list[Backend]:
    """The built-in and registered backends, without looking up installed packages (quick: the
    command line reads them to parse a command; :func:`backends` has every one)."""
    global _declared
    if _loaded is not None:
        return list(_loaded.values())
    if _declared is None:
        found: dict[str, Backend] = {}
        for backend in [*_builtin(), *_extra]:
            found.setdefault(backend.kind, backend)
        _declared = found
    return list(_declared.values())


def backends() -> list[Backend]:
    """Every backend, built-in ones first, in registration order."""
    return list(_backends().values())


def kinds() -> list[str]:
    """The kinds of every backend."""
    return list(_backends())


def backend(kind: str) -> Backend:
    """The backend of ``kind`` (InvalidInput when there is none); installed packages are looked up
    only when no built-in or registered backend has that kind."""
    found = next((b for b in declared() if b.kind == kind), None) or _backends().get(kind)
    if found is None:
        raise InvalidInput(f"keepgui has no memory backend `{kind}` (it knows {', '.join(kinds())})")
    return found


def open_source(kind: str, path: str, options: OpenOptions | None = None) -> Source:
    """Open the folder ``path`` as a source of ``kind`` (below a remote mirror, with the mirror's paths)."""
    options = options or OpenOptions()
    path = os.path.abspath(path)
    if options.paths is LOCAL:
        from keepgui.core.remote import paths_of

        options = replace(options, paths=paths_of(path))
    return backend(kind).open(path, options)


def identify(path: str) -> Verdict:
    """What the folder ``path`` is, asking every backend (the first that recognises it wins)."""
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(path):
        return Verdict(
            None,
            "not a folder",
            f"{path} does not exist" if not os.path.exists(path) else f"{path} is a file, not a folder",
        )
    reasons = []
    for candidate in backends():
        verdict = candidate.identify(path)
        if verdict.opens:
            return verdict
        reasons.append(f"not {verdict.what}: {verdict.why}")
    return Verdict(None, "neither", "; ".join(reasons))


def discover(environ: Mapping[str, str] | None = None) -> list[Found]:
    """Every source found on this machine, backend by backend (each folder once)."""
    env = os.environ if environ is None else environ
    out: list[Found] = []
    seen: set[tuple[str, str]] = set()
    for candidate in backends():
        for found in candidate.discover(env):
            key = (found.kind, os.path.abspath(found.path))
            if key not in seen:
                seen.add(key)
                out.append(found)
    return out
