"""The real Claude Code CLI as a black box: install it into a cache, run it offline, capture its first request.

``python -m tests.backends.claude.claude_cli`` (what ``make claude-cli`` runs) installs
``@anthropic-ai/claude-code`` at the version keepgui was checked against
(:data:`keepgui.backends.claude.CHECKED_VERSION`) into ``build/claude-cli/`` with
npm. :func:`first_request` runs it in a folder with a private HOME, pointed at
a loopback HTTP server that records the first ``POST /v1/messages`` and
answers an error; the CLI is stopped as soon as that request arrived (always
within a timeout). Nothing reaches the network.

The CLI is only ever run and observed: keepgui never reads, searches or copies
its bundled code (proprietary licence).
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from keepgui.backends.claude import CHECKED_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CACHE = os.path.join(ROOT, "build", "claude-cli")
PACKAGE = "@anthropic-ai/claude-code"
BINARY = os.path.join(CACHE, "node_modules", ".bin", "claude")
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 60


class Unavailable(Exception):
    """The CLI cannot be installed or run here (no npm, no registry...): the reason, for a skip."""


def installed_version(binary: str | None = None) -> str | None:
    """``claude --version``'s version number (of the cached CLI by default), or None when it does not run."""
    binary = BINARY if binary is None else binary
    if not os.path.exists(binary):
        return None
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ.get("PATH", ""), "HOME": CACHE},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.strip() else None


def ensure_cli(version: str = CHECKED_VERSION) -> tuple[str, str, float]:
    """The CLI binary at ``version``, installing it into the cache when missing.

    Returns ``(binary, version, seconds spent installing)``; raises
    :class:`Unavailable` with the reason when npm or the registry is not there.
    """
    if installed_version() == version:
        return BINARY, version, 0.0
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed, so the real Claude Code CLI cannot be installed")
    os.makedirs(CACHE, exist_ok=True)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                CACHE,
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                f"{PACKAGE}@{version}",
            ],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise Unavailable(f"npm install {PACKAGE}@{version} took over {INSTALL_TIMEOUT} s") from None
    seconds = time.monotonic() - started
    got = installed_version()
    if done.returncode != 0 or got != version:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise Unavailable(f"npm install {PACKAGE}@{version} failed (registry unreachable?): {tail[0]}")
    return BINARY, version, seconds


@dataclass
class Captured:
    """The first request the CLI sent: its JSON body, and how long the run took."""

    body: dict
    seconds: float

    @property
    def first_text(self) -> str:
        """The first text block of the first user message (where the memory reminder is)."""
        for message in self.body.get("messages", []):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                for block in content:
                    if block.get("type") == "text":
                        return block["text"]
        raise AssertionError("the CLI's first request has no user text block")


def first_request(
    binary: str, cwd: str, home: str, env: dict[str, str] | None = None, timeout: float = RUN_TIMEOUT
) -> Captured:
    """Run ``claude -p hello`` in ``cwd`` with HOME ``home`` (plus ``env``) and return its first request."""
    bodies: list[bytes] = []
    arrived = threading.Event()

    class Recorder(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep the test output clean
            return

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path.startswith("/v1/messages"):
                bodies.append(body)
                arrived.set()
            answer = b'{"type":"error","error":{"type":"invalid_request_error","message":"keepgui test"}}'
            self.send_response(400)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    child_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "ANTHROPIC_API_KEY": "sk-keepgui-test",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        **(env or {}),
    }
    started = time.monotonic()
    proc = subprocess.Popen(
        [binary, "-p", "hello", "--max-turns", "1"],
        cwd=cwd,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = started + timeout
        while not arrived.wait(0.02):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
    finally:
        proc.kill()
        out, err = proc.communicate()
        server.shutdown()
        server.server_close()
    if not bodies:
        raise AssertionError(
            f"the CLI sent no request within {timeout} s (exit {proc.returncode}): {out[-300:]!r} {err[-600:]!r}"
        )
    return Captured(json.loads(bodies[0]), time.monotonic() - started)


if __name__ == "__main__":
    try:
        binary, version, seconds = ensure_cli()
    except Unavailable as exc:
        print(f"claude-cli: {exc}", file=sys.stderr)
        sys.exit(1)
    note = f"installed in {seconds:.1f} s" if seconds else "already installed"
    print(f"claude-cli: {binary} {version} ({note})")
