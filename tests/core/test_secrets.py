"""The secrets scan's detector, findings, allowlist, cache and purge (keepgui.core.secrets)."""

from __future__ import annotations

import base64
import os
import random
import time

from keepgui.core.history import History
from keepgui.core.secrets.detect import Detector, mask
from keepgui.core.secrets.purge import plan_purge
from keepgui.core.secrets.scan import Finding
from tests.secrets_corpus import lookalikes, planted, report


def test_every_planted_secret_is_found_and_no_lookalike():
    got = report()
    assert got["missed"] == [], got
    assert got["false_positives"] == [], got
    assert got["found"] == got["planted"] == 24


def test_a_secret_is_found_whole_with_its_type():
    d = Detector()
    kinds = {}
    for name, secret, line in planted():
        at = line.find(secret)
        [hit] = [h for h in d.scan(line) if h.start <= at < h.end]
        assert (hit.start, hit.end) == (at, at + len(secret)), name
        kinds[name] = hit.kind
    assert kinds["github"] == "GitHub Token"  # the library reports only `ghp`: the whole token is kept
    assert kinds["gitlab"] == "GitLab Token"
    assert kinds["anthropic"] == "Anthropic API Key"
    assert kinds["openrouter"] == "OpenRouter API Key"
    assert kinds["jwt"] == "JSON Web Token"  # the signature included


def test_the_gates_lose_nothing_the_library_finds():
    """The gates (what a line must hold for a plugin to run) against every plugin on every line."""
    rng = random.Random(7)
    lines = [line for _n, _s, line in planted()] + [line for _n, line in lookalikes()]
    lines += ["".join(rng.choice("ab01=:/ _-\"'xoxAKCsk") for _ in range(80)) for _ in range(300)]
    text = "\n".join(lines)
    gated, ungated = Detector(), Detector()
    ungated.gated = False
    assert gated.scan(text) == ungated.scan(text)
    assert len(gated.scan(text)) >= 24


def test_the_masked_form_and_every_repr_leave_the_secret_out():
    for _name, secret, _line in planted():
        shown = mask(secret)
        assert secret not in shown and len(shown) < len(secret) + 12
        f = Finding("id", "t", "/s", "k", "b", "/p", 1, "key", "", 0, len(secret), shown, secret=secret)
        assert secret not in repr(f) and secret not in str(f.to_obj()) and secret not in f.where


def test_a_50_mb_line_and_binary_garbage_without_a_hang():
    d = Detector()
    rng = random.Random(3)
    secret = planted()[0][1]
    line = base64.b64encode(rng.randbytes(30 * 1024 * 1024)).decode()[: 50 * 1024 * 1024 - 100]
    line = line[: 25 * 1024 * 1024] + f" {secret} " + line[25 * 1024 * 1024 :]
    start = time.monotonic()
    hits = d.scan(line)
    assert time.monotonic() - start < 30
    assert [line[h.start : h.end] for h in hits] == [secret]
    garbage = rng.randbytes(5 * 1024 * 1024).decode("latin-1")
    start = time.monotonic()
    d.scan(garbage)
    d.scan(rng.randbytes(1024 * 1024).decode("utf-8", "replace"))
    assert time.monotonic() - start < 30


def test_no_pattern_backtracks_on_a_long_run():
    d = Detector()
    for prefix in ("sk-", "sk-ant-api03-", "sk-proj-", "hf_", "AKC", "password: ", "eyJ", "xoxb-1-"):
        text = prefix + "a" * 2_000_000
        start = time.monotonic()
        d.scan(text)
        assert time.monotonic() - start < 10, prefix


def test_purge_rewrites_the_history_and_keeps_every_version_readable(tmp_path):
    secret = planted()[2][1]
    data = tmp_path / "data"
    cache = tmp_path / "cache"
    history = History(data / "history")
    memory = tmp_path / "keep.md"
    v1 = history.record(memory, b"- a plain fact\n")
    v2 = history.record(memory, f"- a plain fact\n- token {secret}\n".encode())
    history.log_removed(
        path=str(memory),
        workspace=str(tmp_path),
        text=f"token {secret}",
        raw="",
        line=2,
        number=2,
        before=None,
        after=None,
    )
    (cache / "x").mkdir(parents=True)
    (cache / "x" / "replayed.bin").write_bytes(b"...." + secret.encode())
    plan = plan_purge([secret], str(data), str(cache))
    assert len(plan.blobs) == 1 and plan.caches and "cannot be undone" in plan.describe()
    plan.apply()
    for folder in (data, cache):
        for root, _dirs, files in os.walk(folder):
            for name in files:
                with open(os.path.join(root, name), "rb") as fh:
                    assert secret.encode() not in fh.read(), name
    versions = history.versions(memory)
    assert [v.seq for v in versions] == [0, 1]
    assert history.read(versions[0]) == b"- a plain fact\n" and versions[0].sha256 == v1.sha256
    assert history.read(versions[1]) == b"- a plain fact\n- token [REDACTED]\n" != v2.sha256
    assert not os.path.exists(os.path.join(history.root, "blobs", v2.sha256[:2], v2.sha256))
    assert plan_purge([secret], str(data), str(cache)).describe().startswith("keepgui's history, journals")
