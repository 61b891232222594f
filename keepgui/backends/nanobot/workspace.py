"""A nanobot workspace: where it is, which files keepgui may write, and what it may only read.

Finding it (spec §5.1), the way nanobot itself resolves ``agents.defaults.workspace``:

1. a path the person gave (``--workspace`` or a choice in the window);
2. else ``agents.defaults.workspace`` from nanobot's ``config.json``
   (``~/.nanobot/config.json`` unless another config file is named). Keys may be
   camelCase or snake_case. When the file does not set it,
   ``NANOBOT_AGENTS__DEFAULTS__WORKSPACE`` does (nanobot's pydantic settings
   give values in the file priority over the environment; checked against
   nanobot-ai 0.3.5). ``~`` is expanded;
3. else ``~/.nanobot/workspace``.

A folder is a nanobot workspace when ``memory/MEMORY.md`` or
``memory/history.jsonl`` exists. Several :class:`Workspace` objects can be open
at once; each is only a path plus rules, and holds no file open.

Writing: :meth:`Workspace.write` is the one door to the workspace. It refuses
(:class:`~keepgui.core.errors.ReadOnly`) nanobot's own bookkeeping —
``memory/history.jsonl``, ``memory/.cursor``, ``memory/.dream_cursor`` (and the
``.dreamCursor`` spelling of ports), anything under ``.git/`` and
``.gitignore`` — and anything outside the workspace, then replaces the file
atomically through :mod:`keepgui.core.fsio` with the caller's stamp, so a change
made on disk since it was read is refused, never overwritten.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, KeepguiError, ReadOnly, Unreadable
from keepgui.core.jsonl import json_objects
from keepgui.core.source import Notice as Notice  # a remark about a file; the workspace modules use it from here

KEEP_MD = "keep.md"
AGENTS_MD = "AGENTS.md"
USER_MD = "USER.md"
SOUL_MD = "SOUL.md"
MEMORY_MD = "memory/MEMORY.md"
HISTORY_JSONL = "memory/history.jsonl"
CURSOR = "memory/.cursor"
DREAM_CURSORS = ("memory/.dream_cursor", "memory/.dreamCursor")
PROJECTS_DIR = "projects"

ENV_WORKSPACE = "NANOBOT_AGENTS__DEFAULTS__WORKSPACE"
"""nanobot's environment setting for ``agents.defaults.workspace`` (prefix ``NANOBOT_``, ``__`` nests)."""

FORBIDDEN_FILES = frozenset({HISTORY_JSONL, CURSOR, *DREAM_CURSORS, ".gitignore"})
"""Workspace files keepgui never writes (spec §5.2); ``.git/`` is refused as a whole folder."""

FORBIDDEN_DIRS = (".git",)

DOCUMENT_LIMIT = 16 * 1024 * 1024
"""keepgui refuses to load a memory file bigger than this (nanobot's files are a few KB)."""

_HISTORY_LIMIT = 256 * 1024 * 1024


# ---------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class Discovery:
    """Where the workspace was found, and how (``source`` is ``"given"``, ``"config"``,
    ``"environment"`` or ``"default"``). ``note`` explains a config file that could not be used."""

    path: str
    source: str
    config_path: str
    note: str = ""


def _home(environ: Mapping[str, str]) -> str:
    home = environ.get("HOME") or environ.get("USERPROFILE")
    return home or os.path.expanduser("~")


def expand_user(path: str, environ: Mapping[str, str] | None = None) -> str:
    """``~`` and ``~/x`` expanded against ``environ``'s HOME (``os.environ`` by default)."""
    environ = os.environ if environ is None else environ
    if path == "~" or path.startswith(("~/", "~" + os.sep)):
        return _home(environ) + path[1:]
    return os.path.expanduser(path)


def default_config_path(environ: Mapping[str, str] | None = None) -> str:
    """nanobot's default config file, ``~/.nanobot/config.json``."""
    environ = os.environ if environ is None else environ
    return os.path.join(_home(environ), ".nanobot", "config.json")


def default_workspace_path(environ: Mapping[str, str] | None = None) -> str:
    """nanobot's default workspace, ``~/.nanobot/workspace``."""
    environ = os.environ if environ is None else environ
    return os.path.join(_home(environ), ".nanobot", "workspace")


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _lookup(obj: object, *keys: str) -> object:
    """Follow ``keys`` through nested objects, accepting each key in snake_case or camelCase."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        for spelling in (key, _camel(key)):
            if spelling in obj:
                obj = obj[spelling]
                break
        else:
            return None
    return obj


def _env_workspace(environ: Mapping[str, str]) -> str | None:
    # pydantic-settings matches environment names case-insensitively by default
    for name, value in environ.items():
        if name.upper() == ENV_WORKSPACE and value:
            return value
    return None


def discover(config_path: str | None = None, environ: Mapping[str, str] | None = None) -> Discovery:
    """Resolve the workspace nanobot would use (steps 2–3 of spec §5.1), saying how."""
    environ = os.environ if environ is None else environ
    config = expand_user(config_path, environ) if config_path else default_config_path(environ)
    note = ""
    value = None
    try:
        data, _stamp = fsio.read_stamped(config, limit=DOCUMENT_LIMIT)
    except (OSError, KeepguiError) as exc:
        data, note = None, f"{config} could not be read ({exc}); using the default workspace"
    if data is not None:
        try:
            parsed = json.loads(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            parsed, note = None, f"{config} is not valid JSON ({exc}); nanobot would refuse it too"
        if parsed is not None and not isinstance(parsed, dict):
            parsed, note = None, f"{config} does not hold a JSON object; nanobot would refuse it too"
        value = _lookup(parsed, "agents", "defaults", "workspace") if parsed is not None else None
        if value is not None and not isinstance(value, str):
            note = f"{config}: agents.defaults.workspace is not a string; ignored"
            value = None
    if isinstance(value, str) and value.strip():
        return Discovery(os.path.abspath(expand_user(value.strip(), environ)), "config", config, note)
    env = _env_workspace(environ)
    if env:
        return Discovery(os.path.abspath(expand_user(env.strip(), environ)), "environment", config, note)
    return Discovery(default_workspace_path(environ), "default", config, note)


def discover_workspace(config_path: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The absolute path of the workspace nanobot would use (see :func:`discover`)."""
    return discover(config_path, environ).path


# ---------------------------------------------------------------------- history.jsonl


@dataclass(frozen=True)
class HistoryRecord:
    """One valid record of ``memory/history.jsonl`` (read-only for keepgui).

    ``line`` is its 1-based line number in the file.
    """

    cursor: int
    timestamp: str
    content: str
    session_key: str | None
    line: int

    def to_obj(self) -> dict[str, Any]:
        """The record as nanobot writes it, plus ``line``."""
        obj = {"cursor": self.cursor, "timestamp": self.timestamp, "content": self.content}
        if self.session_key is not None:
            obj["session_key"] = self.session_key
        obj["line"] = self.line
        return obj


@dataclass(frozen=True)
class SkippedLine:
    """A line of history.jsonl nanobot would skip, and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class HistoryRead:
    """The valid records of history.jsonl, and the lines skipped as nanobot skips them."""

    records: tuple[HistoryRecord, ...]
    skipped: tuple[SkippedLine, ...]


def parse_history(data: bytes) -> HistoryRead:
    """Read history.jsonl bytes the tolerant way nanobot does.

    Skipped: blank lines are ignored silently; non-JSON, non-object, a missing,
    bool or negative cursor, a non-string timestamp/content/session_key are
    skipped and reported.
    """
    records: list[HistoryRecord] = []
    skipped: list[SkippedLine] = []
    for number, obj, why in json_objects(data):
        if obj is None:
            skipped.append(SkippedLine(number, why))
            continue
        cursor = obj.get("cursor")
        if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
            skipped.append(SkippedLine(number, f"invalid cursor {cursor!r}"))
            continue
        timestamp, content, key = obj.get("timestamp"), obj.get("content"), obj.get("session_key")
        if not isinstance(timestamp, str) or not isinstance(content, str) or not (key is None or isinstance(key, str)):
            skipped.append(SkippedLine(number, "timestamp, content or session_key is not a string"))
            continue
        records.append(HistoryRecord(cursor, timestamp, content, key, number))
    return HistoryRead(tuple(records), tuple(skipped))


# ---------------------------------------------------------------------- the workspace


class Workspace:
    """One nanobot workspace folder: its memory files, and the one door keepgui writes them through.

    ``config_path`` (optional) is the nanobot config file this workspace came
    from; its folder holds nanobot's session files, used to guess whether Dream
    is running. Holding a Workspace opens nothing.
    """

    def __init__(self, root: str | os.PathLike[str], config_path: str | None = None) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.config_path = config_path

    def __repr__(self) -> str:
        return f"Workspace({self.root!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and os.path.realpath(self.root) == os.path.realpath(other.root)

    def __hash__(self) -> int:
        return hash(os.path.realpath(self.root))

    # ---------------------------------------------------------------- paths

    def path(self, rel: str) -> str:
        """The absolute path of ``rel`` (a ``/``-separated path inside the workspace)."""
        return os.path.join(self.root, *rel.split("/"))

    @property
    def keep_md(self) -> str:
        """``<workspace>/keep.md``: the keep skill's store (not under memory/)."""
        return self.path(KEEP_MD)

    @property
    def agents_md(self) -> str:
        """``<workspace>/AGENTS.md``: rules for the agent; Dream never edits it."""
        return self.path(AGENTS_MD)

    @property
    def user_md(self) -> str:
        """``<workspace>/USER.md`` (Dream-managed)."""
        return self.path(USER_MD)

    @property
    def soul_md(self) -> str:
        """``<workspace>/SOUL.md`` (Dream-managed)."""
        return self.path(SOUL_MD)

    @property
    def memory_md(self) -> str:
        """``<workspace>/memory/MEMORY.md`` (Dream-managed)."""
        return self.path(MEMORY_MD)

    @property
    def history_jsonl(self) -> str:
        """``<workspace>/memory/history.jsonl`` (read-only for keepgui)."""
        return self.path(HISTORY_JSONL)

    def exists(self) -> bool:
        """True when the folder exists."""
        return os.path.isdir(self.root)

    def is_workspace(self) -> bool:
        """True when ``memory/MEMORY.md`` or ``memory/history.jsonl`` exists (spec §5.1)."""
        return os.path.isfile(self.memory_md) or os.path.isfile(self.history_jsonl)

    def has_dream_git(self) -> bool:
        """True when nanobot's memory git (``<workspace>/.git``) exists, so Dream commits edits."""
        return os.path.isdir(self.path(".git"))

    def projects(self) -> list[str]:
        """The slugs of ``projects/<slug>/`` folders (the /project skill's notes), sorted."""
        folder = self.path(PROJECTS_DIR)
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        return sorted(n for n in names if not n.startswith(".") and os.path.isdir(os.path.join(folder, n)))

    # ---------------------------------------------------------------- the write rule

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` as a ``/``-separated path relative to the workspace.

        Refuses (:class:`ReadOnly`) a path outside the workspace, symbolic links
        followed, so a link cannot smuggle a write out of it or into ``.git``.
        """
        path = os.fspath(path)
        full = path if os.path.isabs(path) else self.path(path)
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(full)
        rel = os.path.relpath(real, real_root)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
            raise ReadOnly(f"{full} is outside the nanobot workspace {self.root}; keepgui writes only inside it")
        return rel.replace(os.sep, "/")

    def check_writable(self, path: str | os.PathLike[str]) -> str:
        """Return the workspace-relative path, or raise :class:`ReadOnly` if keepgui must never write it."""
        rel = self.relative(path)
        first = rel.split("/", 1)[0]
        if rel in FORBIDDEN_FILES or first in FORBIDDEN_DIRS or rel == ".":
            raise ReadOnly(
                f"{self.path(rel)} belongs to nanobot's own bookkeeping (history, cursors, memory git); "
                "keepgui only reads it. Change it through nanobot (for example /dream-restore), not by hand."
            )
        return rel

    def write(self, path: str | os.PathLike[str], data: bytes, *, expect: fsio.Stamp | None) -> fsio.Stamp:
        """Atomically replace a workspace file, refusing forbidden files and unseen changes.

        ``expect`` is the stamp the caller read (``Stamp.missing()`` to create);
        passing ``None`` is refused, because every write into a workspace must
        prove it saw what it replaces. Missing parent folders are created.
        """
        if expect is None:
            raise InvalidInput("a workspace write needs the stamp of what was read (expect=...)")
        rel = self.check_writable(path)
        full = self.path(rel)
        fsio.make_dirs(os.path.dirname(full))
        return fsio.atomic_write(full, data, expect=expect)

    # ---------------------------------------------------------------- reading

    def read(
        self, rel: str, limit: int = DOCUMENT_LIMIT, *, settled: bool = False, before: int | None = None
    ) -> tuple[bytes | None, fsio.Stamp]:
        """``(bytes, stamp)`` of a workspace file, ``(None, missing)`` when it does not exist.

        ``settled``: a read a whole-file write is based on (:func:`keepgui.core.fsio.read_settled`;
        ``before`` is the size keepgui last saw): a file caught mid-write is looked at again, and
        :class:`~keepgui.core.fsio.Unsettled` raised when it does not hold still."""
        path = self.path(rel)
        try:
            if settled:
                return fsio.read_settled(path, limit=limit, before=before)
            return fsio.read_stamped(path, limit=limit)
        except fsio.Unsettled:
            raise
        except KeepguiError as exc:
            raise Unreadable(path, str(exc).removeprefix(path + " ").strip() + "; check the file") from None
        except OSError as exc:
            raise Unreadable(path, f"cannot be read ({exc.strerror or exc}); check its permissions") from None

    def history(self) -> HistoryRead:
        """The records of ``memory/history.jsonl`` (empty when missing), read like nanobot reads them."""
        data, _stamp = self.read(HISTORY_JSONL, limit=_HISTORY_LIMIT)
        return parse_history(data or b"")

    def history_mentioning(self, text: str) -> list[HistoryRecord]:
        """History records whose content mentions ``text`` (case-insensitive): where a fact came from."""
        needle = " ".join(text.casefold().split())
        if not needle:
            return []
        return [r for r in self.history().records if needle in " ".join(r.content.casefold().split())]

    def dream_cursor(self) -> int | None:
        """The last history cursor Dream finished (``.dream_cursor`` or ``.dreamCursor``), or None."""
        for rel in DREAM_CURSORS:
            data, _stamp = self.read(rel, limit=4096)
            if data is None:
                continue
            try:
                return int(data.decode("ascii").strip())
            except (UnicodeDecodeError, ValueError):
                return None
        return None

    # ---------------------------------------------------------------- Dream sessions

    def session_dirs(self) -> list[str]:
        """Folders where nanobot may keep this workspace's session files (best effort).

        ``<config dir>/sessions/<workspace-id>/`` (the id is in
        ``<workspace>/.nanobot/workspace-id``; without it every namespace is
        searched), plus the legacy ``<workspace>/sessions`` and ``~/.nanobot/sessions``.
        """
        config = self.config_path or default_config_path()
        root = os.path.join(os.path.dirname(config), "sessions")
        found: list[str] = []
        marker, _stamp = self.read(".nanobot/workspace-id", limit=4096)
        wid = marker.decode("ascii", "replace").strip() if marker else ""
        if re.fullmatch(r"[0-9a-f]{32}", wid):
            found.append(os.path.join(root, wid))
        else:
            with contextlib.suppress(OSError):  # no sessions folder: nothing to search
                found.extend(
                    os.path.join(root, n) for n in sorted(os.listdir(root)) if re.fullmatch(r"[0-9a-f]{32}", n)
                )
        found.append(root)
        found.append(self.path("sessions"))
        found.append(os.path.join(os.path.expanduser("~"), ".nanobot", "sessions"))
        return [d for d in dict.fromkeys(found) if os.path.isdir(d)]

    def dream_session_files(self) -> Iterator[tuple[str, float]]:
        """``(path, mtime)`` of session files whose key is ``dream:*`` (both file-name schemes)."""
        for folder in self.session_dirs():
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.endswith(".jsonl") and is_dream_session_stem(name[: -len(".jsonl")]):
                    full = os.path.join(folder, name)
                    try:
                        yield full, os.stat(full).st_mtime
                    except OSError:
                        continue


def is_dream_session_stem(stem: str) -> bool:
    """True for a session file name (without ``.jsonl``) of a ``dream:*`` session.

    Newer nanobot names files by the URL-safe base64 of the key; older ones by
    the key with ``:`` turned into ``_``.
    """
    if stem.startswith(("dream_", "dream:")):
        return True
    try:
        decoded = base64.urlsafe_b64decode(stem + "=" * (-len(stem) % 4)).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    return decoded.startswith("dream:")
