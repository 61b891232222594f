"""A corpus for the secrets scan: real-format secrets (made with the right shapes and checksums,
never real ones) and realistic look-alikes (hashes, UUIDs, base64 data), as memory lines.

:func:`planted` and :func:`lookalikes` are deterministic (a seeded generator): every run plants
the same strings, so the recall and false positives the closing note gives are reproducible with
``python -m tests.secrets_corpus``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import string
import uuid

B62 = string.ascii_letters + string.digits
B64URL = B62 + "-_"
HEX = "0123456789abcdef"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b62(n: int, width: int) -> str:
    out = ""
    digits = string.digits + string.ascii_uppercase + string.ascii_lowercase
    while n:
        n, r = divmod(n, 62)
        out = digits[r] + out
    return out.rjust(width, "0")


def github_token(rng: random.Random, prefix: str = "ghp") -> str:
    """A classic GitHub token: 30 random base62 characters and their CRC32 in 6 base62 digits."""
    body = _pick(rng, B62, 30)
    return f"{prefix}_{body}{_b62(binascii.crc32(body.encode()), 6)}"


def jwt(rng: random.Random) -> str:
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()

    payload = {"sub": str(rng.randrange(10**9)), "name": "Ann Example", "iat": 1_750_000_000 + rng.randrange(10**6)}
    signature = base64.urlsafe_b64encode(rng.randbytes(32)).rstrip(b"=").decode()
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.{signature}"


def planted(seed: int = 30) -> list[tuple[str, str, str]]:
    """``(name, secret, memory line)``: each secret as an agent would have written it down."""
    rng = random.Random(seed)
    aws_id = "AKIA" + _pick(rng, string.ascii_uppercase + "234567", 16)
    aws_secret = _pick(rng, B62 + "+/", 40)
    azure = base64.b64encode(rng.randbytes(64)).decode()
    return [
        ("aws-access-key", aws_id, f"The deploy user's AWS access key id is {aws_id} (us-east-1)."),
        ("aws-secret", aws_secret, f"aws_secret_access_key = {aws_secret}"),
        ("github", (t := github_token(rng)), f"Use the GitHub token {t} for the release workflow."),
        ("gitlab", (t := "glpat-" + _pick(rng, B62, 20)), f"GitLab CI token: {t}"),
        (
            "slack",
            (t := f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-{_pick(rng, B62, 24)}"),
            f"Slack bot token for #alerts is {t}",
        ),
        ("stripe", (t := "sk_live_" + _pick(rng, B62, 24)), f"Stripe live secret key {t} — rotate monthly."),
        ("twilio", (t := "SK" + _pick(rng, HEX, 32)), f"Twilio API key SID {t}"),
        (
            "sendgrid",
            (t := f"SG.{_pick(rng, B64URL, 22)}.{_pick(rng, B64URL, 43)}"),
            f"SendGrid key for the newsletter: {t}",
        ),
        ("jwt", (t := jwt(rng)), f"Session cookie while debugging: {t}"),
        ("private-key", "BEGIN RSA PRIVATE KEY", "-----BEGIN RSA PRIVATE KEY----- is the start of the deploy key"),
        ("pypi", (t := "pypi-AgEIcHlwaS5vcmc" + _pick(rng, B64URL, 80)), f"PyPI upload token {t}"),
        (
            "telegram",
            (t := f"{rng.randrange(10**8, 10**9)}:AA{_pick(rng, B64URL, 33)}"),
            f"Telegram bot token: {t}",
        ),
        ("azure", f"AccountKey={azure}", f"DefaultEndpointsProtocol=https;AccountName=ann;AccountKey={azure}"),
        (
            "basic-auth",
            (t := _pick(rng, B62, 14)),
            f"The staging database is postgres://admin:{t}@db.staging.example.com:5432/app",
        ),
        ("password", (t := _pick(rng, B62, 10) + "!" + _pick(rng, B62, 4)), f"wifi password: {t}"),
        (
            "password-in-prose",
            (t := _pick(rng, B62, 12) + "-" + _pick(rng, string.digits, 3)),
            f"db_password = {t}, rotate it before the audit",
        ),
        (
            "openai-project",
            (t := f"sk-proj-{_pick(rng, B64URL, 58)}T3BlbkFJ{_pick(rng, B64URL, 58)}"),
            f"OPENAI_API_KEY={t}",
        ),
        (
            "openai-legacy",
            (t := f"sk-{_pick(rng, B62, 20)}T3BlbkFJ{_pick(rng, B62, 20)}"),
            f"Old OpenAI key (still works): {t}",
        ),
        ("anthropic", (t := f"sk-ant-api03-{_pick(rng, B64URL, 93)}AA"), f"Anthropic key for evals: {t}"),
        ("google", (t := "AIza" + _pick(rng, B64URL, 35)), f"Gemini API key {t} (free tier)"),
        ("groq", (t := "gsk_" + _pick(rng, B62, 52)), f"Groq key: {t}"),
        ("huggingface", (t := "hf_" + _pick(rng, string.ascii_letters, 34)), f"HF token {t} for gated models"),
        ("openrouter", (t := "sk-or-v1-" + _pick(rng, HEX, 64)), f"OpenRouter key {t}"),
        ("xai", (t := "xai-" + _pick(rng, B62, 80)), f"xAI Grok key {t}"),
    ]


def secret_named(name: str) -> tuple[str, str]:
    """``(secret, memory line)`` of one planted secret by its name."""
    return next((secret, line) for n, secret, line in planted() if n == name)


def lookalikes(seed: int = 30) -> list[tuple[str, str]]:
    """``(name, memory line)``: strings that look like secrets and are not."""
    rng = random.Random(seed + 1)
    sha1 = hashlib.sha1(rng.randbytes(20), usedforsecurity=False).hexdigest()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(180)).decode()
    words = base64.b64encode(b"the quick brown fox jumps over the lazy dog").decode()
    return [
        ("git-sha", f"Fixed in commit {sha1}; see the changelog."),
        ("short-sha", f"Reverted {sha1[:7]} and {sha1[7:19]} after the outage."),
        ("uuid", f"The workspace id is {uuid.UUID(bytes=rng.randbytes(16), version=4)}."),
        ("uuid-upper", f"Tenant {str(uuid.UUID(bytes=rng.randbytes(16), version=4)).upper()} is the default."),
        ("sha256", f"Release tarball sha256 {hashlib.sha256(rng.randbytes(8)).hexdigest()}"),
        ("md5", f"md5 of the fixture: {hashlib.md5(rng.randbytes(8), usedforsecurity=False).hexdigest()}"),
        ("docker-digest", f"Pin the image to python@sha256:{hashlib.sha256(rng.randbytes(9)).hexdigest()}"),
        ("data-uri", f"The logo is data:image/png;base64,{png}"),
        ("base64-words", f"The fixture's body is {words}"),
        ("path", "The venv lives at /home/ann/.local/share/virtualenvs/keepgui-Xa3b9QzT/lib/python3.11"),
        ("url", "Docs: https://docs.example.com/api/v2/reference/authentication#tokens"),
        ("version", "Pinned PySide6 6.7.2, numpy 1.26.4 and msgspec 0.18.6 in the lock file."),
        ("colour", "Accent colours: #1f6feb, #d29922 and #8250df."),
        ("sklearn", "Uses sk-learn style pipelines (scikit-learn) for the classifier."),
        ("password-prose", "The password is in 1Password under 'staging db'."),
        ("api-key-prose", "Never paste the api key into chat; read it from $OPENAI_API_KEY instead."),
        ("template", "password: ${DB_PASSWORD}"),
        ("password-where", "password: stored in the team vault, ask Ana"),
        ("timestamp", "Last deploy 2025-06-15T15:06:40Z from build 20250615150640."),
        ("ip", "The runner is at 10.0.3.17 behind the VPN."),
        ("camel", "Prefers ReactQueryDevtoolsPanelWrapperComponent names spelled out."),
        ("tracking", "Parcel tracking 1Z999AA10123456784 arrives Friday."),
        ("hex-colour-run", "The palette string is 0a0b0c0d0e0f10111213."),
    ]


def report(seed: int = 30) -> dict[str, object]:
    """Recall over :func:`planted` and false positives over :func:`lookalikes`, with the misses."""
    from keepgui.core.secrets.detect import Detector

    d = Detector()
    missed = []
    for name, secret, line in planted(seed):
        at = line.find(secret)
        hits = d.scan(line)
        if not any(h.start <= at and at + len(secret) <= h.end for h in hits):
            missed.append(name)
    false = [name for name, line in lookalikes(seed) if d.scan(line)]
    n, m = len(planted(seed)), len(lookalikes(seed))
    return {
        "planted": n,
        "found": n - len(missed),
        "missed": missed,
        "lookalikes": m,
        "false_positives": false,
    }


if __name__ == "__main__":
    print(json.dumps(report(), indent=1))
