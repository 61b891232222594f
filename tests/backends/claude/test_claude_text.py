"""Claude Code's text rules, as vectors observed on the real CLI (2.1.332): JS string semantics, front
matter, HTML comments, imports, rule ``paths:``, project-folder names. No CLI needed to run these."""

from __future__ import annotations

import unicodedata

import pytest

from keepgui.backends.claude.instructions import IMPORT_EXTENSIONS, excluded_by, rule_globs
from keepgui.backends.claude.jstext import format_kb, js_trim, utf16_len, utf16_slice
from keepgui.backends.claude.layout import djb2_base36, project_folder_name, sanitize
from keepgui.backends.claude.markdown import decode, find_imports, split_front_matter, strip_comments


@pytest.mark.parametrize(
    "units, text",
    [
        (29999, "29.3KB"),
        (45299, "44.2KB"),
        (26619, "26KB"),
        (30099, "29.4KB"),
        (26729, "26.1KB"),
        (25198, "24.6KB"),
        (25000, "24.4KB"),
        (25856, "25.3KB"),
        (1048476, "1023.9KB"),
        (1048576, "1MB"),
        (1572941, "1.5MB"),
        (4194303, "4MB"),
    ],
)  # 25856 is an exact half: JS rounds it up; from 1024 KB on, MB (seen on the real CLI at 1.5 and 4 MiB)
def test_sizes_are_written_like_the_cli_warning(units, text):
    assert format_kb(units) == text


def test_js_strings_count_utf16_units_and_trim_js_whitespace():
    assert utf16_len("a🚀漢") == 4
    assert utf16_slice("- " + "🚀" * 40, 79) == "- " + "🚀" * 38  # never half an emoji
    assert js_trim("\ufeff\u3000 x \u2028") == "x"
    assert js_trim("\u200b x") == "\u200b x"  # a zero-width space is not JS white space


def test_decoding_drops_a_bom_and_replaces_bad_bytes():
    assert decode(b"\xef\xbb\xbf---\nk: v\n---\nbody \xff\xfe") == "---\nk: v\n---\nbody \ufffd\ufffd"


@pytest.mark.parametrize(
    "text, body",
    [
        ("---\ntitle: x\n---\nbody\n", "body\n"),
        ("---\ntitle: a --- b\npaths: src/**\n---\nr9\n", "b\npaths: src/**\n---\nr9\n"),  # closing --- mid-line
        ("---  \npaths: x\n---   \nspaces\n", "spaces\n"),
        ("---\r\npaths: x\r\n---\r\ncrlf\r\n", "crlf\r\n"),
        ("\n---\npaths: x\n---\nlead\n", "\n---\npaths: x\n---\nlead\n"),  # a blank line first: no front matter
        ("---\npaths: x\nno closing\n", "---\npaths: x\nno closing\n"),
    ],
)
def test_front_matter_is_split_as_the_cli_splits_it(text, body):
    assert split_front_matter(text).body == body


# observed: rule file -> the text the CLI injected (trimmed)
COMMENT_CASES = {
    "para text\n<!-- comment right after para -->\nmore\n": "para text\nmore",
    "<!-- a -->\n<!-- b -->\nafter\n": "after",
    "x\n\n  <!-- indented 2 -->\n\ny\n": "x\n\ny",
    "x\n\n    <!-- indented 4 -->\n\ny\n": "x\n\n    <!-- indented 4 -->\n\ny",
    "x\n\n<!-- unterminated\n\nstill\n": "x\n\n<!-- unterminated\n\nstill",
    "<!-- a --> mid <!-- b --> end\n": "mid  end",
    "- item\n  <!-- in list -->\n- item2\n": "- item\n  <!-- in list -->\n- item2",
    "> quote\n> <!-- in quote -->\n\nz\n": "> quote\n> <!-- in quote -->\n\nz",
    "<div>\n<!-- in div -->\n</div>\n\nw\n": "<div>\n<!-- in div -->\n</div>\n\nw",
    "text <!--\nmulti inline\n--> after\n": "text <!--\nmulti inline\n--> after",
    "a\n\n<!---->\n\nb\n\n<!-->\n\nc\n": "a\n\nb\n\n<!-->\n\nc",
    "~~~\n<!-- tilde fence -->\n~~~\n": "~~~\n<!-- tilde fence -->\n~~~",
    "<!-- x -->text directly\n": "text directly",
    "# H <!-- in heading -->\n": "# H <!-- in heading -->",
    "start\n\n<!-- c1 -->\n<!-- c2 -->\n\n\nend\n": "start\n\nend",
    "<!-- a -->  \nnext line same block\n": "next line same block",
    "a\n\n <!-- lead space --> trailing\n\nb\n": "a\n\n  trailing\n\nb",
    "x\n\n<!--\n\n-->\n\ny\n": "x\n\ny",
    "a\r\nb\r\n<!-- x -->\r\nc\r\n": "a\nb\nc",  # a comment removed: the lexer's \n-only text is used
    "a\r\nb\r\n": "a\r\nb",  # no comment: the file's own line endings
    "```\n<!-- in code -->\n```\r\nx\r\n": "```\n<!-- in code -->\n```\r\nx",  # nothing removed: CRs kept
}


@pytest.mark.parametrize("text", list(COMMENT_CASES))
def test_block_comments_are_removed_as_the_cli_removes_them(text):
    assert js_trim(strip_comments(text)) == COMMENT_CASES[text]


def test_imports_are_found_only_in_markdown_text():
    text = (
        "root @a.md `@code.md` and me@mail.md and (@paren.md) @comma.md, @sp\\ ace.md @frag.md#part\n\n"
        "```\n@fenced.md\n```\n\n    @indented.md\n\n<div>\n@html.md\n</div>\n\n"
        "- item @li.md and [link @lt.md](@href.md) ![@img.md](y.png) <@auto.md>\n\n"
        "\\@esc.md \\\\@bs.md &amp;@ent.md <b>@inl.md</b> @@dbl.md @~/home.md @/abs.md @/ @./dot.md\n"
    )
    assert [i.path for i in find_imports(text)] == [
        "a.md",
        "comma.md,",
        "sp ace.md",
        "frag.md",
        "li.md",
        "lt.md",
        "bs.md",
        "inl.md",
        "~/home.md",
        "/abs.md",
        "./dot.md",
    ]
    assert [i.line for i in find_imports("a\n\nb @x.md\nc @y.md\n")] == [3, 4]


def test_the_extension_rule_of_imports():
    for ext in ("md", "txt", "json", "yaml", "py", "makefile", "jade", "f90"):
        assert ext in IMPORT_EXTENSIONS
    for ext in ("markdown", "mdx", "jsonl", "png", "pdf", "nix", "zig"):
        assert ext not in IMPORT_EXTENSIONS


@pytest.mark.parametrize(
    "front, conditional",
    [
        ("paths: src/**", True),
        ('paths: "**"', False),
        ("paths: []", False),
        ('paths:\n  - "src/**"\n  - "**"', True),
        ('paths: "**/**"', False),
        ("description: no paths", False),
        ('paths: ""', False),
        ("paths: [", True),
        ("title: [", False),
        ("paths:", False),
        ("paths: [1, 2]", False),
        ("paths: src/**/", True),
        ('paths: "**/"', True),
        ('paths: " ** "', False),
        ('paths: "{**,**}"', False),
        ('paths: "**, **"', False),
        ("\tpaths: src", True),
        ('paths: [""]', False),
        ('paths: "/**"', False),
        ("- a\n- b", False),
        ("paths: ***", True),
        ("paths: 5", False),
        ("title: [\npaths: src/**", True),
        ('\tpaths: "**"', False),
        ("paths: {a", True),
        ("paths: ** ", False),
        ("paths: - src", False),
        ("Paths: src/**", False),
        ("globs: src/**", False),
        ('paths: "src/**" # c', True),
        ("paths: [**]", True),
        ('paths: "src/**, lib/**"', True),
        ('paths: "*"', True),
        ("paths: yes", True),
    ],
)
def test_which_rules_are_conditional(front, conditional):
    assert bool(rule_globs(front)) is conditional


def test_excludes_match_absolute_paths_with_globs():
    assert excluded_by(["**/CLAUDE.local.md"], "/w/p/CLAUDE.local.md") == "**/CLAUDE.local.md"
    assert excluded_by(["/w/p/*.md"], "/w/p/CLAUDE.md") and not excluded_by(["/w/p/*.md"], "/w/p/a/CLAUDE.md")
    assert excluded_by(["/w/{p,q}/CLAUDE.md"], "/w/q/CLAUDE.md")


@pytest.mark.parametrize(
    "path, name",
    [
        ("/home/user/work/my-repo", "-home-user-work-my-repo"),
        ("/Users/alice/Code/my_app.v2", "-Users-alice-Code-my-app-v2"),
        ("/tmp/ccx/n1/café zoë", "-tmp-ccx-n1-caf--zo-"),
        ("/tmp/ccx/n1/🚀app", "-tmp-ccx-n1---app"),
        (unicodedata.normalize("NFD", "/tmp/ccx/n1/nfdé"), "-tmp-ccx-n1-nfde-"),  # no normalisation
    ],
)
def test_project_folder_names(path, name):
    assert project_folder_name(path) == name == sanitize(path)


def test_long_project_folder_names_end_in_the_djb2_hash():
    # observed: the CLI named these two folders ...-dee-plfthc and ...-dee-plfthb
    repo = "/tmp/ccx/n1/" + "deep/" * 40 + "repo"
    assert djb2_base36(repo) == "plfthc" and djb2_base36(repo[:-1] + "p") == "plfthb"
    name = project_folder_name(repo)
    assert len(name) == 207 and name.endswith("-dee-plfthc")
