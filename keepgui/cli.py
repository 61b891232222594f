"""The ``keepgui`` command: the window with no arguments, and every scripted command.

The common commands (``memories``, ``keep``, ``edit``, ``forget``, ``restore``, ``pin``/``unpin``,
``problems``, ``review``, ``compact``, ``context``, ``pending``) are written once, against the source protocol,
in the generic modules of :data:`GENERIC`; they work for every backend with the same options and
the same ``--json`` shapes. A backend's own commands, the options it gives common commands and
the old command lines it keeps working are named in its registry entry
(:class:`~keepgui.core.registry.Backend`): this module reads the entries and names no backend.

A command line imports only what parsing it needs: the module of its command (a generic one, or
the backend's), or no command module when it names none (the window, ``--version``); every module
for help or a command name that is not known (argparse then lists them all). A backend module is
imported only when one of its commands runs, and a backend only when a command opens its source.

Old command lines: a common command given no source (no ``--agent``, no ``--source``) is what it
was before there was one command line — the old form a backend's entry names for it (``Command``
with the common command's name), chosen by the options given (the backend's window option, or the
options of its ``when``). Each says on stderr what replaces it.

Exit status: 0 success; 1 a failure the command reports (including "nothing was written" for
``keep`` and "problems found" for ``problems``); 2 bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TextIO

from keepgui import __version__
from keepgui.core.errors import KeepguiError

if TYPE_CHECKING:  # each is imported when a command first needs it (start-up stays quick)
    from keepgui.core.demo import DemoCopy
    from keepgui.core.registry import Backend

GENERIC = {
    **dict.fromkeys(
        ("memories", "keep", "edit", "forget", "restore", "pin", "unpin", "problems", "export", "import", "copy"),
        "keepgui.commands.memories",
    ),
    **dict.fromkeys(("compact", "review"), "keepgui.commands.plans"),
    "context": "keepgui.commands.context",
    "pending": "keepgui.commands.pending",
    "quick-keep": "keepgui.commands.desktop",
    **dict.fromkeys(("inbox", "watch"), "keepgui.commands.inbox"),
    "secrets": "keepgui.commands.secrets",
}
"""The commands written once for every backend, and the module that adds each (a test holds it to
what the modules add and to :data:`keepgui.core.registry.COMMON_COMMANDS`)."""

SOURCE_OPTIONS = frozenset({"--agent", "--source"})
"""Options that name a source: with one, a common command is the common command (never an old form)."""


class Context:
    """What a command needs besides its own arguments: the demo, and how to print."""

    def __init__(self, args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.args = args
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.memo: dict[str, Any] = {}
        """What a command module keeps for the rest of the command (a source it opened...)."""
        self._demo: DemoCopy | None = None

    def demo(self) -> DemoCopy:
        """The fresh temporary copy of the demo data (made once per process)."""
        if self._demo is None:
            from keepgui.core.demo import KEEP_DEMO_ENV, throwaway_demo_copy

            self._demo = throwaway_demo_copy()
            fate = (
                f"kept: ${KEEP_DEMO_ENV} is set" if os.environ.get(KEEP_DEMO_ENV) else "removed when the command ends"
            )
            self.note(f"--demo: working on a throw-away copy of the demo in {self._demo.root} ({fate})")
        return self._demo

    @property
    def json_mode(self) -> bool:
        """True when the command was asked for ``--json``."""
        return bool(getattr(self.args, "json", False))

    def out(self, text: str = "") -> None:
        """A line of human output."""
        print(text, file=self.stdout)

    def emit_json(self, obj: Any) -> None:
        """One JSON document on stdout (raw UTF-8, like the worker)."""
        import json

        print(json.dumps(obj, ensure_ascii=False, indent=None, separators=(",", ":")), file=self.stdout)

    def note(self, text: str) -> None:
        """A side remark on stderr, so it never mixes with ``--json`` output."""
        print(f"keepgui: {text}", file=self.stderr)

    def replaced(self, old: str, new: str) -> None:
        """Say that the old command line ``keepgui OLD`` is now ``keepgui NEW`` (it still works), on one line
        (a name with a newline in it is written as ``\\n``)."""
        self.note(f"`keepgui {one_line(old)}` is an old form, kept working: it is now `keepgui {one_line(new)}`")


def one_line(text: str) -> str:
    """Text on one line: control characters (a newline in a file name) as escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The global options, accepted before or after the command name."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--demo",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="work on a fresh temporary copy of the bundled demo data",
    )
    parser.add_argument(
        "--reload-command",
        metavar="CMD",
        default=default,
        help="command that makes a running agent reload after a write (default: the backend's own; "
        "empty string: never)",
    )


def declared_backends() -> list[Backend]:
    """The registry's built-in and registered backends (installed packages are not looked up)."""
    from keepgui.core import registry

    return registry.declared()


# ---------------------------------------------------------------------- which modules a command line needs


class Route:
    """What parsing a command line needs: each module with the commands it keeps (None: all it adds but
    old forms of common commands), and the backend a common command works on when an old form says so
    (with the old and the new command line, to say so). A plain class: ``--version`` imports no dataclasses."""

    def __init__(
        self,
        modules: dict[str, Collection[str] | None] | None = None,
        agent: str = "",
        old: tuple[str, str] = ("", ""),
    ) -> None:
        self.modules: dict[str, Collection[str] | None] = modules or {}
        self.agent = agent
        self.old = old


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: the global options and the commands ``argv`` needs (see the module docstring);
    with no ``argv``, every command (what ``--help`` lists)."""
    import importlib

    parser = _global_parser(argv)
    common = argparse.ArgumentParser(add_help=False)
    add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    route = _everything() if argv is None else route_of(parser, argv)
    for name, keep in route.modules.items():
        module = importlib.import_module(name)
        module.register(_Only(sub, keep if keep is not None else _listed(name)), common)
    if route.agent:
        for choice in sub.choices.values():  # the one common command: as if --agent KIND were given
            choice.set_defaults(agent=route.agent, replaced=[route.old])
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse a command line (what :func:`main` and the tests do)."""
    return build_parser(argv).parse_args(argv)


def _everything() -> Route:
    """Every generic module, and every backend's module for its own commands."""
    route = Route(dict.fromkeys(dict.fromkeys(GENERIC.values())))
    for backend in _all_backends():
        for command in backend.commands:
            if command.module and command.name not in GENERIC:
                route.modules.setdefault(command.module, None)
    return route


def _listed(module: str) -> set[str]:
    """The commands a module keeps on a parser of every command: a generic module's, and a backend's own
    (an old form of a common command is reached only on a command line that names it)."""
    names = {c for c, m in GENERIC.items() if m == module}
    for backend in _all_backends():
        names |= {c.name for c in backend.commands if c.module == module and c.name not in GENERIC}
    return names


def _all_backends() -> list[Backend]:
    from keepgui.core import registry

    return registry.backends()


class _Only:
    """The subparsers of a command line, keeping only the commands routed to one module: a module's
    ``register`` adds all its commands, and the ones not wanted go to parsers of their own, unused."""

    def __init__(self, sub: argparse._SubParsersAction[argparse.ArgumentParser], names: Collection[str]) -> None:
        self.sub = sub
        self.names = names

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """The command's parser: part of the command line when it is wanted, else a loose one."""
        if name in self.names:
            return self.sub.add_parser(name, **kwargs)
        kwargs.pop("help", None)
        kwargs.pop("aliases", None)
        return argparse.ArgumentParser(prog=name, **kwargs)


def route_of(parser: argparse.ArgumentParser, argv: list[str]) -> Route:
    """The modules needed to parse ``argv`` (see the module docstring)."""
    takes_value = {option for action in parser._actions if action.nargs != 0 for option in action.option_strings}
    command, given, before = _scan(argv, takes_value)
    if command is None or before & {"-h", "--help"}:
        return _everything() if given & {"-h", "--help"} else Route()
    if command in GENERIC:
        route = Route({GENERIC[command]: {command}})
        if given & (SOURCE_OPTIONS | {"-h", "--help"}):
            return route
        old = _old_form(command, given, declared_backends())
        if old is None:
            return route
        backend, module = old
        if module:
            return Route({module: {command}})
        return Route(route.modules, backend.kind, (f"{command} (with no --agent)", f"{command} --agent {backend.kind}"))
    for backend in declared_backends():
        for known in backend.commands:
            if known.name == command and known.module:
                return Route({known.module: {command}})
    for backend in _all_backends():  # installed backends are looked up only for a command no other has
        for known in backend.commands:
            if known.name == command and known.module:
                return Route({known.module: {command}})
    return _everything()  # argparse lists every command


def _scan(argv: list[str], takes_value: set[str]) -> tuple[str | None, set[str], set[str]]:
    """The command name in ``argv`` (None: none), every option given anywhere (``--x=1`` as ``--x``), and
    those given before the command name."""
    command: str | None = None
    given: set[str] = set()
    before: set[str] = set()
    args = iter(argv)
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and arg != "-":
            flag = arg.split("=", 1)[0]
            given.add(flag)
            if command is None:
                before.add(flag)
                if flag in takes_value and "=" not in arg:
                    next(args, None)
            continue
        if command is None:
            command = arg
    return command, given, before


def _old_form(command: str, given: set[str], backends: list[Backend]) -> tuple[Backend, str] | None:
    """The backend whose old form of a common command a command line with no source means, and the module
    that keeps it ("" for the common command itself), or None: the common command, which says what is missing.

    A backend hinted by the options given (its window option; ``--project`` for those with projects) wins;
    among the rest, the old form whose ``when`` options are all given, the most of them first."""
    hinted = [
        b
        for b in backends
        if (b.window_flag is not None and b.window_flag in given) or (b.projects and "--project" in given)
    ]
    forms = [
        (len(c.when), i, b, c.module)
        for i, b in enumerate(backends)
        for c in b.commands
        if c.name == command and set(c.when) <= given and (not hinted or b in hinted)
    ]
    if not forms:
        return None
    _n, _i, backend, module = max(forms, key=lambda f: (f[0], -f[1]))
    return backend, module


def _global_parser(argv: list[str] | None) -> argparse.ArgumentParser:
    """The window's and every command's global options (no commands yet): each backend's window option
    comes from its registry entry (none are read for ``--version``)."""
    parser = argparse.ArgumentParser(
        prog="keepgui",
        description="See and control what your AI agents remember. With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"keepgui {__version__}")
    add_common(parser, suppress=False)
    parser.add_argument(
        "--source",
        metavar="PATH",
        action="append",
        default=None,
        help="a folder of an agent's memory to open in the window (repeatable; what it is is recognised)",
    )
    if argv is None or "--version" not in argv:
        for backend in declared_backends():
            if backend.window_flag is not None and backend.window_arg is not None:
                parser.add_argument(
                    backend.window_flag,
                    dest=backend.window_arg,
                    metavar="DIR",
                    action="append",
                    default=None,
                    help=backend.window_help or f"{backend.label} to open in the window (repeatable)",
                )
    parser.add_argument("--screenshot", metavar="PATH", help="render the window to a PNG after loading, then exit")
    parser.add_argument("--bank", metavar="NAME", help="the bank to select in the window")
    parser.add_argument(
        "--panel",
        choices=("memories", "rules", "preview", "graph", "activity"),
        help="the panel to show in the window (activity: the Memories panel with its activity strip)",
    )
    parser.add_argument("--query", metavar="TEXT", help="the preview question to show in the window")
    parser.add_argument(
        "--tray", action="store_true", help="start in the tray, the window hidden (what starting at login runs)"
    )
    parser.add_argument(
        "--stand-alone", action="store_true", help="do not hand over to (or become) the single running instance"
    )
    return parser


# ---------------------------------------------------------------------- running a command


def run_command(args: argparse.Namespace, ctx: Context) -> int:
    """Dispatch to the command's function, turning expected errors into one line."""
    for old, new in getattr(args, "replaced", None) or ():
        ctx.replaced(old, new)
    func: Callable[[argparse.Namespace, Context], int] = args.func
    try:
        return int(func(args, ctx) or 0)
    except KeepguiError as exc:
        print(f"keepgui: error: {exc}", file=ctx.stderr)
        return 1
    except BrokenPipeError:
        # the reader (a pager, `head`) went away: not an error worth a message
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at interpreter exit
        return 1
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"keepgui: error: {exc.strerror or exc}{where}", file=ctx.stderr)
        return 1


def _tolerant_output() -> None:
    """Never die printing a name: escape what the output encoding cannot hold.

    File names that are not valid UTF-8 reach Python as lone surrogates
    (``b"bank\\xff"`` -> ``"bank\\udcff"``); printing one to a strict UTF-8
    stdout raised UnicodeEncodeError, a traceback instead of the listing.
    ``backslashreplace`` prints ``\\udcff`` instead, which also keeps ``--json``
    output valid JSON (a ``\\u`` escape). Text that encodes is unchanged.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # a stream that is not a file (a test's)
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


PATH_ARGUMENTS = frozenset(
    {
        "source",
        "project",
        "files",
        "file",
        "config",
        "screenshot",
        "reload_command",
        "bank",
        "folder",
        "via",
    }
)
"""Arguments that name files, folders or commands: any bytes the system allows (they are not stored as
text); every backend's window option is one too."""


def text_argument_error(args: argparse.Namespace) -> str | None:
    """Why a text argument cannot be used, or None: text keepgui stores must be UTF-8.

    The shell hands Python the bytes of each argument; bytes that are not
    UTF-8 (``caf\\xe9``, or an encoded lone surrogate ``\\xed\\xa0\\x80``)
    arrive as lone surrogates, which no memory, document line or rule can
    hold: the agents' files are UTF-8. Checked before anything is written.
    """
    paths = PATH_ARGUMENTS | {b.window_arg for b in declared_backends() if b.window_arg}
    for dest, value in vars(args).items():
        if dest in paths:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"the {dest.replace('_', '-').upper()} argument is not valid UTF-8 text "
                    f"({_undecodable(item, exc.start)}); memories, documents and rules hold UTF-8 only, "
                    "so nothing was written"
                )
    return None


def _undecodable(text: str, start: int) -> str:
    """Where ``text`` (an argument decoded with surrogateescape) stops being UTF-8, for people."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a real lone surrogate, not escaped bytes
        return f"a lone surrogate at character {start + 1} of {text.encode('utf-8', 'backslashreplace').decode()!r}"
    try:
        raw.decode("utf-8")
        bad = 0
    except UnicodeDecodeError as exc:
        bad = exc.start
    return f"byte 0x{raw[bad]:02x} at byte {bad + 1} of '{repr(raw)[2:-1]}'"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``keepgui`` and ``python -m keepgui``."""
    _tolerant_output()
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    problem = text_argument_error(args)
    if problem is not None:
        print(f"keepgui: error: {problem}", file=sys.stderr)
        return 2
    if args.command is None:
        from keepgui.app import run_gui

        return run_gui(args)
    ctx = Context(args)
    if os.environ.get("KEEPGUI_DEBUG"):  # a traceback instead of the one-line error
        return int(args.func(args, ctx) or 0)
    return run_command(args, ctx)


if __name__ == "__main__":
    sys.exit(main())
