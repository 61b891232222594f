"""Reviewing a rewrite someone else wrote (removed / merged / reworded / new, restores, acceptance),
and rewrites proposed by an outside command (``--via``)."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from keepgui.backends.nanobot.compact import ReviewLog, pending_review, plan_from_text, review, rewrite_via
from keepgui.backends.nanobot.keepmd import KeepDoc
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.backends.nanobot.writes import KeepStore
from keepgui.core.compaction import StalePlan
from keepgui.core.errors import InvalidInput, KeepguiError
from keepgui.core.history import History
from tests.backends.nanobot.nanobot_helpers import make_workspace, read, write

BEFORE = """- Prefers metric units, including in recipes
- Lives in Lisbon; timezone Europe/Lisbon
- Allergic to penicillin
- Allergic to penicillin
- Prefers tea
- Prefers green tea
- Runs on Saturday mornings along the Tagus
- Runs along the Tagus on Saturday mornings
- Drinks green tea, never coffee after 14:00
- Blood type is A+
- Has a beagle named Biscuit
- Partner's name is Sam
"""

# what the agent wrote when it "compacted": a duplicate gone, a near-duplicate folded in, two lines merged,
# one reworded, one fact lost, one new fact invented
AFTER = """- Prefers metric units, including in recipes
- Lives in Lisbon; timezone Europe/Lisbon
- Allergic to penicillin
- Prefers green tea
- Runs along the Tagus every Saturday morning
- Green tea only; never coffee after 14:00
- Has a beagle named Biscuit
- Partner's name is Sam
- Loves Lisbon trams
"""


@pytest.fixture
def history(tmp_path):
    return History(tmp_path / "history")


@pytest.fixture
def rewritten(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    KeepStore(ws, history).load()  # keepgui saw this version
    write(ws.keep_md, AFTER)  # then the agent rewrote the file on its own
    return ws


def by_kind(plan):
    out = {}
    for op in plan.operations:
        out.setdefault(op.kind, []).append(op)
    return out


def test_review_describes_the_rewrite_entry_by_entry(rewritten, history):
    plan = review(rewritten, history=history)
    kinds = by_kind(plan)
    assert [op.after for op in kinds["removed"]] == [("Blood type is A+",)]
    assert kinds["removed"][0].selected  # nothing says it any more: restoring it is the default
    assert [op.after for op in kinds["deduplicated"]] == [("Allergic to penicillin",)]
    merged = {op.before: op.after for op in kinds["merged"]}
    assert merged[("Runs along the Tagus every Saturday morning",)] == (
        "Runs on Saturday mornings along the Tagus",
        "Runs along the Tagus on Saturday mornings",
    )
    assert merged[("Prefers green tea",)] == ("Prefers tea", "Prefers green tea")
    assert [(op.before, op.after) for op in kinds["reworded"]] == [
        (("Green tea only; never coffee after 14:00",), ("Drinks green tea, never coffee after 14:00",))
    ]
    assert [op.before for op in kinds["new"]] == [("Loves Lisbon trams",)]
    assert not any(op.selected for kind in ("merged", "reworded", "new", "deduplicated") for op in kinds[kind])
    codes = {n.code for n in plan.notices}
    assert {"rewrite", "facts-removed", "new-facts", "count"} <= codes
    assert "-- seen/keep.md" in plan.render_rewrite()


def test_restoring_a_removed_entry_puts_it_back_where_it_was(rewritten, history):
    plan = review(rewritten, history=history)
    removed = by_kind(plan)["removed"][0]
    plan.apply([removed.id])
    lines = read(rewritten.keep_md).decode().splitlines()
    assert lines[lines.index("- Blood type is A+") - 1] == "- Green tea only; never coffee after 14:00"
    assert lines[lines.index("- Blood type is A+") + 1] == "- Has a beagle named Biscuit"
    assert review(rewritten, history=history).baseline is None  # restoring accepted the rest


def test_restore_all_gives_back_the_previous_version(rewritten, history):
    plan = review(rewritten, history=history)
    applied = plan.apply("all")
    assert read(rewritten.keep_md) == BEFORE.encode()
    applied.undo()
    assert read(rewritten.keep_md) == AFTER.encode()
    assert review(rewritten, history=history).baseline is not None  # the undo took the acceptance back


def test_seeing_a_rewrite_does_not_accept_it(rewritten, history):
    KeepStore(rewritten, history).load()  # the window refreshed, `keepgui entries` ran...
    KeepStore(rewritten, history).load()
    assert pending_review(rewritten, history=history) is not None
    assert by_kind(review(rewritten, history=history))["removed"]
    assert by_kind(review(rewritten, history=history))["removed"]  # reviewing twice shows it twice


def test_a_keep_through_keepgui_after_the_rewrite_does_not_accept_it(rewritten, history):
    KeepStore(rewritten, history).add("Has a cat called Miso")
    plan = review(rewritten, history=history)
    new = {op.before[0]: op for op in by_kind(plan)["new"]}
    assert "added through keepgui" in new["Has a cat called Miso"].reason
    assert "a compaction should add no facts" in new["Loves Lisbon trams"].reason
    assert by_kind(plan)["removed"]


def test_accept_stops_showing_the_rewrite(rewritten, history):
    plan = review(rewritten, history=history)
    plan.accept()
    assert review(rewritten, history=history).baseline is None
    write(rewritten.keep_md, AFTER + "- Collects stamps since 2024-01-01\n")  # a second rewrite
    again = review(rewritten, history=history)
    assert [op.before for op in again.operations] == [("Collects stamps since 2024-01-01",)]
    assert any(n.code == "dates-added" for n in again.notices)


def test_the_review_log_is_compact_json_lines_and_skips_a_torn_one(tmp_path, history):
    log = ReviewLog(history)
    path = str(tmp_path / "café" / "keep.md")
    marker = log.accept(path, None)
    with open(log.path, "ab") as fh:
        fh.write(b'{"event":"withdrawn","id":"' + marker.encode())  # torn by a crash: not a withdrawal
    with open(log.path, "rb") as fh:
        first = fh.read().split(b"\n")[0]
    assert "café".encode() in first and b'{"event":"accepted","id":' in first
    assert log.latest(path).id == marker


def test_review_without_history_or_change_has_nothing_to_do(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    first = review(ws, history=history)
    assert first.baseline is None and not first.operations and "no earlier version" in first.notices[0].message
    second = review(ws, history=history)
    assert "not been changed outside keepgui" in second.notices[0].message


def test_a_deleted_keep_md_can_be_restored(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    KeepStore(ws, history).load()
    os.unlink(ws.keep_md)
    plan = review(ws, history=history)
    assert len(by_kind(plan)["removed"]) == 12 and all(op.selected for op in plan.operations)
    plan.apply("all")
    assert read(ws.keep_md) == BEFORE.encode()


def test_review_is_refused_when_the_file_changed_meanwhile(rewritten, history):
    plan = review(rewritten, history=history)
    write(rewritten.keep_md, AFTER + "- One more\n")
    with pytest.raises(StalePlan):
        plan.apply("all")
    with pytest.raises(StalePlan):
        plan.accept()


def test_review_of_memory_md_needs_confirmation(tmp_path, history):
    memory = "# Long-term Memory\n\n## Preferences\n- Prefers metric units\n- Drinks green tea\n- Likes jazz\n"
    ws = Workspace(make_workspace(tmp_path / "ws", memory=memory))
    review(ws, "MEMORY.md", history=history)  # keepgui sees it
    write(ws.memory_md, "# Long-term Memory\n\n## Habits\n- Prefers metric units\n- Drinks green tea daily\n")
    plan = review(ws, "MEMORY.md", history=history)
    kinds = by_kind(plan)
    assert [op.after for op in kinds["removed"]] == [("Likes jazz",)]
    assert [op.before for op in kinds["reworded"]] == [("Drinks green tea daily",)]
    with pytest.raises(InvalidInput, match="managed by Dream"):
        plan.apply("all")
    plan.apply("all", confirm_dream=True)
    assert "- Likes jazz\n" in read(ws.memory_md).decode() and "- Drinks green tea\n" in read(ws.memory_md).decode()


# ---------------------------------------------------------------------- --via


COMPACTOR = textwrap.dedent("""
    import sys
    lines = sys.stdin.read().splitlines()
    print("Here is the compacted keep.md:")
    print("```")
    seen = set()
    for line in lines:
        key = line.lstrip("-* ").rstrip(".").lower()
        if key in seen or key == "prefers tea":
            continue
        seen.add(key)
        if key.startswith("runs"):
            if "runs" in seen:
                continue
            seen.add("runs")
            line = "- Runs along the Tagus on Saturday mornings, 10 km"
        print(line)
    print("- Loves Lisbon trams")
    print("```")
""")


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body)
    return [sys.executable, str(path)]


def test_via_turns_the_commands_rewrite_into_a_plan(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    plan = rewrite_via(ws, script(tmp_path, "compactor.py", COMPACTOR), history=history)
    kinds = by_kind(plan)
    assert [op.before for op in kinds["deduplicated"]] == [("Allergic to penicillin",)]
    assert kinds["deduplicated"][0].selected  # lossless: the other copy stays
    assert [op.before for op in kinds["merged"]] == [
        ("Prefers tea",),
        ("Runs on Saturday mornings along the Tagus", "Runs along the Tagus on Saturday mornings"),
    ]
    assert not any(op.selected for op in kinds["merged"])
    assert [op.after for op in kinds["new"]] == [("Loves Lisbon trams",)] and not kinds["new"][0].selected
    assert any(n.code == "ignored-lines" for n in plan.notices)  # the chatter and fences were not taken
    assert read(ws.keep_md) == BEFORE.encode()  # planning wrote nothing
    applied = plan.apply("all")
    text = read(ws.keep_md).decode()
    assert text.count("Allergic to penicillin") == 1 and "- Prefers tea\n" not in text
    assert "- Runs along the Tagus on Saturday mornings, 10 km\n" in text and text.endswith("- Loves Lisbon trams\n")
    assert "Runs on Saturday" not in text and "```" not in text
    applied.undo()
    assert read(ws.keep_md) == BEFORE.encode()


def test_via_errors_are_clear_and_write_nothing(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    cases = [
        (script(tmp_path, "slow.py", "import time\ntime.sleep(30)\n"), "did not finish within 1 s"),
        (
            script(tmp_path, "fail.py", "import sys\nsys.stderr.write('model not found\\n')\nsys.exit(3)\n"),
            "failed with exit status 3 (model not found)",
        ),
        (
            script(tmp_path, "bytes.py", "import sys\nsys.stdout.buffer.write(b'- caf\\xe9\\n')\n"),
            "not UTF-8 (at byte 5)",
        ),
        (script(tmp_path, "quiet.py", "pass\n"), "printed nothing"),
        (["keepgui-no-such-command-xyz"], "was not found"),
    ]
    for command, message in cases:
        with pytest.raises(KeepguiError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
            rewrite_via(ws, command, timeout=1, history=history)
        assert "keep.md was not changed" in str(caught.value)
    assert read(ws.keep_md) == BEFORE.encode()


def test_via_timeout_stops_what_the_command_started(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    marker = tmp_path / "child.pid"
    body = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(30)\n"
    )
    with pytest.raises(KeepguiError, match="did not finish"):
        rewrite_via(ws, script(tmp_path, "spawner.py", body), timeout=1, history=history)
    pid = int(marker.read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        import time

        time.sleep(0.05)
    else:
        pytest.fail("the command's child was left running")


def test_plan_from_text_ignores_prose_and_order(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", keep=BEFORE))
    proposed = "Sure!\n" + "\n".join(reversed(BEFORE.splitlines())) + "\n"
    plan = plan_from_text(ws, proposed, history=history)
    assert [op.kind for op in plan.operations] == []  # same entries in another order: nothing to do
    assert KeepDoc.parse(plan.after_bytes("all")).to_bytes() == BEFORE.encode()


def test_a_dream_rewrite_after_the_bank_was_read_is_reviewable(tmp_path):
    """Reading the bank records MEMORY.md as seen: Dream's rewrite right after has its version before
    to be reviewed against, though no editor has read the file (a window's review asked at once)."""
    from keepgui.backends.nanobot.backend import NanobotSource

    memory = "# Long-term Memory\n\n## Preferences\n- Prefers metric units\n- Likes jazz\n"
    source = NanobotSource(make_workspace(tmp_path / "ws", memory=memory))
    source.keep.load()
    write(source.workspace.memory_md, "# Long-term Memory\n\n## Preferences\n- Prefers metric units\n")
    plan = source.keep.plan("MEMORY.md")
    assert [op.after for op in by_kind(plan)["removed"]] == [("Likes jazz",)]
