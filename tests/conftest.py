"""Shared test setup: headless Qt, an isolated keepgui home, and small helpers.

Qt runs offscreen (no display needed) and keepgui's own data folder points into
a temporary directory, so no test ever touches the real user's files.

Every temporary folder of the run — keepgui's home, the demo copies of
``--demo``, what child processes make — is made inside one folder of the
session (``$TMPDIR`` for the children too), removed when the session ends: a
run leaves nothing behind in the system's temporary folder. pytest's own
``tmp_path`` folders stay where pytest keeps them (its last few runs, to look at).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import sys
import tempfile

import pytest

os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
SESSION_TMP = tempfile.mkdtemp(prefix="keepgui-tests-")
"""The folder every temporary folder of this test run is made in (removed at the end)."""
os.environ["TMPDIR"] = SESSION_TMP
tempfile.tempdir = SESSION_TMP
atexit.register(shutil.rmtree, SESSION_TMP, True)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["KEEPGUI_HOME"] = tempfile.mkdtemp(prefix="keepgui-test-home-")
os.environ.pop("KEEPGUI_DATA_DIR", None)
os.environ.pop("KEEPGUI_RELOAD_COMMAND", None)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(autouse=True)
def _journal_of_the_session():
    """keepgui installs its journal once per process (:func:`keepgui.core.journal.install`), where
    ``KEEPGUI_HOME`` points when it is first asked: a test that moved the home for itself leaves no
    journal of that home installed for the tests after it (they would record into another folder than
    the command lines they run)."""
    home = os.environ["KEEPGUI_HOME"]
    yield
    if os.environ.get("KEEPGUI_HOME") != home:
        return  # still moved: monkeypatch undoes it after this fixture
    from keepgui.core import fsio, journal

    if journal._installed and not os.path.abspath(journal._installed[0].root).startswith(
        os.path.abspath(home) + os.sep
    ):
        journal._installed.clear()
        fsio._WRITE_HOOKS.clear()


@pytest.fixture
def demo_copy(tmp_path):
    """A fresh copy of the demo data (times moved to the present)."""
    from keepgui.core.demo import make_demo_copy

    copy = make_demo_copy(parent=str(tmp_path))
    yield copy
    shutil.rmtree(copy.root, ignore_errors=True)


def run_cli(argv: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    """Run the keepgui CLI in this process; returns (exit status, stdout, stderr)."""
    import io

    from keepgui.cli import Context, parse_args, run_command

    args = parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = run_command(args, Context(args, out, err))
    finally:
        sys.stdin = old
    return code, out.getvalue(), err.getvalue()


OLD_FORM = "is an old form, kept working"
"""What the note of an old command line says (on stderr, beside the command's own output)."""


def errors_of(err: str) -> list[str]:
    """The lines of a command's stderr but the note an old command line prints."""
    return [line for line in err.splitlines() if OLD_FORM not in line]


def tree_digest(root: str) -> dict[str, str]:
    """path -> sha256 (or "dir"/"link") of everything under ``root``: to prove reading changed nothing."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = "link" if os.path.islink(path) else "dir"
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                out[os.path.relpath(path, root)] = "link:" + os.readlink(path)
                continue
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture
def data_dir(tmp_path):
    """An empty iii data dir."""
    path = tmp_path / "memory"
    path.mkdir()
    return path


@pytest.fixture
def fake_iii(tmp_path, monkeypatch):
    """A fake ``iii`` command on PATH that records its arguments and prints JSON.

    Returns the path of the file where each call's argv is appended as a line.
    ``$FAKE_III_OUTPUT`` (a file) can hold what ``trigger`` prints; ``$FAKE_III_FAIL``
    makes it exit 3.
    """
    bindir = tmp_path / "bin"
    bindir.mkdir()
    calls = tmp_path / "iii-calls.txt"
    script = bindir / "iii"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import os, sys, json\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if os.environ.get('FAKE_III_FAIL'):\n"
        "    print('engine not running', file=sys.stderr); sys.exit(3)\n"
        "out = os.environ.get('FAKE_III_OUTPUT')\n"
        "print(open(out).read() if out else json.dumps({'ok': True, 'banks': 1}))\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return calls
