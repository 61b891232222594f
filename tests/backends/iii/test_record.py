"""The record format, fingerprints and serde's parsing rules (spec §1.5, §5.1, §6)."""

from __future__ import annotations

import json
import re

import pytest

from keepgui.backends.iii.record import Memory, RecordError, Source, fingerprint, new_memory, parse_line, read_record

SPEC_LINES = [
    (
        '{"id":"fp37dab55090b26303","text":"User prefers short names","entities":["user"],"tags":["style"],'
        '"confidence":"stated","corroboration":0,"pinned":false,"source":{"session_id":"s_1"},'
        '"created_at":1750000000000,"updated_at":1750000000000,"revision":0}'
    ),
    (
        '{"id":"fp37dab55090b26303","text":"User prefers short names","entities":["user"],"tags":["style"],'
        '"confidence":"stated","corroboration":1,"pinned":false,"source":{"session_id":"s_1"},'
        '"created_at":1750000000000,"updated_at":1750000100000,"revision":1}'
    ),
    (
        '{"id":"fp37dab55090b26303","text":"User prefers short names","entities":["user"],"tags":["style"],'
        '"confidence":"stated","corroboration":1,"pinned":false,"source":{"session_id":"s_1"},'
        '"created_at":1750000000000,"updated_at":1750000200000,"invalid_at":1750000200000,"revision":2}'
    ),
]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("User prefers  short   names", "fp37dab55090b26303"),
        ("user prefers short names", "fp37dab55090b26303"),
        ("user prefers long names", "fp8d15d47f1f6676d5"),
        ("x", "fpaf63f54c86021707"),
        ("mike prefers formal writing", "fp521e79bedf49a6e7"),
        ("the api port is 3000", "fp0cdea4ad27055e64"),
        ("Never use em-dashes.", "fp08d18db3dccb0223"),
        ("", "fpcbf29ce484222325"),
        ("  Hello\tWorld\n", "fp779a65e7023cd2e7"),
        ("User publishes blog posts on Tuesday mornings", "fp19a7112e4378e6ab"),
        ("The API port is 3111", "fp15f1baad2c474d79"),
        ("User prefers formal writing", "fp1ff42b6e57e9784c"),
        ("Deploys run on Fridays", "fpba5ae5e4c73e9973"),
    ],
)
def test_fingerprint_vectors(text, expected):
    assert fingerprint(text) == expected


def test_fingerprint_shape_and_distinctness():
    fp = fingerprint("anything at all")
    assert fp.startswith("fp") and len(fp) == 18 and fp == fp.lower()
    assert fingerprint("User prefers  short   names") != fingerprint("user prefers long names")
    assert fingerprint("Keep me") != fingerprint("Keep me!")  # punctuation is not stripped


def test_fingerprint_whitespace_is_rusts_not_pythons():
    # U+001F is whitespace for Python's str.split but not for Rust's split_whitespace.
    assert fingerprint("a\x1fb") != fingerprint("a b")
    assert fingerprint("a\u3000b") == fingerprint("a b")  # ideographic space is White_Space


@pytest.mark.parametrize("line", SPEC_LINES)
def test_spec_lines_round_trip_byte_for_byte(line):
    memory = parse_line(line)
    assert memory.to_json() == line
    assert memory.to_line() == (line + "\n").encode()


def test_supersede_tombstone_key_position():
    memory = parse_line(SPEC_LINES[2]).replace(superseded_by="fp0000000000000001")
    text = memory.to_json()
    assert '"invalid_at":1750000200000,"superseded_by":"fp0000000000000001","revision":2}' in text


def test_every_field_round_trips():
    memory = new_memory(
        id="fp1234567890abcdef",
        text='Café — 日本語 "quoted" \\ tab\t',
        entities=["a", "b"],
        tags=["t"],
        confidence="inferred",
        corroboration=7,
        pinned=True,
        source=Source("s", "e", "agent"),
        created_at=1,
        updated_at=2,
        invalid_at=3,
        superseded_by="fp0",
        revision=9,
    )
    again = parse_line(memory.to_json())
    assert again == memory
    raw = memory.to_json()
    assert "Café — 日本語" in raw  # raw UTF-8, no \u escapes
    assert list(json.loads(raw)) == [
        "id",
        "text",
        "entities",
        "tags",
        "confidence",
        "corroboration",
        "pinned",
        "source",
        "created_at",
        "updated_at",
        "invalid_at",
        "superseded_by",
        "revision",
    ]
    assert json.loads(raw)["source"] == {"session_id": "s", "entry_id": "e", "agent": "agent"}


def test_unset_source_fields_are_omitted():
    memory = new_memory(
        id="fp1",
        text="abc",
        entities=[],
        tags=[],
        confidence="stated",
        corroboration=0,
        pinned=False,
        source=Source(session_id="s_1"),
        created_at=1,
        updated_at=1,
        revision=0,
    )
    assert '"source":{"session_id":"s_1"}' in memory.to_json()


def test_legacy_line_loads_with_defaults():
    memory = parse_line(
        '{"id":"fplegacy0000000000","text":"old record","confidence":"stated","created_at":1,"updated_at":1}'
    )
    assert memory.tags == () and memory.entities == ()
    assert memory.corroboration == 0 and memory.pinned is False and memory.revision == 0
    assert memory.source is None and memory.invalid_at is None


def test_unknown_keys_are_ignored_and_nulls_of_options_accepted():
    memory = parse_line(
        '{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":2,'
        '"future_key":{"x":[1,2]},"source":null,"invalid_at":null,"superseded_by":null}'
    )
    assert memory.invalid_at is None and memory.source is None
    assert memory.to_json() == (
        '{"id":"fp1","text":"abc","entities":[],"tags":[],"confidence":"stated",'
        '"corroboration":0,"pinned":false,"created_at":1,"updated_at":2,"revision":0}'
    )


BASE = '{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":1%s}'


@pytest.mark.parametrize(
    "extra",
    [',"x":"\\ud800"', ',"x":{"y":["\\udc00\\ud800"],"\\ud801":0}', ',"source":{"later":"\\ud800"}'],
)
def test_a_lone_surrogate_escape_in_an_unknown_value_is_never_read(extra):
    """#23.15a: serde_json skips an unknown key's value without checking its \\u escapes, so the worker
    loads the memory; msgspec refused the whole line and keepgui dropped it."""
    line = (BASE % extra).encode()
    plain = re.sub(rb"\\ud[89a-f][0-9a-f]{2}", b"A", line)
    assert b"\\u" not in plain
    assert read_record(line) == parse_line(line) == parse_line(plain)


@pytest.mark.parametrize(
    "extra, why",
    [
        (',"revision":1.0', "float"),
        (',"revision":-1', ">= 0"),
        (',"revision":18446744073709551616', "u64"),
        (',"corroboration":4294967296', "4294967295"),
        (',"pinned":1', "bool"),
        (',"pinned":null', "bool"),
        (',"entities":null', "array"),
        (',"entities":[1]', "str"),
        (',"tags":"x"', "array"),
        (',"source":"s"', "object"),
        (',"source":{"session_id":5}', "str"),
        (',"x":NaN', "JSON"),
        (',"text":"\\ud800"', "duplicate"),
        (',"entities":["\\ud800"]', "surrogate"),
        (',"source":{"agent":"a\\udc00"}', "surrogate"),
        (',"\\ud800":1', "surrogate"),
        (',"x":"\\ud800\\uZZZZ"', "JSON"),
        (',"x":"\\ud800","tags":"x"', "array"),
        (',"id":"again"', "duplicate"),
    ],
)
def test_lines_the_worker_rejects(extra, why):
    with pytest.raises(RecordError) as info:
        parse_line(BASE % extra)
    assert why.lower() in str(info.value).lower()


@pytest.mark.parametrize(
    "line",
    [
        '{"id":"fp1","text":"abc","created_at":1,"updated_at":1}',  # no confidence
        '{"id":"fp1","text":"abc","confidence":"guessed","created_at":1,"updated_at":1}',
        '{"text":"abc","confidence":"stated","created_at":1,"updated_at":1}',
        '{"id":"fp1","text":"abc","confidence":"stated","updated_at":1}',
        '{"id":"fp1","text":"abc","confidence":"stated","created_at":1,"updated_at":1} trailing',
        "[1, 2]",
        '"just a string"',
        '{"id": "fp-torn',
        '\ufeff{"id":"fp1"}',
        '{"id":null,"text":"abc","confidence":"stated","created_at":1,"updated_at":1}',
        '{"id":"fp1","text":"a\x01b","confidence":"stated","created_at":1,"updated_at":1}',
        '{"a":' + "[" * 5000 + "]" * 5000 + "}",
    ],
)
def test_more_lines_the_worker_rejects(line):
    with pytest.raises(RecordError):
        parse_line(line)


def test_accepted_edge_values():
    assert parse_line(BASE % ',"revision":18446744073709551615').revision == 18446744073709551615
    assert parse_line(BASE % ',"corroboration":4294967295').corroboration == 4294967295
    assert parse_line(BASE.replace('"abc"', '"a\\ud83d\\ude00"') % "").text == "a😀"
    assert parse_line("  " + BASE % "" + " \r").id == "fp1"


def test_to_line_refuses_invalid_records():
    good = parse_line(BASE % "")
    with pytest.raises(RecordError):
        good.replace(revision=-1).to_line()
    with pytest.raises(RecordError):
        good.replace(text="lone \ud800 surrogate").to_line()
    with pytest.raises(RecordError):
        good.replace(confidence="maybe").to_line()
    with pytest.raises(RecordError):
        good.replace(corroboration=1 << 33).to_line()


def test_memory_is_immutable_and_replace_copies():
    memory = parse_line(BASE % "")
    with pytest.raises(AttributeError):
        memory.text = "changed"  # type: ignore[misc]
    other = memory.replace(tags=["a"])
    assert other.tags == ("a",) and memory.tags == ()
    assert memory.live and memory.seen == 1
    assert isinstance(memory, Memory)
