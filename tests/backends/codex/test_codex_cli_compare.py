"""keepgui's "what the next session sees" against the real Codex CLI, byte for byte.

Each test builds a Codex home and a project tree, computes keepgui's context
(``session_context``) *first* — Codex writes into its home at every start — then
runs the real CLI there (``codex exec``, offline: its requests go to a loopback
server, see :mod:`tests.backends.codex.codex_cli`) and compares both blocks of the
session's own first request: the memory block (its content parts joined) and
the AGENTS.md block. The CLI is installed into ``build/codex-cli`` when missing
(``make codex-compare``); without npm or the registry the tests skip and say why.

The trees cover the rules keepgui reproduces: the global file (override, blank,
trim), the project root (markers, a ``.git`` file, nested repositories, none),
one file per folder (overrides, a blank override hiding its folder, fallback
names), the shared budget (a cut mid-line and mid-character, 2-, 3- and 4-byte
characters, a blank file that costs nothing, files skipped, ``0``), verbatim
project texts (CRLF, BOM, blank lines), a symlinked session folder, both memory
roots (V1, V2, both, an empty or file ``memories``, a link), memory off three
ways, a summary that is not UTF-8 or blank, Rust's trim, over-long summaries cut
at character boundaries, V2 blocks split into parts at 8,900 bytes, and
``CODEX_HOME`` through a link.
"""

from __future__ import annotations

import os
import shutil

import pytest

from keepgui.backends.codex import CHECKED_VERSION
from keepgui.backends.codex.context import session_context
from keepgui.backends.codex.layout import CodexEnv
from keepgui.backends.codex.templates import render
from tests.backends.codex import codex_cli

_TIMES: list[float] = []
_BYTES: list[int] = []

MEMORY_ON = "[features]\nmemories = true\n"


def _say(request, text: str) -> None:
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(text)


@pytest.fixture(scope="module")
def cli(request):
    """The real CLI (installed into the cache when missing), its version printed once."""
    try:
        binary, version, seconds = codex_cli.ensure_cli()
    except codex_cli.Unavailable as exc:
        pytest.skip(str(exc))
    note = f", installed into {codex_cli.CACHE} in {seconds:.1f} s" if seconds else ""
    _say(request, f"\ncodex CLI {version} (keepgui checked against {CHECKED_VERSION}{note})")
    yield binary
    if _TIMES:
        times = sorted(_TIMES)
        _say(
            request,
            f"\ncodex CLI: {len(times)} trees compared byte for byte, {len(_BYTES) // 2} equal in both blocks "
            f"({sum(_BYTES):,} bytes), in {sum(times):.1f} s (median {times[len(times) // 2]:.2f} s per run)",
        )


def put(root, rel: str, content: str | bytes) -> str:
    """Write one file of a tree (test setup, not keepgui's writing)."""
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def home_of(tmp_path, config: str = MEMORY_ON) -> tuple[str, str]:
    """``(HOME, its .codex)`` with ``config.toml``."""
    home = tmp_path / "home"
    put(home, ".codex/config.toml", config)
    return str(home), str(home / ".codex")


def _first_difference(got: str | None, want: str | None) -> str:
    got, want = got or "", want or ""
    at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
    return f"at character {at}: CLI {want[max(0, at - 40) : at + 40]!r} · keepgui {got[max(0, at - 40) : at + 40]!r}"


def compare(cli, cwd, home: str, codex_home: str | None = None, args: list[str] | None = None):
    """Run the CLI in ``cwd`` and assert keepgui's two blocks are the same text; returns ``(context, captured)``."""
    environ = {"HOME": home, **({"CODEX_HOME": codex_home} if codex_home else {})}
    context = session_context(str(cwd), CodexEnv.from_environ(environ))
    captured = codex_cli.first_request(cli, str(cwd), home, codex_home, args)
    _TIMES.append(captured.seconds)
    if context.memory != captured.memory:
        pytest.fail(f"memory block differs {_first_difference(context.memory, captured.memory)}")
    if context.agents_md != captured.agents_md:
        pytest.fail(f"AGENTS.md block differs {_first_difference(context.agents_md, captured.agents_md)}")
    _BYTES.extend([len((captured.memory or "").encode()), len((captured.agents_md or "").encode())])
    return context, captured


# ---------------------------------------------------------------------- AGENTS.md


def test_global_trimmed_and_project_chain_root_to_cwd(cli, tmp_path):
    home, codex = home_of(tmp_path)
    put(codex, "AGENTS.md", "  Be brief.\n\n")
    put(tmp_path, "r/.git/HEAD", "ref: refs/heads/main\n")
    put(tmp_path, "r/AGENTS.md", "A\n")
    put(tmp_path, "r/sub/AGENTS.md", "B")
    put(tmp_path, "above/AGENTS.md", "never read: above the root")
    context, captured = compare(cli, tmp_path / "r" / "sub", home)
    assert captured.agents_md == (
        f"# AGENTS.md instructions for {tmp_path / 'r' / 'sub'}\n\n<INSTRUCTIONS>\nBe brief.\n\n"
        "--- project-doc ---\n\nA\n\n\nB\n</INSTRUCTIONS>"
    )
    assert context.memory is None  # memory on, no summary yet


def test_budget_cut_mid_line_and_later_files_skipped(cli, tmp_path):
    home, _codex = home_of(tmp_path, "project_doc_max_bytes = 50\n" + MEMORY_ON)
    put(tmp_path, "p/.git/HEAD", "x")
    put(tmp_path, "p/AGENTS.md", "R" * 29 + "\n")
    put(tmp_path, "p/a/AGENTS.md", "first line of a\nsecond line, well past the budget\n")
    put(tmp_path, "p/a/b/AGENTS.md", "skipped entirely")
    context, captured = compare(cli, tmp_path / "p" / "a" / "b", home)
    assert captured.agents_md.endswith("R" * 29 + "\n\n\nfirst line of a\nseco\n</INSTRUCTIONS>")
    chain = context.chain
    assert [f.status for f in chain.files] == ["loaded", "cut", "skipped"]
    assert chain.cut.read == 20 and chain.spent == 50


def test_a_blank_file_costs_nothing_and_a_git_file_marks_the_root(cli, tmp_path):
    home, _codex = home_of(tmp_path, "project_doc_max_bytes = 20\n")
    put(tmp_path, "p/.git", "gitdir: /elsewhere/worktrees/p\n")  # a .git file marks the root too
    put(tmp_path, "p/AGENTS.md", "\n \n\n")
    put(tmp_path, "p/a/AGENTS.md", "0123456789abcdefghijKLMNO\n")
    context, captured = compare(cli, tmp_path / "p" / "a", home)
    assert captured.agents_md.endswith("<INSTRUCTIONS>\n0123456789abcdefghij\n</INSTRUCTIONS>")
    assert [f.status for f in context.chain.files] == ["blank", "cut"]


@pytest.mark.parametrize(("char", "keep"), [("é", 1), ("東", 2), ("🦀", 3)])
def test_the_budget_cuts_inside_2_3_and_4_byte_characters(cli, tmp_path, char, keep):
    budget = 8 + keep
    home, _codex = home_of(tmp_path, f"project_doc_max_bytes = {budget}\n")
    put(tmp_path, "p/.git/x", "")
    put(tmp_path, "p/AGENTS.md", "abcdefgh" + char + "z\n")
    _context, captured = compare(cli, tmp_path / "p", home)
    assert "abcdefgh\ufffd\n</INSTRUCTIONS>" in captured.agents_md


def test_overrides_claim_their_folder_even_when_blank(cli, tmp_path):
    home, codex = home_of(tmp_path, "")
    put(codex, "AGENTS.override.md", " \n\t\n")  # a blank global override is ignored
    put(codex, "AGENTS.md", "global text")
    put(tmp_path, "p/.git/x", "")
    put(tmp_path, "p/AGENTS.override.md", "root override wins")
    put(tmp_path, "p/AGENTS.md", "root agents: not read")
    put(tmp_path, "p/a/AGENTS.override.md", "\n\n")  # blank: hides a/AGENTS.md
    put(tmp_path, "p/a/AGENTS.md", "hidden by the blank override")
    put(tmp_path, "p/a/b/AGENTS.md", "leaf")
    context, captured = compare(cli, tmp_path / "p" / "a" / "b", home)
    assert "hidden" not in captured.agents_md and "root override wins" in captured.agents_md
    assert any("blank AGENTS.override.md" in w for w in context.chain.warnings)


def test_fallback_names_in_list_order_and_not_for_the_global_file(cli, tmp_path):
    home, codex = home_of(tmp_path, 'project_doc_fallback_filenames = ["TEAM.md", "CLAUDE.md"]\n')
    put(codex, "CLAUDE.md", "a global fallback is never read")
    put(tmp_path, "p/.git/x", "")
    put(tmp_path, "p/CLAUDE.md", "claude at the root")
    put(tmp_path, "p/a/CLAUDE.md", "second in the list")
    put(tmp_path, "p/a/TEAM.md", "team first")
    put(tmp_path, "p/a/b/agents.md", "lower case: not a candidate")
    os.makedirs(tmp_path / "p" / "a" / "b" / "AGENTS.md")  # a folder with the name is skipped
    _context, captured = compare(cli, tmp_path / "p" / "a" / "b", home)
    assert captured.agents_md.endswith("claude at the root\n\nteam first\n</INSTRUCTIONS>")


def test_custom_markers_nested_repositories_and_no_markers(cli, tmp_path):
    home, _codex = home_of(tmp_path, 'project_root_markers = [".hg", ".git"]\n')
    put(tmp_path, "outer/.hg/x", "")
    put(tmp_path, "outer/AGENTS.md", "outer")
    put(tmp_path, "outer/inner/.git/x", "")
    put(tmp_path, "outer/inner/AGENTS.md", "inner root")
    put(tmp_path, "outer/inner/deep/AGENTS.md", "deep")
    _context, captured = compare(cli, tmp_path / "outer" / "inner" / "deep", home)
    assert "outer" not in captured.agents_md.split("<INSTRUCTIONS>")[1]
    put(home, ".codex/config.toml", "project_root_markers = []\n")
    _context, captured = compare(cli, tmp_path / "outer" / "inner" / "deep", home)
    assert captured.agents_md.endswith("<INSTRUCTIONS>\ndeep\n</INSTRUCTIONS>")


def test_no_marker_at_all_means_the_session_folder_alone(cli, tmp_path):
    home, _codex = home_of(tmp_path, "")
    put(tmp_path, "loose/AGENTS.md", "parent: not read")
    put(tmp_path, "loose/here/AGENTS.md", "here only")
    _context, captured = compare(cli, tmp_path / "loose" / "here", home)
    assert captured.agents_md.endswith("<INSTRUCTIONS>\nhere only\n</INSTRUCTIONS>")


def test_zero_budget_turns_project_files_off_and_the_global_header_has_no_folder(cli, tmp_path):
    home, codex = home_of(tmp_path, "project_doc_max_bytes = 0\n")
    put(codex, "AGENTS.md", "\ufeffglobal with a BOM  \n")
    put(tmp_path, "p/.git/x", "")
    put(tmp_path, "p/AGENTS.md", "off")
    _context, captured = compare(cli, tmp_path / "p", home)
    assert captured.agents_md == "# AGENTS.md instructions\n\n<INSTRUCTIONS>\n\ufeffglobal with a BOM\n</INSTRUCTIONS>"


def test_nothing_to_give_means_no_block(cli, tmp_path):
    home, _codex = home_of(tmp_path, "")
    put(tmp_path, "p/.git/x", "")
    put(tmp_path, "p/AGENTS.md", "   \n")
    context, captured = compare(cli, tmp_path / "p", home)
    assert captured.agents_md is None and context.agents_md is None


def test_project_texts_are_verbatim_and_the_session_folder_is_physical(cli, tmp_path):
    home, _codex = home_of(tmp_path, "")
    put(tmp_path, "real/.git/x", "")
    put(tmp_path, "real/AGENTS.md", b"\xef\xbb\xbf\r\n\r\nCRLF line\r\n\r\n\r\n")
    put(tmp_path, "real/sub/AGENTS.md", b"bad byte \xff here\n\n")
    os.symlink(tmp_path / "real", tmp_path / "link")
    context, captured = compare(cli, tmp_path / "link" / "sub", home)
    assert f"instructions for {tmp_path / 'real' / 'sub'}\n" in captured.agents_md
    assert "\ufeff\r\n\r\nCRLF line\r\n\r\n\r\n\n\nbad byte \ufffd here\n\n\n</INSTRUCTIONS>" in captured.agents_md
    assert context.cwd == str(tmp_path / "real" / "sub")


# ---------------------------------------------------------------------- the memory block

SUMMARY = "v1\n\n## User Profile\nAnn writes Rust.\n\n## User preferences\n- answers short\n"


def test_v2_summary_in_one_part(cli, tmp_path):
    home, codex = home_of(tmp_path)
    put(codex, "memories_v2/memory_summary.md", SUMMARY)
    put(tmp_path, "p/AGENTS.md", "proj")
    context, captured = compare(cli, tmp_path / "p", home)
    assert len(captured.memory_parts) == 1 and context.root.version == "v2"
    assert f"`{codex}/memories_v2/rollout_summaries/`" in captured.memory


def test_v1_root_and_both_roots_use_v1(cli, tmp_path):
    home, codex = home_of(tmp_path)
    put(codex, "memories/memory_summary.md", "v1 summary, the one used")
    put(codex, "memories_v2/memory_summary.md", "v2 summary, ignored")
    context, captured = compare(cli, tmp_path, home)
    assert "v1 summary, the one used" in captured.memory and context.root.version == "v1"
    assert captured.memory.count(f"{codex}/memories") == 11


@pytest.mark.parametrize("kind", ["empty folder", "file"])
def test_a_memories_entry_of_any_kind_hides_the_v2_summary(cli, tmp_path, kind):
    home, codex = home_of(tmp_path)
    put(codex, "memories_v2/memory_summary.md", SUMMARY)
    if kind == "file":
        put(codex, "memories", "a file")
    else:
        os.makedirs(os.path.join(codex, "memories"))
    context, captured = compare(cli, tmp_path, home)
    assert captured.memory is None and context.root.version == "v1"


def test_a_memories_link_is_v1_with_paths_through_the_link(cli, tmp_path):
    home, codex = home_of(tmp_path)
    put(tmp_path, "elsewhere/memory_summary.md", "linked summary")
    os.symlink(tmp_path / "elsewhere", os.path.join(codex, "memories"))
    _context, captured = compare(cli, tmp_path, home)
    assert f"{codex}/memories/" in captured.memory and "linked summary" in captured.memory


@pytest.mark.parametrize(
    "config",
    ["", "[features]\nmemories = false\n", MEMORY_ON + "[memories]\nuse_memories = false\n"],
    ids=["default-off", "features-false", "use-memories-false"],
)
def test_memory_off_three_ways(cli, tmp_path, config):
    home, codex = home_of(tmp_path, config)
    put(codex, "memories_v2/memory_summary.md", SUMMARY)
    context, captured = compare(cli, tmp_path, home)
    assert captured.memory is None and context.why_no_memory.startswith("memory is off")


def test_generate_memories_off_and_dedicated_tools_still_inject(cli, tmp_path):
    home, codex = home_of(tmp_path, MEMORY_ON + "[memories]\ngenerate_memories = false\ndedicated_tools = true\n")
    put(codex, "memories_v2/memory_summary.md", SUMMARY)
    _context, captured = compare(cli, tmp_path, home)
    assert captured.memory is not None


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"v1\n\nCaf\xe9 au lait\n", "not valid UTF-8"), (b" \n\t\n\xe3\x80\x80\n", "blank")],
    ids=["latin-1", "blank"],
)
def test_a_summary_not_utf8_or_blank_injects_nothing(cli, tmp_path, content, why):
    home, codex = home_of(tmp_path)
    put(codex, "memories_v2/memory_summary.md", content)
    context, captured = compare(cli, tmp_path, home)
    assert captured.memory is None and why in context.why_no_memory


def test_rust_trim_keeps_a_bom_and_the_information_separators(cli, tmp_path):
    home, codex = home_of(tmp_path)
    put(codex, "memories_v2/memory_summary.md", "\u00a0\u2003\u3000\x85\ufeffkept\x1c\n\u2028 \n\x1f")
    _context, captured = compare(cli, tmp_path, home)
    assert "BEGINS =========\n\ufeffkept\x1c\n\u2028 \n\x1f\n=====" in captured.memory


def test_a_summary_that_names_the_placeholder_keeps_it(cli, tmp_path):
    home, codex = home_of(tmp_path)
    put(codex, "memories_v2/memory_summary.md", "see {{ base_path }} and {{ memory_summary }}")
    compare(cli, tmp_path, home)


@pytest.mark.parametrize(
    ("summary", "root"),
    [
        ("q" * 10_000, "memories_v2"),
        ("q" * 10_001, "memories_v2"),
        ("q" * 10_005, "memories"),
        ("東京" * 1_700 + "x", "memories_v2"),
        ("x" + "🦀" * 2_600, "memories_v2"),
        ("é" * 6_000, "memories"),
    ],
    ids=["10000", "10001", "10005-v1", "cjk", "4-byte", "2-byte-v1"],
)
def test_long_summaries_are_cut_in_the_middle_at_character_boundaries(cli, tmp_path, summary, root):
    home, codex = home_of(tmp_path)
    put(codex, f"{root}/memory_summary.md", "\n" + summary + "\n\n")
    context, captured = compare(cli, tmp_path, home)
    size = len(summary.encode())
    assert context.summary.truncation.cut == (size > 10_000)
    if root == "memories":
        assert len(captured.memory_parts) == 1
    else:
        assert [len(p.encode()) for p in captured.memory_parts] == context.to_obj()["memory_parts"]


@pytest.mark.parametrize("case", ["8900", "8901", "inside-a-character"])
def test_v2_parts_split_at_8900_bytes_on_a_character_boundary(cli, tmp_path, case):
    home, codex = home_of(tmp_path)
    root = os.path.join(codex, "memories_v2")
    start = render("v2", root, "X").encode().index(b"X")  # where the summary begins in the block
    fixed = len(render("v2", root, "").encode())
    if case == "inside-a-character":
        summary = "a" * (8_899 - start) + "東" + "a" * 40  # 東 spans bytes 8,899–8,901 of the block
    else:
        summary = "a" * (8_900 - fixed + (1 if case == "8901" else 0))
    put(codex, "memories_v2/memory_summary.md", summary)
    context, captured = compare(cli, tmp_path, home)
    sizes = [len(p.encode()) for p in captured.memory_parts]
    assert sizes == context.to_obj()["memory_parts"]
    assert sizes == {"8900": [8_900], "8901": [8_900, 1]}.get(case, sizes)
    if case == "inside-a-character":
        assert sizes[0] == 8_899


def test_codex_home_through_a_link_is_printed_canonical(cli, tmp_path):
    home = str(tmp_path / "home")
    put(tmp_path, "real-codex/config.toml", MEMORY_ON)
    put(tmp_path, "real-codex/memories_v2/memory_summary.md", SUMMARY)
    put(tmp_path, "real-codex/AGENTS.md", "global via CODEX_HOME")
    os.makedirs(home)
    os.symlink(tmp_path / "real-codex", tmp_path / "codex-link")
    _context, captured = compare(cli, tmp_path, home, codex_home=str(tmp_path / "codex-link"))
    assert f"{tmp_path / 'real-codex'}/memories_v2" in captured.memory


def test_a_home_dot_codex_link_is_used_as_written(cli, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    put(tmp_path, "dotfiles/codex/config.toml", MEMORY_ON)
    put(tmp_path, "dotfiles/codex/memories_v2/memory_summary.md", SUMMARY)
    os.symlink(tmp_path / "dotfiles" / "codex", home / ".codex")
    _context, captured = compare(cli, tmp_path, str(home) + "/")
    assert f"{home}/.codex/memories_v2" in captured.memory


def test_without_npm_the_comparison_is_skipped_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(codex_cli, "BINARY", str(tmp_path / "none"))
    monkeypatch.setattr(codex_cli.shutil, "which", lambda name: None)
    with pytest.raises(codex_cli.Unavailable, match="npm is not installed"):
        codex_cli.ensure_cli()
    assert shutil.which  # the real one is untouched outside the patch


def test_a_trusted_session_folder_lays_its_own_config_over_the_home(cli, tmp_path):
    """Not in the spec, found by experiment: ``<cwd>/.codex/config.toml`` counts when the home trusts that
    folder exactly — it can cut the budget and turn memory on; a trusted project root's file does not
    count for a session started below it, and an untrusted folder's file never counts."""
    root, sub = tmp_path / "r", tmp_path / "r" / "s"
    config = f'[projects."{root}"]\ntrust_level = "trusted"\n[projects."{sub}"]\ntrust_level = "trusted"\n'
    home, codex = home_of(tmp_path, config)
    put(codex, "memories_v2/memory_summary.md", SUMMARY)
    put(root, ".git/x", "")
    put(root, "AGENTS.md", "0123456789ABCDEFGHIJ")
    put(root, ".codex/config.toml", "project_doc_max_bytes = 10\n")
    put(sub, ".codex/config.toml", "project_doc_max_bytes = 12\n[features]\nmemories = true\n")
    context, captured = compare(cli, root, home)
    assert "<INSTRUCTIONS>\n0123456789\n</INSTRUCTIONS>" in captured.agents_md and captured.memory is None
    context, captured = compare(cli, sub, home)
    assert "<INSTRUCTIONS>\n0123456789AB\n</INSTRUCTIONS>" in captured.agents_md and captured.memory is not None
    assert context.config.project_layer == str(sub / ".codex" / "config.toml")
    put(home, ".codex/config.toml", MEMORY_ON)  # trusted no more: its layer is ignored
    _context, captured = compare(cli, sub, home)
    assert "0123456789ABCDEFGHIJ" in captured.agents_md


def test_links_lossy_global_dotted_keys_and_a_crlf_summary(cli, tmp_path):
    home, codex = home_of(tmp_path, "features.memories = true\n")
    put(codex, "AGENTS.md", b"caf\xe9 \xff\xfe ok\r\n")
    put(codex, "memories_v2/memory_summary.md", "v1\r\n\r\n- crlf kept inside\r\n")
    put(tmp_path, "q/.git/x", "")
    put(tmp_path, "target.md", "read through a link")
    os.symlink(tmp_path / "target.md", tmp_path / "q" / "AGENTS.md")
    os.makedirs(tmp_path / "dir")
    os.makedirs(tmp_path / "q" / "sub")
    os.symlink(tmp_path / "dir", tmp_path / "q" / "sub" / "AGENTS.md")  # a link to a folder: not a file
    put(tmp_path, "q/sub/AGENTS.override.md", "")
    _context, captured = compare(cli, tmp_path / "q" / "sub", home)
    assert (
        "caf\ufffd \ufffd\ufffd ok\n\n--- project-doc ---\n\nread through a link\n</INSTRUCTIONS>" in captured.agents_md
    )
    assert "v1\r\n\r\n- crlf kept inside\n=====" in captured.memory
