"""JavaScript string semantics, where Claude Code's own rules depend on them.

Claude Code is a JavaScript program: its limits count UTF-16 code units (a
JS string's ``length``), it trims with ``String.prototype.trim`` and its
patterns use JS's ``\\s``. Python counts code points and has a different
whitespace set, so every rule keepgui reproduces goes through these helpers.
Observed against the real CLI (see :data:`keepgui.backends.claude.CHECKED_VERSION`):
the MEMORY.md size limit of 25,000 counts UTF-16 units, so an emoji counts 2
and a CJK character 1 (not 3, as UTF-8 bytes would).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""Every character JS's ``\\s`` and ``trim()`` treat as white space (WhiteSpace and LineTerminator)."""

JS_WS_CLASS = "[" + "".join(f"\\u{ord(c):04x}" for c in JS_WHITESPACE) + "]"
"""JS's ``\\s`` as a Python regular-expression character class."""


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript does it."""
    return text.strip(JS_WHITESPACE)


def is_js_blank(text: str) -> bool:
    """True when ``text.trim()`` is empty."""
    return not js_trim(text)


def utf16_len(text: str) -> int:
    """A JS string's ``length``: code points above U+FFFF count two."""
    if text.isascii():
        return len(text)
    # the UTF-16 encoder counts in C (a lone surrogate, as a file's undecodable bytes become, is one unit)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_index(text: str, units: int) -> int:
    """The Python index of the character at UTF-16 offset ``units`` (``len(text)`` past the end).

    An offset that falls inside a surrogate pair maps to the start of that
    character, so a cut there keeps no half character.
    """
    if units <= 0:
        return 0
    if text.isascii() or utf16_len(text) == len(text):
        return min(units, len(text))
    count = 0
    for index, ch in enumerate(text):
        width = 2 if ord(ch) > 0xFFFF else 1
        if count + width > units:
            return index
        count += width
    return len(text)


def utf16_slice(text: str, units: int) -> str:
    """``text.slice(0, units)`` without a lone half of a surrogate pair at the end."""
    return text[: utf16_index(text, units)]


def format_kb(units: int) -> str:
    """A size as the CLI's MEMORY.md warning writes it: 1024-based, one decimal, ``.0`` dropped
    (``29.3KB``, ``26KB``; from 1024 KB on in MB: ``4MB``, ``1.5MB``, seen on a 4 MiB index)."""
    # the quotient is exact in decimal, so Decimal rounds it exactly as JS's toFixed(1) does (half up)
    unit, divisor = ("MB", 1024 * 1024) if units >= 1024 * 1024 else ("KB", 1024)
    text = str((Decimal(units) / divisor).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    text = text.removesuffix(".0")
    return f"{text}{unit}"
