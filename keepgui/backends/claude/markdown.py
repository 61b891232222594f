"""How Claude Code prepares an instruction or memory file before it injects it.

Every rule here was settled by running the real CLI against generated files
(``tests/backends/claude/test_claude_cli_compare.py``), never by reading its code:

* **Decoding**: UTF-8; a byte-order mark is dropped; invalid bytes become
  U+FFFD.
* **Front matter**: a leading ``---`` block is removed by the pattern
  :data:`FRONT_MATTER` — the closing ``---`` is the first one anywhere after the
  opening line, even mid-line (``title: a --- b`` ends the block after the
  second ``---``). A leading blank line or a missing closing ``---`` means there
  is no front matter.
* **HTML comments**: when the text contains ``<!--``, the CLI lexes it as
  Markdown, which first turns ``\\r\\n`` and ``\\r`` into ``\\n`` for the whole
  file; that text replaces the file's only when a comment was removed. Each *top-level* HTML block that starts with ``<!--`` (after up to
  three spaces) loses every ``<!-- … -->`` in it; when nothing but white space
  is left, the block goes with the empty lines that follow it. Comments inside
  code, lists, block quotes, other HTML blocks and inline comments stay.
  A file without ``<!--`` keeps its ``\\r\\n``.
* **Imports** (``@path``): found in Markdown *text* only (not in code spans,
  fenced or indented code, HTML, link targets or image text), at the start of
  a text run or after white space, up to the next white space (``\\ `` escapes a
  space), ``#fragment`` cut off.

markdown-it-py (CommonMark) finds the blocks and text runs; CommonMark and the
Markdown lexer the CLI uses agree on every construct above, and the comparison
tests cover each one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from keepgui.backends.claude.jstext import JS_WS_CLASS, is_js_blank

if TYPE_CHECKING:  # markdown-it is imported when first needed
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

FRONT_MATTER = re.compile(r"---" + JS_WS_CLASS + r"*\n([\s\S]*?)---" + JS_WS_CLASS + r"*\n?")
"""The CLI's front-matter pattern, anchored at the start of the text (``re.match``)."""

_COMMENT = re.compile(r"<!--[\s\S]*?-->")
_IMPORT = re.compile(r"(?:^|(?<=" + JS_WS_CLASS + r"))@((?:\\ |[^" + JS_WS_CLASS[1:-1] + r"])+)")
_IMPORT_START = re.compile(r"(?:\./|~/|/(?!$)|[A-Za-z0-9._-])")


def decode(data: bytes) -> str:
    """File bytes as the CLI reads them: UTF-8, a leading BOM dropped, bad bytes as U+FFFD."""
    text = data.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff")


@dataclass(frozen=True)
class FrontMatter:
    """A file split at its front matter: ``yaml`` is the block's inside (None when there is none),
    ``body`` what follows it, ``end`` the offset in the text where the body starts."""

    yaml: str | None
    body: str
    end: int


def split_front_matter(text: str) -> FrontMatter:
    """Split ``text`` as the CLI strips front matter (see :data:`FRONT_MATTER`)."""
    match = FRONT_MATTER.match(text)
    if match is None:
        return FrontMatter(None, text, 0)
    return FrontMatter(match.group(1), text[match.end() :], match.end())


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    # Escapes must stay separate text pieces: "\@x.md" is not an import, "\\@x.md" is.
    md.disable("text_join")
    return md


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer("\n", text):
        starts.append(match.end())
    return starts


def comment_deletions(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` ranges comment stripping deletes from ``text`` (already ``\\n``-only), in order."""
    if "<!--" not in text:
        return []
    starts = _line_starts(text)
    out: list[tuple[int, int]] = []
    for token in _markdown().parse(text):
        if token.type != "html_block" or token.level != 0 or token.map is None:
            continue
        first, last = token.map
        begin = starts[first]
        end = starts[last] if last < len(starts) else len(text)
        if not text[begin:end].lstrip(" ").startswith("<!--"):
            continue
        # the block takes the empty lines after it (only truly empty ones)
        while end < len(text) and text[end] == "\n":
            end += 1
        comments = [m.span() for m in _COMMENT.finditer(text, begin, end)]
        if not comments:
            continue
        kept = "".join(text[a:b] for a, b in _gaps(begin, end, comments))
        out.extend([(begin, end)] if is_js_blank(kept) else comments)
    return out


def _gaps(begin: int, end: int, cuts: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    pos = begin
    for a, b in cuts:
        yield pos, a
        pos = b
    yield pos, end


def normalise_newlines(text: str) -> str:
    """``\\r\\n`` and ``\\r`` as ``\\n``, as the CLI's Markdown lexer reads a file."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def strip_comments(text: str) -> str:
    """``text`` without its block-level HTML comments (see the module docstring)."""
    if "<!--" not in text:
        return text
    lexed = normalise_newlines(text)
    cuts = comment_deletions(lexed)
    if not cuts:
        return text  # nothing removed: the CLI keeps the file as it was, \r\n included
    return "".join(lexed[a:b] for a, b in _gaps(0, len(lexed), cuts))


def prepared(text: str) -> str:
    """The text the CLI injects for a file's decoded ``text``, before trimming:
    front matter and block comments removed."""
    return strip_comments(split_front_matter(text).body)


# ---------------------------------------------------------------------- imports


@dataclass(frozen=True)
class ImportRef:
    """One ``@path`` found in a file: ``path`` as written (escapes resolved, fragment cut), ``raw``
    the token as it stands, ``line`` its 1-based line in the text it was found in."""

    path: str
    raw: str
    line: int


def _text_runs(children: Sequence[Token], first_line: int) -> list[tuple[str, int]]:
    """The text runs of an inline token's children as the CLI's lexer sees them, each with its line.

    An entity such as ``&amp;`` stays part of its run (as written) and a soft
    line break joins two lines of one run; an escape, a code span, inline
    HTML, a hard break, an image, a link's or emphasis' edges end a run.
    """
    runs: list[tuple[str, int]] = []
    current: list[str] = []
    start = line = first_line
    for child in children:
        # a backslash before a character that cannot be escaped is plain text (content == markup)
        if child.type == "text" or (
            child.type == "text_special" and (child.info == "entity" or child.content == child.markup)
        ):
            if not current:
                start = line
            current.append(child.content if child.type == "text" else child.markup)
            continue
        if child.type == "softbreak" and current:
            current.append("\n")
        else:
            if current:
                runs.append(("".join(current), start))
            current = []
        if child.type in ("softbreak", "hardbreak"):
            line += 1
        elif child.content:
            line += child.content.count("\n")
    if current:
        runs.append(("".join(current), start))
    return runs


def find_imports(text: str) -> list[ImportRef]:
    """Every ``@path`` import in ``text`` (front matter and comments already removed), in order."""
    if "@" not in text:
        return []
    out: list[ImportRef] = []
    for token in _markdown().parse(text):
        if token.type != "inline" or not token.children:
            continue
        for run, line in _text_runs(token.children or (), token.map[0] + 1 if token.map else 1):
            for match in _IMPORT.finditer(run):
                raw = match.group(1)
                if not _IMPORT_START.match(raw) or raw.startswith("@"):
                    continue
                path = raw.replace("\\ ", " ")
                cut = path.find("#")
                if cut >= 0:
                    path = path[:cut]
                if not path:
                    continue
                out.append(ImportRef(path, raw, line + run.count("\n", 0, match.start())))
    return out
