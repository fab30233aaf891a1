"""Fixed-sequence threshold fitting: edge cases, and agreement with a literal reading of eq. 7.

The edge cases pin the rule as it was before ``min_accepted`` (``TODAY`` = 1:
only candidates accepting nothing are passed over); the tests at the end show
what the default (30) changes.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from reag.calibration import (
    DEFAULT_GRID,
    DEFAULT_MIN_ACCEPTED,
    CalibrationError,
    Grid,
    fit_threshold,
)

TODAY = 1
"""min_accepted that gives the rule before it existed: pass over only empty candidates."""


def _literal_threshold(
    confidence: NDArray[np.float64],
    wrong: NDArray[np.bool_],
    alpha: float,
    delta: float,
    grid: Grid,
    min_accepted: int = TODAY,
) -> float | None:
    """Eq. 5–7 one candidate at a time, with scipy's own exact interval: the reference."""
    best = None
    for lam in grid.values():
        accepted = confidence >= lam
        n = int(accepted.sum())
        if n < min_accepted or n == 0:
            continue
        k = int(wrong[accepted].sum())
        upper = stats.binomtest(k, n, alternative="less").proportion_ci(1 - delta).high
        if upper > alpha:
            break
        best = float(lam)
    return best  # fmt: skip


def test_grid_is_the_papers_and_exact_in_decimal() -> None:
    values = DEFAULT_GRID.values()
    assert values.size == 500
    assert values[0] == 0.999
    assert values[-1] == 0.5
    assert np.all(np.diff(values) < 0)
    # A confidence of 0.93 read from JSON must sit exactly on the candidate 0.930.
    assert 0.93 in values
    assert 0.581 in values
    assert Grid.parse("0.99:0.9:0.01").values().tolist() == [
        0.99, 0.98, 0.97, 0.96, 0.95, 0.94, 0.93, 0.92, 0.91, 0.9,
    ]  # fmt: skip


def test_grid_rejects_nonsense() -> None:
    with pytest.raises(CalibrationError):
        Grid.parse("0.5:0.9")
    with pytest.raises(CalibrationError, match="above its start"):
        Grid.parse("0.5:0.9:0.01")


@pytest.mark.parametrize("min_accepted", [TODAY, DEFAULT_MIN_ACCEPTED, 7])
@pytest.mark.parametrize("seed", range(12))
def test_matches_literal_reading_on_random_judges(seed: int, min_accepted: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 400))
    confidence = np.round(1 - 0.5 * rng.beta(0.4, 2.0, n), 3)
    wrong = rng.random(n) < 1.6 * (1 - confidence) + rng.uniform(0, 0.03)
    # These seeds give interior thresholds for most draws and none for a few.
    alpha = float(rng.uniform(0.04, 0.2))
    grid = Grid(start=0.999, stop=0.5, step=0.001)
    fit = fit_threshold(
        confidence, wrong, alpha=alpha, delta=0.1, grid=grid, min_accepted=min_accepted
    )
    assert fit.threshold == _literal_threshold(confidence, wrong, alpha, 0.1, grid, min_accepted)
    assert fit.min_accepted == min_accepted
    if fit.threshold is not None:
        assert fit.n_accepted >= min_accepted
        accepted = confidence >= fit.threshold
        assert fit.n_accepted == accepted.sum()
        assert fit.n_disagree == wrong[accepted].sum()
        assert fit.risk == pytest.approx(wrong[accepted].mean())
        assert fit.risk_upper is not None
        assert fit.risk_upper <= alpha
        assert fit.accepts(confidence).tolist() == accepted.tolist()


def test_no_item_above_any_candidate_gives_no_threshold() -> None:
    fit = fit_threshold(
        np.full(100, 0.4), np.zeros(100, bool), alpha=0.1, delta=0.1, min_accepted=TODAY
    )
    assert fit.threshold is None
    assert fit.n == 100
    assert fit.n_accepted == 0
    assert "no item has confidence ≥ 0.5" in fit.reason
    assert not fit.accepts(np.array([0.99, 1.0])).any()


def test_no_items_at_all_gives_no_threshold() -> None:
    fit = fit_threshold(np.array([]), np.array([], bool), alpha=0.1, delta=0.1, min_accepted=TODAY)
    assert fit.threshold is None
    assert "no calibration items" in fit.reason


def test_empty_candidates_are_passed_over() -> None:
    # Nothing above 0.9: candidates 0.999 … 0.901 accept no item and must not end the
    # sequence; 40 clean items at 0.9 then pass (bound 1 − 0.1^(1/40) ≈ 0.056 ≤ 0.1).
    confidence = np.full(40, 0.9)
    fit = fit_threshold(confidence, np.zeros(40, bool), alpha=0.1, delta=0.1, min_accepted=TODAY)
    assert fit.threshold == 0.5
    assert fit.n_accepted == 40
    assert fit.risk == 0.0


def test_a_bad_candidate_high_up_blocks_everything_below() -> None:
    # Five items at 0.99, two of them wrong, fail the bound; below them 500 clean
    # items at 0.8 would pass on their own (together: 2 of 505, bound ≈ 0.01), but
    # fixed-sequence testing never gets there.
    confidence = np.concatenate([np.full(5, 0.99), np.full(500, 0.8)])
    wrong = np.concatenate([[True, True, False, False, False], np.zeros(500, bool)])
    fit = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1, min_accepted=TODAY)
    assert fit.threshold is None
    assert "λ=0.99 (2 of 5 disagree)" in fit.reason
    # The same items without the bad top: a threshold, and it reaches the clean block.
    clean = fit_threshold(confidence[5:], wrong[5:], alpha=0.1, delta=0.1, min_accepted=TODAY)
    assert clean.threshold == 0.5
    assert clean.n_accepted == 500


def test_the_sequence_stops_at_the_first_failure_even_if_lower_ones_pass() -> None:
    # 60 clean items at 0.95 pass; 20 items at 0.9 with 10 wrong make the 0.9 set fail
    # (10 of 80); adding 920 clean items at 0.6 would pass again (10 of 1000) but
    # is never reached: λ̂ stays at 0.901, the smallest candidate above the failure.
    confidence = np.concatenate([np.full(60, 0.95), np.full(20, 0.9), np.full(920, 0.6)])
    wrong = np.zeros(1000, bool)
    wrong[60:70] = True
    fit = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1, min_accepted=TODAY)
    assert fit.threshold == 0.901
    assert fit.n_accepted == 60
    assert "λ=0.9" in fit.reason


def test_a_threshold_never_exceeds_alpha_on_its_own_calibration_items() -> None:
    rng = np.random.default_rng(3)
    confidence = rng.uniform(0.99, 1.0, 2000)
    wrong = rng.random(2000) < 0.05
    fit = fit_threshold(confidence, wrong, alpha=0.08, delta=0.05, min_accepted=TODAY)
    assert fit.threshold is not None
    assert fit.risk is not None
    assert fit.risk_upper is not None
    assert fit.risk <= fit.risk_upper <= 0.08
    assert fit.delta == 0.05


def test_inputs_are_checked() -> None:
    with pytest.raises(CalibrationError, match="one length"):
        fit_threshold(np.ones(3), np.zeros(2, bool), alpha=0.1, delta=0.1)
    with pytest.raises(CalibrationError, match="NaN"):
        fit_threshold(np.array([0.9, np.nan]), np.zeros(2, bool), alpha=0.1, delta=0.1)
    with pytest.raises(CalibrationError, match="alpha"):
        fit_threshold(np.ones(3), np.zeros(3, bool), alpha=0.0, delta=0.1)


def _never_saturating(seed: int, n: int) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """A judge like a small local model: confidences only in [0.5, 0.92], tracking correctness."""
    rng = np.random.default_rng(seed)
    confidence = np.round(rng.uniform(0.5, 0.92, n), 3)
    wrong = rng.random(n) < 0.9 * (0.92 - confidence)
    return confidence, wrong


def test_a_judge_that_never_saturates_gets_a_threshold_only_with_min_accepted() -> None:
    confidence, wrong = _never_saturating(1, 400)
    today = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1, min_accepted=TODAY)
    assert today.threshold is None
    # The demo's failure: one item above the first candidate, bound 1 − δ.
    assert "λ=0.92 (0 of 1 disagree), has upper bound 0.900 > α=0.1" in today.reason
    fit = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1)
    assert fit.min_accepted == DEFAULT_MIN_ACCEPTED == 30
    assert fit.threshold == 0.767
    assert (fit.n_accepted, fit.n_disagree) == (135, 8)
    assert fit.risk_upper is not None
    assert fit.risk_upper <= 0.1
    assert "the next candidate, λ=0.766" in fit.reason


def test_no_passing_candidate_means_no_threshold_never_the_top_one() -> None:
    # 20 clean items: M = 1 passes them (bound 1 − 0.1^(1/20) ≈ 0.109 ≤ 0.2); with M = 30 no
    # candidate is ever tested, and there is no fallback to the top candidate.
    confidence, wrong = np.full(20, 0.95), np.zeros(20, bool)
    assert fit_threshold(confidence, wrong, alpha=0.2, delta=0.1, min_accepted=TODAY).threshold
    fit = fit_threshold(confidence, wrong, alpha=0.2, delta=0.1)
    assert fit.threshold is None
    assert fit.n_accepted == 0
    assert "no candidate accepts at least 30 items (the lowest, λ=0.5, accepts 20 of 20)" in (
        fit.reason
    )


def test_the_first_tested_candidate_names_the_rule_when_it_fails() -> None:
    confidence = np.concatenate([np.full(10, 0.97), np.full(30, 0.9)])
    wrong = np.zeros(40, bool)
    wrong[:5] = True
    fit = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1)
    assert fit.threshold is None
    assert "the first candidate that accepts at least 30 items, λ=0.9 (5 of 40 disagree)" in (
        fit.reason
    )


def test_a_small_bad_top_is_passed_over_not_tested() -> None:
    # The top five items of test_a_bad_candidate_high_up_blocks_everything_below (two wrong)
    # are fewer than 30: their candidates are not tested, so they no longer block the 500.
    confidence = np.concatenate([np.full(5, 0.99), np.full(500, 0.8)])
    wrong = np.concatenate([[True, True, False, False, False], np.zeros(500, bool)])
    fit = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1)
    assert fit.threshold == 0.5
    assert (fit.n_accepted, fit.n_disagree) == (505, 2)


def test_min_accepted_is_checked() -> None:
    with pytest.raises(CalibrationError, match="min_accepted"):
        fit_threshold(np.ones(3), np.zeros(3, bool), alpha=0.1, delta=0.1, min_accepted=0)
