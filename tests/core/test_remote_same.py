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
        out.append(json.loads(line) if line.strip().startswith(("{", "[")) else line)
    return out


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


@pytest.mark.parametrize("kind", KINDS)
def test_memories_and_context_are_the_same_over_ssh(server, demo, kind):
    local = demo.path(kind)
    remote = f"{sshd.ALIAS}:{local}"
    banks = _banks(kind, local)
    assert banks
    for bank in banks:
        for command in (["memories", "--json"], ["context", "--json", "--query", "deploy tests"]):
            if command[0] == "context" and kind in PROJECT_KINDS and bank != "memory":
                continue  # a session's project folder, named by its absolute remote path, is outside the mirror
            argv = [*command, "--agent", kind, f"--bank={bank}"]
            here = run_cli([*argv, "--source", local])
            there = run_cli([*argv, "--source", remote])
            what = f"{kind} {bank} {command[0]}"
            assert here[0] == there[0], (what, here[2], there[2])
            assert _known(kind, command[0], _without_paths(there[1])) == _known(
                kind, command[0], _without_paths(here[1])
            ), what
            assert _without_paths(there[2]) == _without_paths(here[2]), what  # the same refusal, where there is one
            if command[0] == "memories":
                assert here[0] == 0, here[2]


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
