"""Over a real OpenSSH server, every backend's ``memories --json`` and ``context --json`` give the same
answer as locally, on the same trees (paths aside: the remote ones are read from keepgui's mirror)."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_cli
from tests.core import sshd

pytestmark = pytest.mark.skipif(bool(sshd.available()), reason=sshd.available() or "ok")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from sshd.server_fixture(tmp_path_factory)


@pytest.fixture(scope="module")
def demo(server):
    """The demo, placed in the remote user's home (the same tree, read locally and over SSH)."""
    from keepgui.core.demo import make_demo_copy

    return make_demo_copy(parent=server.home)


def _mirror_root() -> str:
    from keepgui.core.remote.mirror import remote_cache

    return remote_cache()


def _without_paths(text: str) -> object:
    """The JSON answer with the mirror's prefix taken off every path (the remote path remains)."""
    cache = _mirror_root()
    out = []
    for line in text.splitlines():
        if cache in line:
            head, _, rest = line.partition(cache)
            while cache in line:
                start = line.index(cache)
                end = line.index("/root/", start) + len("/root")
                line = line[:start] + line[end:]
            assert head is not None and rest is not None
        out.append(_rounded(json.loads(line)) if line.strip().startswith(("{", "[")) else line)
    return out


def _rounded(obj: object) -> object:
    """Scores rounded to 4 places: iii's recency moves with the clock between the two runs (not with SSH)."""
    if isinstance(obj, float):
        return round(obj, 4)
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def _banks(kind: str, source: str) -> list[str]:
    from keepgui.core import registry

    return list(registry.open_source(kind, source).scan().names)


KINDS = ["iii", "nanobot", "claude", "hermes", "codex", "gemini"]

PROJECT_KINDS = ("codex", "gemini")
"""Banks whose context depends on a project folder outside the mirrored one (compared for their rows only)."""

KNOWN = {
    # Codex's memory prompt names its memory folder by its absolute path: the mirror's path is longer.
    ("codex", "context"): lambda obj: {k: v for k, v in obj.items() if k not in ("memory_parts", "memory_bytes")},
    # Gemini's Auto Memory patches name their targets by absolute path: over SSH they are outside the mirror.
    ("gemini", "memories"): lambda obj: None if str(obj.get("id", "")).startswith("inbox:") else obj,
}
"""Where the remote answer differs by design, and how (see README, "Sources on other machines")."""


def _known(kind: str, command: str, answer: list[object]) -> list[object]:
    fix = KNOWN.get((kind, command))
    if fix is None:
        return answer
    return [y for y in (fix(x) if isinstance(x, dict) else x for x in answer) if y is not None]


def test_a_source_path_over_ssh_url_and_scp_forms(server, demo):
    local = demo.path("nanobot")
    here = run_cli(["memories", "--json", "--agent", "nanobot", "--source", local])
    url = run_cli(["memories", "--json", "--agent", "nanobot", "--source", f"ssh://{sshd.ALIAS}{local}"])
    scp = run_cli(["memories", "--json", "--source", f"{sshd.ALIAS}:{local}"])  # recognised over SSH too
    assert here[0] == url[0] == scp[0] == 0
    assert _without_paths(url[1]) == _without_paths(here[1]) == _without_paths(scp[1])


def test_a_relative_remote_path_is_in_the_remote_home(server, demo):
    rel = os.path.relpath(demo.path("nanobot"), server.home)
    code, out, err = run_cli(["memories", "--json", "--agent", "nanobot", "--source", f"{sshd.ALIAS}:{rel}"])
    assert code == 0, err
    assert out.strip()


def test_a_missing_remote_folder_is_one_clear_line(server):
    code, _out, err = run_cli(["memories", "--agent", "nanobot", "--source", f"{sshd.ALIAS}:/no/such/folder"])
    assert code != 0
    assert "no such folder" in err and "Traceback" not in err


@pytest.fixture
def two_demos(server, tmp_path):
    """Two fresh copies of the demo in the remote home: one written locally, one over SSH."""
    from keepgui.core.demo import make_demo_copy

    return make_demo_copy(parent=server.home), make_demo_copy(parent=server.home)


def _files(root: str) -> dict[str, bytes]:
    out = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, root)] = fh.read()
    return out


@pytest.mark.parametrize(("kind", "bank"), [("nanobot", None), ("hermes", "default")])
def test_a_keep_over_ssh_writes_what_it_writes_locally(two_demos, kind, bank):
    here, there = two_demos[0].path(kind), two_demos[1].path(kind)
    before_here, before_there = _files(here), _files(there)
    text = "The release train leaves on Thursdays at 14:00 UTC."
    picked = [f"--bank={bank}"] if bank else []
    local = run_cli(["keep", text, "--agent", kind, *picked, "--source", here])
    remote = run_cli(["keep", text, "--agent", kind, *picked, "--source", f"{sshd.ALIAS}:{there}"])
    assert local[0] == remote[0] == 0, (local[2], remote[2])

    def written(before: dict[str, bytes], after: dict[str, bytes]) -> dict[str, bytes]:
        return {k: v for k, v in after.items() if before.get(k) != v}  # an agent's lock file too, taken there

    changed = written(before_there, _files(there))
    assert changed  # the keep was made on the remote machine...
    assert changed == written(before_here, _files(here))  # ...byte for byte as locally


def test_an_iii_keep_over_ssh_is_appended_on_the_remote_log(two_demos):
    import json as _json

    here, there = two_demos[0].path("iii"), two_demos[1].path("iii")
    text = "The release train leaves on Thursdays at 14:00 UTC."
    for where in (here, f"{sshd.ALIAS}:{there}"):
        code, _out, err = run_cli(["keep", text, "--agent", "iii", "--bank", "main", "--source", where])
        assert code == 0, err

    def last(root: str) -> dict[str, object]:
        with open(os.path.join(root, "main", "memories.jsonl"), "rb") as fh:
            lines = [line for line in fh.read().split(b"\n") if line.strip()]
        record = _json.loads(lines[-1])
        return {k: v for k, v in record.items() if not k.endswith("_at") and k not in ("id", "fingerprint")}

    assert last(there) == last(here)
    assert last(there)["text"] == text


def _hidden_home_run(server, argv: list[str]) -> tuple[int, str, str]:
    """``keepgui ARGV`` in a process that cannot see the remote home at its path (a mount namespace with
    an empty folder over it): whatever it shows of the remote machine came over SSH."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = 'mount -t tmpfs none "$0" && exec "$@"'
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, server.home, sys.executable, "-m", "keepgui", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def _namespaces() -> str:
    import shutil
    import subprocess

    if not shutil.which("unshare"):
        return "no unshare here"
    done = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt"], capture_output=True, check=False)
    return "" if done.returncode == 0 else "mount namespaces are not allowed here (needs root)"


def _over_ssh(server, argv: list[str]) -> tuple[int, str, str]:
    """``keepgui ARGV`` over SSH: where a mount namespace can be made, in a process that cannot see the
    remote home at its path (on 127.0.0.1 the remote paths exist here too, so a backend reading an
    absolute path the files name would find the very same files; hidden, only what came over SSH can
    be shown); elsewhere in this process."""
    return _hidden_home_run(server, argv) if not _namespaces() else run_cli(argv)


@pytest.mark.parametrize("kind", KINDS)
def test_memories_and_context_are_the_same_over_ssh(server, demo, kind):
    local = demo.path(kind)
    banks = _banks(kind, local)
    assert banks
    for bank in banks:
        for command in (["memories", "--json"], ["context", "--json", "--query", "deploy tests"]):
            argv = [*command, "--agent", kind, f"--bank={bank}"]
            here = run_cli([*argv, "--source", local])
            there = _over_ssh(server, [*argv, "--source", f"{sshd.ALIAS}:{local}"])
            what = f"{kind} {bank} {command[0]}"
            if kind in PROJECT_KINDS and bank.startswith("/") and not _namespaces():
                assert there[0] != 0 and "has no bank" in there[2], what  # its project folder is not in the mirror
                break
            if command[0] == "context" and kind in PROJECT_KINDS and bank != "memory":
                continue  # a session's project folder, named by its absolute remote path, is outside the mirror
            assert here[0] == there[0], (what, here[2], there[2])
            assert _known(kind, command[0], _without_paths(there[1])) == _known(
                kind, command[0], _without_paths(here[1])
            ), what
            if command[0] == "memories":
                assert here[0] == 0, here[2]


def test_hermes_pending_writes_over_ssh_are_the_same_and_approved_there(two_demos):
    from keepgui.core import registry
    from keepgui.core.approvals import approvals_of
    from keepgui.core.remote import open_mirror

    here, there = two_demos[0].path("hermes"), two_demos[1].path("hermes")
    local = approvals_of(registry.open_source("hermes", here))
    mirror = open_mirror(f"{sshd.ALIAS}:{there}")
    remote = approvals_of(registry.open_source("hermes", mirror.local))
    assert local is not None and remote is not None
    mine, theirs = local.pending(), remote.pending()
    assert mine and [(p.id, p.target, p.summary, p.after) for p in theirs] == [
        (p.id, p.target, p.summary, p.after) for p in mine
    ]
    before = _files(there)
    remote.approve([theirs[0].id])
    local.approve([mine[0].id])
    changed = {k for k, v in _files(there).items() if before.get(k) != v} | (set(before) - set(_files(there)))
    assert changed  # approved on the remote machine: the entry written, the queue's file gone
    assert {k: v for k, v in _files(there).items() if k in changed} == {
        k: v for k, v in _files(here).items() if k in changed
    }
