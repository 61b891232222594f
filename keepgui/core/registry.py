"""Which memory backends keepgui knows, and how to open, recognise and find their sources (no Qt).

A backend is one package (``keepgui/core/<kind>/``) whose ``backend`` module
defines ``BACKEND``, a :class:`Backend`. The built-in ones are listed in
:data:`BUILTIN` (one line each) and registered exactly as any other: a package
installed beside keepgui can add its own through the ``keepgui.backends`` entry
point group. Nothing outside a backend's package and this list names it.

Backends are imported on first use, so a command that needs none of them pays
for none.

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
from dataclasses import dataclass
from importlib import metadata

from keepgui.core.errors import InvalidInput
from keepgui.core.source import Source

BUILTIN: tuple[str, ...] = (
    "keepgui.backends.iii.backend",
    "keepgui.backends.nanobot.backend",
    "keepgui.backends.claude.backend",
    "keepgui.backends.hermes.backend",
    "keepgui.backends.codex.backend",
    "keepgui.backends.gemini.backend",
)
"""The modules of the built-in backends, in the order the window lists them."""

ENTRY_POINT_GROUP = "keepgui.backends"
"""Installed packages register further backends here (each entry point loads a :class:`Backend`)."""


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


@dataclass(frozen=True)
class Backend:
    """One backend, as the registry knows it.

    ``kind`` is its stable name (settings store it); ``label`` names one of its
    sources ("iii data dir"); ``icon`` is the icon of its banks in the sidebar.
    ``open`` opens a folder as a :class:`~keepgui.core.source.Source`;
    ``identify`` says whether a folder is one of its sources (a Verdict whose
    kind is this backend's, or None with the reason); ``discover`` lists the
    sources found on this machine (``environ`` as for the agent itself).
    ``window_arg`` is the command-line option (its argparse ``dest``) naming
    sources of this kind for the window; ``demo_folder`` its folder in the
    bundled demo, which ``prepare_demo(folder, shift_ms, edited_ns)`` moves to
    the present (times inside files forward by ``shift_ms``; every file was just
    made to look edited at ``edited_ns``) and which returns the places it names
    (``"source"``: the folder to open, when not ``folder`` itself).
    ``start_rank`` orders the banks a first start shows (lowest first);
    ``keep_rank`` orders Quick keep's targets.
    """

    kind: str
    label: str
    icon: str
    open: Callable[[str, OpenOptions], Source]
    identify: Callable[[str], Verdict]
    discover: Callable[[Mapping[str, str]], list[Found]]
    window_arg: str | None = None
    demo_folder: str | None = None
    prepare_demo: Callable[[str, int, int], Mapping[str, str]] | None = None
    start_rank: int = 50
    keep_rank: int = 50


_loaded: dict[str, Backend] | None = None
_extra: list[Backend] = []


def register(backend: Backend) -> None:
    """Add a backend (after the built-in and installed ones); a kind already known is refused."""
    known = _backends()
    if backend.kind in known:
        raise InvalidInput(f"a memory backend of kind `{backend.kind}` is registered already")
    known[backend.kind] = backend
    _extra.append(backend)


def _load_module(name: str) -> Backend:
    module = importlib.import_module(name)
    backend = getattr(module, "BACKEND", None)
    if not isinstance(backend, Backend):
        raise InvalidInput(f"{name} defines no BACKEND (a keepgui.core.registry.Backend)")
    return backend


def _installed() -> list[Backend]:
    out = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        loaded = entry.load()
        if isinstance(loaded, Backend):
            out.append(loaded)
    return out


def _backends() -> dict[str, Backend]:
    global _loaded
    if _loaded is None:
        found: dict[str, Backend] = {}
        for backend in [*(_load_module(name) for name in BUILTIN), *_installed()]:
            found.setdefault(backend.kind, backend)
        _loaded = found
    return _loaded


def backends() -> list[Backend]:
    """Every backend, built-in ones first, in registration order."""
    return list(_backends().values())


def kinds() -> list[str]:
    """The kinds of every backend."""
    return list(_backends())


def backend(kind: str) -> Backend:
    """The backend of ``kind`` (InvalidInput when there is none)."""
    found = _backends().get(kind)
    if found is None:
        raise InvalidInput(f"keepgui has no memory backend `{kind}` (it knows {', '.join(kinds())})")
    return found


def open_source(kind: str, path: str, options: OpenOptions | None = None) -> Source:
    """Open the folder ``path`` as a source of ``kind``."""
    return backend(kind).open(os.path.abspath(path), options or OpenOptions())


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
