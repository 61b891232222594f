"""The Claude Code backend behind the seam: registry entry, what a folder is, what changed files mean,
rows as the protocol's rows, writes that are all or nothing, the review asked for on load, documents
written back in the file's own style."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from keepgui.backends.claude import BACKEND
from keepgui.backends.claude.backend import ClaudeSource, home_env, identify
from keepgui.backends.claude.layout import ClaudeEnv, memory_location, project_folder_name
from keepgui.core import registry
from keepgui.core.demo import make_demo_copy
from keepgui.core.errors import NotFound
from keepgui.core.history import History
from keepgui.core.source import REVIEW, Row, WatchPlan


def put(path, text: str) -> str:
    path = str(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return path


def topic(name: str, body: str, kind: str = "project") -> str:
    return f"---\nname: {name}\ndescription: {body}\nmetadata:\n  type: {kind}\n---\n\n{body}\n"


@pytest.fixture
def home(tmp_path):
    """A HOME whose .claude has one project (a folder with CLAUDE.md) with three memories."""
    home, proj = tmp_path / "home", tmp_path / "work" / "app"
    proj.mkdir(parents=True)
    put(proj / "CLAUDE.md", "Project rules.\n")
    env = ClaudeEnv.from_environ({"HOME": str(home)}, managed_dir=str(tmp_path / "no-managed"))
    mem = memory_location(env, str(proj)).path
    for name, body in (("a", "Alpha fact."), ("b", "Bravo fact."), ("c", "Charlie fact.")):
        put(os.path.join(mem, f"{name}.md"), topic(name, body))
    put(os.path.join(mem, "MEMORY.md"), "".join(f"- [{n}]({n}.md) — {n}\n" for n in "abc"))
    put(os.path.join(os.path.dirname(mem), "s.jsonl"), json.dumps({"cwd": str(proj)}) + "\n")
    return env, proj, mem, History(str(tmp_path / "history"))


def test_registered_with_its_window_option_demo_and_icon():
    assert "claude" in registry.kinds() and registry.backend("claude") is BACKEND
    assert BACKEND.window_arg == "claude" and BACKEND.demo_folder == "claude" and BACKEND.prepare_demo
    assert BACKEND.label == "Claude Code project folder"
    from keepgui.core.paths import resources_dir

    assert os.path.isfile(os.path.join(resources_dir(), "icons", BACKEND.icon + ".svg"))


def test_what_a_folder_is(home, tmp_path):
    env, proj, _mem, _history = home
    environ = {"HOME": env.home}
    assert identify(env.config_dir, environ).why == "it is this account's Claude Code config folder"
    elsewhere = {"HOME": str(tmp_path / "someone-else")}
    assert identify(env.config_dir, elsewhere).what == "a Claude Code home"
    assert "1 Claude Code project folders (1 with memory)" in identify(env.config_dir, elsewhere).why
    assert identify(str(proj), environ).why == "it has a CLAUDE.md"
    os.remove(proj / "CLAUDE.md")
    assert "keeps memory for it" in identify(str(proj), environ).why  # found through its memory folder
    os.makedirs(proj / ".claude")
    verdict = identify(str(proj / ".claude"), environ)
    assert not verdict.opens and "open the project folder" in verdict.why
    (tmp_path / "plain").mkdir()
    assert not identify(str(tmp_path / "plain"), environ).opens
    # a repository with its own projects/ folder is not a Claude Code home
    (tmp_path / "mono" / "projects" / "web").mkdir(parents=True)
    assert not identify(str(tmp_path / "mono"), environ).opens
    assert home_env(env.config_dir, {"HOME": "/elsewhere", "CLAUDE_CONFIG_DIR": "/x"}).home == env.home
    custom = home_env(str(tmp_path / "cfg"), {"HOME": env.home})
    assert custom.config_dir == str(tmp_path / "cfg") and custom.custom_config


def test_what_changed_files_mean(home):
    env, proj, mem, history = home
    source = ClaudeSource(env.config_dir, env=env, history=history)
    name = source.scan().names[0]
    source.bank(name).load()  # its documents are known from then on
    listed = (name,)

    def plan(*parts: str) -> WatchPlan:
        return source.classify([tuple(parts)], listed)

    assert plan("projects", name, "memory", "a.md").refresh == {name}
    assert plan("projects", name, "memory", "MEMORY.md").documents == {name: {os.path.join(mem, "MEMORY.md")}}
    assert plan("projects", name, "s.jsonl") == WatchPlan()  # a transcript is not memory
    assert plan("projects", name, "0f3e", "subagents", "x.txt") == WatchPlan()
    assert plan("projects", name, "memory", "team", "MEMORY.md") == WatchPlan()  # team memory is not shown
    assert plan("projects", name, "memory", ".keepgui-1234.tmp") == WatchPlan()
    assert plan("projects", "-new-project").rescan
    assert plan("projects", "-other", "memory", "x.md").rescan  # a project not listed yet
    # the user CLAUDE.md is listed (as new) though it does not exist: its creation is a change of it
    assert plan("CLAUDE.md").documents == {name: {os.path.join(env.config_dir, "CLAUDE.md")}}
    assert plan("settings.json").documents == {}
    assert plan("todos", "x.json") == WatchPlan()
    # a project folder's memory lives outside it: its files arrive relative to the project (``..``)
    project = ClaudeSource(str(proj), env=env, history=history)
    rel = os.path.relpath(os.path.join(mem, "b.md"), str(proj)).split(os.sep)
    assert rel[0] == ".." and project.classify([tuple(rel)], (name,)).refresh == {name}
    assert project.classify([("CLAUDE.md",)], (name,)).documents == {}  # not loaded yet: nothing shown
    project.bank(name).load()
    assert project.classify([("CLAUDE.md",)], (name,)).documents == {name: {str(proj / "CLAUDE.md")}}


def test_rows_are_the_protocols_and_a_refused_forget_of_several_takes_back_the_first(home):
    env, proj, mem, history = home
    source = ClaudeSource(str(proj), env=env, history=history)
    bank = source.bank(source.scan().names[0])
    rows = bank.load().rows.rows
    assert all(isinstance(r, Row) for r in rows)
    index_before = Path(os.path.join(mem, "MEMORY.md")).read_bytes()
    os.remove(os.path.join(mem, "b.md"))  # gone since the rows were read
    with pytest.raises(NotFound):
        bank.set_live(["a.md", "b.md"], False)
    assert os.path.exists(os.path.join(mem, "a.md"))
    assert Path(os.path.join(mem, "MEMORY.md")).read_bytes() == index_before
    change = bank.set_live(["a.md", "c.md"], False)
    assert change.text == "Forget 2 memories" and not os.path.exists(os.path.join(mem, "c.md"))
    assert {r.id for r in change.rows.rows if r.invalid_at} == {
        r.id for r in change.rows.rows if r.id.startswith("forgotten:")
    }
    assert len([r for r in change.rows.rows if r.invalid_at]) == 2
    back = change.undo()
    assert os.path.exists(os.path.join(mem, "a.md")) and os.path.exists(os.path.join(mem, "c.md"))
    assert b"(a.md)" in Path(os.path.join(mem, "MEMORY.md")).read_bytes()
    back.undo()
    assert not os.path.exists(os.path.join(mem, "a.md"))


def test_a_load_asks_for_a_review_when_the_agent_changed_the_folder_and_only_then(home):
    env, _proj, mem, history = home
    source = ClaudeSource(env.config_dir, env=env, history=history)
    bank = source.bank(source.scan().names[0])
    assert bank.load().reviews == ()  # the first look is the baseline
    os.remove(os.path.join(mem, "b.md"))
    change = bank.load()
    assert change.reviews == ("memory folder",) and bank.capabilities.reviews == ("memory folder",)
    assert change.rows.complete and "b.md" not in {r.id for r in change.rows.rows}
    assert bank.load().reviews == ()  # nothing new since: no second banner
    review = bank.plan("memory folder")
    assert review.describe().startswith("1 memory deleted")
    bank.accept_review(review)
    assert not bank.plan("memory folder").operations
    # keepgui's own write is never offered for review
    bank.keep("Delta fact, kept by keepgui.")
    assert bank.load().reviews == () and not bank.plan("memory folder").operations
    assert bank.capabilities.can(REVIEW) is not False


def test_quick_keep_says_when_the_new_line_would_be_past_the_cut_and_refuses_a_duplicate(home, tmp_path):
    env, proj, mem, history = home
    source = ClaudeSource(str(proj), env=env, history=history)
    bank = source.bank(source.scan().names[0])
    bank.load()
    hints = bank.check_keep("#user Mike lives in Lisbon")
    assert hints[0].level == "ok" and "new user memory, mike-lives-in-lisbon.md" in hints[0].text
    assert "line 4 of MEMORY.md" in hints[0].text
    same = bank.keep("Bravo fact.")
    assert not same.written and "already kept in b.md" in same.message
    assert bank.keep("Bravo fact.", force=True).written
    put(os.path.join(mem, "MEMORY.md"), "".join(f"- [n{i}](n{i}.md) — {i}\n" for i in range(200)))
    bank.load()
    warning = bank.check_keep("One more fact")[0]
    assert warning.level == "warning" and "past the 200 lines" in warning.text
    put(os.path.join(mem, ".consolidate-lock"), str(os.getpid()))
    assert bank.check_keep("One more fact")[0].level == "error"


def test_documents_keep_their_line_endings_and_byte_order_mark(home):
    env, proj, _mem, history = home
    put(proj / "CLAUDE.md", "\ufeffLine one.\r\nLine two.\r\n")
    source = ClaudeSource(str(proj), env=env, history=history)
    bank = source.bank(source.scan().names[0])
    bank.load()
    docs = bank.documents()
    doc = docs.read(str(proj / "CLAUDE.md"))
    assert doc.text == "Line one.\nLine two.\n"  # as the editor shows it
    change = docs.save(doc, doc.text + "Line three.\n")
    assert (proj / "CLAUDE.md").read_bytes() == b"\xef\xbb\xbfLine one.\r\nLine two.\r\nLine three.\r\n"
    assert change.documents == {str(proj / "CLAUDE.md")} and change.result.text.endswith("Line three.\n")
    change.undo()
    assert (proj / "CLAUDE.md").read_bytes() == b"\xef\xbb\xbfLine one.\r\nLine two.\r\n"


def test_the_demo_is_placed_by_the_backend_with_its_transcript(tmp_path):
    copy = make_demo_copy(parent=str(tmp_path))
    assert dict(copy.sources)["claude"] == os.path.join(copy.claude_home, ".claude")
    name = project_folder_name(os.path.realpath(copy.claude_project))
    folder = os.path.join(copy.claude_home, ".claude", "projects", name)
    transcripts = [n for n in os.listdir(folder) if n.endswith(".jsonl")]
    assert len(transcripts) == 1
    with open(os.path.join(folder, transcripts[0]), encoding="utf-8") as fh:
        assert json.loads(fh.readline())["cwd"] == os.path.realpath(copy.claude_project)


def test_a_reload_reads_again_only_the_topic_files_that_changed(home):
    from keepgui.backends.claude.memory import read_folder

    _env, _proj, mem, _history = home
    fresh = read_folder(mem)
    again = read_folder(mem, fresh)
    assert again.topic("a.md") is not fresh.topic("a.md")  # just written: a coarse clock could hide a change
    old = fresh.read_at_ns - 3600 * 10**9
    for name in ("a.md", "b.md", "c.md"):
        os.utime(os.path.join(mem, name), ns=(old, old))
    settled = read_folder(mem)
    same = read_folder(mem, settled)
    assert same.topic("a.md") is settled.topic("a.md") and same.topic("b.md") is settled.topic("b.md")
    put(os.path.join(mem, "b.md"), topic("b", "Bravo FACT."))  # the same size, a new time
    changed = read_folder(mem, settled)
    assert changed.topic("b.md").body.strip() == "Bravo FACT." and changed.topic("a.md") is settled.topic("a.md")


def test_a_first_load_shows_its_rows_before_storing_their_versions(home):
    """A first sight stores every file in keepgui's history (1,000 topic files: seconds); the rows are
    handed to the window first, through ``progress``, then the versions are stored, with progress."""
    env, proj, mem, history = home
    source = ClaudeSource(str(proj), env=env, history=history)
    bank = source.bank(source.scan().names[0])
    calls = []

    def progress(done, total, since):
        stored = sum(1 for n in "abc" if history.latest(os.path.join(mem, f"{n}.md")) is not None)
        calls.append((done, total, sorted(r.id for r in since()), stored))

    change = bank.load(progress, full=True)
    # every row shown before any version is stored (the 3 topic files and MEMORY.md, in one batch)
    assert calls == [(0, 4, ["a.md", "b.md", "c.md"], 0)]
    assert change.rows.complete and sorted(r.id for r in change.rows.rows) == ["a.md", "b.md", "c.md"]
    assert all(history.latest(os.path.join(mem, f"{n}.md")) is not None for n in "abc")


def test_a_bank_already_made_is_had_without_the_lock_a_load_holds(home):
    import threading

    env, proj, _mem, history = home
    source = ClaudeSource(str(proj), env=env, history=history)
    name = source.scan().names[0]
    bank = source.bank(name)
    got = []
    with source.lock:  # as a load holds it, for seconds at 1,000 topic files
        reader = threading.Thread(target=lambda: got.append(source.bank(name)))
        reader.start()
        reader.join(5)
        assert got == [bank]  # the GUI thread asked and was answered at once
