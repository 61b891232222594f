"""What the command line does for Gemini CLI, as plain functions (the generic ``--agent`` CLI wires them).

* :func:`context` — ``keepgui context --agent gemini --project DIR [--json]``: the files a session
  started in DIR loads (in order, with what each costs and what its ``@`` words become), the ones that
  load later or never and why, then both ``<loaded_context>`` elements exactly; ``--json`` gives
  :meth:`~keepgui.backends.gemini.context.GeminiContext.to_obj` (``system_context``, ``session_context``,
  ``parts``…). The folder is taken as trusted unless ``trusted`` says otherwise. Nothing is written.
* :func:`keep` — ``keepgui keep --agent gemini --project DIR TEXT``: one ``- TEXT`` line appended to that
  folder's private ``MEMORY.md``, resolved as Gemini resolves it (its private folder claimed the way a
  first session claims it when Gemini has not seen the folder).
* :func:`pending`, :func:`approve`, :func:`reject` — ``keepgui pending --agent gemini``: the Auto Memory
  inbox of a Gemini dir or launch folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from keepgui.backends.gemini.backend import GeminiSource
from keepgui.backends.gemini.context import GeminiContext, block, session_context, size_of, tokens_of
from keepgui.backends.gemini.documents import describe_token
from keepgui.backends.gemini.layout import GeminiEnv
from keepgui.core.approvals import PendingWrite
from keepgui.core.history import History
from keepgui.core.source import Change


def context(
    project: str, environ: Mapping[str, str] | None = None, *, trusted: bool | None = True, as_json: bool = False
) -> str | dict[str, Any]:
    """What a session started in ``project`` is given: a report for people, or the JSON object."""
    found = session_context(
        os.path.abspath(os.path.expanduser(project)), GeminiEnv.from_environ(environ), trusted=trusted
    )
    return found.to_obj() if as_json else report(found)


def report(found: GeminiContext) -> str:
    """The people's form of :func:`context`."""
    d = found.discovery
    lines = [f"Gemini CLI (checked against {found.gemini_version}) · session started in {d.cwd}"]
    lines.append(f"  private memory {d.private.memory} ({d.private.how})")
    lines.append(f"  trust: {'taken as trusted' if d.trusted else 'untrusted'} · Gemini's verdict: {d.trust.why}")
    loaded = [f for f in d.files if f.state in ("loaded", "empty")]
    lines += ["", f"Loaded at session start, in this order ({len(loaded)}):" if loaded else "Nothing loads."]
    for number, f in enumerate(loaded, start=1):
        sent = size_of(block(f.path, f.processed.text)) if f.processed is not None else 0
        lines.append(f"  {number:>2}. {f.path}")
        lines.append(
            f"      {f.tier} · {f.size:,} bytes on disk"
            + (" · empty: no block" if f.state == "empty" else f" · ~{tokens_of(sent):,} tokens")
        )
        for token in f.processed.flagged() if f.processed is not None else []:
            if token.outcome != "code":
                lines.append(f"      {describe_token(token)}")
    for title, files in (("Loads later:", d.later()), ("Not loaded:", d.never())):
        if files:
            lines += ["", title] + [f"  {f.path}: {f.reason}" for f in files]
    lines += ["", *(f"note: {n}" for n in found.notes), *(f"problem: {p}" for p in d.problems)]
    for label, element in (("system instruction", found.system_context), ("first user turn", found.session_context)):
        lines += [
            "",
            f"--- the {label}'s <loaded_context>, exactly ---" if element else f"--- no element in the {label} ---",
        ]
        if element:
            lines.append(element)
    lines.append("")
    lines.append(f"{found.sent_bytes:,} bytes ≈ {tokens_of(found.sent_bytes):,} tokens with every request")
    return "\n".join(lines)


def _source(path: str, environ: Mapping[str, str] | None, history: History | None) -> GeminiSource:
    return GeminiSource(os.path.abspath(os.path.expanduser(path)), environ=environ, history=history)


def keep(project: str, text: str, environ: Mapping[str, str] | None = None, history: History | None = None) -> Change:
    """Append ``- TEXT`` to the private ``MEMORY.md`` of a launch folder (one undoable change)."""
    source = _source(project, environ, history)
    bank = source.bank(source.scan().names[0])
    bank.load()
    return bank.keep(text, force=True)


def pending(path: str, environ: Mapping[str, str] | None = None, history: History | None = None) -> list[PendingWrite]:
    """The Auto Memory patches waiting in a Gemini dir's (or a launch folder's) inbox."""
    return _source(path, environ, history).approvals().pending()


def approve(
    path: str, ids: Sequence[str], environ: Mapping[str, str] | None = None, history: History | None = None
) -> Change:
    """Apply inbox patches as Gemini applies them."""
    return _source(path, environ, history).approvals().approve(ids)


def reject(
    path: str, ids: Sequence[str], environ: Mapping[str, str] | None = None, history: History | None = None
) -> Change:
    """Dismiss inbox patches (kept in keepgui's history)."""
    return _source(path, environ, history).approvals().reject(ids)
