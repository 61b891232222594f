"""The instruction files a Claude Code session loads at start, in the order it injects them.

Order and rules as the real CLI showed them (each is exercised by the
comparison with the CLI in ``tests/backends/claude/test_claude_cli_compare.py``):

1. **Managed**: ``<managed>/CLAUDE.md``, then the ``claudeMd`` text of the
   managed settings (shown as ``<managed-settings>``), then
   ``<managed>/.claude/rules/**`` without ``paths:``.
2. **User**: ``<config>/CLAUDE.md``, then ``<config>/rules/**`` without ``paths:``.
3. For every folder from the top (the root itself excluded) down to the launch
   folder: ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``.claude/rules/**`` without
   ``paths:`` (**Project**), then ``CLAUDE.local.md`` (**Local**). Folders above
   the git root count too. Launched in a worktree nested inside its main
   checkout, the main checkout's folders give only their ``CLAUDE.local.md``.

Each file's imports follow it, depth first, with its kind; an import four hops
deep is the last loaded. Rules are listed in the order the folder is read
(``readdir``, not sorted), sub-folders where they are met; symbolic links are
followed and the file is named by its resolved path. A project rule, or an
import from a managed, project or local file, that resolves outside the launch
folder loads only once the person approved external imports for the project.
Every file loads once (by resolved path). Files with front matter ``paths:``
load later, when Claude reads a matching file, as do ``CLAUDE.md`` files
below the launch folder. ``claudeMdExcludes`` globs (absolute paths) drop user,
project and local files, never managed ones and never the memory index.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from keepgui.backends.claude.jstext import js_trim, utf16_len
from keepgui.backends.claude.layout import ClaudeEnv, GitRoots, Settings
from keepgui.backends.claude.markdown import decode, find_imports, split_front_matter, strip_comments
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError

MANAGED, USER, PROJECT, LOCAL, AUTO_MEMORY = "Managed", "User", "Project", "Local", "AutoMem"

LABELS = {
    MANAGED: "organization-managed policy instructions",
    USER: "user's private global instructions for all projects",
    PROJECT: "project instructions, checked into the codebase",
    LOCAL: "user's private project instructions, not checked in",
    AUTO_MEMORY: "user's auto-memory, persists across conversations",
}
"""The label the CLI puts after each file's path, by kind (verbatim)."""

MAX_IMPORT_DEPTH = 4
"""Imports four hops from the file that starts the chain still load; a fifth does not."""

FILE_LIMIT = 4 * 1024 * 1024
"""A file larger than this is not loaded (vendor documentation; not re-measured)."""

MANAGED_SETTINGS_PATH = "<managed-settings>"
"""How the CLI names the ``claudeMd`` text of the managed settings in the reminder."""

IMPORT_EXTENSIONS = frozenset(
    """
md txt text rst adoc asciidoc org tex json yaml yml toml ini cfg conf config env properties xml csv html htm
css scss sass less js mjs cjs jsx ts mts cts tsx vue svelte astro py pyi pyw rb rake go rs java kt kts scala sbt
gradle clj cljs edn c h cc cpp cxx hpp hxx swift cs php pl pm lua r ex exs erl hrl hs lhs ml mli elm dart sh bash
zsh fish ps1 bat cmd sql graphql gql proto makefile cmake lock log diff patch hbs ejs erb pug jade f f90 f95 for
""".split()
)
"""Extensions an ``@import`` may have (case-insensitive; a file with no extension is allowed too),
found by probing the CLI with ~400 extensions: ``.markdown``, ``.mdx``, ``.jsonl``, images and archives
are among those it refuses."""

# kinds whose imports (and, for projects, symlinked rules) must stay inside the launch folder
_NEEDS_APPROVAL = (MANAGED, PROJECT, LOCAL)
_NESTED_SCAN_LIMIT = 20_000


@dataclass(frozen=True)
class InstructionFile:
    """One file a session loads (or would, or will not), with why.

    ``path`` is how the CLI names it; ``kind`` one of :data:`LABELS`'s keys;
    ``role``: ``claude-md``, ``rules``, ``local``, ``import``, ``inline``,
    ``nested`` (below the launch folder), ``memory-index``; ``loaded`` whether it is
    in the reminder; ``status`` ``loaded``, ``later`` (when Claude reads a
    matching file), or ``skipped``; ``reason`` says why it is not loaded;
    ``parent``, ``line`` and ``depth`` place an import; ``globs`` a rule's
    ``paths:``; ``text`` the injected text; ``size`` the file's bytes and
    ``units`` the injected text's UTF-16 length.
    """

    path: str
    kind: str
    role: str
    status: str = "loaded"
    reason: str = ""
    parent: str | None = None
    line: int | None = None
    depth: int = 0
    globs: tuple[str, ...] = ()
    text: str = ""
    size: int = 0
    units: int = 0

    @property
    def loaded(self) -> bool:
        """True when the file's text is in the reminder."""
        return self.status == "loaded"

    @property
    def label(self) -> str:
        """The CLI's label for the file's kind."""
        return LABELS[self.kind]

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``."""
        obj = {
            "path": self.path,
            "kind": self.kind,
            "label": self.label,
            "role": self.role,
            "loaded": self.loaded,
            "status": self.status,
            "reason": self.reason,
            "bytes": self.size,
            "units": self.units,
        }
        if self.parent is not None:
            obj.update(parent=self.parent, line=self.line, depth=self.depth)
        if self.globs:
            obj["globs"] = list(self.globs)
        return obj


# ---------------------------------------------------------------------- rule front matter


if TYPE_CHECKING:
    _SafeLoader = yaml.SafeLoader
else:  # libyaml's parser where PyYAML has it
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Yaml12Loader(_SafeLoader):
    """PyYAML's safe loader (libyaml's parser where there is one) with YAML 1.2 booleans
    (``yes``/``on`` stay strings, as the CLI's parser reads them)."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

_PATHS_LINE = re.compile(r"^[ \t]*paths:[ \t]*(.*)$", re.MULTILINE)


def _paths_value(front: str) -> Any:  # a YAML value, or the line as written
    """The ``paths`` value of a front-matter block; when the YAML does not parse, the CLI still
    honours a ``paths:`` line (observed: ``paths: [`` and a tab-indented ``paths:`` make a rule
    conditional), so its value is taken as written."""
    try:
        obj = yaml.load(front, Loader=_Yaml12Loader)  # noqa: S506 - a safe loader subclass
    except yaml.YAMLError:
        match = _PATHS_LINE.search(front)
        if match is None:
            return None
        value = match.group(1).strip()
        if value.startswith("- "):
            return None
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        return value
    return obj.get("paths") if isinstance(obj, dict) else None


def _split_commas(value: str) -> list[str]:
    """Split on commas that are not inside ``{…}``."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in value:
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        if ch == "," and not depth:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def _expand_braces(pattern: str, budget: int = 1000) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    out: list[str] = []
    for option in _split_commas(match.group(1)):
        out.extend(_expand_braces(pattern[: match.start()] + option + pattern[match.end() :], budget))
        if len(out) > budget:
            return [pattern]
    return out


def rule_globs(front: str | None) -> tuple[str, ...]:
    """The globs that make a rule conditional ((): it loads at start).

    ``paths`` is a list of strings or one string split on commas outside
    braces; each is trimmed, braces expanded, a trailing ``/**`` removed and
    empties dropped; when none is left, or all are ``**``, the rule is
    unconditional.
    """
    if front is None:
        return ()
    value = _paths_value(front)
    if isinstance(value, str):
        raw = _split_commas(value)
    elif isinstance(value, list):
        raw = [v for v in value if isinstance(v, str)]
    else:
        return ()
    globs: list[str] = []
    for item in raw:
        for pattern in _expand_braces(item.strip()):
            pattern = pattern.strip()
            pattern = pattern.removesuffix("/**")
            if pattern:
                globs.append(pattern)
    if not globs or all(g == "**" for g in globs):
        return ()
    return tuple(globs)


# ---------------------------------------------------------------------- exclusions


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A ``claudeMdExcludes`` glob as a regular expression over an absolute path
    (``**`` crosses folders, ``*`` and ``?`` do not, ``[...]`` and ``{a,b}`` as in shells)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                i = end
        elif ch == "{":
            end = pattern.find("}", i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                options = _split_commas(pattern[i + 1 : end])
                out.append("(?:" + "|".join(glob_regex(o).pattern[4:-3] for o in options) + ")")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("(?s:" + "".join(out) + r")\Z")


def excluded_by(patterns: list[str], path: str) -> str | None:
    """The first ``claudeMdExcludes`` pattern matching ``path`` (or its resolved path), else None."""
    candidates = {path, os.path.realpath(path)}
    for pattern in patterns:
        regex = glob_regex(pattern)
        if any(regex.match(c) for c in candidates):
            return pattern
    return None


# ---------------------------------------------------------------------- collecting


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _read(path: str) -> tuple[bytes | None, str]:
    """The file's bytes, or None and why (missing, a folder, too big)."""
    try:
        if os.path.isdir(path):
            return None, "a folder"
        size = os.path.getsize(path)
    except OSError:
        return None, "missing"
    if size > FILE_LIMIT:
        return None, f"{size:,} bytes, over the CLI's 4 MiB limit for one file"
    try:
        data, _stamp = fsio.read_stamped(path, limit=FILE_LIMIT)
    except (OSError, KeepguiError) as exc:
        return None, str(getattr(exc, "strerror", None) or exc)
    if data is None:
        return None, "missing"
    return data, ""


@dataclass
class LoadState:
    """What a collection has seen so far (resolved paths) and the rules it runs under."""

    env: ClaudeEnv
    cwd: str
    approved: bool
    excludes: list[str]
    seen: set[str] = field(default_factory=set)
    files: list[InstructionFile] = field(default_factory=list)

    def note(self, item: InstructionFile) -> None:
        """Add a file to the list."""
        self.files.append(item)


def _load(
    state: LoadState,
    path: str,
    kind: str,
    role: str,
    *,
    parent: str | None = None,
    line: int | None = None,
    depth: int = 0,
    listed_missing: bool = False,
) -> None:
    """Load one file (and its imports after it) into ``state``."""
    real = os.path.realpath(path)
    if kind != MANAGED and parent is None:
        pattern = excluded_by(state.excludes, path)
        if pattern is not None:
            state.note(
                InstructionFile(
                    path, kind, role, "skipped", f"excluded by claudeMdExcludes {pattern!r}", parent, line, depth
                )
            )
            return
    if real in state.seen or path in state.seen:
        if parent is not None:
            state.note(InstructionFile(path, kind, role, "skipped", "already loaded earlier", parent, line, depth))
        return
    data, why = _read(path)
    if data is None:
        if listed_missing or parent is not None:
            state.note(InstructionFile(path, kind, role, "skipped", why, parent, line, depth))
        return
    state.seen.update((real, path))
    front = split_front_matter(decode(data))
    globs = rule_globs(front.yaml) if role == "rules" else ()
    if globs:
        state.note(
            InstructionFile(
                path,
                kind,
                role,
                "later",
                "loads when Claude reads a file matching paths:",
                parent,
                line,
                depth,
                globs,
                size=len(data),
            )
        )
        return
    body = strip_comments(front.body)
    text = js_trim(body)
    if not text:
        state.note(
            InstructionFile(
                path,
                kind,
                role,
                "skipped",
                "empty (nothing left after front matter, comments and white space)",
                parent,
                line,
                depth,
                size=len(data),
            )
        )
        return
    state.note(
        InstructionFile(
            path, kind, role, "loaded", "", parent, line, depth, text=text, size=len(data), units=utf16_len(text)
        )
    )
    _imports(state, path, kind, body, depth)


def _resolve_import(state: LoadState, base_file: str, ref: str) -> str:
    if ref.startswith("~/"):
        return os.path.normpath(os.path.join(state.env.home, ref[2:]))
    if os.path.isabs(ref):
        return os.path.normpath(ref)
    # relative to the file's resolved path: an import in a linked CLAUDE.md is found beside its target
    return os.path.normpath(os.path.join(os.path.dirname(os.path.realpath(base_file)), ref))


def _imports(state: LoadState, path: str, kind: str, body: str, depth: int) -> None:
    for ref in find_imports(body):
        target = _resolve_import(state, path, ref.path)
        ext = os.path.splitext(target)[1]
        if depth + 1 > MAX_IMPORT_DEPTH:
            state.note(
                InstructionFile(
                    target,
                    kind,
                    "import",
                    "skipped",
                    f"more than {MAX_IMPORT_DEPTH} imports deep",
                    path,
                    ref.line,
                    depth + 1,
                )
            )
            continue
        if ext and ext[1:].lower() not in IMPORT_EXTENSIONS:
            state.note(
                InstructionFile(
                    target, kind, "import", "skipped", f"the CLI does not import {ext} files", path, ref.line, depth + 1
                )
            )
            continue
        if kind in _NEEDS_APPROVAL and not state.approved and not _inside(os.path.realpath(target), state.cwd):
            state.note(
                InstructionFile(
                    target,
                    kind,
                    "import",
                    "skipped",
                    "outside the project: loads only after you approve external imports in Claude Code",
                    path,
                    ref.line,
                    depth + 1,
                )
            )
            continue
        _load(state, target, kind, "import", parent=path, line=ref.line, depth=depth + 1)


def _rule_files(folder: str, visited: set[str]) -> list[str]:
    """``*.md`` files under a rules folder in ``readdir`` order, sub-folders where met, links followed."""
    real = os.path.realpath(folder)
    if real in visited:
        return []
    visited.add(real)
    out: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        full = os.path.join(folder, name)
        if os.path.isdir(full):
            out.extend(_rule_files(full, visited))
        elif name.endswith(".md") and os.path.isfile(full):
            out.append(full)
    return out


def _rules(state: LoadState, folder: str, kind: str) -> None:
    for path in _rule_files(folder, set()):
        real = os.path.realpath(path)
        if kind == PROJECT and real != os.path.abspath(path) and not state.approved and not _inside(real, state.cwd):
            state.note(
                InstructionFile(
                    real,
                    kind,
                    "rules",
                    "skipped",
                    "a link to a file outside the project: loads only after you approve external imports",
                    size=0,
                )
            )
            continue
        _load(state, real, kind, "rules")


def ancestors(cwd: str) -> list[str]:
    """The folders from the topmost (the root excluded) down to ``cwd``."""
    out = []
    probe = os.path.abspath(cwd)
    while True:
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        out.append(probe)
        probe = parent
    return out[::-1]


def collect(env: ClaudeEnv, cwd: str, settings: Settings, roots: GitRoots, *, approved: bool) -> list[InstructionFile]:
    """Every instruction file of a session launched in ``cwd`` (a physical path), in load order,
    with the ones that do not load at start and why."""
    state = LoadState(env, cwd, approved, settings.merged_list("claudeMdExcludes"))
    managed = env.managed_dir
    _load(state, os.path.join(managed, "CLAUDE.md"), MANAGED, "claude-md")
    inline = next((obj.get("claudeMd") for scope, _p, obj in settings.layers if scope == "managed"), None)
    if isinstance(inline, str) and js_trim(inline):
        text = js_trim(inline)
        state.note(
            InstructionFile(
                MANAGED_SETTINGS_PATH,
                MANAGED,
                "inline",
                text=text,
                size=len(inline.encode("utf-8")),
                units=utf16_len(text),
            )
        )
    _rules(state, os.path.join(managed, ".claude", "rules"), MANAGED)
    _load(state, os.path.join(env.config_dir, "CLAUDE.md"), USER, "claude-md", listed_missing=True)
    _rules(state, os.path.join(env.config_dir, "rules"), USER)
    nested_main = (
        roots.worktree
        and roots.root is not None
        and roots.canonical is not None
        and _inside(roots.root, roots.canonical)
        and roots.root != roots.canonical
    )
    for folder in ancestors(cwd):
        skip_project = (
            nested_main
            and roots.canonical is not None
            and roots.root is not None
            and _inside(folder, roots.canonical)
            and not _inside(folder, roots.root)
        )
        if not skip_project:
            _load(state, os.path.join(folder, "CLAUDE.md"), PROJECT, "claude-md", listed_missing=folder == cwd)
            _load(state, os.path.join(folder, ".claude", "CLAUDE.md"), PROJECT, "claude-md")
            _rules(state, os.path.join(folder, ".claude", "rules"), PROJECT)
        _load(state, os.path.join(folder, "CLAUDE.local.md"), LOCAL, "local")
    return state.files


def nested_files(cwd: str, limit: int = _NESTED_SCAN_LIMIT) -> list[InstructionFile]:
    """``CLAUDE.md`` / ``CLAUDE.local.md`` files below ``cwd``: loaded later, when Claude reads a file
    in their folder (a bounded walk that skips ``.git`` and ``node_modules``)."""
    out: list[InstructionFile] = []
    seen = 0
    for folder, dirs, files in os.walk(cwd):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "node_modules") and not d.startswith(".venv"))
        seen += len(files) + len(dirs)
        if seen > limit:
            break
        if folder == cwd:
            continue
        for name, kind in (("CLAUDE.md", PROJECT), ("CLAUDE.local.md", LOCAL)):
            if name in files:
                out.append(
                    InstructionFile(
                        os.path.join(folder, name),
                        kind,
                        "nested",
                        "later",
                        "loads when Claude reads a file in this folder",
                    )
                )
    return out
