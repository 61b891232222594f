"""The iii memory worker's configuration (spec §4), typed, with the worker's defaults.

Loading rejects unknown keys and wrong types with the key named, as the
worker's ``deny_unknown_fields`` does; ``{}`` is a valid config.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, fields
from typing import Any, Mapping

from keepgui.core.errors import InvalidInput


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

    PREVIEW_KEYS = ("recall_limit", "recall_budget_tokens", "max_rule_chars", "decay_half_life_days",
                    "inject_rules", "inject_memories")
    """The settings that change what a turn is given (the window's settings page)."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "config") -> "MemoryConfig":
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
    def load(cls, path: str | os.PathLike[str]) -> "MemoryConfig":
        """Read a worker config JSON file."""
        where = os.fspath(path)
        try:
            with open(path, "rb") as fh:
                data = fh.read(1 << 20)
        except OSError as exc:
            raise InvalidInput(f"{where}: cannot read ({exc.strerror or exc})") from None
        try:
            values = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc})") from None
        return cls.from_mapping(values, where)

    def to_obj(self) -> dict[str, Any]:
        """All fields as a JSON object."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> "MemoryConfig":
        """A copy with some settings changed (checked like a loaded file)."""
        checked = self.from_mapping(changes, "settings")
        return dataclasses.replace(self, **{k: getattr(checked, k) for k in changes})


def _check_type(key: str, value: Any, annotation: Any, where: str) -> Any:
    expected = annotation if isinstance(annotation, str) else annotation.__name__
    if expected == "bool":
        if type(value) is not bool:
            raise InvalidInput(f"{where}: `{key}` must be true or false")
    elif expected == "int":
        if type(value) is not int or value < 0:
            raise InvalidInput(f"{where}: `{key}` must be a non-negative integer")
    elif expected == "str":
        if type(value) is not str:
            raise InvalidInput(f"{where}: `{key}` must be a string")
    return value
