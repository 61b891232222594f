"""Where a fact belongs, per nanobot's keep skill: keep.md, AGENTS.md, a note, a reminder or a project
(no Qt). Every pattern is bounded: a fact is a line of someone else's file, and one token of 40,000
characters, or a line of megabytes, costs milliseconds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

KEEP, AGENTS, NOTE, REMIND, PROJECT = "keep", "agents", "note", "remind", "project"
VERDICTS = (KEEP, AGENTS, NOTE, REMIND, PROJECT)


@dataclass(frozen=True)
class Triage:
    """Where a fact belongs, and why.

    ``verdict`` is one of :data:`VERDICTS`; ``destination`` names where it goes
    (``keep.md``, ``AGENTS.md``, ``/note``, ``/remind``, ``projects/<slug>/``);
    ``project`` is the slug for a project verdict; ``reason`` is one sentence.
    """

    verdict: str
    reason: str
    destination: str = "keep.md"
    project: str | None = None

    def to_obj(self) -> dict[str, Any]:
        """``{verdict, reason, destination, project}``."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "destination": self.destination,
            "project": self.project,
        }


# Every pattern below is bounded (no two unbounded runs that can retry each other): a fact is a line
# of someone else's file, and one 40,000-character token must cost milliseconds, not seconds.
_EMAIL_RE = re.compile(r"[^\s@]{1,256}@[^\s@]{1,256}\.\w{1,63}")
"""An e-mail address within one word (only words holding an ``@`` are searched: see :func:`_without_email`)."""
_URL_RE = re.compile(
    r"https?://\S+|\bwww\.\S+|(?<![\w.-])[\w-]{1,63}(?:\.[\w-]{1,63}){0,8}\.(?:com|org|net|io|dev|app|ai|co|edu|gov|info|me|pt|de|uk)"
    r"(?:/\S*)?(?![\w])",
    re.IGNORECASE,
)
_LATER_RE = re.compile(
    r"\b(?:read|watch|try|test|check|listen to|look at|look into|explore|play|visit)\b[^.;]{0,200}?"
    r"\b(?:later|sometime|some day|someday|when (?:i|he|she|they) (?:have|has|get|gets) time)\b",
    re.IGNORECASE,
)
_NOTE_START_RE = re.compile(
    r"^(?:to[ -](?:read|try|watch|check)|reading list|watch ?list|bookmark|todo|to-do)\b", re.IGNORECASE
)
_NOTE_PHRASE_RE = re.compile(
    r"\b(?:check out|worth (?:reading|trying|watching|a look|a try)|wants? to (?:read|try|watch|check out)"
    r"|should (?:read|try|watch)|(?:article|paper|blog post|video|podcast|tutorial|talk|book) (?:about|on) .{1,200}? to (?:read|watch))\b",
    re.IGNORECASE,
)
_REMIND_RE = re.compile(
    r"\bremind(?:er|ers)?\b|\b(?:don'?t|do not) forget\b|\b(?:tomorrow|tonight)\b"
    r"|\bthis (?:morning|afternoon|evening|weekend)\b"
    r"|\bnext (?:week|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|\bin \d+ (?:minutes?|hours?|days?|weeks?)\b|\bdeadline\b|\bdue (?:on|by)\b",
    re.IGNORECASE,
)
_TASK_RE = re.compile(
    # verbs that are rarely nouns at the start of a fact ("Email inbox zero", "Book club" are facts)
    r"^(?:call|pay|buy|renew|send|submit|cancel|pick up|schedule|phone|water|feed|collect|reply to|follow up"
    r"|sign up for|register for)\b",
    re.IGNORECASE,
)
_WHEN_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b"
    r"|\b(?:on|by|before|until) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
    r"|\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:tember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.? \d{1,2}\b|\b\d{1,2} (?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?"
    r"|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b",
    re.IGNORECASE,
)
_PROJECT_RES = (
    # lower-case keyword only: "Ao 26 Vegan Food Project" is a restaurant's name, not a project scope
    re.compile(
        r"(?<![\w.-])(?:(?:in|for|on|of|at|inside) )?(?:the )?[`\"']?([A-Za-z0-9][\w.-]{0,99})[`\"']? "
        r"(?-i:project|repo|repository|codebase)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:project|repo|repository|codebase)[:\s]{1,8}[`\"']?([A-Za-z0-9][\w.-]{0,99})", re.IGNORECASE),
)
_NOT_PROJECT_NAMES = {
    "the",
    "a",
    "an",
    "my",
    "his",
    "her",
    "their",
    "our",
    "this",
    "that",
    "side",
    "pet",
    "work",
    "personal",
    "open",
    "source",
    "new",
    "old",
    "main",
    "any",
    "every",
    "each",
    "one",
    "is",
    "was",
    "are",
    "and",
    "or",
    "with",
    "at",
    "in",
    "on",
    "for",
    "to",
    "of",
}
_IMPERATIVE_RE = re.compile(
    r"^(?:do not|don't|dont|please|make sure|be sure|avoid|prefer|use|run|write|format|reply|respond|answer"
    r"|ask|add|put|stop|start|remember to|when (?:you|replying|writing|answering|coding|committing)"
    r"|before (?:you|committing|pushing|replying)|after (?:you|committing))\b",
    re.IGNORECASE,
)
_ALWAYS_NEVER_RE = re.compile(r"^(?:always|never)\s+([a-z'-]+)", re.IGNORECASE)
_YOU_RE = re.compile(r"\b(?:you|your|yourself)\b", re.IGNORECASE)
_AGENT_RE = re.compile(
    r"\b(?:the )?(?:agent|assistant|bot|nanobot)\b[^.;]{0,200}?\b(?:should|must|needs? to|has to|may not)\b"
    r"|\b(?:should|must)\b[^.;]{0,200}?\b(?:the )?(?:agent|assistant|bot|nanobot)\b",
    re.IGNORECASE,
)
_TOOLING_RE = re.compile(
    r"\b(?:commit messages?|conventional commits|pull requests?|code reviews?|unit tests?|run (?:the )?tests"
    r"|linters?|linting|formatters?|type hints|docstrings?|naming conventions?|coding conventions?|code style"
    r"|coding style|indentation|ci pipeline|git (?:commit|push|rebase|workflow))\b",
    re.IGNORECASE,
)
_THIRD_PERSON_START_RE = re.compile(r"^[A-Za-z][a-z'-]*(?<!s)s\b")


def slugify(name: str) -> str:
    """The ``projects/<slug>/`` folder name of a project name."""
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", name.casefold())).strip("-")


def _third_person(word: str) -> bool:
    # "uses", "drinks", "works" describe the user; "use", "discuss" (double s) are imperatives
    word = word.casefold()
    return len(word) > 2 and word.endswith("s") and not word.endswith("ss")


TRIAGE_CHARS = 2_000
"""How much of a fact triage reads: keep.md facts are 5–15 words; a line of megabytes is looked at
only this far (its length is a warning of its own)."""


def _without_email(text: str) -> str:
    """``text`` with its e-mail addresses replaced by a space; only words holding an ``@`` are searched,
    and the longest of those only as far as an address can reach, so one huge word costs little."""
    if "@" not in text:
        return text
    words = re.split(r"(\s+)", text)
    for n, word in enumerate(words):
        if "@" in word:
            at = word.index("@")
            if len(word) > 600:  # an address is at most 256 + 1 + 256 + 64: look around the first @ only
                head, near, tail = word[: max(0, at - 256)], word[max(0, at - 256) : at + 330], word[at + 330 :]
                words[n] = head + _EMAIL_RE.sub(" ", near) + tail
            else:
                words[n] = _EMAIL_RE.sub(" ", word)
    return "".join(words)


def triage(text: str, known_projects: tuple[str, ...] | list[str] = ()) -> Triage:
    """Decide where a (cleaned) fact belongs, per the keep skill's triage. Heuristics, in order:

    * ``note``: a link (URL or bare domain, not an e-mail address) — checked first;
    * ``remind``: reminder words (remind, don't forget, tomorrow, next week, in 3 days,
      deadline, due by) or a task verb at the start with a date/time (``Call the
      dentist on 2025-07-03``);
    * ``project``: ``in the X project/repo``, ``project X``, or the name of an
      existing ``projects/<slug>/`` folder;
    * ``agents``: an imperative at the agent (``Always``/``Never`` + a bare verb,
      ``Don't``, ``Use``, ``Reply``, ``When you``...), words addressed to the agent
      (``you``, ``the assistant should``), or tooling/workflow conventions
      (commit messages, linters, code style...) not phrased as a fact about the user;
    * ``note``: something to read, watch or try later, ``check out``, a to-do
      (a task verb without a date);
    * ``keep`` otherwise.
    """
    text = text[:TRIAGE_CHARS]  # a fact is terse: its first 2,000 characters decide (every pattern stays cheap)
    lowered = text.casefold()
    without_email = _without_email(text)
    url = _URL_RE.search(without_email)
    if url:
        return Triage(NOTE, f"contains a link ({url.group()}); links and reference material go to /note", "/note")
    remind = _REMIND_RE.search(text)
    if remind:
        return Triage(
            REMIND, f"reads like a reminder (`{remind.group()}`); scheduled reminders go to /remind", "/remind"
        )
    task = _TASK_RE.search(text)
    when = _WHEN_RE.search(text)
    if task and when:
        return Triage(
            REMIND,
            f"a task (`{task.group()}`) with a date or time (`{when.group()}`); scheduled reminders go to /remind",
            "/remind",
        )
    for pattern in _PROJECT_RES:
        for match in pattern.finditer(text):
            name = match.group(1).strip(".-")
            if name and name.casefold() not in _NOT_PROJECT_NAMES:
                slug = slugify(name)
                return Triage(
                    PROJECT,
                    f"scoped to the project `{name}`; project facts go to projects/{slug}/",
                    f"projects/{slug}/",
                    slug,
                )
    for slug in known_projects:
        spaced = slug.replace("-", " ")
        if re.search(rf"(?<![\w-]){re.escape(slug)}(?![\w-])", lowered) or (
            spaced != slug and re.search(rf"\b{re.escape(spaced)}\b", lowered)
        ):
            return Triage(
                PROJECT, f"mentions the project `{slug}` (projects/{slug}/ exists)", f"projects/{slug}/", slug
            )
    always = _ALWAYS_NEVER_RE.match(text)
    if always and not _third_person(always.group(1)):
        return Triage(
            AGENTS,
            f"a standing rule for the agent (`{always.group().strip()}`); rules about how the "
            "agent works go to AGENTS.md",
            "AGENTS.md",
        )
    imperative = _IMPERATIVE_RE.match(text)
    if imperative:
        return Triage(
            AGENTS,
            f"an instruction to the agent (starts with `{imperative.group()}`); rules about how "
            "the agent works go to AGENTS.md",
            "AGENTS.md",
        )
    addressed = _YOU_RE.search(text) or _AGENT_RE.search(text)
    if addressed:
        return Triage(
            AGENTS,
            f"addressed to the agent (`{addressed.group()}`); rules about how the agent works go to AGENTS.md",
            "AGENTS.md",
        )
    tooling = _TOOLING_RE.search(text)
    if tooling and not _THIRD_PERSON_START_RE.match(text):
        return Triage(
            AGENTS, f"a tooling or workflow convention (`{tooling.group()}`); conventions go to AGENTS.md", "AGENTS.md"
        )
    later = _LATER_RE.search(text) or _NOTE_START_RE.search(text) or _NOTE_PHRASE_RE.search(text)
    if later:
        return Triage(NOTE, f"something to read or try later (`{later.group()}`); that goes to /note", "/note")
    if task:
        return Triage(
            NOTE,
            f"a to-do (`{task.group()}`), not a durable fact; to-dos go to /note (or /remind with a date)",
            "/note",
        )
    return Triage(KEEP, "a durable fact, preference or decision about the user", "keep.md")
