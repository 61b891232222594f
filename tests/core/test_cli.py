"""The iii commands of ``keepgui``: output, ``--json``, exit status, and where the data dir comes from."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from keepgui.backends.iii.record import fingerprint, parse_line
from tests.conftest import OLD_FORM, ROOT, errors_of, run_cli, tree_digest

run = run_cli


@pytest.fixture
def dd(data_dir):
    return ["--data-dir", str(data_dir), "--reload-command", ""]


def test_save_list_edit_pin_delete_restore_supersede(dd, data_dir):
    code, out, _ = run(
        ["save", "main", "User prefers formal writing", "--entity", "User", "--tag", "Style", "--pin", "--json", *dd]
    )
    assert code == 0
    saved = json.loads(out)
    assert saved["created"] is True and saved["memory"]["entities"] == ["user"] and saved["memory"]["pinned"]
    mid = saved["memory"]["id"]
    assert mid == fingerprint("User prefers formal writing")
    code, out, _ = run(["save", "main", "user  prefers formal writing", "--json", *dd])
    assert json.loads(out)["created"] is False and json.loads(out)["memory"]["corroboration"] == 1
    assert run(["edit", "main", mid, "--text", "User prefers a formal register", *dd])[0] == 0
    assert run(["pin", "main", mid, "--off", *dd])[0] == 0
    other = json.loads(run(["save", "main", "User likes terse answers", "--json", *dd])[1])["memory"]["id"]
    assert run(["delete", "main", other, *dd])[0] == 0
    code, out, _ = run(["memories", "main", *dd])
    assert "User prefers a formal register" in out and "terse" not in out
    code, out, _ = run(["memories", "main", "--history", *dd])
    assert "terse" in out and "deleted" in out
    assert run(["restore", "main", other, *dd])[0] == 0
    code, _, err = run(["supersede", "main", other, "--by", mid, *dd])
    assert code == 0
    code, _, err = run(["supersede", "main", mid, "--by", mid, *dd])
    assert code == 1 and "cannot supersede itself" in err
    lines = [
        line for line in (data_dir / "main" / "memories.jsonl").read_bytes().splitlines(keepends=True) if line != b"\n"
    ]  # each append begins with its own newline (spec §1.6a)
    assert len(lines) == 8
    for line in lines:
        assert parse_line(line.rstrip(b"\n")).to_line() == line


def test_memories_json_prints_the_stored_lines(dd, data_dir):
    (data_dir / "b").mkdir()
    stored = '{"id":"fp1","text":"hand written","confidence":"stated","created_at":5,"updated_at":5,"extra":"kept"}'
    (data_dir / "b" / "memories.jsonl").write_text(stored + "\n")
    code, out, _ = run(["memories", "b", "--json", *dd])
    assert code == 0 and out == stored + "\n"


def test_memories_order_and_tag_filter(dd):
    for i, tag in enumerate(["a", "b", "a"]):
        run(["save", "main", f"memory number {i}", "--tag", tag, *dd])
    _, out, _ = run(["memories", "main", "--tag", "a", "--json", *dd])
    texts = [json.loads(line)["text"] for line in out.splitlines()]
    assert sorted(texts) == ["memory number 0", "memory number 2"]


def test_banks_rules_and_rule_set(dd, data_dir, tmp_path):
    assert run(["bank", "create", "blog", "--description", "The blog", *dd])[0] == 0
    code, out, _ = run(["bank", "create", "blog", "--description", "changed", "--json", *dd])
    assert json.loads(out)["created"] is False and json.loads(out)["bank"]["description"] == "The blog"
    src = tmp_path / "style.md"
    src.write_text("# Style\nNo em-dashes.\n")
    assert run(["rule-set", "blog", "style", "--file", str(src), *dd])[0] == 0
    assert run(["rule-set", "blog", "tone", "--stdin", *dd], stdin="Formal.")[0] == 0
    code, out, _ = run(["rules", "blog", "--json", *dd])
    rules = json.loads(out)["rules"]
    assert [r["name"] for r in rules] == ["style", "tone"] and rules[0]["content"] == "# Style\nNo em-dashes.\n"
    assert run(["rule-set", "blog", "tone", "--stdin", *dd], stdin="  \n")[0] == 0
    assert not (data_dir / "blog" / "rules" / "tone.md").exists()
    code, _, err = run(["rule-set", "blog", "../evil", "--stdin", *dd], stdin="x")
    assert code == 1 and "must match" in err
    code, out, _ = run(["banks", "--json", *dd])
    banks = json.loads(out)["banks"]
    assert banks == [
        {"name": "blog", "description": "The blog", "memories": 0, "pinned": 0, "rules": 1, "readable": True}
    ]


def test_bank_trash_and_restore(dd, data_dir):
    run(["save", "scratch", "remember the scratch bank", *dd])
    code, out, _ = run(["bank", "trash", "scratch", "--json", *dd])
    trashed = json.loads(out)["trashed_to"]
    assert code == 0 and os.path.isdir(trashed)
    code, out, _ = run(["bank", "trashed", "--json", *dd])
    folder = json.loads(out)["trash"][0]["folder"]
    assert run(["bank", "restore", folder, *dd])[0] == 0
    assert (data_dir / "scratch" / "memories.jsonl").exists()


def test_errors_are_one_line_and_nonzero(dd):
    for argv, needle in (
        (["memories", "nope", *dd], "not found"),
        (["pin", "main", "fp0", *dd], "not found"),
        (["save", "main", "ab", *dd], "3..2000"),
        (["save", "Bad Name", "some text", *dd], "must match"),
        (["edit", "main", "fp0", *dd], "nothing to change"),
    ):
        code, _out, err = run(argv)
        assert code == 1 and needle in err and len(errors_of(err)) == 1 and "Traceback" not in err
        assert OLD_FORM in err  # each is an old form: it says what replaces it


def test_doctor_reports_and_exits_1(dd, data_dir):
    assert run(["doctor", *dd])[0] == 0
    run(["save", "main", "a good memory", *dd])
    with open(data_dir / "main" / "memories.jsonl", "ab") as fh:
        fh.write(b'{"id":"fp-broken", "text": 5}\n{"torn":')
    (data_dir / "Bad Name").mkdir()
    code, out, _ = run(["doctor", "--json", *dd])
    report = json.loads(out)
    kinds = {p["kind"] for p in report["problems"]}
    assert code == 1 and {"corrupt-line", "torn-tail", "bank-name"} <= kinds
    corrupt = next(p for p in report["problems"] if p["kind"] == "corrupt-line")
    lines = (data_dir / "main" / "memories.jsonl").read_bytes().split(b"\n")
    assert corrupt["line"] == lines.index(b'{"id":"fp-broken", "text": 5}') + 1 and corrupt["bank"] == "main"


def test_writes_tell_the_worker_and_say_so_when_they_cannot(data_dir, fake_iii, monkeypatch):
    code, _, err = run(["--data-dir", str(data_dir), "save", "main", "reload the worker"])
    assert code == 0 and errors_of(err) == []
    assert json.loads(fake_iii.read_text().splitlines()[-1]) == ["trigger", "memory::reload"]
    monkeypatch.setenv("FAKE_III_FAIL", "1")
    code, _, err = run(["--data-dir", str(data_dir), "save", "main", "another one"])
    assert code == 0 and "will not see this change until memory::reload" in err


def test_data_dir_from_environment(data_dir, monkeypatch):
    monkeypatch.setenv("KEEPGUI_DATA_DIR", str(data_dir))
    run(["save", "envbank", "found through the environment", "--reload-command", ""])
    assert (data_dir / "envbank" / "memories.jsonl").exists()


def test_demo_is_a_fresh_copy_and_the_package_is_untouched():
    demo = os.path.join(ROOT, "resources", "demo")
    before = tree_digest(demo)
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "keepgui",
            "--demo",
            "--reload-command",
            "",
            "save",
            "main",
            "a memory saved in the demo",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "--demo", "banks", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    banks = {b["name"]: b for b in json.loads(done.stdout)["banks"]}
    assert set(banks) == {"main", "blog", "coding"} and all(b["readable"] for b in banks.values())
    assert sum(b["memories"] for b in banks.values()) >= 70
    assert tree_digest(demo) == before


def test_demo_data_is_healthy_and_has_history():
    from keepgui.backends.iii.doctor import diagnose
    from keepgui.backends.iii.store import DataDir
    from keepgui.core.demo import make_demo_copy

    copy = make_demo_copy()
    dd = DataDir(copy.iii)
    assert diagnose(dd) == []
    records = [m for bank in dd.banks() for m in bank.memories(history=True)]
    assert len(records) >= 75
    assert any(m.superseded_by for m in records) and any(m.invalid_at and not m.superseded_by for m in records)
    assert any(m.pinned for m in records) and any(m.corroboration >= 2 for m in records)
    assert any(m.id != fingerprint(m.text) for m in records)  # an edited memory
    ages = [copy_now - m.updated_at for m in records for copy_now in [max(r.updated_at for r in records)]]
    assert max(ages) > 200 * 86_400_000
    rules = {bank.name: [r.name for r in bank.rules()[0]] for bank in dd.banks()}
    assert "learned" in rules["main"] and "style" in rules["main"]
    learned = dd.bank("main").read_rule("learned").content
    assert learned.startswith("# Learned\nStanding instructions captured automatically from conversations.")


def test_version_and_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("keepgui ")


def test_doctor_notes_an_unterminated_last_line_without_failing(dd, data_dir):
    run(["save", "main", "a good memory", *dd])
    line = (data_dir / "main" / "memories.jsonl").read_bytes().split(b"\n")[1]
    other = line.replace(b"a good memory", b"a good memory!").replace(b'"revision":0', b'"revision":0')
    from keepgui.backends.iii.record import fingerprint

    other = other.replace(fingerprint("a good memory").encode(), fingerprint("a good memory!").encode())
    with open(data_dir / "main" / "memories.jsonl", "ab") as fh:
        fh.write(other)  # no newline: the worker reads it as a record; a write may be in progress
    code, out, _ = run(["doctor", *dd])
    assert code == 0 and "[note: unterminated-line]" in out and "a write may be in progress" in out
    code, out, _ = run(["memories", "main", "--json", *dd])
    assert out.count("\n") == 2 and "a good memory!" in out


@pytest.mark.parametrize(
    "argv",
    [
        [b"save", b"main", b"caf\xe9 au lait memory"],
        [b"save", b"main", b"a lone surrogate \xed\xa0\x80 here"],
        [b"save", b"main", b"fine text here", b"--tag", b"t\xff"],
        [b"keep", b"caf\xe9 is a fact"],
    ],
)
def test_text_arguments_that_are_not_utf8_are_one_error_and_write_nothing(tmp_path, argv):
    """#13.3: these ended in a UnicodeEncodeError traceback (and save had created the bank first)."""
    import subprocess
    import sys

    from tests.reliability.common import ROOT, child_env, disk_state

    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n")
    data_dir = tmp_path / "memory"
    data_dir.mkdir()
    before = disk_state(str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "keepgui", "--data-dir", str(data_dir), "--workspace", str(workspace), *argv],
        capture_output=True,
        cwd=ROOT,
        env=child_env(PYTHONIOENCODING="utf-8"),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    err = done.stderr.decode("utf-8")
    assert done.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "is not valid UTF-8 text" in err and "nothing was written" in err
    assert disk_state(str(tmp_path)) == before
