"""The Inbox in the window: an agent-like process changes keep.md while keepgui runs, the change is
listed entry by entry, an entry is reverted through the undo stack (and the undo puts the agent's
version back), the tray counts what waits, and the preferences write the login autostart entry."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from keepgui.core import autostart
from tests.ui.conftest import open_keep


def agent_appends(path: str, line: str) -> None:
    code = "import sys; open(sys.argv[1], 'a', encoding='utf-8').write(sys.argv[2] + '\\n')"
    subprocess.run([sys.executable, "-c", code, path, line], check=True, timeout=60)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def baseline_taken(lister, path: str, qtbot) -> None:
    """Wait until the inbox has recorded ``path`` as first seen. A listing that ran while a source was still
    opening (the hub busy) did not look at it yet: an agent's write before its first look would be the
    baseline, not a change."""
    from keepgui.core.history import file_key

    lister.refresh()
    qtbot.waitUntil(lambda: bool(lister.journal.versions(file_key(path))), timeout=60_000)


def test_a_change_made_while_keepgui_runs_is_listed_and_an_entry_reverted_with_undo(make_window, demo_copy, qtbot):
    window, _key = open_keep(make_window, demo_copy, qtbot)
    lister = window.inbox
    keep = os.path.join(demo_copy.nanobot, "keep.md")
    baseline_taken(lister, keep, qtbot)
    qtbot.waitUntil(lambda: lister.listed_once and not lister._running, timeout=60_000)
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


def listed(lister, qtbot) -> None:
    """A listing asked for now, and delivered (one asked while a load runs waits for it: the one shown
    before is not the answer)."""
    before = lister.listing
    lister.refresh()
    qtbot.waitUntil(lambda: lister.listing is not before and not lister._running and not lister._again, timeout=60_000)


@pytest.mark.qt_log_ignore("No such signal QPlatformNativeInterface::systemTrayWindowChanged")  # offscreen: no tray
def test_a_notification_per_change_three_at_most_then_one_for_the_rest(make_window, demo_copy, qtbot):
    """Five changes arrive at once (four recorded by another keepgui, a headless `keepgui watch` say,
    the fifth written by an agent-like process): the tray tells the three newest one by one with what
    each did entry by entry, then one sentence for the two others, and counts the five; with the
    preference off it tells nothing."""
    from PySide6.QtWidgets import QApplication

    from keepgui.ui.desktop import Desktop
    from keepgui.ui.settings import NOTIFY_SETTING

    window, _key = open_keep(make_window, demo_copy, qtbot)
    desktop = Desktop(window, QApplication.instance(), use_tray=True)
    tray = desktop.tray
    assert tray is not None
    told: list[tuple[str, str]] = []
    tray.notify = lambda text, title="keepgui": told.append((title, text)) or True  # type: ignore[method-assign]
    lister = window.inbox
    lister._timer.stop()  # the listings come when the test asks (and when the agent writes)
    listed(lister, qtbot)
    keep = os.path.join(demo_copy.nanobot, "keep.md")
    text = read(keep)
    journal = lister.journal
    for n in range(1, 5):
        text += f"- Fact {n} the agent learned\n"
        journal.record(keep, text.encode())
    window.settings.set(NOTIFY_SETTING, True)
    agent_rewrites(
        keep, text.replace("- Fact 2 the agent learned\n", "") + "- The user prefers tea\n- Deploys on Fridays\n"
    )
    listed(lister, qtbot)
    mine = [i for i in lister.listing.items if i.source == demo_copy.nanobot]
    assert len(mine) == 5
    assert told == [
        ("Memory changed", "nanobot changed keep.md: +2 added, −1 removed"),
        ("Memory changed", "nanobot changed keep.md: +1 added"),
        ("Memory changed", "nanobot changed keep.md: +1 added"),
        ("Memory changed", "and 2 more changes to review in the inbox"),
    ]
    assert tray.unreviewed == len(lister.listing.items)
    assert tray.act_inbox.text() == f"Inbox ({len(lister.listing.items)} to review)…"
    window.settings.set(NOTIFY_SETTING, False)
    told.clear()
    agent_appends(keep, "- Fact 6 the agent learned")
    listed(lister, qtbot)
    qtbot.waitUntil(
        lambda: len([i for i in lister.listing.items if i.source == demo_copy.nanobot]) == 6, timeout=60_000
    )
    assert told == [] and tray.unreviewed == len(lister.listing.items)
    window.settings.set(NOTIFY_SETTING, True)
    dialog = window.show_inbox()
    panel = dialog.panel
    qtbot.waitUntil(lambda: panel.entries.count() == 1, timeout=60_000)
    panel.act("accept_all")
    qtbot.waitUntil(lambda: tray.unreviewed == 0, timeout=60_000)
    assert tray.act_inbox.text() == "Inbox: nothing to review"
    window.undo_stack.undo()
    qtbot.waitUntil(lambda: tray.unreviewed >= 6, timeout=60_000)
    assert told == []  # changes put back by an undo are not news
    dialog.close()
    tray.hide()


def agent_rewrites(path: str, text: str) -> None:
    """An agent-like process rewrites the file whole (as agents that regenerate their memory do)."""
    code = "import sys; open(sys.argv[1], 'w', encoding='utf-8').write(sys.argv[2])"
    subprocess.run([sys.executable, "-c", code, path, text], check=True, timeout=60)


def test_the_inbox_list_is_fed_a_step_at_a_time_as_the_view_scrolls(qtbot):
    from PySide6.QtWidgets import QListView

    from keepgui.core.inbox import Item
    from keepgui.ui.inbox import InboxModel

    items = [Item(f"id{n}", "nanobot", "/w", "keep.md", f"/w/f{n}.md", 1000 + n) for n in range(1000)]
    model = InboxModel()
    model.set_items(items, tuple(i.id for i in items))
    assert model.rowCount() == InboxModel.STEP and model.canFetchMore(model.index(0).parent())
    view = QListView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.resize(300, 200)
    view.show()
    view.scrollToBottom()  # Qt asks for more when the view reaches the end of what it has
    qtbot.waitUntil(lambda: model.rowCount() > InboxModel.STEP, timeout=5_000)
    assert model.data(model.index(model.rowCount() - 1)).startswith(f"nanobot · created · f{model.rowCount() - 1}.md")
    while model.canFetchMore(model.index(0).parent()):
        model.fetchMore(model.index(0).parent())
    assert model.rowCount() == 1000
    model.set_items(items[:10], tuple(i.id for i in items[:10]))
    assert model.rowCount() == 10 and not model.canFetchMore(model.index(0).parent())


def test_an_entry_reverted_is_marked_and_cannot_be_reverted_again(make_window, demo_copy, qtbot):
    """Of a change of two entries, the one reverted is marked "reverted since" (in words, muted) and Revert
    entry is off for it; the change stays for the other until that one is reverted too."""
    window, _key = open_keep(make_window, demo_copy, qtbot)
    lister = window.inbox
    keep = os.path.join(demo_copy.nanobot, "keep.md")
    baseline_taken(lister, keep, qtbot)
    agent_appends(keep, "- First invented fact\n- Second invented fact")
    lister.refresh()
    qtbot.waitUntil(lambda: any(i.source == demo_copy.nanobot for i in lister.listing.items), timeout=60_000)
    dialog = window.show_inbox()
    panel = dialog.panel
    qtbot.waitUntil(lambda: panel.entries.count() == 2, timeout=60_000)
    panel.entries.setCurrentRow(0)
    panel.act("revert_entry")
    qtbot.waitUntil(lambda: "- First invented fact" not in read(keep), timeout=60_000)
    qtbot.waitUntil(
        lambda: panel.entries.count() == 2 and "reverted since" in panel.entries.item(0).text(), timeout=60_000
    )
    assert "reverted since" not in panel.entries.item(1).text()
    panel.entries.setCurrentRow(0)
    assert not panel.buttons["revert_entry"].isEnabled()
    panel.entries.setCurrentRow(1)
    assert panel.buttons["revert_entry"].isEnabled()
    panel.act("revert_entry")
    qtbot.waitUntil(lambda: not any(i.source == demo_copy.nanobot for i in lister.listing.items), timeout=60_000)
    window.undo_stack.undo()  # the last entry's revert undone: the change waits for review again
    qtbot.waitUntil(lambda: "- Second invented fact" in read(keep), timeout=60_000)
    lister.refresh()
    qtbot.waitUntil(lambda: any(i.source == demo_copy.nanobot for i in lister.listing.items), timeout=60_000)
    dialog.close()
