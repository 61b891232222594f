"""Talking to another machine with the system's OpenSSH client: one multiplexed connection, many scripts (no Qt).

keepgui writes no SSH of its own. ``ssh`` is run with a master connection (``ControlMaster`` /
``ControlPersist``) so that every round trip after the first reuses one authenticated
connection; the user's ssh_config applies as it does for ``ssh`` itself (``HostName``, ``User``,
``Port``, ``IdentityFile``, ``ProxyJump``, the agent). ``BatchMode`` keeps ``ssh`` from ever
asking a question on a terminal keepgui does not own, and ``StrictHostKeyChecking=yes`` makes
the host key a hard check against ``known_hosts``: an unknown host is refused with its
fingerprint (:class:`UnknownHost`, which the window and a terminal ask about), a changed key
is refused with the reason (:class:`HostKeyChanged`).

Each remote step is one POSIX ``sh`` script run by :meth:`Connection.run`, its input on stdin;
:attr:`Connection.round_trips` counts them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from keepgui.core.errors import KeepguiError
from keepgui.core.remote.session import Lost, Session
from keepgui.core.remote.target import CONFIG_ENV, Target, config_file

CONNECT_TIMEOUT = 10
"""Seconds ``ssh`` waits for a machine to answer."""


class RemoteError(KeepguiError):
    """The other machine could not be reached or did not do what was asked (the reason is in the message)."""


class Offline(RemoteError):
    """The connection to the other machine is down (keepgui reconnects; meanwhile the source is read-only)."""


class UnknownHost(RemoteError):
    """The machine's host key is not in ``known_hosts``: nothing was sent to it.

    ``fingerprints`` are what ``ssh-keygen -lf`` says of the keys it offers (to show a person);
    ``keys`` the ``known_hosts`` lines that accepting them would add.
    """

    def __init__(self, host: str, fingerprints: tuple[str, ...], keys: tuple[str, ...], known_hosts: str) -> None:
        shown = "\n  ".join(fingerprints) or "(it offered none keepgui could read)"
        super().__init__(
            f"{host} is not a known host: its key is not in {known_hosts}. It offers:\n  {shown}\n"
            f"Check the fingerprint with the machine's owner, then accept it (in the window, or "
            f"`ssh {host}` once on a terminal)."
        )
        self.host = host
        self.fingerprints = fingerprints
        self.keys = keys
        self.known_hosts = known_hosts


class HostKeyChanged(RemoteError):
    """The machine offered a host key other than the one ``known_hosts`` holds for it: refused."""


def _ssh() -> str:
    found = shutil.which("ssh")
    if found is None:
        raise RemoteError(
            "the `ssh` command (OpenSSH's client) is not installed; keepgui uses it to reach other machines"
        )
    return found


def control_folder() -> str:
    """A private folder for the master connections' sockets (short: a socket path has ~100 bytes)."""
    from keepgui.core.remote.mirror import local_dirs

    folder = os.path.join(tempfile.gettempdir(), f"keepgui-ssh-{os.getuid() if hasattr(os, 'getuid') else 0}")
    local_dirs(folder, 0o700)
    return folder


@dataclass(frozen=True)
class Result:
    """What one remote script gave: its exit status, its output (bytes) and its error output (text)."""

    status: int
    out: bytes
    err: str


class Connection:
    """One machine, reached through one multiplexed OpenSSH connection."""

    def __init__(self, target: Target, *, persist: int = 60) -> None:
        self.target = target
        self.round_trips = 0
        self._persist = persist
        self._lock = threading.Lock()
        digest = hashlib.sha256(f"{target.machine}\0{config_file()}".encode()).hexdigest()[:16]
        self._control = os.path.join(control_folder(), digest)
        self._session: Session | None = None
        self._verified = False
        self._no_session_until = 0.0

    def options(self) -> list[str]:
        """The options every ``ssh`` run gets (the destination's own come from ssh_config)."""
        opts = [
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=2",
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={self._control}",
            "-o", f"ControlPersist={self._persist}",
            "-o", "LogLevel=ERROR",
        ]  # fmt: skip
        if os.environ.get(CONFIG_ENV):
            opts[:0] = ["-F", os.environ[CONFIG_ENV]]
        if self.target.user:
            opts += ["-l", self.target.user]
        if self.target.port:
            opts += ["-p", str(self.target.port)]
        return opts

    def run(self, script: str, stdin: bytes = b"", *, timeout: float = 120.0, args: tuple[str, ...] = ()) -> Result:
        """Run ``script`` with POSIX ``sh`` on the machine (``args`` as its ``$1``…), ``stdin`` as its input.

        Raises :class:`UnknownHost`, :class:`HostKeyChanged` or :class:`Offline` when ``ssh`` itself
        failed (exit 255); the script's own failures come back in the Result.
        """
        with self._lock:
            self.round_trips += 1
        session = self._session_for_call(timeout)
        if session is not None:
            try:
                status, out, err_bytes = session.call(script, stdin, args, timeout)
                return Result(status, out, err_bytes.decode("utf-8", "replace"))
            except Lost as exc:
                self._drop_session(session)
                raise Offline(f"{self.target.machine}: {exc}") from None
            finally:
                if session.lock.locked():
                    session.lock.release()
        remote = "exec sh -c " + shlex.quote(script) + " keepgui " + " ".join(shlex.quote(a) for a in args)
        command = [_ssh(), *self.options(), "--", self.target.host, remote]
        try:
            done = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise Offline(f"{self.target.machine} did not answer within {timeout:g} s") from None
        err = done.stderr.decode("utf-8", "replace")
        if done.returncode == 255:
            raise self._ssh_failure(err)
        self._verified = True
        return Result(done.returncode, done.stdout, err)

    def _session_for_call(self, timeout: float) -> Session | None:
        """The long-lived remote shell, held for one call; None when it is busy (another thread's call runs
        there), not verified yet (the first call goes through a plain ``ssh`` run, so host keys and
        errors are reported as such) or cannot be started (then every call is a plain run)."""
        if not self._verified or time.monotonic() < self._no_session_until:
            return None
        with self._lock:
            session = self._session
            if session is None or not session.alive():
                try:
                    session = Session([_ssh(), *self.options(), "--", self.target.host], CONNECT_TIMEOUT)
                except (Lost, OSError):
                    self._no_session_until = time.monotonic() + 30  # plain runs meanwhile; then try again
                    return None
                self._session = session
        return session if session.lock.acquire(blocking=False) else None

    def _drop_session(self, session: Session) -> None:
        with self._lock:
            if self._session is session:
                self._session = None
        session.close()

    def start(self, script: str, *, args: tuple[str, ...] = ()) -> Held:
        """Start ``script`` on the machine and leave it running (a lock held there): see :class:`Held`."""
        remote = "exec sh -c " + shlex.quote(script) + " keepgui " + " ".join(shlex.quote(a) for a in args)
        with self._lock:
            self.round_trips += 1
        process = subprocess.Popen(
            [_ssh(), *self.options(), "--", self.target.host, remote],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        return Held(process, self.target.machine)

    def _ssh_failure(self, err: str) -> RemoteError:
        text = err.strip()
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or ("Host key for" in text and "has changed" in text):
            where = next((line for line in text.splitlines() if "Offending" in line), "")
            return HostKeyChanged(
                f"{self.target.machine} offered a host key other than the one known_hosts holds for it"
                f"{' (' + where.strip() + ')' if where else ''}: keepgui refuses to connect. Someone may be "
                "in the middle, or the machine was reinstalled; if you know it was, remove the old key "
                f"with `ssh-keygen -R {self.target.host}` and connect again."
            )
        if "Host key verification failed" in text or ("No " in text and "host key is known" in text):
            return self.unknown_host()
        last = text.splitlines()[-1] if text else "ssh failed"
        return Offline(f"{self.target.machine}: {last}")

    def resolved(self) -> dict[str, list[str]]:
        """``ssh -G``: what ssh_config makes of this destination (keys lowercase, every value)."""
        opts = ["-F", os.environ[CONFIG_ENV]] if os.environ.get(CONFIG_ENV) else []
        if self.target.user:
            opts += ["-l", self.target.user]
        if self.target.port:
            opts += ["-p", str(self.target.port)]
        done = subprocess.run([_ssh(), "-G", *opts, "--", self.target.host], capture_output=True, check=False)
        out: dict[str, list[str]] = {}
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(" ")
            out.setdefault(key.lower(), []).append(value)
        return out

    def unknown_host(self) -> UnknownHost:
        """The refusal of an unknown host, with the fingerprints of the keys it offers (``ssh-keyscan``)."""
        config = self.resolved()
        name = (config.get("hostname") or [self.target.host])[0]
        port = (config.get("port") or ["22"])[0]
        known = (config.get("userknownhostsfile") or ["~/.ssh/known_hosts"])[0].split()[0]
        keys: tuple[str, ...] = ()
        prints: tuple[str, ...] = ()
        scan = shutil.which("ssh-keyscan")
        if scan is not None:
            hashed = ["-H"] if (config.get("hashknownhosts") or ["no"])[0] == "yes" else []  # as ssh would write it
            done = subprocess.run(
                [scan, *hashed, "-T", str(CONNECT_TIMEOUT), "-p", port, name],
                capture_output=True,
                timeout=30,
                check=False,
            )
            keys = tuple(
                line
                for line in done.stdout.decode("utf-8", "replace").splitlines()
                if line.strip() and not line.startswith("#")
            )
            prints = _fingerprints(keys)
        return UnknownHost(self.target.machine, prints, keys, os.path.expanduser(known))

    def close(self) -> None:
        """End the long-lived shell and the master connection (nothing else is running on it)."""
        with self._lock:
            session, self._session, self._verified = self._session, None, False
        if session is not None:
            session.close()
        if os.path.exists(self._control):
            subprocess.run(
                [_ssh(), *self.options(), "-O", "exit", "--", self.target.host],
                capture_output=True,
                timeout=10,
                check=False,
            )


class Held:
    """A remote script left running (see :meth:`Connection.start`): its first line, then :meth:`release`,
    which closes its input so it ends (a lock it held is let go)."""

    def __init__(self, process: subprocess.Popen[bytes], machine: str) -> None:
        self._process = process
        self._machine = machine

    def first_line(self, timeout: float) -> str:
        """The script's first line of output ("" when it ended without one); Offline after ``timeout`` seconds."""
        import select

        stdout = self._process.stdout
        assert stdout is not None
        ready, _w, _x = select.select([stdout], [], [], timeout)
        if not ready:
            self.release()
            raise Offline(f"{self._machine} did not answer within {timeout:g} s")
        return stdout.readline().decode("utf-8", "replace").strip()

    def release(self) -> None:
        """End the script: its input closed, waited for (killed after 10 s)."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


def _fingerprints(keys: tuple[str, ...]) -> tuple[str, ...]:
    """``ssh-keygen -lf -`` of ``known_hosts`` lines: ``256 SHA256:… host (ED25519)``."""
    keygen = shutil.which("ssh-keygen")
    if keygen is None or not keys:
        return ()
    done = subprocess.run(
        [keygen, "-lf", "-"], input="\n".join(keys).encode() + b"\n", capture_output=True, check=False
    )
    return tuple(line for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip())


def accept_host(unknown: UnknownHost) -> None:
    """Add the keys a person accepted to their ``known_hosts`` (appended, as ``ssh`` itself would)."""
    from keepgui.core import fsio

    if not unknown.keys:
        raise RemoteError(f"{unknown.host} offered no host key to accept")
    fsio.make_dirs(os.path.dirname(unknown.known_hosts))
    fsio.append_lines(unknown.known_hosts, [line.encode() + b"\n" for line in unknown.keys], sole_writer=True)
