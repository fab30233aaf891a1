"""The confidence transform of selective temperature scaling (paper 3.4.2).

Calibration fits λ̂ on transformed confidences, so a judge must apply the same
transform, with the tier's T, to every live confidence before comparing it to
λ̂. T = 1 is the identity, bit for bit, so an unscaled tier compares raw scores.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reag.calibration.errors import CalibrationError

# Confidences of exactly 0 or 1 have an infinite logit; clipping keeps them
# finite (and still the most extreme values) so T can move them at all.
_EPS = 1e-9


def apply_temperature(confidence: ArrayLike, temperature: float) -> NDArray[np.float64]:
    """c' = σ(logit(c) / T), elementwise; NaN stays NaN."""
    if not temperature > 0.0:
        raise CalibrationError(f"temperature must be positive, got {temperature}")
    c = np.asarray(confidence, dtype=np.float64)
    if temperature == 1.0:
        return c
    clipped = np.clip(c, _EPS, 1.0 - _EPS)
    logit = np.log(clipped) - np.log1p(-clipped)
    scaled: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logit / temperature))
    return scaled
