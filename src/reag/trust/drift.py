"""Has live traffic moved away from the calibration set? Three tests per tier, on a schedule.

The calibration guarantee assumes live criteria are exchangeable with the
calibration items. Audits are a uniform sample of live criteria, so they can
be compared with the calibration set directly:

- ``confidence``: the tier's confidences on the items that reach it, two-sample
  Kolmogorov–Smirnov (scipy ``ks_2samp``). A judge facing new kinds of
  responses usually shows it here first, before any label arrives;
- ``persona``: the persona-category mix, chi-square test of homogeneity
  (scipy ``chi2_contingency``);
- ``criterion_type``: the share of "PASS if" and "FAIL if" criteria, the same
  test (the local judges are much weaker on FAIL-type criteria).

Repeated looks. A two-sample test has no anytime-valid form as simple as the
risk bound's, so drift is checked on a **fixed, declared schedule**: at
25, 50, 100, 200, … audits (doubling), the k-th look at level
δ_k = δ · 6 / (π² k²). These levels sum to δ over an unbounded number of
looks, so a stream that never drifts raises a false alarm with probability
at most δ per test, however long it runs; doubling keeps the number of
looks, and so the price of the split, logarithmic in the stream. Between
looks the last result stands; an alarm stays raised until new thresholds
start a new epoch.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

DriftKind = Literal["confidence", "persona", "criterion_type"]
DRIFT_KINDS: tuple[DriftKind, ...] = ("confidence", "persona", "criterion_type")
FIRST_LOOK = 25


def look_schedule(n: int, first: int = FIRST_LOOK) -> list[int]:
    """The audit counts at which drift is tested, up to n: first, 2·first, 4·first, …"""
    looks, at = [], first
    while at <= n:
        looks.append(at)
        at *= 2
    return looks


def look_level(k: int, delta: float) -> float:
    """δ_k for the k-th look (1-based): Σ_k δ_k = δ."""
    return delta * 6.0 / (math.pi**2 * k**2)


def criterion_type(text: str) -> str:
    """ "fail" for a "FAIL if …" criterion, "pass" otherwise (the oracle writes one of the two)."""
    return "fail" if text.strip().upper().startswith("FAIL") else "pass"


@dataclass(frozen=True, slots=True)
class DriftCheck:
    """One test at one look: the p-value against the look's level."""

    kind: DriftKind
    look: int  # 1-based
    n_live: int
    n_calibration: int
    p_value: float
    level: float

    @property
    def alarmed(self) -> bool:
        return self.p_value < self.level


def p_confidence(calibration: Sequence[float], live: Sequence[float]) -> float:
    if len(calibration) == 0 or len(live) == 0:
        return 1.0
    return float(stats.ks_2samp(calibration, live).pvalue)


def p_mix(calibration: Sequence[str], live: Sequence[str]) -> float:
    """Chi-square test that both samples share one categorical mix; 1 when there is one category."""
    cats = sorted(set(calibration) | set(live))
    if len(cats) < 2 or len(calibration) == 0 or len(live) == 0:
        return 1.0
    a, b = Counter(calibration), Counter(live)
    table = np.array([[a[c] for c in cats], [b[c] for c in cats]], dtype=np.float64)
    return float(stats.chi2_contingency(table, correction=False).pvalue)


def check(
    kind: DriftKind,
    calibration: Sequence[float] | Sequence[str],
    live: Sequence[float] | Sequence[str],
    look: int,
    delta: float,
) -> DriftCheck:
    if kind == "confidence":
        p = p_confidence([float(x) for x in calibration], [float(x) for x in live])
    else:
        p = p_mix([str(x) for x in calibration], [str(x) for x in live])
    return DriftCheck(kind, look, len(live), len(calibration), p, look_level(look, delta))


def scheduled_checks(
    kind: DriftKind,
    calibration: Sequence[float] | Sequence[str],
    live: Sequence[float] | Sequence[str],
    delta: float,
    first: int = FIRST_LOOK,
) -> list[DriftCheck]:
    """Every scheduled look the live sample has reached, each on the live items up to it."""
    return [
        check(kind, calibration, live[:at], k, delta)
        for k, at in enumerate(look_schedule(len(live), first), start=1)
    ]
