"""Reverting one entry change of several takes back that entry's lines only, whatever block of lines a
diff groups it in (two entries appended together were both taken back by a revert of the first)."""

from __future__ import annotations

import pytest

from keepgui.core.inbox import EntryChange, _revert_one, diff_entries


def entries(text: str) -> list[tuple[str, str]]:
    return [("", line) for line in text.splitlines() if line.strip()]


def reverted(before: str, after: str, number: int) -> str:
    changes = diff_entries(entries(before), entries(after))
    return _revert_one(before, after, changes[number - 1], changes)


BASE = "- one\n- two\n- three\n"


@pytest.mark.parametrize(
    ("after", "number", "expected"),
    [
        (BASE + "- four\n- five\n", 1, BASE + "- five\n"),  # appended together: the first only
        (BASE + "- four\n- five\n", 2, BASE + "- four\n"),
        ("- one\n", 1, "- one\n- two\n"),  # removed together: one of them comes back where it stood
        ("- one\n", 2, "- one\n- three\n"),
        ("- one\n- two\n- three", 0, None),  # nothing changed but the last newline: no entry change
        (BASE + "- four", 1, BASE),  # the last line without a newline
    ],
)
def test_one_entry_change_of_several_is_taken_back_alone(after, number, expected):
    if expected is None:
        assert diff_entries(entries(BASE), entries(after)) == []
        return
    assert reverted(BASE, after, number) == expected


def test_an_entry_removed_from_the_end_comes_back_after_a_last_line_without_newline():
    before = "- one\n- two\n- three\n"
    after = "- one\n- two"
    (change,) = diff_entries(entries(before), entries(after))
    assert change == EntryChange("removed", ("- three",), ())
    assert _revert_one(before, after, change) == "- one\n- two\n- three\n"


def test_one_of_two_edits_side_by_side_is_taken_back_alone():
    before = "- likes green tea\n- runs on Saturdays\n- lives in Lisbon\n"
    after = "- likes green tea a lot\n- runs on Saturday mornings\n- lives in Lisbon\n"
    changes = diff_entries(entries(before), entries(after))
    assert [c.kind for c in changes] == ["edited", "edited"]
    first = next(c for c in changes if "tea" in c.after[0])
    assert (
        _revert_one(before, after, first, changes)
        == "- likes green tea\n- runs on Saturday mornings\n- lives in Lisbon\n"
    )


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (BASE + "\n- four\n", BASE),  # the blank line the entry came with goes with it
        (BASE + "\n- four\n\n- five\n", BASE + "\n- five\n"),  # each entry keeps its own blank line
        (BASE + "§\nfour\n§\nfive\n", BASE + "§\nfive\n"),  # Hermes's separator goes with its entry
    ],
)
def test_the_lines_between_entries_go_with_the_entry_after_them(after, expected):
    changes = diff_entries(entries(BASE), [e for e in entries(after) if e[1] != "§"])
    first = next(c for c in changes if c.after == ("- four",) or c.after == ("four",))
    assert _revert_one(BASE, after, first, changes) == expected
