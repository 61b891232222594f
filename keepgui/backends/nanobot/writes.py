"""Keeping a fact in keep.md: the keep skill's protocol, done deterministically.

The keep skill (an LLM following ``skills/keep/SKILL.md``) reformulates, triages,
deduplicates and appends. keepgui cannot reformulate, so it does everything
else the same way, and says what it found instead of deciding silently:

1. **Clean** the input: newlines and runs of spaces collapse to one space; a
   leading ``keep``, ``/keep``, ``remember`` or ``remember that`` (any case,
   optional colon) and a pasted bullet (``-``/``*``) are dropped. No date is
   ever added.
2. **Triage** (:func:`triage`): is it a durable fact about the user (``keep``),
   a rule for the agent (``agents`` → AGENTS.md), something to read or try
   later (``note``), a reminder (``remind``) or a fact about one named project
   (``project`` → ``projects/<slug>/``)? A verdict other than ``keep`` is a
   *suggestion*: nothing is written, the result says where it belongs, and
   ``force=True`` keeps it anyway.
3. **Deduplicate** after normalising (spec §5.3), containment at word
   boundaries: the new fact contained in an entry → already kept (nothing
   written); an entry contained in the new fact → offer to replace it
   (``replace=True`` does); a fuzzy near-duplicate, or a match in
   ``memory/MEMORY.md`` (Dream's file), → a warning naming it; more than 15
   words → a warning.
4. **Write** with optimistic concurrency: keep.md is read with its stamp right
   before the decision and written with ``expect=stamp``, so if the agent
   rewrote it in between the write is refused (:class:`Conflict`) and nothing
   is lost. After an add the result says when compaction is due (>150 lines).

Removing an entry is reversible: its text, line and neighbours go to keepgui's
:class:`~keepgui.core.history.History` (outside the workspace) before the file
is written, and :meth:`KeepStore.unforget` / :meth:`KeepStore.restore` put it
back where it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rapidfuzz import fuzz, process
from rapidfuzz.utils import default_process

from keepgui.backends.nanobot.keepmd import COMPACTION_TARGET, SOFT_CAP, Entry, KeepDoc, contains, normalise
from keepgui.backends.nanobot.triage import KEEP, Triage, triage
from keepgui.backends.nanobot.workspace import KEEP_MD, MEMORY_MD, Notice, Workspace
from keepgui.core import fsio
from keepgui.core.compaction import ALIKE, Likeness, likeness
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.history import History, RemovedEntry, file_key

_R = TypeVar("_R")

FUZZY_THRESHOLD = 85.0
"""Default near-duplicate cut-off on rapidfuzz's ``token_set_ratio`` (0–100).

keep.md entries are 5–15 telegraphic words, and a near-duplicate is almost
always the same fact with words added, dropped or reordered ("prefers tea" /
"prefers green tea"). ``token_set_ratio`` scores the overlap of word sets, so
such pairs score 90–100 whatever the order or length difference, while two
different facts that share one or two common words ("Prefers tea" / "Prefers
dark roast coffee") stay below 80. 85 sits between; warnings never block.
"""

MAX_WORDS = 15
"""The keep skill writes 5–15 word facts; longer input gets a warning."""

_MIN_MEMORY_LINE_WORDS = 3


@dataclass(frozen=True)
class KeepTraits:
    """What a keep.md entry is and can do (``entries --json`` reports it; the window greys what it cannot)."""

    can_pin: bool = False
    pin_reason: str = "keep.md entries have no pin: every entry is read on every turn"
    can_edit: bool = True
    can_remove: bool = True
    can_restore: bool = True
    has_dates: bool = False
    dates_reason: str = "keep.md entries carry no dates: a date adds noise and no value for keep/discard"
    soft_cap: int = SOFT_CAP
    compaction_target: int = COMPACTION_TARGET

    def to_obj(self) -> dict[str, Any]:
        """Every field, for ``--json``."""
        return dict(self.__dict__)


KEEP_CAPABILITIES = KeepTraits()
"""The one KeepTraits value of keep.md."""


# ---------------------------------------------------------------------- cleaning

_COMMAND_RE = re.compile(r"^(?:/keep|keep|remember(?:\s+that)?)(?![\w-])\s*:?\s*", re.IGNORECASE)
_BULLET_RE = re.compile(r"^[-*]\s+")
_VAGUE = {"this", "that", "it", "that thing", "this thing", "something", "the thing", "what i said"}


def clean_fact(text: str) -> str:
    """The fact as it would be written: one line, single spaces, no command word, no bullet.

    Examples: ``"remember that\\nSam  likes figs"`` → ``"Sam likes figs"``;
    ``"/keep: Vegan"`` → ``"Vegan"``. Never adds a date.
    """
    fact = " ".join(text.split())
    for _ in range(3):  # "/keep remember that x" is still just x
        stripped = _BULLET_RE.sub("", _COMMAND_RE.sub("", fact, count=1), count=1).strip()
        if stripped == fact:
            break
        fact = stripped
    return fact


def word_count(text: str) -> int:
    """Words as the keep skill's "5–15 words" counts them (whitespace-separated)."""
    return len(text.split())


# ---------------------------------------------------------------------- triage (keepgui.backends.nanobot.triage)

# ---------------------------------------------------------------------- dedup


@dataclass(frozen=True)
class MemoryMatch:
    """A line of memory/MEMORY.md that already holds (part of) the fact.

    ``kind``: ``contains`` (the line contains the fact), ``contained`` (the
    line is part of the fact) or ``similar`` (fuzzy, with ``score``).
    """

    line: int
    text: str
    kind: str
    score: float = 100.0

    def to_obj(self) -> dict[str, Any]:
        """``{line, text, kind, score}``."""
        return {"line": self.line, "text": self.text, "kind": self.kind, "score": round(self.score, 1)}


@dataclass(frozen=True)
class NearDuplicate:
    """An entry that is not a substring match but scores at or above the fuzzy threshold
    (``score``: ``token_set_ratio``), and how it relates to the fact (``likeness``, what is shown:
    "Prefers tea" is not "100% similar" to "Prefers green tea", every word of it is in it)."""

    entry: Entry
    score: float
    likeness: Likeness = field(default_factory=lambda: Likeness(ALIKE, 0.0))

    def describe(self, entry: str) -> str:
        """The relation in words; ``entry`` is how the entry is named ("entry 12 `Prefers green tea`")."""
        return self.likeness.describe(entry)

    def to_obj(self) -> dict[str, Any]:
        """The entry plus ``score``, ``relation`` and ``likeness`` (a percentage)."""
        return {
            **self.entry.to_obj(),
            "score": round(self.score, 1),
            "relation": self.likeness.relation,
            "likeness": round(self.likeness.percent, 1),
        }


_MD_MARKER_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


def line_key(line: str) -> str:
    """The :func:`normalise` d key of a Markdown line, without its list marker, ``[ ]``/``[x]`` checkbox
    and ``**``/``__`` emphasis (how a line of MEMORY.md, USER.md or AGENTS.md is compared with a fact)."""
    return normalise(_MD_MARKER_RE.sub("", line).replace("**", "").replace("__", ""))


def memory_matches(fact: str, memory_text: str, threshold: float = FUZZY_THRESHOLD) -> list[MemoryMatch]:
    """Lines of MEMORY.md that already know ``fact`` (headings and very short lines are not compared
    in the "line is part of the fact" and fuzzy directions, to avoid matching section titles)."""
    key = normalise(fact)
    out = []
    for number, line in enumerate(memory_text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        memory_key = line_key(stripped)
        if not memory_key:
            continue
        if contains(memory_key, key):
            out.append(MemoryMatch(number, stripped, "contains"))
            continue
        if len(memory_key.split()) < _MIN_MEMORY_LINE_WORDS:
            continue
        if contains(key, memory_key):
            out.append(MemoryMatch(number, stripped, "contained"))
            continue
        score = fuzz.token_set_ratio(key, memory_key, processor=default_process)
        if score >= threshold:
            out.append(MemoryMatch(number, stripped, "similar", score))
    return out


@dataclass(frozen=True)
class KeepCheck:
    """Everything keepgui knows about a fact before writing it (no file is touched).

    ``identical``: an entry with the same normalised text; ``contained_in``:
    entries that contain the fact (so it is already kept); ``contains``: entries
    the fact contains (replace candidates); ``near``: fuzzy near-duplicates;
    ``memory``: MEMORY.md lines that know it.
    """

    fact: str
    triage: Triage
    identical: Entry | None
    contained_in: tuple[Entry, ...]
    contains: tuple[Entry, ...]
    near: tuple[NearDuplicate, ...]
    memory: tuple[MemoryMatch, ...]
    words: int

    @property
    def already_kept(self) -> Entry | None:
        """The entry that makes the fact a duplicate (identical first), or None."""
        return self.identical or (self.contained_in[0] if self.contained_in else None)


def check_fact(
    fact: str,
    doc: KeepDoc,
    memory_text: str = "",
    *,
    known_projects: tuple[str, ...] | list[str] = (),
    threshold: float = FUZZY_THRESHOLD,
) -> KeepCheck:
    """Triage and deduplicate a cleaned fact against keep.md and MEMORY.md (pure)."""
    key = normalise(fact)
    entries = doc.entries
    identical = next((e for e in entries if e.key == key), None)
    contained_in = tuple(e for e in entries if e is not identical and contains(e.key, key))
    contained = tuple(e for e in entries if e is not identical and e not in contained_in and contains(key, e.key))
    exclude = {e.id for e in (identical, *contained_in, *contained) if e is not None}
    candidates = [e for e in entries if e.id not in exclude]
    near = []
    if candidates and key:
        for _choice, score, i in process.extract(
            key,
            [e.key for e in candidates],
            scorer=fuzz.token_set_ratio,
            processor=default_process,
            score_cutoff=threshold,
            limit=None,
        ):
            near.append(NearDuplicate(candidates[i], score, likeness(key, candidates[i].key)))
    near.sort(key=lambda n: (-n.score, n.entry.number))
    return KeepCheck(
        fact,
        triage(fact, known_projects),
        identical,
        contained_in,
        contained,
        tuple(near),
        tuple(memory_matches(fact, memory_text, threshold)),
        word_count(fact),
    )


# ---------------------------------------------------------------------- results

KEPT, REPLACED, ALREADY_KEPT, REPLACE_OFFERED, REDIRECTED = (
    "kept",
    "replaced",
    "already_kept",
    "replace_offered",
    "redirected",
)


@dataclass(frozen=True)
class KeepResult:
    """What :meth:`KeepStore.add` did.

    ``outcome``: ``kept`` or ``replaced`` (written), ``already_kept``,
    ``replace_offered`` or ``redirected`` (nothing written). ``entry`` is the
    entry written, or the existing entry that made it a duplicate. ``message``
    is one sentence for a person; ``notices`` the warnings (near-duplicate,
    MEMORY.md, length, compaction due...). ``counts`` are keep.md's after the call.
    """

    outcome: str
    written: bool
    fact: str
    path: str
    message: str
    triage: Triage
    entry: Entry | None = None
    replace_candidates: tuple[Entry, ...] = ()
    replaced: tuple[RemovedEntry, ...] = ()
    near_duplicates: tuple[NearDuplicate, ...] = ()
    memory_matches: tuple[MemoryMatch, ...] = ()
    notices: tuple[Notice, ...] = ()
    counts: dict[str, Any] = field(default_factory=dict)
    doc: KeepDoc | None = field(default=None, compare=False, repr=False)

    def to_obj(self) -> dict[str, Any]:
        """The result for ``--json``."""
        return {
            "outcome": self.outcome,
            "written": self.written,
            "fact": self.fact,
            "path": self.path,
            "message": self.message,
            "triage": self.triage.to_obj(),
            "entry": self.entry.to_obj() if self.entry else None,
            "replace_candidates": [e.to_obj() for e in self.replace_candidates],
            "replaced": [r.to_obj() for r in self.replaced],
            "near_duplicates": [n.to_obj() for n in self.near_duplicates],
            "memory_matches": [m.to_obj() for m in self.memory_matches],
            "warnings": [n.to_obj() for n in self.notices],
            "counts": self.counts,
        }


@dataclass(frozen=True)
class RemoveResult:
    """What :meth:`KeepStore.remove` did: the entry removed and its history record (for undo)."""

    entry: Entry
    removed: RemovedEntry
    path: str
    counts: dict[str, Any]
    doc: KeepDoc = field(compare=False, repr=False)

    @property
    def message(self) -> str:
        """One sentence for a person."""
        return f"forgot entry {self.entry.number}: {self.entry.text}"

    def to_obj(self) -> dict[str, Any]:
        """The result for ``--json``."""
        return {
            "removed": self.removed.to_obj(),
            "entry": self.entry.to_obj(),
            "path": self.path,
            "counts": self.counts,
        }


@dataclass(frozen=True)
class RestoreResult:
    """What :meth:`KeepStore.restore` did: ``written`` is False when the entry was already back."""

    restored: RemovedEntry
    written: bool
    entry: Entry | None
    path: str
    message: str
    counts: dict[str, Any]
    doc: KeepDoc = field(compare=False, repr=False)

    def to_obj(self) -> dict[str, Any]:
        """The result for ``--json``."""
        return {
            "restored": self.restored.to_obj(),
            "written": self.written,
            "entry": self.entry.to_obj() if self.entry else None,
            "path": self.path,
            "message": self.message,
            "counts": self.counts,
        }


def _quote(entry: Entry) -> str:
    return f"entry {entry.number} `{entry.text}` (line {entry.line + 1})"


# ---------------------------------------------------------------------- the store


class KeepStore:
    """keep.md of one workspace: load, keep a fact, edit, forget and restore entries.

    Every change reads keep.md with its stamp, decides on exactly those bytes,
    and writes through :meth:`Workspace.write` with that stamp, so a concurrent
    rewrite (the agent compacting) makes the write fail with
    :class:`~keepgui.core.errors.Conflict` and nothing is lost. ``expect``,
    where accepted, is the stamp of the document the caller showed the person:
    if keep.md changed since, the call is refused before deciding anything.
    Every version read or written is recorded in ``history``.
    """

    def __init__(
        self, workspace: Workspace | str, history: History | None = None, *, fuzzy_threshold: float = FUZZY_THRESHOLD
    ) -> None:
        if not 0 <= fuzzy_threshold <= 100:
            raise InvalidInput(f"the near-duplicate threshold must be between 0 and 100, not {fuzzy_threshold}")
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.history = history if history is not None else History()
        self.fuzzy_threshold = fuzzy_threshold
        self.capabilities = KEEP_CAPABILITIES
        self.writes: list[tuple[tuple[bytes, fsio.Stamp], tuple[bytes, fsio.Stamp]]] = []
        """Each write of keep.md this store made: ``((bytes, stamp) it replaced, (bytes, stamp) it wrote)``
        (a bank empties it before an operation and reads it after, for the operation's undo)."""

    @property
    def path(self) -> str:
        """The keep.md file."""
        return self.workspace.keep_md

    # ---------------------------------------------------------------- reading

    def load(self, *, expect: fsio.Stamp | None = None) -> KeepDoc:
        """keep.md as it is now (an empty document when missing), recorded in the history.

        With ``expect``, raises :class:`Conflict` if the file no longer has that content.
        """
        last = self.history.latest(self.path)
        try:
            data, stamp = self.workspace.read(KEEP_MD, settled=True, before=last.size if last else None)
        except fsio.Unsettled as exc:
            if exc.still:  # emptied, and it stays so: the next look may take it as it is
                self.history.record(self.path, b"", source="seen")
            raise
        if expect is not None and not expect.same_content(stamp):
            raise Conflict(self.path, expect, stamp)
        doc = KeepDoc.parse(data, self.path, stamp)
        if data is not None:
            self.history.record(self.path, data, source="seen")
        return doc

    def memory_text(self) -> str:
        """memory/MEMORY.md as text ("" when missing), for the "already known to Dream" check."""
        data, _stamp = self.workspace.read(MEMORY_MD)
        return (data or b"").decode("utf-8-sig", errors="replace")

    def check(self, text: str, doc: KeepDoc | None = None) -> KeepCheck:
        """What keeping ``text`` would find (triage, duplicates, MEMORY.md), writing nothing."""
        return self._check(self._clean(text), doc if doc is not None else self.load())

    def _check(self, fact: str, doc: KeepDoc) -> KeepCheck:
        """:func:`check_fact` of an already cleaned ``fact`` against ``doc``, MEMORY.md and the projects."""
        return check_fact(
            fact, doc, self.memory_text(), known_projects=self.workspace.projects(), threshold=self.fuzzy_threshold
        )

    @staticmethod
    def _clean(text: str) -> str:
        fact = clean_fact(text)
        if not fact:
            raise InvalidInput('What should I remember? Give the fact to keep, for example: keepgui keep "Vegetarian"')
        if normalise(fact) in _VAGUE:
            raise InvalidInput(f"`{fact}` is too vague to keep; say the concrete fact to remember")
        return fact

    # ---------------------------------------------------------------- writing

    def _write(self, before: KeepDoc, after: KeepDoc) -> KeepDoc:
        try:
            stamp = self.workspace.write(KEEP_MD, after.to_bytes(), expect=before.stamp)
        except Conflict:
            after, stamp, base = self._write_rebased(before, after)
        else:
            base = (before.to_bytes(), before.stamp)
        self.history.record(self.path, after.to_bytes(), source="saved")
        self.writes.append((base, (after.to_bytes(), stamp)))
        return after.with_stamp(self.path, stamp)

    def _write_rebased(self, before: KeepDoc, after: KeepDoc) -> tuple[KeepDoc, fsio.Stamp, tuple[bytes, fsio.Stamp]]:
        """The write of ``after`` refused because keep.md changed since ``before`` was read: when the
        other program only **added lines at the end** (nanobot's keep skill does), the same change is
        made on the file as it is now, those lines kept after it — read and written at once, so the
        moment another write can slip in is a short one; tried a few times. Anything else (a line
        changed or removed, or the added lines already hold this change) raises the Conflict."""
        old, mine = before.to_bytes(), after.to_bytes()
        for _attempt in range(3):
            data, stamp = self.workspace.read(KEEP_MD, settled=True, before=len(old))
            now = data or b""
            if not now.startswith(old) or (old and not old.endswith(b"\n")):
                break
            theirs = now[len(old) :]
            ours = mine[len(old) :] if mine.startswith(old) else b""
            if ours and ours in theirs:
                break  # it is there already: the caller's next try sees that
            merged = now + ours if ours else mine + theirs
            if not merged.endswith(b"\n") and ours:
                break
            try:
                done = self.workspace.write(KEEP_MD, merged, expect=stamp)
            except Conflict:
                old = now  # still only appended to? look again from what was read
                mine = merged
                continue
            return KeepDoc.parse(merged, self.path, done), done, (now, stamp)
        raise Conflict(self.path, before.stamp, fsio.current_stamp(self.path))

    def _log_removal(self, doc: KeepDoc, entry: Entry, reason: str) -> RemovedEntry:
        before, after = doc.neighbours(entry)
        return self.history.log_removed(
            path=self.path,
            workspace=self.workspace.root,
            text=entry.text,
            raw=entry.raw,
            line=entry.line,
            number=entry.number,
            before=before.text if before else None,
            after=after.text if after else None,
            reason=reason,
        )

    def _write_with_removals(
        self, before: KeepDoc, after: KeepDoc, removals: list[tuple[Entry, str]]
    ) -> tuple[KeepDoc, tuple[RemovedEntry, ...]]:
        logged = [self._log_removal(before, entry, reason) for entry, reason in removals]
        try:
            return self._write(before, after), tuple(logged)
        except BaseException:
            for record in logged:  # the removal did not happen: "unforget" must not offer it
                self.history.cancel_removed(record)
            raise

    @staticmethod
    def _tried(expect: fsio.Stamp | None, attempt: Callable[[], _R]) -> _R:
        """``attempt()``, tried again (:func:`keepgui.core.fsio.retrying`) when another program's write
        got in between — unless the caller gave the stamp of what the person saw (``expect``): a
        conflict with that is the person's to look at."""
        return attempt() if expect is not None else fsio.retrying(attempt)

    def add(
        self, text: str, *, force: bool = False, replace: bool = False, expect: fsio.Stamp | None = None
    ) -> KeepResult:
        """Keep a fact (see the module doc for the protocol), tried again a few times when nanobot's own
        write gets in between (:meth:`_tried`)."""
        return self._tried(expect, lambda: self._add(text, force=force, replace=replace, expect=expect))

    def _add(
        self, text: str, *, force: bool = False, replace: bool = False, expect: fsio.Stamp | None = None
    ) -> KeepResult:
        """Keep a fact (see the module doc for the protocol).

        ``force``: keep it even when triage suggests elsewhere or an entry
        already contains it (as a variant); an identical entry is never added
        twice. ``replace``: replace the entries the new fact contains (the first
        in place, the others removed; all logged for undo).
        """
        fact = self._clean(text)
        doc = self.load(expect=expect)
        found = self._check(fact, doc)
        notices = self._notices(found)

        def result(
            outcome: str,
            written: bool,
            message: str,
            entry: Entry | None = None,
            new_doc: KeepDoc | None = None,
            replaced: Iterable[RemovedEntry] = (),
            extra: Iterable[Notice] = (),
        ) -> KeepResult:
            """The KeepResult of this call, with the compaction warning after a write."""
            final = new_doc or doc
            if written and final.compaction_due:
                extra = (
                    *extra,
                    Notice(
                        "compaction-due",
                        "warning",
                        f"keep.md has {final.line_count} lines, over the {SOFT_CAP}-line cap: "
                        f"compaction is due (target about {COMPACTION_TARGET})",
                    ),
                )
            return KeepResult(
                outcome,
                written,
                fact,
                self.path,
                message,
                found.triage,
                entry,
                found.contains,
                tuple(replaced),
                found.near,
                found.memory,
                (*notices, *extra),
                final.counts(),
                final,
            )

        if found.identical is not None:
            return result(
                ALREADY_KEPT, False, f"already kept as {_quote(found.identical)}; nothing written", found.identical
            )
        if found.contained_in and not force:
            return result(
                ALREADY_KEPT,
                False,
                f"already kept: {_quote(found.contained_in[0])} contains it; nothing written "
                "(force to keep it as a variant)",
                found.contained_in[0],
            )
        extra: list[Notice] = []
        if found.triage.verdict != KEEP:
            if not force:
                return result(
                    REDIRECTED, False, f"not written: {found.triage.reason}. Keep it in keep.md anyway with force"
                )
            extra.append(
                Notice(
                    "triage-overridden", "info", f"kept although it looks like it belongs in {found.triage.destination}"
                )
            )
        if found.contained_in:
            extra.append(Notice("variant", "info", f"kept as a variant of {_quote(found.contained_in[0])}"))
        if found.contains and replace:
            first, *others = found.contains
            new_doc = doc.replace_entry(first.id, fact)
            # by line, bottom up: ids of identical entries shift once the first is rewritten
            for other in sorted(others, key=lambda e: e.line, reverse=True):
                new_doc = new_doc.remove_line(other.line)
            removals = [(first, "replaced"), *((o, "replaced") for o in others)]
            written, logged = self._write_with_removals(doc, new_doc, removals)
            entry = next((e for e in written.entries if e.line == first.line), None)
            names = ", ".join(_quote(e) for e in found.contains)
            return result(REPLACED, True, f"replaced {names} with `{fact}`", entry, written, logged, extra)
        if found.contains and not force:
            names = ", ".join(_quote(e) for e in found.contains)
            return result(
                REPLACE_OFFERED,
                False,
                f"not written: the new fact contains {names}; replace it, or force to keep both",
                found.contains[0],
            )
        if found.contains:
            extra.append(Notice("variant", "info", f"kept next to {_quote(found.contains[0])}, which it contains"))
        new_doc = doc.append(fact)
        written = self._write(doc, new_doc)
        entry = written.entries[-1] if written.entries else None
        entry = next((e for e in reversed(written.entries) if e.key == normalise(fact)), entry)
        return result(KEPT, True, f"kept: - {fact}", entry, written, (), extra)

    def _notices(self, found: KeepCheck) -> list[Notice]:
        notices = []
        for near in found.near:
            notices.append(Notice("near-duplicate", "warning", f"near-duplicate: {near.describe(_quote(near.entry))}"))
        for match in found.memory:
            notices.append(Notice("in-memory-md", "warning", f"already in MEMORY.md (line {match.line}): {match.text}"))
        if found.words > MAX_WORDS:
            notices.append(
                Notice("long", "warning", f"{found.words} words: keep.md entries are terse (5–{MAX_WORDS} words)")
            )
        return notices

    def edit(self, target: str | int, text: str, *, expect: fsio.Stamp | None = None) -> KeepResult:
        """Rewrite one entry as ``- <text>`` in place; the old wording is logged (restorable)."""
        named = [target]
        return self._tried(expect, lambda: self._edit(named, text, expect=expect))

    def _found(self, doc: KeepDoc, named: list[str | int]) -> Entry:
        """The entry ``named[0]`` names in ``doc``; ``named`` then holds its id, so that a try made again
        after another program's write finds that entry, never whichever now has its number. Gone by
        then: the conflict stands."""
        first = len(named) == 1
        try:
            entry = doc.find(named[-1])
        except (NotFound, InvalidInput):
            if first:
                raise
            raise Conflict(self.path, None, doc.stamp) from None
        named.append(entry.id)
        return entry

    def _edit(self, named: list[str | int], text: str, *, expect: fsio.Stamp | None) -> KeepResult:
        fact = self._clean(text)
        doc = self.load(expect=expect)
        entry = self._found(doc, named)
        new_doc = doc.replace_entry(entry.id, fact)
        written, logged = self._write_with_removals(doc, new_doc, [(entry, "edited")])
        new_entry = next((e for e in written.entries if e.line == entry.line), None)
        return KeepResult(
            REPLACED,
            True,
            fact,
            self.path,
            f"entry {entry.number} now reads `{fact}`",
            triage(fact, self.workspace.projects()),
            new_entry,
            (entry,),
            logged,
            counts=written.counts(),
            doc=written,
        )

    def remove(self, target: str | int, *, expect: fsio.Stamp | None = None, reason: str = "forget") -> RemoveResult:
        """Remove one entry (by id, number or text); logged first so :meth:`unforget` can undo it."""
        named = [target]
        return self._tried(expect, lambda: self._remove(named, expect=expect, reason=reason))

    def _remove(self, named: list[str | int], *, expect: fsio.Stamp | None, reason: str) -> RemoveResult:
        doc = self.load(expect=expect)
        entry = self._found(doc, named)
        written, logged = self._write_with_removals(doc, doc.remove_entry(entry.id), [(entry, reason)])
        return RemoveResult(entry, logged[0], self.path, written.counts(), written)

    def removed(self, include_restored: bool = False) -> list[RemovedEntry]:
        """Entries removed from this keep.md by keepgui, oldest first."""
        return self.history.removed(self.path, include_restored=include_restored)

    def unforget(self, *, expect: fsio.Stamp | None = None) -> RestoreResult:
        """Put back the most recently removed entry that is not back yet."""
        last = self.history.last_removed(self.path)
        if last is None:
            raise NotFound(f"nothing to unforget: keepgui removed no entry of {self.path} that is not back already")
        return self.restore(last, expect=expect)

    def restore(self, removed: RemovedEntry | str, *, expect: fsio.Stamp | None = None) -> RestoreResult:
        """Put a removed entry back where it was: after the entry that preceded it, else before
        the one that followed it, else at its old line. Its line is restored exactly as it was."""
        return self._tried(expect, lambda: self._restore(removed, expect=expect))

    def _restore(self, removed: RemovedEntry | str, *, expect: fsio.Stamp | None) -> RestoreResult:
        record = removed if isinstance(removed, RemovedEntry) else self.history.get_removed(removed)
        if file_key(self.path) != record.path:
            raise InvalidInput(f"that entry was removed from {record.path}, not from {self.path}")
        doc = self.load(expect=expect)
        key = normalise(record.text)
        present = next((e for e in doc.entries if e.key == key), None)
        if present is not None:
            self.history.mark_restored(record)
            return RestoreResult(
                record,
                False,
                present,
                self.path,
                f"`{record.text}` is already in keep.md as {_quote(present)}; nothing written",
                doc.counts(),
                doc,
            )
        index = self._restore_index(doc, record)
        new_doc = doc.insert_line(index, record.raw)
        written = self._write(doc, new_doc)
        self.history.mark_restored(record)
        entry = next((e for e in written.entries if e.line == index), None)
        return RestoreResult(
            record, True, entry, self.path, f"restored `{record.text}` at line {index + 1}", written.counts(), written
        )

    @staticmethod
    def _restore_index(doc: KeepDoc, record: RemovedEntry) -> int:
        entries = doc.entries
        if record.before is not None:
            key = normalise(record.before)
            match = next((e for e in entries if e.key == key), None)
            if match is not None:
                return match.line + 1
        if record.after is not None:
            key = normalise(record.after)
            match = next((e for e in entries if e.key == key), None)
            if match is not None:
                return match.line
        return min(record.line, len(doc.lines))
