"""A real OpenSSH server on 127.0.0.1 for the remote tests: a free port, a throw-away host key and user
key, a temporary home for the remote user and an ssh_config that names it (never the real ~/.ssh).

The tests point keepgui at the config with ``$KEEPGUI_SSH_CONFIG``; the machine is the alias ``kgtest``.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
ALIAS = "kgtest"


def available() -> str:
    """ "" when a server can be started here, else why not (the tests skip with it)."""
    if not os.path.exists(SSHD):
        return "OpenSSH's server is not installed (Debian: openssh-server; .ci/packages lists it)"
    if not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        return "OpenSSH's client is not installed"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path], check=True)


class Server:
    """One sshd (see the module docstring); :meth:`stop` ends it and every session it started."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.home = os.path.join(folder, "remote-home")
        os.makedirs(self.home)
        self.port = _free_port()
        self.host_key = os.path.join(folder, "host_ed25519")
        self.user_key = os.path.join(folder, "id_ed25519")
        _keygen(self.host_key)
        _keygen(self.user_key)
        shutil.copy(self.user_key + ".pub", os.path.join(folder, "authorized_keys"))
        self.known_hosts = os.path.join(folder, "known_hosts")
        self.trust_host_key()
        self.config = os.path.join(folder, "ssh_config")
        user = getpass.getuser()
        with open(self.config, "w") as fh:
            fh.write(
                f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {user}\n"
                f"  IdentityFile {self.user_key}\n  IdentitiesOnly yes\n  IdentityAgent none\n"
                f"  UserKnownHostsFile {self.known_hosts}\n  GlobalKnownHostsFile /dev/null\n"
                f"Host other\n  HostName 127.0.0.1\n"
            )
        sshd_config = os.path.join(folder, "sshd_config")
        with open(sshd_config, "w") as fh:
            fh.write(
                f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
                f"PidFile {os.path.join(folder, 'sshd.pid')}\nAuthorizedKeysFile {os.path.join(folder, 'authorized_keys')}\n"
                "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                "PubkeyAuthentication yes\nUsePAM no\nPermitRootLogin prohibit-password\n"
                f"AllowUsers {user}\nSetEnv HOME={self.home}\nLogLevel ERROR\nMaxSessions 50\nMaxStartups 50\n"
            )
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", sshd_config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"sshd did not start: {self.proc.stderr.read().decode() if self.proc.stderr else ''}"
                )
            time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def trust_host_key(self, key: str | None = None) -> None:
        """Write known_hosts with the server's host key (or another key's, to make it a changed one)."""
        with open((key or self.host_key) + ".pub") as fh:
            kind, blob = fh.read().split()[:2]
        with open(self.known_hosts, "w") as fh:
            fh.write(f"[127.0.0.1]:{self.port} {kind} {blob}\n")

    def sessions(self) -> list[int]:
        """The pids of sshd's children: one per connection."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def drop_connections(self) -> int:
        """Kill every connection's sshd (the client sees the connection cut); how many there were."""
        pids = self.sessions()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)

    def stop(self) -> None:
        """End the server and its connections."""
        self.drop_connections()
        self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()


def server_fixture(tmp_path_factory: object) -> object:
    """The body of a module's ``server`` fixture: a running Server, ``$KEEPGUI_SSH_CONFIG`` pointing at it."""
    import pytest

    why = available()
    if why:
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("sshd")  # type: ignore[attr-defined]
    server = Server(str(folder))
    old = os.environ.get("KEEPGUI_SSH_CONFIG")
    os.environ["KEEPGUI_SSH_CONFIG"] = server.config
    try:
        yield server
    finally:
        server.stop()
        if old is None:
            os.environ.pop("KEEPGUI_SSH_CONFIG", None)
        else:
            os.environ["KEEPGUI_SSH_CONFIG"] = old
