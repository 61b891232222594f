"""JavaScript string and path semantics, where Gemini CLI's own rules depend on them (no Qt).

Gemini CLI is a Node.js program: it trims with ``String.prototype.trim`` (which strips a byte-order
mark, and not U+001C–U+001F or U+0085 as Python's ``str.strip`` does), decodes files with Node's
UTF-8 decoder (invalid sequences become U+FFFD, a BOM stays), sorts paths by UTF-16 code units,
and lower-cases with ``toLowerCase``. Every rule keepgui reproduces goes through these helpers.
"""

from __future__ import annotations

import errno
import os
import re

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""Every character JS's ``trim()`` removes (WhiteSpace and LineTerminator, the BOM included)."""

_THREE_NEWLINES = re.compile(r"\n{3,}")


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript does it."""
    return text.strip(JS_WHITESPACE)


def collapse_blank_runs(text: str) -> str:
    """``text.replace(/\\n{3,}/g, "\\n\\n")``: what Gemini does to its whole system instruction."""
    return _THREE_NEWLINES.sub("\n\n", text)


def decode_utf8(data: bytes) -> str:
    """Bytes as Node's ``readFile(path, "utf-8")`` decodes them: invalid sequences as U+FFFD, a BOM kept."""
    return data.decode("utf-8", errors="replace")


def utf16_key(text: str) -> bytes:
    """A sort key that orders strings as JavaScript's default sort does (by UTF-16 code units)."""
    return text.encode("utf-16-be", errors="surrogatepass")


def js_sorted(items: list[str]) -> list[str]:
    """``items.sort()`` as JavaScript does it (UTF-16 code unit order, not code points)."""
    return sorted(items, key=utf16_key)


def utf16_len(text: str) -> int:
    """A JS string's ``length``: UTF-16 code units."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def node_resolve(*parts: str) -> str:
    """Node's ``path.resolve`` on POSIX: joined right to left until absolute, normalised, no link resolved,
    no trailing slash (except the root)."""
    resolved = ""
    for part in reversed(parts):
        if not part:
            continue
        resolved = part if not resolved else os.path.join(part, resolved)
        if os.path.isabs(resolved):
            break
    if not os.path.isabs(resolved):
        resolved = os.path.join(os.getcwd(), resolved)
    out = os.path.normpath(resolved)
    # normpath keeps a leading "//" (POSIX allows it to mean something else); Node makes it "/"
    return "/" + out.lstrip("/") if out.startswith("//") else out


def node_normalize(path: str) -> str:
    """Node's ``path.normalize`` on POSIX ("" is "."; a trailing slash is kept)."""
    if not path:
        return "."
    trailing = path.endswith("/")
    out = os.path.normpath(path)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    if trailing and out != "/":
        out += "/"
    return out


def is_subpath(parent: str, child: str) -> bool:
    """Gemini's ``isSubpath`` on POSIX: ``child`` is ``parent`` or lies below it (lexically, after resolve)."""
    rel = os.path.relpath(node_resolve(child), node_resolve(parent))
    return rel != ".." and not rel.startswith("../") and not os.path.isabs(rel)


def robust_realpath(path: str) -> str:
    """Gemini's ``resolveToRealPath`` on POSIX: the real path, where a missing tail is kept as written
    below the real path of its nearest existing ancestor (dangling links followed by their text)."""
    seen: set[str] = set()

    def real(p: str) -> str:
        if p in seen:
            raise OSError(f"Infinite recursion detected in robustRealpath: {p}")
        seen.add(p)
        try:
            return os.path.realpath(p, strict=True)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            pass
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:  # Node treats a too-long name like a missing file
                raise
        if os.path.islink(p):
            return real(node_resolve(os.path.dirname(p), os.readlink(p)))
        parent = os.path.dirname(p)
        if parent == p:
            return p
        return os.path.join(real(parent), os.path.basename(p))

    return real(node_resolve(path))


_HEX2 = re.compile(r"%[0-9A-Fa-f]{2}")


def decode_uri_component(text: str) -> str:
    """JavaScript's ``decodeURIComponent``: every ``%XX`` decoded as UTF-8; ValueError where JS throws
    a URIError (a ``%`` not followed by two hex digits, or bytes that are not UTF-8)."""
    if "%" not in text:
        return text
    out: list[str] = []
    pending = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            if not _HEX2.match(text, i):
                raise ValueError("URI malformed")
            pending.append(int(text[i + 1 : i + 3], 16))
            i += 3
            continue
        if pending:
            out.append(pending.decode("utf-8"))  # UnicodeDecodeError is a ValueError, as JS throws
            pending.clear()
        out.append(text[i])
        i += 1
    if pending:
        out.append(pending.decode("utf-8"))
    return "".join(out)
