"""Live risk bounds that stay valid however often they are read.

Audits arrive one at a time and a dashboard reads the bound after every one
of them. A Clopper–Pearson bound recomputed at each look is valid at one
fixed sample size only; read after every audit it would, sooner or later,
dip below the true risk for a stable judge (the "peeking" problem). reag
therefore uses two anytime-valid tools, each with a guarantee that holds
simultaneously over every look, with no schedule to declare:

- ``upper_bound`` is a one-sided **confidence sequence** from Robbins'
  mixture method: for a candidate risk p, the mixture over alternatives
  q < p (a Beta(1, 1) prior restricted to [0, p]) of the Bernoulli
  likelihood ratios is a non-negative martingale when the risk is p, so by
  Ville's inequality it ever reaches 1/δ with probability at most δ. The
  bound is the largest p it has not rejected. Exact for Bernoulli
  disagreements, no normal approximation, and tighter at small counts than
  betting bounds with fixed bets.
- ``ChangeDetector`` raises the alarm "the risk is now above α". It is a
  Shiryaev–Roberts e-detector: for every possible start s of a violation
  and a few alternatives q > α, the likelihood ratio of the audits since s,
  weighted by w_s = 1/(s(s+1)). Under "every audit's risk is ≤ α" (a
  composite null that allows any drift below α) the weighted sum plus the
  unspent weight is a non-negative supermartingale that starts at 1, so the
  alarm (sum ≥ 1/δ) ever fires with probability at most δ, over an
  unbounded stream. Unlike a cumulative test, its delay after a jump does not
  grow with the number of good audits before it (only by 2·ln s nats).

The simulation in ``bench/trust.py`` measures both: false alarms over whole
streams and the detection delay after a jump.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

# The alternatives the detector weighs, as multiples of α: a violation by half again,
# twice and three times α. Equal weights; each one alone would also be valid.
ALTERNATIVES = (1.5, 2.0, 3.0)


def _check(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}")


def log_mixture_below(k: ArrayLike, n: ArrayLike, p: float) -> NDArray[np.float64]:
    """log of Robbins' one-sided mixture martingale against "the risk is p", for k of n.

    M = ∫_0^p q^k (1−q)^(n−k) dq / (p · p^k (1−p)^(n−k)): the uniform prior on
    alternatives below p. Large when the audits show fewer disagreements than p.
    """
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    a, b = k + 1.0, n - k + 1.0
    log_integral = special.betaln(a, b) + np.log(np.maximum(special.betainc(a, b, p), 1e-300))
    return np.asarray(
        log_integral - math.log(p) - k * math.log(p) - (n - k) * math.log1p(-p), dtype=np.float64
    )


@lru_cache(maxsize=65536)
def upper_bound(k: int, n: int, delta: float) -> float:
    """The anytime-valid (1−δ) upper bound on the risk after k disagreements in n audits.

    The largest p whose mixture martingale is still below 1/δ. With n = 0 it is 1.
    """
    _check("delta", delta)
    if not 0 <= k <= n:
        raise ValueError(f"need 0 ≤ k ≤ n, got k={k}, n={n}")
    if n in (0, k):
        return 1.0
    level = math.log(1.0 / delta)

    def excess(p: float) -> float:
        return float(log_mixture_below(k, n, p)) - level

    top = 1.0 - 1e-12
    if excess(top) < 0.0:
        return 1.0
    low = k / n if k > 0 else 1e-12
    if excess(low) >= 0.0:  # cannot happen for a proper mixture; keep the bound honest
        return low
    return float(optimize.brentq(excess, low, top, xtol=1e-10))


def audits_needed(alpha: float, delta: float) -> int:
    """The fewest audits whose bound can fall to α: all of them agreeing."""
    _check("alpha", alpha)
    n = 1
    while upper_bound(0, n, delta) > alpha:
        n = n * 2
    low, high = n // 2, n
    while high - low > 1:
        mid = (low + high) // 2
        if upper_bound(0, mid, delta) > alpha:
            low = mid
        else:
            high = mid
    return high


def change_weight(s: int) -> float:
    """Prior weight of a violation that starts at audit s (1-based); they sum to 1."""
    return 1.0 / (s * (s + 1))


@dataclass
class ChangeDetector:
    """Sequential alarm for "the disagreement rate is now above α" (see the module docstring).

    Feed it 1 for a disagreement and 0 for an agreement, audit by audit.
    ``statistic`` is the e-detector; ``alarmed`` stays set once it has reached
    1/δ, until a new epoch (new thresholds) starts a new detector.
    """

    alpha: float
    delta: float
    n: int = 0
    alarmed_at: int | None = None
    _r: NDArray[np.float64] = field(init=False)
    _q: NDArray[np.float64] = field(init=False)

    def __post_init__(self) -> None:
        _check("alpha", self.alpha)
        _check("delta", self.delta)
        self._q = np.array([min(m * self.alpha, (1.0 + self.alpha) / 2) for m in ALTERNATIVES])
        self._r = np.zeros_like(self._q)

    @property
    def statistic(self) -> float:
        return float(self._r.mean())

    @property
    def alarmed(self) -> bool:
        return self.alarmed_at is not None

    def update(self, disagreed: bool) -> bool:
        """Add one audit; True if this audit raised the alarm."""
        self.n += 1
        a, q = self.alpha, self._q
        ratio = q / a if disagreed else (1.0 - q) / (1.0 - a)
        self._r = ratio * (self._r + change_weight(self.n))
        if self.alarmed_at is None and self.statistic >= 1.0 / self.delta:
            self.alarmed_at = self.n
            return True
        return False


def detector_statistics(outcomes: NDArray[np.bool_], alpha: float) -> NDArray[np.float64]:
    """The detector's statistic after every audit, for many streams at once (rows).

    The same recursion as ``ChangeDetector``, vectorised for the simulation and the tests.
    """
    runs, length = outcomes.shape
    q = np.array([min(m * alpha, (1.0 + alpha) / 2) for m in ALTERNATIVES])
    up, down = q / alpha, (1.0 - q) / (1.0 - alpha)
    r = np.zeros((runs, q.size))
    out = np.empty((runs, length))
    for i in range(length):
        ratio = np.where(outcomes[:, i : i + 1], up, down)
        r = ratio * (r + change_weight(i + 1))
        out[:, i] = r.mean(axis=1)
    return out


def change_point(outcomes: NDArray[np.bool_] | list[bool], alpha: float) -> int:
    """0-based index where the most likely violation began (CUSUM's argmax at q = 2α)."""
    x = np.asarray(outcomes, dtype=bool)
    if x.size == 0:
        return 0
    q = min(2 * alpha, (1.0 + alpha) / 2)
    step = np.where(x, math.log(q / alpha), math.log((1 - q) / (1 - alpha)))
    # log LR of audits s..n-1 for every s: suffix sums
    suffix = np.cumsum(step[::-1])[::-1]
    return int(np.argmax(suffix))
