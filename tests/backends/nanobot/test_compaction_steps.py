"""The keep.md planner's table of steps: every kind a plan lists has its one step, in an order
where every safe step claims before the judgement calls do."""

from __future__ import annotations

from keepgui.backends.nanobot.compact.operations import PLANNER_KINDS, STEPS, judgement_calls, looser_matches
from keepgui.core.compaction import kind_label


def test_every_planner_kind_has_one_step_and_a_label():
    kinds = [name for name, _step in STEPS if not name.startswith("(")]
    assert sorted(kinds) == sorted(PLANNER_KINDS) and len(set(kinds)) == len(kinds)
    assert all(kind_label(kind) != kind for kind in kinds)


def test_judgement_calls_claim_after_every_safe_step_and_the_looser_ones_after_near_duplicates():
    order = [step for _name, step in STEPS]
    names = [name for name, _step in STEPS]
    settle, looser = order.index(judgement_calls), order.index(looser_matches)
    claim_or_wait_first = ("blank", "duplicate", "contained", "stated-elsewhere", "move-to-agents", "misplaced")
    assert all(names.index(kind) < settle for kind in claim_or_wait_first)
    assert settle < names.index("near-duplicate") < looser
