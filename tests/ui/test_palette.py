"""The command palette (Ctrl+K) finds banks, memories, keep.md entries, documents and every menu
action across the open sources, and searches off the GUI thread (#16.14)."""

from __future__ import annotations

import os
import statistics
import time

from PySide6.QtGui import QKeySequence

from keepgui.core.source import BankKey
from keepgui.ui.palette import ACTION, BANK, DOCUMENT, ROW, CommandPalette
from tests.ui.conftest import open_keep


def _ask(window, qtbot, text: str) -> list:
    window.open_palette()
    palette: CommandPalette = window.command_palette
    token = palette._token
    palette.box.setText(text)
    qtbot.waitUntil(lambda: palette._shown > token and palette.results.entries is not None, timeout=10_000)
    # the index of a bank is built when the palette opens: ask until its rows are in
    return palette.results.entries


def _wait_for(window, qtbot, text: str, match) -> list:
    found: list = []

    def check() -> bool:
        nonlocal found
        found = _ask(window, qtbot, text)
        return any(match(e) for e in found)

    qtbot.waitUntil(check, timeout=15_000)
    return found


def test_ctrl_k_finds_actions_banks_rows_entries_and_documents(make_window, demo_copy, qtbot):
    window, keep = open_keep(make_window, demo_copy, qtbot)
    main = BankKey(demo_copy.iii, "main")
    qtbot.waitUntil(lambda: window.hub.is_loaded(main), timeout=10_000)
    assert QKeySequence("Ctrl+K") in window.act_palette.shortcuts()
    assert window.act_palette in next(m for m in window.menuBar().actions() if m.text() == "&Edit").menu().actions()

    found = _wait_for(window, qtbot, "prefer", lambda e: e.kind == ROW and e.target[0] == main)
    kinds = {e.kind for e in found}
    assert ACTION in kinds and ROW in kinds
    assert any(e.kind == ACTION and e.title == "Edit › Preferences…" for e in found)
    assert found[0].kind == ACTION  # a command outranks a memory for the same words
    # keep.md entries through the same protocol, named as their bank names them
    tea = _wait_for(window, qtbot, "green tea", lambda e: e.kind == ROW and e.target[0] == keep)
    entry = next(e for e in tea if e.kind == ROW and e.target[0] == keep)
    assert entry.detail.startswith("entry in keep.md") and "tea" in entry.title.lower()
    docs = _wait_for(window, qtbot, "learned", lambda e: e.kind == DOCUMENT)
    assert any(e.kind == DOCUMENT and e.title == "learned.md" and e.target == (main, "learned") for e in docs)
    banks = _ask(window, qtbot, "blog")
    assert any(e.kind == BANK and e.target == BankKey(demo_copy.iii, "blog") for e in banks)
    window.command_palette.hide()


def test_choosing_a_result_goes_there(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii, watch=False)
    blog = BankKey(demo_copy.iii, "blog")
    qtbot.waitUntil(lambda: window.hub.is_loaded(blog), timeout=10_000)
    found = _wait_for(window, qtbot, "hugo", lambda e: e.kind == ROW and e.target[0] == blog)
    row = next(e for e in found if e.kind == ROW and e.target[0] == blog)
    window.command_palette.list.setCurrentIndex(window.command_palette.results.index(found.index(row)))
    window.command_palette._choose_index(window.command_palette.list.currentIndex())  # Enter
    qtbot.waitUntil(lambda: window.current == blog and window.memories.current_key() == row.target[1], timeout=10_000)
    assert window.tabs.currentWidget() is window.memories and not window.command_palette.isVisible()
    # an action: what its menu entry does
    found = _ask(window, qtbot, "show history")
    action = next(e for e in found if e.kind == ACTION and e.title == "View › Show history")
    before = window.memories.act_history.isChecked()
    window.command_palette.chosen.emit(action)
    assert window.memories.act_history.isChecked() != before
    # a document: the Rules panel on it
    found = _wait_for(window, qtbot, "style", lambda e: e.kind == DOCUMENT and e.target[0] == blog)
    window.command_palette.chosen.emit(next(e for e in found if e.kind == DOCUMENT and e.target[0] == blog))
    assert window.tabs.currentWidget() is window.rules and window.rules.doc.name == "style"


def test_typing_in_the_palette_leaves_the_gui_thread_free_on_a_big_bank(make_window, qtbot, tmp_path):
    from tests.bench.synth import make_bank

    data_dir = tmp_path / "memory"
    make_bank(str(data_dir / "big"), 30_000, 40_000)
    window = make_window(data_dir, bank="big", watch=False)
    key = BankKey(str(data_dir), "big")
    window.open_palette()
    palette = window.command_palette
    # the bank's index is built in the background; wait until a query finds its rows
    _wait_for(window, qtbot, "prefers", lambda e: e.kind == ROW)
    handled: list[float] = []
    original = palette._on_answer

    def timed(token, entries, indexing=None):
        start = time.perf_counter()
        original(token, entries, indexing)
        handled.append(time.perf_counter() - start)

    palette.index.answered.disconnect(palette._on_answer)
    palette.index.answered.connect(timed)
    typed: list[float] = []
    for text in ("u", "us", "use", "user", "user p", "user pr", "user pre", "user pref", "user prefe"):
        start = time.perf_counter()
        palette.box.setText(text)
        palette._debounce.stop()
        palette._ask()
        typed.append(time.perf_counter() - start)
        qtbot.waitUntil(lambda: palette._shown == palette._token, timeout=10_000)
    # what a keystroke costs the GUI thread: the question (a queue put) and drawing the short answer
    assert statistics.median(typed) < 0.005 and max(typed) < 0.05, typed
    assert statistics.median(handled) < 0.016, handled
    assert len(palette.results.entries) <= 50 and window.hub.is_loaded(key)
    assert os.path.isdir(data_dir)
    palette.hide()
