"""A synthetic judge watched by audits: false alarms, detection delay, recalibration.

The judge's confidence on a criterion is uniform on [0.5, 1) and it is wrong
with probability slope · (1 − c), so among the criteria a threshold λ
accepts its risk is slope · (1 − λ) / 2. Every audit is a uniform draw from
all criteria (what ``reag.trust.audit`` picks) with its confidence and
whether the judge was wrong; only audits the threshold accepts feed the
live bound and the detector, as in ``reag.trust.monitor``.

``bench/trust.py`` runs these at full size and prints the figures; the unit
tests run the same code small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reag.calibration.fixed_sequence import fit_threshold
from reag.fit_defaults import DEFAULT_ALPHA, DEFAULT_DELTA
from reag.trust.sequence import ALTERNATIVES, change_weight

LOW = 0.5


@dataclass(frozen=True, slots=True)
class Scenario:
    """What a run simulates; every figure the bench prints names these."""

    alpha: float = DEFAULT_ALPHA
    delta: float = DEFAULT_DELTA
    n_audits: int = 4000  # the stream, counted in audits (criteria = audits / audit_rate)
    audit_rate: float = 0.02
    threshold: float = 0.8  # λ in force; it accepts 40 % of criteria
    risk_before: float = 0.05  # true risk among accepted criteria (α/2)
    risk_after: float | None = 0.2  # after the change (2α); None: a stable judge
    change_at: int = 2000  # audit index of the change
    n_recalibration: int = 600  # post-alarm audits the new threshold is fit on

    def slope(self, risk: float) -> float:
        return 2.0 * risk / (1.0 - self.threshold)


def true_risk(slope: float, threshold: float) -> float:
    """Risk among accepted criteria: E[slope·(1−c) | c ≥ λ] with c uniform on [0.5, 1)."""
    return min(slope * (1.0 - threshold) / 2.0, 1.0)


def draw(
    rng: np.random.Generator, runs: int, n: int, slope: float
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    confidence = rng.uniform(LOW, 1.0, size=(runs, n))
    wrong = rng.random((runs, n)) < np.clip(slope * (1.0 - confidence), 0.0, 1.0)
    return confidence, wrong


def streams(
    rng: np.random.Generator, scenario: Scenario, runs: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Audits of every run: confidence and wrongness, the change applied at ``change_at``."""
    s = scenario
    confidence, wrong = draw(rng, runs, s.n_audits, s.slope(s.risk_before))
    if s.risk_after is not None:
        c2, w2 = draw(rng, runs, s.n_audits - s.change_at, s.slope(s.risk_after))
        confidence[:, s.change_at :] = c2
        wrong[:, s.change_at :] = w2
    return confidence, wrong


def first_alarms(
    accepted: NDArray[np.bool_], wrong: NDArray[np.bool_], alpha: float, delta: float
) -> NDArray[np.int64]:
    """Per run, the audit index at which the detector fired, or −1 (``ChangeDetector``, vectorised).

    Audits the threshold does not accept leave the detector as it was.
    """
    runs, length = accepted.shape
    q = np.array([min(m * alpha, (1.0 + alpha) / 2) for m in ALTERNATIVES])
    up, down = q / alpha, (1.0 - q) / (1.0 - alpha)
    r = np.zeros((runs, q.size))
    seen = np.zeros(runs, dtype=np.int64)
    fired = np.full(runs, -1, dtype=np.int64)
    for i in range(length):
        on = accepted[:, i]
        seen = seen + on
        weight = 1.0 / (np.maximum(seen, 1) * (np.maximum(seen, 1) + 1))
        ratio = np.where(wrong[:, i : i + 1], up, down)
        r = np.where(on[:, None], ratio * (r + weight[:, None]), r)
        new = (fired < 0) & (r.mean(axis=1) >= 1.0 / delta)
        fired[new] = i
    return fired


@dataclass(frozen=True, slots=True)
class Recalibrated:
    """One run after its alarm: the threshold fit on post-alarm audits and what followed."""

    detected_at: int  # audit index of the alarm; −1 if none
    threshold: float | None  # None: the fit found none, the tier accepts nothing
    true_risk: float  # of the new threshold, on the changed judge (0 if it accepts nothing)
    false_alarm_after: bool  # the new epoch's detector fired on the rest of the stream


def recalibrate_after_alarm(
    rng: np.random.Generator, scenario: Scenario, runs: int
) -> list[Recalibrated]:
    """Jump, detect, refit λ on the next ``n_recalibration`` audits, then watch the new epoch."""
    s = scenario
    assert s.risk_after is not None
    confidence, wrong = streams(rng, s, runs)
    fired = first_alarms(confidence >= s.threshold, wrong, s.alpha, s.delta)
    slope = s.slope(s.risk_after)
    out: list[Recalibrated] = []
    for run in range(runs):
        at = int(fired[run])
        if at < 0:
            out.append(Recalibrated(-1, None, true_risk(slope, s.threshold), False))
            continue
        # Exchangeable labels: the audits after the alarm, every criterion, not only
        # those any tier accepted. Drawn fresh so the stream length does not cap them.
        c_cal, w_cal = draw(rng, 1, s.n_recalibration, slope)
        fit = fit_threshold(c_cal[0], w_cal[0], alpha=s.alpha, delta=s.delta)
        if fit.threshold is None:
            out.append(Recalibrated(at, None, 0.0, False))
            continue
        rest = max(s.n_audits - at - s.n_recalibration, 0)
        c_new, w_new = draw(rng, 1, rest, slope)
        again = first_alarms(c_new >= fit.threshold, w_new, s.alpha, s.delta)
        out.append(Recalibrated(at, fit.threshold, true_risk(slope, fit.threshold), again[0] >= 0))
    return out


def weights_sum_check(n: int) -> float:
    """Σ_{s ≤ n} w_s, which must stay ≤ 1 for the detector's guarantee (it is 1 − 1/(n+1))."""
    return float(sum(change_weight(s) for s in range(1, n + 1)))
