"""``memory::preview``, byte for byte: what a turn on a question would be given (spec §3).

A preview is the system-prompt memory section (the ambient header, then the
rules part within ``max_rule_chars`` bytes) and the recalled-memories message
(recall with ``recall_limit``, padded by the ambient floor from
``top_memories``, cut by the ``recall_budget_tokens × 4`` byte budget). Its
JSON (:meth:`Preview.to_json`) is the worker's response object, key for key.

:class:`BankEngine` is what a window holds per bank: it keeps a
:class:`~keepgui.backends.iii.index.BankIndex` in step with the bank's log deltas
and answers previews and recalls quickly and thread-safely. A preview can be a
*what-if* (:class:`WhatIf`): unsaved rule texts, pending pins, tombstones and
restores, another config. Nothing is ever written; pending record changes are
computed with the worker's own mutation rules and laid over the index only for
the duration of the call.

:func:`check_against_worker` asks a running worker for its own preview and
lists every field where it differs from keepgui's.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from keepgui.backends.iii import writes as mut
from keepgui.backends.iii.config import MemoryConfig
from keepgui.backends.iii.index import BankIndex
from keepgui.backends.iii.log import LogDelta
from keepgui.backends.iii.recall import (
    RETRIEVAL_LEXICAL,
    Hit,
    RecallResult,
    json_text,
    query_tokens,
    recall,
    recall_request,
)
from keepgui.backends.iii.record import U64_MAX, Memory
from keepgui.backends.iii.store import Bank, DataDir
from keepgui.backends.iii.textrules import byte_len, cut_at_char_boundary, rust_trim
from keepgui.backends.iii.vectors import VECTORS_NAME, LexicalNotice, count_current_vectors
from keepgui.backends.iii.worker import WorkerLink
from keepgui.core.errors import KeepguiError, NotFound
from keepgui.core.timefmt import now_ms

AMBIENT_FLOOR = 3
"""A turn is given at least this many memories (or ``recall_limit`` if smaller) when any exist."""
SCORE_TOLERANCE = 1e-5
"""Relative tolerance when comparing scores with the worker's (it computes in f32)."""
BYTES_PER_TOKEN = 4

_HEADER = (
    "\n\n# Memory \u2014 bank: {bank}\nMemory is automatic here: durable memories and preferences from this "
    "conversation are extracted and saved after each turn, and relevant memories are provided to you when "
    "they exist. When the user asks you to remember something, acknowledge it \u2014 no save call is needed.\n"
)
_TRUNCATED = (
    "\n## {name}\n{content}\n[rule truncated: over the {limit} char injection budget \u2014 "
    "trim it in the memory page]\n"
)
_OMITTED = "\n## {name} [omitted: over the injection budget]\n"
_MESSAGE_HEAD = '<memory bank="{bank}">\nRelevant remembered memories (auto-recalled; verify anything surprising):\n'
_MESSAGE_TAIL = "\n</memory>"
_TRUNCATE_NEEDS = 200  # a rule is cut only when more than this many bytes of budget are left


# ---------------------------------------------------------------------- the section


def ambient_header(bank: str) -> str:
    """The header every turn gets, even with no rules (spec §3.1)."""
    return _HEADER.format(bank=bank)


@dataclass(frozen=True)
class RuleOutcome:
    """What happened to one rule in the section: ``fit``, ``truncated`` or ``omitted``.

    ``size`` is the trimmed content's byte length; ``injected`` how many of
    those bytes went in.
    """

    name: str
    status: str
    size: int
    injected: int


def render_rules(rules: Sequence[tuple[str, str]], max_rule_chars: int) -> tuple[str, bool, list[RuleOutcome]]:
    """The rules part for ``(name, content)`` pairs in injection order: ``(text, truncated, outcomes)``.

    Each rule's trimmed content fits the remaining byte budget, or is cut at a
    char boundary when more than 200 bytes are left (the budget then drops to
    0), or is omitted by name.
    """
    budget = max_rule_chars
    truncated = False
    out: list[str] = []
    outcomes: list[RuleOutcome] = []
    for name, content in rules:
        content = rust_trim(content)
        n = byte_len(content)
        if n <= budget:
            budget -= n
            out.append(f"\n## {name}\n{content}\n")
            outcomes.append(RuleOutcome(name, "fit", n, n))
        elif budget > _TRUNCATE_NEEDS:
            cut = cut_at_char_boundary(content, min(budget, n))
            out.append(_TRUNCATED.format(name=name, content=cut, limit=max_rule_chars))
            outcomes.append(RuleOutcome(name, "truncated", n, byte_len(cut)))
            budget = 0
            truncated = True
        else:
            out.append(_OMITTED.format(name=name))
            outcomes.append(RuleOutcome(name, "omitted", n, 0))
            truncated = True
    return "".join(out), truncated, outcomes


# ---------------------------------------------------------------------- the message


def apply_floor(hits: Sequence[Hit], top: Sequence[Memory], floor: int) -> list[Hit]:
    """Pad ``hits`` up to ``floor`` with ``top`` memories not already present (score 0.0)."""
    items = list(hits)
    present = {hit.memory.id for hit in items}
    for memory in top:
        if len(items) >= floor:
            break
        if memory.id not in present:
            items.append(Hit(memory, 0.0))
            present.add(memory.id)
    return items


def memory_budget(recall_budget_tokens: int) -> int:
    """The byte budget the worker computes: ``recall_budget_tokens × 4`` in 64-bit arithmetic.

    The worker multiplies as ``usize`` in a release build, which wraps: from
    2^62 tokens on, the budget is the product modulo 2^64 (2^62 gives 0).
    """
    return (recall_budget_tokens * BYTES_PER_TOKEN) & U64_MAX


def budget_note(recall_budget_tokens: int) -> str:
    """Why the byte budget is not simply tokens × 4, or "" when it is."""
    product = recall_budget_tokens * BYTES_PER_TOKEN
    if product <= U64_MAX:
        return ""
    return (
        f"recall_budget_tokens × 4 = {product:,} does not fit the worker's 64-bit integer: it wraps to "
        f"{memory_budget(recall_budget_tokens):,} bytes, and that is the budget the worker uses"
    )


def memories_message(bank: str, items: Sequence[Hit], recall_budget_tokens: int) -> tuple[str | None, list[Hit]]:
    """``(message or None, the items that fit)`` under ``recall_budget_tokens × 4`` bytes.

    The walk stops at the first text longer than what is left (no skipping
    ahead); a text of exactly the remaining budget fits. Prefixes and the
    wrapper do not count. The product wraps as the worker's does (:func:`memory_budget`).
    """
    budget = memory_budget(recall_budget_tokens)
    fitted: list[Hit] = []
    for item in items:
        n = byte_len(item.memory.text)
        if n > budget:
            break
        budget -= n
        fitted.append(item)
    if not fitted:
        return None, fitted
    lines = "\n".join(f"- {item.memory.text}" for item in fitted)
    return _MESSAGE_HEAD.format(bank=bank) + lines + _MESSAGE_TAIL, fitted


# ---------------------------------------------------------------------- what-if


@dataclass(frozen=True)
class WhatIf:
    """Unsaved changes to preview as if they were saved; nothing is written.

    ``rules``: rule name -> new content (a new name adds a rule; None, or
    content that is empty after trimming, deletes it, as saving would).
    ``pins``: id -> pinned. ``live``: id -> False to tombstone, True to
    restore. ``config``: settings to use instead of the engine's. Pending
    record changes follow the worker's mutations, so they also move
    ``updated_at`` to the preview's ``now`` and bump the revision.
    """

    rules: Mapping[str, str | None] = field(default_factory=dict)
    pins: Mapping[str, bool] = field(default_factory=dict)
    live: Mapping[str, bool] = field(default_factory=dict)
    config: MemoryConfig | None = None

    def records(self, current: Mapping[str, Memory], now: int) -> dict[str, Memory]:
        """The records as they would be after the pending changes (unknown ids raise NotFound)."""
        changed: dict[str, Memory] = {}
        for mid in list(self.live) + [m for m in self.pins if m not in self.live]:
            record = current.get(mid)
            if record is None:
                raise NotFound(f"memory `{mid}` not found")
            if mid in self.live:
                step = (mut.restore_transition if self.live[mid] else mut.delete_transition)(record, mid, now)
                record = step.record or record
            if mid in self.pins:
                record = mut.update_transition(record, mid, pinned=self.pins[mid], now=now).record or record
            changed[mid] = record
        return changed

    def apply_rules(self, rules: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The rule list with the unsaved texts applied, in injection (name) order."""
        merged = dict(rules)
        for name, content in self.rules.items():
            if content is None or not rust_trim(content):
                merged.pop(name, None)
            else:
                merged[name] = content
        return sorted(merged.items())


# ---------------------------------------------------------------------- the preview


@dataclass(frozen=True)
class Preview:
    """A ``memory::preview`` answer, plus what keepgui shows to explain it.

    The first seven fields are the worker's response; ``message`` is None when
    the key is omitted. ``candidates`` is the list before the token budget
    (recall hits, then floor additions); ``memories`` is its prefix that fits.
    ``notice`` says why the ranking is lexical only and when the worker's may
    differ; ``budget_note`` explains a byte budget that wraps as the worker's does.
    """

    bank: str
    system_prompt_section: str
    rules: int
    rules_truncated: bool
    memories: list[Hit]
    message: str | None
    retrieval: str
    candidates: list[Hit]
    rule_outcomes: list[RuleOutcome]
    query_tokens: list[str]
    now_ms: int
    config: MemoryConfig
    notice: LexicalNotice | None = None
    budget_note: str = ""

    @property
    def text(self) -> str:
        """What the turn is given, exactly: the system-prompt section, then the appended message."""
        return self.system_prompt_section + ("\n\n" + self.message if self.message else "")

    def to_obj(self) -> dict[str, Any]:
        """The response object as a JSON reader sees the worker's (key order included)."""
        obj: dict[str, Any] = {
            "bank": self.bank,
            "system_prompt_section": self.system_prompt_section,
            "rules": self.rules,
            "rules_truncated": self.rules_truncated,
            "memories": [hit.to_obj() for hit in self.memories],
        }
        if self.message is not None:
            obj["message"] = self.message
        obj["retrieval"] = self.retrieval
        return obj

    def to_json(self, notice: bool = False) -> str:
        """Compact JSON, raw UTF-8, byte for byte the worker's (scores printed as f32).

        ``notice`` adds one key after the worker's fields, ``keepgui``: the
        :class:`~keepgui.backends.iii.vectors.LexicalNotice` (and ``budget_note``
        when the budget wraps); every worker-shaped field stays as it is.
        """
        text = (
            '{"bank":'
            + json_text(self.bank)
            + ',"system_prompt_section":'
            + json_text(self.system_prompt_section)
            + ',"rules":'
            + str(self.rules)
            + ',"rules_truncated":'
            + ("true" if self.rules_truncated else "false")
            + ',"memories":['
            + ",".join(hit.to_json() for hit in self.memories)
            + "]"
        )
        if self.message is not None:
            text += ',"message":' + json_text(self.message)
        text += ',"retrieval":' + json_text(self.retrieval)
        if notice and self.notice is not None:
            extra = self.notice.to_obj()
            if self.budget_note:
                extra["budget_note"] = self.budget_note
            text += ',"keepgui":' + json_text(extra)
        return text + "}"


class BankEngine:
    """Recall and preview for one bank, kept current from the bank's log.

    Pass it the :class:`~keepgui.backends.iii.log.LogDelta` of each
    ``bank.refresh()`` through :meth:`sync` (or let :meth:`refresh` do both);
    a delta it never sees (a write batch refreshes the log itself) is caught
    up before the next query from the log lines it has not looked at yet.
    All methods may be called from a worker thread and are serialised by an
    internal lock; the bank's log must not be refreshed by another thread at
    the same moment. ``config`` may be replaced at any time.
    """

    def __init__(self, bank: Bank, config: MemoryConfig | None = None) -> None:
        self.bank = bank
        self.config = config or MemoryConfig()
        self.index = BankIndex(bank.log)
        self._lock = threading.RLock()
        self._vectors: tuple[tuple[object, ...], int] | None = None  # (what it was counted from, current vectors)

    def sync(self, delta: LogDelta) -> None:
        """Apply a refresh of the bank's log (a reset rebuilds; otherwise only changed ids move)."""
        with self._lock:
            self.index.sync(delta)

    def refresh(self) -> LogDelta:
        """Re-read the bank's log and apply what changed; returns the delta."""
        with self._lock:
            delta = self.bank.refresh()
            self.index.sync(delta)
            return delta

    def _check_bank(self) -> None:
        bank = self.bank
        if not bank.exists():
            raise NotFound(f"bank `{bank.name}` not found in {bank.datadir.path}")
        if bank.unreadable:
            raise NotFound(
                f"bank `{bank.name}` cannot be loaded by the worker ({bank.unreadable}), "
                "so memory::preview would answer BankNotFound"
            )

    def recall(
        self,
        query: str,
        limit: int | None = None,
        tag: str | None = None,
        include_superseded: bool = False,
        now_ms: int | None = None,
        whatif: WhatIf | None = None,
    ) -> RecallResult:
        """``memory::recall``: at most ``min(limit or recall_limit, 100)`` hits, tag filtered last."""
        whatif = whatif or WhatIf()
        config = whatif.config or self.config
        now = _now(now_ms)
        with self._lock:
            self._check_bank()
            self.index.ensure_current()
            with self.index.overlay(whatif.records(self.index.records, now)):
                result = recall_request(
                    self.index,
                    self.bank.name,
                    query,
                    config,
                    now_ms=now,
                    limit=limit,
                    tag=tag,
                    include_superseded=include_superseded,
                )
            return dataclasses.replace(result, notice=self.notice(config))

    def top_memories(self, limit: int, whatif: WhatIf | None = None, now_ms: int | None = None) -> list[Memory]:
        """``top_memories(limit)``: the ambient floor's order."""
        whatif = whatif or WhatIf()
        with self._lock:
            self.index.ensure_current()
            with self.index.overlay(whatif.records(self.index.records, _now(now_ms))):
                return self.index.top(limit)

    def preview(self, query: str, now_ms: int | None = None, whatif: WhatIf | None = None) -> Preview:
        """``memory::preview {bank, query}`` as the worker would answer it now (or at ``now_ms``)."""
        whatif = whatif or WhatIf()
        config = whatif.config or self.config
        now = _now(now_ms)
        floor = min(AMBIENT_FLOOR, config.recall_limit)
        with self._lock:
            self._check_bank()
            rules = whatif.apply_rules(self._rules())
            self.index.ensure_current()
            with self.index.overlay(whatif.records(self.index.records, now)):
                hits = recall(
                    self.index, query, config.recall_limit, now_ms=now, half_life_days=config.decay_half_life_days
                )
                top = self.index.top(config.recall_limit) if len(hits) < floor else []
            notice = self.notice(config)
        part, truncated, outcomes = render_rules(rules, config.max_rule_chars)
        section = ambient_header(self.bank.name) + (part if config.inject_rules else "")
        candidates = apply_floor(hits, top, floor)
        message, fitted = memories_message(self.bank.name, candidates, config.recall_budget_tokens)
        return Preview(
            bank=self.bank.name,
            system_prompt_section=section,
            rules=len(rules),
            rules_truncated=truncated,
            memories=fitted,
            message=message if config.inject_memories else None,
            retrieval=RETRIEVAL_LEXICAL,
            candidates=candidates,
            rule_outcomes=outcomes,
            query_tokens=query_tokens(query),
            now_ms=now,
            config=config,
            notice=notice,
            budget_note=budget_note(config.recall_budget_tokens),
        )

    def notice(self, config: MemoryConfig) -> LexicalNotice:
        """Why this bank's ranking is lexical only (the vector count is re-read only when it can change)."""
        path = f"{self.bank.path}/{VECTORS_NAME}"
        try:
            st = os.stat(path)
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            stamp = None
        log = self.bank.log
        key = (stamp, id(log.records), log.offset, log.tail_record)
        if self._vectors is None or self._vectors[0] != key:
            self._vectors = (key, 0 if stamp is None else count_current_vectors(self.bank.path, log.records))
        return LexicalNotice(config.embeddings_enabled, self._vectors[1])

    def _rules(self) -> list[tuple[str, str]]:
        """The bank's readable rules in name order (the worker skips unreadable ones too)."""
        rules, _problems = self.bank.rules()
        return [(rule.name, rule.content) for rule in rules]


def _now(now_ms_given: int | None) -> int:
    return now_ms() if now_ms_given is None else now_ms_given


def preview_bank(
    datadir: DataDir,
    bank: str | None,
    query: str,
    config: MemoryConfig | None = None,
    now_ms: int | None = None,
    whatif: WhatIf | None = None,
) -> Preview:
    """One-shot preview of a bank of a :class:`~keepgui.backends.iii.store.DataDir`.

    ``bank=None`` means the config's ``default_bank``; a missing bank raises
    NotFound, as the worker answers BankNotFound.
    """
    config = config or MemoryConfig()
    engine = BankEngine(datadir.bank(bank or config.default_bank), config)
    return engine.preview(query, now_ms=now_ms, whatif=whatif)


# ---------------------------------------------------------------------- the live worker


@dataclass(frozen=True)
class Difference:
    """One field where keepgui's preview and the worker's differ (``path`` like ``memories[1].score``)."""

    path: str
    keepgui: Any
    worker: Any

    def __str__(self) -> str:
        return f"{self.path}: keepgui {_show(self.keepgui)} ≠ worker {_show(self.worker)}"


_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = repr(value)
    return text if len(text) <= 120 else text[:119] + "…"


def compare_previews(ours: Mapping[str, Any], theirs: Any) -> list[Difference]:
    """Every difference between two preview response objects, field by field.

    Scores match within a relative tolerance of 1e-5 (the worker computes in
    f32 and at its own instant); everything else must be equal.
    """
    if not isinstance(theirs, Mapping):
        return [Difference("(response)", "an object", theirs)]
    diffs: list[Difference] = []
    for key in list(ours) + [k for k in theirs if k not in ours]:
        a, b = ours.get(key, _MISSING), theirs.get(key, _MISSING)
        if key == "memories" and isinstance(a, list) and isinstance(b, list):
            diffs.extend(_compare_memories(a, b))
        elif a != b or type(a) is not type(b):
            diffs.append(Difference(key, a, b))
    return diffs


def _compare_memories(ours: list[Any], theirs: list[Any]) -> list[Difference]:
    diffs: list[Difference] = []
    if len(ours) != len(theirs):
        diffs.append(Difference("memories.length", len(ours), len(theirs)))
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):  # a length mismatch is reported above
        if not isinstance(b, Mapping):
            diffs.append(Difference(f"memories[{i}]", a, b))
            continue
        memory_a, memory_b = a.get("memory", _MISSING), b.get("memory", _MISSING)
        if isinstance(memory_a, Mapping) and isinstance(memory_b, Mapping):
            for key in list(memory_a) + [k for k in memory_b if k not in memory_a]:
                va, vb = memory_a.get(key, _MISSING), memory_b.get(key, _MISSING)
                if va != vb:
                    diffs.append(Difference(f"memories[{i}].memory.{key}", va, vb))
        elif memory_a != memory_b:
            diffs.append(Difference(f"memories[{i}].memory", memory_a, memory_b))
        score_a, score_b = a.get("score", _MISSING), b.get("score", _MISSING)
        if not (
            _is_number(score_a) and _is_number(score_b) and math.isclose(score_a, score_b, rel_tol=SCORE_TOLERANCE)
        ):
            diffs.append(Difference(f"memories[{i}].score", score_a, score_b))
        for key in [k for k in b if k not in ("memory", "score")]:
            diffs.append(Difference(f"memories[{i}].{key}", _MISSING, b[key]))
    return diffs


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_against_worker(preview: Preview, query: str, link: WorkerLink) -> list[Difference]:
    """Ask the running worker (``iii trigger memory::preview``) and compare with ``preview``.

    ``link`` is a :class:`~keepgui.backends.iii.worker.WorkerLink`. Raises
    KeepguiError when the worker cannot be asked. A worker that used
    embeddings reports ``bm25-entity-semantic`` and may rank differently;
    keepgui, having no embedder, reports that as a difference too.
    """
    try:
        answer = link.trigger("memory::preview", bank=preview.bank, query=query)
    except RuntimeError as exc:
        raise KeepguiError(f"cannot check against the worker: {exc}") from None
    return compare_previews(preview.to_obj(), answer)


# ---------------------------------------------------------------------- keepgui context


@dataclass(frozen=True)
class IiiContext:
    """``keepgui context`` for an iii bank: a turn's two exact parts, ``system_prompt`` (the section
    appended to the harness's system prompt) and ``message`` (the message appended to the turn; None
    when nothing is), with the worker's preview object beside them."""

    preview: Preview

    @property
    def warnings(self) -> tuple[str, ...]:
        """Why the ranking is lexical only, and a byte budget that wraps."""
        out = [] if self.preview.notice is None else [f"lexical only: {self.preview.notice.why()}"]
        return tuple(out + ([f"budget: {self.preview.budget_note}"] if self.preview.budget_note else []))

    def named_parts(self) -> dict[str, str | None]:
        """``system_prompt`` and ``message``, exactly."""
        return {"system_prompt": self.preview.system_prompt_section, "message": self.preview.message}

    def to_obj(self) -> dict[str, Any]:
        """The two parts and ``memory::preview``'s own answer."""
        return {**self.named_parts(), "preview": self.preview.to_obj()}

    def describe(self) -> str:
        """What bank and question, then the two parts under their names."""
        preview = self.preview
        plural = "" if len(preview.memories) == 1 else "s"
        head = (
            f"iii bank {preview.bank} · {preview.rules} rule{'' if preview.rules == 1 else 's'} · "
            f"{len(preview.memories)} memor{'y' if not plural else 'ies'} recalled · retrieval: {preview.retrieval}\n"
        )
        out = [head, "--- system_prompt, exactly ---\n", preview.system_prompt_section]
        if not preview.system_prompt_section.endswith("\n"):
            out.append("\n")
        if preview.message is None:
            out.append("--- no message ---\n")
        else:
            out += ["--- message, exactly ---\n", preview.message + "\n"]
        return "".join(out)
