"""The worker's recall tokenizer, char for char (spec §2.1).

A word char is what Rust's ``char::is_alphanumeric`` accepts: the Unicode
``Alphabetic`` property or a ``Numeric`` general category (Nd, Nl, No).
Python's ``str.isalnum`` is close but not the same: it rejects the combining
vowel signs (Mn/Mc) that are ``Alphabetic`` in scripts such as Devanagari, so
"हिन्दी" would fall apart into pieces. Each word char is lowercased on its own
and only the first char of its lowercase mapping is kept (Rust's
``to_lowercase().next()``): "İ" becomes "i", and "Σ" is always "σ" because a
char alone has no final-sigma context.

Word chars in the CJK ranges are emitted one by one, plus the bigram with the
previous char when that was CJK too. There are no stop words, no stemming and
no minimum length; duplicates are kept in order.

Speed: ASCII text (most memories) goes through one C-level byte table (word
chars lowercased, every other byte a space) and a split. Other text is translated through a per-char table that is filled on
first sight of each char, so the Unicode property check runs once per distinct
char, not once per occurrence; only text that holds a CJK char takes the
char-by-char loop the bigrams need.
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

from keepgui.backends.iii.textrules import rust_lower

_ASCII_FOLD = bytes.maketrans(
    bytes(range(128)),
    bytes(c | 0x20 if chr(c).isalpha() else c if chr(c).isdigit() else 0x20 for c in range(128)),
)
"""An ASCII byte -> itself lowercased when it is a letter or digit, else a space."""
_WORD_CHAR = regex.compile(r"[\p{Alphabetic}\p{N}]")
_CJK_CHAR = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_BREAK = " "


def is_word_char(ch: str) -> bool:
    """Rust's ``char::is_alphanumeric``: Unicode Alphabetic, or Numeric (Nd, Nl, No)."""
    return _WORD_CHAR.match(ch) is not None


def is_cjk(ch: str) -> bool:
    """True for a char in the worker's CJK ranges (whether or not it is a word char)."""
    return _CJK_CHAR.match(ch) is not None


class _FoldTable(dict[int, str]):
    """codepoint -> the first char of its lowercase mapping for word chars, else a space.

    Filled lazily (``str.translate`` calls ``__missing__`` for unseen chars), so
    each distinct char is classified once for the life of the process.
    """

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        value = rust_lower(ch)[0] if is_word_char(ch) else _BREAK
        self[code] = value
        return value


_FOLD = _FoldTable()


def tokenize(text: str) -> list[str]:
    """The worker's ``tokenize``: lowercased alphanumeric runs, CJK unigrams and bigrams."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_FOLD).decode("ascii").split()
    if _CJK_CHAR.search(text) is None:
        # No word char folds to a space, so splitting on the break char is exact.
        return text.translate(_FOLD).split()
    return _tokenize_with_cjk(text)


def _tokenize_with_cjk(text: str) -> list[str]:
    """The char-by-char walk of §2.1, needed when bigrams can occur."""
    fold = _FOLD
    tokens: list[str] = []
    run: list[str] = []
    prev_cjk = ""
    for ch in text:
        low = fold[ord(ch)]
        if low == _BREAK:
            if run:
                tokens.append("".join(run))
                run.clear()
            prev_cjk = ""
        elif is_cjk(ch):
            if run:
                tokens.append("".join(run))
                run.clear()
            tokens.append(ch)
            if prev_cjk:
                tokens.append(prev_cjk + ch)
            prev_cjk = ch
        else:
            run.append(low)
            prev_cjk = ""
    if run:
        tokens.append("".join(run))
    return tokens


@lru_cache(maxsize=65536)
def entity_tokens(entities: tuple[str, ...]) -> tuple[str, ...]:
    """The tokens of every entity, in order (entity tuples repeat a lot, hence the cache)."""
    return tuple(t for entity in entities for t in tokenize(entity))
