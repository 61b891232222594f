"""The workspace's Markdown documents: Dream-managed MEMORY.md, USER.md, SOUL.md, and AGENTS.md.

Dream (nanobot's scheduled consolidation) owns ``memory/MEMORY.md``,
``USER.md`` and ``SOUL.md``: it rewrites them from the conversation history,
commits them to the workspace's git as ``dream: ...``, and nanobot's prompts
tell the agent not to touch them. A person still may, so keepgui opens them
read-write with a clear "managed by Dream" status (spec §5.5):

* saving one needs ``confirm_dream=True`` (the window asks first);
* before saving, :func:`pre_save_notices` warns when a Dream run may be in
  progress (a ``dream:*`` session file changed in the last minutes — a guess,
  nanobot has no lock file);
* after saving, the result warns that the next Dream commit folds the edit in
  and labels it Dream's, and that ``/dream-restore`` of an older commit
  overwrites it (when the workspace has Dream's git);
* each document says how much it adds to every turn's system prompt (bytes
  and estimated tokens), or why nanobot leaves it out. Since nanobot 0.3.5
  (PR #5622) Dream no longer gets the three files pasted with an 8,000
  character cap: it sees them whole, through that same prompt, so the size
  every turn pays for is what matters.

``AGENTS.md`` is the agent's rule document: Dream never edits it.

Every save re-reads the file and refuses (:class:`Conflict`) when it changed
since it was opened, records the version it replaces in keepgui's
:class:`~keepgui.core.history.History`, and keeps the file's BOM and (for a file
written with CRLF throughout) its line endings.

Checks across files (spec §5.6): USER.md should still point at keep.md
(:func:`keep_pointer`, :func:`add_keep_pointer` — a user decision, since
USER.md is Dream's); facts both in keep.md and in USER.md/MEMORY.md
(:func:`overlaps`); keep.md entries that triage elsewhere, above all rules
that belong in AGENTS.md (:func:`misplaced_entries`, :func:`move_to_agents`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from keepgui.backends.nanobot.context import Templates, bundled_templates, render_parts
from keepgui.backends.nanobot.keepmd import BOM, Entry, KeepDoc, contains, decode_text
from keepgui.backends.nanobot.triage import AGENTS, KEEP, Triage, triage
from keepgui.backends.nanobot.workspace import AGENTS_MD, MEMORY_MD, SOUL_MD, USER_MD, Notice, Workspace
from keepgui.backends.nanobot.writes import FUZZY_THRESHOLD, KeepStore, RemoveResult, line_key
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, NotFound
from keepgui.core.history import History, Version

DREAM_ACTIVITY_SECONDS = 600
"""A ``dream:*`` session file modified this recently suggests a Dream run in progress."""

KEEP_POINTER = "- Facts the user asked to keep are in keep.md (workspace root); read it every turn."
"""The line :func:`add_keep_pointer` appends to USER.md (keepgui's own wording)."""


@dataclass(frozen=True)
class DocumentKind:
    """What a document is: its name, its workspace path, who manages it and what it holds."""

    name: str
    rel: str
    managed_by_dream: bool
    role: str

    @property
    def status(self) -> str:
        """The status line the window shows."""
        if self.managed_by_dream:
            return "managed by Dream: Dream rewrites this file; edit with care"
        return "rules for the agent: Dream never edits this file"


DOCUMENTS = {
    "MEMORY.md": DocumentKind("MEMORY.md", MEMORY_MD, True, "long-term facts Dream distils from the history"),
    "USER.md": DocumentKind("USER.md", USER_MD, True, "who the user is: identity, preferences, habits, style"),
    "SOUL.md": DocumentKind("SOUL.md", SOUL_MD, True, "the agent's voice, principles and guardrails"),
    "AGENTS.md": DocumentKind("AGENTS.md", AGENTS_MD, False, "how the agent should work: conventions, tools"),
}
"""The documents keepgui opens, by name."""


def document_kind(name: str) -> DocumentKind:
    """The kind of ``name`` (``MEMORY.md``, ``memory/MEMORY.md``, ``USER.md``, ``SOUL.md``, ``AGENTS.md``)."""
    for kind in DOCUMENTS.values():
        if name in (kind.name, kind.rel):
            return kind
    raise NotFound(f"`{name}` is not a document keepgui edits; choose one of {', '.join(DOCUMENTS)}")


@dataclass(frozen=True)
class Document:
    """A document as read: its text (BOM removed, line endings as in the file), stamp and notices.

    ``exists`` is False for a file that is not there yet (``text`` is then "").
    ``newline`` is ``"\\r\\n"`` when every line ending in the file is CRLF, else ``"\\n"``.
    """

    kind: DocumentKind
    path: str
    text: str
    stamp: fsio.Stamp
    bom: bool = False
    newline: str = "\n"
    notices: tuple[Notice, ...] = ()

    @property
    def exists(self) -> bool:
        """True when the file exists."""
        return self.stamp.exists

    @property
    def managed_by_dream(self) -> bool:
        """True for MEMORY.md, USER.md, SOUL.md."""
        return self.kind.managed_by_dream

    @property
    def chars(self) -> int:
        """Length in characters."""
        return len(self.text)

    def to_obj(self) -> dict[str, Any]:
        """The document for ``--json``."""
        return {
            "name": self.kind.name,
            "path": self.path,
            "exists": self.exists,
            "managed_by_dream": self.managed_by_dream,
            "status": self.kind.status,
            "chars": self.chars,
            "bytes": self.stamp.size,
            "notices": [n.to_obj() for n in self.notices],
            "text": self.text,
        }


def _decode(data: bytes, path: str) -> tuple[str, bool, str]:
    text, bom = decode_text(data, path)
    lf = text.count("\n")
    crlf = text.count("\r\n")
    return text, bom, "\r\n" if lf and crlf == lf else "\n"


def prompt_size_notice(kind: DocumentKind, text: str | None, templates: Templates | None) -> Notice | None:
    """How much ``kind`` adds to every turn's system prompt, rendered as nanobot renders it (or why
    it is left out); None for a document nanobot does not put in the prompt."""
    parts, _prompt = render_parts({kind.rel: text}, templates)
    part = next((p for p in parts if p.source == kind.rel), None)
    if part is None or part.key == "keep":
        return None
    if not part.injected:
        return Notice("prompt-size", "info", f"{kind.name} adds nothing to the prompt now ({part.status})")
    dream = " Dream (nanobot 0.3.5 and later) sees it whole, through this same prompt." if kind.managed_by_dream else ""
    return Notice(
        "prompt-size",
        "info",
        f"{kind.name} adds {part.size_bytes:,} bytes (about {part.tokens:,} tokens) to every turn's "
        f"system prompt.{dream}",
    )


def document_notices(workspace: Workspace, kind: DocumentKind, text: str, exists: bool) -> list[Notice]:
    """What a person should know about a document as it is now."""
    notices = []
    templates = bundled_templates()
    if kind.managed_by_dream:
        notices.append(
            Notice(
                "dream-managed",
                "info",
                f"{kind.name} is managed by Dream: Dream rewrites it from the conversation history, "
                "and nanobot tells the agent not to edit it. You may; confirm before saving.",
            )
        )
    notice = prompt_size_notice(kind, text if exists else None, templates)
    if notice is not None:
        notices.append(notice)
    if not kind.managed_by_dream:
        notices.append(Notice("agent-rules", "info", f"{kind.name} holds rules for the agent; Dream never edits it"))
    if kind.rel == USER_MD and exists and not _mentions_keep(text):
        notices.append(
            Notice(
                "keep-pointer-missing",
                "warning",
                "USER.md no longer mentions keep.md, so the agent may stop reading it; "
                "offer to add the pointer back (USER.md is Dream's, so it is your call)",
            )
        )
    if not exists:
        notices.append(Notice("missing", "info", f"{kind.name} does not exist yet; saving creates it"))
    if templates is not None and exists and kind.rel != SOUL_MD and templates.is_template(kind.rel, text):
        notices.append(
            Notice(
                "template",
                "info",
                f"{kind.name} is still nanobot's bundled template, so nanobot leaves it out of the "
                "prompt; any edit, even cosmetic, makes it count as content",
            )
        )
    return notices


def open_document(workspace: Workspace, name: str, history: History | None = None) -> Document:
    """Read a document (recording the version seen in ``history``)."""
    kind = document_kind(name)
    data, stamp = workspace.read(kind.rel)
    path = workspace.path(kind.rel)
    if data is None:
        text, bom, newline = "", False, "\n"
    else:
        text, bom, newline = _decode(data, path)
        (history if history is not None else History()).record(path, data, source="seen")
    return Document(
        kind, path, text, stamp, bom, newline, tuple(document_notices(workspace, kind, text, data is not None))
    )


# ---------------------------------------------------------------------- saving


@dataclass(frozen=True)
class DreamActivity:
    """The best guess whether Dream is running: the newest ``dream:*`` session file and its age."""

    possibly_running: bool
    newest: str | None = None
    age_seconds: float | None = None

    def notice(self) -> Notice | None:
        """The warning to show before saving, or None."""
        if not self.possibly_running:
            return None
        return Notice(
            "dream-may-be-running",
            "warning",
            f"a Dream session file changed {self.age_seconds:.0f} s ago ({self.newest}): Dream may be "
            "rewriting these files right now; saving now may be overwritten or overwrite its work",
        )


def dream_activity(
    workspace: Workspace, *, now: float | None = None, window: float = DREAM_ACTIVITY_SECONDS
) -> DreamActivity:
    """Guess whether Dream runs now, from the age of ``dream:*`` session files (best effort)."""
    now = time.time() if now is None else now
    newest: tuple[str, float] | None = None
    for path, mtime in workspace.dream_session_files():
        if newest is None or mtime > newest[1]:
            newest = (path, mtime)
    if newest is None:
        return DreamActivity(False)
    age = max(0.0, now - newest[1])
    return DreamActivity(age <= window, newest[0], age)


def pre_save_notices(workspace: Workspace, document: Document, *, now: float | None = None) -> list[Notice]:
    """What to warn about before saving ``document`` (a possible Dream run in progress)."""
    if not document.managed_by_dream:
        return []
    notice = dream_activity(workspace, now=now).notice()
    return [notice] if notice else []


@dataclass(frozen=True)
class SaveResult:
    """A saved document, the version it replaced (in keepgui's history) and the after-save warnings."""

    document: Document
    previous: Version | None
    notices: tuple[Notice, ...] = ()
    written: bool = True

    def to_obj(self) -> dict[str, Any]:
        """The result for ``--json``."""
        return {
            "document": self.document.to_obj(),
            "written": self.written,
            "previous": self.previous.to_obj() if self.previous else None,
            "warnings": [n.to_obj() for n in self.notices],
        }


def after_save_notices(workspace: Workspace, kind: DocumentKind) -> list[Notice]:
    """The two effects of editing a Dream-managed file (spec §5.5)."""
    if not kind.managed_by_dream:
        return []
    if not workspace.has_dream_git():
        return [
            Notice(
                "no-dream-git",
                "info",
                f"this workspace has no Dream git, so nanobot keeps no version of {kind.name}; "
                "keepgui's history has the version you replaced",
            )
        ]
    return [
        Notice(
            "dream-commit-folds-edit",
            "warning",
            f"the next Dream commit will include this edit of {kind.name} and label it Dream's",
        ),
        Notice(
            "dream-restore-overwrites",
            "warning",
            f"/dream-restore of an older commit overwrites this edit of {kind.name}",
        ),
    ]


def _encode(text: str, bom: bool, newline: str) -> bytes:
    if newline == "\r\n":
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    data = text.encode("utf-8")
    return BOM + data if bom else data


def encode_document(document: Document, text: str) -> bytes:
    """``text`` as bytes in the document's own style: its BOM, and CRLF when the file used CRLF throughout."""
    return _encode(text, document.bom, document.newline)


def _appended(text: str, newline: str, lines: Iterable[str], *, blank_before: bool = False) -> str:
    """``text`` with ``lines`` added at the end, after a final newline (and a blank line when
    ``blank_before`` and the text has content); encode with the file's style."""
    if newline == "\r\n":
        text = text.replace("\r\n", "\n")
    if text and not text.endswith("\n"):
        text += "\n"
    if blank_before and text.strip():
        text += "\n"
    return text + "".join(line + "\n" for line in lines)


def append_lines(data: bytes | None, path: str, lines: Iterable[str]) -> bytes:
    """A document's bytes with ``lines`` added at the end in its own style (BOM, newlines kept).

    Raises :class:`Unreadable` when ``data`` is not UTF-8: keepgui never
    rewrites a file it cannot read back exactly.
    """
    text, bom, newline = _decode(data or b"", path)
    return _encode(_appended(text, newline, lines), bom, newline)


def save_document(
    workspace: Workspace, document: Document, text: str, *, confirm_dream: bool = False, history: History | None = None
) -> SaveResult:
    """Save ``text`` as the new content of ``document``.

    Refuses a Dream-managed file unless ``confirm_dream`` (the person
    confirmed), and refuses with :class:`Conflict` when the file changed on
    disk since ``document`` was read — nothing is overwritten unseen. The
    version replaced is recorded in ``history`` first, so it can be restored.
    """
    return _save_bytes(workspace, document, encode_document(document, text), confirm_dream, history)


def restore_version(
    workspace: Workspace,
    document: Document,
    version: Version,
    *,
    confirm_dream: bool = False,
    history: History | None = None,
) -> SaveResult:
    """Put the exact bytes of an earlier recorded version back (undo a rewrite), with a save's checks."""
    history = history if history is not None else History()
    return _save_bytes(workspace, document, history.read(version), confirm_dream, history)


def _save_bytes(
    workspace: Workspace, document: Document, new: bytes, confirm_dream: bool, history: History | None
) -> SaveResult:
    kind = document.kind
    if kind.managed_by_dream and not confirm_dream:
        raise InvalidInput(
            f"{document.path} is managed by Dream; confirm that you want to edit it "
            "(the window asks; scripts pass confirm_dream=True)"
        )
    history = history if history is not None else History()
    data, stamp = workspace.read(kind.rel)
    if not document.stamp.same_content(stamp):
        raise Conflict(document.path, document.stamp, stamp)
    decoded, bom, newline = _decode(new, document.path)  # never write what keepgui could not read back
    previous = history.record(document.path, data, source="before-save") if data is not None else None
    if data == new:
        return SaveResult(document, previous, (), False)
    new_stamp = workspace.write(kind.rel, new, expect=stamp)
    history.record(document.path, new, source="saved")
    saved = Document(
        kind, document.path, decoded, new_stamp, bom, newline, tuple(document_notices(workspace, kind, decoded, True))
    )
    return SaveResult(saved, previous, tuple(after_save_notices(workspace, kind)))


# ---------------------------------------------------------------------- checks across files

_POINTER_RE = re.compile(r"keep\.md", re.IGNORECASE)


def _mentions_keep(text: str) -> bool:
    return bool(_POINTER_RE.search(text))


@dataclass(frozen=True)
class PointerCheck:
    """Whether USER.md still points at keep.md, and on which lines (1-based)."""

    present: bool
    lines: tuple[int, ...] = ()
    user_md_exists: bool = True

    def to_obj(self) -> dict[str, Any]:
        """``{present, lines, user_md_exists}``."""
        return {"present": self.present, "lines": list(self.lines), "user_md_exists": self.user_md_exists}


def keep_pointer(workspace: Workspace) -> PointerCheck:
    """Check that USER.md still mentions keep.md (Dream may have reworded or dropped the pointer)."""
    data, _stamp = workspace.read(USER_MD)
    if data is None:
        return PointerCheck(False, (), False)
    text = data.decode("utf-8-sig", errors="replace")
    lines = tuple(i for i, line in enumerate(text.splitlines(), start=1) if _mentions_keep(line))
    return PointerCheck(bool(lines), lines)


def add_keep_pointer(
    workspace: Workspace, *, expect: fsio.Stamp | None = None, history: History | None = None
) -> SaveResult:
    """Append :data:`KEEP_POINTER` to USER.md (the person decided to; USER.md is Dream's).

    A no-op (``written=False``) when USER.md already mentions keep.md. The
    file's newline style and final newline are kept; a missing USER.md is created.
    """
    document = open_document(workspace, USER_MD, history)
    if expect is not None and not expect.same_content(document.stamp):
        raise Conflict(document.path, expect, document.stamp)
    if _mentions_keep(document.text):
        return SaveResult(document, None, (), False)
    text = _appended(document.text, document.newline, [KEEP_POINTER], blank_before=True)
    return save_document(workspace, document, text, confirm_dream=True, history=history)


@dataclass(frozen=True)
class Overlap:
    """A keep.md entry whose fact also appears in USER.md or MEMORY.md.

    ``kind``: ``contains`` (the line contains the entry), ``contained`` (the
    entry contains the line) or ``similar`` (fuzzy, ``score``).
    """

    entry: Entry
    file: str
    line: int
    text: str
    kind: str
    score: float = 100.0

    def to_obj(self) -> dict[str, Any]:
        """The overlap for ``--json``."""
        return {
            "entry": self.entry.to_obj(),
            "file": self.file,
            "line": self.line,
            "text": self.text,
            "kind": self.kind,
            "score": round(self.score, 1),
        }


def overlaps(
    workspace: Workspace,
    doc: KeepDoc | None = None,
    *,
    threshold: float = FUZZY_THRESHOLD,
    history: History | None = None,
) -> list[Overlap]:
    """Facts that are both in keep.md and in USER.md or MEMORY.md (spec §5.6).

    Headings and lines of fewer than three words are not compared.
    """
    if doc is None:
        doc = KeepStore(workspace, history).load()
    out: list[Overlap] = []
    for rel in (USER_MD, MEMORY_MD):
        data, _stamp = workspace.read(rel)
        if data is None:
            continue
        text = data.decode("utf-8-sig", errors="replace")
        name = rel.rsplit("/", 1)[-1]
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            key = line_key(stripped)
            if len(key.split()) < 3:
                continue
            for entry in doc.entries:
                if contains(key, entry.key):
                    out.append(Overlap(entry, name, number, stripped, "contains"))
                elif len(entry.key.split()) >= 3 and contains(entry.key, key):
                    out.append(Overlap(entry, name, number, stripped, "contained"))
                else:
                    score = fuzz.token_set_ratio(entry.key, key, processor=default_process)
                    if score >= threshold and len(entry.key.split()) >= 3:
                        out.append(Overlap(entry, name, number, stripped, "similar", score))
    return out


@dataclass(frozen=True)
class Misplaced:
    """A keep.md entry that triage routes elsewhere (a rule → AGENTS.md, a link → /note ...)."""

    entry: Entry
    triage: Triage

    def to_obj(self) -> dict[str, Any]:
        """The entry plus its triage."""
        return {"entry": self.entry.to_obj(), "triage": self.triage.to_obj()}


def misplaced_entries(
    workspace: Workspace, doc: KeepDoc | None = None, *, only: str | None = None, history: History | None = None
) -> list[Misplaced]:
    """keep.md entries that do not look like durable user facts (``only=AGENTS``: just the rules)."""
    if doc is None:
        doc = KeepStore(workspace, history).load()
    projects = workspace.projects()
    out = []
    for entry in doc.entries:
        verdict = triage(entry.text, projects)
        if verdict.verdict != KEEP and (only is None or verdict.verdict == only):
            out.append(Misplaced(entry, verdict))
    return out


def misplaced_rules(
    workspace: Workspace, doc: KeepDoc | None = None, *, history: History | None = None
) -> list[Misplaced]:
    """keep.md entries that are rules about how the agent should work: they belong in AGENTS.md."""
    return misplaced_entries(workspace, doc, only=AGENTS, history=history)


@dataclass(frozen=True)
class MoveResult:
    """An entry moved from keep.md to AGENTS.md: the AGENTS.md save and the keep.md removal."""

    agents: SaveResult
    removal: RemoveResult

    def to_obj(self) -> dict[str, Any]:
        """The result for ``--json``."""
        return {"agents": self.agents.to_obj(), "removal": self.removal.to_obj()}


def move_to_agents(
    workspace: Workspace, entry_id: str, *, keep_expect: fsio.Stamp | None = None, history: History | None = None
) -> MoveResult:
    """Move a keep.md entry to the end of AGENTS.md as ``- <rule>``.

    AGENTS.md is written first, then the entry is removed from keep.md (logged,
    so "unforget" can bring it back): if the second write is refused, the rule
    is in both files — never in neither.
    """
    history = history if history is not None else History()
    store = KeepStore(workspace, history)
    doc = store.load(expect=keep_expect)
    entry = doc.find(entry_id)
    agents = open_document(workspace, AGENTS_MD, history)
    saved = save_document(
        workspace, agents, _appended(agents.text, agents.newline, [f"- {entry.text}"]), history=history
    )
    removal = store.remove(entry.id, expect=doc.stamp, reason="moved to AGENTS.md")
    return MoveResult(saved, removal)


@dataclass(frozen=True)
class CrossCheck:
    """Every check across files at once, for the window's problem list."""

    pointer: PointerCheck
    overlaps: tuple[Overlap, ...] = ()
    misplaced: tuple[Misplaced, ...] = ()
    notices: tuple[Notice, ...] = field(default=())

    def to_obj(self) -> dict[str, Any]:
        """The checks for ``--json``."""
        return {
            "pointer": self.pointer.to_obj(),
            "overlaps": [o.to_obj() for o in self.overlaps],
            "misplaced": [m.to_obj() for m in self.misplaced],
            "notices": [n.to_obj() for n in self.notices],
        }


def cross_check(workspace: Workspace, *, history: History | None = None) -> CrossCheck:
    """The pointer check, overlaps and misplaced entries, with one notice per finding."""
    doc = KeepStore(workspace, history).load()
    pointer = keep_pointer(workspace)
    found_overlaps = overlaps(workspace, doc)
    misplaced = misplaced_entries(workspace, doc)
    notices = []
    if not pointer.present:
        notices.append(
            Notice(
                "keep-pointer-missing",
                "warning",
                "USER.md does not mention keep.md: the agent may not read keep.md; offer to add the pointer back",
            )
        )
    for o in found_overlaps:
        notices.append(
            Notice(
                "overlap",
                "info",
                f"keep.md entry {o.entry.number} `{o.entry.text}` is also in {o.file} (line {o.line}): {o.text}",
            )
        )
    for m in misplaced:
        notices.append(
            Notice(
                f"misplaced-{m.triage.verdict}",
                "warning",
                f"keep.md entry {m.entry.number} `{m.entry.text}`: {m.triage.reason}",
            )
        )
    return CrossCheck(pointer, tuple(found_overlaps), tuple(misplaced), tuple(notices))
