"""Exact binomial (Clopper–Pearson) bounds on a disagreement rate.

The calibrator needs an upper bound that holds for any sample size, including
the handful of items a high threshold accepts, so it uses the exact
construction rather than a normal approximation (paper eq. 6).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from reag.calibration.errors import CalibrationError


def _check_level(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise CalibrationError(f"{name} must be in (0, 1), got {value}")


def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, delta: float) -> NDArray[np.float64]:
    """One-sided (1−δ) upper bound on a rate seen as k disagreements in n items.

    sup{R : P(Bin(n, R) ≤ k) ≥ δ}, i.e. the (1−δ) quantile of Beta(k+1, n−k).
    By convention it is 1 when k = n (no evidence below certainty) and when
    n = 0 (no evidence at all). Vectorised over k and n.
    """
    _check_level("delta", delta)
    k_arr, n_arr = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, np.float64))
    if np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise CalibrationError("disagreement counts must satisfy 0 ≤ k ≤ n")
    informative = k_arr < n_arr
    upper = np.ones(k_arr.shape, dtype=np.float64)
    upper[informative] = stats.beta.ppf(
        1.0 - delta, k_arr[informative] + 1.0, n_arr[informative] - k_arr[informative]
    )
    return upper


def clopper_pearson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided exact interval for a proportion; (0, 1) when n = 0."""
    _check_level("confidence", confidence)
    if not 0 <= k <= n:
        raise CalibrationError(f"need 0 ≤ k ≤ n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1.0 - tail, k + 1, n - k))
    return low, high
