"""Where keepgui keeps its own things (never inside an agent's memory folders).

* ``resources_dir()``: icons, the ``.desktop`` entry and the demo data, shipped
  with keepgui (the repository's ``resources/``, or its copy in an installed wheel).
* ``app_data_dir()``: keepgui's own history of memory files (snapshots of
  keep.md and the Dream-managed files, removed entries), from platformdirs;
  ``$KEEPGUI_HOME`` moves it, which the tests use.
* ``app_cache_dir()``: what keepgui can always compute again (replayed logs and their
  indexes, so the CLI answers at once); losing it costs only a slower start.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

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


def _app_dir(subfolder: str, platform_dir: Callable[..., str]) -> str:
    """``$KEEPGUI_HOME/<subfolder>`` when that is set, else platformdirs' folder for keepgui."""
    home = os.environ.get("KEEPGUI_HOME")
    if home:
        return os.path.join(home, subfolder)
    return platform_dir(APP_NAME, appauthor=False)


def app_data_dir() -> str:
    """keepgui's own data folder (history snapshots); created on first use by the writer."""
    return _app_dir("data", platformdirs.user_data_dir)


def app_cache_dir() -> str:
    """keepgui's cache folder (never the source of truth: everything in it can be recomputed)."""
    return _app_dir("cache", platformdirs.user_cache_dir)


def remote_cache_dir() -> str:
    """Where the mirrors of folders on other machines are kept (keepgui.core.remote), under the cache folder."""
    return _remote_cache_dir(os.environ.get("KEEPGUI_HOME"), os.environ.get("XDG_CACHE_HOME"))


@functools.lru_cache(maxsize=8)
def _remote_cache_dir(_home: str | None, _xdg: str | None) -> str:
    return os.path.join(app_cache_dir(), "remote")  # asked of every path named to a person: computed once


def app_config_dir() -> str:
    """keepgui's settings folder."""
    return _app_dir("config", platformdirs.user_config_dir)


def app_runtime_dir() -> str:
    """Where the single-instance socket lives (private to the user).

    Without ``$XDG_RUNTIME_DIR`` (a login without a session manager, a container, cron),
    platformdirs falls back to a folder under ``/tmp`` and warns on stderr on every call; keepgui's
    cache folder, under the person's home, is private without a warning.
    """
    unix = os.name == "posix" and sys.platform != "darwin"
    if unix and not os.environ.get("KEEPGUI_HOME") and not os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(platformdirs.user_cache_dir(APP_NAME, appauthor=False), "run")
    return _app_dir("run", platformdirs.user_runtime_dir)


def short_path(path: str, limit: int = 0) -> str:
    """``path`` with the home folder written as ``~``, and elided in the middle beyond ``limit`` characters.

    A folder mirrored from another machine is named as it is there (``box:/home/me/.hermes``)."""
    home = os.path.expanduser("~")
    if path.startswith(remote_cache_dir() + os.sep):
        from keepgui.core import remote

        path = remote.display(path) or path
    path = "~" + path[len(home) :] if path.startswith(home + os.sep) else path
    return elide_middle(path, limit)


def elide_middle(text: str, limit: int = 0) -> str:
    """``text`` with its middle written as "…" beyond ``limit`` characters (a third kept before, the
    rest after: a path's last folders say the most); whole when ``limit`` is 0."""
    if limit and len(text) > limit:
        keep = limit - 1
        text = text[: keep // 3] + "…" + text[len(text) - (keep - keep // 3) :]
    return text
