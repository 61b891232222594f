"""ARCHITECTURE.md stays true: its house lists every module of ``keepgui/`` with its one line, and
names no module that is not there."""

from __future__ import annotations

import os

from tests.conftest import ROOT


def listed_modules() -> dict[str, str]:
    """``path -> its line`` for every file the house (the first code block after "## The house") lists."""
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("## The house", 1)[1].split("```", 2)[1]
    out: dict[str, str] = {}
    folders: list[tuple[int, str]] = []
    for line in block.splitlines():
        stripped = line.strip()
        if not stripped or (not line.startswith(" ") and not stripped.startswith("keepgui/")):
            folders = folders if line.startswith(" ") else []
            continue
        indent = len(line) - len(line.lstrip())
        name, _, what = stripped.partition(" ")
        folders = [(i, f) for i, f in folders if i < indent]
        if name.endswith("/"):
            folders.append((indent, name))
            continue
        path = "".join(f for _i, f in folders) + name
        out[path] = what.strip()
    return out


def test_the_house_lists_every_module_with_its_line():
    listed = listed_modules()
    actual = set()
    for folder, dirs, files in os.walk(os.path.join(ROOT, "keepgui")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                actual.add(os.path.relpath(os.path.join(folder, name), ROOT).replace(os.sep, "/"))
    required = {p for p in actual if not p.endswith("/__init__.py") or p.count("/") == 3}  # a backend's entry
    missing = sorted(required - set(listed))
    gone = sorted(set(listed) - actual)
    assert (missing, gone) == ([], [])
    assert all(listed[path] for path in listed), [p for p in listed if not listed[p]]  # each has its line
