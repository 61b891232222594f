"""Purging secrets from keepgui's own records: its history and journals, and its caches (no Qt).

keepgui keeps every version of a memory file it has seen (:mod:`keepgui.core.history`: blobs
named by their SHA-256, and index lines naming them), logs of removed entries, journals for undo
and review, and caches of replayed logs. After a secret is redacted from an agent's files, those
still hold it. :func:`plan_purge` finds every such copy and says what removing it means;
:meth:`PurgePlan.apply` removes it: a stored version holding the secret is replaced by the same
bytes with the secret redacted (stored under its new hash, every index line that named the old
one rewritten), a journal line holding it has the secret replaced in place, and a cache file
holding it is deleted (a cache is always computed again). It cannot be undone: that is its point.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from keepgui.core import fsio
from keepgui.core.history import History
from keepgui.core.paths import app_cache_dir, app_data_dir
from keepgui.core.secrets.redact import REPLACEMENT


def _forms(secret: str) -> list[tuple[bytes, bytes]]:
    """The secret as bytes the way keepgui's files hold it (raw, and inside a JSON string), with
    what replaces each."""
    raw = secret.encode("utf-8", "surrogatepass")
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
    ascii_escaped = json.dumps(secret)[1:-1].encode()
    out = {raw: REPLACEMENT.encode(), escaped: REPLACEMENT.encode(), ascii_escaped: REPLACEMENT.encode()}
    return [(k, v) for k, v in out.items() if k]


def scrub(data: bytes, secrets: Sequence[str]) -> bytes:
    """``data`` with every form of each secret replaced (the longest first)."""
    pairs = [p for s in secrets for p in _forms(s)]
    for old, new in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        data = data.replace(old, new)
    return data


def _files(root: str) -> Iterator[str]:
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if not fsio.is_temp_name(name):
                yield os.path.join(folder, name)


@dataclass
class PurgePlan:
    """What a purge would remove: the history's versions, the journals' files, the cache files."""

    history: History
    secrets: Sequence[str] = field(repr=False)
    blobs: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    caches: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.blobs or self.logs or self.caches)

    def describe(self) -> str:
        """What the purge removes, for a person to confirm."""
        if not self:
            return "keepgui's history, journals and caches hold no copy of it."
        return (
            f"keepgui's history: {len(self.blobs)} stored version(s) of memory files are rewritten with the secret "
            f"redacted; {len(self.logs)} journal or index file(s) have it replaced; {len(self.caches)} cache "
            "file(s) holding it are deleted. This cannot be undone."
        )

    def apply(self) -> int:
        """Remove every copy; returns how many files were rewritten or deleted."""
        renamed: dict[str, tuple[str, int]] = {}
        for blob in self.blobs:
            data, stamp = fsio.read_stamped(blob)
            if data is None:
                continue
            clean = scrub(data, self.secrets)
            sha = hashlib.sha256(clean).hexdigest()
            target = os.path.join(self.history.root, "blobs", sha[:2], sha)
            fsio.make_dirs(os.path.dirname(target))
            fsio.atomic_write(target, clean, mode=0o600)
            renamed[os.path.basename(blob)] = (sha, len(clean))
        index = os.path.join(self.history.root, "index")
        for path in _files(index) if renamed and os.path.isdir(index) else ():
            if path not in self.logs:
                self.logs.append(path)
        for path in self.logs:
            data, stamp = fsio.read_stamped(path)
            if data is None:
                continue
            lines = [_renamed_line(line, renamed) for line in data.splitlines(keepends=True)]
            clean = scrub(b"".join(lines), self.secrets)
            if clean != data:
                fsio.atomic_write(path, clean, expect=stamp)
        for blob in self.blobs:
            if os.path.basename(blob) in renamed and renamed[os.path.basename(blob)][0] != os.path.basename(blob):
                fsio.remove_file(blob)
        for path in self.caches:
            fsio.remove_file(path)
        return len(self.blobs) + len(self.logs) + len(self.caches)


def _renamed_line(line: bytes, renamed: dict[str, tuple[str, int]]) -> bytes:
    """An index line naming a rewritten blob, naming its new hash and size instead."""
    if not renamed or b'"sha256"' not in line:
        return line
    try:
        obj = json.loads(line)
    except ValueError:
        return line
    sha = obj.get("sha256") if isinstance(obj, dict) else None
    new = renamed.get(sha) if isinstance(sha, str) else None
    if new is None:
        return line
    obj["sha256"], obj["size"] = new
    end = line[len(line.rstrip(b"\r\n")) :]
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + end


def plan_purge(secrets: Sequence[str], data_root: str | None = None, cache_root: str | None = None) -> PurgePlan:
    """Find every copy of ``secrets`` in keepgui's data folder (its history, journals, logs of
    removed entries: ``data_root``, by default :func:`~keepgui.core.paths.app_data_dir`) and its caches."""
    data_root = data_root if data_root is not None else app_data_dir()
    history = History(os.path.join(data_root, "history"))
    plan = PurgePlan(history, [s for s in secrets if s])
    forms = [f for s in plan.secrets for f, _new in _forms(s)]
    if not forms:
        return plan
    blobs = os.path.join(history.root, "blobs")
    for path in _files(data_root) if os.path.isdir(data_root) else ():
        data, _stamp = fsio.read_stamped(path)
        if data is None or not any(f in data for f in forms):
            continue
        (plan.blobs if path.startswith(blobs + os.sep) else plan.logs).append(path)
    cache = cache_root if cache_root is not None else app_cache_dir()
    for path in _files(cache) if os.path.isdir(cache) else ():
        data, _stamp = fsio.read_stamped(path)
        if data is not None and any(f in data for f in forms):
            plan.caches.append(path)
    return plan
