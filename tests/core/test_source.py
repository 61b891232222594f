"""The source protocol and the registry, with no Qt: what every backend presents and how it is found.

The iii and nanobot backends are driven through the protocol only (the way the
window drives them): rows, capabilities, Changes that say what they wrote and
take themselves back, and refuse when the files changed since.
"""

from __future__ import annotations

import os

import msgspec
import pytest

from keepgui.backends.iii.record import fingerprint
from keepgui.backends.iii.store import DataDir
from keepgui.core import fsio, registry
from keepgui.core.errors import Conflict, InvalidInput
from keepgui.core.source import (
    DISK,
    PIN,
    TOMBSTONE,
    Bank,
    Capabilities,
    Change,
    FileRow,
    Row,
    RowDelta,
    Source,
    stamps_of,
)
from tests.backends.nanobot.nanobot_helpers import make_workspace


def read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def iii(data_dir):
    bank = DataDir(str(data_dir)).ensure_bank("main")[0]
    for text in ("Prefers metric units in recipes", "Lives in Lisbon with Sam", "Allergic to penicillin"):
        bank.save(text)
    return registry.open_source("iii", str(data_dir))


@pytest.fixture
def nanobot(tmp_path):
    return registry.open_source("nanobot", make_workspace(tmp_path / "ws"))


# ---------------------------------------------------------------------- the records


def test_capabilities_say_why_and_name_rows():
    caps = Capabilities({PIN: "no pin here"}, noun="entry", nouns="entries")
    assert not caps.can(PIN) and caps.why_not(PIN) == "no pin here"
    assert caps.can(TOMBSTONE) and caps.why_not(TOMBSTONE) == ""
    assert caps.describe("Forget", 1) == "Forget entry" and caps.describe("Forget", 3) == "Forget 3 entries"
    assert Capabilities().describe("Pin", 1) == "Pin memory"


def test_a_file_row_is_one_compact_immutable_record_equal_by_value():
    row = FileRow(id="a", text="Has a cat", position=3)
    assert isinstance(row, Row)
    assert row == FileRow(id="a", text="Has a cat", position=3)
    assert row != msgspec.structs.replace(row, text="Has two cats")
    with pytest.raises(AttributeError):
        row.text = "changed"  # type: ignore[misc]
    assert not hasattr(row, "__dict__")  # no per-row dict: one record per row


def test_a_change_without_a_way_back_says_so():
    change = Change("/src", "main", "Accept rewrite")
    assert not change.can_undo
    with pytest.raises(InvalidInput, match="cannot be undone"):
        change.undo()
    assert not RowDelta() and RowDelta(complete=True)


def test_stamps_of_records_what_is_on_disk(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    (written,) = stamps_of(str(path))
    st = os.stat(path)
    assert (written.stamp.size, written.stamp.mtime_ns) == (3, st.st_mtime_ns)
    assert stamps_of(str(tmp_path / "gone"))[0].stamp is None


# ---------------------------------------------------------------------- the registry


def test_the_built_in_backends_register_like_any_other():
    kinds = registry.kinds()
    assert kinds[:2] == ["iii", "nanobot"]
    for backend in registry.backends():
        assert backend.window_arg and backend.demo_folder and backend.icon
    with pytest.raises(InvalidInput, match="already"):
        registry.register(registry.backend("iii"))
    with pytest.raises(InvalidInput, match="no memory backend `nope`"):
        registry.backend("nope")


def test_identify_says_what_a_folder_is_and_why(data_dir, tmp_path):
    DataDir(str(data_dir)).ensure_bank("main")[0].save("Prefers tea over coffee")
    verdict = registry.identify(str(data_dir))
    assert verdict.kind == "iii" and verdict.what == "an iii data dir" and "1 bank: main" in verdict.why
    bank_folder = registry.identify(str(data_dir / "main"))
    assert bank_folder.kind is None and "open its parent" in bank_folder.why
    ws = make_workspace(tmp_path / "ws")
    assert registry.identify(ws).kind == "nanobot"
    plain = tmp_path / "src"
    (plain / "pkg").mkdir(parents=True)
    neither = registry.identify(str(plain))
    assert neither.kind is None and neither.what == "neither"
    assert "not an iii data dir" in neither.why and "not a nanobot workspace" in neither.why
    assert registry.identify(str(tmp_path / "missing")).why.endswith("does not exist")


def test_discover_finds_the_sources_on_this_machine(tmp_path):
    home = tmp_path / "home"
    (home / ".nanobot" / "workspace").mkdir(parents=True)
    (home / ".iii" / "data" / "memory").mkdir(parents=True)
    env = {"HOME": str(home), "KEEPGUI_DATA_DIR": str(tmp_path / "dd")}
    (tmp_path / "dd").mkdir()
    found = registry.discover(env)
    assert [(f.kind, f.path) for f in found] == [
        ("iii", str(tmp_path / "dd")),
        ("iii", str(home / ".iii" / "data" / "memory")),
        ("nanobot", str(home / ".nanobot" / "workspace")),
    ]
    assert found[0].why == "$KEEPGUI_DATA_DIR"


def test_sources_and_banks_satisfy_the_protocol(iii, nanobot):
    for source in (iii, nanobot):
        for name in [n for n in dir(Source) if not n.startswith("_")] + ["kind", "path", "capabilities"]:
            assert hasattr(source, name), f"{source.kind} source lacks {name}"
        listing = source.scan()
        bank = source.bank(listing.names[0])
        for name in [n for n in dir(Bank) if not n.startswith("_")]:
            assert hasattr(bank, name), f"{source.kind} bank lacks {name}"
        loaded = bank.load(full=True)
        assert loaded.origin == DISK and loaded.rows.complete and loaded.rows.rows
        assert all(isinstance(row, Row) for row in loaded.rows.rows)
        assert bank.summary().detail and bank.is_loaded()


# ---------------------------------------------------------------------- iii through the protocol


def test_an_iii_write_says_what_it_wrote_and_undo_appends_the_way_back(iii):
    bank = iii.bank("main")
    bank.load(full=True)
    mid = fingerprint("Allergic to penicillin")
    change = bank.set_pinned([mid], True)
    log = iii.core_bank("main").log_path
    assert change.text == "Pin memory" and change.written and change.can_undo
    assert [r.id for r in change.rows.rows] == [mid] and change.rows.rows[0].pinned
    (stamp,) = change.files
    assert stamp.path == log and stamp.stamp.size == os.path.getsize(log)
    undone = change.undo()
    assert not undone.rows.rows[0].pinned and undone.rows.rows[0].revision == 2
    redone = undone.undo()
    assert redone.rows.rows[0].pinned and redone.rows.rows[0].revision == 3
    assert "pinned" in bank.summary().detail and "1 pinned" in bank.summary().detail


def test_undoing_a_new_memory_retires_it(iii):
    bank = iii.bank("main")
    bank.load(full=True)
    change = bank.create("Learns the cello on Mondays", ["habits"], ["user"])
    mid = fingerprint("Learns the cello on Mondays")
    assert change.rows.rows[0].id == mid and change.rows.rows[0].tags == ("habits",)
    assert change.undo().rows.rows[0].invalid_at is not None


def test_a_rule_save_is_undone_exactly_and_refused_after_someone_else_changed_it(iii):
    bank = iii.bank("main")
    docs = bank.documents()
    created = docs.create("style")
    doc = created.result
    path = doc.path
    saved = docs.save(doc, "# Style\n- terse\n")
    assert saved.documents == {"style"} and read(path) == b"# Style\n- terse\n"
    assert saved.files[0].stamp.size == len(b"# Style\n- terse\n")
    back = saved.undo()
    assert read(path) == b"# style\n" and back.result.text == "# style\n"
    again = back.undo()
    assert read(path) == b"# Style\n- terse\n"
    with open(path, "ab") as fh:
        fh.write(b"- added by hand\n")
    with pytest.raises(Conflict):
        again.undo()
    assert read(path) == b"# Style\n- terse\n- added by hand\n"  # nothing overwritten


def test_the_budget_of_a_rule_comes_from_the_backend(iii):
    iii.configure({"max_rule_chars": 300})
    docs = iii.bank("main").documents()
    docs.create("learned")
    budget = docs.budget("learned", "# Learned\n" + "x" * 1000)
    assert budget.total == 300 and budget.warn and budget.cut_char == 300
    assert budget.place.status == "truncated" and "TRUNCATED after byte 300" in budget.sentence


def test_bank_create_trash_and_restore_take_each_other_back(iii, data_dir):
    created = iii.create_bank("research", "notes")
    assert created.listing and created.result == "research" and os.path.isdir(data_dir / "research")
    trashed = created.undo()
    assert not os.path.exists(data_dir / "research") and trashed.listing
    assert [t.bank for t in iii.scan().trashed] == ["research"]
    restored = trashed.undo()
    assert os.path.isdir(data_dir / "research") and restored.result == "research"
    assert "research" in iii.scan().names


def test_what_changed_files_mean_for_a_data_dir(iii, data_dir):
    plan = iii.classify(
        [("main", "memories.jsonl"), ("main", "rules", "style.md"), ("main", "rules"), ("blog",)], ["main"]
    )
    assert plan.refresh == {"main"} and plan.documents == {"main": frozenset({"style"})}
    assert plan.notes == ("main: rules changed on disk",) and not plan.rescan  # `blog` is no folder
    os.makedirs(data_dir / "blog")
    assert iii.classify([("blog",)], ["main"]).rescan  # a bank folder appeared
    only_the_folder = iii.classify([("main", "rules")], ["main"])
    assert not only_the_folder.documents and not only_the_folder.refresh  # its files report themselves


# ---------------------------------------------------------------------- nanobot through the protocol


def test_a_keep_md_change_is_undone_byte_for_byte_and_refused_after_an_outside_edit(nanobot):
    bank = nanobot.bank("keep.md")
    bank.load(full=True)
    keep_md = os.path.join(nanobot.path, "keep.md")
    original = read(keep_md)
    change = bank.keep("Has a cat called Miso")
    assert change.written and change.message.startswith("Kept: Has a cat called Miso")
    assert change.rows.complete and any(r.text == "Has a cat called Miso" for r in change.rows.rows)
    assert read(keep_md) == original + b"- Has a cat called Miso\n"
    assert change.files[0].stamp.size == len(original) + len(b"- Has a cat called Miso\n")
    back = change.undo()
    assert read(keep_md) == original
    forth = back.undo()
    assert read(keep_md) == original + b"- Has a cat called Miso\n"
    with open(keep_md, "ab") as fh:
        fh.write(b"- Added by the agent meanwhile\n")
    with pytest.raises(Conflict):
        forth.undo()
    assert read(keep_md).endswith(b"- Added by the agent meanwhile\n")


def test_a_keep_that_writes_nothing_says_what_to_do_instead(nanobot):
    bank = nanobot.bank("keep.md")
    change = bank.keep("Always reply in Portuguese")
    assert not change.written and not change.can_undo
    assert change.feedback[-1].text == "Ctrl+Enter keeps it in keep.md anyway."


def test_forgotten_entries_come_back_as_retired_rows_and_restore(nanobot):
    bank = nanobot.bank("keep.md")
    rows = bank.load(full=True).rows.rows
    target = rows[3]
    forgot = bank.set_live([target.id], False)
    assert forgot.text == "Forget 1 entry"
    retired = [r for r in forgot.rows.rows if r.invalid_at is not None]
    assert [r.text for r in retired] == [target.text] and retired[0].id.startswith("removed:")
    restored = bank.set_live([retired[0].id], True)
    assert [r.text for r in restored.rows.rows].count(target.text) == 1
    assert all(r.invalid_at is None for r in restored.rows.rows)


def test_a_workspace_document_save_is_undone_to_the_exact_bytes(nanobot):
    docs = nanobot.bank("keep.md").documents()
    path = os.path.join(nanobot.path, "AGENTS.md")
    with open(path, "wb") as fh:
        fh.write(b"\xef\xbb\xbf# Agents\r\n- be kind\r\n")  # a BOM and CRLF throughout
    doc = docs.read("AGENTS.md")
    saved = docs.save(doc, "# Agents\n- be kind\n- be brief\n")
    assert read(path) == b"\xef\xbb\xbf# Agents\r\n- be kind\r\n- be brief\r\n"
    back = saved.undo()
    assert read(path) == b"\xef\xbb\xbf# Agents\r\n- be kind\r\n"
    forth = back.undo()
    assert read(path) == b"\xef\xbb\xbf# Agents\r\n- be kind\r\n- be brief\r\n"
    fsio.atomic_write(path, b"# rewritten by hand\n")
    with pytest.raises(Conflict):
        forth.undo()  # the file is someone else's now: nothing is overwritten
    assert read(path) == b"# rewritten by hand\n"
    managed = docs.read("USER.md")
    assert managed.managed_by == "Dream" and "managed by Dream" in docs.pre_save_warnings(managed)[0]


def test_what_changed_files_mean_for_a_workspace(nanobot):
    plan = nanobot.classify([("keep.md",), ("memory", "MEMORY.md"), ("memory", "history.jsonl"), ()], ["keep.md"])
    assert plan.refresh == {"keep.md"} and plan.documents == {"keep.md": frozenset({"MEMORY.md"})}
    assert plan.reviews == {"keep.md": ("MEMORY.md",)} and not plan.rescan


def test_an_outside_rewrite_of_keep_md_asks_for_a_review(nanobot):
    bank = nanobot.bank("keep.md")
    bank.load(full=True)
    assert not bank.load().rows  # read again unchanged: nothing to deliver
    fsio.atomic_write(os.path.join(nanobot.path, "keep.md"), b"- Only this survived\n")
    change = bank.load()
    assert change.reviews == ("keep.md",) and change.rows.complete
    assert change.notes[0].startswith("keep.md changed on disk: 1 entries")


class _OrderedLock:
    """An RLock that refuses to be taken while a lock that must come after it is held (by this thread)."""

    held = __import__("threading").local()

    def __init__(self, name: str, rank: int) -> None:
        import threading

        self.name, self.rank, self._lock = name, rank, threading.RLock()

    def __enter__(self):
        stack = getattr(self.held, "stack", [])
        later = [lock.name for lock in stack if lock.rank > self.rank]
        assert not later, f"took the {self.name} lock while holding the {later[0]} lock"
        self._lock.acquire()
        stack.append(self)
        self.held.stack = stack
        return self

    def __exit__(self, *exc):
        self.held.stack.remove(self)
        self._lock.release()


def test_iii_operations_take_the_source_lock_before_the_bank_lock(iii):
    """Trashing a bank holds the source lock, then the bank's: anything that held them the other way
    round (a preview on its thread) would deadlock with it."""
    iii.lock = _OrderedLock("source", 0)
    bank = iii.bank("main")
    bank.lock = _OrderedLock("bank", 1)
    bank.load(full=True)
    mid = fingerprint("Lives in Lisbon with Sam")
    bank.rows(), bank.revisions(mid), bank.summary(), bank.check_keep("Lives in Lisbon")
    bank.preview("where does the user live"), bank.rank("lisbon", 10)
    change = bank.set_pinned([mid], True)
    change.undo()
    bank.keep("Drinks green tea")
    plan = bank.plan("compact")
    bank.apply_plan(plan, plan.default_selection(), "Compact main")
    docs = bank.documents()
    docs.save(docs.create("style").result, "# Style\n")
    iii.trash_bank("main").undo()


def test_what_a_bank_lacks_is_refused_with_the_reason_its_capabilities_give(nanobot):
    bank = nanobot.bank("keep.md")
    with pytest.raises(InvalidInput, match="there is no recall ranking"):
        bank.rank("tea", 3)
    with pytest.raises(InvalidInput, match=r"keep\.md entries have no pin"):
        bank.set_pinned(["x"], True)
    with pytest.raises(InvalidInput, match=r"has one keep\.md"):
        nanobot.create_bank("more")
    assert bank.revisions("x") == []
