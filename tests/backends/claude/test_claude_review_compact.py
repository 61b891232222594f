"""Reviewing what Claude changed in a memory folder, and compacting an index over its limits."""

from __future__ import annotations

import os

import pytest

from keepgui.backends.claude.compact import plan_index, review
from keepgui.backends.claude.memory import read_folder
from keepgui.core.compaction import StalePlan
from keepgui.core.errors import Conflict
from keepgui.core.history import History


@pytest.fixture
def history(tmp_path):
    return History(str(tmp_path / "keepgui-history"))


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def read(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as fh:
        return fh.read()


FACTS = [
    "The staging database is reset every Sunday at 03:00 UTC.",
    "Deploys go through the blue-green pipeline, never by hand.",
    "The user prefers answers in British English with metric units.",
    "Integration tests need the local S3 emulator on port 9000.",
    "Release notes are written in the CHANGELOG before tagging.",
]


def make_folder(tmp_path):
    mem = str(tmp_path / "memory")
    os.makedirs(mem)
    lines = ["# Memory"]
    for i, fact in enumerate(FACTS):
        write(mem, f"t{i}.md", f"---\nname: t{i}\ndescription: fact {i}\nmetadata:\n  type: project\n---\n\n{fact}\n")
        lines.append(f"- [Fact {i}](t{i}.md) — fact {i}")
    write(mem, "MEMORY.md", "\n".join(lines) + "\n")
    return mem


def test_review_names_each_change_and_restores_per_entry_and_all(tmp_path, history):
    mem = make_folder(tmp_path)
    assert review(mem, history).describe() == "no changes since the last review"  # the first look is the baseline
    before = {n: read(mem, n) for n in os.listdir(mem)}
    # what Auto Dream might do: delete, merge, rewrite, add, shorten the index
    os.remove(os.path.join(mem, "t0.md"))
    os.remove(os.path.join(mem, "t1.md"))
    write(mem, "t2.md", read(mem, "t2.md") + "\n" + FACTS[1] + "\n")
    write(mem, "t3.md", "---\nname: t3\n---\nrewritten without the port\n")
    write(mem, "t9.md", "a new memory\n")
    write(mem, "MEMORY.md", "# Memory\n- [Fact 2](t2.md) — fact 2 and 1\n- [Fact 3](t3.md) — fact 3\n")
    plan = review(mem, history)
    assert plan.describe() == "1 memory deleted, 1 merged, 2 rewritten, 1 new, index shortened (6 → 3 lines)"
    kinds = {op.targets[0]: op.kind for op in plan.operations}
    assert kinds == {
        "t0.md": "removed",
        "t1.md": "merged",
        "t2.md": "reworded",
        "t3.md": "reworded",
        "t9.md": "new",
        "MEMORY.md": "removed",
    }
    assert not plan.default_selection()  # nothing is restored unless a person chooses it
    one = next(op for op in plan.operations if op.targets == ("t0.md",))
    diff = plan.render([one.id])
    assert "+- [Fact 0](t0.md) — fact 0" in diff and "+" + FACTS[0] in diff
    applied = plan.apply([one.id])
    assert read(mem, "t0.md") == before["t0.md"] and "- [Fact 0](t0.md) — fact 0" in read(mem, "MEMORY.md")
    rest = review(mem, history)
    assert "merged" in rest.describe() and "deleted" not in rest.describe()
    applied.undo()  # exactly as the agent left it
    assert not os.path.exists(os.path.join(mem, "t0.md")) and "t0.md" not in read(mem, "MEMORY.md")
    review(mem, history).apply("all")
    for name, text in before.items():
        if name != "MEMORY.md":
            assert read(mem, name) == text
    index = read(mem, "MEMORY.md")
    assert all(f"](t{i}.md)" in index for i in range(5))  # every entry points at its file again
    assert os.path.exists(os.path.join(mem, "t9.md"))  # never deleted unasked
    assert review(mem, history).describe().startswith("1 memory new, index rewritten")


def test_a_review_is_refused_when_the_folder_changed_after_it(tmp_path, history):
    mem = make_folder(tmp_path)
    review(mem, history)
    os.remove(os.path.join(mem, "t4.md"))
    plan = review(mem, history)
    write(mem, "t4.md", "the agent wrote it again\n")
    with pytest.raises(StalePlan):
        plan.apply("all")
    assert read(mem, "t4.md") == "the agent wrote it again\n"
    plan.accept()  # what the review showed: t4 deleted
    assert [(op.kind, op.targets) for op in review(mem, history).operations] == [("new", ("t4.md",))]


def big_index(tmp_path):
    mem = str(tmp_path / "big")
    os.makedirs(mem)
    lines = ["# Index", "A paragraph of detail that someone wrote straight into the index."]
    for i in range(215):
        path = write(mem, f"n{i}.md", f"---\nname: n{i}\ndescription: d{i}\nmetadata:\n  type: project\n---\n\nf{i}\n")
        os.utime(path, (10_000 + i, 10_000 + i))  # n214 is the newest
        tail = " and a long tail of detail that belongs in the topic file" * 4 if i % 70 == 0 else ""
        lines.append(f"- [N{i}](n{i}.md) — hook {i}{tail}")
    lines.append("- [N5 twice](n5.md) — hook 5 again with one extra word")
    write(mem, "MEMORY.md", "\n".join(lines) + "\n")
    return mem


def test_compaction_keeps_every_fact_and_puts_the_newest_first(tmp_path, history):
    mem = big_index(tmp_path)
    before = read_folder(mem)
    assert before.index.cut.cut and before.index.cut.lines == 218
    plan = plan_index(mem, history)
    kinds = [op.kind for op in plan.operations]
    assert kinds.count("duplicate") == 1 and kinds.count("shorten") == 4 and "move-detail" in kinds
    assert kinds[-1] == "reorder"
    assert all(op.reason for op in plan.operations) and all(plan.render([op.id]) for op in plan.operations)
    counts = plan.counts()
    assert counts.before == 218 and counts.after == 217 and counts.target == 200
    applied = plan.apply()
    after = read_folder(mem)
    assert {t.rel for t in after.topics} == {t.rel for t in before.topics} | {"index-notes.md"}  # nothing deleted
    assert "long tail of detail" in read(mem, "n0.md") and "extra" in read(mem, "n5.md")
    assert "A paragraph of detail" in read(mem, "index-notes.md")
    loaded = {e.target for e in after.index.entries if e.loaded}
    assert {"n214.md", "n213.md", "index-notes.md"} <= loaded and "n0.md" not in loaded  # the oldest are cut
    assert all(len(e.text) <= 200 for e in after.index.entries)
    applied.undo()
    assert read(mem, "MEMORY.md") == before.index.text and not os.path.exists(os.path.join(mem, "index-notes.md"))
    applied.redo()
    write(mem, "n1.md", "the agent edited a file the compaction did not touch\n")
    applied.undo()  # still exact: only the files it wrote must be as it left them
    assert read(mem, "MEMORY.md") == before.index.text
    applied.redo()
    write(mem, "MEMORY.md", read(mem, "MEMORY.md") + "- [Late](late.md) — the agent appended this\n")
    with pytest.raises(Conflict):
        applied.undo()
    assert "the agent appended this" in read(mem, "MEMORY.md")


def test_a_compaction_plan_goes_stale_when_the_index_changes(tmp_path, history):
    mem = big_index(tmp_path)
    plan = plan_index(mem, history)
    with open(os.path.join(mem, "MEMORY.md"), "a", encoding="utf-8") as fh:
        fh.write("- [Late](late.md) — the agent appended this\n")
    with pytest.raises(StalePlan) as exc:
        plan.apply()
    assert exc.value.replanned is not None
    assert "the agent appended this" in read(mem, "MEMORY.md")


def test_an_index_within_its_limits_gets_no_reorder(tmp_path, history):
    mem = make_folder(tmp_path)
    assert [op.kind for op in plan_index(mem, history).operations] == []
