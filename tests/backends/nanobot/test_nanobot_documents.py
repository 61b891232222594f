"""Dream-managed documents and AGENTS.md: status, warnings, safe saves, and checks across files (§5.5–5.6)."""

from __future__ import annotations

import base64
import os
import time

import pytest

from keepgui.backends.nanobot import dream as docs
from keepgui.backends.nanobot.workspace import Workspace
from keepgui.backends.nanobot.writes import KeepStore
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.history import History
from tests.backends.nanobot.nanobot_helpers import SPEC_FIXTURE, make_workspace, read, write


@pytest.fixture
def history(tmp_path):
    return History(tmp_path / "history")


@pytest.fixture
def ws(tmp_path):
    return Workspace(make_workspace(tmp_path / "ws", agents="# Rules\n\n- Use gofmt\n", soul="Be calm.\n"))


def codes(notices):
    return [n.code for n in notices]


def test_dream_managed_status_and_agents_md(ws, history):
    for name in ("MEMORY.md", "memory/MEMORY.md", "USER.md", "SOUL.md"):
        doc = docs.open_document(ws, name, history)
        assert doc.managed_by_dream and "dream-managed" in codes(doc.notices)
        assert doc.kind.status.startswith("managed by Dream")
    agents = docs.open_document(ws, "AGENTS.md", history)
    assert not agents.managed_by_dream and codes(agents.notices) == ["prompt-size", "agent-rules"]
    assert "never edits" in agents.kind.status
    with pytest.raises(NotFound):
        docs.document_kind("keep.md")
    assert docs.open_document(ws, "USER.md", history).to_obj()["status"].startswith("managed by Dream")


def test_each_document_says_what_it_adds_to_every_turns_prompt(ws, history):
    """#12.10: nanobot 0.3.5 (PR #5622) shows Dream the files whole; there is no 8,000-character window."""
    write(ws.memory_md, "- fact\n" * 1200)  # 8,400 characters
    doc = docs.open_document(ws, "MEMORY.md", history)
    assert "over-dream-window" not in codes(doc.notices)
    [notice] = [n for n in doc.notices if n.code == "prompt-size"]
    injected = len(b"# Memory\n\n## Long-term Memory\n") + 8400
    assert f"adds {injected:,} bytes" in notice.message and "sees it whole" in notice.message
    assert "8,000" not in " ".join(n.message for n in doc.notices)
    write(ws.path("USER.md"), "")
    user = docs.open_document(ws, "USER.md", history)
    [notice] = [n for n in user.notices if n.code == "prompt-size"]
    assert "adds nothing to the prompt now" in notice.message and "empty" in notice.message


def test_a_missing_document(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", soul=None))
    doc = docs.open_document(ws, "SOUL.md", history)
    assert not doc.exists and doc.text == "" and "missing" in codes(doc.notices)
    saved = docs.save_document(ws, doc, "Be kind.\n", confirm_dream=True, history=history)
    assert saved.written and saved.previous is None and read(ws.soul_md) == b"Be kind.\n"


def test_saving_a_dream_file_needs_confirmation_and_records_the_previous_version(ws, history):
    doc = docs.open_document(ws, "MEMORY.md", history)
    before = read(ws.memory_md)
    with pytest.raises(InvalidInput, match="managed by Dream"):
        docs.save_document(ws, doc, "# Memory\n\n- new\n", history=history)
    assert read(ws.memory_md) == before
    result = docs.save_document(ws, doc, "# Memory\n\n- new\n", confirm_dream=True, history=history)
    assert result.written and read(ws.memory_md) == b"# Memory\n\n- new\n"
    assert history.read(result.previous) == before
    assert result.document.text == "# Memory\n\n- new\n" and result.document.stamp.exists
    assert codes(result.notices) == ["no-dream-git"]
    again = docs.save_document(ws, result.document, "# Memory\n\n- new\n", confirm_dream=True, history=history)
    assert not again.written


def test_after_save_warnings_with_dream_git(ws, history):
    os.makedirs(os.path.join(ws.root, ".git"))
    doc = docs.open_document(ws, "USER.md", history)
    result = docs.save_document(ws, doc, doc.text + "- Likes figs\n", confirm_dream=True, history=history)
    assert codes(result.notices) == ["dream-commit-folds-edit", "dream-restore-overwrites"]
    agents = docs.open_document(ws, "AGENTS.md", history)
    assert docs.save_document(ws, agents, "# Rules\n", history=history).notices == ()  # no confirmation needed


def test_a_change_on_disk_since_opening_is_refused(ws, history):
    doc = docs.open_document(ws, "USER.md", history)
    write(ws.user_md, "# Rewritten by Dream\n")
    with pytest.raises(Conflict, match=r"USER\.md was changed by someone else"):
        docs.save_document(ws, doc, "mine\n", confirm_dream=True, history=history)
    assert read(ws.user_md) == b"# Rewritten by Dream\n"


def test_bom_and_crlf_are_kept(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", memory=None))
    write(ws.memory_md, b"\xef\xbb\xbf# Memory\r\n- a\r\n")
    doc = docs.open_document(ws, "MEMORY.md", history)
    assert doc.bom and doc.newline == "\r\n" and doc.text == "# Memory\r\n- a\r\n"
    docs.save_document(ws, doc, "# Memory\n- a\n- b\n", confirm_dream=True, history=history)
    assert read(ws.memory_md) == b"\xef\xbb\xbf# Memory\r\n- a\r\n- b\r\n"
    write(ws.soul_md, b"mixed\r\nendings\n")
    soul = docs.open_document(ws, "SOUL.md", history)
    assert soul.newline == "\n"
    docs.save_document(ws, soul, soul.text + "more\n", confirm_dream=True, history=history)
    assert read(ws.soul_md) == b"mixed\r\nendings\nmore\n"


def test_restore_an_earlier_version_exactly(ws, history):
    original = read(ws.memory_md)
    doc = docs.open_document(ws, "MEMORY.md", history)
    write(ws.memory_md, "# Dream reorganised everything\n")  # a Dream run
    rewritten = docs.open_document(ws, "MEMORY.md", history)
    first = history.versions(ws.memory_md)[0]
    assert history.read(first) == original and first.sha256 == doc.stamp.sha256
    result = docs.restore_version(ws, rewritten, first, confirm_dream=True, history=history)
    assert result.written and read(ws.memory_md) == original


def dream_session(tmp_path, ws, age_seconds, legacy=False):
    config_dir = tmp_path / "nanobot-home"
    wid = "0123456789abcdef0123456789abcdef"
    os.makedirs(os.path.join(ws.root, ".nanobot"), exist_ok=True)
    write(os.path.join(ws.root, ".nanobot", "workspace-id"), wid + "\n")
    folder = config_dir / "sessions" / wid
    os.makedirs(folder, exist_ok=True)
    stem = (
        "dream_20250601-120000" if legacy else base64.urlsafe_b64encode(b"dream:20250601-120000").decode().rstrip("=")
    )
    path = folder / f"{stem}.jsonl"
    path.write_text("{}\n")
    then = time.time() - age_seconds
    os.utime(path, (then, then))
    (folder / "other.jsonl").write_text("{}\n")
    return Workspace(ws.root, config_path=str(config_dir / "config.json"))


@pytest.mark.parametrize("legacy", [False, True])
def test_a_recent_dream_session_warns_before_saving(tmp_path, ws, history, legacy):
    live = dream_session(tmp_path, ws, 30, legacy)
    activity = docs.dream_activity(live)
    assert activity.possibly_running and activity.age_seconds < 60
    doc = docs.open_document(live, "USER.md", history)
    assert codes(docs.pre_save_notices(live, doc)) == ["dream-may-be-running"]
    assert docs.pre_save_notices(live, docs.open_document(live, "AGENTS.md", history)) == []


def test_an_old_dream_session_does_not_warn(tmp_path, ws, history):
    live = dream_session(tmp_path, ws, 3600)
    assert not docs.dream_activity(live).possibly_running
    assert docs.pre_save_notices(live, docs.open_document(live, "USER.md", history)) == []
    assert not docs.dream_activity(Workspace(ws.root, config_path=str(tmp_path / "none.json"))).possibly_running


def test_keep_pointer_check_and_adding_it_back(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", user="# User\r\n\r\n- Name: Mike\r\n"))
    assert not docs.keep_pointer(ws).present
    assert "keep-pointer-missing" in codes(docs.open_document(ws, "USER.md", history).notices)
    result = docs.add_keep_pointer(ws, history=history)
    assert result.written
    assert read(ws.user_md) == ("# User\r\n\r\n- Name: Mike\r\n\r\n" + docs.KEEP_POINTER + "\r\n").encode()
    check = docs.keep_pointer(ws)
    assert check.present and check.lines == (5,)
    assert not docs.add_keep_pointer(ws, history=history).written  # already there


def test_keep_pointer_when_user_md_is_missing_or_has_no_final_newline(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", user=None))
    assert docs.keep_pointer(ws) == docs.PointerCheck(False, (), False)
    docs.add_keep_pointer(ws, history=history)
    assert read(ws.user_md) == (docs.KEEP_POINTER + "\n").encode()
    ws2 = Workspace(make_workspace(tmp_path / "ws2", user="- Name: Mike"))
    docs.add_keep_pointer(ws2, history=history)
    assert read(ws2.user_md) == ("- Name: Mike\n\n" + docs.KEEP_POINTER + "\n").encode()


def test_add_keep_pointer_refuses_a_stale_stamp(tmp_path, history):
    ws = Workspace(make_workspace(tmp_path / "ws", user="- Name: Mike\n"))
    stale = docs.open_document(ws, "USER.md", history).stamp
    write(ws.user_md, "- Name: Michael\n")
    with pytest.raises(Conflict):
        docs.add_keep_pointer(ws, expect=stale, history=history)
    assert read(ws.user_md) == b"- Name: Michael\n"


def test_overlaps_between_keep_md_and_dream_files(tmp_path, history):
    ws = Workspace(
        make_workspace(
            tmp_path / "ws",
            memory="# Memory\n\n- Mike is allergic to penicillin\n- Partner's name is Sam; they met in Porto\n"
            "- Uses Fedora on the personal laptop and macOS\n## Has a beagle named Biscuit\n",
            user="# User\n\n- Lives in Lisbon; timezone Europe/Lisbon\n- see keep.md\n",
        )
    )
    found = docs.overlaps(ws, history=history)
    pairs = {(o.entry.number, o.file, o.kind) for o in found}
    assert (4, "MEMORY.md", "contains") in pairs  # the line contains "Allergic to penicillin"
    assert (10, "MEMORY.md", "contains") in pairs  # "Partner's name is Sam" inside a longer line
    assert (8, "MEMORY.md", "contained") in pairs  # the entry contains the shorter line
    assert (2, "USER.md", "contains") in pairs
    assert not any(o.entry.number == 7 for o in found)  # headings are not compared
    assert found[0].to_obj()["file"] in ("MEMORY.md", "USER.md")


def test_misplaced_rules_and_moving_one_to_agents_md(tmp_path, history):
    keep = SPEC_FIXTURE + "- Always run the tests before committing\n- Read https://lwn.net later\n"
    ws = Workspace(make_workspace(tmp_path / "ws", keep=keep, agents="# Rules\n- Use gofmt"))
    [rule] = docs.misplaced_rules(ws, history=history)
    assert rule.entry.number == 11 and rule.triage.destination == "AGENTS.md"
    assert [m.triage.verdict for m in docs.misplaced_entries(ws, history=history)] == ["agents", "note"]
    moved = docs.move_to_agents(ws, rule.entry.id, history=history)
    assert read(ws.agents_md) == b"# Rules\n- Use gofmt\n- Always run the tests before committing\n"
    assert b"Always run" not in read(ws.keep_md)
    assert moved.removal.removed.reason == "moved to AGENTS.md"
    KeepStore(ws, history).unforget()  # reversible like any removal
    assert read(ws.keep_md) == keep.encode()


def test_cross_check_summarises_everything(tmp_path, history):
    ws = Workspace(
        make_workspace(tmp_path / "ws", user="# User\n", keep=SPEC_FIXTURE + "- Never use em-dashes in replies\n")
    )
    check = docs.cross_check(ws, history=history)
    assert not check.pointer.present
    found = codes(check.notices)
    assert found[0] == "keep-pointer-missing" and "misplaced-agents" in found
    assert check.to_obj()["pointer"]["present"] is False
