"""keepgui's remembered settings, typed, in one JSON file in the user's config folder.

Every key has one accessor, one type and one default here. The file is written
like every other file keepgui writes: atomically through
:mod:`keepgui.core.fsio` (so a crash never leaves half a settings file), and
read tolerantly (a damaged file means defaults, never a crash). A version key
allows later migrations.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

from PySide6.QtCore import QByteArray

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import app_config_dir

VERSION = 1


class Settings:
    """Typed access to keepgui's settings (window state, sources, last bank, view options)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path or os.path.join(app_config_dir(), "settings.json")
        self._values: dict[str, Any] = {}
        try:
            data, _ = fsio.read_stamped(self.path, limit=4 << 20)
            loaded = json.loads(data.decode("utf-8")) if data else {}
            if isinstance(loaded, dict):
                self._values = loaded
        except (OSError, ValueError, KeepguiError):
            self._values = {}  # a damaged settings file costs the person their layout, nothing more
        self._values.setdefault("version", VERSION)
        self._dirty = False

    def _get(self, key: str, default: Any, kind: type) -> Any:
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
    def sources(self) -> list[dict] | None:
        """Open sources as ``[{"kind": "iii"|"nanobot", "path": ...}]``; None before the first start."""
        value = self._values.get("sources")
        if not isinstance(value, list):
            return None
        return [s for s in value if isinstance(s, dict) and isinstance(s.get("path"), str)]

    def set_sources(self, sources: list[dict]) -> None:
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
        """Fields of the columns the person hid."""
        return self._get("hidden_columns", [], list)

    def set_hidden_columns(self, fields: list[str]) -> None:
        """Remember hidden columns."""
        self._set("hidden_columns", list(fields))

    def panel(self) -> str:
        """The last panel shown (memories, rules, preview)."""
        return self._get("panel", "memories", str)

    def set_panel(self, value: str) -> None:
        """Remember the panel shown."""
        self._set("panel", value)

    # per data dir: the worker settings the preview uses
    def worker_config(self, data_dir: str) -> dict:
        """Preview settings overriding the worker's defaults for one data dir."""
        return self._get(f"worker/{_key(data_dir)}", {}, dict)

    def set_worker_config(self, data_dir: str, values: dict) -> None:
        """Remember preview settings for one data dir."""
        self._set(f"worker/{_key(data_dir)}", dict(values))

    def get(self, key: str, default: Any = None) -> Any:
        """A free-form value (for panels that own their keys)."""
        return self._values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Set a free-form JSON value."""
        self._set(key, value)

    def save(self) -> None:
        """Write the settings if anything changed (atomically)."""
        if not self._dirty:
            return
        fsio.make_dirs(os.path.dirname(self.path))
        data = json.dumps(self._values, indent=1, sort_keys=True, ensure_ascii=False).encode("utf-8")
        fsio.atomic_write(self.path, data + b"\n")
        self._dirty = False


def _key(path: str) -> str:
    return hashlib.sha1(os.path.abspath(path).encode("utf-8")).hexdigest()[:16]
