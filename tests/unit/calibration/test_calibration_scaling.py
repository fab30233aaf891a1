"""Selective temperature scaling: the transform, and when and how it is applied."""

from __future__ import annotations

import numpy as np
import pytest

from reag.calibration import CalibrationError, apply_temperature, fit_threshold, fit_tier


def test_temperature_one_is_the_identity_bit_for_bit() -> None:
    c = np.array([0.5, 0.93, 0.999, 1.0, 0.0])
    assert apply_temperature(c, 1.0).tolist() == c.tolist()


def test_temperature_shrinks_towards_one_half_without_reordering() -> None:
    c = np.array([0.55, 0.7, 0.93, 0.999, 0.99999, 1.0])
    scaled = apply_temperature(c, 2.0)
    assert np.all(np.diff(scaled) > 0)
    assert np.all((scaled > 0.5) & (scaled < c))
    # σ(logit(0.9) / 2) = 3/4: logit(0.9) = ln 9, halved is ln 3.
    assert apply_temperature(0.9, 2.0) == pytest.approx(0.75)
    assert apply_temperature(0.5, 7.0) == pytest.approx(0.5)
    with pytest.raises(CalibrationError, match="positive"):
        apply_temperature(c, 0.0)


def _overconfident_pile() -> tuple[np.ndarray, np.ndarray]:
    """300 items all above 0.999, the most confident 200 right, the rest 40 % wrong.

    At T = 1 the first candidate takes the whole pile (40 of 300 wrong) and fails;
    spread by T > 1, the clean top of the pile can be accepted on its own.
    """
    rng = np.random.default_rng(11)
    confidence = 1.0 - np.sort(rng.uniform(1e-7, 9e-4, 300))
    wrong = np.zeros(300, bool)
    wrong[200:] = rng.random(100) < 0.4
    return confidence, wrong


def test_scaling_rescues_an_overconfident_tier_at_the_smallest_temperature() -> None:
    confidence, wrong = _overconfident_pile()
    plain = fit_threshold(confidence, wrong, alpha=0.1, delta=0.1)
    assert plain.threshold is None
    fit = fit_tier(confidence, wrong, alpha=0.1, delta=0.1, tau=5)
    assert fit.temperature > 1.0
    assert fit.threshold is not None
    assert fit.n_accepted >= 5
    assert "selective temperature scaling applied" in fit.reason
    # No smaller temperature on the grid would have done.
    for smaller in (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0):
        if smaller < fit.temperature:
            lower = fit_threshold(
                apply_temperature(confidence, smaller), wrong, alpha=0.1, delta=0.1
            )
            assert lower.n_accepted < 5
    # Live confidences are compared after the same transform.
    accepted = fit.accepts(confidence)
    assert accepted.sum() == fit.n_accepted
    assert wrong[accepted].mean() <= 0.1


def test_a_tier_with_enough_items_is_left_alone() -> None:
    rng = np.random.default_rng(2)
    confidence = rng.uniform(0.9991, 1.0, 200)
    wrong = rng.random(200) < 0.02
    fit = fit_tier(confidence, wrong, alpha=0.1, delta=0.1, tau=5)
    assert fit.temperature == 1.0
    assert fit == fit_threshold(confidence, wrong, alpha=0.1, delta=0.1)


def test_scaling_gives_up_and_says_so() -> None:
    # A judge with no signal and a 50 % error rate: no temperature can help.
    rng = np.random.default_rng(4)
    confidence = rng.uniform(0.9991, 1.0, 200)
    wrong = rng.random(200) < 0.5
    fit = fit_tier(confidence, wrong, alpha=0.1, delta=0.1, tau=5)
    assert fit.threshold is None
    assert fit.temperature == 1.0
    assert "did not reach τ" in fit.reason


def test_too_few_items_for_tau_and_tau_zero() -> None:
    fit = fit_tier(np.array([0.99, 0.98]), np.zeros(2, bool), alpha=0.1, delta=0.1, tau=5)
    assert "only 2 items reached this tier" in fit.reason
    confidence, wrong = _overconfident_pile()
    assert fit_tier(confidence, wrong, alpha=0.1, delta=0.1, tau=0).temperature == 1.0
    with pytest.raises(CalibrationError, match="> 1"):
        fit_tier(confidence, wrong, alpha=0.1, delta=0.1, temperatures=(0.5, 2.0))
