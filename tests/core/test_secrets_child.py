"""The secrets child: a window's scan looks for secrets in a child process (the library's plugins are
Python, and a whole bank's scan on a window's thread holds the interpreter lock its paints wait for)."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import pytest

from keepgui.core import childwork
from keepgui.core.secrets import scan
from keepgui.core.secrets.scan import SECRETS_CHILD, Scanner
from tests.secrets_corpus import lookalikes, planted


def _texts() -> list[str]:
    texts = [f"note {i}: {line}" for i, (_kind, _secret, line) in enumerate(planted())]
    texts += [f"prose {i}: {text}" for i, (_name, text) in enumerate(lookalikes())]
    return texts


def _scanner(tmp_path, name: str) -> Scanner:
    source = SimpleNamespace(path=str(tmp_path / "source"), kind="test")
    return Scanner(source, data_root=str(tmp_path / name / "data"), cache_root=str(tmp_path / name / "cache"))  # type: ignore[arg-type]


@pytest.fixture
def children():
    childwork.use_children(True)
    yield
    childwork.use_children(False)


def test_a_window_looks_for_secrets_in_the_child_and_finds_what_its_own_process_finds(tmp_path, children, monkeypatch):
    texts = _texts()
    childwork.use_children(False)
    here = _scanner(tmp_path, "here").hits_of(texts)
    childwork.use_children(True)
    scanner = _scanner(tmp_path, "child")

    def no_detector() -> None:
        raise AssertionError("looked for in the window's process")

    monkeypatch.setattr(scanner, "detector", no_detector)
    got = scanner.hits_of(texts)
    assert childwork.worker(*SECRETS_CHILD).pid is not None
    assert got == here
    assert sum(map(len, got)) >= 24  # every planted secret at least
    assert scanner.hits_of(texts) == here  # the second time from the cache: no child call needed
    assert scanner.hits(texts[0]) == here[0]


def test_the_editor_s_marks_come_from_the_child_and_the_library_is_never_imported_here(children, monkeypatch):
    """In a window's process the editor's marks are looked for in the child too: the library (and the
    hundred and forty modules it imports) stays out of the window's process."""
    monkeypatch.setattr(scan, "_detectors", threading.local())
    monkeypatch.setattr(scan.Detector, "__init__", _no_detector_here)
    _kind, secret, line = planted()[0]
    [mark] = scan.secret_marks(f"# Notes\n\n{line}\n")
    assert "A secret (AWS Access Key" in mark.note and secret not in mark.note


def _no_detector_here(self) -> None:
    raise AssertionError("a detector made in the window's process")


def test_a_child_that_fails_leaves_the_scan_to_the_window_with_a_note(tmp_path, children, monkeypatch, caplog):
    texts = _texts()
    childwork.use_children(False)
    here = _scanner(tmp_path, "here").hits_of(texts)
    childwork.use_children(True)

    class Broken:
        def call(self, *args, **kwargs):
            raise childwork.ChildFailed("the secrets process stopped (exit status -9)")

    monkeypatch.setattr(childwork, "worker", lambda *args: Broken())
    with caplog.at_level(logging.WARNING, logger="keepgui.core.secrets.scan"):
        got = _scanner(tmp_path, "fallback").hits_of(texts)
    assert got == here
    assert "secrets are looked for in the window's process: the secrets process stopped" in caplog.text
