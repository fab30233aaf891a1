"""The live risk bound and the change detector keep their promise over every look."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reag.calibration import clopper_pearson_upper
from reag.trust.sequence import (
    ChangeDetector,
    audits_needed,
    change_point,
    detector_statistics,
    log_mixture_below,
    upper_bound,
)

RUNS = 2000


def allowed(runs: int, delta: float) -> int:
    """The 99.9 % quantile of Bin(runs, δ): more violations than this means a broken bound."""
    return int(stats.binom.ppf(0.999, runs, delta))


@pytest.mark.parametrize("p", [0.05, 0.1, 0.3])
def test_upper_bound_covers_the_risk_at_every_look(p: float) -> None:
    """P(the bound ever falls below the true risk, over 400 looks) ≤ δ: the anytime guarantee."""
    delta = 0.1
    rng = np.random.default_rng(int(p * 1000))
    x = rng.random((RUNS, 400)) < p
    k = np.cumsum(x, axis=1)
    n = np.arange(1, 401)
    # bound < p at look n  ⟺  the mixture against p has reached 1/δ (checked below)
    crossed = (log_mixture_below(k, n, p) >= math.log(1 / delta)).any(axis=1)
    assert crossed.sum() <= allowed(RUNS, delta)
    # a bound recomputed at every look with a fixed-n method does not keep it
    cp = clopper_pearson_upper(k, n, delta) < p
    assert cp.any(axis=1).sum() > allowed(RUNS, delta)


def test_bound_below_p_exactly_when_the_mixture_rejects_p() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        k = int(rng.integers(0, n))
        u = upper_bound(k, n, 0.1)
        for p in (u * 0.98, min(u * 1.02, 0.999)):
            rejected = float(log_mixture_below(k, n, p)) >= math.log(10)
            assert rejected == (p > u), (k, n, u, p)


def test_upper_bound_edges_and_shape() -> None:
    assert upper_bound(0, 0, 0.1) == 1.0
    assert upper_bound(5, 5, 0.1) == 1.0
    assert upper_bound(10, 100, 0.1) > 0.1
    assert upper_bound(100, 10_000, 0.1) < 0.014
    # looser than Clopper–Pearson at one look: the price of every look
    assert upper_bound(3, 100, 0.1) > float(clopper_pearson_upper(3, 100, 0.1))
    assert upper_bound(0, audits_needed(0.1, 0.1), 0.1) <= 0.1
    assert upper_bound(0, audits_needed(0.1, 0.1) - 1, 0.1) > 0.1
    with pytest.raises(ValueError, match="0 ≤ k ≤ n"):
        upper_bound(3, 2, 0.1)


def test_detector_false_alarms_at_most_delta_over_the_stream() -> None:
    """A judge exactly at α, the worst case the null allows, 3,000 audits per stream."""
    alpha, delta = 0.1, 0.1
    rng = np.random.default_rng(7)
    x = rng.random((RUNS, 3000)) < alpha
    fired = (detector_statistics(x, alpha) >= 1 / delta).any(axis=1)
    assert fired.sum() <= allowed(RUNS, delta)


def test_detector_catches_a_jump_and_points_at_it() -> None:
    alpha, delta = 0.1, 0.1
    rng = np.random.default_rng(8)
    x = rng.random((300, 3000)) < alpha / 2
    x[:, 1000:] = rng.random((300, 2000)) < 2 * alpha
    s = detector_statistics(x, alpha)
    hit = (s >= 1 / delta).any(axis=1)
    assert hit.mean() > 0.99
    first = np.argmax(s >= 1 / delta, axis=1)
    assert np.median(first[hit]) > 1000
    # the one-at-a-time detector agrees with the vectorised one
    detector = ChangeDetector(alpha, delta)
    for d in x[0]:
        detector.update(bool(d))
    assert detector.alarmed_at == int(first[0]) + 1
    estimates = [change_point(row[: first[i] + 1], alpha) for i, row in enumerate(x[:50])]
    assert abs(float(np.median(estimates)) - 1000) < 150
