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


KEEP = "# Facts\n\n- The build runs on 2 cores.\n- Releases are tagged vX.Y.\n"


def test_each_side_appending_an_entry_keeps_both_disk_first(tool):
    """#23.6: the most common conflict of a memory file — both appended a different entry — keeps both,
    in the order they were added (the disk's was saved first), and marks nothing."""
    disk = KEEP + "- The demo has six banks.\n"
    mine = KEEP + "- Tests run offscreen.\n- Lint before every commit.\n"
    merged = merge3(KEEP, disk, mine)
    assert merged.conflicts == 0
    assert merged.text == KEEP + "- The demo has six banks.\n- Tests run offscreen.\n- Lint before every commit.\n"
    assert "<<<<<<<" not in merged.text and conflict_spans(merged.text) == []


def test_additions_at_the_same_place_inside_keep_both_and_their_separators(tool):
    base = "Entry one\n§\nEntry two\n"
    disk = "Entry one\n§\nFrom the agent\n§\nEntry two\n"
    mine = "Entry one\n§\nFrom me\n§\nEntry two\n"
    merged = merge3(base, disk, mine)
    assert merged.conflicts == 0
    assert merged.text == "Entry one\n§\nFrom the agent\n§\nFrom me\n§\nEntry two\n"


def test_the_same_entry_added_on_both_sides_is_kept_once(tool):
    disk = KEEP + "- Same fact.\n"
    mine = KEEP + "- Same fact.\n- Mine too.\n"
    merged = merge3(KEEP, disk, mine)
    assert merged == textmerge.Merged(KEEP + "- Same fact.\n- Mine too.\n", 0, tool)


def test_a_changed_line_is_still_a_conflict_and_the_additions_beside_it_settle(tool):
    disk = KEEP.replace("2 cores", "4 cores") + "- Disk adds.\n"
    mine = KEEP.replace("2 cores", "8 cores") + "- Mine adds.\n"
    merged = merge3(KEEP, disk, mine)
    assert merged.conflicts == 1
    assert f"<<<<<<< {MINE}\n" in merged.text and f">>>>>>> {THEIRS}\n" in merged.text
    assert "||||||| " not in merged.text  # the base section used to decide is never shown
    [(start, end)] = conflict_spans(merged.text)
    assert "8 cores" in merged.text[start:end] and "4 cores" in merged.text[start:end]
    assert merged.text.endswith("- Disk adds.\n- Mine adds.\n")


def test_one_side_removing_a_line_the_other_kept_is_still_a_conflict(tool):
    disk = KEEP.replace("- Releases are tagged vX.Y.\n", "") + "- Disk adds.\n"
    mine = KEEP + "- Mine adds.\n"
    merged = merge3(KEEP, disk, mine)
    assert merged.conflicts == 1 and "Releases are tagged" in merged.text
