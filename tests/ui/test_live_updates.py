"""Live updates without waste: our own writes echo back from the watcher without a rescan or a
second delivery, the sidebar is updated in place (an expanded Trash stays expanded), rule counts
follow rule files, and repeated deliveries of equal rows change nothing."""

from __future__ import annotations

import os

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from keepgui.backends.iii.store import DataDir
from keepgui.core.source import BankKey
from keepgui.ui.hub import Hub
from keepgui.ui.memorypanel.model import RecordRole
from keepgui.ui.sidebar import DetailRole, KindRole
from tests.ui.conftest import open_keep


def settle(qtbot, window, path, ms: int = 1200) -> None:
    """Let the watcher's echo arrive and the source's background work (and its signals) finish."""
    qtbot.wait(ms)
    window.hub.drain(path)
    qtbot.wait(50)


def loaded_window(make_window, demo_copy, qtbot, **kw):
    window = make_window(demo_copy.iii, **kw)
    hub, path = window.hub, demo_copy.iii
    qtbot.waitUntil(
        lambda: hub.is_listed(path) and all(hub.summary(BankKey(path, n)) is not None for n in hub.banks(path)),
        timeout=10_000,
    )
    settle(qtbot, window, path, 300)
    return window, path


def unpinned(window):
    proxy = window.memories.proxy
    records = (proxy.index(r, 0).data(RecordRole) for r in range(proxy.rowCount()))
    return next(r for r in records if not r.pinned)


def trash_node(window, path):
    parent = window.tree_model.index_of_source(path)
    model = window.tree_model
    return next(
        model.index(r, 0, parent)
        for r in range(model.rowCount(parent))
        if model.index(r, 0, parent).data(KindRole) == "trash"
    )


def test_a_pin_updates_the_sidebar_once_and_rescans_nothing(make_window, demo_copy, qtbot):
    window, path = loaded_window(make_window, demo_copy, qtbot)
    scans = window.hub.scan_count(path)
    seen = []
    window.hub.banksChanged.connect(seen.append)
    with qtbot.waitSignal(window.hub._changes, timeout=10_000):  # the watcher's echo of the write
        window.set_pinned(True, [unpinned(window)])
    settle(qtbot, window, path)
    assert seen == [demo_copy.iii]  # the write's own delivery; the echo found nothing new
    assert window.hub.scan_count(path) == scans


def test_an_expanded_trash_stays_expanded_when_a_memory_changes(make_window, demo_copy, qtbot):
    DataDir(demo_copy.iii).trash_bank("blog")
    window, path = loaded_window(make_window, demo_copy, qtbot)
    qtbot.waitUntil(lambda: trash_node(window, demo_copy.iii).data(DetailRole) == "1 trashed bank")
    window.tree.expand(trash_node(window, demo_copy.iii))
    with qtbot.waitSignal(window.hub.banksChanged, timeout=10_000):
        window.set_pinned(True, [unpinned(window)])
    settle(qtbot, window, path)
    assert window.tree.isExpanded(trash_node(window, demo_copy.iii))


def test_the_trash_node_follows_trash_and_restore(make_window, demo_copy, qtbot, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window, _source = loaded_window(make_window, demo_copy, qtbot, bank="blog")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    window.trash_bank()
    qtbot.waitUntil(lambda: window.tree_model.rowCount(trash_node(window, demo_copy.iii)) == 1, timeout=10_000)
    window.restore_bank(DataDir(demo_copy.iii).trashed()[0].folder, demo_copy.iii)
    qtbot.waitUntil(lambda: trash_node(window, demo_copy.iii).data(DetailRole) == "empty", timeout=10_000)
    assert window.tree_model.rowCount(trash_node(window, demo_copy.iii)) == 0


def test_a_rule_file_added_on_disk_updates_the_rule_count(make_window, demo_copy, qtbot):
    window, _path = loaded_window(make_window, demo_copy, qtbot)
    rules = DataDir(demo_copy.iii).bank("main").info().rules
    index = window.tree_model.index_of_bank(BankKey(demo_copy.iii, "main"))
    assert index.data(DetailRole).endswith(f"· {rules} rules")
    with open(os.path.join(demo_copy.iii, "main", "rules", "added.md"), "w") as fh:
        fh.write("# Added by hand\n")
    qtbot.waitUntil(
        lambda: (
            window.tree_model.index_of_bank(BankKey(demo_copy.iii, "main"))
            .data(DetailRole)
            .endswith(f"· {rules + 1} rules")
        ),
        timeout=10_000,
    )


def test_the_shown_bank_is_read_once_at_start_up(make_window, demo_copy, qtbot, monkeypatch):
    synced = []
    original = Hub._load

    def counting(self, opened, key, full):
        synced.append(key.bank)
        return original(self, opened, key, full)

    monkeypatch.setattr(Hub, "_load", counting)
    window, path = loaded_window(make_window, demo_copy, qtbot, watch=False)
    assert sorted(synced) == sorted(window.hub.banks(path))


def test_the_echo_of_a_keep_is_not_delivered_again(make_window, demo_copy, qtbot):
    window, key = open_keep(make_window, demo_copy, qtbot)
    source = window.hub.sources[key.source]
    settle(qtbot, window, key.source, 300)
    deliveries = []
    window.hub.changed.connect(
        lambda change: deliveries.append(change.key) if change.key == key and change.rows else None
    )
    with qtbot.waitSignal(window.hub._changes, timeout=10_000):
        window.perform(key, lambda bank: bank.keep("Learns the cello on Mondays"), "Keep fact")
    settle(qtbot, window, key.source)
    assert deliveries == [key]
    assert source.doc is not None and any(e.text == "Learns the cello on Mondays" for e in source.doc.entries)


def test_equal_keep_rows_read_again_change_nothing(qapp, demo_copy):
    import msgspec

    from keepgui.backends.nanobot.bank import CAPABILITIES, keep_rows
    from keepgui.backends.nanobot.workspace import Workspace
    from keepgui.backends.nanobot.writes import KeepStore
    from keepgui.core.history import History
    from keepgui.ui.memorypanel.model import MemoryTableModel

    store = KeepStore(Workspace(demo_copy.nanobot), History())
    model = MemoryTableModel()
    model.reset_rows(keep_rows(store.load()), CAPABILITIES)
    again = keep_rows(store.load())  # new objects, same entries
    assert model.upsert(again) == ([], [])
    edited = keep_rows(store.load())
    edited[2] = msgspec.structs.replace(edited[2], text="Changed")
    assert model.upsert(edited) == ([2], [])


def test_tag_chips_are_recounted_only_when_tags_or_liveness_change(make_window, demo_copy, qtbot, monkeypatch):
    window, _source = loaded_window(make_window, demo_copy, qtbot)
    panel = window.memories
    calls = []
    monkeypatch.setattr(panel.chips, "set_counts", lambda counts: calls.append(counts))
    tagged = next(r for r in panel.model.rows() if r.tags and r.invalid_at is None)
    panel.upsert_rows([_with(tagged, text="an edit, no tag change")])
    assert calls == []
    panel.upsert_rows([_with(tagged, tags=(*tagged.tags, "brand-new-tag"))])
    assert len(calls) == 1 and ("brand-new-tag", 1) in calls[0]


def _with(record, **changes):
    import msgspec

    return msgspec.structs.replace(record, **changes)


def test_show_history_is_saved_once_per_toggle(make_window, demo_copy, qtbot, monkeypatch):
    window = make_window(demo_copy.iii, watch=False)
    saved = []
    monkeypatch.setattr(window.settings, "set_show_history", saved.append)
    window.memories.act_history.setChecked(True)
    window.memories.history.setChecked(False)
    assert saved == [True, False]
    assert not window.memories.act_history.isChecked() and not window.memories.proxy.show_history


def test_icons_are_rendered_once_per_colour_and_follow_the_palette(qapp):
    from keepgui.ui import theme

    first, second = theme.icon("pin"), theme.icon("pin")
    assert first.cacheKey() == second.cacheKey()
    original = QGuiApplication.palette()
    dark = QPalette(original)
    dark.setColor(QPalette.ColorRole.Text, QColor("#e0e0e0"))
    dark.setColor(QPalette.ColorRole.Window, QColor("#202020"))
    QGuiApplication.setPalette(dark)
    try:
        themed = theme.icon("pin")
        assert themed.cacheKey() != first.cacheKey()
        image = themed.pixmap(64, 64).toImage()
        colours = {
            image.pixelColor(x, y).name()
            for x in range(image.width())
            for y in range(image.height())
            if image.pixelColor(x, y).alpha() == 255
        }
        assert colours == {"#e0e0e0"}
    finally:
        QGuiApplication.setPalette(original)
    assert theme.icon("pin").cacheKey() == first.cacheKey()


def test_an_icon_is_drawn_at_a_size_only_when_painted_there(qapp):
    """Qt's SVG engine draws each size on demand from the icon's file in its colour (kept in the cache
    folder, named by its content): making an icon renders nothing up front."""
    import os

    from keepgui.core.paths import app_cache_dir
    from keepgui.ui import theme

    icon = theme.icon("trash", QColor("#123456"))
    files = os.listdir(os.path.join(app_cache_dir(), "icons"))
    assert any(f.startswith("trash-123456-") and f.endswith(".svg") for f in files)
    assert icon.availableSizes() == []  # no size rendered yet (the fallback renders eight)
    image = icon.pixmap(24, 24).toImage()
    opaque = {
        image.pixelColor(x, y).name() for x in range(24) for y in range(24) if image.pixelColor(x, y).alpha() == 255
    }
    assert opaque == {"#123456"}
