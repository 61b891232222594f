"""A Codex home behind the seam: sources, rows, documents with the budget, keep / correct / forget as
notes, the summary edit with the truth first, the review of what a consolidation changed — on a fresh
copy of the bundled demo (a V2 root, notes, rollout summaries, a project over the budget)."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from keepgui.backends.codex.backend import CodexSource, discover, identify, recent_projects
from keepgui.backends.codex.bank import HOME_BANK
from keepgui.backends.codex.compact import REVIEW_NAME, ConsolidationReview
from keepgui.backends.codex.demo import write_baseline
from keepgui.backends.codex.layout import CodexEnv
from keepgui.backends.codex.rows import INJECTED, NOT_INJECTED, PENDING, READ_ONLY
from keepgui.core import registry
from keepgui.core.demo import make_demo_copy
from keepgui.core.errors import InvalidInput, ReadOnly
from keepgui.core.history import History
from keepgui.core.source import PIN, TOMBSTONE


@pytest.fixture
def demo(tmp_path):
    copy = make_demo_copy(parent=str(tmp_path))
    yield copy
    shutil.rmtree(copy.root, ignore_errors=True)


@pytest.fixture
def source(demo, tmp_path):
    return CodexSource(demo.codex_home, history=History(str(tmp_path / "history")))


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def notes_of(source) -> list[str]:
    folder = os.path.join(source.env.home, "memories_v2", "extensions", "ad_hoc", "notes")
    return sorted(os.listdir(folder))


# ---------------------------------------------------------------------- sources


def test_the_demo_home_is_identified_discovered_and_lists_its_project(demo, source):
    assert registry.identify(demo.codex_home).kind == "codex"
    assert identify(os.path.dirname(demo.codex_project)).what in ("a Codex project", "a Codex home or project")
    assert identify(demo.codex_project).kind == "codex"  # services/api has an AGENTS.md
    found = discover({"HOME": os.path.dirname(demo.codex_home)})
    assert [f.path for f in found] == [demo.codex_home]
    assert recent_projects(demo.codex_home) == [demo.codex_project]
    assert source.scan().names == (HOME_BANK, demo.codex_project)
    assert source.env.home == demo.codex_home


def test_rows_say_what_is_injected_and_what_is_read_only(source):
    bank = source.bank(HOME_BANK)
    change = bank.load()
    rows = {r.id: r for r in change.rows.rows}
    summary = [r for r in rows.values() if r.id.startswith("summary:")]
    assert summary and all(INJECTED in r.tags for r in summary)
    prefs = next(r for r in summary if "run the payment tests" in r.text)
    assert dict(prefs.fields)["section"] == "User preferences"
    notes = [r for r in rows.values() if r.id.startswith("note:")]
    assert [PENDING in r.tags for r in notes] == [False, True, True]  # the first is in the baseline
    assert all(READ_ONLY in r.tags for r in rows.values() if r.id.startswith(("rollout:", "raw")))
    line = bank.summary()
    assert line.detail.startswith(f"{len(rows)} memories · memory on (V2) · ") and "2 notes pending" in line.detail
    assert not bank.capabilities.can(PIN) and not bank.capabilities.can(TOMBSTONE)


def test_a_summary_over_10000_bytes_marks_its_dropped_middle(source):
    bank = source.bank(HOME_BANK)
    path = os.path.join(source.env.home, "memories_v2", "memory_summary.md")
    bullets = "".join(f"- fact number {i:04d} is worth remembering for later sessions\n" for i in range(240))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("v1\n\n## User preferences\n" + bullets)
    rows = [r for r in bank.load(full=True).rows.rows if r.id.startswith("summary:")]
    first, last = rows[0], rows[-1]
    assert INJECTED in first.tags and INJECTED in last.tags
    middle = [r for r in rows if NOT_INJECTED in r.tags]
    assert 60 <= len(middle) <= 110 and "fact number 0120" in " ".join(r.text for r in middle)
    assert any(p.code == "summary-cut" for p in bank.problems())


def test_the_project_documents_show_the_budget_cut_and_the_blank_override(demo, source):
    bank = source.bank(demo.codex_project)
    bank.load()
    docs = bank.documents()
    titles = dict(docs.list())
    api = os.path.join(demo.codex_project, "AGENTS.md")
    assert titles[api].endswith("project, cut at byte 7,068")
    hidden = os.path.join(os.path.dirname(demo.codex_project), "AGENTS.md")
    assert titles[hidden].endswith("project, not read")
    override = docs.read(os.path.join(os.path.dirname(demo.codex_project), "AGENTS.override.md"))
    assert any("blank, yet it claims its folder" in n for n in override.notices)
    doc = docs.read(api)
    budget = docs.budget(api, doc.text, docs.texts())
    assert budget is not None and budget.warn and budget.cut_char == 7_068
    assert "rules that matter most" in doc.text[budget.cut_char :]
    shorter = doc.text[:6_000]
    assert docs.budget(api, shorter, docs.texts()).cut_char is None  # trimmed enough: it all fits
    preview = bank.preview("")
    assert preview.context.agents_md is not None and "the rules that matter most" not in preview.context.agents_md


def test_keep_correct_and_forget_write_new_notes_and_undo(source):
    bank = source.bank(HOME_BANK)
    bank.load()
    before = notes_of(source)
    change = bank.keep("The staging database is called shop_staging.")
    new = sorted(set(notes_of(source)) - set(before))
    assert len(new) == 1 and new[0].endswith("-the-staging-database-is-called-shop-staging.md")
    assert any(r.id == f"note:{new[0]}" and PENDING in r.tags for r in change.rows.rows)
    change.undo()
    assert notes_of(source) == before
    row = next(r for r in bank.rows() if "no new dependencies" in r.text)
    corrected = bank.edit(row.id, "text", "new dependencies are fine for tests")
    note = read(str(corrected.result)).decode()
    assert note.startswith("Correct this memory. It currently says:\n\n> - the user corrected") and note.endswith(
        "> new dependencies are fine for tests"
    )
    forgot = bank.forget([row.id])
    assert "Forget these memories" in read(str(forgot.result)).decode()
    assert len(notes_of(source)) == len(before) + 2
    with pytest.raises(InvalidInput):
        bank.edit(row.id, "tags", ["x"])


def test_the_summary_edit_says_the_truth_first_and_respects_the_lease(source):
    bank = source.bank(HOME_BANK)
    bank.load()
    docs = bank.documents()
    path = os.path.join(source.env.home, "memories_v2", "memory_summary.md")
    doc = docs.read(path)
    assert "consolidation may rewrite it" in docs.pre_save_warnings(doc)[0]
    change = docs.save(doc, doc.text.replace("short focused sessions", "long focused sessions"))
    assert b"long focused sessions" in read(path)
    change.undo()
    assert b"short focused sessions" in read(path)
    with pytest.raises(InvalidInput, match="not UTF-8"):
        docs.save(docs.read(path), "v1\n\udce9\n")
    from tests.backends.codex.test_codex_writes import lease

    lease(source.env.home, int(time.time()) + 900)
    locked = docs.read(path)
    assert locked.read_only.startswith("Codex's memory consolidation holds the memory folder")
    with pytest.raises(ReadOnly):
        docs.save(locked, "v1\n")


# ---------------------------------------------------------------------- review


def test_what_a_consolidation_changed_is_reviewed_and_restored_by_a_note(source):
    bank = source.bank(HOME_BANK)
    assert bank.load().reviews == ()  # the first reading is taken as it is
    path = os.path.join(source.env.home, "memories_v2", "memory_summary.md")
    text = read(path).decode()
    after = text.replace(
        "- prefers small reviewable diffs over one large change; split refactors from behaviour changes\n", ""
    ).replace("one line under 72 characters", "one line under 50 characters")
    after += "- deploys on Fridays are fine\n"
    with open(path, "w", encoding="utf-8") as fh:  # Codex's consolidation rewrites the summary...
        fh.write(after)
    root = os.path.join(source.env.home, "memories_v2")
    write_baseline(root, {"memory_summary.md": after.encode()}, int(time.time()))  # ...and re-baselines
    change = bank.load()
    assert change.reviews == (REVIEW_NAME,)
    plan = bank.plan(REVIEW_NAME)
    assert isinstance(plan, ConsolidationReview)
    kinds = sorted(op.kind for op in plan.operations)
    assert kinds == ["new", "removed", "reworded"]
    assert any(n.code == "consolidated" for n in plan.notices)
    assert plan.default_selection() == frozenset()
    before = notes_of(source)
    applied = bank.apply_plan(plan, plan.select("all"), "Restore")
    note = read(str(applied.result.done.result)).decode()
    assert "- Bring back (removed from memory_summary.md, User preferences): - prefers small reviewable" in note
    assert "- Restore the earlier wording" in note and "72 characters" in note
    assert (
        "- Forget (added to memory_summary.md, What's in Memory › Older Memory Topics › ~/src/shop): - deploys" in note
    )
    assert len(notes_of(source)) == len(before) + 1
    applied.undo()
    assert notes_of(source) == before
    bank.accept_review(bank.plan(REVIEW_NAME))
    assert bank.plan(REVIEW_NAME).operations == ()


def test_a_project_folder_source_watches_the_home_outside_it(demo, tmp_path, monkeypatch):
    env = CodexEnv.from_environ({"HOME": os.path.dirname(demo.codex_home)})
    src = CodexSource(demo.codex_project, env=env, history=History(str(tmp_path / "h")))
    assert not src.is_home and src.also_watched == (demo.codex_home,)
    (name,) = src.scan().names
    bank = src.bank(name)
    bank.load()
    plan = src.classify([("..", "..", "..", "..", "home", ".codex", "memories_v2", "memory_summary.md")], [name])
    assert plan.refresh == frozenset({name})
    plan = src.classify([("AGENTS.md",)], [name])
    assert plan.documents[name] == frozenset({os.path.join(demo.codex_project, "AGENTS.md")})


def test_activity_dates_notes_by_their_names_and_files_by_their_times(source):
    bank = source.bank(HOME_BANK)
    bank.load()
    activity = bank.activity()
    notes = [k for k in activity.keys if k.startswith("note:")]
    assert len(notes) == 3
    at = 1_749_717_000_000  # 2025-06-12T08:30:00Z, the first note's name
    assert "note:2025-06-12T08-30-00-ci-runs-on-python-3-12.md" in activity.keys_between(at, at + 1)
