"""Day one on a new app: a borrowed threshold, certified or withdrawn by the app's own audits.

A new app has no labels, so no threshold of its own. A threshold fitted on the
pooled labelled items of other apps (issue 26) promises the pool's risk, not
this app's: its verdicts are *provisional*. The app's audits, a uniform random
sample of its own traffic, then settle the question either way:

- **certified** once the anytime-valid (1−δ) upper bound on the risk among the
  audits the threshold accepts falls to α (``reag.trust.sequence.upper_bound``).
  If the app's true risk is above α, this happens with probability at most δ,
  however long the stream and however often it is read;
- **withdrawn** once the change detector raises "the risk is above α"
  (``ChangeDetector``), before or after certification: verdicts fall back to
  abstention and an alert fires. If the app's risk stays at or below α, this
  happens with probability at most δ over the whole stream.

Only audits labelled after the threshold was published count, and never an
item the threshold was fitted on ("labels that fitted a threshold never
certify it"): the pool holds other apps' items, and the caller drops this
app's own fitted items before they reach ``standing``.

``standing`` walks one app's audits in order (the calibrator, ``reag trust``);
``first_certified`` and ``first_withdrawn`` do the same for many simulated
streams at once (``bench/day_one.py`` and the tests), and must agree with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from reag.trust.sequence import ChangeDetector, log_mixture_below, upper_bound
from reag.trust.simulation import first_alarms

Standing = Literal["provisional", "certified", "withdrawn"]


@dataclass(frozen=True, slots=True)
class ProvisionalStanding:
    """Where a borrowed threshold stands on one app, after ``audits`` of its audits.

    ``audits`` counts every audit (what a reviewer labelled); ``accepted`` the
    ones the threshold accepted, whose disagreements are the risk in question.
    ``certified_at`` / ``withdrawn_at`` are 1-based audit numbers, or None.
    """

    standing: Standing
    alpha: float
    delta: float
    audits: int
    accepted: int
    disagreements: int
    bound: float
    certified_at: int | None
    withdrawn_at: int | None

    @property
    def risk(self) -> float:
        return self.disagreements / self.accepted if self.accepted else math.nan

    @property
    def provisional(self) -> bool:
        return self.standing == "provisional"


def standing(
    audits: Sequence[tuple[bool, bool]], alpha: float, delta: float
) -> ProvisionalStanding:
    """The standing after these audits, oldest first: (accepted, disagreed) per audit.

    An audit the threshold did not accept counts as labelled work but tells
    nothing about the accepted verdicts' risk, as in ``reag.trust.monitor``.
    """
    detector = ChangeDetector(alpha, delta)
    n = k = 0
    certified_at: int | None = None
    for index, (accepted, disagreed) in enumerate(audits, start=1):
        if not accepted:
            continue
        n += 1
        k += int(disagreed)
        if detector.update(disagreed):
            return ProvisionalStanding(
                "withdrawn", alpha, delta, index, n, k, upper_bound(k, n, delta),
                certified_at, index,
            )  # fmt: skip
        if certified_at is None and upper_bound(k, n, delta) <= alpha:
            certified_at = index
    bound = upper_bound(k, n, delta)
    state: Standing = "certified" if certified_at is not None else "provisional"
    return ProvisionalStanding(state, alpha, delta, len(audits), n, k, bound, certified_at, None)


def first_certified(
    accepted: NDArray[np.bool_], wrong: NDArray[np.bool_], alpha: float, delta: float
) -> NDArray[np.int64]:
    """Per stream (row), the 0-based audit at which the bound first fell to α; −1: never."""
    n = np.cumsum(accepted, axis=1)
    k = np.cumsum(accepted & wrong, axis=1)
    # upper_bound(k, n) ≤ α exactly when the mixture against α has reached 1/δ.
    with np.errstate(divide="ignore", invalid="ignore"):
        done = (log_mixture_below(k, n, alpha) >= math.log(1.0 / delta)) & (n > 0) & accepted
    return np.where(done.any(axis=1), np.argmax(done, axis=1), -1)


def first_withdrawn(
    accepted: NDArray[np.bool_], wrong: NDArray[np.bool_], alpha: float, delta: float
) -> NDArray[np.int64]:
    """Per stream, the 0-based audit at which the detector alarmed; −1: never."""
    return first_alarms(accepted, wrong, alpha, delta)


def labels_to_certify(
    accepted: int, disagreements: int, alpha: float, delta: float, *, limit: int = 1_000_000
) -> int | None:
    """How many accepted audits in all certification needs if the observed rate holds.

    The least N ≥ ``accepted`` with ``upper_bound(round(μ̂N), N) ≤ α`` for
    μ̂ = disagreements / accepted (with no audits yet: μ̂ = 0, the fewest any
    stream could need). None when μ̂ ≥ α (no number of audits at that rate
    certifies) or N would pass ``limit``.
    """
    mu = disagreements / accepted if accepted else 0.0
    if mu >= alpha:
        return None

    def enough(size: int) -> bool:
        return upper_bound(min(round(mu * size), size), size, delta) <= alpha

    low = max(accepted, 1)
    if enough(low):
        return low
    high = low * 2
    while not enough(high):
        low, high = high, high * 2
        if high > limit:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def least_abstention(error_rate: float, alpha: float) -> float:
    """The least share of criteria any selection must leave to review to keep risk ≤ α.

    A judge wrong on a share μ of all criteria can at best abstain on wrong
    ones only: accepting a share c with at most αc of it wrong needs
    μ − (1 − c) ≤ αc, so c ≤ (1 − μ)/(1 − α) and abstention ≥ (μ − α)/(1 − α)
    (0 when μ ≤ α).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return max(0.0, (error_rate - alpha) / (1.0 - alpha))
