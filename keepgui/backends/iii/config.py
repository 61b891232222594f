"""The iii memory worker's configuration (spec §4), typed, with the worker's defaults.

Loading is as strict as serde: unknown keys (the worker's
``deny_unknown_fields``), wrong types, a repeated key, an integer outside its
field's range (``usize``/``u64``: 0..2^64-1 on the 64-bit builds the worker
ships) and ``-0`` (serde_json reads it as a float) are errors naming the key;
``{}`` is a valid config. A file is read only when it is a regular file (a
FIFO would block for ever) and nesting too deep for serde_json is refused.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from keepgui.backends.iii.record import NEGATIVE_ZERO, U64_MAX, ObjectPairs, repeated_known_key, serde_view
from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError

CONFIG_LIMIT = 1 << 20
"""A worker config larger than this is refused (it is a few hundred bytes)."""


def _default_data_dir() -> str:
    compose = os.environ.get("III_COMPOSE_DIR")
    return f"{compose}/data/memory" if compose else "data/memory"


@dataclass(frozen=True)
class MemoryConfig:
    """Every field of the worker's config, with its default."""

    data_dir: str = dataclasses.field(default_factory=_default_data_dir)
    default_bank: str = "main"
    inject_rules: bool = True
    inject_memories: bool = True
    recall_limit: int = 6
    recall_budget_tokens: int = 1200
    extraction_enabled: bool = True
    extraction_model: str = ""
    extraction_window: int = 12
    extraction_timeout_ms: int = 60000
    max_memories_per_turn: int = 8
    rule_learning_enabled: bool = True
    max_rule_chars: int = 6000
    decay_half_life_days: int = 30
    embeddings_enabled: bool = True
    embedding_model: str = ""

    PREVIEW_KEYS = (
        "recall_limit",
        "recall_budget_tokens",
        "max_rule_chars",
        "decay_half_life_days",
        "inject_rules",
        "inject_memories",
    )
    """The settings that change what a turn is given (the window's settings page)."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "config") -> MemoryConfig:
        """Build from a JSON object; unknown keys and wrong types are errors naming the key."""
        if not isinstance(values, Mapping):
            raise InvalidInput(f"{where}: the config must be a JSON object")
        known = {f.name: f for f in fields(cls)}
        kwargs = {}
        for key, value in values.items():
            if key not in known:
                raise InvalidInput(f"{where}: unknown config key `{key}` (expected one of: {', '.join(known)})")
            kwargs[key] = _check_type(key, value, known[key].type, where)
        return cls(**kwargs)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MemoryConfig:
        """Read a worker config JSON file (a regular file; see the module docstring)."""
        where = os.fspath(path)
        try:
            data, _stamp = fsio.read_stamped(path, limit=CONFIG_LIMIT)
        except KeepguiError as exc:
            raise InvalidInput(f"cannot read the config: {exc}") from None
        except OSError as exc:
            raise InvalidInput(f"{where}: cannot read ({exc.strerror or exc})") from None
        if data is None:
            raise InvalidInput(f"{where}: no such file")
        return cls.from_json(data, where)

    @classmethod
    def from_json(cls, data: bytes, where: str = "config") -> MemoryConfig:
        """Parse a config's bytes as serde would: see the module docstring."""
        try:
            top = serde_view(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{where}: not valid UTF-8 (byte {exc.start})") from None
        except RecursionError:
            raise InvalidInput(f"{where}: nested too deeply to be a worker config") from None
        except ValueError as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(top, ObjectPairs):
            raise InvalidInput(f"{where}: the config must be a JSON object")
        repeated = repeated_known_key(top, frozenset(f.name for f in fields(cls)))
        if repeated is not None:
            raise InvalidInput(f"{where}: duplicate field `{repeated}`")
        values: dict[str, Any] = {}
        for key, value in top:
            values[key] = _plain(value)
        return cls.from_mapping(values, where)

    def to_obj(self) -> dict[str, Any]:
        """All fields as a JSON object."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> MemoryConfig:
        """A copy with some settings changed (checked like a loaded file)."""
        checked = self.from_mapping(changes, "settings")
        return dataclasses.replace(self, **{k: getattr(checked, k) for k in changes})


def _check_type(key: str, value: Any, annotation: Any, where: str) -> Any:
    expected = annotation if isinstance(annotation, str) else annotation.__name__
    if expected == "bool":
        if type(value) is not bool:
            raise InvalidInput(f"{where}: `{key}` must be true or false")
    elif expected == "int":
        if value is NEGATIVE_ZERO:
            raise InvalidInput(f"{where}: `{key}` is -0, which serde_json reads as a float; write 0")
        if type(value) is not int or value < 0:
            raise InvalidInput(f"{where}: `{key}` must be a non-negative integer")
        if value > U64_MAX:
            raise InvalidInput(f"{where}: `{key}` is {value}, larger than the worker's 64-bit integer ({U64_MAX})")
    elif expected == "str" and type(value) is not str:
        raise InvalidInput(f"{where}: `{key}` must be a string")
    return value


def _plain(value: Any) -> Any:
    """A value from :func:`serde_view` with objects back as dicts (only its type is checked later)."""
    if isinstance(value, ObjectPairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
