"""The command line starts fast: it imports what the command it runs needs, and nothing for ``--version``."""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys

from keepgui import cli


def test_every_command_is_found_in_the_module_that_adds_it():
    for name in cli.COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(name).register(sub, argparse.ArgumentParser(add_help=False))
        added = set(sub.choices)
        assert added == {c for c, m in cli.COMMANDS.items() if m == name}, name
    assert set(cli.COMMANDS.values()) == set(cli.COMMAND_MODULES)


def test_a_command_line_needs_only_its_commands_module():
    parser = cli._global_parser()
    assert cli._modules_for(parser, ["--version"]) == ()
    assert cli._modules_for(parser, []) == ()
    assert cli._modules_for(parser, ["--bank", "memories", "--demo"]) == ()  # the window, shown on bank `memories`
    assert cli._modules_for(parser, ["--data-dir", "d", "memories", "main"]) == ("keepgui.commands.iii",)
    assert cli._modules_for(parser, ["--data-dir=d", "preview", "q"]) == ("keepgui.commands.recall",)
    assert cli._modules_for(parser, ["no-such-command"]) == cli.COMMAND_MODULES  # argparse lists them all
    assert cli._modules_for(parser, ["--help"]) == cli.COMMAND_MODULES
    args = cli.build_parser(["--data-dir", "d", "memories", "main", "--json"]).parse_args(
        ["--data-dir", "d", "memories", "main", "--json"]
    )
    assert args.command == "memories" and args.bank == "main" and args.json


def test_version_imports_no_command_module_and_no_backend():
    code = (
        "import sys, contextlib\n"
        "from keepgui import cli\n"
        "with contextlib.suppress(SystemExit):\n"
        "    cli.main(['--version'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('keepgui.') or m in ('msgspec', 'regex', 'yaml')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, timeout=60)
    assert done.stdout.startswith("keepgui "), done.stderr
    loaded = done.stdout.splitlines()[-1]
    assert loaded == "['keepgui.cli', 'keepgui.core', 'keepgui.core.errors']", loaded
