"""Where Gemini CLI keeps things, and the settings that change what it loads (read only, no Qt).

* :class:`GeminiEnv` — the Gemini home (``GEMINI_CLI_HOME`` when set and non-empty, else ``HOME``),
  its ``.gemini`` folder, and the runtime folder (``~/.cache/.gemini`` under ``SANDBOX=sandbox-exec``)
  that holds ``projects.json``, ``tmp/`` and ``history/``.
* :func:`load_settings` — the four settings files layered as Gemini layers them (system defaults,
  user, workspace when the folder is trusted and is not the home, system), comments allowed,
  ``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` expanded from the environment, arrays such as
  ``context.includeDirectories`` concatenated. Only the keys that change what loads are kept
  (:class:`Settings`); a file Gemini would refuse to start with is reported, not fatal here.
* :func:`trust_of` — the folder-trust verdict in Gemini's order (environment, the setting,
  ``trustedFolders.json`` with its longest matching rule).
* :func:`resolve_private` — the private project folder ``<gd>/tmp/<slug>`` of a launch folder, found
  as a session start finds it (``projects.json``, the ``.project_root`` markers, a new slug's claim),
  **without writing anything**: for a folder Gemini has not seen, the slug it would claim.

Facts from ``@google/gemini-cli`` :data:`~keepgui.backends.gemini.CHECKED_VERSION` (spec §1, §3, §4.2).
Where the spec and the CLI disagreed, the CLI was followed: a slug folder whose marker cannot be read
counts as taken; the scan for a recovered slug stops in a folder whose marker cannot be read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keepgui.backends.gemini.jstext import (
    decode_utf8,
    is_subpath,
    node_normalize,
    node_resolve,
    robust_realpath,
)
from keepgui.core.pathmap import LOCAL, PathMap

GEMINI_DIR = ".gemini"
DEFAULT_NAME = "GEMINI.md"
MEMORY_INDEX = "MEMORY.md"
PROJECT_ROOT_FILE = ".project_root"
SLUG_PATTERN = re.compile(r"^[a-z0-9-]+$")
SETTINGS_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class GeminiEnv:
    """The environment of a Gemini CLI session: where its home, settings and state are."""

    environ: Mapping[str, str]
    home: str
    gemini_dir: str
    runtime_dir: str
    paths: PathMap = field(default=LOCAL, compare=False)
    """Where the absolute paths Gemini's files name are read (another machine's, in a mirror)."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> GeminiEnv:
        """The environment Gemini would see with ``environ`` (this process's by default)."""
        env = dict(os.environ if environ is None else environ)
        home = env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~")
        gemini_dir = os.path.join(home, GEMINI_DIR) if home else os.path.join(tempfile.gettempdir(), GEMINI_DIR)
        runtime = gemini_dir
        if env.get("SANDBOX") == "sandbox-exec" and home:
            runtime = os.path.join(home, ".cache", GEMINI_DIR)
        return cls(env, home, gemini_dir, runtime)

    @property
    def tmp_dir(self) -> str:
        """``<runtime>/tmp``: one folder per project slug."""
        return os.path.join(self.runtime_dir, "tmp")

    @property
    def history_dir(self) -> str:
        """``<runtime>/history``: the other folder that holds slug markers."""
        return os.path.join(self.runtime_dir, "history")

    @property
    def projects_json(self) -> str:
        """``<runtime>/projects.json``: launch folder → slug."""
        return os.path.join(self.runtime_dir, "projects.json")

    @property
    def settings_path(self) -> str:
        """The user settings file."""
        return os.path.join(self.gemini_dir, "settings.json")

    @property
    def extensions_dir(self) -> str:
        """Installed extensions."""
        return os.path.join(self.gemini_dir, "extensions")

    @property
    def trusted_folders_path(self) -> str:
        """``trustedFolders.json`` (``GEMINI_CLI_TRUSTED_FOLDERS_PATH`` overrides it)."""
        return self.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(
            self.runtime_dir, "trustedFolders.json"
        )

    @property
    def system_settings_path(self) -> str:
        """The system settings file (wins over every other)."""
        given = self.environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
        if given:
            return given
        if sys.platform == "darwin":
            base = "/Library/Application Support/GeminiCli"
        elif sys.platform == "win32":
            base = "C:\\ProgramData\\gemini-cli"
        else:
            base = "/etc/gemini-cli"
        return os.path.join(base, "settings.json")

    @property
    def system_defaults_path(self) -> str:
        """The system defaults file (under every other)."""
        return self.environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or os.path.join(
            os.path.dirname(self.system_settings_path), "system-defaults.json"
        )


# ---------------------------------------------------------------------- JSON with comments


def strip_json_comments(text: str) -> str:
    """``//`` and ``/* */`` comments outside strings replaced by spaces (as the settings loader does)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\r\n]", " ", text[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_json(path: str, *, comments: bool = True) -> tuple[Any, str]:
    """``(value, problem)``: a JSON file's value (None when missing or broken) and why it could not be read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(SETTINGS_LIMIT + 1)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    if len(data) > SETTINGS_LIMIT:
        return None, f"{path}: larger than {SETTINGS_LIMIT // (1024 * 1024)} MiB, not read"
    text = decode_utf8(data)
    try:
        return json.loads(strip_json_comments(text) if comments else text), ""
    except ValueError as exc:
        return None, f"{path}: not valid JSON ({exc}); Gemini CLI refuses to start until it is fixed"


_ENV_VAR = re.compile(r"\$(?:([A-Za-z0-9_]+)|\{([^}]+?)(?::-([^}]*))?\})")


def expand_vars(value: Any, environ: Mapping[str, str]) -> Any:
    """``$VAR``, ``${VAR}`` and ``${VAR:-default}`` in every string of a settings value, as Gemini expands them."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2) or ""
            if not name:
                return match.group(0)
            if name in environ:
                return environ[name]
            return match.group(3) if match.group(3) is not None else match.group(0)

        return _ENV_VAR.sub(one, value)
    if isinstance(value, list):
        return [expand_vars(v, environ) for v in value]
    if isinstance(value, dict):
        return {k: expand_vars(v, environ) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------- settings

CONCAT_PATHS = frozenset({("context", "includeDirectories")})
"""Arrays that later settings files add to instead of replacing (the ones that change what loads)."""


def deep_merge(target: dict[str, Any], source: Mapping[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Merge ``source`` into ``target`` as Gemini merges settings layers (objects merged, arrays of
    :data:`CONCAT_PATHS` concatenated, anything else replaced)."""
    for key, value in source.items():
        if key in ("__proto__", "constructor", "prototype") or value is None:
            continue
        here = (*path, key)
        old = target.get(key)
        if isinstance(old, list) and here in CONCAT_PATHS:
            target[key] = old + (value if isinstance(value, list) else [value])
        elif isinstance(old, dict) and isinstance(value, dict):
            deep_merge(old, value, here)
        elif isinstance(value, dict):
            target[key] = deep_merge({}, value, here)
        else:
            target[key] = value
    return target


@dataclass(frozen=True)
class Settings:
    """The merged settings keys that change what a session loads, and what was wrong reading them.

    ``names`` is the merged ``context.fileName`` list (configured names, then ``GEMINI.md``);
    ``import_format`` ``tree`` or ``flat``; ``boundary_markers`` the project-root markers;
    ``include_dirs`` the extra workspace folders as given (``~`` expanded); ``folder_trust`` whether
    folder trust is on; ``auto_memory`` whether Auto Memory is on; ``files`` the settings files
    read, in layer order; ``problems`` what could not be read.
    """

    names: tuple[str, ...] = (DEFAULT_NAME,)
    import_format: str = "tree"
    boundary_markers: tuple[str, ...] = (".git",)
    include_dirs: tuple[str, ...] = ()
    folder_trust: bool = True
    auto_memory: bool = False
    extensions_enabled: bool = True
    workspace_file: str = ""
    files: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)


def merge_names(configured: Any) -> tuple[str, ...]:
    """``context.fileName`` merged with the default as Gemini merges it: the configured names (trimmed,
    normalised, empty ones dropped, each once) in order, then ``GEMINI.md`` unless already there."""
    given = configured if isinstance(configured, list) else [configured] if isinstance(configured, str) else []
    out: list[str] = []
    for name in given:
        if not isinstance(name, str) or not name.strip():
            continue
        normal = node_normalize(name.strip())
        if normal not in out:
            out.append(normal)
    if DEFAULT_NAME not in out:
        out.append(DEFAULT_NAME)
    return tuple(out)


def resolve_setting_path(path: str, env: GeminiEnv) -> str:
    """A path setting as Gemini's ``resolvePath`` reads it (``~`` and ``%userprofile%`` are the Gemini home)."""
    if not path:
        return ""
    expanded = path
    if path.lower().startswith("%userprofile%"):
        expanded = env.home + path[len("%userprofile%") :]
    elif path == "~" or path.startswith("~/"):
        expanded = env.home + path[1:]
    return node_normalize(expanded)


def _layer(path: str, env: GeminiEnv, problems: list[str], files: list[str]) -> dict[str, Any]:
    value, problem = read_json(path)
    if problem:
        problems.append(problem)
    if value is None:
        return {}
    files.append(path)
    if not isinstance(value, dict):
        problems.append(f"{path}: not a JSON object; Gemini CLI refuses to start until it is fixed")
        return {}
    return dict(expand_vars(value, env.environ))


def is_home_dir(env: GeminiEnv, cwd: str) -> bool:
    """True when ``cwd`` is the Gemini home itself (its ``.gemini/settings.json`` is then the user file)."""
    if not env.home:
        return False
    try:
        return robust_realpath(cwd) == robust_realpath(env.home)
    except OSError:
        return False


def load_settings(env: GeminiEnv, cwd: str, *, trusted: bool | None = None) -> Settings:
    """The merged settings of a session launched in ``cwd`` (see the module docstring).

    ``trusted`` overrides the trust verdict for the workspace file (keepgui's preview takes the folder
    as trusted); None decides it as Gemini does.
    """
    problems: list[str] = []
    files: list[str] = []
    system_defaults = _layer(env.system_defaults_path, env, problems, files)
    user = _layer(env.settings_path, env, problems, files)
    workspace_path = "" if is_home_dir(env, cwd) else os.path.join(cwd, GEMINI_DIR, "settings.json")
    system = _layer(env.system_settings_path, env, problems, files)
    base: dict[str, Any] = {"context": {"includeDirectories": []}}
    for layer in (system_defaults, user, system):
        deep_merge(base, layer)
    if trusted is None:
        trusted = bool(trust_of(env, _folder_trust(base), cwd).trusted)
    workspace: dict[str, Any] = {}
    if workspace_path and trusted:
        workspace = _layer(workspace_path, env, problems, files)
    merged: dict[str, Any] = {"context": {"includeDirectories": []}}
    for layer in (system_defaults, user, workspace, system):
        deep_merge(merged, layer)
    context = merged.get("context") if isinstance(merged.get("context"), dict) else {}
    assert isinstance(context, dict)
    markers = context.get("memoryBoundaryMarkers", [".git"])
    includes = context.get("includeDirectories") or []
    experimental = merged.get("experimental") if isinstance(merged.get("experimental"), dict) else {}
    admin = merged.get("admin") if isinstance(merged.get("admin"), dict) else {}
    extensions = admin.get("extensions") if isinstance(admin, dict) else None
    return Settings(
        names=merge_names(context.get("fileName")) if context.get("fileName") else (DEFAULT_NAME,),
        import_format="flat" if context.get("importFormat") == "flat" else "tree",
        boundary_markers=tuple(m for m in markers if isinstance(m, str)) if isinstance(markers, list) else (".git",),
        include_dirs=tuple(resolve_setting_path(p, env) for p in includes if isinstance(p, str) and p),
        folder_trust=_folder_trust(merged),
        auto_memory=bool(isinstance(experimental, dict) and experimental.get("autoMemory") is True),
        extensions_enabled=not (isinstance(extensions, dict) and extensions.get("enabled") is False),
        workspace_file=workspace_path,
        files=tuple(files),
        problems=tuple(problems),
        raw=merged,
    )


def _folder_trust(merged: Mapping[str, Any]) -> bool:
    security = merged.get("security")
    folder = security.get("folderTrust") if isinstance(security, dict) else None
    enabled = folder.get("enabled") if isinstance(folder, dict) else None
    return enabled if isinstance(enabled, bool) else True


# ---------------------------------------------------------------------- trust


@dataclass(frozen=True)
class Trust:
    """Whether Gemini trusts a folder: ``trusted`` (None: no verdict — a headless run refuses to start,
    an interactive one asks), and ``why`` in words."""

    trusted: bool | None
    why: str


TRUST_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def trust_of(env: GeminiEnv, folder_trust: bool, cwd: str) -> Trust:
    """Gemini's folder-trust decision for ``cwd`` (spec §3.4; an IDE's verdict is not known here)."""
    environ = env.environ
    if environ.get("GEMINI_RESTRICTED_MODE") == "true" or environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return Trust(False, "the environment distrusts it (GEMINI_CLI_TRUST_WORKSPACE=false or restricted mode)")
    if environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return Trust(True, "GEMINI_CLI_TRUST_WORKSPACE=true")
    if not folder_trust:
        return Trust(True, "folder trust is off in the settings")
    rules, problem = read_json(env.trusted_folders_path)
    if problem:
        return Trust(None, problem)
    if not isinstance(rules, dict):
        return Trust(None, "no trust decision for this folder yet (Gemini asks when a session starts there)")
    named = env.paths  # the rules name folders of the machine Gemini runs on
    location = named.shown(_real_or_same(cwd))
    best_len, best = -1, None
    for rule_path, level in rules.items():
        if level not in TRUST_LEVELS:
            return Trust(None, f"{env.trusted_folders_path}: unknown trust level {level!r}; Gemini refuses to start")
        effective = os.path.dirname(rule_path) if level == "TRUST_PARENT" else rule_path
        if is_subpath(named.shown(_real_or_same(named.local(effective))), location) and len(rule_path) > best_len:
            best_len, best = len(rule_path), (level, rule_path)
    if best is None:
        return Trust(None, "no trust decision for this folder yet (Gemini asks when a session starts there)")
    level, rule = best
    if level == "DO_NOT_TRUST":
        return Trust(False, f"trustedFolders.json distrusts {rule}")
    return Trust(True, f"trustedFolders.json trusts {rule}" + (" (its parent)" if level == "TRUST_PARENT" else ""))


def _real_or_same(path: str) -> str:
    try:
        return os.path.realpath(path) if os.path.exists(path) else path
    except OSError:
        return path


# ---------------------------------------------------------------------- the private folder


def slugify(text: str) -> str:
    """Gemini's slug of a folder name: lower-cased, every run of characters outside ``[a-z0-9]`` one ``-``,
    no ``-`` at either end; empty is ``project``."""
    slug = re.sub(r"[^a-z0-9]", "-", text.lower())
    slug = re.sub(r"-+", "-", slug)
    slug = re.sub(r"^-|-$", "", slug)
    return slug or "project"


@dataclass(frozen=True)
class Projects:
    """``projects.json``: launch folder → slug (empty when missing, broken or of another shape)."""

    path: str
    mapping: Mapping[str, str]
    problem: str = ""
    exists: bool = False


def read_projects(env: GeminiEnv) -> Projects:
    """Read ``projects.json`` as Gemini reads it (a file that fails the schema counts as empty)."""
    value, problem = read_json(env.projects_json, comments=False)
    exists = os.path.exists(env.projects_json)
    if problem:
        return Projects(env.projects_json, {}, problem + " (Gemini treats it as empty and rewrites it)", exists)
    projects = value.get("projects") if isinstance(value, dict) else None
    if value is not None and (
        not isinstance(projects, dict)
        or not all(isinstance(k, str) and isinstance(v, str) and SLUG_PATTERN.match(v) for k, v in projects.items())
    ):
        why = f"{env.projects_json}: not of the shape Gemini expects; Gemini treats it as empty and rewrites it"
        return Projects(env.projects_json, {}, why, exists)
    return Projects(env.projects_json, dict(projects or {}), "", exists)


def _marker(base: str, slug: str) -> tuple[str | None, bool]:
    """``(owner, readable)`` of ``<base>/<slug>/.project_root`` (owner None: missing)."""
    path = os.path.join(base, slug, PROJECT_ROOT_FILE)
    try:
        with open(path, "rb") as fh:
            return decode_utf8(fh.read(64 * 1024)).strip(), True
    except FileNotFoundError:
        return None, True
    except OSError:
        return None, False


@dataclass(frozen=True)
class PrivateFolder:
    """Where a launch folder's private memory is: ``slug``, ``folder`` (``<tmp>/<slug>``) and ``memory``
    (``<folder>/memory``, or the legacy hash folder's when Gemini would copy it over at the next start);
    ``how``: ``mapped`` (projects.json), ``recovered`` (a marker names it), ``new`` (Gemini would claim it);
    ``note`` says it for a person."""

    launch: str
    slug: str
    folder: str
    memory: str
    how: str
    note: str = ""


def _owned_by_other(env: GeminiEnv, slug: str, launch: str) -> bool:
    for base in (env.tmp_dir, env.history_dir):
        owner, readable = _marker(base, slug)
        if not readable or (owner is not None and node_resolve(owner) != launch):
            return True
    return False


def _recovered(env: GeminiEnv, launch: str) -> str | None:
    for base in (env.tmp_dir, env.history_dir):
        try:
            names = sorted(os.listdir(base))  # Node's readdir lists names sorted by bytes
        except OSError:
            continue
        for name in names:
            if not os.path.exists(os.path.join(base, name, PROJECT_ROOT_FILE)):
                continue
            owner, readable = _marker(base, name)
            if not readable:
                break  # Gemini's scan of this folder ends at a marker it cannot read
            if owner is not None and node_resolve(owner) == launch:
                return name
    return None


def claim_slug(env: GeminiEnv, launch: str, taken: set[str]) -> str:
    """The slug a first session in ``launch`` would claim: the folder name's slug, then ``-1``, ``-2``…
    past every slug ``projects.json`` maps and every slug folder whose marker names another folder."""
    base = slugify(os.path.basename(launch) or "project")
    counter = 0
    while True:
        candidate = base if counter == 0 else f"{base}-{counter}"
        counter += 1
        if candidate in taken or _owned_by_other(env, candidate, launch):
            continue
        return candidate


def resolve_private(env: GeminiEnv, cwd: str, projects: Projects | None = None) -> PrivateFolder:
    """The private folder of a session launched in ``cwd``, found as Gemini finds it, writing nothing (the
    launch folder named as the machine Gemini runs on names it)."""
    launch = env.paths.shown(node_resolve(os.path.realpath(cwd)))
    projects = read_projects(env) if projects is None else projects
    slug = projects.mapping.get(launch)
    how, note = "mapped", ""
    if slug is not None and _owned_by_other(env, slug, launch):
        slug, note = None, "projects.json maps it to a slug another folder's marker claims; Gemini drops that mapping"
    if slug is None:
        slug = _recovered(env, launch)
        how = "recovered"
        if slug is not None:
            note = f"projects.json does not name it; a .project_root marker does ({slug}): Gemini maps it again"
    if slug is None:
        slug = claim_slug(env, launch, set(projects.mapping.values()))
        how = "new"
        note = f"Gemini has not seen this folder yet: its first session there will use the slug {slug}"
    folder = os.path.join(env.tmp_dir, slug)
    memory = os.path.join(folder, "memory")
    legacy = os.path.join(env.tmp_dir, hashlib.sha256(launch.encode("utf-8")).hexdigest())
    if os.path.isdir(legacy) and _would_migrate(folder):
        memory = os.path.join(legacy, "memory")
        note = (note + "; " if note else "") + (
            f"its memory is still in the old hash-named folder {os.path.basename(legacy)}: Gemini copies it over "
            "at the next start"
        )
    return PrivateFolder(launch, slug, folder, memory, how, note)


def _would_migrate(folder: str) -> bool:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return not names or names == [PROJECT_ROOT_FILE]


def launch_key(cwd: str) -> str:
    """The key Gemini files a launch folder under in ``projects.json`` (its real path)."""
    return node_resolve(os.path.realpath(cwd))
