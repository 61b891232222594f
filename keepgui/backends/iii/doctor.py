"""``keepgui doctor``: every problem in an iii data dir, each located and explained.

Reading only: the doctor never changes a file. It reports unreadable banks,
corrupt lines (bank, line number, why), torn tails, names the worker would not
accept, unusable ``bank.yaml`` files, unreadable rules, leftover temporary
files of interrupted writes, vectors kept for stale revisions, and the same
revision of an id written twice (a sign that a writer with a stale copy in RAM
may have overwritten someone else's edit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from keepgui.backends.iii.store import BANK_YAML, NAME_PATTERN, Bank, DataDir, is_valid_name
from keepgui.backends.iii.vectors import VECTORS_NAME, read_vectors
from keepgui.core.source import plural


@dataclass(frozen=True)
class Finding:
    """One problem: its kind, the bank (or ""), the file, the line (or 0), and what is wrong.

    ``note`` marks something worth knowing that is not a problem (a last line
    whose newline has not arrived yet); notes do not make ``doctor`` fail.
    """

    kind: str
    bank: str
    path: str
    line: int
    message: str
    note: bool = False

    def to_obj(self) -> dict[str, Any]:
        """JSON form for ``doctor --json``."""
        return {
            "kind": self.kind,
            "bank": self.bank,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "note": self.note,
        }

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"[{'note: ' if self.note else ''}{self.kind}] {where}: {self.message}"


def diagnose(datadir: DataDir) -> list[Finding]:
    """Every problem found in the data dir, bank by bank."""
    findings: list[Finding] = []
    if not os.path.exists(datadir.path):
        return [Finding("missing-data-dir", "", datadir.path, 0, "the data dir does not exist")]
    if not os.path.isdir(datadir.path):
        return [Finding("not-a-folder", "", datadir.path, 0, "the data dir is not a folder")]
    for path in datadir.iter_temp_files():
        findings.append(
            Finding(
                "temp-file",
                os.path.basename(os.path.dirname(path)),
                path,
                0,
                "leftover temporary file of an interrupted write; safe to delete",
            )
        )
    for bank in datadir.banks():
        findings.extend(diagnose_bank(bank))
    standing = getattr(datadir.worker, "standing_problem", None)
    said = standing() if standing is not None else ""
    if said:
        findings.append(Finding("no-worker-link", "", datadir.path, 0, said, note=True))
    return findings


def diagnose_bank(bank: Bank) -> list[Finding]:
    """Every problem of one bank (its name, folder, log, vectors and rules; temporary files are
    the data dir's)."""
    out = _folder_findings(bank)
    bank.refresh()  # never raises: an unreadable log is reported in log.unreadable
    out.extend(_log_findings(bank))
    if not bank.log.unreadable:
        out.extend(_duplicate_revisions(bank))
        out.extend(_vector_findings(bank))
    legacy = [n for n in ("facts.jsonl", "blocks") if os.path.exists(os.path.join(bank.path, n))]
    if legacy and not os.path.exists(bank.log_path):
        out.append(
            Finding(
                "legacy-layout",
                bank.name,
                bank.path,
                0,
                f"only the legacy {' and '.join(legacy)} exist; the current worker reads neither",
            )
        )
    out.extend(_rule_findings(bank))
    return out


def _folder_findings(bank: Bank) -> list[Finding]:
    """The bank's name, a folder that is a link, an unusable ``bank.yaml``."""
    out: list[Finding] = []
    name = bank.name
    if not is_valid_name(name):
        out.append(
            Finding(
                "bank-name",
                name,
                bank.path,
                0,
                f"`{name}` does not match {NAME_PATTERN}; the worker loads it but "
                "no new bank could be created with this name",
            )
        )
    if os.path.islink(bank.path):
        out.append(
            Finding(
                "bank-link",
                name,
                bank.path,
                0,
                f"the bank folder is a link to {os.path.realpath(bank.path)}: the worker does not "
                "load it (it skips bank folders that are symbolic links)",
            )
        )
    yaml_problem = bank.description_problem()
    if yaml_problem:
        out.append(
            Finding(
                "bank-yaml",
                name,
                os.path.join(bank.path, BANK_YAML),
                0,
                f"{yaml_problem}; the description reads as empty",
            )
        )
    return out


def _log_findings(bank: Bank) -> list[Finding]:
    """An unreadable log, and each corrupt, torn or unterminated line of it."""
    out: list[Finding] = []
    name, log = bank.name, bank.log
    if log.unreadable and not os.path.islink(bank.path):
        line = next((p.line for p in log.problems if p.kind == "unreadable"), 0)
        out.append(Finding("unreadable", name, bank.log_path, line, log.unreadable))
    for problem in log.problems:
        if problem.kind == "corrupt":
            out.append(
                Finding(
                    "corrupt-line",
                    name,
                    bank.log_path,
                    problem.line,
                    f"{problem.reason} — the worker skips this line ({problem.excerpt!r})",
                )
            )
        elif problem.kind == "torn-tail":
            out.append(Finding("torn-tail", name, bank.log_path, problem.line, problem.reason))
        elif problem.kind == "unterminated":
            out.append(Finding("unterminated-line", name, bank.log_path, problem.line, problem.reason, note=True))
    return out


def _vector_findings(bank: Bank) -> list[Finding]:
    """A vectors file that is not a regular file, vectors of stale revisions, lines it cannot read."""
    name = bank.name
    vectors = os.path.join(bank.path, VECTORS_NAME)
    if os.path.lexists(vectors) and not os.path.isfile(vectors):
        # read_vectors opens the file plainly: a FIFO there would hang the doctor.
        return [
            Finding(
                "vector-lines", name, vectors, 0, f"{VECTORS_NAME} is not a regular file; the worker cannot read it"
            )
        ]
    if not os.path.exists(vectors):
        return []
    out: list[Finding] = []
    report = read_vectors(bank.path, bank.log.records)
    if report.stale:
        out.append(
            Finding(
                "stale-vectors",
                name,
                vectors,
                0,
                f"{plural(len(report.stale), 'memory has', 'memories have')} vectors only for an older revision "
                "(the worker ignores them and re-embeds when it backfills)",
            )
        )
    if report.unparsed:
        out.append(
            Finding(
                "vector-lines",
                name,
                vectors,
                0,
                f"{plural(report.unparsed, 'line', 'lines')} cannot be read (the worker skips them)",
            )
        )
    return out


def _rule_findings(bank: Bank) -> list[Finding]:
    """Rule names the worker would not save, links outside the data dir, unreadable rules."""
    out: list[Finding] = []
    name = bank.name
    rule_names = bank.rule_names()
    for rule in rule_names:
        if not is_valid_name(rule):
            out.append(
                Finding(
                    "rule-name",
                    name,
                    bank.rule_file(rule),
                    0,
                    f"rule `{rule}` does not match {NAME_PATTERN}; the worker injects it "
                    "but it cannot be saved under this name",
                )
            )
    for path, target in bank.links_outside(rule_names):
        out.append(
            Finding(
                "rule-link",
                name,
                path,
                0,
                f"a link to {target}, outside the data dir: the worker reads it; keepgui shows it but "
                "never writes through it",
            )
        )
    _, rule_problems = bank.rules(rule_names)
    for rule_problem in rule_problems:
        out.append(Finding("rule", name, rule_problem.where, 0, rule_problem.what))
    return out


def _duplicate_revisions(bank: Bank) -> list[Finding]:
    """Ids with two lines carrying the same revision number (the later one won on replay)."""
    log = bank.log
    if log.valid_lines == len(log.records):
        return []  # one line per id: nothing can repeat
    first_line: dict[tuple[str, int], int] = {}
    repeated: dict[str, list[tuple[int, int, int]]] = {}
    for lineno, memory in log.scan():
        key = (memory.id, memory.revision)
        if key in first_line:
            repeated.setdefault(memory.id, []).append((memory.revision, first_line[key], lineno))
        else:
            first_line[key] = lineno
    out = []
    for mid in sorted(repeated):
        for revision, first, again in repeated[mid]:
            out.append(
                Finding(
                    "repeated-revision",
                    bank.name,
                    bank.log_path,
                    again,
                    f"memory {mid} has revision {revision} here and at line {first}; the later line "
                    "won, so the earlier edit may have been overwritten by a writer with a stale copy",
                )
            )
    return out
