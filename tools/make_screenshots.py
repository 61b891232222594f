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

from keepgui.cli import build_parser
from keepgui.core.nanobot.backend import KEEP_BANK
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


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    app = make_app()
    args = build_parser().parse_args(["--demo", "--reload-command", ""])
    window = build_window(args, Settings(os.path.join(os.environ["KEEPGUI_HOME"], "s.json")), watch=False)
    window.resize(1440, 900)
    window.show()
    settle(app, 1.0, lambda: window.current is not None and window._loading is None)
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
    window.select_bank(BankKey(iii, "main"))
    window.close()
    window.hub.shutdown()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "docs", "screenshots"))
