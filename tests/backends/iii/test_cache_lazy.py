"""A verified cache answers without decoding the bank (issue 32): records decoded only when a query
reads them, postings only where its terms go, and every answer byte for byte the one without a cache."""

from __future__ import annotations

import io
import os
import random
import shutil

import pytest

import keepgui.backends.iii.lazy as lazy_module
from keepgui.backends.iii import cache as cache_module
from keepgui.backends.iii.cache import LogCache
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.context import BankEngine
from keepgui.backends.iii.lazy import LazyRecords, RecordBlock, encode_block
from keepgui.backends.iii.store import DataDir
from keepgui.cli import Context, parse_args, run_command
from keepgui.core import pace
from tests.bench.synth import make_bank, make_records

NOW = 1_767_000_000_000


def _cli(home: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("KEEPGUI_HOME", home)
    args = parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    assert run_command(args, Context(args, out, err)) == 0, err.getvalue()
    return out.getvalue()


def _commands(data_dir: str, rng: random.Random, words: list[str], tags: list[str]) -> list[list[str]]:
    """Previews and recalls of random questions (some of a single rare word, one of nothing known),
    with random limits, tags and history, and the listings."""
    base = ["--data-dir", data_dir]
    questions = [" ".join(rng.sample(words, rng.randint(1, 6))) for _ in range(5)]
    questions += [words[-1], "qqqq zzzz", "what do I like", "Tell me ABOUT the user's preferences"]
    out = []
    for question in questions:
        out.append([*base, "preview", question, "--bank", "bank", "--now", str(NOW), "--json"])
        recall = [*base, "recall", question, "--bank", "bank", "--now", str(NOW + rng.randint(0, 10**10)), "--json"]
        if rng.random() < 0.5:
            recall += ["--limit", str(rng.choice([0, 1, 3, 10, 100]))]
        if rng.random() < 0.3:
            recall += ["--tag", rng.choice(tags)]
        if rng.random() < 0.3:
            recall.append("--history")
        out.append(recall)
    out.append([*base, "preview", questions[0], "--bank", "bank", "--now", str(NOW)])  # the human form too
    out += [[*base, "memories", "bank", "--json"], [*base, "memories", "bank", "--json", "--history"]]
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cached_answers_are_byte_for_byte_the_uncached_ones_on_random_banks(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    memories = rng.choice([300, 900, 2500])
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=memories, lines=int(memories * rng.uniform(1.2, 3)), seed=seed)
    bank = DataDir(data_dir).bank("bank")
    words = sorted({w for m in bank.memories()[:200] for w in m.text.split()})
    tags = [tag for tag, _count in bank.tags()[:5]] or ["none"]
    commands = _commands(data_dir, rng, words, tags)
    loads: list[bool] = []
    real_load = LogCache.load

    def load(self: LogCache) -> bool:
        loads.append(real_load(self))
        return loads[-1]

    monkeypatch.setattr(LogCache, "load", load)
    home, never = str(tmp_path / "home"), str(tmp_path / "never")
    for round_ in range(2):  # then again after an append: the cache answers the prefix, the log the rest
        for n, argv in enumerate(commands):
            uncached = _cli(never, argv, monkeypatch)
            shutil.rmtree(never)  # its cache is never used
            del loads[:]
            cold = _cli(home, argv, monkeypatch)
            assert loads == [n > 0 or round_ > 0], f"the cache was not (or wrongly) used for {argv}"
            del loads[:]
            warm = _cli(home, argv, monkeypatch)
            assert loads == [True], f"the cache did not answer {argv}"
            assert warm == cold == uncached, argv
        with open(os.path.join(data_dir, "bank", "memories.jsonl"), "ab") as fh:
            fh.writelines(
                memory.replace(updated_at=NOW - rng.randint(0, 10**9)).to_line()
                for memory in make_records(40, 60, seed=seed + 100)
            )


def cached_bank(tmp_path, seed: int, question: str | None = None) -> tuple[str, str]:
    """A 3,000-memory bank, its cache written (after ``question`` was asked): ``(data dir, cache folder)``."""
    data_dir = str(tmp_path / "data")
    make_bank(os.path.join(data_dir, "bank"), memories=3000, lines=7500, seed=seed)
    bank = DataDir(data_dir).bank("bank")
    engine = BankEngine(bank, MemoryConfig())
    cache = LogCache(bank.log, engine.index, folder=str(tmp_path / "cache"))
    engine.refresh()
    if question is not None:
        engine.preview(question, now_ms=NOW)
    assert cache.save()
    return data_dir, str(tmp_path / "cache")


@pytest.fixture
def warm(tmp_path):
    """A 3,000-memory bank, its cache written: ``(data dir, cache folder)`` (recency bounds taken, as a
    command's answer leaves them)."""
    return cached_bank(tmp_path, 21, "warm up")


def _restored(data_dir: str, folder: str) -> BankEngine:
    engine = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    assert LogCache(engine.bank.log, engine.index, folder=folder).load()
    engine.refresh()
    return engine


def test_a_cached_preview_and_recall_decode_only_the_records_they_read(warm):
    data_dir, folder = warm
    plain = BankEngine(DataDir(data_dir).bank("bank"), MemoryConfig())
    plain.refresh()
    engine = _restored(data_dir, folder)
    records = engine.bank.log.records
    assert isinstance(records, LazyRecords) and records.packed.decodes == 0
    total = len(records)
    questions = ["deploy the staging database", "what does the user prefer", "kubernetes", "zzz"]
    for question in questions:
        assert engine.preview(question, now_ms=NOW).to_json(notice=True) == plain.preview(question, now_ms=NOW).to_json(
            notice=True
        )
        assert engine.recall(question, now_ms=NOW, limit=20).to_json(parts=True) == plain.recall(
            question, now_ms=NOW, limit=20
        ).to_json(parts=True)
    decoded = records.packed.decodes
    assert 0 < decoded < total // 10, f"{decoded} of {total} records decoded"
    assert engine.index._ones.looked_up() <= 4 * len(questions)  # type: ignore[attr-defined]
    assert engine.index._slot_of is None  # no id -> slot table was made for a query either


def test_a_cached_listing_head_decodes_nothing(warm, monkeypatch):
    data_dir, folder = warm
    monkeypatch.setattr(cache_module, "cache_folder", lambda: folder)
    bank = DataDir(data_dir).bank("bank")
    cache = LogCache(bank.log)
    head = cache.verified_listing_head()
    assert head is not None and cache.load()
    records = bank.log.records
    assert isinstance(records, LazyRecords) and records.packed.decodes == 0
    fresh = DataDir(data_dir).bank("bank")
    assert head == fresh.log.json_lines(fresh.memories()[: cache_module.LISTING_HEAD])


def test_lazy_records_behave_as_the_dict_they_stand_for():
    records = make_records(50, 50, seed=4)
    block, starts = encode_block(records)
    packed = RecordBlock.of([m.id for m in records], block, starts)
    assert packed is not None
    lazy, plain = LazyRecords(packed), {m.id: m for m in records}
    assert list(lazy) == list(plain) and len(lazy) == len(plain) and packed.decodes == 0
    assert lazy[records[7].id] == records[7] and packed.decodes == 1
    copy = lazy.copy()
    extra = make_records(3, 3, seed=9)
    for other in (lazy, plain):
        other[extra[0].id] = extra[0]
        other[records[3].id] = extra[1]
        del other[records[5].id]
        other.update({extra[2].id: extra[2]})
    assert list(lazy) == list(plain) and lazy.values() == list(plain.values()) and len(lazy) == len(plain)
    assert lazy.get(records[5].id) is None and records[5].id not in lazy and records[6].id in lazy
    with pytest.raises(KeyError):
        del lazy[records[5].id]
    assert len(copy) == 50 and copy[records[3].id] == records[3]  # the copy kept the packed state
    # parts that disagree are refused, never trusted
    assert RecordBlock.of([m.id for m in records][:-1], block, starts) is None
    assert RecordBlock.of([m.id for m in records], block[:-1], starts) is None
    assert RecordBlock.of([m.id for m in records], block, starts[:-3]) is None


def test_a_window_s_decode_keeps_one_object_of_each_repeated_value(monkeypatch):
    """Beside a window (a slice at a time), the tags, entities and sources that repeat across records are
    one object each, across slices too; every record equal to a plain decode's, hash and all."""
    monkeypatch.setattr(lazy_module, "STEP", 37)
    records = make_records(400, 900, seed=5)
    live = list({m.id: m for m in records}.values())
    block, starts = encode_block(live)
    plain = RecordBlock.of([m.id for m in live], block, starts)
    windowed = RecordBlock.of([m.id for m in live], block, starts)
    assert plain is not None and windowed is not None
    expected = plain.all()
    pace.set_foreground(pace.Foreground())
    try:
        got = windowed.all()
    finally:
        pace.set_foreground(None)
    assert got == expected and [hash(m) for m in got] == [hash(m) for m in expected]
    for field in ("tags", "entities", "source"):
        values = [getattr(m, field) for m in got]
        distinct = {}
        for value in values:
            distinct.setdefault(value, value)
        assert len({id(v) for v in values}) == len(distinct) < len(values)  # one object per distinct value
        assert len({id(getattr(m, field)) for m in expected}) > len(distinct)  # a plain decode repeats them
