"""Recall as the worker ranks it (spec §2.2, §2.4–§2.7), with every score explained.

The fused score of a candidate is::

    base    = bm25 + 0.6·entity_hits + 0.3·ln(1 + corroboration) + 0.75·[pinned]
    recency = max(0.5 ^ (age_days / max(half_life, 1)), 0.35)
    score   = base · recency

keepgui has no embedder, so there is no semantic term and the retrieval mode
is always ``bm25-entity``. Ties, which upstream leaves to hash order, are
broken by ``updated_at`` descending and then ``id`` ascending (this project's
documented choice). The worker computes in ``f32``; keepgui computes in Python
floats and rounds to ``f32`` only when it prints, in the shortest form that
reads back to the same ``f32``, as serde_json prints it.

Ranking is exact but does not score every document. The index gives upper
bounds: per query term, and per candidate document. Documents of rare terms
are gathered whole; documents that hold only common terms are visited newest
first, and the walk stops once even a perfect match that old could not beat
the ``limit``-th exact score found so far (recency only falls with age).
Among the gathered documents, only those whose bound reaches that score are
scored exactly. Property tests compare the result with scoring everything.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import json
import math
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from itertools import compress
from typing import TYPE_CHECKING, Any

from keepgui.backends.iii.record import Memory
from keepgui.backends.iii.tokenize import entity_tokens, tokenize

if TYPE_CHECKING:
    from keepgui.backends.iii.config import MemoryConfig
    from keepgui.backends.iii.index import BankIndex

ENTITY_WEIGHT = 0.6
CORROBORATION_WEIGHT = 0.3
PINNED_BONUS = 0.75
RECENCY_FLOOR = 0.35
DAY_MS = 86_400_000
RECALL_LIMIT_CAP = 100
"""``memory::recall`` never returns more than this many memories."""
RETRIEVAL_LEXICAL = "bm25-entity"
PRONOUNS = frozenset({"i", "me", "my", "mine", "myself"})
_SLACK = 1e-9  # relative margin on the pruning bounds, far above float rounding, far below any real gap
_GATHER = 4096  # documents of rare terms gathered whole; the others are visited newest first
_SEED = 1024  # documents of the newest days visited to get a first threshold
ARRAYS_FROM = 20_000
"""Banks of this many live memories and more are ranked over numpy arrays
(:mod:`keepgui.backends.iii.rankarrays`, the same hits); smaller ones by the walk below (see
:func:`_by_arrays`)."""
COLD_ARRAYS_FROM = 250_000
"""Banks of this many live memories take the arrays for a first question even while numpy is not imported:
the walk's cost grows with the bank (cached preview at 100,000: 11-71 ms, at 1,000,000: 0.1-1.0 s), numpy's
import and the arrays over a restored index's packed runs do not (~60 ms, then 30-80 ms at 1,000,000). At
250,000 the two were even over the benchmark's ten questions (2.93 s against 2.98 s, load and question)."""


# ---------------------------------------------------------------------- the signals


def query_tokens(query: str) -> list[str]:
    """``tokenize(query)``, plus ``user`` at the end when a first-person pronoun asks about the user."""
    tokens = tokenize(query)
    if "user" not in tokens and not PRONOUNS.isdisjoint(tokens):
        tokens.append("user")
    return tokens


def recency(updated_at: int, now_ms: int, half_life_days: int) -> float:
    """``max(0.5 ^ (age_days / max(half_life, 1)), 0.35)``; a future ``updated_at`` counts as age 0."""
    age_days = max(0, now_ms - updated_at) / DAY_MS
    decay: float = 0.5 ** (age_days / max(half_life_days, 1))  # typeshed: a float power may be complex
    return max(decay, RECENCY_FLOOR)


def static_bonus(memory: Memory) -> float:
    """The query-independent part of the base score: corroboration and pin."""
    return CORROBORATION_WEIGHT * math.log(1 + memory.corroboration) + (PINNED_BONUS if memory.pinned else 0.0)


@dataclass(frozen=True)
class ScoreParts:
    """Why a memory scored what it did; ``final`` is the fused score."""

    bm25: float
    entity_hits: int
    corroboration: float
    pinned: float
    age_days: float
    recency: float

    @property
    def entity(self) -> float:
        """``0.6 · entity_hits``."""
        return ENTITY_WEIGHT * self.entity_hits

    @property
    def base(self) -> float:
        """bm25 + entity + corroboration + pin, summed in the worker's order."""
        return self.bm25 + ENTITY_WEIGHT * self.entity_hits + self.corroboration + self.pinned

    @property
    def final(self) -> float:
        """``base · recency``."""
        return self.base * self.recency

    def to_obj(self) -> dict[str, Any]:
        """Every part as JSON (floats in full precision)."""
        return {
            "bm25": self.bm25,
            "entity_hits": self.entity_hits,
            "entity": self.entity,
            "corroboration": self.corroboration,
            "pinned": self.pinned,
            "base": self.base,
            "age_days": self.age_days,
            "recency": self.recency,
            "final": self.final,
        }

    def explain(self) -> str:
        """One line: ``(bm25 + entity + corroboration + pin) × recency = final``."""
        return (
            f"(bm25 {self.bm25:.4f} + entity {self.entity:.2f} [{self.entity_hits} hit"
            f"{'' if self.entity_hits == 1 else 's'}] + corroboration {self.corroboration:.4f} + pin "
            f"{self.pinned:.2f}) × recency {self.recency:.4f} [{self.age_days:.1f} d old] = {self.final:.4f}"
        )


def fused_parts(
    bm25: float, memory: Memory, query_set: set[str] | frozenset[str], now_ms: int, half_life_days: int
) -> ScoreParts:
    """The fused score of one candidate, part by part (spec §2.5)."""
    hits = sum(1 for token in entity_tokens(memory.entities) if token in query_set)
    return ScoreParts(
        bm25=bm25,
        entity_hits=hits,
        corroboration=CORROBORATION_WEIGHT * math.log(1 + memory.corroboration),
        pinned=PINNED_BONUS if memory.pinned else 0.0,
        age_days=max(0, now_ms - memory.updated_at) / DAY_MS,
        recency=recency(memory.updated_at, now_ms, half_life_days),
    )


# ---------------------------------------------------------------------- f32 output


def f32(value: float) -> float:
    """``value`` rounded to the nearest ``f32`` (as Rust's ``as f32`` does, saturating to infinity)."""
    try:
        rounded: float = struct.unpack("<f", struct.pack("<f", value))[0]
        return rounded
    except OverflowError:
        return math.copysign(math.inf, value)


def f32_text(value: float) -> str:
    """The JSON text serde_json writes for ``value as f32``: ryu's shortest round-trip form."""
    v = f32(value)
    if not math.isfinite(v):
        return "null"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    digits, exponent = _shortest_f32_digits(abs(v))
    return ("-" if v < 0 else "") + _ryu_layout(digits, exponent)


def f32_value(value: float) -> float:
    """The float a JSON reader gets from the worker's printed ``f32``."""
    text = f32_text(value)
    return float(text) if text != "null" else math.nan


def _shortest_f32_digits(v: float) -> tuple[str, int]:
    """``(digits, exponent)`` with ``v == f32(digits × 10^exponent)`` and as few digits as possible;
    among equally short candidates the closest to ``v``."""
    exact = Decimal(v)
    for precision in range(1, 10):
        mantissa, exp10 = f"{v:.{precision - 1}e}".split("e")
        nearest = int(mantissa.replace(".", ""))
        exponent = int(exp10) - (precision - 1)
        fits = [n for n in (nearest, nearest - 1, nearest + 1) if n > 0 and f32(float(f"{n}e{exponent}")) == v]
        if fits:
            best = min(fits, key=lambda n: abs(Decimal(n).scaleb(exponent) - exact))
            digits = str(best)
            stripped = digits.rstrip("0")
            return stripped, exponent + len(digits) - len(stripped)
    raise ValueError(f"{v!r} is not an f32 value")  # unreachable: 9 digits always round-trip


def _ryu_layout(digits: str, exponent: int) -> str:
    """ryu's ``format32`` layout of ``digits × 10^exponent``."""
    length = len(digits)
    kk = length + exponent
    if exponent >= 0 and kk <= 13:
        return digits + "0" * exponent + ".0"
    if 0 < kk <= 13:
        return digits[:kk] + "." + digits[kk:]
    if -6 < kk <= 0:
        return "0." + "0" * -kk + digits
    if length == 1:
        return f"{digits}e{kk - 1}"
    return f"{digits[0]}.{digits[1:]}e{kk - 1}"


def json_text(value: Any) -> str:
    """A JSON literal as serde_json writes it: compact, raw UTF-8, the same escapes."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------- hits


@dataclass(frozen=True)
class Hit:
    """A recalled memory with its fused score; ``parts`` is None for an ambient floor addition."""

    memory: Memory
    score: float
    parts: ScoreParts | None = None

    @property
    def ambient(self) -> bool:
        """True when the memory was added by the ambient floor, not matched by the query."""
        return self.parts is None

    def to_obj(self, parts: bool = False) -> dict[str, Any]:
        """``{"memory", "score"}`` as a JSON reader sees the worker's; ``parts`` adds the explanation."""
        obj: dict[str, Any] = {"memory": self.memory.to_obj(), "score": f32_value(self.score)}
        if parts:
            obj["parts"] = None if self.parts is None else self.parts.to_obj()
        return obj

    def to_json(self, parts: bool = False) -> str:
        """The worker's bytes for this hit (``parts`` appends keepgui's explanation)."""
        text = '{"memory":' + self.memory.to_json() + ',"score":' + f32_text(self.score)
        if parts:
            text += ',"parts":' + (
                json.dumps(self.parts.to_obj(), separators=(",", ":")) if self.parts is not None else "null"
            )
        return text + "}"


def order_key(hit: Hit) -> tuple[float, int, str]:
    """Score descending, then ``updated_at`` descending, then ``id`` ascending."""
    return (-hit.score, -hit.memory.updated_at, hit.memory.id)


def _scored(parts: ScoreParts, memory: Memory) -> Hit:
    return Hit(memory, parts.final, parts)


def _exact(
    index: BankIndex,
    tokens: list[str],
    query_set: set[str],
    slot: int,
    now_ms: int,
    half_life_days: int,
    tfs: dict[str, int] | None = None,
) -> Hit:
    memory = index.memory_at(slot)
    bm25 = index.bm25_at(tokens, slot, tfs)
    return _scored(fused_parts(bm25, memory, query_set, now_ms, half_life_days), memory)


def _best_live(
    index: BankIndex, tokens: list[str], query_set: set[str], limit: int, now_ms: int, half_life_days: int
) -> list[Hit]:
    """The ``limit`` best lexical candidates, exactly as if every candidate had been scored.

    Documents holding a rare query term are gathered first. Documents holding
    only common terms are then visited newest first, in growing windows: each
    window raises the threshold (the ``limit``-th best exact score so far),
    and the walk stops as soon as the most any older document could score
    (the common terms' bounds plus the largest static bonus, times the
    recency of the newest document not yet visited) is below it. Finally every
    gathered document whose bound reaches the threshold is scored exactly.
    """
    terms = index.query_terms(tokens)
    if not terms or limit <= 0:
        return []
    hits: dict[int, Hit] = {}

    def evaluate(slots: Iterable[int]) -> float:
        """Score these slots exactly; returns the limit-th best exact score so far (0 if too few)."""
        for slot in slots:
            if slot not in hits:
                hits[slot] = _exact(index, tokens, query_set, slot, now_ms, half_life_days)
        if len(hits) < limit:
            return 0.0
        return heapq.nlargest(limit, (hit.score for hit in hits.values()))[-1]

    all_slots: list[int] = []
    all_upper: list[float] = []

    def promising(acc: dict[int, float]) -> Iterable[int]:
        """Bound these (complete) candidates; returns those whose bounds are among the ``limit`` highest."""
        slots, upper = index.upper_bounds(acc, now_ms, half_life_days)
        all_slots.extend(slots)
        all_upper.extend(upper)
        kth = heapq.nlargest(limit, upper)[-1] if len(upper) > limit else 0.0
        return compress(slots, map(kth.__le__, upper))

    split = 0
    gathered_size = 0
    while split < len(terms) and gathered_size + index.df(terms[split][0]) <= _GATHER:
        gathered_size += index.df(terms[split][0])
        split += 1
    gathered = index.postings(terms[:split])
    threshold = evaluate(promising(index.add_docs(gathered, terms)))
    if split < len(terms):
        ceiling = sum(index.term_bound(term, times) for term, times in terms[split:]) + index.static_max()
        days = index.days()
        end = len(days)
        seed = _SEED
        while end:
            start = _window_start(days, end, index, threshold, ceiling, seed, now_ms, half_life_days)
            newest = recency((days[end - 1] + 1) * DAY_MS - 1, now_ms, half_life_days)
            if not threshold and start:
                threshold = evaluate(_probe(index, index.day_docs(days[start:end]) - gathered, terms[split:], limit))
            essential = _essential_terms(index, terms[split:], threshold, newest)
            if not start:  # every day left: the documents holding an essential term, less those seen
                group = index.postings(essential) - gathered - index.day_docs(days[end:])
            else:
                group = index.day_docs(days[start:end]) - gathered
                if len(essential) < len(terms) - split:
                    group &= index.postings(essential)
            threshold = evaluate(promising(index.add_docs(group, terms)))
            end = start
            seed *= 2
            if not end or (
                threshold
                and ceiling * recency((days[end - 1] + 1) * DAY_MS - 1, now_ms, half_life_days)
                < threshold * (1 - _SLACK)
            ):
                break
    # Every document left out has a bound below the limit-th exact score, so it cannot rank.
    floor = threshold * (1 - _SLACK)
    evaluate(compress(all_slots, map(floor.__le__, all_upper)))
    return heapq.nsmallest(limit, hits.values(), key=order_key)


def _probe(index: BankIndex, group: set[int], common: list[tuple[str, int]], limit: int) -> list[int]:
    """A few documents of ``group`` likely to score high, scored first so that MaxScore has a threshold
    in the first window (any exact scores make a valid threshold): those holding the most of the terms
    with the largest bounds, at most ``8 × limit``; none when the group is small enough to bound whole."""
    if len(group) <= 4 * _SEED:
        return []
    probe = group
    for _bound, term, _times in sorted(((index.term_bound(t, n), t, n) for t, n in common), reverse=True):
        narrower = index.holders_in(probe, term)
        if len(narrower) < limit:
            break
        probe = narrower
    return list(itertools.islice(probe, 8 * limit)) if probe is not group else []


def _essential_terms(
    index: BankIndex, common: list[tuple[str, int]], threshold: float, newest: float
) -> list[tuple[str, int]]:
    """The common terms a document of the window must hold to reach ``threshold`` (MaxScore).

    The window's documents hold none of the rare (gathered) terms, so a document's score is at most
    the bounds of the ``common`` terms it holds plus the largest static bonus, times ``newest`` (the
    most recency any document of the window can have). The terms with the smallest bounds are left
    out while their sum with the static bonus stays below the threshold: a document holding only
    those cannot reach it. Every term is essential while there is no threshold yet.
    """
    if not threshold:
        return common
    cut = threshold * (1 - _SLACK)
    by_bound = sorted((index.term_bound(term, times), term, times) for term, times in common)
    total = index.static_max()
    dropped = 0
    for bound, _term, _times in by_bound:
        if (total + bound) * newest >= cut:
            break
        total += bound
        dropped += 1
    return common if not dropped else [(term, times) for _bound, term, times in by_bound[dropped:]]


def _window_start(
    days: list[int],
    end: int,
    index: BankIndex,
    threshold: float,
    ceiling: float,
    seed: int,
    now_ms: int,
    half_life_days: int,
) -> int:
    """Where the next window of days (newest first) starts: ``days[start:end]`` is visited next.

    Without a threshold yet, enough days for ``seed`` documents; with one,
    every day whose documents could still reach it (all days when the
    recency floor leaves no cut).
    """
    start = end - 1
    if not threshold:
        count = index.day_size(days[start])
        while start and count < seed:
            start -= 1
            count += index.day_size(days[start])
        return start
    ratio = threshold / ceiling
    if ratio <= RECENCY_FLOOR:
        return 0
    oldest = now_ms - max(half_life_days, 1) * math.log2(1 / ratio) * DAY_MS if ratio < 1 else now_ms
    return min(start, bisect.bisect_left(days, int(oldest // DAY_MS), 0, end))


def _by_arrays(index: BankIndex) -> bool:
    """Whether this question is ranked over the numpy arrays: a big bank's are, except the first question
    asked of an index under :data:`COLD_ARRAYS_FROM` memories while numpy is not imported yet. That is a
    command's single question (``keepgui preview``), which the walk answers sooner than importing numpy
    (~60 ms) and making the arrays would; the window has numpy imported, and a long-lived engine's next
    question takes the arrays anyway."""
    index.questions += 1
    n = index.n
    return n >= ARRAYS_FROM and (index.questions > 1 or n >= COLD_ARRAYS_FROM or "numpy" in sys.modules)


def recall(
    index: BankIndex,
    query: str,
    limit: int,
    *,
    tag: str | None = None,
    include_superseded: bool = False,
    now_ms: int,
    half_life_days: int,
) -> list[Hit]:
    """The store's recall (spec §2.4–§2.6): rank, truncate to ``limit``, then keep ``tag`` only.

    ``limit`` is used as given (the hook and preview pass ``recall_limit``);
    :func:`recall_request` applies the API's default and cap. History mode adds
    every retired record with BM25 0.
    """
    tokens = query_tokens(query)
    if not tokens or limit <= 0:
        return []
    query_set = set(tokens)
    if _by_arrays(index):
        hits = index.rank_arrays().best_live(tokens, query_set, limit, now_ms, half_life_days)
    else:
        hits = _best_live(index, tokens, query_set, limit, now_ms, half_life_days)
    if include_superseded:
        history = [_scored(fused_parts(0.0, m, query_set, now_ms, half_life_days), m) for m in index.retired()]
        hits = heapq.nsmallest(limit, hits + history, key=order_key)
    if tag is not None:
        hits = [hit for hit in hits if tag in hit.memory.tags]
    return hits


def top_memories(index: BankIndex, limit: int) -> list[Memory]:
    """``top_memories(limit)`` (spec §2.7): pinned, corroboration, newest, then id."""
    return index.top(limit)


# ---------------------------------------------------------------------- memory::recall


@dataclass(frozen=True)
class RecallResult:
    """The answer of ``memory::recall`` plus what keepgui adds to explain it."""

    bank: str
    hits: list[Hit]
    retrieval: str
    query_tokens: list[str]
    limit: int
    now_ms: int
    notice: Any = None
    """A :class:`~keepgui.backends.iii.vectors.LexicalNotice` once a bank engine answered."""

    def to_obj(self, parts: bool = False) -> dict[str, Any]:
        """``{"bank", "memories": [{"memory", "score"}], "retrieval"}``."""
        return {"bank": self.bank, "memories": [hit.to_obj(parts) for hit in self.hits], "retrieval": self.retrieval}

    def to_json(self, parts: bool = False, notice: bool = False) -> str:
        """Compact JSON, byte for byte the worker's response (``parts`` adds one key per hit;
        ``notice`` one ``keepgui`` key after the worker's fields, see LexicalNotice)."""
        text = (
            '{"bank":'
            + json_text(self.bank)
            + ',"memories":['
            + ",".join(hit.to_json(parts) for hit in self.hits)
            + '],"retrieval":'
            + json_text(self.retrieval)
        )
        if notice and self.notice is not None:
            text += ',"keepgui":' + json_text(self.notice.to_obj())
        return text + "}"


def recall_limit(requested: int | None, config: MemoryConfig) -> int:
    """``min(limit or recall_limit, 100)``: an absent (None) limit means the configured one.

    An explicit 0 stays 0 (no hits), as Rust's ``limit.unwrap_or(recall_limit)`` does.
    """
    return min(config.recall_limit if requested is None else requested, RECALL_LIMIT_CAP)


def recall_request(
    index: BankIndex,
    bank: str,
    query: str,
    config: MemoryConfig,
    *,
    now_ms: int,
    limit: int | None = None,
    tag: str | None = None,
    include_superseded: bool = False,
) -> RecallResult:
    """``memory::recall {bank, query, limit?, include_superseded?, tag?}`` (spec §2.6)."""
    n = recall_limit(limit, config)
    hits = recall(
        index,
        query,
        n,
        tag=tag,
        include_superseded=include_superseded,
        now_ms=now_ms,
        half_life_days=config.decay_half_life_days,
    )
    return RecallResult(bank, hits, RETRIEVAL_LEXICAL, query_tokens(query), n, now_ms)
