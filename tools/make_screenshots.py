"""Regenerate the README's screenshots from the bundled demo (offscreen, no display needed).

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python tools/make_screenshots.py [OUT_DIR]``.
Every image is a real rendering of keepgui on a fresh copy of the demo data.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("KEEPGUI_HOME", tempfile.mkdtemp(prefix="keepgui-shots-home-"))

from keepgui.backends.nanobot.bank import KEEP_BANK
from keepgui.cli import build_parser
from keepgui.core.source import BankKey
from keepgui.ui.application import build_window, make_app
from keepgui.ui.settings import Settings


def settle(app, seconds: float, until=lambda: True) -> None:
    """Run the event loop for a while (and until a condition holds)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end or not until():
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() > end + 30:
            raise RuntimeError("the window did not settle")


def every_bank_listed(window) -> bool:
    """Every open source has listed its banks and each has its summary (the sidebar says no "loading…")."""
    hub = window.hub
    return all(
        hub.banks(path) and all(hub.summary(BankKey(path, name)) is not None for name in hub.banks(path))
        for path in hub.sources
    )


def welcome_shots(app, out: str) -> None:
    """The first start: the welcome page of a window with no source, light and dark, on a machine where
    discovery finds nothing (an empty home for the run)."""
    from keepgui.ui.appearance import apply_theme

    saved = {k: os.environ.get(k) for k in ("HOME", "KEEPGUI_DATA_DIR", "CLAUDE_CONFIG_DIR")}
    os.environ["HOME"] = tempfile.mkdtemp(prefix="keepgui-shots-empty-home-")
    os.environ.pop("KEEPGUI_DATA_DIR", None)
    os.environ.pop("CLAUDE_CONFIG_DIR", None)
    try:
        args = build_parser().parse_args(["--reload-command", ""])
        settings = Settings(os.path.join(os.environ["HOME"], "s.json"))
        window = build_window(args, settings, watch=False)
        window.resize(1440, 900)
        window.show()
        settle(app, 1.0, lambda: window.welcome.found_status.text().startswith("Nothing found"))
        for theme_name in ("light", "dark"):
            apply_theme(theme_name)
            settle(app, 0.5)
            name = "welcome" if theme_name == "light" else "welcome-dark"
            window.grab().save(os.path.join(out, name + ".png"), "PNG")
            print("wrote", os.path.join(out, name + ".png"))
        apply_theme("system")
        window.close()
        window.hub.shutdown()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    app = make_app()
    welcome_shots(app, out)
    args = build_parser().parse_args(["--demo", "--reload-command", ""])
    window = build_window(args, Settings(os.path.join(os.environ["KEEPGUI_HOME"], "s.json")), watch=False)
    window.resize(1440, 900)
    window.show()
    settle(app, 1.0, lambda: window.current is not None and window._loading is None and every_bank_listed(window))
    iii = next(s.path for s in window.hub.sources.values() if s.kind == "iii")
    workspace = next(s.path for s in window.hub.sources.values() if s.kind == "nanobot")

    def shot(name: str, widget=None) -> None:
        settle(app, 0.6)
        (widget or window).grab().save(os.path.join(out, name + ".png"), "PNG")
        print("wrote", os.path.join(out, name + ".png"))

    window.memories.table.selectRow(0)
    shot("main")
    window.show_panel("rules")
    shot("rules")
    window.show_panel("preview")
    window.preview.set_query("when do I publish articles")
    settle(app, 1.0, lambda: window.preview.last_result is not None)
    shot("preview")
    window.select_bank(BankKey(workspace, KEEP_BANK))
    window.show_panel("memories")
    settle(app, 1.0, lambda: window.current.bank == KEEP_BANK and window._loading is None)
    shot("keep")
    window.review_compaction(BankKey(workspace, KEEP_BANK))
    settle(app, 1.0, lambda: window.compaction.dialog is not None)
    dialog = window.compaction.dialog
    dialog.resize(1300, 820)
    top = dialog.tree.topLevelItem(0)
    dialog.tree.setCurrentItem(top.child(0))
    shot("compaction", dialog)
    dialog.reject()
    from keepgui.ui.quickkeep import QuickKeepPopup

    popup = QuickKeepPopup(window)
    popup.open("Allergic to penicilin")
    settle(app, 1.0)
    shot("quickkeep", popup)
    popup.close()
    claude_shots(app, window, shot)
    hermes_shots(app, window, shot)
    codex_shots(app, window, shot)
    gemini_shots(app, window, shot)
    window.select_bank(BankKey(iii, "main"))
    window.close()
    window.hub.shutdown()


def claude_shots(app, window, shot) -> None:
    """The Claude Code views: the project's memories, MEMORY.md with its cut, the exact reminder with the
    cut line, the index compaction, and the review of what the agent changed (made here on the copy)."""
    home = next(s for s in window.hub.sources.values() if s.kind == "claude")
    key = BankKey(home.path, window.hub.banks(home.path)[0])
    window.banner.dismiss()  # keep.md's "compaction due" gives way to this project's
    window.preview.set_query("")  # a Claude Code session's start does not depend on a question
    window.select_bank(key)
    window.show_panel("memories")
    settle(app, 1.0, lambda: window.current == key and window._loading is None)
    window.memories.select_key("post-feed-caching-11.md")
    shot("claude-memories")
    window.show_panel("rules")
    rules = window.rules
    rules.list.setCurrentRow(rules.list.count() - 1)  # MEMORY.md, last
    settle(app, 0.5)
    rules.editor.verticalScrollBar().setValue(rules.editor.verticalScrollBar().maximum())
    shot("claude-rules")
    window.show_panel("preview")
    settle(app, 1.0, lambda: window.preview.last_result is not None)
    window.preview.view.text.scroll_to_cut()
    shot("claude-preview")
    window.show_panel("memories")
    window.review_compaction(key)
    settle(app, 1.0, lambda: window.compaction.dialog is not None)
    dialog = window.compaction.dialog
    dialog.resize(1300, 820)
    shot("claude-compaction", dialog)
    dialog.reject()
    window.compaction.dialog = None
    # what an agent's consolidation does to the folder: two memories deleted, two merged, the index cut short
    memory = window.hub.bank(key).memory_dir
    for name in ("hosting-ticket.md", "comments-off.md"):
        os.remove(os.path.join(memory, name))
    with open(os.path.join(memory, "feed-cache.md"), encoding="utf-8") as fh:
        feed = fh.read().split("---\n", 2)[2]
    with open(os.path.join(memory, "goldmark-extensions.md"), encoding="utf-8") as fh:
        goldmark = fh.read().split("---\n", 2)[2]
    with open(os.path.join(memory, "postgres-16.md"), "a", encoding="utf-8") as fh:
        fh.write(feed + goldmark)
    for name in ("feed-cache.md", "goldmark-extensions.md"):
        os.remove(os.path.join(memory, name))
    index = os.path.join(memory, "MEMORY.md")
    with open(index, encoding="utf-8") as fh:
        lines = fh.readlines()
    with open(index, "w", encoding="utf-8") as fh:
        fh.writelines(lines[:140])
    window.hub.refresh_bank(key)
    settle(app, 1.0, lambda: window.banner.isVisible() and "rewritten" in window.banner.label.text())
    shot("claude-review-banner")
    next(b for b in window.banner.buttons if b.text() == "Review").click()
    settle(app, 1.0, lambda: window.compaction.dialog is not None)
    dialog = window.compaction.dialog
    dialog.resize(1300, 820)
    shot("claude-review", dialog)
    dialog.reject()


def hermes_shots(app, window, shot) -> None:
    """The Hermes views: the home's entries (the blocked one selected), the preview scrolled to what the
    stored session would not see on resume, and its staged write in the approvals window."""
    home = next(s for s in window.hub.sources.values() if s.kind == "hermes")
    key = BankKey(home.path, "default")
    window.banner.dismiss()
    window.select_bank(key)
    window.show_panel("memories")
    settle(app, 1.0, lambda: window.current == key and window._loading is None)
    window.memories.select_key(next(r.id for r in window.hub.rows(key) if "blocked" in r.tags))
    shot("hermes-memories")
    window.show_panel("preview")
    settle(app, 1.0, lambda: window.preview.last_result is not None)
    text = window.preview.view.section
    text.moveCursor(text.textCursor().MoveOperation.End)
    text.find("── resumed session", text.document().FindFlag.FindBackward)
    cursor = text.textCursor()
    cursor.clearSelection()
    text.setTextCursor(cursor)
    text.ensureCursorVisible()
    shot("hermes-preview")
    dialog = window.show_approvals()
    dialog.resize(900, 560)
    panel = dialog.panel
    settle(app, 1.0, lambda: any(w.id == "5f0c2a91" for _p, w in panel.items))
    panel.list.clearSelection()
    panel.list.setCurrentRow(next(r for r, (_p, w) in enumerate(panel.items) if w.id == "5f0c2a91"))
    shot("hermes-approvals", dialog)
    dialog.close()


def codex_shots(app, window, shot) -> None:
    """The Codex views: the memory as rows (a pending note selected), the project's AGENTS.md cut by the
    budget, the two exact blocks, and what a consolidation changed (made here on the copy) with its review."""
    from keepgui.backends.codex.bank import HOME_BANK
    from keepgui.backends.codex.demo import write_baseline

    home = next(s for s in window.hub.sources.values() if s.kind == "codex")
    key = BankKey(home.path, HOME_BANK)
    project = BankKey(home.path, next(n for n in window.hub.banks(home.path) if n != HOME_BANK))
    window.banner.dismiss()
    window.select_bank(key)
    window.show_panel("memories")
    settle(app, 1.0, lambda: window.current == key and window._loading is None)
    window.memories.select_key("note:2025-06-14T17-02-41-payment-provider-sandbox.md")
    shot("codex-memories")
    window.select_bank(project)
    settle(app, 1.0, lambda: window.current == project and window._loading is None)
    window.show_panel("rules")
    rules = window.rules
    row = next(i for i in range(rules.list.count()) if "services/api/AGENTS.md" in rules.list.item(i).text())
    rules.list.setCurrentRow(row)
    settle(app, 0.5)
    rules.editor.verticalScrollBar().setValue(rules.editor.verticalScrollBar().maximum())
    shot("codex-rules")
    window.show_panel("preview")
    settle(app, 1.0, lambda: window.preview.last_result is not None)
    shot("codex-preview")
    window.select_bank(key)
    window.show_panel("memories")
    settle(app, 1.0, lambda: window.current == key and window._loading is None)
    # what a consolidation does: a preference dropped, one reworded, one added; then Codex re-baselines
    root = os.path.join(home.env.home, "memories_v2")
    path = os.path.join(root, "memory_summary.md")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace(
        "- prefers small reviewable diffs over one large change; split refactors from behaviour changes\n", ""
    ).replace("one line under 72 characters", "one line under 50 characters")
    text = text.replace("## General Tips\n", "## General Tips\n- Friday deploys are fine when CI is green.\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    write_baseline(root, {"memory_summary.md": text.encode()}, int(time.time()))
    window.hub.refresh_bank(key)
    settle(app, 1.0, lambda: window.banner.isVisible() and "rewritten" in window.banner.label.text())
    next(b for b in window.banner.buttons if b.text() == "Review").click()
    settle(app, 1.0, lambda: window.compaction.dialog is not None)
    dialog = window.compaction.dialog
    dialog.resize(1300, 820)
    dialog._set_selection(dialog.plan.select("all"))
    shot("codex-review", dialog)
    dialog.reject()


def gemini_shots(app, window, shot) -> None:
    """The Gemini CLI views: the launch folder's memories, a project GEMINI.md with its @words marked, both
    exact elements, and the review after a running session wrote its stale copy over a kept fact."""
    home = next(s for s in window.hub.sources.values() if s.kind == "gemini")
    key = BankKey(home.path, window.hub.banks(home.path)[0])
    window.banner.dismiss()
    window.select_bank(key)
    window.show_panel("memories")
    settle(app, 1.0, lambda: window.current == key and window._loading is None)
    window.memories.select_key("note:deploy-notes.md")
    shot("gemini-memories")
    window.show_panel("rules")
    rules = window.rules
    rules.list.setCurrentRow(3)  # webshop/GEMINI.md: an import and an @alice that becomes a failed one
    settle(app, 1.0, lambda: len(rules._marks) == 2)
    shot("gemini-rules")
    window.show_panel("preview")
    settle(app, 1.0, lambda: window.preview.last_result is not None)
    shot("gemini-preview")
    dialog = window.show_approvals()  # the Auto Memory inbox beside the other agents' staged writes
    dialog.resize(1100, 700)
    panel = dialog.panel
    settle(app, 1.0, lambda: any(w.id.endswith("private/extraction.patch") for _p, w in panel.items))
    panel.list.clearSelection()
    panel.list.setCurrentRow(
        next(r for r, (_p, w) in enumerate(panel.items) if w.id.endswith("private/extraction.patch"))
    )
    shot("gemini-approvals", dialog)
    dialog.close()
    # a fact kept while a session runs; the session then writes its older copy of MEMORY.md back
    bank = window.hub.bank(key)
    memory = os.path.join(bank.discovery().private.memory, "MEMORY.md")
    with open(memory, encoding="utf-8") as fh:
        loaded = fh.read()
    window.perform(key, lambda b: b.keep("The release train leaves on Tuesdays at 14:00."), "Keep")
    with open(memory, "w", encoding="utf-8") as fh:
        fh.write(loaded + "- Agent: the payments webhook secret rotates monthly.\n")
    window.show_panel("memories")
    window.hub.refresh_bank(key)
    settle(app, 1.0, lambda: window.banner.isVisible() and "rewritten" in window.banner.label.text())
    shot("gemini-review-banner")
    next(b for b in window.banner.buttons if b.text() == "Review").click()
    settle(app, 1.0, lambda: window.compaction.dialog is not None)
    dialog = window.compaction.dialog
    dialog.resize(1300, 820)
    shot("gemini-review", dialog)
    dialog.reject()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "docs", "screenshots"))
