"""A search index laid out in another process and taken as arrays (TextSearch.from_columns) answers
every query exactly as an index built here does, before and after rows change."""

from __future__ import annotations

import random

import numpy as np
import pytest

from keepgui.core import childwork
from keepgui.core.search import TextSearch, index_columns

WORDS = [
    "deploy",
    "deployment",
    "staging",
    "grafana",
    "tomás",
    "mike",
    "ana",
    "port",
    "8080",
    "8081",
    "blog",
    "pipeline",
    "coffee",
    "coffe",
    "tea",
    "lisbon",
    "λόγος",
    "naïve",
    "build",
    "builds",
    "x",
]
QUERIES = [
    "dep",
    "deploy ",
    "stagng",
    "graf",
    "tomas",
    "tomás",
    "808",
    "coffee",
    "cofee tea",
    "λόγ",
    "naïve b",
    "x",
    "pipeline staging",
    "zzz",
    "build ",
]


def texts(rng: random.Random, n: int) -> list[tuple[str, ...]]:
    return [
        (" ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 8))), *rng.sample(WORDS, rng.randrange(0, 3)))
        for _ in range(n)
    ]


def answers(index: TextSearch[str]) -> list[dict[str, float]]:
    out = []
    for query in QUERIES:
        found = index.find(query)
        out.append(dict(zip(found, found.scores.tolist(), strict=True)))
        assert index.search(query) == out[-1]
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_an_index_of_arrays_answers_as_one_built_here(seed):
    rng = random.Random(seed)
    rows = texts(rng, rng.randrange(0, 600))
    keys = [f"k{i}" for i in range(len(rows))]
    here: TextSearch[str] = TextSearch()
    here.set_many(zip(keys, rows, strict=True))
    here.freeze()
    there = TextSearch.from_columns(list(keys), index_columns(rows))
    assert answers(there) == answers(here) and len(there) == len(here)
    for _ in range(30):  # changes afterwards: new keys, changed ones, removed ones, removed and back
        key = rng.choice([*keys, f"new{rng.randrange(20)}"])
        if rng.random() < 0.3:
            here.remove(key)
            there.remove(key)
        else:
            words = texts(rng, 1)[0]
            here.set(key, *words)
            there.set(key, *words)
        assert len(there) == len(here)
    assert answers(there) == answers(here)


def test_the_columns_come_from_a_child_process():
    rows = texts(random.Random(9), childwork.SLICE + 100)
    worker = childwork.ChildWorker("index-test")
    try:
        columns = worker.call("keepgui.core.search", "index_columns", lists={"texts": rows})
    finally:
        worker.close()
    assert columns["vocabulary"] == index_columns(rows)["vocabulary"]
    assert np.array_equal(
        np.frombuffer(columns["slots"], np.int32), np.frombuffer(index_columns(rows)["slots"], np.int32)
    )
