"""Fixed-sequence testing of confidence thresholds (paper 3.4.2, eqs. 5–7).

Candidates are tested from the most to the least conservative; the first one
whose Clopper–Pearson bound exceeds α ends the sequence, which is what lets a
single (1−δ) bound per candidate control the error of the whole search
without a multiplicity correction. Candidates that accept fewer than
``min_accepted`` calibration items are passed over before the first test:
a bound on a handful of items cannot drop below α, so without the rule a
judge whose confidences never saturate fails on its few most confident
items and never gets a threshold.
"""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field, model_validator

from reag import fit_defaults
from reag.calibration.bounds import clopper_pearson_upper
from reag.calibration.errors import CalibrationError, InvalidRangeError
from reag.calibration.temperature import apply_temperature
from reag.fit_defaults import DEFAULT_MIN_ACCEPTED

_MAX_DECIMALS = 12


def _decimals(*values: float) -> int:
    """Smallest number of decimals that writes every value exactly (up to 12)."""
    for d in range(_MAX_DECIMALS + 1):
        scale = 10.0**d
        if all(abs(v * scale - round(v * scale)) < 1e-6 for v in values):
            return d
    return _MAX_DECIMALS


class Grid(BaseModel):
    """Candidate thresholds: start, start − step, …, down to stop (inclusive)."""

    model_config = ConfigDict(frozen=True)

    start: float = Field(gt=0.0, le=1.0)
    stop: float = Field(ge=0.0, le=1.0)
    step: float = Field(gt=0.0)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.stop > self.start:
            raise ValueError(f"grid stop {self.stop} is above its start {self.start}")
        return self

    @classmethod
    def parse(cls, text: str) -> Grid:
        """Read ``START:STOP:STEP`` (e.g. ``0.999:0.5:0.001``)."""
        parts = text.split(":")
        if len(parts) != 3:
            raise InvalidRangeError(f"grid must be START:STOP:STEP, got {text!r}")
        try:
            start, stop, step = (float(p) for p in parts)
            return cls(start=start, stop=stop, step=step)
        except ValueError as exc:
            raise InvalidRangeError(f"bad grid {text!r}: {exc}") from exc

    def values(self) -> NDArray[np.float64]:
        """Candidates in decreasing order.

        Built from integers and one division so that 0.930 here is the same
        double as a confidence of 0.93 read from JSON; ``c ≥ λ`` must not
        flip on rounding noise.
        """
        d = _decimals(self.start, self.stop, self.step)
        scale = 10**d
        start, stop, step = (round(v * scale) for v in (self.start, self.stop, self.step))
        units = np.arange(start, stop - 1, -step, dtype=np.int64)
        return units.astype(np.float64) / float(scale)


DEFAULT_GRID = Grid.parse(fit_defaults.DEFAULT_GRID)


class ThresholdFit(BaseModel):
    """A tier's calibrated threshold and the evidence behind it.

    ``threshold`` None means no candidate passed: the tier accepts nothing.
    ``delta`` is the level this tier was tested at (δ/T under system mode).
    ``min_accepted`` is the rule the fit used, recorded so that a reader of a
    stored or printed fit knows which candidates were never tested.
    """

    model_config = ConfigDict(frozen=True)

    threshold: float | None
    n: int = Field(description="Items this tier was calibrated on.")
    n_accepted: int = Field(description="Calibration items with confidence ≥ λ̂.")
    n_disagree: int = Field(
        description="Accepted items where the verdict disagrees with the expert."
    )
    risk: float | None = Field(description="R̂(λ̂): disagreement rate among accepted items.")
    risk_upper: float | None = Field(description="R̂+(λ̂): its Clopper–Pearson upper bound.")
    alpha: float
    delta: float
    min_accepted: int = Field(
        ge=1, description="Candidates accepting fewer calibration items were not tested."
    )
    temperature: float = 1.0
    reason: str = ""

    def accepts(self, confidence: ArrayLike) -> NDArray[np.bool_]:
        """Which raw confidences this tier accepts (the tier's T applied first)."""
        c = np.asarray(confidence, dtype=np.float64)
        if self.threshold is None:
            return np.zeros(c.shape, dtype=np.bool_)
        accepted: NDArray[np.bool_] = apply_temperature(c, self.temperature) >= self.threshold
        return accepted


def _check_inputs(
    confidence: ArrayLike, wrong: ArrayLike, alpha: float, delta: float, min_accepted: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    c = np.asarray(confidence, dtype=np.float64)
    w = np.asarray(wrong, dtype=np.bool_)
    if c.ndim != 1 or c.shape != w.shape:
        raise CalibrationError(
            f"confidence and wrong must be 1-D arrays of one length, got {c.shape} and {w.shape}"
        )
    if np.isnan(c).any():
        raise CalibrationError("confidence contains NaN; every calibration item needs a score")
    for name, value in (("alpha", alpha), ("delta", delta)):
        if not 0.0 < value < 1.0:
            raise CalibrationError(f"{name} must be in (0, 1), got {value}")
    if min_accepted < 1:
        raise CalibrationError(f"min_accepted must be ≥ 1, got {min_accepted}")
    return c, w


def fit_threshold(
    confidence: ArrayLike,
    wrong: ArrayLike,
    *,
    alpha: float,
    delta: float,
    grid: Grid = DEFAULT_GRID,
    min_accepted: int = DEFAULT_MIN_ACCEPTED,
) -> ThresholdFit:
    """λ̂ = the smallest candidate whose bound, and every tested larger candidate's, is ≤ α.

    ``wrong[i]`` is True where the judge's verdict on item i disagrees with
    the expert. Candidates accepting fewer than ``min_accepted`` items are
    passed over: not tested, and not a failure (1 passes over only those that
    accept nothing). This keeps the guarantee because the rule reads only the
    confidences, never the labels: whether λ is tested depends on n(λ) alone,
    and given n(λ) its disagreements are still Binomial(n(λ), R(λ)), so no
    candidate is chosen for having done well (docs/calibration.md gives the
    argument and its one assumption). No passing candidate means no
    threshold; the top candidate is never accepted as a fallback. Vectorised:
    one sort, then counts for every candidate by binary search.
    """
    c, w = _check_inputs(confidence, wrong, alpha, delta, min_accepted)
    n = int(c.size)

    def no_threshold(reason: str) -> ThresholdFit:
        return ThresholdFit(
            threshold=None,
            n=n,
            n_accepted=0,
            n_disagree=0,
            risk=None,
            risk_upper=None,
            alpha=alpha,
            delta=delta,
            min_accepted=min_accepted,
            reason=reason,
        )

    if n == 0:
        return no_threshold("no calibration items reached this tier")
    lam = grid.values()
    order = np.argsort(-c, kind="stable")
    cum_wrong = np.cumsum(w[order])
    ascending = c[order][::-1]
    n_acc = n - np.searchsorted(ascending, lam, side="left")
    tested = n_acc >= min_accepted
    k = np.where(n_acc > 0, cum_wrong[np.maximum(n_acc - 1, 0)], 0)
    upper = clopper_pearson_upper(k, n_acc, delta)
    fails = tested & (upper > alpha)
    first_fail = int(np.argmax(fails)) if fails.any() else lam.size

    if not tested.any():
        most = int(n_acc[-1])
        if most == 0:
            return no_threshold(f"no item has confidence ≥ {lam[-1]:g}, the lowest candidate")
        return no_threshold(
            f"no candidate accepts at least {min_accepted} items (the lowest, "
            f"λ={lam[-1]:g}, accepts {most} of {n}); candidates accepting fewer are not tested"
        )
    if first_fail == 0 or not tested[first_fail - 1]:
        f = first_fail
        first = (
            "the first candidate that accepts any item"
            if min_accepted == 1
            else f"the first candidate that accepts at least {min_accepted} items"
        )
        return no_threshold(
            f"{first}, λ={lam[f]:g} "
            f"({int(k[f])} of {int(n_acc[f])} disagree), has upper bound {upper[f]:.3f} > "
            f"α={alpha:g} at δ={delta:g}; fixed-sequence testing stops there"
        )
    best = first_fail - 1
    if first_fail < lam.size:
        why = (
            f"the next candidate, λ={lam[first_fail]:g}, has upper bound "
            f"{upper[first_fail]:.3f} > α={alpha:g}"
        )
    else:
        why = f"every candidate down to {lam[-1]:g} passes"
    acc, dis = int(n_acc[best]), int(k[best])
    return ThresholdFit(
        threshold=float(lam[best]),
        n=n,
        n_accepted=acc,
        n_disagree=dis,
        risk=dis / acc,
        risk_upper=float(upper[best]),
        alpha=alpha,
        delta=delta,
        min_accepted=min_accepted,
        reason=why,
    )
