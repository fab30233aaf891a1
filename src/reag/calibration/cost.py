"""Cost of running items through the cascade, charged honestly.

An item decided at tier t was first judged, unconfidently, by tiers 1..t−1,
and each of those calls was paid for; an abstained item paid every tier. The
paper's table 3 charged only the tier that decided (the public review of
the paper (docs/references.md) shows how that flips its conclusion); that figure is
kept here under its own name, ``deciding_tier_cost``, only to compare with the
paper.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reag.calibration.cascade import ABSTAIN
from reag.calibration.errors import CalibrationError
from reag.calibration.scores import ScoreTable

CostUnit = Literal["usd", "relative"]


def _cost_matrix(costs: ArrayLike, n_items: int, n_tiers: int) -> NDArray[np.float64]:
    matrix = np.asarray(costs, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = np.broadcast_to(matrix, (n_items, matrix.size))
    if matrix.shape != (n_items, n_tiers):
        raise CalibrationError(
            f"costs must be one per tier ({n_tiers}) or one per item and tier, "
            f"got shape {np.shape(costs)}"
        )
    return matrix


def calls_made(decided_by: ArrayLike, n_tiers: int) -> NDArray[np.bool_]:
    """(items × tiers): True where the tier was called, i.e. up to the deciding tier."""
    decided = np.asarray(decided_by, dtype=np.int64)
    last = np.where(decided == ABSTAIN, n_tiers, decided)
    called: NDArray[np.bool_] = np.arange(1, n_tiers + 1)[None, :] <= last[:, None]
    return called


def honest_cost(decided_by: ArrayLike, costs: ArrayLike) -> float:
    """Total cost charging every call made. ``costs``: per tier, or per item and tier."""
    decided = np.asarray(decided_by, dtype=np.int64)
    n_tiers = np.shape(costs)[-1]
    matrix = _cost_matrix(costs, decided.size, n_tiers)
    return float(np.sum(matrix, where=calls_made(decided, n_tiers)))


def deciding_tier_cost(decided_by: ArrayLike, costs: ArrayLike) -> float:
    """Total cost charging only the last tier each item reached (the paper's table 3).

    An abstained item is charged the last tier, which is how the paper's
    judge distribution sums to 100 % while some items were abstained.
    """
    decided = np.asarray(decided_by, dtype=np.int64)
    n_tiers = np.shape(costs)[-1]
    matrix = _cost_matrix(costs, decided.size, n_tiers)
    last = np.where(decided == ABSTAIN, n_tiers, decided)
    return float(matrix[np.arange(decided.size), last - 1].sum())


def table_costs(
    table: ScoreTable, tier_costs: ArrayLike | None
) -> tuple[NDArray[np.float64], CostUnit]:
    """Per item and tier cost: recorded USD when every record has it, else relative units."""
    recorded = table.cost_usd[table.present]
    if recorded.size and np.isfinite(recorded).all():
        return np.where(table.present, table.cost_usd, 0.0), "usd"
    if tier_costs is None:
        raise CalibrationError(
            "the score records do not all carry cost_usd; give relative per-call tier "
            "costs instead (e.g. --tier-costs 1,3,4.6)"
        )
    per_tier = np.asarray(tier_costs, dtype=np.float64)
    if per_tier.shape != (table.n_tiers,):
        raise CalibrationError(
            f"got {per_tier.size} tier costs for a {table.n_tiers}-tier cascade; give one per tier"
        )
    if (per_tier < 0).any():
        raise CalibrationError(f"tier costs must be ≥ 0, got {per_tier.tolist()}")
    return _cost_matrix(per_tier, table.n_items, table.n_tiers).copy(), "relative"
