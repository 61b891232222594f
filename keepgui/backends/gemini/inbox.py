"""Gemini CLI's Auto Memory inbox as keepgui's approval queue (:mod:`keepgui.core.approvals`).

With ``experimental.autoMemory`` on, a background extraction agent reads finished sessions and proposes
memory edits as unified diffs in ``<pm>/.inbox/private/`` and ``<pm>/.inbox/global/`` (normally one
``extraction.patch`` per kind), where ``<pm>`` is the launch folder's private memory folder. Gemini's
``/memory inbox`` applies or dismisses them; keepgui does the same, by Gemini's own rules (0.61.0):

* every ``*.patch`` under a kind's folder, recursively, sorted, is one pending write; a patch that does
  not parse, has no hunks, has headers that are not one absolute path (``/dev/null`` for a new file), or
  targets a file outside what its kind may change is not listed (Gemini does not list it either);
* a **private** patch may change only ``MEMORY.md`` or a ``*.md`` not starting with ``.`` directly in
  ``<pm>``; a **global** patch only the global file (``<gd>/<first context file name>``);
* applying computes every target's new text with jsdiff's rules (:mod:`.patches`; a new file must not
  exist yet), then — for a private patch that creates a sibling ``*.md`` that ``MEMORY.md`` does not
  mention — appends ``- See <absolute path> for <stem> notes.`` to ``MEMORY.md`` (creating it with
  ``# Project Memory``), writes every target, and removes the patch. keepgui writes all targets
  atomically and conflict-checked, and keeps the patch in its history, so one Undo puts the targets and
  the patch back;
* rejecting removes the patch (kept in keepgui's history: Undo puts it back).

Both hold Gemini's extraction lock while they work and are refused while a live extraction holds it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from keepgui.backends.gemini.jstext import decode_utf8, is_subpath, node_resolve
from keepgui.backends.gemini.layout import MEMORY_INDEX
from keepgui.backends.gemini.patches import FilePatch, PatchError, apply_patch, parse_patch
from keepgui.backends.gemini.writes import Edit, ExtractionLock, FileChange, write_files
from keepgui.core import fsio
from keepgui.core.approvals import PendingWrite
from keepgui.core.errors import InvalidInput, NotFound, ReadOnly
from keepgui.core.history import History
from keepgui.core.pathmap import LOCAL, PathMap

KINDS = ("private", "global")
INBOX = ".inbox"


@dataclass(frozen=True)
class Target:
    """One file a patch changes: where, whether new, its text now and after."""

    path: str
    new_file: bool
    before: str
    after: str
    stamp: fsio.Stamp


@dataclass(frozen=True)
class Proposal:
    """One patch file of the inbox, as Gemini would apply it now (``problem``: why it would not)."""

    id: str
    kind: str
    path: str
    stamp: fsio.Stamp
    text: str
    targets: tuple[Target, ...]
    problem: str = ""
    pointers: tuple[str, ...] = ()
    created_ms: int | None = None
    heads: tuple[str, ...] = ()


def _strip_git(name: str) -> str:
    return name[2:] if name.startswith(("a/", "b/")) else name


def headers(patches: Sequence[FilePatch]) -> list[tuple[str, bool]] | None:
    """``(target, is new)`` of each section, or None when the headers are not Gemini's shape."""
    out = []
    for patch in patches:
        old = _strip_git(patch.old_name) if patch.old_name else patch.old_name
        new = _strip_git(patch.new_name) if patch.new_name else patch.new_name
        if not old or not new:
            return None
        if old == "/dev/null":
            if new == "/dev/null" or not os.path.isabs(new):
                return None
            out.append((new, True))
            continue
        if not os.path.isabs(old) or not os.path.isabs(new) or old == "/dev/null" or old != new:
            return None
        out.append((new, False))
    return out


def _real_with_missing(path: str) -> str:
    """The real path of ``path``'s nearest existing ancestor, with the missing rest appended."""
    missing: list[str] = []
    current = node_resolve(path)
    while True:
        if os.path.exists(current) or os.path.islink(current):
            return os.path.join(os.path.realpath(current), *reversed(missing))
        parent = os.path.dirname(current)
        if parent == current:
            return current
        missing.append(os.path.basename(current))
        current = parent


class Inbox:
    """One launch folder's Auto Memory inbox (see the module docstring)."""

    def __init__(self, memory_dir: str, global_file: str, history: History, paths: PathMap = LOCAL) -> None:
        self.memory_dir = memory_dir
        self.global_file = global_file
        self.history = history
        self.paths = paths
        """Where the targets a patch names (absolute paths of the machine Gemini runs on) are read."""

    def folder(self, kind: str) -> str:
        """``<pm>/.inbox/<kind>``."""
        return os.path.join(self.memory_dir, INBOX, kind)

    def patch_files(self, kind: str) -> list[str]:
        """Every ``*.patch`` file under a kind's folder, recursively, sorted as Gemini sorts them."""
        found: list[str] = []
        for folder, dirs, files in os.walk(self.folder(kind)):
            dirs.sort()
            found.extend(os.path.join(folder, f) for f in files if f.endswith(".patch"))
        return sorted(found)

    def allowed(self, kind: str, target: str) -> bool:
        """Whether a patch of ``kind`` may change ``target`` (Gemini's allow-list, links resolved)."""
        real = _real_with_missing(target)
        if kind == "global":
            allowed = {node_resolve(self.global_file), _real_with_missing(self.global_file)}
            return node_resolve(target) in allowed and real in allowed
        roots = {node_resolve(self.memory_dir), _real_with_missing(self.memory_dir)}

        def ok(path: str) -> bool:
            name = os.path.basename(path)
            good_name = name == MEMORY_INDEX or (not name.startswith(".") and name.lower().endswith(".md"))
            return good_name and os.path.dirname(path) in roots

        return ok(node_resolve(target)) and ok(real) and any(is_subpath(r, real) for r in roots)

    def proposal(self, kind: str, path: str) -> Proposal | None:
        """One patch file as Gemini would list and apply it now, or None when Gemini would not list it."""
        data, stamp = fsio.read_stamped(path, limit=16 * 1024 * 1024)
        if data is None:
            return None
        text = decode_utf8(data)
        try:
            parsed = parse_patch(text)
        except PatchError:
            return None
        if not parsed or any(not p.hunks for p in parsed):
            return None
        heads = headers(parsed)
        heads = None if heads is None else [(self.paths.local(t), new) for t, new in heads]
        if heads is None or not all(self.allowed(kind, t) for t, _new in heads):
            return None
        targets, problem = self._targets(parsed, heads)
        pointers: tuple[str, ...] = ()
        if not problem and kind == "private":
            targets, pointers = self._with_pointers(targets)
        rel = os.path.relpath(path, self.folder(kind))
        created = stamp.mtime_ns // 1_000_000
        heads_only = tuple(t for t, _new in heads)
        return Proposal(
            f"{kind}/{rel}", kind, path, stamp, text, tuple(targets), problem, pointers, created, heads_only
        )

    def _targets(self, parsed: Sequence[FilePatch], heads: Sequence[tuple[str, bool]]) -> tuple[list[Target], str]:
        results: dict[str, Target] = {}
        for patch, (target, new) in zip(parsed, heads, strict=True):
            real = _real_with_missing(target)
            if real in results:
                source = results[real].after
                first = results[real]
            else:
                data, stamp = fsio.read_stamped(real) if os.path.isfile(real) else (None, fsio.Stamp.missing())
                if new and (os.path.lexists(real)):
                    return [], f"the patch creates {target}, which exists already"
                if not new and data is None:
                    return [], f"Target file not found: {target}"
                source = "" if data is None else decode_utf8(data)
                first = Target(real, new, source, source, stamp)
            applied = apply_patch(source, patch)
            if applied is None:
                return [], f"the patch does not apply cleanly to {target} (it changed since the patch was made)"
            results[real] = Target(real, first.new_file, first.before, applied, first.stamp)
        return list(results.values()), ""

    def _with_pointers(self, targets: list[Target]) -> tuple[list[Target], tuple[str, ...]]:
        memory_dir = (
            os.path.realpath(self.memory_dir) if os.path.isdir(self.memory_dir) else node_resolve(self.memory_dir)
        )
        index_path = os.path.join(memory_dir, MEMORY_INDEX)
        siblings = [
            t
            for t in targets
            if t.new_file
            and os.path.dirname(t.path) == memory_dir
            and os.path.basename(t.path).lower() != "memory.md"
            and os.path.basename(t.path).lower().endswith(".md")
        ]
        if not siblings:
            return targets, ()
        at = next((k for k, t in enumerate(targets) if t.path == index_path), None)
        if at is not None:
            index = targets[at]
        else:
            data, stamp = fsio.read_stamped(index_path) if os.path.isfile(index_path) else (None, fsio.Stamp.missing())
            text = "" if data is None else decode_utf8(data)
            index = Target(index_path, data is None, text, "# Project Memory\n" if data is None else text, stamp)
        added: list[str] = []
        after = index.after
        for sibling in siblings:
            name = os.path.basename(sibling.path)
            if name in after or sibling.path in after:
                continue
            stem = name[: -len(".md")] if name.lower().endswith(".md") else name
            stem = stem.replace("-", " ").replace("_", " ").strip()
            pointer = f"- See {sibling.path} for {stem or name} notes."
            after = f"{after}{pointer}\n" if after.endswith("\n") else f"{after}\n{pointer}\n"
            added.append(name)
        if not added:
            return targets, ()
        index = Target(index.path, index.new_file, index.before, after, index.stamp)
        out = list(targets)
        if at is not None:
            out[at] = index
        else:
            out.append(index)
        return out, tuple(added)

    def proposals(self) -> list[Proposal]:
        """Every pending patch, private ones first, each in Gemini's order."""
        out: list[Proposal] = []
        for kind in KINDS:
            for path in self.patch_files(kind):
                found = self.proposal(kind, path)
                if found is not None:
                    out.append(found)
        return out

    def find(self, pending_id: str) -> Proposal:
        """A pending patch by id (``<kind>/<path under the kind's folder>``)."""
        kind, _, rel = pending_id.partition("/")
        if kind not in KINDS or not rel or rel.startswith("../") or os.path.isabs(rel):
            raise InvalidInput(f"{pending_id}: not a patch of Gemini's Auto Memory inbox")
        found = self.proposal(kind, os.path.join(self.folder(kind), rel))
        if found is None:
            raise NotFound(f"{pending_id}: no such patch in {self.folder(kind)} (applied or dismissed meanwhile?)")
        return found


# ---------------------------------------------------------------------- as keepgui's approvals


def _label(path: str, memory_dir: str, global_file: str) -> str:
    if path == node_resolve(global_file) or path == os.path.realpath(global_file):
        return "global " + os.path.basename(path)
    return os.path.basename(path)


def pending_write(p: Proposal, inbox: Inbox, bank: str | None) -> PendingWrite:
    """A proposal as the seam shows it: the whole text of its target before and after (several targets
    are shown one after another, each under a ``==> path <==`` line)."""
    if len(p.targets) == 1:
        before, after, target = p.targets[0].before, p.targets[0].after, p.targets[0].path
    else:
        before = "".join(f"==> {t.path} <==\n{t.before}\n" for t in p.targets)
        after = "".join(f"==> {t.path} <==\n{t.after}\n" for t in p.targets)
        target = p.targets[0].path if p.targets else p.path
    names = ", ".join(_label(t.path, inbox.memory_dir, inbox.global_file) for t in p.targets) or "its targets"
    added = []
    for t in p.targets:
        had = set(t.before.splitlines())  # once per target: per line, a 1 MB GEMINI.md took minutes
        added += [line for line in t.after.splitlines() if line.strip() and line not in had]
    if len(added) == 1:
        fact = added[0].strip().lstrip("-*+ ").strip()
        summary = f"Auto Memory ({p.kind}): add to {names}: “{fact if len(fact) <= 70 else fact[:69] + '…'}”"
    else:
        summary = f"Auto Memory ({p.kind}): change {names}" + (f" · {len(added)} new lines" if added else "")
    if p.pointers:
        summary += f" · adds a MEMORY.md pointer to {', '.join(p.pointers)}"
    return PendingWrite(p.id, target, summary, before, after, p.created_ms, bank, p.problem)


def approve(inbox: Inbox, ids: Sequence[str], text: str) -> FileChange:
    """Apply the patches ``ids`` as Gemini applies them, and remove them from the inbox, as one change
    (call it through :func:`guarded`)."""
    found = [inbox.find(i) for i in ids]
    problems = [f"{p.id}: {p.problem}" for p in found if p.problem]
    if problems:
        raise ReadOnly("; ".join(problems) + "; nothing was applied")
    edits: list[Edit] = []
    seen: set[str] = set()
    for p in found:
        for t in p.targets:
            if t.path in seen:
                raise InvalidInput(f"two of these patches change {t.path}: approve them one at a time")
            seen.add(t.path)
            edits.append(Edit(t.path, t.after.encode("utf-8"), t.stamp))
        edits.append(Edit(p.path, None, p.stamp))
    count = f"{len(found)} Auto Memory patch{'es' if len(found) != 1 else ''}"
    return write_files(edits, history=inbox.history, text=text, message=f"applied {count}")


def reject(inbox: Inbox, ids: Sequence[str], text: str) -> FileChange:
    """Remove the patches ``ids`` from the inbox unapplied (kept in keepgui's history: Undo restores them;
    call it through :func:`guarded`)."""
    found = [inbox.find(i) for i in ids]
    return write_files(
        [Edit(p.path, None, p.stamp) for p in found], history=inbox.history, text=text, message="dismissed"
    )


def guarded(inbox: Inbox, action: Callable[[], FileChange]) -> FileChange:
    """Run an inbox change holding Gemini's extraction lock (refused while a live extraction holds it);
    the change's undo, and that undo's redo, run the same way."""
    with ExtractionLock(inbox.memory_dir):
        done = action()
    undo = done.reverse
    if undo is not None:
        done.reverse = lambda: guarded(inbox, undo)
    return done
