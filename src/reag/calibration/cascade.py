"""Calibrating the judge cascade and routing items through it.

Three ways to choose which items each tier is calibrated on:

- ``cascade`` (default): tier 1 on every item, tier t+1 on the items tiers
  1..t did not accept, so each λ̂ is fit on the traffic that tier really sees
  and its guarantee is about that traffic.
- ``independent``: every tier on every item, as the paper literally reads;
  the guarantee is about a tier's accepted items among *all* items, which is
  not the population a higher tier judges in production.
- ``system``: cascade routing with δ split evenly across the tiers
  (Bonferroni), so that with probability ≥ 1−δ every tier's risk is ≤ α at
  once, and therefore so is the risk of the whole accepted set, a mixture of
  the tiers' accepted sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field

from reag.calibration.errors import CalibrationError, MissingScoreError
from reag.calibration.fixed_sequence import DEFAULT_GRID, Grid, ThresholdFit
from reag.calibration.scaling import DEFAULT_TEMPERATURES, fit_tier
from reag.calibration.scores import ScoreTable
from reag.fit_defaults import DEFAULT_MIN_ACCEPTED, DEFAULT_TAU

Mode = Literal["cascade", "independent", "system"]
MODES: tuple[Mode, ...] = ("cascade", "independent", "system")
ABSTAIN = 0
"""Value of ``route``'s result for an item no tier accepted."""


class CascadeCalibration(BaseModel):
    """Every tier's fit, and what they were fit on. ``tiers[0]`` is tier 1.

    ``min_accepted`` is kept beside α, δ and τ because it changes which
    thresholds can come out: a reader needs it to reproduce the fit.
    """

    model_config = ConfigDict(frozen=True)

    mode: Mode
    alpha: float
    delta: float
    tau: int
    min_accepted: int = Field(ge=1)
    tiers: tuple[ThresholdFit, ...]
    calibration_hash: str
    n_items: int

    def fit_for(self, tier: int) -> ThresholdFit:
        if not 1 <= tier <= len(self.tiers):
            raise CalibrationError(f"no tier {tier}; the cascade has {len(self.tiers)} tiers")
        return self.tiers[tier - 1]

    def summary(self) -> dict[str, Any]:
        """The JSON shape `reag calibrate --json` prints."""
        return {
            "tiers": {
                str(t): {
                    "threshold": fit.threshold,
                    "n_accepted": fit.n_accepted,
                    "risk": fit.risk,
                    "risk_upper": fit.risk_upper,
                    "n": fit.n,
                    "temperature": fit.temperature,
                    "delta": fit.delta,
                    "min_accepted": fit.min_accepted,
                    "reason": fit.reason,
                }
                for t, fit in enumerate(self.tiers, start=1)
            },
            "mode": self.mode,
            "alpha": self.alpha,
            "delta": self.delta,
            "tau": self.tau,
            "min_accepted": self.min_accepted,
            "n_items": self.n_items,
            "calibration_hash": self.calibration_hash,
        }


def _missing(table: ScoreTable, tier_index: int, reach: NDArray[np.bool_]) -> None:
    missing = reach & ~table.present[:, tier_index]
    if missing.any():
        raise MissingScoreError(
            tier_index + 1, [table.item_ids[i] for i in np.flatnonzero(missing).tolist()]
        )


def calibrate_table(
    table: ScoreTable,
    *,
    alpha: float,
    delta: float,
    mode: Mode = "cascade",
    tau: int = DEFAULT_TAU,
    grid: Grid = DEFAULT_GRID,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    min_accepted: int = DEFAULT_MIN_ACCEPTED,
) -> CascadeCalibration:
    """Calibrate every tier of a pivoted score table (see the module docstring for modes).

    ``min_accepted`` applies to each tier's own calibration items (in cascade
    and system modes, those the tiers below left), so a tier that sees few
    items may have no candidate left to test.
    """
    if mode not in MODES:
        raise CalibrationError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    tier_delta = delta / table.n_tiers if mode == "system" else delta
    wrong = table.wrong
    reach = np.ones(table.n_items, dtype=np.bool_)
    fits: list[ThresholdFit] = []
    for t in range(table.n_tiers):
        if mode == "independent":
            reach = np.ones(table.n_items, dtype=np.bool_)
        _missing(table, t, reach)
        fit = fit_tier(
            table.confidence[reach, t],
            wrong[reach, t],
            alpha=alpha,
            delta=tier_delta,
            grid=grid,
            tau=tau,
            temperatures=temperatures,
            min_accepted=min_accepted,
        )
        fits.append(fit)
        if mode != "independent":
            accepted = np.zeros(table.n_items, dtype=np.bool_)
            accepted[reach] = fit.accepts(table.confidence[reach, t])
            reach = reach & ~accepted
    return CascadeCalibration(
        mode=mode,
        alpha=alpha,
        delta=delta,
        tau=tau,
        min_accepted=min_accepted,
        tiers=tuple(fits),
        calibration_hash=table.calibration_hash(),
        n_items=table.n_items,
    )


def _as_matrix(
    confidences_by_tier: ArrayLike | Mapping[int, ArrayLike], n_tiers: int
) -> NDArray[np.float64]:
    if isinstance(confidences_by_tier, Mapping):
        columns = [
            np.asarray(confidences_by_tier[t], dtype=np.float64)
            if t in confidences_by_tier
            else None
            for t in range(1, n_tiers + 1)
        ]
        length = next((c.size for c in columns if c is not None), 0)
        return np.column_stack([c if c is not None else np.full(length, np.nan) for c in columns])
    matrix = np.asarray(confidences_by_tier, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] < n_tiers:
        raise CalibrationError(
            f"confidences must be (items × tiers) with at least {n_tiers} tiers, "
            f"got shape {matrix.shape}"
        )
    return matrix


def route(
    calibration: CascadeCalibration,
    confidences_by_tier: ArrayLike | Mapping[int, ArrayLike],
    *,
    item_ids: Sequence[str] | None = None,
) -> NDArray[np.int64]:
    """The tier that decides each item (1-based), or ``ABSTAIN`` (0).

    Routing is the production cascade whatever the calibration mode: an item
    goes up until a tier accepts it. ``confidences_by_tier`` is an
    (items × tiers) array or a mapping tier → confidences; a missing score
    (NaN or absent tier) on an item that routing reaches is an error.
    """
    n_tiers = len(calibration.tiers)
    conf = _as_matrix(confidences_by_tier, n_tiers)
    n_items = conf.shape[0]
    decided = np.full(n_items, ABSTAIN, dtype=np.int64)
    remaining = np.ones(n_items, dtype=np.bool_)
    for t, fit in enumerate(calibration.tiers):
        missing = remaining & np.isnan(conf[:, t])
        if missing.any():
            index = np.flatnonzero(missing).tolist()
            names = (
                [item_ids[i] for i in index] if item_ids is not None else [f"#{i}" for i in index]
            )
            raise MissingScoreError(t + 1, names)
        accepted = remaining & fit.accepts(conf[:, t])
        decided[accepted] = t + 1
        remaining &= ~accepted
    return decided


def route_table(calibration: CascadeCalibration, table: ScoreTable) -> NDArray[np.int64]:
    """``route`` over a score table, naming items in errors."""
    conf = np.where(table.present, table.confidence, np.nan)
    return route(calibration, conf, item_ids=table.item_ids)
