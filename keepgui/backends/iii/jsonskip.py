"""The values of a record serde never reads, skipped as serde_json skips them (spec §1.6a).

serde derive ignores a key it does not know, and serde_json then passes over its value
(``ignore_value`` in its ``de.rs``) checking only the JSON syntax: without a depth limit (it keeps
its own stack, where reading a value it keeps stops at 128 levels) and without looking at what a
``\\u`` escape stands for (``ignore_escape`` in ``read.rs`` takes any four hex digits, a lone
surrogate too). msgspec and Python's json both read every value, so such a line is one they refuse
(a lone surrogate) or cannot nest into (a thousand levels) while the worker loads its memory.

:func:`known_only` turns a record line into the line serde in effect reads: the known keys with
their values as written, every unknown key's value checked here the way serde checks it and then
left out; what remains is shallow and holds a ``\\u`` escape only where serde decodes it, so the
ordinary decoder gives the worker's answer. A key is always decoded (serde reads every key), so
one holding a lone surrogate stays in and fails the line, as it fails the worker's.
"""

from __future__ import annotations

import json
import re

_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERAL = re.compile(rb"true|false|null")
_LONE = re.compile("[\ud800-\udfff]")
_CLOSE = {b"[": b"]", b"{": b"}"}


def _space(data: bytes, i: int) -> int:
    match = _WS.match(data, i)
    assert match is not None  # the pattern matches the empty string
    return match.end()


class NotJson(ValueError):
    """The line is not JSON: where, and what stands there."""


def _refuse(data: bytes, i: int) -> NotJson:
    return NotJson(f"not valid JSON (at byte {i} of the line, {data[i : i + 12]!r})")


def _key(data: bytes, i: int) -> tuple[bytes, int]:
    """The key at ``i`` (a string) and where its value starts (past the ``:``)."""
    match = _STRING.match(data, i)
    if match is None:
        raise _refuse(data, i)
    i = _space(data, match.end())
    if data[i : i + 1] != b":":
        raise _refuse(data, i)
    return match.group(), _space(data, i + 1)


def skip_value(data: bytes, i: int) -> int:
    """The end of the JSON value that starts at ``i``, checked as serde_json checks a value it ignores.

    Iterative, so any depth is skipped; NotJson where it is not JSON.
    """
    open_: list[bytes] = []
    while True:
        opener = data[i : i + 1]
        if opener in _CLOSE:
            i = _space(data, i + 1)
            if data[i : i + 1] == _CLOSE[opener]:
                i += 1
            else:
                open_.append(_CLOSE[opener])
                if opener == b"{":
                    i = _key(data, i)[1]
                continue
        else:
            pattern = _STRING if opener == b'"' else _LITERAL if opener in (b"t", b"f", b"n") else _NUMBER
            match = pattern.match(data, i)
            if match is None:
                raise _refuse(data, i)
            i = match.end()
        while open_:  # after a value: the next one in its container, or the container's end
            i = _space(data, i)
            here = data[i : i + 1]
            if here == b",":
                i = _space(data, i + 1)
                if open_[-1] == b"}":
                    i = _key(data, i)[1]
                break
            if here != open_[-1]:
                raise _refuse(data, i)
            open_.pop()
            i += 1
        if not open_:
            return i


def _object(data: bytes, i: int, known: frozenset[str], nested: dict[str, frozenset[str]]) -> tuple[bytes, int]:
    """The object at ``i`` with only the keys serde reads, and where it ends."""
    pairs: list[bytes] = []
    i = _space(data, i + 1)
    if data[i : i + 1] == b"}":
        return b"{}", i + 1
    while True:
        raw_key, start = _key(data, i)
        key = json.loads(raw_key)
        inner = nested.get(key)
        if inner is not None and data[start : start + 1] == b"{":
            value, end = _object(data, start, inner, {})
            pairs.append(raw_key + b":" + value)
        else:
            end = skip_value(data, start)
            if key in known:
                pairs.append(raw_key + b":" + data[start:end])
            elif _LONE.search(key):
                pairs.append(raw_key + b":0")  # serde decodes every key: this one fails the line
        i = _space(data, end)
        here = data[i : i + 1]
        if here == b"}":
            return b"{" + b",".join(pairs) + b"}", i + 1
        if here != b",":
            raise _refuse(data, i)
        i = _space(data, i + 1)


def known_only(line: bytes, known: frozenset[str], nested: dict[str, frozenset[str]]) -> bytes:
    """``line`` (one JSON object) with every key serde ignores left out (``nested``: the known keys of
    an object-valued field, ``source``'s); what follows the object is kept for the decoder to judge."""
    i = _space(line, 0)
    if line[i : i + 1] != b"{":
        raise _refuse(line, i)
    reduced, end = _object(line, i, known, nested)
    return reduced + line[end:]
