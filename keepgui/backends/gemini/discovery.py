"""Which files a Gemini CLI session launched in a folder loads, in which tier and order (no Qt).

Four tiers are read at start (spec §2, §4):

* **global** — ``<gd>/<name>`` for each configured name, in that order;
* **private** — ``<gd>/tmp/<slug>/memory/MEMORY.md``, or, only when it is absent, the legacy
  ``<gd>/tmp/<slug>/memory/<name>`` files;
* **extension** — the context files of every active extension, sorted as plain strings;
* **project** — for each workspace folder (the launch folder and the include folders), every
  ``<dir>/<name>`` from it up to its project root (the nearest folder with a boundary marker, or the
  folder itself when there is none), all of them sorted as plain strings — not root → folder — and
  only when the folder is trusted.

A file reached by two paths is read once, under the first path in the order global, extension,
project, private. Files below the launch folder load later, when a tool touches their folder (JIT);
files above the project root, a legacy private file hidden by ``MEMORY.md`` and the notes beside
``MEMORY.md`` never load at start: :func:`discover` lists them too, each with the reason.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from keepgui.backends.gemini.imports import Processed, Reader, process, read_text
from keepgui.backends.gemini.jstext import decode_uri_component, is_subpath, js_sorted, js_trim, node_resolve
from keepgui.backends.gemini.layout import (
    MEMORY_INDEX,
    GeminiEnv,
    PrivateFolder,
    Settings,
    Trust,
    expand_vars,
    load_settings,
    read_json,
    resolve_private,
    trust_of,
)
from keepgui.core.pathmap import LOCAL, PathMap

GLOBAL, PRIVATE, EXTENSION, PROJECT = "global", "private", "extension", "project"

LOADED, EMPTY, LATER, NEVER = "loaded", "empty", "later", "never"
"""A file's state: loaded at start; loaded but empty after trimming (no block); loads later (JIT); never loads."""

JIT_DIR_LIMIT = 2000
"""At most this many folders below a workspace folder are searched for files that load later."""

_SKIP_DIRS = frozenset({".git", "node_modules", ".hg", ".svn", "__pycache__", ".venv"})
_EXTENSION_NAME = re.compile(r"^[a-zA-Z0-9-]+$")


@dataclass
class MemoryFile:
    """One file of a session's memory, loaded or not.

    ``path`` is the path Gemini names it by; ``tier`` one of global, private, extension, project; ``state`` one of
    :data:`LOADED`, :data:`EMPTY`, :data:`LATER`, :data:`NEVER`; ``reason`` why it is not loaded (or
    when it loads); ``raw`` the file's text as read (None when unreadable); ``processed`` the text
    after import processing; ``extension`` the extension's name for that tier; ``folder`` the folder
    that makes it load later.
    """

    path: str
    tier: str
    state: str
    reason: str = ""
    raw: str | None = None
    processed: Processed | None = None
    extension: str = ""
    folder: str = ""
    size: int = 0

    @property
    def loaded(self) -> bool:
        """True when its text is in the next session's context (a non-empty block)."""
        return self.state == LOADED


@dataclass
class Discovery:
    """Every memory file of a session launched in ``cwd``: the tiers in load order, then the rest."""

    cwd: str
    env: GeminiEnv
    settings: Settings
    trust: Trust
    trusted: bool
    private: PrivateFolder
    workspace: tuple[str, ...]
    files: list[MemoryFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    extensions: list[tuple[str, bool, str]] = field(default_factory=list)

    def tier(self, tier: str) -> list[MemoryFile]:
        """The files of one tier that are read at start, in Gemini's order."""
        return [f for f in self.files if f.tier == tier and f.state in (LOADED, EMPTY)]

    def later(self) -> list[MemoryFile]:
        """The files that load later (a tool touches their folder)."""
        return [f for f in self.files if f.state == LATER]

    def never(self) -> list[MemoryFile]:
        """The files that exist and never load at start (with why)."""
        return [f for f in self.files if f.state == NEVER]


def _readable(path: str) -> bool:
    return os.access(path, os.R_OK)


def global_paths(env: GeminiEnv, names: Sequence[str]) -> list[str]:
    """The global files that exist and are readable, in name order."""
    return [p for p in (node_resolve(os.path.join(env.gemini_dir, n)) for n in names) if _readable(p)]


def private_paths(memory_dir: str, names: Sequence[str]) -> list[str]:
    """``MEMORY.md`` when readable, else the legacy private files."""
    index = node_resolve(os.path.join(memory_dir, MEMORY_INDEX))
    if _readable(index):
        return [index]
    return [p for p in (node_resolve(os.path.join(memory_dir, n)) for n in names) if _readable(p)]


def project_root(folder: str, markers: Sequence[str]) -> str | None:
    """The nearest folder from ``folder`` up holding a boundary marker (None: none, or no markers)."""
    if not markers:
        return None
    current = node_resolve(folder)
    while True:
        for marker in markers:
            if os.path.isabs(marker) or ".." in marker:
                continue
            if os.path.exists(os.path.join(current, marker)):
                return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def upward(start: str, ceiling: str, names: Sequence[str], gemini_dir: str) -> list[str]:
    """The context files from ``start`` up to ``ceiling`` (inclusive), stopping at the Gemini dir itself."""
    found: list[str] = []
    current = node_resolve(start)
    stop, gd = node_resolve(ceiling), node_resolve(gemini_dir)
    while True:
        if current == gd:
            break
        here = [p for p in (node_resolve(os.path.join(current, n)) for n in names) if _readable(p)]
        found[:0] = here
        parent = os.path.dirname(current)
        if current == stop or parent == current:
            break
        current = parent
    return found


def workspace_dirs(env: GeminiEnv, cwd: str, settings: Settings) -> tuple[list[str], list[str]]:
    """The workspace folders (the launch folder first, then include folders; real paths, each once) and
    the include folders skipped (missing, not a folder)."""
    out: list[str] = []
    skipped: list[str] = []
    given = [cwd, *settings.include_dirs]
    ide = env.environ.get("GEMINI_CLI_IDE_WORKSPACE_PATH", "")
    real_cwd = os.path.realpath(cwd)
    given += [p for p in ide.split(os.pathsep) if p.strip() and os.path.realpath(p.strip()) != real_cwd]
    for directory in given:
        absolute = node_resolve(cwd, directory)
        if not os.path.isdir(absolute):
            skipped.append(f"{directory}: {'not a folder' if os.path.exists(absolute) else 'does not exist'}")
            continue
        real = os.path.realpath(absolute)
        if real not in out:
            out.append(real)
    return out, skipped


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def dedupe(paths: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Paths deduplicated by file identity (device and inode; the first path wins, an unstat-able path
    is kept), and ``dropped → the path kept for it``."""
    kept: list[str] = []
    by_id: dict[tuple[int, int], str] = {}
    dropped: dict[str, str] = {}
    for path in dict.fromkeys(paths):
        ident = _identity(path)
        if ident is None:
            kept.append(path)
        elif ident in by_id:
            dropped[path] = by_id[ident]
        else:
            by_id[ident] = path
            kept.append(path)
    return kept, dropped


# ---------------------------------------------------------------------- extensions


def _slashed(path: str) -> str:
    out = path.replace("\\", "/")
    out = out if out.startswith("/") else "/" + out
    return out if out.endswith("/") else out + "/"


def _glob_regex(glob: str) -> re.Pattern[str]:
    escaped = re.sub(r"[.+?^${}()|\[\]\\]", lambda m: "\\" + m.group(0), glob)
    return re.compile("^" + re.sub(r"(/?)\*", lambda m: f"({m.group(1)}.*)?", escaped) + "$")


def _enabled(env: GeminiEnv, name: str, cwd: str) -> bool:
    """Gemini's extension enablement for ``cwd``: the last rule of ``extension-enablement.json`` that
    matches the folder wins (``!`` disables, a trailing ``*`` takes sub-folders too)."""
    config, _problem = read_json(os.path.join(env.extensions_dir, "extension-enablement.json"), comments=False)
    entry = config.get(name) if isinstance(config, dict) else None
    rules = entry.get("overrides") if isinstance(entry, dict) else None
    enabled = True
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, str):
            continue
        disable = rule.startswith("!")
        base = rule[1:] if disable else rule
        subdirs = base.endswith("*")
        base = base[:-1] if subdirs else base
        if _glob_regex(base + ("*" if subdirs else "")).match(_slashed(cwd)):
            enabled = not disable
    return enabled


def _hydrate(value: object, values: dict[str, str]) -> object:
    """``${extensionPath}``-style variables in every string of an extension's config."""
    if isinstance(value, str):
        return re.sub(r"\$\{(.*?)\}", lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_hydrate(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _hydrate(v, values) for k, v in value.items()}
    return value


def _context_names(config: dict[str, object]) -> list[object]:
    names = config.get("contextFileName")
    if not names:
        return ["GEMINI.md"]
    return list(names) if isinstance(names, list) else [names]


def extension_files(env: GeminiEnv, cwd: str, settings: Settings) -> tuple[list[str], list[tuple[str, bool, str]]]:
    """The context files of the active extensions (deduplicated, sorted), and every extension found as
    ``(name, active, problem)``."""
    found: list[tuple[str, bool, str]] = []
    files: list[str] = []
    if not settings.extensions_enabled or not os.path.isdir(env.extensions_dir):
        return files, found
    names: set[str] = set()
    for sub in sorted(os.listdir(env.extensions_dir)):
        folder = os.path.join(env.extensions_dir, sub)
        if not os.path.isdir(folder):
            continue
        meta, _p = read_json(os.path.join(folder, ".gemini-extension-install.json"), comments=False)
        if isinstance(meta, dict) and meta.get("type") == "link" and isinstance(meta.get("source"), str):
            folder = meta["source"]
        config, problem = read_json(os.path.join(folder, "gemini-extension.json"), comments=False)
        if not isinstance(config, dict) or not config.get("name") or not config.get("version"):
            found.append((sub, False, problem or f"{folder}: no gemini-extension.json with a name and version"))
            continue
        hydrate = {"extensionPath": folder, "workspacePath": cwd, "/": os.sep, "pathSeparator": os.sep}
        config = expand_vars(_hydrate(config, hydrate), env.environ)
        assert isinstance(config, dict)
        name = str(config.get("name"))
        if not _EXTENSION_NAME.match(name):
            found.append((name, False, f"{folder}: the extension name {name!r} is not valid; Gemini skips it"))
            continue
        if name in names:
            found.append((name, False, f"{folder}: a second extension named {name}; Gemini refuses to start"))
            continue
        names.add(name)
        active = _enabled(env, name, cwd)
        found.append((name, active, ""))
        if not active:
            continue
        for given in _context_names(config):
            path = _extension_file(folder, given)
            if path is not None and os.path.exists(path):
                files.append(path)
    return js_sorted(list(dict.fromkeys(files))), found


def _extension_file(folder: str, given: object) -> str | None:
    if not isinstance(given, str) or not given.strip() or "\0" in given or os.path.isabs(given):
        return None
    try:
        decoded = decode_uri_component(given)
    except ValueError:
        decoded = given
    if ".." in given or ".." in decoded:
        return None
    root = node_resolve(folder)
    path = node_resolve(root, given)
    return path if is_subpath(root, path) else None


# ---------------------------------------------------------------------- the files that do not load


def below(workspace: Sequence[str], names: Sequence[str], loaded: set[str]) -> tuple[list[MemoryFile], bool]:
    """Context files below the workspace folders (they load later, when a tool touches their folder),
    and whether the search stopped at :data:`JIT_DIR_LIMIT` folders."""
    out: list[MemoryFile] = []
    seen = 0
    for top in workspace:
        for folder, dirs, _files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            seen += 1
            if seen > JIT_DIR_LIMIT:
                return out, True
            if folder == top:
                continue
            for name in names:
                path = os.path.join(folder, name)
                if path not in loaded and os.path.isfile(path):
                    rel = os.path.relpath(folder, top)
                    out.append(
                        MemoryFile(
                            path,
                            PROJECT,
                            LATER,
                            f"loads later: when a tool reads or writes something in {rel}/",
                            folder=folder,
                        )
                    )
    return out, False


def above(workspace: Sequence[str], names: Sequence[str], markers: Sequence[str]) -> list[MemoryFile]:
    """Context files above a workspace folder's ceiling: Gemini never reads them."""
    out: list[MemoryFile] = []
    for top in workspace:
        root = project_root(top, markers)
        ceiling = root or top
        current = os.path.dirname(ceiling)
        while True:
            for name in names:
                path = os.path.join(current, name)
                if os.path.isfile(path):
                    why = (
                        f"above the project root {ceiling} (its {', '.join(markers)}): never read"
                        if root
                        else f"above {ceiling}, which has no {' or '.join(markers) or 'boundary marker'} above it: "
                        "Gemini reads no parent folder then"
                    )
                    out.append(MemoryFile(path, PROJECT, NEVER, why))
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return out


def private_others(memory_dir: str, names: Sequence[str], loaded: Sequence[str]) -> list[MemoryFile]:
    """The private folder's files that do not load: a legacy file hidden by ``MEMORY.md``, and the notes
    beside it (read on demand)."""
    out: list[MemoryFile] = []
    try:
        entries = sorted(os.listdir(memory_dir))
    except OSError:
        return out
    for entry in entries:
        path = os.path.join(memory_dir, entry)
        if path in loaded or entry.startswith(".") or not entry.lower().endswith(".md") or not os.path.isfile(path):
            continue
        if entry == MEMORY_INDEX:
            out.append(MemoryFile(path, PRIVATE, NEVER, "cannot be read: Gemini loads the legacy files instead"))
        elif entry in names:
            out.append(MemoryFile(path, PRIVATE, NEVER, "hidden: MEMORY.md exists, so this legacy file does not load"))
        else:
            out.append(MemoryFile(path, PRIVATE, NEVER, "a note beside MEMORY.md: read on demand, not loaded"))
    return out


# ---------------------------------------------------------------------- the whole discovery


def reader(paths: PathMap) -> Reader:
    """Gemini's reader of imported files, its messages naming them as the machine Gemini runs on does."""
    if paths is LOCAL:
        return read_text

    def read(path: str) -> tuple[str | None, str]:
        text, error = read_text(path)
        return text, error.replace(path, paths.shown(path))

    return read


def _read(path: str, tier: str, settings: Settings, extension: str = "", paths: PathMap = LOCAL) -> MemoryFile:
    raw, error = read_text(path)
    if raw is None:
        return MemoryFile(path, tier, NEVER, f"cannot be read ({error}): Gemini skips it", extension=extension)
    done = process(raw, path, settings.import_format, settings.boundary_markers, reader(paths), paths.resolved)
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    return MemoryFile(path, tier, LOADED, "", raw, done, extension, size=size)


def discover(
    cwd: str, env: GeminiEnv | None = None, *, trusted: bool | None = True, with_later: bool = True
) -> Discovery:
    """Every memory file of a session launched in ``cwd`` (see the module docstring), writing nothing.

    ``trusted`` True takes the folder as trusted (keepgui's default view), False as untrusted (no
    project tier, no workspace settings), None as Gemini would decide it now.
    """
    env = GeminiEnv.from_environ() if env is None else env
    launch = os.path.realpath(cwd)
    verdict = trust_of(env, load_settings(env, launch, trusted=False).folder_trust, launch)
    is_trusted = bool(verdict.trusted) if trusted is None else trusted
    settings = load_settings(env, launch, trusted=is_trusted)
    private = resolve_private(env, launch)
    workspace, skipped = workspace_dirs(env, launch, settings)
    found = Discovery(launch, env, settings, verdict, is_trusted, private, tuple(workspace))
    found.problems.extend(settings.problems)
    # the spec says a missing include folder is skipped; 0.61.0 stops at start instead (it was run)
    found.problems.extend(f"include folder {s}: Gemini CLI stops at start with an error" for s in skipped)
    names = settings.names
    glob = global_paths(env, names)
    ext, found.extensions = extension_files(env, launch, settings)
    found.problems.extend(p for _n, _a, p in found.extensions if p)
    proj: list[str] = []
    if is_trusted:
        walked: list[str] = []
        for top in workspace:
            root = project_root(top, settings.boundary_markers)
            walked.extend(upward(top, root or top, names, env.gemini_dir))
        proj = js_sorted(dedupe(walked)[0])
    priv = private_paths(private.memory, names)
    kept, dropped = dedupe([*glob, *ext, *proj, *priv])
    contents = {p: _read(p, _tier_of(p, glob, ext, proj), settings, paths=env.paths) for p in kept}
    for tier, paths in ((GLOBAL, glob), (PRIVATE, priv), (EXTENSION, ext), (PROJECT, proj)):
        for path in paths:
            if os.path.isdir(path):
                continue  # a folder named like a context file: Gemini skips it without a word
            if path in dropped:
                found.files.append(MemoryFile(path, tier, NEVER, f"the same file as {dropped[path]}: read once"))
                continue
            item = contents[path]
            if item.tier != tier:  # one path in two tiers: Gemini puts its text in both
                item = MemoryFile(item.path, tier, item.state, item.reason, item.raw, item.processed, size=item.size)
            if item.processed is not None and not js_trim(item.processed.text):
                item.state = EMPTY
            found.files.append(item)
    if not is_trusted:
        walked = []
        for top in workspace:
            root = project_root(top, settings.boundary_markers)
            walked.extend(upward(top, root or top, names, env.gemini_dir))
        why = f"the folder is not trusted ({verdict.why}): project files do not load"
        found.files.extend(MemoryFile(p, PROJECT, NEVER, why) for p in js_sorted(dedupe(walked)[0]))
    found.files.extend(private_others(private.memory, names, priv))
    found.files.extend(above(workspace, names, settings.boundary_markers))
    if with_later and is_trusted:
        later, capped = below(workspace, names, set(proj))
        found.files.extend(later)
        if capped:
            found.problems.append(f"only the first {JIT_DIR_LIMIT} folders below the workspace were searched")
    return found


def _tier_of(path: str, glob: Sequence[str], ext: Sequence[str], proj: Sequence[str]) -> str:
    if path in glob:
        return GLOBAL
    if path in ext:
        return EXTENSION
    if path in proj:
        return PROJECT
    return PRIVATE
