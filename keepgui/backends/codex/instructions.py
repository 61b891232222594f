"""The AGENTS.md block: the global file, the project chain, the shared byte budget, exactly (no Qt).

What a Codex session started in a folder is given from its ``AGENTS.md`` files,
as observed on the real CLI (:data:`~keepgui.backends.codex.CHECKED_VERSION`):

* **Global** (:func:`global_file`): ``$CODEX_HOME/AGENTS.override.md`` when its
  text is not blank, else ``$CODEX_HOME/AGENTS.md``; decoded lossily, trimmed at
  both ends (Rust's trim), loaded whole — it does not count against the budget.
  ``project_doc_fallback_filenames`` do not apply to it.
* **Project root**: from the session folder (its physical path, links resolved)
  up to the nearest folder holding an entry named in ``project_root_markers``
  (``.git`` by default; a ``.git`` *file* counts); none found, or no markers,
  means the session folder alone. Nothing above the root or below the session
  folder is read.
* **One file per folder**, root first: the first of ``AGENTS.override.md``,
  ``AGENTS.md``, then each fallback name that is a file (or a link to one).
  A **blank** ``AGENTS.override.md`` still claims its folder: the folder then
  gives nothing and its ``AGENTS.md`` is not read (keepgui warns).
* **One budget**, ``project_doc_max_bytes`` (32,768), for all project files
  together, spent root first: each file is read up to the budget left as raw
  bytes — the cut falls at that byte, mid-line or mid-character (an incomplete
  character becomes one U+FFFD); a file whose bytes read are blank costs nothing;
  once the budget is spent, later files are skipped. ``0`` turns project files
  off. The model is told nothing; Codex only warns on its standard error.
  Project texts are otherwise verbatim (no trim; BOM, CRLF and blank lines kept).
* **Assembly** (:func:`render_block`)::

      header = "# AGENTS.md instructions for <session folder>\\n\\n<INSTRUCTIONS>\\n"   (a project file kept)
               "# AGENTS.md instructions\\n\\n<INSTRUCTIONS>\\n"                       (the global file alone)
      body   = global + ("\\n\\n--- project-doc ---\\n\\n" if both) + "\\n\\n".join(project texts)
      block  = header + body + "\\n</INSTRUCTIONS>"

  No global and no project text: no block at all.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from keepgui.backends.codex.layout import CodexConfig
from keepgui.backends.codex.text import char_offset, is_blank, lossy, rust_trim
from keepgui.core.pathmap import LOCAL, PathMap

OVERRIDE = "AGENTS.override.md"
AGENTS = "AGENTS.md"
GLOBAL_NAMES = (OVERRIDE, AGENTS)
SEPARATOR = "\n\n--- project-doc ---\n\n"

LOADED, CUT, SKIPPED, BLANK, HIDDEN, UNREADABLE = "loaded", "cut", "skipped", "blank", "hidden", "unreadable"
"""How a file fares: loaded whole, cut at the budget, skipped (budget spent), blank (dropped, costs nothing),
hidden (another file claimed its folder first), unreadable."""


def _regular(path: str) -> os.stat_result | None:
    """The stat of ``path`` (links followed) when it is a regular file, else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def read_head(path: str, limit: int | None) -> tuple[bytes, int]:
    """At most ``limit`` bytes (all with None) from the start of the regular file ``path``, and its
    size. A FIFO or device is never opened for reading (OSError)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        want = st.st_size if limit is None else min(limit, st.st_size)
        chunks: list[bytes] = []
        got = 0
        while got < want:
            chunk = os.read(fd, want - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


@dataclass(frozen=True)
class GlobalFile:
    """The global instructions: ``path`` used (None when none), its trimmed ``text``, its ``size``;
    ``notes`` say what was passed over (a blank override)."""

    path: str | None
    text: str | None
    size: int = 0
    notes: tuple[str, ...] = ()


def global_file(home: str) -> GlobalFile:
    """The global file of a Codex home (see the module docstring)."""
    notes: list[str] = []
    for name in GLOBAL_NAMES:
        path = os.path.join(home, name)
        if _regular(path) is None:
            continue
        try:
            data, size = read_head(path, None)
        except OSError as exc:
            notes.append(f"{path}: cannot be read ({exc})")
            continue
        text = rust_trim(lossy(data))
        if text:
            return GlobalFile(path, text, size, tuple(notes))
        if name == OVERRIDE:
            notes.append(f"{path} is blank: Codex ignores a blank global override and reads AGENTS.md")
        else:
            notes.append(f"{path} is blank: no global instructions")
    return GlobalFile(None, None, 0, tuple(notes))


@dataclass(frozen=True)
class ProjectFile:
    """One file of the project chain as the budget treats it.

    ``start`` is the budget spent before it; ``read`` the bytes read (what it costs, 0 when blank or
    skipped); ``size`` its whole size; ``text`` what the model is given of it (None unless loaded or
    cut). ``hides`` names the files of the same folder it keeps from being read.
    """

    path: str
    folder: str
    name: str
    status: str
    size: int
    start: int
    read: int = 0
    text: str | None = None
    reason: str = ""
    hides: tuple[str, ...] = ()

    @property
    def given(self) -> bool:
        """True when part or all of it is in the block."""
        return self.status in (LOADED, CUT)

    @property
    def cut_char(self) -> int | None:
        """The character offset in the file's text (as an editor shows it, lossily decoded) from which
        nothing is sent; None unless it is cut."""
        if self.status != CUT:
            return None
        try:
            whole, _size = read_head(self.path, None)
        except OSError:
            return None
        return char_offset(whole, self.read)

    def to_obj(self) -> dict[str, object]:
        """For ``--json``."""
        return {
            "path": self.path,
            "status": self.status,
            "bytes": self.size,
            "budget_start": self.start,
            "bytes_read": self.read,
            "reason": self.reason,
            "hides": list(self.hides),
        }


def project_root(cwd: str, markers: tuple[str, ...]) -> tuple[str, str | None]:
    """``(project root, the marker found there)``: the nearest folder from ``cwd`` up holding one of
    ``markers`` (any kind of entry); ``(cwd, None)`` when none does or there are no markers."""
    if not markers:
        return cwd, None
    folder = cwd
    while True:
        for marker in markers:
            if marker and os.path.lexists(os.path.join(folder, marker)):
                return folder, marker
        parent = os.path.dirname(folder)
        if parent == folder:
            return cwd, None
        folder = parent


def folders_between(root: str, cwd: str) -> list[str]:
    """The folders from ``root`` down to ``cwd``, both included (``cwd`` is at or below ``root``)."""
    chain = [cwd]
    while chain[-1] != root:
        parent = os.path.dirname(chain[-1])
        if parent == chain[-1]:
            return [cwd]
        chain.append(parent)
    return list(reversed(chain))


def _candidates(config: CodexConfig) -> tuple[str, ...]:
    names = [OVERRIDE, AGENTS]
    names += [n for n in config.fallback_names if n and n not in names]
    return tuple(names)


def _pick(folder: str, names: tuple[str, ...]) -> tuple[str, str, tuple[str, ...]] | None:
    """``(path, name, hidden paths)`` of the file that claims ``folder``, or None."""
    found = [(os.path.join(folder, n), n) for n in names if _regular(os.path.join(folder, n)) is not None]
    if not found:
        return None
    path, name = found[0]
    return path, name, tuple(p for p, _n in found[1:])


def chain_files(cwd: str, config: CodexConfig) -> tuple[str, str | None, list[ProjectFile]]:
    """``(root, marker, files)``: the project files of a session in ``cwd`` (already resolved), root
    first, each with how the budget treats it (see the module docstring)."""
    root, marker = project_root(cwd, config.root_markers)
    budget = config.max_bytes
    left = budget
    files: list[ProjectFile] = []
    names = _candidates(config)
    for folder in folders_between(root, cwd):
        picked = _pick(folder, names)
        if picked is None:
            continue
        path, name, hidden = picked
        files.extend(_fare(path, folder, name, hidden, budget, left))
        left = budget - sum(f.read for f in files)
    return root, marker, files


def _fare(path: str, folder: str, name: str, hidden: tuple[str, ...], budget: int, left: int) -> list[ProjectFile]:
    """How one claimed file fares with ``left`` bytes of budget (plus the files it hides)."""
    spent = budget - left
    out: list[ProjectFile] = []
    st = _regular(path)
    size = st.st_size if st is not None else 0
    if budget == 0:
        out.append(ProjectFile(path, folder, name, SKIPPED, size, spent, reason="project_doc_max_bytes = 0"))
    elif left <= 0:
        out.append(
            ProjectFile(
                path, folder, name, SKIPPED, size, spent, reason=f"the {budget:,}-byte budget was spent before it"
            )
        )
    else:
        try:
            data, size = read_head(path, left)
        except OSError as exc:
            out.append(ProjectFile(path, folder, name, UNREADABLE, size, spent, reason=f"cannot be read ({exc})"))
            data = None
        if data is not None:
            text = lossy(data)
            if is_blank(text):
                why = "blank: it gives nothing and costs nothing"
                if name == OVERRIDE and hidden:
                    why = (
                        "a blank AGENTS.override.md: it claims the folder, so "
                        + ", ".join(os.path.basename(h) for h in hidden)
                        + " is not read"
                    )
                out.append(ProjectFile(path, folder, name, BLANK, size, spent, reason=why, hides=hidden))
            else:
                status = CUT if len(data) < size else LOADED
                reason = f"cut after {len(data):,} of {size:,} bytes: the budget ran out" if status == CUT else ""
                out.append(ProjectFile(path, folder, name, status, size, spent, len(data), text, reason, hidden))
    for other in hidden:
        other_st = _regular(other)
        out.append(
            ProjectFile(
                other,
                folder,
                os.path.basename(other),
                HIDDEN,
                other_st.st_size if other_st is not None else 0,
                spent,
                reason=f"{name} claims this folder first: Codex reads one file per folder",
            )
        )
    return out


@dataclass(frozen=True)
class Spent:
    """One project file's part of the budget, computed from its bytes in hand (the editor's meter)."""

    name: str
    start: int
    read: int
    size: int
    status: str


def lay_out(files: list[tuple[str, bytes]], budget: int) -> list[Spent]:
    """How the budget treats project files of the given bytes, root first (the rules of the module
    docstring, on bytes already read: what an edit would do before it is saved)."""
    left = budget
    out: list[Spent] = []
    for name, data in files:
        start = budget - left
        if budget == 0 or left <= 0:
            out.append(Spent(name, start, 0, len(data), SKIPPED))
            continue
        read = data[:left]
        if is_blank(lossy(read)):
            out.append(Spent(name, start, 0, len(data), BLANK))
            continue
        out.append(Spent(name, start, len(read), len(data), CUT if len(read) < len(data) else LOADED))
        left -= len(read)
    return out


def render_block(cwd: str, global_text: str | None, project_texts: list[str]) -> str | None:
    """The AGENTS.md block (see the module docstring), or None when there is nothing to give."""
    if global_text is None and not project_texts:
        return None
    header = (
        f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n"
        if project_texts
        else "# AGENTS.md instructions\n\n<INSTRUCTIONS>\n"
    )
    body = global_text or ""
    if global_text is not None and project_texts:
        body += SEPARATOR
    body += "\n\n".join(project_texts)
    return f"{header}{body}\n</INSTRUCTIONS>"


@dataclass(frozen=True)
class AgentsChain:
    """Everything about the AGENTS.md block of a session in ``cwd`` (resolved): the global file, the
    project root and the marker that made it, each project file and how it fared, the budget, and
    the exact ``block`` (None when there is none). ``warnings`` are what a person must know (Codex
    itself only prints them on its standard error, and some not at all)."""

    cwd: str
    root: str
    marker: str | None
    budget: int
    glob: GlobalFile
    files: tuple[ProjectFile, ...]
    block: str | None
    warnings: tuple[str, ...]

    @property
    def spent(self) -> int:
        """Bytes of the project budget spent."""
        return sum(f.read for f in self.files)

    @property
    def cut(self) -> ProjectFile | None:
        """The file cut at the budget (None when none is)."""
        return next((f for f in self.files if f.status == CUT), None)

    @property
    def skipped(self) -> tuple[ProjectFile, ...]:
        """The files skipped because the budget was spent."""
        return tuple(f for f in self.files if f.status == SKIPPED)

    def to_obj(self) -> dict[str, object]:
        """For ``--json``."""
        cut = self.cut
        return {
            "session_folder": self.cwd,
            "project_root": self.root,
            "root_marker": self.marker,
            "budget": self.budget,
            "budget_spent": self.spent,
            "global": self.glob.path,
            "files": [f.to_obj() for f in self.files],
            "cut": None if cut is None else {"path": cut.path, "byte": cut.start + cut.read, "file_byte": cut.read},
            "skipped": [f.path for f in self.skipped],
            "warnings": list(self.warnings),
        }


def agents_chain(cwd: str, home: str, config: CodexConfig, paths: PathMap = LOCAL) -> AgentsChain:
    """The AGENTS.md block of a session started in ``cwd`` (resolved here, as Codex resolves it; named in
    the block as the machine Codex runs on names it: ``paths``)."""
    cwd = os.path.realpath(cwd)
    glob = global_file(home)
    root, marker, files = chain_files(cwd, config)
    texts = [f.text for f in files if f.given and f.text is not None]
    block = render_block(paths.shown(cwd), glob.text, texts)
    warnings = list(glob.notes)
    budget = config.max_bytes
    for item in files:
        if item.status == CUT:
            warnings.append(
                f"{item.path} is cut at byte {item.read:,} of {item.size:,} (byte {item.start + item.read:,} of the "
                f"{budget:,}-byte project budget): the model never sees the rest, and is not told"
            )
        elif item.status == SKIPPED and budget:
            warnings.append(f"{item.path} is skipped: the {budget:,}-byte project budget was spent before it")
        elif (item.status == BLANK and item.hides) or item.status == UNREADABLE:
            warnings.append(f"{item.path}: {item.reason}")
    if budget == 0 and files:
        warnings.append("project_doc_max_bytes = 0: no project AGENTS.md file is read")
    return AgentsChain(cwd, root, marker, budget, glob, tuple(files), block, tuple(warnings))
