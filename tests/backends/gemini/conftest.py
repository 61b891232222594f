"""A Gemini home and launch folder of a test's own (never the machine's), and a source on them."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from keepgui.backends.gemini.backend import GeminiSource
from keepgui.core.history import History
from tests.backends.gemini.trees import git, put


@dataclass
class Place:
    """A test's Gemini home: ``home``, its ``gd`` (``.gemini``), a repository ``repo`` and the launch
    folder ``cwd`` inside it, the environment sessions see, and keepgui's ``history``."""

    home: str
    gd: str
    repo: str
    cwd: str
    environ: dict[str, str]
    history: History

    def source(self, path: str | None = None) -> GeminiSource:
        """A source on the launch folder (or ``path``)."""
        return GeminiSource(path or self.cwd, environ=self.environ, history=self.history)

    def bank(self):
        """The launch folder's one bank, loaded."""
        source = self.source()
        bank = source.bank(source.scan().names[0])
        bank.load()
        return bank


@pytest.fixture
def place(tmp_path) -> Place:
    """A home with a global GEMINI.md, a repository with a GEMINI.md, and a launch folder in it."""
    home = str(tmp_path / "home")
    gd = os.path.join(home, ".gemini")
    put(os.path.join(gd, "settings.json"), '{"context": {}}')
    put(os.path.join(gd, "GEMINI.md"), "# Prefs\n- Answer briefly.\n- Use tabs.\n")
    repo = str(tmp_path / "work" / "shop")
    git(repo)
    put(os.path.join(repo, "GEMINI.md"), "- Run make test.\n")
    cwd = os.path.join(repo, "api")
    os.makedirs(cwd)
    environ = {
        "HOME": home,
        "PATH": os.environ.get("PATH", ""),
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "etc" / "settings.json"),
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(tmp_path / "etc" / "defaults.json"),
    }
    return Place(home, gd, repo, cwd, environ, History(str(tmp_path / "history")))
