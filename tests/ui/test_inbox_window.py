"""The Inbox in the window: an agent-like process changes keep.md while keepgui runs, the change is
listed entry by entry, an entry is reverted through the undo stack (and the undo puts the agent's
version back), the tray counts what waits, and the preferences write the login autostart entry."""

from __future__ import annotations

import os
import subprocess
import sys

from keepgui.core import autostart
from tests.ui.conftest import open_keep


def agent_appends(path: str, line: str) -> None:
    code = "import sys; open(sys.argv[1], 'a', encoding='utf-8').write(sys.argv[2] + '\\n')"
    subprocess.run([sys.executable, "-c", code, path, line], check=True, timeout=60)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_a_change_made_while_keepgui_runs_is_listed_and_an_entry_reverted_with_undo(make_window, demo_copy, qtbot):
    window, _key = open_keep(make_window, demo_copy, qtbot)
    lister = window.inbox
    lister.refresh()
    qtbot.waitUntil(lambda: lister.listed_once and not lister._running, timeout=60_000)
    keep = os.path.join(demo_copy.nanobot, "keep.md")
    mine = [i for i in lister.listing.items if i.source == demo_copy.nanobot]
    assert mine == []  # first seen: a baseline
    agent_appends(keep, "- Invented by the agent")
    arrived = []
    lister.arrived.connect(lambda n, sentence: arrived.append(sentence))
    lister.refresh()
    qtbot.waitUntil(lambda: any(i.source == demo_copy.nanobot for i in lister.listing.items), timeout=60_000)
    assert arrived and "keep.md" in arrived[0]
    dialog = window.show_inbox()
    panel = dialog.panel
    qtbot.waitUntil(lambda: panel.entries.count() == 1, timeout=60_000)
    assert panel.entries.item(0).text() == "1. + - Invented by the agent"
    panel.entries.setCurrentRow(0)
    assert panel.buttons["revert_entry"].isEnabled()
    panel.act("revert_entry")
    qtbot.waitUntil(lambda: "- Invented by the agent" not in read(keep), timeout=60_000)
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: "- Invented by the agent" in read(keep), timeout=60_000)
    dialog.close()


def test_the_tray_counts_the_changes_to_review(qtbot):
    from keepgui.ui.tray import KeepTray

    tray = KeepTray()
    tray.set_unreviewed(3)
    assert tray.act_inbox.text() == "Inbox (3 to review)…"
    tray.set_unreviewed(0)
    assert tray.act_inbox.text() == "Inbox: nothing to review"


def test_start_at_login_writes_and_removes_the_autostart_entry(tmp_path, monkeypatch):
    from keepgui.ui.preferences import Preferences, apply_inbox_preferences, inbox_preferences
    from keepgui.ui.settings import NOTIFY_SETTING, Settings

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = Settings(str(tmp_path / "settings.json"))
    assert inbox_preferences(settings) == {"autostart": False, "notify_changes": False}
    assert apply_inbox_preferences(Preferences(autostart=True, notify_changes=True), settings) == ""
    entry = tmp_path / "config" / "autostart" / "keepgui.desktop"
    text = entry.read_text()
    assert "Exec=" in text and "--tray" in text and autostart.MARK in text
    assert settings.get(NOTIFY_SETTING) is True
    apply_inbox_preferences(Preferences(autostart=False), settings)
    assert not entry.exists()
    entry.write_text("[Desktop Entry]\nName=someone else's\n")
    assert "not written by keepgui" in apply_inbox_preferences(Preferences(autostart=True), settings)
