"""The Codex part of keepgui's demo: a home with a V2 memory root, and a project over the AGENTS.md budget.

``resources/demo/codex`` (made by ``tools/make_demo_codex.py``) holds
``home/.codex`` — ``config.toml`` with memory on, a global ``AGENTS.md``, and
``memories_v2/`` with a summary, notes and rollout summaries — and
``project/shop``, whose ``AGENTS.md`` chain down to ``services/api`` crosses the
32 KiB project budget (with a blank ``AGENTS.override.md`` hiding a folder's
``AGENTS.md`` on the way). Three things cannot be stored in a repository and
are made by :func:`place_demo` in the fresh copy:

* the project's ``.git`` folder (its root marker);
* a session log under ``sessions/`` naming the project's session folder as its
  ``cwd``, as a Codex session there leaves it, so the home lists the project;
* Codex's git baseline of the memory root, as the demo's last consolidation
  left it: the summary and the one note it read; the other notes show as
  pending.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zlib

from keepgui.core import fsio

HOME = os.path.join("home", ".codex")
PROJECT = os.path.join("project", "shop")
SESSION_FOLDER = os.path.join("services", "api")
SESSION_LOG = os.path.join("sessions", "2025", "06", "14", "rollout-2025-06-14T16-20-00-0197a1b2-demo.jsonl")
ROOT = "memories_v2"
CONSOLIDATED_NOTES = ("2025-06-12T08-30-00-ci-runs-on-python-3-12.md",)
"""The notes the demo's last consolidation already read (in its baseline)."""
AUTHOR = b"Codex <noreply@openai.com>"


def _object(git_dir: str, kind: bytes, body: bytes) -> str:
    data = kind + b" %d\0" % len(body) + body
    sha = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    path = os.path.join(git_dir, "objects", sha[:2], sha[2:])
    if not os.path.exists(path):
        fsio.make_dirs(os.path.dirname(path))
        fsio.atomic_write(path, zlib.compress(data), mode=0o444)
    return sha


def _tree(git_dir: str, files: dict[str, bytes]) -> str:
    """A tree of ``files`` (``a/b.md -> bytes``), its subtrees written first."""
    here: dict[str, bytes] = {}
    folders: dict[str, dict[str, bytes]] = {}
    for rel, data in files.items():
        head, _sep, rest = rel.partition("/")
        if rest:
            folders.setdefault(head, {})[rest] = data
        else:
            here[head] = data
    entries = [(name, b"100644", _object(git_dir, b"blob", data)) for name, data in here.items()]
    entries += [(name, b"40000", _tree(git_dir, sub)) for name, sub in folders.items()]
    # git sorts a tree's entries by name, a folder's name as if it ended in "/"
    entries.sort(key=lambda e: e[0] + ("/" if e[1] == b"40000" else ""))
    body = b"".join(mode + b" " + name.encode() + b"\0" + bytes.fromhex(sha) for name, mode, sha in entries)
    return _object(git_dir, b"tree", body)


def write_baseline(root: str, files: dict[str, bytes], when: int) -> str:
    """A Codex-style git baseline of ``root`` holding ``files``, committed at ``when`` (epoch seconds)."""
    git_dir = os.path.join(root, ".git")
    tree = _tree(git_dir, files)
    who = AUTHOR + b" %d +0000" % when
    body = (
        b"tree " + tree.encode() + b"\nauthor " + who + b"\ncommitter " + who + b"\n\n"
        b"Initialize Codex git baseline\n\nCo-authored-by: Codex <noreply@openai.com>\n"
    )
    commit = _object(git_dir, b"commit", body)
    fsio.atomic_write(os.path.join(git_dir, "HEAD"), b"ref: refs/heads/main\n")
    fsio.make_dirs(os.path.join(git_dir, "refs", "heads"))
    fsio.atomic_write(os.path.join(git_dir, "refs", "heads", "main"), commit.encode() + b"\n")
    return commit


def place_demo(folder: str, shift_ms: int) -> tuple[str, str]:
    """Place a copied demo folder; returns ``(Codex home, the project's session folder)``
    (``("", "")`` when there is no demo)."""
    home = os.path.join(folder, HOME)
    project = os.path.join(folder, PROJECT)
    if not os.path.isdir(home) or not os.path.isdir(project):
        return "", ""
    fsio.make_dirs(os.path.join(project, ".git"))
    cwd = os.path.realpath(os.path.join(project, SESSION_FOLDER))
    meta = {
        "timestamp": "2025-06-14T16:20:00.000Z",
        "type": "session_meta",
        "payload": {"id": "0197a1b2-demo", "cwd": cwd, "originator": "codex_cli_rs", "source": "cli"},
    }
    log = os.path.join(home, SESSION_LOG)
    fsio.make_dirs(os.path.dirname(log))
    fsio.atomic_write(log, (json.dumps(meta) + "\n").encode("utf-8"), expect=fsio.Stamp.missing())
    root = os.path.join(home, ROOT)
    files: dict[str, bytes] = {}
    data, _stamp = fsio.read_stamped(os.path.join(root, "memory_summary.md"))
    if data is not None:
        files["memory_summary.md"] = data
    for name in CONSOLIDATED_NOTES:
        note, _stamp = fsio.read_stamped(os.path.join(root, "extensions", "ad_hoc", "notes", name))
        if note is not None:
            files[f"extensions/ad_hoc/notes/{name}"] = note
    when = int(time.time()) - 26 * 3600 if shift_ms else 1_749_900_000
    write_baseline(root, files, when)
    return home, cwd
