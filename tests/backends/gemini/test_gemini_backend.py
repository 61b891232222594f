"""The Gemini CLI source and bank: finding homes and folders, rows, documents and their reasons, marks,
the sidebar line, what changed files mean, and the pure rules underneath (slugs, trims, tokens, trust)."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.backends.gemini import jstext
from keepgui.backends.gemini.backend import GeminiSource, discover, identify
from keepgui.backends.gemini.context import session_context
from keepgui.backends.gemini.imports import find_imports
from keepgui.backends.gemini.layout import GeminiEnv, load_settings, merge_names, slugify, trust_of
from keepgui.backends.gemini.patches import PatchError, apply_patch, parse_patch
from keepgui.core import registry
from tests.backends.gemini.trees import put


def test_slugs_trims_tokens_and_uri_decoding_follow_javascript():
    assert [slugify(n) for n in ("My App!", "日本語", "", "--a__b--", "Straße")] == [
        "my-app",
        "project",
        "project",
        "a-b",
        "stra-e",
    ]
    assert jstext.js_trim("\ufeff\u00a0 x \u3000") == "x"
    assert jstext.js_trim("\x1c x \x85") == "\x1c x \x85"  # Python's strip would take these; JS's trim does not
    assert jstext.js_sorted(["/r/GEMINI.md", "/r/Alpha/GEMINI.md", "/r/AGENTS.md"]) == [
        "/r/AGENTS.md",
        "/r/Alpha/GEMINI.md",
        "/r/GEMINI.md",
    ]
    assert jstext.decode_uri_component("a%20b%C3%A9") == "a bé"
    with pytest.raises(ValueError, match="URI malformed"):
        jstext.decode_uri_component("%zz")
    assert [p for _s, _e, p in find_imports("ask @alice, mail a@b.c @1st @./x.md\u00a0@y\n@z")] == [
        "alice,",
        "./x.md\u00a0@y",
        "z",
    ]
    assert merge_names(["AGENTS.md", " ./AGENTS.md ", ""]) == ("AGENTS.md", "GEMINI.md")


def test_settings_layers_comments_variables_and_trust(tmp_path):
    home = str(tmp_path / "home")
    put(os.path.join(home, ".gemini", "settings.json"), '{"context": {"includeDirectories": ["~/a"]}} // user')
    cwd = str(tmp_path / "proj")
    put(
        os.path.join(cwd, ".gemini", "settings.json"),
        '{/* ws */ "context": {"includeDirectories": ["${X:-b}"], "importFormat": "flat", "fileName": "$NAME"}}',
    )
    env = GeminiEnv.from_environ(
        {"HOME": home, "NAME": "CTX.md", "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "s")}
    )
    trusted = load_settings(env, cwd, trusted=True)
    assert trusted.include_dirs == (os.path.join(home, "a"), "b")
    assert trusted.import_format == "flat" and trusted.names == ("CTX.md", "GEMINI.md")
    untrusted = load_settings(env, cwd, trusted=False)
    assert untrusted.include_dirs == (os.path.join(home, "a"),) and untrusted.import_format == "tree"
    assert trust_of(env, True, cwd).trusted is None
    put(
        os.path.join(home, ".gemini", "trustedFolders.json"),
        json.dumps({str(tmp_path): "TRUST_FOLDER", cwd: "DO_NOT_TRUST"}),
    )
    assert trust_of(env, True, cwd).trusted is False  # the longest matching rule wins
    assert trust_of(env, True, str(tmp_path)).trusted is True
    assert trust_of(env, False, cwd).trusted is True  # folder trust off
    broken = load_settings(GeminiEnv.from_environ({"HOME": str(tmp_path / "nohome")}), cwd, trusted=True)
    assert broken.problems == ()
    put(os.path.join(home, ".gemini", "settings.json"), "{oops")
    assert "refuses to start" in load_settings(env, cwd, trusted=True).problems[0]


def test_the_documents_say_why_each_file_does_not_load(place):
    put(os.path.join(os.path.dirname(place.repo), "GEMINI.md"), "above the repository\n")
    put(os.path.join(place.cwd, "sub", "GEMINI.md"), "below the launch folder\n")
    memory = os.path.join(place.gd, "tmp", "api", "memory")
    put(os.path.join(memory, "MEMORY.md"), "- private\n")
    put(os.path.join(memory, "GEMINI.md"), "- legacy, hidden\n")
    put(os.path.join(memory, "deploy.md"), "notes\n")
    bank = place.bank()
    docs = bank.documents()
    titles = dict(docs.list())
    reasons = {os.path.relpath(e.path, os.path.dirname(place.home)): (e.state, e.reason) for e in bank.documents_cache}
    assert reasons["work/GEMINI.md"][0] == "never" and "above the project root" in reasons["work/GEMINI.md"][1]
    assert reasons["work/shop/api/sub/GEMINI.md"][0] == "later"
    assert reasons["home/.gemini/tmp/api/memory/GEMINI.md"] == (
        "never",
        "hidden: MEMORY.md exists, so this legacy file does not load",
    )
    assert "read on demand" in reasons["home/.gemini/tmp/api/memory/deploy.md"][1]
    order = [e.path for e in bank.documents_cache if e.state == "loaded"]
    assert order == [
        os.path.join(place.gd, "GEMINI.md"),
        os.path.join(memory, "MEMORY.md"),
        os.path.join(place.repo, "GEMINI.md"),
    ]
    assert titles[os.path.join(place.cwd, "GEMINI.md")].endswith(", new")  # saving creates it
    rows = {r.text: r.tags for r in bank.rows()}
    assert rows["private"] == ("private",) and rows["legacy, hidden"][-2:] == ("hidden", "not-loaded")
    assert rows["notes"] == ("note", "not-loaded")


def test_every_at_word_is_flagged_with_what_it_becomes(place):
    put(os.path.join(place.repo, "docs", "style.md"), "tabs\n")
    text = "Ask @alice.\nSee @docs/style.md and `@code`.\nEscape @../x.md\n"
    put(os.path.join(place.repo, "GEMINI.md"), text)
    docs = place.bank().documents()
    doc = docs.read(os.path.join(place.repo, "GEMINI.md"))
    marks = docs.marks(doc.name, text)
    assert [(text[m.start : m.end], m.level) for m in marks] == [
        ("@alice.", "warning"),
        ("@docs/style.md", "info"),
        ("@../x.md", "warning"),
    ]
    assert (
        "Import failed: alice. - ENOENT" in marks[0].note
        and "imports" in marks[1].note
        and "Path traversal" in marks[2].note
    )
    assert any("line 1: @alice." in n for n in doc.notices)
    edited = "Ask alice.\n"
    assert docs.marks(doc.name, edited) == []  # follows the edited text, not the file


def test_the_sidebar_line_counts_tiers_and_bytes(place):
    bank = place.bank()
    bank.keep("one")
    bank.keep("two")
    detail = bank.summary().detail
    sent = session_context(place.cwd, GeminiEnv.from_environ(place.environ)).sent_bytes
    assert detail == f"global 1 file · private 2 lines · project 1 file · {sent / 1024:,.1f} KB sent on every request"


def test_a_home_lists_its_launch_folders_and_what_changed_files_mean(place, tmp_path):
    other = str(tmp_path / "other")
    os.makedirs(other)
    put(os.path.join(place.gd, "projects.json"), json.dumps({"projects": {os.path.realpath(place.cwd): "api"}}))
    put(os.path.join(place.gd, "tmp", "other", ".project_root"), os.path.realpath(other))
    source = place.source(place.gd)
    assert source.is_home and source.scan().names == ("api", "other")
    bank = source.bank("api")
    bank.load()
    listed = ["api", "other"]
    plan = source.classify([("tmp", "api", "chats", "session-1.jsonl"), ("history", "api", "x")], listed)
    assert not plan.refresh and not plan.rescan
    plan = source.classify([("tmp", "api", "memory", "MEMORY.md")], listed)
    assert plan.refresh == {"api"}
    plan = source.classify([("GEMINI.md",)], listed)
    assert plan.refresh == {"api"} and plan.documents["api"] == {os.path.join(place.gd, "GEMINI.md")}
    assert source.classify([("projects.json",)], listed).rescan
    assert source.classify([("projects.json.1234.tmp",)], listed) == source.classify([], listed)


def test_identify_discover_and_the_registry(place, tmp_path):
    assert identify(place.gd).kind == "gemini"
    assert identify(place.repo).what == "a Gemini CLI project"
    assert identify(str(tmp_path)).kind is None
    assert discover(place.environ)[0].path == place.gd
    assert discover({"HOME": str(tmp_path / "none")}) == []
    assert "gemini" in registry.kinds()


def test_patches_parse_errors_and_positions():
    with pytest.raises(PatchError, match="contained invalid line"):  # the counts ran past the text
        parse_patch("--- /a\n+++ /a\n@@ -1,2 +1,2 @@\n-x\n+y\n")
    [patch] = parse_patch("--- /a\n+++ /a\n@@ -5,1 +5,2 @@\n c\n+d\n")
    assert apply_patch("a\nb\nc\n", patch) == "a\nb\nc\nd\n"  # found 2 lines above its header's place
    assert apply_patch("a\nb\n", patch) is None


def test_a_folder_gemini_has_never_seen_opens_without_writing(place, tmp_path):
    fresh = str(tmp_path / "fresh")
    os.makedirs(fresh)
    put(os.path.join(fresh, "GEMINI.md"), "hello\n")
    source = GeminiSource(fresh, environ=place.environ, history=place.history)
    [name] = source.scan().names
    assert name == "fresh"
    bank = source.bank(name)
    bank.load()
    assert bank.assembled is not None and bank.assembled.session_context is not None
    assert not os.path.exists(os.path.join(place.gd, "tmp", "fresh"))


def test_installed_version_reads_the_package_behind_the_command(tmp_path):
    from keepgui.backends.gemini import installed_version

    package = tmp_path / "lib" / "node_modules" / "@google" / "gemini-cli"
    put(str(package / "package.json"), json.dumps({"name": "@google/gemini-cli", "version": "9.9.9"}))
    put(str(package / "bundle" / "gemini.js"), "#!/usr/bin/env node\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.chmod(package / "bundle" / "gemini.js", 0o755)
    os.symlink(package / "bundle" / "gemini.js", bin_dir / "gemini")
    assert installed_version({"PATH": str(bin_dir)}) == "9.9.9"
    assert installed_version({"PATH": str(tmp_path / "empty")}) is None
