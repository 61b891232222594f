"""A bank's problems get a badge in the sidebar and a Problems view (what `doctor` reports), each line
opening the place (#16.10); a corrupt line used to show only as status text that passed."""

from __future__ import annotations

import os

from keepgui.backends.iii.doctor import diagnose
from keepgui.backends.iii.store import DataDir
from keepgui.core.source import BankKey
from keepgui.ui.problems import FileLinesDialog, ProblemsDialog
from keepgui.ui.sidebar import ProblemCountRole, TwoLineDelegate
from tests.ui.conftest import paint_cell


def _spoil(demo_copy) -> tuple[str, int]:
    """A corrupt line in the middle of main's log, and a rule file the worker cannot name; (log, line)."""
    log = os.path.join(demo_copy.iii, "main", "memories.jsonl")
    with open(log, "rb") as fh:
        lines = fh.read().split(b"\n")
    lines.insert(3, b'{"id": "fp00", "text": oops not json')
    with open(log, "wb") as fh:
        fh.write(b"\n".join(lines))
    with open(os.path.join(demo_copy.iii, "main", "rules", "Bad Name.md"), "w", encoding="utf-8") as fh:
        fh.write("# Bad\n")
    return log, 4


def test_a_corrupt_line_puts_a_badge_on_the_bank_and_opens_at_its_place(make_window, demo_copy, qtbot):
    log, line = _spoil(demo_copy)
    window = make_window(demo_copy.iii, watch=False)
    key = BankKey(demo_copy.iii, "main")
    item = window.tree_model.itemFromIndex(window.tree_model.index_of_bank(key))
    assert item.data(ProblemCountRole) == 1 and "1 problem reading it" in item.toolTip()
    other = window.tree_model.itemFromIndex(window.tree_model.index_of_bank(BankKey(demo_copy.iii, "blog")))
    assert not other.data(ProblemCountRole)

    window.act_problems.trigger()
    dialog = window.findChild(ProblemsDialog)
    qtbot.waitUntil(lambda: dialog.problems is not None, timeout=10_000)
    codes = {(p.code, p.path, p.line) for p in dialog.problems}
    assert ("corrupt-line", log, line) in codes
    bad = os.path.join(demo_copy.iii, "main", "rules", "Bad Name.md")
    assert ("rule-name", bad, 0) in codes
    # the same findings as `keepgui doctor` for that bank
    doctor = {(f.kind, f.path, f.line) for f in diagnose(DataDir(demo_copy.iii)) if f.bank == "main"}
    assert codes == doctor
    assert "problem" in dialog.summary.text() and "keepgui doctor" in dialog.summary.text()

    corrupt = next(p for p in dialog.problems if p.code == "corrupt-line")
    window.show_place(key, corrupt)  # a log line: the file at that line, marked
    viewer = window.findChild(FileLinesDialog)
    qtbot.waitUntil(lambda: viewer.lines is not None, timeout=5_000)
    assert (line, '{"id": "fp00", "text": oops not json') in viewer.lines
    assert viewer.text.extraSelections() and viewer.text.textCursor().block().text().endswith("oops not json")

    rule = next(p for p in dialog.problems if p.code == "rule-name")
    window.show_place(key, rule)  # a rule: the Rules panel, on that rule
    assert window.tabs.currentWidget() is window.rules and window.rules.doc.name == "Bad Name"
    dialog.close()


def test_the_badge_is_drawn(make_window, demo_copy, qtbot):
    _spoil(demo_copy)
    window = make_window(demo_copy.iii, watch=False)
    index = window.tree_model.index_of_bank(BankKey(demo_copy.iii, "main"))
    delegate = window.tree.itemDelegate()
    assert isinstance(delegate, TwoLineDelegate)

    def painted(count: int):
        window.tree_model.itemFromIndex(index).setData(count, ProblemCountRole)
        return paint_cell(delegate, index, window.tree, 260, 40)

    assert painted(3) != painted(0)
