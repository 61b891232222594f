"""The nanobot Preview shows a keep.md line of megabytes cut, without freezing the window (issue 24,
item 6: a 1 MB line cost 37 s of frozen window); copying still gives the exact text."""

from __future__ import annotations

import time
from types import SimpleNamespace

from keepgui.core.textdiff import LONGEST_SHOWN_LINE
from keepgui.ui.adapters.nanobot import NanobotPreviewView


def preview_with(text: str) -> SimpleNamespace:
    part = SimpleNamespace(
        label="keep.md", injected=False, size_bytes=len(text), tokens=len(text) // 4, status="", text=text
    )
    return SimpleNamespace(
        parts=[part],
        memory_prompt=text,
        notes=(),
        not_reproduced=(),
        nanobot_version="",
        injected_bytes=0,
        injected_tokens=0,
    )


def test_a_megabyte_line_is_shown_cut_and_fast(qtbot):
    view = NanobotPreviewView(None)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    line = "- " + "word " * 200_000  # one keep.md line of a megabyte
    start = time.perf_counter()
    view.show_result(preview_with(line + "\n- Has a cat\n"))
    qtbot.wait(50)  # the layout happens as the event loop runs
    assert time.perf_counter() - start < 3
    shown = view.section.toPlainText()
    assert "more characters on this line not shown" in shown and "- Has a cat" in shown
    assert max(len(x) for x in shown.split("\n")) < LONGEST_SHOWN_LINE + 100
    assert view.injected_text(preview_with(line), "prompt") == line  # the copy is exact
