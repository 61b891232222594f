"""A Claude Code memory folder: the ``MEMORY.md`` index, its cut, and the topic files.

**The cut** (observed on the real CLI, byte for byte): the index is prepared
like any instruction file (front matter and block comments removed, trimmed),
then split on ``\\n``. With more than :data:`LINE_LIMIT` lines, the first 200
are kept; if what is kept is still over :data:`SIZE_LIMIT` UTF-16 units, it is
cut at the last ``\\n`` at or before unit 25,000 (or hard at 25,000 when there
is none). The warning then names the reason — ``230 lines (limit: 200)``,
``29.3KB (limit: 24.4KB) — index entries are too long``, or ``220 lines and
26KB`` (both, decided on the whole text's size even when the first 200 lines
fit) — and where the cut fell, quoting the first line not loaded (trimmed, at
most 80 units, else its first 79 trimmed again and ``…``). Counts are on the prepared text, ``\\r``
included. Then, for the index only, the injected text is cleaned: ``\\r\\n``,
``\\r``, U+2028 and U+2029 become ``\\n``; control, format, private-use,
unassigned and default-ignorable characters are removed (tab, ZWJ, ZWNJ and
the emoji variation selectors U+FE0E/U+FE0F stay). There is no Unicode normalisation.

**Topic files** carry front matter ``name`` (a kebab-case slug),
``description`` (one line) and ``metadata: {type: …}`` (2.1.3xx nests the
type; the older flat ``type:`` is read too). The index links to them with
lines like ``- [Title](file.md) — hook``; any line with a Markdown link to a
relative ``.md`` path counts as an entry, the rest of the file (headings,
blank lines, prose) is kept as it is.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import regex
import yaml

from keepgui.backends.claude.jstext import JS_WHITESPACE, format_kb, js_trim, utf16_index, utf16_len, utf16_slice
from keepgui.backends.claude.markdown import comment_deletions, decode, normalise_newlines, split_front_matter
from keepgui.core import fsio, pace
from keepgui.core.errors import KeepguiError

INDEX_NAME = "MEMORY.md"
LINE_LIMIT = 200
SIZE_LIMIT = 25_000
PREVIEW_UNITS = 80
LOCK_NAME = ".consolidate-lock"
TEAM_DIR = "team"
MEMORY_TYPES = ("user", "feedback", "project", "reference")
TOPIC_LIMIT = 4 * 1024 * 1024
WARNING_TAIL = "Keep index entries to one line under ~200 chars; move detail into topic files."

_INVISIBLE = regex.compile(
    r"[[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]--[\t\n\u200c\u200d\ufe0e\ufe0f]]", regex.VERSION1
)
_LINK = re.compile(r"\[((?:[^\[\]\\]|\\.)*)\]\(\s*<?([^()<>\s]+?\.md)>?(?:\s+\"[^\"]*\")?\s*\)")
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser: 215 topic files in ~15 ms, not ~300
_HOOK_SEPARATOR = re.compile(r"^\s*(?:—|–|-|:)\s*")


def clean_injected(text: str) -> str:
    """The index text as the CLI sends it: line separators as ``\\n``, invisible characters
    removed (see the module docstring)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    return _INVISIBLE.sub("", text)


# ---------------------------------------------------------------------- where prepared text came from


class Prepared:
    """A file's prepared text (front matter and comments removed, trimmed) and the way back to the file.

    :meth:`raw_offset` maps an offset of :attr:`text` to the decoded file's;
    :meth:`raw_line` to its 1-based line.
    """

    def __init__(self, raw: str) -> None:
        self.raw = raw
        stages: list[list[tuple[int, int]]] = []
        front = split_front_matter(raw)
        stages.append([(0, front.end)] if front.end else [])
        text = front.body
        lexed = normalise_newlines(text) if "<!--" in text else text
        cuts = comment_deletions(lexed) if "<!--" in text else []
        if cuts:  # as strip_comments: the lexed text replaces the file's only when a comment went
            stages.append([(m.start(), m.start() + 1) for m in re.finditer(r"\r(?=\n)", text)])
            stages.append(cuts)
            text = _delete(lexed, cuts)
        lead = len(text) - len(text.lstrip(JS_WHITESPACE))
        trimmed = text.strip(JS_WHITESPACE)
        stages.append([(0, lead), (lead + len(trimmed), len(text))])
        self.text = trimmed
        self._stages = [[cut for cut in stage if cut[1] > cut[0]] for stage in stages]
        self._raw_line_starts = [0] + [m.end() for m in re.finditer("\n", raw)]

    def raw_offset(self, offset: int) -> int:
        """The offset in the decoded file of :attr:`text`'s ``offset``."""
        for cuts in reversed(self._stages):
            for start, end in cuts:
                if start <= offset:
                    offset += end - start
                else:
                    break
        return offset

    def raw_line(self, offset: int) -> int:
        """The 1-based line of the decoded file that holds :attr:`text`'s ``offset``."""
        return bisect.bisect_right(self._raw_line_starts, self.raw_offset(offset))


def _delete(text: str, cuts: list[tuple[int, int]]) -> str:
    out, pos = [], 0
    for start, end in cuts:
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)


# ---------------------------------------------------------------------- the cut


@dataclass(frozen=True)
class IndexCut:
    """How the index is cut for the next session.

    ``injected`` is the exact text the reminder carries after the file's
    heading (warning included); ``lines`` and ``units`` measure the prepared
    text; ``kept_lines`` lines load whole (``partial``: and the first
    ``kept_units`` units of one more, a hard cut); ``reason`` is ``lines``,
    ``size``, ``both`` or ``""`` (nothing cut); ``warning`` the warning line.
    """

    injected: str
    lines: int
    units: int
    kept_lines: int
    kept_units: int
    reason: str
    warning: str
    partial: bool = False

    @property
    def cut(self) -> bool:
        """True when part of the index does not load."""
        return bool(self.reason)

    @property
    def first_cut_line(self) -> int | None:
        """The 1-based line (of the prepared text) where the cut starts."""
        if not self.reason:
            return None
        return self.kept_lines + 1

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``."""
        return {
            "lines": self.lines,
            "units": self.units,
            "kept_lines": self.kept_lines,
            "kept_units": self.kept_units,
            "reason": self.reason,
            "warning": self.warning,
            "partial": self.partial,
            "first_cut_line": self.first_cut_line,
        }


def _preview(line: str) -> str:
    line = js_trim(line)
    if utf16_len(line) > PREVIEW_UNITS:
        # the CLI trims the cut piece again: a space before the ellipsis goes (seen on the demo index)
        return utf16_slice(line, PREVIEW_UNITS - 1).rstrip(JS_WHITESPACE) + "…"
    return line


def cut_index(text: str) -> IndexCut:
    """Cut a prepared index (see the module docstring); ``text`` is :attr:`Prepared.text`."""
    lines = text.split("\n")
    count, units = len(lines), utf16_len(text)
    if count <= LINE_LIMIT and units <= SIZE_LIMIT:
        return IndexCut(clean_injected(text), count, units, count, units, "", "")
    kept = "\n".join(lines[:LINE_LIMIT]) if count > LINE_LIMIT else text
    hard = False
    if utf16_len(kept) > SIZE_LIMIT:
        newline = kept.rfind("\n", 0, utf16_index(kept, SIZE_LIMIT + 1))
        if newline >= 0:
            kept = kept[:newline]
        else:
            kept = kept[: utf16_index(kept, SIZE_LIMIT)]
            hard = True
    if count > LINE_LIMIT and units > SIZE_LIMIT:
        reason, why = "both", f"{count} lines and {format_kb(units)}"
    elif count > LINE_LIMIT:
        reason, why = "lines", f"{count} lines (limit: {LINE_LIMIT})"
    else:
        reason, why = "size", f"{format_kb(units)} (limit: {format_kb(SIZE_LIMIT)}) — index entries are too long"
    kept_lines = kept.count("\n") + 1 if kept else 0
    if hard:
        kept_lines -= 1
        where = f"everything after the first {SIZE_LIMIT} characters of line {kept_lines + 1} was cut off"
    else:
        first = lines[kept_lines]
        where = f"{count - kept_lines} of {count} lines were cut off, starting at line {kept_lines + 1}"
        if js_trim(first):
            where += f' ("{_preview(first)}")'
    warning = f"> WARNING: MEMORY.md is {why}. Only part of it was loaded: {where}. {WARNING_TAIL}"
    return IndexCut(
        clean_injected(kept + "\n\n" + warning),
        count,
        units,
        kept_lines,
        utf16_len(kept),
        reason,
        clean_injected(warning),
        hard,
    )


# ---------------------------------------------------------------------- problems


@dataclass(frozen=True)
class FolderProblem:
    """One thing wrong with a file of the memory folder: what keepgui could not take as it is, and why.

    ``path`` is the file, ``line`` its 1-based line (0: the whole file), ``message`` what is wrong and
    what keepgui does about it, ``code`` a stable word (tests and the window match on it). The fields
    are those of the seam's doctor-like problems (path, line, message, code, level), so a bank hands
    these out as they are.
    """

    path: str
    line: int
    message: str
    code: str
    level: str = "warning"

    @property
    def where(self) -> str:
        """``file:line`` (or the file)."""
        return f"{self.path}:{self.line}" if self.line else self.path

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``: ``{path, line, code, message}`` (``line`` None when it is the whole file)."""
        return {"path": self.path, "line": self.line or None, "code": self.code, "message": self.message}


NOT_A_FILE = "not-a-file"
LINK_OUT = "link-out"
NOT_UTF8 = "not-utf8"
BAD_FRONT_MATTER = "front-matter"
TOO_BIG = "too-big"
UNREADABLE = "unreadable"
INDEX_LINK_OUT = "index-link-out"
INDEX_NOT_A_FILE = "index-not-a-file"
BAD_NAME = "bad-name"


def utf8_name(path: str) -> bool:
    """True when ``path`` is text (a name with bytes that are not UTF-8 comes from os as surrogates)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(path: str) -> str:
    """``path`` as printable text: bytes that are not UTF-8 as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO``, ``a folder``...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def inside(folder: str, path: str) -> bool:
    """True when ``path`` (already resolved) is ``folder`` (already resolved) or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def linked_memory_file(path: str) -> bool:
    """True when ``path`` (a link in a memory folder) resolves to a regular ``*.md`` file: a memory
    file linked into a repository, as people do (spec §5.3), which the CLI reads and keepgui reads and
    writes through. A link to anything else outside the folder (``/etc/passwd``, a folder, a FIFO) is
    refused."""
    target = os.path.realpath(path)
    return target.endswith(".md") and os.path.isfile(target)


def utf8_error(data: bytes) -> tuple[int, int] | None:
    """``(byte offset, 1-based line)`` of the first byte that is not UTF-8, or None when all of it is."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start, data.count(b"\n", 0, exc.start) + 1
    return None


def _too_big(path: str, size: int) -> FolderProblem:
    return FolderProblem(
        path,
        0,
        f"{size:,} bytes, over the {TOPIC_LIMIT:,}-byte limit (4 MiB, the most the Claude Code CLI loads of a "
        "memory or instruction file: it skips a bigger one whole); skipped unread",
        TOO_BIG,
    )


def check_entry(folder: str, path: str) -> tuple[str, FolderProblem | None]:
    """Whether ``path`` (in ``folder``) can be read as a memory file without following it out of the
    folder or blocking: ``(path to read, None)`` or ``("", the problem)``; a missing file is ``(path, None)``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path, None
    except OSError as exc:
        return "", FolderProblem(path, 0, f"cannot be read: {exc.strerror or exc}", UNREADABLE)
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        if not inside(os.path.realpath(folder), target) and not linked_memory_file(path):
            return "", FolderProblem(
                path,
                0,
                f"a link to {target}, outside the memory folder and not a .md file: not shown as a memory, "
                "and keepgui never writes through it",
                LINK_OUT,
            )
        try:
            st = os.stat(path)
        except OSError as exc:
            return "", FolderProblem(
                path, 0, f"a link to {target}, which cannot be read: {exc.strerror or exc}", UNREADABLE
            )
    if not stat.S_ISREG(st.st_mode):
        return "", FolderProblem(path, 0, f"{file_kind(st.st_mode)}, not a memory file: skipped unread", NOT_A_FILE)
    if st.st_size > TOPIC_LIMIT:
        return "", _too_big(path, st.st_size)
    return path, None


# ---------------------------------------------------------------------- topic files


@dataclass(frozen=True)
class TopicFile:
    """One memory: a ``*.md`` file of the memory folder other than the index.

    ``rel`` is its path relative to the folder (``/``-separated); ``name``,
    ``description`` and ``type`` come from its front matter (``type`` from
    ``metadata.type`` or a flat ``type``); ``body`` is the text after the front
    matter; ``front`` the parsed front matter (``{}`` when none or
    unreadable); ``problem`` why the front matter could not be read; ``stamp``
    what was read; ``mtime_ms`` when it last changed; ``text`` the whole file
    as read (front matter included); ``issues`` every problem found in it
    (front matter, bytes that are not UTF-8); ``read_only`` why keepgui will
    not rewrite it ("" when it may).
    """

    rel: str
    path: str
    name: str
    description: str
    type: str
    body: str
    front: dict[str, Any]
    stamp: fsio.Stamp
    mtime_ms: int
    problem: str = ""
    links: tuple[str, ...] = ()
    text: str = ""
    issues: tuple[FolderProblem, ...] = ()
    read_only: str = ""

    @property
    def title(self) -> str:
        """What a list shows: the name, else the file name without ``.md``."""
        return self.name or os.path.splitext(os.path.basename(self.rel))[0]


_WIKI_LINK = re.compile(r"\[\[([^\[\]\n|#]+)(?:[|#][^\[\]\n]*)?\]\]")


def parse_topic(rel: str, path: str, data: bytes, stamp: fsio.Stamp) -> TopicFile:
    """A topic file from its bytes (front matter read leniently: a problem is reported, not raised)."""
    text = decode(data)
    front = split_front_matter(text)
    obj: dict[str, Any] = {}
    problem = ""
    issues: list[FolderProblem] = []
    read_only = ""
    bad = utf8_error(data)
    if bad is not None:
        offset, line = bad
        read_only = (
            f"not valid UTF-8 (byte {offset:,}, line {line}): shown with replacement characters; keepgui does "
            "not rewrite it, so no byte is lost"
        )
        issues.append(FolderProblem(path, line, read_only, NOT_UTF8))
    if front.yaml is not None:
        try:
            loaded = yaml.load(front.yaml, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 2 if mark is not None else 0  # the block starts on the file's line 2
            where = f" (line {line})" if line else ""
            problem = f"{path}: the front matter is not valid YAML{where}"
            started = getattr(exc, "context_mark", None)
            what = str(getattr(exc, "problem", "") or "")
            context = str(getattr(exc, "context", "") or "")
            if started is not None and context:
                what += f", {context} from line {started.line + 2}"
            issues.append(
                FolderProblem(
                    path,
                    line,
                    f"the front matter is not valid YAML{': ' + what if what else ''}; name, description and type unread",
                    BAD_FRONT_MATTER,
                )
            )
        else:
            if isinstance(loaded, dict):
                obj = loaded
            elif loaded is not None:
                problem = f"{path}: the front matter is not a mapping of keys"
                issues.append(FolderProblem(path, 2, "the front matter is not a mapping of keys", BAD_FRONT_MATTER))
    elif text.split("\n", 1)[0].rstrip(JS_WHITESPACE) == "---":
        problem = f"{path}: the front matter opened on line 1 is never closed"
        issues.append(
            FolderProblem(
                path,
                1,
                "the front matter opened here is never closed (no second ---): read as body text",
                BAD_FRONT_MATTER,
            )
        )
    metadata = obj.get("metadata")
    kind = metadata.get("type") if isinstance(metadata, dict) else None
    if kind is None:
        kind = obj.get("type")
    return TopicFile(
        rel,
        path,
        _scalar(obj.get("name")),
        _scalar(obj.get("description")),
        _scalar(kind),
        front.body,
        obj,
        stamp,
        stamp.mtime_ns // 1_000_000,
        problem,
        tuple(dict.fromkeys(m.group(1).strip() for m in _WIKI_LINK.finditer(front.body))),
        text,
        tuple(issues),
        read_only,
    )


def _scalar(value: object) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    return str(value).strip()


SETTLED_NS = 3_000_000_000
"""A file whose time is this much older than when it was read cannot have changed since without its
time (or size) changing too, even where a file system keeps times to the second or two."""


def topic_files(folder: str, previous: MemoryFolder | None = None) -> tuple[list[TopicFile], list[FolderProblem]]:
    """Every topic file of a memory folder (recursively, as recall reads them; ``team/`` and the
    index excluded), sorted by path, and the ``*.md`` files that could not be taken as topic files
    (a FIFO or device, a link out of the folder, one over :data:`TOPIC_LIMIT`...), each with why.

    Folders are not followed through links (a link loop ends nowhere). With ``previous`` (the folder
    read earlier), a file whose size and time are what they were then, and whose time was settled
    when it was read (:data:`SETTLED_NS`), is taken from it unread.
    """
    known = {t.rel: t for t in previous.topics} if previous is not None else {}
    settled = previous.read_at_ns - SETTLED_NS if previous is not None else 0
    out: list[TopicFile] = []
    problems: list[FolderProblem] = []
    if not os.path.isdir(folder):
        return out, problems
    for base, dirs, files in os.walk(folder):
        rel_base = os.path.relpath(base, folder)
        dirs[:] = sorted(d for d in dirs if not (rel_base == "." and d == TEAM_DIR))
        for name in sorted(files):
            if not name.endswith(".md") or name == INDEX_NAME or fsio.is_temp_name(name):
                continue
            pace.checkpoint()  # a file a step: a window's paint does not wait behind 5,000 of them
            path = os.path.join(base, name)
            rel = os.path.normpath(os.path.join(rel_base, name)).replace(os.sep, "/")
            if not utf8_name(path):  # keepgui's history, JSON and the window all need text names
                problems.append(
                    FolderProblem(
                        shown_name(path),
                        0,
                        "its name is not valid UTF-8 (bad bytes shown as \\x..): skipped unread; rename it",
                        BAD_NAME,
                    )
                )
                continue
            readable, refused = check_entry(folder, path)
            if refused is not None:  # named, never read: nothing blocks, nothing outside is shown
                problems.append(refused)
                continue
            seen = known.get(rel)
            if seen is not None and seen.stamp.mtime_ns < settled:
                try:
                    st = os.stat(path)
                except OSError:
                    st = None
                if st is not None and (st.st_size, st.st_mtime_ns) == (seen.stamp.size, seen.stamp.mtime_ns):
                    out.append(seen)
                    continue
            try:
                data, stamp = fsio.read_stamped(readable, limit=TOPIC_LIMIT)
            except KeepguiError as exc:  # it changed into a FIFO or grew past the limit since the check
                problems.append(
                    FolderProblem(path, 0, str(exc).removeprefix(path + " ").removeprefix(path + ": "), UNREADABLE)
                )
                continue
            except OSError as exc:
                problems.append(FolderProblem(path, 0, f"cannot be read: {exc.strerror or exc}", UNREADABLE))
                continue
            if data is None:
                continue
            out.append(parse_topic(rel, path, data, stamp))
    return out, problems


# ---------------------------------------------------------------------- the index


@dataclass(frozen=True)
class IndexEntry:
    """One line of ``MEMORY.md`` that links to a topic file.

    ``line`` is its 1-based line in the file; ``text`` the whole line;
    ``title`` the link text, ``target`` the linked file (relative to the
    folder, ``/``-separated), ``hook`` what follows the link; ``loaded``
    whether the next session sees it (``partial``: only its start);
    ``exists`` whether the target file is there.
    """

    line: int
    text: str
    title: str
    target: str
    hook: str
    loaded: bool
    exists: bool
    partial: bool = False

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``."""
        return {
            "line": self.line,
            "text": self.text,
            "title": self.title,
            "target": self.target,
            "hook": self.hook,
            "loaded": self.loaded,
            "partial": self.partial,
            "exists": self.exists,
        }


def parse_link_line(line: str) -> tuple[str, str, str] | None:
    """``(title, target, hook)`` of an index line linking to a relative ``.md`` file, else None."""
    match = _LINK.search(line)
    if match is None:
        return None
    target = unquote(match.group(2))
    if "://" in target or target.startswith(("/", "#")) or "\0" in target:
        return None  # a NUL byte (even as %00): no file has such a name (index_problems says so)
    hook = _HOOK_SEPARATOR.sub("", line[match.end() :]).strip()
    title = match.group(1).replace("\\", "")
    return title, os.path.normpath(target).replace(os.sep, "/"), hook


@dataclass(frozen=True)
class MemoryIndex:
    """A read ``MEMORY.md``: its bytes' stamp, its text, the prepared text, the cut and the entries.

    ``exists`` is False for a folder without a readable index (``cut`` is then None; ``problem``
    says why when it is there but cannot be read). ``issues`` are its problems (unreadable, a link
    out of the folder, bytes that are not UTF-8); ``read_only`` why keepgui will not rewrite it.
    """

    path: str
    exists: bool
    stamp: fsio.Stamp
    text: str
    prepared: Prepared | None
    cut: IndexCut | None
    entries: tuple[IndexEntry, ...]
    size: int = 0
    problem: str = ""
    issues: tuple[FolderProblem, ...] = ()
    read_only: str = ""

    @property
    def injected(self) -> str | None:
        """The text the reminder carries for the index (None when it is not injected: missing or empty)."""
        if self.cut is None or not self.prepared or not self.prepared.text:
            return None
        return self.cut.injected

    @property
    def cut_file_line(self) -> int | None:
        """The 1-based line of the file where the cut starts (None when nothing is cut)."""
        if self.cut is None or not self.cut.cut or self.prepared is None:
            return None
        kept = self.prepared.text.split("\n")[: self.cut.kept_lines]
        offset = sum(len(line) + 1 for line in kept) + (self.cut.kept_units if self.cut.partial else 0)
        return self.prepared.raw_line(min(offset, len(self.prepared.text)))

    @property
    def lines(self) -> int:
        """Physical lines of the file."""
        if not self.text:
            return 0
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)


def read_index(folder: str, topic_names: set[str] | None = None) -> MemoryIndex:
    """Read and cut the index of a memory folder; ``topic_names`` (relative paths) mark which
    entries point at an existing file (None: check the disk)."""
    path = os.path.join(folder, INDEX_NAME)
    try:
        data, stamp = fsio.read_stamped(path, limit=TOPIC_LIMIT)
    except (OSError, KeepguiError) as exc:
        # the CLI skips an index it cannot read (a FIFO, over 4 MiB...); so does the preview, saying why
        why = str(exc) if isinstance(exc, KeepguiError) else f"{path}: {exc.strerror or exc}"
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and st.st_size > TOPIC_LIMIT and stat.S_ISREG(st.st_mode):
            issue = _too_big(path, st.st_size)
        elif st is not None and not stat.S_ISREG(st.st_mode):
            issue = FolderProblem(
                path, 0, f"{file_kind(st.st_mode)}, not a file: the CLI skips it, so does keepgui", NOT_A_FILE
            )
        else:
            issue = FolderProblem(path, 0, why.removeprefix(path + ": "), UNREADABLE)
        return MemoryIndex(path, False, fsio.Stamp.missing(), "", None, None, (), problem=why, issues=(issue,))
    if data is None:
        return MemoryIndex(path, False, stamp, "", None, None, ())
    issues: list[FolderProblem] = []
    read_only = ""
    if (
        os.path.islink(path)
        and not inside(os.path.realpath(folder), os.path.realpath(path))
        and not linked_memory_file(path)
    ):
        # the CLI follows it and loads it, so the preview shows it; keepgui never writes through it
        read_only = f"a link to {os.path.realpath(path)}, outside the memory folder: keepgui never writes through it"
        issues.append(FolderProblem(path, 0, read_only + " (the CLI loads it, so it is shown)", LINK_OUT))
    bad = utf8_error(data)
    if bad is not None:
        read_only = (
            f"not valid UTF-8 (byte {bad[0]:,}, line {bad[1]}): the CLI reads each bad byte as U+FFFD, as shown; "
            "keepgui does not rewrite it, so no byte is lost"
        )
        issues.append(FolderProblem(path, bad[1], read_only, NOT_UTF8))
    text = decode(data)
    prepared = Prepared(text)
    cut = cut_index(prepared.text) if prepared.text else None
    entries = []
    lines = prepared.text.split("\n") if prepared.text else []
    raw_lines: list[str] | None = None
    offset = 0
    for number, line in enumerate(lines):
        parsed = parse_link_line(line)
        if parsed is not None:
            title, target, hook = parsed
            loaded = cut is None or number < cut.kept_lines
            partial = bool(cut and cut.partial and number == cut.kept_lines)
            exists = (
                (target in topic_names) if topic_names is not None else os.path.isfile(os.path.join(folder, target))
            )
            raw_line = prepared.raw_line(offset)
            if raw_lines is None:
                raw_lines = text.split("\n")  # once: an index has hundreds of entries
            entries.append(
                IndexEntry(
                    raw_line,
                    raw_lines[raw_line - 1].rstrip("\r") if 0 < raw_line <= len(raw_lines) else "",
                    title,
                    target,
                    hook,
                    loaded or partial,
                    exists,
                    partial,
                )
            )
        offset += len(line) + 1
    return MemoryIndex(path, True, stamp, text, prepared, cut, tuple(entries), len(data), "", tuple(issues), read_only)


@dataclass(frozen=True)
class Orphans:
    """What does not line up between the index and the files.

    ``dangling``: index entries whose file is missing; ``unindexed``: topic
    files no index line points at (not visible at session start).
    """

    dangling: tuple[IndexEntry, ...] = ()
    unindexed: tuple[str, ...] = ()


def orphans(index: MemoryIndex, topics: list[TopicFile]) -> Orphans:
    """Orphans both ways (see :class:`Orphans`)."""
    linked = {e.target for e in index.entries}
    return Orphans(tuple(e for e in index.entries if not e.exists), tuple(t.rel for t in topics if t.rel not in linked))


@dataclass(frozen=True)
class MemoryFolder:
    """A memory folder read whole: index, topic files, orphans, lock, problems."""

    path: str
    index: MemoryIndex
    topics: tuple[TopicFile, ...]
    orphans: Orphans
    problems: tuple[FolderProblem, ...] = ()
    has_team: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    read_at_ns: int = 0

    def topic(self, rel: str) -> TopicFile | None:
        """The topic file at ``rel``, or None."""
        return next((t for t in self.topics if t.rel == rel), None)

    def counts(self, listed: int | None = None) -> str:
        """The sidebar's line: ``41 memories · index 230 lines · 30 not loaded``. ``listed``: the
        memories the table lists (index lines without their file among them: said apart)."""
        n = len(self.topics) if listed is None else listed
        parts = [f"{n} {'memory' if n == 1 else 'memories'}"]
        if listed is not None and listed > len(self.topics):
            extra = listed - len(self.topics)
            parts.append(f"{extra} without {'its file' if extra == 1 else 'their files'}")
        if self.index.exists:
            parts.append(f"index {self.index.lines} {'line' if self.index.lines == 1 else 'lines'}")
            cut = self.index.cut
            if cut is not None and cut.cut:
                hidden = sum(1 for e in self.index.entries if not e.loaded or e.partial)
                parts.append(f"{hidden or cut.lines - cut.kept_lines} not loaded")
        elif self.index.problem:  # there, but it could not be read: say why, not "no index"
            why = self.index.issues[0].message if self.index.issues else self.index.problem
            parts.append(f"index not read ({why})")
        else:
            parts.append("no index")
        if self.problems:
            parts.append(f"{len(self.problems)} {'problem' if len(self.problems) == 1 else 'problems'}")
        return " · ".join(parts)


def read_folder(folder: str, previous: MemoryFolder | None = None) -> MemoryFolder:
    """Read a memory folder (index, topics, orphans, problems); never raises for a missing folder. With
    ``previous``, topic files unchanged since it was read are not read again (see :func:`topic_files`)."""
    read_at = time.time_ns()
    topics, problems = topic_files(folder, previous if previous is not None and previous.path == folder else None)
    index = read_index(folder, {t.rel for t in topics})
    refused = {p.path: p for p in problems}
    for topic in topics:
        problems.extend(topic.issues)
    problems.extend(index.issues)
    problems.extend(index_problems(folder, index, refused))
    return MemoryFolder(
        folder,
        index,
        tuple(topics),
        orphans(index, topics),
        tuple(problems),
        os.path.isdir(os.path.join(folder, TEAM_DIR)),
        read_at_ns=read_at,
    )


_ANY_LINK = re.compile(r"\[(?:[^\[\]\\]|\\.)*\]\(\s*<?([^()<>\s]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def index_problems(folder: str, index: MemoryIndex, refused: Mapping[str, FolderProblem]) -> list[FolderProblem]:
    """The index lines that point outside the memory folder or at a file keepgui could not take
    (``refused``: path -> why), flagged (the line stays: the CLI injects the index as it is)."""
    out: list[FolderProblem] = []
    if not index.text:
        return out
    real = os.path.realpath(folder)
    resolved: dict[str, str] = {}  # an index of 60,000 lines resolves each path once, not each line

    def realpath(path: str) -> str:
        if path not in resolved:
            inner = os.path.dirname(path) == os.path.normpath(folder) and not os.path.islink(path)
            resolved[path] = os.path.join(real, os.path.basename(path)) if inner else os.path.realpath(path)
        return resolved[path]

    for number, line in enumerate(index.text.split("\n"), 1):
        if "](" not in line:
            continue  # no link can be on it (a fast look before the pattern)
        for match in _ANY_LINK.finditer(line):
            target = unquote(match.group(1)).split("#", 1)[0]
            if not target or "://" in target or target.startswith(("mailto:", "#")):
                continue
            if "\0" in target:
                shown = target.replace("\0", "\\0")
                message = f"links to {shown}, a name with a NUL byte, which no file can have; the line is kept as it is"
                out.append(FolderProblem(index.path, number, message, INDEX_NOT_A_FILE))
                continue
            path = os.path.normpath(os.path.join(folder, target))
            linked_out = not inside(real, realpath(path)) and not linked_memory_file(path)
            if not inside(os.path.normpath(folder), path) or linked_out:
                out.append(
                    FolderProblem(
                        index.path,
                        number,
                        f"links to {target}, outside the memory folder (resolves to {realpath(path)}): "
                        "not a memory; the line is kept as it is",
                        INDEX_LINK_OUT,
                    )
                )
            elif path in refused:
                why = refused[path]
                out.append(
                    FolderProblem(
                        index.path,
                        number,
                        f"links to {target}, which keepgui cannot take as a memory: {why.message}",
                        INDEX_NOT_A_FILE,
                    )
                )
            elif os.path.isdir(path):
                out.append(
                    FolderProblem(
                        index.path, number, f"links to {target}, a folder, not a memory file", INDEX_NOT_A_FILE
                    )
                )
    return out
