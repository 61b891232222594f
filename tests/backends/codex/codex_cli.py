"""The real OpenAI Codex CLI as a black box: install it into a cache, run it offline, capture its first request.

``python -m tests.backends.codex.codex_cli`` (what ``make codex-cli`` runs) installs
``@openai/codex`` at the version keepgui was checked against
(:data:`keepgui.backends.codex.CHECKED_VERSION`) into ``build/codex-cli/`` with npm
(the native binary comes in the platform package npm picks, about 400 MB).
:func:`first_request` runs ``codex exec`` in a session folder with a private
``HOME`` and ``CODEX_HOME``, its model provider pointed (by ``-c`` overrides, so the
home's own ``config.toml`` stays as the test wrote it) at a loopback HTTP server
that records every ``POST …/responses`` and answers each with a short
server-sent-event stream; the CLI is stopped as soon as the session's own first
request arrived (the memory consolidation sub-agent's requests, which carry
``x-openai-subagent`` or ``x-openai-memgen-request``, are told apart and ignored).
Nothing reaches the network: the server listens on 127.0.0.1 only.

The CLI is only ever run and observed.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from keepgui.backends.codex import CHECKED_VERSION, PACKAGE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CACHE = os.path.join(ROOT, "build", "codex-cli")
BINARY = os.path.join(CACHE, "node_modules", ".bin", "codex")
INSTALL_TIMEOUT = 900
RUN_TIMEOUT = 60
MEMORY_START = "## Memory"
MEMORY_END = "========= MEMORY_SUMMARY ENDS ========="
AGENTS_START = "# AGENTS.md instructions"


class Unavailable(Exception):
    """The CLI cannot be installed or run here (no npm, no registry...): the reason, for a skip."""


def installed_version(binary: str | None = None) -> str | None:
    """``codex --version``'s version number (of the cached CLI by default), or None when it does not run."""
    binary = BINARY if binary is None else binary
    if not os.path.exists(binary):
        return None
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ.get("PATH", ""), "HOME": CACHE, "CODEX_HOME": CACHE},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def ensure_cli(version: str = CHECKED_VERSION) -> tuple[str, str, float]:
    """The CLI binary at ``version``, installing it into the cache when missing.

    Returns ``(binary, version, seconds spent installing)``; raises
    :class:`Unavailable` with the reason when npm or the registry is not there.
    """
    if installed_version() == version:
        return BINARY, version, 0.0
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed, so the real Codex CLI cannot be installed")
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


def _texts(message: dict) -> list[str]:
    return [part.get("text", "") for part in message.get("content", []) if part.get("type") == "input_text"]


@dataclass
class Captured:
    """The session's first request: its JSON body, the CLI's stderr, and how long the run took."""

    body: dict
    stderr: str
    seconds: float
    requests: int = 1
    headers: dict[str, str] = field(default_factory=dict)

    def parts(self, role: str) -> list[str]:
        """The text parts of every ``input`` message of ``role``, in order."""
        out: list[str] = []
        for item in self.body.get("input", []):
            if item.get("type", "message") == "message" and item.get("role") == role:
                out.extend(_texts(item))
        return out

    @property
    def memory_parts(self) -> list[str]:
        """The developer parts that carry the memory block: the one that begins ``## Memory`` and those
        after it up to the one that completes the ``MEMORY_SUMMARY ENDS`` line ([] when none)."""
        parts = self.parts("developer")
        start = next((i for i, p in enumerate(parts) if p.startswith(MEMORY_START)), None)
        if start is None:
            return []
        taken: list[str] = []
        for part in parts[start:]:
            taken.append(part)
            if MEMORY_END + "\n" in "".join(taken):
                break
        return taken

    @property
    def memory(self) -> str | None:
        """The memory block as the model receives it (its parts joined), or None."""
        parts = self.memory_parts
        return "".join(parts) if parts else None

    @property
    def agents_md(self) -> str | None:
        """The user part that begins ``# AGENTS.md instructions``, or None."""
        return next((p for p in self.parts("user") if p.startswith(AGENTS_START)), None)


def _sse(events: list[dict]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _answer(number: int) -> bytes:
    rid = f"resp_keepgui_{number}"
    return _sse(
        [
            {"type": "response.created", "response": {"id": rid}},
            {
                "type": "response.output_item.done",
                "item": {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{number}",
                    "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                },
            },
            {
                "type": "response.completed",
                "response": {
                    "id": rid,
                    "usage": {
                        "input_tokens": 1,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 1,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 2,
                    },
                },
            },
        ]
    )


def _provider_overrides(port: int) -> list[str]:
    url = f"http://127.0.0.1:{port}/v1"
    table = f'{{name="capture", base_url="{url}", wire_api="responses", env_key="CAPTURE_API_KEY"}}'
    return [
        "-c",
        'model="gpt-5.2-codex"',
        "-c",
        'model_provider="capture"',
        "-c",
        f"model_providers.capture={table}",
        "-c",
        'approval_policy="never"',
        "-c",
        'sandbox_mode="read-only"',
    ]


def first_request(
    binary: str,
    cwd: str,
    home: str,
    codex_home: str | None = None,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> Captured:
    """Run ``codex exec`` in ``cwd`` with HOME ``home`` (and CODEX_HOME ``codex_home`` when given) and
    return the session's own first request; ``args`` are more options before the prompt (``-c k=v``)."""
    own: list[tuple[dict, dict[str, str]]] = []
    count = [0]
    arrived = threading.Event()

    class Recorder(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep the test output clean
            return

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            count[0] += 1
            sub = "x-openai-subagent" in headers or headers.get("x-openai-memgen-request") == "true"
            if self.path.endswith("/responses") and not sub:
                try:
                    own.append((json.loads(body), headers))
                except ValueError:  # a compressed body: keep what was sent, the test will say so
                    own.append(({"undecodable": headers.get("content-encoding", "")}, headers))
                arrived.set()
            answer = _answer(count[0])
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    child_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "CAPTURE_API_KEY": "keepgui-test",
        "NO_COLOR": "1",
        **({"CODEX_HOME": codex_home} if codex_home is not None else {}),
        **(env or {}),
    }
    command = [
        binary,
        "exec",
        "--skip-git-repo-check",
        *_provider_overrides(server.server_address[1]),
        *(args or []),
        "say hi",
    ]
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = started + timeout
        while not arrived.wait(0.02):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        server.shutdown()
        server.server_close()
    stderr = err.decode("utf-8", "replace")
    if not own:
        raise AssertionError(
            f"the CLI sent no request of its own within {timeout} s (exit {proc.returncode}): "
            f"{out[-300:]!r} {stderr[-900:]!r}"
        )
    body, headers = own[0]
    return Captured(body, stderr, time.monotonic() - started, count[0], headers)


if __name__ == "__main__":
    try:
        binary, version, seconds = ensure_cli()
    except Unavailable as exc:
        print(f"codex-cli: {exc}", file=sys.stderr)
        sys.exit(1)
    note = f"installed in {seconds:.1f} s" if seconds else "already installed"
    print(f"codex-cli: {binary} {version} ({note})")
