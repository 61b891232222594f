"""``keepgui secrets``: secrets in an agent's memory, found, listed masked, redacted, allowed.

``keepgui secrets [--agent KIND | --source PATH] [--bank NAME] [--json]`` scans every bank of the
source (or the one named): its rows and documents (:mod:`keepgui.core.secrets`). Each finding is
listed as its id, type, bank, place (entry or document, file and line) and masked form, and
whether the agent is given it at the start of every session; the secret itself is never printed.
``--json`` prints ``{"findings": [...], "allowed": N}`` (each finding's ``to_obj``).

* ``--redact ID|all``: the finding (every occurrence of its secret in its bank), or all of them,
  replaced through the bank's own writes; a scan after it lists what is left, with the reason.
* ``--purge-history``: also remove the secrets from keepgui's own history, journals and caches
  (says what it removes; cannot be undone). Without ``--redact``, it purges the secrets found now.
* ``--allow ID``: "not a secret": the finding is no longer listed (kept per source, by hash).

Exit status: 0 when nothing is found (allowed findings aside); 1 when secrets are (still) there.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from keepgui.commands.sources import add_source_options, open_chosen
from keepgui.core.errors import InvalidInput, NotFound
from keepgui.core.secrets.scan import SENT

if TYPE_CHECKING:  # the cli imports the commands, so its Context is imported for types only
    from keepgui.cli import Context
    from keepgui.core.secrets.scan import Finding, Scanner
    from keepgui.core.source import Source


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add the ``secrets`` command."""
    p = sub.add_parser("secrets", parents=[common], help="secrets in an agent's memory: find, redact, allow")
    add_source_options(p, banks="only this bank (default: every bank of the source)")
    p.add_argument("--json", action="store_true", help="machine-readable output (never the secrets themselves)")
    p.add_argument("--redact", metavar="ID", help="replace this finding's secret (or `all`) in its bank's files")
    p.add_argument(
        "--purge-history",
        action="store_true",
        help="also remove the secrets from keepgui's own history, journals and caches (cannot be undone)",
    )
    p.add_argument("--allow", metavar="ID", help='mark a finding "not a secret" (kept per source)')
    p.set_defaults(func=cmd_secrets)


def describe(f: Finding) -> str:
    """One line for a person: never the secret."""
    sent = f"  — {SENT}" if f.sent else ""
    return f"{f.id}  {f.kind}  [{f.bank}] {f.where}: {f.masked}{sent}"


def _scan(source: Source, bank: str | None) -> tuple[Scanner, list[Finding]]:
    from keepgui.core.secrets.scan import Scanner

    scanner = Scanner(source)
    names = source.scan().names
    if bank is not None and bank not in names:
        raise NotFound(f"{source.label} has no bank `{bank}`")
    return scanner, scanner.scan(None if bank is None else [bank])


def _chosen(findings: list[Finding], wanted: str) -> list[Finding]:
    if wanted == "all":
        return findings
    picked = [f for f in findings if f.id == wanted]
    if not picked:
        raise NotFound(f"no finding {wanted} (run `keepgui secrets` with the same options to list them)")
    return picked


def _redact(ctx: Context, source: Source, picked: list[Finding]) -> None:
    from keepgui.core.secrets.redact import redact

    by_bank: dict[str, list[str]] = {}
    for f in picked:
        by_bank.setdefault(f.bank, []).append(f.secret)
    for name, secrets in by_bank.items():
        change, refused = redact(source.bank(name), secrets, "Redact secrets")
        written = sum(1 for _ in change.files)
        ctx.note(f"[{name}] redacted {len(set(secrets))} secret(s); {written} file(s) written")
        for r in refused:
            ctx.note(f"[{name}] {r.where}: not redacted: {r.reason}")


def _purge(ctx: Context, secrets: list[str]) -> None:
    from keepgui.core.secrets.purge import plan_purge

    plan = plan_purge(secrets)
    ctx.note(plan.describe())
    if plan:
        plan.apply()


def cmd_secrets(args: argparse.Namespace, ctx: Context) -> int:
    """``keepgui secrets``: list, ``--redact``, ``--purge-history``, ``--allow`` (see the module docstring)."""
    if args.redact and args.allow:
        raise InvalidInput("give --redact or --allow, not both")
    chosen = open_chosen(args, ctx)
    bank = getattr(args, "bank", None)
    scanner, findings = _scan(chosen.source, bank)
    live = [f for f in findings if not f.allowed]
    if args.allow:
        picked = _chosen(findings, args.allow)
        new = scanner.allowlist.allow(picked)
        ctx.note(f"{args.allow}: marked not a secret" + ("" if new else " (it already was)"))
        scanner, findings = _scan(chosen.source, bank)
    elif args.redact:
        picked = _chosen(live, args.redact)
        _redact(ctx, chosen.source, picked)
        if args.purge_history:
            _purge(ctx, [f.secret for f in picked])
        chosen.source.close()
        chosen = open_chosen(args, ctx)  # read afresh: what keepgui's history shows (forgotten entries) too
        scanner, findings = _scan(chosen.source, bank)
    elif args.purge_history:
        _purge(ctx, [f.secret for f in live])
    live = [f for f in findings if not f.allowed]
    allowed = len(findings) - len(live)
    if ctx.json_mode:
        ctx.emit_json({"findings": [f.to_obj() for f in live], "allowed": allowed})
    else:
        for f in live:
            ctx.out(describe(f))
        tail = f" ({allowed} marked not a secret)" if allowed else ""
        ctx.out(f"{len(live)} secret(s) found in {chosen.source.label}{tail}")
    return 1 if live else 0
