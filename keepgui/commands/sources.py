"""Which memory a common command works on, for every backend alike.

* ``--agent KIND``: the agent's own memory, where the agent keeps it (its registry entry's ``home``,
  which honours the agent's own environment variables); for an agent with projects, the project of
  ``--project DIR`` (the current folder when neither a bank nor a source is named);
* ``--source PATH``: that folder, recognised by the registry (``--agent`` says what it is outright);
* ``--bank NAME``: the bank, where the source has several (one bank needs no name);
* ``--demo``: the source of ``--agent KIND`` in a fresh copy of the demo;
* a backend's window option (its entry's ``window_arg``) given to a command is an old name
  of ``--source`` for that backend: it still works, and says so.

Nothing here names a backend: what differs is in the registry's entries.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from keepgui.core.errors import InvalidInput, NotFound

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.registry import Backend
    from keepgui.core.source import Bank, Source
    from keepgui.core.timetravel import Past


def add_source_options(p: argparse.ArgumentParser, *, banks: str = "the bank, where the source has several") -> None:
    """Give a common command ``--agent``, ``--source``, ``--bank``, ``--project`` and the old names of ``--source``."""
    from keepgui.cli import declared_backends

    backends = declared_backends()
    kinds = ", ".join(b.kind for b in backends)
    p.add_argument(
        "--agent",
        metavar="KIND",
        default=argparse.SUPPRESS,
        help=f"the agent whose memory, where it keeps it ({kinds})",
    )
    p.add_argument(
        "--source", metavar="PATH", default=argparse.SUPPRESS, help="a folder of an agent's memory (recognised)"
    )
    p.add_argument("--bank", metavar="NAME", default=argparse.SUPPRESS, help=banks)
    with_projects = ", ".join(b.kind for b in backends if b.projects)
    p.add_argument(
        "--project",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help=f"the project folder ({with_projects or 'agents with projects'}; default: the current folder)",
    )
    for backend in backends:
        if backend.window_flag is not None:
            p.add_argument(
                backend.window_flag, dest=backend.window_arg, default=argparse.SUPPRESS, help=argparse.SUPPRESS
            )


@dataclass(frozen=True)
class Chosen:
    """The source a command works on: its backend, the open source, and ``how`` a later command line
    names it again (``--agent KIND --source PATH``)."""

    backend: Backend
    source: Source
    how: str


def _given(args: argparse.Namespace, dest: str) -> str | None:
    """An option's value (the last one given, before or after the command name)."""
    value = getattr(args, dest, None)
    if isinstance(value, list):
        value = value[-1] if value else None
    return None if value in (None, "") else str(value)


def _path(text: str) -> str:
    return os.path.abspath(os.path.expanduser(text))


def open_chosen(args: argparse.Namespace, ctx: Context) -> Chosen:
    """Open the source the options name (see the module docstring)."""
    from keepgui.core import registry

    kind, source, project = _given(args, "agent"), _given(args, "source"), _given(args, "project")
    if source is None:
        kind, source = _old_source_option(args, ctx, kind)
    backend = registry.backend(kind) if kind is not None else None
    if source is not None and project is not None and not (backend is not None and backend.home_is_source):
        raise InvalidInput("give --source or --project, not both")
    start: str | None = None  # where a session starts, for a backend whose source is the home
    how = ""
    if source is not None:
        path = _remote_folder(source, ctx) if _looks_remote(source) else _path(source)
        if not os.path.isdir(path):
            what = "does not exist" if not os.path.exists(path) else "is not a folder"
            raise NotFound(f"{path}: the source {what}")
        if backend is None:
            verdict = registry.identify(path)
            if verdict.kind is None:
                raise InvalidInput(f"{path} is not an agent's memory keepgui knows: {verdict.why}")
            backend = registry.backend(verdict.kind)
        how = f"--agent {backend.kind} --source {shlex.quote(source if _looks_remote(source) else path)}"
        if project is not None:
            start = _project(project)
            how += f" --project {shlex.quote(start)}"
    elif backend is None:
        kinds = ", ".join(b.kind for b in registry.declared())
        projects = [b.kind for b in registry.declared() if b.projects]
        hint = (
            f" (--project needs --agent KIND, one with projects: {', '.join(projects)})" if project and projects else ""
        )
        raise InvalidInput(f"say whose memory: --agent KIND ({kinds}) or --source PATH{hint}")
    elif project is not None or (backend.projects and not _given(args, "bank") and not getattr(args, "demo", False)):
        if not backend.projects:
            raise InvalidInput(
                f"{backend.kind} has no projects: give --source PATH or --bank NAME instead of --project"
            )
        path = _project(project or ".")
        how = f"--agent {backend.kind}" + (
            f" --project {shlex.quote(path)}" if project or not backend.home_is_source else ""
        )
        if backend.home_is_source:
            start, path = path, _demo_path(ctx, backend) if getattr(args, "demo", False) else _home(backend)
        else:
            _say_if_no_home(ctx, backend, path)
    elif getattr(args, "demo", False):
        path = _demo_path(ctx, backend)
        how = f"--agent {backend.kind} --source {shlex.quote(path)}"
    else:
        path, how = _home(backend), f"--agent {backend.kind}"
    options = registry.OpenOptions(reload_command=_reload_command(args), project=start)
    opened = registry.open_source(backend.kind, path, options)
    record(opened)
    return Chosen(backend, opened, how)


def _project(given: str) -> str:
    """The project folder ``--project`` names (the current folder for ".")."""
    path = _path(given)
    if not os.path.isdir(path):
        raise NotFound(f"{path}: no such folder; give the project folder with --project DIR")
    return path


def _demo_path(ctx: Context, backend: Backend) -> str:
    try:
        return ctx.demo().path(backend.kind)
    except AttributeError:
        raise NotFound(f"the demo has no {backend.label}") from None


def _home(backend: Backend) -> str:
    """The agent's own folder (``--agent KIND``), or NotFound saying where it was looked for."""
    home = backend.home(os.environ) if backend.home is not None else None
    if not home or not os.path.isdir(home):
        where = f" at {home}" if home else ""
        raise NotFound(f"no {backend.label}{where} (where --agent {backend.kind} looks); give --source PATH")
    return home


def _say_if_no_home(ctx: Context, backend: Backend, project: str) -> None:
    """A project opened with ``--agent KIND`` while the agent's own folder is missing: say so (what is
    listed is then only what the project folder itself holds)."""
    home = backend.home(os.environ) if backend.home is not None else None
    if home and not os.path.isdir(home):
        ctx.note(
            f"{home} does not exist (where --agent {backend.kind} looks for the agent's own folder): "
            f"only what {project} itself holds is here"
        )


def record(source: Source) -> None:
    """What changed in ``source`` since keepgui last looked goes into the journal, and every write this
    command makes is recorded as keepgui's own (so a one-shot command misses nothing either)."""
    from keepgui.core import journal
    from keepgui.core.errors import KeepguiError

    try:
        journal.sync_source(journal.install(), source)
    except (KeepguiError, OSError):
        return  # the journal is keepgui's own record: a command never fails for it


def _looks_remote(text: str) -> bool:
    from keepgui.core.remote import looks_remote

    return looks_remote(text)


def _remote_folder(spec: str, ctx: Context) -> str:
    """The local mirror of a remote folder (``ssh://[user@]host[:port]/path`` or ``host:path``), brought up to
    date. An unknown host is asked about on a terminal (its fingerprint shown) and refused without one."""
    import sys

    from keepgui.core.remote import open_mirror
    from keepgui.core.remote.ssh import UnknownHost, accept_host

    try:
        return open_mirror(spec).local
    except UnknownHost as unknown:
        if not (sys.stdin.isatty() and sys.stderr.isatty()) or not unknown.keys:
            raise
        ctx.note(str(unknown).split("\nCheck", 1)[0])
        sys.stderr.write("Trust this host key and connect? [y/N] ")
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            raise
        accept_host(unknown)
        return open_mirror(spec).local


def _old_source_option(args: argparse.Namespace, ctx: Context, kind: str | None) -> tuple[str | None, str | None]:
    """A backend's window option given instead of ``--source`` (the old way): its kind and folder."""
    from keepgui.cli import declared_backends

    for backend in declared_backends():
        if backend.window_arg is None or (kind is not None and kind != backend.kind):
            continue
        path = _given(args, backend.window_arg)
        if path is not None:
            ctx.note(
                f"`{backend.window_flag} DIR` given to a command is an old form, kept working: "
                f"it is now `--agent {backend.kind} --source DIR`"
            )
            return backend.kind, path
    return kind, None


def _reload_command(args: argparse.Namespace) -> str | None:
    """``--reload-command``; with ``--demo`` and none given, no reload at all: no running agent reads a
    throw-away copy, so telling one to reload would only fail (or reload the wrong data)."""
    given = getattr(args, "reload_command", None)
    if given is None and getattr(args, "demo", False):
        return ""
    return given


def bank_names(chosen: Chosen) -> tuple[str, ...]:
    """The banks of the source as they are on disk now."""
    return chosen.source.scan().names


def open_bank(args: argparse.Namespace, chosen: Chosen) -> tuple[Bank, str]:
    """The bank ``--bank`` names (or the source's only one), and how a later command line names it."""
    listing = chosen.source.scan()
    names = listing.names
    wanted = _given(args, "bank")
    label = f"{chosen.source.label} ({chosen.source.path})"
    if wanted is not None:
        if wanted not in names:
            have = f"its banks: {', '.join(names)}" if names else "it has none"
            raise NotFound(f"{label} has no bank `{wanted}` ({have})")
        return chosen.source.bank(wanted), f"{chosen.how} --bank {shlex.quote(wanted)}"
    if len(names) == 1:
        return chosen.source.bank(names[0]), chosen.how
    if listing.own in names:  # the one the agent itself uses when none is named
        return chosen.source.bank(listing.own), chosen.how
    if not names:
        raise NotFound(f"{label} has no banks yet")
    raise InvalidInput(f"{label} has {len(names)} banks: {', '.join(names)}; say which with --bank NAME")


# ---------------------------------------------------------------------- the backends' own options of a common command


_TYPES = {"int": int, "float": float, "text": str}


def add_backend_options(p: argparse.ArgumentParser, command: str) -> None:
    """The options the backends give ``command`` (each flag once; an option that is another name for common
    ones, such as ``--reminder`` for ``--part reminder``, sets those)."""
    from keepgui.cli import declared_backends

    seen: set[str] = set()
    for backend in declared_backends():
        for option in backend.options:
            if option.command != command or option.flag in seen:
                continue
            seen.add(option.flag)
            if option.means:
                dest = option.means[0].lstrip("-").replace("-", "_")
                const = option.means[1] if len(option.means) > 1 else True
                p.add_argument(option.flag, dest=dest, action="store_const", const=const, help=option.help)
            elif option.metavar:
                p.add_argument(
                    option.flag,
                    dest=f"option_{option.dest}",
                    metavar=option.metavar,
                    type=_TYPES[option.type],
                    default=None,
                    help=option.help,
                )
            else:
                p.add_argument(option.flag, dest=f"option_{option.dest}", action="store_true", help=option.help)


def backend_options(args: argparse.Namespace, chosen: Chosen, command: str) -> dict[str, object]:
    """The backend's own options given to ``command``, by name, for the bank; an option only another
    backend has is refused, naming whose it is."""
    from keepgui.cli import declared_backends

    mine = {o.dest for o in chosen.backend.options if o.command == command and not o.means}
    out: dict[str, object] = {}
    for backend in declared_backends():
        for option in backend.options:
            if option.command != command or option.means:
                continue
            value = getattr(args, f"option_{option.dest}", None)
            if value is None or value is False:
                continue
            if option.dest not in mine:
                raise InvalidInput(f"{option.flag} is an option of {backend.kind}, not of {chosen.backend.kind}")
            out[option.dest] = value
    return out


def given_options(options: dict[str, object]) -> str:
    """The options as a command line gives them again (``--fuzzy --threshold 80``)."""
    out = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        out.append(flag if value is True else f"{flag} {shlex.quote(shown)}")
    return "".join(" " + item for item in out)


# ---------------------------------------------------------------------- a source as it was (--at)


def add_at_option(p: argparse.ArgumentParser, what: str = "the memory") -> None:
    """``--at TIME``: ISO 8601, ``now``, or a time ago (``2h``, ``3d``, ``1w``)."""
    p.add_argument(
        "--at",
        metavar="TIME",
        default=None,
        help=f"{what} as it was then (ISO 8601 such as 2026-03-01T14:30, or a time ago: 90s, 15m, 2h, 3d, 1w)",
    )


def chosen_project(args: argparse.Namespace, chosen: Chosen) -> str | None:
    """The folder a session starts in, for a backend whose source is the agent's home (``--project``)."""
    project = _given(args, "project")
    return _project(project) if project is not None and chosen.backend.home_is_source else None


@contextlib.contextmanager
def past_of(args: argparse.Namespace, ctx: Context, chosen: Chosen, at: int) -> Iterator[Past]:
    """The chosen source as it was at ``at`` (:func:`keepgui.core.timetravel.opened_at`), its notes said."""
    from keepgui.core import journal, registry
    from keepgui.core.timetravel import describe_when, opened_at

    options = registry.OpenOptions(project=chosen_project(args, chosen))
    with opened_at(journal.install(), chosen.source, at, options) as past:
        if not ctx.json_mode:
            ctx.note(f"as it was at {describe_when(at)} (read-only)")
        for note in past.notes:
            ctx.note(note)
        yield past
