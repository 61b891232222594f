"""Finding secrets in text: Yelp's detect-secrets plugins, and the model providers' key formats (no Qt).

The detector is a maintained library, ``detect-secrets`` (its plugins: cloud keys, private keys,
the big platforms' tokens, JWTs, Base64 and hex high-entropy strings, keyword assignments, with
its own heuristic filters), run as a library on lines of text: no git, no files, no network (a
plugin's ``verify`` is never called). keepgui adds the API key formats of the model providers
agents use, which the library does not know (:data:`PROVIDER_PATTERNS`).

Every pattern here is bounded: possessive, fixed-length or capped quantifiers of the ``regex``
module, never a nested or unbounded one. The library's own regular expressions are Python's
``re``; a line is handed to them in windows of at most :data:`WINDOW` characters, so none of
them ever sees a long line (a 50 MB line is a few thousand windows, not one pathological match).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re as stdre
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import regex

WINDOW = 1000
"""The longest piece of a line the library's plugins are given (the library's own heuristics cap
their lines at 1,000 characters for the same reason)."""
LONG_LINE = 100_000
"""A line longer than this (a file pasted whole, a 50 MB line of data) is given to the library as
its words of at most 256 characters only, grouped in pieces of :data:`WINDOW`: a longer word is
data to the library's own filters, and a window along it would cost the time of a hang."""
OVERLAP = 200
"""Windows of a longer line overlap by this much, so a secret on a window's edge is seen whole."""

_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_EDGE_R = r"(?![A-Za-z0-9_\-])"

PROVIDER_PATTERNS: tuple[tuple[str, str], ...] = (
    ("Anthropic API Key", r"sk-ant-(?:api|admin|oat|sid)\d\d-[A-Za-z0-9_\-]{80,120}+"),
    ("OpenRouter API Key", r"sk-or-v1-[a-f0-9]{64}"),
    ("OpenAI API Key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,250}+"),
    ("OpenAI API Key", r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),
    ("OpenAI API Key", r"sk-[A-Za-z0-9]{48}"),
    ("DeepSeek API Key", r"sk-[a-f0-9]{32}"),
    ("Google API Key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("Groq API Key", r"gsk_[A-Za-z0-9]{52}"),
    ("Hugging Face Token", r"hf_[A-Za-z0-9]{34,40}+"),
    ("xAI API Key", r"xai-[A-Za-z0-9]{80}"),
    ("Perplexity API Key", r"pplx-[A-Za-z0-9]{48}"),
    ("Replicate API Token", r"r8_[A-Za-z0-9]{37}"),
    ("LangSmith API Key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("Tavily API Key", r"tvly-(?:dev-)?[A-Za-z0-9]{32}"),
    ("Fireworks API Key", r"fw_[A-Za-z0-9]{24}"),
)
"""The model providers' key formats detect-secrets lacks: ``(type, pattern)``, the most specific
first (``sk-ant-`` and ``sk-or-`` before OpenAI's ``sk-``). Each is tried only where one of
:data:`_PREFIXES` stands, anchored there: no pattern is ever searched along a text."""

_PREFIXES = ("sk-", "AIza", "gsk_", "hf_", "xai-", "pplx-", "r8_", "lsv2_", "tvly-", "fw_")
_PROVIDERS = regex.compile(
    "|".join(f"(?P<p{i}>{pattern}{_EDGE_R})" for i, (_kind, pattern) in enumerate(PROVIDER_PATTERNS))
)

_DIGEST = regex.compile(r"(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}|[0-9A-F]{32}|[0-9A-F]{40}|[0-9A-F]{64})")
_DATA_URI = regex.compile(r"base64,\s?+$")
_CALL_LINE = 300
"""The library's "indirect reference" filter (``secret = get_secret()``) is quadratic in a line's
length; it bails out past 1,000 characters, keepgui's past this (a call is a short line)."""
_LONG_BLOB = 256
"""A high-entropy string longer than this is data (an image, a file pasted whole), not a key."""

_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.\\"


def _byte_table(chars: str, to: bytes) -> bytes:
    """A ``bytes.translate`` table: ``chars`` to ``to``, a newline kept, every other byte a space."""
    table = bytearray(b" " * 256)
    table[10] = 10
    for c in chars.encode():
        table[c] = to[0]
    return bytes(table)


# On the text's UTF-8 bytes: a line's number is the same (a newline is one byte), and a run of these
# ASCII characters is the same run; str.translate is slow on text that is not ASCII
_RUN_TABLE = _byte_table(_RUN_CHARS, b"a")
_HEX_TABLE = _byte_table("0123456789abcdefABCDEF", b"h")
_HEX_PLUGIN = ("Hex High Entropy String",)
_RUN = b"a" * 20
_HEX = b"h" * 9
_RUN_PLUGINS = (
    "AWS Access Key",
    "Azure Storage Account access key",
    "Cloudant Credentials",
    "Discord Bot Token",
    "GitHub Token",
    "GitLab Token",
    "IBM COS HMAC Credentials",
    "IBM Cloud IAM Key",
    "Mailchimp Access Key",
    "OpenAI Token",
    "PyPI Token",
    "SendGrid API Key",
    "SoftLayer Credentials",
    "Square OAuth Secret",
    "Stripe Access Key",
    "Telegram Bot Token",
    "Twilio API Key",
    "Base64 High Entropy String",
)
_LITERALS: dict[str, tuple[str, ...]] = {
    "Artifactory Credentials": ("AKC", "AP"),
    "Basic Auth Credentials": ("://",),
    "JSON Web Token": ("eyJ",),
    "NPM tokens": ("_authToken",),
    "Private Key": ("BEGIN", "PuTTY"),
}
_LOWER_LITERALS: dict[str, tuple[str, ...]] = {"Slack Token": ("xox", "hooks.slack.com")}
"""The gates: what a line must hold for a plugin of the library to find anything in it. The
shortest secret most plugins' patterns match is a run of 20 of :data:`_RUN_CHARS` (a hex
string passes the hex plugin's entropy limit only from 9 characters); the others start with a
literal (the keyword plugin's are the library's own keywords, :func:`_keyword_literals`). Read
from the plugins' source; ``tests/core/test_secrets.py`` holds the gated scan to the ungated one
on its corpus. A plugin not named here (a newer version's) runs on every line. The gates are
found with ``str.find`` and ``str.translate`` over the whole text, at C speed."""


def _keyword_literals(denylist: tuple[str, ...]) -> tuple[str, ...] | None:
    """The library's keywords (``api_?key``...) as the plain strings they match, or None when one
    of them is more than letters and optional underscores (then the keyword plugin is not gated)."""
    out: list[str] = []
    for word in denylist:
        parts = word.split("_?")
        if any(not p or not p.replace("_", "").isalpha() for p in parts):
            return None
        variants = [parts[0]]
        for part in parts[1:]:
            variants = [v + sep + part for v in variants for sep in ("_", "")]
        out += variants
    return tuple(out)


def _positions(text: str, needle: str) -> Iterator[int]:
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)


_LEFT_OUT = frozenset({"Public IP (ipv4)"})
"""Plugins of the library keepgui does not run: an address is not a secret."""
_ENTROPY = frozenset({"Base64 High Entropy String", "Hex High Entropy String"})
_KEYWORD = "Secret Keyword"


@dataclass(frozen=True)
class Hit:
    """One secret in a text: its type, and where it is (``start``/``end``: character offsets)."""

    kind: str
    start: int
    end: int


def mask(secret: str) -> str:
    """The masked form shown for a secret: a few characters of its start, its length, never the rest."""
    n = len(secret)
    show = 4 if n >= 16 else 2 if n >= 8 else 0
    return f"{secret[:show]}…({n} chars)"


def _windows(line: str) -> Iterator[tuple[int, str]]:
    """``(offset, piece)``: the line whole when short, else overlapping windows of :data:`WINDOW`;
    a line longer than :data:`LONG_LINE` as its words only (see there), binary garbage not at all."""
    if len(line) <= WINDOW:
        if not _binary(line):
            yield 0, line
        return
    if len(line) > LONG_LINE:
        yield from _word_pieces(line)
        return
    step = WINDOW - OVERLAP
    for at in range(0, len(line) - OVERLAP, step):
        piece = line[at : at + WINDOW]
        if not _binary(piece):
            yield at, piece


_WORDS = stdre.compile(r"\S+")


def _binary(piece: str) -> bool:
    """True when a tenth of the piece is control characters or undecodable bytes: binary garbage."""
    return len(piece) >= 40 and not piece.isprintable() and _mostly_control(piece)


def _mostly_control(piece: str) -> bool:
    bad = sum(1 for c in piece if (c < " " and c != "\t") or "\x7f" <= c <= "\x9f" or c == "\ufffd")
    return bad * 10 > len(piece)


def _word_pieces(line: str) -> Iterator[tuple[int, str]]:
    """A very long line in pieces of whole words, each at most :data:`WINDOW` characters, leaving
    out every word longer than 256 characters (data, which the library's filters drop anyway)."""
    start = end = -1
    for m in _WORDS.finditer(line):
        if m.end() - m.start() > _LONG_BLOB:
            continue
        if start >= 0 and (m.end() - start > WINDOW or m.start() - end > 1):
            piece = line[start:end]
            if not _binary(piece):
                yield start, piece
            start = -1
        if start < 0:
            start = m.start()
        end = m.end()
    if start >= 0 and not _binary(line[start:end]):
        yield start, line[start:end]


class Detector:
    """detect-secrets' plugins with its heuristic filters, and the providers' patterns, over a text.

    One Detector per thread (the library's high-entropy plugins keep a regular expression on the
    plugin object); building one takes a few milliseconds. ``gated = False`` runs every plugin on
    every line (what the gates are tested against, and what :func:`library_direct` measures).
    """

    def __init__(self) -> None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins import keyword
        from detect_secrets.plugins.base import RegexBasedDetector

        self._h = heuristic
        self._regex_based = RegexBasedDetector
        self._config_keywords = keyword.CONFIG_DENYLIST_REGEX_TO_GROUP
        self.plugins: list[Any] = []
        mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
        for kind, cls in sorted(mapping.items()):
            if kind in _LEFT_OUT:
                continue
            plugin = cls()
            if kind in _ENTROPY:
                # the library's ad hoc scan looks for unquoted strings too ("eager"): memory is prose
                plugin.regex = stdre.compile(rf"([{stdre.escape(plugin.charset)}]+)")
            self.plugins.append(plugin)
        self.plugins.sort(key=lambda p: (p.secret_type in _ENTROPY, p.secret_type == _KEYWORD))
        kinds = {p.secret_type for p in self.plugins}
        self._literals = {k: v for k, v in _LITERALS.items() if k in kinds}
        self._lower = {k: v for k, v in _LOWER_LITERALS.items() if k in kinds}
        keywords = _keyword_literals(tuple(keyword.DENYLIST))
        if keywords is not None:
            # a few words every keyword holds (fewer passes over the text); a keyword holding none gates itself
            anchors = {"key", "pass", "pwd", "secret", "contrase"}
            self._lower[_KEYWORD] = (*anchors, *(k for k in keywords if not any(a in k for a in anchors)))
        gated = set(self._literals) | set(self._lower) | set(_RUN_PLUGINS) | {"Hex High Entropy String"}
        self._always = frozenset(kinds - gated)
        self.gated = True

    # ------------------------------------------------------------------ gates

    def _open_lines(self, text: str, starts: list[int]) -> dict[int, set[str]]:
        """Line number -> the plugins whose gate the line passes (every line: every plugin, ungated)."""
        everything = {p.secret_type for p in self.plugins}
        if not self.gated:
            return {i: set(everything) for i in range(len(starts))}
        out: dict[int, set[str]] = {}
        if self._always:
            out = {i: set(self._always) for i in range(len(starts))}

        def mark(positions: Iterator[int], kinds: tuple[str, ...] | frozenset[str]) -> None:
            for at in positions:
                line = bisect.bisect_right(starts, at) - 1
                out.setdefault(line, set()).update(kinds)

        for kind, literals in self._literals.items():
            for literal in literals:
                mark(_positions(text, literal), (kind,))
        if self._lower:
            lowered = text.lower()
            if len(lowered) != len(text):  # a character that lowers to two (İ): keep offsets, char by char
                lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
            for kind, literals in self._lower.items():
                for literal in literals:
                    mark(_positions(lowered, literal), (kind,))
        raw = text.encode("utf-8", "surrogatepass")
        for table, run, kinds in ((_RUN_TABLE, _RUN, _RUN_PLUGINS), (_HEX_TABLE, _HEX, _HEX_PLUGIN)):
            # line by line: a search for a run in one long text of runs is slow, in short lines not
            for number, line in enumerate(raw.translate(table).split(b"\n")):
                if run in line:
                    out.setdefault(number, set()).update(kinds)
        return out

    # ------------------------------------------------------------------ the library

    def _candidates(self, plugin: Any, piece: str) -> Iterator[tuple[str, int]]:
        """``(secret, where)`` of what one plugin finds in a piece of a line (``where``: -1 unknown)."""
        kind = plugin.secret_type
        if kind == _KEYWORD:
            # memory is prose and notes: `password: hunter2` needs no quotes there (the library's
            # rules for configuration files)
            for found in plugin.analyze_string(piece, denylist_regex_to_group=self._config_keywords):
                # in prose the value runs on into the sentence: its first word is the value, and a
                # plain lower-case word is prose ("password: see the vault" names no password)
                word = found.split()[0].rstrip(".,;:!?)]}'\"") if found.strip() else ""
                if word and not (word.isalpha() and word.islower()):
                    yield word, -1
        elif kind in _ENTROPY:
            limit = plugin.entropy_limit
            shortest = 2**limit  # a string of n characters has at most log2(n) bits of entropy per character
            for m in plugin.regex.finditer(piece):
                found = m.group(1)
                if len(found) > shortest and plugin.calculate_shannon_entropy(found) > limit:
                    yield found, m.start(1)
        elif isinstance(plugin, self._regex_based):
            # the plugin's own patterns; where a pattern's group is its prefix (GitHub's `(ghp|gho...)_`,
            # GitLab's `(glpat|...)-`), the library reports only that prefix: the whole match is the token
            for pattern in plugin.denylist:
                for m in pattern.finditer(piece):
                    groups = [i for i in range(1, (pattern.groups or 0) + 1) if m.group(i)]
                    if groups and m.start(groups[-1]) != m.start():
                        yield m.group(groups[-1]), m.start(groups[-1])
                    else:
                        lead = _lead(m.group(0))
                        yield m.group(0)[lead:].rstrip(' \t\r\n"'), m.start() + lead
        else:
            for found in plugin.analyze_string(piece):
                yield found, -1

    def _kept(self, plugin: Any, secret: str, piece: str, at: int) -> bool:
        """The library's default heuristic filters, and keepgui's few for memory (digests, data, paths)."""
        h = self._h
        if (
            len(secret) < 4
            or h.is_sequential_string(secret)
            or h.is_potential_uuid(secret)
            or h.is_likely_id_string(secret, piece, plugin)
            or h.is_templated_secret(secret)
            or h.is_prefixed_with_dollar_sign(secret)
            or h.is_not_alphanumeric_string(secret)
        ):
            return False
        if not isinstance(plugin, self._regex_based) and len(piece) <= _CALL_LINE and h.is_indirect_reference(piece):
            return False
        if plugin.secret_type in _ENTROPY:
            return _not_data(secret, piece, at)
        return True

    def library_line(self, line: str, open_: set[str]) -> Iterator[tuple[str, int, int]]:
        """``(type, start, end)`` of what the library's plugins named in ``open_`` find in one line."""
        for offset, piece in _windows(line):
            here = open_ if len(piece) == len(line) else open_ & self._open_lines(piece, [0]).get(0, set())
            for plugin in self.plugins:
                if plugin.secret_type not in here:
                    continue
                for secret, where in self._candidates(plugin, piece):
                    at = where if where >= 0 else piece.find(secret)
                    if at < 0 or not self._kept(plugin, secret, piece, at):
                        continue
                    end = at + len(secret)
                    if plugin.secret_type == "JSON Web Token":
                        tail = _JWT_TAIL.match(piece, end)  # the library's pattern stops short of the signature
                        end = tail.end() if tail is not None else end
                    yield plugin.secret_type, offset + at, offset + end

    # ------------------------------------------------------------------ a text

    def providers(self, text: str) -> Iterator[tuple[str, int, int]]:
        """The model providers' keys in ``text``: each pattern tried where its prefix stands."""
        seen: set[int] = set()
        for prefix in _PREFIXES:
            for at in _positions(text, prefix):
                if at in seen or (at and text[at - 1] in _WORD):
                    continue
                m = _PROVIDERS.match(text, at)
                if m is not None:
                    seen.add(at)
                    index = int(m.lastgroup[1:]) if m.lastgroup else 0
                    yield PROVIDER_PATTERNS[index][0], m.start(), m.end()

    def scan(self, text: str) -> list[Hit]:
        """Every secret in ``text``, in order; where two detections overlap the first kept wins
        (a provider's key, then the library's specific plugins, its keywords, its entropy)."""
        found = list(self.providers(text))
        starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        for number, open_ in sorted(self._open_lines(text, starts).items()):
            if not open_:
                continue
            offset = starts[number]
            end = starts[number + 1] - 1 if number + 1 < len(starts) else len(text)
            line = text[offset:end]
            found.extend((kind, offset + s, offset + e) for kind, s, e in self.library_line(line, open_))
        hits: list[Hit] = []
        first: list[int] = []  # the spans kept, sorted and disjoint
        for kind, start, end in sorted(found, key=lambda f: _RANK.get(f[0], 1)):
            i = bisect.bisect_right(first, start)
            if (i and hits[i - 1].end > start) or (i < len(hits) and hits[i].start < end):
                continue
            first.insert(i, start)
            hits.insert(i, Hit(kind, start, end))
        return hits


_HERE: list[Detector] = []  # the one detector of a child's calls (its calls run one at a time)


def hits_columns(texts: list[str]) -> dict[str, list[Any]]:
    """Every text's hits as columns (what the secrets child runs, :mod:`keepgui.core.childwork`):
    ``which`` (the text's index), ``kind``, ``start``, ``end``; see :func:`hits_of_columns`."""
    if not _HERE:
        _HERE.append(Detector())
    detector = _HERE[0]
    which: list[int] = []
    kinds: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for i, text in enumerate(texts):
        for hit in detector.scan(text):
            which.append(i)
            kinds.append(hit.kind)
            starts.append(hit.start)
            ends.append(hit.end)
    return {"which": which, "kind": kinds, "start": starts, "end": ends}


def hits_of_columns(columns: dict[str, list[Any]], count: int) -> list[list[Hit]]:
    """The hits of each of ``count`` texts, from :func:`hits_columns`' answer."""
    out: list[list[Hit]] = [[] for _ in range(count)]
    for i, kind, start, end in zip(columns["which"], columns["kind"], columns["start"], columns["end"], strict=True):
        out[i].append(Hit(kind, start, end))
    return out


_NEWLINE = stdre.compile("\n")
_EDGES = " \t\r\n\"'=:"
_UUID = regex.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PRINTABLE = frozenset(bytes(range(32, 127)) + b"\t\r\n")


def _lead(match: str) -> int:
    """How many edge characters a pattern matched before the token (Artifactory's ``(?:\\s|=|:|"|^)``)."""
    return len(match) - len(match.lstrip(_EDGES))


def _decodes_to_text(secret: str) -> bool:
    """True for base64 of plain text (a pasted file, an encoded sentence), which no key is."""
    try:
        raw = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except (ValueError, binascii.Error):
        return False
    return len(raw) >= 12 and b" " in raw and all(b in _PRINTABLE for b in raw)


def _not_data(secret: str, piece: str, at: int) -> bool:
    """keepgui's filters of the entropy plugins' strings for memory: not pasted data, a commit or
    content hash, a part of a UUID, a path or a domain name, base64 of plain text, a piece of a word."""
    if len(secret) > _LONG_BLOB or _DIGEST.fullmatch(secret) or _decodes_to_text(secret):
        return False
    if at > 0 and (piece[at - 1] in "./" or _DATA_URI.search(piece, 0, at)):
        return False  # a path's part, or data:image/png;base64,...
    end = at + len(secret)
    if (end < len(piece) and piece[end].isalnum()) or (at > 0 and piece[at - 1].isalnum()):
        return False  # a piece of a longer word (a parcel number, an identifier)
    window = _UUID.finditer(piece, max(0, at - 36), min(len(piece), end + 36))
    return not any(m.start() <= at and end <= m.end() for m in window)


_JWT_TAIL = regex.compile(r"[A-Za-z0-9_\-.+/=]{0,4096}+")
_RANK = {
    **{kind: 0 for kind, _pattern in PROVIDER_PATTERNS},
    _KEYWORD: 2,
    **dict.fromkeys(_ENTROPY, 3),
}
"""Which detection wins where two overlap: a provider's key, the library's specific plugins,
its keywords, its entropy (a stable sort keeps the order found within each rank)."""
