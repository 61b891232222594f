"""Writing Claude Code memory so that nothing the agent wrote can be lost.

The agent, its background extraction and Auto Dream edit the memory folder
with plain file tools and no lock. So every write here:

* presents the stamp it read (:func:`keepgui.core.fsio.atomic_write` with
  ``expect``) and is refused with :class:`~keepgui.core.errors.Conflict` when
  the file changed since — never a silent overwrite;
* replaces whole files atomically through a temporary ``.keepgui-….tmp`` name
  (never ``*.md``, which recall and Dream would read);
* is refused while a consolidation holds ``.consolidate-lock`` (its mtime under
  an hour old and its body the PID of a live process);
* never touches ``team/`` (synced from a server), the lock itself, session
  transcripts, ``.claude.json``, settings or managed files (only ``*.md``
  inside the memory folder are written);
* writes **through** a symbolic link to its target, keeping the link, when the
  target is inside the memory folder (the agent's own Write tool follows links
  too). fsio refuses to *replace* a link, so the link is resolved here and the
  target is replaced atomically in its own folder; a dangling link, and a link
  out of the memory folder (spec §5.3: it may point anywhere, ``/etc/passwd``
  included), are refused: keepgui never writes outside the folder;
* refuses to rewrite a file that is not valid UTF-8 (it would lose the bytes
  it shows as U+FFFD) or is not a regular file (a FIFO would block);
* keeps what it replaces or removes in keepgui's own history
  (:class:`~keepgui.core.history.History`, outside the memory folder), so a
  forget is reversible and every change has an exact undo that is itself
  refused when either file changed since.

Create (quick keep) writes a topic file in the format the CLI instructs its
agent to use (checked on 2.1.332's system prompt)::

    ---
    name: <kebab-case-slug>
    description: <one line>
    metadata:
      type: user | feedback | project | reference
    ---

    <the fact>

and appends ``- [Title](file.md) — hook`` to ``MEMORY.md``: both, or neither.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from keepgui.backends.claude.markdown import split_front_matter
from keepgui.backends.claude.memory import (
    INDEX_NAME,
    LOCK_NAME,
    MEMORY_TYPES,
    TEAM_DIR,
    file_kind,
    inside,
    linked_memory_file,
    parse_link_line,
)
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound, ReadOnly, Unreadable
from keepgui.core.history import History, Journal
from keepgui.core.timefmt import now_ms

LOCK_FRESH_SECONDS = 3600
"""A consolidation lock older than this is stale (the CLI's own rule)."""

_NEWLINE = re.compile(r"\r\n|\n|\r")
_YAML_PLAIN = re.compile(r"^[A-Za-z0-9][^:#\n]*$")


# ---------------------------------------------------------------------- the change record


@dataclass
class MemoryChange:
    """What one write did, and how to take it back (the shape of the seam's ``Change``).

    ``text`` is the undo menu's text; ``files`` the ``(path, stamp)`` pairs it
    left (stamp None: removed); ``result`` the backend's own result (a rel path,
    a removal id...); ``notes`` what a person should know (an entry past the
    cut, sessions keep what they loaded). :meth:`undo` returns the change that
    took this one back (whose own undo redoes it).
    """

    memory_dir: str
    text: str
    files: tuple[tuple[str, fsio.Stamp | None], ...] = ()
    written: bool = True
    result: object = None
    message: str = ""
    notes: tuple[str, ...] = ()
    reverse: Callable[[], MemoryChange] | None = field(default=None, repr=False)

    @property
    def can_undo(self) -> bool:
        """True when :meth:`undo` can be tried (it still refuses when the files changed since)."""
        return self.written and self.reverse is not None

    def undo(self) -> MemoryChange:
        """Take the change back; :class:`Conflict` when a file it wrote changed since."""
        if self.reverse is None:
            raise InvalidInput(f"{self.text}: nothing to undo")
        return self.reverse()


AFTER_SAVE = "Running Claude Code sessions keep what they loaded until /compact, /clear or a restart."


# ---------------------------------------------------------------------- guards


def lock_holder(memory_dir: str, now: float | None = None) -> str | None:
    """Why the folder is being consolidated now (a live lock), or None.

    The lock is held when ``.consolidate-lock`` is under an hour old and holds
    the PID of a live process; keepgui only reads it (touching it would
    postpone the next consolidation by a day).
    """
    path = os.path.join(memory_dir, LOCK_NAME)
    try:
        st = os.stat(path)
    except OSError:
        return None
    now = time.time() if now is None else now
    if now - st.st_mtime >= LOCK_FRESH_SECONDS:
        return None
    try:
        data, _stamp = fsio.read_stamped(path, limit=4096)
    except (OSError, KeepguiError):  # not a regular file: it names no process
        return None
    text = (data or b"").decode("ascii", errors="replace").strip()
    if not text.isdigit():
        return None
    pid = int(text)
    if not _alive(pid):
        return None
    return (
        f"{path}: Claude Code is consolidating this memory folder (process {pid}); "
        "nothing was written. Try again when it has finished."
    )


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    except OSError:
        return False
    return True


def writable_path(memory_dir: str, path: str) -> str:
    """The file to replace for a write of ``path`` in ``memory_dir``, or a refusal.

    Only ``*.md`` files inside the folder, outside ``team/``; a link is resolved
    to its target (see the module docstring).
    """
    folder = os.path.abspath(memory_dir)
    path = os.path.abspath(path)
    rel = os.path.relpath(path, folder)
    if rel.startswith(os.pardir + os.sep) or rel == os.pardir or os.path.isabs(rel):
        raise ReadOnly(f"{path}: not inside the memory folder {folder}; keepgui writes only memory files there")
    parts = rel.split(os.sep)
    if parts[0] == TEAM_DIR:
        raise ReadOnly(
            f"{path}: team memory is synced from a server and shared with your organisation; keepgui does not write it"
        )
    if not path.endswith(".md") or fsio.is_temp_name(os.path.basename(path)):
        raise ReadOnly(f"{path}: keepgui writes only the memory folder's .md files")
    if os.path.islink(path):
        target = os.path.realpath(path)
        if not os.path.exists(target):
            raise ReadOnly(f"{path}: a link to {target}, which does not exist; nothing was written")
        if not inside(os.path.realpath(folder), target) and not linked_memory_file(path):
            raise ReadOnly(
                f"{path}: a link to {target}, outside the memory folder and not a .md file; keepgui never "
                "writes through it, nothing was written"
            )
        path = target
    try:
        st = os.stat(path)
    except OSError:
        return path  # absent: a new file
    if not stat.S_ISREG(st.st_mode):
        raise ReadOnly(f"{path}: {file_kind(st.st_mode)}, not a memory file; nothing was written")
    return path


def check_unlocked(memory_dir: str) -> None:
    """Refuse (:class:`ReadOnly`) while a consolidation holds the folder."""
    reason = lock_holder(memory_dir)
    if reason:
        raise ReadOnly(reason)


# ---------------------------------------------------------------------- file helpers


class ChangedSince(Conflict):
    """An undo or redo was refused because a file changed after keepgui wrote it (nothing was written)."""

    def __init__(self, path: str, doing: str) -> None:
        KeepguiError.__init__(
            self,
            f"{path} changed after keepgui wrote it; the {doing} was refused and nothing "
            "was written. Reload it and look at it first.",
        )
        self.path = path
        self.expected = None
        self.actual = None


def _expect(path: str, data: bytes | None, doing: str) -> fsio.Stamp:
    """The current stamp of ``path`` if it still holds ``data`` (None: absent), else :class:`ChangedSince`."""
    current, stamp = fsio.read_stamped(path)
    if current != data:
        raise ChangedSince(path, doing)
    return stamp


def put(
    memory_dir: str, path: str, data: bytes | None, expect: fsio.Stamp | None, history: History, source: str
) -> fsio.Stamp | None:
    """Write ``data`` to ``path`` (None: remove it) if it still has ``expect`` (None: if it is absent, as
    a removal left it); the old bytes go to history."""
    target = writable_path(memory_dir, path)
    old, stamp = read_base(target, history)
    if not (expect or fsio.Stamp.missing()).same_content(stamp):
        raise Conflict(target, expect, stamp)
    if old is not None:
        history.record(target, old, source=f"before-{source}")
    if data is None:
        fsio.remove_file(target, expect=stamp)
        return None
    fsio.make_dirs(os.path.dirname(target))
    if not stamp.exists:
        # a new file is created, never renamed over a name: a file the agent makes meanwhile stays
        try:
            written = fsio.create_new(target, data)
        except FileExistsError:
            raise Conflict(target, fsio.Stamp.missing(), fsio.current_stamp(target)) from None
    else:
        written = fsio.atomic_write(target, data, expect=stamp)
    history.record(target, data, source=source)
    return written


def read_base(target: str, history: History) -> tuple[bytes | None, fsio.Stamp]:
    """A memory file read as the base of a write: a read caught mid-write is looked at again, and an
    empty one where keepgui last saw content is never taken (:func:`keepgui.core.fsio.read_settled`)."""
    last = history.latest(target)
    return fsio.read_settled(target, before=last.size if last else None)


class Intents(Journal):
    """keepgui's record of the two-file changes under way (a topic file and its index line), in its
    history folder: ``begun`` before the first file is written, ``ended`` after the second. One left
    begun was cut short (the process killed between the two): the next keepgui command or load
    completes or undoes it (:func:`keepgui.backends.claude.intents.recover`) and says so."""

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "claude-intents.jsonl")

    def begin(self, op: str, memory_dir: str, **details: Any) -> str:
        """Record a change about to be made; returns its id (for :meth:`end`)."""
        intent_id = secrets.token_hex(6)
        folder = os.path.realpath(memory_dir)
        self._append({"event": "begun", "id": intent_id, "op": op, "memory_dir": folder, "at": now_ms(), **details})
        return intent_id

    def end(self, intent_id: str) -> None:
        """The change is whole (or was taken back whole)."""
        self._append({"event": "ended", "id": intent_id, "at": now_ms()})

    def pending(self, memory_dir: str) -> list[dict[str, Any]]:
        """The changes of ``memory_dir`` begun and never ended, oldest first."""
        folder = os.path.realpath(memory_dir)
        return [e for e in self.standing("begun", "ended") if e.get("memory_dir") == folder]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def split_lines(text: str) -> list[str]:
    """Physical lines with their own endings (``\\n``, ``\\r\\n``, ``\\r``; the last may have none)."""
    out, pos = [], 0
    for match in _NEWLINE.finditer(text):
        out.append(text[pos : match.end()])
        pos = match.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def newline_of(text: str) -> str:
    """The file's line ending (its first one; ``\\n`` for a file with none)."""
    match = _NEWLINE.search(text)
    return match.group(0) if match else "\n"


def _decode_strict(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise Unreadable(
            path, f"line {line} is not valid UTF-8; keepgui edits only files it can write back exactly"
        ) from None
    return text


def append_line(data: bytes | None, line: str, path: str) -> bytes:
    """The index with ``line`` appended in the file's own style (BOM and line ending kept)."""
    if not data:
        return (line + "\n").encode("utf-8")
    bom = data.startswith(b"\xef\xbb\xbf")
    text = _decode_strict(data[3:] if bom else data, path)
    newline = newline_of(text)
    if text and not text.endswith(("\n", "\r")):
        text += newline
    return (b"\xef\xbb\xbf" if bom else b"") + (text + line + newline).encode("utf-8")


def links_to(line: str, rel: str) -> bool:
    """True when an index line links to the topic file ``rel``."""
    parsed = parse_link_line(line.rstrip("\r\n"))
    return parsed is not None and parsed[1] == rel


def without_links(data: bytes, rel: str, path: str) -> tuple[bytes, list[tuple[int, str]]]:
    """The index without every line linking to ``rel``, and those lines ``(0-based position, line)``."""
    bom = data.startswith(b"\xef\xbb\xbf")
    text = _decode_strict(data[3:] if bom else data, path)
    kept, removed = [], []
    for number, line in enumerate(split_lines(text)):
        if links_to(line, rel):
            removed.append((number, line))
        else:
            kept.append(line)
    return (b"\xef\xbb\xbf" if bom else b"") + "".join(kept).encode("utf-8"), removed


def with_lines(data: bytes | None, lines: list[tuple[int, str]], path: str) -> bytes:
    """The index with ``lines`` put back at their positions (clamped to the end; endings fixed)."""
    bom = data is not None and data.startswith(b"\xef\xbb\xbf")
    text = _decode_strict((data or b"")[3 if bom else 0 :], path)
    current = split_lines(text)
    newline = newline_of(text) if text else "\n"
    if current and not current[-1].endswith(("\n", "\r")):
        current[-1] += newline
    for position, line in sorted(lines):
        if not line.endswith(("\n", "\r")):
            line += newline
        current.insert(min(position, len(current)), line)
    return (b"\xef\xbb\xbf" if bom else b"") + "".join(current).encode("utf-8")


# ---------------------------------------------------------------------- topic files


def slug(title: str) -> str:
    """A kebab-case ASCII slug of a title (``"Build & test"`` -> ``build-test``), at most 60 characters."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return text[:60].rstrip("-") or "memory"


def yaml_scalar(value: str) -> str:
    """A one-line YAML scalar: plain when that reads back as the same string, else double-quoted."""
    if (
        _YAML_PLAIN.match(value)
        and value == value.strip()
        and value.lower() not in ("true", "false", "yes", "no", "on", "off", "null", "~")
        and not re.fullmatch(r"[-+.\d][\d_.eE+-]*", value)
    ):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def render_topic(name: str, description: str, kind: str, body: str) -> str:
    """A new topic file's text, in the CLI's instructed format."""
    return (
        f"---\nname: {yaml_scalar(name)}\ndescription: {yaml_scalar(description)}\nmetadata:\n"
        f"  type: {kind}\n---\n\n{body.strip()}\n"
    )


def free_file_name(memory_dir: str, base: str) -> str:
    """``<base>.md``, or ``<base>-2.md``... the first name not taken in the folder."""
    name, n = f"{base}.md", 1
    while os.path.lexists(os.path.join(memory_dir, name)):
        n += 1
        name = f"{base}-{n}.md"
    return name


def _one_line(value: str, what: str) -> str:
    value = " ".join(value.split())
    if not value:
        raise InvalidInput(f"the {what} is empty")
    return value


# ---------------------------------------------------------------------- operations


class ChangeLog(Journal):
    """keepgui's log of forgotten memories (in its history folder, never in the memory folder), so a
    forget can be restored from another process: ``forgot`` events with what was removed, ``restored``."""

    def __init__(self, history: History | None = None) -> None:
        super().__init__(history, "claude-forgotten.jsonl")

    def forgot(self, obj: dict[str, Any]) -> None:
        """Record a forget (before it is written, so the log has it even if that write is the last)."""
        self._append({"event": "forgot", **obj})

    def restored(self, entry_id: str) -> None:
        """Record that a forgotten memory was put back (or that its forget was refused)."""
        self._append({"event": "restored", "id": entry_id, "at": now_ms()})

    def pending(self, memory_dir: str | None = None) -> list[dict[str, Any]]:
        """Forgotten memories not restored yet, oldest first (of one folder when given)."""
        found = self.standing("forgot", "restored")
        key = None if memory_dir is None else os.path.realpath(memory_dir)
        return [e for e in found if key is None or e.get("memory_dir") == key]

    def get(self, entry_id: str) -> dict[str, Any]:
        """A pending forget by id (or a unique prefix)."""
        matches = [e for e in self.pending() if str(e.get("id", "")).startswith(entry_id)]
        if len(matches) != 1:
            raise NotFound(f"keepgui has no forgotten memory {entry_id} to restore")
        return matches[0]


@dataclass
class FileSwap:
    """A change of several memory files made as one: each ``(path, before, after)`` (None: absent).

    :meth:`apply` and :meth:`undo` each first check that every file holds what
    it should (``before`` to apply, ``after`` to undo) and refuse, writing
    nothing, when one does not; then they write topic files that appear or
    change, then the index, then remove what goes, so the index never points at
    a file that is not there yet.
    """

    memory_dir: str
    history: History
    files: list[tuple[str, bytes | None, bytes | None]]
    text: str

    def _order(self, to_after: bool) -> list[tuple[str, bytes | None, bytes | None]]:
        def rank(item: tuple[str, bytes | None, bytes | None]) -> int:
            path, before, after = item
            want = after if to_after else before
            if want is None:
                return 2
            return 1 if os.path.basename(path) == INDEX_NAME else 0

        return sorted(self.files, key=rank)

    def _swap(self, to_after: bool, doing: str) -> MemoryChange:
        check_unlocked(self.memory_dir)
        stamps = {}
        for path, before, after in self.files:
            have = before if to_after else after
            stamps[path] = _expect(writable_path(self.memory_dir, path), have, doing)
        written: list[tuple[str, fsio.Stamp | None]] = []
        for path, before, after in self._order(to_after):
            have, want = (before, after) if to_after else (after, before)
            if have == want:
                written.append((path, stamps[path]))
                continue
            written.append((path, put(self.memory_dir, path, want, stamps[path], self.history, doing)))
        change = MemoryChange(
            self.memory_dir, self.text, tuple(written), message=f"{doing}: {self.text}", notes=(AFTER_SAVE,)
        )
        change.reverse = self.undo if to_after else self.redo
        return change

    def apply(self) -> MemoryChange:
        """Write every file's ``after`` (each must still hold its ``before``)."""
        return self._swap(True, "change")

    def undo(self) -> MemoryChange:
        """Put every file back as it was before."""
        return self._swap(False, "undo")

    def redo(self) -> MemoryChange:
        """Write every file's ``after`` again, after an undo."""
        return self._swap(True, "redo")


def keep(
    memory_dir: str,
    *,
    title: str,
    description: str,
    body: str,
    kind: str,
    hook: str | None = None,
    history: History | None = None,
) -> MemoryChange:
    """Quick keep: a new topic file and its index line, as one undoable change.

    The topic file is written first (it must not exist), then the index line
    appended (the index must not have changed since it was read); when the
    index write is refused the new file is removed again, so it is both or
    neither.
    """
    history = history or History()
    check_unlocked(memory_dir)
    if kind not in MEMORY_TYPES:
        raise InvalidInput(f"the type must be one of {', '.join(MEMORY_TYPES)}, not {kind!r}")
    title = _one_line(title, "title")
    description = _one_line(description, "description")
    if not body.strip():
        raise InvalidInput("the memory's text is empty")
    name = slug(title)
    fsio.make_dirs(memory_dir)
    file_name = free_file_name(memory_dir, name)
    topic_path = os.path.join(memory_dir, file_name)
    index_path = os.path.join(memory_dir, INDEX_NAME)
    index_target = writable_path(memory_dir, index_path)
    old_index, index_stamp = read_base(index_target, history)
    line = f"- [{title.replace(']', '')}]({file_name}) — {_one_line(hook or description, 'hook')}"
    new_index = append_line(old_index, line, index_path)
    topic_bytes = render_topic(name, description, kind, body).encode("utf-8")
    intents = Intents(history)
    intent = intents.begin("keep", memory_dir, topic=file_name, topic_sha256=_sha(topic_bytes), line=line)
    topic_stamp = put(memory_dir, topic_path, topic_bytes, fsio.Stamp.missing(), history, "keep")
    try:
        new_stamp = put(memory_dir, index_path, new_index, index_stamp, history, "keep")
    except BaseException:
        put(memory_dir, topic_path, None, topic_stamp, history, "keep-rollback")
        raise
    finally:
        intents.end(intent)
    text = f"Keep memory {title}"
    change = MemoryChange(
        memory_dir,
        text,
        ((topic_path, topic_stamp), (index_path, new_stamp)),
        result=file_name,
        message=f"kept {file_name} and its index line",
        notes=(AFTER_SAVE,),
    )
    swap = FileSwap(memory_dir, history, [(topic_path, None, topic_bytes), (index_path, old_index, new_index)], text)
    change.reverse = swap.undo
    return change


def forget(memory_dir: str, rel: str, *, history: History | None = None) -> MemoryChange:
    """Remove a topic file and every index line linking to it, as one reversible change.

    Both previous versions go to keepgui's history and the forget to its
    :class:`ChangeLog` first, so :func:`restore` can put them back from any
    process; the index is written before the file is removed (a failure then
    rolls the index back).
    """
    history = history or History()
    check_unlocked(memory_dir)
    topic_path = os.path.join(memory_dir, rel)
    target = writable_path(memory_dir, topic_path)
    topic, topic_stamp = read_base(target, history)
    if topic is None:
        raise NotFound(f"{topic_path}: no such memory file")
    _decode_strict(topic, topic_path)
    index_path = os.path.join(memory_dir, INDEX_NAME)
    index_target = writable_path(memory_dir, index_path)
    index, index_stamp = read_base(index_target, history)
    new_index, removed = without_links(index, rel, index_path) if index is not None else (None, [])
    entry_id = secrets.token_hex(6)
    log = ChangeLog(history)
    before_topic = history.record(target, topic, source="before-forget")
    before_index = history.record(index_target, index, source="before-forget") if index is not None else None
    log.forgot(
        {
            "id": entry_id,
            "memory_dir": os.path.realpath(memory_dir),
            "rel": rel,
            "at": now_ms(),
            "topic_sha256": before_topic.sha256,
            "index_sha256": before_index.sha256 if before_index else None,
            "lines": [[n, line] for n, line in removed],
        }
    )
    intents = Intents(history)
    intent = intents.begin("forget", memory_dir, topic=rel, topic_sha256=before_topic.sha256, entry=entry_id)
    try:
        i = put(memory_dir, index_path, new_index, index_stamp, history, "forget") if removed else index_stamp
        try:
            t = put(memory_dir, topic_path, None, topic_stamp, history, "forget")
        except BaseException:
            if removed:
                put(memory_dir, index_path, index, i, history, "forget-rollback")
            raise
    except BaseException:
        log.restored(entry_id)  # it did not happen
        raise
    finally:
        intents.end(intent)
    text = f"Forget memory {rel}"
    change = MemoryChange(
        memory_dir,
        text,
        ((topic_path, t), (index_path, i)),
        result=entry_id,
        message=f"forgot {rel} ({len(removed)} index line{'s' if len(removed) != 1 else ''}); "
        f"keepgui keeps it: restore {entry_id}",
        notes=(AFTER_SAVE,),
    )
    change.reverse = lambda: restore(memory_dir, entry_id, history=history)
    return change


def restore(memory_dir: str, entry_id: str, *, history: History | None = None) -> MemoryChange:
    """Put a forgotten memory back: its file (which must not exist again) and its index lines
    where they were (the index exactly as before when nobody changed it since)."""
    history = history or History()
    check_unlocked(memory_dir)
    log = ChangeLog(history)
    entry = log.get(entry_id)
    rel = entry["rel"]
    topic_path = os.path.join(memory_dir, rel)
    target = writable_path(memory_dir, topic_path)
    topic = history.read(history.find(target, entry["topic_sha256"]))
    index_path = os.path.join(memory_dir, INDEX_NAME)
    index_target = writable_path(memory_dir, index_path)
    current, index_stamp = read_base(index_target, history)
    lines = [(int(n), str(line)) for n, line in entry.get("lines", [])]
    new_index = current
    if lines:
        before = history.read(history.find(index_target, entry["index_sha256"])) if entry.get("index_sha256") else None
        after = without_links(before, rel, index_path)[0] if before is not None else None
        new_index = before if current == after and before is not None else with_lines(current, lines, index_path)
    intents = Intents(history)
    intent = intents.begin("restore", memory_dir, topic=rel, topic_sha256=_sha(topic), entry=entry["id"])
    try:
        t = put(memory_dir, topic_path, topic, fsio.Stamp.missing(), history, "restore")
        try:
            i = put(memory_dir, index_path, new_index, index_stamp, history, "restore") if lines else index_stamp
        except BaseException:
            put(memory_dir, topic_path, None, t, history, "restore-rollback")
            raise
        log.restored(entry["id"])
    finally:
        intents.end(intent)
    change = MemoryChange(
        memory_dir,
        f"Restore memory {rel}",
        ((topic_path, t), (index_path, i)),
        result=rel,
        message=f"restored {rel}",
        notes=(AFTER_SAVE,),
    )
    change.reverse = lambda: forget(memory_dir, rel, history=history)
    return change


def save_file(
    memory_dir: str,
    path: str,
    data: bytes,
    expect: fsio.Stamp,
    *,
    history: History | None = None,
    text: str | None = None,
) -> MemoryChange:
    """Replace one memory file (a topic file or the index) if it still has ``expect``; undoable."""
    history = history or History()
    check_unlocked(memory_dir)
    target = writable_path(memory_dir, path)
    old, stamp = fsio.read_stamped(target)
    if not expect.same_content(stamp):
        raise Conflict(target, expect, stamp)
    written = put(memory_dir, path, data, stamp, history, "save")
    label = text or f"Edit {os.path.relpath(path, memory_dir)}"
    change = MemoryChange(
        memory_dir, label, ((path, written),), result=os.path.relpath(path, memory_dir), notes=(AFTER_SAVE,)
    )
    change.reverse = lambda: _put_back(memory_dir, path, old, data, history, label)
    return change


def _put_back(memory_dir: str, path: str, old: bytes | None, ours: bytes, history: History, label: str) -> MemoryChange:
    check_unlocked(memory_dir)
    stamp = _expect(writable_path(memory_dir, path), ours, "undo")
    written = put(memory_dir, path, old, stamp, history, "undo")
    change = MemoryChange(memory_dir, label, ((path, written),), notes=(AFTER_SAVE,))
    change.reverse = lambda: save_file(
        memory_dir, path, ours, fsio.current_stamp(writable_path(memory_dir, path)), history=history, text=label
    )
    return change


def set_front_matter(text: str, values: dict[str, str]) -> str:
    """A topic file's text with front-matter values set, every other byte kept.

    ``values`` may name ``name``, ``description`` and ``type``; ``type`` goes
    to ``metadata.type`` unless the file uses a flat ``type:``. A file without
    front matter is refused (none is ever added); ``modified`` is updated only
    where the file already has one.
    """
    newline = newline_of(text)
    lines = split_lines(text)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise InvalidInput(
            "this memory has no front matter, and keepgui never adds one where there was none; edit the file as text"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if end is None:
        raise InvalidInput("the front matter has no closing --- line; edit the file as text")
    head = lines[1:end]
    flat_type = any(re.match(r"type\s*:", line) for line in head)

    def set_key(key: str, value: str, indent: str = "", within: tuple[int, int] | None = None) -> bool:
        lo, hi = within or (0, len(head))
        for i in range(lo, hi):
            if re.match(re.escape(indent) + re.escape(key) + r"\s*:", head[i]):
                head[i] = f"{indent}{key}: {value}{newline}"
                return True
        return False

    for key in ("name", "description"):
        if key in values and not set_key(key, yaml_scalar(values[key])):
            head.append(f"{key}: {yaml_scalar(values[key])}{newline}")
    if "type" in values:
        if flat_type:
            set_key("type", values["type"])
        else:
            meta = next((i for i, line in enumerate(head) if re.match(r"metadata\s*:\s*$", line.rstrip("\r\n"))), None)
            if meta is None:
                head.extend([f"metadata:{newline}", f"  type: {values['type']}{newline}"])
            else:
                stop = next((i for i in range(meta + 1, len(head)) if not head[i].startswith((" ", "\t"))), len(head))
                if not set_key("type", values["type"], "  ", (meta + 1, stop)):
                    head.insert(meta + 1, f"  type: {values['type']}{newline}")
    if any(re.match(r"modified\s*:", line) for line in head):
        set_key("modified", time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))
    return "".join([lines[0], *head, *lines[end:]])


def replace_body(text: str, body: str) -> str:
    """``text`` with the body after its front matter replaced by ``body`` (trimmed), every other byte kept:
    the front matter, the blank lines around the body and the file's line endings stay as they were."""
    newline = newline_of(text)
    head = split_front_matter(text).end
    old = text[head:]
    core = old.strip()
    fresh = body.strip().replace("\r\n", "\n").replace("\n", newline)
    if not core:  # nothing to replace: the body goes after a blank line, ended as the file's lines are
        return text[:head] + (old or (newline if head else "")) + fresh + newline
    lead = len(old) - len(old.lstrip())
    trail = len(old.rstrip())
    return text[:head] + old[:lead] + fresh + old[trail:]


def edit_memory(
    memory_dir: str,
    rel: str,
    expect: fsio.Stamp | None,
    *,
    body: str | None = None,
    history: History | None = None,
    **values: str,
) -> MemoryChange:
    """Edit a topic file's body and/or front matter (``name``, ``description``, ``type``), undoable."""
    path = os.path.join(memory_dir, rel)
    data, stamp = fsio.read_stamped(writable_path(memory_dir, path))
    if data is None:
        raise NotFound(f"{path}: no such memory file")
    if expect is None or not expect.same_content(stamp):  # None: the file was not there when it was shown
        raise Conflict(path, expect, stamp)
    if "type" in values and values["type"] not in MEMORY_TYPES:
        raise InvalidInput(f"the type must be one of {', '.join(MEMORY_TYPES)}, not {values['type']!r}")
    text = _decode_strict(data, path)
    if values:
        text = set_front_matter(text, {k: _one_line(v, k) for k, v in values.items()})
    if body is not None:
        text = replace_body(text, body)
    return save_file(memory_dir, path, text.encode("utf-8"), stamp, history=history, text=f"Edit memory {rel}")


def pending_forgets(memory_dir: str, history: History | None = None) -> list[dict[str, Any]]:
    """The forgotten memories of a folder keepgui can still restore, oldest first."""
    return ChangeLog(history).pending(memory_dir)


_NEVER_WRITTEN = ("settings.json", "settings.local.json", "managed-settings.json", ".claude.json")


def instruction_target(path: str, managed_dir: str) -> str:
    """The file to replace for a save of an instruction file, or a refusal: never managed files,
    settings, ``.claude.json`` or session transcripts; a link is saved through to its target."""
    path = os.path.abspath(path)
    target = os.path.realpath(path)
    managed = os.path.realpath(managed_dir)
    for candidate in (path, target):
        if candidate == managed or candidate.startswith(managed.rstrip(os.sep) + os.sep):
            raise ReadOnly(f"{path}: managed by your organisation's policy; keepgui does not change it")
        name = os.path.basename(candidate)
        if name in _NEVER_WRITTEN or name.endswith(".jsonl"):
            raise ReadOnly(f"{path}: keepgui never writes Claude Code's settings, state or transcripts")
    if os.path.islink(path) and not os.path.exists(target):
        raise ReadOnly(f"{path}: a link to {target}, which does not exist; nothing was written")
    return target


def save_instruction(
    path: str, data: bytes, expect: fsio.Stamp, *, managed_dir: str, history: History | None = None
) -> MemoryChange:
    """Save a CLAUDE.md, CLAUDE.local.md, rule or imported file over exactly the version read; undoable."""
    history = history or History()
    target = instruction_target(path, managed_dir)
    old, stamp = fsio.read_stamped(target)
    if not expect.same_content(stamp):
        raise Conflict(target, expect, stamp)
    if old is not None:
        history.record(target, old, source="before-save")
    written = fsio.atomic_write(target, data, expect=stamp)
    history.record(target, data, source="save")
    label = f"Edit {os.path.basename(path)}"

    def undo() -> MemoryChange:
        now = _expect(instruction_target(path, managed_dir), data, "undo")
        if old is None:
            fsio.remove_file(target, expect=now)
            back = None
        else:
            back = fsio.atomic_write(target, old, expect=now)
        reverted = MemoryChange(
            os.path.dirname(path), label, ((path, back),), message=f"undo: {label}", notes=(AFTER_SAVE,)
        )
        reverted.reverse = lambda: save_instruction(
            path, data, fsio.current_stamp(target), managed_dir=managed_dir, history=history
        )
        return reverted

    change = MemoryChange(os.path.dirname(path), label, ((path, written),), result=path, notes=(AFTER_SAVE,))
    change.reverse = undo
    return change


def chain(memory_dir: str, text: str, steps: list[Callable[[], MemoryChange]]) -> MemoryChange:
    """Several writes as one change (forget three memories): each step runs in turn; when one is
    refused, the ones done are taken back (newest first) before the refusal is raised, so it is all
    or nothing. The change's undo takes every step back, newest first, the same way."""
    done: list[MemoryChange] = []
    try:
        for step in steps:
            done.append(step())
    except BaseException:
        for change in reversed(done):
            if change.can_undo:
                change.undo()
        raise
    files: dict[str, fsio.Stamp | None] = {}
    for change in done:
        files.update(change.files)
    joined = MemoryChange(
        memory_dir,
        text,
        tuple(files.items()),
        written=any(c.written for c in done),
        result=[c.result for c in done] if len(done) != 1 else done[0].result,
        message="; ".join(c.message for c in done if c.message),
        notes=(AFTER_SAVE,),
    )
    undos = [c.undo for c in reversed(done) if c.can_undo]
    if undos:
        joined.reverse = lambda: chain(memory_dir, text, undos)
    return joined
