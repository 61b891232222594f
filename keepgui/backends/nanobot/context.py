"""What nanobot puts in its system prompt from the memory files (spec §4, §4.1).

``ContextBuilder.build_system_prompt`` joins its parts with ``\\n\\n---\\n\\n``.
Two of them carry memory:

* the **bootstrap** part: AGENTS.md, SOUL.md, USER.md, each rendered as
  ``## <FILENAME>\\n\\n<content>`` and joined among themselves by ``\\n\\n``
  (one part, not three). A file is skipped when its content is blank after
  trimming; AGENTS.md and USER.md also when they equal nanobot's bundled
  template after trimming; a SOUL.md equal to the legacy template is replaced
  by the current one;
* the **memory** part, after the tool contract:
  ``# Memory\\n\\n## Long-term Memory\\n<MEMORY.md>``, left out when MEMORY.md
  is empty (an empty string — nanobot does not trim here) or equals the
  bundled template. No size cap.

nanobot reads each file with ``Path.read_text(encoding="utf-8")``: universal
newlines (``\\r\\n`` and ``\\r`` become ``\\n``) and a BOM kept as U+FEFF; the
preview reads them the same way.

keep.md is **not** one of these parts: the keep skill says it "is read on every
turn", but stock nanobot never injects it; the model sees it when it reads the
file (prompted by USER.md's pointer or the skill). The preview shows it as its
own labelled part, outside the prompt, so its size can be weighed too.

**Exact mode**: when the ``nanobot`` package (PyPI ``nanobot-ai``) is
importable, its own ``ContextBuilder`` renders the full system prompt and its
bundled templates decide which files are untouched templates. It runs on a
private temporary copy of the memory files, because constructing nanobot's
memory store creates folders and may migrate legacy history — keepgui never
lets anything write into a workspace's bookkeeping. Without the package, the
built-in rendering reproduces the memory-bearing parts and lists the parts it
cannot (identity, tool contract, skills, recent history, template detection).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from keepgui.backends.nanobot.workspace import (
    AGENTS_MD,
    CURSOR,
    DREAM_CURSORS,
    HISTORY_JSONL,
    KEEP_MD,
    MEMORY_MD,
    SOUL_MD,
    USER_MD,
    Workspace,
)
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError, NotFound, Unreadable

PART_SEPARATOR = "\n\n---\n\n"
"""How nanobot joins the parts of its system prompt."""

BOOTSTRAP_SEPARATOR = "\n\n"
"""How nanobot joins the bootstrap files inside their one part."""

BOOTSTRAP_FILES = (AGENTS_MD, SOUL_MD, USER_MD)
SKIPPABLE_TEMPLATES = frozenset({AGENTS_MD, USER_MD})
MEMORY_HEADER = "# Memory\n\n## Long-term Memory\n"

NOT_REPRODUCED = (
    "identity (runtime, workspace paths, platform policy, channel hint)",
    "tool contract",
    "active skills and the skills summary",
    "recent history and the archived context summary (they depend on the session)",
    (
        "template detection (an AGENTS.md, USER.md or MEMORY.md still equal to nanobot's bundled template is "
        "left out by nanobot but counted here)"
    ),
)
"""What the built-in rendering cannot reproduce without the nanobot package."""

SESSION_PARTS = ("recent history and the archived context summary (they depend on the session)",)
"""What even exact mode leaves out: it renders the prompt of a fresh session."""

KEEP_NOTE = (
    "keep.md is not part of nanobot's system prompt: the keep skill reads it on every turn, but stock "
    "nanobot never injects it; the model sees it when it reads the file, prompted by USER.md's pointer "
    "or by the skill"
)


def estimate_tokens(text: str) -> int:
    """A rough token count: characters / 4, rounded up (no tokenizer needed)."""
    return math.ceil(len(text) / 4)


def read_as_nanobot(data: bytes | None, path: str) -> str | None:
    """File bytes as nanobot's ``read_text(encoding="utf-8")`` returns them (None when missing)."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            path, f"byte {exc.start} is not valid UTF-8; nanobot cannot read this file either. Re-save it as UTF-8"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------------- nanobot, when installed


@dataclass(frozen=True)
class Templates:
    """nanobot's bundled templates (None for one it does not ship), and its version."""

    version: str
    agents: str | None
    user: str | None
    soul: str | None
    legacy_soul: str | None
    memory: str | None

    def for_file(self, rel: str) -> str | None:
        """The template nanobot compares ``rel`` with (AGENTS.md, USER.md, SOUL.md, memory/MEMORY.md)."""
        return {AGENTS_MD: self.agents, USER_MD: self.user, SOUL_MD: self.soul, MEMORY_MD: self.memory}.get(rel)

    def is_template(self, rel: str, content: str) -> bool:
        """True when ``content`` equals the bundled template of ``rel`` after trimming (nanobot's test)."""
        template = self.for_file(rel)
        return template is not None and content.strip() == template.strip()


@lru_cache(maxsize=1)
def nanobot_version() -> str | None:
    """The installed nanobot-ai version, or None when the ``nanobot`` package is not importable.

    Asked once per process: installing nanobot takes a restart to be noticed.
    """
    try:
        importlib.import_module("nanobot")
    except Exception:  # noqa: BLE001 - any failure to import (not only ImportError) means: no exact mode
        return None
    try:
        return importlib.metadata.version("nanobot-ai")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=1)
def bundled_templates() -> Templates | None:
    """nanobot's bundled templates, read from the installed package; None without it."""
    version = nanobot_version()
    if version is None:
        return None
    from importlib.resources import files

    def load(name: str) -> str | None:
        """One template's text, or None when this nanobot does not ship it."""
        try:
            resource = files("nanobot").joinpath("templates", *name.split("/"))
            return resource.read_text(encoding="utf-8") if resource.is_file() else None
        except (OSError, UnicodeDecodeError, ModuleNotFoundError):
            return None

    return Templates(
        version, load("AGENTS.md"), load("USER.md"), load("SOUL.md"), load("legacy/SOUL.md"), load("memory/MEMORY.md")
    )


# ---------------------------------------------------------------------- the preview


@dataclass(frozen=True)
class PromptPart:
    """One memory-bearing piece of the prompt preview.

    ``key``: ``AGENTS.md``, ``SOUL.md``, ``USER.md``, ``memory`` or ``keep``.
    ``text`` is exactly what is injected (the ``## FILE`` section, the
    ``# Memory`` part) or, for keep.md, the file as the skill reads it.
    ``injected`` says whether stock nanobot puts it in the system prompt;
    ``status`` says why or why not; ``size_bytes`` (UTF-8) and ``tokens``
    (chars/4) measure ``text``.
    """

    key: str
    label: str
    source: str
    text: str
    injected: bool
    status: str

    @property
    def size_bytes(self) -> int:
        """UTF-8 bytes of ``text``."""
        return len(self.text.encode("utf-8"))

    @property
    def tokens(self) -> int:
        """Estimated tokens of ``text`` (chars/4)."""
        return estimate_tokens(self.text)

    def to_obj(self) -> dict[str, Any]:
        """The part for ``--json``."""
        return {
            "key": self.key,
            "label": self.label,
            "source": self.source,
            "injected": self.injected,
            "status": self.status,
            "bytes": self.size_bytes,
            "tokens": self.tokens,
            "text": self.text,
        }


@dataclass(frozen=True)
class PromptPreview:
    """The memory-bearing part of nanobot's system prompt for one workspace.

    ``memory_prompt`` is the bootstrap part and the memory part joined as nanobot
    joins parts (in the real prompt the tool contract and skills sit between
    them). ``system_prompt`` is nanobot's own full prompt in exact mode, else
    None. ``not_reproduced`` lists what this preview could not render.
    """

    workspace: str
    mode: str
    parts: tuple[PromptPart, ...]
    memory_prompt: str
    system_prompt: str | None = None
    nanobot_version: str | None = None
    not_reproduced: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    keep_note: str = KEEP_NOTE

    def part(self, key: str) -> PromptPart:
        """The part with this key."""
        for part in self.parts:
            if part.key == key:
                return part
        raise NotFound(f"the prompt preview has no part {key}")

    @property
    def injected_bytes(self) -> int:
        """UTF-8 bytes of the memory-bearing prompt text."""
        return len(self.memory_prompt.encode("utf-8"))

    @property
    def injected_tokens(self) -> int:
        """Estimated tokens of the memory-bearing prompt text."""
        return estimate_tokens(self.memory_prompt)

    @property
    def text(self) -> str:
        """What nanobot is given from its memory files, exactly (the memory-bearing prompt)."""
        return self.memory_prompt

    @property
    def warnings(self) -> tuple[str, ...]:
        """The preview's notes for a person."""
        return self.notes

    def named_parts(self) -> dict[str, str | None]:
        """``memory_prompt`` (the bootstrap files and memory joined as nanobot joins them) and, in exact
        mode, nanobot's whole ``system_prompt`` (None otherwise)."""
        return {"memory_prompt": self.memory_prompt, "system_prompt": self.system_prompt}

    def describe(self, *, summary: bool = False, full: bool = False) -> str:
        """The report for a person: each part with its status and text (``summary``: sizes only; ``full``:
        nanobot's whole system prompt first, in exact mode), the size of the whole, and what it leaves out."""
        mode = f"exact, nanobot {self.nanobot_version}" if self.mode == "exact" else "built-in rendering"
        out = [f"nanobot prompt preview of {self.workspace} ({mode})"]
        if full and self.system_prompt is not None:
            out += [self.system_prompt, ""]
        for part in self.parts:
            size = f" · {part.size_bytes:,} bytes · ~{part.tokens:,} tokens" if part.text else ""
            out.append(f"── {part.label} · {part.status}{size}")
            if part.text and not summary:
                out.append(part.text.rstrip("\n"))
        out.append(
            f"memory-bearing prompt: {self.injected_bytes:,} bytes, ~{self.injected_tokens:,} tokens "
            "(parts joined with `---` as nanobot joins them)"
        )
        out += [f"not reproduced: {item}" for item in self.not_reproduced]
        return "".join(line + "\n" for line in out)

    def to_obj(self) -> dict[str, Any]:
        """The preview for ``--json``."""
        return {
            "workspace": self.workspace,
            "mode": self.mode,
            "nanobot_version": self.nanobot_version,
            "parts": [p.to_obj() for p in self.parts],
            "memory_prompt": self.memory_prompt,
            "injected_bytes": self.injected_bytes,
            "injected_tokens": self.injected_tokens,
            "system_prompt": self.system_prompt,
            "not_reproduced": list(self.not_reproduced),
            "notes": list(self.notes),
            "keep_note": self.keep_note,
        }


def render_parts(files: dict[str, str | None], templates: Templates | None) -> tuple[list[PromptPart], str]:
    """Render the memory-bearing parts from file texts (as nanobot read them; None = missing).

    Returns the parts (bootstrap files, memory, keep.md) and ``memory_prompt``.
    """
    parts: list[PromptPart] = []
    sections: list[str] = []
    for name in BOOTSTRAP_FILES:
        content = files.get(name)
        label = f"{name} (bootstrap file)"
        if content is None:
            parts.append(PromptPart(name, label, name, "", False, "skipped: the file does not exist"))
            continue
        status = "injected"
        if (
            name == SOUL_MD
            and templates is not None
            and templates.legacy_soul is not None
            and content.strip() == templates.legacy_soul.strip()
            and templates.soul is not None
        ):
            content = templates.soul
            status = "injected: equals the legacy template, so nanobot injects its current SOUL.md template instead"
        if not content.strip():
            parts.append(PromptPart(name, label, name, "", False, "skipped: the file is empty"))
            continue
        if name in SKIPPABLE_TEMPLATES:
            if templates is not None and templates.is_template(name, content):
                parts.append(
                    PromptPart(
                        name,
                        label,
                        name,
                        "",
                        False,
                        "skipped: still nanobot's bundled template (any edit makes it count)",
                    )
                )
                continue
            if templates is None:
                status = "injected (unless it still equals nanobot's bundled template: not checked)"
        section = f"## {name}\n\n{content}"
        sections.append(section)
        parts.append(PromptPart(name, label, name, section, True, status))
    memory = files.get(MEMORY_MD)
    label = "Long-term memory (memory/MEMORY.md)"
    if memory is None:
        parts.append(PromptPart("memory", label, MEMORY_MD, "", False, "skipped: the file does not exist"))
    elif not memory:
        parts.append(PromptPart("memory", label, MEMORY_MD, "", False, "skipped: the file is empty"))
    elif templates is not None and templates.is_template(MEMORY_MD, memory):
        parts.append(
            PromptPart(
                "memory",
                label,
                MEMORY_MD,
                "",
                False,
                "skipped: still nanobot's bundled template (any edit makes it count)",
            )
        )
    else:
        status = (
            "injected"
            if templates is not None
            else "injected (unless it still equals nanobot's bundled template: not checked)"
        )
        parts.append(PromptPart("memory", label, MEMORY_MD, MEMORY_HEADER + memory, True, status))
    keep = files.get(KEEP_MD)
    parts.append(
        PromptPart(
            "keep",
            "keep.md (read by the keep skill, not injected by nanobot)",
            KEEP_MD,
            keep or "",
            False,
            "not injected: " + KEEP_NOTE if keep is not None else "not injected; the file does not exist yet",
        )
    )
    prompt_parts = []
    if sections:
        prompt_parts.append(BOOTSTRAP_SEPARATOR.join(sections))
    memory_part = next(p for p in parts if p.key == "memory")
    if memory_part.injected:
        prompt_parts.append(memory_part.text)
    return parts, PART_SEPARATOR.join(prompt_parts)


def _read_files(workspace: Workspace) -> tuple[dict[str, bytes | None], dict[str, str | None]]:
    """The bytes of the prompt's files (None: missing), and their text as nanobot reads it."""
    raw: dict[str, bytes | None] = {}
    files = {}
    for rel in (*BOOTSTRAP_FILES, MEMORY_MD, KEEP_MD):
        raw[rel], _stamp = workspace.read(rel)
        files[rel] = read_as_nanobot(raw[rel], workspace.path(rel))
    return raw, files


def build_preview(workspace: Workspace | str, *, exact: bool | None = None) -> PromptPreview:
    """The prompt preview of ``workspace``.

    ``exact``: True demands exact mode (raises :class:`KeepguiError` naming the
    fix when nanobot is not installed or fails); False uses the built-in
    rendering; None (the window's default) uses exact mode when available.
    """
    workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    raw, files = _read_files(workspace)
    templates = bundled_templates() if exact is not False else None
    if exact and templates is None:
        raise KeepguiError(
            "exact preview needs nanobot's own code, and the `nanobot` package is not importable "
            "here; install it (pip install nanobot-ai) in keepgui's environment, or leave out --exact"
        )
    parts, memory_prompt = render_parts(files, templates)
    if templates is None:
        return PromptPreview(workspace.root, "built-in", tuple(parts), memory_prompt, None, None, NOT_REPRODUCED)
    notes: list[str] = []
    try:
        system_prompt = nanobot_system_prompt(workspace, raw)  # the bytes just rendered, not a later edit
    except Exception as exc:  # nanobot's API moves between releases; say so and fall back
        if exact:
            raise KeepguiError(
                f"nanobot {templates.version} is installed but its ContextBuilder failed on "
                f"{workspace.root} ({type(exc).__name__}: {exc}); leave out --exact for the "
                "built-in rendering"
            ) from exc
        notes.append(
            f"nanobot {templates.version}'s ContextBuilder failed ({type(exc).__name__}: {exc}); "
            "shown: the built-in rendering with nanobot's templates"
        )
        return PromptPreview(
            workspace.root,
            "built-in",
            tuple(parts),
            memory_prompt,
            None,
            templates.version,
            NOT_REPRODUCED[:-1],
            tuple(notes),
        )
    for part in parts:
        if part.injected and part.text not in system_prompt:
            notes.append(
                f"nanobot {templates.version} renders {part.source} differently from keepgui's reading "
                "of the spec; trust the full system prompt"
            )
    return PromptPreview(
        workspace.root,
        "exact",
        tuple(parts),
        memory_prompt,
        system_prompt,
        templates.version,
        SESSION_PARTS,
        tuple(notes),
    )


# ---------------------------------------------------------------------- exact mode

_COPY_LIMIT = 64 * 1024 * 1024


def nanobot_system_prompt(workspace: Workspace, read: Mapping[str, bytes | None] | None = None) -> str:
    """nanobot's own system prompt for ``workspace`` (a fresh session, no channel).

    Runs ``ContextBuilder`` on a temporary copy of the files it reads (bootstrap
    files, memory/, skills/), never on the workspace itself, then puts the real
    workspace path back where nanobot printed the copy's. ``read``: files
    already read, by workspace-relative name (None: missing), copied as given.
    """
    from pathlib import Path

    context = importlib.import_module("nanobot.agent.context")
    scratch = tempfile.mkdtemp(prefix="keepgui-nanobot-preview-")
    try:
        copy = os.path.join(scratch, "workspace")
        fsio.make_dirs(copy)
        for rel in (*BOOTSTRAP_FILES, MEMORY_MD, HISTORY_JSONL, CURSOR, *DREAM_CURSORS):
            data = read[rel] if read and rel in read else workspace.read(rel, limit=_COPY_LIMIT)[0]
            if data is not None:
                target = os.path.join(copy, *rel.split("/"))
                fsio.make_dirs(os.path.dirname(target))
                fsio.atomic_write(target, data)
        _copy_tree(workspace.path("skills"), os.path.join(copy, "skills"))
        logger = _quiet_nanobot()
        try:
            builder = context.ContextBuilder(Path(copy))
            prompt: str = builder.build_system_prompt()
        finally:
            if logger is not None:
                logger.enable("nanobot")
        for spelling in {str(Path(copy).resolve()), copy}:
            prompt = prompt.replace(spelling, workspace.root)
        return prompt
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _copy_tree(src: str, dst: str) -> None:
    if not os.path.isdir(src) or os.path.islink(src):
        return
    for folder, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        target_folder = os.path.join(dst, os.path.relpath(folder, src))
        fsio.make_dirs(target_folder)
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                data, _stamp = fsio.read_stamped(path, limit=_COPY_LIMIT)
            except (OSError, KeepguiError):
                continue
            if data is not None:
                fsio.atomic_write(os.path.join(target_folder, name), data)


def _quiet_nanobot() -> Any:  # loguru's logger, when nanobot brought loguru along
    # nanobot logs through loguru; its chatter (migrations, warnings) is not ours to print
    try:
        from loguru import logger
    except ImportError:
        return None
    logger.disable("nanobot")
    return logger
