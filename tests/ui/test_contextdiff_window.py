"""View → Compare context…: on a journal written by real syncs of a changing source (agent-like writes in
processes of their own), the dialog's summary, memories and per-part diffs are what
``keepgui context --at T1 --diff T2 --json`` prints."""

from __future__ import annotations

import json
import os

import pytest
from PySide6.QtCore import Qt

from keepgui.core.journal import Journal
from keepgui.ui.contextdiff import NOW, CompareContextDialog
from tests.core.test_timetravel import agent_edit, keepgui, stamp


@pytest.fixture
def nanobot(tmp_path, demo_copy, monkeypatch):
    """A nanobot workspace whose journal holds a baseline, then two agent edits recorded by a later command."""
    home = tmp_path / "user"
    home.mkdir()
    env = dict(os.environ, KEEPGUI_HOME=str(tmp_path / "kg"), PYTHONPATH=os.getcwd(), HOME=str(home))
    monkeypatch.setenv("KEEPGUI_HOME", env["KEEPGUI_HOME"])
    monkeypatch.setenv("HOME", env["HOME"])
    where = ["--source", demo_copy.nanobot]
    keepgui(env, "context", *where)  # the first look records a baseline
    t1 = stamp()
    agent_edit(os.path.join(demo_copy.nanobot, "keep.md"), "- The agent noted a brand new travel fact")
    agent_edit(os.path.join(demo_copy.nanobot, "memory", "MEMORY.md"), "- Dream wrote a travel summary line")
    keepgui(env, "memories", *where)  # recorded
    journal = Journal(os.path.join(env["KEEPGUI_HOME"], "data", "journal"))
    return env, where, t1, journal, demo_copy.nanobot


def _dialog(qtbot, journal, path) -> CompareContextDialog:
    dialog = CompareContextDialog(journal, "nanobot", path, None, "nanobot · demo")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.first.count() > 1, timeout=30_000)  # the recorded moments listed
    return dialog


def test_the_dialog_shows_what_the_cli_diff_prints(qtbot, nanobot):
    env, where, t1, journal, path = nanobot
    cli = json.loads(keepgui(env, "context", *where, "--at", t1, "--diff", "now", "--json").stdout)
    dialog = _dialog(qtbot, journal, path)
    # now, the baseline and the look that recorded the two edits (each look records its files one by one)
    assert dialog.first.count() == 3 and "2 moments" in dialog.status.text()
    dialog.first.setEditText(t1)
    dialog.second.setEditText(NOW)
    qtbot.mouseClick(dialog.compare_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.compared is not None, timeout=60_000)
    assert dialog.compared is not None
    assert dialog.compared.to_obj() == cli  # summary, counts, files, every part's hashes and diff
    assert dialog.summary.text() == cli["summary"]
    assert "sees 0 new memories (1 more kept but not given)" in dialog.summary.text()
    groups = {
        dialog.changes.topLevelItem(i).text(0): dialog.changes.topLevelItem(i)
        for i in range(dialog.changes.topLevelItemCount())
    }
    kept = groups["New memories kept but not given (1)"]
    assert "brand new travel fact" in kept.child(0).text(0)
    files = groups["Memory files changed (2)"]
    assert sorted(os.path.basename(files.child(i).text(0)) for i in range(2)) == ["MEMORY.md", "keep.md"]
    changed = [n for n, p in cli["parts"].items() if p["diff"]]
    shown = dialog.parts.currentItem().data(Qt.ItemDataRole.UserRole)
    assert shown == changed[0] and dialog.diff.toPlainText() == cli["parts"][shown]["diff"]
    assert "+- Dream wrote a travel summary line" in dialog.diff.toPlainText()
    labels = [dialog.parts.item(i).text() for i in range(dialog.parts.count())]
    assert labels == [
        f"{n} · +{p['added']} −{p['removed']}" if p["diff"] else f"{n} · unchanged" for n, p in cli["parts"].items()
    ]


def test_a_recorded_moment_picked_from_the_list_and_enter_compares(qtbot, nanobot):
    _env, _where, _t1, journal, path = nanobot
    dialog = _dialog(qtbot, journal, path)
    dialog.first.setCurrentIndex(dialog.first.count() - 1)  # the oldest recorded moment: the baseline
    at, label = dialog.chosen(dialog.first)
    assert isinstance(at, int) and label == dialog.first.currentText()
    dialog.query.setFocus()
    qtbot.keyClick(dialog.query, Qt.Key.Key_Return)  # the default button
    qtbot.waitUntil(lambda: dialog.compared is not None, timeout=60_000)
    assert dialog.compared is not None and dialog.compared.files_changed
    assert dialog.compared.summary.startswith(f"from {label} to now:")


def test_a_time_that_is_no_time_or_before_the_record_is_said_plainly(qtbot, nanobot):
    _env, _where, _t1, journal, path = nanobot
    dialog = _dialog(qtbot, journal, path)
    dialog.first.setEditText("yesterday-ish")
    dialog.compare()
    assert "not a time" in dialog.status.text() and dialog.compared is None
    dialog.first.setEditText("3d")
    dialog.compare()
    qtbot.waitUntil(lambda: dialog.status.text().startswith("Could not compare"), timeout=60_000)
    assert "before that" in dialog.status.text() and "Traceback" not in dialog.status.text()
    assert dialog.compare_button.isEnabled() and not dialog.progress.isVisible()


def test_every_control_has_an_accessible_name(qtbot, nanobot):
    _env, _where, _t1, journal, path = nanobot
    dialog = _dialog(qtbot, journal, path)
    for widget in (
        dialog.first,
        dialog.second,
        dialog.query,
        dialog.progress,
        dialog.status,
        dialog.summary,
        dialog.changes,
        dialog.parts,
        dialog.diff,
    ):
        assert widget.accessibleName(), widget


def test_view_compare_context_opens_on_the_current_bank(make_window, demo_copy, qtbot):
    from tests.ui.conftest import open_keep

    # the session's KEEPGUI_HOME: the window's journal is installed once per process (journal.install)
    window, key = open_keep(make_window, demo_copy, qtbot)
    action = window.act_compare_context
    assert action in window.view_menu.actions() and action.text() == "C&ompare context…"
    action.trigger()
    dialogs = [w for w in window.findChildren(CompareContextDialog) if w.isVisible()]
    assert len(dialogs) == 1
    dialog = dialogs[0]
    assert (dialog.kind, dialog.path, dialog.bank) == ("nanobot", key.source, key.bank)
    dialog.second.setEditText(NOW)
    dialog.compare()  # now against now: nothing changed
    qtbot.waitUntil(lambda: dialog.compared is not None, timeout=60_000)
    assert dialog.compared is not None and not dialog.compared.files_changed
    assert all(not p.diff for p in dialog.compared.parts.values())
    dialog.close()
