"""``keepgui secrets`` on every backend: real-format secrets planted in a row and a document of each
demo source, listed masked, redacted (after which no file of the source holds them), allowed, and
purged from keepgui's history."""

from __future__ import annotations

import json
import os

import pytest

from keepgui.core import registry
from tests.conftest import run_cli
from tests.secrets_corpus import lookalikes, planted

KINDS = ["iii", "nanobot", "claude", "hermes", "codex", "gemini"]


@pytest.fixture
def demo(demo_copy, monkeypatch):
    monkeypatch.setenv("HOME", demo_copy.claude_home)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return demo_copy


def where(demo, kind: str) -> list[str]:
    if kind == "claude":
        return ["--agent", "claude", "--project", demo.claude_project]
    return ["--agent", kind, "--source", demo.path(kind)]


def source_of(demo, kind: str):
    path = demo.claude_project if kind == "claude" else demo.path(kind)
    return registry.open_source(kind, path, registry.OpenOptions(reload_command=""))


def plant(demo, kind: str) -> tuple[list[str], list[str]]:
    """A secret kept as a row (and a look-alike beside it), another written into a document: the
    secrets, and the folders of the source."""
    source = source_of(demo, kind)
    bank = source.bank(source.scan().names[0])
    bank.load()
    rows = [s for s in planted() if s[0] in ("stripe", "anthropic", "github")]
    _n, row_secret, row_line = rows[KINDS.index(kind) % len(rows)]  # Codex: a note keepgui kept
    bank.keep(row_line + " " + lookalikes()[0][1], force=True)
    _n, doc_secret, doc_line = planted()[KINDS.index(kind) + 15]
    docs = bank.documents()
    name = next(n for n, _t in docs.list() if not docs.read(n).read_only)
    doc = docs.read(name)
    docs.save(doc, doc.text + "\n" + doc_line + "\n", confirmed=True)
    folders = [source.path, *source.also_watched] + ([demo.claude_home] if kind == "claude" else [])
    return [row_secret, doc_secret], folders


def files_holding(folders: list[str], secret: str) -> list[str]:
    out = []
    for folder in folders:
        for root, _dirs, files in os.walk(folder):
            for name in files:
                path = os.path.join(root, name)
                with open(path, "rb") as fh:
                    if secret.encode() in fh.read():
                        out.append(path)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_found_masked_redacted_and_gone_from_every_file(demo, kind):
    secrets, folders = plant(demo, kind)
    code, out, _err = run_cli(["secrets", *where(demo, kind), "--json"])
    assert code == 1
    found = json.loads(out)["findings"]
    assert {f["masked"][:4] for f in found} >= {s[:4] for s in secrets}
    for s in secrets:
        assert s not in out
        assert files_holding(folders, s)
    assert {"id", "type", "source", "path", "line", "entry", "document", "masked", "sent"} <= set(found[0])
    assert any(f["entry"] for f in found) and any(f["document"] for f in found)
    assert any(f["sent"] for f in found)  # a document the agent is given whole
    code, out, err = run_cli(["secrets", *where(demo, kind), "--redact", "all", "--purge-history"])
    for s in secrets:
        assert s not in out + err
        assert files_holding(folders, s) == [], (kind, s)
    assert code == 0, out + err
    assert out.startswith("0 secret(s) found")


def test_allow_marks_a_finding_not_a_secret_per_source(demo):
    plant(demo, "hermes")
    _code, out, _err = run_cli(["secrets", *where(demo, "hermes"), "--json"])
    first = json.loads(out)["findings"][0]
    _code, out, err = run_cli(["secrets", *where(demo, "hermes"), "--allow", first["id"]])
    assert "marked not a secret" in err and "marked not a secret)" in out
    _code, out, _err = run_cli(["secrets", *where(demo, "hermes"), "--json"])
    assert first["id"] not in {f["id"] for f in json.loads(out)["findings"]}
    assert json.loads(out)["allowed"] >= 1


def test_an_unknown_finding_is_a_clear_error(demo):
    code, _out, err = run_cli(["secrets", *where(demo, "nanobot"), "--redact", "0123456789"])
    assert code == 1 and "no finding 0123456789" in err
