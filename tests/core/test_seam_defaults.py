"""The seam's defaults and its records: a Change built once, documents that are only read need two
methods, every backend's source and bank inherit the defaults, and a row's provenance is one of its
labelled fields."""

from __future__ import annotations

import dataclasses
import inspect
import os

import pytest

from keepgui.backends.iii.record import Memory, Source
from keepgui.core import fsio, registry
from keepgui.core.errors import InvalidInput, NotFound, ReadOnly
from keepgui.core.source import (
    AgentContext,
    BankDefaults,
    Change,
    Document,
    DocumentDefaults,
    NoDocuments,
    Preview,
    SourceDefaults,
)


def test_a_change_is_built_once_and_never_altered():
    change = Change("/src", "bank", "Pin memory")
    for name, value in (("written", False), ("reverse", None), ("message", "x"), ("result", 1)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(change, name, value)
    later = dataclasses.replace(change, message="pinned")
    assert later.message == "pinned" and change.message == "" and later.text == change.text


class Readme(DocumentDefaults):
    """A read-only set in two methods, as a one-file backend writes it."""

    def __init__(self, path: str) -> None:
        self.path = path

    def list(self):
        return [("README.md", "Read me")]

    def read(self, name: str) -> Document:
        data, stamp = fsio.read_stamped(self.path)
        return Document(name, "Read me", self.path, (data or b"").decode(), stamp)


def test_documents_that_are_only_read_need_two_methods(tmp_path):
    path = str(tmp_path / "README.md")
    with open(path, "w") as fh:
        fh.write("# hello\n")
    docs = Readme(path)
    doc = docs.read("README.md")
    assert docs.texts() == [("README.md", "# hello\n")] and docs.current(doc)[0] == "# hello\n"
    assert docs.documents_of([path, "/elsewhere"]) == {"README.md"} and docs.documents_of(["/elsewhere"]) == set()
    assert docs.names is None and not docs.creatable and docs.budget("README.md", "x") is None
    assert docs.base_for_overwrite(doc, "# changed\n", doc.stamp).text == "# changed\n"
    with pytest.raises(ReadOnly, match="read-only"):
        docs.save(doc, "# mine\n")
    for refused in (lambda: docs.create("new.md"), lambda: docs.rename_document(doc, "x.md"), lambda: docs.delete(doc)):
        with pytest.raises(InvalidInput):
            refused()
    with open(path) as fh:
        assert fh.read() == "# hello\n"  # nothing was written
    assert NoDocuments().list() == [] and NoDocuments().texts() == []
    with pytest.raises(NotFound):
        NoDocuments().read("anything")


def test_every_backend_inherits_the_defaults():
    """Every built-in backend's source and bank inherit the seam's defaults (and so will a new one's)."""
    for backend in registry.declared():
        module = __import__(f"keepgui.backends.{backend.kind}.backend", fromlist=["*"])
        sources = [
            c for _n, c in inspect.getmembers(module, inspect.isclass) if getattr(c, "kind", None) == backend.kind
        ]
        assert sources and all(issubclass(c, SourceDefaults) for c in sources), backend.kind
        bank = __import__(f"keepgui.backends.{backend.kind}.bank", fromlist=["*"])
        banks = [
            c
            for _n, c in inspect.getmembers(bank, inspect.isclass)
            if c.__module__ == bank.__name__ and hasattr(c, "load")
        ]
        assert banks and all(issubclass(c, BankDefaults) for c in banks), backend.kind


def test_a_bank_must_say_what_its_agent_is_given():
    class NoPreview(BankDefaults):
        capabilities = None

    with pytest.raises(TypeError, match="preview"):
        NoPreview()


def test_the_default_context_is_the_preview_text():
    class Shown:
        text = "- tea\n- figs\n"

    class Bank(BankDefaults):
        def preview(self, query, pending=None, now_ms=None) -> Preview:
            return Shown()

    context: AgentContext = Bank().context()
    assert context.named_parts() == {"text": "- tea\n- figs\n"} and context.to_obj()["text"] == "- tea\n- figs\n"
    assert context.describe() == "--- text, exactly ---\n- tea\n- figs\n"
    with pytest.raises(InvalidInput, match="no options"):
        Bank().context(numbered=True)


def test_a_memorys_provenance_is_one_of_its_labelled_fields():
    base = {
        "id": "fp1",
        "text": "t",
        "entities": (),
        "tags": (),
        "confidence": "stated",
        "corroboration": 0,
        "pinned": False,
        "created_at": 1,
        "updated_at": 1,
        "revision": 0,
    }
    assert Memory(**base).fields == ()
    said = Memory(**base, source=Source(session_id="s-1", agent="hermes")).fields
    assert said == (("source", "session: s-1, agent: hermes"),)  # the detail pane: tests/ui/test_detail_fields.py


def test_a_whole_file_created_or_replaced_is_undone_exactly(tmp_path):
    """create_whole and replace_whole share one body: each refuses what changed since, and undoes."""
    from keepgui.core.defaults import create_whole, replace_whole
    from keepgui.core.errors import Conflict

    key = (str(tmp_path), "b")
    path = str(tmp_path / "note.md")
    made = create_whole(key, path, "one\n")
    assert (made.text, made.message) == ("Create note.md", f"{path} created")
    with pytest.raises(Conflict):
        create_whole(key, path, "again\n")  # never replaces a file made meanwhile
    _data, stamp = fsio.read_stamped(path)
    rewritten = replace_whole(key, path, "two\n", stamp)
    assert (rewritten.text, rewritten.message) == ("Rewrite note.md", f"{path} rewritten")
    assert (tmp_path / "note.md").read_text() == "two\n"
    with pytest.raises(Conflict):
        replace_whole(key, path, "three\n", stamp)  # the content it expected is gone
    with pytest.raises(Conflict):
        made.undo()  # the file is not what the create left any more: nothing removed
    back = rewritten.undo()
    assert (tmp_path / "note.md").read_text() == "one\n" and back.text == "Rewrite note.md"
    assert made.undo().text == "Remove note.md" and not os.path.exists(path)
