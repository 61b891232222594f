"""Regenerate ``resources/demo/nanobot``: a nanobot workspace for the same user as the iii demo.

Mike lives in Lisbon with his partner Sam and their beagle Biscuit, writes a
blog called Slow Bytes, and works as a backend developer on Go and Postgres.
keep.md is over the 150-line cap (so the demo has a compaction due) and holds
what a real one collects: exact duplicates (one with a ``*`` bullet), near-
duplicates, entries with dates, rules that belong in AGENTS.md, a link to read
later, and a heading. MEMORY.md overlaps keep.md on a few facts, USER.md points
at keep.md, and memory/history.jsonl has a few Consolidator records.

Run: ``python tools/make_demo_nanobot.py``. Every file is written through
keepgui's fsio, like everything keepgui writes.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from keepgui.core import fsio

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "resources", "demo", "nanobot"))

FACTS = [
    # who he is
    "Name is Mike; prefers Mike over Michael",
    "Lives in Lisbon; timezone Europe/Lisbon",
    "Moved to Lisbon from Porto in March 2019",
    "Birthday is 1988-03-14",
    "Partner's name is Sam",
    "Partner's name is Sam; they met in Porto",
    "Sam is a nurse at Hospital de Santa Maria, works night shifts",
    "Sam's birthday is 1990-09-02",
    "Sister Ana lives in Berlin",
    "Parents live in Braga; visits them at Christmas",
    "Speaks English and Portuguese; learning Japanese (日本語)",
    "Wants replies in English, with UI copy drafted in Portuguese",
    'Dislikes being called "buddy"',
    "Prefers formal writing with short paragraphs",
    "Prefers concrete examples over abstractions",
    "Prefers metric units, including in recipes",
    "Uses 24-hour time and YYYY-MM-DD dates",
    # health and food
    "Allergic to penicillin",
    "Allergic to penicillin",
    "Vegetarian, but eats fish occasionally",
    "Vegetarian but eats fish now and then",
    "Lactose intolerant — oat milk in coffee",
    "Prefers tea",
    "Prefers green tea",
    "Drinks green tea, never coffee after 14:00",
    "Favourite restaurant is Ao 26 Vegan Food Project in Chiado",
    "Cooks a big pot of feijoada (fish version) on Sundays",
    "Dislikes coriander",
    "Loves pastéis de nata from Manteigaria",
    "Dentist appointment 2025-07-03 at Clínica Sorriso",
    "Sees the dentist every six months at Clínica Sorriso",
    "Had a knee injury in 2023 — no running downhill",
    "Blood type is A+",
    # the dog
    "Has a beagle named Biscuit",
    "Biscuit was adopted in 2021 from a shelter in Sintra",
    "Biscuit is scared of fireworks — stays home on Santo António night",
    "Biscuit's vet is Dr. Rita Alves at VetLisboa",
    "Biscuit eats grain-free food — because of a skin allergy",
    "Biscuit walks: 7:30 and 19:00 around Jardim da Estrela",
    "Biscuit's vaccination is due every April",
    # work
    "Works as a backend developer; main stack is Go and Postgres",
    "Works as a backend developer on Go and Postgres",
    "Employer is a Lisbon fintech; team of six backend engineers",
    "Works remotely Mondays and Fridays",
    "Office is near Cais do Sodré",
    "On-call one week in six; pager via Opsgenie",
    "Prefers Go over Python for CLI tools — because single static binaries",
    "Uses Postgres 16 at work; migrating from 13",
    "Prefers sqlc over an ORM — because queries stay visible",
    "Dead end: tried GORM in 2022, dropped it — too much magic",
    "Uses Fedora on the personal laptop and macOS at work",
    "Editor is Neovim with a minimal config",
    "Uses tmux for every terminal session",
    "Keyboard: split ergonomic, Colemak layout",
    "Prefers dark themes everywhere",
    "Deploy window at work is Tuesday to Thursday, 10:00–16:00",
    "Never deploys on Fridays — because weekend on-call is thin",
    "Writes design docs before large changes",
    "Reviews PRs in the morning, codes in the afternoon",
    "Mentors two junior developers",
    "Interested in moving to a staff engineer role",
    "Gave a talk on Postgres indexing at Lisbon Go meetup",
    "Gave a talk on Postgres indexing at the Lisbon Go meetup in 2024",
    "Dislikes microservices for small teams — because ops overhead",
    "Favourite Go library: pgx",
    "Uses Grafana and Prometheus for monitoring at work",
    # the blog
    "Writes a blog called Slow Bytes",
    "Slow Bytes is about slow, careful software engineering",
    "Publishes Slow Bytes posts on Tuesday mornings",
    "Slow Bytes runs on a self-written Go static site generator",
    "Slow Bytes newsletter has about 1,200 subscribers",
    "Wants blog drafts reviewed for clarity, not tone",
    "Blog post titles in sentence case",
    "Slow Bytes logo was drawn by Sam",
    "Next Slow Bytes series: Postgres internals for app developers",
    # habits and hobbies
    "Runs on Saturday mornings along the Tagus",
    "Runs along the Tagus on Saturday mornings",
    "Runs a 10 km route from Belém to Cais do Sodré",
    "Reads science fiction; favourite author is Ursula K. Le Guin",
    "Favourite book is The Dispossessed",
    "Plays chess online as mike_slowbytes",
    "Plays guitar badly but happily",
    "Listens to jazz while coding — Bill Evans mostly",
    "Goes surfing in Ericeira in summer",
    "Climbs at a bouldering gym in Alcântara on Wednesdays",
    "Takes film photos with an Olympus OM-1",
    "Grows tomatoes and basil on the balcony",
    "Supports Benfica, but does not watch much football",
    "Learning Japanese for a trip in October",
    "Flight to Tokyo on 2025-10-12",
    "Wants to visit Kyoto temples in autumn",
    "Prefers window seats on flights",
    "Prefers trains over planes within Europe",
    "Travels light — one carry-on bag",
    "Holiday every August in the Alentejo",
    # home and life
    "Lives in a flat in Campo de Ourique with Sam and Biscuit",
    "Flat has no lift — fourth floor",
    "Rides an electric bike to the office",
    "Does not own a car",
    "Bank is Millennium; never share account numbers in chat",
    "Pays rent on the 1st of each month",
    "Prefers paper notebooks for planning",
    "Uses a Leuchtturm notebook, dotted",
    "Does a weekly review on Sunday evenings",
    "Wants weekly summaries on Friday afternoons",
    "Sleeps 23:00–07:00; no calls before 9:00",
    "Meditates 10 minutes every morning",
    "Dislikes phone calls; prefers text",
    "Prefers Signal over WhatsApp",
    "Email inbox zero every Friday",
    "Uses Bitwarden for passwords",
    "Backs up photos to a NAS at home",
    "Home NAS is a Synology DS220+",
    "Internet at home is MEO fibre",
    "Pays for Kagi search",
    "Uses Firefox with uBlock Origin",
    "Prefers open-source tools when they are good enough",
    "Donates monthly to the Internet Archive",
    "Volunteers at a food bank in Alcântara once a month",
    "Votes in every local election",
    # people
    "Best friend is João, a chef in Porto",
    "João's restaurant is Tasca do João in Ribeira",
    "Colleague Inês is the team lead",
    "Colleague Pedro handles the Postgres migrations with him",
    "Manager is Carla; 1:1s on Thursdays",
    "Sam's parents live in Coimbra",
    "Niece Lena turns 6 in November",
    "Godfather to Lena",
    "Sends Ana a postcard from every trip",
    "Sam prefers surprise dinners over gifts",
    "Anniversary with Sam is 14 June",
    "Sam is allergic to cats",
    # preferences about answers
    "Likes answers with a short summary first",
    "Wants code examples in Go unless asked otherwise",
    "Prefers SQL examples for Postgres 16",
    "Wants sources linked for factual claims",
    "Dislikes emoji in replies",
    "Prefers British spelling in English",
    "Wants recipes in grams and Celsius",
    "Prefers bullet points over long paragraphs for plans",
    # decisions
    "Decided to stop using Twitter in 2023 — because too noisy",
    "Chose Fedora over Ubuntu — because newer kernels",
    "Chose Hetzner for the blog server — because price and EU location",
    "Moved the blog off Medium — because paywall",
    "Keeps the blog without analytics — because privacy",
    "Dead end: tried Obsidian sync, went back to paper",
    "Dead end: standing desk gave back pain; uses a normal desk",
    "Pays for software he uses daily",
    # things that do not belong here
    "Always answer in English, even when asked in Portuguese",
    "Never use em-dashes in replies",
    "Read https://www.postgresql.org/docs/16/indexes-types.html later",
    "Renew passport before the Tokyo trip",
    "Likes the Lisbon light in October",
    "Favourite viewpoint is Miradouro da Graça",
    "Favourite café is Fábrica Coffee Roasters",
    "Walks Biscuit to Jardim da Estrela on Sundays",
    "Prefers quiet restaurants",
]

PETS_AFTER = "Biscuit walks: 7:30 and 19:00 around Jardim da Estrela"

MEMORY_MD = """# Long-term Memory

## User Information
- Mike is a backend developer in Lisbon; main stack is Go and Postgres
- Partner's name is Sam; they met in Porto
- Has a beagle named Biscuit, adopted in 2021

## Preferences
- Prefers metric units, including in recipes
- Drinks green tea, never coffee after 14:00
- Formal writing, short paragraphs, concrete examples

## Project Context
- Slow Bytes: Mike's blog about slow, careful software engineering; posts on Tuesday mornings
- The blog runs on a self-written Go static site generator hosted at Hetzner
- Work: migrating the team's Postgres from 13 to 16

## Important Notes
- Allergic to penicillin
"""

USER_MD = """# User Profile

- Name: Mike (not Michael)
- Location: Lisbon, Portugal (Europe/Lisbon)
- Language: English replies; UI copy drafted in Portuguese
- Style: formal, short paragraphs, concrete examples, no emoji
- Work: backend developer (Go, Postgres) at a Lisbon fintech

## Kept facts

Facts Mike explicitly asked to keep are in keep.md at the workspace root; read it on every turn.
"""

SOUL_MD = """# Soul

Be calm, precise and brief. Say what you know and how sure you are.

- Ask one clarifying question when a request is ambiguous, not three.
- Prefer doing the small correct thing over the big impressive one.
- Admit mistakes plainly and fix them.
"""

AGENTS_MD = """# Agent Instructions

- Keep explicit user facts in keep.md through the keep skill; never edit MEMORY.md, USER.md or SOUL.md.
- Reminders go through the cron tool, not into memory files.
- For Go code: gofmt, table-driven tests, errors wrapped with %w.
- For SQL: Postgres 16 syntax, explicit column lists, no SELECT *.
"""

HISTORY = [
    (
        1,
        "2025-05-20 08:41",
        "- [permanent] Mike is allergic to penicillin\n- [durable] Prefers green tea",
        "telegram:5521",
    ),
    (2, "2025-05-27 19:02", "- [permanent] Partner's name is Sam; they met in Porto", "telegram:5521"),
    (3, "2025-06-03 10:15", "- [durable] Migrating the team's Postgres from 13 to 16", "cli:direct"),
    (4, "2025-06-10 09:12", "- [permanent] Has a beagle named Biscuit, adopted in 2021", "telegram:5521"),
    (
        5,
        "2025-06-14 18:30",
        "- [ephemeral] Flight to Tokyo on 2025-10-12\n- [durable] Learning Japanese",
        "telegram:5521",
    ),
]


def keep_md() -> str:
    """keep.md: canonical entries, one ``*`` bullet duplicate, and a ``## Pets`` heading."""
    lines = []
    for fact in FACTS:
        lines.append(f"- {fact}")
        if fact == PETS_AFTER:
            lines.append("")
            lines.append("## Pets")
            lines.append("* Has a beagle named Biscuit")
            lines.append("- Biscuit's favourite toy is a rubber chicken")
    return "\n".join(lines) + "\n"


def write(rel: str, text: str) -> None:
    """Write one demo file (UTF-8) through fsio."""
    path = os.path.join(ROOT, *rel.split("/"))
    fsio.make_dirs(os.path.dirname(path))
    fsio.atomic_write(path, text.encode("utf-8"))


def main() -> None:
    """Write (or overwrite) every file of the demo workspace."""
    fsio.make_dirs(ROOT)
    write("keep.md", keep_md())
    write("memory/MEMORY.md", MEMORY_MD)
    write("USER.md", USER_MD)
    write("SOUL.md", SOUL_MD)
    write("AGENTS.md", AGENTS_MD)
    history = "".join(
        json.dumps({"cursor": c, "timestamp": t, "content": text, "session_key": key}, ensure_ascii=False) + "\n"
        for c, t, text, key in HISTORY
    )
    write("memory/history.jsonl", history)
    write("memory/.cursor", str(HISTORY[-1][0]))
    write("memory/.dream_cursor", "4")
    print(f"wrote {ROOT}: keep.md with {keep_md().count(chr(10))} lines")


if __name__ == "__main__":
    main()
