"""Dates in keep.md entries: entry stamps (when a fact was noted, safe to drop) and dates inside a fact.

A stamp is a date marked as one — a stamp word ("added 2025-03-01") or a date
with a clock time at either end of the entry — never the date a fact is about;
:func:`strip_dates` offers to reword the latter away, which is a judgement call.
"""

from __future__ import annotations

import re

from keepgui.backends.nanobot.keepmd import normalise

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"(?:19|20)\d{2}"
_ISO_DATE = r"\d{4}-\d{2}-\d{2}|\d{4}/\d{2}/\d{2}"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?"
_DATE_TIME = rf"(?:{_ISO_DATE})(?:[T ]{_CLOCK})"
_ANY_DATE = (
    rf"(?:{_ISO_DATE}|{_MONTHS}\.? \d{{1,2}}(?:st|nd|rd|th)?,? {_YEAR}|\d{{1,2}}(?:st|nd|rd|th)? {_MONTHS}\.?,? "
    rf"{_YEAR}|{_MONTHS}\.?,? {_YEAR}|(?:early |mid-?|late )?{_YEAR})"
)
_STAMP_WORDS = r"(?:added|noted|saved|kept|updated|learned|learnt|recorded|captured|remembered|stored|logged)"
_SEP = r"[-–—|:;,]"

# Entry stamps: when a fact was noted, never the fact itself. Safe to drop.
_STAMPS = [
    # a stamp word with a date: "(added 2025-03-01)", "— noted: 2025-03-01 14:22", "saved on 2025-03-01"
    re.compile(
        rf"\s*{_SEP}?\s*[\[(]\s*{_STAMP_WORDS}\s*(?:on|at|:)?\s*(?:{_ISO_DATE})(?:[T ]{_CLOCK})?\s*[\])]", re.IGNORECASE
    ),
    re.compile(
        rf"\s*{_SEP}?\s*\b{_STAMP_WORDS}\s*(?:on|at|:)?\s*(?:{_ISO_DATE})(?:[T ]{_CLOCK})?(?=\s*$|\s*[\])])",
        re.IGNORECASE,
    ),
    # a date with a clock time at either end of the entry: how logs stamp lines
    re.compile(rf"^\s*[\[(]?\s*{_DATE_TIME}\s*[\])]?\s*{_SEP}?\s*"),
    re.compile(rf"\s*{_SEP}?\s*[\[(]?\s*{_DATE_TIME}\s*[\])]?\s*$"),
]

# Dates that may be the fact itself ("moved to Lisbon in 2019"): offered, never selected.
_CONTENT_DATES = [
    re.compile(
        rf"\s*,?\s*\b(?:in|on|since|from|during|until|till|by|as of|around|circa)\s+(?:the\s+)?{_ANY_DATE}\b",
        re.IGNORECASE,
    ),
    re.compile(rf"^\s*[\[(]\s*(?:{_ISO_DATE})\s*[\])]\s*{_SEP}?\s*|^\s*(?:{_ISO_DATE})\s*[:|–—]\s*"),
    re.compile(rf"\s*(?:{_SEP}\s*)?[\[(]\s*{_ANY_DATE}\s*[\])]\s*$|\s+[–—-]\s+(?:{_ISO_DATE})\s*$", re.IGNORECASE),
]
_HAS_DATE = re.compile(
    rf"\b(?:{_ISO_DATE}|{_MONTHS}\.? \d{{1,2}},? {_YEAR}|\d{{1,2}} {_MONTHS},? {_YEAR}|{_MONTHS} {_YEAR})\b"
    rf"|\b(?:in|on|since|from|during|until|by) {_YEAR}\b",
    re.IGNORECASE,
)
LONGEST_FACT = 2_000
"""Entries longer than this many characters are not looked at for dates: a keep.md fact is one terse
line, and the patterns here, run on a line of megabytes (or a run of 40,000 spaces), would cost
seconds each; such a line is left exactly as it is."""

_DANGLING = re.compile(r"\b(?:is|was|are|on|in|at|the|a|an|of|to|from|by|since|until)\s*$", re.IGNORECASE)


def _tidy(text: str) -> str:
    """Clean up what is left around a removed date: spaces, separators at either end, ``( )``."""
    text = re.sub(r"\(\s*\)|\[\s*\]", " ", text)
    text = re.sub(r"\s+([,;:.!?)])", r"\1", text)
    text = re.sub(r"([,;:])(?=[,;:])", "", text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    text = re.sub(r"^[\s,;:|–—-]+", "", text)
    return re.sub(r"[\s,;:|–—-]+$", "", text)


def _usable(before: str, after: str) -> str | None:
    if not after or len(after.split()) < 2 or _DANGLING.search(after) or normalise(after) == normalise(before):
        return None
    return after


def strip_stamps(text: str) -> str | None:
    """The fact without its entry stamps (when it was added or noted), or None when it has none.

    Only dates marked as stamps are taken (a stamp word, or a date with a clock
    time at either end of the entry), never the date a fact is about.
    """
    if len(text) > LONGEST_FACT:
        return None
    out = text
    for pattern in _STAMPS:
        out = pattern.sub(" ", out)
    return _usable(text, _tidy(out)) if out != text else None


def strip_dates(text: str) -> str | None:
    """The fact reworded without the dates inside it ("… in March 2019", "(2024-05-01)"), or None.

    Only dates that can go without breaking the sentence: after a preposition,
    in brackets at either end, or a ``DATE:`` prefix. "Birthday is 1988-03-14"
    has no such date: there the date is the fact.
    """
    if len(text) > LONGEST_FACT:
        return None
    out = text
    for pattern in _CONTENT_DATES:
        out = pattern.sub(" ", out)
    return _usable(text, _tidy(out)) if out != text else None


def has_date(text: str) -> bool:
    """True when ``text`` holds a calendar date or a year after a preposition."""
    return bool(_HAS_DATE.search(text[:LONGEST_FACT]))
