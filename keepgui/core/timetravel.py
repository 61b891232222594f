"""A source as it was at a recorded moment: its files of then in a read-only copy, opened by its own backend (no Qt).

Every view of the past is computed by the same code as the present: :func:`opened_at` writes each
memory file the journal (:mod:`keepgui.core.journal`) recorded for the source as it was at that
moment (its last version at or before it; absent when it did not exist then) into a temporary
folder that mirrors the paths of the machine under one root, and opens the source's own backend on
the copy. Files the journal does not record (settings, transcripts, the project's other files) are
linked to as they are now, and the answer says so.

A source whose files live outside its folder (a project's memory under the agent's home) is mapped
so that the copy finds its own: the copy's backend is opened in an environment (given to it as
:attr:`~keepgui.core.registry.OpenOptions.environ`, this process's own never changed) where the
variables that name a folder holding recorded files (``HOME``, an agent's own ``*_HOME`` or config
folder) point into the copy — so a window may look at a moment while other threads open other
sources — and the
folders the source watches outside its own (:attr:`~keepgui.core.source.Source.also_watched`) are
paired with the copy's — which a backend may name differently, since it derives them from the copy's
path — so each recorded file lands where the copy's backend looks for it. The backend is opened with
the copy's path map (:class:`~keepgui.core.pathmap.RootedPaths`, the seam a remote mirror uses): the
copy's settings name the machine's paths as they do there, and what the backend prints names — and
counts — the machine's paths, so an answer of then is byte for byte what the source gave then.
:meth:`Past.shown` maps what a backend still names by the copy's paths back to the source's.

:func:`parse_when` reads the moment: ISO 8601 (local time when it names no zone), ``now``, or a time
ago (``90s``, ``15m``, ``2h``, ``3d``, ``1w``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from keepgui.core import fsio
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.history import file_key
from keepgui.core.journal import Entry, Journal
from keepgui.core.pathmap import RootedPaths
from keepgui.core.timefmt import now_ms

if TYPE_CHECKING:
    from keepgui.core.registry import OpenOptions
    from keepgui.core.source import Bank, Source

_FOLDER_VARIABLE = re.compile(r"(^|_)(HOME|DIR|ROOT)$")
"""The environment variables that may name an agent's folder (``HOME``, ``CODEX_HOME``, ``CLAUDE_CONFIG_DIR``...)."""
_UNITS = {"s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|min|m|h|d|w)\s*(?:ago)?\s*$", re.IGNORECASE)


def parse_when(text: str, now: int | None = None) -> int:
    """The moment ``text`` names, in epoch ms (see the module docstring); InvalidInput saying what is accepted."""
    now = now_ms() if now is None else now
    given = text.strip()
    if given.lower() == "now":
        return now
    ago = _AGO.match(given)
    if ago:
        return now - int(float(ago.group(1)) * _UNITS[ago.group(2).lower()])
    try:
        moment = datetime.fromisoformat(given[:-1] + "+00:00" if given.endswith(("Z", "z")) else given)
    except ValueError:
        raise InvalidInput(
            f"`{text}` is not a time: give ISO 8601 (2026-03-01, 2026-03-01T14:30, with a zone or in local time), "
            "`now`, or a time ago such as 90s, 15m, 2h, 3d, 1w"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as a person means it
    return int(moment.timestamp() * 1000)


def describe_when(ms: int) -> str:
    """A moment for people: ``2026-03-01 14:30:05`` in local time."""
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class Past:
    """A source as it was at ``at``: ``source`` is its backend opened on the copy under ``root``."""

    source: Source
    original: Source
    root: str
    at: int
    notes: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    """``(the copy's text, the source's)``: paths and names of the copy, longest first."""

    def shown(self, text: str) -> str:
        """``text`` with the copy's paths and names replaced by the source's."""
        for mine, theirs in self.pairs:
            text = text.replace(mine, theirs)
        return text.replace(self.root, "")

    def bank(self, name: str) -> Bank:
        """The copy's bank that is the source's bank ``name``."""
        names = self.source.scan().names
        if name in names:
            return self.source.bank(name)
        for mine, theirs in self.pairs:
            if mine in names and theirs == name:
                return self.source.bank(mine)
        originals = self.original.scan().names
        if len(names) == len(originals) and name in originals:
            return self.source.bank(names[originals.index(name)])
        raise NotFound(f"{self.original.path} had no bank `{name}` at {describe_when(self.at)}")


def recorded_from(journal: Journal, source: Source) -> int | None:
    """When the journal's record of ``source`` starts (epoch ms), or None when it holds nothing of it."""
    firsts = [v[0].at for t in _tracked(journal, source) if (v := journal.versions(t))]
    return min(firsts) if firsts else None


def _tracked(journal: Journal, source: Source) -> list[str]:
    mine = {source.path, file_key(source.path)}
    return sorted(t.path for t in journal.tracked().values() if t.source in mine)


@contextlib.contextmanager
def opened_at(journal: Journal, source: Source, at: int, options: OpenOptions | None = None) -> Iterator[Past]:
    """``source`` as it was at ``at`` (see the module docstring), open while the ``with`` block runs; the
    copy is removed after it. InvalidInput when ``at`` is before the journal's first record of it."""
    paths = _tracked(journal, source)
    start = recorded_from(journal, source)
    if start is None:
        raise InvalidInput(f"keepgui has recorded nothing of {source.path} yet, so it cannot say how it was before")
    if at < start:
        raise InvalidInput(
            f"keepgui's record of {source.path} starts at {describe_when(start)}: "
            f"nothing is known of it at {describe_when(at)}, which is before that"
        )
    root = tempfile.mkdtemp(prefix="keepgui-at-")
    copy = _Copy(journal, root, at, paths)
    try:
        base = dict(os.environ if options is None or options.environ is None else options.environ)
        remapped = {
            name: value
            for name, value in base.items()
            if _names_folder(value) and _FOLDER_VARIABLE.search(name) and not name.startswith("KEEPGUI")
            and any(p.startswith(os.path.realpath(value).rstrip(os.sep) + os.sep) for p in paths)
        }  # fmt: skip
        copy.roots.update(file_key(v) for v in remapped.values())
        copy.roots.add(file_key(source.path))
        project = options.project if options is not None else None
        if project:
            copy.roots.add(file_key(project))
        outside = [file_key(a) for a in source.also_watched]
        copy.roots.update(outside)
        copy.copied.update([file_key(source.path), *outside])
        named = [source.path, *([project] if project else [])]
        above = [a for n in named for a in _ancestors(n, root)]
        copy.above.update(above)
        for folder in named:  # the source's own folder (and the project) are there even with no recorded file
            copy.make_dirs(copy.mapped(file_key(folder)), file_key(folder))
        copy.place([p for p in paths if not _under_any(p, outside)], {})
        copy.fill()
        environ = {**base, **{name: copy.mapped(os.path.realpath(v)) for name, v in remapped.items()}}
        opened = _open(source, copy, project, environ)
        theirs = [file_key(a) for a in opened.also_watched]
        pairs = dict(zip(outside, theirs, strict=False))
        if len(theirs) != len(outside):
            copy.notes.append("the copy watches other folders than the source does: some files may be as they are now")
        copy.place([p for p in paths if _under_any(p, outside)], pairs)
        copy.fill()
        copy.seal()
        opened = _open(source, copy, project, environ)
        past = Past(opened, source, root, at, copy.notes)
        past.pairs = _pairs(past, pairs)
        yield past
    finally:
        _remove(root)


def _open(source: Source, copy: _Copy, project: str | None, environ: Mapping[str, str]) -> Source:
    """The source's backend opened on the copy, in ``environ`` (its folders pointing into the copy; this
    process's environment untouched), told that the copy repeats the machine's paths under its root
    (:class:`~keepgui.core.pathmap.RootedPaths`): what it prints names, and counts, the machine's paths;
    and asked as of the moment (``OpenOptions.as_of``): what depends on the clock is computed as then."""
    from keepgui.core import registry

    path, where = copy.mapped(file_key(source.path)), project and copy.mapped(file_key(project))
    options = registry.OpenOptions(
        reload_command="", project=where, paths=RootedPaths(copy.root), as_of=copy.at, environ=environ
    )
    return registry.open_source(source.kind, path, options)


def _pairs(past: Past, pairs: dict[str, str]) -> list[tuple[str, str]]:
    found = [(mine, theirs) for theirs, mine in pairs.items() if mine != theirs]
    names, originals = past.source.scan().names, past.original.scan().names
    if len(names) == len(originals):
        found += [(m, t) for m, t in zip(names, originals, strict=True) if m != t and len(m) >= 8]
    for mine, theirs in list(found):
        m, t = os.path.basename(os.path.dirname(mine)), os.path.basename(os.path.dirname(theirs))
        if m != t and len(m) >= 8:  # a folder named after the path (a project's slug)
            found.append((m, t))
    return sorted(set(found), key=lambda p: -len(p[0]))


def _ancestors(path: str, root: str) -> list[str]:
    """The folders above ``path`` that settings may name (a repository trusted, a workspace), down from
    three levels deep, none above the copy's own folder."""
    found = []
    folder = os.path.dirname(file_key(path))
    while folder.count(os.sep) >= 3 and not root.startswith(folder.rstrip(os.sep) + os.sep):
        found.append(folder)
        folder = os.path.dirname(folder)
    return found


def _names_folder(value: str) -> bool:
    return (
        os.path.isabs(value) and os.pathsep not in value and os.path.realpath(value) != os.sep and os.path.isdir(value)
    )


def _under_any(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


class _Copy:
    """The copy being made: which folders are real (made here) and what each mirrors."""

    def __init__(self, journal: Journal, root: str, at: int, recorded: Sequence[str]) -> None:
        self.journal, self.root, self.at = journal, root, at
        self.recorded = set(recorded)
        self.holding: set[str] = set()
        """Every folder above a recorded file: never linked (what it held then is made here)."""
        for path in recorded:
            folder = os.path.dirname(path)
            while folder not in self.holding and folder != os.path.dirname(folder):
                self.holding.add(folder)
                folder = os.path.dirname(folder)
        self.roots: set[str] = set()
        self.real: dict[str, str | None] = {}
        """A folder of the copy → the folder of the machine it mirrors (None: none; made only to hold others)."""
        self.placed: set[str] = set()
        self.notes: list[str] = []
        self.copied: set[str] = set()
        """The source's own folders: small things in them are copied; elsewhere (the home) only linked."""
        self.above: set[str] = set()
        """The folders above the source's whose other entries are linked (a repository's root marker)."""

    def mapped(self, path: str) -> str:
        """Where the machine's ``path`` is in the copy (below the root, by its absolute path)."""
        return os.path.join(self.root, path.lstrip(os.sep))

    def place(self, paths: Sequence[str], pairs: dict[str, str]) -> None:
        """Write each recorded file as it was at the moment, where the copy's backend will look for it."""
        for path in paths:
            versions = self.journal.versions(path, until=self.at)
            if not versions or versions[-1].gone:
                continue  # not there at that moment
            target = self._target(path, pairs)
            self.make_dirs(os.path.dirname(target), os.path.dirname(path))
            self._write(target, versions[-1], versions)
            self.placed.add(target)

    def _target(self, path: str, pairs: dict[str, str]) -> str:
        for theirs, mine in pairs.items():
            if _under_any(path, [theirs]):
                return os.path.join(mine, os.path.relpath(path, theirs)) if path != theirs else mine
        return self.mapped(path)

    def make_dirs(self, folder: str, mirrors: str | None) -> None:
        """Make ``folder`` (a folder of the copy mirroring ``mirrors``) and the folders above it, top down
        (a link this copy made in the way is replaced by a real folder: nothing is written through one)."""
        chain: list[tuple[str, str | None]] = []
        while folder.startswith(self.root) and folder not in self.real:
            chain.append((folder, mirrors))
            folder, mirrors = os.path.dirname(folder), os.path.dirname(mirrors) if mirrors else None
        for made, mirrored in reversed(chain):
            if os.path.islink(made):
                os.unlink(made)
            fsio.make_dirs(made)
            self.real[made] = mirrored if mirrored and os.path.isdir(mirrored) else None

    def _write(self, target: str, entry: Entry, versions: list[Entry]) -> None:
        data = self.journal.read(entry, versions)
        # A new file in keepgui's own temporary copy (sealed read-only, removed after): never an agent's,
        # so not through fsio, whose write hooks would offer the copy's files to the journal.
        with open(target, "wb") as fh:
            fh.write(data)
        when = entry.mtime or entry.at * 1_000_000
        os.utime(target, ns=(when, when))

    def fill(self) -> None:
        """Link every other file and folder of a mirrored folder (at or below a root) as it is now."""
        linked = 0
        for folder, mirrors in sorted(self.real.items()):
            if mirrors is None:
                continue
            inside = _under_any(file_key(mirrors), sorted(self.roots))
            if not inside and file_key(mirrors) not in self.above:
                continue
            try:
                names = os.listdir(mirrors)
            except OSError:
                continue
            for name in names:
                mine, theirs = os.path.join(folder, name), os.path.join(mirrors, name)
                key = file_key(theirs)
                if mine in self.real or mine in self.placed or key in self.recorded or key in self.holding:
                    continue
                if os.path.lexists(mine):
                    continue
                if _under_any(file_key(mirrors), sorted(self.copied)) or not os.path.isdir(theirs):
                    _bring(theirs, mine)
                else:  # the home's other folders, a repository's marker above the source: linked, never copied
                    os.symlink(theirs, mine)
                linked += 1
        note = "files keepgui does not record (settings, transcripts, other files of the folders) are as they are now"
        if linked and note not in self.notes:
            self.notes.append(note)

    def seal(self) -> None:
        """Make the copy's own files and folders read-only."""
        for target in self.placed:
            os.chmod(target, stat.S_IRUSR | stat.S_IRGRP)
        for folder in self.real:
            os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)


COPIED = 16 * 1024 * 1024
"""Files and folders (of up to :data:`COPIED_FILES` files) up to this size are copied; larger ones linked."""
COPIED_FILES = 512


def _bring(theirs: str, mine: str) -> None:
    """What ``theirs`` holds now, at ``mine``: a copy (times kept) when small, else a link to it (a backend
    that ignores links, as some do for safety, then does not see it). A copied settings file names the
    machine's paths as it does there: the backend reads it through the copy's path map."""
    try:
        if os.path.isdir(theirs) and not os.path.islink(theirs) and _small_tree(theirs):
            shutil.copytree(theirs, mine, symlinks=True)
            return
        if os.path.isfile(theirs) and not os.path.islink(theirs) and os.path.getsize(theirs) <= COPIED:
            shutil.copy2(theirs, mine)
            return
    except OSError:
        shutil.rmtree(mine, ignore_errors=True)
    if not os.path.lexists(mine):
        os.symlink(theirs, mine)


def _small_tree(folder: str) -> bool:
    count, size = 0, 0
    for here, _dirs, files in os.walk(folder):
        for name in files:
            count += 1
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(here, name)).st_size
            if count > COPIED_FILES or size > COPIED:
                return False
    return True


def _remove(root: str) -> None:
    for folder, dirs, _files in os.walk(root):
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, stat.S_IRWXU)
    with contextlib.suppress(OSError):
        os.chmod(root, stat.S_IRWXU)
    shutil.rmtree(root, ignore_errors=True)
