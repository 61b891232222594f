"""Every pattern run on a keep.md line is bounded (issue 24, item 5): one 40,000-character token, a run
of 40,000 spaces or a line of megabytes costs milliseconds to seconds, never minutes."""

from __future__ import annotations

import time

import pytest

from keepgui.backends.nanobot.compact import dates
from keepgui.backends.nanobot.compact.keep import plan_keep
from keepgui.backends.nanobot.keepmd import KeepDoc
from keepgui.backends.nanobot.triage import triage
from keepgui.backends.nanobot.writes import check_fact, clean_fact
from keepgui.core.history import History
from tests.backends.nanobot.nanobot_helpers import make_workspace
from tests.reliability.common import deadline

TOKENS = {
    "letters": "a" * 40_000,
    "at signs": "a@" * 20_000,
    "dotted": "a." * 20_000,
    "address-like": "@" + "a." * 20_000,
    "link-like": "http://" + "a" * 40_000,
    "dashes": "-" * 40_000,
    "spaces": "Likes" + " " * 40_000 + "tea",
    "brackets": "[(" * 20_000,
    "dates": "2026-01-01 " * 4_000,
    "verbs": "read " * 8_000,
}


@pytest.mark.parametrize("name", sorted(TOKENS))
def test_one_huge_token_costs_little(name):
    text = f"Likes {TOKENS[name]} tea"
    doc = KeepDoc.parse(b"- Likes green tea\n- Has a cat\n")
    for what, call in (
        ("triage", lambda: triage(text)),
        ("clean_fact", lambda: clean_fact(text)),
        ("strip_stamps", lambda: dates.strip_stamps(text)),
        ("strip_dates", lambda: dates.strip_dates(text)),
        ("has_date", lambda: dates.has_date(text)),
        ("check_fact", lambda: check_fact(clean_fact(text), doc, "")),
    ):
        start = time.process_time()
        with deadline(10, f"{what} of {name}"):
            call()
        spent = time.process_time() - start
        assert spent < 1.0, f"{what} took {spent:.2f} s of CPU on the {name} token"


def test_compaction_of_a_keep_md_with_a_line_of_megabytes_finishes(tmp_path):
    lines = [f"- Fact {i} about the garden and the tea number {i}" for i in range(160)]
    lines.insert(50, "- " + "a." * 1_000_000)  # one 2 MB token
    ws = make_workspace(tmp_path / "ws", keep="\n".join(lines) + "\n")
    start = time.process_time()
    with deadline(120, "compaction of a 2 MB line"):
        plan = plan_keep(ws, history=History(tmp_path / "history"))
    assert time.process_time() - start < 20
    assert plan is not None


@pytest.mark.slow
def test_compaction_of_a_ten_megabyte_line_finishes(tmp_path):
    lines = [f"- Fact {i} about the garden and the tea number {i}" for i in range(160)]
    lines.insert(50, "- " + "a." * 5_000_000)
    ws = make_workspace(tmp_path / "ws", keep="\n".join(lines) + "\n")
    with deadline(300, "compaction of a 10 MB line"):
        plan_keep(ws, history=History(tmp_path / "history"))
