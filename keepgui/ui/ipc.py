"""One running keepgui per user: a private local socket that later starts hand over to.

The first ``keepgui`` window listens on a :class:`QLocalServer`; a later
``keepgui`` (no command), ``keepgui keep TEXT`` or ``keepgui quick-keep``
connects, sends one request and waits for one reply, so the running window
does the work (the keep lands on its undo stack and its views update at once).
``--stand-alone`` skips all of this. The shape follows qutebrowser's
``misc/ipc.py``.

Where the socket lives
    Unix: ``keepgui.sock`` in :func:`keepgui.core.paths.app_runtime_dir`
    (``$XDG_RUNTIME_DIR/keepgui``, or ``$KEEPGUI_HOME/run``). The folder and
    the socket are made ``0700`` after ``listen()`` (Qt's ``UserAccessOption``
    is not used on Unix: it silently replaces a live socket, QTBUG-48635).
    When that path is too long for a Unix socket address (about 100 bytes), a
    private ``keepgui-<uid>`` folder in the temp dir holds a hashed name
    instead. A client connects only to a socket its own user owns.
    Windows: a named pipe ``keepgui-<user>-<hash of the runtime dir>``,
    restricted to the user with ``UserAccessOption``.

Protocol (version :data:`PROTOCOL_VERSION`)
    One request per connection: a single line of UTF-8 JSON ending in ``\\n``,
    at most :data:`MAX_MESSAGE` bytes::

        {"protocol_version": 1, "command": "activate" | "keep" | "quick-keep",
         "args": {...}, "cwd": "/where/the/client/ran", "pid": 1234}

    One reply line: ``{"protocol_version": 1, "ok": true, ...}`` with the
    handler's fields, or ``{"protocol_version": 1, "ok": false, "error": "..."}``.
    A request that is not JSON, too long, not an object, or not finished within
    :data:`SERVER_READ_TIMEOUT_MS` is logged and the connection dropped without
    a reply; a known shape with another protocol version or an unknown command
    gets an ``ok: false`` reply (so the client can say why) and is logged too.
    Client timeouts: :data:`CONNECT_TIMEOUT_MS` to connect,
    :data:`WRITE_TIMEOUT_MS` to send, and a per-command reply timeout.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal
from PySide6.QtNetwork import QAbstractSocket, QLocalServer, QLocalSocket

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import app_runtime_dir

log = logging.getLogger("keepgui.ipc")

PROTOCOL_VERSION = 1
"""Bumped whenever a request or reply changes incompatibly."""
COMMANDS = ("activate", "keep", "quick-keep")
"""The requests a running instance understands."""
MAX_MESSAGE = 64 * 1024
"""Longest request or reply line accepted, in bytes (a keep's text is at most a few KB)."""
CONNECT_TIMEOUT_MS = 1000
WRITE_TIMEOUT_MS = 2000
SERVER_READ_TIMEOUT_MS = 3000
"""A connection that sends no complete request within this is dropped."""
REPLY_TIMEOUT_MS = {"activate": 5000, "quick-keep": 5000, "keep": 15000}
"""How long a client waits for the answer; a keep may wait behind a long load in the window."""
ATIME_INTERVAL_MS = 5 * 60 * 1000
"""The socket's times are refreshed this often, so runtime-dir cleaners (which remove
files not accessed for hours, per the XDG base directory spec) leave it alone."""
_UNIX_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS; keep a margin


class IpcError(KeepguiError):
    """A running instance was found but the exchange with it failed (timeout, bad reply)."""


# ---------------------------------------------------------------------- where


def _digest(text: str) -> str:
    return hashlib.md5(text.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()[:12]


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (containers): the uid still tells users apart
        return str(os.getuid()) if hasattr(os, "getuid") else "user"


def server_name(runtime_dir: str | None = None) -> str:
    """The local server's name: a socket path on Unix, a pipe name on Windows.

    Derived from the runtime dir, so a different ``$KEEPGUI_HOME`` (the tests, a
    second profile) is a different instance.
    """
    runtime = os.path.abspath(runtime_dir or app_runtime_dir())
    if sys.platform == "win32":
        return f"keepgui-{_user()}-{_digest(runtime)}"
    path = os.path.join(runtime, "keepgui.sock")
    if len(os.fsencode(path)) <= _UNIX_PATH_MAX:
        return path
    return os.path.join(tempfile.gettempdir(), f"keepgui-{os.getuid()}", f"{_digest(runtime)}.sock")


def _is_ours(path: str) -> bool:
    """True when ``path`` is a socket owned by this user (never talk to another user's socket)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()


def may_be_running(name: str | None = None) -> bool:
    """A cheap check before any connection: False when no instance can be listening.

    On Unix that means there is no socket of ours at the path, so ``keepgui keep``
    with nothing running never even starts Qt's event machinery.
    """
    name = name or server_name()
    return True if sys.platform == "win32" else _is_ours(name)


def _private_folder(folder: str) -> None:
    """Create ``folder`` if needed and make sure only this user can enter it."""
    try:
        fsio.make_dirs(folder)
        info = os.lstat(folder)
    except OSError as exc:
        raise IpcError(
            f"cannot create {folder} for the single-instance socket ({exc.strerror or exc}); "
            "keepgui runs without handover"
        ) from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise IpcError(
            f"{folder} belongs to another user or is not a folder; keepgui runs without "
            "single-instance handover (start it with --stand-alone to silence this)"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        try:
            os.chmod(folder, 0o700)  # keepgui's own runtime folder, never user data: only the mode changes
        except OSError as exc:
            raise IpcError(
                f"cannot make {folder} private ({exc.strerror or exc}); keepgui runs without handover"
            ) from None


# ---------------------------------------------------------------------- client


_core_app: QCoreApplication | None = None


def _ensure_event_machinery() -> None:
    """QLocalSocket needs an application object; a CLI command has none, so make a bare one."""
    global _core_app
    if QCoreApplication.instance() is None:
        _core_app = QCoreApplication(sys.argv[:1] or ["keepgui"])


def request(
    command: str, args: dict[str, Any] | None = None, *, name: str | None = None, timeout_ms: int | None = None
) -> dict[str, Any] | None:
    """Send one request to the running instance and return its reply.

    Returns None when no instance is running (nothing listens, or the socket
    is stale), so the caller does the work itself. Raises :class:`IpcError`
    when an instance answered the connection but the exchange failed; the
    caller must not silently redo the work then (it may have happened).
    """
    name = name or server_name()
    if not may_be_running(name):
        return None
    _ensure_event_machinery()
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
        # ServerNotFound / ConnectionRefused: a socket file left by a crashed instance
        log.info("no keepgui instance answers on %s: %s", name, socket.errorString())
        socket.abort()
        return None
    message = {
        "protocol_version": PROTOCOL_VERSION,
        "command": command,
        "args": args or {},
        "cwd": os.getcwd(),
        "pid": os.getpid(),
    }
    data = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
    if len(data) > MAX_MESSAGE:
        socket.abort()
        raise IpcError(f"the request is larger than {MAX_MESSAGE} bytes")
    socket.write(data)
    if not socket.waitForBytesWritten(WRITE_TIMEOUT_MS):
        socket.abort()
        raise IpcError(
            f"could not send to the running keepgui ({socket.errorString()}); run with --stand-alone to bypass it"
        )
    wait = timeout_ms if timeout_ms is not None else REPLY_TIMEOUT_MS.get(command, 5000)
    buffer = b""
    deadline = time.monotonic() + wait / 1000
    while b"\n" not in buffer:
        remaining = int((deadline - time.monotonic()) * 1000)
        if remaining <= 0:
            socket.abort()
            raise IpcError(
                f"the running keepgui did not answer within {wait / 1000:.0f} s; it may be busy or "
                "hung (check its window, or run with --stand-alone to bypass it)"
            )
        if socket.bytesAvailable() == 0 and not socket.waitForReadyRead(remaining):
            if socket.state() != QLocalSocket.LocalSocketState.ConnectedState and socket.bytesAvailable() == 0:
                socket.abort()
                raise IpcError(
                    "the running keepgui closed the connection without an answer "
                    "(different version?); run with --stand-alone to bypass it"
                )
            continue
        buffer += bytes(socket.readAll().data())
        if len(buffer) > MAX_MESSAGE:
            socket.abort()
            raise IpcError("the running keepgui sent an oversized reply")
    socket.disconnectFromServer()
    try:
        reply = json.loads(buffer.split(b"\n", 1)[0].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IpcError(f"the running keepgui sent a reply that is not JSON: {exc}") from None
    if not isinstance(reply, dict):
        raise IpcError("the running keepgui sent a reply that is not a JSON object")
    if reply.get("protocol_version") != PROTOCOL_VERSION:
        raise IpcError(
            f"the running keepgui speaks protocol {reply.get('protocol_version')!r}, this one "
            f"{PROTOCOL_VERSION}; restart it, or run with --stand-alone"
        )
    return reply


def activation_token() -> str | None:
    """The launcher's activation token, if any, so the running window may take focus.

    Wayland compositors only let a window activate itself with a token the
    launcher gave the *new* process (``XDG_ACTIVATION_TOKEN``; X11's startup
    notification uses ``DESKTOP_STARTUP_ID``); it is passed on in the request.
    """
    return os.environ.get("XDG_ACTIVATION_TOKEN") or os.environ.get("DESKTOP_STARTUP_ID") or None


# ---------------------------------------------------------------------- server


Handler = Callable[[dict[str, Any]], dict[str, Any]]
"""A command's handler: takes the request's ``args``, returns the reply's fields.

Raising :class:`~keepgui.core.errors.KeepguiError` (or OSError) replies
``ok: false`` with the message.
"""


class InstanceServer(QObject):
    """The running instance's end: accepts requests and dispatches them to handlers.

    Register a handler per command with :meth:`register`, then :meth:`listen`.
    Requests are handled on the GUI thread, one connection at a time as they
    complete, each with its own read timeout.

    Signals:
        messageReceived(str command, dict args): a well-formed request arrived
            (emitted before its handler runs).
    """

    messageReceived = Signal(str, dict)

    def __init__(self, name: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name or server_name()
        self._server = QLocalServer(self)
        self._server.newConnection.connect(self._on_new_connection)
        self._handlers: dict[str, Handler] = {}
        self._connections: dict[QLocalSocket, tuple[bytearray, QTimer]] = {}
        self._touch = QTimer(self)
        self._touch.setInterval(ATIME_INTERVAL_MS)
        self._touch.timeout.connect(self._refresh_times)

    def register(self, command: str, handler: Handler) -> None:
        """Handle ``command`` with ``handler`` (replacing any earlier one)."""
        if command not in COMMANDS:
            raise ValueError(f"unknown IPC command {command!r}")
        self._handlers[command] = handler

    def is_listening(self) -> bool:
        """True while this process is the running instance."""
        return self._server.isListening()

    @property
    def full_name(self) -> str:
        """The socket path (Unix) or full pipe name (Windows) while listening."""
        return self._server.fullServerName() or self.name

    def listen(self) -> bool:
        """Become the running instance; False when another one is already listening.

        A socket file left behind by a crashed instance is removed first
        (nothing answers on it). Raises :class:`IpcError` when the socket's
        folder belongs to another user.
        """
        if sys.platform == "win32":
            self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        else:
            _private_folder(os.path.dirname(self.name))
        if self._server.listen(self.name):
            self._secure()
            return True
        if self._server.serverError() != QAbstractSocket.SocketError.AddressInUseError:
            raise IpcError(f"cannot listen on {self.name}: {self._server.errorString()}")
        if self._someone_answers():
            return False  # two starts raced and the other one won: hand over to it instead
        log.info("removing a stale keepgui socket at %s", self.name)
        QLocalServer.removeServer(self.name)
        if not self._server.listen(self.name):
            if self._someone_answers():
                return False
            raise IpcError(f"cannot listen on {self.name}: {self._server.errorString()}")
        self._secure()
        return True

    def _someone_answers(self) -> bool:
        if sys.platform != "win32" and not os.path.exists(self.name):
            return False
        probe = QLocalSocket()
        probe.connectToServer(self.name)
        alive = probe.waitForConnected(CONNECT_TIMEOUT_MS)
        probe.abort()
        return alive

    def _secure(self) -> None:
        if sys.platform != "win32":
            try:
                # keepgui's own socket, not user data: the mode makes it reachable by this user only
                os.chmod(self.full_name, 0o700)
            except OSError as exc:
                self._server.close()
                raise IpcError(
                    f"cannot make {self.full_name} private ({exc.strerror or exc}); keepgui runs without handover"
                ) from None
        self._touch.start()

    def _refresh_times(self) -> None:
        if sys.platform != "win32" and self.is_listening():
            try:
                os.utime(self.full_name)  # keepgui's own socket: only its times change
            except OSError as exc:
                log.warning("cannot refresh the times of %s: %s", self.full_name, exc)

    def close(self) -> None:
        """Stop listening and remove the socket (the instance is quitting)."""
        self._touch.stop()
        for socket in list(self._connections):
            self._drop(socket)
        if self._server.isListening():
            self._server.close()

    # ------------------------------------------------------------------ connections

    def _on_new_connection(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            timer = QTimer(self)
            timer.setSingleShot(True)
            timer.timeout.connect(lambda s=socket: self._timed_out(s))
            timer.start(SERVER_READ_TIMEOUT_MS)
            self._connections[socket] = (bytearray(), timer)
            socket.readyRead.connect(lambda s=socket: self._on_ready_read(s))
            socket.disconnected.connect(lambda s=socket: self._forget(s))
            if socket.bytesAvailable():
                self._on_ready_read(socket)

    def _timed_out(self, socket: QLocalSocket) -> None:
        log.warning("dropped an IPC connection that sent no complete request within %d ms", SERVER_READ_TIMEOUT_MS)
        self._drop(socket)

    def _forget(self, socket: QLocalSocket) -> None:
        entry = self._connections.pop(socket, None)
        if entry is not None:
            entry[1].stop()
            entry[1].deleteLater()
        socket.deleteLater()

    def _drop(self, socket: QLocalSocket) -> None:
        self._forget(socket)
        socket.abort()

    def _on_ready_read(self, socket: QLocalSocket) -> None:
        entry = self._connections.get(socket)
        if entry is None:
            return
        buffer = entry[0]
        buffer += bytes(socket.readAll().data())
        if len(buffer) > MAX_MESSAGE:
            log.warning("dropped an IPC request longer than %d bytes", MAX_MESSAGE)
            self._drop(socket)
            return
        if b"\n" not in buffer:
            return
        entry[1].stop()
        line = bytes(buffer).split(b"\n", 1)[0]
        reply = self._handle(line)
        if reply is None:
            self._drop(socket)
            return
        socket.write(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
        socket.flush()
        socket.disconnectFromServer()  # waits until the reply is written

    def _handle(self, line: bytes) -> dict[str, Any] | None:
        """The reply to one request line, or None to drop the connection without one."""
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            log.warning("dropped an IPC request that is not JSON: %s", exc)
            return None
        if not isinstance(message, dict) or not isinstance(message.get("args", {}), dict):
            log.warning("dropped an IPC request that is not a JSON object with object args")
            return None
        version = message.get("protocol_version")
        if version != PROTOCOL_VERSION:
            log.warning("refused an IPC request of protocol version %r (this is %d)", version, PROTOCOL_VERSION)
            return _error(
                f"protocol version {version!r} is not supported (this keepgui speaks "
                f"{PROTOCOL_VERSION}); restart keepgui"
            )
        command = message.get("command")
        handler = self._handlers.get(command) if isinstance(command, str) else None
        if handler is None:
            log.warning("refused an unknown IPC command %r", command)
            return _error(f"unknown command {command!r}")
        args = message.get("args") or {}
        self.messageReceived.emit(command, args)
        try:
            fields = handler(args)
        except (KeepguiError, OSError) as exc:
            return _error(str(exc))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # malformed args from a client
            log.warning("refused an IPC %s request with bad arguments: %s", command, exc)
            return _error(f"bad arguments for {command}: {exc}")
        except Exception as exc:  # a bug in a handler must not leave the client waiting for its timeout
            log.exception("the IPC %s handler failed", command)
            return _error(f"the running keepgui failed to handle {command}: {exc}")
        return {"protocol_version": PROTOCOL_VERSION, "ok": True, **(fields or {})}


def _error(text: str) -> dict[str, Any]:
    return {"protocol_version": PROTOCOL_VERSION, "ok": False, "error": text}


def become_instance(
    command: str, args: dict[str, Any], parent: QObject | None = None
) -> tuple[dict[str, Any] | None, Any]:
    """Hand ``command`` to a running instance, or become the instance.

    Returns ``(reply, None)`` when a running instance took the request, and
    ``(None, server)`` when this process is now listening (``server`` is an
    :class:`InstanceServer`, or None when listening was impossible and a
    warning was logged: keepgui then simply runs on its own).
    """
    reply = request(command, args)
    if reply is not None:
        return reply, None
    server = InstanceServer(parent=parent)
    try:
        if server.listen():
            return None, server
    except IpcError as exc:
        log.warning("%s", exc)
        server.deleteLater()
        return None, None
    # Lost a race with an instance that started just now: give it the request after all.
    server.deleteLater()
    reply = request(command, args)
    return reply, None
