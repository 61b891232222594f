"""Helpers shared by the scenarios: child processes, the CLI, disk snapshots, time limits."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The repository root (so ``tests.reliability.child`` and ``keepgui`` import in children)."""

_HOME = None
_PYCACHE = None


def _private_dir(prefix: str) -> str:
    import atexit
    import shutil

    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every child process: the repo importable, no worker reload, a private home.

    Children share compiled bytecode in a private temporary folder
    (``PYTHONPYCACHEPREFIX``): hundreds of short-lived processes then skip
    recompiling keepgui, and nothing is written into the source tree.
    """
    global _HOME, _PYCACHE
    if _PYCACHE is None:
        _PYCACHE = _private_dir("keepgui-reliability-pycache-")
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["KEEPGUI_RELOAD_COMMAND"] = ""  # never try to run `iii` from a test
    env.pop("KEEPGUI_DATA_DIR", None)
    env.pop("KEEPGUI_DEBUG", None)  # that switch lets tracebacks through on purpose
    if not env.get("KEEPGUI_HOME"):
        if _HOME is None:
            _HOME = _private_dir("keepgui-reliability-home-")
        env["KEEPGUI_HOME"] = _HOME
    env.update(extra)
    return env


def child_argv(role: str, *args: object) -> list[str]:
    """Command line of a helper child process (see :mod:`tests.reliability.child`)."""
    return [sys.executable, "-m", "tests.reliability.child", role, *map(str, args)]


@dataclass
class CliResult:
    """One run of ``python -m keepgui``: its argv, exit status and output (``rc`` None = timed out)."""

    argv: list[str]
    rc: int | None
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        """True when the command had to be killed."""
        return self.rc is None


def run_cli(data_dir: str, *args: str, timeout: float = 60.0, stdin: str | None = None) -> CliResult:
    """``python -m keepgui --data-dir DATA_DIR ARGS`` in a fresh process, output decoded leniently."""
    argv = [sys.executable, "-m", "keepgui", "--data-dir", data_dir, *args]
    try:
        # A strict UTF-8 stdout, as under en_US.UTF-8: the C/C.UTF-8 locales escape undecodable
        # file names silently and would hide an encoding crash.
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=timeout,
            cwd=ROOT,
            env=child_env(PYTHONIOENCODING="utf-8"),
            input=stdin.encode() if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        return CliResult(argv, None, _text(exc.stdout), _text(exc.stderr))
    return CliResult(argv, done.returncode, _text(done.stdout), _text(done.stderr))


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="backslashreplace")


def disk_state(root: str) -> dict[str, tuple]:
    """Everything observable about the tree under ``root`` except access times.

    path -> (type, mode, size, mtime_ns, ctime_ns, sha256 / link target). It is
    built from ``lstat`` and never opens anything but regular files, so FIFOs,
    devices, link loops and unreadable entries are safe to snapshot (the
    conftest's ``tree_digest`` would block forever on a FIFO). ctime changes
    on any chmod, rename or write, so a read that "puts things back" is caught too.
    """
    out: dict[str, tuple] = {}

    def visit(path: str, rel: str) -> None:
        try:
            st = os.lstat(path)
        except OSError as exc:
            out[rel] = ("lstat-error", exc.errno)
            return
        kind = stat.S_IFMT(st.st_mode)
        entry: tuple = (kind, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if stat.S_ISLNK(st.st_mode):
            entry += (os.readlink(path),)
        elif stat.S_ISREG(st.st_mode):
            try:
                with open(path, "rb") as fh:
                    entry += (hashlib.file_digest(fh, "sha256").hexdigest(),)
            except OSError as exc:
                entry += (f"unreadable:{exc.errno}",)
        out[rel] = entry
        if stat.S_ISDIR(st.st_mode):
            try:
                names = sorted(os.listdir(path))
            except OSError as exc:
                out[rel] = entry + (f"unlistable:{exc.errno}",)
                return
            for name in names:
                visit(os.path.join(path, name), os.path.join(rel, name))

    visit(root, ".")
    return out


def state_diff(before: dict, after: dict) -> list[str]:
    """The paths whose entry differs between two :func:`disk_state` snapshots."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


class Hang(Exception):
    """A call did not return within its time limit (see :func:`deadline`)."""


@contextlib.contextmanager
def deadline(seconds: float, what: str = "call"):
    """Raise :class:`Hang` in the block after ``seconds`` (main thread, POSIX).

    A blocking ``open()`` of a FIFO is interrupted by the alarm, so an
    in-process library call that would hang for ever fails instead.
    """
    if not hasattr(signal, "setitimer") or not _main_thread():
        yield
        return

    def _alarm(signum, frame):
        raise Hang(f"{what} did not finish within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def spawn(role: str, *args: object) -> subprocess.Popen:
    """Start a helper child with pipes for stdin (the start signal) and stdout (progress)."""
    return subprocess.Popen(
        child_argv(role, *args),
        cwd=ROOT,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_ready(proc: subprocess.Popen, what: str) -> None:
    """Block until the child printed ``ready`` (imports done, files open), or fail with its stderr."""
    line = proc.stdout.readline()
    if line.strip() != b"ready":
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError(f"{what} did not start: {line!r} {err.decode(errors='replace')[-2000:]}")


def send_go(proc: subprocess.Popen) -> None:
    """Release a ready child (it waits for one line on stdin) and close its stdin."""
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    proc.stdin = None  # so communicate() does not try to flush it


_REWRITING_AGENT = r"""
import os, sys, time
path, count, line, pause = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), float(sys.argv[4])
for i in range(count):
    # an agent's Edit tool: read the whole file, write it back with one more line (no lock)
    with open(path, "rb") as fh:
        data = fh.read()
    with open(path + ".agent", "wb") as fh:
        fh.write(data + line.replace(b"{i}", b"%d" % i) + b"\n")
    os.replace(path + ".agent", path)
    if pause:
        time.sleep(pause)
"""


def rewriting_agent(path: str, count: int, line: str, pause: float = 0.0) -> subprocess.Popen:
    """A real process that rewrites ``path`` ``count`` times as an agent's edit does (read it whole, write
    a temporary file with one more line — ``line`` with ``{i}`` the rewrite's number — and rename it over),
    ``pause`` seconds after each."""
    return subprocess.Popen([sys.executable, "-c", _REWRITING_AGENT, path, str(count), line, str(pause)])
