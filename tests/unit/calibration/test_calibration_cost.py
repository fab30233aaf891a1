"""Honest cost: every call made is charged; the paper's deciding-tier figure only beside it."""

from __future__ import annotations

import numpy as np
import pytest

from reag.calibration import ABSTAIN, CalibrationError, ScoreRecord, pivot
from reag.calibration.cost import calls_made, deciding_tier_cost, honest_cost, table_costs

PAPER_TIER_COSTS = (1.0, 3.0, 4.6)


def test_reproduces_the_reviews_arithmetic_for_the_papers_alpha_0_14() -> None:
    # Table 3 at α = 0.14: J1 / J2 / J3 = 0 / 72.1 / 27.9 %, per 100 items.
    decided = np.array([2] * 721 + [3] * 279)
    per_100 = 100 / decided.size
    assert round(deciding_tier_cost(decided, PAPER_TIER_COSTS) * per_100, 1) == 344.6
    assert round(honest_cost(decided, PAPER_TIER_COSTS) * per_100, 1) == 528.3
    # …and the review's CPPs against the J3 baseline (460 / 90 % = 5.11).
    assert round(honest_cost(decided, PAPER_TIER_COSTS) * per_100 / 98.8, 2) == 5.35
    assert round(460 / 90, 2) == 5.11


def test_every_tier_up_to_the_deciding_one_is_charged() -> None:
    decided = np.array([1, 2, 3, ABSTAIN])
    assert calls_made(decided, 3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
        [True, True, True],
    ]
    assert honest_cost(decided, PAPER_TIER_COSTS) == pytest.approx(1 + 4 + 8.6 + 8.6)
    # The paper's convention: the last tier reached, an abstained item at the top tier.
    assert deciding_tier_cost(decided, PAPER_TIER_COSTS) == pytest.approx(1 + 3 + 4.6 + 4.6)


def test_per_item_costs_are_summed_over_the_calls_made() -> None:
    costs = np.array([[0.1, 0.2, 0.3], [0.01, 0.02, 0.03]])
    assert honest_cost([2, ABSTAIN], costs) == pytest.approx(0.3 + 0.06)
    assert deciding_tier_cost([2, ABSTAIN], costs) == pytest.approx(0.2 + 0.03)
    with pytest.raises(CalibrationError, match="one per tier"):
        honest_cost([1, 2, 3], costs)


def _record(item: str, tier: int, cost: float | None) -> ScoreRecord:
    return ScoreRecord(
        item_id=item, tier=tier, verdict="YES", confidence=0.9, label="YES", cost_usd=cost
    )


def test_recorded_usd_is_used_only_when_every_record_has_it() -> None:
    full = pivot([_record("a", 1, 0.001), _record("a", 2, 0.004), _record("b", 1, 0.002)])
    matrix, unit = table_costs(full, PAPER_TIER_COSTS[:2])
    assert unit == "usd"
    assert matrix.tolist() == [[0.001, 0.004], [0.002, 0.0]]
    partial = pivot([_record("a", 1, 0.001), _record("a", 2, None)])
    matrix, unit = table_costs(partial, (1.0, 3.0))
    assert unit == "relative"
    assert matrix.tolist() == [[1.0, 3.0]]
    with pytest.raises(CalibrationError, match="--tier-costs"):
        table_costs(partial, None)
    with pytest.raises(CalibrationError, match="one per tier"):
        table_costs(partial, PAPER_TIER_COSTS)
