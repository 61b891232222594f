"""A secret in a note keepgui kept for Codex is redacted by keeping the note again without it (the
old one removed, one undo step); never through a correction note, which would quote it; a row of a
file Codex writes itself is refused with the reason."""

from __future__ import annotations

import os

from keepgui.core import registry
from keepgui.core.secrets.redact import redact
from keepgui.core.secrets.scan import Scanner
from tests.secrets_corpus import secret_named


def _notes(bank) -> dict[str, str]:
    return {r.id: r.text for r in bank.rows() if r.id.startswith("note:")}


def test_a_note_is_kept_again_without_the_secret_and_undone(demo_copy):
    source = registry.open_source("codex", demo_copy.codex, registry.OpenOptions(reload_command=""))
    bank = source.bank(source.scan().names[0])
    bank.load()
    secret, line = secret_named("stripe")
    bank.keep(line)
    before = _notes(bank)
    [finding] = [f for f in Scanner(source).scan([bank.key.bank]) if f.secret == secret]
    change, refused = redact(bank, [secret])
    assert refused == []
    after = _notes(bank)
    assert len(after) == len(before) and not any(secret in t for t in after.values())
    assert any("[REDACTED]" in t for t in after.values()) and finding.key not in after
    home = demo_copy.codex
    for root, _dirs, files in os.walk(home):
        for name in files:
            with open(os.path.join(root, name), "rb") as fh:
                assert secret.encode() not in fh.read(), name
    change.undo()
    assert _notes(bank) == before


def test_a_row_of_codex_s_own_files_is_refused_with_the_reason(demo_copy):
    source = registry.open_source("codex", demo_copy.codex, registry.OpenOptions(reload_command=""))
    bank = source.bank(source.scan().names[0])
    bank.load()
    row = next(r for r in bank.rows() if r.id.startswith("summary:"))
    word = row.text.split()[-1]
    _change, refused = redact(bank, [word])
    assert any("Codex writes its memory files itself" in r.reason for r in refused if r.where.startswith("entry"))
