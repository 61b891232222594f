"""Codex's git baseline of the memory root, read without git (no Qt, no subprocess).

Before its consolidation agent runs, Codex diffs the root against a git
repository it keeps in ``<root>/.git`` (the *baseline*: author ``Codex
<noreply@openai.com>``). At first it holds one commit with an empty tree
(``Initialize Codex git baseline``); after a consolidation **succeeds**, the
baseline is replaced by a single new commit of the root as the consolidation
left it (observed on 0.169.0: the commit's tree held the summary the agent had
just written, and ``phase2_workspace_diff.md`` was gone). So the baseline says
*when* the last successful consolidation ended and *what it left*; a file that
differs from it was changed since (a note kept, a summary edited) and is what
the next consolidation will be shown.

Only what keepgui needs is read: ``HEAD`` → the commit (its time and message)
→ its tree, recursively, as ``path -> blob id``, from loose objects (zlib). A
baseline in a pack file, or damaged, is reported as unreadable, never guessed.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from dataclasses import dataclass

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

OBJECT_LIMIT = 64 * 1024 * 1024
"""A loose object larger than this is not read."""


class BaselineUnreadable(KeepguiError):
    """The baseline cannot be read (packed, damaged, missing objects)."""


def blob_id(data: bytes) -> str:
    """The git blob id of a file's bytes (SHA-1 of ``blob <size>\\0<data>``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class Baseline:
    """The baseline commit: its id, time (epoch seconds), message, and files (``rel -> blob id``)."""

    git_dir: str
    commit: str
    time: int
    message: str
    files: dict[str, str]

    @property
    def initial(self) -> bool:
        """True for the first, empty baseline (no consolidation has succeeded yet)."""
        return not self.files

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel`` as the baseline holds it (None when it is not in it)."""
        sha = self.files.get(rel)
        if sha is None:
            return None
        kind, data = _object(self.git_dir, sha)
        if kind != b"blob":
            raise BaselineUnreadable(f"{self.git_dir}: {rel} is a {kind.decode()} in the baseline, not a file")
        return data

    def same(self, rel: str, data: bytes) -> bool:
        """True when ``rel`` is in the baseline with exactly these bytes."""
        return self.files.get(rel) == blob_id(data)


def _object(git_dir: str, sha: str) -> tuple[bytes, bytes]:
    path = os.path.join(git_dir, "objects", sha[:2], sha[2:])
    try:
        raw, _stamp = fsio.read_stamped(path, limit=OBJECT_LIMIT)
    except (OSError, KeepguiError) as exc:
        raise BaselineUnreadable(f"{git_dir}: object {sha} cannot be read ({exc})") from None
    if raw is None:
        packed = os.path.isdir(os.path.join(git_dir, "objects", "pack"))
        raise BaselineUnreadable(
            f"{git_dir}: object {sha} is not a loose object" + (" (the baseline is packed)" if packed else "")
        )
    try:
        data = zlib.decompress(raw)
    except zlib.error as exc:
        raise BaselineUnreadable(f"{git_dir}: object {sha} is damaged ({exc})") from None
    header, _nul, body = data.partition(b"\0")
    kind, _space, _size = header.partition(b" ")
    return kind, body


def _head(git_dir: str) -> str:
    try:
        head, _stamp = fsio.read_stamped(os.path.join(git_dir, "HEAD"), limit=4096)
    except (OSError, KeepguiError) as exc:
        raise BaselineUnreadable(f"{git_dir}/HEAD cannot be read ({exc})") from None
    if head is None:
        raise BaselineUnreadable(f"{git_dir} has no HEAD")
    text = head.decode("ascii", "replace").strip()
    if not text.startswith("ref: "):
        return text
    ref = text[5:].strip()
    try:
        data, _stamp = fsio.read_stamped(os.path.join(git_dir, *ref.split("/")), limit=4096)
    except (OSError, KeepguiError):
        data = None
    if data is not None:
        return data.decode("ascii", "replace").strip()
    packed, _stamp = fsio.read_stamped(os.path.join(git_dir, "packed-refs"), limit=1024 * 1024)
    for line in (packed or b"").decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == ref:
            return parts[0]
    raise BaselineUnreadable(f"{git_dir}: {ref} points nowhere")


def _tree(git_dir: str, sha: str, prefix: str, out: dict[str, str], depth: int = 0) -> None:
    if depth > 32:
        raise BaselineUnreadable(f"{git_dir}: the baseline's folders nest too deep")
    kind, body = _object(git_dir, sha)
    if kind != b"tree":
        raise BaselineUnreadable(f"{git_dir}: {sha} is not a tree")
    at = 0
    while at < len(body):
        space = body.index(b" ", at)
        nul = body.index(b"\0", space)
        mode, name = body[at:space], body[space + 1 : nul].decode("utf-8", "surrogateescape")
        child = body[nul + 1 : nul + 21].hex()
        at = nul + 21
        rel = f"{prefix}{name}"
        if mode == b"40000":
            _tree(git_dir, child, rel + "/", out, depth + 1)
        elif mode != b"160000":
            out[rel] = child


def read_baseline(root: str) -> Baseline | None:
    """The baseline of the root folder ``root`` (None when it has none; BaselineUnreadable when it
    cannot be read)."""
    git_dir = os.path.join(root, ".git")
    if not os.path.isdir(git_dir):
        return None
    commit = _head(git_dir)
    kind, body = _object(git_dir, commit)
    if kind != b"commit":
        raise BaselineUnreadable(f"{git_dir}: HEAD is not a commit")
    header, _blank, message = body.partition(b"\n\n")
    tree, when = "", 0
    for line in header.split(b"\n"):
        if line.startswith(b"tree "):
            tree = line[5:].decode("ascii")
        elif line.startswith(b"committer "):
            fields = line.split(b" ")
            when = int(fields[-2]) if len(fields) >= 3 and fields[-2].isdigit() else 0
    files: dict[str, str] = {}
    if tree:
        _tree(git_dir, tree, "", files)
    return Baseline(git_dir, commit, when, message.decode("utf-8", "replace").strip(), files)
