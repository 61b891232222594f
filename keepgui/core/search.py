"""Search-as-you-type over many short texts: fuzzy per word, fast at 100,000 memories.

Scoring every memory with a fuzzy matcher on each keystroke costs ~60 ms at
100,000 rows. Instead :class:`TextSearch` keeps an inverted index from words
to the keys that contain them. A query is split into terms; each term is
matched against the *vocabulary* (a few thousand distinct words, not 100,000
texts) by prefix (the word being typed) and by rapidfuzz similarity (typos);
a memory matches when every term matches one of its words. Adding, changing
or removing one text updates the index in place.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

import regex
from rapidfuzz import fuzz, process

from keepgui.core import pace

_WORD = regex.compile(r"[\p{Alphabetic}\p{N}]+")


def words_of(text: str) -> list[str]:
    """The searchable words of a text: letter/digit runs, case-folded."""
    return _WORD.findall(text.casefold())


def _fuzzy_cutoff(term: str) -> float | None:
    """How similar a word must be to a term to count as a typo of it (None: no typos)."""
    if len(term) <= 3:
        return None
    return 80.0 if len(term) <= 5 else 75.0


Key = TypeVar("Key", bound=Hashable)
"""What a TextSearch finds: the keys its texts were given under."""


class TextSearch(Generic[Key]):
    """An incrementally maintained word index answering fuzzy as-you-type queries.

    Keys are any hashable ids (memory ids, keep.md entry keys).
    """

    def __init__(self) -> None:
        self._words: dict[Key, frozenset[str]] = {}
        self._postings: dict[str, set[Key]] = {}
        self._sorted: list[str] | None = []
        self._fuzzy: list[str] | None = []

    def __len__(self) -> int:
        return len(self._words)

    def set(self, key: Key, *texts: str) -> None:
        """Index (or re-index) ``key`` with the words of ``texts``."""
        new = frozenset(w for text in texts for w in words_of(text))
        old = self._words.get(key)
        if old == new:
            return
        if old:
            for word in old - new:
                self._unpost(word, key)
        for word in new - (old or frozenset()):
            keys = self._postings.get(word)
            if keys is None:
                self._postings[word] = {key}
                self._sorted = self._fuzzy = None
            else:
                keys.add(key)
        self._words[key] = new

    def set_many(self, items: Iterable[tuple[Key, tuple[str, ...]]]) -> None:
        """Index many keys at once (the initial load)."""
        for n, (key, texts) in enumerate(items):
            if not n & 255:
                pace.checkpoint()  # built in the background beside a window: give way between slices
            self.set(key, *texts)

    def remove(self, key: Key) -> None:
        """Forget ``key``."""
        for word in self._words.pop(key, ()):
            self._unpost(word, key)

    def clear(self) -> None:
        """Forget everything."""
        self._words.clear()
        self._postings.clear()
        self._sorted = []
        self._fuzzy = []

    def _unpost(self, word: str, key: Key) -> None:
        keys = self._postings.get(word)
        if keys is not None:
            keys.discard(key)
            if not keys:
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
        typing = not query[-1:].isspace()
        result: dict[Key, float] | None = None
        for term in dict.fromkeys(terms):
            matches = self.term_matches(term, typing and term == terms[-1])
            scores: dict[Key, float] = {}
            # Visit the strongest word matches first so each key keeps its best score.
            for word, score in sorted(matches.items(), key=lambda kv: -kv[1]):
                for key in self._postings.get(word, ()):
                    if key not in scores:
                        scores[key] = score
            if result is None:
                result = scores
            else:
                result = {k: result[k] + s for k, s in scores.items() if k in result}
            if not result:
                return {}
        return result or {}
