"""Writing Gemini CLI memory without losing anything (every byte through :mod:`keepgui.core.fsio`).

Gemini's agent edits its memory files itself, with plain truncate-and-write from the copy it loaded
when its session started, and takes no lock. So every write here:

* replaces whole files atomically and presents the stamp it read: it is refused with
  :class:`~keepgui.core.errors.Conflict` when the file changed since — never a silent overwrite; the
  file's mode, line endings and byte-order mark are kept;
* writes **through** a symbolic link to its target (as Gemini's own file tools do);
* refuses a file that is not valid UTF-8 (its bad bytes would be lost) or not a regular file;
* records the version it replaces and the one it writes in keepgui's history (outside every Gemini
  folder), so every change has an exact undo — itself refused when the file changed since — and a
  running session that later writes its stale copy over the edit can be caught (:mod:`.compact`);
* never writes a file Gemini owns and regenerates (``projects.json``, ``settings.json``, transcripts,
  ``.extraction-state.json``). For a launch folder Gemini has not seen, the private folder is created
  the way a first session claims it — its ``.project_root`` markers created exclusively, nothing
  rewritten — and ``projects.json`` is left to Gemini, whose next start finds the marker and maps it;
* touches the Auto Memory inbox only while holding Gemini's own extraction lock
  (``.extraction.lock``, created exclusively with keepgui's pid), and never while a live process holds it.

Even so, a running Gemini session may write its stale copy of a file over an edit made meanwhile;
keepgui says so before saving, and the review of :mod:`.compact` shows what was lost, with restore.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from keepgui.backends.gemini.layout import PROJECT_ROOT_FILE, GeminiEnv, PrivateFolder
from keepgui.backends.gemini.memory import Line, parse, split_lines
from keepgui.core import fsio
from keepgui.core.errors import Conflict, InvalidInput, KeepguiError, NotFound, ReadOnly
from keepgui.core.history import History, RemovedEntry

SAVED = "saved"
"""History source of a version keepgui wrote."""
BEFORE = "before-save"
"""History source of the version a keepgui write replaced."""

FILE_LIMIT = 16 * 1024 * 1024
LOCK_NAME = ".extraction.lock"
LOCK_STALE_SECONDS = 35 * 60
"""Gemini's Auto Memory lock is stale after this long (or when its pid is not alive)."""

AFTER_SAVE = (
    "Gemini CLI sessions already running keep what they loaded; the next session sees this. A running "
    "session may still write its own copy of the file over it: keepgui's review would show what was lost."
)


@dataclass
class FileChange:
    """What one write did and how to take it back: ``files`` are ``(path, stamp)`` pairs it left
    (stamp None: removed); :meth:`undo` returns the change that took it back (whose undo redoes it)."""

    text: str
    files: tuple[tuple[str, fsio.Stamp | None], ...] = ()
    written: bool = True
    result: object = None
    message: str = ""
    notes: tuple[str, ...] = ()
    reverse: Callable[[], FileChange] | None = field(default=None, repr=False)

    def undo(self) -> FileChange:
        """Take the change back; :class:`Conflict` when a file it wrote changed since."""
        if self.reverse is None:
            raise InvalidInput(f"{self.text}: nothing to undo")
        return self.reverse()


@dataclass(frozen=True)
class Edit:
    """One file of a write: its new bytes (None: remove it), the stamp it was read with, and its mode
    when new."""

    path: str
    data: bytes | None
    expect: fsio.Stamp
    mode: int = 0o644


def target_of(path: str) -> str:
    """The file a write to ``path`` changes: a link's target (a dangling link is refused)."""
    if not os.path.islink(path):
        return path
    real = os.path.realpath(path)
    if not os.path.exists(real):
        raise ReadOnly(f"{path} is a link to {real}, which does not exist; nothing was saved")
    return real


def read(path: str) -> tuple[bytes | None, fsio.Stamp]:
    """A file's bytes and stamp (through a link); refused when it is not a regular file."""
    return fsio.read_stamped(target_of(path), limit=FILE_LIMIT)


def text_of(path: str, data: bytes) -> str:
    """The text of a file keepgui may rewrite line by line (refused when it is not valid UTF-8)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReadOnly(
            f"{path}: byte {exc.start} is not valid UTF-8; keepgui does not rewrite it (its bytes would be lost). "
            "Fix the file in an editor"
        ) from None


def write_files(edits: Sequence[Edit], *, history: History, text: str, message: str = "") -> FileChange:
    """Write every edit, or none: all stamps are checked first, and a write that fails after others
    puts those back. Versions replaced and written go to ``history``; the change undoes itself."""
    targets = [(target_of(e.path), e) for e in edits]
    old: list[tuple[bytes | None, fsio.Stamp]] = []
    for path, edit in targets:
        data, stamp = fsio.read_stamped(path, limit=FILE_LIMIT)
        if not stamp.same_content(edit.expect):
            raise Conflict(path, edit.expect, stamp)
        old.append((data, stamp))
    done: list[tuple[str, fsio.Stamp | None]] = []
    try:
        for (path, edit), (data, _stamp) in zip(targets, old, strict=True):
            # what the write replaces (nothing: empty), so a review can tell keepgui's own lines apart
            history.record(path, data if data is not None else b"", source=BEFORE)
            if edit.data is None:
                fsio.remove_file(path, expect=edit.expect)
                done.append((path, None))
            else:
                fsio.make_dirs(os.path.dirname(path))
                done.append((path, fsio.atomic_write(path, edit.data, expect=edit.expect, mode=edit.mode)))
                history.record(path, edit.data, source=SAVED)
    except BaseException:
        _roll_back(done, {p: d for (p, _e), (d, _s) in zip(targets, old, strict=True)})
        raise
    modes = {p: e.mode for p, e in targets}
    previous = [(p, d) for (p, _e), (d, _s) in zip(targets, old, strict=True)]

    def reverse() -> FileChange:
        stamps = dict(done)
        back = []
        for p, d in previous:
            now = stamps.get(p)
            back.append(Edit(p, d, now if now is not None else fsio.Stamp.missing(), modes[p]))
        return write_files(back, history=history, text=text, message=message)

    return FileChange(text, tuple(done), message=message, notes=(AFTER_SAVE,), reverse=reverse)


def _roll_back(done: list[tuple[str, fsio.Stamp | None]], before: dict[str, bytes | None]) -> None:
    for path, stamp in reversed(done):
        try:
            data = before[path]
            if data is None:
                fsio.remove_file(path, expect=stamp)
            else:
                fsio.atomic_write(path, data, expect=stamp or fsio.Stamp.missing())
        except (OSError, KeepguiError):
            continue  # the first error is the one reported; what could be put back was


def save(path: str, data: bytes, expect: fsio.Stamp, *, history: History, text: str) -> FileChange:
    """Replace one file (or create it: ``expect`` missing) with ``data``."""
    return write_files([Edit(path, data, expect)], history=history, text=text)


# ---------------------------------------------------------------------- lines


def _endings(text: str) -> str:
    """The line ending a file uses (CRLF when every line break is one, else LF)."""
    return "\r\n" if "\r\n" in text and text.count("\n") == text.count("\r\n") else "\n"


def find_line(text: str, number: int, body: str) -> Line:
    """Line ``number`` of ``text``, which must still read ``body`` (else the file changed: Conflict-like)."""
    lines = parse(text)
    if not 0 < number <= len(lines) or lines[number - 1].body != body:
        raise NotFound(f"line {number} no longer reads “{body.strip()[:60]}”: the file changed; reload it")
    return lines[number - 1]


def replace_line(text: str, line: Line, new_text: str) -> str:
    """``text`` with ``line``'s text (after its bullet) replaced by one line of ``new_text``."""
    if "\n" in new_text or "\r" in new_text:
        raise InvalidInput("a memory is one line here: edit the file in the documents editor for more")
    if not new_text.strip():
        raise InvalidInput("a memory's text cannot be empty: forget it instead")
    lines = split_lines(text)
    ending = line.raw[len(line.body) :]
    lines[line.number - 1] = line.prefix + new_text.strip() + ending
    return "".join(lines)


def drop_line(text: str, line: Line) -> str:
    """``text`` without ``line``."""
    lines = split_lines(text)
    del lines[line.number - 1]
    if lines and line.number - 1 == len(lines) and not line.raw.endswith("\n") and lines[-1].endswith("\n"):
        # the last line had no ending: the new last line loses its own, as the file had none
        lines[-1] = lines[-1].rstrip("\n").rstrip("\r")
    return "".join(lines)


def neighbours(text: str, line: Line) -> tuple[str | None, str | None]:
    """The raw lines just before and after ``line`` (to put it back between them later)."""
    lines = split_lines(text)
    before = lines[line.number - 2] if line.number > 1 else None
    after = lines[line.number] if line.number < len(lines) else None
    return before, after


def put_back(text: str, entry: RemovedEntry) -> str:
    """``text`` with a removed line inserted where it was: after its old predecessor, else before its old
    successor, else at its old place (or the end)."""
    lines = split_lines(text)
    raw = entry.raw if entry.raw.endswith("\n") else entry.raw + _endings(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += _endings(text)
    at: int | None = None
    if entry.before is not None and entry.before in lines:
        at = lines.index(entry.before) + 1
    elif entry.after is not None and entry.after in lines:
        at = lines.index(entry.after)
    if at is None:
        at = min(max(entry.line, 0), len(lines))
    lines.insert(at, raw)
    return "".join(lines)


def appended(text: str, fact: str) -> str:
    """``text`` with ``- <fact>`` appended as Gemini's own tool appended it (v0.40–0.43, spec §11):
    nothing before it in an empty file, a line break first when the file does not end in one."""
    ending = _endings(text) if text else "\n"
    line = f"- {fact}{ending}"
    if not text:
        return line
    return text + line if text.endswith("\n") else text + ending + line


def clean_fact(text: str) -> str:
    """A fact as one line: line breaks as spaces, trimmed, leading list markers dropped."""
    fact = " ".join(text.split())
    while fact.startswith(("- ", "* ", "+ ")):
        fact = fact[2:].lstrip()
    return fact


# ---------------------------------------------------------------------- the private folder


def ensure_private(env: GeminiEnv, private: PrivateFolder) -> list[str]:
    """Make sure the private folder a session in ``private.launch`` resolves to exists and is claimed for
    that folder; returns the markers created. For a new slug, the ``.project_root`` markers are created
    exclusively (as Gemini's own claim does), so no other folder can take the slug before Gemini maps it;
    ``projects.json`` is not touched. A marker that appeared meanwhile and names another folder is a
    Conflict (nothing else was written)."""
    if private.how != "new":
        return []
    made: list[str] = []
    for base in (env.tmp_dir, env.history_dir):
        folder = os.path.join(base, private.slug)
        fsio.make_dirs(folder)
        marker = os.path.join(folder, PROJECT_ROOT_FILE)
        try:
            fsio.create_new(marker, private.launch.encode("utf-8"))
            made.append(marker)
        except FileExistsError:
            with open(marker, "rb") as fh:
                owner = fh.read().decode("utf-8", "replace").strip()
            if owner != private.launch:
                raise ReadOnly(
                    f"{marker} now names {owner}: another folder claimed the slug {private.slug} meanwhile; "
                    "nothing was kept — try again"
                ) from None
    return made


# ---------------------------------------------------------------------- the Auto Memory lock


def lock_holder(memory_dir: str, now: float | None = None) -> str | None:
    """Why the Auto Memory folders must not be touched now (a live extraction holds its lock), or None."""
    path = os.path.join(memory_dir, LOCK_NAME)
    try:
        with open(path, "rb") as fh:
            info = json.loads(fh.read(4096).decode("utf-8", "replace"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return None  # Gemini treats an unreadable lock as stale
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int) or not isinstance(info.get("startedAt"), str):
        return None
    pid = info["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's: held (Gemini would call it stale; keepgui stays away)
    except OSError:
        return None
    try:
        started = datetime.fromisoformat(info["startedAt"]).timestamp()
    except ValueError:
        started = None
    now = datetime.now(UTC).timestamp() if now is None else now
    if started is not None and now - started > LOCK_STALE_SECONDS:
        return None
    return (
        f"Gemini's Auto Memory extraction is running (process {pid} holds {path}): keepgui does not touch the "
        "inbox until it is done"
    )


class ExtractionLock:
    """Gemini's Auto Memory lock, taken the way Gemini takes it (exclusive create, ``{"pid", "startedAt"}``)
    so an extraction does not start while keepgui changes the inbox; released on exit."""

    def __init__(self, memory_dir: str) -> None:
        self.path = os.path.join(memory_dir, LOCK_NAME)
        self.stamp: fsio.Stamp | None = None

    def __enter__(self) -> ExtractionLock:
        held = lock_holder(os.path.dirname(self.path))
        if held:
            raise ReadOnly(held)
        if os.path.lexists(self.path):
            # stale by Gemini's own rule: Gemini removes it and takes it; so does keepgui
            fsio.remove_file(self.path)
        body = json.dumps({"pid": os.getpid(), "startedAt": datetime.now(UTC).isoformat().replace("+00:00", "Z")})
        fsio.make_dirs(os.path.dirname(self.path))
        try:
            self.stamp = fsio.create_new(self.path, body.encode("utf-8"))
        except FileExistsError:
            raise ReadOnly(
                f"{self.path} appeared just now: Gemini's Auto Memory started; nothing was changed, try again later"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.stamp is not None:
            try:
                fsio.remove_file(self.path, expect=self.stamp)
            except (OSError, KeepguiError):
                return  # someone replaced it (after a stale takeover): theirs now
