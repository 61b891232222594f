"""Two-file changes cut short (a keep or forget killed between its two writes), completed or undone.

``claude keep`` writes a topic file and then its index line; ``forget`` removes the index line and then
the file; ``restore`` writes the file and then the line. Each is recorded as begun in keepgui's history
folder before the first write and as ended after the second (:class:`~.writes.Intents`). A process
killed in between leaves a topic file without its index line (and a retry would say "Already kept"),
or an index line gone while its file stays. :func:`recover`, run by the next load or write of that
memory folder, looks at what the files hold now and finishes the change when its first step is on
disk, or records that it never happened, and says which in one sentence per change. A file someone
else changed since is left as it is, and said so.
"""

from __future__ import annotations

import os
from typing import Any

from keepgui.backends.claude.memory import INDEX_NAME
from keepgui.backends.claude.writes import (
    ChangeLog,
    Intents,
    append_line,
    links_to,
    put,
    read_base,
    split_lines,
    with_lines,
    without_links,
    writable_path,
)
from keepgui.core import fsio
from keepgui.core.errors import KeepguiError
from keepgui.core.history import History


def recover(memory_dir: str, history: History) -> list[str]:
    """Complete or undo every change of ``memory_dir`` left begun; one sentence for each."""
    intents = Intents(history)
    try:
        pending = intents.pending(memory_dir)
    except (KeepguiError, OSError):
        return []
    said = []
    for intent in pending:
        try:
            said.append(_recover_one(memory_dir, history, intent))
        except (KeepguiError, OSError, UnicodeError) as exc:
            said.append(
                f"a {intent.get('op')} of {intent.get('topic')} was cut short, and could not be finished now "
                f"({exc}); it is tried again next time"
            )
            continue
        intents.end(str(intent.get("id")))
    return said


def _state(memory_dir: str, rel: str, history: History) -> tuple[str, bytes | None, fsio.Stamp, bool]:
    """(the topic file's sha256 or "" when missing, the index, its stamp, whether it links to ``rel``)."""
    import hashlib

    topic, _stamp = read_base(writable_path(memory_dir, os.path.join(memory_dir, rel)), history)
    index, stamp = read_base(writable_path(memory_dir, os.path.join(memory_dir, INDEX_NAME)), history)
    text = (index or b"").decode("utf-8", errors="replace")
    linked = any(links_to(line, rel) for line in split_lines(text))
    return (hashlib.sha256(topic).hexdigest() if topic is not None else ""), index, stamp, linked


def _recover_one(memory_dir: str, history: History, intent: dict[str, Any]) -> str:
    op, rel, sha = str(intent.get("op")), str(intent.get("topic")), str(intent.get("topic_sha256"))
    index_path = os.path.join(memory_dir, INDEX_NAME)
    topic_path = os.path.join(memory_dir, rel)
    have, index, stamp, linked = _state(memory_dir, rel, history)
    if op == "keep":
        if not have:
            return f"a keep of {rel} was cut short before it wrote anything; nothing changed"
        if linked:
            return f"a keep of {rel} was cut short after both writes; it is whole"
        if have != sha:
            return (
                f"a keep of {rel} was cut short before its index line; the file changed since, so it is left as it is"
            )
        put(memory_dir, index_path, append_line(index, str(intent.get("line")), index_path), stamp, history, "keep")
        return f"a keep of {rel} was cut short before its index line: the line is added now"
    log = ChangeLog(history)
    if op == "forget":
        if not have:
            return f"a forget of {rel} was cut short after both writes; it is whole"
        if linked:
            log.restored(str(intent.get("entry")))
            return f"a forget of {rel} was cut short before it wrote anything; nothing changed"
        if have != sha:
            log.restored(str(intent.get("entry")))
            return f"a forget of {rel} was cut short after its index line; the file changed since, so it stays"
        current = fsio.read_settled(writable_path(memory_dir, topic_path))[1]
        put(memory_dir, topic_path, None, current, history, "forget")
        return f"a forget of {rel} was cut short after its index line: its file is removed now (restore can undo it)"
    if op == "restore":
        entry = next((e for e in log.pending(memory_dir) if e.get("id") == intent.get("entry")), None)
        lines = [(int(n), str(line)) for n, line in (entry or {}).get("lines", [])]
        if not have:
            return f"a restore of {rel} was cut short before it wrote anything; nothing changed"
        if linked or not lines:
            log.restored(str(intent.get("entry")))
            return f"a restore of {rel} was cut short after both writes; it is whole"
        if have != sha:
            return f"a restore of {rel} was cut short before its index lines; the file changed since, so it is left"
        new_index = with_lines(without_links(index, rel, index_path)[0] if index else index, lines, index_path)
        put(memory_dir, index_path, new_index, stamp, history, "restore")
        log.restored(str(intent.get("entry")))
        return f"a restore of {rel} was cut short before its index lines: they are put back now"
    return f"an unknown change ({op}) of {rel} was left begun; nothing was done with it"
