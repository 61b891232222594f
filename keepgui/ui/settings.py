"""keepgui's remembered settings, typed, in one JSON file in the user's config folder.

Every key has one accessor, one type and one default here. The file is written
like every other file keepgui writes: atomically through
:mod:`keepgui.core.fsio` (so a crash never leaves half a settings file), and
read tolerantly (a damaged file means defaults, never a crash). The file
carries its version; an older file is brought up to date on load by the
steps of :data:`MIGRATIONS`, one per version, in order.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any, TypeVar

from PySide6.QtCore import QByteArray

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import app_config_dir

_Kind = TypeVar("_Kind")
_Default = TypeVar("_Default")

VERSION = 2

THEMES = ("system", "light", "dark")
"""The themes a person can choose (Edit → Preferences)."""
RECENT = 8
"""How many recently opened sources are remembered."""

HIDDEN_COLUMNS = ("confidence", "created", "revision")
"""Columns hidden until the person shows them (View → Columns): the detail pane shows each of
them, and without them the text has the table's width at 1440 px."""
"""The version of the settings this keepgui writes."""


def _v1_to_v2(values: dict[str, Any]) -> dict[str, Any]:
    """Version 2: per-source settings of any backend (``source/<key>``), no longer only the iii
    worker's (``worker/<key>``); every open source names its backend (the first versions wrote
    iii data dirs without a ``kind``)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        out["source/" + key[len("worker/") :] if key.startswith("worker/") else key] = value
    sources = out.get("sources")
    if isinstance(sources, list):
        out["sources"] = [{**s, "kind": s.get("kind", "iii")} if isinstance(s, dict) else s for s in sources]
    return out


MIGRATIONS: dict[int, Any] = {1: _v1_to_v2}
"""``{version: step}``: each step turns the values of that version into those of the next."""


def migrate(values: dict[str, Any]) -> dict[str, Any]:
    """Bring settings of any earlier version up to :data:`VERSION` (a newer file is left as it is)."""
    version = values.get("version", 1)
    if not isinstance(version, int) or version < 1:
        version = 1
    while version < VERSION:
        values = MIGRATIONS[version](values)
        version += 1
        values["version"] = version
    return values


NOTIFY_SETTING = "inbox/notify"
"""Settings key: a desktop notification for each change an agent makes (bool, default False)."""


class Settings:
    """Typed access to keepgui's settings (window state, sources, last bank, view options).

    A ``read_only`` Settings reads the file but never writes it: a demo or
    screenshot run looks like the person's keepgui, and leaves their settings
    exactly as they were (a screenshot's window size must not be the next start's).
    """

    def __init__(self, path: str | None = None, read_only: bool = False) -> None:
        self.path = path or os.path.join(app_config_dir(), "settings.json")
        self.read_only = read_only
        self._values: dict[str, Any] = {}
        try:
            data, _ = fsio.read_stamped(self.path, limit=4 << 20)
            loaded = json.loads(data.decode("utf-8")) if data else {}
            if isinstance(loaded, dict):
                self._values = loaded
        except (OSError, ValueError, KeepguiError):
            self._values = {}  # a damaged settings file costs the person their layout, nothing more
        before = self._values.get("version")
        self._values = migrate(dict(self._values)) if self._values else {"version": VERSION}
        self._dirty = bool(before is not None and before != self._values.get("version"))

    def _get(self, key: str, default: _Default, kind: type[_Kind]) -> _Kind | _Default:
        value = self._values.get(key, default)
        return value if isinstance(value, kind) else default

    def _set(self, key: str, value: Any) -> None:
        if self._values.get(key) != value:
            self._values[key] = value
            self._dirty = True

    # window
    def state(self, name: str) -> QByteArray | None:
        """A saved widget state (geometry, window state, splitters, header)."""
        value = self._get(f"state/{name}", None, str)
        return None if value is None else QByteArray(base64.b64decode(value))

    def set_state(self, name: str, value: QByteArray) -> None:
        """Remember a widget state."""
        self._set(f"state/{name}", base64.b64encode(bytes(value.data())).decode("ascii"))

    # sources
    def sources(self) -> list[dict[str, Any]] | None:
        """Open sources as ``[{"kind": <backend kind>, "path": ...}]``; None before the first start."""
        value = self._values.get("sources")
        if not isinstance(value, list):
            return None
        return [s for s in value if isinstance(s, dict) and isinstance(s.get("path"), str)]

    def set_sources(self, sources: list[dict[str, Any]]) -> None:
        """Remember the open sources."""
        self._set("sources", sources)

    def last_bank(self) -> tuple[str, str] | None:
        """The bank selected last time (source folder, bank name)."""
        value = self._get("last_bank", None, list)
        return (value[0], value[1]) if value and len(value) == 2 else None

    def set_last_bank(self, source: str, bank: str) -> None:
        """Remember the selected bank."""
        self._set("last_bank", [source, bank])

    # view
    def show_history(self) -> bool:
        """View → Show history."""
        return self._get("show_history", False, bool)

    def set_show_history(self, value: bool) -> None:
        """Remember View → Show history."""
        self._set("show_history", bool(value))

    def hidden_columns(self) -> list[str]:
        """Fields of the columns the person hid (until they choose: :data:`HIDDEN_COLUMNS`)."""
        return self._get("hidden_columns", list(HIDDEN_COLUMNS), list)

    def set_hidden_columns(self, fields: list[str]) -> None:
        """Remember hidden columns."""
        self._set("hidden_columns", list(fields))

    def panel(self) -> str:
        """The last panel shown (memories, rules, preview)."""
        return self._get("panel", "memories", str)

    def set_panel(self, value: str) -> None:
        """Remember the panel shown."""
        self._set("panel", value)

    # preferences (Edit → Preferences)
    def theme(self) -> str:
        """``system`` (follow the desktop), ``light`` or ``dark``."""
        value = self._get("theme", "system", str)
        return value if value in THEMES else "system"

    def set_theme(self, value: str) -> None:
        """Remember the theme."""
        self._set("theme", value if value in THEMES else "system")

    def reload_command(self) -> str | None:
        """The command that tells a running agent to reload after a write (None: the default,
        ``iii trigger memory::reload``; "": never)."""
        return self._get("reload_command", None, str)

    def set_reload_command(self, value: str | None) -> None:
        """Remember the reload command (None: back to the default)."""
        if value is None:
            if "reload_command" in self._values:
                del self._values["reload_command"]
                self._dirty = True
            return
        self._set("reload_command", value)

    def start_sources(self) -> list[dict[str, Any]] | None:
        """The sources every start opens, when the person fixed them (None: those open when keepgui
        last closed, :meth:`sources`)."""
        value = self._values.get("start_sources")
        if not isinstance(value, list):
            return None
        return [s for s in value if isinstance(s, dict) and isinstance(s.get("path"), str)]

    def set_start_sources(self, sources: list[dict[str, Any]] | None) -> None:
        """Fix the sources every start opens (None: reopen those open at the last close)."""
        if sources is None:
            if "start_sources" in self._values:
                del self._values["start_sources"]
                self._dirty = True
            return
        self._set("start_sources", [{"kind": s["kind"], "path": s["path"]} for s in sources])

    def recent_sources(self) -> list[dict[str, Any]]:
        """Sources opened recently, newest first (the welcome page lists them)."""
        value = self._get("recent_sources", [], list)
        return [s for s in value if isinstance(s, dict) and isinstance(s.get("path"), str)]

    def add_recent_source(self, kind: str, path: str) -> None:
        """Put a source at the head of the recent ones."""
        recent = [s for s in self.recent_sources() if (s.get("kind"), s["path"]) != (kind, path)]
        self._set("recent_sources", [{"kind": kind, "path": path}, *recent][:RECENT])

    # per source: what its backend lets a person choose (the iii worker settings the preview uses)
    def source_settings(self, source: str) -> dict[str, Any]:
        """Settings of one source (for an iii data dir, those overriding the worker's defaults)."""
        return self._get(f"source/{_key(source)}", {}, dict)

    def set_source_settings(self, source: str, values: dict[str, Any]) -> None:
        """Remember the settings of one source."""
        self._set(f"source/{_key(source)}", dict(values))

    def get(self, key: str, default: Any = None) -> Any:
        """A free-form value (for panels that own their keys)."""
        return self._values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Set a free-form JSON value."""
        self._set(key, value)

    def save(self) -> None:
        """Write the settings if anything changed (atomically; never when read-only)."""
        if not self._dirty or self.read_only:
            return
        fsio.make_dirs(os.path.dirname(self.path))
        data = json.dumps(self._values, indent=1, sort_keys=True, ensure_ascii=False).encode("utf-8")
        fsio.atomic_write(self.path, data + b"\n")
        self._dirty = False


def _key(path: str) -> str:
    return hashlib.sha1(os.path.abspath(path).encode("utf-8"), usedforsecurity=False).hexdigest()[:16]
