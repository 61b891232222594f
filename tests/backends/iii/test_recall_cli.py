"""``keepgui preview`` and ``keepgui recall`` (issue 3's commands)."""

from __future__ import annotations

import json

import pytest

from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine
from keepgui.backends.iii.store import DataDir
from keepgui.cli import main
from tests.backends.iii.test_preview import M1, M2, M3, MESSAGE_PUBLISH, NOW, SCENARIO, make_bank, mem

DAY = 86_400_000


@pytest.fixture
def bank_dir(data_dir):
    retired = mem("The API port used to be 3000", ["api"], invalid=NOW - DAY, updated=NOW - DAY, tags=["infra"])
    make_bank(data_dir, records=SCENARIO + (retired,), rules={"style": "Formal register."})
    return data_dir


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_preview_json_is_the_library_response(bank_dir, capsys):
    code, out, err = run(
        capsys,
        "--data-dir",
        str(bank_dir),
        "preview",
        "when do I publish articles",
        "--bank",
        "main",
        "--now",
        str(NOW),
        "--json",
    )
    assert code == 0 and err == ""
    expected = BankEngine(DataDir(bank_dir).bank("main")).preview("when do I publish articles", now_ms=NOW)
    assert out == expected.to_json(notice=True) + "\n"
    assert json.loads(out)["keepgui"]["lexical_only"] is True
    obj = json.loads(out)
    assert obj["message"] == MESSAGE_PUBLISH and [m["memory"]["id"] for m in obj["memories"]] == [M1.id, M3.id, M2.id]
    assert "\\u2014" not in out and "\u2014" in out  # raw UTF-8, as serde_json writes


def test_preview_human_form_prints_what_is_injected(bank_dir, capsys):
    code, out, _ = run(capsys, "--data-dir", str(bank_dir), "preview", "when do I publish articles", "--now", str(NOW))
    assert code == 0
    preview = BankEngine(DataDir(bank_dir).bank("main")).preview("when do I publish articles", now_ms=NOW)
    assert preview.system_prompt_section in out and MESSAGE_PUBLISH + "\n" in out
    assert "2.1856" in out and "0.8000" in out and "ambient" in out and "× recency" in out
    assert "vectors:" in out and "no vectors.jsonl" in out


def test_preview_with_a_config_file(bank_dir, tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"inject_memories": False, "recall_limit": 1}))
    code, out, _ = run(
        capsys, "--data-dir", str(bank_dir), "preview", "publish", "--config", str(config), "--now", str(NOW), "--json"
    )
    obj = json.loads(out)
    assert code == 0 and "message" not in obj and len(obj["memories"]) == 1
    assert out.strip() == BankEngine(DataDir(bank_dir).bank("main"), MemoryConfig.load(config)).preview(
        "publish", now_ms=NOW
    ).to_json(notice=True)


def test_errors_are_one_line(bank_dir, tmp_path, capsys):
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"recall_limt": 3}))
    code, _, err = run(capsys, "--data-dir", str(bank_dir), "preview", "q", "--config", str(config))
    assert code == 1 and "recall_limt" in err and err.count("\n") == 1
    code, _, err = run(capsys, "--data-dir", str(bank_dir), "preview", "q", "--bank", "nope")
    assert code == 1 and "not found" in err
    code, _, err = run(capsys, "--data-dir", str(bank_dir), "recall", "q", "--limit", "-1")
    assert code == 1 and "--limit" in err


def test_recall_json_and_history(bank_dir, capsys):
    code, out, _ = run(capsys, "--data-dir", str(bank_dir), "recall", "api port", "--now", str(NOW), "--json")
    obj = json.loads(out)
    assert code == 0 and list(obj) == ["bank", "memories", "retrieval", "keepgui"]  # the worker's keys, then ours
    assert [m["memory"]["id"] for m in obj["memories"]] == [M2.id]
    assert obj["memories"][0]["parts"]["entity_hits"] == 1
    expected = BankEngine(DataDir(bank_dir).bank("main")).recall("api port", now_ms=NOW)
    assert out == expected.to_json(parts=True, notice=True) + "\n"
    code, out, _ = run(
        capsys, "--data-dir", str(bank_dir), "recall", "api port", "--now", str(NOW), "--json", "--history"
    )
    assert len(json.loads(out)["memories"]) == 2
    code, out, _ = run(
        capsys,
        "--data-dir",
        str(bank_dir),
        "recall",
        "api port",
        "--now",
        str(NOW),
        "--json",
        "--history",
        "--tag",
        "infra",
    )
    assert [m["memory"]["text"] for m in json.loads(out)["memories"]] == ["The API port used to be 3000"]
    code, out, _ = run(capsys, "--data-dir", str(bank_dir), "recall", "user", "--now", str(NOW), "--limit", "1")
    assert code == 0 and "User publishes blog posts" in out and "limit 1" in out and "bm25" in out


def test_check_worker_reports_each_difference(bank_dir, fake_iii, tmp_path, monkeypatch, capsys):
    preview = BankEngine(DataDir(bank_dir).bank("main")).preview("when do I publish articles", now_ms=NOW)
    answer = tmp_path / "answer.json"
    answer.write_text(preview.to_json(), encoding="utf-8")
    monkeypatch.setenv("FAKE_III_OUTPUT", str(answer))
    argv = ["--data-dir", str(bank_dir), "preview", "when do I publish articles", "--now", str(NOW), "--check-worker"]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "the running worker gives the same preview" in out
    worker = json.loads(preview.to_json())
    worker["memories"][1]["score"] = 0.9
    worker["system_prompt_section"] += "\n## extra\nrule\n"
    answer.write_text(json.dumps(worker), encoding="utf-8")
    code, out, _ = run(capsys, *argv)
    assert code == 1 and "differs in 2 fields" in out
    assert "system_prompt_section:" in out and "memories[1].score: keepgui 0.79997504 ≠ worker 0.9" in out
    code, out, err = run(capsys, *argv, "--json")
    assert code == 1 and out == preview.to_json(notice=True) + "\n" and "memories[1].score" in err
    monkeypatch.setenv("FAKE_III_FAIL", "1")
    code, _, err = run(capsys, *argv)
    assert code == 1 and "cannot check against the worker" in err


def _vector_line(memory, revision=None) -> str:
    return (
        json.dumps(
            {
                "id": memory.id,
                "model": "",
                "revision": memory.revision if revision is None else revision,
                "v": [0.1, 0.2],
            },
            separators=(",", ":"),
        )
        + "\n"
    )


def test_preview_says_it_is_lexical_only_and_counts_current_vectors(bank_dir, capsys):
    """#12.7: with embeddings_enabled the worker ranks bm25-entity-semantic; keepgui says so."""
    (bank_dir / "main" / "vectors.jsonl").write_text(
        _vector_line(M1)
        + _vector_line(M2)
        + _vector_line(M3, revision=M3.revision + 7)  # the last one is stale
        + _vector_line(M2).replace(f'"revision":{M2.revision}', '"revision":-0')
    )  # -0: skipped
    code, out, _ = run(
        capsys, "--data-dir", str(bank_dir), "preview", "publish", "--bank", "main", "--now", str(NOW), "--json"
    )
    obj = json.loads(out)
    assert code == 0 and obj["retrieval"] == "bm25-entity" and list(obj)[-1] == "keepgui"
    notice = obj["keepgui"]
    assert notice["lexical_only"] and notice["current_vectors"] == 2
    assert notice["worker_may_rank_differently"] and "bm25-entity-semantic" in notice["why"]
    code, out, _ = run(capsys, "--data-dir", str(bank_dir), "preview", "publish", "--bank", "main", "--now", str(NOW))
    assert "lexical only: keepgui cannot embed the query" in out and "2 current vectors" in out
    config = bank_dir / "off.json"
    config.write_text('{"embeddings_enabled": false}')
    code, out, _ = run(
        capsys,
        "--data-dir",
        str(bank_dir),
        "recall",
        "publish",
        "--bank",
        "main",
        "--now",
        str(NOW),
        "--config",
        str(config),
        "--json",
    )
    notice = json.loads(out)["keepgui"]
    assert not notice["worker_may_rank_differently"] and "ranks lexically too" in notice["why"]


def test_a_budget_that_overflows_in_the_worker_wraps_as_it_does(bank_dir, capsys):
    """#12.6: recall_budget_tokens × 4 is a 64-bit usize product in the worker: 2^62 tokens wrap to 0 bytes."""
    config = bank_dir / "huge.json"
    config.write_text('{"recall_budget_tokens": 4611686018427387904}')
    code, out, _ = run(
        capsys,
        "--data-dir",
        str(bank_dir),
        "preview",
        "publish",
        "--bank",
        "main",
        "--now",
        str(NOW),
        "--config",
        str(config),
        "--json",
    )
    obj = json.loads(out)
    assert code == 0 and obj["memories"] == [] and "message" not in obj
    assert "wraps to 0 bytes" in obj["keepgui"]["budget_note"]
    config.write_text('{"recall_budget_tokens": 4611686018427387905}')  # wraps to 4 bytes
    obj = json.loads(
        run(
            capsys,
            "--data-dir",
            str(bank_dir),
            "preview",
            "publish",
            "--bank",
            "main",
            "--now",
            str(NOW),
            "--config",
            str(config),
            "--json",
        )[1]
    )
    assert "wraps to 4 bytes" in obj["keepgui"]["budget_note"]


def test_preview_and_recall_of_a_bank_the_worker_cannot_load_exit_non_zero(bank_dir, capsys):
    """#12.2: invalid UTF-8 anywhere, the unterminated last line too, and the worker answers BankNotFound."""
    with open(bank_dir / "main" / "memories.jsonl", "ab") as fh:
        fh.write(b'{"id":"fp1","text":"caf\xc3')
    for command in ("preview", "recall"):
        code, out, err = run(capsys, "--data-dir", str(bank_dir), command, "publish", "--bank", "main")
        assert code == 1 and out == "" and "cannot be loaded by the worker" in err and "BankNotFound" in err


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_config_fifo_or_deep_nesting_is_one_clear_error(bank_dir, capsys, kind):
    """#13.4: a FIFO blocked preview and recall for ever; 100,000 levels gave a RecursionError traceback."""
    import os

    from tests.reliability.common import deadline

    path = bank_dir / f"config.{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    for command in ("preview", "recall"):
        with deadline(10, f"{command} --config {kind}"):
            code, out, err = run(
                capsys, "--data-dir", str(bank_dir), command, "q", "--bank", "main", "--config", str(path)
            )
        assert code == 1 and out == "" and err.count("\n") == 1 and str(path) in err


def test_an_unterminated_last_record_counts_everywhere(data_dir, capsys):
    """#12.1: the worker reads a final line without its newline; so do the table, counts, recall,
    preview, memories --json and the consolidation plan (and doctor only notes it)."""
    last = mem("Deploys happen on Friday afternoons")
    twin = mem("deploys happen on friday afternoons!", updated=NOW - DAY)
    make_bank(data_dir, records=SCENARIO + (twin,))
    with open(data_dir / "main" / "memories.jsonl", "ab") as fh:
        fh.write(last.to_line().rstrip(b"\n") + b"\r")  # CRLF-style ending, and no newline
    base = ["--data-dir", str(data_dir)]
    banks = json.loads(run(capsys, *base, "banks", "--json")[1])["banks"]
    assert banks[0]["memories"] == len(SCENARIO) + 2
    listed = run(capsys, *base, "memories", "main", "--json")[1].splitlines()
    assert any(json.loads(line)["id"] == last.id for line in listed)
    recalled = json.loads(run(capsys, *base, "recall", "friday deploys", "--now", str(NOW), "--json")[1])
    assert recalled["memories"][0]["memory"]["id"] == last.id
    previewed = json.loads(run(capsys, *base, "preview", "friday deploys", "--now", str(NOW), "--json")[1])
    assert previewed["memories"][0]["memory"]["id"] == last.id
    plan = json.loads(run(capsys, *base, "compact", "--bank", "main", "--json")[1])
    assert any(g["winner_id"] == last.id or last.id in g["loser_ids"] for g in plan["report"]["groups"])
    code, out, _ = run(capsys, *base, "doctor")
    assert code == 0 and "note: unterminated-line" in out
