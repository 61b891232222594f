"""Writes to a Claude Code memory folder that cannot hurt: stamps, the lock, refusals, links, exact undo,
and nothing lost while another process writes the same files (real processes, real files)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keepgui.backends.claude import writes
from keepgui.backends.claude.memory import read_folder
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, ReadOnly
from keepgui.core.history import History
from tests.reliability.common import rewriting_agent


@pytest.fixture
def mem(tmp_path):
    folder = tmp_path / "memory"
    folder.mkdir()
    return str(folder)


@pytest.fixture
def history(tmp_path):
    return History(str(tmp_path / "keepgui-history"))


def write(path, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def md_files(folder):
    return sorted(os.path.relpath(os.path.join(b, n), folder) for b, _d, fs in os.walk(folder) for n in fs)


def test_keep_writes_the_topic_file_and_index_line_the_cli_asks_for(mem, history):
    write(os.path.join(mem, "MEMORY.md"), b"\xef\xbb\xbf# Index\r\n- [Old](old.md) \xe2\x80\x94 old")
    change = writes.keep(
        mem,
        title="Build & test",
        description="make test: the whole suite",
        body="Run `make test`.",
        kind="project",
        history=history,
    )
    assert change.result == "build-test.md"
    assert read(os.path.join(mem, "build-test.md")) == (
        b'---\nname: build-test\ndescription: "make test: the whole suite"\nmetadata:\n  type: project\n---\n\n'
        b"Run `make test`.\n"
    )
    # the index keeps its BOM and CRLF, gains the missing line end, then the new line
    assert read(os.path.join(mem, "MEMORY.md")) == (
        "\ufeff# Index\r\n- [Old](old.md) — old\r\n- [Build & test](build-test.md) — make test: the whole suite\r\n"
    ).encode("utf-8")
    again = writes.keep(mem, title="Build & test", description="second", body="x", kind="user", history=history)
    assert again.result == "build-test-2.md"
    with pytest.raises(InvalidInput):
        writes.keep(mem, title="t", description="d", body="b", kind="opinion", history=history)
    with pytest.raises(InvalidInput):
        writes.keep(mem, title="t", description="d", body="  ", kind="user", history=history)


def test_keep_is_both_or_neither_when_the_agent_writes_the_index_meanwhile(mem, history, monkeypatch):
    index = os.path.join(mem, "MEMORY.md")
    write(index, b"- [A](a.md) \xe2\x80\x94 a\n")
    real_put = writes.put
    calls = []

    def agent_then_put(memory_dir, path, data, expect, hist, source):
        calls.append(path)
        if path.endswith("MEMORY.md") and source == "keep":
            # another process (the agent) appends its own entry between keepgui's read and write
            subprocess.run([sys.executable, "-c", f"open({index!r}, 'a').write('- [B](b.md) — agent\\n')"], check=True)
        return real_put(memory_dir, path, data, expect, hist, source)

    monkeypatch.setattr(writes, "put", agent_then_put)
    with pytest.raises(Conflict):
        writes.keep(mem, title="Mine", description="d", body="b", kind="user", history=history)
    assert md_files(mem) == ["MEMORY.md"]  # the new topic file was taken back
    assert read(index) == "- [A](a.md) — a\n- [B](b.md) — agent\n".encode()  # the agent's line is intact


def test_undo_and_redo_are_exact_and_refused_after_someone_else_wrote(mem, history):
    change = writes.keep(mem, title="One", description="d", body="b", kind="user", history=history)
    undone = change.undo()
    assert md_files(mem) == []  # MEMORY.md did not exist before: exactly as before
    redone = undone.undo()
    index = os.path.join(mem, "MEMORY.md")
    with open(index, "a") as fh:
        fh.write("- [Agent](agent.md) — written after keepgui\n")
    with pytest.raises(Conflict) as exc:
        redone.undo()
    assert "refused and nothing was written" in str(exc.value)
    assert md_files(mem) == ["MEMORY.md", "one.md"] and b"Agent" in read(index)


def test_forget_and_restore_from_another_process(mem, tmp_path, history):
    index = os.path.join(mem, "MEMORY.md")
    topic = os.path.join(mem, "gone.md")
    write(topic, b"---\nname: gone\n---\nfact\n")
    original_index = b"# Index\n- [Keep](keep.md) - k\n- [Gone](gone.md) - g\n- [Gone again](gone.md)\n- [Z](z.md)\n"
    write(index, original_index)
    change = writes.forget(mem, "gone.md", history=history)
    assert not os.path.exists(topic) and read(index) == b"# Index\n- [Keep](keep.md) - k\n- [Z](z.md)\n"
    entry_id = change.result
    # another keepgui (a new History over the same folder) restores it: nothing was kept in the memory folder
    assert md_files(mem) == ["MEMORY.md"]
    code = (
        "import sys; from keepgui.core.history import History; from keepgui.backends.claude import writes; "
        f"writes.restore({mem!r}, {entry_id!r}, history=History({history.root!r}))"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
    )
    assert read(topic) == b"---\nname: gone\n---\nfact\n" and read(index) == original_index
    assert writes.pending_forgets(mem, history) == []


def test_restore_puts_lines_back_into_a_changed_index_and_refuses_a_recreated_file(mem, history):
    index = os.path.join(mem, "MEMORY.md")
    write(os.path.join(mem, "a.md"), b"a\n")
    write(index, b"- [A](a.md)\n- [B](b.md)\n")
    entry = writes.forget(mem, "a.md", history=history).result
    write(index, b"- [B](b.md)\n- [C](c.md) agent\n")  # the agent wrote meanwhile
    writes.restore(mem, entry, history=history)
    assert read(index) == b"- [A](a.md)\n- [B](b.md)\n- [C](c.md) agent\n"
    entry = writes.forget(mem, "a.md", history=history).result
    write(os.path.join(mem, "a.md"), b"the agent made a new a.md\n")
    with pytest.raises(Conflict):
        writes.restore(mem, entry, history=history)
    assert read(os.path.join(mem, "a.md")) == b"the agent made a new a.md\n"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_writes_wait_for_a_live_consolidation_lock(mem, history):
    lock = os.path.join(mem, ".consolidate-lock")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        write(lock, str(sleeper.pid).encode())
        with pytest.raises(ReadOnly) as exc:
            writes.keep(mem, title="t", description="d", body="b", kind="user", history=history)
        assert ".consolidate-lock" in str(exc.value) and str(sleeper.pid) in str(exc.value)
        old = time.time() - 2 * 3600
        os.utime(lock, (old, old))  # a lock over an hour old is stale
        assert writes.lock_holder(mem) is None
    finally:
        sleeper.kill()
        sleeper.wait()
    write(lock, str(_dead_pid()).encode())
    assert writes.lock_holder(mem) is None
    writes.keep(mem, title="t", description="d", body="b", kind="user", history=history)
    assert read(lock).isdigit()  # keepgui never touches the lock


def test_refusals_name_the_file(mem, tmp_path, history):
    with pytest.raises(ReadOnly, match="team memory"):
        writes.writable_path(mem, os.path.join(mem, "team", "MEMORY.md"))
    with pytest.raises(ReadOnly, match=r"\.md files"):
        writes.writable_path(mem, os.path.join(mem, ".consolidate-lock"))
    with pytest.raises(ReadOnly, match="not inside the memory folder"):
        writes.writable_path(mem, str(tmp_path / "elsewhere.md"))
    managed = tmp_path / "managed"
    write(str(managed / "CLAUDE.md"), b"policy\n")
    with pytest.raises(ReadOnly, match="organisation"):
        writes.save_instruction(
            str(managed / "CLAUDE.md"),
            b"x",
            fsio.current_stamp(str(managed / "CLAUDE.md")),
            managed_dir=str(managed),
            history=history,
        )
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    write(str(settings), b"{}")
    with pytest.raises(ReadOnly, match="settings"):
        writes.save_instruction(
            str(settings), b"{}", fsio.current_stamp(str(settings)), managed_dir=str(managed), history=history
        )


def test_a_linked_memory_file_is_saved_through_its_link(mem, tmp_path, history):
    target = Path(mem) / "linked" / "shared.md"  # a link inside the folder: written through
    write(str(target), b"---\nname: shared\ndescription: old\n---\nbody\n")
    link = os.path.join(mem, "shared.md")
    os.symlink(target, link)
    topic = read_folder(mem).topic("shared.md")
    change = writes.edit_memory(mem, "shared.md", topic.stamp, description="new one", history=history)
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert read(str(target)) == b"---\nname: shared\ndescription: new one\n---\nbody\n"
    assert not [n for n in os.listdir(target.parent) if n.endswith(".tmp")]
    change.undo()
    assert read(str(target)) == b"---\nname: shared\ndescription: old\n---\nbody\n" and os.path.islink(link)
    os.symlink(tmp_path / "missing.md", os.path.join(mem, "dangling.md"))
    with pytest.raises(ReadOnly, match="does not exist"):
        writes.writable_path(mem, os.path.join(mem, "dangling.md"))
    # a memory file linked into a repository (spec §5.3: people do) is written through, the link kept
    repo_file = tmp_path / "repo" / "out.md"
    write(str(repo_file), b"---\nname: out\ndescription: old\n---\nin the repo\n")
    os.symlink(repo_file, os.path.join(mem, "out.md"))
    assert writes.writable_path(mem, os.path.join(mem, "out.md")) == str(repo_file)
    topic = read_folder(mem).topic("out.md")
    writes.edit_memory(mem, "out.md", topic.stamp, description="new", history=history)
    assert read(str(repo_file)) == b"---\nname: out\ndescription: new\n---\nin the repo\n"
    assert os.path.islink(os.path.join(mem, "out.md"))
    # a link out of the folder to anything but a .md file is never written through
    write(str(tmp_path / "repo" / "secrets"), b"outside\n")
    os.symlink(tmp_path / "repo" / "secrets", os.path.join(mem, "secrets.md"))
    with pytest.raises(ReadOnly, match=r"outside the memory folder and not a \.md file; keepgui never writes through"):
        writes.writable_path(mem, os.path.join(mem, "secrets.md"))
    assert read(str(tmp_path / "repo" / "secrets")) == b"outside\n"


def test_front_matter_edits_keep_every_other_byte(mem, history):
    path = os.path.join(mem, "m.md")
    write(
        path,
        b"---\r\nname: m\r\ncustom: [a, b]\r\nmetadata:\r\n  type: user\r\n  other: 1\r\nmodified: x\r\n---\r\n"
        b"\r\nBody line.\r\n",
    )
    topic = read_folder(mem).topic("m.md")
    writes.edit_memory(mem, "m.md", topic.stamp, type="feedback", description="a: b", history=history)
    text = read(path).decode()
    assert text.startswith(
        "---\r\nname: m\r\ncustom: [a, b]\r\nmetadata:\r\n  type: feedback\r\n  other: 1\r\nmodified: 20"
    )
    assert text.endswith('description: "a: b"\r\n---\r\n\r\nBody line.\r\n')
    plain = os.path.join(mem, "plain.md")
    write(plain, b"no front matter\n")
    with pytest.raises(InvalidInput, match="never adds one"):
        writes.edit_memory(mem, "plain.md", read_folder(mem).topic("plain.md").stamp, name="x", history=history)
    stale = read_folder(mem).topic("m.md").stamp
    write(path, b"the agent rewrote it\n")
    with pytest.raises(Conflict):
        writes.edit_memory(mem, "m.md", stale, body="mine", history=history)
    assert read(path) == b"the agent rewrote it\n"


def test_nothing_the_agent_writes_is_lost_while_keepgui_keeps(mem, history):
    """A real process rewrites MEMORY.md in a loop while keepgui keeps memories: keepgui never overwrites
    the agent's lines (a keep is refused instead, and then leaves no topic file)."""
    index = os.path.join(mem, "MEMORY.md")
    write(index, b"# Index\n")
    agent = rewriting_agent(index, 150, "- [Agent {i}](agent-{i}.md) - from the agent", pause=0.002)
    kept, refused = [], 0
    try:
        for i in range(60):
            try:
                kept.append(
                    writes.keep(
                        mem, title=f"Mine {i}", description=f"fact {i}", body=f"fact {i}", kind="user", history=history
                    ).result
                )
            except Conflict:
                refused += 1
    finally:
        agent.wait(timeout=60)
    # on a loaded machine every keep may meet a rewrite (all refused): once the agent is quiet, one lands
    kept.append(
        writes.keep(mem, title="Mine 60", description="fact 60", body="fact 60", kind="user", history=history).result
    )
    text = read(index).decode()
    lost = [i for i in range(150) if f"[Agent {i}](agent-{i}.md)" not in text]
    # the agent's own read-modify-write can drop a keepgui line (its doing, not keepgui's); keepgui never drops its
    assert lost == []
    names = set(os.listdir(mem))
    assert {f"mine-{i}.md" for i in range(61)} & names == set(kept)  # a refused keep left no file
    assert len(kept) + refused == 61 and not [n for n in names if ".keepgui-" in n]
    assert "mine-60.md" in text  # the quiet keep is in the index beside every agent line


@pytest.mark.parametrize(
    "data",
    [
        b"---\nname: m\ndescription: d\n---\n\nBody line.\n",
        b"---\nname: m\ndescription: d\n---\nBody right after the front matter.\n",
        b"---\nname: m\ndescription: d\n---\n\n\n\nBody after three blank lines.\n\n\n",
        b"---\r\nname: m\r\ndescription: d\r\n---\r\n\r\nFirst line.\r\nSecond line.\r\n",
        b"---\nname: m\ndescription: d\n---\n\nNo final newline.",
        b"No front matter at all.\n",
    ],
)
def test_a_body_edit_changes_the_body_and_nothing_else(mem, history, data):
    """#23.4: every save of an edited memory added one more blank line after the front matter (the
    front-matter pattern takes the blank lines after the closing ``---``, and the edit added one)."""
    path = os.path.join(mem, "m.md")
    write(path, data)
    original = read_folder(mem).topic("m.md").body.strip().replace("\r\n", "\n")
    for text in ("An edited body.\nOn two lines.", "Edited again.", original):
        writes.edit_memory(mem, "m.md", read_folder(mem).topic("m.md").stamp, body=text, history=history)
        newline = b"\r\n" if b"\r\n" in data else b"\n"
        assert read(path) == data.replace(
            original.encode().replace(b"\n", newline), text.encode().replace(b"\n", newline)
        )
    assert read(path) == data
