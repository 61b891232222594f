"""Shared nanobot test data: the spec's §6 keep.md fixture and a workspace builder."""

from __future__ import annotations

import os

SPEC_FIXTURE = """- Prefers metric units, including in recipes
- Lives in Lisbon; timezone Europe/Lisbon
- Vegetarian, but eats fish occasionally
- Allergic to penicillin
- Works as a backend developer; main stack is Go and Postgres
- Wants replies in English, with UI copy drafted in Portuguese
- Has a beagle named Biscuit
- Uses Fedora on the personal laptop and macOS at work
- Dislikes being called "buddy"
- Partner's name is Sam
"""

SPEC_FACTS = [line[2:] for line in SPEC_FIXTURE.splitlines()]

MEMORY_MD = """# Long-term Memory

## User Information
- Mike drinks green tea, never coffee after 14:00
- Sister Ana lives in Berlin

## Project Context
- Slow Bytes is a blog about careful software
"""


def make_workspace(
    root,
    keep: bytes | str | None = SPEC_FIXTURE,
    memory: str | None = MEMORY_MD,
    user: str | None = "# User\n\nKept facts are in keep.md; read it every turn.\n",
    soul: str | None = None,
    agents: str | None = None,
    history: bytes | None = None,
) -> str:
    """Create a nanobot workspace under ``root`` (test set-up writes directly) and return its path."""
    root = os.fspath(root)
    os.makedirs(os.path.join(root, "memory"), exist_ok=True)
    files = {
        "keep.md": keep,
        "memory/MEMORY.md": memory,
        "USER.md": user,
        "SOUL.md": soul,
        "AGENTS.md": agents,
        "memory/history.jsonl": history if history is not None else b"",
    }
    for rel, content in files.items():
        if content is None:
            continue
        data = content.encode("utf-8") if isinstance(content, str) else content
        with open(os.path.join(root, *rel.split("/")), "wb") as fh:
            fh.write(data)
    return root


def read(path) -> bytes:
    """The bytes of a file."""
    with open(path, "rb") as fh:
        return fh.read()


def write(path, data: bytes | str) -> None:
    """Test-side write, standing in for the agent (or a person) changing a file."""
    with open(path, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
