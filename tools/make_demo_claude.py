"""Regenerate ``resources/demo/claude``: a Claude Code home and project for the same user as the other demos.

Mike (a backend developer on Go and Postgres, in Lisbon) works with Claude Code
on ``slow-bytes``, the Go engine of his blog. The demo has what a real home
collects after months: a user ``CLAUDE.md`` and rules (one with ``paths:``),
a project ``CLAUDE.md`` that imports its architecture notes, project rules,
a ``CLAUDE.local.md``, and an auto-memory folder whose ``MEMORY.md`` has grown
past 200 lines — so the newest memories are the ones the next session cannot
see. The index also holds what compaction and the orphan checks are for: a
duplicate entry, a line far over 200 characters, prose that belongs in a topic
file, an entry whose file is gone, and a topic file no entry points at (one
with the older flat ``type:``).

The memory folder is stored as ``home/.claude/projects/PROJECT/memory``; a demo
copy renames ``PROJECT`` to the name Claude Code gives the copied project
folder (:func:`keepgui.core.demo.make_demo_copy`).

Run: ``python tools/make_demo_claude.py``. Every file is written through
keepgui's fsio, like everything keepgui writes.
"""

from __future__ import annotations

import os
import shutil
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

from keepgui.backends.claude.writes import yaml_scalar
from keepgui.core import fsio

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "resources", "demo", "claude"))
PROJECT_PLACEHOLDER = "PROJECT"

USER_CLAUDE = """# How I work

- Answer in English; UI copy for the blog is drafted in Portuguese.
- Short paragraphs, concrete examples, metric units, YYYY-MM-DD dates.
- Never commit or push on my behalf; show me the diff first.

<!-- Personal notes below are for me, not for Claude. -->
<!-- Later: move the Postgres tips into a rule file. -->
"""

USER_RULES = {
    "writing.md": 'When you write prose for the blog, keep sentences under 25 words and avoid "simply".\n',
    "go.md": '---\npaths:\n  - "**/*.go"\n---\nGo: wrap errors with %w, no naked returns, table-driven tests.\n',
}

PROJECT_CLAUDE = """# slow-bytes

The Go engine behind the Slow Bytes blog. Read @docs/architecture.md before
changing the storage layer.

- `make test` runs unit and integration tests (needs Postgres 16 on :5432).
- Posts live in `content/` as Markdown with YAML front matter.
- Never edit files under `vendor/`.
"""

ARCHITECTURE = """# Architecture

HTTP handlers in `internal/web`, storage in `internal/store` (pgx, no ORM),
rendering in `internal/render` (goldmark). The feed is cached for 5 minutes.
"""

PROJECT_RULES = {
    "sql.md": '---\npaths: "internal/store/**"\n---\nSQL: every query is in `queries/*.sql`, named, and tested.\n',
    "testing.md": "Tests: no sleeps; use the fake clock in `internal/clock`.\n",
}

LOCAL = "My local Postgres runs in Docker as `pg16`; password in ~/.pgpass.\n"

HANDWRITTEN = [
    (
        "user",
        "user-role",
        "Mike is a backend developer (Go, Postgres) and writes the Slow Bytes blog",
        (
            "Mike is a backend developer who works mostly in Go and Postgres, and writes the Slow Bytes blog in his "
            "spare time."
        ),
    ),
    (
        "feedback",
        "no-restating-comments",
        "Do not add comments that restate the code",
        (
            "Do not add comments that restate what the code does.\n\n**Why:** Mike reads Go fluently and finds them "
            "noise.\n**How to apply:** comment only why, never what."
        ),
    ),
    (
        "feedback",
        "diff-before-commit",
        "Show the diff before any commit",
        (
            "Show the diff and wait before committing.\n\n**Why:** he reviews every change himself.\n"
            "**How to apply:** never run git commit or git push. See also [[no-restating-comments]]."
        ),
    ),
    (
        "project",
        "feed-cache",
        "The feed is cached for 5 minutes in internal/web",
        (
            "The RSS and Atom feeds are cached for 5 minutes (internal/web/feed.go). Invalidate on publish. "
            "The cache holds what [[goldmark-extensions]] renders."
        ),
    ),
    (
        "project",
        "postgres-16",
        "Integration tests need Postgres 16 on localhost:5432",
        "Integration tests need Postgres 16 on localhost:5432; `make db` starts it in Docker.",
    ),
    (
        "project",
        "goldmark-extensions",
        "Rendering uses goldmark with footnotes and typographer",
        "Markdown rendering uses goldmark with the footnote and typographer extensions; no raw HTML.",
    ),
    (
        "reference",
        "analytics-dashboard",
        "Plausible dashboard for the blog's traffic",
        "Traffic: the Plausible dashboard at https://plausible.io/slowbytes.example (read only).",
    ),
    (
        "reference",
        "hosting-ticket",
        "Hosting migration ticket HOST-42",
        "The move from the VPS to Fly.io is tracked in HOST-42; the nightly [[vps-backups]] must move too.",
    ),
    (
        "project",
        "comments-off",
        "Comments are off since 2025-02-01 (spam)",
        "Comments were switched off on 2025-02-01 because of spam; the table stays for the archive.",
    ),
    ("user", "timezone", "Mike is in Lisbon (Europe/Lisbon)", "Mike lives in Lisbon; schedule times in Europe/Lisbon."),
]

TOPICS = [
    "sqlite-vs-postgres",
    "go-generics",
    "pgx-pools",
    "feed-caching",
    "markdown-footnotes",
    "slow-tests",
    "fake-clocks",
    "table-driven-tests",
    "error-wrapping",
    "context-cancel",
    "http-timeouts",
    "graceful-shutdown",
    "structured-logs",
    "slog-handlers",
    "goroutine-leaks",
    "race-detector",
    "fuzzing",
    "benchmarks",
    "profiling",
    "pprof-flamegraphs",
]
STATES = ["draft outline", "first draft", "needs examples", "under review", "scheduled", "published"]


def generated():
    """Blog-post memories: one per post idea, each a project memory with its state."""
    out = []
    for n in range(204):
        topic = TOPICS[n % len(TOPICS)]
        part = n // len(TOPICS) + 1
        state = STATES[n % len(STATES)]
        name = f"post-{topic}-{part}"
        out.append(
            (
                "project",
                name,
                f'Post "{topic.replace("-", " ")}" part {part}: {state}',
                f"The post on {topic.replace('-', ' ')} (part {part}) is at the {state} stage."
                + (f" It follows [[post-{topic}-{part - 1}]]." if part > 1 else ""),
            )
        )
    return out


def main() -> None:
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)

    def put(rel: str, text: str) -> None:
        path = os.path.join(ROOT, rel)
        fsio.make_dirs(os.path.dirname(path))
        fsio.atomic_write(path, text.encode("utf-8"))

    put("home/.claude/CLAUDE.md", USER_CLAUDE)
    for name, text in USER_RULES.items():
        put(f"home/.claude/rules/{name}", text)
    project = "project/slow-bytes"
    put(f"{project}/CLAUDE.md", PROJECT_CLAUDE)
    put(f"{project}/docs/architecture.md", ARCHITECTURE)
    for name, text in PROJECT_RULES.items():
        put(f"{project}/.claude/rules/{name}", text)
    put(f"{project}/CLAUDE.local.md", LOCAL)
    memory = f"home/.claude/projects/{PROJECT_PLACEHOLDER}/memory"
    index = [
        "# Memory index",
        "",
        "Mike asked to keep posts and infrastructure notes here; older drafts are archived in content/.",
        "",
    ]
    for kind, name, description, body in HANDWRITTEN + generated():
        put(
            f"{memory}/{name}.md",
            # quoted where YAML needs it (`part 3: published`), as the CLI itself writes front matter
            f"---\nname: {name}\ndescription: {yaml_scalar(description)}\nmetadata:\n  type: {kind}\n---\n\n{body}\n",
        )
        hook = description
        if name == "feed-cache":
            hook += (
                " — invalidate on publish, on edit of a published post, and when the site settings change; "
                "the cache key includes the feed format (RSS or Atom) and the tag filter, and a cold cache "
                "rebuilds in about 300 ms on the VPS"
            )
        index.append(f"- [{name.replace('-', ' ').capitalize()}]({name}.md) — {hook}")
        if name == "postgres-16":
            index.append(f"- [Postgres for tests]({name}.md) — {hook}")
    index.insert(12, "- [Old deploy script](deploy-script.md) — the deploy script (the file was deleted)")
    put(f"{memory}/MEMORY.md", "\n".join(index) + "\n")
    put(
        f"{memory}/vps-backups.md",
        "---\nname: vps-backups\ndescription: Nightly pg_dump to the NAS\ntype: reference\n"
        "---\n\nNightly pg_dump of the blog database goes to the NAS at 02:00.\n",
    )


if __name__ == "__main__":
    main()
