"""Time travel and transfers in the window, with real processes: a journal written by real syncs (the
command line, another process) while an agent-like process rewrites keep.md, then the window shows the
moment read-only, restores an entry and a file with undo, and leaves ``os.environ`` alone while the
other sources load; memories copied and moved across two backends as a plan, then applied with undo;
export and import through the menus; the new views rendered in light and dark at two sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime

import pytest
from PySide6.QtCore import QItemSelectionModel, Qt, QTimer

from keepgui.core.source import BankKey
from keepgui.core.timetravel import parse_when
from tests.conftest import ROOT
from tests.ui.conftest import open_keep

SHOTS = os.environ.get("KEEPGUI_SHOTS", "")
"""A folder to save the renders in (unset: they are drawn and checked, not kept)."""


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command line in another process, on this test's journal (KEEPGUI_HOME is shared)."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", *argv], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


def stamp() -> str:
    time.sleep(0.05)
    moment = datetime.now().astimezone().isoformat()
    time.sleep(0.05)
    return moment


def agent_rewrite(path: str, drop: str, add: str) -> None:
    """An agent-like process rewriting keep.md: one entry dropped, one added at the end."""
    script = (
        "import sys; p, d, a = sys.argv[1:4]; t = open(p, encoding='utf-8').read().splitlines(True);"
        "open(p, 'w', encoding='utf-8').write(''.join(x for x in t if d not in x) + a + '\\n')"
    )
    subprocess.run([sys.executable, "-c", script, path, drop, add], check=True, timeout=60)


def texts(window, key) -> list[str]:
    return [r.text for r in window.hub.rows(key) if r.invalid_at is None]


def file_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture
def travelled(make_window, demo_copy, qtbot):
    """A window on the demo whose keep.md lost an entry to an agent after ``t1``; the journal recorded both."""
    ws = demo_copy.nanobot
    first = json.loads(cli("memories", "--source", ws, "--json").stdout.splitlines()[0])
    t1 = parse_when(stamp())
    keep = os.path.join(ws, "keep.md")
    original = file_text(keep)
    agent_rewrite(keep, first["text"], "- A later fact the agent wrote")
    cli("memories", "--source", ws)  # recorded by another process
    window, key = open_keep(make_window, demo_copy, qtbot)
    qtbot.waitUntil(lambda: first["text"] not in texts(window, key), timeout=10_000)
    return window, key, first["text"], t1, keep, original


def enter(window, key, at, qtbot):
    travel = window.time_travel
    before = dict(os.environ)
    same: list[bool] = []
    poll = QTimer()
    poll.timeout.connect(lambda: same.append(dict(os.environ) == before))
    poll.start(1)
    travel.view_at(key, at)
    qtbot.waitUntil(lambda: travel.moment is not None, timeout=30_000)
    poll.stop()
    assert same and all(same) and dict(os.environ) == before  # never moved while the moment was read
    return travel


def test_the_window_shows_a_moment_read_only_and_restores_an_entry_with_undo(travelled, qtbot):
    window, key, victim, t1, keep, _original = travelled
    travel = enter(window, key, t1, qtbot)
    assert travel.view.isVisible() and not window.tabs.isVisible()
    assert "read-only" in travel.view.banner.label.text() and "Back to now" in [
        b.text() for b in travel.view.banner.buttons
    ]
    then = [r[1] for r in travel.view.rows.rows]
    assert victim in then and not any("A later fact" in t for t in then)
    model = travel.view.rows
    assert not model.flags(model.index(0, 0)) & Qt.ItemFlag.ItemIsEditable
    assert travel.view.preview.toPlainText()  # what the agent was given then
    row = then.index(victim)
    travel.view.table.selectionModel().select(
        model.index(row, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    )
    travel.act_restore.trigger()
    qtbot.waitUntil(lambda: victim in texts(window, key), timeout=10_000)
    now = file_text(keep)
    assert victim in now and "A later fact the agent wrote" in now  # what the agent wrote after stays
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: victim not in texts(window, key), timeout=10_000)
    assert victim not in file_text(keep) and "A later fact the agent wrote" in file_text(keep)
    window.undo_stack.redo()
    qtbot.waitUntil(lambda: victim in texts(window, key), timeout=10_000)
    qtbot.keyClick(travel.view.table, Qt.Key.Key_Escape)  # Back to now
    assert window.tabs.isVisible() and not travel.view.isVisible()


def test_a_whole_file_comes_back_as_it_was_and_undo_takes_it_back(travelled, qtbot):
    window, key, _victim, t1, keep, original = travelled
    travel = enter(window, key, t1, qtbot)
    rewritten = file_text(keep)
    travel.restore_file(os.path.realpath(keep) if os.path.realpath(keep) in travel.moment.files else keep)
    qtbot.waitUntil(lambda: file_text(keep) == original, timeout=10_000)
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: file_text(keep) == rewritten, timeout=10_000)


def test_the_activity_strips_menu_shows_the_end_of_a_day(travelled, qtbot):
    from PySide6.QtCore import QDate, QPoint

    window, key, victim, _t1, _keep, _original = travelled
    window.show_panel("activity")
    strip = window.memories.strip
    qtbot.waitUntil(lambda: strip.width() > 100, timeout=5_000)
    menu = window.time_travel.strip_menu(QPoint(int(strip.x_of(QDate.currentDate())) + 1, strip.height() // 2))
    day = next(a for a in menu.actions() if a.text().startswith("View as of the end of"))
    day.trigger()  # today's end is now: the rows as they are
    travel = window.time_travel
    qtbot.waitUntil(lambda: travel.moment is not None, timeout=30_000)
    assert sorted(r[1] for r in travel.view.rows.rows if r[4]) == sorted(texts(window, key))
    assert victim not in [r[1] for r in travel.view.rows.rows]


def test_a_time_is_read_as_people_write_it_and_a_bad_one_is_said(travelled, qtbot):
    window, key, _victim, _t1, _keep, _original = travelled
    travel = window.time_travel
    travel.view_at(key, parse_when("1s"))
    qtbot.waitUntil(lambda: travel.moment is not None, timeout=30_000)
    travel.view.time.setText("yesterday-ish")
    travel.view.go.click()
    assert window.banner.isVisible() and "not a time" in window.banner.label.text()
    travel.view.time.setText("30d")
    travel.view.go.click()
    qtbot.waitUntil(lambda: "before that" in window.banner.label.text(), timeout=30_000)  # before the record


def test_copy_and_move_across_two_backends_are_a_plan_then_one_undo_step(make_window, demo_copy, qtbot):
    from keepgui.ui.transfer import TransferDialog

    window = make_window(demo_copy.iii, bank=None, workspace=demo_copy.nanobot)
    window.open_source("hermes", demo_copy.hermes, remember=False)
    keep_key = BankKey(demo_copy.nanobot, "keep.md")
    qtbot.waitUntil(lambda: bool(window.hub.banks(demo_copy.hermes)) and window.hub.is_loaded(keep_key), timeout=15_000)
    hermes = BankKey(demo_copy.hermes, window.hub.banks(demo_copy.hermes)[0])
    qtbot.waitUntil(lambda: window.hub.is_loaded(hermes), timeout=15_000)
    window.select_bank(hermes)
    qtbot.waitUntil(lambda: window.current == hermes and window._loading is None, timeout=15_000)
    rows = [r for r in window.hub.rows(hermes) if r.invalid_at is None][:2]
    window.memories.select_keys([r.id for r in rows])
    qtbot.waitUntil(lambda: len(window.memories.selected_records()) == 2, timeout=5_000)
    dialog = window.transfer.copy(move=True)
    assert isinstance(dialog, TransferDialog)
    dialog.choose(keep_key)
    qtbot.waitUntil(lambda: dialog.apply_button.isEnabled(), timeout=15_000)
    assert [i.state for i in dialog.items] == ["planned", "planned"]
    assert all(i.hints for i in dialog.items)  # what nanobot's own check says of each keep
    before = texts(window, keep_key)
    assert not any(r.text.strip() in " ".join(before) for r in rows)  # nothing written by the plan
    dialog.apply_button.click()
    assert [i.state for i in dialog.items] == ["kept", "kept"]
    qtbot.waitUntil(
        lambda: all(any(r.text.strip() in t for t in texts(window, keep_key)) for r in rows), timeout=10_000
    )
    qtbot.waitUntil(
        lambda: not any(r.id in {x.id for x in window.hub.rows(hermes) if x.invalid_at is None} for r in rows),
        timeout=10_000,
    )
    window.undo_stack.undo()  # one step: both keeps and both forgets
    qtbot.waitUntil(lambda: texts(window, keep_key) == before, timeout=10_000)
    qtbot.waitUntil(lambda: all(r.text in texts(window, hermes) for r in rows), timeout=10_000)


def test_export_and_import_through_the_menus(make_window, demo_copy, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from keepgui.ui.transfer import JSON

    window, key = open_keep(make_window, demo_copy, qtbot)
    window.open_source("hermes", demo_copy.hermes, remember=False)
    qtbot.waitUntil(lambda: bool(window.hub.banks(demo_copy.hermes)), timeout=15_000)
    hermes = BankKey(demo_copy.hermes, window.hub.banks(demo_copy.hermes)[0])
    qtbot.waitUntil(lambda: window.hub.is_loaded(hermes), timeout=15_000)
    bundle = tmp_path / "keep.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(bundle), JSON))
    assert window.transfer.act_export in window.menuBar().actions()[0].menu().actions()
    window.transfer.act_export.trigger()
    qtbot.waitUntil(bundle.exists, timeout=10_000)
    obj = json.loads(bundle.read_text(encoding="utf-8"))
    assert [m["text"] for m in obj["memories"]] == texts(window, key)
    window.select_bank(hermes)
    qtbot.waitUntil(lambda: window.current == hermes and window._loading is None, timeout=15_000)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(bundle), JSON))
    before = texts(window, hermes)
    window.transfer.act_import.trigger()
    qtbot.waitUntil(lambda: window.transfer.dialog is not None, timeout=10_000)
    dialog = window.transfer.dialog
    assert dialog.chosen == hermes
    qtbot.waitUntil(lambda: dialog.apply_button.isEnabled(), timeout=15_000)
    assert texts(window, hermes) == before  # a plan writes nothing
    dialog.apply_button.click()
    states = [i.state for i in dialog.items]
    assert "kept" in states and "refused" in states  # Hermes's limit takes some and says why for the rest
    assert all("limit" in i.why for i in dialog.items if i.state == "refused")
    assert "refused" in dialog.summary.text()
    qtbot.waitUntil(lambda: len(texts(window, hermes)) > len(before), timeout=10_000)
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: texts(window, hermes) == before, timeout=10_000)


@pytest.mark.parametrize("theme_name", ["light", "dark"])
def test_the_views_render_at_both_sizes(travelled, qtbot, theme_name):
    from keepgui.ui import appearance

    window, key, _victim, t1, _keep, _original = travelled
    was = appearance._applied or "system"
    appearance.apply_theme(theme_name)
    try:
        travel = enter(window, key, t1, qtbot)
        window.memories.select_keys([r.id for r in window.hub.rows(key)][:2])
        dialog = window.transfer.copy(move=False)
        for width, height in ((1024, 700), (1920, 1080)):
            window.resize(width, height)
            qtbot.wait(50)
            image = window.grab().toImage()
            assert image.width() >= width - 2 and not image.isNull()
            assert travel.view.banner.label.width() > 100  # the banner's words have room
            if SHOTS:
                image.save(os.path.join(SHOTS, f"travel-{theme_name}-{width}.png"))
                if dialog is not None:
                    dialog.grab().toImage().save(os.path.join(SHOTS, f"transfer-{theme_name}-{width}.png"))
        if dialog is not None:
            dialog.close()
    finally:
        appearance.apply_theme(was)


def test_a_moments_rows_are_taken_in_as_they_come_and_the_old_ones_let_go_off_the_gui_thread(qtbot, monkeypatch):
    """Taking a moment in costs the GUI thread the same at 100 rows as at 100,000: the rows arrive in
    the order shown (read_moment put the live ones first) and the rows shown before are freed a slice at
    a time on a lane, not in one call on the GUI thread."""
    import threading

    from keepgui.core import pace
    from keepgui.ui import timetravel

    freed_on: list[int] = []
    release = pace.release

    def spy(items: list[object]) -> None:
        freed_on.append(threading.get_ident())
        release(items)

    monkeypatch.setattr(timetravel.pace, "release", spy)
    model = timetravel.MomentRows()
    first = [(f"id{n}", f"fact {n}", "", None, n % 2 == 0) for n in range(5000)]
    model.set_rows(first)
    assert model.rowCount() == 5000 and model.rows is first  # as given: no sort, no copy
    model.set_rows([("x", "one", "", None, True)])
    qtbot.waitUntil(lambda: not first, timeout=10_000)  # emptied by the lane ...
    assert freed_on and threading.get_ident() not in freed_on  # ... off the GUI thread
    small = model.rows
    model.set_rows([])
    assert small == [("x", "one", "", None, True)]  # a few rows are simply dropped here
