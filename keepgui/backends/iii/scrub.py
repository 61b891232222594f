"""Secrets taken out of a bank's whole log: the earlier revisions' lines rewritten too (no Qt).

A redaction appends the redacted revision as any edit does; the log still holds every earlier
revision with the secret. :func:`scrub_log` rewrites those lines: in each line that holds the
secret (as the worker's JSON writes it) the secret's bytes are replaced, and every other byte of
the file is kept. The file is replaced atomically, and refused when it changed since it was read
(the worker appended meanwhile): nothing is then written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from keepgui.core import fsio
from keepgui.core.errors import Conflict


def _json_bytes(text: str) -> bytes:
    """``text`` inside a JSON string as the worker writes it (serde_json: raw UTF-8, minimal escapes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")


def scrubbed(data: bytes, pairs: Sequence[tuple[str, str]]) -> bytes:
    """The log's bytes with each secret replaced in every line (other bytes unchanged)."""
    for secret, replacement in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        old = _json_bytes(secret)
        if old:
            data = data.replace(old, _json_bytes(replacement))
    return data


def _same(expect: fsio.Stamp, stamp: fsio.Stamp) -> bool:
    """The file is as ``expect`` says (a write's stamp has its size and time; a read's its hash too)."""
    if expect.sha256:
        return expect.same_content(stamp)
    return (expect.exists, expect.size, expect.mtime_ns) == (stamp.exists, stamp.size, stamp.mtime_ns)


def scrub_log(
    path: str, pairs: Sequence[tuple[str, str]], expect: fsio.Stamp | None = None
) -> tuple[bytes, bytes, fsio.Stamp] | None:
    """Rewrite the log at ``path`` without the secrets; ``(before, after, stamp)`` or None when no
    line held one. Raises :class:`~keepgui.core.errors.Conflict`, writing nothing, when the log is
    not as ``expect`` says (the worker appended since keepgui's own last write) or changed meanwhile."""
    data, stamp = fsio.read_stamped(path)
    if data is None:
        return None
    if expect is not None and not _same(expect, stamp):
        raise Conflict(path, expect, stamp)
    clean = scrubbed(data, pairs)
    if clean == data:
        return None
    written = fsio.atomic_write(path, clean, expect=stamp)
    return data, clean, written
