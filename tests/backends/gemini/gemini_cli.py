"""The real Gemini CLI as an oracle: install it into a cache, run it offline, capture what it sends.

``python -m tests.backends.gemini.gemini_cli`` (what ``make gemini-cli`` runs) installs
``@google/gemini-cli`` at the version keepgui was checked against
(:data:`keepgui.backends.gemini.CHECKED_VERSION`) into ``build/gemini-cli/`` with npm (its
optional native install scripts are skipped: a headless run does not need them).
:func:`run` starts it headless (``gemini -p``) in a launch folder with a private home, pointed
at a loopback HTTP server (``127.0.0.1``, port 0) that records every request and answers the
main turn with one short reply and the routing model with a JSON verdict, as spec §12
describes. Nothing reaches the network; the CLI is never run against a real home.
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

from keepgui.backends.gemini import CHECKED_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CACHE = os.path.join(ROOT, "build", "gemini-cli")
PACKAGE = "@google/gemini-cli"
BINARY = os.path.join(CACHE, "node_modules", ".bin", "gemini")
PACKAGE_JSON = os.path.join(CACHE, "node_modules", "@google", "gemini-cli", "package.json")
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 90

SETTINGS: dict[str, object] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "context": {},
}
"""The user settings of a test home (current key names, so Gemini does not rewrite the file)."""


class Unavailable(Exception):
    """The CLI cannot be installed or run here (no npm, no registry...): the reason, for a skip."""


def installed_version() -> str | None:
    """The version of the cached CLI, read from its package.json (running it would write a home)."""
    try:
        with open(PACKAGE_JSON, encoding="utf-8") as f:
            version = json.load(f).get("version")
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) and os.path.exists(BINARY) else None


def ensure_cli(version: str = CHECKED_VERSION) -> tuple[str, str, float]:
    """The CLI binary at ``version``, installing it into the cache when missing.

    Returns ``(binary, version, seconds spent installing)``; raises :class:`Unavailable` with the
    reason when npm or the registry is not there.
    """
    if installed_version() == version:
        return BINARY, version, 0.0
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed, so the real Gemini CLI cannot be installed")
    os.makedirs(CACHE, exist_ok=True)
    manifest = os.path.join(CACHE, "package.json")
    if not os.path.exists(manifest):
        # without a package.json of its own npm may walk up and install into an enclosing project
        with open(manifest, "w", encoding="utf-8") as f:
            f.write('{"name": "keepgui-gemini-cli-cache", "private": true}\n')
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
                "--ignore-scripts",
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


def make_home(home: str, context: dict[str, object] | None = None, gemini_dir: str | None = None) -> str:
    """Write a test home's ``.gemini/settings.json`` (``context``: the ``context.*`` keys under test);
    returns the Gemini dir."""
    gd = gemini_dir or os.path.join(home, ".gemini")
    os.makedirs(gd, exist_ok=True)
    settings = dict(SETTINGS)
    settings["context"] = dict(context or {})
    with open(os.path.join(gd, "settings.json"), "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2)
    return gd


@dataclass
class Run:
    """What one run sent: every POST ``(path, body)``, its exit status, output and time."""

    requests: list[tuple[str, dict]] = field(default_factory=list)
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def main(self) -> dict:
        """The first main-turn request (``:streamGenerateContent``)."""
        for path, body in self.requests:
            if ":streamGenerateContent" in path:
                return body
        raise AssertionError(
            f"the CLI sent no main-turn request (exit {self.returncode}): {self.stdout[-300:]!r} {self.stderr[-800:]!r}"
        )

    @property
    def system_text(self) -> str:
        """The system instruction's text."""
        return str(self.main["systemInstruction"]["parts"][0]["text"])

    @property
    def session_text(self) -> str:
        """The first user turn's first part (the ``<session_context>`` text)."""
        return str(self.main["contents"][0]["parts"][0]["text"])

    @property
    def system_context(self) -> str | None:
        """From the first ``<loaded_context>`` to the last ``</loaded_context>`` of the system instruction."""
        return element(self.system_text)

    @property
    def session_context(self) -> str | None:
        """From the first ``<loaded_context>`` to the last ``</loaded_context>`` of the session text."""
        return element(self.session_text)


def element(text: str) -> str | None:
    """The ``<loaded_context>`` element of ``text`` (None when there is none)."""
    start = text.find("<loaded_context>")
    end = text.rfind("</loaded_context>")
    if start < 0 or end < 0:
        return None
    return text[start : end + len("</loaded_context>")]


def _server(requests: list[tuple[str, dict]]) -> http.server.ThreadingHTTPServer:
    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # keep the test output clean
            return

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(404, "application/json", b"{}")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"raw": raw.decode("utf-8", "replace")}
            requests.append((self.path, body))
            usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
            if ":streamGenerateContent" in self.path:
                event = {
                    "candidates": [
                        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}
                    ],
                    "usageMetadata": usage,
                }
                self._send(200, "text/event-stream", b"data: " + json.dumps(event).encode() + b"\n\n")
                return
            config = body.get("generationConfig", {}) if isinstance(body, dict) else {}
            wants_json = config.get("responseMimeType") == "application/json"
            text = json.dumps({"complexity_reasoning": "a greeting", "complexity_score": 1}) if wants_json else "ok"
            answer = {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": usage,
            }
            self._send(200, "application/json", json.dumps(answer).encode())

    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)


def run(
    cwd: str,
    home: str,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    timeout: float = RUN_TIMEOUT,
    binary: str = BINARY,
) -> Run:
    """Run ``gemini -p "say hi"`` in ``cwd`` with HOME ``home`` (plus ``env``), trusted; every request."""
    result = Run()
    server = _server(result.requests)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    child_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "GEMINI_API_KEY": "keepgui-test-key",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_COLOR": "1",
        "TERM": "dumb",
        **(env or {}),
    }
    started = time.monotonic()
    proc = subprocess.Popen(
        [binary, *args, "-p", "say hi"],
        cwd=cwd,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the CLI relaunches itself: a timeout ends the whole group
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    finally:
        server.shutdown()
        server.server_close()
    result.returncode = proc.returncode
    result.stdout = out.decode("utf-8", "replace")
    result.stderr = err.decode("utf-8", "replace")
    result.seconds = time.monotonic() - started
    return result


if __name__ == "__main__":
    try:
        binary, version, seconds = ensure_cli()
    except Unavailable as exc:
        print(f"gemini-cli: {exc}", file=sys.stderr)
        sys.exit(1)
    note = f"installed in {seconds:.1f} s" if seconds else "already installed"
    print(f"gemini-cli: {binary} {version} ({note})")


INBOX_SCRIPT = r"""
import { readFileSync } from "node:fs";
const [bundle, casesFile] = process.argv.slice(2);
const m = await import(bundle);
const cases = JSON.parse(readFileSync(casesFile, "utf-8"));
const out = [];
for (const c of cases) {
  process.env.GEMINI_CLI_HOME = c.home;
  const config = { storage: { getProjectMemoryTempDir: () => c.pm, getProjectSkillsDir: () => c.pm + "/.no-skills" } };
  const listed = await m.listInboxMemoryPatches(config);
  const result = { listed: listed.map(g => ({ kind: g.kind, targets: g.entries.map(e => e.targetPath) })), applied: [] };
  for (const g of listed) result.applied.push(await m.applyInboxMemoryPatch(config, g.kind, g.kind));
  out.push(result);
}
console.log(JSON.stringify(out));
process.exit(0);
"""
"""Gemini's own inbox functions (exported by its core bundle), run on prepared memory folders: for each
case, what ``/memory inbox`` lists, then every kind applied as the inbox's "apply all" applies it."""


def core_bundle() -> str:
    """The bundle module of the installed CLI that exports Gemini's core functions (the inbox's among them)."""
    folder = os.path.join(CACHE, "node_modules", "@google", "gemini-cli", "bundle")
    for name in sorted(os.listdir(folder)):
        if name.startswith("chunk-") and name.endswith(".js"):
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(path) - 400_000))
                tail = fh.read()
            exports = tail[tail.rfind(b"export {") :] if b"export {" in tail else b""
            if b"applyInboxMemoryPatch" in exports and b"listInboxMemoryPatches" in exports:
                return path
    raise Unavailable("no bundle of the installed Gemini CLI exports its inbox functions")


def inbox_oracle(cases: list[dict[str, str]], workdir: str, timeout: float = 120) -> list[dict]:
    """Run Gemini's inbox on ``cases`` (``{"home", "pm"}`` each) in one Node process; its results in order."""
    node = shutil.which("node")
    if node is None:
        raise Unavailable("node is not installed")
    script = os.path.join(workdir, "inbox-oracle.mjs")
    data = os.path.join(workdir, "inbox-cases.json")
    with open(script, "w", encoding="utf-8") as fh:
        fh.write(INBOX_SCRIPT)
    with open(data, "w", encoding="utf-8") as fh:
        json.dump(cases, fh)
    done = subprocess.run(
        [node, script, core_bundle(), data],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": os.environ.get("PATH", ""), "HOME": workdir, "NO_COLOR": "1"},
    )
    if done.returncode != 0:
        raise AssertionError(f"the inbox oracle failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
