"""Text rules of the iii worker that Python's string methods get slightly wrong.

Rust's ``trim`` and ``split_whitespace`` use the Unicode ``White_Space``
property; Python's ``str.strip`` and ``str.split`` also treat U+001C..U+001F as
whitespace. Rust's ``to_lowercase`` uses the Unicode version of the worker's
toolchain (17.0), Python 3.11's ``str.lower`` Unicode 14.0: :func:`rust_lower`
adds the letters encoded since (a generated table, see
:mod:`keepgui.backends.iii.unicode_lower`). Lengths the worker checks are UTF-8
byte lengths. This module holds the exact versions so every other module can
use them without thinking.
"""

from __future__ import annotations

import re

from keepgui.backends.iii.unicode_lower import NEWER_LOWERCASE

# The Unicode White_Space property (PropList.txt), which Rust's char::is_whitespace uses.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_PY_ONLY_SPACE = "\x1c\x1d\x1e\x1f"
_WS_RUN = re.compile("[" + re.escape(WHITE_SPACE) + "]+")


def _has_py_only_space(text: str) -> bool:
    return any(ch in text for ch in _PY_ONLY_SPACE)


def rust_trim(text: str) -> str:
    """``str::trim`` of Rust: strip Unicode White_Space from both ends."""
    if not _has_py_only_space(text):
        return text.strip()
    return text.strip(WHITE_SPACE)


def rust_split_whitespace(text: str) -> list[str]:
    """``str::split_whitespace`` of Rust."""
    if not _has_py_only_space(text):
        return text.split()
    return [part for part in _WS_RUN.split(text) if part]


def byte_len(text: str) -> int:
    """UTF-8 length in bytes, the unit of every limit and budget of the worker."""
    return len(text.encode("utf-8"))


def cut_at_char_boundary(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that is at most ``max_bytes`` UTF-8 bytes.

    Mirrors cutting a Rust ``str`` at ``max_bytes`` after moving the cut down to
    the nearest char boundary.
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore") if max_bytes > 0 else ""


_NEWER_CASED = re.compile("[" + "".join(re.escape(chr(cp)) for cp in NEWER_LOWERCASE) + "]")


def rust_lower(text: str) -> str:
    """``str::to_lowercase`` of a current Rust: Python's ``str.lower`` plus the newer letters.

    (Python's final-sigma rule does not know the newer letters as cased; a
    capital sigma right after one of them is the only difference left.)
    """
    low = text.lower()
    if low.isascii() or _NEWER_CASED.search(low) is None:
        return low
    return low.translate(NEWER_LOWERCASE)
