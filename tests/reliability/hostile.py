"""Damaged and malicious data dirs: reading them must never crash, hang, or change a byte.

:func:`hostile_corpus` builds the cases under a folder; :func:`run_hostile`
reads each one through the CLI (fresh processes) and through the library,
and checks: exit status 0 or 1, never a traceback, every stderr line a
``keepgui: ...`` message (a failing command says ``keepgui: error: ...`` once),
``--json`` output parses, nothing hangs, and :func:`disk_state` of the case
folder is identical before and after. Some cases also try writes that must be
refused (read-only and unreadable banks), and some carry ``expect``: checks
of what the library must make of the damage (which lines are corrupt, why a
bank is unreadable).

Call :func:`release_corpus` before deleting the folder: the read-only case
may have made files immutable.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from tests.reliability.common import Hang, deadline, disk_state, run_cli, state_diff
from tests.reliability.model import model_fingerprint, worker_line

TEN_MB = 10 * 1024 * 1024


@dataclass
class HostileCase:
    """One hostile input: a data dir (or something where one should be) and what to ask of it.

    ``folder`` is snapshotted before and after; ``banks`` are the names given
    to ``memories``/``rules`` (hostile names included); ``writes`` are argv
    lists that must fail cleanly without changing anything; ``extra`` are more
    read commands; ``expect(datadir)`` returns failures of semantic checks;
    ``special`` marks cases with FIFOs, devices or unreadable entries.
    """

    name: str
    folder: str
    data_dir: str
    banks: list[str] = field(default_factory=list)
    writes: list[list[str]] = field(default_factory=list)
    extra: list[list[str]] = field(default_factory=list)
    expect: Callable | None = None
    special: bool = False
    note: str = ""
    cli_banks: list[str] | None = None
    """Names for the per-bank CLI commands in a quick run (None: all of ``banks``)."""
    watch: list[str] = field(default_factory=list)
    """More paths that must not change: where the case's links point, outside the data dir."""


def record_line(text: str, revision: int = 0, **fields) -> bytes:
    """A valid record line, as the worker writes it."""
    rec = {
        "id": model_fingerprint(text),
        "text": text,
        "entities": [],
        "tags": [],
        "confidence": "stated",
        "corroboration": 0,
        "pinned": False,
        "created_at": 1_750_000_000_000,
        "updated_at": 1_750_000_000_000 + revision,
        "revision": revision,
    }
    rec.update(fields)
    return worker_line(rec)


def _bank(
    data_dir: str,
    name: str | bytes = "main",
    log: bytes | None = None,
    yaml: bytes | None = b"description: ''\n",
    rules: dict | None = None,
) -> str:
    path = os.path.join(os.fsencode(data_dir), os.fsencode(name))
    os.makedirs(os.path.join(path, b"rules"), exist_ok=True)
    if yaml is not None:
        with open(os.path.join(path, b"bank.yaml"), "wb") as fh:
            fh.write(yaml)
    if log is not None:
        with open(os.path.join(path, b"memories.jsonl"), "wb") as fh:
            fh.write(log)
    for rule, content in (rules or {}).items():
        with open(os.path.join(path, b"rules", os.fsencode(rule)), "wb") as fh:
            fh.write(content)
    return os.fsdecode(path)


# ---------------------------------------------------------------------- expectations


def _expect_records(
    bank: str,
    texts: set[str],
    corrupt_lines: list[int] | None = None,
    torn: bool = False,
    unreadable: str | None = None,
):
    def check(datadir) -> list[str]:
        b = datadir.bank(bank)
        out = []
        if unreadable is not None:
            if not b.unreadable or unreadable not in b.unreadable:
                out.append(f"bank {bank}: expected unreadable ({unreadable}), got {b.unreadable!r}")
            if b.info().readable:
                out.append(f"bank {bank}: info() says readable")
            return out
        if b.unreadable:
            return [f"bank {bank}: unexpectedly unreadable: {b.unreadable}"]
        got = {m.text for m in b.memories(history=True)}
        if got != texts:
            out.append(f"bank {bank}: records {sorted(t[:30] for t in got)}, expected {sorted(t[:30] for t in texts)}")
        if corrupt_lines is not None:
            lines = [p.line for p in b.log.problems if p.kind == "corrupt"]
            if lines != corrupt_lines:
                out.append(f"bank {bank}: corrupt lines {lines}, expected {corrupt_lines}")
        if (b.log.torn_tail is not None) != torn:
            out.append(f"bank {bank}: torn tail {b.log.torn_tail}, expected {torn}")
        return out

    return check


def _expect_description(cases: dict[str, str]):
    def check(datadir) -> list[str]:
        out = []
        for bank, want in cases.items():
            got = datadir.bank(bank).description()
            if got != want:
                out.append(f"bank {bank}: description {got[:40]!r}, expected {want!r}")
            if want == "" and not datadir.bank(bank).description_problem():
                out.append(f"bank {bank}: an unusable bank.yaml reported no problem")
        return out

    return check


def _expect_rules(bank: str, names: list[str], problems: int):
    def check(datadir) -> list[str]:
        rules, found = datadir.bank(bank).rules()
        out = []
        if [r.name for r in rules] != names:
            out.append(f"readable rules {[r.name for r in rules]}, expected {names}")
        if len(found) != problems:
            out.append(f"{len(found)} rule problems ({[p.what[:60] for p in found]}), expected {problems}")
        return out

    return check


def _combine(*checks):
    return lambda datadir: [f for c in checks for f in c(datadir)]


# ---------------------------------------------------------------------- protections (read-only cases)


def _chattr(flag: str, path: str) -> bool:
    try:
        done = subprocess.run(["chattr", "-R", flag, path], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def chmod_protects() -> bool:
    """True when a 0555 folder really stops this process writing (false as root)."""
    probe = tempfile.mkdtemp(prefix="keepgui-probe-")
    try:
        os.chmod(probe, 0o555)
        try:
            open(os.path.join(probe, "x"), "wb").close()
        except PermissionError:
            return True
        return False
    finally:
        os.chmod(probe, 0o755)
        shutil.rmtree(probe, ignore_errors=True)


def immutable_protects() -> bool:
    """True when ``chattr +i`` works here and stops even this process (root) writing."""
    probe = tempfile.mkdtemp(prefix="keepgui-probe-")
    try:
        if not _chattr("+i", probe):
            return False
        try:
            open(os.path.join(probe, "x"), "wb").close()
        except OSError:
            return True
        return False
    finally:
        _chattr("-i", probe)
        shutil.rmtree(probe, ignore_errors=True)


def make_read_only(path: str) -> str | None:
    """Make everything under ``path`` unwritable: chmod where that binds, else ``chattr +i`` (root).

    Returns the mechanism used, or None when neither stops this process.
    """
    if chmod_protects():
        for folder, _dirs, files in os.walk(path, topdown=False):
            for name in files:
                os.chmod(os.path.join(folder, name), 0o444)
            os.chmod(folder, 0o555)
        return "chmod"
    if immutable_protects() and _chattr("+i", path):
        return "chattr"
    return None


def release_corpus(root: str) -> None:
    """Undo every protection under ``root`` so it can be deleted."""
    if not os.path.exists(root):
        return
    _chattr("-i", root)
    # Top-down: a folder's subfolders are opened up before the walk enters them.
    for folder, dirs, files in os.walk(root):
        for names, mode in ((dirs, 0o755), (files, 0o644)):
            for name in names:
                path = os.path.join(folder, name)
                if not os.path.islink(path):
                    with contextlib.suppress(OSError):
                        os.chmod(path, mode)


# ---------------------------------------------------------------------- the corpus


def hostile_corpus(root: str, fuzz: int = 4, seed: int = 0) -> list[HostileCase]:
    """Build every hostile case under ``root``; ``fuzz`` adds that many seeded random-damage data dirs.

    Cases that cannot be made here (unreadable files when running as root)
    are left out; the returned cases' ``note`` says which mechanism a
    read-only case used.
    """
    cases: list[HostileCase] = []
    outside = os.path.join(root, "outside")
    os.makedirs(outside, exist_ok=True)
    secret = os.path.join(outside, "secret.md")
    with open(secret, "wb") as fh:
        fh.write(b"private text outside the data dir\n")
    os.makedirs(os.path.join(outside, "rules-elsewhere"), exist_ok=True)
    with open(os.path.join(outside, "rules-elsewhere", "foreign.md"), "wb") as fh:
        fh.write(b"# a rule that lives outside the data dir\n")

    def case(name: str, **kw) -> tuple[str, str]:
        folder = os.path.join(root, name)
        data_dir = os.path.join(folder, "memory")
        os.makedirs(data_dir, exist_ok=True)
        return folder, data_dir

    def add(name, folder, data_dir, **kw):
        cases.append(HostileCase(name=name, folder=folder, data_dir=data_dir, **kw))

    # -- corrupt and wrong-typed lines --------------------------------------------------------
    f, d = case("corrupt-lines")
    a, b = record_line("first good memory"), record_line("second good memory")
    bad = [
        b'{"id": "fp-torn',
        b"not json at all",
        b"[]",
        b"{}",
        b"null",
        b'"a string"',
        b"123",
        b'{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":1} trailing',
        b"\xef\xbb\xbf" + record_line("after a byte order mark")[:-1],
        b'{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":1,"created_at":2}',
        b'{"id":"fp1","text":"abc","confidence":"stated","created_at":NaN,"updated_at":1}',
        b'{"id":"fp1","text":"lone \\ud800 surrogate","confidence":"stated","created_at":1,"updated_at":1}',
        b'{"id":"fp1","text":"raw\ttab","confidence":"stated","created_at":1,"updated_at":1}',
    ]
    _bank(d, log=a + b"\n".join(bad) + b"\n" + b)
    add(
        "corrupt-lines",
        f,
        d,
        banks=["main"],
        expect=_expect_records("main", {"first good memory", "second good memory"}, list(range(2, 2 + len(bad)))),
    )

    f, d = case("wrong-types")
    base = {"id": "fp1", "text": "abc", "confidence": "stated", "created_at": 1, "updated_at": 1}
    wrong = [
        {"id": 1},
        {"text": None},
        {"entities": "a"},
        {"tags": [1]},
        {"confidence": "maybe"},
        {"corroboration": -1},
        {"corroboration": 4294967296},
        {"pinned": "yes"},
        {"source": "s"},
        {"source": {"session_id": 5}},
        {"created_at": 1.0},
        {"updated_at": -5},
        {"invalid_at": "x"},
        {"superseded_by": 7},
        {"revision": 18446744073709551616},
        {"revision": 1e400},
        {"id": None},
        {"created_at": True},
    ]
    lines = [json.dumps({**base, **w}).replace("Infinity", "1e400").encode() + b"\n" for w in wrong]
    lines.append(json.dumps({k: v for k, v in base.items() if k != "id"}).encode() + b"\n")  # missing id
    _bank(d, log=b"".join(lines))
    add("wrong-types", f, d, banks=["main"], expect=_expect_records("main", set(), list(range(1, len(lines) + 1))))

    # -- encoding ------------------------------------------------------------------------------
    f, d = case("invalid-utf8")
    _bank(d, log=record_line("fine line") + b'{"id":"fp1","text":"bad \xff byte"}\n' + record_line("after it"))
    add(
        "invalid-utf8",
        f,
        d,
        banks=["main"],
        writes=[["save", "main", "a write into an unreadable bank"]],
        expect=_expect_records("main", set(), unreadable="line 2"),
    )

    f, d = case("invalid-utf8-torn-tail")
    _bank(d, log=record_line("fine line") + b'{"id":"fp2","text":"cut \xe6\x97')
    # The worker's lines() fails on the unterminated last line too: the bank is unloadable (§1.6a).
    add("invalid-utf8-torn-tail", f, d, banks=["main"], expect=_expect_records("main", set(), unreadable="line 2"))

    # -- size and depth ------------------------------------------------------------------------
    f, d = case("huge-lines")
    big_text = "x" * TEN_MB
    _bank(d, "valid", log=record_line(big_text) + record_line("small one"))
    _bank(d, "garbage", log=b'{"id":"' + b"y" * TEN_MB + b"\n" + record_line("small one"))
    # The worker reads a line of any length: a valid 10 MB record is a memory, a 10 MB torn line a
    # corrupt line it skips (keepgui shows the long text cut, never laid out whole).
    add(
        "huge-lines",
        f,
        d,
        banks=["valid", "garbage"],
        expect=_combine(
            _expect_records("valid", {big_text, "small one"}, []),
            _expect_records("garbage", {"small one"}, [1]),
        ),
    )

    f, d = case("deep-json")
    deep = [
        b"[" * 200_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        record_line("deep unknown key")[:-2] + b',"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ]
    _bank(d, log=b"\n".join(deep) + b"\n" + record_line("shallow"))
    add("deep-json", f, d, banks=["main"])

    f, d = case("nul-bytes")
    _bank(d, "inline", log=record_line("good") + b'{"id":"fp1","text":"nul \x00 inside"}\n' + b"\x00" * 64 + b"\n")
    _bank(d, "tail", log=record_line("good") + b"\x00" * 4096)
    _bank(d, "only", log=b"\x00" * 4096)
    add(
        "nul-bytes",
        f,
        d,
        banks=["inline", "tail", "only"],
        cli_banks=["inline", "tail"],
        expect=_combine(_expect_records("inline", {"good"}, [2, 3]), _expect_records("tail", {"good"}, [], torn=True)),
    )

    f, d = case("empty-and-blank")
    _bank(d, "empty", log=b"")
    _bank(d, "blank", log=" \n\n\t\n\r\n\u2028\n\xa0\n\u3000\n".encode())
    _bank(
        d, "crlf", log=record_line("windows line one")[:-1] + b"\r\n" + record_line("windows line two")[:-1] + b"\r\n"
    )
    _bank(d, "no-log")
    add(
        "empty-and-blank",
        f,
        d,
        banks=["empty", "blank", "crlf", "no-log"],
        cli_banks=["blank", "crlf"],
        expect=_combine(
            _expect_records("empty", set(), []),
            _expect_records("blank", set(), []),
            _expect_records("crlf", {"windows line one", "windows line two"}, []),
            _expect_records("no-log", set(), []),
        ),
    )

    f, d = case("repeated-revisions")
    _bank(
        d,
        log=record_line("same revision twice")
        + record_line("same revision twice", pinned=True)
        + record_line("x" * 40, 3)
        + record_line("x" * 40, 1),
    )
    add("repeated-revisions", f, d, banks=["main"])

    # -- bank.yaml ------------------------------------------------------------------------------
    f, d = case("bank-yaml-garbage")
    rng = random.Random(seed)
    laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for c in "bcdefghi":
        laughs.append(f"{c}: &{c} [" + ",".join([f"*{chr(ord(c) - 1)}"] * 9) + "]")
    laughs.append("description: *i")
    merge = ["l0: &l0 {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}"]
    for lvl in range(1, 9):
        merge.append(f"l{lvl}: &l{lvl} {{<<: [" + ", ".join([f"*l{lvl - 1}"] * 10) + "]}")
    merge.append("description: fine after a merge bomb")
    yamls = {
        "binary": bytes(rng.randrange(256) for _ in range(4096)),
        "huge": b"description: " + b"h" * (1 << 20) + b"\n",
        "laughs": "\n".join(laughs).encode(),
        "merge-bomb": "\n".join(merge).encode(),
        "deep": b"description: " + b"[" * 20_000 + b"]" * 20_000 + b"\n",
        "deep-map": b"description: " + b"{a: " * 5_000 + b"1" + b"}" * 5_000 + b"\n",
        "bad-date": b"description: 2024-13-01\n",
        "bad-date-other-key": b"created: 2001-02-30\ndescription: kept\n",
        "bad-int": b"x: !!int abc\ndescription: kept too\n",
        "bad-bool": b"description: !!bool maybe\n",
        "bad-timestamp": b"description: !!timestamp xyz\n",
        "bad-hex": b"description: 0x_\n",
        "surrogate": b'description: "\\ud800 lone"\n',
        "python-tag": b'description: !!python/object/apply:os.system ["touch /tmp/keepgui-pwned"]\n',
        "two-docs": b"description: one\n---\ndescription: two\n",
        "list": b"- a\n- b\n",
        "nul": b"description: a\x00b\n",
        "bom": b"\xef\xbb\xbfdescription: with a bom\n",
        "tab-indent": b"description:\n\t- x\n",
        "unclosed": b"description: [unclosed\n",
        "anchor-loop": b"description: &a [*a]\n",
    }
    for name, content in yamls.items():
        _bank(d, name, yaml=content)
    descriptions = dict.fromkeys(yamls, "")
    descriptions.update(
        {
            "merge-bomb": "fine after a merge bomb",
            "bad-date-other-key": "kept",
            "bad-int": "kept too",
            "bom": "with a bom",
        }
    )
    # `memories` and `rules` never read bank.yaml; `banks` and `doctor` read every one of them.
    add(
        "bank-yaml-garbage",
        f,
        d,
        banks=list(yamls),
        expect=_expect_description(descriptions),
        cli_banks=["binary", "laughs"],
    )

    f, d = case("bank-yaml-special")
    _bank(d, "dir", yaml=None)
    os.mkdir(os.path.join(d, "dir", "bank.yaml"))
    _bank(d, "fifo", yaml=None)
    os.mkfifo(os.path.join(d, "fifo", "bank.yaml"))
    _bank(d, "zero", yaml=None)
    os.symlink("/dev/zero", os.path.join(d, "zero", "bank.yaml"))
    _bank(d, "dangling", yaml=None)
    os.symlink("nowhere.yaml", os.path.join(d, "dangling", "bank.yaml"))
    _bank(d, "loop", yaml=None)
    os.symlink("bank.yaml", os.path.join(d, "loop", "bank.yaml"))
    add(
        "bank-yaml-special",
        f,
        d,
        banks=["dir", "fifo", "zero", "dangling", "loop"],
        special=True,
        cli_banks=["fifo"],
        expect=_expect_description({"dir": "", "fifo": "", "zero": "", "loop": ""}),
    )

    # -- rules ---------------------------------------------------------------------------------
    f, d = case("rules-hostile")
    rules_dir = os.path.join(
        _bank(
            d,
            rules={
                "good.md": b"# Good\nA fine rule.\n",
                "bad-utf8.md": b"caf\xe9\n",
                "empty.md": b"",
                "nul.md": b"a\x00b\n",
                "crlf.md": b"# CRLF\r\nline\r\n",
                "Bad Name.md": b"spaces\n",
                ".hidden.md": b"a dot rule\n",
                "UPPER.md": b"upper\n",
                "x.md.tmp": b"temp\n",
                ".style.md.tmp": b"temp\n",
                "notes.MD": b"not a rule\n",
                ".md": b"no stem\n",
                "huge.md": b"h" * (16 * 1024 * 1024 + 1),
            },
        ),
        "rules",
    )
    with open(os.path.join(os.fsencode(rules_dir), b"r\xff.md"), "wb") as fh:
        fh.write(b"a name that is not UTF-8\n")
    os.symlink(secret, os.path.join(rules_dir, "leak.md"))
    os.mkdir(os.path.join(rules_dir, "dir.md"))
    os.mkfifo(os.path.join(rules_dir, "fifo.md"))
    os.symlink("/dev/zero", os.path.join(rules_dir, "zero.md"))
    os.symlink("loop.md", os.path.join(rules_dir, "loop.md"))
    os.symlink("nowhere", os.path.join(rules_dir, "dangling.md"))
    os.symlink("good.md", os.path.join(rules_dir, "inside.md"))
    # Readable: good, empty, nul, crlf, Bad Name, .hidden, UPPER, inside, leak (a link out of the data
    # dir is read, as the worker reads it; never written through), r\udcff. Problems: bad-utf8, huge.
    add(
        "rules-hostile",
        f,
        d,
        banks=["main"],
        special=True,
        watch=[outside],
        expect=_expect_rules(
            "main",
            sorted(
                [
                    ".hidden",
                    "Bad Name",
                    "UPPER",
                    "crlf",
                    "empty",
                    "good",
                    "inside",
                    "leak",
                    "nul",
                    os.fsdecode(b"r\xff"),
                ]
            ),
            2,
        ),
    )

    f, d = case("rules-folder-odd")
    _bank(d, "file")
    os.rmdir(os.path.join(d, "file", "rules"))
    with open(os.path.join(d, "file", "rules"), "wb") as fh:
        fh.write(b"rules is a file here\n")
    _bank(d, "elsewhere")
    os.rmdir(os.path.join(d, "elsewhere", "rules"))
    os.symlink(os.path.join(outside, "rules-elsewhere"), os.path.join(d, "elsewhere", "rules"))
    _bank(d, "missing")
    os.rmdir(os.path.join(d, "missing", "rules"))
    add("rules-folder-odd", f, d, banks=["file", "elsewhere", "missing"], watch=[outside])

    # -- the log is not a file -------------------------------------------------------------------
    f, d = case("log-not-a-file")
    _bank(d, "dir")
    os.mkdir(os.path.join(d, "dir", "memories.jsonl"))
    _bank(d, "fifo")
    os.mkfifo(os.path.join(d, "fifo", "memories.jsonl"))
    _bank(d, "zero")
    os.symlink("/dev/zero", os.path.join(d, "zero", "memories.jsonl"))
    _bank(d, "dangling")
    os.symlink("nowhere.jsonl", os.path.join(d, "dangling", "memories.jsonl"))
    _bank(d, "loop")
    os.symlink("memories.jsonl", os.path.join(d, "loop", "memories.jsonl"))
    add(
        "log-not-a-file",
        f,
        d,
        banks=["dir", "fifo", "zero", "dangling", "loop"],
        special=True,
        cli_banks=["fifo", "zero", "loop"],
        writes=[["save", "fifo", "never written into a FIFO"], ["save", "dir", "nor into a folder"]],
        expect=_combine(*(_expect_records(b, set(), unreadable="") for b in ("dir", "fifo", "zero", "loop"))),
    )

    f, d = case("vectors-hostile")
    _bank(d, "fifo", log=record_line("has a fifo sidecar"))
    os.mkfifo(os.path.join(d, "fifo", "vectors.jsonl"))
    _bank(d, "garbage", log=record_line("has a garbage sidecar"))
    with open(os.path.join(d, "garbage", "vectors.jsonl"), "wb") as fh:
        fh.write(b"\xff\xfe garbage\n{}\n" + b"[" * 50_000 + b"\n")
    _bank(d, "dir", log=record_line("has a folder sidecar"))
    os.mkdir(os.path.join(d, "dir", "vectors.jsonl"))
    # `memories` and `rules` never read vectors.jsonl; `banks` and `doctor` do.
    add("vectors-hostile", f, d, banks=["fifo", "garbage", "dir"], special=True, cli_banks=["fifo"])

    # -- the data dir itself ----------------------------------------------------------------------
    for name, make in (
        ("data-dir-is-a-file", lambda p: open(p, "wb").close()),
        ("data-dir-is-a-fifo", os.mkfifo),
        ("data-dir-dangling-link", lambda p: os.symlink("nowhere", p)),
        ("data-dir-link-loop", lambda p: os.symlink(os.path.basename(p), p)),
        ("data-dir-is-dev-null", lambda p: os.symlink("/dev/null", p)),
        ("data-dir-missing", lambda p: None),
    ):
        folder = os.path.join(root, name)
        os.makedirs(folder)
        data_dir = os.path.join(folder, "memory")
        make(data_dir)
        add(name, folder, data_dir, banks=["main"], special=True)

    # -- names ----------------------------------------------------------------------------------
    f, d = case("names")
    odd = ["my bank", "Main", "-x", "café", "a\nb", "n" * 255, ".hidden", "UPPER", "--help", "a b c"]
    for name in odd:
        _bank(d, name, log=record_line(f"memory in {name!r}"))
    _bank(d, b"b\xff", log=record_line("memory in a bank whose name is not UTF-8"))
    os.makedirs(os.path.join(d, ".trash", "old-1750000000000"))
    with open(os.path.join(d, "a-file-not-a-bank"), "wb") as fh:
        fh.write(b"x")
    queried = odd + [
        os.fsdecode(b"b\xff"),
        "..",
        "../names",
        ".trash",
        "a/b",
        "memory/../main",
        "nonexistent",
        "",
        ".",
        "/etc",
        "main\x01",
    ]
    add(
        "names",
        f,
        d,
        banks=queried,
        extra=[["bank", "trashed", "--json"]],
        cli_banks=["my bank", "-x", "a\nb", "--help", os.fsdecode(b"b\xff"), "..", "../names", ".trash", "a/b", ""],
    )

    f, d = case("trash-junk")
    _bank(d, log=record_line("a memory"))
    trash = os.path.join(d, ".trash")
    os.makedirs(os.path.join(trash, "good-1750000000000"))
    for junk in ("no-number", "-123", "x-12a", "file-1750000000000", "..-1"):
        p = os.path.join(trash, junk)
        if junk.startswith("file"):
            open(p, "wb").close()
        else:
            os.makedirs(p, exist_ok=True)
    add("trash-junk", f, d, banks=["main"], extra=[["bank", "trashed"], ["bank", "trashed", "--json"]])

    f, d = case("leftovers-and-legacy")
    _bank(d, log=record_line("a memory"), rules={".style.md.tmp": b"half", ".style.md.keepgui-1-abcd.tmp": b"half"})
    _bank(d, "legacy", yaml=b"description: old layout\n")
    with open(os.path.join(d, "legacy", "facts.jsonl"), "wb") as fh:
        fh.write(record_line("a legacy fact"))
    os.makedirs(os.path.join(d, "legacy", "blocks"))
    add("leftovers-and-legacy", f, d, banks=["main", "legacy"])

    # -- permissions ----------------------------------------------------------------------------
    f, d = case("read-only")
    _bank(d, log=record_line("protected memory"), rules={"style.md": b"# Style\n"})
    how = make_read_only(f)
    if how is not None:
        mid = model_fingerprint("protected memory")
        add(
            "read-only",
            f,
            d,
            banks=["main"],
            note=how,
            writes=[
                ["save", "main", "a new memory"],
                ["save", "main", "protected memory"],
                ["delete", "main", mid],
                ["pin", "main", mid],
                ["rule-set", "main", "style", "--stdin"],
                ["bank", "create", "newbank"],
                ["bank", "trash", "main"],
            ],
            expect=_expect_records("main", {"protected memory"}, []),
        )

    if chmod_protects():  # unreadable entries cannot be made for root (see no_permission_unprivileged)
        cases.append(no_permission_case(root))

    # -- seeded random damage -----------------------------------------------------------------------
    for n in range(fuzz):
        f, d = case(f"fuzz-{seed}-{n}")
        _fuzz_bank(d, random.Random(f"{seed}/{n}"))
        add(f"fuzz-{seed}-{n}", f, d, banks=["main", "yaml"], cli_banks=["main"])
    return cases


def no_permission_case(root: str) -> HostileCase:
    """The case of unreadable entries (a bank folder, a log, a rule, a bank.yaml at mode 0), under
    ``root``; it only means something where chmod binds (not for root: see
    :func:`no_permission_unprivileged`)."""
    folder = os.path.join(root, "no-permission")
    d = os.path.join(folder, "memory")
    os.makedirs(d, exist_ok=True)
    _bank(d, "locked", log=record_line("x" * 10))
    _bank(d, "log", log=record_line("y" * 10), rules={"r.md": b"rule"})
    _bank(d, "yaml", log=record_line("z" * 10))
    os.chmod(os.path.join(d, "log", "memories.jsonl"), 0)
    os.chmod(os.path.join(d, "log", "rules", "r.md"), 0)
    os.chmod(os.path.join(d, "yaml", "bank.yaml"), 0)
    os.chmod(os.path.join(d, "locked"), 0)
    return HostileCase(
        name="no-permission",
        folder=folder,
        data_dir=d,
        banks=["locked", "log", "yaml"],
        special=True,
        writes=[["save", "log", "cannot append here"], ["save", "locked", "nor here"]],
    )


BYPASS_CAPABILITIES = "-dac_override,-dac_read_search"
"""The capabilities that let root read and write whatever the permission bits say: a child without
them is held by chmod like any user (what :func:`no_permission_unprivileged` runs the case as)."""


def no_permission_unprivileged(timeout: float = 600.0) -> list[str] | None:
    """Build and read the no-permission case in a child process that file permissions bind, when
    this one is root (CI): ``setpriv`` drops the capabilities that bypass them from the child's
    bounding set (and so from every process it starts). Not a switch to another uid: the
    interpreter of a virtual environment made by root is often under ``/root`` (mode 0700), out of
    another user's reach. Returns the case's failures, or None when no such child can run here (no
    ``setpriv``, or not allowed to drop them). Its folder is a fresh one, removed after."""
    import sys

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    base = tempfile.mkdtemp(prefix="keepgui-hostile-unprivileged-")
    script = (
        "import json, sys\n"
        "from tests.reliability.hostile import chmod_protects, no_permission_case, run_hostile\n"
        "if not chmod_protects():\n"
        "    sys.exit('chmod does not bind in this child')\n"
        "case = no_permission_case(sys.argv[1])\n"
        "print(json.dumps(run_hostile([case], thorough=False)['by_case']['no-permission']))\n"
    )
    argv = [setpriv, f"--bounding-set={BYPASS_CAPABILITIES}", "--inh-caps=-all", sys.executable, "-c", script, base]
    from tests.reliability.common import ROOT, child_env

    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=child_env())
    finally:
        release_corpus(base)
        shutil.rmtree(base, ignore_errors=True)
    if done.returncode != 0 and done.stderr.startswith("setpriv:"):
        return None  # not allowed to drop capabilities here
    if done.returncode != 0:
        return [f"the unprivileged child failed: {done.stderr.strip()[-2000:]}"]
    return [str(f) for f in json.loads(done.stdout.strip().splitlines()[-1])]


def _fuzz_bank(data_dir: str, rng: random.Random) -> None:
    """A log of valid lines with random bytes flipped, inserted, deleted or cut; random yaml and rules."""
    texts = ["User prefers short names", "Café 日本語 🎉 memory", 'quote " and \\ backslash', "x" * 300]
    out = []
    for i in range(rng.randint(20, 200)):
        raw = bytearray(record_line(rng.choice(texts) + f" {i}", rng.randrange(5), tags=["a", "b"]))
        for _ in range(rng.choice((0, 0, 1, 1, 2, 5))):
            if not raw:
                break
            op, at = rng.randrange(4), rng.randrange(len(raw))
            if op == 0:
                raw[at] = rng.randrange(256)
            elif op == 1:
                raw.insert(at, rng.choice(b'{}[]",:\\\n\x00\xff0123456789e-.'))
            elif op == 2:
                del raw[at]
            else:
                del raw[at:]
        out.append(bytes(raw))
    log = b"".join(out)
    _bank(data_dir, "main", log=log if rng.random() < 0.5 else log.replace(b"\xff", b"?"))
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(0, 512)))
    _bank(
        data_dir,
        "yaml",
        yaml=b"description: " + junk,
        rules={"fuzz.md": bytes(rng.randrange(256) for _ in range(rng.randint(0, 512)))},
    )


# ---------------------------------------------------------------------- running


READ_COMMANDS = (("banks",), ("banks", "--json"), ("doctor", "--json"))


def case_commands(case: HostileCase, thorough: bool = True) -> list[list[str]]:
    """The read commands run on a case: ``banks``, ``doctor --json``, and per bank name
    ``memories --history`` and ``rules``. A quick run (not ``thorough``) leaves out
    ``banks --json`` and names only each case's ``cli_banks``: the banks whose damage
    those commands actually read."""
    cmds = [list(c) for c in READ_COMMANDS if thorough or "--json" not in c or c[0] == "doctor"]
    for bank in case.banks if thorough or case.cli_banks is None else case.cli_banks:
        cmds.append(["memories", "--history", "--", bank])
        cmds.append(["rules", "--", bank])
    return cmds + case.extra


def check_output(result, json_out: bool, must_fail: bool = False) -> list[str]:
    """What is wrong with one CLI run (empty when it behaved)."""
    what = " ".join(result.argv[5:])  # after `python -m keepgui --data-dir DIR`
    if result.timed_out:
        return [f"`{what}` hung (killed after its time limit)"]
    out = []
    if result.rc not in (0, 1):
        out.append(f"`{what}` exited {result.rc}")
    if "Traceback" in result.stderr:
        out.append(f"`{what}` printed a traceback: {result.stderr[-1500:]}")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    stray = [line for line in lines if not line.startswith("keepgui: ")]
    if stray and "Traceback" not in result.stderr:
        out.append(f"`{what}` printed lines that are not keepgui messages: {stray[:3]}")
    errors = [line for line in lines if line.startswith("keepgui: error: ")]
    if result.rc == 1 and what.split()[0] != "doctor" and len(errors) != 1:
        out.append(f"`{what}` failed with {len(errors)} error lines: {lines[-3:]}")
    if must_fail and result.rc != 1:
        out.append(f"`{what}` should have been refused but exited {result.rc}")
    if json_out and result.rc in (0, 1) and (result.stdout.strip() or result.rc == 0):
        try:
            json.loads(result.stdout)
        except ValueError:
            out.append(f"`{what}` printed invalid JSON: {result.stdout[:200]!r}")
    return out


def probe_library(case: HostileCase, seconds: float = 60.0) -> list[str]:
    """Read the case through the library the way the window does; only KeepguiError may come out."""
    from keepgui.backends.iii.doctor import diagnose
    from keepgui.backends.iii.store import DataDir
    from keepgui.core.errors import KeepguiError

    failures: list[str] = []

    def guarded(label, fn):
        try:
            with deadline(seconds, label):
                return fn()
        except KeepguiError:
            return None
        except Hang as exc:
            failures.append(f"library: {exc}")
        except Exception as exc:  # noqa: BLE001 - any other exception is the finding
            failures.append(f"library: {label} raised {type(exc).__name__}: {str(exc)[:300]}")
        return None

    datadir = DataDir(case.data_dir)
    names = guarded("bank_names()", datadir.bank_names) or []
    for name in sorted(set(names) | set(case.banks)):
        bank = guarded(f"bank({name!r})", partial(datadir.bank, name))
        if bank is None:
            continue
        guarded(f"{name}: info()", bank.info)
        guarded(f"{name}: description()", bank.description)
        rows = guarded(f"{name}: memories(history=True)", partial(bank.memories, history=True)) or []
        guarded(f"{name}: tags()", bank.tags)
        guarded(f"{name}: rules()", bank.rules)
        for memory in rows[:10]:
            guarded(f"{name}: history()", partial(bank.log.history, memory.id))
            guarded(f"{name}: raw_line()", partial(bank.log.raw_line, memory.id))
    guarded("iter_temp_files()", lambda: list(datadir.iter_temp_files()))
    guarded("trashed()", datadir.trashed)
    guarded("diagnose()", lambda: diagnose(DataDir(case.data_dir)))
    if case.expect is not None and not failures:
        try:
            with deadline(seconds, "expectations"):
                failures.extend(f"expect: {f}" for f in case.expect(DataDir(case.data_dir)))
        except Exception as exc:  # noqa: BLE001
            failures.append(f"expect: raised {type(exc).__name__}: {exc}")
    return failures


def run_hostile(
    cases: list[HostileCase],
    cli: bool = True,
    library: bool = True,
    thorough: bool = True,
    workers: int | None = None,
    timeout: float = 60.0,
) -> dict:
    """Read every case; returns ``inputs``, ``commands``, ``crashes``, ``files_changed_by_reading``,
    ``failures`` (one line each, prefixed by the case name) and ``by_case`` (case name -> its failures).

    A crash is any failure of a command or library call (traceback, hang,
    bad exit status, unclear error, broken JSON, an unexpected exception, a
    write that should have been refused going through) or a failed
    expectation; ``crashes`` counts the cases with one. All CLI commands run
    in a pool of ``workers`` threads (each a fresh process) while the main
    thread probes the library; nothing but the refused writes tries to write,
    so cases can be read side by side. ``thorough=False`` runs the per-bank
    commands for each case's ``cli_banks`` only.
    """
    workers = workers or (os.cpu_count() or 2) + 1

    def snapshot(case):
        return [disk_state(path) for path in [case.folder, *case.watch]]

    before = {case.name: snapshot(case) for case in cases}
    jobs = []  # (case, argv, stdin, must_fail, json)
    for case in cases if cli else []:
        for cmd in case_commands(case, thorough):
            jobs.append((case, cmd, None, False, "--json" in cmd))
        for cmd in case.writes:
            stdin = "# a rule that must not be written\n" if "--stdin" in cmd else None
            jobs.append((case, cmd, stdin, True, False))
    problems: dict[str, list[str]] = {case.name: [] for case in cases}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [(job, pool.submit(run_cli, job[0].data_dir, *job[1], timeout=timeout, stdin=job[2])) for job in jobs]
        if library:
            for case in cases:
                problems[case.name].extend(probe_library(case, timeout))
        for (case, _, _, must_fail, json_out), future in futures:
            problems[case.name].extend(check_output(future.result(), json_out, must_fail))
    crashes = changed = 0
    failures: list[str] = []
    for case in cases:
        diff = [p for old, new in zip(before[case.name], snapshot(case), strict=True) for p in state_diff(old, new)]
        if diff:
            changed += 1
            problems[case.name].append(f"reading changed {diff[:5]}")
        crashes += any(not p.startswith("reading changed") for p in problems[case.name])
        failures.extend(f"{case.name}: {p}" for p in problems[case.name])
    return {
        "inputs": len(cases),
        "commands": len(jobs),
        "crashes": crashes,
        "files_changed_by_reading": changed,
        "failures": failures,
        "by_case": problems,
    }
