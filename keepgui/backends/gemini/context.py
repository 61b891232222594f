"""What the next Gemini CLI session launched in a folder is given from memory, exactly (no Qt).

Gemini sends memory as two ``<loaded_context>`` elements (spec §6):

* ``system_context`` — the last thing of the system instruction: the global tier alone
  (``<loaded_context>\\n{G}\\n</loaded_context>``, "string form"), or, once the private tier has text,
  ``<global_context>`` (when there is global text) and ``<user_project_memory>`` (with its two index
  lines) inside the element ("object form"). The whole system instruction then has every run of three
  or more ``\\n`` made ``\\n\\n``, the element included.
* ``session_context`` — inside the first user turn's ``<session_context>``: ``<extension_context>`` and
  ``<project_context>`` inside the element (each only when it has text); never collapsed.

Each tier's text is its files' blocks (``--- Context from: <path> ---`` … ``--- End of Context from:
<path> ---``, the file's processed text trimmed as JavaScript trims, empty files left out) joined by
a blank line. Either element is null when its tiers are empty. The MCP servers' instructions Gemini
appends to the project tier are not known to keepgui (none are configured in the comparisons).

:func:`session_context` reads everything and writes nothing — not even ``projects.json``: for a folder
Gemini has not seen, the private folder is the one its first session would claim.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from keepgui.backends.gemini import CHECKED_VERSION
from keepgui.backends.gemini.discovery import (
    EMPTY,
    EXTENSION,
    GLOBAL,
    LOADED,
    PRIVATE,
    PROJECT,
    Discovery,
    MemoryFile,
    discover,
)
from keepgui.backends.gemini.imports import describe_token
from keepgui.backends.gemini.jstext import collapse_blank_runs, js_trim
from keepgui.backends.gemini.layout import GeminiEnv
from keepgui.core.errors import NotFound
from keepgui.core.pathmap import LOCAL, PathMap

PRIVATE_HEAD = "--- Private Project Memory Index (private, not committed to repo) ---"
PRIVATE_TAIL = "--- End Private Project Memory Index ---"

TAKES_EFFECT = (
    "A running Gemini CLI session keeps what it loaded at its start (until /memory reload for the system "
    "part); an edit shows in the next session. A running session may also write its own stale copy of a "
    "file over your edit: keepgui's review shows what was lost and restores it."
)

TOKEN_BYTES = 4
"""A rough estimate: four bytes of UTF-8 text a token."""


def block(path: str, text: str) -> str | None:
    """One file's block, or None when its text is empty after trimming."""
    trimmed = js_trim(text)
    if not trimmed:
        return None
    return f"--- Context from: {path} ---\n{trimmed}\n--- End of Context from: {path} ---"


def tier_text(files: Sequence[MemoryFile], paths: PathMap = LOCAL) -> str:
    """The blocks of a tier's files, joined by a blank line ("" when none has text); each file named as
    the machine Gemini runs on names it (``paths``)."""
    blocks = [block(paths.shown(f.path), f.processed.text) for f in files if f.processed is not None]
    return "\n\n".join(b for b in blocks if b is not None)


def system_element(global_text: str, private_text: str) -> str | None:
    """The system instruction's ``<loaded_context>`` element (collapsed as Gemini collapses it), or None."""
    if not js_trim(private_text):
        trimmed = js_trim(global_text)
        return collapse_blank_runs(f"<loaded_context>\n{trimmed}\n</loaded_context>") if trimmed else None
    sections = []
    if js_trim(global_text):
        sections.append(f"<global_context>\n{js_trim(global_text)}\n</global_context>")
    sections.append(
        f"<user_project_memory>\n{PRIVATE_HEAD}\n{js_trim(private_text)}\n{PRIVATE_TAIL}\n</user_project_memory>"
    )
    return collapse_blank_runs("<loaded_context>\n" + "\n".join(sections) + "\n</loaded_context>")


def session_element(extension_text: str, project_text: str) -> str | None:
    """The first user turn's ``<loaded_context>`` element, or None."""
    sections = []
    if js_trim(extension_text):
        sections.append(f"<extension_context>\n{js_trim(extension_text)}\n</extension_context>")
    if js_trim(project_text):
        sections.append(f"<project_context>\n{js_trim(project_text)}\n</project_context>")
    return "<loaded_context>\n" + "\n".join(sections) + "\n</loaded_context>" if sections else None


def size_of(text: str | None) -> int:
    """UTF-8 bytes of a text (0 for None)."""
    return len(text.encode("utf-8", errors="surrogatepass")) if text else 0


def tokens_of(size: int) -> int:
    """A rough token estimate for ``size`` bytes."""
    return (size + TOKEN_BYTES - 1) // TOKEN_BYTES


@dataclass(frozen=True)
class Part:
    """One named part of what the session sees: ``name`` (``global``, ``private``, ``extension``,
    ``project``), where it goes, its exact tier text, and its files."""

    name: str
    where: str
    text: str
    files: tuple[str, ...]

    @property
    def size(self) -> int:
        """UTF-8 bytes."""
        return size_of(self.text)


@dataclass(frozen=True)
class GeminiContext:
    """What a session launched in ``cwd`` is given (see the module docstring), with how it was found."""

    discovery: Discovery
    parts: tuple[Part, ...]
    system_context: str | None
    session_context: str | None
    notes: tuple[str, ...]
    gemini_version: str = CHECKED_VERSION

    @property
    def cwd(self) -> str:
        """The launch folder (its real path)."""
        return self.discovery.cwd

    @property
    def sent_bytes(self) -> int:
        """Bytes of both elements: what every request of the session carries."""
        return size_of(self.system_context) + size_of(self.session_context)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What to tell a person beside the parts (when an edit takes effect, trust, what was unreadable)."""
        return self.notes + tuple(self.discovery.problems)

    def named_parts(self) -> dict[str, str | None]:
        """``system_context`` (the system instruction's element) and ``session_context`` (the first user
        turn's), exactly; None where the element is absent."""
        return {"system_context": self.system_context, "session_context": self.session_context}

    def describe(self) -> str:
        """The report for a person: the files in order with what each costs and what its ``@`` words
        become, what loads later or never and why, then both elements exactly."""
        d = self.discovery
        lines = [f"Gemini CLI (checked against {self.gemini_version}) · session started in {d.cwd}"]
        lines.append(f"  private memory {d.private.memory} ({d.private.how})")
        lines.append(f"  trust: {'taken as trusted' if d.trusted else 'untrusted'} · Gemini's verdict: {d.trust.why}")
        loaded = [f for f in d.files if f.state in (LOADED, EMPTY)]
        lines += ["", f"Loaded at session start, in this order ({len(loaded)}):" if loaded else "Nothing loads."]
        for number, f in enumerate(loaded, start=1):
            sent = (
                size_of(block(self.discovery.env.paths.shown(f.path), f.processed.text))
                if f.processed is not None
                else 0
            )
            cost = " · empty: no block" if f.state == EMPTY else f" · {sent:,} bytes sent ≈ {tokens_of(sent):,} tokens"
            lines += [f"  {number:>2}. {f.path}", f"      {f.tier} · {f.size:,} bytes on disk{cost}"]
            tokens = f.processed.flagged() if f.processed is not None else []
            lines += [f"      {describe_token(t)}" for t in tokens if t.outcome != "code"]
        for title, files in (("Loads later:", d.later()), ("Not loaded:", d.never())):
            if files:
                lines += ["", title] + [f"  {f.path}: {f.reason}" for f in files]
        for label, element in (("system instruction", self.system_context), ("first user turn", self.session_context)):
            head = (
                f"--- the {label}'s <loaded_context>, exactly ---" if element else f"--- no element in the {label} ---"
            )
            lines += ["", head] + ([element] if element else [])
        lines += ["", f"{self.sent_bytes:,} bytes ≈ {tokens_of(self.sent_bytes):,} tokens with every request"]
        return "\n".join(lines)

    def part(self, name: str) -> Part:
        """One part by name."""
        return next(p for p in self.parts if p.name == name)

    def to_obj(self) -> dict[str, Any]:
        """For ``keepgui context --agent gemini --json``."""
        found = self.discovery

        def file_obj(f: MemoryFile) -> dict[str, Any]:
            tokens = [] if f.processed is None else f.processed.flagged()
            return {
                "path": f.path,
                "tier": f.tier,
                "state": f.state,
                "reason": f.reason,
                "bytes": f.size,
                "sent_bytes": size_of(block(self.discovery.env.paths.shown(f.path), f.processed.text))
                if f.processed is not None
                else 0,
                "extension": f.extension or None,
                "imports": [
                    {
                        "line": t.line,
                        "column": t.column,
                        "token": "@" + t.path,
                        "outcome": t.outcome,
                        "detail": t.detail,
                    }
                    for t in tokens
                ],
            }

        return {
            "agent": "gemini",
            "gemini_version": self.gemini_version,
            "project": found.cwd,
            "gemini_home": found.env.home,
            "gemini_dir": found.env.gemini_dir,
            "trusted": found.trusted,
            "trust": {"verdict": found.trust.trusted, "why": found.trust.why},
            "context_file_names": list(found.settings.names),
            "auto_memory": found.settings.auto_memory,
            "settings_files": list(found.settings.files),
            "workspace_settings": found.settings.workspace_file or None,
            "import_format": found.settings.import_format,
            "boundary_markers": list(found.settings.boundary_markers),
            "workspace_directories": list(found.workspace),
            "private_folder": {
                "slug": found.private.slug,
                "folder": found.private.folder,
                "memory_dir": found.private.memory,
                "how": found.private.how,
                "note": found.private.note,
            },
            "system_context": self.system_context,
            "session_context": self.session_context,
            "parts": {
                p.name: {"where": p.where, "text": p.text, "bytes": p.size, "files": list(p.files)} for p in self.parts
            },
            "sent_bytes": self.sent_bytes,
            "sent_tokens_estimate": tokens_of(self.sent_bytes),
            "files": [file_obj(f) for f in found.files],
            "extensions": [{"name": n, "active": a, "problem": p or None} for n, a, p in found.extensions],
            "notes": list(self.notes),
            "problems": list(found.problems),
        }


WHERE = {
    GLOBAL: "system instruction",
    PRIVATE: "system instruction",
    EXTENSION: "first user turn",
    PROJECT: "first user turn",
}


def assemble(found: Discovery) -> GeminiContext:
    """The two elements and the named parts of a discovery."""
    parts = []
    for name in (GLOBAL, PRIVATE, EXTENSION, PROJECT):
        files = [f for f in found.tier(name) if f.state in (LOADED, EMPTY)]
        parts.append(
            Part(
                name, WHERE[name], tier_text(files, found.env.paths), tuple(f.path for f in files if f.state == LOADED)
            )
        )
    by = {p.name: p.text for p in parts}
    system = system_element(by[GLOBAL], by[PRIVATE])
    session = session_element(by[EXTENSION], by[PROJECT])
    notes = [TAKES_EFFECT]
    if found.private.note:
        notes.append(found.private.note)
    if not found.trusted:
        notes.append("shown as for an untrusted folder: no project file and no workspace settings load")
    elif found.trust.trusted is not True:
        notes.append(f"taken as trusted; Gemini's own verdict now: {found.trust.why}")
    if by[PROJECT]:
        notes.append("the project part is also sent to Gemini's routing model with every request")
    return GeminiContext(found, tuple(parts), system, session, tuple(notes))


def session_context(
    project: str, env: GeminiEnv | None = None, *, trusted: bool | None = True, with_later: bool = True
) -> GeminiContext:
    """What a session launched in ``project`` is given (``env``: this process's environment by default).

    ``trusted``: True (the default) takes the folder as trusted, False as untrusted, None as Gemini
    decides now. Nothing is written.
    """
    if not os.path.isdir(project):
        raise NotFound(f"{project}: no such folder; give the folder a Gemini CLI session starts in with --project DIR")
    return assemble(discover(project, env, trusted=trusted, with_later=with_later))


@dataclass(frozen=True)
class GeminiPreview:
    """The window's preview: both elements exactly (``system``, ``session``), and ``text``, the two shown
    one after the other under a heading line each (the generic view shows ``text``)."""

    context: GeminiContext
    system: str | None
    session: str | None
    text: str
    notes: tuple[str, ...]

    @property
    def sent_bytes(self) -> int:
        """Bytes of both elements."""
        return self.context.sent_bytes


def preview_of(context: GeminiContext) -> GeminiPreview:
    """The preview of a context (see :class:`GeminiPreview`)."""
    parts = []
    for label, element, names in (
        ("End of the system instruction (global and private memory)", context.system_context, (GLOBAL, PRIVATE)),
        ("First user turn (extension and project memory)", context.session_context, (EXTENSION, PROJECT)),
    ):
        files = sum(len(context.part(n).files) for n in names)
        size = size_of(element)
        head = f"── {label} · {files} file{'s' if files != 1 else ''} · {size:,} bytes ≈ {tokens_of(size):,} tokens"
        parts.append(head + "\n" + (element if element is not None else "(nothing: no <loaded_context> element)"))
    return GeminiPreview(context, context.system_context, context.session_context, "\n\n".join(parts), context.notes)
