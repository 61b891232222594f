"""A Hermes home's command-line views as plain functions (no Qt).

``keepgui context --agent hermes --project DIR`` prints :func:`context_lines` (its ``--json`` is
:meth:`~keepgui.backends.hermes.context.SessionContext.to_obj`). :func:`open_home`, :func:`keep`,
:func:`pending`, :func:`approve` and :func:`reject` do what ``keepgui keep --agent hermes`` and
``keepgui pending --agent hermes`` do, for a home opened in-process (the command line itself is
generic: :mod:`keepgui.commands.memories`, :mod:`keepgui.commands.pending`). Each returns what to
print (or the JSON object) and an exit status; none prints.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from keepgui.backends.hermes.backend import HermesSource
from keepgui.backends.hermes.context import SessionContext
from keepgui.backends.hermes.entries import FILE_NAMES, MEMORY, USER
from keepgui.backends.hermes.home import resolve_home
from keepgui.backends.hermes.pending import unified
from keepgui.core.history import History
from keepgui.core.source import plural


def open_home(environ: Mapping[str, str] | None = None, history: History | None = None) -> tuple[HermesSource, str]:
    """The source holding the home a new session would use in ``environ``, and that home's bank name."""
    env = dict(os.environ if environ is None else environ)
    found = resolve_home(env)
    source = HermesSource(found.home, environ=env, history=history)
    name = source.scan().names[0] if source.is_profile else "default"
    return source, name


def context_lines(ctx: SessionContext) -> list[str]:
    """``keepgui context --agent hermes`` for a person."""
    out = [f"Hermes home {ctx.home} (profile {ctx.profile}: {ctx.why})"]
    for state in ctx.prompt.states.values():
        entries = plural(len(state.entries), "entry", "entries")
        line = f"  {state.name}: {entries}, {state.meter()} (prompt header {state.header_count:,})"
        if state.blocked:
            line += f", {len(state.blocked)} blocked by the injection scan"
        out.append(line + (f" — {state.problem}" if state.problem else ""))
    out.extend(f"  {effect}" for effect in ctx.prompt.settings.effects())
    out.append(f"  project context: {ctx.project.path or 'none'} ({ctx.project.why})")
    out.extend(f"  {reason}" for reason in ctx.prompt.reasons)
    out.append("")
    if ctx.prompt.text is None:
        out.append("--- no memory block in a new session's prompt ---")
    else:
        out.append("--- the memory part of a new session's prompt, exactly ---")
        out.append(ctx.prompt.text)
    for resumed in ctx.resumed:
        out.append("")
        how = "rebuilds from the files" if resumed.rebuilds else ("same memory" if resumed.same else "differs")
        out.append(f"resumed session {resumed.session.id} ({resumed.session.source}): {how}")
        if resumed.diff:
            out.append("  memory changes this session will not see:")
            out.extend("    " + line for line in resumed.diff.splitlines())
    if ctx.resumed_problem:
        out.append(f"state.db: {ctx.resumed_problem}")
    return out


def keep(source: HermesSource, bank: str, text: str, *, force: bool = False) -> tuple[str, int]:
    """Hermes's ``add`` of one MEMORY.md entry: the sentence to print and the exit status (1: refused)."""
    home = source.bank(bank)
    home.load()
    change = home.keep(text, force=force)
    if change.written:
        return change.message, 0
    already = "already exists" in change.message
    return change.message, 0 if already else 1


def pending(source: HermesSource) -> tuple[list[dict[str, Any]], list[str]]:
    """Every staged write (JSON objects) and the lines a person reads."""
    objs, lines = [], []
    for write in source.approvals().pending():
        objs.append(
            {
                "id": write.id,
                "target": write.target,
                "summary": write.summary,
                "created_ms": write.created_ms,
                "profile": write.bank,
                "applicable": write.applicable,
                "problem": write.problem or None,
                "diff": unified(write),
            }
        )
        mark = "" if write.applicable else "  (cannot be approved now: " + write.problem + ")"
        lines.append(f"{write.id}  {write.summary}{mark}")
        lines.extend("    " + line for line in unified(write).splitlines())
    return objs, lines or ["No writes await approval."]


def approve(source: HermesSource, ids: Sequence[str]) -> str:
    """Approve ``ids`` (or ``["all"]``) as Hermes's ``/memory approve`` does; raises when any cannot be."""
    return source.approvals().approve(list(ids)).message


def reject(source: HermesSource, ids: Sequence[str]) -> str:
    """Reject ``ids`` (or ``["all"]``)."""
    return source.approvals().reject(list(ids)).message


__all__ = ["FILE_NAMES", "MEMORY", "USER", "approve", "context_lines", "keep", "open_home", "pending", "reject"]
