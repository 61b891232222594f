"""What the command line says about an iii data dir, in words a person reads (#23.12).

One of a thing is one ("1 memory", "1 rule uses", "1 problem"), never "1 memories"; and that the
default ``iii`` command is not installed here — so a running worker cannot be told to reload — is
said once, by ``doctor``, not after every write (a data dir no worker uses heard it on each one).
"""

from __future__ import annotations

import os

from keepgui.backends.iii.store import DataDir
from tests.conftest import run_cli


def _one_of_each(data_dir) -> None:
    bank = DataDir(str(data_dir)).create_bank("solo")[0]
    bank.save("The build runs on two cores")
    bank.write_rule("style", "Write short sentences.\n")


def test_one_of_a_thing_is_said_in_the_singular(data_dir):
    _one_of_each(data_dir)
    code, out, _err = run_cli(["banks", "--data-dir", str(data_dir), "--reload-command", ""])
    assert code == 0 and "solo  1 memory · 0 pinned · 1 rule" in out, out
    code, out, _err = run_cli(
        ["preview", "build", "--bank", "solo", "--data-dir", str(data_dir), "--reload-command", ""]
    )
    assert code == 0 and "1 rule " in out and "(1 memory, in order)" in out and "1 rules" not in out, out
    (data_dir / "solo" / "memories.jsonl").open("a").write("{not json\n")
    code, out, _err = run_cli(["doctor", "--data-dir", str(data_dir), "--reload-command", ""])
    assert code == 1 and f"1 problem in {data_dir}" in out and "problem(s)" not in out, out
    assert "bank(s)" not in out and "note(s)" not in out


def test_a_missing_iii_is_said_once_by_doctor_not_after_every_write(data_dir, monkeypatch, tmp_path):
    _one_of_each(data_dir)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.delenv("KEEPGUI_RELOAD_COMMAND", raising=False)
    source = ["--source", str(data_dir), "--bank", "solo"]
    for argv in (["keep", *source, "Tests run offscreen"], ["keep", *source, "Lint before every commit"]):
        code, _out, err = run_cli(argv)
        assert code == 0 and "not on PATH" not in err, err
    code, _out, err = run_cli(["save", "solo", "Deploys happen on Fridays", "--data-dir", str(data_dir)])
    assert code == 0 and "not on PATH" not in err, err
    code, out, _err = run_cli(["doctor", "--data-dir", str(data_dir)])
    assert code == 0 and out.count("`iii` is not on PATH") == 1, out
    assert "[note: no-worker-link]" in out and "--reload-command" in out and "(1 note)" in out, out
    # a reload command a person gave that cannot run is this write's trouble: said at once
    code, _out, err = run_cli(["keep", *source, "One more fact", "--reload-command", "no-such-reloader now"])
    assert code == 0 and "`no-such-reloader` is not on PATH" in err, err
    assert os.environ["PATH"] == str(tmp_path / "nothing-here")
