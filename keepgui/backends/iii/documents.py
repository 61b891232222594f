"""A bank's rules as documents: injection order, the shared ``max_rule_chars`` budget, saves that undo."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from keepgui.backends.iii.store import (
    Bank as CoreBank,
    rust_stem_extension,
)
from keepgui.backends.iii.textrules import cut_at_char_boundary, rust_trim
from keepgui.core import fsio
from keepgui.core.errors import Conflict, NotFound
from keepgui.core.source import (
    Budget,
    BudgetSegment,
    Change,
    Document,
    plural,
    stamps_of,
)

if TYPE_CHECKING:  # the preview and the activity index are imported when first used; their types only here
    from keepgui.backends.iii.backend import IiiSource
    from keepgui.backends.iii.bank import IiiBank
    from keepgui.backends.iii.context import RuleOutcome
from keepgui.backends.iii.store import is_valid_name, suggest_slug

# ---------------------------------------------------------------------- names


class BankNameRule:
    """The worker's name rule for banks and rules (``[a-z0-9][a-z0-9_-]{0,63}``), said in words."""

    def describe(self) -> str:
        """The rule in words."""
        return "Lowercase letters, digits, - and _, starting with a letter or a digit; at most 64 characters."

    def problem(self, name: str) -> str:
        """Why ``name`` is not a valid name, in words ("" when it is)."""
        if is_valid_name(name):
            return ""
        if len(name) > 64:
            return f"A name has at most 64 characters (this one has {len(name)})."
        if name[:1] in ("-", "_"):
            return "A name starts with a letter or a digit."
        if any("A" <= c <= "Z" for c in name):
            return "Use lowercase letters."
        bad = sorted({c for c in name if not ("a" <= c <= "z" or "0" <= c <= "9" or c in "-_")})
        shown = " ".join("space" if c == " " else c for c in bad)
        return f"A name holds only lowercase letters, digits, - and _ (not {shown})."

    def suggest(self, name: str) -> str:
        """A valid slug close to ``name``."""
        return suggest_slug(name)


NAMES = BankNameRule()


# ---------------------------------------------------------------------- the rule budget


@dataclass(frozen=True)
class RulePlace:
    """Where one rule lands in the shared ``max_rule_chars`` budget: its outcome, first byte, and
    the character offset in the editor text where cutting or omission begins."""

    outcome: RuleOutcome
    start: int
    budget: int
    cut_char: int | None
    later: int = 0
    """How many rules come after it in the injection order."""

    @property
    def end(self) -> int:
        """One past the rule's last injected byte in the shared budget."""
        return self.start + self.outcome.injected

    def describe(self) -> str:
        """The meter's sentence."""
        o = self.outcome
        where = f"bytes {self.start:,}–{self.start + o.size:,} of the {self.budget:,}-byte budget"
        if o.status == "fit":
            left = self.budget - self.end
            return f"{o.name}.md: {o.size:,} bytes, {where}; fits ({left:,} bytes left after it)"
        if o.status == "truncated":
            return (
                f"{o.name}.md: {o.size:,} bytes, {where}; TRUNCATED after byte {o.injected:,} — the last "
                f"{o.size - o.injected:,} bytes (highlighted) are not sent"
                + (
                    ""
                    if not self.later
                    else ", and the next rule is omitted"
                    if self.later == 1
                    else f", and the {self.later} later rules are omitted"
                )
            )
        return (
            f"{o.name}.md: {o.size:,} bytes; OMITTED — earlier rules leave "
            f"{max(0, self.budget - self.start):,} bytes, too few to send any of it (a cut needs more than 200)"
        )


def place_rules(rules: list[tuple[str, str]], max_rule_chars: int) -> dict[str, RulePlace]:
    """Where every rule lands, by name (``rules`` in injection order, unsaved texts included).

    The numbers come from :func:`keepgui.backends.iii.context.render_rules`, the code the preview uses.
    """
    from keepgui.backends.iii.context import render_rules

    _, _, outcomes = render_rules(rules, max_rule_chars)
    texts = dict(rules)
    places: dict[str, RulePlace] = {}
    used = 0
    for number, outcome in enumerate(outcomes, start=1):
        cut = None
        if outcome.status != "fit":
            text = texts[outcome.name]
            sent = rust_trim(text)  # what is sent starts after the leading white space
            lead = text.find(sent) if sent else len(text)
            cut = lead + len(cut_at_char_boundary(sent, outcome.injected))
        places[outcome.name] = RulePlace(outcome, used, max_rule_chars, cut, len(outcomes) - number)
        used += outcome.injected
    return places


def rule_budget(rules: list[tuple[str, str]], current: str | None, max_rule_chars: int) -> Budget:
    """The budget meter's view of ``rules`` with ``current`` being edited."""
    places = place_rules(rules, max_rule_chars)
    place = places.get(current) if current else None
    used = sum(p.outcome.injected for p in places.values())
    segments = tuple(
        BudgetSegment(p.outcome.name, p.start, p.outcome.injected, p.outcome.size, p.outcome.status)
        for p in places.values()
    )
    return Budget(
        max_rule_chars,
        segments,
        current,
        place.describe() if place else "",
        f"{plural(len(places), 'rule uses', 'rules use')} {used:,} of {max_rule_chars:,} bytes",
        cut_char=place.cut_char if place is not None else None,
        warn=place is not None and place.outcome.status != "fit",
    )


# ---------------------------------------------------------------------- rules as documents


class RuleDocs:
    """The rules of one bank, as the document editor sees them (injection order).

    Every write presents the stamp the text was loaded with; the Change it
    returns undoes it by writing back exactly what was there.
    """

    creatable = True
    why_not_create = ""
    empty_deletes = True
    previews_drafts = True
    names = NAMES

    def __init__(self, bank: IiiBank) -> None:
        self.bank = bank

    @property
    def _source(self) -> IiiSource:
        return self.bank.source

    def _core(self) -> CoreBank:
        return self.bank.core()

    def list(self) -> list[tuple[str, str]]:
        """``(name, title)`` in injection order."""
        return [(name, f"{name}.md") for name in self._core().rule_names()]

    def texts(self) -> builtins.list[tuple[str, str]]:
        """``(name, content)`` of every readable rule, in injection order."""
        rules, _ = self._core().rules()
        return [(r.name, r.content) for r in rules]

    def read(self, name: str) -> Document:
        """Load one rule with its stamp."""
        rule = self._core().read_rule(name)
        return Document(
            name,
            f"{name}.md",
            rule.path,
            rule.content,
            rule.stamp,
            status="rule: sent word for word on every turn, within the shared budget",
        )

    def current(self, doc: Document) -> tuple[str | None, fsio.Stamp]:
        """What is on disk now for ``doc``."""
        data, stamp = fsio.read_stamped(doc.path)
        return (None if data is None else data.decode("utf-8", errors="replace")), stamp

    def pre_save_warnings(self, doc: Document) -> builtins.list[str]:
        """Rules are nobody else's: nothing to warn about."""
        return []

    def _change(
        self,
        name: str,
        text: str,
        result: object,
        reverse: Callable[[], Change] | None,
        message: str = "",
        paths: Sequence[str] = (),
    ) -> Change:
        return Change(
            self._source.path,
            self.bank.name,
            text,
            documents=frozenset({name}),
            files=stamps_of(*paths),
            result=result,
            message=message,
            reverse=reverse,
        )

    def _put(self, name: str, content: str, expect: fsio.Stamp, text: str) -> Change:
        """Write ``content`` (empty deletes) over exactly ``expect``; the Change undoes it."""
        before = self._read_or_none(name)
        if before is not None and not before.stamp.same_content(expect):
            raise Conflict(before.path, expect, before.stamp)
        with self._source.lock:
            rule = self._core().write_rule(name, content, expect=expect)
        doc = self.read(name) if rule is not None else None
        path = self._core().rule_file(name)
        old_text = before.text if before is not None else ""
        left = doc.stamp if doc is not None else fsio.Stamp.missing()
        message = "" if doc is not None else f"{name}.md deleted (empty content)"
        return self._change(name, text, doc, lambda: self._put(name, old_text, left, text), message, [path])

    def _read_or_none(self, name: str) -> Document | None:
        try:
            return self.read(name)
        except NotFound:
            return None

    def save(self, doc: Document, text: str, *, confirmed: bool = False) -> Change:
        """Write ``text`` (empty text deletes the rule); ``result`` is the reloaded Document (None if deleted)."""
        return self._put(doc.name, text, doc.stamp, f"Save {doc.title}")

    def base_for_overwrite(self, doc: Document, on_disk: str | None, stamp: fsio.Stamp) -> Document:
        """``doc`` as the version on disk the person was shown (``stamp``), to save over exactly that."""
        return doc.with_disk(on_disk or "", stamp)

    def create(self, name: str) -> Change:
        """A new rule with the console's starting content ``# <name>``."""
        return self._put(name, f"# {name}\n", fsio.Stamp.missing(), f"New rule {name}.md")

    def rename_document(self, doc: Document, new: str) -> Change:
        """Rename the rule file (refused if it changed since it was loaded)."""
        return self._rename(doc.name, new, doc.stamp, f"Rename {doc.title}")

    def _rename(self, old: str, new: str, expect: fsio.Stamp, text: str) -> Change:
        with self._source.lock:
            self._core().rename_rule(old, new, expect=expect)
        renamed = self.read(new)
        change = self._change(
            new,
            text,
            renamed,
            lambda: self._rename(new, old, renamed.stamp, text),
            paths=[self._core().rule_file(old), renamed.path],
        )
        return replace(change, documents=frozenset({old, new}))

    def delete(self, doc: Document) -> Change:
        """Delete the rule file (refused if it changed since it was loaded)."""
        with self._source.lock:
            self._core().delete_rule(doc.name, expect=doc.stamp)
        text = f"Delete {doc.title}"
        return self._change(
            doc.name,
            text,
            None,
            lambda: self._put(doc.name, doc.text, fsio.Stamp.missing(), text),
            f"deleted {doc.title}",
            [doc.path],
        )

    def budget(self, name: str, text: str, texts: Sequence[tuple[str, str]] | None = None) -> Budget:
        """Where ``text`` (rule ``name`` being edited) sits in the shared ``max_rule_chars`` budget."""
        rules = dict(texts if texts is not None else self.texts())
        rules[name] = text
        return rule_budget(sorted(rules.items()), name, self._source.config.max_rule_chars)

    def documents_of(self, paths: Iterable[str]) -> set[str]:
        """Rule names of the changed paths inside this bank's ``rules`` folder."""
        folder = self._core().rules_path
        out = set()
        for path in paths:
            if os.path.dirname(path) == folder:
                stem, ext = rust_stem_extension(os.path.basename(path))
                if ext == "md":
                    out.add(stem)
        return out
