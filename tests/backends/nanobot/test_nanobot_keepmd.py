"""The keep.md model: entries, flagged lines, counts, identity, and byte-for-byte round trips (spec §5.3)."""

from __future__ import annotations

import pytest

from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, SOFT_CAP, KeepDoc, canonical_line, entry_id, normalise
from keepgui.core.errors import InvalidInput, NotFound, Unreadable
from tests.backends.nanobot.nanobot_helpers import SPEC_FACTS, SPEC_FIXTURE


def test_spec_fixture_parses_into_ten_canonical_entries():
    doc = KeepDoc.from_text(SPEC_FIXTURE)
    assert [e.text for e in doc.entries] == SPEC_FACTS
    assert [e.number for e in doc.entries] == list(range(1, 11))
    assert all(e.canonical for e in doc.entries)
    assert doc.entry_count == 10 and doc.line_count == 10 and not doc.flagged
    assert doc.to_bytes() == SPEC_FIXTURE.encode()


@pytest.mark.parametrize(
    "line, text",
    [
        ("- fact", "fact"),
        ("* fact", "fact"),
        ("  - indented fact", "indented fact"),
        ("-\tfact", "fact"),
        ("- trailing spaces   ", "trailing spaces"),
        ("- a - b", "a - b"),
        ("-  two spaces", "two spaces"),
    ],
)
def test_entry_lines(line, text):
    doc = KeepDoc.from_text(line + "\n")
    assert [e.text for e in doc.entries] == [text]


@pytest.mark.parametrize(
    "line",
    [
        "-no space",
        "---",
        "***",
        "**bold** text",
        "-   ",
        "1. numbered",
        "plain prose",
        "## Pets",
        "<!-- a comment -->",
        "+ plus bullet",
    ],
)
def test_non_entry_lines_are_kept_and_flagged(line):
    doc = KeepDoc.from_text(f"- before\n{line}\n- after\n")
    assert [e.text for e in doc.entries] == ["before", "after"]
    assert doc.lines[1].kind != "entry" and doc.lines[1].issue
    assert doc.to_bytes() == f"- before\n{line}\n- after\n".encode()


def test_pets_heading_kept_and_flagged_and_star_bullet_is_a_duplicate():
    text = SPEC_FIXTURE + "## Pets\n* Has a beagle named Biscuit\n"
    doc = KeepDoc.from_text(text)
    heading = doc.lines[10]
    assert heading.text == "## Pets" and heading.kind == "heading" and "heading" in heading.issue
    star = doc.entries[-1]
    assert star.text == "Has a beagle named Biscuit" and not star.canonical
    [group] = doc.duplicates()
    assert [e.number for e in group] == [7, 11]
    assert doc.other_lines == (heading,)
    assert doc.to_bytes() == text.encode()


def test_non_canonical_spacing_is_flagged():
    doc = KeepDoc.from_text("-  two spaces\n  - indented\n- fine\n- inner  gap\n")
    assert [e.canonical for e in doc.entries] == [False, False, True, False]


@pytest.mark.parametrize(
    "data",
    [
        b"- a\r\n- b\r\n",  # CRLF
        b"\xef\xbb\xbf- a\n- b\n",  # BOM
        b"- a\n- b",  # no final newline
        b"\xef\xbb\xbf- a\r\n## H\n- b\r- c",  # BOM, mixed endings, lone CR, no final newline
        b"\n\n- a\n\n\n",  # blank lines around
        b"- caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\n",  # non-ASCII
        b"",
        b"\xef\xbb\xbf",
    ],
)
def test_round_trip_is_byte_for_byte(data):
    assert KeepDoc.parse(data).to_bytes() == data


def test_append_uses_the_files_newline_and_keeps_no_final_newline():
    assert KeepDoc.parse(b"- a\r\n- b\r\n").append("c").to_bytes() == b"- a\r\n- b\r\n- c\r\n"
    assert KeepDoc.parse(b"- a\r\n- b").append("c").to_bytes() == b"- a\r\n- b\r\n- c"
    assert KeepDoc.parse(b"\xef\xbb\xbf- a\n").append("c").to_bytes() == b"\xef\xbb\xbf- a\n- c\n"
    assert KeepDoc.parse(b"").append("c").to_bytes() == b"- c\n"
    assert KeepDoc.parse(None).append("c").to_bytes() == b"- c\n"
    assert KeepDoc.parse(b"\xef\xbb\xbf").append("c").to_bytes() == b"\xef\xbb\xbf- c\n"


def test_append_goes_before_trailing_blank_lines():
    assert KeepDoc.parse(b"- a\n\n\n").append("b").to_bytes() == b"- a\n- b\n\n\n"


def test_edits_of_a_mixed_file_touch_only_the_edited_line():
    data = b"- a\n- b\r\n- c\n- d\r\n"
    doc = KeepDoc.parse(data)
    assert doc.remove_entry("b").to_bytes() == b"- a\n- c\n- d\r\n"
    assert doc.replace_entry("c", "C!").to_bytes() == b"- a\n- b\r\n- C!\n- d\r\n"
    assert doc.newline == "\n"  # a tie goes to \n
    assert KeepDoc.parse(b"- a\r\n- b\r\n- c\n").newline == "\r\n"


def test_removing_the_last_line_keeps_no_final_newline():
    assert KeepDoc.parse(b"- a\n- b").remove_entry(2).to_bytes() == b"- a"
    assert KeepDoc.parse(b"- a\n- b\n").remove_entry(2).to_bytes() == b"- a\n"
    assert KeepDoc.parse(b"- only").remove_entry(1).to_bytes() == b""


def test_insert_line_at_the_end_and_in_the_middle():
    doc = KeepDoc.parse(b"- a\n- c")
    assert doc.insert_line(1, "* b").to_bytes() == b"- a\n* b\n- c"
    assert doc.insert_line(99, "- d").to_bytes() == b"- a\n- c\n- d"
    with pytest.raises(InvalidInput):
        doc.insert_line(0, "two\nlines")


def test_canonical_line():
    assert canonical_line("  Has   a cat ") == "- Has a cat"
    with pytest.raises(InvalidInput):
        canonical_line("   ")


def test_counts_and_compaction_threshold():
    at_cap = KeepDoc.from_text("".join(f"- fact {i}\n" for i in range(SOFT_CAP)))
    assert at_cap.line_count == SOFT_CAP and not at_cap.compaction_due
    over = KeepDoc.from_text("# heading\n" + "".join(f"- fact {i}\n" for i in range(SOFT_CAP)))
    assert over.entry_count == SOFT_CAP and over.line_count == SOFT_CAP + 1 and over.compaction_due
    assert over.counts() == {
        "entries": SOFT_CAP,
        "lines": SOFT_CAP + 1,
        "soft_cap": 150,
        "target": 120,
        "compaction_due": True,
    }
    assert COMPACTION_TARGET == 120
    assert KeepDoc.parse(b"- a").line_count == 1 and KeepDoc.parse(b"- a\n").line_count == 1
    assert KeepDoc.parse(b"- a\n\n").line_count == 2 and KeepDoc.parse(b"").line_count == 0


@pytest.mark.parametrize(
    "a, b",
    [
        ("Prefers metric units.", "prefers   metric units"),
        ("  ALLERGIC to penicillin ", "allergic to penicillin"),
        ("Straße", "STRASSE"),
        ("café", "cafe\u0301"),
    ],
)
def test_normalise(a, b):
    assert normalise(a) == normalise(b)


def test_normalise_drops_only_one_trailing_period():
    assert normalise("etc..") == "etc."


def test_ids_are_stable_when_other_lines_change():
    doc = KeepDoc.from_text(SPEC_FIXTURE)
    ids = {e.text: e.id for e in doc.entries}
    changed = doc.remove_entry(1).append("New fact")
    changed = KeepDoc.from_text("## Heading\n" + changed.to_bytes().decode())
    for entry in changed.entries:
        if entry.text in ids:
            assert entry.id == ids[entry.text]
    assert changed.find(ids["Allergic to penicillin"]).text == "Allergic to penicillin"


def test_identical_entries_get_distinct_ids():
    doc = KeepDoc.from_text("- Tea\n* tea.\n- Tea\n")
    first, second, third = doc.entries
    assert first.id == entry_id("tea", 1) and second.id == entry_id("tea", 2) and third.id.endswith(".3")
    assert doc.get(second.id) == second and doc.get("nope") is None


def test_find_by_number_id_text_and_fragment():
    doc = KeepDoc.from_text(SPEC_FIXTURE)
    assert doc.find(4).text == "Allergic to penicillin"
    assert doc.find("4").text == "Allergic to penicillin"
    assert doc.find("allergic to PENICILLIN.").number == 4
    assert doc.find("- Allergic to penicillin").number == 4
    assert doc.find("beagle").number == 7
    assert doc.find(doc.entries[2].id).number == 3
    with pytest.raises(NotFound):
        doc.find(11)
    with pytest.raises(NotFound):
        doc.find("giraffe")
    with pytest.raises(InvalidInput, match="matches 3 entries"):
        doc.find("in")  # the word "in", not "including" or "penicillin"
    with pytest.raises(InvalidInput):
        doc.find("  ")


def test_neighbours():
    doc = KeepDoc.from_text("- a\n- b\n- c\n")
    a, b, c = doc.entries
    assert doc.neighbours(b) == (a, c) and doc.neighbours(a) == (None, b) and doc.neighbours(c) == (b, None)


def test_invalid_utf8_is_refused_naming_the_line():
    with pytest.raises(Unreadable, match=r"keep.md: line 2 is not valid UTF-8"):
        KeepDoc.parse(b"- ok\n- bad \xff\n", "/w/keep.md")


def test_to_obj():
    obj = KeepDoc.from_text("- a\n## H\n").to_obj()
    assert obj["entries"][0]["text"] == "a" and obj["flagged"][0]["line"] == 2 and obj["counts"]["lines"] == 2


def test_the_containment_index_finds_exactly_what_scanning_finds():
    import random

    from keepgui.backends.nanobot.keepmd import ContainmentIndex, contains

    rng = random.Random(5)
    pieces = ["tea", "green", "steak", "te", "a", "-", "(x)", "café", "naïve", "3111", "_", ".", "日本", " "]
    keys = [
        "".join(rng.choice(pieces) + rng.choice(["", " ", "-"]) for _ in range(rng.randint(1, 7))).strip()
        for _ in range(400)
    ]
    index = ContainmentIndex(keys)
    for needle in keys[:150] + ["tea", "(x)", "- .", "", "te a", "café naïve"]:
        assert index.containing(needle) == [i for i, key in enumerate(keys) if contains(key, needle)], needle
