"""``vectors.jsonl``, the optional embedding sidecar, read with the worker's rules (spec §1.9).

keepgui never needs vectors (it has no embedder, so its recall is lexical,
``bm25-entity``); it reads them only to report how the sidecar relates to the
log: current vectors, stale ones (written for an older revision), and live
memories that have none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from keepgui.backends.iii.record import NEGATIVE_ZERO, Memory, ObjectPairs, serde_view
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

VECTORS_NAME = "vectors.jsonl"


class _VectorLine(msgspec.Struct, gc=False):
    id: str
    model: str
    v: list[float]
    revision: int = 0


_DECODE = msgspec.json.Decoder(_VectorLine).decode


@dataclass
class VectorReport:
    """How the sidecar relates to the current records.

    ``current``: ids with a vector for their current revision; ``stale``: ids
    that have vectors only for older revisions; ``missing``: live ids with no
    current vector; ``unparsed``: lines skipped (blank lines are not counted).
    """

    exists: bool = False
    current: dict[str, str] = field(default_factory=dict)  # id -> model
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unparsed: int = 0
    lines: int = 0

    def summary(self) -> str:
        """One line for people."""
        if not self.exists:
            return "no vectors.jsonl (recall is lexical only)"
        return (
            f"{len(self.current)} current, {len(self.stale)} stale, {len(self.missing)} live memories "
            f"without a vector, {self.unparsed} unreadable lines"
        )


def _revision_is_negative_zero(line: bytes) -> bool:
    try:
        top = serde_view(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(top, ObjectPairs) and any(k == "revision" and v is NEGATIVE_ZERO for k, v in top)


def read_vectors(bank_path: str, records: Mapping[str, Memory]) -> VectorReport:
    """Replay ``vectors.jsonl`` against the current records (never raises for bad content)."""
    path = os.path.join(bank_path, VECTORS_NAME)
    report = VectorReport()
    try:
        data, _ = fsio.read_stamped(path)  # refuses FIFOs and devices instead of hanging on them
    except (OSError, KeepguiError):
        data = None
    if data is None:
        report.missing = sorted(mid for mid, m in records.items() if m.invalid_at is None)
        return report
    report.exists = True
    seen_ids: set[str] = set()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        report.lines += 1
        try:
            vec = _DECODE(line)
        except (msgspec.DecodeError, RecursionError):
            report.unparsed += 1
            continue
        if b"-0" in line and _revision_is_negative_zero(line):
            report.unparsed += 1  # serde_json reads -0 as a float: the worker skips the line
            continue
        memory = records.get(vec.id)
        if memory is None:
            continue
        seen_ids.add(vec.id)
        if vec.revision == memory.revision:
            report.current[vec.id] = vec.model
    report.stale = sorted(seen_ids - set(report.current))
    report.missing = sorted(mid for mid, m in records.items() if m.invalid_at is None and mid not in report.current)
    return report


@dataclass(frozen=True)
class LexicalNotice:
    """Why keepgui's ranking is lexical only, and when that can differ from the worker's.

    The worker, with ``embeddings_enabled`` (the default) and an embedder that
    answers, embeds the query, reports ``bm25-entity-semantic`` and adds every
    stored vector with cosine > 0.25 (2.2 × cosine on top of the fused score).
    keepgui cannot embed the query, so it ranks ``bm25-entity``: exactly the
    worker's ranking when embeddings are off or the bank holds no current
    vector (then only the ``retrieval`` label can differ).
    """

    embeddings_enabled: bool
    current_vectors: int

    @property
    def worker_may_rank_differently(self) -> bool:
        """True when a worker with a working embedder could give other memories or another order."""
        return self.embeddings_enabled and self.current_vectors > 0

    def why(self) -> str:
        """One sentence for people."""
        if not self.embeddings_enabled:
            return "embeddings_enabled is false, so the worker ranks lexically too: this is its ranking"
        if not self.current_vectors:
            return (
                "keepgui cannot embed the query; the bank holds no current vector, so the worker's "
                "memories are the same, though it reports bm25-entity-semantic when its embedder answers"
            )
        return (
            f"keepgui cannot embed the query; with embeddings_enabled the worker ranks bm25-entity-semantic "
            f"and adds any of the bank's {self.current_vectors:,} current vectors with cosine > 0.25, "
            "so its memories and order can differ"
        )

    def to_obj(self) -> dict[str, Any]:
        """The ``keepgui`` key of ``preview --json`` and ``recall --json`` (beside the worker's fields)."""
        return {
            "lexical_only": True,
            "embeddings_enabled": self.embeddings_enabled,
            "current_vectors": self.current_vectors,
            "worker_may_rank_differently": self.worker_may_rank_differently,
            "why": self.why(),
        }


def count_current_vectors(bank_path: str, records: Mapping[str, Memory]) -> int:
    """How many memories have a vector for their current revision (0 without a sidecar)."""
    return len(read_vectors(bank_path, records).current)
