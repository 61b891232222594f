"""keepgui reads a log line exactly as the worker does, checked against a serde replica compiled here.

The worker parses each line of ``memories.jsonl`` with serde derive over serde_json (spec §1.5,
§1.6a). Debian packages those crates' sources (``librust-serde-json-dev``,
``librust-serde-derive-dev``: ``/usr/share/cargo/registry``), so cargo builds a replica of the
worker's record parsing offline (``tests/backends/iii/serde_replica``: the ``Memory`` struct with
serde's defaults, ``BufReader::lines()``, ``serde_json::from_str``) into ``build/serde-replica``.
On hostile lines — lone surrogate escapes in unknown and known places, lines of megabytes, ``-0``,
repeated keys, escaped key names, deep nesting, numbers at the edges of their types — every line
keepgui reads as a record is the record serde reads (byte for byte as serde_json writes it again),
every line serde skips keepgui skips, and the replayed bank is the same. Skipped, with the reason,
where cargo or the crate sources are missing (``.ci/packages`` lists the crates).
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import subprocess

import pytest

from keepgui.backends.iii.log import MemoryLog
from keepgui.backends.iii.record import read_record
from tests.conftest import ROOT

REGISTRY = "/usr/share/cargo/registry"
CARGO = shutil.which("cargo") or next(
    (c for c in (os.path.expanduser("~/.cargo/bin/cargo"),) if os.access(c, os.X_OK)), None
)  # rustup's cargo, where a login shell would have put it on PATH
SOURCES = os.path.join(os.path.dirname(__file__), "serde_replica")
BUILD = os.path.join(ROOT, "build", "serde-replica")

_missing = (
    "cargo is not installed here"
    if CARGO is None
    else "serde's sources are not installed (apt-get install librust-serde-json-dev librust-serde-derive-dev)"
    if not (glob.glob(f"{REGISTRY}/serde_json-1.*") and glob.glob(f"{REGISTRY}/serde_derive-1.*"))
    else ""
)
pytestmark = pytest.mark.skipif(bool(_missing), reason=_missing or "-")

CONFIG = f"""[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "{REGISTRY}"

[net]
offline = true
"""


def _put(path: str, data: bytes) -> None:
    """Write ``data`` unless the file already holds it (cargo then builds nothing again)."""
    try:
        with open(path, "rb") as fh:
            if fh.read() == data:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


@pytest.fixture(scope="module")
def serde_replica():
    """The compiled replica: a function from a log's path to what it prints, one item per line."""
    assert CARGO is not None
    for name in ("Cargo.toml", os.path.join("src", "main.rs")):
        with open(os.path.join(SOURCES, name), "rb") as fh:
            _put(os.path.join(BUILD, name), fh.read())
    _put(os.path.join(BUILD, ".cargo", "config.toml"), CONFIG.encode())
    built = subprocess.run(
        [CARGO, "build", "--release", "--offline", "--quiet"],
        cwd=BUILD,
        capture_output=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, built.stderr.decode(errors="replace")[-2000:]
    exe = os.path.join(BUILD, "target", "release", "iii-record-replica")

    def run(path: str) -> list[str]:
        out = subprocess.run([exe, path], check=True, capture_output=True, timeout=300).stdout
        return out.decode("utf-8").splitlines()

    return run


def line(extra: str = "", **fields: object) -> str:
    """A record line as the worker writes it, fields replaced, ``extra`` raw JSON added before the end."""
    record: dict[str, object] = {
        "id": "fp37dab55090b26303",
        "text": "User prefers short names",
        "entities": ["user"],
        "tags": ["style"],
        "confidence": "stated",
        "corroboration": 0,
        "pinned": False,
        "created_at": 1750000000000,
        "updated_at": 1750000000000,
        "revision": 0,
    }
    record.update(fields)
    text = json.dumps({k: v for k, v in record.items() if v is not ...}, separators=(",", ":"), ensure_ascii=False)
    return text[:-1] + extra + "}" if extra else text


def raw(label: str, /, **changes: str) -> str:
    """A record line (its text ``label``) with raw JSON put in place of values: ``raw(t, pinned="-0")``."""
    out = line(text=label)
    for key, value in changes.items():
        start = out.index(f'"{key}":') + len(key) + 3
        end = start
        depth, in_string = 0, False
        while end < len(out):
            ch = out[end]
            if in_string:
                in_string = ch != '"' or out[end - 1] == "\\"
            elif ch == '"':
                in_string = True
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            end += 1
        out = out[:start] + value + out[end:]
    return out


HOSTILE = [
    # lone surrogate escapes: never read in an unknown key's value; read (and refused) elsewhere
    line(',"x":"\\ud800"'),
    line(',"x":"\\udc00"'),
    line(',"x":"\\ud800\\u0041"'),
    line(',"x":{"y":["\\udc00\\ud800"],"\\ud801":0}'),
    line(',"source":{"later":"\\ud800"}'),
    line(',"\\ud800":1'),
    line(',"x":"\\ud800\\uZZZZ"'),
    line(',"x":"\\ud800\\q"'),
    line(',"x":"\\ud800","tags":"not a list"'),
    raw("lone in text", text='"a \\ud800 b"'),
    raw("lone in entity", entities='["\\udfff"]'),
    raw("lone in tag", tags='["ok","\\ud800"]'),
    raw("lone in id", id='"fp\\ud800"'),
    line(',"source":{"agent":"a\\udc00"}'),
    line(',"source":{"session_id":"s\\ud800"}', text="lone in session"),
    raw("a pair is fine", text='"smile \\ud83d\\ude00 ok"'),
    raw("a pair, raw", text='"smile 😀 ok"'),
    # -0 and other numbers at the edges of their types
    raw("revision -0", revision="-0"),
    raw("created -0", created_at="-0"),
    raw("corroboration -0", corroboration="-0"),
    raw("revision -0.0", revision="-0.0"),
    raw("revision 0.0", revision="0.0"),
    raw("revision 1e2", revision="1e2"),
    raw("revision 0", revision="0"),
    raw("revision u64 max", revision="18446744073709551615"),
    raw("revision over u64", revision="18446744073709551616"),
    raw("corroboration u32 max", corroboration="4294967295"),
    raw("corroboration over u32", corroboration="4294967296"),
    raw("revision -1", revision="-1"),
    raw("revision 01", revision="01"),
    raw("pinned -0", pinned="-0"),
    line(',"x":-0', text="-0 in an unknown key"),
    line(',"x":-0.0e-0', text="odd float in an unknown key"),
    line(',"x":1e999', text="infinite float in an unknown key"),
    line(',"x":123456789012345678901234567890', text="huge integer in an unknown key"),
    line(',"invalid_at":-0', text="invalid_at -0"),
    line(',"invalid_at":null', text="invalid_at null"),
    # repeated keys
    line(',"text":"again"'),
    line(',"id":"fp0000000000000000"'),
    line(',"x":1,"x":2', text="a repeated unknown key"),
    line(',"x":{"y":1,"y":2}', text="a repeated key inside an unknown value"),
    line(',"source":{"session_id":"a","session_id":"b"}', text="repeated in source"),
    line(',"source":{"z":1,"z":2}', text="a repeated unknown key in source"),
    line(',"invalid_at":5,"invalid_at":6', text="invalid_at twice"),
    line(',"superseded_by":null,"superseded_by":"fp1"', text="superseded_by twice"),
    # escaped key names are the same keys
    line(',"t\\u0065xt":"escaped key"'),
    raw("escaped key alone", text='"x"').replace('"text"', '"t\\u0065xt"'),
    raw("escaped source key", text='"y"')[:-1] + ',"source":{"\\u0061gent":"z"}}',
    # types and nulls
    raw("pinned null", pinned="null"),
    raw("entities null", entities="null"),
    raw("tags a string", tags='"x"'),
    raw("confidence unknown", confidence='"certain"'),
    raw("confidence escaped", confidence='"st\\u0061ted"'),
    line(',"source":null', text="source null"),
    line(',"source":{}', text="source empty"),
    line(',"source":"s"', text="source a string"),
    line(',"source":{"session_id":null}', text="session null"),
    # strings: control characters, escapes
    raw("control raw", text='"a\x01b"'),
    raw("control escaped", text='"a\\u0001b\\u001f\\u007f"'),
    line(',"x":"a\x01b"', text="control raw in an unknown value"),
    line(',"x":"\\q"', text="bad escape in an unknown value"),
    line(',"x":"\\u12"', text="short escape in an unknown value"),
    raw("nul escaped", text='"a\\u0000b"'),
    raw("slash escaped", text='"a\\/b"'),
    # shape of the line
    "  " + line(text="leading whitespace") + " \t ",
    line(text="trailing garbage") + "x",
    line(text="two objects") + line(text="two objects"),
    line(text="a comma after") + ",",
    '{"id":"fp1","text":"legacy","confidence":"stated","created_at":1,"updated_at":1}',
    '{"id":"fp1","text":"no dates","confidence":"stated"}',
    "[]",
    "null",
    '"a string"',
    "{",
    line(',"x":' + "[" * 200 + "]" * 200, text="deep unknown value"),
    line(',"x":' + "[" * 100_000 + "]" * 100_000, text="very deep unknown value"),
    line(',"x":' + '{"a":' * 5_000 + "1" + "}" * 5_000, text="deep unknown object"),
    line(',"x":' + "[" * 3_000 + "]" * 3_000 + ',"text":"dup"', text="deep, then a repeated key"),
    line(',"x":' + "[" * 3_000 + "]" * 3_000 + ',"revision":-0', text="deep, then -0"),
    line(',"x":' + "[" * 3_000 + "]" * 2_999, text="deep, one bracket short"),
    line(',"x":' + "[" * 3_000 + "1,]" + "]" * 2_999, text="deep, a trailing comma inside"),
    line(',"x":' + "[" * 3_000 + '"\\ud800",01' + "]" * 3_000, text="deep, 01 inside"),
    line(',"x":' + '{"a":' * 3_000 + '"\\udc00"' + "}" * 3_000, text="deep object, a surrogate inside"),
    line(',"source":{"deep":' + "[" * 3_000 + "]" * 3_000 + "}", text="deep in source"),
    line(',"x":NaN', text="NaN"),
    line(',"x":Infinity', text="Infinity"),
    line(',"x":true,"y":false,"z":null', text="literals"),
    # lines of megabytes
    line(text="t" * 2_000_000),
    line(text="word " * 400_000),
    line(',"blob":"' + "y" * 3_000_000 + '"', text="small text, huge unknown value"),
    line(',"blob":["\\ud800",' + '"z",' * 500_000 + '"\\udc00"]', text="huge unknown list with surrogates"),
    line(text="é" * 1_000_000),
    "",
    "   ",
]


def _mutations(rng: random.Random, n: int) -> list[str]:
    """Lines made by changing a record at random in the ways above, several at once."""
    pieces = [
        ',"x":"\\ud800"',
        ',"x":-0',
        ',"revision":-0',
        ',"text":"dup"',
        ',"y":{"\\udc00":"\\ud800"}',
        ',"source":{"session_id":"s"}',
        ',"source":{"q":"\\udbff"}',
        ',"pinned":true',
        ',"invalid_at":7',
        ',"superseded_by":"fp2"',
        ',"entities":["\\ud83d\\ude00"]',
        ',"tags":["\\ud800"]',
        ',"corroboration":1.0',
    ]
    out = []
    for i in range(n):
        extra = "".join(rng.sample(pieces, rng.randint(1, 3)))
        out.append(line(extra, text=f"mutation {i}", id=f"fp{i:016x}", revision=rng.randint(0, 3)))
    return out


def _replayed(outcomes: list[str]) -> dict[str, str]:
    """The worker's state from the replica's records: per id the line of the highest revision, the
    later line winning a tie (spec §1.6)."""
    state: dict[str, tuple[int, str]] = {}
    for item in outcomes:
        if item.startswith("R "):
            record = json.loads(item[2:])
            held = state.get(record["id"])
            if held is None or record["revision"] >= held[0]:
                state[record["id"]] = (record["revision"], item[2:])
    return {k: v for k, (_rev, v) in state.items()}


def test_keepgui_reads_every_hostile_line_as_serde_does(serde_replica, tmp_path):
    lines = HOSTILE + _mutations(random.Random(23), 400)
    assert not [x for x in lines if "\n" in x or "\r" in x]
    log = tmp_path / "memories.jsonl"
    log.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + b"\n")
    outcomes = serde_replica(str(log))
    assert len(outcomes) == len(lines)
    differ = []
    for number, (text, outcome) in enumerate(zip(lines, outcomes, strict=True), 1):
        memory = read_record(text.encode("utf-8"))
        ours = "B" if not text.strip() else "S" if memory is None else f"R {memory.to_json()}"
        if ours[:1] != outcome[:1] or (ours[:1] == "R" and ours != outcome):
            differ.append(f"line {number} {text[:90]!r}: serde {outcome[:90]!r}, keepgui {ours[:90]!r}")
    assert differ == [], "\n".join(differ)
    replay = MemoryLog(str(log))
    replay.refresh()
    assert not replay.unreadable
    assert {k: m.to_json() for k, m in replay.records.items()} == _replayed(outcomes)


def test_a_line_that_is_not_utf8_fails_the_bank_for_both(serde_replica, tmp_path):
    log = tmp_path / "memories.jsonl"
    log.write_bytes(line(text="fine").encode() + b"\n" + line(text="bad \udce9").encode("utf-8", "surrogateescape"))
    assert serde_replica(str(log))[-1] == "E"
    replay = MemoryLog(str(log))
    replay.refresh()
    assert replay.unreadable
