"""Unified diffs as Gemini CLI's Auto Memory inbox parses and applies them (no Qt).

Gemini uses the ``diff`` package (jsdiff): ``parsePatch`` and ``applyPatch`` with no fuzz. This module
reproduces their behaviour on the cases Gemini relies on:

* parsing — a patch is a list of file sections (``---`` / ``+++`` headers, optional ``Index:`` /
  ``diff`` lines, tab-separated header times ignored, quoted names unquoted, a leading ``a/`` or ``b/``
  stripped by Gemini afterwards); a hunk's line counts must match its header, an empty line inside a
  hunk is a context line, a line of any other shape is an error;
* applying — each hunk is tried at its header's line (shifted by the previous hunk's offset), then one
  line below, one above, two below… within the file; every context and removed line must match exactly;
  trailing context is not consumed; ``\\ No newline at end of file`` after the last hunk's ``+`` or ``-``
  line removes or adds the file's final newline; a patch with LF lines applied to a CRLF file (or the
  reverse) is converted first. A hunk that fits nowhere: the patch does not apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """The patch cannot be parsed (the message is jsdiff's)."""


@dataclass
class Hunk:
    """One hunk: its header numbers and its lines (each with its ``+``, ``-``, space or ``\\``)."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: list[str] = field(default_factory=list)


@dataclass
class FilePatch:
    """One file's section of a patch: its old and new names and its hunks."""

    old_name: str | None = None
    new_name: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def parse_patch(text: str) -> list[FilePatch]:
    """jsdiff's ``parsePatch``: every file section of ``text``; :class:`PatchError` on a malformed hunk."""
    lines = text.split("\n")
    out: list[FilePatch] = []
    i = 0

    def header(patch: FilePatch) -> None:
        nonlocal i
        if i >= len(lines):
            return
        match = re.match(r"^(---|\+\+\+)\s+", lines[i])
        if not match:
            return
        data = lines[i][3:].strip().split("\t", 1)
        name = data[0].replace("\\\\", "\\")
        if len(name) >= 2 and name.startswith('"') and name.endswith('"'):
            name = name[1:-1]
        if match.group(1) == "---":
            patch.old_name = name
        else:
            patch.new_name = name
        i += 1

    def hunk() -> Hunk:
        nonlocal i
        at = i
        found = _HUNK.search(lines[i])
        i += 1
        if found is None:
            # jsdiff reads the numbers as NaN and then fails the counts
            raise PatchError(f"Added line count did not match for hunk at line {at + 1}")
        h = Hunk(
            int(found.group(1)),
            1 if found.group(2) is None else int(found.group(2)),
            int(found.group(3)),
            1 if found.group(4) is None else int(found.group(4)),
        )
        if h.old_lines == 0:
            h.old_start += 1
        if h.new_lines == 0:
            h.new_start += 1
        added = removed = 0
        while i < len(lines) and (removed < h.old_lines or added < h.new_lines or lines[i].startswith("\\")):
            op = " " if (not lines[i] and i != len(lines) - 1) else (lines[i][:1] or "")
            if op not in ("+", "-", " ", "\\"):
                raise PatchError(f"Hunk at line {at + 1} contained invalid line {lines[i]}")
            h.lines.append(lines[i])
            if op == "+":
                added += 1
            elif op == "-":
                removed += 1
            elif op == " ":
                added += 1
                removed += 1
            i += 1
        if not added and h.new_lines == 1:
            h.new_lines = 0
        if not removed and h.old_lines == 1:
            h.old_lines = 0
        if added != h.new_lines:
            raise PatchError(f"Added line count did not match for hunk at line {at + 1}")
        if removed != h.old_lines:
            raise PatchError(f"Removed line count did not match for hunk at line {at + 1}")
        return h

    while i < len(lines):
        patch = FilePatch()
        out.append(patch)
        while i < len(lines) and not re.match(r"^(---|\+\+\+|@@)\s", lines[i]):
            i += 1
        header(patch)
        header(patch)
        while i < len(lines):
            line = lines[i]
            if re.match(
                r"^(Index:\s|diff\s|---\s|\+\+\+\s|===================================================================)",
                line,
            ):
                break
            if line.startswith("@@"):
                patch.hunks.append(hunk())
            elif line:
                raise PatchError(f"Unknown line {i + 1} {line!r}")
            else:
                i += 1
    return out


def _only_crlf(text: str) -> bool:
    return "\r\n" in text and not text.startswith("\n") and re.search(r"[^\r]\n", text) is None


def _only_lf(text: str) -> bool:
    return "\r\n" not in text and "\n" in text


def _is_unix(patch: FilePatch) -> bool:
    return not any(not ln.startswith("\\") and ln.endswith("\r") for h in patch.hunks for ln in h.lines)


def _is_win(patch: FilePatch) -> bool:
    has_cr = any(ln.endswith("\r") for h in patch.hunks for ln in h.lines)
    every = all(
        ln.startswith("\\") or ln.endswith("\r") or (k + 1 < len(h.lines) and h.lines[k + 1].startswith("\\"))
        for h in patch.hunks
        for k, ln in enumerate(h.lines)
    )
    return has_cr and every


def _converted(patch: FilePatch, to_win: bool) -> FilePatch:
    hunks = []
    for h in patch.hunks:
        lines = []
        for k, ln in enumerate(h.lines):
            if to_win:
                keep = (
                    ln.startswith("\\")
                    or ln.endswith("\r")
                    or (k + 1 < len(h.lines) and h.lines[k + 1].startswith("\\"))
                )
                lines.append(ln if keep else ln + "\r")
            else:
                lines.append(ln.removesuffix("\r"))
        hunks.append(Hunk(h.old_start, h.old_lines, h.new_start, h.new_lines, lines))
    return FilePatch(patch.old_name, patch.new_name, hunks)


def _positions(start: int, low: int, high: int) -> list[int]:
    """Where a hunk is tried: its own line, then one below, one above, two below…, within [low, high]."""
    out = [start]
    step = 1
    forward_done = backward_done = False
    while not (forward_done and backward_done):
        if not forward_done:
            if start + step <= high:
                out.append(start + step)
            else:
                forward_done = True
        if not backward_done:
            if low <= start - step:
                out.append(start - step)
            else:
                backward_done = True
        step += 1
    return out


def _fit(lines: list[str], hunk: Hunk, at: int) -> tuple[list[str], int] | None:
    """The hunk's result lines and the last old line it used, when it fits at ``at`` (no fuzz)."""
    out: list[str] = []
    pos = at
    trailing = 0

    def line(k: int) -> str | None:
        return lines[k] if 0 <= k < len(lines) else None

    for text in hunk.lines:
        op, content = (text[0], text[1:]) if text else (" ", "")
        if op == "-":
            if line(pos) != content:
                return None
            pos += 1
            trailing = 0
        elif op == "+":
            out.append(content)
            trailing = 0
        elif op == " ":
            if line(pos) != content:
                return None
            out.append(content)
            pos += 1
            trailing += 1
    if trailing:
        out = out[:-trailing]
        pos -= trailing
    return out, pos - 1


def apply_patch(source: str, patch: FilePatch) -> str | None:
    """jsdiff's ``applyPatch(source, patch)`` with no fuzz: the patched text, or None when it does not apply."""
    if _only_crlf(source) and _is_unix(patch):
        patch = _converted(patch, True)
    elif _only_lf(source) and _is_win(patch):
        patch = _converted(patch, False)
    lines = source.split("\n")
    if not patch.hunks:
        return source
    remove_eofnl = add_eofnl = False
    previous = ""
    for text in patch.hunks[-1].lines:
        if text[:1] == "\\":
            if previous[:1] == "+":
                remove_eofnl = True
            elif previous[:1] == "-":
                add_eofnl = True
        previous = text
    if remove_eofnl:
        if add_eofnl:
            if lines[-1] == "":
                return None
        elif lines[-1] == "":
            lines.pop()
        else:
            return None
    elif add_eofnl:
        if lines[-1] != "":
            lines.append("")
        else:
            return None
    result: list[str] = []
    low = 0
    offset = 0
    for hunk in patch.hunks:
        high = len(lines) - hunk.old_lines
        start = hunk.old_start + offset - 1
        fitted = None
        for at in _positions(start, low, high):
            fitted = _fit(lines, hunk, at)
            if fitted is not None:
                break
        if fitted is None:
            return None
        new_lines, last = fitted
        # an add-only hunk may sit past the end: JavaScript joins the missing lines as empty strings
        result.extend(lines[k] if 0 <= k < len(lines) else "" for k in range(low, at))
        result.extend(new_lines)
        low = last + 1
        offset = at + 1 - hunk.old_start
    result.extend(lines[low:])
    return "\n".join(result)
