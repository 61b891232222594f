"""Talking to a running iii memory worker through the ``iii`` command.

A running worker keeps its banks in RAM and sees file edits only after
``memory::reload``; worse, its next write for an id keepgui just changed would
carry the same revision and win on replay. So after every write keepgui runs
the reload command (by default ``iii trigger memory::reload`` when ``iii`` is
on PATH) and says plainly when that could not be done.

The command is configurable: ``$KEEPGUI_RELOAD_COMMAND`` (or the CLI's
``--reload-command``) holds a shell-style command line; an empty value turns
the notification off. ``$KEEPGUI_III`` names the ``iii`` executable used for
reload and for asking the worker's own ``memory::preview``.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Protocol

NOT_SEEN = "a running worker will not see this change until memory::reload"


@dataclass(frozen=True)
class ReloadOutcome:
    """Whether the worker was asked to reload, and the sentence to show a person.

    ``standing``: not this write's trouble but the machine's (the default ``iii`` is not installed,
    so no worker is likely to run here): the command line says it once, in ``doctor``, not after
    every write; the window once, in its status bar.
    """

    ok: bool
    message: str
    standing: bool = False


class Reloader(Protocol):
    """What a data dir tells after each write: a :class:`WorkerLink`, or one that reloads later."""

    def reload(self) -> ReloadOutcome:
        """Ask a running worker to reload."""


class WorkerLink:
    """How keepgui reaches a running worker (reload after writes, live preview)."""

    def __init__(
        self,
        reload_command: str | None = None,
        iii: str | None = None,
        timeout: float = 5.0,
        environ: dict[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.iii = iii or env.get("KEEPGUI_III") or "iii"
        if reload_command is None:
            reload_command = env.get("KEEPGUI_RELOAD_COMMAND")
        self.reload_command = reload_command
        self.timeout = timeout

    def _reload_argv(self) -> list[str] | None:
        if self.reload_command is not None:
            return shlex.split(self.reload_command) or None
        return [self.iii, "trigger", "memory::reload"]

    def reload(self) -> ReloadOutcome:
        """Run the reload command; never raises."""
        argv = self._reload_argv()
        if argv is None:
            return ReloadOutcome(False, f"worker notification is off; {NOT_SEEN}")
        if shutil.which(argv[0]) is None:
            return ReloadOutcome(False, f"`{argv[0]}` is not on PATH; {NOT_SEEN}", standing=self.reload_command is None)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return ReloadOutcome(False, f"`{' '.join(argv)}` did not answer in {self.timeout:g} s; {NOT_SEEN}")
        except OSError as exc:
            return ReloadOutcome(False, f"`{argv[0]}` could not run ({exc.strerror or exc}); {NOT_SEEN}")
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            detail = f": {why[-1]}" if why else ""
            return ReloadOutcome(False, f"`{' '.join(argv)}` failed (exit {done.returncode}{detail}); {NOT_SEEN}")
        return ReloadOutcome(True, "the running worker reloaded")

    def standing_problem(self) -> str:
        """Why no write of keepgui's reaches a running worker on this machine ("" when it can): the
        default reload command's ``iii`` is not installed (what ``doctor`` says once)."""
        if self.reload_command is not None or self.available():
            return ""
        return (
            f"`{self.iii}` is not on PATH, so after a write keepgui cannot ask a running worker to reload; "
            "a worker running elsewhere sees keepgui's changes at its next memory::reload "
            "(or give --reload-command, or set $KEEPGUI_RELOAD_COMMAND)"
        )

    def available(self) -> bool:
        """True when the ``iii`` command is on PATH."""
        return shutil.which(self.iii) is not None

    def trigger(self, function_id: str, **args: str) -> object:
        """``iii trigger <function> key=value…``; returns the parsed JSON answer.

        Raises RuntimeError with a one-line reason when the command is missing,
        fails, or does not print JSON.
        """
        if not self.available():
            raise RuntimeError(f"`{self.iii}` is not on PATH; no running worker can be asked")
        argv = [self.iii, "trigger", function_id] + [f"{k}={v}" for k, v in args.items()]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=max(self.timeout, 10.0), stdin=subprocess.DEVNULL
            )
        except (subprocess.TimeoutExpired, OSError) as exc:
            raise RuntimeError(f"`{' '.join(argv[:3])}` could not run: {exc}") from None
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError(f"`{' '.join(argv[:3])}` failed (exit {done.returncode}): {why[-1] if why else ''}")
        try:
            return json.loads(done.stdout)
        except ValueError:
            raise RuntimeError(f"`{' '.join(argv[:3])}` did not print JSON") from None
