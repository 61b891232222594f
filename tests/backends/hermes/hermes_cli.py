"""The real Hermes Agent as a black box: install it into build/, run it offline, capture its prompt.

``python -m tests.backends.hermes.hermes_cli`` (what ``make hermes-agent`` runs) installs
``hermes-agent`` at the version keepgui was checked against
(:data:`keepgui.backends.hermes.CHECKED_VERSION`) into its own venv, ``build/hermes-venv/``
(it pins exact versions of its dependencies, so it never shares keepgui's venv).

:func:`run_session` runs ``hermes -z MESSAGE`` in a project folder with a private HOME whose
``config.yaml`` points the model at a loopback HTTP server (:class:`FakeModel`) that records
every chat request and answers with text, or with a call of Hermes's ``memory`` tool when the
test scripted one for that message. Nothing reaches the network: the server binds 127.0.0.1 and
the config turns off Hermes's download of its command scanner.

:func:`call_store` runs a few lines of Python inside Hermes's venv against its own memory store
(``tools.memory_tool.load_on_disk_store``), the code path ``/memory approve`` takes.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keepgui.backends.hermes import CHECKED_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV = os.path.join(ROOT, "build", "hermes-venv")
BINARY = os.path.join(VENV, "bin", "hermes")
PYTHON = os.path.join(VENV, "bin", "python")
PACKAGE = "hermes-agent"
INSTALL_TIMEOUT = 1200
RUN_TIMEOUT = 120
MODEL = "fake-model"


class Unavailable(Exception):
    """Hermes cannot be installed or run here (no registry, no Python 3.11+...): the reason, for a skip."""


def installed_version() -> str | None:
    """The ``hermes-agent`` version in build/hermes-venv, or None when it is not installed there."""
    if not os.path.exists(PYTHON):
        return None
    try:
        done = subprocess.run(
            [PYTHON, "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def ensure_hermes(version: str = CHECKED_VERSION) -> tuple[str, float]:
    """Hermes's binary at ``version``, installing it into build/hermes-venv when missing:
    ``(version, seconds the install took)`` (0 when it was there). Raises Unavailable."""
    found = installed_version()
    if found == version and os.path.exists(BINARY):
        return found, 0.0
    start = time.monotonic()
    try:
        if not os.path.exists(PYTHON):
            subprocess.run([sys.executable, "-m", "venv", VENV], check=True, capture_output=True, timeout=300)
        done = subprocess.run(
            [PYTHON, "-m", "pip", "install", "--quiet", f"{PACKAGE}=={version}"],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise Unavailable(f"cannot install {PACKAGE}=={version} into {VENV}: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"pip could not install {PACKAGE}=={version}: {' / '.join(tail)}")
    found = installed_version()
    if found != version:
        raise Unavailable(f"{VENV} has {PACKAGE} {found}, not {version}")
    return found, time.monotonic() - start


# ---------------------------------------------------------------------- the fake model server


@dataclass
class FakeModel:
    """A loopback OpenAI-style chat server: records request bodies, answers text or scripted tool calls.

    ``tool_calls`` maps a user message to the arguments of one ``memory`` tool call the server makes
    when that message is the last user message (then a text reply once the tool result follows).
    """

    tool_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep the test output clean
                return

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                entry = {"id": MODEL, "object": "model", "context_length": 128000, "owned_by": "local"}
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, json.dumps({"object": "list", "data": [entry]}).encode())
                elif self.path.rstrip("/").endswith(f"/v1/models/{MODEL}"):
                    self._send(200, json.dumps(entry).encode())
                else:
                    self._send(404, b'{"error": "not found"}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": "not found"}')
                    return
                body = json.loads(raw)
                model.requests.append(body)
                self._answer(body)

            def _answer(self, body: dict[str, Any]) -> None:
                messages = body.get("messages") or []
                last = messages[-1] if messages else {}
                users = [m for m in messages if m.get("role") == "user"]
                said = users[-1].get("content") if users else ""
                said = said if isinstance(said, str) else json.dumps(said)
                call = model.tool_calls.get(said) if last.get("role") == "user" else None
                if body.get("stream"):
                    self._stream(call)
                else:
                    self._whole(call)

            def _whole(self, call: dict[str, Any] | None) -> None:
                message: dict[str, Any] = {"role": "assistant", "content": "ok"}
                reason = "stop"
                if call is not None:
                    message = {"role": "assistant", "content": None, "tool_calls": [_tool_call(call)]}
                    reason = "tool_calls"
                answer = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": MODEL,
                    "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                }
                self._send(200, json.dumps(answer).encode())

            def _stream(self, call: dict[str, Any] | None) -> None:
                base = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": MODEL,
                }
                if call is None:
                    deltas = [({"role": "assistant", "content": "ok"}, None), ({}, "stop")]
                else:
                    whole = _tool_call(call)
                    first = {"index": 0, **whole}
                    deltas = [({"role": "assistant", "content": None, "tool_calls": [first]}, None), ({}, "tool_calls")]
                chunks = [
                    json.dumps({**base, "choices": [{"index": 0, "delta": d, "finish_reason": r}]}) for d, r in deltas
                ]
                usage = {
                    **base,
                    "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                }
                chunks.append(json.dumps(usage))
                data = "".join(f"data: {c}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self._send(200, data.encode(), "text/event-stream")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL Hermes's config names."""
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()

    def system_prompt(self, user_message: str = "hello") -> str:
        """The system message of the first chat request whose last message is ``user_message``."""
        for body in self.requests:
            messages = body.get("messages") or []
            if messages and messages[-1].get("content") == user_message and messages[0].get("role") == "system":
                return str(messages[0]["content"])
        raise AssertionError(f"no chat request ended with the user message {user_message!r}")


def _tool_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": "memory", "arguments": json.dumps(arguments)},
    }


# ---------------------------------------------------------------------- a home and a run


def config_yaml(base_url: str, extra: str = "") -> str:
    """A config.yaml that points the model at ``base_url`` and keeps Hermes off the network."""
    return (
        "model:\n"
        "  provider: custom\n"
        f"  base_url: {base_url}\n"
        f"  default: {MODEL}\n"
        "  api_key: sk-fake-local\n"
        "security:\n"
        "  tirith_enabled: false\n" + extra
    )


def run_session(
    project: str,
    home: str,
    message: str = "hello",
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``hermes -z MESSAGE`` started in ``project`` with ``HOME=home`` (plus ``environ``); raises
    AssertionError with its output when it fails."""
    env = {"PATH": os.path.dirname(BINARY) + os.pathsep + os.environ.get("PATH", ""), "HOME": home, "LANG": "C.UTF-8"}
    env.update(environ or {})
    done = subprocess.run(
        [BINARY, "-z", message], cwd=project, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"hermes -z failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done


def call_store(hermes_home: str, code: str, home: str | None = None) -> Any:
    """Run ``code`` in Hermes's venv with ``store = load_on_disk_store()`` bound and ``HERMES_HOME``
    set; the value of its last assignment to ``result`` comes back (JSON)."""
    script = (
        "import json\n"
        "from tools.memory_tool import load_on_disk_store\n"
        "store = load_on_disk_store()\n"
        "result = None\n" + code + "\nprint('\\n@@RESULT@@' + json.dumps(result, ensure_ascii=False))\n"
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home or os.path.dirname(hermes_home),
        "HERMES_HOME": hermes_home,
        "LANG": "C.UTF-8",
    }
    done = subprocess.run([PYTHON, "-c", script], env=env, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or "@@RESULT@@" not in done.stdout:
        raise AssertionError(f"Hermes's store failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.rsplit("@@RESULT@@", 1)[1])


_BATCH = r"""
import json, os, sys
from tools.memory_tool import MemoryStore
from tools.threat_patterns import scan_for_threats
jobs = json.loads(sys.stdin.read())
out = []
for job in jobs:
    if job["kind"] == "scan":
        out.append(scan_for_threats(job["text"], scope="strict"))
        continue
    os.environ["HERMES_HOME"] = job["home"]
    store = MemoryStore(memory_char_limit=job["limits"][0], user_char_limit=job["limits"][1])
    try:
        store.load_from_disk()
        blocks = [store.format_for_system_prompt(t) for t in ("memory", "user")]
        out.append({"blocks": blocks, "entries": [store.memory_entries, store.user_entries], "error": None})
    except Exception as exc:
        out.append({"blocks": [None, None], "entries": [[], []], "error": type(exc).__name__})
sys.stdout.write("@@RESULT@@" + json.dumps(out, ensure_ascii=False))
"""


def batch(jobs: list[dict[str, Any]]) -> list[Any]:
    """Run Hermes's own store and scanner over many jobs in one process: ``{"kind": "store", "home": H,
    "limits": [m, u]}`` gives the two frozen prompt blocks and the entries Hermes loads from ``H``;
    ``{"kind": "scan", "text": T}`` the scanner's findings for ``T``."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.path.join(ROOT, "build"), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [PYTHON, "-c", _BATCH],
        input=json.dumps(jobs),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or "@@RESULT@@" not in done.stdout:
        raise AssertionError(f"Hermes's store failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return list(json.loads(done.stdout.rsplit("@@RESULT@@", 1)[1]))


def main() -> int:
    """Install the checked version into build/hermes-venv (``make hermes-agent``)."""
    try:
        version, seconds = ensure_hermes()
    except Unavailable as exc:
        print(f"hermes-agent unavailable: {exc}", file=sys.stderr)
        return 1
    print(f"hermes-agent {version} in {VENV}" + (f" (installed in {seconds:.0f} s)" if seconds else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
