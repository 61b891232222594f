"""Where keepgui keeps its own things (never inside an agent's memory folders).

* ``resources_dir()``: icons, the ``.desktop`` entry and the demo data, shipped
  with keepgui (the repository's ``resources/``, or its copy in an installed wheel).
* ``app_data_dir()``: keepgui's own history of memory files (snapshots of
  keep.md and the Dream-managed files, removed entries), from platformdirs;
  ``$KEEPGUI_HOME`` moves it, which the tests use.
"""

from __future__ import annotations

import os

import platformdirs

APP_NAME = "keepgui"


def resources_dir() -> str:
    """The folder holding keepgui's resources (icons, demo data)."""
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    for candidate in (os.path.join(package, "resources"), os.path.join(os.path.dirname(package), "resources")):
        if os.path.isdir(os.path.join(candidate, "demo")):
            return candidate
    raise FileNotFoundError("keepgui's resources folder is missing from this installation")


def app_data_dir() -> str:
    """keepgui's own data folder (history snapshots); created on first use by the writer."""
    home = os.environ.get("KEEPGUI_HOME")
    if home:
        return os.path.join(home, "data")
    return platformdirs.user_data_dir(APP_NAME, appauthor=False)


def app_config_dir() -> str:
    """keepgui's settings folder."""
    home = os.environ.get("KEEPGUI_HOME")
    if home:
        return os.path.join(home, "config")
    return platformdirs.user_config_dir(APP_NAME, appauthor=False)


def app_runtime_dir() -> str:
    """Where the single-instance socket lives (private to the user)."""
    home = os.environ.get("KEEPGUI_HOME")
    if home:
        return os.path.join(home, "run")
    return platformdirs.user_runtime_dir(APP_NAME, appauthor=False)
