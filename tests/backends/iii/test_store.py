"""Banks, rules, trash and the worker's store vectors (spec §1.3–§1.8, §5.8–§5.9, §6.1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.store import DataDir, bank_yaml, resolve_data_dir, suggest_slug, validate_name
from keepgui.backends.iii.worker import WorkerLink
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, NotFound, ReadOnly


@pytest.mark.parametrize("name", ["main", "mikes-blog_2", "a", "0", "a" * 64])
def test_valid_names(name):
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "Bad", "../evil", "-lead", "_lead", "a" * 65, "has space", "main\n", "é"])
def test_invalid_names(name):
    with pytest.raises(InvalidInput, match=r"must match \[a-z0-9\]\[a-z0-9_-\]\{0,63\}"):
        validate_name(name)


@pytest.mark.parametrize(
    "raw, slug",
    [
        ("My Blog", "my-blog"),
        ("notes: 2024/05", "notes-2024-05"),
        ("--Weird__", "weird"),
        ("Café  rules", "caf-rules"),
        ("a\\b", "a-b"),
        ("x" * 80, "x" * 64),
        ("!!!", ""),
    ],
)
def test_slug_suggestions(raw, slug):
    assert suggest_slug(raw) == slug
    if slug:
        validate_name(slug)


def test_discovery_skips_dot_folders_and_files_and_sorts(data_dir):
    for name in ("zeta", "alpha", ".trash", ".hidden", "Mixed"):
        (data_dir / name).mkdir()
    (data_dir / "afile").write_text("x")
    assert DataDir(data_dir).bank_names() == ["Mixed", "alpha", "zeta"]


def test_create_is_idempotent_and_writes_valid_yaml(data_dir):
    dd = DataDir(data_dir)
    bank, created = dd.create_bank("main", "  Personal: notes, 'quotes' & #hash  ")
    assert created and (data_dir / "main" / "rules").is_dir()
    text = (data_dir / "main" / "bank.yaml").read_text()
    assert text.startswith("description: ") and text.endswith("\n") and text.count("\n") == 1
    assert yaml.safe_load(text) == {"description": "Personal: notes, 'quotes' & #hash"}
    assert bank.description() == "Personal: notes, 'quotes' & #hash"
    _, again = dd.create_bank("main", "other")
    assert not again and dd.bank("main").description() == "Personal: notes, 'quotes' & #hash"
    assert bank_yaml("") == b"description: ''\n"
    for tricky in ("true", "123", "null", "- dash", "multi\nline", "日本語"):
        assert yaml.safe_load(bank_yaml(tricky)) == {"description": tricky}
    with pytest.raises(InvalidInput):
        dd.create_bank("../escape")


@pytest.mark.parametrize(
    "content", [b"description: [unclosed", b"\xff\xfe", b"description: 42", b"- a list", b"", b"other: x"]
)
def test_bank_yaml_is_read_tolerantly(data_dir, content):
    (data_dir / "b").mkdir()
    (data_dir / "b" / "bank.yaml").write_bytes(content)
    bank = DataDir(data_dir).bank("b")
    assert bank.description() == ""
    assert bank.info().name == "b"


def test_store_vectors_list_order_tags_and_reopen(data_dir):
    dd = DataDir(data_dir)
    bank, _ = dd.ensure_bank("main")
    for i in range(5):
        bank.save(f"memory number {i}", tags=["iii"] if i < 2 else (["iii", "workers"] if i == 2 else []), now=i)
    rows = bank.memories()
    assert [m.updated_at for m in rows] == [4, 3, 2, 1, 0]
    assert len(bank.memories(tag="iii")) == 3 and len(bank.memories(tag="workers")) == 1
    assert bank.tags() == [("iii", 3), ("workers", 1)]
    again = DataDir(data_dir).bank("main")
    assert [m.id for m in again.memories()] == [m.id for m in rows]


def test_last_wins_tombstone_and_history_through_the_bank(data_dir):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    t = bank.save("the api port is 3000", now=1)
    bank.update(t.record.id, text="the api port is 4000", now=2)
    assert bank.get(t.record.id).text == "the api port is 4000"
    bank.delete(t.record.id, now=3)
    assert bank.memories() == [] and bank.get(t.record.id).invalid_at == 3
    again = DataDir(data_dir).bank("main")
    assert len(again.memories(history=True)) == 1 and again.memories(history=True)[0].invalid_at == 3
    assert again.info().memories == 0
    bank.restore(t.record.id, now=4)
    assert bank.get(t.record.id).invalid_at is None and bank.get(t.record.id).revision == 3


def test_batch_is_one_write_and_sees_its_own_changes(data_dir):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    a = bank.save("first memory", now=1).record
    b = bank.save("second memory", now=1).record
    size = os.path.getsize(bank.log_path)
    with bank.batch(now=5) as batch:
        batch.pin(a.id)
        batch.pin(a.id, False)
        batch.delete(b.id)
        batch.delete(b.id)  # already retired inside the batch: a no-op
    assert len(batch.report.records) == 3
    with open(bank.log_path, "rb") as fh:
        fh.seek(size)
        appended = fh.read()
    # one write: its own leading newline (spec §1.6a: never glued onto a worker line), then 3 lines
    assert appended.startswith(b"\n") and appended.count(b"\n") == 4 and b"\n\n" not in appended[1:]
    assert bank.get(a.id).revision == 2 and not bank.get(a.id).pinned


def test_failed_batch_writes_nothing(data_dir):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    a = bank.save("first memory", now=1).record
    size = os.path.getsize(bank.log_path)
    # what raises may be the second pin or the batch's commit: either way the log stays as it was
    with pytest.raises(NotFound), bank.batch() as batch:  # noqa: PT012
        batch.pin(a.id)
        batch.pin("fpdoesnotexist00")
    assert os.path.getsize(bank.log_path) == size


def test_batch_computes_from_what_is_on_disk(data_dir):
    """Another writer appended a revision after we loaded: our next write builds on it."""
    dd = DataDir(data_dir)
    bank, _ = dd.ensure_bank("main")
    a = bank.save("shared memory", now=1).record
    other = DataDir(data_dir).bank("main")
    other.update(a.id, text="edited elsewhere", now=2)
    bank.pin(a.id, now=3)
    final = bank.get(a.id)
    assert final.text == "edited elsewhere" and final.pinned and final.revision == 2


def test_unreadable_bank_is_never_written(data_dir):
    (data_dir / "bad").mkdir()
    (data_dir / "bad" / "memories.jsonl").write_bytes(b'{"id":"\xff"}\n')
    bank = DataDir(data_dir).bank("bad")
    assert "UTF-8" in bank.unreadable
    before = (data_dir / "bad" / "memories.jsonl").read_bytes()
    with pytest.raises(ReadOnly):
        bank.save("anything at all")
    assert (data_dir / "bad" / "memories.jsonl").read_bytes() == before
    assert not bank.info().readable


def test_rules_list_read_write_rename_delete(data_dir):
    dd = DataDir(data_dir)
    bank, _ = dd.ensure_bank("main")
    bank.write_rule("style", "# Style\nNo em-dashes.")
    rules, problems = bank.rules()
    assert [r.name for r in rules] == ["style"] and not problems
    assert rules[0].content == "# Style\nNo em-dashes."  # verbatim, not trimmed
    bank.write_rule("api-conventions", "x")
    (data_dir / "main" / "rules" / "notes.MD").write_text("upper-case extension is not a rule")
    (data_dir / "main" / "rules" / ".style.md.tmp").write_text("temp")
    (data_dir / "main" / "rules" / ".md").write_text("no stem")
    assert bank.rule_names() == ["api-conventions", "style"]
    bank.write_rule("style", "   \n\t")
    assert bank.rule_names() == ["api-conventions"]
    renamed = bank.rename_rule("api-conventions", "api")
    assert renamed.name == "api" and bank.rule_names() == ["api"]
    with pytest.raises(InvalidInput):
        bank.write_rule("../x", "escape")
    with pytest.raises(InvalidInput):
        bank.rename_rule("api", "Bad Name")
    bank.delete_rule("api")
    assert bank.rule_names() == []


def test_empty_rule_for_a_missing_bank_is_a_silent_noop(data_dir):
    from keepgui.backends.iii.store import Bank

    dd = DataDir(data_dir)
    assert Bank(dd, "ghost").write_rule("style", "  ") is None
    assert not (data_dir / "ghost").exists()
    Bank(dd, "ghost").write_rule("style", "content")
    assert (data_dir / "ghost" / "bank.yaml").exists()


def test_rule_save_refuses_when_changed_on_disk(data_dir):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    bank.write_rule("style", "mine v1")
    loaded = bank.read_rule("style")
    (data_dir / "main" / "rules" / "style.md").write_text("edited by hand")
    with pytest.raises(Conflict):
        bank.write_rule("style", "mine v2", expect=loaded.stamp)
    assert bank.read_rule("style").content == "edited by hand"
    with pytest.raises(Conflict):
        bank.write_rule("style", "", expect=loaded.stamp)  # not even a delete
    fresh = bank.read_rule("style")
    bank.write_rule("style", "mine v3", expect=fresh.stamp)
    assert bank.read_rule("style").content == "mine v3"


def test_hand_edited_rules_show_up(data_dir):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    bank.write_rule("style", "# Style")
    (data_dir / "main" / "rules" / "style.md").write_text("# Edited by hand")
    (data_dir / "main" / "rules" / "added.md").write_text("# Added")
    again = DataDir(data_dir).bank("main")
    rules, _ = again.rules()
    assert [r.name for r in rules] == ["added", "style"] and rules[1].content == "# Edited by hand"


def test_rule_link_out_of_the_data_dir_is_read_like_the_worker_but_never_written(data_dir, tmp_path):
    from keepgui.backends.iii.doctor import diagnose

    secret = tmp_path / "outside.md"
    secret.write_text("# a rule kept elsewhere")
    bank, _ = DataDir(data_dir).ensure_bank("main")
    (data_dir / "main" / "rules" / "leak.md").symlink_to(secret)
    rules, problems = bank.rules()
    assert [r.content for r in rules] == ["# a rule kept elsewhere"] and not problems  # the worker injects it
    with pytest.raises(ReadOnly):
        bank.write_rule("leak", "overwrite through the link")
    assert secret.read_text() == "# a rule kept elsewhere"
    assert any(f.kind == "rule-link" for f in diagnose(DataDir(data_dir)))


def test_rules_folder_linked_out_of_the_data_dir_is_never_written(data_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "style.md").write_text("# Style")
    (data_dir / "b").mkdir()
    (data_dir / "b" / "rules").symlink_to(elsewhere)
    bank = DataDir(data_dir).bank("b")
    assert [r.name for r in bank.rules()[0]] == ["style"]
    with pytest.raises(ReadOnly):
        bank.write_rule("tone", "Formal.")
    assert sorted(os.listdir(elsewhere)) == ["style.md"]


def test_trash_list_and_restore(data_dir):
    dd = DataDir(data_dir)
    bank, _ = dd.ensure_bank("scratch")
    bank.save("something to keep", now=1)
    dest = dd.trash_bank("scratch", now=1750000000123)
    assert dest.endswith(os.path.join(".trash", "scratch-1750000000123"))
    assert os.path.exists(os.path.join(dest, "memories.jsonl")) and not dd.has_bank("scratch")
    assert [t.folder for t in dd.trashed()] == ["scratch-1750000000123"]
    dd.ensure_bank("scratch")
    with pytest.raises(InvalidInput, match="already exists"):
        dd.restore_bank("scratch-1750000000123")
    dd.trash_bank("scratch", now=1750000000123)  # same millisecond: a free name is found
    assert len(dd.trashed()) == 2
    restored = dd.restore_bank("scratch-1750000000123")
    assert restored.memories()[0].text == "something to keep"
    with pytest.raises(InvalidInput):
        dd.restore_bank("../scratch")
    with pytest.raises(NotFound):
        dd.bank("scratch-1750000000123")


def test_hostile_bank_names_are_refused(data_dir):
    dd = DataDir(data_dir)
    for name in ("..", "../x", "a/b", ".trash", ""):
        with pytest.raises((InvalidInput, NotFound)):
            dd.bank(name)


def test_resolve_data_dir_like_the_worker(tmp_path):
    env = {"HOME": "/home/u"}
    assert resolve_data_dir("~", env) == "/home/u"
    assert resolve_data_dir("~/x/y", env) == "/home/u/x/y"
    assert resolve_data_dir("/abs/path", env) == "/abs/path"
    assert resolve_data_dir("./data/./memory", env, cwd="/work") == "/work/data/memory"
    assert resolve_data_dir("data/memory", {**env, "III_COMPOSE_DIR": "/compose"}, cwd="/w") == "/compose/data/memory"


def test_config_defaults_and_unknown_keys(tmp_path):
    config = MemoryConfig.from_mapping({})
    assert (
        config.recall_limit,
        config.recall_budget_tokens,
        config.max_rule_chars,
        config.decay_half_life_days,
        config.default_bank,
    ) == (6, 1200, 6000, 30, "main")
    assert config.inject_rules and config.inject_memories
    with pytest.raises(InvalidInput, match="`recall_limt`"):
        MemoryConfig.from_mapping({"recall_limt": 3})
    with pytest.raises(InvalidInput, match="`inject_rules`"):
        MemoryConfig.from_mapping({"inject_rules": "yes"})
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"recall_limit": 2, "max_rule_chars": 300}))
    loaded = MemoryConfig.load(path)
    assert loaded.recall_limit == 2 and loaded.max_rule_chars == 300
    assert loaded.replace(recall_limit=9).recall_limit == 9


def test_writes_ask_a_running_worker_to_reload(data_dir, fake_iii, monkeypatch):
    dd = DataDir(data_dir, WorkerLink())
    bank, _ = dd.ensure_bank("main")
    with bank.batch() as b:
        b.save("reload me please")
    assert b.report.reload.ok
    calls = [json.loads(line) for line in fake_iii.read_text().splitlines()]
    assert ["trigger", "memory::reload"] in calls
    monkeypatch.setenv("FAKE_III_FAIL", "1")
    with bank.batch() as b:
        b.save("and again")
    assert not b.report.reload.ok and "will not see this change until memory::reload" in b.report.reload.message
    off = DataDir(data_dir, WorkerLink(reload_command=""))
    assert "off" in off.after_write().message


def test_reload_without_iii_on_path_says_so(data_dir, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    outcome = WorkerLink().reload()
    assert not outcome.ok and "not on PATH" in outcome.message


def test_temp_files_are_found(data_dir):
    DataDir(data_dir).ensure_bank("main")
    (data_dir / "main" / "rules" / ".style.md.tmp").write_text("half")
    stray = fsio.temp_name_for(str(data_dir / "main" / "memories.jsonl"))
    open(stray, "w").close()
    assert sorted(os.path.basename(p) for p in DataDir(data_dir).iter_temp_files()) == sorted(
        [".style.md.tmp", os.path.basename(stray)]
    )


# ---------------------------------------------------------------------- links and odd folders (§1.6a)


def test_a_linked_bank_folder_is_not_a_bank(data_dir, tmp_path):
    """The worker's Store::open uses DirEntry::file_type(), which does not follow links."""
    from keepgui.backends.iii.context import BankEngine

    real, _ = DataDir(tmp_path / "elsewhere").ensure_bank("real")
    real.save("a memory behind a link", now=1)
    os.makedirs(data_dir, exist_ok=True)
    os.symlink(real.path, data_dir / "linked")
    datadir = DataDir(data_dir)
    before = Path(real.log_path).read_bytes()
    assert "linked" in datadir.bank_names()
    bank = datadir.bank("linked")
    info = bank.info()
    assert not info.readable and "the worker does not load it" in info.reason and info.memories == 0
    assert bank.memories() == []
    with pytest.raises(NotFound, match="cannot be loaded by the worker"):
        BankEngine(bank).preview("memory")
    for write in (
        lambda: bank.save("written through the link", now=2),
        lambda: bank.pin(real.log.records and next(iter(real.log.records)), True),
        lambda: bank.write_rule("style", "# Style\n"),
        lambda: datadir.trash_bank("linked"),
    ):
        with pytest.raises(ReadOnly, match="symbolic links"):
            write()
    assert Path(real.log_path).read_bytes() == before and os.path.islink(data_dir / "linked")
    assert not os.path.exists(real.rules_path + "/style.md")


def test_a_linked_trash_is_never_moved_through(data_dir, tmp_path):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    outside = tmp_path / "outside-trash"
    outside.mkdir()
    os.symlink(outside, data_dir / ".trash")
    with pytest.raises(ReadOnly, match=r"\.trash is a link"):
        DataDir(data_dir).trash_bank("main")
    (outside / "old-1750000000000").mkdir()
    with pytest.raises(ReadOnly, match=r"\.trash is a link"):
        DataDir(data_dir).restore_bank("old-1750000000000")
    assert bank.exists() and os.listdir(outside) == ["old-1750000000000"]


def test_a_log_linked_to_dev_null_reads_as_an_empty_bank(data_dir):
    bank, _ = DataDir(data_dir).ensure_bank("main")
    os.symlink(os.devnull, bank.log_path)
    fresh = DataDir(data_dir).bank("main")
    assert fresh.unreadable is None and fresh.memories() == [] and fresh.info().readable
    with pytest.raises(ReadOnly, match="symbolic link"):
        fresh.save("never appended to /dev/null", now=1)


def test_a_bank_folder_named_with_a_backslash_is_listed_and_readable(data_dir):
    if os.sep == "\\" or os.altsep == "\\":
        pytest.skip("a backslash separates folders here")
    datadir = DataDir(data_dir)
    main, _ = datadir.ensure_bank("main")
    main.save("a memory in a bank named oddly", now=1)
    os.rename(main.path, data_dir / "back\\slash")
    datadir = DataDir(data_dir)
    assert datadir.bank_names() == ["back\\slash"]
    bank = datadir.bank("back\\slash")
    assert [m.text for m in bank.memories()] == ["a memory in a bank named oddly"] and bank.info().readable
    with pytest.raises(InvalidInput):
        datadir.create_bank("another\\one")  # keepgui still creates only names the worker's rule allows


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"recall_limit": -0}', "`recall_limit` is -0"),
        ('{"recall_limit": 6, "recall_limit": 7}', "duplicate field `recall_limit`"),
        ('{"max_rule_chars": 18446744073709551616}', "larger than the worker's 64-bit integer"),
        ('{"recall_budget_tokens": 1.0}', "must be a non-negative integer"),
        ("[1, 2]", "must be a JSON object"),
        ('{"nope": 1}', "unknown config key `nope`"),
    ],
)
def test_config_is_as_strict_as_serde(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=message) as info:
        MemoryConfig.load(path)
    assert str(path) in str(info.value)


def test_config_largest_values_are_accepted(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"recall_budget_tokens": 18446744073709551615, "recall_limit": 0}')
    assert MemoryConfig.load(path).recall_budget_tokens == (1 << 64) - 1


def test_config_fifo_and_deep_nesting_are_refused_at_once(tmp_path):
    from tests.reliability.common import deadline

    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    with deadline(5, "loading a FIFO config"), pytest.raises(InvalidInput, match="not a regular file"):
        MemoryConfig.load(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(InvalidInput, match="nested too deeply"):
        MemoryConfig.load(deep)
