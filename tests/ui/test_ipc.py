"""One running keepgui: the socket, the protocol, and later starts handing over to the window.

Every test gets its own ``$KEEPGUI_HOME`` (so its own runtime dir and socket
name): servers of different tests never meet, and none ever meets a real one.
The "second instance" is a real ``python -m keepgui`` subprocess with the same
home, talking to a server that runs in the test process; the test keeps the
event loop turning (``qtbot.waitUntil``) while the child waits for its answer.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

import pytest
from PySide6.QtNetwork import QLocalSocket
from PySide6.QtWidgets import QApplication

from keepgui.backends.nanobot.bank import KEEP_BANK
from keepgui.core.source import BankKey
from keepgui.ui import ipc
from keepgui.ui.desktop import install
from tests.backends.nanobot.nanobot_helpers import make_workspace
from tests.conftest import ROOT

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="socket files and modes are a Unix matter")


@pytest.fixture
def home(monkeypatch, qapp):
    """A private, short ``$KEEPGUI_HOME`` (a Unix socket path must stay under ~100 bytes).

    ``qapp`` first: an in-process client would otherwise make a bare QCoreApplication,
    and no window could be built after it.
    """
    path = tempfile.mkdtemp(prefix="kg-")
    monkeypatch.setenv("KEEPGUI_HOME", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def server(home):
    """A listening instance server (closed at the end)."""
    srv = ipc.InstanceServer()
    assert srv.listen()
    yield srv
    srv.close()


def child_env(home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        KEEPGUI_HOME=home,
        QT_QPA_PLATFORM="offscreen",
        KEEPGUI_RELOAD_COMMAND="",
        PYTHONPATH=ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
    )
    env.pop("KEEPGUI_DATA_DIR", None)
    return env


def run_child(qtbot, home: str, *argv: str, timeout_ms: int = 60_000) -> subprocess.CompletedProcess:
    """Run ``python -m keepgui ARGV`` while this process keeps answering on its socket."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "keepgui", *argv],
        cwd=ROOT,
        env=child_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        qtbot.waitUntil(lambda: proc.poll() is not None, timeout=timeout_ms)
    finally:
        if proc.poll() is None:
            proc.kill()
    out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def keep_bytes(workspace: str) -> bytes:
    with open(os.path.join(workspace, "keep.md"), "rb") as fh:
        return fh.read()


@pytest.fixture
def running(make_window, demo_copy, server, qtbot):
    """The first instance: a window on the demo data, wired to the server (no tray under offscreen)."""
    window = make_window(demo_copy.iii, workspace=demo_copy.nanobot)
    qtbot.waitUntil(lambda: window.hub.sources[demo_copy.nanobot].doc is not None, timeout=10_000)
    desktop = install(window, QApplication.instance(), server)
    assert desktop.tray is None  # offscreen has no tray, and nothing below needs one
    return window


# ---------------------------------------------------------------------- the socket


@unix_only
def test_socket_and_folder_are_private(server):
    path = server.full_name
    assert path.startswith(os.environ["KEEPGUI_HOME"])
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(os.path.dirname(path)).st_mode) == 0o700


@unix_only
def test_a_stale_socket_does_not_block_starting(home):
    name = ipc.server_name()
    os.makedirs(os.path.dirname(name), exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(name)  # a crashed instance leaves exactly this: the file, with no one listening
    dead.close()
    assert os.path.exists(name)
    assert ipc.request("activate") is None  # nothing answers: the caller goes on alone
    srv = ipc.InstanceServer()
    try:
        assert srv.listen()
        assert ipc.may_be_running()
    finally:
        srv.close()
    assert not os.path.exists(name)  # closing removes the socket again


def test_only_one_server_listens(server):
    second = ipc.InstanceServer()
    assert not second.listen()  # the first one answers, so the second must hand over instead
    assert server.is_listening()


def test_no_instance_means_no_reply(home):
    assert not ipc.may_be_running()
    assert ipc.request("keep", {"text": "x", "workspace": home}) is None


@unix_only
def test_a_long_runtime_dir_uses_a_private_short_socket(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    name = ipc.server_name(str(deep))
    assert len(os.fsencode(name)) <= 100 and name.endswith(".sock")
    assert os.path.basename(os.path.dirname(name)) == f"keepgui-{os.getuid()}"


# ---------------------------------------------------------------------- the protocol


def _raw_exchange(qtbot, name: str, data: bytes) -> tuple[bytes, bool]:
    """Send raw bytes the way a broken client would; returns (reply bytes, dropped by the server)."""
    sock = QLocalSocket()
    sock.connectToServer(name)
    qtbot.waitUntil(lambda: sock.state() == QLocalSocket.LocalSocketState.ConnectedState, timeout=5000)
    sock.write(data)
    sock.flush()
    received = bytearray()

    def finished() -> bool:
        received.extend(bytes(sock.readAll().data()))
        return sock.state() == QLocalSocket.LocalSocketState.UnconnectedState

    qtbot.waitUntil(finished, timeout=10_000)
    return bytes(received), True


def test_garbage_is_logged_and_dropped(server, qtbot, caplog):
    calls = []
    server.register("activate", lambda args: calls.append(args) or {})
    with caplog.at_level(logging.WARNING, logger="keepgui.ipc"):
        reply, dropped = _raw_exchange(qtbot, server.full_name, b"\xff not json at all\n")
    assert reply == b"" and dropped and calls == []
    assert "not JSON" in caplog.text


def test_a_request_that_never_ends_times_out(home, qtbot, caplog, monkeypatch):
    monkeypatch.setattr(ipc, "SERVER_READ_TIMEOUT_MS", 200)
    srv = ipc.InstanceServer()
    assert srv.listen()
    try:
        with caplog.at_level(logging.WARNING, logger="keepgui.ipc"):
            reply, _ = _raw_exchange(qtbot, srv.full_name, b'{"protocol_version": 1, "command": "act')
        assert reply == b"" and "no complete request" in caplog.text
    finally:
        srv.close()


def test_other_versions_and_unknown_commands_get_an_error_reply(server, qtbot, caplog):
    server.register("activate", lambda args: {"shown": True})
    with caplog.at_level(logging.WARNING, logger="keepgui.ipc"):
        reply, _ = _raw_exchange(
            qtbot, server.full_name, b'{"protocol_version": 99, "command": "activate", "args": {}}\n'
        )
        answer = json.loads(reply)
        assert answer["ok"] is False and "protocol version 99" in answer["error"]
        reply, _ = _raw_exchange(
            qtbot, server.full_name, b'{"protocol_version": 1, "command": "format-disk", "args": {}}\n'
        )
        assert json.loads(reply) == {"protocol_version": 1, "ok": False, "error": "unknown command 'format-disk'"}
    assert "protocol version 99" in caplog.text and "format-disk" in caplog.text


def test_a_handler_error_is_an_error_reply(server, qtbot):
    from keepgui.core.errors import InvalidInput

    def refuse(_args):
        raise InvalidInput("no such workspace")

    server.register("keep", refuse)
    reply, _ = _raw_exchange(
        qtbot, server.full_name, b'{"protocol_version": 1, "command": "keep", "args": {"text": "x"}}\n'
    )
    assert json.loads(reply) == {"protocol_version": 1, "ok": False, "error": "no such workspace"}


# ---------------------------------------------------------------------- later starts hand over


def test_keep_hands_over_to_the_running_window_and_is_undoable(running, demo_copy, qtbot, home):
    window = running
    original = keep_bytes(demo_copy.nanobot)
    done = run_child(qtbot, home, "keep", "remember that", "Has a cat called Miso", "--workspace", demo_copy.nanobot)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "kept: - Has a cat called Miso"  # exactly what a lone keep prints
    assert "running keepgui window" in done.stderr
    assert keep_bytes(demo_copy.nanobot) == original + b"- Has a cat called Miso\n"
    assert window.undo_stack.count() == 1 and window.undo_stack.undoText() == "Keep fact"
    source = window.hub.sources[demo_copy.nanobot]
    assert source.doc.entries[-1].text == "Has a cat called Miso"  # the window knows at once
    window.undo_stack.undo()
    assert keep_bytes(demo_copy.nanobot) == original


def test_keep_json_from_the_window_says_who_kept_it(running, demo_copy, qtbot, home):
    done = run_child(qtbot, home, "keep", "Has a cat called Miso", "--json", "--workspace", demo_copy.nanobot)
    obj = json.loads(done.stdout)
    assert done.returncode == 0 and obj["outcome"] == "kept" and obj["written"] is True
    assert obj["handled_by"] == "window" and obj["undoable"] is True
    again = run_child(qtbot, home, "keep", "Has a cat called Miso", "--json", "--workspace", demo_copy.nanobot)
    obj = json.loads(again.stdout)
    assert again.returncode == 1 and obj["outcome"] == "already_kept" and obj["undoable"] is False
    assert running.undo_stack.count() == 1  # nothing written, nothing to undo


def test_keep_elsewhere_or_stand_alone_writes_directly(running, tmp_path, demo_copy, qtbot, home):
    other = make_workspace(tmp_path / "other")
    done = run_child(qtbot, home, "keep", "Has a cat called Miso", "--workspace", other)
    assert done.returncode == 0 and "does not show" in done.stderr
    assert keep_bytes(other).endswith(b"- Has a cat called Miso\n")
    done = run_child(qtbot, home, "--stand-alone", "keep", "Has a dog called Rex", "--workspace", demo_copy.nanobot)
    assert done.returncode == 0 and "running keepgui" not in done.stderr
    assert keep_bytes(demo_copy.nanobot).endswith(b"- Has a dog called Rex\n")
    assert running.undo_stack.count() == 0


def test_a_refused_keep_is_an_error_in_the_second_instance(running, demo_copy, qtbot, home):
    done = run_child(qtbot, home, "keep", "that", "--workspace", demo_copy.nanobot)
    assert done.returncode == 1 and "too vague" in done.stderr


def test_a_second_plain_keepgui_raises_the_window(running, server, qtbot, home, demo_copy):
    window = running
    window.hide()
    received = []
    server.messageReceived.connect(lambda command, args: received.append((command, args)))
    done = run_child(qtbot, home, "--workspace", demo_copy.nanobot, "--bank", KEEP_BANK)
    assert done.returncode == 0, done.stderr
    assert "showed the running keepgui window" in done.stderr
    assert [command for command, _ in received] == ["activate"]
    assert received[0][1]["sources"] == [{"kind": "nanobot", "path": demo_copy.nanobot}]
    assert window.isVisible()
    assert window.current == BankKey(demo_copy.nanobot, KEEP_BANK)
    qtbot.wait(600)  # the Preview pane's debounce, started by the switch, fires before the hub shuts down


def test_quick_keep_command_opens_the_running_windows_popup(running, qtbot, home):
    from keepgui.ui.quickkeep import popup_for

    done = run_child(qtbot, home, "quick-keep", "Has a cat")
    assert done.returncode == 0 and "opened Quick keep" in done.stderr, done.stderr
    popup = popup_for(running)
    qtbot.addWidget(popup)
    assert popup.isVisible() and popup.edit.text() == "Has a cat"


def test_quick_keep_without_an_instance_or_a_display_says_so(home, qtbot):
    env = child_env(home)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "quick-keep"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "no display found" in done.stderr and "keepgui keep TEXT" in done.stderr


def test_a_real_first_instance_end_to_end(home, demo_copy, qtbot):
    """``keepgui`` becomes the instance, a later ``keep`` lands in it; a killed instance leaves a stale socket
    that neither blocks the next ``keep`` nor the next start."""
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "keepgui",
            "--data-dir",
            demo_copy.iii,
            "--workspace",
            demo_copy.nanobot,
            "--reload-command",
            "",
        ],
        cwd=ROOT,
        env=child_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        qtbot.waitUntil(lambda: ipc.may_be_running() or first.poll() is not None, timeout=60_000)
        assert first.poll() is None, first.communicate()[1]
        original = keep_bytes(demo_copy.nanobot)
        done = subprocess.run(
            [sys.executable, "-m", "keepgui", "keep", "Has a cat called Miso", "--workspace", demo_copy.nanobot],
            cwd=ROOT,
            env=child_env(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and "running keepgui window" in done.stderr, done.stderr
        assert keep_bytes(demo_copy.nanobot) == original + b"- Has a cat called Miso\n"
    finally:
        first.kill()  # no chance to remove its socket: exactly what a crash leaves
        first.communicate()
    if sys.platform != "win32":
        assert os.path.exists(ipc.server_name())
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "keep", "Has a dog called Rex", "--workspace", demo_copy.nanobot],
        cwd=ROOT,
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "running keepgui" not in done.stderr, done.stderr
    assert keep_bytes(demo_copy.nanobot).endswith(b"- Has a dog called Rex\n")
    srv = ipc.InstanceServer()
    try:
        assert srv.listen()  # the next start takes over the stale socket
    finally:
        srv.close()


def test_a_second_start_opens_its_sources_in_the_window(running, qtbot, home, tmp_path):
    from keepgui.core.demo import make_demo_copy

    other = make_demo_copy(parent=str(tmp_path))
    done = run_child(qtbot, home, "--data-dir", other.iii, "--bank", "coding")
    assert done.returncode == 0, done.stderr
    assert other.iii in running.hub.sources  # opened for this session, next to what was open
    qtbot.waitUntil(lambda: running.current == BankKey(other.iii, "coding"), timeout=15_000)
    qtbot.wait(600)  # the Preview pane's debounce, started by the switch, fires before the hub shuts down
