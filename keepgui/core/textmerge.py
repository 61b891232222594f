"""A real three-way merge of a document: what you opened, what is on disk now, and your edits (no Qt).

When a save is refused because someone else changed the file since it was
opened, the three-way view can merge instead of choosing a side: the changes
from *opened → on disk* and from *opened → your edits* are combined; where both
changed the same lines, the conflict is marked in the text as the tools mark it::

    <<<<<<< your edits
    … your lines …
    =======
    … the lines on disk now …
    >>>>>>> on disk now

The merge is done by ``git merge-file`` (or, without git, ``diff3 -m`` from
GNU diffutils): maintained tools whose handling of the cases a hand-written
merger gets wrong (adjacent changes, changes at the ends, identical changes on
both sides, missing final newlines) is tested by years of use. The three
texts are handed to it in a private temporary folder, written through
:mod:`keepgui.core.fsio` and removed afterwards; the user's file is not touched.

The tools stop at the most common case of a memory file, a list of entries:
each side added different lines at the same place (both appended an entry).
Asked for each conflict's base lines too, the merge settles those itself: where
neither side removed or changed a line of the base, both sides' lines are kept,
in the order they were added — the disk's first (it was saved before your
edits), then yours; an addition both made alike is kept once. Only the other
conflicts are marked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from difflib import SequenceMatcher

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

MINE, BASE, THEIRS = "your edits", "what you opened", "on disk now"
"""The labels of the three versions, as the conflict markers name them."""

_CONFLICT = re.compile(r"^<{7} .*?$.*?^>{7} .*?$\n?", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Merged:
    """The merged text, how many conflicts it marks, and the tool that merged it."""

    text: str
    conflicts: int
    tool: str


def merge_tool() -> str | None:
    """The merge command available here (``git merge-file`` or ``diff3``), or None."""
    if shutil.which("git"):
        return "git merge-file"
    if shutil.which("diff3"):
        return "diff3"
    return None


def why_no_merge() -> str:
    """Why merging is not possible here ("" when it is)."""
    if merge_tool() is not None:
        return ""
    return "merging needs git (git merge-file) or GNU diffutils (diff3); neither is installed"


def merge3(base: str, theirs: str, mine: str) -> Merged:
    """Merge opened → on disk (``theirs``) and opened → your edits (``mine``), starting from ``base``."""
    tool = merge_tool()
    if tool is None:
        raise KeepguiError(why_no_merge())
    folder = tempfile.mkdtemp(prefix="keepgui-merge-")
    try:
        paths = {}
        for name, text in (("mine", mine), ("base", base), ("theirs", theirs)):
            paths[name] = os.path.join(folder, name)
            fsio.atomic_write(paths[name], text.encode("utf-8", "surrogatepass"))
        labels = ["-L", MINE, "-L", BASE, "-L", THEIRS]
        files = [paths["mine"], paths["base"], paths["theirs"]]
        if tool == "git merge-file":
            argv = ["git", "merge-file", "-p", "--diff3", *labels, *files]
        else:
            argv = ["diff3", "-m", "-A", *labels, *files]  # -A: every conflict with its base lines
        done = subprocess.run(argv, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KeepguiError(f"the merge could not run: {exc}") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # git merge-file exits with the number of conflicts (negative: an error); diff3 with 0, 1 or 2 (trouble).
    failed = done.returncode < 0 or (tool == "diff3" and done.returncode > 1)
    if failed:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise KeepguiError(f"{tool} failed: {why[-1] if why else f'exit {done.returncode}'}")
    text, conflicts = _settle(done.stdout.decode("utf-8", "surrogateescape"))
    return Merged(text, conflicts, tool)


_HUNK = re.compile(
    r"^<{7} (?P<first>[^\n]*)\n(?P<a>(?:.*?\n)??)(?:\|{7} [^\n]*\n(?P<base>(?:.*?\n)??))?={7}\n(?P<b>(?:.*?\n)??)>{7} [^\n]*(?:\n|\Z)",
    re.MULTILINE | re.DOTALL,
)


def _settle(text: str) -> tuple[str, int]:
    """The tool's output with base sections (``--diff3`` / ``-A``) as the merge shows it: additions on
    both sides kept, an identical change taken once, the other conflicts marked mine / theirs."""
    out: list[str] = []
    conflicts = 0
    last = 0
    for hunk in _HUNK.finditer(text):
        out.append(text[last : hunk.start()])
        last = hunk.end()
        if hunk["first"] == BASE and hunk["base"] is None:
            out.append(hunk["b"])  # diff3 -A: the same change on both sides, from the base lines in "a"
            continue
        mine, base, theirs = hunk["a"], hunk["base"] or "", hunk["b"]
        both = _both_added(base, theirs, mine)
        if both is not None:
            out.append(both)
            continue
        conflicts += 1
        out.append(f"<<<<<<< {MINE}\n{mine}=======\n{theirs}>>>>>>> {THEIRS}\n")
    out.append(text[last:])
    return "".join(out), conflicts


def _insertions(base: list[str], side: list[str]) -> dict[int, list[str]] | None:
    """The lines ``side`` inserted before each base line (``len(base)``: at the end), or None when it
    removed or changed any line of the base."""
    added: dict[int, list[str]] = {}
    matcher = SequenceMatcher(None, [line.rstrip("\r\n") for line in base], [line.rstrip("\r\n") for line in side])
    for op, i1, _i2, j1, j2 in matcher.get_opcodes():
        if op == "insert":
            added[i1] = side[j1:j2]
        elif op != "equal":
            return None
    return added


def _both_added(base: str, first: str, second: str) -> str | None:
    """The lines of one conflict when both sides only added lines: the base with ``first``'s additions
    and then ``second``'s at each place (one addition made alike, or contained in the other, once)."""
    base_lines = base.splitlines(keepends=True)
    one = _insertions(base_lines, first.splitlines(keepends=True))
    two = _insertions(base_lines, second.splitlines(keepends=True))
    if one is None or two is None:
        return None
    lines: list[str] = []
    for at in range(len(base_lines) + 1):
        a, b = one.get(at, []), two.get(at, [])
        if b[: len(a)] == a:
            lines.extend(b)
        elif a[: len(b)] == b:
            lines.extend(a)
        else:
            lines.extend(a + b)
        if at < len(base_lines):
            lines.append(base_lines[at])
    newline = "\r\n" if "\r\n" in base + first + second else "\n"
    return "".join(line if line.endswith("\n") else line + newline for line in lines)


def conflict_spans(text: str) -> list[tuple[int, int]]:
    """The character ranges ``(start, end)`` of the conflicts marked in ``text`` (markers included)."""
    if "<<<<<<< " not in text:
        return []
    return [(m.start(), m.end()) for m in _CONFLICT.finditer(text)]
