"""Start keepgui in the tray at login: the desktop's autostart convention (no Qt).

Freedesktop desktops start every ``*.desktop`` entry of ``$XDG_CONFIG_HOME/autostart/`` (default
``~/.config/autostart/``) at login (the XDG Autostart specification). keepgui's entry runs
``keepgui --tray``: the window stays hidden, the tray icon shows, and the journal records every
change the agents make from the first minute. Turning it off removes the entry keepgui wrote (an
entry someone else wrote under that name is left alone and said so).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping

from keepgui.core import fsio
from keepgui.core.errors import ReadOnly

ENTRY_NAME = "keepgui.desktop"
MARK = "X-Keepgui-Autostart=true"
"""The line that says keepgui wrote the entry (so turning it off never removes someone else's)."""


def entry_path(environ: Mapping[str, str] | None = None) -> str:
    """Where keepgui's autostart entry goes."""
    env = os.environ if environ is None else environ
    config = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(config, "autostart", ENTRY_NAME)


def command() -> str:
    """The command the entry runs: this installation's keepgui, in the tray."""
    return f"{shlex.quote(sys.executable)} -m keepgui --tray"


def entry_text() -> str:
    """The whole autostart entry."""
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=keepgui\n"
        "Comment=Records every change your agents make to their memory; lives in the tray\n"
        f"Exec={command()}\n"
        "Icon=keepgui\n"
        "Terminal=false\n"
        "X-GNOME-Autostart-enabled=true\n"
        f"{MARK}\n"
    )


def is_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """True when keepgui's entry is in the autostart folder."""
    data, _stamp = fsio.read_stamped(entry_path(environ))
    return data is not None and MARK.encode() in data


def set_enabled(on: bool, environ: Mapping[str, str] | None = None) -> None:
    """Write or remove keepgui's autostart entry."""
    path = entry_path(environ)
    data, stamp = fsio.read_stamped(path)
    if data is not None and MARK.encode() not in data:
        raise ReadOnly(f"{path} was not written by keepgui; it is left as it is")
    if on:
        fsio.make_dirs(os.path.dirname(path))
        fsio.atomic_write(path, entry_text().encode("utf-8"), expect=stamp)
    elif data is not None:
        fsio.remove_file(path, expect=stamp)
