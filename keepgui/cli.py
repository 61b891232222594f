"""The ``keepgui`` command: the window with no arguments, and every scripted command.

Each family of commands lives in a module under :mod:`keepgui.commands` that
adds its subparsers; this module holds what they share: the global options,
where the data dir and workspaces come from, output in human or ``--json``
form, and turning every expected error into one line and a non-zero exit.

Exit status: 0 success; 1 a failure the command reports (including "nothing
was written" for ``keep`` and "problems found" for ``doctor``); 2 bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from keepgui import __version__
from keepgui.core.errors import KeepguiError

if TYPE_CHECKING:  # each is imported when a command first needs it (start-up stays quick)
    from keepgui.backends.iii.store import DataDir
    from keepgui.backends.iii.worker import ReloadOutcome
    from keepgui.core.demo import DemoCopy

COMMAND_MODULES = (
    "keepgui.commands.iii",
    "keepgui.commands.recall",
    "keepgui.commands.nanobot",
    "keepgui.commands.compaction",
    "keepgui.commands.desktop",
    "keepgui.commands.context",
    "keepgui.commands.claude",
)

COMMANDS = {
    **dict.fromkeys(
        ("banks", "memories", "save", "edit", "pin", "delete", "restore", "supersede", "rules", "rule-set", "bank")
        + ("doctor",),
        "keepgui.commands.iii",
    ),
    **dict.fromkeys(("preview", "recall"), "keepgui.commands.recall"),
    **dict.fromkeys(("keep", "entries", "forget", "unforget", "nanobot-preview"), "keepgui.commands.nanobot"),
    **dict.fromkeys(("compact", "review"), "keepgui.commands.compaction"),
    **dict.fromkeys(("quick-keep",), "keepgui.commands.desktop"),
    **dict.fromkeys(("context",), "keepgui.commands.context"),
    **dict.fromkeys(("claude",), "keepgui.commands.claude"),
}
"""Which module of :data:`COMMAND_MODULES` adds each command: a command line imports only the module
of its command (the others import what their commands need: ``nanobot.keep`` alone compiles ~30
regular expressions), and the window or ``--version`` none. A test holds it to what the modules add."""


class Context:
    """What a command needs besides its own arguments: the sources, and how to print."""

    def __init__(self, args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.args = args
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self._demo: DemoCopy | None = None
        self._datadir: DataDir | None = None

    # ------------------------------------------------------------------ sources

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

    def data_dir_path(self) -> str:
        """``--data-dir``, else ``$KEEPGUI_DATA_DIR``, else the demo (with ``--demo``),
        else the worker's own default resolution."""
        from keepgui.backends.iii.store import default_data_dir

        given = getattr(self.args, "data_dir", None)
        if given:
            return os.path.abspath(os.path.expanduser(str(given)))
        if getattr(self.args, "demo", False):
            return self.demo().iii
        env = os.environ.get("KEEPGUI_DATA_DIR")
        if env:
            return os.path.abspath(os.path.expanduser(env))
        return default_data_dir()

    def datadir(self) -> DataDir:
        """The :class:`~keepgui.backends.iii.store.DataDir` the command works on."""
        if self._datadir is None:
            from keepgui.backends.iii.store import DataDir
            from keepgui.backends.iii.worker import WorkerLink

            self._datadir = DataDir(self.data_dir_path(), WorkerLink(self.reload_command()))
        return self._datadir

    def reload_command(self) -> str | None:
        """``--reload-command``; with ``--demo`` and none given, no reload at all: no running worker
        reads a throw-away copy, so telling one to reload would only fail (or reload the wrong data)."""
        given = getattr(self.args, "reload_command", None)
        if given is None and getattr(self.args, "demo", False) and not getattr(self.args, "data_dir", None):
            return ""
        return given

    def workspace_path(self) -> str:
        """``--workspace``, else the demo's workspace (with ``--demo``), else nanobot's discovery."""
        given = getattr(self.args, "workspace", None)
        if isinstance(given, list):  # the window's repeatable --workspace given before the command
            given = given[-1] if given else None
        if given:
            return os.path.abspath(os.path.expanduser(str(given)))
        if getattr(self.args, "demo", False):
            return self.demo().nanobot
        from keepgui.backends.nanobot.workspace import discover_workspace

        return discover_workspace()

    # ------------------------------------------------------------------ output

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

    def report_reload(self, outcome: ReloadOutcome | None) -> None:
        """Say plainly when a running worker could not be told to reload."""
        if outcome is not None and not outcome.ok:
            self.note(outcome.message)


def add_common(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The global options, accepted before or after the command name."""
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        default=default,
        help="iii memory data dir (default: $KEEPGUI_DATA_DIR, else the worker's own default)",
    )
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
        help="command that makes a running worker reload after a write "
        "(default: `iii trigger memory::reload`; empty string: never)",
    )


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, with every command module's subcommands.

    Given the command line ``argv``, only what parsing it needs: the module of its command, or no
    command module when it names none (the window, ``--version``); every module for help or a
    command name that is not known (argparse then lists them all).
    """
    import importlib

    parser = _global_parser()
    common = argparse.ArgumentParser(add_help=False)
    add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if argv is None else _modules_for(parser, argv):
        module = importlib.import_module(name)
        module.register(sub, common)
    return parser


def _modules_for(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str, ...]:
    """The command modules needed to parse ``argv`` (see :func:`build_parser`)."""
    takes_value = {option for action in parser._actions if action.nargs != 0 for option in action.option_strings}
    args = iter(argv)
    for arg in args:
        if arg in ("-h", "--help"):
            return COMMAND_MODULES
        if arg == "--":
            break
        if arg.startswith("-") and arg != "-":
            if arg in takes_value:
                next(args, None)
            continue
        module = COMMANDS.get(arg)
        return (module,) if module is not None else COMMAND_MODULES
    return ()


def _global_parser() -> argparse.ArgumentParser:
    """The window's and every command's global options (no commands yet)."""
    parser = argparse.ArgumentParser(
        prog="keepgui",
        description="See and control what your AI agents remember. With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"keepgui {__version__}")
    add_common(parser, suppress=False)
    parser.add_argument(
        "--workspace",
        metavar="DIR",
        action="append",
        default=None,
        help="nanobot workspace to open in the window (repeatable)",
    )
    parser.add_argument(
        "--claude",
        metavar="DIR",
        action="append",
        default=None,
        help="Claude Code home (~/.claude) or project folder to open in the window (repeatable)",
    )
    parser.add_argument(
        "--hermes",
        metavar="DIR",
        action="append",
        default=None,
        help="Hermes Agent home (~/.hermes, or a profile's folder) to open in the window (repeatable)",
    )
    parser.add_argument(
        "--codex",
        metavar="DIR",
        action="append",
        default=None,
        help="Codex home (~/.codex, $CODEX_HOME) or project folder to open in the window (repeatable)",
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
        "--stand-alone", action="store_true", help="do not hand over to (or become) the single running instance"
    )
    return parser


def run_command(args: argparse.Namespace, ctx: Context) -> int:
    """Dispatch to the command's function, turning expected errors into one line."""
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
        "data_dir",
        "workspace",
        "claude",
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
"""Arguments that name files, folders or commands: any bytes the system allows (they are not stored as text)."""


def text_argument_error(args: argparse.Namespace) -> str | None:
    """Why a text argument cannot be used, or None: text keepgui stores must be UTF-8.

    The shell hands Python the bytes of each argument; bytes that are not
    UTF-8 (``caf\\xe9``, or an encoded lone surrogate ``\\xed\\xa0\\x80``)
    arrive as lone surrogates, which no memory, keep.md line or rule can
    hold: the worker's files are UTF-8. Checked before anything is written.
    """
    for dest, value in vars(args).items():
        if dest in PATH_ARGUMENTS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return (
                    f"the {dest.replace('_', '-').upper()} argument is not valid UTF-8 text "
                    f"({_undecodable(item, exc.start)}); memories, keep.md and rules hold UTF-8 only, "
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
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    problem = text_argument_error(args)
    if problem is not None:
        print(f"keepgui: error: {problem}", file=sys.stderr)
        return 2
    if args.command is None:
        from keepgui.app import run_gui

        return run_gui(args)
    ctx = Context(args)
    if os.environ.get("KEEPGUI_DEBUG"):
        return int(args.func(args, ctx) or 0)
    return run_command(args, ctx)


if __name__ == "__main__":
    sys.exit(main())
