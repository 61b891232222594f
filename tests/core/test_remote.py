"""The SSH transport over a real OpenSSH server on 127.0.0.1: targets, the mirror, writes with the local
guarantees (conflicts, whole files, modes, links, the log append), a connection cut in the middle of a
write, host keys unknown and changed, and live changes."""

from __future__ import annotations

import os
import threading
import time

import pytest

from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, ReadOnly, WriteFailed
from tests.conftest import run_cli
from tests.core import sshd


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from sshd.server_fixture(tmp_path_factory)


@pytest.fixture
def folder(server, request):
    """A fresh folder in the remote user's home, with two files."""
    path = os.path.join(server.home, request.node.name.replace("[", "_").replace("]", ""))
    os.makedirs(os.path.join(path, "sub"))
    with open(os.path.join(path, "a.md"), "w") as fh:
        fh.write("alpha\n")
    with open(os.path.join(path, "sub", "log.jsonl"), "w") as fh:
        fh.write('{"n":1}\n')
    return path


def _open(path):
    from keepgui.core.remote import open_mirror

    return open_mirror(f"{sshd.ALIAS}:{path}")


# ---------------------------------------------------------------------- targets (no server)


def test_targets_in_both_forms():
    from keepgui.core.remote import looks_remote, parse

    t = parse("ssh://alice@box:2222/home/alice/.hermes")
    assert (t.user, t.host, t.port, t.path) == ("alice", "box", 2222, "/home/alice/.hermes")
    t = parse("box:.nanobot/workspace")
    assert (t.user, t.host, t.port, t.path) == (None, "box", None, ".nanobot/workspace")
    assert parse("ssh://box/~/.codex").path == ".codex"
    assert parse("bob@box:~/x").path == "x"
    assert looks_remote("box:x") and looks_remote("ssh://box/x")
    assert not looks_remote("/tmp/a:b") and not looks_remote("./a:b") and not looks_remote("C:\\x")
    with pytest.raises(InvalidInput, match="not a remote folder"):
        parse("ssh://")


def test_the_hosts_of_ssh_config_are_offered(tmp_path):
    from keepgui.core.remote.target import config_hosts

    (tmp_path / "more").write_text("Host extra\n")
    (tmp_path / "config").write_text(f"Host box db\n  HostName x\nHost *.corp !y\nInclude {tmp_path}/more\nHost box\n")
    assert config_hosts(str(tmp_path / "config")) == ["box", "db", "extra"]


# ---------------------------------------------------------------------- the mirror


def test_the_mirror_fetches_only_what_changed(server, folder):
    mirror = _open(folder)
    with open(os.path.join(mirror.local, "a.md")) as fh:
        assert fh.read() == "alpha\n"
    assert os.stat(os.path.join(mirror.local, "a.md")).st_mtime_ns == os.stat(os.path.join(folder, "a.md")).st_mtime_ns
    assert mirror.sync().round_trips == 1  # nothing changed: one listing, nothing fetched
    with open(os.path.join(folder, "a.md"), "a") as fh:
        fh.write("beta\n")
    os.remove(os.path.join(folder, "sub", "log.jsonl"))
    synced = mirror.sync()
    assert synced.round_trips == 2
    assert synced.changed == {os.path.join(mirror.local, "a.md"), os.path.join(mirror.local, "sub", "log.jsonl")}
    assert not os.path.exists(os.path.join(mirror.local, "sub", "log.jsonl"))


def test_a_link_out_of_the_folder_is_never_written_through(server, folder, tmp_path):
    outside = os.path.join(server.home, "outside.md")
    with open(outside, "w") as fh:
        fh.write("keep me\n")
    os.symlink(outside, os.path.join(folder, "link.md"))
    mirror = _open(folder)
    with pytest.raises(ReadOnly):
        fsio.atomic_write(os.path.join(mirror.local, "link.md"), b"x\n")
    with open(outside) as fh:
        assert fh.read() == "keep me\n"


# ---------------------------------------------------------------------- writes


def test_a_write_is_made_on_the_remote_whole_with_its_mode(server, folder):
    os.chmod(os.path.join(folder, "a.md"), 0o600)
    mirror = _open(folder)
    local = os.path.join(mirror.local, "a.md")
    _data, stamp = fsio.read_stamped(local)
    new = fsio.atomic_write(local, b"alpha\ngamma\n", expect=stamp)
    with open(os.path.join(folder, "a.md"), "rb") as fh:
        assert fh.read() == b"alpha\ngamma\n"
    assert os.stat(os.path.join(folder, "a.md")).st_mode & 0o777 == 0o600
    assert fsio.current_stamp(local) == new  # the mirror holds the same bytes and the remote time
    assert mirror.sync().changed == set()  # so the next listing fetches nothing: the watcher sees our echo only
    assert [n for n in os.listdir(folder) if n.endswith(".tmp")] == []


def test_a_remote_change_since_the_mirror_is_a_conflict(server, folder):
    mirror = _open(folder)
    local = os.path.join(mirror.local, "a.md")
    _data, stamp = fsio.read_stamped(local)
    time.sleep(0.01)
    with open(os.path.join(folder, "a.md"), "w") as fh:
        fh.write("the agent's\n")
    with pytest.raises(Conflict):
        fsio.atomic_write(local, b"mine\n", expect=stamp)
    with open(os.path.join(folder, "a.md")) as fh:
        assert fh.read() == "the agent's\n"
    with open(local) as fh:
        assert fh.read() == "the agent's\n"  # the mirror now shows what is there, for the three-way view


def test_create_never_replaces_and_remove_is_checked(server, folder):
    mirror = _open(folder)
    with open(os.path.join(folder, "new.md"), "w") as fh:
        fh.write("someone's\n")
    with pytest.raises(FileExistsError):
        fsio.create_new(os.path.join(mirror.local, "new.md"), b"mine\n")
    with open(os.path.join(folder, "new.md")) as fh:
        assert fh.read() == "someone's\n"
    fsio.create_new(os.path.join(mirror.local, "other.md"), b"mine\n", mode=0o640)
    assert os.stat(os.path.join(folder, "other.md")).st_mode & 0o777 == 0o640 & ~_umask()
    stamp = fsio.current_stamp(os.path.join(mirror.local, "other.md"))
    fsio.remove_file(os.path.join(mirror.local, "other.md"), expect=stamp)
    assert not os.path.exists(os.path.join(folder, "other.md"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_the_log_append_is_one_write_that_cannot_glue(server, folder):
    mirror = _open(folder)
    log = os.path.join(folder, "sub", "log.jsonl")
    with open(log, "a") as fh:
        fh.write('{"n":2}')  # an agent mid-line: its JSON written, its newline not yet
    fsio.append_lines(os.path.join(mirror.local, "sub", "log.jsonl"), [b'{"n":3}\n'])
    with open(log, "rb") as fh:
        assert fh.read() == b'{"n":1}\n{"n":2}\n{"n":3}\n'
    with open(os.path.join(mirror.local, "sub", "log.jsonl"), "rb") as fh:
        assert fh.read() == b'{"n":1}\n{"n":2}\n{"n":3}\n'


def test_a_new_folder_appears_whole(server, folder):
    mirror = _open(folder)
    fsio.create_folder(os.path.join(mirror.local, "bank"), {"bank.yaml": b"x: 1\n", "rules/a.md": b"r\n"}, ["rules"])
    with open(os.path.join(folder, "bank", "rules", "a.md")) as fh:
        assert fh.read() == "r\n"
    with pytest.raises(FileExistsError):
        fsio.create_folder(os.path.join(mirror.local, "bank"), {"bank.yaml": b"y\n"})
    fsio.rename_durably(os.path.join(mirror.local, "bank"), os.path.join(mirror.local, "bank2"))
    assert os.path.isdir(os.path.join(folder, "bank2")) and not os.path.exists(os.path.join(folder, "bank"))


def test_a_connection_cut_mid_write_leaves_the_file_as_it_was(server, folder):
    from keepgui.core.remote import live, status

    mirror = _open(folder)
    local = os.path.join(mirror.local, "a.md")
    _data, stamp = fsio.read_stamped(local)
    big = b"x" * (300 << 20)  # long enough to be cut in the middle

    def cut() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(n.endswith(".tmp") for n in os.listdir(folder)):
                break
            time.sleep(0.005)
        server.drop_connections()

    cutter = threading.Thread(target=cut)
    cutter.start()
    with pytest.raises(WriteFailed, match="connection was lost"):
        fsio.atomic_write(local, big, expect=stamp)
    cutter.join()
    with open(os.path.join(folder, "a.md"), "rb") as fh:
        assert fh.read() == b"alpha\n"
    deadline = time.monotonic() + 5
    while any(n.endswith(".tmp") for n in os.listdir(folder)) and time.monotonic() < deadline:
        time.sleep(0.05)  # the remote shell removes its temporary file as it is hung up on
    assert [n for n in os.listdir(folder) if n.endswith(".tmp")] == []
    assert status(local).startswith("offline — read-only")
    with pytest.raises(ReadOnly, match="offline"):
        fsio.atomic_write(local, b"later\n", expect=stamp)
    assert live.follow(mirror.local)  # polling reconnects
    try:
        deadline = time.monotonic() + 15
        while not mirror.online and time.monotonic() < deadline:
            time.sleep(0.1)
        assert mirror.online and status(local) == ""
        fsio.atomic_write(local, b"later\n", expect=fsio.current_stamp(local))
        with open(os.path.join(folder, "a.md"), "rb") as fh:
            assert fh.read() == b"later\n"
    finally:
        live.unfollow(mirror.local)


# ---------------------------------------------------------------------- live


def test_a_remote_change_reaches_the_mirrors_watcher_within_two_seconds(server, folder):
    from keepgui.core.watch import Watcher

    mirror = _open(folder)
    seen: list[tuple[float, frozenset[str]]] = []
    arrived = threading.Event()

    def on_changes(changes):
        seen.append((time.monotonic(), changes.paths))
        arrived.set()

    watcher = Watcher(on_changes)
    watcher.start()
    try:
        assert watcher.watch(mirror.local)
        time.sleep(1.5)  # polling has slowed down to its idle pace
        arrived.clear()
        start = time.monotonic()
        with open(os.path.join(folder, "a.md"), "a") as fh:
            fh.write("from the agent\n")
        assert arrived.wait(5)
        assert seen[-1][0] - start < 2.0
        assert os.path.join(mirror.local, "a.md") in seen[-1][1]
    finally:
        watcher.stop()


# ---------------------------------------------------------------------- host keys


def test_an_unknown_host_is_refused_with_its_fingerprint(server, folder, monkeypatch):
    from keepgui.core.remote.ssh import Connection, UnknownHost, accept_host
    from keepgui.core.remote.target import parse

    Connection(parse(f"{sshd.ALIAS}:x")).close()  # the next run makes a new connection, which checks the key
    with open(server.known_hosts, "w"):
        pass
    try:
        with pytest.raises(UnknownHost) as caught:
            Connection(parse(f"{sshd.ALIAS}:x"), persist=0).run("true")
        assert any("SHA256:" in f for f in caught.value.fingerprints)
        code, _out, err = run_cli(["memories", "--agent", "nanobot", "--source", f"{sshd.ALIAS}:{folder}"])
        assert code != 0 and "is not a known host" in err and "SHA256:" in err and "Traceback" not in err
        accept_host(caught.value)  # what the window's "Trust and connect" does
        assert Connection(parse(f"{sshd.ALIAS}:x"), persist=0).run("echo ok").out == b"ok\n"
    finally:
        server.trust_host_key()


def test_a_changed_host_key_is_refused_and_why(server, tmp_path):
    from keepgui.core.remote.ssh import Connection, HostKeyChanged
    from keepgui.core.remote.target import parse

    other = str(tmp_path / "other_key")
    sshd._keygen(other)
    Connection(parse(f"{sshd.ALIAS}:x")).close()
    server.trust_host_key(other)
    try:
        with pytest.raises(HostKeyChanged, match="refuses") as caught:
            Connection(parse(f"{sshd.ALIAS}:x"), persist=0).run("true")
        assert "ssh-keygen -R" in str(caught.value)
    finally:
        server.trust_host_key()


def test_an_agents_sidecar_lock_is_taken_on_the_remote(server, folder):
    import fcntl

    mirror = _open(folder)
    remote_lock = os.path.join(folder, "a.md.lock")
    lock = os.path.join(mirror.local, "a.md.lock")
    # the agent, on its machine, cannot take it meanwhile
    with (
        fsio.sidecar_lock(lock, timeout=1.0, what="the agent"),
        open(remote_lock, "a") as fh,
        pytest.raises(BlockingIOError),
    ):
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(remote_lock, "a") as fh:  # and can once keepgui is done
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with (
            pytest.raises(fsio.Busy, match="locked by the agent"),
            fsio.sidecar_lock(lock, timeout=0.5, what="the agent"),
        ):
            pass


def test_a_mirror_kept_in_the_cache_is_found_again_after_a_restart(server, folder):
    from keepgui.core import remote

    mirror = _open(folder)
    local = os.path.join(mirror.local, "a.md")
    remote.close(mirror)  # as if keepgui had quit: the window remembers the mirror's folder only
    again = remote.mirror_for(local)
    assert again is not None and again is not mirror
    assert again.remote == mirror.remote and again.manifest == mirror.manifest  # nothing to fetch again
    assert remote.display(local) == f"{sshd.ALIAS}:{folder}/a.md"
    assert again.sync().changed == set()
    fsio.atomic_write(local, b"after a restart\n", expect=fsio.current_stamp(local))  # writes go there again
    with open(os.path.join(folder, "a.md"), "rb") as fh:
        assert fh.read() == b"after a restart\n"


def test_the_agents_in_the_remote_home_are_found_in_one_round_trip(server, monkeypatch):
    from keepgui.core import remote
    from keepgui.core.remote.ssh import Connection

    os.makedirs(os.path.join(server.home, ".hermes", "memories"), exist_ok=True)
    os.makedirs(os.path.join(server.home, ".nanobot", "workspace"), exist_ok=True)
    os.makedirs(os.path.join(server.home, ".iii", "data", "memory", "main"), exist_ok=True)  # found by discover
    runs = []
    real = Connection.run
    monkeypatch.setattr(Connection, "run", lambda self, *a, **k: runs.append(1) or real(self, *a, **k))
    found = {f.kind: f.path for f in remote.discover(sshd.ALIAS)}
    assert found["hermes"] == f"{sshd.ALIAS}:{server.home}/.hermes"
    assert found["nanobot"] == f"{sshd.ALIAS}:{server.home}/.nanobot/workspace"
    assert found["iii"] == f"{sshd.ALIAS}:{server.home}/.iii/data/memory"
    assert len(runs) == 1
