"""Per-backend UI, where a backend's view truly differs: the ``{kind: adapter}`` registry.

The window is written once against :mod:`keepgui.core.source`. What only one
backend has — the iii preview's score parts and worker settings, nanobot's
prompt parts — lives in one module of this package per backend, named after
its kind (``keepgui/ui/adapters/<kind>.py``, defining ``ADAPTER``). The map is
built from the modules found here, so a new backend's adapter is one new
module and nothing else; a backend without one gets :class:`~keepgui.ui.adapters.base.Adapter`,
which shows its preview as text. Only modules of this package import a backend.
"""

from __future__ import annotations

import importlib
import pkgutil

from keepgui.ui.adapters.base import Adapter

_ADAPTERS: dict[str, Adapter] | None = None
_DEFAULT = Adapter()


def adapters() -> dict[str, Adapter]:
    """Every adapter by the kind of backend it serves (modules are imported on first use)."""
    global _ADAPTERS
    if _ADAPTERS is None:
        found: dict[str, Adapter] = {}
        for module in pkgutil.iter_modules(__path__):
            if module.name == "base" or module.name.startswith("_"):
                continue
            adapter = getattr(importlib.import_module(f"{__name__}.{module.name}"), "ADAPTER", None)
            if isinstance(adapter, Adapter):
                found[adapter.kind] = adapter
        _ADAPTERS = found
    return _ADAPTERS


def adapter_for(kind: str) -> Adapter:
    """The adapter of a backend kind (the generic one when the backend needs none)."""
    return adapters().get(kind, _DEFAULT)
