"""Bank consolidation in the window offers what `keepgui compact --fuzzy` finds (issue 23, item 11):
near-duplicates are proposed (never checked by default), the same operations as the command line's."""

from __future__ import annotations

import io
import json

from keepgui.cli import Context, build_parser, run_command
from keepgui.core.source import BankKey
from keepgui.ui.compaction import CompactionDialog


def _cli_plan(data_dir: str, bank: str) -> dict:
    args = build_parser().parse_args(
        ["compact", "--agent", "iii", "--source", data_dir, "--bank", bank, "--fuzzy", "--json"]
    )
    out = io.StringIO()
    assert run_command(args, Context(args, out, io.StringIO())) == 0
    return json.loads(out.getvalue())


def test_the_window_proposes_the_near_duplicates_the_command_line_finds(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    key = BankKey(str(demo_copy.iii), "main")
    for text in (
        "User prefers green tea in the afternoon, never coffee",
        "User prefers green tea in the afternoon and never coffee",
    ):
        assert window.perform(key, lambda bank, t=text: bank.create(t, [], [], False)).change is not None
    qtbot.waitUntil(lambda: len(window.hub.rows(key)) >= 31, timeout=10_000)
    cli = _cli_plan(str(demo_copy.iii), "main")
    assert cli["operations"], "the command line finds a near-duplicate group"
    window.review_compaction(key)
    qtbot.waitUntil(
        lambda: isinstance(window.compaction.dialog, CompactionDialog) and window.compaction.dialog.isVisible(),
        timeout=15_000,
    )
    dialog = window.compaction.dialog
    ops = dialog.plan.operations
    assert [(op.kind, tuple(op.targets)) for op in ops] == [(o["kind"], tuple(o["targets"])) for o in cli["operations"]]
    assert any(op.kind == "fuzzy" for op in ops)
    assert not dialog.selection() & {op.id for op in ops if op.kind == "fuzzy"}  # a judgement call: unchecked
    assert f"of {len(ops)} operations" in dialog.counts.text()
    dialog.reject()


def test_nothing_to_compact_is_said_not_shown_as_an_empty_dialog(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    key = BankKey(str(demo_copy.iii), "coding")
    window.select_bank(key)
    qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)
    assert _cli_plan(str(demo_copy.iii), "coding")["operations"] == []
    said: list[str] = []
    window.statusBar().messageChanged.connect(said.append)
    window.review_compaction(key)
    qtbot.waitUntil(lambda: any("nothing to compact" in s for s in said), timeout=15_000)
    assert window.compaction.dialog is None or not window.compaction.dialog.isVisible()
