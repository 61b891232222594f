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
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

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
            argv = ["git", "merge-file", "-p", *labels, *files]
        else:
            argv = ["diff3", "-m", "-E", *labels, *files]  # -E: an identical change on both sides is no conflict
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
    text = done.stdout.decode("utf-8", "surrogateescape")
    return Merged(text, len(conflict_spans(text)), tool)


def conflict_spans(text: str) -> list[tuple[int, int]]:
    """The character ranges ``(start, end)`` of the conflicts marked in ``text`` (markers included)."""
    if "<<<<<<< " not in text:
        return []
    return [(m.start(), m.end()) for m in _CONFLICT.finditer(text)]
