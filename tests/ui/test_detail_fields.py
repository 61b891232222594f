"""The detail pane shows a row's labelled fields — an iii memory's provenance among them — without
reading any attribute by a backend's name (a row needs only the protocol's attributes)."""

from __future__ import annotations

from keepgui.backends.iii.record import Memory, Source
from keepgui.core.source import FileRow
from keepgui.ui.detail import DetailPanel


class Bare:
    """A row with the protocol's attributes and nothing else (no ``source``)."""

    id = "n1"
    text = "Buy figs"
    tags = ()
    entities = ()
    pinned = False
    invalid_at = None
    superseded_by = None
    corroboration = None
    confidence = None
    created_at = None
    updated_at = None
    revision = None
    position = 3
    fields = (("file", "notes/n1.txt"),)


def test_the_detail_pane_shows_labelled_fields_of_any_row(qtbot):
    panel = DetailPanel()
    qtbot.addWidget(panel)
    panel.show_record(Bare())  # before: the pane read `row.source`, which this row does not have
    text = panel.browser.toPlainText()
    assert "Buy figs" in text and "file" in text and "notes/n1.txt" in text
    memory = Memory(
        id="fp1",
        text="Prefers tea",
        entities=(),
        tags=(),
        confidence="stated",
        corroboration=0,
        pinned=False,
        source=Source(session_id="s-42", entry_id="e-7"),
        created_at=1,
        updated_at=1,
        revision=0,
    )
    panel.show_record(memory)
    assert "session: s-42, entry: e-7" in panel.browser.toPlainText()
    panel.show_record(FileRow(id="k", text="a keep.md entry"))
    assert "a keep.md entry" in panel.browser.toPlainText()
