"""The rule editor and the live preview: exact parity with the CLI, what-if, budgets, conflicts."""

from __future__ import annotations

import hashlib
import io
import json
import os

import pytest
from PySide6.QtWidgets import QMessageBox

from keepgui.cli import Context, build_parser, run_command
from keepgui.ui import rules as rules_module, threeway

NOW = 1_750_000_000_000


def cli_preview(data_dir, bank, query):
    args = build_parser().parse_args(
        [
            "--data-dir",
            str(data_dir),
            "--reload-command",
            "",
            "preview",
            query,
            "--bank",
            bank,
            "--now",
            str(NOW),
            "--json",
        ]
    )
    out = io.StringIO()
    assert run_command(args, Context(args, out, io.StringIO())) == 0
    return out.getvalue().strip()


def wait_preview(qtbot, pane, predicate=lambda r: True, timeout=10_000):
    qtbot.waitUntil(
        lambda: (
            pane.last_result is not None
            and not isinstance(pane.last_result, Exception)
            and bool(predicate(pane.last_result))
        ),
        timeout=timeout,
    )
    return pane.last_result


def digest(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


@pytest.fixture
def window(make_window, demo_copy):
    win = make_window(demo_copy.iii, bank="main")
    win.preview.now_ms = NOW
    return win


@pytest.mark.parametrize("query", ["when do I publish articles", "formal writing", "who is the user?", ""])
def test_typing_a_query_matches_the_cli_exactly(window, demo_copy, qtbot, query):
    pane = window.preview
    window.show_panel("preview")
    pane.query.setEditText("")
    qtbot.keyClicks(pane.query.lineEdit(), query)
    result = wait_preview(
        qtbot,
        pane,
        lambda r: (
            r.query_tokens == __import__("keepgui.backends.iii.recall", fromlist=["query_tokens"]).query_tokens(query)
        ),
    )
    assert result.to_json(notice=True) == cli_preview(demo_copy.iii, "main", query)
    assert pane.view.message.toPlainText() == (result.message or "(no message: nothing would be appended)")
    assert pane.view.hits.count() == len(result.memories)
    assert "Ranked by words" in pane.summary.text() and "Lexical only" not in pane.summary.text()  # #12.7; 23.12


def test_unsaved_rule_edit_changes_the_preview_not_the_file(window, demo_copy, qtbot):
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path = rules.doc.path
    before = digest(path)
    rules.editor.setPlainText(rules.doc.text + "\n- Always answer with a haiku.\n")
    result = wait_preview(qtbot, window.preview, lambda r: "haiku" in r.system_prompt_section)
    assert "haiku" in result.system_prompt_section
    assert "What-if view" in window.preview.whatif_label.text() and not window.preview.whatif_label.isHidden()
    assert digest(path) == before and rules.dirty
    rules.editor.setPlainText(rules.doc.text)  # back to the saved text: the what-if goes away
    wait_preview(qtbot, window.preview, lambda r: "haiku" not in r.system_prompt_section)
    assert window.preview.whatif_label.isHidden()


def test_rule_over_budget_shows_the_marker_and_the_truncation_point(window, demo_copy, qtbot):
    view = window.preview.view
    view.set_config(view.config.replace(max_rule_chars=300), emit=True)
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None and rules.doc.name == "learned")
    rules.editor.setPlainText("# Learned\n" + "x" * 1000 + "\n")
    rules._refresh_derived()
    qtbot.waitUntil(lambda: not rules.derived_pending)  # worked out off the GUI thread
    place = rules.meter.place
    assert place is not None and place.status == "truncated" and place.sent == 300
    assert rules.meter.budget.cut_char == 300  # no leading whitespace: the cut is at the 300th byte of the text
    assert "TRUNCATED after byte 300" in rules.meter.label.text()
    shaded = rules.editor.extraSelections()
    assert shaded and shaded[0].cursor.selectionStart() == 300
    # the preview of the draft (an earlier one, of the text on disk, has a rule omitted: truncated too)
    cut = "[rule truncated: over the 300 char injection budget"
    result = wait_preview(qtbot, window.preview, lambda r: r.rules_truncated and cut in r.system_prompt_section)
    assert cut in result.system_prompt_section
    assert "## style [omitted: over the injection budget]" in result.system_prompt_section


def test_a_long_document_is_shown_plain_and_says_so(make_window, demo_copy, qtbot):
    from keepgui.ui.rules import HIGHLIGHT_MAX_LINES, PLAIN_NOTICE

    long_rule = os.path.join(demo_copy.iii, "main", "rules", "learned.md")
    with open(long_rule, "a", encoding="utf-8") as fh:
        fh.writelines(f"- **fact** number {i}\n" for i in range(HIGHLIGHT_MAX_LINES))
    win = make_window(demo_copy.iii, bank="main")
    win.show_panel("rules")
    rules = win.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    rules.open_document("learned")
    qtbot.waitUntil(lambda: not rules.loading)  # a long text is put into the editor piece by piece
    with open(long_rule, encoding="utf-8") as fh:
        assert rules.editor.toPlainText() == fh.read()
    assert rules.highlighter.document() is None  # set without a pass of the highlighter over every line
    assert PLAIN_NOTICE in rules.notices.text()
    assert rules.rendered.toPlainText() == PLAIN_NOTICE  # nor rendered (markdown-it and the HTML: seconds at 1 MB)
    rules.open_document("style")  # a short one is highlighted again, and the notice goes
    assert rules.highlighter.document() is rules.editor.document()
    assert PLAIN_NOTICE not in rules.notices.text()
    assert "Write in a formal register" in rules.rendered.toPlainText()
    qtbot.waitUntil(lambda: any(b.layout().formats() for b in _blocks(rules.editor.document())))


def _blocks(document):
    block = document.firstBlock()
    while block.isValid():
        yield block
        block = block.next()


def test_cut_point_counts_the_leading_white_space_that_is_not_sent():
    from keepgui.backends.iii.documents import place_rules

    text = "\n \u3000 " + "é" * 400  # U+3000 is white space to Rust's trim, not to a naive strip
    place = place_rules([("a", text)], 301)["a"]
    assert place.outcome.status == "truncated" and place.outcome.injected == 300
    assert place.cut_char == 4 + 150  # four leading white-space characters, then 150 two-byte characters


def test_multibyte_rule_cut_lands_on_a_char_boundary(window, qtbot):
    view = window.preview.view
    view.set_config(view.config.replace(max_rule_chars=301), emit=True)
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    rules.editor.setPlainText("é" * 400)
    rules._refresh_derived()
    qtbot.waitUntil(lambda: not rules.derived_pending)  # worked out off the GUI thread
    assert rules.meter.place.sent == 300 and rules.meter.budget.cut_char == 150


def test_external_change_reloads_a_clean_buffer_and_warns_a_dirty_one(window, demo_copy, qtbot):
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path = rules.doc.path
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# Learned\n- Edited by hand\n")
    qtbot.waitUntil(lambda: rules.editor.toPlainText() == "# Learned\n- Edited by hand\n", timeout=10_000)
    rules.editor.setPlainText(rules.editor.toPlainText() + "- my unsaved line\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# Learned\n- Edited by hand again\n")
    qtbot.waitUntil(lambda: rules.banner.isVisible(), timeout=10_000)
    assert "changed on disk" in rules.banner.label.text()
    assert "my unsaved line" in rules.editor.toPlainText()  # nothing discarded


def test_a_change_on_disk_is_read_off_the_gui_thread(window, qtbot, monkeypatch):
    """A Change naming documents lists them again and reads the stamp of the one shown on the rules
    lane: on the GUI thread, a Claude Code project's listing resolved each file's place while its load
    ran beside it (tens of ms a change)."""
    import threading

    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None and not rules.listing)
    docs, gui = rules.docs, threading.get_ident()
    threads = []
    for name in ("list", "current"):
        real = getattr(docs, name)
        monkeypatch.setattr(
            docs, name, lambda *a, _real=real, **k: threads.append(threading.get_ident()) or _real(*a, **k)
        )
    new_rule = os.path.join(os.path.dirname(rules.doc.path), "zz-added-by-hand.md")
    with open(new_rule, "w", encoding="utf-8") as fh:
        fh.write("# Added\n- by hand\n")
    shown = rules.doc
    rules._changed_on_disk()
    assert rules.listing  # looked at in the background
    qtbot.waitUntil(lambda: not rules.listing, timeout=10_000)
    assert threads and gui not in threads
    names = [rules.list.item(i).data(rules_module.NameRole) for i in range(rules.list.count())]
    assert any("zz-added-by-hand" in str(n) for n in names)  # the new rule is listed
    assert rules.doc is shown  # the open document, unchanged on disk, is kept as it was


def test_a_clean_document_changed_on_disk_is_reloaded_with_what_was_read_off_the_gui_thread(window, qtbot, monkeypatch):
    """The shown document, unedited, changed on disk: the listing and its new text are read on the rules
    lane and shown; the GUI thread reads nothing (a Claude Code project's listing resolved each file's
    place on it, ~0.2 s at 5,000 topic files)."""
    import threading

    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None and not rules.listing)
    docs, gui = rules.docs, threading.get_ident()
    threads = []
    for name in ("list", "current", "read"):
        real = getattr(docs, name)
        monkeypatch.setattr(
            docs, name, lambda *a, _real=real, **k: threads.append(threading.get_ident()) or _real(*a, **k)
        )
    shown = rules.doc
    with open(shown.path, "a", encoding="utf-8") as fh:
        fh.write("- added on disk\n")
    notes: list[str] = []
    rules.note.connect(notes.append)
    rules._changed_on_disk()
    qtbot.waitUntil(lambda: not rules.listing and rules.doc is not None and rules.doc is not shown, timeout=10_000)
    assert rules.doc.name == shown.name and rules.doc.text.endswith("- added on disk\n")
    qtbot.waitUntil(lambda: rules.editor.toPlainText() == rules.doc.text, timeout=10_000)
    assert len(threads) >= 3 and gui not in threads  # listed, looked at and read, all on the rules lane
    assert any("changed on disk: reloaded" in n for n in notes)


def test_save_against_a_changed_file_is_refused_and_opens_the_three_way_view(window, qtbot, monkeypatch):
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path = rules.doc.path
    rules.editor.setPlainText("# Learned\n- mine\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# Learned\n- theirs\n")
    seen = {}

    def fake_exec(dialog):
        seen["panes"] = dialog.diff.toPlainText()
        dialog.choice = threeway.KEEP_EDITING
        return 0

    monkeypatch.setattr(threeway.ThreeWayDialog, "exec", fake_exec)
    assert rules.save() is False
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == "# Learned\n- theirs\n"  # nothing overwritten
    assert "-- theirs" in seen["panes"] and "+- mine" in seen["panes"]

    def overwrite(dialog):
        dialog.choice = threeway.OVERWRITE
        return 1

    monkeypatch.setattr(threeway.ThreeWayDialog, "exec", overwrite)
    assert rules.save() is True
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == "# Learned\n- mine\n"


def test_workspace_document_overwrite_saves_over_exactly_the_version_shown(make_window, demo_copy, qtbot, monkeypatch):
    from keepgui.backends.nanobot.bank import KEEP_BANK
    from keepgui.core.source import BankKey

    window = make_window(demo_copy.iii, bank=None, workspace=demo_copy.nanobot)
    qtbot.waitUntil(lambda: window.hub.sources[demo_copy.nanobot].doc is not None, timeout=10_000)
    window.select_bank(BankKey(demo_copy.nanobot, KEEP_BANK))
    window.show_panel("rules")
    rules = window.rules
    rules.open_document("AGENTS.md")
    path = rules.doc.path
    rules.editor.setPlainText("# Agents\n- mine\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# Agents\n- theirs\n")
    shown = []

    def overwrite(dialog):
        shown.append(dialog.diff.toPlainText())
        if len(shown) == 1:  # while the dialog is open, the file changes once more
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("# Agents\n- newer\n")
        dialog.choice = threeway.OVERWRITE
        return 1

    monkeypatch.setattr(threeway.ThreeWayDialog, "exec", overwrite)
    assert rules.save() is True
    assert len(shown) == 2 and "- newer" in shown[1]  # the newer version was shown before it was overwritten
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == "# Agents\n- mine\n"


def test_saving_empty_content_asks_before_deleting(window, qtbot, monkeypatch):
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path = rules.doc.path
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.No)
    rules.editor.setPlainText("   \n")
    assert rules.save() is False and os.path.exists(path) and "deletes" in asked[0]
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    assert rules.save() is True and not os.path.exists(path)


def test_new_rule_with_slug_suggestion(window, qtbot, monkeypatch):
    from keepgui.ui import dialogs

    window.show_panel("rules")
    rules = window.rules

    def fake_exec(dialog):
        dialog.name.setText("API Notes")
        assert not dialog.use_slug.isHidden() and "api-notes" in dialog.hint.text()
        dialog.use_slug.click()
        return 1

    monkeypatch.setattr(dialogs.NameDialog, "exec", fake_exec)
    rules.new_rule()
    qtbot.waitUntil(lambda: rules.doc is not None and rules.doc.name == "api-notes")
    assert rules.editor.toPlainText() == "# api-notes\n"


def test_pending_what_if_toggles_are_previewed_then_applied(window, demo_copy, qtbot):
    from keepgui.backends.iii.store import DataDir

    pane = window.preview
    pane.set_query("when do I publish articles")
    first = wait_preview(qtbot, pane, lambda r: r.memories)
    top = first.memories[0].memory
    pane.add_pending(top.id, live=False)
    result = wait_preview(qtbot, pane, lambda r: all(h.memory.id != top.id for h in r.memories))
    assert DataDir(demo_copy.iii).bank("main").get(top.id).invalid_at is None  # nothing written
    assert result is pane.last_result
    pane.apply_whatif.click()
    qtbot.waitUntil(lambda: DataDir(demo_copy.iii).bank("main").get(top.id).invalid_at is not None)
    window.undo_stack.undo()
    assert DataDir(demo_copy.iii).bank("main").get(top.id).invalid_at is None


def test_nanobot_workspace_preview_shows_keep_md_as_its_own_part(make_window, demo_copy, qtbot):
    from keepgui.backends.nanobot.bank import KEEP_BANK
    from keepgui.core.source import BankKey

    window = make_window(demo_copy.iii, bank=None, workspace=demo_copy.nanobot)
    qtbot.waitUntil(lambda: window.hub.sources[demo_copy.nanobot].doc is not None, timeout=10_000)
    window.select_bank(BankKey(demo_copy.nanobot, KEEP_BANK))
    window.show_panel("preview")
    wait_preview(qtbot, window.preview, lambda r: hasattr(r, "parts"))
    text = window.preview.view.section.toPlainText()
    assert "keep.md" in text and "USER.md" in text and "not injected" in text


def test_a_long_keep_md_is_shown_in_part_and_copied_whole(make_window, demo_copy, qtbot, monkeypatch):
    from PySide6.QtGui import QGuiApplication

    from keepgui.backends.nanobot.bank import KEEP_BANK
    from keepgui.core.source import BankKey
    from keepgui.ui.adapters import nanobot as adapter

    monkeypatch.setattr(adapter, "PART_MAX_LINES", 50, raising=False)
    window = make_window(demo_copy.iii, bank=None, workspace=demo_copy.nanobot)
    qtbot.waitUntil(lambda: window.hub.sources[demo_copy.nanobot].doc is not None, timeout=10_000)
    window.select_bank(BankKey(demo_copy.nanobot, KEEP_BANK))
    window.show_panel("preview")
    result = wait_preview(qtbot, window.preview, lambda r: hasattr(r, "parts"))
    with open(os.path.join(demo_copy.nanobot, "keep.md"), encoding="utf-8") as fh:
        keep = fh.read().rstrip("\n").split("\n")
    text = window.preview.view.section.toPlainText()
    assert keep[49] in text and keep[50] not in text  # the 51st line and those after it are counted, not shown
    assert f"… {len(keep) - 50:,} more lines (Copy copies them all)" in text
    window.preview._copy("prompt")
    assert QGuiApplication.clipboard().text() == result.memory_prompt


def test_copy_puts_the_exact_injected_text_on_the_clipboard(window, qtbot):
    from PySide6.QtGui import QGuiApplication

    pane = window.preview
    pane.set_query("formal writing")
    result = wait_preview(qtbot, pane, lambda r: r.message)
    pane._copy("both")
    assert QGuiApplication.clipboard().text() == result.system_prompt_section + "\n\n" + result.message
    pane._copy("message")
    assert QGuiApplication.clipboard().text() == result.message


def test_worker_settings_are_remembered_per_data_dir(window, demo_copy, qtbot):
    pane = window.preview
    pane.view.spins["recall_limit"].setValue(2)
    assert window.settings.source_settings(demo_copy.iii) == {"recall_limit": 2}
    pane.set_query("when do I publish articles")
    result = wait_preview(qtbot, pane, lambda r: r.config.recall_limit == 2)
    assert len(result.memories) <= 2
    assert json.loads(result.to_json())["bank"] == "main"


def test_the_preview_of_a_bank_the_worker_cannot_load_says_so(make_window, demo_copy, qtbot):
    """#12.2: invalid UTF-8 in the unterminated last line makes the bank unloadable for the worker."""
    with open(os.path.join(demo_copy.iii, "main", "memories.jsonl"), "ab") as fh:
        fh.write(b'{"id":"fp1","text":"caf\xc3')
    win = make_window(demo_copy.iii, bank="main")
    win.show_panel("preview")
    pane = win.preview
    pane.query.setEditText("publish")
    qtbot.waitUntil(lambda: "cannot be loaded by the worker" in pane.summary.text(), timeout=10_000)
    assert pane.view.section.toPlainText() == "" and pane.view.hits.count() == 0


def test_merge_in_the_three_way_view_resolves_conflicts_side_by_side_and_saves_over_the_disk_version(
    make_window, demo_copy, qtbot, monkeypatch
):
    """#16.15, #23.6: after a refused save, Merge combines opened → disk and opened → mine; where both
    changed the same lines the person chooses side by side, and no marker reaches the editor."""
    from keepgui.ui.threeway import MERGE, MINE_ONLY, ConflictsDialog, ThreeWayDialog

    window = make_window(demo_copy.iii, watch=False)
    window.show_panel("rules")
    rules = window.rules
    qtbot.waitUntil(lambda: rules.doc is not None)
    path, opened = rules.doc.path, rules.doc.text
    lines = opened.splitlines(keepends=True)
    # someone else changes the first line and adds one at the end; I change the first line too
    disk = "# Learned (kept by the agent)\n" + "".join(lines[1:]) + "- Added on disk.\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(disk)
    rules.editor.setPlainText("# Learned, by me\n" + "".join(lines[1:]))
    shown = []
    conflicts = []

    def choose_merge(dialog: ThreeWayDialog) -> int:
        shown.append(dialog.merge.isEnabled())
        dialog.choice = MERGE
        return 1

    def keep_mine(dialog: ConflictsDialog) -> int:
        conflicts.append([(p.disk, p.mine) for p in dialog.parts if not isinstance(p, str)])
        dialog.choose(1, MINE_ONLY)
        return 1

    monkeypatch.setattr(ThreeWayDialog, "exec", choose_merge)
    monkeypatch.setattr(ConflictsDialog, "exec", keep_mine)
    assert not rules.save()  # refused: the file changed; merged into the editor instead
    assert shown == [True]
    assert conflicts == [[("# Learned (kept by the agent)\n", "# Learned, by me\n")]]
    text = rules.editor.toPlainText()
    assert "<<<<<<<" not in text and "=======" not in text and ">>>>>>>" not in text
    assert text.startswith("# Learned, by me\n")
    assert text.endswith("- Added on disk.\n")  # the other change came in without a conflict
    assert "1 conflict resolved" in rules.banner.label.text()
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == disk  # nothing saved by merging
    assert rules.save()  # written over exactly the disk version it was merged with
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == text
    window.undo_stack.undo()
    with open(path, encoding="utf-8") as fh:
        assert fh.read() == disk
