"""The α sweep (paper figure 4 and table 3), with honest cost and fair baselines.

For each α the cascade is calibrated on one set of labelled items and
measured on another. Beside the cascade, each judge alone is measured two
ways that must not be mixed: on the full set (every verdict counts) and
selectively, under its own calibrated threshold (only accepted verdicts
count). Comparing a selective figure with a full-set one, as the paper's
RQ2 does, flatters whichever side abstains.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reag.calibration.bounds import clopper_pearson_interval
from reag.calibration.cascade import ABSTAIN, Mode, calibrate_table, route_table
from reag.calibration.cost import CostUnit, deciding_tier_cost, honest_cost, table_costs
from reag.calibration.errors import CalibrationError, InvalidRangeError
from reag.calibration.fixed_sequence import DEFAULT_GRID, Grid
from reag.calibration.scaling import DEFAULT_TEMPERATURES, fit_tier
from reag.calibration.scores import ScoreRecord, ScoreTable, pivot
from reag.fit_defaults import DEFAULT_MIN_ACCEPTED, DEFAULT_TAU

CI_LEVEL = 0.95


def parse_alphas(text: str) -> tuple[float, ...]:
    """``START:STOP:STEP`` (inclusive, e.g. ``0.10:0.40:0.02``) or a comma list."""
    try:
        if ":" in text:
            start, stop, step = (float(p) for p in text.split(":"))
            if step <= 0 or stop < start:
                raise InvalidRangeError(f"alphas {text!r}: need START ≤ STOP and STEP > 0")
            count = round((stop - start) / step) + 1
            values = tuple(round(start + i * step, 10) for i in range(count))
        else:
            values = tuple(float(p) for p in text.split(","))
    except ValueError as exc:
        raise InvalidRangeError(
            f"alphas must be START:STOP:STEP or a comma list, got {text!r}"
        ) from exc
    if not values or any(not 0.0 < a < 1.0 for a in values):
        raise InvalidRangeError(f"every α must be in (0, 1), got {text!r}")
    return values


def parse_tier_costs(text: str) -> tuple[float, ...]:
    """Relative cost of one call per tier, e.g. ``1,3,4.6``."""
    try:
        costs = tuple(float(p) for p in text.split(","))
    except ValueError as exc:
        raise InvalidRangeError(f"tier costs must be a comma list, got {text!r}") from exc
    if any(c < 0 for c in costs):
        raise InvalidRangeError(f"tier costs must be ≥ 0, got {text!r}")
    return costs


@dataclass(frozen=True)
class Agreement:
    """Agreement with the experts on ``n`` verdicts, with its exact 95 % interval."""

    n: int
    agree: int

    @property
    def rate(self) -> float | None:
        return self.agree / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return clopper_pearson_interval(self.agree, self.n, CI_LEVEL)

    @classmethod
    def of(cls, correct: NDArray[np.bool_]) -> Agreement:
        return cls(n=int(correct.size), agree=int(correct.sum()))


def _per_hundred(total: float, n_items: int) -> float:
    return 100.0 * total / n_items


def _cpp(cost_per_100: float, agreement: Agreement) -> float | None:
    """Cost per performance: cost per 100 items over agreement in percent."""
    rate = agreement.rate
    return cost_per_100 / (100.0 * rate) if rate else None


@dataclass(frozen=True)
class CascadeRow:
    alpha: float
    n: int
    coverage: float
    selective: Agreement
    tier_pct: tuple[float, ...]
    abstain_pct: float
    cost_per_100: float
    cpp: float | None
    deciding_cost_per_100: float
    deciding_cpp: float | None
    thresholds: tuple[float | None, ...]
    temperatures: tuple[float, ...]


@dataclass(frozen=True)
class JudgeFullRow:
    """A judge alone, every verdict counted."""

    tier: int
    full: Agreement
    cost_per_100: float
    cpp: float | None


@dataclass(frozen=True)
class JudgeSelectiveRow:
    """A judge alone under its own threshold; it still pays for every item."""

    tier: int
    alpha: float
    threshold: float | None
    temperature: float
    coverage: float
    selective: Agreement
    cost_per_100: float
    cpp: float | None


@dataclass(frozen=True)
class SweepResult:
    mode: Mode
    delta: float
    tau: int
    min_accepted: int
    cost_unit: CostUnit
    n_tiers: int
    n_calibration: int
    n_evaluation: int
    calibration_hash: str
    cascade: tuple[CascadeRow, ...]
    judges_full: tuple[JudgeFullRow, ...]
    judges_selective: tuple[JudgeSelectiveRow, ...]
    notes: tuple[str, ...]


def run_sweep(
    calibration: ScoreTable,
    evaluation: ScoreTable,
    *,
    alphas: Sequence[float],
    delta: float,
    mode: Mode = "cascade",
    tier_costs: Sequence[float] | None = None,
    tau: int = DEFAULT_TAU,
    grid: Grid = DEFAULT_GRID,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    min_accepted: int = DEFAULT_MIN_ACCEPTED,
) -> SweepResult:
    """Fit on ``calibration`` and measure on ``evaluation`` for every α.

    The cascade and each judge alone are fit under the same ``min_accepted``
    rule, so the baselines are not held to a different standard.
    """
    if calibration.n_tiers != evaluation.n_tiers:
        raise CalibrationError(
            f"calibration has {calibration.n_tiers} tiers but evaluation has "
            f"{evaluation.n_tiers}; both sets need scores from the same cascade"
        )
    n_tiers, n_eval = evaluation.n_tiers, evaluation.n_items
    costs, unit = table_costs(evaluation, tier_costs)
    wrong = evaluation.wrong
    notes: list[str] = []

    cascade_rows: list[CascadeRow] = []
    for alpha in alphas:
        fitted = calibrate_table(
            calibration,
            alpha=alpha,
            delta=delta,
            mode=mode,
            tau=tau,
            grid=grid,
            temperatures=temperatures,
            min_accepted=min_accepted,
        )
        decided = route_table(fitted, evaluation)
        accepted = decided != ABSTAIN
        correct = ~wrong[np.flatnonzero(accepted), decided[accepted] - 1]
        selective = Agreement.of(correct)
        cost = _per_hundred(honest_cost(decided, costs), n_eval)
        deciding = _per_hundred(deciding_tier_cost(decided, costs), n_eval)
        counts = np.bincount(decided, minlength=n_tiers + 1)
        cascade_rows.append(
            CascadeRow(
                alpha=alpha,
                n=n_eval,
                coverage=float(accepted.mean()),
                selective=selective,
                tier_pct=tuple(100.0 * counts[1:] / n_eval),
                abstain_pct=100.0 * counts[0] / n_eval,
                cost_per_100=cost,
                cpp=_cpp(cost, selective),
                deciding_cost_per_100=deciding,
                deciding_cpp=_cpp(deciding, selective),
                thresholds=tuple(f.threshold for f in fitted.tiers),
                temperatures=tuple(f.temperature for f in fitted.tiers),
            )
        )

    full_rows: list[JudgeFullRow] = []
    selective_rows: list[JudgeSelectiveRow] = []
    cal_wrong = calibration.wrong
    for t in range(n_tiers):
        if not evaluation.present[:, t].all() or not calibration.present[:, t].all():
            notes.append(f"J{t + 1} alone is not reported: not every item has a tier-{t + 1} score")
            continue
        judge_cost = _per_hundred(float(costs[:, t].sum()), n_eval)
        full = Agreement.of(~wrong[:, t])
        full_rows.append(JudgeFullRow(t + 1, full, judge_cost, _cpp(judge_cost, full)))
        for alpha in alphas:
            fit = fit_tier(
                calibration.confidence[:, t],
                cal_wrong[:, t],
                alpha=alpha,
                delta=delta,
                grid=grid,
                tau=tau,
                temperatures=temperatures,
                min_accepted=min_accepted,
            )
            accepted = fit.accepts(evaluation.confidence[:, t])
            selective = Agreement.of(~wrong[accepted, t])
            selective_rows.append(
                JudgeSelectiveRow(
                    tier=t + 1,
                    alpha=alpha,
                    threshold=fit.threshold,
                    temperature=fit.temperature,
                    coverage=float(accepted.mean()),
                    selective=selective,
                    cost_per_100=judge_cost,
                    cpp=_cpp(judge_cost, selective),
                )
            )
    return SweepResult(
        mode=mode,
        delta=delta,
        tau=tau,
        min_accepted=min_accepted,
        cost_unit=unit,
        n_tiers=n_tiers,
        n_calibration=calibration.n_items,
        n_evaluation=n_eval,
        calibration_hash=calibration.calibration_hash(),
        cascade=tuple(cascade_rows),
        judges_full=tuple(full_rows),
        judges_selective=tuple(selective_rows),
        notes=tuple(notes),
    )


def split_records(
    calibration: Sequence[ScoreRecord],
    evaluation: Sequence[ScoreRecord] | None,
    *,
    fraction: float,
    seed: int,
) -> tuple[ScoreTable, ScoreTable]:
    """Tables for a sweep: the two files given, or one file split by item."""
    if evaluation is None:
        return pivot(calibration).split(fraction, seed)
    n_tiers = max(r.tier for r in (*calibration, *evaluation))
    cal, ev = pivot(calibration, n_tiers=n_tiers), pivot(evaluation, n_tiers=n_tiers)
    overlap = set(cal.item_ids) & set(ev.item_ids)
    if overlap:
        raise CalibrationError(
            f"{len(overlap)} item(s) are in both the calibration and the evaluation scores "
            f"(e.g. {sorted(overlap)[0]!r}); evaluating on calibration items overstates agreement"
        )
    return cal, ev
