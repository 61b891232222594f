"""Gemini CLI's ``@path`` imports: which ``@word`` is an import, and what it becomes (no Qt).

Every memory file Gemini loads goes through its import processor before assembly (spec §5):

* an **import token** is an ``@`` at the start of the text or after a space, tab, ``\\n`` or ``\\r``,
  running to the next of those characters (trailing punctuation included), whose first character is
  ``.``, ``/`` or an ASCII letter; tokens inside backtick code regions (`` (`+)[\\s\\S]*?\\1 ``) are
  left alone. So ``ask @alice`` imports ``./alice``;
* in **tree** format (the default) the token is replaced in place by the imported text between
  ``<!-- Imported from: P -->`` / ``<!-- End of import from: P -->`` (processed in turn, down to
  depth 5), or by ``<!-- Import failed: P - <why> -->`` (a missing file, a folder, a path outside
  the import root: ``Path traversal attempt``), or ``<!-- File already processed: P -->`` for a file
  already on the chain of imports above it (the top file itself is not on that chain);
* in **flat** format the file becomes ``--- File: L ---`` sections: the top file (labelled with its
  *folder*, as Gemini labels it) then every file it reaches, depth first, each file's tokens taken
  last to first, each file once; tokens stay literal and failures vanish.

The import root is the top file's project root (the nearest folder with a boundary marker), or its
own folder; an import must resolve, links followed, inside it. Error texts are Node's own.

:func:`process` returns the text Gemini would use and every token with what it became
(:class:`ImportToken`), which the documents editor flags ("``@alice`` will become an import failure").
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from keepgui.backends.gemini.jstext import (
    decode_uri_component,
    decode_utf8,
    is_subpath,
    js_trim,
    node_normalize,
    node_resolve,
    robust_realpath,
)

MAX_DEPTH = 5
"""Files are imported down to this depth (the top file is depth 0); a file at it keeps its tokens."""

READ_LIMIT = 64 * 1024 * 1024
"""A file larger than this is not read for a preview (Gemini would read it whole)."""

_WS = " \t\n\r"
_CODE = re.compile(r"(`+)([\s\S]*?)\1")
_URL = re.compile(r"^(file|https?)://")

IMPORTED, FAILED, REFUSED, CYCLE, CODE, LITERAL = "imported", "failed", "refused", "cycle", "code", "literal"
"""What a token became: imported; a failed read; refused (outside the import root, a URL); already on the
import chain; left alone inside a code region; left literal (flat format, or a file at the depth limit)."""


@dataclass(frozen=True)
class ImportToken:
    """One ``@path`` token of a file: where it is (offsets into that file's text, 1-based line and
    column), the ``path`` as written, what it became (``outcome``, ``detail``: the error or the file
    imported), the resolved ``target``, the exact ``becomes`` text in tree format, and the tokens of
    the imported file (``children``)."""

    start: int
    end: int
    line: int
    column: int
    path: str
    outcome: str
    detail: str = ""
    target: str = ""
    becomes: str = ""
    children: tuple[ImportToken, ...] = ()

    def walk(self) -> list[ImportToken]:
        """This token and every token below it, depth first."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out


def describe_token(token: ImportToken) -> str:
    """What one ``@`` token becomes, for a person."""
    at = f"line {token.line}: @{token.path}"
    if token.outcome == IMPORTED:
        return f"{at} → imports {token.target} (its text is inserted here)"
    if token.outcome == FAILED:
        return f"{at} → replaced by {token.becomes or '“Import failed”'} (the word is lost to the model)"
    if token.outcome == REFUSED:
        return f"{at} → replaced by {token.becomes or '“Import failed”'} ({token.detail}; the word is lost)"
    if token.outcome == CYCLE:
        return f"{at} → replaced by {token.becomes or '“File already processed”'} ({token.detail})"
    if token.outcome == LITERAL:
        return f"{at} → left as written ({token.detail})"
    return f"{at} → left as written ({token.detail})"


def find_imports(content: str) -> list[tuple[int, int, str]]:
    """``(start, end, path)`` of every import token of ``content`` (code regions not excluded yet)."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(content)
    while i < n:
        i = content.find("@", i)
        if i < 0:
            break
        if i > 0 and content[i - 1] not in _WS:
            i += 1
            continue
        j = i + 1
        while j < n and content[j] not in _WS:
            j += 1
        path = content[i + 1 : j]
        if path and (path[0] in "./" or ("a" <= path[0] <= "z") or ("A" <= path[0] <= "Z")):
            out.append((i, j, path))
        i = j + 1  # Gemini skips the character after a token (a space, or the end)
    return out


def code_regions(content: str) -> list[tuple[int, int]]:
    """The backtick code regions of ``content`` as Gemini finds them."""
    return [(m.start(), m.end()) for m in _CODE.finditer(content)]


def _in_code(start: int, regions: Sequence[tuple[int, int]]) -> bool:
    return any(s <= start < e for s, e in regions)


def _line_col(content: str, offset: int) -> tuple[int, int]:
    line = content.count("\n", 0, offset) + 1
    return line, offset - (content.rfind("\n", 0, offset) + 1) + 1


def import_root(folder: str, markers: Sequence[str]) -> str:
    """The import root of a file in ``folder``: the nearest folder up with a boundary marker, else ``folder``."""
    start = node_resolve(folder)
    if not markers:
        return start
    current = start
    while True:
        for marker in markers:
            if os.path.isabs(marker) or ".." in marker:
                continue
            if os.path.exists(os.path.join(current, marker)):  # Node's access(): links followed
                return current
        parent = os.path.dirname(current)
        if parent == current:
            return start
        current = parent


def allowed(path: str, base: str, root: str, resolved: Callable[[str], str] = str) -> bool:
    """Whether Gemini accepts the import ``path`` written in a file of folder ``base`` (import root ``root``);
    ``resolved`` reads a real path as the machine Gemini runs on resolves it (:meth:`PathMap.resolved`)."""
    if _URL.match(path):
        return False
    try:
        target = resolved(real_of(node_resolve(base, path)))
        root_real = resolved(real_of(root.strip())) if root.strip() else None
    except (OSError, ValueError):
        return False
    return root_real is not None and is_subpath(root_real, target)


def real_of(path: str) -> str:
    """Gemini's ``resolveToRealPath``: URI escapes decoded (when they decode), then the robust real path."""
    if "\0" in path:
        raise ValueError(f"Invalid path: {path}")
    with contextlib.suppress(ValueError):
        path = decode_uri_component(path)
    return robust_realpath(path)


def node_error(exc: OSError, syscall: str, path: str) -> str:
    """Node's message for a failed ``access`` / ``open`` / ``read``."""
    texts = {
        errno.ENOENT: "ENOENT: no such file or directory",
        errno.EACCES: "EACCES: permission denied",
        errno.ENOTDIR: "ENOTDIR: not a directory",
        errno.ELOOP: "ELOOP: too many symbolic links encountered",
        errno.ENAMETOOLONG: "ENAMETOOLONG: name too long",
        errno.EPERM: "EPERM: operation not permitted",
    }
    head = texts.get(exc.errno or 0, f"{errno.errorcode.get(exc.errno or 0, 'EIO')}: {exc.strerror or exc}")
    return f"{head}, {syscall} '{path}'"


def read_text(path: str) -> tuple[str | None, str]:
    """A file as Gemini's import processor reads it: ``(text, "")`` or ``(None, Node's error message)``.

    ``access`` first (it fails for a missing file), then the read (it fails for a folder). A file that is
    not a regular file is not opened (a FIFO would block keepgui as it blocks Gemini)."""
    try:
        os.stat(path)
    except OSError as exc:
        return None, node_error(exc, "access", path)
    if os.path.isdir(path):
        return None, "EISDIR: illegal operation on a directory, read"
    if not os.path.isfile(path):
        return None, f"not a regular file: {path} (Gemini would wait on it forever)"
    try:
        with open(path, "rb") as fh:
            data = fh.read(READ_LIMIT + 1)
    except OSError as exc:
        return None, node_error(exc, "open", path)
    if len(data) > READ_LIMIT:
        return None, f"larger than {READ_LIMIT // (1024 * 1024)} MiB: keepgui does not read it for a preview"
    return decode_utf8(data), ""


Reader = Callable[[str], tuple[str | None, str]]


@dataclass
class Processed:
    """A file after import processing: the ``text`` Gemini uses, its ``tokens``, and every file imported."""

    text: str
    tokens: list[ImportToken] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def flagged(self) -> list[ImportToken]:
        """Every token at every depth."""
        out: list[ImportToken] = []
        for token in self.tokens:
            out.extend(token.walk())
        return out


def _tree(
    content: str,
    base: str,
    root: str,
    chain: frozenset[str],
    depth: int,
    read: Reader,
    files: list[str],
    resolved: Callable[[str], str],
) -> tuple[str, list[ImportToken]]:
    if depth >= MAX_DEPTH:
        return content, [
            ImportToken(s, e, *_line_col(content, s), p, LITERAL, "past the import depth limit: left as written")
            for s, e, p in find_imports(content)
        ]
    regions = code_regions(content)
    pieces: list[str] = []
    tokens: list[ImportToken] = []
    last = 0
    for start, end, path in find_imports(content):
        pieces.append(content[last:start])
        last = end
        where = _line_col(content, start)
        if _in_code(start, regions):
            pieces.append("@" + path)
            tokens.append(ImportToken(start, end, *where, path, CODE, "inside a code span: left as written"))
            continue
        if not allowed(path, base, root, resolved):
            text = f"<!-- Import failed: {path} - Path traversal attempt -->"
            pieces.append(text)
            tokens.append(ImportToken(start, end, *where, path, REFUSED, "outside the import root " + root, "", text))
            continue
        full = node_resolve(base, path)
        if full in chain:
            text = f"<!-- File already processed: {path} -->"
            pieces.append(text)
            tokens.append(ImportToken(start, end, *where, path, CYCLE, "already imported above it", full, text))
            continue
        body, error = read(full)
        if body is None:
            text = f"<!-- Import failed: {path} - {error} -->"
            pieces.append(text)
            tokens.append(ImportToken(start, end, *where, path, FAILED, error, full, text))
            continue
        files.append(full)
        inner, children = _tree(body, os.path.dirname(full), root, chain | {full}, depth + 1, read, files, resolved)
        text = f"<!-- Imported from: {path} -->\n{inner}\n<!-- End of import from: {path} -->"
        pieces.append(text)
        tokens.append(ImportToken(start, end, *where, path, IMPORTED, full, full, text, tuple(children)))
    pieces.append(content[last:])
    return "".join(pieces), tokens


def _flat(
    content: str, file_path: str, base: str, root: str, read: Reader, resolved: Callable[[str], str]
) -> Processed:
    sections: list[tuple[str, str]] = []
    done: set[str] = set()
    out = Processed("")

    def visit(text: str, folder: str, label: str, top: bool) -> list[ImportToken]:
        normal = node_normalize(label)
        if normal in done:
            return []
        done.add(normal)
        sections.append((normal, text))
        if not top:
            out.files.append(normal)
        regions = code_regions(text)
        found = find_imports(text)
        tokens: dict[int, ImportToken] = {}
        for start, end, path in reversed(found):
            where = _line_col(text, start)
            if _in_code(start, regions):
                tokens[start] = ImportToken(start, end, *where, path, CODE, "inside a code span: left as written")
                continue
            if not allowed(path, folder, root, resolved):
                tokens[start] = ImportToken(start, end, *where, path, REFUSED, "outside the import root " + root)
                continue
            full = node_normalize(node_resolve(folder, path))
            if full in done:
                tokens[start] = ImportToken(start, end, *where, path, CYCLE, "included once already", full)
                continue
            body, error = read(full)
            if body is None:
                tokens[start] = ImportToken(start, end, *where, path, FAILED, error, full)
                continue
            children = visit(body, os.path.dirname(full), full, False)
            tokens[start] = ImportToken(start, end, *where, path, IMPORTED, full, full, "", tuple(children))
        return [tokens[s] for s, _e, _p in found]

    out.tokens = visit(content, base, node_resolve(base), True)
    out.text = "\n\n".join(f"--- File: {p} ---\n{js_trim(t)}\n--- End of File: {p} ---" for p, t in sections)
    return out


def process(
    content: str,
    file_path: str,
    import_format: str,
    markers: Sequence[str],
    read: Reader = read_text,
    resolved: Callable[[str], str] = str,
) -> Processed:
    """``content`` of the file ``file_path`` after Gemini's import processing in ``import_format``
    (``tree`` or ``flat``) with these boundary markers; ``read`` reads an imported file, ``resolved`` reads
    a real path as the machine Gemini runs on resolves it (a link out of a copy of its files leads back in)."""
    base = os.path.dirname(file_path)
    root = import_root(base, markers)
    if import_format == "flat":
        return _flat(content, file_path, base, root, read, resolved)
    files: list[str] = []
    text, tokens = _tree(content, base, root, frozenset(), 0, read, files, resolved)
    return Processed(text, tokens, files)
