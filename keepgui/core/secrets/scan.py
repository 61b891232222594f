"""Secrets in a source's memory: every bank's rows and documents, through the protocol (no Qt).

A :class:`Finding` says what was found and where — its type, the source, the bank, the file and
line, the entry (a row's key) or the document, and a masked form — and never shows the secret
itself (it is kept, out of every ``repr``, only so that a redaction can replace it). Scans are
incremental: what a text holds is remembered by the text's hash (:class:`ScanCache`, kept in
keepgui's cache folder between runs), so a bank scanned again costs a hash of its texts.
"Not a secret" is kept per source in keepgui's data folder, by the secret's SHA-256, like a
baseline file (:class:`Allowlist`).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from keepgui.core import childwork, fsio, pace
from keepgui.core.errors import KeepguiError
from keepgui.core.paths import app_cache_dir, app_data_dir
from keepgui.core.secrets.detect import Detector, Hit, hits_of_columns, mask
from keepgui.core.source import Bank, Change, Source, TextMark
from keepgui.core.timefmt import now_ms

SENT = "this secret is sent to the model at the start of every session"
"""What the window and the command line say of a secret the bank's preview holds."""

log = logging.getLogger(__name__)


def secret_sha256(secret: str) -> str:
    """How a secret is named where it must be remembered (the allowlist): its SHA-256."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Finding:
    """One secret found in a bank: a row's text (``key``) or a document's (``document``).

    ``start``/``end`` are character offsets in that text, ``line`` its line (1-based) there;
    ``path`` the file that holds it where the bank says ("" when it does not); ``sent`` that the
    bank's preview (what the agent is given) holds it. ``secret`` is never in a repr or ``to_obj``.
    """

    id: str
    kind: str
    source: str
    source_kind: str
    bank: str
    path: str
    line: int
    key: str
    document: str
    start: int
    end: int
    masked: str
    sent: bool = False
    allowed: bool = False
    secret: str = field(default="", repr=False, compare=False)

    @property
    def where(self) -> str:
        """``entry KEY`` or ``document NAME``, with the file and line where known."""
        what = f"entry {self.key}" if self.key else f"document {self.document}"
        place = f"{self.path}:{self.line}" if self.path else f"line {self.line}"
        return f"{what} ({place})"

    def to_obj(self) -> dict[str, Any]:
        """For ``--json``: everything but the secret."""
        return {
            "id": self.id,
            "type": self.kind,
            "source": self.source,
            "agent": self.source_kind,
            "bank": self.bank,
            "path": self.path,
            "line": self.line,
            "entry": self.key or None,
            "document": self.document or None,
            "masked": self.masked,
            "sent": self.sent,
            "allowed": self.allowed,
        }


def finding_id(source: str, bank: str, where: str, secret: str) -> str:
    """A short, stable id: the same secret in the same place keeps it across scans."""
    h = hashlib.blake2b(f"{source}\0{bank}\0{where}\0".encode("utf-8", "surrogatepass"), digest_size=5)
    h.update(secret.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _state_file(folder: str, source: str) -> str:
    name = hashlib.sha256(os.path.abspath(source).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(folder, "secrets", name + ".json")


class Allowlist:
    """The findings a person marked "not a secret" in one source, by the secret's SHA-256."""

    def __init__(self, source: str, root: str | None = None) -> None:
        self.source = os.path.abspath(source)
        self.path = _state_file(root or app_data_dir(), self.source)

    def load(self) -> dict[str, dict[str, Any]]:
        """sha256 -> ``{type, id, at}``."""
        data, _stamp = fsio.read_stamped(self.path)
        try:
            obj = json.loads(data or b"{}")
        except ValueError:
            return {}
        allowed = obj.get("allowed") if isinstance(obj, dict) else None
        return {k: v for k, v in allowed.items() if isinstance(v, dict)} if isinstance(allowed, dict) else {}

    def allow(self, findings: Iterable[Finding]) -> int:
        """Mark these findings' secrets as allowed; returns how many were new."""
        allowed = self.load()
        new = 0
        for f in findings:
            sha = secret_sha256(f.secret)
            if sha not in allowed:
                allowed[sha] = {"type": f.kind, "id": f.id, "at": now_ms()}
                new += 1
        if new:
            fsio.make_dirs(os.path.dirname(self.path))
            body = {"source": self.source, "allowed": allowed}
            fsio.atomic_write(self.path, json.dumps(body, indent=1, sort_keys=True).encode(), mode=0o600)
        return new

    def forget(self, shas: Iterable[str]) -> None:
        """Take these secrets off the allowlist (the undo of :meth:`allow`)."""
        allowed = self.load()
        gone = [sha for sha in shas if allowed.pop(sha, None) is not None]
        if gone:
            body = {"source": self.source, "allowed": allowed}
            fsio.atomic_write(self.path, json.dumps(body, indent=1, sort_keys=True).encode(), mode=0o600)

    def allow_change(self, bank: Bank, findings: Sequence[Finding]) -> Change:
        """ "Not a secret" as a Change of ``bank`` (the window's undo step): its undo forgets them again."""
        new = [f for f in findings if secret_sha256(f.secret) not in self.load()]
        self.allow(new)
        shas = [secret_sha256(f.secret) for f in new]
        change = Change(bank.key.source, bank.key.bank, "Mark not a secret", written=bool(new))

        def back() -> Change:
            self.forget(shas)
            return replace(change, reverse=lambda: self.allow_change(bank, new))

        return replace(change, reverse=back)


class ScanCache:
    """What each scanned text held, by the text's hash: in memory, and on disk per source."""

    def __init__(self, source: str, root: str | None = None) -> None:
        self.path = _state_file(root or app_cache_dir(), source)
        self.lock = threading.Lock()
        self._hits: dict[str, list[list[Any]]] | None = None
        self._dirty = False

    def _table(self) -> dict[str, list[list[Any]]]:
        if self._hits is None:
            data, _stamp = fsio.read_stamped(self.path)
            try:
                obj = json.loads(data or b"{}")
            except ValueError:
                obj = {}
            self._hits = obj if isinstance(obj, dict) else {}
        return self._hits

    def get(self, digest: str) -> list[Hit] | None:
        """The hits of the text with this hash (None: not scanned yet)."""
        with self.lock:
            found = self._table().get(digest)
        if not isinstance(found, list):
            return None
        try:
            return [Hit(str(k), int(s), int(e)) for k, s, e in found]
        except (TypeError, ValueError):
            return None

    def put(self, digest: str, hits: Sequence[Hit]) -> None:
        """Remember the hits of a text (types and offsets: never a secret)."""
        with self.lock:
            self._table()[digest] = [[h.kind, h.start, h.end] for h in hits]
            self._dirty = True

    def save(self) -> None:
        """Write the table to keepgui's cache folder (a cache: a failure costs only a slower scan)."""
        with self.lock:
            if not self._dirty or self._hits is None:
                return
            body = json.dumps(self._hits, separators=(",", ":")).encode()
            self._dirty = False
        try:
            fsio.make_dirs(os.path.dirname(self.path))
            fsio.atomic_write(self.path, body, mode=0o600)
        except (OSError, KeepguiError) as exc:
            self._dirty = True  # kept in memory and tried again at the next save: the cache only saves work
            log.debug("secrets cache %s not saved: %s", self.path, exc)


BLOCK = 2000
"""Rows scanned (and cached) together: a change of one row costs a scan of its block only."""
GROUP_CHARS = 1 << 20
"""Characters of rows' texts looked for at a time (one call of the secrets child)."""
SECRETS_CHILD = ("secrets", ("keepgui.core.secrets.detect",))
"""The child process that looks for secrets, and what it imports as it starts."""
MARKS_LIMIT = 50_000
"""The longest text :func:`secret_marks` scans on the caller's thread (the editor's, while typing)."""

_detectors = threading.local()


def secret_marks(text: str) -> list[TextMark]:
    """The secrets in an edited text as the editor's marks (a type and a masked form, never more)."""
    if len(text) > MARKS_LIMIT:
        return []
    return [
        TextMark(h.start, h.end, "warning", f"A secret ({h.kind}, {mask(text[h.start : h.end])}): redact it")
        for h in detected([text], _thread_detector)[0]
    ]


def detected(texts: list[str], here: Callable[[], Detector]) -> list[list[Hit]]:
    """What each text holds, found in the secrets child in a window's process
    (:func:`keepgui.core.childwork.children_used`), else (or when the child failed, said in the log)
    by ``here()``'s detector, a pacing checkpoint between texts. The library's plugins are Python, and
    importing the library brings a hundred and forty modules (``requests`` among them): on a window's
    thread either would hold the interpreter lock that the GUI thread waits for at every call a paint
    makes into Python."""
    if childwork.children_used():
        try:
            columns = childwork.worker(*SECRETS_CHILD).call(
                "keepgui.core.secrets.detect", "hits_columns", lists={"texts": texts}
            )
            return hits_of_columns(columns, len(texts))
        except (childwork.ChildFailed, RuntimeError) as exc:
            log.warning("secrets are looked for in the window's process: %s", str(exc).splitlines()[0])
    detector, out = here(), []
    for text in texts:
        pace.checkpoint()
        out.append(detector.scan(text))
    return out


def _thread_detector() -> Detector:
    """This thread's detector (one per thread: the library's plugins keep a regular expression each)."""
    detector = getattr(_detectors, "detector", None)
    if detector is None:
        detector = _detectors.detector = Detector()
    return detector


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


class Scanner:
    """Scans the banks of one source (one per source; any thread, one scan at a time per bank)."""

    def __init__(self, source: Source, *, data_root: str | None = None, cache_root: str | None = None) -> None:
        self.source = source
        self.cache = ScanCache(source.path, cache_root)
        self.allowlist = Allowlist(source.path, data_root)

    def detector(self) -> Detector:
        """This thread's detector."""
        return _thread_detector()

    def hits(self, text: str) -> list[Hit]:
        """What ``text`` holds, from the cache when the same text was scanned before."""
        return self.hits_of([text])[0]

    def hits_of(self, texts: Sequence[str]) -> list[list[Hit]]:
        """What each text holds: from the cache where the same text was scanned before, the rest found
        (:func:`detected`) and remembered."""
        digests = [_digest(t) for t in texts]
        found = [self.cache.get(d) for d in digests]
        missing = [i for i, hits in enumerate(found) if hits is None]
        if missing:
            for i, hits in zip(missing, detected([texts[i] for i in missing], self.detector), strict=True):
                found[i] = hits
                self.cache.put(digests[i], hits)
        return [hits or [] for hits in found]

    def _rows(self, rows: Sequence[Any]) -> list[tuple[Any, Hit]]:
        """Hits in the rows' texts: blocks of :data:`BLOCK` rows joined (one line apart), each scanned
        once and remembered by its hash; blocks of up to :data:`GROUP_CHARS` looked for at a time, with a
        pacing checkpoint between blocks."""
        out: list[tuple[Any, Hit]] = []
        group: list[tuple[Sequence[Any], list[int], str]] = []
        size = 0
        for first in range(0, len(rows), BLOCK):
            pace.checkpoint()
            block = rows[first : first + BLOCK]
            texts = [r.text if isinstance(r.text, str) else "" for r in block]
            starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
            joined = "\n".join(texts)
            group.append((block, starts, joined))
            size += len(joined)
            if size >= GROUP_CHARS or first + BLOCK >= len(rows):
                for (part, at, _text), hits in zip(group, self.hits_of([g[2] for g in group]), strict=True):
                    for hit in hits:
                        i = bisect.bisect_right(at, hit.start) - 1
                        out.append((part[i], Hit(hit.kind, hit.start - at[i], hit.end - at[i])))
                group, size = [], 0
        return out

    def scan_bank(self, bank: Bank, *, preview: bool = True) -> list[Finding]:
        """Every secret in the bank's rows and documents (load the bank first)."""
        allowed = self.allowlist.load()
        src = self.source
        docs: list[tuple[str, str, str]] = []  # name, path, text
        documents = bank.documents()
        for name, _title in documents.list():
            try:
                doc = documents.read(name)
            except (KeepguiError, OSError):
                continue
            docs.append((name, doc.path, doc.text))
        sent_text = ""
        if preview:
            try:
                sent_text = bank.preview("").text
            except (KeepguiError, OSError, NotImplementedError):
                sent_text = ""
        row_path: Callable[[str], str] | None = getattr(bank, "row_path", None)
        out: list[Finding] = []
        rows = list(bank.rows())
        for row, hit in self._rows(rows):
            secret = row.text[hit.start : hit.end]
            path = row_path(row.id) if row_path is not None else ""
            if not path:
                path = next((p for _n, p, t in docs if secret in t), "")
            fid = finding_id(src.path, bank.key.bank, f"row:{row.id}", secret)
            out.append(self._finding(fid, hit, bank, path, _line_of(row.text, hit.start), row.id, "", secret))
        for (name, path, text), hits in zip(docs, self.hits_of([t for _n, _p, t in docs]), strict=True):
            for hit in hits:
                secret = text[hit.start : hit.end]
                fid = finding_id(src.path, bank.key.bank, f"doc:{name}", secret)
                out.append(self._finding(fid, hit, bank, path, _line_of(text, hit.start), "", name, secret))
        return [
            replace(f, sent=bool(sent_text) and f.secret in sent_text, allowed=secret_sha256(f.secret) in allowed)
            for f in out
        ]

    def _finding(
        self, fid: str, hit: Hit, bank: Bank, path: str, line: int, key: str, document: str, secret: str
    ) -> Finding:
        return Finding(
            fid,
            hit.kind,
            self.source.path,
            self.source.kind,
            bank.key.bank,
            path,
            line,
            key,
            document,
            hit.start,
            hit.end,
            mask(secret),
            secret=secret,
        )

    def scan(self, banks: Sequence[str] | None = None, *, preview: bool = True) -> list[Finding]:
        """Every bank of the source (or those named), loaded where they are not yet."""
        names = self.source.scan().names if banks is None else tuple(banks)
        out: list[Finding] = []
        for name in names:
            bank = self.source.bank(name)
            if not bank.is_loaded():
                bank.load()
            out += self.scan_bank(bank, preview=preview)
        self.cache.save()
        return out
