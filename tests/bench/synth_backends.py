"""Every file-based backend at scale, for benchmarks (deterministic by seed).

``make_sources(parent)`` copies the bundled demo (:func:`keepgui.core.demo.make_demo_copy`, so each
agent's files are where the agent looks) and grows one memory of each backend to the size issue 32
names: a Claude Code project with :data:`CLAUDE_TOPICS` topic files and as many lines of
``MEMORY.md`` index; a nanobot ``keep.md`` of :data:`KEEP_LINES` lines; a global ``GEMINI.md`` of
:data:`GEMINI_BYTES`; a Hermes home whose ``MEMORY.md`` and ``USER.md`` are full to their limits in
:data:`HERMES_PROFILES` profiles, with :data:`HERMES_PENDING` writes waiting for approval. Returns
``{kind: (window option, source folder, bank shown)}``.
"""

from __future__ import annotations

import json
import os
import random

from keepgui.core.demo import make_demo_copy

CLAUDE_TOPICS = 5_000
KEEP_LINES = 100_000
GEMINI_BYTES = 1 << 20
HERMES_PROFILES = 40
HERMES_PENDING = 500
HERMES_LIMITS = {"MEMORY.md": 2200, "USER.md": 1375}  # the demo's config.yaml (Hermes's defaults)

_WORDS = (
    "deploy staging grafana postgres backups lisbon porto review commits rust python neovim fish nightjar "
    "classifier dataset pipeline release schedule invoice webshop payments cache queue latency tracing "
    "benchmark profile tests fixtures migration schema index vacuum replica timezone holiday meeting "
    "standup budget laptop fedora thinkpad wayland kde docker kubernetes helm terraform secrets vault"
).split()


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:]


def _claude(home: str, rng: random.Random, topics: int = CLAUDE_TOPICS) -> str:
    projects = os.path.join(home, ".claude", "projects")
    (name,) = [n for n in os.listdir(projects) if os.path.isdir(os.path.join(projects, n, "memory"))]
    memory = os.path.join(projects, name, "memory")
    index = ["# Memory index", ""]
    for i in range(topics):
        topic = f"topic-{i:05d}.md"
        hook = _sentence(rng, 8)
        body = "\n\n".join(_sentence(rng, rng.randint(12, 40)) + "." for _ in range(rng.randint(1, 4)))
        front = f"---\nname: topic-{i:05d}\ndescription: {json.dumps(hook)}\nmetadata:\n  type: project\n---\n\n"
        with open(os.path.join(memory, topic), "w", encoding="utf-8") as fh:
            fh.write(front + body + "\n")
        index.append(f"- [Topic {i}]({topic}) — {hook}")
    with open(os.path.join(memory, "MEMORY.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(index) + "\n")
    return name


def _keep(workspace: str, rng: random.Random, count: int = KEEP_LINES) -> None:
    lines = [f"- {_sentence(rng, rng.randint(5, 16))} ({i})" for i in range(count)]
    with open(os.path.join(workspace, "keep.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _gemini(gemini_dir: str, rng: random.Random, size: int = GEMINI_BYTES) -> None:
    path = os.path.join(gemini_dir, "GEMINI.md")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    limit, (lines, size) = size, ([], len(text.encode("utf-8")))
    while size < limit:
        line = f"- {_sentence(rng, rng.randint(6, 18))} ({len(lines)})"
        lines.append(line)
        size += len(line) + 1
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")


def _full(limit: int, rng: random.Random) -> str:
    entries: list[str] = []
    while True:
        entry = _sentence(rng, rng.randint(6, 14)) + "."
        if len("\n§\n".join([*entries, entry])) > limit:
            return "\n§\n".join(entries) + "\n"
        entries.append(entry)


def _hermes(
    home: str, rng: random.Random, profiles: int = HERMES_PROFILES, pending_writes: int = HERMES_PENDING
) -> None:
    for profile in range(profiles):
        where = home if profile == 0 else os.path.join(home, "profiles", f"p{profile:02d}")
        os.makedirs(os.path.join(where, "memories"), exist_ok=True)
        for name, limit in HERMES_LIMITS.items():
            with open(os.path.join(where, "memories", name), "w", encoding="utf-8") as fh:
                fh.write(_full(limit, rng))
    pending = os.path.join(home, "pending", "memory")
    for i in range(pending_writes):
        content = _sentence(rng, rng.randint(6, 14)) + "."
        write = {
            "id": f"{i:08x}",
            "subsystem": "memory",
            "action": "add",
            "summary": f"add to memory: {content}",
            "origin": "background_review",
            "created_at": 1796236648.0 + i,
            "payload": {"action": "add", "target": "memory", "content": content, "old_text": None},
        }
        with open(os.path.join(pending, f"{i:08x}.json"), "w", encoding="utf-8") as fh:
            json.dump(write, fh, indent=2)


def make_sources(parent: str, seed: int = 7, scale: float | dict[str, float] = 1.0) -> dict[str, tuple[str, str, str]]:
    """The demo copied under ``parent`` with one memory of each backend grown (see the module);
    ``scale`` multiplies the sizes, of every backend or per backend (``{"gemini": 1.0, ...}``, 1 for
    one not named): the window tests use smaller ones."""
    rng = random.Random(seed)
    copy = make_demo_copy(parent)
    of = (lambda kind: scale.get(kind, 1.0)) if isinstance(scale, dict) else (lambda kind: scale)
    claude_bank = _claude(copy.claude_home, rng, max(1, int(CLAUDE_TOPICS * of("claude"))))
    _keep(copy.nanobot, rng, max(1, int(KEEP_LINES * of("nanobot"))))
    _gemini(copy.gemini, rng, int(GEMINI_BYTES * of("gemini")))
    hermes = of("hermes")
    _hermes(copy.hermes, rng, max(1, int(HERMES_PROFILES * hermes)), int(HERMES_PENDING * hermes))
    return {
        "claude": ("--claude", copy.claude, claude_bank),
        "nanobot": ("--workspace", copy.nanobot, "keep.md"),
        "gemini": ("--gemini", copy.gemini, "backend"),
        "hermes": ("--hermes", copy.hermes, "default"),
    }
