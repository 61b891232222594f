"""ARCHITECTURE.md's "How to add a backend", proved: a backend that is one folder (``tests/toy``) and
one registry line gets the window, every common command, ``context`` and a command of its own,
with no other file of keepgui touched."""

from __future__ import annotations

import json
import os

import pytest
from PySide6.QtCore import Qt

from keepgui import cli
from keepgui.core import registry
from keepgui.core.source import BankKey
from keepgui.ui.memorypanel.model import COLUMN_INDEX
from keepgui.ui.settings import Settings
from tests.conftest import OLD_FORM, run_cli
from tests.ui.conftest import window_args


@pytest.fixture
def toy():
    """The toy backend, registered by the one line a new backend needs (for this test only)."""
    from tests import toy

    registry.register(toy.BACKEND)
    yield toy.BACKEND
    registry.unregister(toy.BACKEND.kind)


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "jots"
    path.mkdir()
    (path / "jots.md").write_text("- Buy figs on Friday\n* Sam's birthday is in May\n- Buy figs on Friday\nscribble\n")
    (path / "README.md").write_text("# My jots\n")
    return str(path)


def read(folder: str, name: str = "jots.md") -> str:
    with open(os.path.join(folder, name), encoding="utf-8") as fh:
        return fh.read()


def test_the_window_shows_a_backend_it_never_heard_of(toy, folder, qtbot, tmp_path):
    from keepgui.ui.application import build_window
    from keepgui.ui.startup import explicit_sources

    assert registry.identify(folder).kind == "jots"
    assert explicit_sources(cli.parse_args(["--source", folder])) == [("jots", folder)]  # recognised
    assert explicit_sources(cli.parse_args(["--jots", folder])) == [("jots", folder)]  # its window option
    window = build_window(window_args(jots=[folder]), Settings(str(tmp_path / "settings.json")), watch=True)
    try:
        window.show()
        key = BankKey(folder, "jots")
        qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)
        proxy = window.memories.proxy
        texts = [proxy.index(r, COLUMN_INDEX["text"]).data() for r in range(proxy.rowCount())]
        assert texts == ["Buy figs on Friday", "Sam's birthday is in May", "Buy figs on Friday"]
        assert window.memories.table.isColumnHidden(COLUMN_INDEX["tags"])  # no tags: its Capabilities say so
        pin = proxy.index(0, COLUMN_INDEX["pinned"])
        proxy.setData(pin, Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
        assert read(folder).startswith("* Buy figs on Friday\n")
        assert window.undo_stack.undoText() == "Pin jot"
        window.undo_stack.undo()
        assert read(folder).startswith("- Buy figs on Friday\n")
        window.show_panel("preview")
        qtbot.waitUntil(lambda: window.preview.last_result is not None, timeout=5_000)
        assert window.preview.view.text.toPlainText().splitlines()[0] == "- Sam's birthday is in May"  # pinned first
        window.show_panel("rules")
        qtbot.waitUntil(lambda: window.rules.doc is not None)
        assert window.rules.editor.isReadOnly() and window.rules.doc.read_only  # DocumentDefaults: read-only
    finally:
        window.close()
        window.hub.shutdown()


def test_every_common_command_works_for_a_backend_it_never_heard_of(toy, folder, monkeypatch):
    where = ["--agent", "jots", "--source", folder]
    code, out, _ = run_cli(["problems", *where, "--json"])
    assert code == 1 and [p["message"] for p in json.loads(out)["problems"]] == ["not a jot: 'scribble'"]
    code, out, _ = run_cli(["memories", *where, "--json"])
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["text"] for r in rows] == [
        "Buy figs on Friday",
        "Sam's birthday is in May",
        "Buy figs on Friday",
    ]
    figs, sam = rows[0]["id"], rows[1]["id"]
    code, out, _ = run_cli(["keep", *where, "Call the plumber", "--json"])
    assert (
        code == 0
        and json.loads(out)["rows"][0]["text"] == "Call the plumber"
        and "- Call the plumber\n" in read(folder)
    )
    code, _out, err = run_cli(["keep", *where, "call the  plumber"])
    assert code == 1 and "Kept already" in err
    assert run_cli(["pin", *where, figs])[0] == 0 and read(folder).startswith("* Buy figs")
    assert run_cli(["unpin", *where, figs])[0] == 0 and read(folder).startswith("- Buy figs")
    code, out, _ = run_cli(["forget", *where, sam[:6]])
    assert code == 0 and "Sam" not in read(folder) and "Sam" in read(folder, "forgotten.md")
    assert f"keepgui restore --agent jots --source {folder} forgotten:{sam}" in out
    assert run_cli(["restore", *where, sam])[0] == 0 and "Sam" in read(folder)  # the start of what follows `:`
    assert run_cli(["edit", *where, figs, "--text", "Buy figs on Saturday"])[0] == 0
    assert "Buy figs on Saturday" in read(folder)
    code, _out, err = run_cli(["edit", *where, figs, "--tag", "food"])
    assert code == 1 and "a jot is one line of text: no tags" in err
    code, _out, err = run_cli(["review", *where])
    assert code == 1 and "nobody else writes jots.md" in err


def test_compact_context_and_its_own_command(toy, folder, monkeypatch):
    where = ["--agent", "jots", "--source", folder]
    before = read(folder)
    code, out, _ = run_cli(["compact", *where])
    assert code == 0 and "1 of 1 operations selected · 3 → 2 jots" in out and "Duplicate jots:" in out
    code, out, _ = run_cli(["compact", *where, "--apply"])
    assert code == 0 and read(folder).count("Buy figs") == 1 and "undo: keepgui compact --agent jots" in out
    code, out, _ = run_cli(["compact", *where, "--undo"])
    assert code == 0 and read(folder) == before  # byte for byte
    code, out, _ = run_cli(["context", *where])
    assert code == 0 and out.startswith(f"jots of {folder}\n--- prompt, exactly ---\n- Sam's birthday is in May\n")
    code, out, _ = run_cli(["context", *where, "--numbered", "--part", "prompt"])  # its own option
    assert code == 0 and out.startswith("1. Sam's birthday is in May\n")
    code, out, _ = run_cli(["context", *where, "--json"])
    assert code == 0 and json.loads(out)["prompt"].startswith("- Sam's")
    code, out, _ = run_cli(["jot-count", *where])  # its own command
    assert code == 0 and out == "3 kept, 1 pinned, 0 forgotten\n"
    monkeypatch.setenv("JOTS_HOME", folder)  # --agent alone: where the agent keeps them (its own variable)
    assert run_cli(["jot-count", "--agent", "jots", "--json"])[1] == '{"kept":3,"pinned":1,"forgotten":0}\n'
    code, out, err = run_cli(["memories", "--jots", folder])  # its window option given to a command: the old way
    assert code == 0 and OLD_FORM in err and "--agent jots --source DIR" in err and "Sam" in out
