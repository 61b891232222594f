"""The iii memory record, byte for byte as the worker writes and reads it (spec §1.5, §5.1).

A record is one compact JSON object per line of ``memories.jsonl`` with its
keys in the worker's struct order; ``source``, ``invalid_at`` and
``superseded_by`` are written only when set. Reading follows serde's rules
(serde derive over serde_json): a missing required key, a wrong type, a float
(``-0`` is one: serde_json reads it as ``-0.0``) or a negative number where an
integer belongs, an unknown ``confidence``, a repeated *known* field (at the
top or inside ``source``) or anything but whitespace after the object makes the
whole line invalid; unknown keys are ignored unchecked, repeated or not, and
whatever their values hold. :func:`read_record` is the one function that says
what one line holds.

Records are ``msgspec`` structs: decoding a line validates every type in C, so
a 100,000-memory log replays in less time than ``json.loads`` alone takes.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

import msgspec

from keepgui.backends.iii import jsonskip
from keepgui.backends.iii.textrules import rust_lower, rust_split_whitespace, rust_trim

CONFIDENCES = ("extracted", "inferred", "stated")
MAX_LIST = 8
"""Entities and tags are capped at this many."""
TEXT_MIN_BYTES = 3
TEXT_MAX_BYTES = 2000
U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = (1 << 64) - 1


def normalize_for_fingerprint(text: str) -> str:
    """Collapse whitespace runs to one space, trim, Unicode-lowercase (spec §5.1)."""
    return rust_lower(" ".join(rust_split_whitespace(text)))


def fingerprint(text: str) -> str:
    """The id the worker gives a memory with this text: ``fp`` + FNV-1a 64 in 16 hex digits."""
    h = _FNV_OFFSET
    for byte in normalize_for_fingerprint(text).encode("utf-8"):
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return f"fp{h:016x}"


def normalize_labels(values: Iterable[str]) -> list[str]:
    """Entities and tags as the worker stores them: trimmed, lowercased, non-empty, first 8."""
    out: list[str] = []
    for value in values:
        value = rust_lower(rust_trim(value))
        if value:
            out.append(value)
            if len(out) == MAX_LIST:
                break
    return out


class RecordError(ValueError):
    """A line that the worker would refuse to parse as a memory; the message says why."""


_U64 = Annotated[int, msgspec.Meta(ge=0)]  # the upper bound is checked in _check_bounds
_U32 = Annotated[int, msgspec.Meta(ge=0, le=U32_MAX)]


class Source(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """Provenance of a memory: ``{session_id?, entry_id?, agent?}``; unset keys are omitted."""

    session_id: str | None = None
    entry_id: str | None = None
    agent: str | None = None


class Memory(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    """One revision of one memory (spec §1.5). Immutable: use :meth:`replace`.

    ``invalid_at`` set means the memory is retired: deleted, or superseded when
    ``superseded_by`` is set too. Field order is the worker's key order. Only
    the three optional fields have defaults, so encoding omits exactly them when
    unset, as the worker does; lines of older workers that lack the other keys
    are read through :class:`_LenientMemory`.
    """

    id: str
    text: str
    entities: tuple[str, ...]
    tags: tuple[str, ...]
    confidence: Literal["extracted", "inferred", "stated"]
    corroboration: _U32
    pinned: bool
    source: Source | None = None
    created_at: _U64
    updated_at: _U64
    invalid_at: _U64 | None = None
    superseded_by: str | None = None
    revision: _U64

    @property
    def live(self) -> bool:
        """A memory is live until it is deleted or superseded."""
        return self.invalid_at is None

    @property
    def seen(self) -> int:
        """Total sightings: the first one plus every reinforcement."""
        return self.corroboration + 1

    @property
    def position(self) -> None:
        """A memory has no place in a file to keep (the row protocol of :mod:`keepgui.core.source`)."""
        return None

    @property
    def fields(self) -> tuple[tuple[str, str], ...]:
        """Where the memory came from (its ``source``: session, entry, agent), as the row protocol's
        labelled values; nothing when the record names no source."""
        source = self.source
        if source is None:
            return ()
        said = [
            (k, v)
            for k, v in (("session", source.session_id), ("entry", source.entry_id), ("agent", source.agent))
            if v
        ]
        return (("source", ", ".join(f"{k}: {v}" for k, v in said) or "—"),)

    def replace(self, **changes: Any) -> Memory:
        """A copy with some fields changed (lists are stored as tuples)."""
        for key in ("entities", "tags"):
            if key in changes:
                changes[key] = tuple(changes[key])
        return msgspec.structs.replace(self, **changes)

    def to_obj(self) -> dict[str, Any]:
        """The JSON object in the worker's key order, with its omission rules."""
        obj: dict[str, Any] = msgspec.json.decode(self.to_json())
        return obj

    def to_json(self) -> str:
        """Compact JSON, raw UTF-8, exactly as serde_json writes this record."""
        return _ENCODE(self).decode("utf-8")

    def to_line(self) -> bytes:
        """The bytes of one log line, newline included. Validates the record first."""
        validate(self)
        return _ENCODE(self) + b"\n"

    def __repr__(self) -> str:
        return f"Memory({self.id} r{self.revision} {self.text[:40]!r})"


class _LenientMemory(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """The same record with serde's defaults for the keys older workers did not write."""

    id: str
    text: str
    entities: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    confidence: Literal["extracted", "inferred", "stated"]
    corroboration: _U32 = 0
    pinned: bool = False
    source: Source | None = None
    created_at: _U64
    updated_at: _U64
    invalid_at: _U64 | None = None
    superseded_by: str | None = None
    revision: _U64 = 0


_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder(Memory).decode
_CREATED = operator.attrgetter("created_at")
_UPDATED = operator.attrgetter("updated_at")
_REVISION = operator.attrgetter("revision")
_INVALID = operator.attrgetter("invalid_at")
_DECODE_LENIENT = msgspec.json.Decoder(_LenientMemory).decode


def _check_bounds(memory: Memory) -> None:
    if (
        memory.created_at > U64_MAX
        or memory.updated_at > U64_MAX
        or memory.revision > U64_MAX
        or (memory.invalid_at is not None and memory.invalid_at > U64_MAX)
    ):
        raise RecordError("an integer field is larger than the worker's u64 range")


def decode_canonical(line: bytes) -> Memory | None:
    """The record when ``line`` is exactly what the worker writes, else None.

    This is the fast path of replay: one C-level typed decode plus a byte
    comparison with the canonical encoding, which proves there is no repeated,
    reordered or unknown key. Anything else goes to :func:`parse_line`.
    """
    try:
        memory = _DECODE(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    if _ENCODE(memory) != line:
        return None
    if len(line) > 40 and (
        memory.created_at > U64_MAX
        or memory.updated_at > U64_MAX
        or memory.revision > U64_MAX
        or (memory.invalid_at or 0) > U64_MAX
    ):
        return None
    return memory


_ENCODE_LINES = msgspec.json.Encoder().encode_lines
_DECODE_LINES = msgspec.json.Decoder(Memory).decode_lines


def canonical_block(block: bytes) -> list[Memory] | None:
    """The records of ``block`` (complete lines, each ending in ``\\n``) when every line is exactly
    what the worker writes, else None.

    The block form of :func:`decode_canonical`, and exactly as strict: one typed decode of all
    its lines and one re-encoding, both in C, compared with the block byte for byte; equal bytes
    prove every line canonical (no repeated, reordered or unknown key, no ``-0``, no blank line,
    no odd spacing or escape). The u64 bounds are checked on the decoded records. Anything else
    (None) is read line by line (:func:`read_record`), which finds the line that is not.
    """
    try:
        memories = _DECODE_LINES(block)
    except (msgspec.DecodeError, RecursionError):
        return None
    if _ENCODE_LINES(memories) != block:
        return None
    if memories and (
        max(map(_CREATED, memories)) > U64_MAX
        or max(map(_UPDATED, memories)) > U64_MAX
        or max(map(_REVISION, memories)) > U64_MAX
        or max(filter(None, map(_INVALID, memories)), default=0) > U64_MAX
    ):
        return None
    return memories


def canonical_line_prefix(memory_id: str) -> bytes:
    """How a canonical line of ``memory_id`` begins (``{"id":"fp…",``): found by searching the file."""
    return b'{"id":' + _ENCODE(memory_id) + b","


class ObjectPairs(list[tuple[str, Any]]):
    """A JSON object as the list of its ``(key, value)`` pairs, repeats kept (serde sees them all)."""


class _NegativeZero:
    """The JSON number ``-0``: serde_json parses it as the float ``-0.0``, never as an integer."""


NEGATIVE_ZERO = _NegativeZero()


def _int_or_negative_zero(text: str) -> Any:
    return NEGATIVE_ZERO if text == "-0" else int(text)


def _reject_constant(name: str) -> Any:
    raise RecordError(f"{name} is not valid JSON")


_SERDE_VIEW = json.JSONDecoder(
    object_pairs_hook=ObjectPairs, parse_int=_int_or_negative_zero, parse_constant=_reject_constant
)
"""Python's json, made to keep what msgspec smooths over: repeated keys and ``-0``."""

_MEMORY_FIELDS = frozenset(Memory.__struct_fields__)
_SOURCE_FIELDS = frozenset(Source.__struct_fields__)
_INTEGER_FIELDS = frozenset({"corroboration", "created_at", "updated_at", "invalid_at", "revision"})
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A ``\\u`` escape of a UTF-16 surrogate (lone or one of a pair): msgspec refuses a lone one anywhere."""


def serde_view(text: str) -> Any:
    """Parse JSON text keeping every object as :class:`ObjectPairs` and ``-0`` as :data:`NEGATIVE_ZERO`.

    Raises ValueError (or RecursionError) for text that is not JSON.
    """
    return _SERDE_VIEW.decode(text)


def repeated_known_key(pairs: ObjectPairs, known: frozenset[str]) -> str | None:
    """The first field of ``known`` that occurs twice among ``pairs`` (serde derive refuses it), or None."""
    seen: set[str] = set()
    for key, _value in pairs:
        if key in known:
            if key in seen:
                return key
            seen.add(key)
    return None


def parse_line(line: bytes | str) -> Memory:
    """Parse one log line (without its newline) as the worker would; raise RecordError.

    Applies every rule: strict JSON (no NaN, no lone surrogates, no control
    characters in strings, nothing after the value), no repeated keys at the
    top level, the types and ranges of §1.5. Unknown keys are ignored, and so is
    whatever their values hold (a lone surrogate escape, any depth) as long as
    it is JSON (:mod:`keepgui.backends.iii.jsonskip`).
    """
    if isinstance(line, str):
        line = line.encode("utf-8", errors="surrogatepass")
    return _parse(line, False)


def _parse(line: bytes, reduced: bool) -> Memory:
    """:func:`parse_line`; ``reduced``: ``line`` already holds only the keys serde reads."""
    if reduced:
        _check_like_serde(line, True)  # serde finds a repeated key before it reads the value
    try:
        lenient = _DECODE_LENIENT(line)
    except msgspec.ValidationError as exc:
        raise RecordError(_word(str(exc))) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        deep = isinstance(exc, RecursionError)
        lone = _SURROGATE_ESCAPE.search(line)
        if not reduced and (deep or lone):
            return _parse(_read_by_serde(line), True)
        if deep:
            raise RecordError("JSON nested too deeply") from None
        if reduced and lone:
            raise RecordError(
                f"a key or a known field holds the lone surrogate escape {lone.group().decode()}, which is not Unicode"
            ) from None
        raise RecordError(f"not valid JSON ({_word(str(exc))})") from None
    if not reduced:
        _check_like_serde(line)
    memory = Memory(**msgspec.structs.asdict(lenient))
    _check_bounds(memory)
    return memory


def _read_by_serde(line: bytes) -> bytes:
    """The part of ``line`` serde reads: its known keys (see :func:`jsonskip.known_only`)."""
    try:
        return jsonskip.known_only(line, _MEMORY_FIELDS, {"source": _SOURCE_FIELDS})
    except (jsonskip.NotJson, UnicodeDecodeError) as exc:
        raise RecordError(str(exc)) from None


def read_record(line: bytes) -> Memory | None:
    """The record on one log line (without its newline), or None for a line the worker skips.

    The fast path (:func:`decode_canonical`) first, then every rule of
    :func:`parse_line`; blank and corrupt lines give None. A line of any length is read, as
    the worker reads it (a 50 MB line too).
    """
    memory = decode_canonical(line)
    if memory is not None:
        return memory
    try:
        return parse_line(line)
    except (RecordError, UnicodeDecodeError):
        return None


def _check_like_serde(line: bytes, reduced: bool = False) -> None:
    """Raise RecordError where serde refuses a line msgspec accepted.

    A repeated known field (msgspec keeps the last one; serde derive fails
    with "duplicate field"), at the top or inside ``source``, and ``-0`` in an
    integer field (msgspec reads 0). Repeated unknown keys, at any depth, and
    anything inside unknown values are left alone, as serde ignores them.
    """
    try:
        top = serde_view(line.decode("utf-8"))
    except RecordError:
        raise
    except RecursionError:
        if not reduced:  # deeper than Python's json goes: only in an unknown value, which serde skips
            _check_like_serde(_read_by_serde(line), True)
        return
    except ValueError:
        return  # msgspec already accepted the line
    if isinstance(top, ObjectPairs):
        _check_pairs_like_serde(top)


def _check_pairs_like_serde(top: ObjectPairs) -> None:
    repeated = repeated_known_key(top, _MEMORY_FIELDS)
    if repeated is not None:
        raise RecordError(f"duplicate field `{repeated}`")
    for key, value in top:
        if key in _INTEGER_FIELDS and value is NEGATIVE_ZERO:
            raise RecordError(f"`{key}` is -0, which serde_json reads as a float, not an integer")
        if key == "source" and isinstance(value, ObjectPairs):
            repeated = repeated_known_key(value, _SOURCE_FIELDS)
            if repeated is not None:
                raise RecordError(f"duplicate field `source.{repeated}`")


def _word(message: str) -> str:
    message = message.replace("Object missing required field", "missing field")
    return message.replace(" - at `$.", " at `").replace("Expected `", "expected `")


def validate(memory: Memory) -> None:
    """Raise RecordError if ``memory`` could not be written as a valid worker record."""
    _check_bounds(memory)
    if memory.corroboration > U32_MAX or memory.corroboration < 0:
        raise RecordError("corroboration is outside the worker's u32 range")
    if min(memory.created_at, memory.updated_at, memory.revision, memory.invalid_at or 0) < 0:
        raise RecordError("timestamps and revisions must be non-negative")
    if memory.confidence not in CONFIDENCES:
        raise RecordError(f"unknown confidence {memory.confidence!r}")
    try:
        parse_line(_ENCODE(memory))
    except UnicodeEncodeError:
        raise RecordError("a string holds a lone surrogate (not valid UTF-8)") from None


def memory_from_obj(obj: Any) -> Memory:
    """Build a Memory from a parsed JSON value with the worker's rules; raise RecordError."""
    try:
        data = msgspec.json.encode(obj)
    except (TypeError, UnicodeEncodeError, OverflowError) as exc:
        raise RecordError(f"not a valid record ({exc})") from None
    return parse_line(data)


def new_memory(**fields: Any) -> Memory:
    """Construct a Memory (lists become tuples) and validate it."""
    for key in ("entities", "tags"):
        if key in fields:
            fields[key] = tuple(fields[key])
    memory = Memory(**fields)
    validate(memory)
    return memory
