"""One long-lived remote shell per connection, so a round trip costs no new ``ssh`` process (no Qt).

Starting ``ssh`` for every script costs tens of milliseconds even over a master connection (a new
client process, a new session, a new shell). A :class:`Session` starts one remote ``sh`` loop and
hands it each script in turn on its input, framed by lengths: a header line (the script's and its
input's sizes, how many arguments), the arguments one a line, the script, the input. The loop runs
the script from the remote home with that input, and answers with its exit status and the sizes of
its output and error output, then both. Nothing runs until the whole input arrived (a connection cut
while it is sent leaves nothing done); a session that stops answering is dropped, and the call is
reported as :class:`~keepgui.core.remote.ssh.Offline` — never repeated, since it may have run.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import subprocess
import threading
import time

SERVER = r"""
t="${TMPDIR:-/tmp}/.keepgui-session-$$"
mkdir -m 700 "$t" || exit 12
trap 'rm -rf "$t"' EXIT HUP INT TERM PIPE
echo keepgui-ready
while IFS=' ' read -r ls ld na; do
  set --
  while [ "$na" -gt 0 ]; do IFS= read -r a; set -- "$@" "$a"; na=$((na - 1)); done
  head -c "$ls" > "$t/script"
  head -c "$ld" > "$t/in"
  [ "$(wc -c < "$t/in")" -eq "$ld" ] || exit 25
  (cd && exec sh "$t/script" "$@") < "$t/in" > "$t/out" 2> "$t/err"
  st=$?
  printf '%s %s %s\n' "$st" $(wc -c < "$t/out") $(wc -c < "$t/err")
  cat "$t/out" "$t/err"
done
"""
"""The remote loop (POSIX sh; ``head -c`` reads exactly as many bytes as asked on GNU and busybox)."""


class Lost(Exception):
    """The session ended or stopped answering (whether the last script ran is not known)."""


class Session:
    """A remote shell loop started with ``command`` (an ``ssh`` command line without its remote command)."""

    def __init__(self, command: list[str], timeout: float) -> None:
        self.lock = threading.Lock()
        self._buffer = b""
        self._process = subprocess.Popen(
            [*command, "exec sh -c " + shlex.quote(SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            if self._line(time.monotonic() + timeout) != b"keepgui-ready":
                raise Lost("the remote shell did not start")
        except Lost:
            self.close()
            raise

    def call(self, script: str, stdin: bytes, args: tuple[str, ...], timeout: float) -> tuple[int, bytes, bytes]:
        """Run one script; its exit status, output and error output. Raises :class:`Lost`."""
        if any("\n" in a for a in args):
            raise ValueError("an argument with a newline cannot be sent to the session")
        body = script.encode()
        head = f"{len(body)} {len(stdin)} {len(args)}\n".encode() + b"".join(a.encode() + b"\n" for a in args)
        deadline = time.monotonic() + timeout
        pipe = self._process.stdin
        if pipe is None:
            raise Lost("the session has no input")
        try:
            pipe.write(head + body)
            pipe.write(stdin)
            pipe.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise Lost(str(exc)) from None
        status, out_size, err_size = (int(x) for x in self._line(deadline).split())
        out = self._exactly(out_size, deadline)
        err = self._exactly(err_size, deadline)
        return status, out, err

    def _fill(self, deadline: float) -> None:
        stdout = self._process.stdout
        if stdout is None:
            raise Lost("the session has no output")
        ready, _w, _x = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise Lost("the machine did not answer in time")
        chunk = os.read(stdout.fileno(), 1 << 20)
        if not chunk:
            raise Lost("the connection ended")
        self._buffer += chunk

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self._buffer:
            self._fill(deadline)
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.strip()

    def _exactly(self, size: int, deadline: float) -> bytes:
        while len(self._buffer) < size:
            self._fill(deadline)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def alive(self) -> bool:
        """True while the remote loop runs."""
        return self._process.poll() is None

    def close(self) -> None:
        """End the loop (its input closed; killed when it does not end within 5 s)."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
