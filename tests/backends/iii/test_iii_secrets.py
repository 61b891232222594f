"""A secret redacted from an iii bank leaves no line of the log holding it: the earlier revisions'
lines are rewritten too (every other byte kept), refused when the worker appended since; undone
exactly."""

from __future__ import annotations

import pytest

from keepgui.backends.iii.scrub import scrub_log, scrubbed
from keepgui.core import fsio, registry
from keepgui.core.errors import Conflict
from keepgui.core.secrets.redact import REPLACEMENT, redact
from keepgui.core.secrets.scan import Scanner
from tests.secrets_corpus import secret_named


def open_bank(path):
    source = registry.open_source("iii", str(path), registry.OpenOptions(reload_command=""))
    bank = source.bank("main")
    bank.load()
    return source, bank


@pytest.fixture
def bank_with_secret(data_dir):
    (data_dir / "main").mkdir()
    source, bank = open_bank(data_dir)
    secret = secret_named("anthropic")[0]
    change = bank.create(f"Evals use the key {secret} from the team vault")
    key = change.rows.rows[0].id
    bank.edit(key, "tags", ["evals"])  # a second revision, still holding it
    bank.create("A plain memory about the blog's tone, kept as it is")
    return source, bank, key, secret


def log_bytes(bank) -> bytes:
    data, _stamp = fsio.read_stamped(bank.core().log_path)
    return data or b""


def test_redaction_rewrites_every_revision_and_keeps_every_other_byte(bank_with_secret):
    source, bank, key, secret = bank_with_secret
    before = log_bytes(bank)
    assert before.count(secret.encode()) == 2
    [finding] = Scanner(source).scan(["main"])
    assert finding.key == key and finding.path == bank.core().log_path and finding.kind == "Anthropic API Key"
    change, refused = redact(bank, [secret])
    assert refused == []
    after = log_bytes(bank)
    assert secret.encode() not in after
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    assert len(new_lines) > len(old_lines)  # the redacted revision, appended as the worker's update
    for old, new in zip(old_lines, new_lines, strict=False):
        assert new == old.replace(secret.encode(), REPLACEMENT.encode())
    assert bank.core().get(key).text == f"Evals use the key {REPLACEMENT} from the team vault"
    assert Scanner(source).scan(["main"]) == []
    undone = change.undo()
    assert log_bytes(bank) == before
    assert secret in bank.core().get(key).text
    undone.undo()
    assert log_bytes(bank) == after


def test_refused_when_the_worker_appended_since(bank_with_secret):
    _source, bank, _key, secret = bank_with_secret
    path = bank.core().log_path
    _data, stamp = fsio.read_stamped(path)
    with open(path, "ab") as fh:  # the worker appends a line meanwhile
        fh.write(log_bytes(bank).splitlines(keepends=True)[-1])
    held = log_bytes(bank)
    with pytest.raises(Conflict):
        scrub_log(path, [(secret, REPLACEMENT)], stamp)
    assert log_bytes(bank) == held


def test_the_secret_as_the_worker_writes_it_in_json():
    secret = 'pa"ss\\wörd/1234567890abcdef'
    line = '{"id":"fp1","text":"key ' + secret.replace("\\", "\\\\").replace('"', '\\"') + ' end"}\n'
    clean = scrubbed(line.encode(), [(secret, REPLACEMENT)])
    assert clean == b'{"id":"fp1","text":"key [REDACTED] end"}\n'


def test_doctor_includes_the_count(bank_with_secret, data_dir):
    import json

    from tests.conftest import run_cli

    _code, out, _err = run_cli(["doctor", "--data-dir", str(data_dir), "--json"])
    assert json.loads(out)["secrets"] == 1
    _code, out, _err = run_cli(["doctor", "--data-dir", str(data_dir)])
    assert "secrets: 1 in the banks' memories and rules" in out
