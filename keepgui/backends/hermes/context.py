"""What the next Hermes session sees of its memory — exact — and what a resumed session still sees (no Qt).

Hermes builds a session's system prompt once, from three tiers joined by a blank line; the last
tier starts with the memory blocks: the MEMORY block (when ``memory.memory_enabled``), then the
USER PROFILE block (when ``memory.user_profile_enabled``), each present only when its store has
entries, joined by ``"\\n\\n"``, followed by an external provider's block if one is configured
and then ``Conversation started: …``. :func:`memory_prompt` is that memory part, character for
character (None when neither block is in the prompt); nothing in it depends on the working
folder, the model or the date. A session has no memory block at all when its config turns both
switches off, when either file is not valid UTF-8, or when a limit in the config is not a number.

A resumed session replays the prompt stored in ``state.db`` (:mod:`.statedb`);
:func:`memory_part` cuts the memory part out of such a stored prompt (anchored on a block header,
so a ``═`` line in SOUL.md or a context file is not mistaken for one), and
:func:`resumed_sessions` sets each stored part beside the next new session's: their difference is
exactly the memory changes that session will not see.

The project context file a session picks (:func:`project_context`) is the first of
``.hermes.md`` / ``HERMES.md`` (from the session's folder up to its git root; the folder alone
when there is no git root), then ``AGENTS.md`` / ``agents.md``, ``CLAUDE.md`` / ``claude.md``,
``.cursorrules`` (and ``.cursor/rules/*.mdc``) in the folder itself — a file that is empty after
stripping does not count. Facts from hermes-agent 0.19.0 (``agent/system_prompt.py``,
``agent/prompt_builder.py``), proved by ``tests/backends/hermes/test_hermes_compare.py``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keepgui.backends.hermes import CHECKED_VERSION
from keepgui.backends.hermes.entries import LABELS, MEMORY, RULE, USER, FileState, read_state
from keepgui.backends.hermes.home import Settings, load_settings, resolve_home
from keepgui.backends.hermes.statedb import StoredSession, read_sessions
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

MEMORIES = "memories"
FILE_LIMIT = 64 * 1024 * 1024
"""keepgui reads no memory file larger than this."""

STARTED = "\n\nConversation started: "
"""What follows the memory part in every prompt (with no external memory provider)."""


def read_file(home: str, target: str) -> tuple[bytes | None, fsio.Stamp]:
    """The bytes and stamp of ``<home>/memories/<MEMORY|USER>.md`` (None: missing, or not a file)."""
    from keepgui.backends.hermes.entries import FILE_NAMES

    path = os.path.join(home, MEMORIES, FILE_NAMES[target])
    try:
        return fsio.read_stamped(path, limit=FILE_LIMIT)
    except (OSError, KeepguiError):
        return None, fsio.Stamp.missing()  # Hermes reads a folder or an unreadable file as no entries


def read_states(home: str, settings: Settings) -> dict[str, FileState]:
    """Both stores of ``home`` as read now, with the limits of ``settings``."""
    out = {}
    usable = not settings.limit_problem()
    for target in (MEMORY, USER):
        data, _stamp = read_file(home, target)
        out[target] = read_state(target, data, settings.limit(target) if usable else settings.int_limit(target))
    return out


@dataclass(frozen=True)
class MemoryPrompt:
    """The memory part of the next new session's prompt, and why a block is missing."""

    text: str | None
    states: Mapping[str, FileState]
    settings: Settings
    reasons: tuple[str, ...] = ()


def memory_prompt_of(states: Mapping[str, FileState], settings: Settings) -> MemoryPrompt:
    """The memory part from stores already read (see the module docstring)."""
    reasons: list[str] = []
    if not settings.store_loaded:
        return MemoryPrompt(None, states, settings, ("memory is off in config.yaml: no memory block",))
    bad = [s for s in states.values() if s.undecodable]
    if bad:
        return MemoryPrompt(None, states, settings, tuple(s.problem for s in bad))
    problem = settings.limit_problem()
    if problem:
        return MemoryPrompt(None, states, settings, (problem,))
    blocks = []
    for target, enabled, what in (
        (MEMORY, settings.memory_enabled, "memory notes are off"),
        (USER, settings.user_profile_enabled, "the user profile is off"),
    ):
        state = states[target]
        if not enabled:
            reasons.append(f"{state.name} is not loaded: {what} in config.yaml")
        elif not state.entries:
            reasons.append(f"{state.name} has no entries: no block")
        else:
            blocks.append(state.block())
    return MemoryPrompt("\n\n".join(blocks) if blocks else None, states, settings, tuple(reasons))


def memory_prompt(home: str, environ: Mapping[str, str] | None = None) -> MemoryPrompt:
    """The memory part of a new session's prompt in ``home``."""
    settings = load_settings(home, environ)
    return memory_prompt_of(read_states(home, settings), settings)


def memory_part(prompt: str | None) -> str | None:
    """The memory part of a whole stored prompt (None when it has no memory block)."""
    if not prompt:
        return None
    end = prompt.rfind(STARTED)
    if end < 0:
        end = len(prompt)
    head = prompt[:end]
    starts = [head.find(f"{RULE}\n{LABELS[t]} [") for t in (MEMORY, USER)]
    found = [s for s in starts if s >= 0]
    return head[min(found) :] if found else None


# ---------------------------------------------------------------------- documents a session reads


def git_root(folder: str) -> str | None:
    """The nearest folder from ``folder`` upwards that holds ``.git`` (None: none)."""
    current = os.path.realpath(folder)
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _text(path: str) -> str | None:
    try:
        data, _stamp = fsio.read_stamped(path, limit=FILE_LIMIT)
    except (OSError, KeepguiError):
        return None
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class ProjectFile:
    """The project context file a session started in ``folder`` loads (``path`` None: none), and why."""

    folder: str
    path: str | None
    why: str
    considered: tuple[str, ...] = ()


def project_context(folder: str) -> ProjectFile:
    """Which project context file a session started in ``folder`` picks (see the module docstring)."""
    cwd = os.path.realpath(folder)
    considered: list[str] = []
    root = git_root(cwd)
    dirs = [cwd]
    if root is not None:
        probe = cwd
        while probe != root and os.path.dirname(probe) != probe:
            probe = os.path.dirname(probe)
            dirs.append(probe)
    hermes_md = None
    for directory in dirs:
        for name in (".hermes.md", "HERMES.md"):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                hermes_md = candidate
                break
        if hermes_md:
            break
    if hermes_md is not None:
        text = _text(hermes_md)
        if text is not None and text.strip():
            where = "up to the git root" if root else "in the folder (no git root: no walk up)"
            return ProjectFile(cwd, hermes_md, f"the first .hermes.md / HERMES.md {where}", tuple(considered))
        considered.append(f"{hermes_md}: empty or unreadable, skipped")
    for names, what in ((("AGENTS.md", "agents.md"), "AGENTS.md"), (("CLAUDE.md", "claude.md"), "CLAUDE.md")):
        for name in names:
            candidate = os.path.join(cwd, name)
            if os.path.exists(candidate):
                text = _text(candidate)
                if text is not None and text.strip():
                    return ProjectFile(cwd, candidate, f"{what} in the session's folder", tuple(considered))
                considered.append(f"{candidate}: empty or unreadable, skipped")
    rules = os.path.join(cwd, ".cursorrules")
    mdc = os.path.join(cwd, ".cursor", "rules")
    has_mdc = os.path.isdir(mdc) and any(n.endswith(".mdc") for n in os.listdir(mdc))
    if os.path.exists(rules) or has_mdc:
        return ProjectFile(cwd, rules, ".cursorrules / .cursor/rules in the session's folder", tuple(considered))
    return ProjectFile(cwd, None, "no .hermes.md, HERMES.md, AGENTS.md, CLAUDE.md or .cursorrules", tuple(considered))


# ---------------------------------------------------------------------- resumed sessions


@dataclass(frozen=True)
class Resumed:
    """One stored session: the memory part it replays when resumed, and how it differs from a new one's."""

    session: StoredSession
    stored: str | None
    diff: str
    rebuilds: bool

    @property
    def same(self) -> bool:
        """True when resuming it shows the same memory as a new session would."""
        return not self.diff

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``."""
        s = self.session
        return {
            "id": s.id,
            "source": s.source,
            "model": s.model,
            "title": s.title,
            "started_at": s.started_at,
            "ended_at": s.ended_at,
            "end_reason": s.end_reason,
            "parent_session_id": s.parent or None,
            "memory_prompt": self.stored,
            "rebuilds": self.rebuilds,
            "unseen_changes": self.diff,
        }


def unseen_diff(stored: str | None, current: str | None, session: str = "the session") -> str:
    """The unified diff from what a resumed session holds to what a new one would get ("" when equal)."""
    if stored == current:
        return ""
    before = (stored or "").splitlines(keepends=True)
    after = (current or "").splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, f"{session} (stored)", "the next new session", n=1)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def resumed_sessions(home: str, current: str | None, limit: int = 5) -> tuple[list[Resumed], str]:
    """The newest stored sessions with their memory part and the changes they will not see, and a
    problem sentence ("" when state.db could be read)."""
    try:
        sessions = read_sessions(home, limit)
    except KeepguiError as exc:
        return [], str(exc)
    out = []
    for s in sessions:
        stored = memory_part(s.system_prompt)
        rebuilds = not s.system_prompt  # an empty stored prompt is rebuilt from the files on resume
        diff = "" if rebuilds else unseen_diff(stored, current, f"session {s.id}")
        out.append(Resumed(s, stored, diff, rebuilds))
    return out, ""


# ---------------------------------------------------------------------- the whole context


@dataclass(frozen=True)
class SessionContext:
    """Everything ``keepgui context --agent hermes`` reports for one home and project folder."""

    home: str
    profile: str
    why: str
    project: ProjectFile
    prompt: MemoryPrompt
    resumed: tuple[Resumed, ...] = ()
    resumed_problem: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def text(self) -> str:
        """The memory part of the prompt, exactly ("" when neither block is in it): the preview's text."""
        return self.prompt.text or ""

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a person should know beside the parts (a profile that does not exist...)."""
        return self.notes

    def named_parts(self) -> dict[str, str | None]:
        """``memory_prompt``: the memory part of a new session's system prompt, exactly (None: absent)."""
        return {"memory_prompt": self.prompt.text}

    def describe(self) -> str:
        """``keepgui context --agent hermes`` for a person."""
        from keepgui.backends.hermes.commands import context_lines

        return "".join(line + "\n" for line in context_lines(self))

    def to_obj(self) -> dict[str, Any]:
        """The JSON of ``keepgui context --agent hermes --json``."""
        states = self.prompt.states
        return {
            "agent": "hermes",
            "hermes_version": CHECKED_VERSION,
            "home": self.home,
            "profile": self.profile,
            "home_reason": self.why,
            "memory_prompt": self.prompt.text,
            "files": {
                state.name: {
                    "path": os.path.join(self.home, MEMORIES, state.name),
                    "exists": state.exists,
                    "entries": len(state.entries),
                    "header_count": state.header_count,
                    "tool_count": state.tool_count,
                    "limit": state.limit,
                    "blocked": [{"index": e.index, "findings": list(e.findings)} for e in state.blocked],
                    "problem": state.problem or None,
                    "drift": state.drift or None,
                }
                for state in states.values()
            },
            "settings": self.prompt.settings.effects(),
            "reasons": list(self.prompt.reasons),
            "project_context": self.project.path,
            "project_reason": self.project.why,
            "resumed_sessions": [r.to_obj() for r in self.resumed],
            "resumed_problem": self.resumed_problem or None,
            "notes": list(self.notes),
        }


def session_context(
    project: str, environ: Mapping[str, str] | None = None, *, home: str | None = None, sessions: int = 5
) -> SessionContext:
    """The context of a new session started in ``project`` (its home resolved from ``environ`` as Hermes
    resolves it, unless ``home`` is given), with the newest ``sessions`` stored sessions."""
    env = dict(os.environ if environ is None else environ)
    if home is None:
        found = resolve_home(env)
        home, profile, why = found.home, found.profile, found.why
        notes = (found.problem,) if found.problem else ()
    else:
        home, profile, why, notes = os.path.abspath(home), os.path.basename(home), "given", ()
    prompt = memory_prompt(home, env)
    resumed, problem = resumed_sessions(home, prompt.text, sessions) if sessions else ([], "")
    return SessionContext(home, profile, why, project_context(project), prompt, tuple(resumed), problem, notes)
