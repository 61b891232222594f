"""The rules keepgui reproduces, without the CLI: Rust's text handling, the home, the roots, the config,
the AGENTS.md chain and budget, the summary's cut and parts (the real CLI confirms them in
test_codex_cli_compare.py; these pin each rule on its own, and run everywhere)."""

from __future__ import annotations

import os

import pytest

from keepgui.backends.codex.context import session_context
from keepgui.backends.codex.instructions import BLANK, CUT, HIDDEN, LOADED, SKIPPED, agents_chain, lay_out
from keepgui.backends.codex.layout import V1, V2, CodexEnv, active_root, read_config
from keepgui.backends.codex.memory import PART_LIMIT, memory_block, read_summary, truncation
from keepgui.backends.codex.templates import SHA256, TEMPLATES, checksum, render
from keepgui.backends.codex.text import ceil_boundary, floor_boundary, lossy, rust_trim, split_bytes


def put(root, rel: str, content: str | bytes) -> str:
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


# ---------------------------------------------------------------------- text


def test_rust_trim_is_not_python_strip():
    text = "\x1c\u00a0\u3000\x85 body \u2028\ufeff\x1f"
    assert rust_trim(text) == "\x1c\u00a0\u3000\x85 body \u2028\ufeff\x1f".strip("\u00a0\u3000\x85 \u2028")
    assert rust_trim("\u00a0\u3000\x85 x \u2003\n") == "x"
    assert rust_trim("\x1cx\x1f") == "\x1cx\x1f" and "\x1cx\x1f".strip() == "x"  # Python's strip drops them
    assert rust_trim("\ufeff x ") == "\ufeff x"  # a BOM is not white space


def test_lossy_decoding_replaces_each_maximal_bad_sequence_once():
    assert lossy(b"abcdefgh\xc3") == "abcdefgh\ufffd"
    assert lossy(b"\xe6\x9d") == "\ufffd"  # two bytes of a three-byte character: one replacement
    assert lossy(b"\xf0\x9f\xa6") == "\ufffd"
    assert lossy(b"\xed\xa0\x80") == "\ufffd\ufffd\ufffd"  # an encoded surrogate: three


def test_boundaries_and_parts():
    data = "a東b".encode()  # a, then three bytes, then b
    assert [floor_boundary(data, i) for i in range(6)] == [0, 1, 1, 1, 4, 5]
    assert [ceil_boundary(data, i) for i in range(6)] == [0, 1, 4, 4, 4, 5]
    assert split_bytes(b"x" * 20, 8) == [b"x" * 8, b"x" * 8, b"x" * 4]
    parts = split_bytes(("x" * 7 + "東" + "y").encode(), 8)
    assert parts == [b"x" * 7, "東y".encode()]


@pytest.mark.parametrize(
    ("summary", "head", "marker", "tail"),
    [
        ("q" * 10_000, 10_000, "", 0),
        ("q" * 10_001, 5_000, "…1 tokens truncated…", 5_000),
        ("q" * 10_005, 5_000, "…2 tokens truncated…", 5_000),
        ("東京" * 1_700 + "x", 4_998, "…51 tokens truncated…", 4_999),
    ],
)
def test_the_summary_cut_matches_the_spec_vectors(summary, head, marker, tail):
    data = summary.encode()
    cut = truncation(data)
    assert cut.marker == marker
    if marker:
        assert cut.head == head and len(data) - cut.tail == tail


def test_templates_are_the_captured_ones():
    assert checksum("v1") == SHA256["v1"] == "2bc7736029884b714860a6f0d6b2fd26598bba58f2213b787f01fe2a491f4326"
    assert checksum("v2") == SHA256["v2"] == "2f81fa2e89f341a1b7b3cf11ee7b855087c4ab84ddad920980475465ef28ff27"
    assert TEMPLATES["v1"].count("{{ base_path }}") == 11 and TEMPLATES["v2"].count("{{ base_path }}") == 3
    assert len(render("v2", "/r", "S").encode()) == 2_034 + 3 * 2 + 1


# ---------------------------------------------------------------------- home, roots, config


def test_the_home_follows_codex_home_canonically_and_home_as_written(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    env = CodexEnv.from_environ({"HOME": "/h/ann/", "CODEX_HOME": str(tmp_path / "link")})
    assert env.home == str(tmp_path / "real") and env.custom and not env.problem
    assert CodexEnv.from_environ({"HOME": "/h/ann/"}).home == "/h/ann/.codex"
    missing = CodexEnv.from_environ({"HOME": "/h", "CODEX_HOME": str(tmp_path / "nope")})
    assert "does not exist: Codex refuses to start" in missing.problem


@pytest.mark.parametrize(
    ("make", "version", "word"),
    [
        (lambda h: os.makedirs(h / "memories_v2"), V2, "the V2 root"),
        (lambda h: (os.makedirs(h / "memories_v2"), os.makedirs(h / "memories")), V1, "an empty folder"),
        (lambda h: put(h, "memories", "x"), V1, "a file, not a folder"),
        (lambda h: os.symlink(h / "elsewhere", h / "memories"), V1, "a link"),
        (lambda h: None, V2, "neither root exists yet"),
    ],
)
def test_which_root_is_active(tmp_path, make, version, word):
    make(tmp_path)
    root = active_root(str(tmp_path))
    assert root.version == version and word in root.why


def test_config_defaults_off_reasons_and_problems(tmp_path):
    config = read_config(str(tmp_path))
    assert not config.memory_on and "off by default" in config.why_off and config.max_bytes == 32_768
    put(tmp_path, "config.toml", "[features]\nmemories = true\n[memories]\nuse_memories = false\n")
    assert read_config(str(tmp_path)).why_off.endswith("sets [memories] use_memories = false")
    put(tmp_path, "config.toml", "[features\n")
    assert "not valid TOML" in read_config(str(tmp_path)).problems[0]
    put(tmp_path, "config.toml", 'profile = "x"\n')
    assert "would not start" in read_config(str(tmp_path)).problems[0]
    put(tmp_path, "config.toml", "project_doc_max_bytes = -1\n[features]\nmemories = 1\n")
    assert len(read_config(str(tmp_path)).problems) == 2


def test_a_trusted_session_folder_config_is_a_layer(tmp_path):
    folder = tmp_path / "p"
    put(tmp_path, "home/config.toml", f'[projects."{folder}"]\ntrust_level = "trusted"\n')
    put(folder, ".codex/config.toml", "project_doc_max_bytes = 7\n[features]\nmemories = true\n")
    layered = read_config(str(tmp_path / "home"), str(folder))
    assert layered.max_bytes == 7 and layered.memory_on and layered.project_layer
    assert read_config(str(tmp_path / "home"), str(folder / "below")).max_bytes == 32_768
    assert read_config(str(tmp_path / "home")).max_bytes == 32_768


# ---------------------------------------------------------------------- AGENTS.md


def test_the_chain_statuses_and_the_block(tmp_path):
    home = tmp_path / "codex"
    put(home, "config.toml", "project_doc_max_bytes = 30\n")
    put(home, "AGENTS.md", "\n  global  \n")
    put(tmp_path, "p/.git/x", "")
    put(tmp_path, "p/AGENTS.md", "0123456789")
    put(tmp_path, "p/a/AGENTS.override.md", " \n")
    put(tmp_path, "p/a/AGENTS.md", "hidden")
    put(tmp_path, "p/a/b/AGENTS.md", "b" * 25)
    put(tmp_path, "p/a/b/c/AGENTS.md", "never")
    cwd = str(tmp_path / "p" / "a" / "b" / "c")
    chain = agents_chain(cwd, str(home), read_config(str(home)))
    assert [(os.path.basename(os.path.dirname(f.path)), f.status) for f in chain.files] == [
        ("p", LOADED),
        ("a", BLANK),
        ("a", HIDDEN),
        ("b", CUT),
        ("c", SKIPPED),
    ]
    assert chain.cut.read == 20 and chain.spent == 30 and chain.cut.start == 10
    assert chain.block == (
        f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\nglobal\n\n--- project-doc ---\n\n"
        "0123456789\n\n" + "b" * 20 + "\n</INSTRUCTIONS>"
    )
    assert any("blank AGENTS.override.md" in w for w in chain.warnings)
    assert any("cut at byte 20 of 25 (byte 30 of the 30-byte" in w for w in chain.warnings)


def test_the_meter_lays_out_edited_bytes_as_the_chain_would(tmp_path):
    spent = lay_out([("a", b"x" * 10), ("b", b"  \n"), ("c", b"y" * 30), ("d", b"z")], 25)
    assert [(s.name, s.start, s.read, s.status) for s in spent] == [
        ("a", 0, 10, LOADED),
        ("b", 10, 0, BLANK),
        ("c", 10, 15, CUT),
        ("d", 25, 0, SKIPPED),
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_named_agents_md_is_no_file_and_never_blocks(tmp_path):
    home = tmp_path / "codex"
    home.mkdir()
    put(tmp_path, "p/.git/x", "")
    os.mkfifo(tmp_path / "p" / "AGENTS.md")
    put(tmp_path, "p/TEAM.md", "fallback read instead")
    put(home, "config.toml", 'project_doc_fallback_filenames = ["TEAM.md"]\n')
    chain = agents_chain(str(tmp_path / "p"), str(home), read_config(str(home)))
    assert [os.path.basename(f.path) for f in chain.files] == ["TEAM.md"]


# ---------------------------------------------------------------------- the memory block


def test_the_block_of_a_long_v2_summary_in_parts(tmp_path):
    home = tmp_path / "codex"
    put(home, "memories_v2/memory_summary.md", "\n\n" + "東" * 5_000 + "\n")
    root = active_root(str(home))
    summary = read_summary(root.path)
    block = memory_block(root, summary)
    assert block is not None and summary.truncation.cut
    sizes = [len(p.encode()) for p in block.parts]
    assert all(s <= PART_LIMIT for s in sizes) and "".join(block.parts) == block.text and len(sizes) == 2


def test_a_summary_with_one_latin1_byte_is_not_loaded_and_says_where(tmp_path):
    put(tmp_path, "memories_v2/memory_summary.md", b"v1\n\nCaf\xe9\n")
    summary = read_summary(str(tmp_path / "memories_v2"))
    assert not summary.injectable and "first bad byte is at offset 7" in summary.problem


def test_session_context_json_has_the_exact_parts(tmp_path):
    home = tmp_path / "home"
    put(home, ".codex/config.toml", "[features]\nmemories = true\n")
    put(home, ".codex/memories_v2/memory_summary.md", "v1\n- hello\n")
    (tmp_path / "p").mkdir()
    context = session_context(str(tmp_path / "p"), CodexEnv.from_environ({"HOME": str(home)}))
    obj = context.to_obj()
    assert obj["memory"] == context.memory and obj["memory"].startswith("## Memory\n\n")
    assert obj["agents_md"] is None and obj["memory_parts"] == [len(context.memory.encode())]
    assert obj["memory_root_version"] == "v2" and obj["memory_on"] is True


def test_installed_version_asks_the_binary_and_says_none_without_one(tmp_path):
    from keepgui.backends.codex import installed_version

    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho codex-cli 9.8.7\n")
    fake.chmod(0o755)
    assert installed_version(str(fake)) == "9.8.7"
    assert installed_version(environ={"PATH": str(tmp_path / "empty")}) is None
    assert installed_version(environ={"PATH": str(tmp_path)}) == "9.8.7"


def test_summary_entries_by_section_bullet_and_paragraph():
    from keepgui.backends.codex.entries import summary_entries

    text = (
        "v1\n\n## User Profile\nAnn writes Rust.\nShe likes tests.\n\n## What's in Memory\n### ~/src/app\n"
        "#### 2025-06-14\n- topic: a, b\n  - desc: nested line\n\n  - learnings: after a blank line\n- second\n"
    )
    entries = summary_entries(text)
    assert [(e.kind, e.section, e.line) for e in entries] == [
        ("paragraph", "User Profile", 4),
        ("bullet", "What's in Memory › ~/src/app › 2025-06-14", 10),
        ("bullet", "What's in Memory › ~/src/app › 2025-06-14", 14),
    ]
    assert entries[1].text.endswith("  - learnings: after a blank line")
    data = text.encode()
    assert all(data[e.start : e.end].decode() == e.text for e in entries)


def test_handbook_blocks_and_their_review():
    from keepgui.backends.codex.compact import compare
    from keepgui.backends.codex.memory import handbook_entries

    before = (
        "# Task Group: deploys\nscope: fly.io\napplies_to: cwd=~/shop; reuse_rule=always\n## Task 1: x\n\n"
        "# Task Group: payments\nscope: refunds are idempotent\n"
    )
    entries = handbook_entries(before)
    assert [(e.line, e.title) for e in entries] == [(1, "Task Group: deploys"), (6, "Task Group: payments")]
    assert dict(entries[0].fields) == {"scope": "fly.io", "applies_to": "cwd=~/shop; reuse_rule=always"}
    after = before.replace("# Task Group: payments\nscope: refunds are idempotent\n", "")
    assert [k for k, _old, _new in compare("MEMORY.md", before, after)] == ["removed"]
