"""The Clopper–Pearson bounds agree with scipy's exact binomial interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reag.calibration import CalibrationError, clopper_pearson_interval, clopper_pearson_upper


@pytest.mark.parametrize("delta", [0.01, 0.05, 0.1, 0.2, 0.5])
@pytest.mark.parametrize("n", [1, 2, 5, 17, 100, 246])
def test_upper_bound_matches_scipy_exact_one_sided(n: int, delta: float) -> None:
    ks = np.arange(n + 1)
    ours = clopper_pearson_upper(ks, n, delta)
    for k in ks:
        expected = stats.binomtest(int(k), n, alternative="less").proportion_ci(
            confidence_level=1 - delta, method="exact"
        )
        assert ours[k] == pytest.approx(expected.high, abs=1e-10), (k, n, delta)


def test_upper_bound_conventions_and_monotonicity() -> None:
    assert clopper_pearson_upper(7, 7, 0.1) == 1.0
    assert clopper_pearson_upper(0, 0, 0.1) == 1.0
    # Zero disagreements in n items: 1 − δ^(1/n), the "rule of three" family.
    assert clopper_pearson_upper(0, 30, 0.05) == pytest.approx(1 - 0.05 ** (1 / 30))
    bounds = clopper_pearson_upper(np.arange(50), 50, 0.1)
    assert np.all(np.diff(bounds) > 0)
    # More evidence at the same rate tightens the bound; a smaller δ loosens it.
    assert clopper_pearson_upper(10, 100, 0.1) < clopper_pearson_upper(1, 10, 0.1)
    assert clopper_pearson_upper(10, 100, 0.01) > clopper_pearson_upper(10, 100, 0.1)


def test_upper_bound_rejects_impossible_counts() -> None:
    with pytest.raises(CalibrationError, match="0 ≤ k ≤ n"):
        clopper_pearson_upper(5, 3, 0.1)
    with pytest.raises(CalibrationError, match="delta"):
        clopper_pearson_upper(1, 3, 1.0)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (85, 86), (41, 100)])
def test_two_sided_interval_matches_scipy(k: int, n: int) -> None:
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    low, high = clopper_pearson_interval(k, n, 0.95)
    assert low == pytest.approx(expected.low, abs=1e-10)
    assert high == pytest.approx(expected.high, abs=1e-10)


def test_two_sided_interval_of_nothing_is_everything() -> None:
    assert clopper_pearson_interval(0, 0) == (0.0, 1.0)
