"""Search-as-you-type over many short texts: fuzzy per word, fast at a million memories.

Scoring every memory with a fuzzy matcher on each keystroke costs ~60 ms at
100,000 rows. Instead :class:`TextSearch` keeps an inverted index from words
to the keys that contain them. A query is split into terms; each term is
matched against the *vocabulary* (the distinct words, not the texts) by prefix
(the word being typed) and by rapidfuzz similarity (typos); a memory matches
when every term matches one of its words, scoring per term its best word.
Adding, changing or removing one text updates the index in place.

Two ways to ask. :meth:`TextSearch.search` gives a dict of key -> score (a Python step per key
found: for small indexes). :meth:`TextSearch.find` gives the same answer as numpy arrays over
*slots* (a number per key, in the order keys were first indexed), worked out on a frozen copy of
the index (:meth:`TextSearch.freeze`): the vocabulary sorted once, every word's slots laid out
one after another in vocabulary order, so the words a prefix begins are one slice of one array and
the query is a few numpy passes over a million slots, which let the interpreter lock go. Keys
changed since the freeze are looked at one by one (a handful, until the next freeze).

A big index can be built in another process (:func:`index_columns`, run by
:mod:`keepgui.core.childwork`) and taken here as arrays (:meth:`TextSearch.from_columns`): such an
index is frozen only, with no set of keys per word nor of words per key (a Python object each, built,
kept and freed by nobody in the window's process); changes made to it afterwards are kept beside the
arrays and looked at one by one, as changes since a freeze are.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import regex
from rapidfuzz import fuzz, process

from keepgui.core import pace

_WORD = regex.compile(r"[\p{Alphabetic}\p{N}]+")

_FREEZE_STEP = 4096
"""Words (or keys) handled between two pace checkpoints while freezing: a few ms each."""


_ASCII_FOLD = bytes.maketrans(
    bytes(range(128)), bytes(c | 0x20 if chr(c).isalpha() else c if chr(c).isdigit() else 0x20 for c in range(128))
)
"""An ASCII byte -> itself lowercased when it is a letter or digit, else a space."""


def words_of(text: str) -> list[str]:
    """The searchable words of a text: letter/digit runs, case-folded (ASCII text through one byte
    table and a split: several times faster, which a memory of 50 MB notices)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_FOLD).decode("ascii").split()
    return _WORD.findall(text.casefold())


def _fuzzy_cutoff(term: str) -> float | None:
    """How similar a word must be to a term to count as a typo of it (None: no typos)."""
    if len(term) <= 3:
        return None
    return 80.0 if len(term) <= 5 else 75.0


def word_score(term: str, typing: bool, word: str) -> float:
    """How well one ``word`` of a text matches one ``term`` of a query (0: not at all): 100 for the
    term itself, 95 for a word it begins when ``typing`` (the term may be unfinished), else 0.9 × the
    rapidfuzz ratio for a typo (letters-only words and terms of 4 letters or more)."""
    if word == term:
        return 100.0
    if typing and word.startswith(term):
        return 95.0
    cutoff = _fuzzy_cutoff(term)
    if cutoff is not None and term.isalpha() and word.isalpha():
        score = fuzz.ratio(term, word, score_cutoff=cutoff)
        if score:
            return float(score) * 0.9
    return 0.0


def _after_prefix(term: str) -> str:
    """The least string greater than every string that begins with ``term`` (a non-empty word)."""
    return term[:-1] + chr(ord(term[-1]) + 1)


def _spans(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The positions ``starts[i]`` .. ``ends[i] - 1`` of every span, one after another."""
    lengths = ends - starts
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


Key = TypeVar("Key", bound=Hashable)
"""What a TextSearch finds: the keys its texts were given under."""


@dataclass(frozen=True)
class _Frozen:
    """The index as it was at a freeze, laid out for numpy (nobody changes it afterwards)."""

    vocabulary: list[str]
    """Every word, sorted."""
    starts: np.ndarray
    """Word ``i``'s slots are ``slots[starts[i]:starts[i + 1]]`` (int64, one more than words)."""
    slots: np.ndarray
    """The slots of every word, word after word in vocabulary order (int32)."""
    fuzzy: list[str]
    """The words a typo may be of (letters only), in vocabulary order."""
    fuzzy_at: np.ndarray
    """Where each of ``fuzzy`` stands in ``vocabulary`` (int64)."""
    size: int
    """How many slots there were."""

    def word_slots(self, first: int, last: int) -> np.ndarray:
        """The slots of vocabulary words ``first`` .. ``last - 1`` (one slice, no copy)."""
        return self.slots[int(self.starts[first]) : int(self.starts[last])]


class Found(Mapping[Key, float]):
    """What :meth:`TextSearch.find` found: ``slots`` (ascending, int64) and ``scores`` (float64,
    one per slot found), and read as a mapping key -> score like :meth:`TextSearch.search`'s dict
    (a look-up per key asked, none per key found)."""

    def __init__(self, index: TextSearch[Key], slots: np.ndarray, dense: np.ndarray | None) -> None:
        self._slot_of = index._slot_of
        self._keys = index._keys
        self.slots = slots
        self._dense = dense
        self.scores: np.ndarray = dense[slots] if dense is not None else np.empty(0, dtype=np.float64)

    def __getitem__(self, key: Key) -> float:
        slot = self._slot_of.get(key)
        dense = self._dense
        if slot is None or dense is None or slot >= len(dense) or not dense[slot] > 0:
            raise KeyError(key)
        return float(dense[slot])

    def __iter__(self) -> Iterator[Key]:
        keys = self._keys
        return (keys[s] for s in self.slots.tolist())

    def __len__(self) -> int:
        return len(self.slots)


class TextSearch(Generic[Key]):
    """An incrementally maintained word index answering fuzzy as-you-type queries.

    Keys are any hashable ids (memory ids, keep.md entry keys). Changes (:meth:`set`,
    :meth:`remove`) come from one thread; :meth:`find` may run on another meanwhile.
    """

    def __init__(self) -> None:
        self._words: dict[Key, frozenset[str]] = {}
        self._slot_of: dict[Key, int] = {}
        self._keys: list[Key] = []
        self._postings: dict[str, set[int]] = {}
        self._sorted: list[str] | None = []
        self._fuzzy: list[str] | None = []
        self._frozen: _Frozen | None = None
        self._dirty: set[int] = set()  # slots whose words changed since the freeze
        self._arrays_only = False  # made by from_columns: _words holds only the keys changed since
        self._count = 0  # keys indexed, when arrays only

    def __len__(self) -> int:
        return self._count if self._arrays_only else len(self._words)

    @classmethod
    def from_columns(cls, keys: list[Key], columns: Mapping[str, Any]) -> TextSearch[Key]:
        """The index :func:`index_columns` laid out for ``keys`` (the key of each text it was given,
        in order), taken as it is: arrays, the vocabulary, and a key -> slot dict built a slice at a
        time (see the module)."""
        index: TextSearch[Key] = cls()
        index._arrays_only = True
        index._keys = keys
        index._count = len(keys)
        slot_of: dict[Key, int] = {}
        for lo in range(0, len(keys), _FREEZE_STEP):
            slot_of.update(zip(keys[lo : lo + _FREEZE_STEP], range(lo, lo + _FREEZE_STEP), strict=False))
            pace.checkpoint()
        index._slot_of = slot_of
        vocabulary: list[str] = columns["vocabulary"]
        fuzzy_at = np.frombuffer(columns["fuzzy_at"], dtype=np.int64)
        fuzzy: list[str] = []
        for lo in range(0, len(fuzzy_at), _FREEZE_STEP):
            fuzzy += map(vocabulary.__getitem__, fuzzy_at[lo : lo + _FREEZE_STEP].tolist())
            pace.checkpoint()
        index._frozen = _Frozen(
            vocabulary,
            np.frombuffer(columns["starts"], dtype=np.int64),
            np.frombuffer(columns["slots"], dtype=np.int32),
            fuzzy,
            fuzzy_at,
            len(keys),
        )
        index._sorted = vocabulary
        index._fuzzy = fuzzy
        return index

    def columns(self) -> dict[str, Any]:
        """The frozen index as columns for :meth:`from_columns` in another process (freezes it first)."""
        if self._frozen is None or self._dirty:
            self.freeze()
        frozen = self._frozen
        assert frozen is not None
        return {
            "vocabulary": frozen.vocabulary,
            "starts": frozen.starts.astype(np.int64, copy=False).tobytes(),
            "slots": frozen.slots.astype(np.int32, copy=False).tobytes(),
            "fuzzy_at": frozen.fuzzy_at.astype(np.int64, copy=False).tobytes(),
        }

    @property
    def changed_since_freeze(self) -> int:
        """How many keys :meth:`find` looks at one by one (changed since :meth:`freeze`)."""
        return len(self._dirty)

    def slot_keys(self) -> list[Key]:
        """Key of each slot (grows as keys are added; do not mutate)."""
        return self._keys

    def set(self, key: Key, *texts: str) -> None:
        """Index (or re-index) ``key`` with the words of ``texts``."""
        new = frozenset(itertools.chain.from_iterable(map(words_of, texts)))
        if self._arrays_only:
            self._set_beside(key, new)
            return
        old = self._words.get(key)
        if old == new:
            return
        slot = self._slot_of.get(key)
        if slot is None:
            slot = self._slot_of[key] = len(self._keys)
            self._keys.append(key)
        if old:
            for word in old - new:
                self._unpost(word, slot)
        for word in new - (old or frozenset()):
            slots = self._postings.get(word)
            if slots is None:
                self._postings[word] = {slot}
                self._sorted = self._fuzzy = None
            else:
                slots.add(slot)
        self._words[key] = new
        if self._frozen is not None:
            self._dirty.add(slot)

    def _set_beside(self, key: Key, words: frozenset[str] | None) -> None:
        """An index of arrays only: a key's words now (None: removed), kept beside the arrays."""
        slot = self._slot_of.get(key)
        if slot is None:
            if words is None:
                return
            slot = self._slot_of[key] = len(self._keys)
            self._keys.append(key)
            self._count += 1
        elif words is None:
            if self._words.get(key, True) is not None:
                self._count -= 1
        elif self._words.get(key, words) is None:
            self._count += 1  # back after a removal
        self._words[key] = words  # type: ignore[assignment]
        self._dirty.add(slot)

    def set_many(self, items: Iterable[tuple[Key, tuple[str, ...]]]) -> None:
        """Index many keys at once (the initial load)."""
        for n, (key, texts) in enumerate(items):
            if not n & 255:
                pace.checkpoint()  # built in the background beside a window: give way between slices
            self.set(key, *texts)

    def remove(self, key: Key) -> None:
        """Forget ``key``."""
        if self._arrays_only:
            self._set_beside(key, None)
            return
        words = self._words.pop(key, None)
        if words is None:
            return
        slot = self._slot_of[key]
        for word in words:
            self._unpost(word, slot)
        if self._frozen is not None:
            self._dirty.add(slot)

    def clear(self) -> None:
        """Forget everything."""
        self._words = {}
        self._slot_of = {}
        self._keys = []
        self._postings = {}
        self._sorted = []
        self._fuzzy = []
        self._frozen = None
        self._dirty = set()
        self._arrays_only = False
        self._count = 0

    def _unpost(self, word: str, slot: int) -> None:
        slots = self._postings.get(word)
        if slots is not None:
            slots.discard(slot)
            if not slots:
                del self._postings[word]
                self._sorted = self._fuzzy = None

    def _vocabulary(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._postings)
        return self._sorted

    def _fuzzy_vocabulary(self) -> list[str]:
        # Words with digits (ports, versions, ids) only match exactly or by prefix:
        # "3111" is not a typo of "3112", and they would swamp the typo search.
        if self._fuzzy is None:
            self._fuzzy = [w for w in self._vocabulary() if w.isalpha()]
        return self._fuzzy

    def term_matches(self, term: str, typing: bool) -> dict[str, float]:
        """Vocabulary words matching ``term`` with their scores (100 = exact).

        ``typing`` means the term may be unfinished, so every word it begins counts.
        """
        vocab = self._vocabulary()
        found: dict[str, float] = {}
        if term in self._postings:
            found[term] = 100.0
        if typing:
            start = bisect.bisect_left(vocab, term)
            for word in vocab[start:]:
                if not word.startswith(term):
                    break
                found.setdefault(word, 95.0)
        cutoff = _fuzzy_cutoff(term)
        if cutoff is not None and term.isalpha():
            for word, score, _ in process.extract(
                term, self._fuzzy_vocabulary(), scorer=fuzz.ratio, score_cutoff=cutoff, limit=None
            ):
                if word not in found:
                    found[word] = float(score) * 0.9
        return found

    def search(self, query: str) -> dict[Key, float]:
        """Keys whose words match every term of ``query``, with a relevance score.

        An empty query matches nothing (the caller shows everything instead).
        """
        terms = words_of(query)
        if not terms:
            return {}
        if self._arrays_only:
            found = self.find(query)
            return dict(zip(found, found.scores.tolist(), strict=True))
        typing = not query[-1:].isspace()
        keys = self._keys
        result: dict[Key, float] | None = None
        for term in dict.fromkeys(terms):
            matches = self.term_matches(term, typing and term == terms[-1])
            scores: dict[Key, float] = {}
            # Visit the strongest word matches first so each key keeps its best score.
            for word, score in sorted(matches.items(), key=lambda kv: -kv[1]):
                for slot in self._postings.get(word, ()):
                    key = keys[slot]
                    if key not in scores:
                        scores[key] = score
            if result is None:
                result = scores
            else:
                result = {k: result[k] + s for k, s in scores.items() if k in result}
            if not result:
                return {}
        return result or {}

    # ------------------------------------------------------------------ numpy answers

    def freeze(self) -> None:
        """Lay the index out for :meth:`find` (costs a pass over every word and slot, with pace
        checkpoints between slices). Call it where nothing changes the index meanwhile: on the
        thread that changes it, or before handing a new index over. An index of arrays only stays
        as it is (its changes are looked at one by one: build it again to lay them out)."""
        if self._arrays_only:
            return
        postings = self._postings
        words = list(postings)
        chunks = []
        for lo in range(0, len(words), _FREEZE_STEP):
            pace.checkpoint()
            chunks.append(sorted(words[lo : lo + _FREEZE_STEP]))
        vocabulary = words
        if len(chunks) > 1:
            merged = heapq.merge(*chunks)
            vocabulary = []
            while piece := list(itertools.islice(merged, _FREEZE_STEP * 4)):
                vocabulary.extend(piece)
                pace.checkpoint()
        elif chunks:
            vocabulary = chunks[0]
        lengths: list[np.ndarray] = []
        slots: list[np.ndarray] = []
        alpha: list[np.ndarray] = []
        for lo in range(0, len(vocabulary), _FREEZE_STEP):
            pace.checkpoint()
            posted = [postings[w] for w in vocabulary[lo : lo + _FREEZE_STEP]]
            lengths.append(np.fromiter(map(len, posted), dtype=np.int64, count=len(posted)))
            slots.append(np.fromiter(itertools.chain.from_iterable(posted), dtype=np.int32))
            alpha.append(np.fromiter(map(str.isalpha, vocabulary[lo : lo + _FREEZE_STEP]), dtype=np.bool_))
        starts = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=starts[1:])
        fuzzy_at = np.flatnonzero(np.concatenate(alpha)) if alpha else np.empty(0, dtype=np.int64)
        self._frozen = _Frozen(
            vocabulary,
            starts,
            np.concatenate(slots) if slots else np.empty(0, dtype=np.int32),
            [vocabulary[i] for i in fuzzy_at.tolist()],
            fuzzy_at.astype(np.int64, copy=False),
            len(self._keys),
        )
        self._dirty = set()
        self._sorted = vocabulary

    def find(self, query: str) -> Found[Key]:
        """:meth:`search`'s answer as numpy arrays over slots (see the module): exactly the same keys
        and scores. Runs on any thread beside one that changes the index; freezes it first if it was
        never frozen (then only on the thread that changes it)."""
        terms = words_of(query)
        if not terms:
            return Found(self, np.empty(0, dtype=np.int64), None)
        if self._frozen is None:
            self.freeze()
        frozen = self._frozen
        assert frozen is not None
        # Snapshots: keys added or changed from now on are not part of this answer's slots.
        size = max(len(self._keys), frozen.size)
        dirty = [s for s in list(self._dirty) if s < size]
        typing = not query[-1:].isspace()
        total: np.ndarray | None = None
        for term in dict.fromkeys(terms):
            best = self._term_scores(frozen, term, typing and term == terms[-1], size, dirty)
            total = best if total is None else np.where((total > 0) & (best > 0), total + best, 0.0)
            pace.checkpoint()
            if not total.any():
                return Found(self, np.empty(0, dtype=np.int64), None)
        assert total is not None
        return Found(self, np.flatnonzero(total), total)

    def _term_scores(self, frozen: _Frozen, term: str, typing: bool, size: int, dirty: list[int]) -> np.ndarray:
        """Each slot's best score for one term (0: no word of it matches), float64 per slot."""
        best = np.zeros(size, dtype=np.float64)
        vocabulary = frozen.vocabulary
        cutoff = _fuzzy_cutoff(term)
        if cutoff is not None and term.isalpha() and frozen.fuzzy:
            ratios = process.cdist([term], frozen.fuzzy, scorer=fuzz.ratio, score_cutoff=cutoff, dtype=np.float64)[0]
            hits = np.flatnonzero(ratios)
            if len(hits):
                at = frozen.fuzzy_at[hits]
                first, last = frozen.starts[at], frozen.starts[at + 1]
                where = frozen.slots[_spans(first, last)]
                # A slot holding several typos of the term keeps the best of them.
                np.maximum.at(best, where, np.repeat(ratios[hits] * 0.9, last - first))
        start = bisect.bisect_left(vocabulary, term)
        if typing:  # every word the term begins: one slice (below any typo's score, above none)
            end = bisect.bisect_left(vocabulary, _after_prefix(term), lo=start)
            best[frozen.word_slots(start, end)] = 95.0
        if start < len(vocabulary) and vocabulary[start] == term:
            best[frozen.word_slots(start, start + 1)] = 100.0
        if dirty:  # changed since the freeze: their words now, one by one
            keys, words = self._keys, self._words
            for slot in dirty:
                now = words.get(keys[slot]) or ()
                best[slot] = max((word_score(term, typing, w) for w in now), default=0.0)
        return best


def index_columns(texts: list[tuple[str | Sequence[str], ...]]) -> dict[str, Any]:
    """An index of ``texts`` (the texts of each key, in order: each a string or a sequence of them, a
    row's tags say, so that the caller builds no tuple per key) frozen and laid out as columns, for
    :meth:`TextSearch.from_columns` with those keys (what a child process runs)."""

    def flat(fields: tuple[str | Sequence[str], ...]) -> tuple[str, ...]:
        return tuple(itertools.chain.from_iterable((f,) if isinstance(f, str) else f for f in fields))

    index: TextSearch[int] = TextSearch()
    index.set_many((n, flat(fields)) for n, fields in enumerate(texts))
    return index.columns()
