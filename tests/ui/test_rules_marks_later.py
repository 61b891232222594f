"""The documents editor marks secrets without importing the detector's library on the GUI thread:
``detect-secrets`` pulls in ``requests`` (half a second), so the first document shown before the
library was imported anywhere is shown first and its marks (the secrets' included) are worked out on a
lane's thread, never the GUI thread's."""

from __future__ import annotations

import threading

from keepgui.core import registry
from keepgui.core.secrets import scan
from keepgui.core.source import BankKey
from keepgui.ui import rules
from tests.secrets_corpus import secret_named


def test_first_marks_are_made_off_the_gui_thread(make_window, demo_copy, qtbot, monkeypatch):
    source = registry.open_source("iii", demo_copy.iii, registry.OpenOptions(reload_command=""))
    docs = source.bank("main").documents()
    name = docs.list()[0][0]
    secret = secret_named("groq")[0]
    docs.save(docs.read(name), docs.read(name).text + f"\nThe Groq key is {secret}\n")

    gui = threading.get_ident()
    made_on: list[int] = []

    def secret_marks(text: str) -> list:
        made_on.append(threading.get_ident())
        return scan.secret_marks(text)

    monkeypatch.setattr(rules, "secret_marks", secret_marks)
    window = make_window(demo_copy.iii, watch=False)
    window.tabs.setCurrentWidget(window.rules)
    window.rules.open_document(window.hub.bank(BankKey(demo_copy.iii, "main")).documents().list()[0][0])
    qtbot.waitUntil(lambda: window.rules.doc is not None, timeout=5_000)
    qtbot.waitUntil(lambda: any("secret" in m.note for m in window.rules._marks), timeout=20_000)
    assert made_on and gui not in made_on  # the library was imported, and every mark made, on a lane's thread
    assert secret not in next(m.note for m in window.rules._marks if "secret" in m.note)
