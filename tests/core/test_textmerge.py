"""The three-way view's Merge (#16.15): git merge-file (or diff3) combines opened → disk and
opened → mine; conflicts are marked with the versions' names; nothing is left behind."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from keepgui.core import textmerge
from keepgui.core.errors import KeepguiError
from keepgui.core.textmerge import MINE, THEIRS, conflict_spans, merge3

BASE = "# Style\n\nWrite formally.\n\n- Use metric units.\n- Dates as YYYY-MM-DD.\n"


def _leftovers() -> list[str]:
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("keepgui-merge-")]


@pytest.fixture(params=["git merge-file", "diff3"])
def tool(request, monkeypatch):
    """Each merge tool in turn (diff3: as if git were not installed)."""
    if request.param == "diff3":
        real = shutil.which
        monkeypatch.setattr(textmerge.shutil, "which", lambda name: None if name == "git" else real(name))
    if textmerge.merge_tool() != request.param:
        pytest.skip(f"{request.param} is not installed")
    return request.param


def test_changes_to_different_lines_merge_cleanly(tool):
    disk = BASE.replace("Write formally.", "Write formally, in short paragraphs.")
    mine = BASE + "- Prefer concrete examples.\n"
    merged = merge3(BASE, disk, mine)
    assert merged.tool == tool and merged.conflicts == 0
    assert merged.text == disk + "- Prefer concrete examples.\n"
    assert _leftovers() == []


def test_the_same_change_on_both_sides_is_no_conflict(tool):
    both = BASE.replace("metric", "SI")
    assert merge3(BASE, both, both) == textmerge.Merged(both, 0, tool)


def test_changes_to_the_same_line_are_marked(tool):
    disk = BASE.replace("Write formally.", "Write casually.")
    mine = BASE.replace("Write formally.", "Write formally but warmly.")
    merged = merge3(BASE, disk, mine)
    assert merged.conflicts == 1
    assert f"<<<<<<< {MINE}\nWrite formally but warmly.\n" in merged.text
    assert f"Write casually.\n>>>>>>> {THEIRS}\n" in merged.text
    assert merged.text.startswith("# Style\n\n") and merged.text.endswith("- Dates as YYYY-MM-DD.\n")
    [(start, end)] = conflict_spans(merged.text)
    assert merged.text[start:].startswith("<<<<<<< ") and merged.text[:end].endswith(f">>>>>>> {THEIRS}\n")
    assert conflict_spans(BASE) == []
    assert _leftovers() == []


def test_without_a_merge_tool_it_says_what_to_install(monkeypatch):
    monkeypatch.setattr(textmerge.shutil, "which", lambda name: None)
    assert "git" in textmerge.why_no_merge() and "diff3" in textmerge.why_no_merge()
    with pytest.raises(KeepguiError, match="needs git"):
        merge3(BASE, BASE, BASE)
