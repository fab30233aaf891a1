"""Selective temperature scaling (paper 3.4.2) around fixed-sequence testing.

Scaling is monotone, so it never reorders items; what it changes is where the
fixed grid of candidates falls. A judge whose confidences pile up just below
1 (common for LLMs) has all of them inside the first candidate at T = 1; a
larger T spreads that pile over many candidates, so fixed-sequence testing
can stop inside it instead of failing on all of it at once. Choosing T after
looking at the calibration data weakens the (1−δ) guarantee (see
docs/calibration.md), so a tier is scaled only when it needs to be: when it
would accept fewer than τ calibration items.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from reag.calibration.errors import CalibrationError
from reag.calibration.fixed_sequence import (
    DEFAULT_GRID,
    Grid,
    ThresholdFit,
    fit_threshold,
)
from reag.calibration.temperature import apply_temperature
from reag.fit_defaults import DEFAULT_MIN_ACCEPTED, DEFAULT_TAU

DEFAULT_TEMPERATURES: tuple[float, ...] = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)


def fit_tier(
    confidence: ArrayLike,
    wrong: ArrayLike,
    *,
    alpha: float,
    delta: float,
    grid: Grid = DEFAULT_GRID,
    tau: int = DEFAULT_TAU,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    min_accepted: int = DEFAULT_MIN_ACCEPTED,
) -> ThresholdFit:
    """Fit at T = 1; if that accepts fewer than τ items, the smallest T on the grid that reaches τ.

    τ = 0 turns scaling off. When no T reaches τ the T = 1 fit is kept and
    its reason says so. Every fit, scaled or not, passes over candidates that
    accept fewer than ``min_accepted`` items (see ``fit_threshold``), so a
    scaled fit is held to the same rule as the one it replaces.
    """
    if tau < 0:
        raise CalibrationError(f"tau must be ≥ 0, got {tau}")
    if any(t <= 1.0 for t in temperatures):
        raise CalibrationError(f"scaling temperatures must all be > 1, got {list(temperatures)}")
    c = np.asarray(confidence, dtype=np.float64)
    base = fit_threshold(c, wrong, alpha=alpha, delta=delta, grid=grid, min_accepted=min_accepted)
    if base.n_accepted >= tau:
        return base
    shortfall = f"n(λ̂)={base.n_accepted} < τ={tau} at T=1"
    if base.n < tau:
        return base.model_copy(
            update={
                "reason": f"{base.reason}; {shortfall}, but only {base.n} items reached "
                "this tier, so no temperature can help"
            }
        )
    for temperature in sorted(temperatures):
        scaled = fit_threshold(
            apply_temperature(c, temperature),
            wrong,
            alpha=alpha,
            delta=delta,
            grid=grid,
            min_accepted=min_accepted,
        )
        if scaled.n_accepted >= tau:
            return scaled.model_copy(
                update={
                    "temperature": temperature,
                    "reason": f"selective temperature scaling applied: {shortfall}; "
                    f"T={temperature:g} is the smallest tried that reaches τ; {scaled.reason}",
                }
            )
    top = max(temperatures, default=1.0)
    return base.model_copy(
        update={
            "reason": f"{base.reason}; {shortfall} and temperature scaling up to "
            f"T={top:g} did not reach τ, so T=1 is kept"
        }
    )
