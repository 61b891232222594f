"""Hostile input in a Claude Code memory folder: every bad file named with why, nothing hangs, nothing lost.

The lead's reproduction (issue #17's bar) as a tree: a valid topic file beside one that is not UTF-8,
a FIFO, a link out of the folder to a file outside, front matter that does not parse or never closes,
a 5 MiB file, a link loop, and an index whose lines point at them, at a missing file and out of the
folder. ``memories`` must list the valid file, name each bad one (``--json`` ``problems`` with path,
line and message; a line each on stderr) and exit 0; writes on or next to them refuse with one error
line naming the file and change nothing. A generated corpus of random hostile folders checks the
same properties (no exception, bounded time, every valid file listed, reading writes nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import subprocess
import sys
import threading
import time

import pytest

from keepgui.backends.claude.layout import ClaudeEnv, memory_location
from keepgui.backends.claude.memory import (
    BAD_FRONT_MATTER,
    INDEX_LINK_OUT,
    INDEX_NOT_A_FILE,
    LINK_OUT,
    NOT_A_FILE,
    NOT_UTF8,
    TOO_BIG,
    TOPIC_LIMIT,
    read_folder,
)
from tests.conftest import ROOT, errors_of, run_cli

SECRET = "root:x:0:0:keepgui-test-secret"
TIME_BOUND = 20.0


def put(path, data: bytes | str) -> None:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def digest(root: str) -> dict[str, str]:
    """path -> what it is (sha256 of a regular file; a link's target; a FIFO's mode), without ever
    opening anything but a regular file (so a FIFO never blocks the test itself)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    out[rel] = hashlib.sha256(fh.read()).hexdigest() + f":{st.st_mtime_ns}"
            else:
                out[rel] = f"mode:{stat.S_IFMT(st.st_mode)}"
    return out


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """The lead's tree: (project folder, memory folder, the outside file the link points at)."""
    home, proj = tmp_path / "home", tmp_path / "proj"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    mem = memory_location(
        ClaudeEnv.from_environ({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}), str(proj)
    ).path
    outside = tmp_path / "secret" / "passwd"
    put(outside, SECRET + "\n")
    put(os.path.join(mem, "ok.md"), "---\nname: ok\ndescription: fine\n---\nA valid memory.\n")
    put(os.path.join(mem, "badutf8.md"), b"---\nname: caf\xe9\n---\nbody \xff\xfe end\n")
    os.mkfifo(os.path.join(mem, "fifo.md"))
    os.symlink(outside, os.path.join(mem, "outside.md"))
    put(os.path.join(mem, "badyaml.md"), "---\nname: [unclosed\n---\nbody\n")
    put(os.path.join(mem, "onlyfence.md"), "---\n")
    put(os.path.join(mem, "huge.md"), b"x" * (TOPIC_LIMIT + 1))
    os.makedirs(os.path.join(mem, "deep", "a"))
    os.symlink("..", os.path.join(mem, "deep", "a", "loop"))
    put(
        os.path.join(mem, "MEMORY.md"),
        "- [ok](ok.md) — fine\n- [gone](missing.md)\n- [fifo](fifo.md)\n- [out](outside.md)\n"
        "- [esc](../../../../etc/passwd)\n",
    )
    return str(proj), mem, str(outside)


def within(seconds: float, call):
    """Run ``call`` on a thread and fail (instead of hanging the suite) when it takes longer."""
    result: list[object] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s (a hang)")
    if failure:
        raise failure[0]
    return result[0], time.monotonic() - started


# ---------------------------------------------------------------------- reading


def test_memories_names_every_bad_file_and_keeps_going(hostile):
    proj, mem, outside = hostile
    before = digest(os.path.dirname(mem))
    (code, out, err), _seconds = within(
        TIME_BOUND, lambda: run_cli(["claude", "memories", "--project", proj, "--json"])
    )
    assert code == 0
    obj = json.loads(out)
    ids = {m["id"]: m for m in obj["memories"]}
    assert {"ok.md", "badutf8.md", "badyaml.md", "onlyfence.md"} <= set(ids)
    assert "huge.md" not in ids and "outside.md" not in ids and "fifo.md" not in ids
    assert SECRET not in out, "the link's target must never be shown as a memory"
    by = {(os.path.basename(p["path"]), p["code"]): p for p in obj["problems"]}
    assert "FIFO" in by[("fifo.md", NOT_A_FILE)]["message"]
    assert outside in by[("outside.md", LINK_OUT)]["message"]
    bad = by[("badutf8.md", NOT_UTF8)]
    assert bad["line"] == 2 and "byte 13" in bad["message"] and "replacement characters" in bad["message"]
    assert by[("badyaml.md", BAD_FRONT_MATTER)]["line"] == 3
    assert (
        by[("onlyfence.md", BAD_FRONT_MATTER)]["line"] == 1
        and "never closed" in by[("onlyfence.md", BAD_FRONT_MATTER)]["message"]
    )
    huge = by[("huge.md", TOO_BIG)]["message"]
    assert f"{TOPIC_LIMIT + 1:,} bytes" in huge and f"{TOPIC_LIMIT:,}-byte limit" in huge and "unread" in huge
    index = [p for p in obj["problems"] if p["path"].endswith("MEMORY.md")]
    assert [(p["line"], p["code"]) for p in index] == [(3, INDEX_NOT_A_FILE), (4, INDEX_LINK_OUT), (5, INDEX_LINK_OUT)]
    assert "read-only" in ids["badutf8.md"]["tags"] and "\ufffd\ufffd" in ids["badutf8.md"]["text"]
    assert ids["index:fifo.md"]["tags"][0] == "not-a-memory" and ids["index:line-5"]["index_line"] == 5
    assert digest(os.path.dirname(mem)) == before
    code, out, err = run_cli(["claude", "memories", "--project", proj])
    assert code == 0 and "ok.md" in out
    lines = [line for line in errors_of(err) if line.startswith("keepgui: ")]
    assert len(lines) == len(obj["problems"]) and all(mem in line for line in lines)
    assert any(line.endswith("fifo.md: a FIFO (named pipe), not a memory file: skipped unread") for line in lines)


def test_hostile_names_are_named_not_crashed_on(hostile):
    proj, mem, _outside = hostile
    put(os.fsdecode(os.path.join(os.fsencode(mem), b"bad\xffname.md")), "---\nname: n\n---\nweird\n")
    put(os.path.join(mem, "new\nline.md"), "a name with a newline\n")
    put(os.path.join(mem, "-rf --json.md"), "a name like options\n")
    code, out, _err = run_cli(["claude", "memories", "--project", proj, "--json"])
    obj = json.loads(out)
    assert code == 0 and {"new\nline.md", "-rf --json.md", "ok.md"} <= {m["id"] for m in obj["memories"]}
    bad = [p for p in obj["problems"] if p["code"] == "bad-name"]
    assert [p["path"] for p in bad] == [os.path.join(mem, "bad\\xffname.md")] and "not valid UTF-8" in bad[0]["message"]
    code, out, _err = run_cli(["claude", "memories", "--project", proj])
    assert code == 0 and "new\\nline.md" in out and "\nline.md" not in out


def test_the_seam_carries_the_problems(hostile):
    from keepgui.backends.claude.backend import ClaudeSource

    proj, _mem, _outside = hostile
    source = ClaudeSource(proj)
    bank = source.bank(source.scan().names[0])
    change = bank.load(full=True)
    problems = bank.problems()
    assert {p.code for p in problems} >= {NOT_A_FILE, LINK_OUT, NOT_UTF8, BAD_FRONT_MATTER, TOO_BIG, INDEX_LINK_OUT}
    assert all(p.path and p.message and p.level == "warning" for p in problems)
    notes = " ".join(change.notes)
    assert len(change.notes) == len(problems) and all(f"{p.where}: {p.message}" in notes for p in problems)
    assert f"· {len(problems)} problems" in bank.summary().detail
    assert not bank.load().notes  # known problems are not announced again


def test_a_fifo_index_a_linked_index_and_a_huge_index(tmp_path):
    """The CLI skips an index that is a FIFO or over 4 MiB and follows a linked one (see the comparison test)."""
    mem = str(tmp_path / "mem")
    os.makedirs(mem)
    os.mkfifo(os.path.join(mem, "MEMORY.md"))
    folder, _ = within(TIME_BOUND, lambda: read_folder(mem))
    assert not folder.index.exists and [p.code for p in folder.problems] == [NOT_A_FILE]
    os.remove(os.path.join(mem, "MEMORY.md"))
    put(os.path.join(mem, "MEMORY.md"), b"- [a](a.md)\n" * (TOPIC_LIMIT // 12 + 1))
    folder = read_folder(mem)
    assert not folder.index.exists and [p.code for p in folder.problems] == [TOO_BIG]
    os.remove(os.path.join(mem, "MEMORY.md"))
    put(tmp_path / "repo" / "MEMORY.md", "- [a](a.md) — linked index\n")
    os.symlink(tmp_path / "repo" / "MEMORY.md", os.path.join(mem, "MEMORY.md"))
    folder = read_folder(mem)  # an index linked into a repository (spec §5.3): loaded, written through
    assert folder.index.exists and not folder.index.read_only and not folder.problems
    os.remove(os.path.join(mem, "MEMORY.md"))
    put(tmp_path / "elsewhere", "- [a](a.md) — linked index\n")
    os.symlink(tmp_path / "elsewhere", os.path.join(mem, "MEMORY.md"))
    folder = read_folder(mem)  # a link to something that is not a .md file: the CLI loads it, keepgui never writes it
    assert folder.index.exists and folder.index.read_only and [p.code for p in folder.problems] == [LINK_OUT]


# ---------------------------------------------------------------------- writes refuse, nothing changes


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["forget", "fifo.md"], "fifo.md: a FIFO"),
        (["forget", "outside.md"], "outside.md: a link to"),
        (["forget", "huge.md"], "huge.md: "),
        (["forget", "badutf8.md"], "badutf8.md: line 2 is not valid UTF-8"),
        (["forget", "index:fifo.md"], "MEMORY.md, line 3: a FIFO"),
        (["forget", "index:line-5"], "MEMORY.md, line 5: links to ../../../../etc/passwd"),
    ],
)
def test_writes_on_bad_files_refuse_with_one_line_and_change_nothing(hostile, argv, names):
    proj, mem, _outside = hostile
    before = digest(os.path.dirname(mem))
    (code, out, err), _seconds = within(TIME_BOUND, lambda: run_cli(["claude", *argv, "--project", proj]))
    assert code == 1 and out == "" and len(errors_of(err)) == 1 and names in err and mem in err, err
    assert digest(os.path.dirname(mem)) == before


def test_edits_through_the_seam_refuse_and_change_nothing(hostile):
    from keepgui.backends.claude import writes
    from keepgui.backends.claude.backend import ClaudeSource
    from keepgui.core.errors import KeepguiError

    proj, mem, outside = hostile
    source = ClaudeSource(proj)
    bank = source.bank(source.scan().names[0])
    bank.load(full=True)
    before = digest(os.path.dirname(mem)), read(outside)
    for key, field in (("badutf8.md", "text"), ("badutf8.md", "name"), ("fifo.md", "text"), ("outside.md", "text")):
        with pytest.raises(KeepguiError) as caught:
            within(TIME_BOUND, lambda key=key, field=field: bank.edit(key, field, "new text"))
        assert "\n" not in str(caught.value) and key in str(caught.value)
    for path in ("outside.md", "fifo.md"):
        with pytest.raises(KeepguiError, match="nothing was written"):
            writes.writable_path(mem, os.path.join(mem, path))
    assert (digest(os.path.dirname(mem)), read(outside)) == before


@pytest.mark.parametrize("kind", ["fifo", "link-out", "not-utf8"])
def test_keep_refuses_when_the_index_is_hostile(tmp_path, monkeypatch, kind):
    home, proj = tmp_path / "home", tmp_path / "proj"
    proj.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    mem = memory_location(ClaudeEnv.from_environ({"HOME": str(home)}), str(proj)).path
    put(os.path.join(mem, "ok.md"), "---\nname: ok\n---\nfine\n")
    index = os.path.join(mem, "MEMORY.md")
    if kind == "fifo":
        os.mkfifo(index)
    elif kind == "link-out":
        put(tmp_path / "out" / "index", "- [ok](ok.md)\n")
        os.symlink(tmp_path / "out" / "index", index)
    else:
        put(index, b"- [ok](ok.md) caf\xe9\n")
    before = digest(str(tmp_path))
    (code, _out, err), _seconds = within(
        TIME_BOUND, lambda: run_cli(["claude", "keep", "--project", str(proj), "Mike", "likes", "tea"])
    )
    assert code == 1 and len(errors_of(err)) == 1 and "MEMORY.md" in err, err
    assert digest(str(tmp_path)) == before


def test_a_real_process_never_hangs_and_prints_no_traceback(hostile):
    """The whole command in its own process, bounded: a FIFO must not block it."""
    proj, _mem, _outside = hostile
    env = {**os.environ, "PYTHONPATH": ROOT}
    for argv in (
        ["memories"],
        ["memories", "--json"],
        ["forget", "fifo.md"],
        ["forget", b"\xff.md".decode("utf-8", "surrogateescape")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "keepgui", "claude", *argv, "--project", proj],
            capture_output=True,
            timeout=60,
            env=env,
        )
        assert b"Traceback" not in done.stderr, done.stderr
        assert done.returncode == (0 if argv[0] == "memories" else 1)


# ---------------------------------------------------------------------- a generated corpus


HOSTILE_KINDS = (
    "valid",
    "badutf8",
    "fifo",
    "link-out",
    "link-repo",
    "link-in",
    "badyaml",
    "onlyfence",
    "huge",
    "folder.md",
    "loop",
)


def make_folder(rng: random.Random, root: str) -> tuple[str, set[str]]:
    """A random memory folder and the topic files in it that keepgui must list."""
    mem = os.path.join(root, "mem")
    outside = os.path.join(root, "outside")  # not a .md file: a link to it is never a memory
    put(outside, SECRET + "\n")
    os.makedirs(mem)
    valid: set[str] = set()
    lines = []
    for i in range(rng.randint(1, 12)):
        kind = rng.choice(HOSTILE_KINDS)
        sub = rng.choice(["", "", "sub/"])
        rel = f"{sub}{kind}-{i}.md"
        path = os.path.join(mem, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if kind == "valid":
            put(path, f"---\nname: v{i}\ndescription: d {i}\n---\nfact {i} {rng.random()}\n")
            valid.add(rel)
        elif kind == "badutf8":
            put(path, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200))) + b"\xff")
            valid.add(rel)  # listed, read-only, with a problem that says where
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "link-out":
            os.symlink(outside, path)
        elif kind == "link-repo":  # a memory file linked into a repository (spec §5.3): a memory
            put(os.path.join(root, "repo", f"memory-{i}.md"), f"---\nname: r{i}\n---\nin the repo {i}\n")
            os.symlink(os.path.join(root, "repo", f"memory-{i}.md"), path)
            valid.add(rel)
        elif kind == "link-in":
            put(os.path.join(mem, f"target-{i}.txt"), "---\nname: t\n---\nlinked in\n")
            os.symlink(os.path.join(mem, f"target-{i}.txt"), path)
            valid.add(rel)
        elif kind == "badyaml":
            put(path, "---\nname: [" + "x" * rng.randint(0, 5) + "\n---\nbody\n")
            valid.add(rel)
        elif kind == "onlyfence":
            put(path, "---" + rng.choice(["", "\n", "\r\n", "  \n"]))
            valid.add(rel)
        elif kind == "huge":
            put(path, b"y" * (TOPIC_LIMIT + rng.randint(1, 1000)))
        elif kind == "folder.md":
            os.makedirs(path)
        else:
            os.symlink("..", path)
        target = rng.choice([rel, "../" * rng.randint(1, 5) + "etc/passwd", f"missing-{i}.md", f"../{rel}"])
        lines.append(f"- [{kind}]({target}) — line {i}")
    index = "\n".join(lines).encode("utf-8")
    if rng.random() < 0.2:
        index += b"\n- [x](x.md) \xe9\xff"
    put(os.path.join(mem, "MEMORY.md"), index + b"\n")
    return mem, valid


def test_random_hostile_folders(tmp_path):
    """60 generated folders (seeded): no exception, each read within the bound, every valid topic file
    listed, every bad one named, the link target never read as a memory, no file changed."""
    from keepgui.backends.claude.bank import rows_of

    rng = random.Random(17)
    slowest = 0.0
    for n in range(60):
        root = str(tmp_path / f"t{n}")
        mem, valid = make_folder(rng, root)
        before = digest(root)
        (folder, rows), seconds = within(TIME_BOUND, lambda mem=mem: (lambda f: (f, rows_of(f)))(read_folder(mem)))
        slowest = max(slowest, seconds)
        assert {t.rel for t in folder.topics} == valid, n
        assert SECRET not in " ".join(r.text + str(r.fields) for r in rows), n
        named = {os.path.relpath(p.path, mem) for p in folder.problems}
        for name in os.listdir(mem):
            path = os.path.join(mem, name)
            if name.endswith(".md") and name != "MEMORY.md" and name not in valid and not os.path.isdir(path):
                assert name in named, (n, name)
            if name.startswith("badutf8"):
                assert NOT_UTF8 in {p.code for p in folder.problems if p.path == path}, (n, name)
                assert folder.topic(name).read_only, (n, name)
        assert all(str(p).count("\n") == 0 for p in folder.problems)
        assert digest(root) == before, n
    assert slowest < TIME_BOUND
