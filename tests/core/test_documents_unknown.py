"""Every backend's documents refuse a name they do not have with keepgui's own error (which the window
and the command line say plainly), never a KeyError: the documents editor may ask for a name of the
bank shown a moment before (a list being replaced while the person clicks)."""

from __future__ import annotations

import pytest

from keepgui.core import registry
from keepgui.core.errors import KeepguiError

PLACES = {
    "iii": ("iii", None, None),
    "nanobot": ("nanobot", None, None),
    "hermes": ("hermes", None, None),
    "claude": ("claude", "claude_home", "claude_project"),
    "codex": ("codex", "codex_home", "codex_project"),
    "gemini": ("gemini", "gemini_home", "gemini_project"),
}


@pytest.mark.parametrize("kind", sorted(PLACES))
def test_an_unknown_document_is_refused_plainly(kind, demo_copy):
    import os

    attribute, home, project = PLACES[kind]
    path = dict(demo_copy.sources)[attribute]
    environ = dict(os.environ)
    if home:
        environ["HOME"] = demo_copy.places[home] if kind != "codex" else os.path.dirname(demo_copy.places[home])
    options = registry.OpenOptions(
        reload_command="", project=demo_copy.places[project] if project else None, environ=environ
    )
    source = registry.open_source(kind, path, options)
    bank = source.bank(source.scan().names[0])
    docs = bank.documents()
    known = [name for name, _title in docs.list()]
    assert known, kind
    for name in known:  # every name it lists opens
        docs.read(name)
    for name in ("style", "no-such-document.md", "../../etc/passwd"):
        if name in known:
            continue
        with pytest.raises(KeepguiError):
            docs.read(name)
