"""One seam for every backend, seen from the window: one undo for every change, one echo check,
versioned settings, and a third backend that needs no change to any existing module.

The third backend here is small but real: a folder of ``*.txt`` notes, one note
per file; forgetting a note moves it into the folder's ``.forgotten/`` (undo moves
it back, refused when someone changed it meanwhile). It is registered through
the registry exactly as a backend package would be, and the window shows it
with its generic sidebar, table, detail, documents editor and preview.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from PySide6.QtCore import Qt

from keepgui.core import fsio, registry
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.registry import Backend, OpenOptions, Verdict
from keepgui.core.source import (
    COMPACT,
    CREATE,
    CREATE_BANK,
    DISK,
    EDIT,
    ENTITIES,
    HISTORY,
    PIN,
    QUERY,
    RANKED,
    REVIEW,
    TAGS,
    TRASH_BANK,
    WHAT_IF,
    BankDefaults,
    BankKey,
    BankSummary,
    Capabilities,
    Change,
    Document,
    FileRow,
    Hint,
    Listing,
    RowDelta,
    SourceDefaults,
    WatchPlan,
    stamps_of,
)
from keepgui.ui.memorypanel.model import COLUMN_INDEX, KeyRole, RecordRole
from keepgui.ui.settings import VERSION, Settings


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


# ---------------------------------------------------------------------- one undo for every change


def test_a_rule_save_is_undone_and_its_echo_is_not_reported_as_an_outside_change(make_window, demo_copy, qtbot):
    window = make_window(demo_copy.iii)
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path, before = rules.doc.path, read(rules.doc.path)
    notes = []
    window.hub.note.connect(notes.append)
    rules.editor.setPlainText(rules.doc.text + "- always cite the source\n")
    assert rules.save()
    assert read(path).endswith(b"- always cite the source\n")
    assert window.undo_stack.undoText() == f"Save {rules.doc.title}"
    qtbot.wait(1200)  # the watcher's echo of the save arrives, and is recognised as ours
    assert not [n for n in notes if "changed on disk" in n]
    window.undo_stack.undo()
    assert read(path) == before
    qtbot.waitUntil(lambda: rules.editor.toPlainText() == before.decode(), timeout=5_000)  # the editor follows
    window.undo_stack.redo()
    assert read(path).endswith(b"- always cite the source\n")
    with open(path, "ab") as fh:
        fh.write(b"- added by hand\n")
    window.undo_stack.undo()
    assert read(path).endswith(b"- added by hand\n")  # refused: nothing overwritten
    assert window.banner.isVisible() and "failed" in window.banner.label.text()


def test_trashing_a_bank_is_undone(make_window, demo_copy, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window = make_window(demo_copy.iii, bank="blog")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    window.trash_bank()
    assert not os.path.exists(os.path.join(demo_copy.iii, "blog"))
    assert window.undo_stack.undoText() == "Trash bank blog"
    window.undo_stack.undo()
    assert os.path.isdir(os.path.join(demo_copy.iii, "blog"))
    qtbot.waitUntil(lambda: "blog" in window.hub.banks(demo_copy.iii), timeout=10_000)


def test_settings_of_version_1_are_migrated(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "worker/0123456789abcdef": {"recall_limit": 2},
                "sources": [{"path": "/old/data"}, {"kind": "nanobot", "path": "/ws"}],
            }
        )
    )
    settings = Settings(str(path))
    assert settings.get("version") == VERSION == 2
    assert settings.get("source/0123456789abcdef") == {"recall_limit": 2}
    assert settings.sources() == [{"kind": "iii", "path": "/old/data"}, {"kind": "nanobot", "path": "/ws"}]
    settings.save()
    assert json.loads(path.read_text())["version"] == 2  # written back in the new form


# ---------------------------------------------------------------------- a third backend


NOTES = Capabilities(
    missing={
        PIN: "a note is a file: it has no pin",
        TAGS: "notes have no tags",
        ENTITIES: "notes have no entities",
        HISTORY: "a note has no revisions",
        RANKED: "notes have no ranking",
        CREATE: "keep a note instead",
        QUERY: "every note is read",
        WHAT_IF: "nothing to try out",
        EDIT: "notes are edited as documents",
        COMPACT: "notes are never compacted",
        REVIEW: "nobody else rewrites notes",
    },
    fields=frozenset({"pinned", "live", "text", "updated"}),
    ordered=True,
    noun="note",
    nouns="notes",
    retire="Forget",
)


class NotesBank(BankDefaults):
    """The notes of a folder: one ``*.txt`` file per row; forgotten notes wait in ``.forgotten/``
    (what it cannot do, BankDefaults refuses with the reason its Capabilities give)."""

    def __init__(self, source: NotesSource) -> None:
        self.source = source
        self.key = BankKey(source.path, "notes")
        self.capabilities = NOTES
        self.lock = threading.RLock()
        self._rows: list[Any] | None = None

    def _read(self) -> list[Any]:
        rows = []
        for live, folder in ((True, self.source.path), (False, os.path.join(self.source.path, ".forgotten"))):
            if not os.path.isdir(folder):
                continue
            for name in sorted(n for n in os.listdir(folder) if n.endswith(".txt")):
                data, stamp = fsio.read_stamped(os.path.join(folder, name))
                rows.append(
                    FileRow(
                        id=name if live else "forgotten:" + name,
                        text=data.decode().strip(),
                        position=len(rows),
                        updated_at=stamp.mtime_ns // 1_000_000,
                        invalid_at=None if live else stamp.mtime_ns // 1_000_000,
                    )
                )
        return rows

    def load(self, progress=None, *, full: bool = False) -> Change:
        with self.lock:
            before, self._rows = self._rows, self._read()
        changed = full or before != self._rows
        return Change(
            self.source.path, "notes", origin=DISK, rows=RowDelta(self._rows, (), True) if changed else RowDelta()
        )

    def is_loaded(self) -> bool:
        return self._rows is not None

    def rows(self):
        return list(self._rows or [])

    def summary(self) -> BankSummary:
        live = sum(1 for r in self._rows or [] if r.invalid_at is None)
        return BankSummary(f"{NOTES.count(live)}")

    def documents(self) -> NoteDocs:
        return NoteDocs(self.source)

    def preview(self, query: str, pending=None, now_ms=None) -> object:
        class Shown:
            text = "\n".join(f"- {r.text}" for r in self._rows or [] if r.invalid_at is None)

        return Shown()

    def _move(self, text: str, moves: list[tuple[str, str]]) -> Change:
        with self.lock:
            for src, dst in moves:
                if os.path.exists(dst):
                    raise Conflict(dst, fsio.Stamp.missing(), fsio.current_stamp(dst))
                fsio.make_dirs(os.path.dirname(dst))
                fsio.rename_durably(src, dst)
            self._rows = self._read()
        return Change(
            self.source.path,
            "notes",
            text,
            rows=RowDelta(self._rows, (), True),
            files=stamps_of(*[p for move in moves for p in move]),
            reverse=lambda: self._move(text, [(dst, src) for src, dst in reversed(moves)]),
        )

    def set_live(self, keys: Sequence[str], live: bool) -> Change:
        gone = os.path.join(self.source.path, ".forgotten")
        if live:
            moves = [
                (os.path.join(gone, k.split(":", 1)[1]), os.path.join(self.source.path, k.split(":", 1)[1]))
                for k in keys
            ]
            return self._move(NOTES.describe("Restore", len(moves)), moves)
        moves = [(os.path.join(self.source.path, k), os.path.join(gone, k)) for k in keys]
        return self._move(f"Forget {NOTES.count(len(moves))}", moves)

    def keep(self, text: str, *, force: bool = False, replace: bool = False) -> Change:
        path = os.path.join(self.source.path, f"{len(self._rows or []):03d}.txt")
        stamp = fsio.atomic_write(path, text.encode() + b"\n", expect=fsio.Stamp.missing())
        with self.lock:
            self._rows = self._read()

        def back() -> Change:
            fsio.remove_file(path, expect=stamp)
            with self.lock:
                self._rows = self._read()
            return Change(self.source.path, "notes", "Keep note", rows=RowDelta(self._rows, (), True))

        return Change(
            self.source.path,
            "notes",
            f"Keep “{text}”",
            rows=RowDelta(self._rows, (), True),
            files=stamps_of(path),
            message=f"Kept: {text}",
            reverse=back,
        )

    def check_keep(self, text: str):
        return (Hint("ok", "A new note"),)


class NoteDocs:
    """One document: the folder's README.md."""

    creatable = False
    why_not_create = "a notes folder has one README"
    empty_deletes = False
    previews_drafts = False
    names = None

    def __init__(self, source: NotesSource) -> None:
        self.path = os.path.join(source.path, "README.md")
        self.source = source

    def list(self):
        return [("README.md", "README.md")]

    def texts(self):
        return [("README.md", self.read("README.md").text)]

    def read(self, name: str) -> Document:
        data, stamp = fsio.read_stamped(self.path)
        return Document("README.md", "README.md", self.path, (data or b"").decode(), stamp)

    def current(self, doc):
        data, stamp = fsio.read_stamped(doc.path)
        return (None if data is None else data.decode()), stamp

    def pre_save_warnings(self, doc):
        return []

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        fsio.atomic_write(self.path, text.encode(), expect=doc.stamp)
        saved = self.read("README.md")
        return Change(
            self.source.path,
            "notes",
            "Save README.md",
            documents=frozenset({"README.md"}),
            files=stamps_of(self.path),
            result=saved,
            reverse=lambda: self.save(saved, doc.text),
        )

    def base_for_overwrite(self, doc, on_disk, stamp):
        return doc.with_disk(on_disk or "", stamp)

    def create(self, name):
        raise InvalidInput(self.why_not_create)

    rename_document = delete = create

    def budget(self, name, text, texts=None):
        return None

    def documents_of(self, paths):
        return {"README.md"} if self.path in paths else set()


class NotesSource(SourceDefaults):
    kind = "notes"
    capabilities = Capabilities(missing={CREATE_BANK: "one folder, one bank", TRASH_BANK: "notes are not trashed"})
    bank_names = None

    def __init__(self, path: str, options: OpenOptions) -> None:
        self.path = os.path.abspath(path)
        self.label = f"notes · {os.path.basename(self.path)}"
        self.notes = NotesBank(self)

    def scan(self) -> Listing:
        return Listing(("notes",), None)

    def bank(self, name: str) -> NotesBank:
        if name != "notes":
            raise NotFound(name)
        return self.notes

    def classify(self, changed, listed) -> WatchPlan:
        names = {"/".join(p) for p in changed}
        docs = {"notes": frozenset({"README.md"})} if "README.md" in names else {}
        return WatchPlan(
            refresh=frozenset({"notes"}) if any(n.endswith(".txt") for n in names) else frozenset(), documents=docs
        )


NOTES_BACKEND = Backend(
    kind="notes",
    label="notes folder",
    icon="document",
    open=NotesSource,
    identify=lambda path: (
        Verdict("notes", "a notes folder", "it has .txt notes")
        if any(n.endswith(".txt") for n in os.listdir(path))
        else Verdict(None, "a notes folder", "no .txt file")
    ),
    discover=lambda environ: [],
    window_arg="notes",
    start_rank=-1,
    keep_rank=-1,
)


@pytest.fixture
def notes_backend(monkeypatch):
    """The notes backend registered through the registry, for this test only."""
    known = registry._backends()
    monkeypatch.setitem(known, "notes", NOTES_BACKEND)
    return NOTES_BACKEND


@pytest.fixture
def notes_folder(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(("Buy figs on Friday", "Sam's birthday is in May", "The boiler code is 4711")):
        (folder / f"{i:03d}.txt").write_text(text + "\n")
    (folder / "README.md").write_text("# Notes\n")
    return folder


def test_a_third_backend_is_one_registry_entry_and_the_window_shows_it(notes_backend, notes_folder, qtbot, tmp_path):
    import argparse

    from keepgui.ui.application import build_window
    from keepgui.ui.quickkeep import open_quick_keep

    assert registry.identify(str(notes_folder)).kind == "notes"
    args = argparse.Namespace(
        demo=False,
        data_dir=None,
        workspace=None,
        notes=[str(notes_folder)],
        bank=None,
        panel=None,
        query=None,
        screenshot=None,
        reload_command="",
    )
    window = build_window(args, Settings(str(tmp_path / "settings.json")), watch=True)
    try:
        window.show()
        key = BankKey(str(notes_folder), "notes")
        qtbot.waitUntil(lambda: window.current == key and window._loading is None, timeout=10_000)
        # sidebar and table, written once, show it; what it cannot do is greyed with its reason
        index = window.tree_model.index_of_bank(key)
        assert index.isValid() and index.data(Qt.ItemDataRole.ToolTipRole).startswith("notes\n3 notes")
        proxy = window.memories.proxy
        assert [proxy.index(r, COLUMN_INDEX["text"]).data() for r in range(proxy.rowCount())] == [
            "Buy figs on Friday",
            "Sam's birthday is in May",
            "The boiler code is 4711",
        ]
        pin = proxy.index(0, COLUMN_INDEX["pinned"])
        assert (
            not (pin.flags() & Qt.ItemFlag.ItemIsEnabled)
            and pin.data(Qt.ItemDataRole.ToolTipRole) == "a note is a file: it has no pin"
        )
        assert window.memories.table.isColumnHidden(COLUMN_INDEX["tags"])
        assert window.memories.search.placeholderText() == "search 3 notes (fuzzy, as you type)…"
        # forget one through the live toggle: one undo step, taken back exactly
        forgotten = proxy.index(1, 0).data(KeyRole)
        proxy.setData(
            proxy.index(1, COLUMN_INDEX["live"]), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole
        )
        assert os.path.exists(notes_folder / ".forgotten" / forgotten)
        assert window.undo_stack.undoText() == "Forget 1 note" and proxy.rowCount() == 2
        window.undo_stack.undo()
        assert os.path.exists(notes_folder / forgotten) and proxy.rowCount() == 3
        # its preview, with no adapter of its own, shows the injected text
        window.show_panel("preview")
        qtbot.waitUntil(lambda: window.preview.last_result is not None, timeout=5_000)
        assert window.preview.view.text.toPlainText().splitlines()[0] == "- Buy figs on Friday"
        assert not window.preview.query.isEnabled()
        # its document in the editor, saved as one undo step
        window.show_panel("rules")
        qtbot.waitUntil(lambda: window.rules.doc is not None)
        window.rules.editor.setPlainText("# Notes\nKept by hand.\n")
        assert window.rules.save()
        assert (notes_folder / "README.md").read_text() == "# Notes\nKept by hand.\n"
        window.undo_stack.undo()
        assert (notes_folder / "README.md").read_text() == "# Notes\n"
        # Quick keep offers it, first (its keep rank), and keeps through the window's undo stack
        popup = open_quick_keep(window)
        qtbot.addWidget(popup)
        assert popup.target_key() == key or popup.set_target(key)
        popup.edit.setText("Call the plumber")
        assert popup.keep()
        assert (notes_folder / "003.txt").read_text() == "Call the plumber\n"
        qtbot.waitUntil(lambda: proxy.rowCount() == 4, timeout=5_000)
        window.undo_stack.undo()
        assert not (notes_folder / "003.txt").exists()
        # a note added by someone else shows up through the watcher
        (notes_folder / "004.txt").write_text("Added by hand\n")
        qtbot.waitUntil(
            lambda: any(proxy.index(r, 0).data(RecordRole).text == "Added by hand" for r in range(proxy.rowCount())),
            timeout=10_000,
        )
        qtbot.wait(50)
    finally:
        if window.rules.dirty:
            window.rules.discard()
        window.close()
        window.hub.shutdown()
