"""How many calls into Python (and into C from Python) a piece of work makes: the tests' proof that a
step does no Python work per row, per key or per dot (``sys.setprofile`` counts each call)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def counting_calls(work: Callable[[], T], on_c_call: Callable[[object], None] | None = None) -> tuple[T, int]:
    """``work()``'s result and the number of Python and C calls made on this thread while it ran;
    ``on_c_call`` is given each C function called (e.g. to note which QPainter methods ran)."""
    count = 0

    def profile(_frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1
            if event == "c_call" and on_c_call is not None:
                on_c_call(arg)

    sys.setprofile(profile)
    try:
        result = work()
    finally:
        sys.setprofile(None)
    return result, count
