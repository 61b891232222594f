"""Synthetic, realistic iii banks for benchmarks and stress runs (deterministic by seed).

``make_bank(folder, memories=100_000, lines=250_000)`` writes a bank whose log
has ``memories`` distinct ids and ``lines`` lines in all: creates first, then
revisions (reinforcements, edits, pins, tombstones, supersedes, restores)
spread over the ids, with ages from minutes to a year, entities and tags.
The lines are produced with keepgui's own record type, so they are exactly what
the worker would write.
"""

from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

from keepgui.backends.iii.record import Memory, Source, fingerprint

NOW = 1_750_000_000_000
DAY = 86_400_000

SUBJECTS = [
    "User",
    "The user",
    "Mike",
    "Ana",
    "The team",
    "Our API",
    "The blog",
    "The deploy pipeline",
    "The staging server",
    "Grafana",
    "The build",
    "Priya",
    "Tomás",
    "The mobile app",
    "Sam",
]
VERBS = [
    "prefers",
    "uses",
    "publishes",
    "avoids",
    "runs",
    "deploys",
    "writes",
    "reviews",
    "likes",
    "migrated to",
    "depends on",
    "dislikes",
    "schedules",
    "tracks",
    "documents",
]
OBJECTS = [
    "formal writing",
    "short paragraphs",
    "Postgres 16",
    "blog posts on Tuesday mornings",
    "Rust for the workers",
    "the port 3111",
    "dark mode everywhere",
    "green tea",
    "Kubernetes",
    "nine cross-compile targets",
    "weekly releases",
    "metric units",
    "terse answers",
    "feature flags",
    "Grafana dashboards",
    "the Lisbon office",
    "type hints",
    "unit tests first",
    "the monorepo",
    "squash merges",
    "a standing desk",
    "vim keybindings",
    "café meetings",
    "release notes in English",
    "on-call rotations",
    "the 日本語 docs",
    "Friday deploys",
]
TAILS = [
    "",
    "",
    "",
    " since March",
    " for every project",
    " when on call",
    " at work",
    " at home",
    " because it is faster",
    " in every review",
    " (confirmed twice)",
    " unless told otherwise",
]
ENTITIES = [
    "user",
    "mike",
    "ana",
    "api",
    "blog",
    "grafana",
    "postgres",
    "kubernetes",
    "team",
    "priya",
    "deploy",
    "staging",
    "rust",
    "sam",
    "lisbon",
    "docs",
]
TAGS = ["style", "infra", "people", "blog", "coding", "prefs", "ops", "release"]


def sentence(rng: random.Random, serial: int) -> str:
    """A plausible memory sentence; the serial keeps every text distinct."""
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(TAILS)} #{serial}"


def make_records(memories: int, lines: int, seed: int = 7) -> list[Memory]:
    """The log's records in write order."""
    rng = random.Random(seed)
    out: list[Memory] = []
    current: dict[str, Memory] = {}
    ids: list[str] = []
    for serial in range(memories):
        text = sentence(rng, serial)
        created = NOW - rng.randrange(60_000, 365 * DAY)
        ents = rng.sample(ENTITIES, rng.randrange(0, 4))
        tags = rng.sample(TAGS, rng.randrange(0, 3))
        mem = Memory(
            id=fingerprint(text),
            text=text,
            entities=tuple(ents),
            tags=tuple(tags),
            confidence=rng.choice(("stated", "extracted", "inferred")),
            corroboration=0,
            pinned=rng.random() < 0.03,
            source=Source(f"s_{rng.randrange(5000)}") if rng.random() < 0.7 else None,
            created_at=created,
            updated_at=created,
            revision=0,
        )
        current[mem.id] = mem
        ids.append(mem.id)
        out.append(mem)
    for _ in range(lines - memories):
        mid = rng.choice(ids)
        old = current[mid]
        ts = min(NOW, old.updated_at + rng.randrange(1, 30 * DAY))
        roll = rng.random()
        if old.invalid_at is not None:
            new = old.replace(invalid_at=None, superseded_by=None, corroboration=old.corroboration + 1)
        elif roll < 0.55:
            new = old.replace(corroboration=old.corroboration + 1)
        elif roll < 0.75:
            new = old.replace(text=old.text + " (edited)")
        elif roll < 0.85:
            new = old.replace(pinned=not old.pinned)
        elif roll < 0.93 or old.pinned:
            new = old.replace(invalid_at=ts)
        else:
            winner = rng.choice(ids)
            if winner == mid or current[winner].invalid_at is not None:
                new = old.replace(corroboration=old.corroboration + 1)
            else:
                new = old.replace(invalid_at=ts, superseded_by=winner)
        new = new.replace(updated_at=ts, revision=old.revision + 1)
        current[mid] = new
        out.append(new)
    return out


def make_bank(folder: str, memories: int = 100_000, lines: int = 250_000, seed: int = 7) -> str:
    """Write a bank folder (``memories.jsonl``, a ``style`` rule, ``bank.yaml``); return the log path."""
    os.makedirs(os.path.join(folder, "rules"), exist_ok=True)
    with open(os.path.join(folder, "bank.yaml"), "w", encoding="utf-8") as fh:
        fh.write("description: synthetic benchmark bank\n")
    with open(os.path.join(folder, "rules", "style.md"), "w", encoding="utf-8") as fh:
        fh.write("# Style\nFormal register. No em-dashes.\n")
    path = os.path.join(folder, "memories.jsonl")
    with open(path, "wb") as fh:
        fh.write(b"".join(m.to_line() for m in make_records(memories, lines, seed)))
    return path


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "/tmp/keepgui-bench/bank"
    print(make_bank(target))


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = [
        "ka",
        "lo",
        "mi",
        "ter",
        "an",
        "os",
        "ri",
        "ve",
        "du",
        "pel",
        "sa",
        "no",
        "qu",
        "zi",
        "bra",
        "ent",
        "or",
        "tal",
        "fi",
        "gon",
        "ex",
        "um",
        "ly",
        "wi",
        "cha",
        "dor",
        "ne",
        "shi",
        "pa",
        "ru",
    ]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def make_keep_md(entries: int, seed: int = 11) -> str:
    """A keep.md of ``entries`` facts, each a sentence of 4-12 words, with about 2% exact
    duplicates, 2% entries contained in an earlier one and 2% near-duplicates (one word changed),
    as a long-neglected keep.md has. The vocabulary grows with the file (twice as many words as
    entries, as distinct facts bring their own names and terms), so besides the planted ones
    entries are distinct facts, as they are in a real keep.md."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng, max(5_000, 2 * entries))
    lines: list[str] = []
    for _ in range(entries):
        roll = rng.random()
        if lines and roll < 0.02:
            lines.append(rng.choice(lines))  # an exact duplicate
        elif lines and roll < 0.04:
            words = rng.choice(lines)[2:].split()
            lines.append("- " + " ".join(words[: max(2, len(words) - 2)]))  # contained in an earlier entry
        elif lines and roll < 0.06:
            words = rng.choice(lines)[2:].split()
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
            lines.append("- " + " ".join(words))  # a near-duplicate: one word changed
        else:
            words = [rng.choice(vocabulary) for _ in range(rng.randint(4, 12))]
            lines.append("- " + rng.choice(SUBJECTS) + " " + " ".join(words))
    return "\n".join(lines) + "\n"
