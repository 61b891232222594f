"""Text as Codex (a Rust program) handles it: its trim, its lossy decoding, cuts at UTF-8 boundaries.

Python's own tools differ in small ways that change bytes on the wire:

* :func:`rust_trim` removes what Rust's ``str::trim`` removes — the Unicode
  ``White_Space`` characters — and nothing else. ``str.strip()`` also removes
  U+001C–U+001F (which Codex keeps); neither removes a BOM (U+FEFF is not white
  space), so a leading BOM stays;
* :func:`lossy` is ``String::from_utf8_lossy``: every maximal ill-formed
  subsequence becomes one U+FFFD, which is what Python's ``"replace"`` error
  handler does too (both follow the Unicode recommendation); it is named here so
  every caller decodes the same way;
* :func:`floor_boundary` and :func:`ceil_boundary` move a byte offset down or up
  to the start of a character, as Rust's ``floor_char_boundary`` /
  ``ceil_char_boundary`` do.
"""

from __future__ import annotations

WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""The characters with the Unicode ``White_Space`` property: what Rust's ``char::is_whitespace`` tests."""

_WHITE = "".join(sorted(WHITE_SPACE))


def rust_trim(text: str) -> str:
    """``text`` without leading and trailing Unicode white space (Rust's ``str::trim``)."""
    return text.strip(_WHITE)


def rust_trim_start(text: str) -> str:
    """``text`` without leading Unicode white space (Rust's ``str::trim_start``)."""
    return text.lstrip(_WHITE)


def is_blank(text: str) -> bool:
    """True when ``text`` is empty or white space only (as Rust's trim sees it)."""
    return not rust_trim(text)


def lossy(data: bytes) -> str:
    """``data`` decoded as UTF-8, each ill-formed sequence replaced by one U+FFFD (``from_utf8_lossy``)."""
    return data.decode("utf-8", "replace")


def strict(data: bytes) -> str | None:
    """``data`` decoded as UTF-8, or None when any byte is not valid UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def floor_boundary(data: bytes, offset: int) -> int:
    """The greatest character boundary of the UTF-8 ``data`` at or below ``offset``."""
    if offset >= len(data):
        return len(data)
    while offset > 0 and _continuation(data[offset]):
        offset -= 1
    return max(offset, 0)


def ceil_boundary(data: bytes, offset: int) -> int:
    """The least character boundary of the UTF-8 ``data`` at or above ``offset``."""
    if offset <= 0:
        return 0
    while offset < len(data) and _continuation(data[offset]):
        offset += 1
    return min(offset, len(data))


def split_bytes(data: bytes, limit: int) -> list[bytes]:
    """``data`` (valid UTF-8) cut into consecutive pieces of at most ``limit`` bytes, each cut moved
    down to a character boundary (how Codex sends a long V2 memory block: one content part each)."""
    pieces: list[bytes] = []
    start = 0
    while start < len(data):
        end = floor_boundary(data, start + limit) if start + limit < len(data) else len(data)
        if end <= start:  # a character longer than the limit cannot happen for limit >= 4
            end = min(len(data), start + limit)
        pieces.append(data[start:end])
        start = end
    return pieces


def char_offset(data: bytes, byte_offset: int) -> int:
    """The character offset, in ``data`` as an editor shows it (decoded with ``surrogateescape``: an
    invalid byte is one character), of the byte offset ``byte_offset`` moved down to a character
    boundary when it falls inside one."""
    return len(data[: floor_boundary(data, byte_offset)].decode("utf-8", "surrogateescape"))


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (what Codex measures)."""
    return len(text.encode("utf-8", "surrogatepass"))


def tokens(size: int) -> int:
    """A token estimate of ``size`` bytes at four bytes a token (Codex's own rule, rounded up)."""
    return (size + 3) // 4


def size_words(size: int) -> str:
    """``2,163 bytes (≈541 tokens)``."""
    return f"{size:,} bytes (≈{tokens(size):,} tokens)"
