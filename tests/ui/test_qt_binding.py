"""Guards against defects of the Qt binding that would crash a long-running window."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    changed = Signal(str)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12 on")
def test_emitting_a_signal_does_not_leak_a_reference_to_true(qapp):
    # PySide6 6.12.0 returns a borrowed True from Signal.emit: each emit drops one
    # reference, and after a few thousand emits Python 3.11 aborts with
    # "deallocating True". pyproject.toml excludes that release; this catches any other.
    emitter = _Emitter()
    before = sys.getrefcount(True)
    for _ in range(200):
        emitter.changed.emit("x")
    assert sys.getrefcount(True) >= before - 5
