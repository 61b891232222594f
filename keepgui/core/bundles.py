"""Memories across agents: a bank as a portable bundle, a bundle or another agent's memories as a plan
for any bank, applied through that bank's own keep (no Qt, no backend).

The command line (``export``, ``import``, ``copy``) and the window (File → Export…/Import…, Memory →
Copy to…/Move to…) share these. A bundle is JSON (``format`` :data:`BUNDLE`, ``version`` 1) for
programs, or Markdown for people. A plan lists each memory with what would happen to it: kept (and
what the target's own check says of it: its file, its limit), already there, or refused with the
reason; applying it keeps each through the target's own keep, in the target's format and within its
limits (what the limit refuses stays refused, said why), and a move forgets the memory at the source
only once the target kept it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from keepgui.core import fsio
from keepgui.core.defaults import refuse
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.source import TOMBSTONE, Bank, Change, Hint, Row
from keepgui.core.timefmt import now_ms
from keepgui.core.timetravel import describe_when

BUNDLE = "keepgui-bundle"
"""The ``format`` of a JSON bundle (``version`` 1)."""
BUNDLE_LIMIT = 256 * 1024 * 1024
"""A bundle larger than this is refused (read whole)."""

PLANNED, PRESENT, KEPT, REFUSED = "planned", "present", "kept", "refused"
"""The states of a plan's item: to keep, already there, kept, refused (with why)."""


def _one_line(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def bundle_of(agent: str, source: str, bank: Bank, rows: Sequence[Row], at: int | None = None) -> dict[str, Any]:
    """``rows`` of ``bank`` (of the agent ``agent``, in the folder ``source``) as a portable bundle."""
    return {
        "format": BUNDLE,
        "version": 1,
        "agent": agent,
        "source": source,
        "bank": str(bank.key),
        "exported_at": now_ms() if at is None else at,
        "memories": [
            {
                "id": r.id,
                "text": r.text,
                "tags": list(r.tags),
                "pinned": r.pinned,
                "created_at": r.created_at,
                "updated_at": r.updated_at,
                "agent": agent,
            }
            for r in rows
        ],
    }


def bundle_json(obj: dict[str, Any]) -> str:
    """The bundle for programs."""
    return json.dumps(obj, ensure_ascii=False, indent=2) + "\n"


def bundle_markdown(obj: dict[str, Any]) -> str:
    """The bundle for people: a heading per memory, its text, then its tags, pin and times."""
    out = [
        f"# Memories of {obj['agent']} · {obj['bank']}\n",
        f"From {obj['source']}, exported {describe_when(obj['exported_at'])}.\n",
    ]
    for n, m in enumerate(obj["memories"], 1):
        first = next((line.strip() for line in m["text"].splitlines() if line.strip()), "")
        out.append(f"\n## {n}. {_one_line(first)[:80]}\n\n{m['text'].rstrip()}\n")
        facts = [f"id: `{m['id']}`", f"agent: {m['agent']}"]
        if m["tags"]:
            facts.append("tags: " + ", ".join(f"#{t}" for t in m["tags"]))
        if m["pinned"]:
            facts.append("pinned")
        for key in ("created_at", "updated_at"):
            if m[key]:
                facts.append(f"{key.split('_')[0]}: {describe_when(m[key])}")
        out.append("\n" + "".join(f"- {f}\n" for f in facts))
    return "".join(out)


def write_new(path: str, text: str) -> str:
    """Write an exported bundle to ``path``, a new file (never over one); returns the absolute path."""
    path = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(path):
        raise InvalidInput(f"{path} exists: keepgui export writes a new file (remove it or give another name)")
    fsio.atomic_write(path, text.encode("utf-8"), expect=fsio.Stamp.missing())
    return path


def read_bundle(given: str) -> dict[str, Any]:
    """The JSON bundle at ``given``: NotFound, or InvalidInput saying what it is not."""
    path = os.path.abspath(os.path.expanduser(given))
    data, _stamp = fsio.read_stamped(path, limit=BUNDLE_LIMIT)
    if data is None:
        raise NotFound(f"{path}: no such bundle")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInput(
            f"{path} is not a JSON bundle ({exc}); make one with `keepgui export --format json`"
        ) from None
    if not isinstance(obj, dict) or obj.get("format") != BUNDLE or not isinstance(obj.get("memories"), list):
        raise InvalidInput(f"{path} is not a keepgui bundle (its `format` is not {BUNDLE})")
    return obj


def texts_of(obj: dict[str, Any]) -> list[str]:
    """The memories' texts of a bundle, in its order."""
    return [str(m.get("text", "")) for m in obj["memories"] if isinstance(m, dict)]


@dataclass(frozen=True)
class Item:
    """One memory of a plan: its ``text``, what happens to it (``state``) and why; ``hints`` what the
    target's own check says of keeping it (its file and limit, a duplicate); ``key`` its id at the source
    (a copy or a move), "" for a bundle's."""

    text: str
    state: str
    why: str = ""
    hints: tuple[Hint, ...] = ()
    key: str = ""

    def to_obj(self) -> dict[str, Any]:
        """As ``import --json`` prints it."""
        return {"text": self.text, "state": self.state, "why": self.why}


def plan(into: Bank, texts: Sequence[str], keys: Sequence[str] = (), *, check: bool = False) -> list[Item]:
    """Each text as an item for the loaded bank ``into``: already there (the same text live), empty
    (refused), or planned — with ``check``, what the bank's own check of a keep says of it (a refusal
    when it says an error)."""
    have = {r.text.strip() for r in into.rows() if r.invalid_at is None}
    out = []
    for n, text in enumerate(texts):
        key = keys[n] if n < len(keys) else ""
        if not text.strip():
            out.append(Item(text, REFUSED, "it is empty", key=key))
        elif text.strip() in have:
            out.append(Item(text, PRESENT, "already there", key=key))
        else:
            hints = into.check_keep(text) if check else ()
            errors = [h.text for h in hints if h.level == "error"]
            out.append(Item(text, REFUSED if errors else PLANNED, "; ".join(errors), hints, key))
    return out


def keep(into: Bank, item: Item) -> Change:
    """Keep one planned item through the bank's own keep (in its format, within its limits)."""
    return into.keep(item.text, force=False, replace=False)


def outcome(item: Item, change: Change) -> Item:
    """The item once its keep ran: kept, or refused with the bank's reason."""
    if change.written:
        return replace(item, state=KEPT, why="")
    return replace(item, state=REFUSED, why="; ".join(h.text for h in change.feedback) or change.message)


def apply(into: Bank, items: Sequence[Item]) -> list[Item]:
    """Keep every planned item, one after another (the command line)."""
    return [outcome(i, keep(into, i)) if i.state == PLANNED else i for i in items]


def forget_moved(bank: Bank, key: str) -> Change:
    """A moved memory forgotten at its source (reversibly), once the target kept it."""
    if not bank.capabilities.can(TOMBSTONE):
        refuse(bank.capabilities, TOMBSTONE)
    return bank.set_live([key], False)
