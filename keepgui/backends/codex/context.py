"""What the next Codex session started in a folder is given from its memory files, exactly.

The first request of a session (``POST …/responses``) carries two blocks made
from files (see the package docstring for where each rule was observed):

* **memory** — in the second developer message: the content part that begins
  ``## Memory`` and, for a V2 root, the parts that continue it (a long V2 block
  travels in parts of at most 8,900 bytes). :attr:`SessionContext.memory` is
  their concatenation, the rendered block (:mod:`.memory`); None when none is
  injected (memory off, no summary, a blank one, one not valid UTF-8);
* **agents_md** — in the first user message: the content part that begins
  ``# AGENTS.md instructions`` (:mod:`.instructions`); None when no file gives
  anything.

Both depend only on files, ``config.toml`` and the environment (``HOME``,
``CODEX_HOME``), never on the time, the model or the prompt. Per-run overrides
(``-c``, ``--enable``, a ``--profile``) are not visible in files: the notes say so.
A running session keeps what it was given; an edit shows in the next session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from keepgui.backends.codex import CHECKED_VERSION
from keepgui.backends.codex.instructions import AgentsChain, agents_chain, global_file, render_block
from keepgui.backends.codex.layout import CodexConfig, CodexEnv, MemoryRoot, active_root, read_config
from keepgui.backends.codex.memory import MemoryBlock, Summary, memory_block, read_summary, version_word
from keepgui.backends.codex.text import size_words, utf8_len
from keepgui.core.errors import NotFound

STATUS_WORD = {"loaded": "loaded", "cut": "CUT", "skipped": "SKIPPED", "blank": "blank", "hidden": "not read"}
"""How :func:`context_lines` names what became of each AGENTS.md file."""

TAKES_EFFECT = "A running Codex session keeps what it was given at its start; an edit shows in the next session."
OVERRIDES = (
    "Per-run overrides (`codex -c key=value`, `--enable`, `--profile`) are not in any file keepgui can read: "
    "a session started with them may be given something else."
)


@dataclass(frozen=True)
class SessionContext:
    """Everything about what a session started in ``cwd`` (resolved) is given from memory files."""

    cwd: str
    env: CodexEnv
    config: CodexConfig
    root: MemoryRoot
    summary: Summary
    block: MemoryBlock | None
    chain: AgentsChain
    notes: tuple[str, ...]
    codex_version: str = CHECKED_VERSION

    @property
    def memory(self) -> str | None:
        """The memory block exactly as the model is given it (its parts joined), or None."""
        return None if self.block is None else self.block.text

    @property
    def agents_md(self) -> str | None:
        """The AGENTS.md block exactly, or None."""
        return self.chain.block

    @property
    def memory_on(self) -> bool:
        """True when memory is switched on in ``config.toml``."""
        return self.config.memory_on

    @property
    def why_no_memory(self) -> str:
        """Why no memory block is injected ("" when one is)."""
        if self.block is not None:
            return ""
        if not self.config.memory_on:
            return self.config.why_off
        return f"{self.summary.path}: {self.summary.problem}"

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a person should know beside the parts (why no memory is given, unreadable config...)."""
        return tuple(self.notes)

    def named_parts(self) -> dict[str, str | None]:
        """``memory`` (the memory block, its parts joined) and ``agents_md``, exactly, in the order sent."""
        return {"memory": self.memory, "agents_md": self.agents_md}

    def describe(self) -> str:
        """``keepgui context --agent codex`` for a person."""
        return "".join(line + "\n" for line in context_lines(self))

    def to_obj(self) -> dict[str, Any]:
        """For ``keepgui context --agent codex --json``: ``memory`` and ``agents_md`` are the exact texts."""
        block = self.block
        return {
            "agent": "codex",
            "codex_version": self.codex_version,
            "project": self.cwd,
            "codex_home": self.env.home,
            "codex_home_problem": self.env.problem or None,
            "config": self.config.path,
            "config_project_layer": self.config.project_layer or None,
            "memory_on": self.config.memory_on,
            "memory_off_reason": self.config.why_off or None,
            "memory_root": self.root.path,
            "memory_root_version": self.root.version,
            "memory_root_reason": self.root.why,
            "memory": self.memory,
            "memory_parts": None if block is None else [utf8_len(p) for p in block.parts],
            "memory_bytes": None if block is None else block.size,
            "memory_summary": {
                "path": self.summary.path,
                "exists": self.summary.exists,
                "bytes": len(self.summary.raw),
                "trimmed_bytes": utf8_len(self.summary.trimmed),
                "problem": self.summary.problem or None,
                "truncated": None
                if not self.summary.truncation.cut
                else {
                    "head_bytes": self.summary.truncation.head,
                    "tail_from": self.summary.truncation.tail,
                    "dropped_bytes": self.summary.truncation.dropped,
                    "marker": self.summary.truncation.marker,
                },
            },
            "why_no_memory": self.why_no_memory or None,
            "agents_md": self.agents_md,
            "agents_md_bytes": None if self.agents_md is None else utf8_len(self.agents_md),
            "agents": self.chain.to_obj(),
            "notes": list(self.notes),
            "problems": list(self.config.problems) + ([self.env.problem] if self.env.problem else []),
        }


def session_context(project: str, env: CodexEnv | None = None) -> SessionContext:
    """What a session started in the folder ``project`` is given (``env``: this process's environment).

    ``project`` is taken as Codex takes its working folder: its physical path.
    """
    env = CodexEnv.from_environ() if env is None else env
    if not os.path.isdir(project):
        raise NotFound(f"{project}: no such folder; give the folder a Codex session starts in with --project DIR")
    cwd = os.path.realpath(project)
    config = read_config(env.home, cwd, env.paths)
    root = active_root(env.home)
    summary = read_summary(root.path)
    block = memory_block(root, summary, env.paths) if config.memory_on else None
    chain = agents_chain(cwd, env.home, config, env.paths)
    notes: list[str] = []
    if env.problem:
        notes.append(env.problem)
    if config.project_layer:
        notes.append(f"{cwd} is trusted: its {config.project_layer} is laid over the home's config.toml")
    notes.append(f"memory root: {version_word(root.version)} — {root.why}")
    if not config.memory_on:
        notes.append(config.why_off)
    elif block is None:
        notes.append(f"no memory block: {summary.path}: {summary.problem}")
    else:
        notes.append(f"the memory block is {size_words(block.size)}, in {len(block.parts)} content part(s)")
        if block.truncation.cut:
            notes.append(
                f"memory_summary.md is {block.truncation.size:,} bytes trimmed, over the 10,000 Codex injects: "
                f"{block.truncation.dropped:,} bytes in its middle are dropped ({block.truncation.marker})"
            )
    notes.extend(chain.warnings)
    notes.extend([TAKES_EFFECT, OVERRIDES])
    return SessionContext(cwd, env, config, root, summary, block, chain, tuple(notes))


def home_context(env: CodexEnv) -> SessionContext:
    """What any session of the home is given before its folder's own AGENTS.md files: the memory
    block and the global AGENTS.md alone (exact for a folder with no project file)."""
    config = read_config(env.home)
    root = active_root(env.home)
    summary = read_summary(root.path)
    block = memory_block(root, summary, env.paths) if config.memory_on else None
    glob = global_file(env.home)
    chain = AgentsChain("", "", None, config.max_bytes, glob, (), render_block("", glob.text, []), glob.notes)
    notes = [f"memory root: {version_word(root.version)} — {root.why}"]
    if env.problem:
        notes.insert(0, env.problem)
    notes.append(config.why_off if not config.memory_on else "")
    notes.append(
        "The AGENTS.md block shown is the global file alone, as a session in a folder with no AGENTS.md of its "
        "own is given it; open a project folder (or pick a project) for its chain and budget."
    )
    notes.extend([TAKES_EFFECT, OVERRIDES])
    return SessionContext("", env, config, root, summary, block, chain, tuple(n for n in notes if n))


@dataclass(frozen=True)
class CodexPreview:
    """The window's preview of a session's start: ``text`` is both blocks as sent (memory first, then
    AGENTS.md, each under a one-line title), ``context`` everything about them."""

    text: str
    context: SessionContext
    exact: bool = True

    @property
    def notes(self) -> tuple[str, ...]:
        """What a person should know about it."""
        return self.context.notes


def build_preview(context: SessionContext, *, folder_known: bool = True) -> CodexPreview:
    """The preview of a session's two blocks (``folder_known`` False: the home's own bank, whose
    AGENTS.md block is the global file alone, as in a folder with no project files)."""
    memory = context.memory
    agents = context.agents_md
    parts: list[str] = []
    if memory is None:
        parts.append(f"── memory: none injected ({context.why_no_memory}) ──")
    else:
        block = context.block
        count = len(block.parts) if block is not None else 1
        parts.append(f"── memory block · {size_words(utf8_len(memory))} · {count} part(s) ──\n{memory}")
    where = context.cwd if folder_known else "a folder with no AGENTS.md of its own"
    if agents is None:
        parts.append(f"── AGENTS.md: none given in {where} ──")
    else:
        parts.append(f"── AGENTS.md block ({where}) · {size_words(utf8_len(agents))} ──\n{agents}")
    return CodexPreview("\n\n".join(parts), context, folder_known)


def context_lines(context: SessionContext) -> list[str]:
    """``keepgui context --agent codex`` for a person: the home, the root, why memory is on or off, the
    AGENTS.md chain with the budget, then both blocks exactly."""
    out = [f"Codex (checked against {context.codex_version}) · session started in {context.cwd}"]
    out.append(f"  Codex home {context.env.home}" + (f" ({context.env.problem})" if context.env.problem else ""))
    out.append(f"  memory root {context.root.path}: {context.root.why}")
    if context.block is not None:
        block = context.block
        out.append(f"  memory ON: {size_words(block.size)} injected in {len(block.parts)} part(s)")
    else:
        out.append(f"  no memory block: {context.why_no_memory}")
    chain = context.chain
    out.append("")
    out.append(f"AGENTS.md: global {chain.glob.path or '(none)'}; project root {chain.root or '(none)'}")
    for item in chain.files:
        where = f"bytes {item.start:,}–{item.start + item.read:,}" if item.read else ""
        out.append(f"  {STATUS_WORD.get(item.status, item.status):>8}  {item.path}  {where}".rstrip())
        if item.reason:
            out.append(f"            {item.reason}")
    out.append(f"  project budget {chain.spent:,} of {chain.budget:,} bytes used")
    for note in context.notes:
        out.append(f"note: {note}")
    for problem in context.to_obj()["problems"]:
        out.append(f"problem: {problem}")
    out.append("")
    out.append("--- the memory block, exactly ---" if context.memory is not None else "--- no memory block ---")
    if context.memory is not None:
        out.append(context.memory)
    out.append(
        "--- the AGENTS.md block, exactly ---" if context.agents_md is not None else "--- no AGENTS.md block ---"
    )
    if context.agents_md is not None:
        out.append(context.agents_md)
    return out
