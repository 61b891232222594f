"""The window over a real OpenSSH server: Open on another machine… finds the agents in the remote home and
opens them; a remote source is named by its host in the sidebar, follows remote changes live, and is
marked "offline — read-only" while its machine does not answer."""

from __future__ import annotations

import os
import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from keepgui.core.source import BankKey
from tests.core import sshd

pytestmark = pytest.mark.skipif(bool(sshd.available()), reason=sshd.available() or "ok")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    yield from sshd.server_fixture(tmp_path_factory)


@pytest.fixture(scope="module")
def remote_home(server):
    """The remote user's home with a nanobot workspace and a Hermes home where those agents keep them."""
    from keepgui.core.demo import make_demo_copy

    copy = make_demo_copy(parent=str(server.folder))
    shutil.copytree(copy.path("nanobot"), os.path.join(server.home, ".nanobot", "workspace"))
    shutil.copytree(copy.path("hermes"), os.path.join(server.home, ".hermes"))
    return server.home


def test_open_on_another_machine_finds_and_opens_the_agents(qtbot, server, remote_home):
    from keepgui.ui.remote import FoundRole, RemoteDialog

    opened: list[tuple[str, str]] = []
    dialog = RemoteDialog(None, lambda kind, path: opened.append((kind, path)))
    qtbot.addWidget(dialog)
    assert sshd.ALIAS in [dialog.machine.itemText(i) for i in range(dialog.machine.count())]
    dialog.machine.setCurrentText(sshd.ALIAS)
    dialog.find_agents.click()
    qtbot.waitUntil(lambda: dialog.found.count() >= 2, timeout=20_000)
    kinds = {dialog.found.item(i).data(FoundRole)[0] for i in range(dialog.found.count())}
    assert {"nanobot", "hermes"} <= kinds
    for i in range(dialog.found.count()):
        if dialog.found.item(i).data(FoundRole)[0] not in ("nanobot", "hermes"):
            dialog.found.item(i).setCheckState(Qt.CheckState.Unchecked)
    dialog.buttons.button(QDialogButtonBox.StandardButton.Open).click()
    qtbot.waitUntil(lambda: len(opened) == 2, timeout=20_000)
    assert {k for k, _p in opened} == {"nanobot", "hermes"}
    for _kind, path in opened:
        assert os.path.isdir(path) and path.endswith(
            remote_home.lstrip("/") + ("/.nanobot/workspace" if _kind == "nanobot" else "/.hermes")
        )


def test_a_remote_source_is_named_by_its_host_live_and_offline(
    qtbot, make_window, demo_copy, server, remote_home, monkeypatch
):
    from keepgui.backends.nanobot.bank import KEEP_BANK
    from keepgui.core.remote import open_mirror
    from keepgui.core.remote.ssh import Offline
    from keepgui.ui.memorypanel.model import RecordRole

    mirror = open_mirror(f"{sshd.ALIAS}:.nanobot/workspace")
    window = make_window(demo_copy.iii, bank=None)
    window.open_source("nanobot", mirror.local, remember=False)
    key = BankKey(mirror.local, KEEP_BANK)
    qtbot.waitUntil(lambda: window.hub.is_loaded(key), timeout=15_000)
    item = window.tree_model.index_of_source(mirror.local)
    assert f"{sshd.ALIAS}:{remote_home}/.nanobot/workspace" in item.data(Qt.ItemDataRole.DisplayRole)
    assert item.parent().data(Qt.ItemDataRole.DisplayRole) == sshd.ALIAS  # listed under its machine
    assert window.tree.isExpanded(item.parent())
    window.select_bank(key)
    qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)

    def texts() -> list[str]:
        proxy = window.memories.proxy
        return [proxy.index(r, 0).data(RecordRole).text for r in range(proxy.rowCount())]

    with open(os.path.join(remote_home, ".nanobot", "workspace", "keep.md"), "a") as fh:
        fh.write("- The staging box is called kestrel.\n")
    qtbot.waitUntil(lambda: any("kestrel" in t for t in texts()), timeout=4_000)  # live: polled, watched, reloaded

    change = window.hub.perform(key, lambda bank: bank.keep("The backup job runs at 03:00 on kestrel."))
    assert change.written
    with open(os.path.join(remote_home, ".nanobot", "workspace", "keep.md")) as fh:
        assert "The backup job runs at 03:00 on kestrel." in fh.read()  # written on the remote machine
    qtbot.waitUntil(lambda: any("03:00" in t for t in texts()), timeout=4_000)
    reloads: list[object] = []
    window.hub._changes.connect(reloads.append)
    qtbot.wait(2_000)
    assert reloads == []  # the next listings found the remote file as keepgui left it: nothing fetched, no echo
    undone = change.undo()  # undo works over SSH too: the exact previous bytes go back there
    window.hub.deliver(undone)
    with open(os.path.join(remote_home, ".nanobot", "workspace", "keep.md")) as fh:
        assert "03:00" not in fh.read()

    def unreachable(*_args, **_kwargs):
        raise Offline(f"{sshd.ALIAS}: Connection refused")

    monkeypatch.setattr(mirror.connection, "run", unreachable)  # the machine stops answering
    qtbot.waitUntil(lambda: "offline — read-only" in item.data(Qt.ItemDataRole.DisplayRole), timeout=5_000)
    monkeypatch.undo()  # and answers again: the next poll reconnects
    qtbot.waitUntil(lambda: "offline" not in item.data(Qt.ItemDataRole.DisplayRole), timeout=40_000)
    window.hub.remove_source(mirror.local)
    hosts = [window.tree_model.item(r).data(Qt.ItemDataRole.DisplayRole) for r in range(window.tree_model.rowCount())]
    assert sshd.ALIAS not in hosts  # a machine with no source open is no longer listed


def test_an_unknown_host_is_asked_about_with_its_fingerprint_and_trusted(qtbot, server, remote_home):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    from keepgui.core.remote.ssh import Connection
    from keepgui.core.remote.target import parse
    from keepgui.ui.remote import RemoteDialog

    Connection(parse(f"{sshd.ALIAS}:")).close()  # a new connection, which checks the host key
    with open(server.known_hosts, "w"):
        pass
    asked: list[str] = []

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(50, answer)
            return
        asked.append(box.text())
        trust = next(b for b in box.buttons() if "Trust" in b.text())
        trust.click()

    try:
        dialog = RemoteDialog(None, lambda _kind, _path: None)
        qtbot.addWidget(dialog)
        dialog.machine.setCurrentText(sshd.ALIAS)
        QTimer.singleShot(50, answer)
        dialog.find_agents.click()
        qtbot.waitUntil(lambda: dialog.found.count() >= 2, timeout=30_000)
        assert asked and "is not a known host" in asked[0] and "SHA256:" in asked[0]
        with open(server.known_hosts) as fh:
            assert "ssh-ed25519" in fh.read()  # trusted: added to known_hosts
    finally:
        server.trust_host_key()
