"""Generated homes and project trees on which keepgui's Gemini context is compared with the real CLI.

Each :class:`Tree` builds, under a root folder, a home (``home/.gemini/...``) and the folders a session
starts in, and names the launch folder, the ``context.*`` settings and the environment. Together they
cover the spec's edges: the order by absolute path (a folder that sorts before its parent, ``AGENTS.md``
before ``GEMINI.md``), several file names, imports in tree and flat format (nested to the depth limit,
cycles, a self-import, missing files, folders, escapes, URLs, trailing punctuation, code spans, ``@word``
mentions, URI escapes), no git, other boundary markers, include folders, extensions (sorted, disabled,
several context files), workspace settings, ``GEMINI_CLI_HOME``, the private folder for a folder Gemini
has not seen (and a slug collision, a CJK name, a mapping, a recovered marker), legacy private files,
hard links, a symlinked launch folder, a home that is a repository, CRLF, BOM, whitespace-only files,
runs of blank lines and invalid UTF-8.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.backends.gemini.gemini_cli import make_home


def put(path: str, content: str | bytes) -> None:
    """Write a file of the tree (folders made as needed)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    with open(path, "wb") as fh:
        fh.write(data)


def git(folder: str) -> None:
    """Make ``folder`` a project root the way a repository is (a ``.git`` folder is what Gemini looks for)."""
    os.makedirs(os.path.join(folder, ".git"), exist_ok=True)


@dataclass
class Built:
    """A built tree: the launch folder, the home, the environment beyond HOME, and the Gemini dir."""

    cwd: str
    home: str
    env: dict[str, str] = field(default_factory=dict)
    gemini_dir: str = ""


@dataclass(frozen=True)
class Tree:
    """One generated layout: ``build(root)`` makes it under ``root`` and says where a session starts."""

    name: str
    build: Callable[[str], Built]
    about: str = ""


def _home(root: str, context: dict[str, object] | None = None, sub: str = "home") -> tuple[str, str]:
    home = os.path.join(root, sub)
    return home, make_home(home, context)


def _sys_env(root: str) -> dict[str, str]:
    # never the machine's /etc/gemini-cli: both sides read these (missing) files instead
    return {
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": os.path.join(root, "etc", "settings.json"),
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": os.path.join(root, "etc", "system-defaults.json"),
    }


def order(root: str) -> Built:
    home, gd = _home(root, {"fileName": ["AGENTS.md"]})
    put(os.path.join(gd, "GEMINI.md"), "Global preference one.\n\n\n\nAfter three blank lines.\n")
    put(os.path.join(gd, "AGENTS.md"), "Global agents file first.\n")
    repo = os.path.join(root, "work", "repo")
    git(repo)
    put(os.path.join(repo, "GEMINI.md"), "Repo root rules.\n")
    put(os.path.join(repo, "AGENTS.md"), "Repo AGENTS.md sorts before GEMINI.md.\n")
    put(os.path.join(repo, "Alpha", "GEMINI.md"), "Alpha sorts before its parent's files.\n")
    put(os.path.join(repo, "Alpha", "beta", "GEMINI.md"), "Below the launch folder: loads later.\n")
    put(os.path.join(repo, "Alpha", "a b", "GEMINI.md"), "sibling with a space\n")
    put(os.path.join(root, "work", "GEMINI.md"), "Above the repository: never read.\n")
    put(os.path.join(repo, "Alpha", "AGENTS.md"), b"\xef\xbb\xbfBOM at the start, CRLF lines\r\n\r\n\r\n\r\nend\r\n")
    return Built(os.path.join(repo, "Alpha"), home, _sys_env(root), gd)


def _import_files(repo: str) -> None:
    put(os.path.join(repo, "docs", "style.md"), "Use tabs.\n")
    put(os.path.join(repo, "docs", "nested.md"), "Nested top @./deeper/one.md end\n")
    put(os.path.join(repo, "docs", "deeper", "one.md"), "one @two.md\n")
    put(os.path.join(repo, "docs", "deeper", "two.md"), "two @three.md")
    put(os.path.join(repo, "docs", "deeper", "three.md"), "three @four.md\n")
    put(os.path.join(repo, "docs", "deeper", "four.md"), "four @five.md\n")
    put(os.path.join(repo, "docs", "deeper", "five.md"), "five stays literal: @six.md\n")
    put(os.path.join(repo, "docs", "deeper", "six.md"), "six never read\n")
    put(os.path.join(repo, "docs", "a.md"), "A imports B: @b.md\n")
    put(os.path.join(repo, "docs", "b.md"), "B imports A back: @a.md\n")
    put(os.path.join(repo, "docs", "with space.md"), "escaped name\n")
    put(os.path.join(repo, "docs", "ドキュメント.md"), "CJK file name\n")
    put(os.path.join(root_of(repo), "outside.md"), "outside the repository\n")


def root_of(repo: str) -> str:
    """The folder above a repository."""
    return os.path.dirname(repo)


IMPORTING = (
    "Please ask @alice before merging.\n"
    "Style: @docs/style.md\n"
    "Twice: @docs/style.md @docs/style.md\n"
    "Trailing comma @docs/style.md, then more.\n"
    "Nested: @docs/nested.md\n"
    "Cycle: @docs/a.md\n"
    "Self: @GEMINI.md\n"
    "Folder: @docs\n"
    "Escape: @../outside.md\n"
    "Absolute inside: @{repo}/docs/style.md\n"
    "URL: @https://example.com/x.md\n"
    "Code span `@docs/style.md` and ``@docs/a.md`` kept.\n"
    "```\n@docs/style.md in a fence\n```\n"
    "Mail user@host.com, @1st, @_x, @ドキュメント.md, @./docs/ドキュメント.md\n"
    "NBSP\u00a0@docs/style.md and ideographic\u3000@docs/style.md\n"
    "Tab\t@docs/style.md\rCR @docs/style.md\n"
    "Escaped @docs/with%20space.md and broken @docs/%zz.md\n"
    "@docs/style.md at a line start, then an unpaired ` backtick @docs/style.md\n"
    "closing ` here @docs/missing.md\n"
)


def imports_tree(root: str) -> Built:
    home, gd = _home(root)
    repo = os.path.join(root, "repo")
    git(repo)
    _import_files(repo)
    put(os.path.join(repo, "GEMINI.md"), IMPORTING.replace("{repo}", repo))
    put(os.path.join(gd, "GEMINI.md"), "Global imports @notes.md and @../outside-gd.md\n")
    put(os.path.join(gd, "notes.md"), "global note\n")
    put(os.path.join(home, "outside-gd.md"), "not importable from the global file\n")
    return Built(repo, home, _sys_env(root), gd)


def imports_flat(root: str) -> Built:
    built = imports_tree(root)
    make_home(built.home, {"importFormat": "flat"})
    return built


def no_git(root: str) -> Built:
    home, gd = _home(root)
    top = os.path.join(root, "plain")
    put(os.path.join(top, "GEMINI.md"), "Parent without a marker: not read.\n")
    put(os.path.join(top, "app", "GEMINI.md"), "Launch folder file.\n")
    put(os.path.join(top, "app", "GEMINI.md.d", "x"), "a folder named like nothing\n")
    return Built(os.path.join(top, "app"), home, _sys_env(root), gd)


def markers(root: str) -> Built:
    home, gd = _home(root, {"memoryBoundaryMarkers": ["package.json", "../escape", "/abs"]})
    top = os.path.join(root, "mono")
    git(top)
    put(os.path.join(top, "GEMINI.md"), "Repo root: above the package.json root.\n")
    put(os.path.join(top, "pkg", "package.json"), "{}\n")
    put(os.path.join(top, "pkg", "GEMINI.md"), "Package root.\n")
    put(os.path.join(top, "pkg", "src", "GEMINI.md"), "Source folder.\n")
    return Built(os.path.join(top, "pkg", "src"), home, _sys_env(root), gd)


def no_markers(root: str) -> Built:
    home, gd = _home(root, {"memoryBoundaryMarkers": []})
    top = os.path.join(root, "repo")
    git(top)
    put(os.path.join(top, "GEMINI.md"), "Root: not read without markers.\n")
    put(os.path.join(top, "sub", "GEMINI.md"), "Only this one, imports @../GEMINI.md too.\n")
    return Built(os.path.join(top, "sub"), home, _sys_env(root), gd)


def private_new(root: str) -> Built:
    home, gd = _home(root)
    put(os.path.join(gd, "GEMINI.md"), "Global with private beside it.\n")
    app = os.path.join(root, "projects", "My App!")
    os.makedirs(app)
    other = os.path.join(root, "elsewhere", "my-app")
    os.makedirs(other)
    # another folder already owns the slug my-app: a first session in "My App!" claims my-app-1
    put(os.path.join(gd, "tmp", "my-app", ".project_root"), other)
    put(os.path.join(gd, "tmp", "my-app-1", "memory", "MEMORY.md"), "- Private fact, @notes.md imported.\n")
    put(os.path.join(gd, "tmp", "my-app-1", "memory", "notes.md"), "private note text\n")
    put(os.path.join(gd, "tmp", "my-app-1", "memory", "GEMINI.md"), "legacy file hidden by MEMORY.md\n")
    put(os.path.join(gd, "tmp", "my-app", "memory", "MEMORY.md"), "- belongs to the other folder\n")
    return Built(app, home, _sys_env(root), gd)


def private_legacy(root: str) -> Built:
    home, gd = _home(root, {"fileName": ["CONTEXT.md", "GEMINI.md"]})
    proj = os.path.join(root, "legacy")
    os.makedirs(proj)
    mem = os.path.join(gd, "tmp", "legacy", "memory")
    put(os.path.join(mem, "GEMINI.md"), "## Gemini Added Memories\n- old fact one\n- old fact two\n")
    put(os.path.join(mem, "CONTEXT.md"), "context legacy first\n")
    return Built(proj, home, _sys_env(root), gd)


def private_only(root: str) -> Built:
    home, gd = _home(root)
    proj = os.path.join(root, "solo")
    put(os.path.join(proj, "GEMINI.md"), "   \n\t\n")  # whitespace only: no block
    mem = os.path.join(gd, "tmp", "solo", "memory")
    put(os.path.join(mem, "MEMORY.md"), "- one\n\n\n\n- after blank run\n")
    return Built(proj, home, _sys_env(root), gd)


def mapped(root: str) -> Built:
    home, gd = _home(root)
    proj = os.path.join(root, "mapped")
    os.makedirs(proj)
    put(os.path.join(gd, "projects.json"), json.dumps({"projects": {proj: "custom-slug"}}, indent=2))
    put(os.path.join(gd, "tmp", "custom-slug", "memory", "MEMORY.md"), "- mapped memory\n")
    put(os.path.join(gd, "tmp", "mapped", "memory", "MEMORY.md"), "- the folder-name slug: not used\n")
    return Built(proj, home, _sys_env(root), gd)


def recovered(root: str) -> Built:
    home, gd = _home(root)
    proj = os.path.join(root, "lost")
    os.makedirs(proj)
    put(os.path.join(gd, "tmp", "zz-old", ".project_root"), proj)
    put(os.path.join(gd, "tmp", "zz-old", "memory", "MEMORY.md"), "- recovered memory\n")
    return Built(proj, home, _sys_env(root), gd)


def cjk(root: str) -> Built:
    home, gd = _home(root)
    proj = os.path.join(root, "日本語")
    os.makedirs(proj)
    put(os.path.join(gd, "tmp", "project", "memory", "MEMORY.md"), "- CJK folder slug is project\n")
    return Built(proj, home, _sys_env(root), gd)


def extensions(root: str) -> Built:
    home, gd = _home(root)
    ext = os.path.join(gd, "extensions")
    put(os.path.join(ext, "zeta", "gemini-extension.json"), json.dumps({"name": "zeta", "version": "1.0.0"}))
    put(os.path.join(ext, "zeta", "GEMINI.md"), "Zeta extension context.\n")
    put(
        os.path.join(ext, "alpha", "gemini-extension.json"),
        json.dumps({"name": "alpha", "version": "1.0.0", "contextFileName": ["docs/B.md", "A.md", "../x.md"]}),
    )
    put(os.path.join(ext, "alpha", "A.md"), "Alpha A.\n")
    put(os.path.join(ext, "alpha", "docs", "B.md"), "Alpha docs B imports @A.md\n")
    put(os.path.join(ext, "off", "gemini-extension.json"), json.dumps({"name": "off", "version": "1.0.0"}))
    put(os.path.join(ext, "off", "GEMINI.md"), "Disabled extension.\n")
    proj = os.path.join(root, "proj")
    put(
        os.path.join(ext, "extension-enablement.json"),
        json.dumps({"off": {"overrides": [f"!{proj}/*"]}}),
    )
    put(os.path.join(proj, "GEMINI.md"), "Project beside extensions.\n")
    return Built(proj, home, _sys_env(root), gd)


def include_dirs(root: str) -> Built:
    home, gd = _home(root, {"includeDirectories": ["~/lib", "../sibling"]})
    main = os.path.join(root, "main")
    git(main)
    put(os.path.join(main, "GEMINI.md"), "Main repo.\n")
    sib = os.path.join(root, "sibling")
    git(sib)
    put(os.path.join(sib, "GEMINI.md"), "Sibling include.\n")
    put(os.path.join(home, "lib", "GEMINI.md"), "Library include under the home.\n")
    return Built(main, home, _sys_env(root), gd)


def cli_home(root: str) -> Built:
    home = os.path.join(root, "home")
    other = os.path.join(root, "gemhome")
    gd = make_home(other)
    os.makedirs(home)
    put(os.path.join(gd, "GEMINI.md"), "Global under GEMINI_CLI_HOME.\n")
    put(os.path.join(home, ".gemini", "GEMINI.md"), "Under HOME: not the global file.\n")
    proj = os.path.join(root, "p")
    put(os.path.join(gd, "tmp", "p", "memory", "MEMORY.md"), "- private under GEMINI_CLI_HOME\n")
    put(os.path.join(proj, "GEMINI.md"), "Project.\n")
    return Built(proj, home, {**_sys_env(root), "GEMINI_CLI_HOME": other}, gd)


def whitespace(root: str) -> Built:
    home, gd = _home(root)
    put(os.path.join(gd, "GEMINI.md"), "\ufeff\u00a0\u3000 \n")  # only what JS trims: no global block
    proj = os.path.join(root, "ws")
    git(proj)
    put(os.path.join(proj, "GEMINI.md"), b"bad bytes \xff\xfe \xed\xa0\x80 \xc3 end\r\n\r\n\r\n\r\nCRLF run kept\n")
    put(os.path.join(proj, "AGENTS.md"), "\u2028not trimmed? \x1c\u0085\n")
    make_home(home, {"fileName": "AGENTS.md"})
    return Built(proj, home, _sys_env(root), gd)


def links(root: str) -> Built:
    home, gd = _home(root)
    put(os.path.join(gd, "GEMINI.md"), "Shared by a hard link.\n")
    real = os.path.join(root, "real", "proj")
    git(real)
    os.link(os.path.join(gd, "GEMINI.md"), os.path.join(real, "GEMINI.md"))
    put(os.path.join(real, "sub", "GEMINI.md"), "Sub of the real folder.\n")
    os.symlink(os.path.join(real, "sub", "GEMINI.md"), os.path.join(real, "sub", "AGENTS.md"))
    make_home(home, {"fileName": ["GEMINI.md", "AGENTS.md"]})
    os.symlink(real, os.path.join(root, "alias"))
    return Built(os.path.join(root, "alias", "sub"), home, _sys_env(root), gd)


def workspace_settings(root: str) -> Built:
    home, gd = _home(root)
    proj = os.path.join(root, "ws2")
    put(
        os.path.join(proj, ".gemini", "settings.json"),
        '{\n  // comments are allowed\n  "context": {"fileName": ["${DOC_NAME:-NOTES.md}"], "importFormat": "flat"}\n}\n',
    )
    put(os.path.join(proj, "NOTES.md"), "Notes file named by the workspace settings, @GEMINI.md\n")
    put(os.path.join(proj, "GEMINI.md"), "Default name still loads.\n")
    return Built(proj, home, _sys_env(root), gd)


def home_repo(root: str) -> Built:
    home, gd = _home(root)
    git(home)
    put(os.path.join(home, "GEMINI.md"), "Dotfiles repo: the home is a project root.\n")
    put(os.path.join(gd, "GEMINI.md"), "Global may import @../GEMINI.md from the home repo.\n")
    proj = os.path.join(home, "code", "tool")
    put(os.path.join(proj, "GEMINI.md"), "Tool.\n")
    return Built(proj, home, _sys_env(root), gd)


def empty(root: str) -> Built:
    home, gd = _home(root)
    proj = os.path.join(root, "nothing")
    os.makedirs(proj)
    return Built(proj, home, _sys_env(root), gd)


TREES: tuple[Tree, ...] = (
    Tree("order", order, "sort by absolute path, AGENTS.md + GEMINI.md, BOM, CRLF, runs of blank lines"),
    Tree("imports-tree", imports_tree, "every kind of @token in tree format"),
    Tree("imports-flat", imports_flat, "the same tokens in flat format"),
    Tree("no-git", no_git, "no boundary marker: the launch folder only"),
    Tree("markers", markers, "package.json as the marker, bad markers ignored"),
    Tree("no-markers", no_markers, "an empty marker list: no walk, import root = folder"),
    Tree("private-new", private_new, "a folder Gemini has not seen, slug collision -1, notes not loaded"),
    Tree("private-legacy", private_legacy, "legacy private files in name order"),
    Tree("private-only", private_only, "private without global; whitespace-only project file"),
    Tree("mapped", mapped, "projects.json maps to another slug"),
    Tree("recovered", recovered, "a marker names the folder (projects.json lost)"),
    Tree("cjk", cjk, "a CJK folder name gets the slug project"),
    Tree("extensions", extensions, "extensions sorted, several files, one disabled, a bad path"),
    Tree("include-dirs", include_dirs, "include folders (~, relative) mixed into the sort"),
    Tree("cli-home", cli_home, "GEMINI_CLI_HOME"),
    Tree("whitespace", whitespace, "JS trim, invalid UTF-8, CRLF runs"),
    Tree("links", links, "hard link shared with the global file, a symlink, a symlinked launch folder"),
    Tree("workspace-settings", workspace_settings, "workspace settings with comments and ${VAR:-default}"),
    Tree("home-repo", home_repo, "the home is a repository"),
    Tree("empty", empty, "nothing at all: both elements null"),
)
"""Every tree compared (see the module docstring)."""
