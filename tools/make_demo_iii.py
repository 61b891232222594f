"""Regenerate ``resources/demo/iii``: three banks with realistic rules and memory history.

Every line is produced by keepgui's implementation of the worker's mutations,
so the log is exactly what a worker would have written over a year of use.
Timestamps are relative to ``DEMO_EPOCH``; ``keepgui --demo`` shifts them to
the present when it makes its temporary copy. Run: ``python tools/make_demo_iii.py``.
"""

from __future__ import annotations

import os
import random
import shutil
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from keepgui.backends.iii import writes as mut
from keepgui.backends.iii.record import fingerprint
from keepgui.core.demo import DEMO_EPOCH

MIN = 60_000
HOUR = 3_600_000
DAY = 86_400_000

LEARNED_HEADER = (
    "# Learned\nStanding instructions captured automatically from conversations. "
    "Edit or delete lines freely — extraction only ever appends new ones.\n"
)

BANKS = {
    "main": {
        "description": "Personal memory: who Mike is and how he likes to work",
        "rules": {
            "learned": LEARNED_HEADER + "- Never use em-dashes.\n- Answer in English even when asked in Portuguese.\n"
            "- Keep replies under 200 words unless asked for detail.\n",
            "style": "# Style\n\nWrite in a formal register with short paragraphs.\n\n"
            "- Prefer concrete examples over abstractions.\n- Use metric units.\n"
            "- Dates as `YYYY-MM-DD`.\n",
        },
        "memories": [
            ("User prefers formal writing", ["user"], ["style"], 300, True),
            ("User publishes blog posts on Tuesday mornings", ["user", "blog"], ["blog"], 200, True),
            ("User lives in Lisbon; timezone Europe/Lisbon", ["user", "lisbon"], ["people"], 360, False),
            ("Mike is vegetarian but eats fish occasionally", ["mike"], ["people"], 250, False),
            ("Mike is allergic to penicillin", ["mike"], ["people", "health"], 340, True),
            ("Partner's name is Sam; they met in Porto", ["sam", "mike"], ["people"], 180, False),
            ("Mike has a beagle named Biscuit", ["mike", "biscuit"], ["people"], 150, False),
            ("User prefers metric units, including in recipes", ["user"], ["style"], 120, False),
            ("User dislikes being called buddy", ["user"], ["style"], 90, False),
            ("Mike runs on Saturday mornings along the Tagus", ["mike"], ["habits"], 90, False),
            ("User drinks green tea, never coffee after 14:00", ["user"], ["habits"], 70, False),
            ("Mike's birthday is 1988-03-14", ["mike"], ["people"], 330, True),
            ("User wants replies in English with UI copy drafted in Portuguese", ["user"], ["style"], 30, False),
            ("Mike reads science fiction; favourite author is Ursula K. Le Guin", ["mike"], ["books"], 20, False),
            ("User is learning Japanese (日本語) for a trip in October", ["user"], ["travel"], 12, False),
            ("Mike uses Fedora on the personal laptop and macOS at work", ["mike"], ["tools"], 8, False),
            ("User's dentist appointment is every six months at Clínica Sorriso", ["user"], ["health"], 5, False),
            ("Mike prefers window seats on flights", ["mike"], ["travel"], 2, False),
            ("User's sister Ana lives in Berlin", ["ana", "user"], ["people"], 1, False),
            ("Mike wants weekly summaries on Friday afternoons", ["mike"], ["habits"], 0.02, False),
            ("User's bank is Millennium; never share account numbers in chat", ["user"], ["security"], 210, True),
            ("Mike cycles to work when it is not raining", ["mike"], ["habits"], 140, False),
            ("User prefers calls before 11:00 or after 16:00", ["user"], ["habits"], 110, False),
            ("Mike plays five-a-side football on Wednesdays", ["mike"], ["habits"], 95, False),
            ("User's car is a 2019 electric Renault Zoe", ["user"], ["tools"], 75, False),
            ("Sam works as an architect at a firm in Alfama", ["sam"], ["people"], 55, False),
            ("Mike's favourite restaurant is Taberna da Rua das Flores", ["mike"], ["food"], 35, False),
            ("User is planning a kitchen renovation for the spring", ["user"], ["home"], 18, False),
            ("Mike keeps his notes in Obsidian, synced with git", ["mike", "obsidian"], ["tools"], 4, False),
        ],
    },
    "blog": {
        "description": "The blog: topics, voice and publishing schedule",
        "rules": {
            "style": "# Blog style\n\nOne idea per post. Titles under 60 characters, no clickbait.\n"
            "Open with the conclusion; then show the work.\n",
            "tone": "# Tone\n\nWarm, precise, a little dry. No exclamation marks.\n",
        },
        "memories": [
            ("The blog is called Slow Bytes and runs on Hugo", ["blog", "hugo"], ["blog"], 365, True),
            ("Posts go out on Tuesday at 09:00 Lisbon time", ["blog"], ["schedule"], 300, False),
            ("The newsletter goes out the day after a post", ["blog", "newsletter"], ["schedule"], 240, False),
            ("Readers liked the series on database indexes", ["blog"], ["topics"], 200, False),
            ("Avoid posts about crypto; Mike finds them tiresome", ["blog", "mike"], ["topics"], 160, False),
            ("Images are hosted on the blog's own server, not a CDN", ["blog"], ["infra"], 120, False),
            ("Draft posts live in the drafts/ folder of the repository", ["blog"], ["workflow"], 100, False),
            ("Comment moderation happens on Thursday evenings", ["blog"], ["schedule"], 70, False),
            ("The about page mentions Biscuit the beagle", ["blog", "biscuit"], ["topics"], 40, False),
            ("Next series: writing a search engine in 500 lines", ["blog"], ["topics"], 10, False),
            ("Post length target is 1200 to 1800 words", ["blog"], ["style"], 6, False),
            (
                "Code samples in posts are in Python unless the topic needs Rust",
                ["blog", "python", "rust"],
                ["style"],
                3,
                False,
            ),
            ("Guest posts are accepted once a quarter", ["blog"], ["workflow"], 0.5, False),
            ("The blog's analytics are self-hosted Plausible", ["blog", "plausible"], ["infra"], 260, False),
            ("Every post gets a short summary for Mastodon", ["blog", "mastodon"], ["workflow"], 175, False),
            ("The most read post is about SQLite in production", ["blog", "sqlite"], ["topics"], 130, False),
            ("Mike proofreads posts aloud before publishing", ["mike", "blog"], ["workflow"], 85, False),
            ("The RSS feed includes full post text", ["blog"], ["infra"], 65, False),
            ("Post illustrations are hand-drawn by Sam", ["sam", "blog"], ["style"], 28, False),
            ("Tags on the blog are limited to twelve", ["blog"], ["style"], 14, False),
        ],
    },
    "coding": {
        "description": "Conventions for Mike's code and infrastructure",
        "rules": {
            "api-conventions": "# API conventions\n\n- REST paths are plural nouns: `/users/{id}`.\n"
            '- Errors are JSON `{"error": {"code", "message"}}`.\n'
            "- Every endpoint has an OpenAPI description.\n",
            "learned": LEARNED_HEADER + "- Run the tests before proposing a commit.\n- Prefer small pull requests.\n",
            "style": "# Code style\n\nPython: type hints everywhere, `ruff` clean, f-strings.\n"
            "Rust: `clippy -D warnings`. Comments say why, not what.\n",
        },
        "memories": [
            ("The API port is 3111", ["api"], ["infra"], 300, False),
            ("Main stack is Go and Postgres", ["go", "postgres"], ["stack"], 330, True),
            ("Deploys run on Fridays after 16:00", ["deploy"], ["ops"], 280, False),
            ("The staging server is staging.slowbytes.dev", ["staging"], ["infra"], 210, False),
            ("The deploy pipeline uses nine cross-compile targets", ["deploy"], ["ops"], 190, False),
            ("Grafana dashboards live in the ops repository", ["grafana"], ["ops"], 150, False),
            ("Postgres is on version 16 with pgvector", ["postgres"], ["stack"], 130, False),
            ("The team squash-merges pull requests", ["team"], ["workflow"], 110, False),
            ("Unit tests run with pytest and coverage over 85%", ["python"], ["workflow"], 90, False),
            ("Feature flags are managed in a YAML file, not a service", ["flags"], ["workflow"], 75, False),
            ("Priya reviews all database migrations", ["priya", "postgres"], ["people"], 60, False),
            ("Logs ship to Loki with 14 days retention", ["loki"], ["ops"], 45, False),
            ("The mobile app is written in Kotlin", ["mobile"], ["stack"], 30, False),
            ("Rust is used for the ingestion workers", ["rust"], ["stack"], 15, False),
            ("Tomás owns the on-call rotation this quarter", ["tomás"], ["people", "ops"], 7, False),
            ("Secrets are stored in the team's Vault, never in .env files", ["vault"], ["security"], 4, True),
            ("CI runs on two cores, so the suite must stay under 15 minutes", ["ci"], ["workflow"], 1, False),
            ("The search service caches results for 5 minutes", ["search"], ["infra"], 0.1, False),
            ("Backups run nightly at 02:00 to an offsite bucket", ["backups"], ["ops"], 320, True),
            ("The monorepo uses Bazel for the Go services", ["bazel", "go"], ["stack"], 230, False),
            ("Code review needs one approval, two for migrations", ["team"], ["workflow"], 165, False),
            ("Ana from the data team owns the analytics pipeline", ["ana"], ["people"], 140, False),
            ("The public API rate limit is 600 requests per minute", ["api"], ["infra"], 105, False),
            ("Incident reviews are blameless and written within a week", ["team"], ["ops"], 80, False),
            ("Dependabot updates are merged on Mondays", ["team"], ["workflow"], 50, False),
            ("The frontend is SvelteKit with TypeScript", ["frontend"], ["stack"], 22, False),
            ("Load tests use k6 against staging only", ["k6", "staging"], ["ops"], 9, False),
            ("The ingestion workers process about 2,000 events per second", ["rust"], ["infra"], 0.3, False),
        ],
    },
}

# Later history, applied in time order: (bank, days ago, action, args)
HISTORY = [
    ("main", 240, "reinforce", "User prefers formal writing"),
    ("main", 200, "reinforce", "User prefers formal writing"),
    ("main", 170, "reinforce", "User publishes blog posts on Tuesday mornings"),
    (
        "main",
        150,
        "edit",
        ("Mike is vegetarian but eats fish occasionally", "Mike is vegetarian but eats fish now and then"),
    ),
    ("main", 100, "reinforce", "User prefers metric units, including in recipes"),
    ("main", 80, "delete", "Mike runs on Saturday mornings along the Tagus"),
    ("main", 50, "save", ("Mike runs on Sunday mornings along the Tagus", ["mike"], ["habits"])),
    ("main", 49, "supersede", "User drinks green tea, never coffee after 14:00"),
    ("main", 49, "save", ("User drinks green tea; no coffee after 14:00, decaf is fine", ["user"], ["habits"])),
    ("main", 25, "reinforce", "User prefers formal writing"),
    ("main", 10, "pin", "User lives in Lisbon; timezone Europe/Lisbon"),
    ("main", 3, "reinforce", "User wants replies in English with UI copy drafted in Portuguese"),
    ("main", 0.01, "reinforce", "User publishes blog posts on Tuesday mornings"),
    ("blog", 280, "reinforce", "Posts go out on Tuesday at 09:00 Lisbon time"),
    ("blog", 190, "reinforce", "Readers liked the series on database indexes"),
    (
        "blog",
        100,
        "edit",
        (
            "Images are hosted on the blog's own server, not a CDN",
            "Images are hosted on the blog's own server behind a small cache, not a CDN",
        ),
    ),
    ("blog", 50, "delete", "Comment moderation happens on Thursday evenings"),
    ("blog", 30, "restore", "Comment moderation happens on Thursday evenings"),
    ("blog", 20, "reinforce", "Posts go out on Tuesday at 09:00 Lisbon time"),
    ("blog", 8, "tag", ("Next series: writing a search engine in 500 lines", ["topics", "series"])),
    ("coding", 260, "reinforce", "The API port is 3111"),
    ("coding", 220, "reinforce", "The API port is 3111"),
    ("coding", 170, "supersede", "Deploys run on Fridays after 16:00"),
    ("coding", 170, "save", ("Deploys run on Thursdays; Friday deploys are banned", ["deploy"], ["ops"])),
    ("coding", 120, "reinforce", "Deploys run on Thursdays; Friday deploys are banned"),
    ("coding", 100, "edit", ("Postgres is on version 16 with pgvector", "Postgres is on version 17 with pgvector")),
    ("coding", 95, "reinforce", "The team squash-merges pull requests"),
    ("coding", 20, "delete", "The mobile app is written in Kotlin"),
    ("coding", 35, "pin", "The API port is 3111"),
    ("coding", 12, "reinforce", "Rust is used for the ingestion workers"),
    ("coding", 2, "reinforce", "Unit tests run with pytest and coverage over 85%"),
]


def build(target: str) -> None:
    rng = random.Random(11)
    if os.path.exists(target):
        shutil.rmtree(target)
    events: list[tuple[int, str, str, object]] = []
    for bank, spec in BANKS.items():
        for text, entities, tags, days, pinned in spec["memories"]:
            at = DEMO_EPOCH - int(days * DAY) - rng.randrange(0, 50 * MIN)
            events.append((at, bank, "save", (text, entities, tags, pinned)))
    for bank, days, action, args in HISTORY:
        events.append((DEMO_EPOCH - int(days * DAY) + rng.randrange(0, 30 * MIN), bank, action, args))
    events = [(min(at, DEMO_EPOCH - 5 * MIN), bank, action, args) for at, bank, action, args in events]
    events.sort(key=lambda e: e[0])
    state: dict[str, dict[str, object]] = {b: {} for b in BANKS}
    lines: dict[str, list[bytes]] = {b: [] for b in BANKS}
    sessions = [f"s_{rng.randrange(16**6):06x}" for _ in range(12)]
    pending_supersede: dict[str, object] = {}  # bank -> the memory the next save supersedes

    def put(bank, transition):
        if transition.record is not None:
            state[bank][transition.record.id] = transition.record
            lines[bank].append(transition.record.to_line())

    def by_text(bank, text):
        for memory in state[bank].values():
            if memory.text == text:
                return memory
        raise KeyError(text)

    for at, bank, action, args in events:
        if action == "save":
            text, entities, tags, *rest = args
            pinned = rest[0] if rest else False
            transition = mut.save_transition(
                state[bank].get(fingerprint(text)), text, entities, tags, pinned, rng.choice(sessions), now=at
            )
            roll = rng.random()
            if transition.created and transition.record.revision == 0 and not pinned and roll < 0.55:
                # Most memories arrive through the worker's automatic extraction, not an explicit save.
                confidence = "inferred" if roll < 0.12 else "extracted"
                transition = mut.Transition(transition.record.replace(confidence=confidence), True, "created")
            put(bank, transition)
        elif action == "reinforce":
            memory = by_text(bank, args)
            put(bank, mut.save_transition(memory, memory.text, now=at))
        elif action == "edit":
            old, new = args
            memory = by_text(bank, old)
            put(bank, mut.update_transition(memory, memory.id, text=new, now=at))
        elif action == "tag":
            text, tags = args
            memory = by_text(bank, text)
            put(bank, mut.update_transition(memory, memory.id, tags=tags, now=at))
        elif action == "pin":
            memory = by_text(bank, args)
            put(bank, mut.update_transition(memory, memory.id, pinned=True, now=at))
        elif action == "delete":
            memory = by_text(bank, args)
            put(bank, mut.delete_transition(memory, memory.id, now=at))
        elif action == "restore":
            memory = by_text(bank, args)
            put(bank, mut.restore_transition(memory, memory.id, now=at))
        elif action == "supersede":
            # the winner is the next event's save; record the supersede after it exists
            pending_supersede[bank] = by_text(bank, args)
            continue
        if action == "save" and bank in pending_supersede:
            loser = pending_supersede.pop(bank)
            winner = by_text(bank, args[0])
            put(bank, mut.supersede_transition(loser, loser.id, winner, winner.id, now=at + 1000))

    for bank, spec in BANKS.items():
        folder = os.path.join(target, bank)
        os.makedirs(os.path.join(folder, "rules"))
        with open(os.path.join(folder, "bank.yaml"), "wb") as fh:
            from keepgui.backends.iii.store import bank_yaml

            fh.write(bank_yaml(spec["description"]))
        for name, content in spec["rules"].items():
            with open(os.path.join(folder, "rules", name + ".md"), "w", encoding="utf-8") as fh:
                fh.write(content)
        with open(os.path.join(folder, "memories.jsonl"), "wb") as fh:
            fh.write(b"".join(lines[bank]))
        print(f"{bank}: {len(lines[bank])} lines, {len(state[bank])} memories")


if __name__ == "__main__":
    here = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    build(os.path.join(here, "resources", "demo", "iii"))
