"""The house rules, enforced: ``keepgui.core`` never imports Qt, and only fsio writes files.

* No module under ``keepgui/core`` imports PySide6, shiboken6, PyQt5/6, qtpy,
  ``keepgui.ui`` or ``keepgui.app``: checked three ways (an AST scan of every
  file, importing every core module in a fresh interpreter, and the
  import-linter contract of ``pyproject.toml``).
* Only ``keepgui/core/fsio.py`` opens files for writing or changes the file
  system: an AST scan of all of ``keepgui/`` for write-mode ``open``, ``os.open``
  with write flags, ``write_text``/``write_bytes``, ``shutil`` copies, moves
  and deletions, ``os.replace``/``rename``/``remove``/``mkdir``/``utime``... and
  temporary files. Each exception is listed in :data:`ALLOWED` with the reason
  it is not a write of user data; an entry that is no longer used fails too,
  so the list stays honest.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.reliability.common import ROOT, child_env

PACKAGE = os.path.join(ROOT, "keepgui")
CORE = os.path.join(PACKAGE, "core")
BACKENDS = os.path.join(PACKAGE, "backends")
FORBIDDEN = ("PySide6", "shiboken6", "PyQt5", "PyQt6", "qtpy", "keepgui.ui", "keepgui.app")
WRITERS = ("keepgui/core/fsio.py", "keepgui/core/fslog.py")
"""fsio and its append half (split by size; fsio re-exports it)."""

ALLOWED = {
    **{
        ("keepgui/core/timetravel.py", call): "builds keepgui's own read-only copy of a source as it was, in a fresh "
        "temporary folder of its own (never the source: nothing is written through a link, the copy is removed after)"
        for call in (
            "tempfile.mkdtemp",
            "open",
            "os.chmod",
            "os.symlink",
            "os.unlink",
            "os.utime",
            "shutil.copy2",
            "shutil.copytree",
            "shutil.rmtree",
        )
    },
    (
        "keepgui/core/demo.py",
        "tempfile.mkdtemp",
    ): "make_demo_copy creates a fresh temporary folder for keepgui's own copy of the packaged demo",
    (
        "keepgui/core/demo.py",
        "shutil.copytree",
    ): "copies the packaged demo into that fresh temporary folder (never over user data)",
    (
        "keepgui/core/demo.py",
        "os.utime",
    ): "moves the mtimes of that fresh demo copy to 'an hour ago' so its ages read naturally",
    (
        "keepgui/backends/claude/demo.py",
        "os.utime",
    ): "gives the memories of that fresh demo copy ages in index order (the newest are the ones cut)",
    (
        "keepgui/backends/iii/backend.py",
        "os.utime",
    ): "keeps the iii logs of that fresh demo copy looking edited an hour ago after their times moved",
    ("keepgui/core/demo.py", "shutil.rmtree"): "removes keepgui's own throw-away demo copy at exit",
    (
        "keepgui/core/textmerge.py",
        "tempfile.mkdtemp",
    ): "a private folder for the three texts git merge-file reads (filled through fsio), never user data",
    ("keepgui/core/textmerge.py", "shutil.rmtree"): "removes that private merge folder afterwards",
    ("keepgui/cli.py", "os.open"): "re-points stdout at /dev/null after a broken pipe; no file is written",
    (
        "keepgui/backends/nanobot/context.py",
        "tempfile.mkdtemp",
    ): "a private scratch folder for nanobot's ContextBuilder (filled through fsio), never the workspace",
    ("keepgui/backends/nanobot/context.py", "shutil.rmtree"): "removes that private scratch folder afterwards",
    (
        "keepgui/backends/hermes/statedb.py",
        "tempfile.mkdtemp",
    ): "a private folder for a copy of Hermes's state.db (filled through fsio), so SQLite never opens Hermes's own",
    ("keepgui/backends/hermes/statedb.py", "shutil.rmtree"): "removes that private copy at once",
    (
        "keepgui/core/remote/mirror.py",
        "open",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "os.chmod",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "os.makedirs",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "os.replace",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "os.symlink",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "os.unlink",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "os.utime",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/core/remote/mirror.py",
        "shutil.rmtree",
    ): "keepgui's cache mirror of a remote folder (its files replaced as the remote ones change), never user data on this machine",
    (
        "keepgui/ui/ipc.py",
        "os.chmod",
    ): "makes keepgui's own single-instance runtime folder and socket private (0700); no user data",
    (
        "keepgui/ui/ipc.py",
        "os.utime",
    ): "refreshes the times of keepgui's own socket so temp-folder cleaners leave it; no user data",
}

_MUTATING = {
    "os": {
        "replace",
        "rename",
        "renames",
        "remove",
        "unlink",
        "rmdir",
        "removedirs",
        "mkdir",
        "makedirs",
        "truncate",
        "ftruncate",
        "utime",
        "chmod",
        "lchmod",
        "chown",
        "lchown",
        "symlink",
        "link",
        "mkfifo",
        "mknod",
        "write",
        "pwrite",
        "writev",
        "sendfile",
    },
    "shutil": {
        "copy",
        "copy2",
        "copyfile",
        "copytree",
        "copymode",
        "copystat",
        "move",
        "rmtree",
        "make_archive",
        "unpack_archive",
        "chown",
    },
    "tempfile": {
        "mkstemp",
        "mkdtemp",
        "NamedTemporaryFile",
        "TemporaryFile",
        "SpooledTemporaryFile",
        "TemporaryDirectory",
    },
}
_PATH_METHODS = {
    "write_text",
    "write_bytes",
    "touch",
    "mkdir",
    "unlink",
    "rmdir",
    "rename",
    "symlink_to",
    "hardlink_to",
    "chmod",
    "lchmod",
}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_OPENERS_MODE_SECOND = {
    "open",
    "io.open",
    "codecs.open",
    "builtins.open",
    "os.fdopen",
    "gzip.open",
    "bz2.open",
    "lzma.open",
    "tarfile.open",
}


def _py_files(folder: str):
    for base, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                yield path, os.path.relpath(path, ROOT).replace(os.sep, "/")


def _module_of(rel: str) -> str:
    parts = rel[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str, is_package: bool):
    """Every module name a file imports (relative imports resolved), with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield name, node.lineno
            for alias in node.names:
                yield f"{name}.{alias.name}", node.lineno
        elif isinstance(node, ast.Call):  # importlib.import_module("...") / __import__("...")
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (
                called in ("import_module", "__import__")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield node.args[0].value, node.lineno


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_no_core_or_backend_file_imports_qt_or_the_ui():
    found = []
    for path, rel in [*_py_files(CORE), *_py_files(BACKENDS)]:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), rel)
        module = _module_of(rel)
        for name, line in _imports(tree, module, rel.endswith("__init__.py")):
            if _forbidden(name):
                found.append(f"{rel}:{line} imports {name}")
    assert found == []


def test_importing_all_of_core_and_the_backends_loads_no_qt():
    code = (
        "import importlib, pkgutil, sys\n"
        "import keepgui.core, keepgui.backends\n"
        "failed = []\n"
        "for m in [*pkgutil.walk_packages(keepgui.core.__path__, 'keepgui.core.'),\n"
        "          *pkgutil.walk_packages(keepgui.backends.__path__, 'keepgui.backends.')]:\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{m.name}: {type(exc).__name__}: {exc}')\n"
        f"bad = sorted(n for n in sys.modules if any(n == f or n.startswith(f + '.') for f in {FORBIDDEN!r}))\n"
        "print('\\n'.join(failed)); print('LOADED', bad)\n"
        "sys.exit(1 if failed or bad else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=child_env(), timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_import_linter_contract_holds():
    tool = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    if not os.path.exists(tool):
        tool = shutil.which("lint-imports")
    if not tool:
        pytest.skip("import-linter is not installed")
    done = subprocess.run([tool], capture_output=True, text=True, cwd=ROOT, env=child_env(), timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "kept" in done.stdout.lower()


# ---------------------------------------------------------------------- only fsio writes


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> qualified name, from the file's imports (``import os as o``, ``from shutil import move``)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _qualified(func: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    head = aliases.get(func.id, func.id)
    return ".".join([head] + parts[::-1])


def _mode_is_write(node: ast.Call, index: int) -> bool | None:
    """True/False for a constant mode; None when the mode is not a constant (cannot tell)."""
    mode = (
        node.args[index] if len(node.args) > index else next((k.value for k in node.keywords if k.arg == "mode"), None)
    )
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return None


def _writes_in(tree: ast.AST) -> list[tuple[int, str, str]]:
    """``(line, call, why)`` for every call that writes or may write the file system."""
    aliases = _aliases(tree)
    found = []
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        # A mutating function handed over to be called later: atexit.register(shutil.rmtree, ...).
        if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in called:
            name = _qualified(node, aliases)
            head, _, tail = (name or "").partition(".")
            if head in _MUTATING and tail in _MUTATING[head]:
                found.append((node.lineno, name, "is passed on to be called"))
            continue
        if not isinstance(node, ast.Call):
            continue
        name = _qualified(node.func, aliases)
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name in _OPENERS_MODE_SECOND or (
            name
            and name.endswith(".open")
            and name.split(".")[0] in ("io", "codecs", "builtins", "gzip", "bz2", "lzma", "tarfile")
        ):
            writes = _mode_is_write(node, 1)
            if writes is not False:
                found.append((node.lineno, name, "opens for writing" if writes else "opens with a computed mode"))
        elif name == "os.open":
            flags = (
                node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "flags"), None)
            )
            used = (
                {
                    n.attr if isinstance(n, ast.Attribute) else n.id
                    for n in ast.walk(flags)
                    if isinstance(n, (ast.Attribute, ast.Name))
                }
                if flags is not None
                else set()
            )
            if used & _WRITE_FLAGS or not any(u.startswith("O_") for u in used):
                found.append((node.lineno, name, "os.open with write flags (or flags it cannot read)"))
        elif (
            name
            and name.split(".")[0] in _MUTATING
            and name.split(".")[-1] in _MUTATING[name.split(".")[0]]
            and name.count(".") == 1
        ):
            found.append((node.lineno, name, "changes the file system"))
        elif attr == "open" and (name is None or name.split(".")[0] not in ("os", "webbrowser", "self")):
            writes = _mode_is_write(node, 0)  # Path.open(mode)
            if writes:
                found.append((node.lineno, "Path.open", "opens for writing"))
        elif attr in _PATH_METHODS and (name is None or name.split(".")[0] not in _MUTATING):
            found.append((node.lineno, f"Path.{attr}", "changes the file system"))
    return found


def test_only_fsio_writes_files():
    found, used = [], set()
    for path, rel in _py_files(PACKAGE):
        if rel in WRITERS:
            continue
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), rel)
        for line, call, why in _writes_in(tree):
            if (rel, call) in ALLOWED:
                used.add((rel, call))
            else:
                found.append(f"{rel}:{line}: {call} {why}; route it through keepgui.core.fsio")
    assert found == []
    stale = sorted(set(ALLOWED) - used)
    assert stale == [], f"allow-list entries no longer used (remove them): {stale}"


def test_the_write_scan_sees_writes():
    """The scanner itself: each kind of write is caught, reads are not."""
    source = """
import os, shutil
import os as o
from shutil import move as mv
from pathlib import Path
open("a", "w"); open("a", mode="ab"); open("a", "r+"); open("a", m)
open("a"); open("a", "rb"); open("a", encoding="utf-8")
os.open("a", os.O_WRONLY | os.O_CREAT); o.open("a", flags); os.open("a", os.O_RDONLY)
Path("a").write_text("x"); Path("a").open("w"); Path("a").open()
shutil.copyfile("a", "b"); mv("a", "b"); o.replace("a", "b"); "text".replace("a", "b")
atexit.register(shutil.rmtree, "a"); os.path.join("a", "b")
"""
    calls = [(line, call) for line, call, _ in _writes_in(ast.parse(source))]
    lines = {line for line, _ in calls}
    assert {6, 8, 9, 10, 11} <= lines and 7 not in lines
    assert [call for line, call in calls if line == 11] == ["shutil.rmtree"]
    assert sum(1 for line, _ in calls if line == 6) == 4  # w, ab, r+, computed mode
    assert sum(1 for line, _ in calls if line == 8) == 2  # write flags, unreadable flags; O_RDONLY passes
    assert sum(1 for line, _ in calls if line == 9) == 2 and sum(1 for line, _ in calls if line == 10) == 3


# ---------------------------------------------------------------------- one seam for every backend

KIND_BRANCH = re.compile(r"""kind\s*(==|!=)\s*["']|_is_keep\(""")


def test_the_generic_ui_has_no_backend_kind_branch():
    """What differs per backend is in its Capabilities or its adapter module, never an ``if kind == ...``."""
    found = []
    for path, rel in _py_files(os.path.join(PACKAGE, "ui")):
        if rel.startswith("keepgui/ui/adapters/"):
            continue
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if KIND_BRANCH.search(line):
                    found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []


def test_every_package_folder_ships_in_the_wheel():
    """setup.py finds packages by their ``__init__.py``: a folder of modules without one would silently
    drop out of the wheel."""
    missing = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(f.endswith(".py") for f in files) and "__init__.py" not in files:
            missing.append(os.path.relpath(folder, ROOT))
    assert missing == []


def _contracts() -> dict[str, dict]:
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        config = tomllib.load(fh)
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def test_the_contracts_name_every_backend():
    """Every package of keepgui.backends is a backend: the independence contract lists them all, the
    registry's built-in ones are among them, and the core and the generic UI may import none."""
    from keepgui.core import registry

    contracts = _contracts()
    backends = os.path.join(PACKAGE, "backends")
    packages = sorted(
        f"keepgui.backends.{name}"
        for name in os.listdir(backends)
        if os.path.isfile(os.path.join(backends, name, "__init__.py"))
    )
    assert sorted(contracts["Backends do not import each other"]["modules"]) == packages
    assert set(registry.BUILTIN) <= set(packages)
    for name in ("The core imports no backend", "Generic UI modules import no backend (only keepgui.ui.adapters may)"):
        assert contracts[name]["forbidden_modules"] == ["keepgui.backends"]


THREAD_START = re.compile(
    r"\b(threading\.Thread|Thread\(|QThreadPool|QThread\b|QRunnable|ThreadPoolExecutor|ProcessPoolExecutor)"
)


def test_the_window_starts_threads_only_in_its_runner():
    """Background work of the window goes through ``keepgui/ui/tasks.py`` (lanes, newest-wins, answers
    on the GUI thread, never to a deleted widget): no other UI module starts a thread or a pool."""
    found = []
    for path, rel in _py_files(os.path.join(PACKAGE, "ui")):
        if rel == "keepgui/ui/tasks.py":
            continue
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if THREAD_START.search(line.split("#", 1)[0]):
                    found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []
