"""The Claude Code part of keepgui's demo: a home and a project, placed where Claude Code would look.

``resources/demo/claude`` (made by ``tools/make_demo_claude.py``) stores the
project's memory folder as ``home/.claude/projects/PROJECT/memory``, because
its real name depends on where the copy lands: :func:`place_demo` renames it to
the name Claude Code gives the copied project folder, gives the memories
ages in index order (the agent appends, so the last entries are the newest —
and the ones the 200-line cut hides), and records one session transcript line
with the project's ``cwd``, as a session there would leave it, so the home
maps the memory folder back to its project.
"""

from __future__ import annotations

import json
import os

from keepgui.backends.claude.layout import project_folder_name
from keepgui.backends.claude.memory import INDEX_NAME, parse_link_line
from keepgui.core import fsio

PLACEHOLDER = "PROJECT"
PROJECT = os.path.join("project", "slow-bytes")
AGE_STEP_NS = 3 * 3_600_000_000_000
"""Three hours between two memories of the demo."""
TRANSCRIPT = "5f0c3a9e-demo-session.jsonl"
"""The demo's one session transcript (only its ``cwd`` matters)."""


def place_demo(folder: str, edited_ns: int) -> tuple[str, str]:
    """Place a copied demo folder; returns ``(HOME, project folder)`` ("", "" when there is no demo)."""
    home, project = os.path.join(folder, "home"), os.path.join(folder, PROJECT)
    placeholder = os.path.join(home, ".claude", "projects", PLACEHOLDER)
    if not os.path.isdir(placeholder):
        return "", ""
    named = os.path.join(home, ".claude", "projects", project_folder_name(os.path.realpath(project)))
    fsio.rename_durably(placeholder, named)
    line = {"type": "user", "cwd": os.path.realpath(project), "sessionId": TRANSCRIPT.split("-demo")[0]}
    fsio.atomic_write(
        os.path.join(named, TRANSCRIPT), (json.dumps(line) + "\n").encode("utf-8"), expect=fsio.Stamp.missing()
    )
    memory = os.path.join(named, "memory")
    data, _stamp = fsio.read_stamped(os.path.join(memory, INDEX_NAME))
    parsed = (parse_link_line(line) for line in (data or b"").decode("utf-8").splitlines())
    targets = list(dict.fromkeys(p[1] for p in parsed if p))
    for age, rel in enumerate(reversed(targets)):
        path = os.path.join(memory, rel)
        if os.path.isfile(path):
            when = edited_ns - age * AGE_STEP_NS
            os.utime(path, ns=(when, when))
    return home, project
