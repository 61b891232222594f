"""The log's lines read as Rust's own ``BufRead::lines`` yields them (spec §1.6a), checked against rustc.

The worker's ``Bank::load`` reads ``memories.jsonl`` with ``BufReader::lines()`` and ``let line =
line?``: the final line counts without its ``\\n``, one trailing ``\\r`` is dropped, and a line that
is not UTF-8 fails the whole bank. The serde part is checked by ``test_serde_replica.py``; here
Rust's standard library alone: a small program compiled with the rustc on this machine prints what
``lines()`` yields, and every record keepgui reads must be one of those lines (json, with the
whitespace serde ignores after a value), every other line skipped, and a bank Rust cannot read
must be unreadable to keepgui too. Skipped, with the reason, where rustc is missing.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from keepgui.backends.iii.log import MemoryLog
from tests.memories import memory

RUSTC = shutil.which("rustc")
pytestmark = pytest.mark.skipif(RUSTC is None, reason="rustc is not installed here (the check compiles a program)")

# Prints one line per item `lines()` yields: "L <hex of the line>", or "E" and stops at the first
# error (as `line?` stops the worker's load).
LINES_RS = r"""
use std::io::{self, BufRead, Write};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let file = std::fs::File::open(path).unwrap();
    let out = io::stdout();
    let mut out = out.lock();
    for line in io::BufReader::new(file).lines() {
        match line {
            Ok(l) => {
                let hex: String = l.bytes().map(|b| format!("{:02x}", b)).collect();
                writeln!(out, "L {}", hex).unwrap();
            }
            Err(_) => { writeln!(out, "E").unwrap(); return; }
        }
    }
}
"""


@pytest.fixture(scope="module")
def rust_lines(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rust-lines")
    source = folder / "lines.rs"
    source.write_text(LINES_RS)
    exe = folder / "lines"
    subprocess.run([RUSTC, "-O", "-o", str(exe), str(source)], check=True, capture_output=True, timeout=300)

    def run(path) -> list[bytes] | None:
        out = subprocess.run([str(exe), str(path)], check=True, capture_output=True, timeout=60).stdout
        lines: list[bytes] = []
        for row in out.decode().splitlines():
            if row == "E":
                return None
            lines.append(bytes.fromhex(row[2:]))
        return lines

    return run


def record_line(text: str) -> bytes:
    return memory(text).to_line().rstrip(b"\n")


ENDINGS = (b"\n", b"\r\n", b" \t\n", b"\r\r\n", b"\n\n", b"\r")
NOISE = (b"", b"   ", b"{not json", b"\xff\xfe", b"caf\xe9", b"\xed\xa0\x80", b'{"id":1}', b"\x00")


def corpus(rng: random.Random) -> bytes:
    parts: list[bytes] = []
    for i in range(rng.randint(1, 8)):
        if rng.random() < 0.75:
            parts.append(record_line(f"memory number {i} of case {rng.random():.6f}"))
        else:
            parts.append(rng.choice(NOISE))
        parts.append(rng.choice(ENDINGS))
    if rng.random() < 0.5:  # the last line without its newline
        parts.append(record_line(f"the last one {rng.random():.6f}") + rng.choice((b"", b" ", b"\r", b" \t")))
    return b"".join(parts)


def expected_ids(lines: list[bytes]) -> set[str]:
    """The ids a worker holds after reading these lines: each line that is a JSON record (serde, like
    json, ignores whitespace after the value; a record here is one keepgui's encoder wrote)."""
    ids: set[str] = set()
    for line in lines:
        try:
            obj = json.loads(line.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("id"), str) and "text" in obj:
            ids.add(obj["id"])
    return ids


@pytest.mark.parametrize("seed", range(60))
def test_records_are_the_lines_rust_yields(rust_lines, tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "memories.jsonl"
    path.write_bytes(corpus(rng))
    lines = rust_lines(path)
    log = MemoryLog(path)
    log.refresh()
    if lines is None:  # Rust's lines() failed: the worker skips the whole bank
        assert log.unreadable, path.read_bytes()
        return
    assert log.unreadable is None, (log.unreadable, path.read_bytes())
    assert set(log.records) == expected_ids(lines), path.read_bytes()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"\r\n",
        record_line("no newline at all"),
        record_line("crlf at the end") + b"\r\n",
        record_line("a lone cr at the end") + b"\r",
        record_line("two cr") + b"\r\r\n",
        record_line("ok") + b"\n" + b"caf\xe9",
        b"\xed\xa0\x80\n" + record_line("after a surrogate"),
    ],
)
def test_edges_read_as_rust_reads_them(rust_lines, tmp_path, data):
    path = tmp_path / "memories.jsonl"
    path.write_bytes(data)
    lines = rust_lines(path)
    log = MemoryLog(path)
    log.refresh()
    assert (log.unreadable is not None) == (lines is None)
    if lines is not None:
        assert set(log.records) == expected_ids(lines)
