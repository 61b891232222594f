"""A Codex memory root as the rows of the memory table (no Qt).

:func:`read_state` reads the home once — its configuration, the active root,
the summary, the rest of the root, the git baseline — and :func:`rows_of` turns
that into :class:`~keepgui.core.source.FileRow`\\ s, in this order:

* **the summary**, by section and bullet (``summary:…``): what every session is
  given. Tags say where each stands: ``injected``, ``not-injected`` (in the middle
  a long summary loses, or memory is off, or the file is not loaded) or
  ``partly-injected`` (the cut runs through it);
* **the handbook** ``MEMORY.md`` (V1), one row per ``# Task Group`` block
  (``handbook:…``), ``on-demand``: the model searches it when the summary points
  there;
* **the notes** (``note:<file>``), the person's own channel: ``pending`` until a
  consolidation has read them (they are not in the git baseline yet), then
  ``consolidated``;
* **rollout summaries**, ``raw_memories.md`` and **skills**, ``read-only``, each
  with the reason (Codex regenerates the first two at every start; the
  consolidation agent writes skills).

Each row's fields give its file, section, line, size and token estimate, and
what the model sees of it; the sizes say what is injected and what is only
read on demand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from keepgui.backends.codex.baseline import Baseline, BaselineUnreadable, read_baseline
from keepgui.backends.codex.entries import NONE, PART, WHOLE, seen, summary_entries
from keepgui.backends.codex.layout import CodexConfig, CodexEnv, MemoryRoot, active_root, read_config
from keepgui.backends.codex.memory import (
    CONSOLIDATED,
    REGENERATED,
    MemoryBlock,
    RootContents,
    RootFile,
    Summary,
    handbook_entries,
    memory_block,
    read_root,
    read_summary,
)
from keepgui.backends.codex.text import size_words, utf8_len
from keepgui.core.source import FileRow

SUMMARY, HANDBOOK, NOTE, ROLLOUT, RAW, SKILL = "summary", "handbook", "note", "rollout", "raw", "skill"
INJECTED, NOT_INJECTED, PARTLY, ON_DEMAND, READ_ONLY = (
    "injected",
    "not-injected",
    "partly-injected",
    "on-demand",
    "read-only",
)
PENDING, CONSOLIDATED_TAG = "pending", "consolidated"
ROW_TEXT_LIMIT = 20_000
"""A row keeps at most this many characters of a long file (the file itself is not cut)."""


@dataclass(frozen=True)
class HomeState:
    """One reading of a Codex home: everything the rows, the summary line and the preview need."""

    env: CodexEnv
    config: CodexConfig
    root: MemoryRoot
    summary: Summary
    block: MemoryBlock | None
    contents: RootContents
    baseline: Baseline | None
    baseline_problem: str = ""

    def in_baseline(self, item: RootFile) -> bool:
        """True when the baseline holds ``item`` with these very bytes (a consolidation has seen it)."""
        if self.baseline is None:
            return False
        return self.baseline.files.get(item.rel.replace(os.sep, "/")) == item.blob


def read_state(env: CodexEnv, cwd: str | None = None) -> HomeState:
    """Read a Codex home as a session in ``cwd`` (None: any folder) sees it (off the GUI thread: it
    reads every file of the root)."""
    config = read_config(env.home, None if cwd is None else os.path.realpath(cwd), env.paths)
    root = active_root(env.home)
    summary = read_summary(root.path)
    block = memory_block(root, summary, env.paths) if config.memory_on else None
    contents = read_root(root.path)
    problem = ""
    try:
        baseline = read_baseline(root.path) if root.exists else None
    except BaselineUnreadable as exc:
        baseline, problem = None, str(exc)
    return HomeState(env, config, root, summary, block, contents, baseline, problem)


def _ms(ns: int) -> int:
    return ns // 1_000_000


def _cut(text: str) -> str:
    return text if len(text) <= ROW_TEXT_LIMIT else text[:ROW_TEXT_LIMIT] + "\n…"


def _summary_rows(state: HomeState, start: int) -> list[FileRow]:
    summary = state.summary
    if not summary.exists or summary.text is None:
        return []
    rows: list[FileRow] = []
    counts: dict[str, int] = {}
    updated = _ms(summary.stamp.mtime_ns)
    given = state.block is not None
    for entry in summary_entries(summary.text, summary.trimmed or None):
        sees = seen(entry, summary.truncation) if given else NONE
        tag = {WHOLE: INJECTED, PART: PARTLY, NONE: NOT_INJECTED}[sees]
        if not given:
            why = state.config.why_off if not state.config.memory_on else summary.problem
        elif sees == NONE:
            why = "no: it is in the middle Codex drops from a summary over 10,000 bytes"
        elif sees == PART:
            why = "in part: the 10,000-byte cut runs through it"
        else:
            why = "yes, at the start of every session"
        key = f"{SUMMARY}:{entry.key}"
        counts[key] = counts.get(key, 0) + 1
        if counts[key] > 1:
            key += f"-{counts[key]}"
        size = utf8_len(entry.text)
        rows.append(
            FileRow(
                id=key,
                text=entry.text,
                position=start + len(rows),
                tags=(SUMMARY, tag),
                updated_at=updated,
                fields=(
                    ("file", "memory_summary.md"),
                    ("section", entry.section or "(top)"),
                    ("line", str(entry.line)),
                    ("size", size_words(size)),
                    ("given to the model", why),
                ),
            )
        )
    return rows


def _file_row(
    key: str, item: RootFile, position: int, tags: tuple[str, ...], fields: tuple[tuple[str, str], ...]
) -> FileRow:
    return FileRow(
        id=key,
        text=_cut(item.text),
        position=position,
        tags=tags,
        updated_at=_ms(item.mtime_ns),
        fields=(("file", item.rel), ("size", size_words(item.size)), *fields),
    )


def _handbook_rows(state: HomeState, start: int) -> list[FileRow]:
    handbook = state.contents.handbook
    if handbook is None:
        return []
    rows: list[FileRow] = []
    for entry in handbook_entries(handbook.text):
        rows.append(
            FileRow(
                id=f"{HANDBOOK}:{entry.line}:{entry.title[:60]}",
                text=_cut(entry.text),
                position=start + len(rows),
                tags=(HANDBOOK, ON_DEMAND, READ_ONLY),
                updated_at=_ms(handbook.mtime_ns),
                fields=(
                    ("file", "MEMORY.md"),
                    ("line", str(entry.line)),
                    ("size", size_words(utf8_len(entry.text))),
                    *entry.fields,
                    ("given to the model", "only when it searches MEMORY.md (the summary tells it to)"),
                    ("read-only", CONSOLIDATED),
                ),
            )
        )
    return rows


def rows_of(state: HomeState) -> list[FileRow]:
    """Every row of the home's active root, in the order of the module docstring."""
    rows = _summary_rows(state, 0)
    rows += _handbook_rows(state, len(rows))
    contents = state.contents
    for note in contents.notes:
        consolidated = state.in_baseline(note)
        status = (
            "read by Codex's last consolidation"
            if consolidated
            else "waiting: the next successful consolidation reads it (a `codex exec` run exits before its "
            "consolidation finishes, and a failed run waits an hour before it tries again)"
        )
        rows.append(
            _file_row(
                f"{NOTE}:{note.rel.rsplit('/', 1)[-1]}",
                note,
                len(rows),
                (NOTE, CONSOLIDATED_TAG if consolidated else PENDING),
                (("given to the model", "no: the consolidation agent folds it into the summary"), ("status", status)),
            )
        )
    for item in contents.rollouts:
        rows.append(
            _file_row(
                f"{ROLLOUT}:{os.path.basename(item.path)}",
                item,
                len(rows),
                (ROLLOUT, ON_DEMAND, READ_ONLY),
                (("given to the model", "only when it opens it"), ("read-only", REGENERATED)),
            )
        )
    if contents.raw is not None:
        rows.append(
            _file_row(
                RAW,
                contents.raw,
                len(rows),
                (RAW, READ_ONLY),
                (("given to the model", "no: the consolidation agent's input"), ("read-only", REGENERATED)),
            )
        )
    for item in contents.skills:
        rows.append(
            _file_row(
                f"{SKILL}:{item.rel}",
                item,
                len(rows),
                (SKILL, ON_DEMAND, READ_ONLY),
                (("given to the model", "only when it opens it"), ("read-only", CONSOLIDATED)),
            )
        )
    return rows


def sizes(state: HomeState) -> dict[str, int]:
    """Bytes injected at every start vs. only read on demand (for the summary line and ``--json``)."""
    contents = state.contents
    on_demand = sum(f.size for f in (*contents.rollouts, *contents.skills))
    if contents.handbook is not None:
        on_demand += contents.handbook.size
    return {
        "injected": state.block.size if state.block is not None else 0,
        "summary": len(state.summary.raw),
        "on_demand": on_demand,
        "notes": sum(n.size for n in contents.notes),
        "raw": contents.raw.size if contents.raw is not None else 0,
    }
