"""nanobot's prompt preview: rendering vectors (spec §4, §4.1), keep.md as its own part, exact mode."""

from __future__ import annotations

import importlib.util

import pytest

from keepgui.backends.nanobot import context as prompt_module
from keepgui.backends.nanobot.context import (
    BOOTSTRAP_SEPARATOR,
    KEEP_NOTE,
    NOT_REPRODUCED,
    PART_SEPARATOR,
    Templates,
    build_preview,
    estimate_tokens,
    read_as_nanobot,
    render_parts,
)
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.core.errors import KeepguiError, Unreadable
from tests.backends.nanobot.nanobot_helpers import SPEC_FIXTURE, make_workspace
from tests.conftest import tree_digest

HAVE_NANOBOT = importlib.util.find_spec("nanobot") is not None and prompt_module.nanobot_version() is not None
needs_nanobot = pytest.mark.skipif(not HAVE_NANOBOT, reason="the nanobot package (nanobot-ai) is not installed")


def files(**kw):
    names = {
        "agents": "AGENTS.md",
        "soul": "SOUL.md",
        "user": "USER.md",
        "memory": "memory/MEMORY.md",
        "keep": "keep.md",
    }
    return {names[k]: v for k, v in kw.items()}


def test_separators_are_nanobots():
    assert PART_SEPARATOR == "\n\n---\n\n" and BOOTSTRAP_SEPARATOR == "\n\n"


def test_all_parts_vector():
    parts, text = render_parts(files(agents="A\n", soul="S\n", user="U\n", memory="M\n", keep="- k\n"), None)
    assert text == (
        "## AGENTS.md\n\nA\n\n\n## SOUL.md\n\nS\n\n\n## USER.md\n\nU\n\n\n---\n\n# Memory\n\n## Long-term Memory\nM\n"
    )
    assert [p.key for p in parts] == ["AGENTS.md", "SOUL.md", "USER.md", "memory", "keep"]
    assert [p.injected for p in parts] == [True, True, True, True, False]
    assert parts[0].text == "## AGENTS.md\n\nA\n" and parts[3].text == "# Memory\n\n## Long-term Memory\nM\n"
    keep = parts[4]
    assert keep.text == "- k\n" and KEEP_NOTE in keep.status and "not injected" in keep.status


def test_no_trailing_newline_and_only_some_files():
    _parts, text = render_parts(files(soul="S", user=None, agents=None, memory="M"), None)
    assert text == "## SOUL.md\n\nS\n\n---\n\n# Memory\n\n## Long-term Memory\nM"


@pytest.mark.parametrize("content", ["", "   \n\n", "\t"])
def test_blank_bootstrap_files_are_skipped(content):
    parts, text = render_parts(files(agents=content, soul="S", user=content, memory=None), None)
    assert text == "## SOUL.md\n\nS"
    assert parts[0].status == "skipped: the file is empty" and not parts[0].injected and parts[0].text == ""


def test_memory_is_left_out_only_when_truly_empty():
    assert render_parts(files(memory=""), None)[1] == ""
    # nanobot tests `if memory`, not `if memory.strip()`: whitespace is injected
    assert render_parts(files(memory="\n"), None)[1] == "# Memory\n\n## Long-term Memory\n\n"
    parts, text = render_parts(files(), None)
    assert text == "" and parts[3].status == "skipped: the file does not exist"
    assert parts[4].status.startswith("not injected; the file does not exist")


def test_memory_alone_has_no_separator():
    assert render_parts(files(memory="M"), None)[1] == "# Memory\n\n## Long-term Memory\nM"


def test_bootstrap_alone_has_no_separator():
    assert render_parts(files(agents="A", user="U"), None)[1] == "## AGENTS.md\n\nA\n\n## USER.md\n\nU"


TEMPLATES = Templates(
    "test",
    agents="# Agents template\n",
    user="# User template\n",
    soul="# Soul now\n",
    legacy_soul="# Soul legacy\n",
    memory="# Memory template\n",
)


def test_template_detection_with_templates():
    parts, text = render_parts(
        files(
            agents="  # Agents template  \n\n",
            user="# User template",
            soul="# Soul legacy",
            memory="\n# Memory template\n",
        ),
        TEMPLATES,
    )
    assert text == "## SOUL.md\n\n# Soul now\n"  # legacy SOUL.md replaced by the current template
    assert [p.injected for p in parts[:4]] == [False, True, False, False]  # AGENTS, SOUL, USER, memory
    assert "template" in parts[0].status and "template" in parts[2].status and "template" in parts[3].status
    assert "legacy" in parts[1].status
    # a cosmetic edit makes it count
    assert render_parts(files(user="# User template!"), TEMPLATES)[1] == "## USER.md\n\n# User template!"
    # SOUL.md equal to the *current* template is not skipped (only AGENTS.md and USER.md are)
    assert render_parts(files(soul="# Soul now\n"), TEMPLATES)[1] == "## SOUL.md\n\n# Soul now\n"


def test_reading_like_nanobot():
    assert read_as_nanobot(b"a\r\nb\rc\n", "x") == "a\nb\nc\n"
    assert read_as_nanobot(b"\xef\xbb\xbfhi", "x") == "\ufeffhi"
    assert read_as_nanobot(None, "x") is None
    with pytest.raises(Unreadable, match="x: byte 1"):
        read_as_nanobot(b"a\xff", "x")


def test_sizes_and_token_estimates():
    parts, _text = render_parts(files(soul="é" * 10), None)
    soul = parts[1]
    assert soul.text == "## SOUL.md\n\n" + "é" * 10
    assert soul.size_bytes == len(soul.text.encode("utf-8")) == 32
    assert soul.tokens == estimate_tokens(soul.text) == 6  # 22 characters / 4, rounded up
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


def test_built_in_preview_of_a_workspace(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", soul="Be calm.\r\n", agents="# Rules\n", memory="# M\n- fact\n"))
    before = tree_digest(ws.root)
    preview = build_preview(ws, exact=False)
    assert preview.mode == "built-in" and preview.system_prompt is None and preview.nanobot_version is None
    assert preview.memory_prompt == (
        "## AGENTS.md\n\n# Rules\n\n\n## SOUL.md\n\nBe calm.\n\n\n"
        "## USER.md\n\n# User\n\nKept facts are in keep.md; read it every turn.\n"
        "\n\n---\n\n# Memory\n\n## Long-term Memory\n# M\n- fact\n"
    )
    assert preview.part("keep").text == SPEC_FIXTURE and not preview.part("keep").injected
    assert preview.injected_bytes == len(preview.memory_prompt.encode())
    assert preview.injected_tokens == estimate_tokens(preview.memory_prompt)
    assert preview.not_reproduced == NOT_REPRODUCED
    joined = " ".join(preview.not_reproduced)
    for what in ("identity", "tool contract", "skills", "recent history", "template detection"):
        assert what in joined
    assert "not checked" in preview.part("USER.md").status
    obj = preview.to_obj()
    assert obj["mode"] == "built-in" and obj["parts"][4]["key"] == "keep" and obj["parts"][4]["injected"] is False
    assert tree_digest(ws.root) == before  # a preview never writes


@pytest.mark.skipif(HAVE_NANOBOT, reason="nanobot is installed here")
def test_exact_mode_without_nanobot_says_how_to_get_it(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws"))
    with pytest.raises(KeepguiError, match="pip install nanobot-ai"):
        build_preview(ws, exact=True)
    assert build_preview(ws).mode == "built-in"  # auto falls back quietly


@needs_nanobot
def test_exact_mode_uses_nanobots_own_prompt_and_never_writes_the_workspace(tmp_path):
    ws = Workspace(make_workspace(tmp_path / "ws", soul="Be calm.\n", agents="# Rules\n- Use gofmt\n"))
    before = tree_digest(ws.root)
    preview = build_preview(ws, exact=True)
    assert preview.mode == "exact" and preview.nanobot_version
    assert preview.notes == ()  # keepgui's rendering of each part is inside nanobot's prompt
    for part in preview.parts:
        if part.injected:
            assert part.text in preview.system_prompt
    assert SPEC_FIXTURE not in preview.system_prompt  # keep.md is not injected
    assert "keepgui-nanobot-preview" not in preview.system_prompt  # the scratch copy's path never shows
    assert tree_digest(ws.root) == before


@needs_nanobot
def test_exact_mode_detects_untouched_templates(tmp_path):
    templates = prompt_module.bundled_templates()
    ws = Workspace(make_workspace(tmp_path / "ws", user=templates.user, memory=templates.memory))
    preview = build_preview(ws, exact=True)
    assert not preview.part("USER.md").injected and not preview.part("memory").injected
    assert "## USER.md" not in preview.system_prompt and "## Long-term Memory" not in preview.system_prompt


# Workspaces whose reading is easy to get wrong: each injected part keepgui renders must be a
# whole section of the prompt nanobot's own ContextBuilder builds (byte for byte), and each part
# keepgui says is skipped must be absent from it. `make nanobot-compare` installs nanobot-ai
# into build/nanobot-venv and runs these.
def _edge_workspaces() -> dict[str, dict[str, str | None]]:
    t = prompt_module.bundled_templates()
    cases: dict[str, dict[str, str | None]] = {
        "plain": {"soul": "Be calm.\n", "agents": "# Rules\n- Use gofmt\n"},
        "no final newline": {"soul": "S", "agents": "A", "user": "U", "memory": "M"},
        "CRLF": {"soul": "a\r\nb\r\n", "memory": "x\r\n"},
        "BOM": {"agents": "\ufeffA\n"},
        "empty and blank": {"soul": "", "agents": "  \n", "user": ""},
        "blank memory": {"memory": "\n\n  \n"},
        "spaces around": {"memory": "  M  \n\n\n", "soul": "\n\nS\n"},
        "non-ASCII": {"agents": "café ☕ 𝔘\n", "memory": "e\u0301\n"},
        "missing": {"user": None, "memory": None},
        "big memory": {"memory": "line\n" * 20_000},
    }
    if t is not None:
        cases["untouched templates"] = {"user": t.user, "memory": t.memory, "soul": t.soul}
        if t.legacy_soul is not None:
            cases["legacy SOUL.md"] = {"soul": t.legacy_soul}
    return cases


@needs_nanobot
@pytest.mark.parametrize("case", sorted(_edge_workspaces()) if HAVE_NANOBOT else [])
def test_every_part_is_a_section_of_nanobots_own_prompt(tmp_path, case):
    ws = Workspace(make_workspace(tmp_path / "ws", **_edge_workspaces()[case]))
    preview = build_preview(ws, exact=True)
    prompt = preview.system_prompt
    assert preview.mode == "exact" and preview.notes == ()
    for part in preview.parts:
        if part.injected:
            at = prompt.find(part.text)
            assert at >= 0, part.key
            assert at == 0 or prompt[:at].endswith("\n\n"), part.key  # a section starts on its own
        elif part.key in ("AGENTS.md", "SOUL.md", "USER.md"):
            assert f"## {part.key}\n" not in prompt, part.key
        elif part.key == "memory":
            assert "## Long-term Memory" not in prompt
