"""Hostile data dirs: reading never crashes, never hangs, never changes a byte.

The corpus (``tests/reliability/hostile.py``) holds corrupt and wrong-typed
lines, invalid UTF-8, 10 MB lines, deep JSON, NUL bytes, garbage and
bomb-like ``bank.yaml`` files, rules that are links out of the data dir,
folders, FIFOs or devices, logs that are folders or FIFOs, a data dir that is
a file, a FIFO or a link loop, odd bank and rule names, a read-only bank and
seeded random damage. Every case is read through the CLI (``banks``,
``memories B --history``, ``rules B``, ``doctor --json``; fresh processes with
a strict UTF-8 stdout) and through the library; writes into read-only or
unreadable banks must be refused cleanly.
"""

from __future__ import annotations

import os

import pytest

from keepgui.backends.iii.store import DataDir
from tests.conftest import tree_digest
from tests.reliability.common import deadline, run_cli
from tests.reliability.hostile import hostile_corpus, no_permission_unprivileged, release_corpus, run_hostile


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus, read once; the conftest's tree_digest is taken too where it cannot block (no FIFOs)."""
    root = str(tmp_path_factory.mktemp("hostile"))
    try:
        cases = hostile_corpus(root, fuzz=2, seed=0)
        digests = {c.name: tree_digest(c.folder) for c in cases if not c.special}
        result = run_hostile(cases, thorough=False)
        after = {c.name: tree_digest(c.folder) for c in cases if not c.special}
        yield cases, result, digests, after
    finally:
        release_corpus(root)


def _case_names():
    # The names are fixed by hostile_corpus; building a throwaway corpus just to list them
    # would cost seconds, so the list is kept here and checked against the corpus below.
    return [
        "corrupt-lines",
        "wrong-types",
        "invalid-utf8",
        "invalid-utf8-torn-tail",
        "huge-lines",
        "deep-json",
        "nul-bytes",
        "empty-and-blank",
        "repeated-revisions",
        "bank-yaml-garbage",
        "bank-yaml-special",
        "rules-hostile",
        "rules-folder-odd",
        "log-not-a-file",
        "vectors-hostile",
        "data-dir-is-a-file",
        "data-dir-is-a-fifo",
        "data-dir-dangling-link",
        "data-dir-link-loop",
        "data-dir-is-dev-null",
        "data-dir-missing",
        "names",
        "trash-junk",
        "leftovers-and-legacy",
        "read-only",
        "no-permission",
        "fuzz-0-0",
        "fuzz-0-1",
    ]


def test_the_corpus_is_the_expected_one(corpus):
    cases, result, _, _ = corpus
    made = [c.name for c in cases]
    optional = {"read-only", "no-permission"}  # need a working protection mechanism (see below)
    assert [n for n in _case_names() if n not in optional] == [n for n in made if n not in optional]
    assert result["inputs"] == len(cases) and result["commands"] > 100


@pytest.mark.parametrize("name", _case_names())
def test_reading_a_hostile_case(corpus, name):
    cases, result, digests, after = corpus
    by_name = {c.name: c for c in cases}
    if name not in by_name:
        if name == "no-permission":  # chmod does not bind for root (CI): read it in a child it binds
            failures = no_permission_unprivileged()
            if failures is None:
                pytest.skip("chmod does not bind here, and no child without root's override can run (setpriv)")
            assert failures == [], "\n".join(failures)
            return
        pytest.skip(f"the case {name} cannot be built here")
    failures = result["by_case"][name]
    assert failures == [], "\n".join(failures)
    if name in digests:
        assert after[name] == digests[name]


def test_read_only_bank(corpus):
    """A read-only bank reads fine and refuses every write with one clean line; nothing changes.

    As root a 0555 folder does not stop writes, so the case uses ``chattr +i``
    there; without either mechanism the case cannot be built and is skipped.
    """
    cases, result, _, _ = corpus
    case = next((c for c in cases if c.name == "read-only"), None)
    if case is None:
        pytest.skip("neither chmod nor chattr +i can make a folder read-only here")
    assert case.note in ("chmod", "chattr") and len(case.writes) >= 5
    assert result["by_case"]["read-only"] == []


def test_bank_yaml_values_that_broke_safe_load_are_problems_not_crashes(tmp_path):
    """Regression: yaml.safe_load raised ValueError/KeyError/AttributeError/RecursionError here."""
    contents = {
        "date": b"description: 2024-13-01\n",
        "int": b"description: !!int abc\n",
        "bool": b"description: !!bool maybe\n",
        "ts": b"description: !!timestamp xyz\n",
        "deep": b"description: " + b"[" * 30_000 + b"]" * 30_000 + b"\n",
        "other-key": b"when: 2001-02-30\ndescription: still read\n",
        "surrogate": b'description: "\\udcff"\n',
    }
    for name, content in contents.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "bank.yaml").write_bytes(content)
    datadir = DataDir(tmp_path)
    for name in contents:
        bank = datadir.bank(name)
        if name == "other-key":
            assert bank.description() == "still read" and bank.description_problem() == ""
        else:
            assert bank.description() == "" and bank.description_problem()


def test_special_files_do_not_hang_the_library(tmp_path):
    """Regression: a FIFO bank.yaml or vectors.jsonl blocked for ever; /dev/zero never ended."""
    from keepgui.backends.iii.doctor import diagnose

    for name in ("fifo-yaml", "zero-yaml", "fifo-vectors"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "memories.jsonl").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo-yaml" / "bank.yaml")
    os.symlink("/dev/zero", tmp_path / "zero-yaml" / "bank.yaml")
    os.mkfifo(tmp_path / "fifo-vectors" / "vectors.jsonl")
    with deadline(20, "reading special files"):
        datadir = DataDir(tmp_path)
        assert [b.info().description for b in datadir.banks()] == ["", "", ""]
        kinds = {(f.bank, f.kind) for f in diagnose(datadir)}
    assert ("fifo-yaml", "bank-yaml") in kinds and ("zero-yaml", "bank-yaml") in kinds
    assert ("fifo-vectors", "vector-lines") in kinds


def test_a_bank_name_that_is_not_utf8_prints_under_a_strict_locale(tmp_path):
    """Regression: printing the name raised UnicodeEncodeError (a traceback) on a strict UTF-8 stdout."""
    os.makedirs(os.path.join(os.fsencode(tmp_path), b"bank\xff"))
    for args in (["banks"], ["doctor", "--json"]):
        result = run_cli(str(tmp_path), *args)
        assert "Traceback" not in result.stderr and result.rc in (0, 1)
        assert "bank\\udcff" in result.stdout


def test_a_dot_rule_listed_is_also_readable(tmp_path):
    """Regression: `.foo.md` is listed as rule `.foo` (as the worker does) but could not be read."""
    bank, _ = DataDir(tmp_path).ensure_bank("main")
    (tmp_path / "main" / "rules" / ".foo.md").write_text("hidden but injected\n")
    rules, problems = bank.rules()
    assert [r.name for r in rules] == [".foo"] and problems == []
    for bad in ("../x", "a/b", ""):
        with pytest.raises(Exception, match="not a rule name"):
            bank.read_rule(bad)
