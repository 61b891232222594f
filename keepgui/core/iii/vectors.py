"""``vectors.jsonl``, the optional embedding sidecar, read with the worker's rules (spec §1.9).

keepgui never needs vectors (it has no embedder, so its recall is lexical,
``bm25-entity``); it reads them only to report how the sidecar relates to the
log: current vectors, stale ones (written for an older revision), and live
memories that have none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import msgspec

from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.iii.record import Memory

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
        return (f"{len(self.current)} current, {len(self.stale)} stale, {len(self.missing)} live memories "
                f"without a vector, {self.unparsed} unreadable lines")


def read_vectors(bank_path: str, records: dict[str, Memory]) -> VectorReport:
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
        memory = records.get(vec.id)
        if memory is None:
            continue
        seen_ids.add(vec.id)
        if vec.revision == memory.revision:
            report.current[vec.id] = vec.model
    report.stale = sorted(seen_ids - set(report.current))
    report.missing = sorted(mid for mid, m in records.items() if m.invalid_at is None and mid not in report.current)
    return report
