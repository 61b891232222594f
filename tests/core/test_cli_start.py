"""The command line starts fast: it imports what the command it runs needs — its command's module and
the one backend it works on — and nothing for ``--version``."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys

import pytest

from keepgui import cli
from keepgui.core import registry
from tests.conftest import ROOT


class Recorder:
    """Subparsers that remember the names a module adds."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        self.names.append(name)
        kwargs.pop("help", None)
        return argparse.ArgumentParser(prog=name, **kwargs)  # type: ignore[arg-type]


def added_by(module: str) -> set[str]:
    recorder = Recorder()
    importlib.import_module(module).register(recorder, argparse.ArgumentParser(add_help=False))
    return set(recorder.names)


def test_every_command_is_found_in_the_module_that_adds_it():
    assert set(cli.GENERIC) == set(registry.COMMON_COMMANDS) | {"quick-keep", "inbox", "watch", "secrets"}
    for module in set(cli.GENERIC.values()):
        assert added_by(module) == {c for c, m in cli.GENERIC.items() if m == module}, module
    for backend in registry.declared():
        by_module: dict[str, set[str]] = {}
        for command in backend.commands:
            if command.module:
                by_module.setdefault(command.module, set()).add(command.name)
            else:
                assert command.name in cli.GENERIC  # the common command itself, as --agent KIND
        for module, names in by_module.items():
            assert names <= added_by(module), (backend.kind, module)


@pytest.mark.parametrize(
    ("argv", "modules", "agent"),
    [
        (["--version"], {}, ""),
        ([], {}, ""),
        (["--bank", "memories", "--demo"], {}, ""),  # the window, shown on bank `memories`
        (["--data-dir", "d", "memories", "main"], {"keepgui.commands.iii": {"memories"}}, ""),
        (["memories", "--agent", "iii", "--bank", "main"], {"keepgui.commands.memories": {"memories"}}, ""),
        (["memories", "--source", "d"], {"keepgui.commands.memories": {"memories"}}, ""),
        (["--data-dir=d", "preview", "q"], {"keepgui.commands.recall": {"preview"}}, ""),
        (["keep", "a", "fact"], {"keepgui.commands.nanobot": {"keep"}}, ""),
        (["compact"], {"keepgui.commands.nanobot": {"compact"}}, ""),
        (["compact", "--bank", "main"], {"keepgui.commands.iii": {"compact"}}, ""),
        (["compact", "--workspace", "w"], {"keepgui.commands.nanobot": {"compact"}}, ""),
        (["memories", "--workspace", "w"], {"keepgui.commands.memories": {"memories"}}, ""),  # nanobot had none
        (["context", "--project", "p"], {"keepgui.commands.context": {"context"}}, "claude"),
        (["context", "--agent", "nanobot"], {"keepgui.commands.context": {"context"}}, ""),
        (["problems"], {"keepgui.commands.memories": {"problems"}}, ""),  # a new command has no old form
        (["claude", "memories"], {"keepgui.commands.claude": {"claude"}}, ""),
        (["memories", "main", "--help"], {"keepgui.commands.memories": {"memories"}}, ""),  # help of the common one
    ],
)
def test_a_command_line_needs_only_its_commands_module(argv, modules, agent):
    route = cli.route_of(cli._global_parser(argv), argv)
    assert {name: set(keep or ()) for name, keep in route.modules.items()} == modules
    assert route.agent == agent


def test_help_and_unknown_commands_list_every_command():
    everything = cli.route_of(cli._global_parser(["--help"]), ["--help"]).modules
    assert set(everything) >= set(cli.GENERIC.values()) | {"keepgui.commands.iii", "keepgui.commands.claude"}
    assert cli.route_of(cli._global_parser([]), ["no-such-command"]).modules == everything
    args = cli.parse_args(["--data-dir", "d", "memories", "main", "--json"])
    assert args.command == "memories" and args.bank == "main" and args.json


def loaded_after(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The keepgui modules (and msgspec, regex, yaml) a process running ``keepgui ARGV`` imported."""
    code = (
        "import sys, contextlib, io\n"
        "from keepgui import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    cli.main({argv!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('keepgui.') or m in ('msgspec', 'regex', 'yaml')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT, **(env or {})},
        timeout=120,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    return eval(done.stdout.splitlines()[-1])  # noqa: S307 - the list this test's own child printed


def test_version_imports_no_command_module_and_no_backend():
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.startswith("keepgui "), done.stderr
    assert loaded_after(["--version"]) == ["keepgui.cli", "keepgui.core", "keepgui.core.errors"]


def backend_modules(loaded: list[str], kind: str) -> list[str]:
    """The modules of a backend beyond its registry entry (its package's ``__init__``)."""
    return [m for m in loaded if m.startswith(f"keepgui.backends.{kind}.")]


def test_a_common_command_imports_only_the_backend_it_works_on(demo_copy):
    loaded = loaded_after(["memories", "--agent", "nanobot", "--source", demo_copy.nanobot, "--json"])
    assert backend_modules(loaded, "nanobot") and "keepgui.commands.memories" in loaded
    assert not backend_modules(loaded, "iii") and not backend_modules(loaded, "claude")
    assert not [
        m for m in loaded if m.startswith("keepgui.ui") or m in ("keepgui.commands.iii", "keepgui.commands.nanobot")
    ]
    loaded = loaded_after(
        ["context", "--agent", "claude", "--project", demo_copy.claude_project], {"HOME": demo_copy.claude_home}
    )
    assert backend_modules(loaded, "claude") and not backend_modules(loaded, "iii")
    assert not backend_modules(loaded, "nanobot")


def test_an_old_command_line_imports_only_its_backend(demo_copy):
    loaded = loaded_after(["--data-dir", demo_copy.iii, "memories", "main", "--json"])
    assert "keepgui.commands.iii" in loaded and "keepgui.commands.memories" not in loaded
    assert not backend_modules(loaded, "nanobot") and not backend_modules(loaded, "claude")
    loaded = loaded_after(["entries", "--workspace", demo_copy.nanobot, "--json"])
    assert not backend_modules(loaded, "iii") and not backend_modules(loaded, "claude")
