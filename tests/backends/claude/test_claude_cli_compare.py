"""keepgui's "what the next session sees" against the real Claude Code CLI, byte for byte.

Each test builds a home and a project tree, runs the real CLI in it (offline:
its first request goes to a loopback server, see :mod:`tests.backends.claude.claude_cli`)
and compares the first text block of the first user message with
``session_context(...).reminder``. The CLI is installed into ``build/claude-cli``
when missing (``make claude-cli``); without npm or the registry the tests skip
and say why. The trees cover every rule keepgui reproduces: the order of the
layers, nested ``CLAUDE.md`` files, rules with and without ``paths:``, imports
(code spans, too-deep chains, external ones, extensions), an index over 200
lines, over 25,000 units with long and non-ASCII lines, front matter, HTML
comments, line endings, invisible characters, worktrees, ``CLAUDE_CONFIG_DIR``,
settings, symbolic links and long paths.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from keepgui.backends.claude import CHECKED_VERSION
from keepgui.backends.claude.context import PREAMBLE, session_context
from keepgui.backends.claude.layout import ClaudeEnv, project_folder_name
from keepgui.backends.claude.memory import TOPIC_LIMIT
from tests.backends.claude import claude_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to make the project trees")

_TIMES: list[tuple[str, float]] = []
_BYTES: list[int] = []


def _say(request, text: str) -> None:
    """Print past pytest's capture (the CLI version belongs in the test output)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(text)


@pytest.fixture(scope="module")
def cli(request):
    """The real CLI (installed into the cache when missing), its version printed once."""
    try:
        binary, version, seconds = claude_cli.ensure_cli()
    except claude_cli.Unavailable as exc:
        pytest.skip(str(exc))
    note = f", installed into {claude_cli.CACHE} in {seconds:.1f} s" if seconds else ""
    _say(request, f"\nclaude CLI {version} (keepgui checked against {CHECKED_VERSION}{note})")
    yield binary
    if _TIMES:
        times = sorted(t for _name, t in _TIMES)
        _say(
            request,
            f"\nclaude CLI: {len(times)} trees compared byte for byte, {len(_BYTES)} equal "
            f"({sum(_BYTES):,} bytes of reminder), in {sum(times):.1f} s (median {times[len(times) // 2]:.2f} s per run)",
        )


def put(root, rel: str, content: str | bytes) -> str:
    """Write a file of a tree (test setup, not keepgui's writing)."""
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def repo(path):
    """A new git repository at ``path`` (parents made)."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=path)
    return path


def git(*args: str, cwd) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "init.defaultBranch=main", *args],
        cwd=str(cwd),
        check=True,
        capture_output=True,
    )


def memory_dir(home, project: str, config: str | None = None) -> str:
    """The default memory folder of a project (as the CLI names it)."""
    base = config or os.path.join(str(home), ".claude")
    return os.path.join(base, "projects", project_folder_name(project), "memory")


def compare(cli, name: str, cwd, home, env: dict[str, str] | None = None):
    """Run the CLI in ``cwd`` and assert keepgui's reminder is the same text; returns the context."""
    cwd, home = os.path.realpath(str(cwd)), str(home)
    captured = claude_cli.first_request(cli, cwd, home, env)
    _TIMES.append((name, captured.seconds))
    first = captured.first_text
    expected = first if first.startswith(f"<system-reminder>\n{PREAMBLE}") else None
    context = session_context(cwd, ClaudeEnv.from_environ({"HOME": home, **(env or {})}))
    if context.reminder != expected:
        # a readable failure: the first differing line
        got, want = (context.reminder or "").split("\n"), (expected or "").split("\n")
        line = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
        pytest.fail(
            f"{name}: keepgui differs from the CLI at reminder line {line + 1}:\n"
            f"  CLI:     {want[line] if line < len(want) else '<end>'!r}\n"
            f"  keepgui: {got[line] if line < len(got) else '<end>'!r}"
        )
    _BYTES.append(len((expected or "").encode("utf-8")))
    return context


# ---------------------------------------------------------------------- trees


def test_layers_in_order_with_rules_and_nested_files(cli, tmp_path):
    home, top = tmp_path / "home", tmp_path / "work"
    put(home, ".claude/CLAUDE.md", "# Me\n\nAlways answer briefly. @prefs.md\n")
    put(home, ".claude/prefs.md", "Prefers metric units.\n")
    for name in ("zeta.md", "alpha.md", "sub/beta.md", "mid.md"):
        put(home, f".claude/rules/{name}", f"user rule {name}\n")
    put(home, ".claude/rules/py.md", '---\npaths: ["**/*.py"]\n---\nPython rule (conditional)\n')
    put(home, ".claude/rules/notes.txt", "not a rule\n")
    put(top, "CLAUDE.md", "Above the repository: loaded as a project file too.\n")
    mono = top / "mono"
    repo(mono)
    put(mono, "CLAUDE.md", "Monorepo rules. @docs/a.md and `@docs/b.md`\n")
    put(mono, "docs/a.md", "doc a (outside the launch folder: needs approval)\n")
    put(mono, ".claude/CLAUDE.md", "mono .claude/CLAUDE.md\n")
    put(mono, ".claude/rules/general.md", "general rule\n")
    put(mono, ".claude/rules/api/http.md", "---\npaths:\n  - src/api/**\n---\nhttp rule\n")
    put(mono, ".claude/rules/star.md", '---\npaths: "**"\n---\nall files: unconditional\n')
    put(mono, ".claude/rules/comma.md", '---\npaths: "src/**, lib/**"\n---\nconditional\n')
    put(mono, ".claude/rules/broken.md", "---\npaths: [\n---\ninvalid YAML with paths: conditional\n")
    put(mono, ".claude/rules/broken2.md", "---\ntitle: [\n---\ninvalid YAML without paths: loads\n")
    put(mono, ".claude/rules/UPPER.MD", "not .md: skipped\n")
    put(mono, ".claude/rules/yes.md", "---\npaths: yes\n---\nYAML 1.2: a string, so conditional\n")
    put(mono, "CLAUDE.local.md", "mono local\n")
    put(mono, "svc/CLAUDE.md", "svc rules\n")
    put(mono, "svc/.claude/rules/svc.md", "svc rule\n")
    put(mono, "svc/CLAUDE.local.md", "svc local\n")
    put(mono, "svc/deep/CLAUDE.md", "nested: loads later\n")
    put(memory_dir(home, str(mono)), "MEMORY.md", "- [Build](build.md) — make test runs everything\n")
    context = compare(cli, "layers", mono / "svc", home)
    assert [f.path for f in context.later if f.role == "nested"] == [str(mono / "svc" / "deep" / "CLAUDE.md")]
    assert {os.path.basename(f.path) for f in context.later if f.role == "rules"} == {
        "py.md",
        "http.md",
        "comma.md",
        "broken.md",
        "yes.md",
    }


def test_imports_depth_code_and_extensions(cli, tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    repo(proj)
    put(home, ".claude/CLAUDE.md", "user @~/shared/u.md\n")
    put(home, "shared/u.md", "user-scope external import: loads without approval\n")
    put(
        proj,
        "CLAUDE.md",
        "root @a.md `@code.md` @comma.md, me@mail.md @missing.md @./dup.md @dup.md\n\n"
        "```\n@fenced.md\n```\n\n    @indented.md\n\n<div>\n@html.md\n</div>\n\n"
        "@img.png @noext @data.json @frag.md#part @sp\\ ace.md @notes.markdown "
        f"@{tmp_path}/outside.md @~/shared/p.md\n\n"
        "- list @li.md and [link @lt.md](@href.md) \\@esc.md \\\\@bs.md &amp;@ent.md\n",
    )
    for name, body in (
        ("a.md", "A @b.md"),
        ("b.md", "B @c.md"),
        ("c.md", "C @d.md"),
        ("d.md", "D @e.md"),
        ("e.md", "E: five hops, not loaded"),
        ("dup.md", "dup @CLAUDE.md"),
        ("code.md", "code"),
        ("fenced.md", "x"),
        ("indented.md", "x"),
        ("html.md", "x"),
        ("img.png", "png"),
        ("noext", "no extension: loads"),
        ("data.json", '{"json": true}'),
        ("frag.md", "frag"),
        ("sp ace.md", "escaped space"),
        ("notes.markdown", "x"),
        ("li.md", "list item"),
        ("lt.md", "link text"),
        ("href.md", "x"),
        ("esc.md", "x"),
        ("bs.md", "after \\\\"),
        ("ent.md", "x"),
    ):
        put(proj, name, body + "\n")
    put(tmp_path, "outside.md", "outside: not approved\n")
    put(home, "shared/p.md", "outside: not approved\n")
    context = compare(cli, "imports", proj, home)
    skipped = {os.path.basename(f.path): f.reason for f in context.files if f.role == "import" and not f.loaded}
    assert "deep" in skipped["e.md"] and "approve" in skipped["outside.md"] and ".png" in skipped["img.png"]


def test_external_imports_once_approved_and_links(cli, tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    repo(proj)
    put(tmp_path, "shared/team.md", "team conventions @more.md\n")
    put(tmp_path, "shared/more.md", "more (relative to the imported file)\n")
    put(tmp_path, "linked/CLAUDE.md", "a CLAUDE.md reached through a link @near.md\n")
    put(tmp_path, "linked/near.md", "next to the link's target\n")
    put(proj, "near.md", "next to the link itself\n")
    os.symlink(tmp_path / "linked" / "CLAUDE.md", proj / "CLAUDE.md")
    os.makedirs(proj / ".claude" / "rules")
    os.symlink(tmp_path / "linked" / "CLAUDE.md", proj / ".claude" / "CLAUDE.md")  # the same file: once
    put(proj, "inside/r.md", "rule through a linked folder\n")
    os.symlink(proj / "inside", proj / ".claude" / "rules" / "in")
    put(tmp_path, "elsewhere/o.md", "rule linked from outside (approved)\n")
    os.symlink(tmp_path / "elsewhere" / "o.md", proj / ".claude" / "rules" / "out.md")
    os.symlink(proj / ".claude" / "rules", proj / ".claude" / "rules" / "loop")
    put(proj, ".claude/rules/own.md", f"own rule @{tmp_path}/shared/team.md\n")
    put(
        home,
        ".claude.json",
        json.dumps(
            {
                "projects": {
                    str(proj.resolve()): {
                        "hasClaudeMdExternalIncludesApproved": True,
                        "hasClaudeMdExternalIncludesWarningShown": True,
                    }
                }
            }
        ),
    )
    context = compare(cli, "approved", proj, home)
    assert context.approved


def test_index_over_200_lines_with_front_matter_and_comments(cli, tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    repo(proj)
    mem = memory_dir(home, str(proj.resolve()))
    lines = ["---", "name: index", "---", "# Memory index", "", "<!--", "kept out of the count", "-->"]
    for i in range(1, 231):
        lines.append(f"- [Note {i}](note_{i}.md) — hook number {i}")
        put(
            mem,
            f"note_{i}.md",
            f"---\nname: note-{i}\ndescription: note {i}\nmetadata:\n  type: project\n---\n\nFact {i}.\n",
        )
    put(mem, "MEMORY.md", "\n".join(lines) + "\n")
    context = compare(cli, "index-lines", proj, home)
    cut = context.folder.index.cut
    assert cut.reason == "lines" and cut.lines == 232 and cut.kept_lines == 200  # heading + blank + 230
    assert [e.title for e in context.hidden][:2] == ["Note 199", "Note 200"]
    assert len(context.hidden) == 32 and context.hidden[0].line == 207  # front matter and comment lines counted
    memory = context.to_obj()["files"][-1]
    assert memory["role"] == "memory-index" and memory["loaded"] and memory["cut"]["file_line"] == 207


def test_index_over_the_size_limit_with_long_non_ascii_lines(cli, tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    repo(proj)
    mem = memory_dir(home, str(proj.resolve()))
    lines = []
    for i in range(120):
        if i % 3 == 0:
            text = "記憶" * 90 + f" {i}"
        elif i % 3 == 1:
            text = "🚀" * 80 + f" emoji {i} " + "é" * 20
        else:
            text = f"mixed {i} \u200b\u2060zero-width\ufeff and a\x07bell and e\u0301 " + "x" * 180
        lines.append(f"- [Entry {i}](entry_{i}.md) — {text}")
    put(mem, "MEMORY.md", "\r\n".join(lines) + "\r\n")
    context = compare(cli, "index-size", proj, home)
    assert context.folder.index.cut.reason == "size"


def test_index_hard_cut_and_both_limits(cli, tmp_path):
    home = tmp_path / "home"
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        repo(folder)
    put(memory_dir(home, str(one.resolve())), "MEMORY.md", "- " + "long " * 6000 + "\n- [After](after.md)\n")
    put(
        memory_dir(home, str(two.resolve())),
        "MEMORY.md",
        "".join(f"- [n{i}](n{i}.md) — " + "z" * 100 + "\n" for i in range(220)),
    )
    assert compare(cli, "index-hard-cut", one, home).folder.index.cut.partial
    assert compare(cli, "index-both", two, home).folder.index.cut.reason == "both"


def test_comments_front_matter_encodings(cli, tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    repo(proj)
    put(home, ".claude/CLAUDE.md", b"\xef\xbb\xbf---\nk: v\n---\nBOM then front matter \xff\xfe\xe6\x97 bad bytes\n")
    cases = {
        "c01": "para\n<!-- interrupts the paragraph -->\nmore\n",
        "c02": "x\n\n  <!-- indented two -->\n\ny\n\n    <!-- indented four: code -->\n",
        "c03": "<!-- a --> mid <!-- b --> end\n",
        "c04": "- item\n  <!-- in a list: kept -->\n\n> <!-- in a quote: kept -->\n",
        "c05": "a\r\n\r\n<!-- c -->\r\n\r\nb\r\n",
        "c06": "crlf without comments\r\nstays\r\n",
        "c07": "```\n<!-- in code -->\n```\r\nwith a CR\r\n",
        "c08": "x\n\n<!-- unterminated\n\nstill\n",
        "c09": "<!---->\n\n<!-->\n\n<!--->\n\nend\n",
        "c10": "---\ntitle: a --- b\n---\nstray dashes\n",
        "c11": "\n---\nnot: front matter\n---\nbody\n",
        "c12": "---\nno: closing\nbody\n",
        "c13": "---\nonly: front\n---\n\n<!-- and a comment -->\n",
        "c14": "text <!--\ninline, multi-line\n--> after\n",
        "c15": "<div>\n<!-- in html -->\n</div>\n",
        "c16": "> quote\n<!-- lazy line -->\nafter\n",
        "c17": "tab\there \x00 nul \x85 nel \u2028 ls kept as is\n",
    }
    for name, text in cases.items():
        put(proj, f".claude/rules/{name}.md", text)
    compare(cli, "comments", proj, home)


def test_worktrees_share_memory_and_nested_ones_skip_the_main_checkout(cli, tmp_path):
    home, main = tmp_path / "home", tmp_path / "app"
    repo(main)
    put(main, "CLAUDE.md", "main checkout\n")
    git("add", "CLAUDE.md", cwd=main)
    git("commit", "-qm", "init", cwd=main)
    put(main, "CLAUDE.local.md", "main local\n")
    git("worktree", "add", "-q", str(tmp_path / "app-wt"), "-b", "wt", cwd=main)
    git("worktree", "add", "-q", str(main / ".claude" / "worktrees" / "feat"), "-b", "feat", cwd=main)
    put(main, ".claude/worktrees/feat/CLAUDE.md", "the worktree's own checkout (edited)\n")
    put(memory_dir(home, str(main.resolve())), "MEMORY.md", "- [Shared](shared.md) — every worktree sees this\n")
    linked = compare(cli, "worktree-linked", tmp_path / "app-wt", home)
    nested = compare(cli, "worktree-nested", main / ".claude" / "worktrees" / "feat", home)
    assert linked.memory.path == nested.memory.path == memory_dir(home, str(main.resolve()))


def test_config_dir_and_settings(cli, tmp_path):
    home, proj, config = tmp_path / "home", tmp_path / "proj", tmp_path / "config"
    repo(proj)
    put(home, ".claude/CLAUDE.md", "under HOME: ignored when CLAUDE_CONFIG_DIR is set\n")
    put(config, "CLAUDE.md", "config-dir user file\n")
    put(config, "rules/r.md", "config-dir rule\n")
    put(proj, "CLAUDE.md", "project\n")
    put(proj, "excluded/CLAUDE.md", "nested, never mind\n")
    put(proj, "CLAUDE.local.md", "excluded by claudeMdExcludes\n")
    put(config, "settings.json", json.dumps({"claudeMdExcludes": ["**/CLAUDE.local.md", "**/MEMORY.md"]}))
    put(proj, ".claude/settings.local.json", json.dumps({"autoMemoryDirectory": str(tmp_path / "mem")}))
    put(tmp_path, "mem/MEMORY.md", "- [Elsewhere](elsewhere.md) — autoMemoryDirectory wins; excludes never drop it\n")
    context = compare(cli, "config-dir", proj, home, {"CLAUDE_CONFIG_DIR": str(config)})
    assert context.memory.how == "setting"


def test_auto_memory_off_and_nothing_to_load(cli, tmp_path):
    home, proj, empty = tmp_path / "home", tmp_path / "proj", tmp_path / "empty"
    for folder in (proj, empty):
        repo(folder)
    put(proj, "CLAUDE.md", "project only\n")
    put(proj, ".claude/settings.json", json.dumps({"autoMemoryEnabled": False}))
    put(memory_dir(home, str(proj.resolve())), "MEMORY.md", "- [Hidden](hidden.md) — auto memory is off\n")
    put(memory_dir(home, str(empty.resolve())), "MEMORY.md", "  \n\n")
    put(proj, "CLAUDE.local.md", "x" * (4 * 1024 * 1024 + 1) + "\n")  # over 4 MiB: not loaded
    assert compare(cli, "memory-off", proj, home).folder is None
    assert compare(cli, "nothing", empty, home).reminder is None
    assert compare(cli, "safe-mode", proj, home, {"CLAUDE_CODE_SAFE_MODE": "1"}).reminder is None


def test_project_under_home_plain_folder_and_long_path(cli, tmp_path):
    home = tmp_path / "home"
    inside = home / "code" / "café zoë"
    repo(inside)
    put(home, ".claude/CLAUDE.md", "user file, seen once although HOME is an ancestor\n")
    put(home, ".claude/rules/u.md", "user rule, seen once\n")
    put(inside, "CLAUDE.md", "non-ASCII path\n")
    put(memory_dir(home, str(inside.resolve())), "MEMORY.md", "- [Accents](accents.md) — folder name check\n")
    compare(cli, "under-home", inside, home)
    plain = tmp_path / "notes" / "sub"
    plain.mkdir(parents=True)
    put(tmp_path, "notes/CLAUDE.md", "plain folder, no git\n")
    put(memory_dir(home, str(plain.resolve())), "MEMORY.md", "- [Plain](plain.md) — keyed by the folder itself\n")
    compare(cli, "plain-folder", plain, home)
    deep = tmp_path.joinpath(*(["deep"] * 45), "repo")
    repo(deep)
    folder = memory_dir(home, str(deep.resolve()))
    assert len(os.path.basename(os.path.dirname(folder))) > 200
    put(folder, "MEMORY.md", "- [Long](long.md) — a hashed folder name\n")
    assert "Long" in compare(cli, "long-path", deep, home).reminder


def test_symlinked_memory_folder_and_project(cli, tmp_path):
    home, real = tmp_path / "home", tmp_path / "real" / "proj"
    repo(real)
    os.symlink(real, tmp_path / "link")
    put(real, "CLAUDE.md", "reached through a linked folder: named by its physical path\n")
    put(tmp_path, "store/MEMORY.md", "- [Linked](linked.md) — the memory folder is a link\n")
    folder = memory_dir(home, str(real.resolve()))
    os.makedirs(os.path.dirname(folder))
    os.symlink(tmp_path / "store", folder)
    compare(cli, "symlinks", tmp_path / "link", home)


def test_hostile_memory_folders(cli, tmp_path):
    """Topic files the CLI never opens at start (a FIFO, a link out, bad UTF-8, bad YAML, over 4 MiB)
    leave the index injected as it is; an index with bad bytes is sent with U+FFFD for each; an index
    that is a FIFO or over 4 MiB (4,194,305 bytes) is skipped while one of exactly 4 MiB loads (no hang:
    each run is bounded by first_request's timeout); a linked index is followed."""
    home = tmp_path / "home"
    trees = {
        name: repo(tmp_path / name)
        for name in ("topics", "bad-index", "fifo-index", "link-index", "huge-index", "limit-index")
    }
    mem = memory_dir(home, str(trees["topics"].resolve()))
    put(mem, "ok.md", "---\nname: ok\n---\nfine\n")
    put(mem, "badutf8.md", b"---\nname: caf\xe9\n---\nbody \xff\xfe end\n")
    put(mem, "badyaml.md", "---\nname: [unclosed\n---\nbody\n")
    put(mem, "onlyfence.md", "---\n")
    put(mem, "huge.md", b"x" * (TOPIC_LIMIT + 1))
    os.mkfifo(os.path.join(mem, "fifo.md"))
    os.symlink("/etc/passwd", os.path.join(mem, "outside.md"))
    os.makedirs(os.path.join(mem, "deep", "a"))
    os.symlink("..", os.path.join(mem, "deep", "a", "loop"))
    put(
        mem,
        "MEMORY.md",
        "- [ok](ok.md) — fine\n- [gone](missing.md)\n- [fifo](fifo.md)\n- [out](outside.md)\n"
        "- [esc](../../../../etc/passwd)\n",
    )
    context = compare(cli, "hostile-topics", trees["topics"], home)
    assert {str(p.path).rsplit("/", 1)[-1] for p in context.folder.problems} >= {"fifo.md", "outside.md", "huge.md"}
    put(memory_dir(home, str(trees["bad-index"].resolve())), "MEMORY.md", b"- [a](a.md) caf\xe9 \xff\xfe end\n")
    assert "caf\ufffd \ufffd\ufffd end" in compare(cli, "bad-utf8-index", trees["bad-index"], home).reminder
    os.makedirs(memory_dir(home, str(trees["fifo-index"].resolve())))
    os.mkfifo(os.path.join(memory_dir(home, str(trees["fifo-index"].resolve())), "MEMORY.md"))
    assert compare(cli, "fifo-index", trees["fifo-index"], home).reminder is None
    put(tmp_path, "elsewhere/MEMORY.md", "- [linked](l.md) — an index that is a link out of the folder\n")
    os.makedirs(memory_dir(home, str(trees["link-index"].resolve())))
    os.symlink(
        tmp_path / "elsewhere" / "MEMORY.md",
        os.path.join(memory_dir(home, str(trees["link-index"].resolve())), "MEMORY.md"),
    )
    assert "linked" in compare(cli, "link-index", trees["link-index"], home).reminder
    line = b"- [x](x.md) " + b"y" * 100 + b"\n"
    for name, size in (("huge-index", TOPIC_LIMIT + 1), ("limit-index", TOPIC_LIMIT)):
        # the CLI's limit is exactly 4 MiB: 4,194,304 bytes load (cut at 200 lines), one more and it is skipped
        put(memory_dir(home, str(trees[name].resolve())), "MEMORY.md", (line * (size // len(line) + 1))[:size])
        reminder = compare(cli, name, trees[name], home).reminder
        assert (reminder is None) == (size > TOPIC_LIMIT)


def test_the_demo_home(cli, tmp_path):
    from keepgui.core.demo import make_demo_copy

    copy = make_demo_copy(str(tmp_path))
    context = compare(cli, "demo", copy.claude_project, copy.claude_home)
    assert context.folder.index.cut.reason == "lines" and len(context.hidden) == 20


def test_without_npm_the_comparison_is_skipped_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setattr(claude_cli, "BINARY", str(tmp_path / "no-claude"))
    monkeypatch.setattr(claude_cli.shutil, "which", lambda name: None)
    with pytest.raises(claude_cli.Unavailable, match="npm is not installed"):
        claude_cli.ensure_cli()
