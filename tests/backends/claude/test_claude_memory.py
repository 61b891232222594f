"""The MEMORY.md cut, the index entries and the topic files (vectors observed on the real CLI, 2.1.332)."""

from __future__ import annotations

import os

import pytest

from keepgui.backends.claude.jstext import utf16_len
from keepgui.backends.claude.memory import Prepared, clean_injected, cut_index, read_folder

TAIL = " Keep index entries to one line under ~200 chars; move detail into topic files."


def cut_of(raw: str):
    return cut_index(Prepared(raw).text)


def test_a_230_line_index_loads_200_lines_and_says_where_it_was_cut():
    raw = "".join(f"- [Note {i}](note_{i}.md) — hook {i}\n" for i in range(1, 231))
    cut = cut_of(raw)
    assert cut.reason == "lines" and cut.kept_lines == 200
    kept = "".join(f"- [Note {i}](note_{i}.md) — hook {i}\n" for i in range(1, 201)).rstrip("\n")
    assert (
        cut.injected == kept + "\n\n> WARNING: MEMORY.md is 230 lines (limit: 200). Only part of it was loaded: "
        '30 of 230 lines were cut off, starting at line 201 ("- [Note 201](note_201.md) — hook 201").' + TAIL
    )


@pytest.mark.parametrize(
    "raw, kept_lines, warning_start",
    [
        (
            "".join("x" * 199 + "\n" for _ in range(150)),
            125,
            "> WARNING: MEMORY.md is 29.3KB (limit: 24.4KB) — index entries are too long. Only part of it was loaded: "
            '25 of 150 lines were cut off, starting at line 126 ("' + "x" * 79 + '…").',
        ),
        ("".join("y" * 150 + "\n" for _ in range(300)), 165, "> WARNING: MEMORY.md is 300 lines and 44.2KB."),
        ("".join("z" * 120 + "\n" for _ in range(220)), 200, "> WARNING: MEMORY.md is 220 lines and 26KB."),
        ("".join("- " + "漢" * 298 + "\n" for _ in range(100)), 83, "> WARNING: MEMORY.md is 29.4KB (limit: 24.4KB)"),
        (
            "".join("- " + "🚀" * 120 + "\n" for _ in range(110)),
            102,
            "> WARNING: MEMORY.md is 26.1KB (limit: 24.4KB) — index entries are too long. Only part of it was loaded: "
            '8 of 110 lines were cut off, starting at line 103 ("- ' + "🚀" * 38 + '…").',
        ),
        ("".join("w" * 124 + "\r\n" for _ in range(200)), 198, "> WARNING: MEMORY.md is 24.6KB"),  # CRs count
    ],
)
def test_size_and_line_limits(raw, kept_lines, warning_start):
    cut = cut_of(raw)
    assert cut.kept_lines == kept_lines
    assert cut.warning.startswith(warning_start) and cut.warning.endswith(TAIL[1:])


def test_no_cut_at_exactly_the_limits_and_units_not_bytes():
    assert not cut_of("".join("w" * 124 + "\n" for _ in range(200))).cut  # 24,999 units
    cjk = "".join("- " + "漢" * 98 + "\n" for _ in range(100))
    assert len(cjk.encode()) > 25_000 and not cut_of(cjk).cut


def test_a_hard_cut_inside_one_line():
    cut = cut_of("a" * 30000 + "\n- s\n")
    assert cut.partial and cut.kept_units == 25000 and cut.kept_lines == 0
    assert "everything after the first 25000 characters of line 1 was cut off." in cut.warning


def test_the_first_line_past_the_cut_is_quoted_trimmed_and_short():
    base = "".join(f"- {i}\n" for i in range(200))
    assert '("' + "b" * 80 + '")' in cut_of(base + "b" * 80 + "\n").warning
    assert '("' + "b" * 79 + '…")' in cut_of(base + "b" * 81 + "\n").warning
    assert '("- indented line")' in cut_of(base + "   - indented line\n").warning
    assert "starting at line 201. Keep" in cut_of(base + "\n- after a blank line\n").warning
    assert 'starting at line 201 ("")' in cut_of(base + "\u200b\n- next\n").warning  # cleaned after quoting


def test_front_matter_comments_and_blank_lines_are_not_counted():
    raw = (
        "---\nname: x\n---\n\n\n"
        + "".join(f"- l{i}\n" for i in range(5))
        + "<!--\n"
        + "c\n" * 40
        + "-->\n"
        + "".join(f"- m{i}\n" for i in range(5))
    )
    prepared = Prepared(raw)
    assert prepared.text.split("\n") == [f"- l{i}" for i in range(5)] + [f"- m{i}" for i in range(5)]
    assert prepared.raw_line(0) == 6 and prepared.raw_line(prepared.text.index("- m0")) == 53


def test_the_injected_index_is_cleaned_of_invisible_characters():
    assert (
        clean_injected("- a\u2028b\r\nc\rd\x85e\u200bf\u200dg\ufe0fh\ufeffi\U000e0001j\x00k\tl")
        == "- a\nb\nc\nde" + "f\u200dg\ufe0fhijk\tl"
    )
    assert clean_injected("e\u0301 \u212a") == "e\u0301 \u212a"  # no Unicode normalisation


def _topic(folder, name, text):
    path = os.path.join(folder, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def test_topic_files_index_entries_and_orphans_both_ways(tmp_path):
    mem = str(tmp_path)
    _topic(
        mem,
        "new-style.md",
        "---\nname: new-style\ndescription: nested type\nmetadata:\n  type: feedback\n---\n\nPrefer [[old-style]].\n",
    )
    _topic(mem, "old_style.md", "---\nname: Old style\ndescription: flat type\ntype: user\n---\nbody\n")
    _topic(mem, "unindexed.md", "no front matter at all\n")
    _topic(mem, "bad.md", "---\nname: [\n---\nbody\n")
    _topic(mem, "team/MEMORY.md", "- [Shared](shared.md)\n")
    _topic(
        mem,
        "MEMORY.md",
        "# Index\n\n- [New](new-style.md) — nested\n- [Old](old_style.md): flat\n"
        "- [Gone](gone.md) — its file is missing\n* [Bad](bad.md)\n",
    )
    folder = read_folder(mem)
    topics = {t.rel: t for t in folder.topics}
    assert set(topics) == {"new-style.md", "old_style.md", "unindexed.md", "bad.md"}  # team/ is not ours
    assert (topics["new-style.md"].type, topics["old_style.md"].type) == ("feedback", "user")
    assert topics["new-style.md"].links == ("old-style",)
    assert "not valid YAML" in topics["bad.md"].problem and "bad.md" in topics["bad.md"].problem
    entries = {e.target: e for e in folder.index.entries}
    assert entries["old_style.md"].hook == "flat" and entries["new-style.md"].line == 3
    assert [e.target for e in folder.orphans.dangling] == ["gone.md"]
    assert folder.orphans.unindexed == ("unindexed.md",)
    assert folder.has_team


def test_the_sidebar_counts(tmp_path):
    mem = str(tmp_path)
    for i in range(41):
        _topic(mem, f"n{i}.md", f"---\nname: n{i}\n---\nx\n")
    _topic(mem, "MEMORY.md", "".join(f"- [N{i}](n{i % 41}.md) — hook\n" for i in range(230)))
    assert read_folder(mem).counts() == "41 memories · index 230 lines · 30 not loaded"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert read_folder(str(empty)).counts() == "0 memories · no index"


def test_utf16_length_drives_the_cut_not_code_points():
    line = "- " + "🚀" * 200
    assert utf16_len(line) == 402 and len(line) == 202


def test_a_quoted_line_cut_before_a_space_loses_the_space():
    base = "".join(f"- {i}\n" for i in range(200))
    line = "x" * 78 + " and more words past the limit"
    assert '("' + "x" * 78 + '…")' in cut_of(base + line + "\n").warning
